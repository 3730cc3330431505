"""The front: which configurations buy the most resolve rate for their money and their time.

For configurations that ran the same suite (a sweep's cells, or any runs reported together), from
run folders alone (docs/sweeps.md, "The front"):

- **each configuration's figures**: resolve and accept rates with their 95 % Wilson intervals, cost
  per trial, per resolved and per accepted trial, time per trial (bootstrap intervals over tasks,
  as every report's: stats.py);
- **dominated on point estimates**: another configuration is at least as good on both axes (rate
  and cost, or rate and time) and strictly better on one; the rest is the **front**;
- **dominated with intervals**: Y dominates X when the 95 % paired bootstrap intervals of Y - X over
  their shared tasks (tasks resampled, the pair kept together) say Y is not worse on either axis
  (rate: low >= 0; cost or time: high <= 0) and better on at least one (rate: low > 0; cost or time:
  high < 0). A configuration can be dominated on point estimates and not with intervals: the data
  do not show the difference;
- **the marginal value of each extra attempt**: for a configuration run with several attempts, the
  rate resolved by attempt k, what a trial spent through attempt k, and the rate gained per dollar
  of the step from k - 1 to k;
- **paired comparisons against the best** (the highest rate; ties go to the cheaper, then the
  quicker): an exact two-sided sign-flip test on the per-task differences of resolve rate (all
  repeats; tasks are the unit, a task's repeats move together), Holm's step-down correction over
  the comparisons made. A configuration whose adjusted p is at or above alpha **cannot be
  separated** from the best. With n tasks that differ, the smallest p the test can reach is
  2 / 2^n: four tasks can never separate anything at 0.05, and the figures say so.

Comparisons of numbers use a relative tolerance (1e-9), so $0.30 spent as 0.2 + 0.1 is $0.30.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, Field

from ..vocabulary import NOT_SCORED
from .acceptance import ConfigAcceptance
from .stats import BootstrapSettings, ConfigRows, ConfigStats, Interval, bootstrap_mean, bootstrap_ratio, trials_of

ALPHA = 0.05
EXACT_UP_TO = 16  # tasks that differ: the sign-flip test enumerates 2^n signs up to here, else samples
SAMPLED_FLIPS = 20_000
TOLERANCE = 1e-9
SIGN_FLIP = "exact two-sided sign-flip test on per-task resolve-rate differences (tasks the unit)"
HOLM = "Holm's step-down correction over the comparisons against the best"


class AttemptStep(BaseModel):
    """Attempt k of a configuration run with several: what it adds over attempt k - 1."""

    attempt: int
    rate: float  # trials resolved by this attempt / scored trials
    cost_per_trial: float | None = None  # USD a trial spent through this attempt (None: a price unknown)
    rate_gained: float = 0.0  # over attempt k - 1 (attempt 1: over nothing)
    cost_added: float | None = None
    rate_per_dollar: float | None = None  # rate_gained / cost_added (None: nothing added, or unknown)


class VersusBest(BaseModel):
    """A configuration against the best, paired on their shared tasks."""

    shared_tasks: int = 0
    differing_tasks: int = 0  # tasks whose per-task rates differ (the test's n)
    difference: Interval = Field(default_factory=Interval)  # rate best - this, paired bootstrap
    p: float | None = None  # the sign-flip test's two-sided p
    p_holm: float | None = None  # Holm-adjusted
    separable: bool = False  # p_holm < alpha


class FrontPoint(BaseModel):
    config: str
    agent: str = ""
    model: str | None = None
    tasks: int = 0
    trials: int = 0
    resolve_rate: Interval = Field(default_factory=Interval)
    accept_rate: Interval = Field(default_factory=Interval)  # note says when not measured
    cost_per_trial: Interval = Field(default_factory=Interval)
    cost_per_resolved: Interval = Field(default_factory=Interval)
    cost_per_accepted: Interval = Field(default_factory=Interval)
    time_per_trial: Interval = Field(default_factory=Interval)
    on_cost_front: bool = False
    on_time_front: bool = False
    cost_dominated_by: list[str] = Field(default_factory=list)  # on point estimates
    cost_dominated_with_intervals_by: list[str] = Field(default_factory=list)
    time_dominated_by: list[str] = Field(default_factory=list)
    time_dominated_with_intervals_by: list[str] = Field(default_factory=list)
    attempts: list[AttemptStep] = Field(default_factory=list)  # empty with one attempt
    versus_best: VersusBest | None = None  # None for the best itself

    def on_front(self, spend: str) -> bool:
        return self.on_cost_front if spend == "cost" else self.on_time_front

    def dominated_by(self, spend: str) -> list[str]:
        return self.cost_dominated_by if spend == "cost" else self.time_dominated_by

    def dominated_with_intervals_by(self, spend: str) -> list[str]:
        return self.cost_dominated_with_intervals_by if spend == "cost" else self.time_dominated_with_intervals_by

    def spend(self, spend: str) -> Interval:
        """Cost or time per trial."""
        return self.cost_per_trial if spend == "cost" else self.time_per_trial


class Front(BaseModel):
    metric: str = "resolve"
    alpha: float = ALPHA
    test: str = SIGN_FLIP
    correction: str = HOLM
    best: str | None = None
    points: list[FrontPoint] = Field(default_factory=list)
    cost_front: list[str] = Field(default_factory=list)  # by cost per trial, cheapest first
    time_front: list[str] = Field(default_factory=list)  # by time per trial, quickest first
    not_separable: list[str] = Field(default_factory=list)  # the best, and those the data cannot tell from it
    min_p: float | None = None  # the smallest p the test could reach on the most tasks any comparison had
    notes: list[str] = Field(default_factory=list)

    def point(self, config: str) -> FrontPoint:
        return next(p for p in self.points if p.config == config)


# ---------------------------------------------------------------------------- per task


class _PerTask:
    """One configuration's scored trials by task: rate, cost per trial, time per trial."""

    def __init__(self, cfg: ConfigRows) -> None:
        self.rate: dict[str, float] = {}
        self.cost: dict[str, float | None] = {}
        self.time: dict[str, float] = {}
        scored = [t for t in trials_of(cfg.rows, cfg.retried) if t.scored]
        tasks: dict[str, list] = {}
        for t in scored:
            tasks.setdefault(t.task_id, []).append(t)
        for tid, ts in tasks.items():
            self.rate[tid] = sum(t.resolved for t in ts) / len(ts)
            costs = [t.cost for t in ts]
            self.cost[tid] = None if any(c is None for c in costs) else sum(c for c in costs if c is not None) / len(ts)
            self.time[tid] = sum(t.time_s for t in ts) / len(ts)
        self.scored = scored


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=TOLERANCE)


def _at_least(a: float, b: float) -> bool:
    return a > b or _close(a, b)


def point_dominates(y: tuple[float, float], x: tuple[float, float]) -> bool:
    """(rate, spend): y is at least as good as x on both (higher rate, lower spend) and better on one."""
    (ry, sy), (rx, sx) = y, x
    if not (_at_least(ry, rx) and _at_least(sx, sy)):
        return False
    return not (_close(ry, rx) and _close(sy, sx))


def _paired(y: dict[str, float | None], x: dict[str, float | None], tasks: list[str], settings) -> Interval | None:
    diffs = [y[t] - x[t] for t in tasks if y.get(t) is not None and x.get(t) is not None]  # type: ignore[operator]
    if len(diffs) < 2:
        return None
    return bootstrap_mean(diffs, settings=settings, method="paired-bootstrap-percentile")


def interval_dominates(y: _PerTask, x: _PerTask, spend: str, settings: BootstrapSettings) -> bool:
    """Y dominates X with intervals on rate and `spend` (cost or time): see the module docstring."""
    shared = sorted(set(y.rate) & set(x.rate))
    rate = _paired(dict(y.rate), dict(x.rate), shared, settings)  # type: ignore[arg-type]
    ys, xs = (y.cost, x.cost) if spend == "cost" else (y.time, x.time)
    cost = _paired(dict(ys), dict(xs), shared, settings)  # type: ignore[arg-type]
    if rate is None or cost is None or None in (rate.low, rate.high, cost.low, cost.high):
        return False
    assert rate.low is not None and cost.high is not None
    not_worse = rate.low >= -TOLERANCE and cost.high <= TOLERANCE
    better = rate.low > TOLERANCE or cost.high < -TOLERANCE
    return not_worse and better


# ---------------------------------------------------------------------------- the tests


def sign_flip_p(diffs: Sequence[float], *, seed: int = 20240917) -> float:
    """Two-sided p of the sign-flip (paired randomization) test of "per-task differences are
    symmetric about 0": the share of sign assignments whose |sum| reaches the observed |sum|.
    Exact over the 2^n assignments of the n nonzero differences up to EXACT_UP_TO, else
    SAMPLED_FLIPS random ones with a fixed seed ((1 + hits) / (1 + draws))."""
    import numpy as np

    d = np.asarray([v for v in diffs if abs(v) > TOLERANCE], dtype=float)
    n = len(d)
    if not n:
        return 1.0
    observed = abs(float(d.sum())) - TOLERANCE
    if n <= EXACT_UP_TO:  # every sign vector: row i's signs are the bits of i
        bits = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
        return int(np.count_nonzero(np.abs((1 - 2 * bits) @ d) >= observed)) / 2**n
    rng = np.random.default_rng(seed)
    hits, left = 0, SAMPLED_FLIPS
    while left:  # in chunks, so a suite of thousands of tasks stays small in memory
        rows = min(left, 1000)
        signs = rng.choice((-1.0, 1.0), size=(rows, n))
        hits += int(np.count_nonzero(np.abs(signs @ d) >= observed))
        left -= rows
    return (1 + hits) / (1 + SAMPLED_FLIPS)


def holm(ps: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p values, in the order given."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    adjusted, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


# ---------------------------------------------------------------------------- attempts


def attempt_steps(cfg: ConfigRows) -> list[AttemptStep]:
    """Rate and spend through each attempt, for a configuration that ran more than one."""
    trials = [t for t in trials_of(cfg.rows) if t.complete and not any(r.outcome in NOT_SCORED for r in t.attempts)]
    most = max((r.attempt for t in trials for r in t.attempts), default=1)
    if most < 2 or not trials:
        return []
    steps: list[AttemptStep] = []
    for k in range(1, most + 1):
        rate = sum(any(r.resolved for r in t.attempts if r.attempt <= k) for t in trials) / len(trials)
        costs = [r.cost_usd for t in trials for r in t.attempts if r.attempt <= k]
        cost = None if any(c is None for c in costs) else sum(c for c in costs if c is not None) / len(trials)
        before = steps[-1] if steps else None
        gained = rate - (before.rate if before else 0.0)
        added = (
            None
            if cost is None or (before and before.cost_per_trial is None)
            else cost - (before.cost_per_trial if before and before.cost_per_trial is not None else 0.0)
        )
        per_dollar = gained / added if added is not None and added > TOLERANCE else None
        steps.append(
            AttemptStep(
                attempt=k,
                rate=rate,
                cost_per_trial=cost,
                rate_gained=gained,
                cost_added=added,
                rate_per_dollar=per_dollar,
            )
        )
    return steps


# ---------------------------------------------------------------------------- the front


def _accepted_cost(cfg: ConfigRows, acc: ConfigAcceptance | None, per: _PerTask, settings) -> Interval:
    if acc is None or acc.accept_rate.value is None:
        return Interval(note=acc.accept_rate.note if acc else "no acceptance figures")
    tasks = [t for t in per.rate if per.cost[t] is not None]
    if len(tasks) < len(per.rate):
        return Interval(unknown=True, n=len(per.rate), note="a price is unknown for some attempts")
    counts = dict.fromkeys(tasks, 0)
    trials = dict.fromkeys(tasks, 0)
    for t in per.scored:
        trials[t.task_id] += 1
    for tid, (accepted, _) in acc.task_counts.items():
        if tid in counts:
            counts[tid] = accepted
    return bootstrap_ratio(
        [per.cost[t] * trials[t] for t in tasks],  # type: ignore[operator]
        [counts[t] for t in tasks],
        settings=settings,
    )


def _front(values: dict[str, tuple[float, float] | None]) -> list[str]:
    known = {k: v for k, v in values.items() if v is not None}
    on = [k for k, v in known.items() if not any(point_dominates(w, v) for j, w in known.items() if j != k)]
    return sorted(on, key=lambda k: (known[k][1], -known[k][0], k))


def compute_front(
    configs: list[ConfigRows],
    stats: list[ConfigStats],
    acceptance: list[ConfigAcceptance] | None = None,
    *,
    settings: BootstrapSettings | None = None,
    alpha: float = ALPHA,
    metric: str = "resolve",
) -> Front:
    """The front of `configs` (with their `stats`, the same order): see the module docstring."""
    settings = settings or BootstrapSettings()
    accepted = {a.config: a for a in acceptance or []}
    per = {c.name: _PerTask(c) for c in configs}
    out = Front(metric=metric, alpha=alpha)
    for cfg, st in zip(configs, stats, strict=True):
        acc = accepted.get(cfg.name)
        out.points.append(
            FrontPoint(
                config=cfg.name,
                agent=st.agent,
                model=st.model,
                tasks=st.tasks,
                trials=st.scored,
                resolve_rate=st.resolve_rate,
                accept_rate=acc.accept_rate if acc else Interval(note="no acceptance figures"),
                cost_per_trial=st.cost_per_trial,
                cost_per_resolved=st.cost_per_resolved,
                cost_per_accepted=_accepted_cost(cfg, acc, per[cfg.name], settings),
                time_per_trial=st.time_per_trial,
                attempts=attempt_steps(cfg),
            )
        )
    rated = [p for p in out.points if p.resolve_rate.value is not None]
    for spend in ("cost", "time"):
        values: dict[str, tuple[float, float] | None] = {}
        for p in rated:
            iv = p.cost_per_trial if spend == "cost" else p.time_per_trial
            values[p.config] = None if iv.value is None or iv.unknown else (p.resolve_rate.value, iv.value)  # type: ignore[assignment]
        front = _front(values)
        if spend == "cost":
            out.cost_front = front
        else:
            out.time_front = front
        for p in rated:
            mine = values[p.config]
            if mine is None:
                continue
            by = [q for q, v in values.items() if q != p.config and v is not None and point_dominates(v, mine)]
            clear = [q for q in by if interval_dominates(per[q], per[p.config], spend, settings)]
            if spend == "cost":
                p.on_cost_front, p.cost_dominated_by, p.cost_dominated_with_intervals_by = p.config in front, by, clear
            else:
                p.on_time_front, p.time_dominated_by, p.time_dominated_with_intervals_by = p.config in front, by, clear
        unknown = [k for k, v in values.items() if v is None]
        if unknown:
            out.notes.append(
                f"not on the {spend} front (its {spend} is unknown, never taken as 0): {', '.join(unknown)}"
            )
    for st in stats:
        if st.infra_errors or st.incomplete:
            out.notes.append(
                f"{st.name}: {st.infra_errors} trial(s) ended in an infrastructure error and {st.incomplete} are "
                "unfinished: left out of its figures and of its paired tasks (resume its run to redo them)"
            )
    everyone = set().union(*(set(t.rate) for t in per.values())) if per else set()
    for name, own in per.items():  # a cell narrowed to some tasks (a sweep's override): its figures are over those
        if 0 < len(own.rate) < len(everyone):
            out.notes.append(
                f"{name} ran {len(own.rate)} of the {len(everyone)} tasks: its rates, cost and time are over those; "
                "its paired comparisons use the tasks it shares"
            )
    _versus_best(out, per, settings)
    return out


def _versus_best(out: Front, per: dict[str, _PerTask], settings: BootstrapSettings) -> None:
    rated = [p for p in out.points if p.resolve_rate.value is not None]
    if not rated:
        return

    def key(p: FrontPoint):
        cost = p.cost_per_trial.value if p.cost_per_trial.value is not None else math.inf
        time = p.time_per_trial.value if p.time_per_trial.value is not None else math.inf
        return (-round(p.resolve_rate.value or 0.0, 9), round(cost, 9), round(time, 9), p.config)

    best = min(rated, key=key)
    out.best = best.config
    others = [p for p in rated if p is not best]
    ps: list[float] = []
    most = 0
    for p in others:
        b, x = per[best.config], per[p.config]
        shared = sorted(set(b.rate) & set(x.rate))
        diffs = [b.rate[t] - x.rate[t] for t in shared]
        vs = VersusBest(
            shared_tasks=len(shared),
            differing_tasks=sum(abs(d) > TOLERANCE for d in diffs),
            p=sign_flip_p(diffs),
        )
        if len(diffs) >= 2:
            vs.difference = bootstrap_mean(diffs, settings=settings, method="paired-bootstrap-percentile")
        most = max(most, len(shared))
        p.versus_best = vs
        ps.append(vs.p or 1.0)
    for p, adjusted in zip(others, holm(ps), strict=True):
        assert p.versus_best is not None
        p.versus_best.p_holm = adjusted
        p.versus_best.separable = adjusted < out.alpha
    out.not_separable = [best.config] + [p.config for p in others if p.versus_best and not p.versus_best.separable]
    if others:
        out.min_p = 2 / 2**most if most else 1.0
        if out.min_p >= out.alpha:
            out.notes.append(
                f"with {most} shared task(s) the test's smallest possible p is {out.min_p:.3g}, not below "
                f"alpha = {out.alpha:g}: no configuration can be separated from the best on this suite; more tasks would"
            )
