"""Statistics per configuration, computed from run folders alone (no Docker).

Units, so every number says what it counts:

- an **attempt** is one row of results.jsonl (one patch graded);
- a **trial** is one (task, repeat) of one configuration: its attempts 1..K, judged by the row
  marked ``final`` (the last attempt). Trials with no final row yet (an interrupted run) are
  counted as ``incomplete`` and left out;
- ``infra_error`` trials are the machine's failure, not the agent's, and ``task_error`` trials the
  task's (its gold or test patch does not apply): both are counted apart and left out of every
  denominator.
- a **retried try** is a try of a unit the machine failed and the runner (or a resume) tried
  again: never a trial, in no rate, but its spend is the configuration's: it counts in the total
  cost and tokens, in the cost of its unit's trial (so in cost per trial and per resolved), and is
  shown apart (``retried_tries``, ``retried_cost_usd``). ``total_cost_usd`` is everything spent:
  every complete trial's, scored or not, and every retried try's.

Intervals: the resolve rate gets a 95 % Wilson score interval (closed form, as scipy's
``binomtest(...).proportion_ci(method="wilson")`` computes it). Money and
time get percentile bootstrap intervals that resample *tasks* (all trials of a task move together,
so repeats of one task are not treated as independent evidence). The percentile method is used
rather than BCa because BCa is undefined on the degenerate samples small suites produce (every
task resolved, every cost equal). The seed is fixed and recorded, so a report is reproducible.

The bootstrap is `scipy.stats.bootstrap(..., paired=True, vectorized=True, method="percentile")`
done the way scipy does it, with numpy alone: the same resample indices from the same generator,
the same statistic, the same quantile (Hyndman and Fan's type 7), so every interval is the one
scipy gives to the last bit (tests/test_stats.py checks it against scipy) while a report does not
pay for importing scipy.stats (about a second). numpy is imported when an interval is not in the
memo of intervals computed before (memo.py): a report of rows seen before needs none.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean

from pydantic import BaseModel, Field

from ..records import Manifest, ResultRow, latest_rows, open_run, retried_tries
from ..vocabulary import NOT_SCORED, Outcome
from . import memo

CONFIDENCE = 0.95
SEED = 20240917
N_RESAMPLES = 9999


class BootstrapSettings(BaseModel):
    """How every bootstrap interval in a report was made (enough to recompute it exactly)."""

    seed: int = SEED
    n_resamples: int = N_RESAMPLES
    method: str = "percentile"
    confidence_level: float = CONFIDENCE
    resample_unit: str = "task"
    library: str = "scipy.stats.bootstrap"


class Interval(BaseModel):
    """A point estimate with its interval. ``unknown``: a cost was not known (never shown as 0).
    ``unbounded``: some resamples had nothing to divide by (e.g. no resolved task), so there is
    no finite upper bound."""

    value: float | None = None
    low: float | None = None
    high: float | None = None
    method: str = ""
    n: int = 0  # observations behind it (trials for Wilson, tasks for the bootstrap)
    unknown: bool = False
    unbounded: bool = False
    note: str = ""


class KValue(BaseModel):
    k: int
    value: float


class TaskRate(BaseModel):
    task_id: str
    trials: int  # scored trials (infra errors left out)
    resolved: int
    rate: float | None  # None when every trial was an infra or task error
    infra_errors: int = 0
    task_errors: int = 0


class ConfigStats(BaseModel):
    name: str  # unique across the runs of a report
    label: str  # the config label in results.jsonl
    run_dir: str
    agent: str = ""
    model: str | None = None
    tasks: int = 0
    trials: int = 0
    attempts: int = 0
    scored: int = 0
    resolved: int = 0
    infra_errors: int = 0
    task_errors: int = 0
    infra_share: float | None = None  # infra_errors / trials: shown next to the rate (None: no trial)
    strict: bool = False  # infra errors counted as failures in every figure (--strict), not left out
    incomplete: int = 0
    repeats: int = 1  # the most trials any task has
    resolve_rate: Interval = Field(default_factory=Interval)  # Wilson, over scored trials
    resolve_rate_tasks: Interval = Field(default_factory=Interval)  # bootstrap over tasks (honest with repeats)
    per_task: list[TaskRate] = Field(default_factory=list)
    pass_at_k: list[KValue] = Field(default_factory=list)
    pass_hat_k: list[KValue] = Field(default_factory=list)
    pass_k_tasks: int = 0  # tasks with at least max(k) scored trials, the ones pass@k averages over
    total_cost_usd: float | None = None  # None = unknown
    cost_per_trial: Interval = Field(default_factory=Interval)
    cost_per_resolved: Interval = Field(default_factory=Interval)
    time_per_trial: Interval = Field(default_factory=Interval)
    time_per_resolved: Interval = Field(default_factory=Interval)
    tokens_in: int = 0  # every row's, retried tries included
    tokens_out: int = 0
    retried_tries: int = 0  # tries the machine failed that were tried again (their rows are on record)
    retried_cost_usd: float | None = 0.0  # their spend, part of total_cost_usd; None = a price unknown
    retried_tokens_in: int = 0
    retried_tokens_out: int = 0


# ---------------------------------------------------------------------------- loading


@dataclass
class ConfigRows:
    """The rows of one configuration in one run folder."""

    name: str
    label: str
    run_dir: Path
    manifest: Manifest  # the run's, typed (any schema version)
    rows: list[ResultRow]  # the rows that count (the latest-row rule)
    retried: list[list[ResultRow]] = field(default_factory=list)  # retried tries, each its rows (records.retried_tries)


@dataclass
class Trial:
    task_id: str
    repeat: int
    attempts: list[ResultRow]  # sorted by attempt number
    final: ResultRow | None = None
    retried: list[ResultRow] = field(
        default_factory=list
    )  # rows of the unit's retried tries (their spend is the trial's)

    @property
    def complete(self) -> bool:
        return self.final is not None

    @property
    def infra_error(self) -> bool:
        return self.final is not None and self.final.outcome == Outcome.infra_error

    @property
    def task_error(self) -> bool:
        return self.final is not None and self.final.outcome == Outcome.task_error

    @property
    def scored(self) -> bool:
        return self.final is not None and self.final.outcome not in NOT_SCORED  # complete, and scored

    @property
    def resolved(self) -> bool:
        return bool(self.final and self.final.resolved)

    @property
    def cost(self) -> float | None:
        """Money for the whole trial (all its attempts and its unit's retried tries); None when any
        price is unknown."""
        costs = [r.cost_usd for r in self.attempts + self.retried]
        known = [c for c in costs if c is not None]
        return None if len(known) < len(costs) else float(sum(known))

    @property
    def time_s(self) -> float:
        return float(sum(r.phases.total_s for r in self.attempts))


def load_configs(run_dirs: list[Path]) -> list[ConfigRows]:
    """Every configuration of every run folder. A label seen in two runs gets the run's folder
    name appended, so each configuration has a unique name in reports."""
    found: list[tuple[Path, Manifest, str, list[ResultRow], list[list[ResultRow]]]] = []
    for run_dir in run_dirs:
        run_dir = Path(run_dir)
        folder = open_run(run_dir)
        manifest = folder.info()
        every = folder.rows()
        by_label: dict[str, list[ResultRow]] = defaultdict(list)
        retried: dict[str, list[list[ResultRow]]] = defaultdict(list)
        for row in latest_rows(every):
            by_label[row.config].append(row)
        for one in retried_tries(every):
            retried[one[0].config].append(one)
        for label in dict.fromkeys([*by_label, *retried]):
            found.append((run_dir, manifest, label, by_label.get(label, []), retried.get(label, [])))
    counts: dict[str, int] = defaultdict(int)
    for _, _, label, _, _ in found:
        counts[label] += 1
    configs = []
    for run_dir, manifest, label, group, retried_group in found:
        name = label if counts[label] == 1 else f"{label} [{run_dir.name}]"
        configs.append(
            ConfigRows(name=name, label=label, run_dir=run_dir, manifest=manifest, rows=group, retried=retried_group)
        )
    return configs


def trials_of(rows: list[ResultRow], retried: list[list[ResultRow]] | None = None) -> list[Trial]:
    """The trials of one configuration's rows that count; `retried` (its retried tries) go with
    the trial of their unit."""
    grouped: dict[tuple[str, int], list[ResultRow]] = defaultdict(list)
    for row in rows:
        grouped[(row.task_id, row.repeat)].append(row)
    extra: dict[tuple[str, int], list[ResultRow]] = defaultdict(list)
    for one in retried or []:
        extra[(one[0].task_id, one[0].repeat)] += one
    trials = []
    for (task_id, repeat), group in sorted(grouped.items()):
        group.sort(key=lambda r: r.attempt)
        finals = [r for r in group if r.final]
        trials.append(Trial(task_id, repeat, group, finals[-1] if finals else None, extra.get((task_id, repeat), [])))
    return trials


def by_task(trials: list[Trial]) -> dict[str, list[Trial]]:
    out: dict[str, list[Trial]] = defaultdict(list)
    for t in trials:
        out[t.task_id].append(t)
    return dict(sorted(out.items()))


# ---------------------------------------------------------------------------- formulas


def normal_quantile(q: float) -> float:
    """The standard normal quantile; for 0.975 the double scipy.special.ndtri gives (statistics'
    inv_cdf is one ulp off there), so intervals match the ones reports have always printed."""
    if q == 0.975:
        return 1.959963984540054
    from statistics import NormalDist

    return NormalDist().inv_cdf(q)


def wilson(successes: int, n: int, confidence: float = CONFIDENCE) -> Interval:
    """Resolve rate with its Wilson score interval (Newcombe 1998, no continuity correction, as
    scipy computes it); n = 0 gives an empty Interval."""
    if n == 0:
        return Interval(method="wilson", n=0, note="no scored trials")
    p = successes / n
    z = normal_quantile(0.5 + 0.5 * confidence)
    denom = 2 * (n + z**2)
    center = (2 * n * p + z**2) / denom
    delta = z / denom * math.sqrt(4 * n * p * (1 - p) + z**2)
    low = 0.0 if successes == 0 else center - delta
    high = 1.0 if successes == n else center + delta
    return Interval(value=p, low=float(low), high=float(high), method="wilson", n=n)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one task: the chance that at least one of k trials drawn without
    replacement from n (c of them successes) succeeds: 1 - C(n-c, k) / C(n, k)."""
    if k > n:
        raise ValueError(f"k={k} > n={n}")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k for one task: the chance that all of k trials drawn from n succeed: C(c,k)/C(n,k)."""
    if k > n:
        raise ValueError(f"k={k} > n={n}")
    return math.comb(c, k) / math.comb(n, k)


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _quantile(sorted_values, p: float) -> float:
    """Hyndman and Fan's type 7 ('linear') quantile of sorted values, computed as scipy.stats.quantile
    does (so +inf resamples give the same inf or nan)."""
    n = len(sorted_values)
    jg = p * n + (1 - p)
    jp1 = math.floor(jg)
    j, g = jp1 - 1, jg % 1
    if j < 0:
        g = 0.0
    j, jp1 = min(max(j, 0), n - 1), min(max(jp1, 0), n - 1)
    return float((1 - g) * sorted_values[j] + g * sorted_values[jp1])


def percentile_bootstrap(num, den, settings: BootstrapSettings) -> tuple[float, float]:
    """The percentile interval of sum(num)/sum(den) over tasks resampled with replacement (the
    pair kept together; nothing to divide by counts as +inf): scipy.stats.bootstrap's paired,
    vectorized percentile method, step for step."""
    import numpy as np

    rng = np.random.default_rng(settings.seed)
    n = len(num)
    index = rng.integers(0, n, (settings.n_resamples, n))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.sum(num[index], axis=-1) / np.sum(den[index], axis=-1)
        theta = np.sort(np.where(np.isnan(ratio), np.inf, ratio))
        alpha = (1 - settings.confidence_level) / 2
        return _quantile(theta, alpha), _quantile(theta, 1 - alpha)


def bootstrap_ratio(
    numerators: Sequence[float],
    denominators: Sequence[float],
    *,
    settings: BootstrapSettings | None = None,
    method: str = "",
) -> Interval:
    """sum(numerators) / sum(denominators) with a percentile bootstrap interval; each list holds
    one value per task, and a resample draws tasks with replacement (the pair stays together).
    A resample with nothing to divide by counts as +infinity (e.g. cost per resolved with no
    resolved task), which can make the upper bound unbounded."""
    settings = settings or BootstrapSettings()
    numerators, denominators = [float(x) for x in numerators], [float(x) for x in denominators]
    n = len(numerators)
    total = math.fsum(denominators)
    value = math.fsum(numerators) / total if total else None
    label = method or f"bootstrap-{settings.method}"
    if n < 2:
        return Interval(value=value, method=label, n=n, unbounded=value is None, note="fewer than 2 tasks: no interval")

    if settings.method != "percentile":
        raise ValueError(f"bootstrap method {settings.method!r}: only the percentile method is implemented")
    known = memo.key(numerators, denominators, settings.seed, settings.n_resamples, settings.confidence_level)
    found = memo.get(known)  # computed before for the same inputs: no numpy (see memo.py)
    if found is None:
        import numpy as np

        found = percentile_bootstrap(
            np.asarray(numerators, dtype=float), np.asarray(denominators, dtype=float), settings
        )
        memo.put(known, *found)
    low, high = found
    return Interval(
        value=value,
        low=_finite(low),
        high=_finite(high),
        method=label,
        n=n,
        unbounded=not math.isfinite(high) or value is None,
    )


def bootstrap_mean(values: list[float], *, settings: BootstrapSettings | None = None, method: str = "") -> Interval:
    """The mean of one value per task, with a percentile bootstrap interval (tasks resampled)."""
    return bootstrap_ratio(values, [1.0] * len(values), settings=settings, method=method)


# ---------------------------------------------------------------------------- per configuration


def config_stats(cfg: ConfigRows, settings: BootstrapSettings | None = None, *, strict: bool = False) -> ConfigStats:
    """The figures of one configuration; `strict`: an infra error counts as a failure (for CI)."""
    settings = settings or BootstrapSettings()
    trials = trials_of(cfg.rows, cfg.retried)
    complete = [t for t in trials if t.complete]
    scored = [t for t in complete if t.scored or (strict and t.infra_error)]
    tasks = by_task(complete)
    first = cfg.rows[0] if cfg.rows else None
    out = ConfigStats(
        name=cfg.name,
        label=cfg.label,
        run_dir=str(cfg.run_dir),
        agent=first.agent if first else "",
        model=first.model if first else None,
        tasks=len(tasks),
        trials=len(complete),
        attempts=len(cfg.rows),
        scored=len(scored),
        resolved=sum(t.resolved for t in scored),
        infra_errors=sum(t.infra_error for t in complete),
        infra_share=(sum(t.infra_error for t in complete) / len(complete)) if complete else None,
        strict=strict,
        task_errors=sum(t.task_error for t in complete),
        incomplete=len(trials) - len(complete),
        repeats=max((len(v) for v in tasks.values()), default=0),
        tokens_in=sum(r.usage.input_tokens for r in cfg.rows),
        tokens_out=sum(r.usage.output_tokens for r in cfg.rows),
    )
    out.resolve_rate = wilson(out.resolved, out.scored, settings.confidence_level)

    per_task_scored = {tid: [t for t in ts if t.scored or (strict and t.infra_error)] for tid, ts in tasks.items()}
    for tid, ts in tasks.items():
        s = per_task_scored[tid]
        out.per_task.append(
            TaskRate(
                task_id=tid,
                trials=len(s),
                resolved=sum(t.resolved for t in s),
                rate=(sum(t.resolved for t in s) / len(s)) if s else None,
                infra_errors=sum(t.infra_error for t in ts),
                task_errors=sum(t.task_error for t in ts),
            )
        )
    rated = [tr for tr in out.per_task if tr.trials]
    out.resolve_rate_tasks = bootstrap_ratio(
        [tr.resolved for tr in rated], [tr.trials for tr in rated], settings=settings
    )

    # pass@k and pass^k, k = 1..n, averaged over the tasks that have at least n scored trials
    if rated:
        n_min = min(tr.trials for tr in rated)
        out.pass_k_tasks = len(rated)
        for k in range(1, n_min + 1):
            out.pass_at_k.append(KValue(k=k, value=fmean([pass_at_k(tr.trials, tr.resolved, k) for tr in rated])))
            out.pass_hat_k.append(KValue(k=k, value=fmean([pass_hat_k(tr.trials, tr.resolved, k) for tr in rated])))

    # the retried tries' spend: the configuration's, and their unit's trial's (a trial costs what it took to get it)
    retried_rows = [r for one in cfg.retried for r in one]
    out.retried_tries = len(cfg.retried)
    retried_costs = [r.cost_usd for r in retried_rows if r.cost_usd is not None]
    out.retried_cost_usd = None if len(retried_costs) < len(retried_rows) else float(sum(retried_costs))
    out.retried_tokens_in = sum(r.usage.input_tokens for r in retried_rows)
    out.retried_tokens_out = sum(r.usage.output_tokens for r in retried_rows)
    out.tokens_in += out.retried_tokens_in
    out.tokens_out += out.retried_tokens_out

    # money and time: one (sum, count) pair per task, tasks resampled together
    task_ids = [tid for tid, s in per_task_scored.items() if s]
    costs = [[t.cost for t in per_task_scored[tid]] for tid in task_ids]
    unknown = any(c is None for cs in costs for c in cs)
    n_trials = [len(per_task_scored[tid]) for tid in task_ids]
    n_resolved = [sum(t.resolved for t in per_task_scored[tid]) for tid in task_ids]
    times = [sum(t.time_s for t in per_task_scored[tid]) for tid in task_ids]
    if unknown:
        note = "a price is unknown for some attempts"
        out.total_cost_usd = None
        out.cost_per_trial = Interval(unknown=True, n=len(task_ids), note=note)
        out.cost_per_resolved = Interval(unknown=True, n=len(task_ids), note=note)
    else:
        task_costs = [float(sum(c for c in cs if c is not None)) for cs in costs]  # (every price is known here)
        # everything spent: the scored trials (their units' retried tries included), and the rest --
        # trials left out of the rates (infra and task errors), retried tries of units with no complete trial
        counted = {id(t) for t in scored}
        rest = [t.cost for t in complete if id(t) not in counted] + [
            r.cost_usd for t in trials if not t.complete for r in t.retried
        ]
        with_trial = {(t.task_id, t.repeat) for t in trials}
        rest += [r.cost_usd for r in retried_rows if (r.task_id, r.repeat) not in with_trial]
        rest_known = [c for c in rest if c is not None]
        out.total_cost_usd = None if len(rest_known) < len(rest) else float(sum(task_costs) + sum(rest_known))
        out.cost_per_trial = bootstrap_ratio(task_costs, n_trials, settings=settings)
        out.cost_per_resolved = bootstrap_ratio(task_costs, n_resolved, settings=settings)
    out.time_per_trial = bootstrap_ratio(times, n_trials, settings=settings)
    out.time_per_resolved = bootstrap_ratio(times, n_resolved, settings=settings)
    return out
