"""`wholeloop gate`: is the candidate worse than the baseline? A paired decision for CI.

Pairing. Only tasks both sides scored (a final row that is not an infrastructure error) *with the
same task content hash* are compared; a task whose spec changed between the runs is listed, not
compared. Per shared task i, with all its repeats on each side:

- resolve: b_i, c_i = the share of the task's trials resolved; the candidate is worse by more than
  the margin m (points) when mean(c - b) < -m. Per task e_i = (c_i - b_i) + m;
- cost, time: b_i, c_i = mean cost (USD) or time (s) per trial; worse by more than the margin m
  (a fraction of the baseline) when mean(c) > (1 + m) mean(b). Per task e_i = (1 + m) b_i - c_i.

So in every metric e_i < 0 leans towards "worse than allowed".

Test. One-sided paired sign-flip (randomization) test of mean(e) >= 0 against mean(e) < 0:
p = P(sum s_i e_i <= sum e_i) over independent random signs s_i. It is exact (every sign pattern
counted, grouped by |e_i|) whenever that is feasible - always for the resolve metric on suites of
ordinary size - and otherwise a Monte Carlo estimate from 100,000 sign patterns with a fixed seed.
With margin 0 and one repeat per task it is exactly the one-sided exact McNemar (sign) test on the
tasks that flipped.

Infrastructure errors. A task both sides ran on which either side has an infra error (any repeat)
has an unknown outcome there: it is neither left out of the pairing silently nor guessed. Then
the verdict is **not enough evidence** (exit 4) whatever the test says on the other tasks (its
figures are still shown), naming those tasks and the `run --out` that would redo them
(`infra_tasks`, `redo`); with `strict` (`--strict`) they count as failures and the test decides.

Unfinished and changed tasks. A task of the baseline that the candidate has not finished (no row:
a run cut short; or a trial without a final row: an abandoned try) is `unfinished`, and a task both
sides ran whose content hash differs (over all its rows) is `changed`: a candidate that dropped or
re-specified the tasks it regressed on must not "have no regression". Both make the verdict **not
enough evidence** (exit 4) like infra errors, naming them (and, for unfinished ones, the
candidate's resume); with `strict` and the resolve metric an unfinished task counts as failures
(one failed trial for a task never run), a changed spec never does.

Decision, in this order:
0. infra errors on shared tasks (not `strict`), unfinished tasks (not `strict` with the resolve
   metric) or changed specs: **not enough evidence** (exit 4), as above;
1. p < alpha: **regression** (exit 1).
2. fewer shared tasks than the test needs to ever reach p < alpha (n with 2^-n < alpha: 5 at
   alpha 0.05), or the candidate looks worse than allowed (mean(e) < 0) without p < alpha:
   **not enough evidence** (exit 4), with how many tasks would be needed (below);
3. otherwise: **no regression** (exit 0).

Power. The test rejects about when mean(e) < -z_alpha sqrt(E[e^2] / n); with E[e] = mu < 0 and
sd(e) = sigma its power is Phi((|mu| sqrt(n) - z_alpha sqrt(E[e^2])) / sigma), so 80 % power needs

    n = ((z_alpha sqrt(E[e^2]) + z_beta sigma) / mu)^2          (z_beta = z at 0.80)

with the observed moments (for one repeat and margin 0 this is Connor's McNemar sample size), and
at least the test's minimum above. Repeats shrink the per-task noise: with R repeats per side the
variance of e_i is between-task variance + per-trial noise / R; the noise is estimated from tasks
with two or more trials. With one repeat per task the noise cannot be told from real differences,
so the repeats figure is then a lower bound: what would do if every flip were noise.
tests/test_gate.py checks both formulas against simulations of this very test.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field
from scipy.special import comb
from scipy.stats import norm

from ..records import ResultRow
from .acceptance import DEFAULT_POLICY, Policy, as_accepted
from .compare import Redo, infra_by_task, infra_reason, infra_redo, infra_shares_differ
from .divergence import FlipWhy, why_flipped
from .errors import ReportInputError
from .stats import SEED, Trial, by_task, trials_of

METRICS = ("resolve", "accept", "cost", "time")
RATES = ("resolve", "accept")  # a rate of trials: `accept` is resolved and accepted under the policy
POWER = 0.8
MC_PATTERNS = 100_000
EXACT_LIMIT = 200_000  # sign-pattern classes enumerated exactly (product of (count + 1) over |e| values)
MAX_REPEATS = 100

REGRESSION, NOT_ENOUGH, NO_REGRESSION = "regression", "not_enough_evidence", "no_regression"
#: The version of `gate --json` (CI parses it). 1: no version field (before issue 21); 2: adds
#: `schema_version`, `strict`, `infra_tasks` and `redo` (infra errors on shared tasks: exit 4); 3:
#: adds `unfinished` (the baseline's tasks the candidate has not finished: exit 4), and `changed`
#: (specs changed between the runs) makes it exit 4 too; 4: each lost and won task's `why` (the failing
#: side's causes and where the two attempts went apart: docs/failures.md).
SCHEMA_VERSION = 4


@dataclass
class SideRows:
    """One side of a gate: the latest rows of one configuration, and where they came from."""

    name: str  # how the side is shown (a folder, or the history query that found it)
    config: str
    rows: list[ResultRow]
    run_dir: str = ""  # transcripts are relative to it


class Side(BaseModel):
    name: str
    config: str
    run_dir: str = ""
    tasks: int = 0
    trials: int = 0  # complete trials
    scored: int = 0
    resolved: int = 0
    infra_errors: int = 0
    infra_share: float | None = None  # infra errors / complete trials
    repeats: int = 0  # the median of scored trials per task
    tampering: list[str] = Field(default_factory=list)  # tasks with a final row whose grade suspects tampering


class Flip(BaseModel):
    task_id: str
    baseline: str  # "1/1": resolved / scored trials
    candidate: str
    baseline_rate: float
    candidate_rate: float
    baseline_transcript: str = ""  # the trial that shows the difference, on each side
    candidate_transcript: str = ""
    why: FlipWhy | None = None  # the failing side's causes and where the two attempts went apart


class GateResult(BaseModel):
    schema_version: int = SCHEMA_VERSION
    metric: str
    margin: float  # points (resolve) or a fraction of the baseline (cost, time), as a fraction
    alpha: float
    power: float = POWER
    baseline: Side
    candidate: Side
    shared: list[str] = Field(default_factory=list)  # compared tasks
    changed: list[str] = Field(default_factory=list)  # on both sides, different content hash
    only_baseline: list[str] = Field(default_factory=list)
    only_candidate: list[str] = Field(default_factory=list)
    unscored: list[str] = Field(default_factory=list)  # on both sides, but only infra errors on one
    strict: bool = False  # infra errors counted as failures (--strict)
    infra_tasks: list[str] = Field(default_factory=list)  # on both sides, an infra error on one (not strict)
    unfinished: list[str] = Field(default_factory=list)  # the baseline's, missing or incomplete in the candidate
    redo: list[Redo] = Field(default_factory=list)  # the runs whose resume would redo them
    infra_shares: str = ""  # the sides' infra-error shares differ (compare's rule: compare.infra_shares_differ)
    cost_unknown: list[str] = Field(default_factory=list)  # left out of the cost metric
    baseline_value: float | None = None  # mean rate, or mean cost / time per trial, on the shared tasks
    candidate_value: float | None = None
    difference: float | None = None  # resolve: candidate - baseline (rate); cost, time: relative change
    p_value: float | None = None
    exact: bool = True
    test: str = "one-sided paired sign-flip test"
    min_tasks: int = 0
    tasks_needed: int | None = None
    repeats_needed: int | None = None
    repeats_note: str = ""
    lost: list[Flip] = Field(default_factory=list)  # resolved more often in the baseline
    won: list[Flip] = Field(default_factory=list)
    verdict: str = NO_REGRESSION
    reason: str = ""


# ---------------------------------------------------------------------------- the test


def signflip_p(e: list[float] | np.ndarray) -> tuple[float, bool]:
    """One-sided p value P(sum s_i e_i <= sum e_i) over random signs, and whether it is exact."""
    e = np.asarray(e, dtype=float)
    observed = float(e.sum())
    scale = float(np.abs(e).sum())
    if scale == 0:
        return 1.0, True
    tol = 1e-9 * scale
    magnitudes: dict[float, int] = defaultdict(int)
    for value in np.abs(e):
        if value > 0:
            magnitudes[round(float(value), 12)] += 1
    classes = math.prod(c + 1 for c in magnitudes.values())
    if classes <= EXACT_LIMIT:
        dist: dict[float, float] = {0.0: 1.0}
        for a, c in magnitudes.items():
            weights = [comb(c, j, exact=True) / 2**c for j in range(c + 1)]
            nxt: dict[float, float] = defaultdict(float)
            for s, p in dist.items():
                for j, w in enumerate(weights):
                    nxt[round(s + a * (2 * j - c), 9)] += p * w
            dist = nxt
        return min(1.0, sum(p for s, p in dist.items() if s <= observed + tol)), True
    rng = np.random.default_rng(SEED)
    hits, done = 0, 0
    while done < MC_PATTERNS:
        chunk = min(10_000, MC_PATTERNS - done)
        signs = rng.integers(0, 2, size=(chunk, len(e)), dtype=np.int8) * 2 - 1
        hits += int(np.count_nonzero(signs @ e <= observed + tol))
        done += chunk
    return (hits + 1) / (MC_PATTERNS + 1), False


def min_tasks(alpha: float) -> int:
    """The fewest tasks on which the test can reach p < alpha at all (all of them worse): 2^-n < alpha."""
    return math.floor(math.log2(1 / alpha)) + 1


def tasks_needed(mu: float, second_moment: float, sd: float, alpha: float, power: float = POWER) -> int | None:
    """Tasks for `power` to detect a mean per-task difference mu < 0 (see the module's docstring)."""
    if mu >= 0:
        return None
    za, zb = norm.ppf(1 - alpha), norm.ppf(power)
    n = ((za * math.sqrt(second_moment) + zb * sd) / abs(mu)) ** 2
    return max(math.ceil(n - 1e-9), min_tasks(alpha))


def repeats_needed(
    mu: float, between_var: float, trial_noise: float, n: int, alpha: float, power: float = POWER, start: int = 1
) -> int | None:
    """The fewest repeats R >= start (of each task, on each side) with which n tasks reach `power`:
    the variance of e_i is between_var + trial_noise / R. None when no R up to 100 does."""
    if mu >= 0 or n < min_tasks(alpha):
        return None
    for r in range(max(start, 1), MAX_REPEATS + 1):
        var = between_var + trial_noise / r
        need = tasks_needed(mu, var + mu * mu, math.sqrt(var), alpha, power)
        if need is not None and need <= n:
            return r
    return None


# ---------------------------------------------------------------------------- the sides


@dataclass
class _Task:
    trials: list[Trial]  # scored
    hashes: set[str]

    def values(self, metric: str) -> list[float | None]:
        if metric in RATES:
            return [float(t.resolved) for t in self.trials]
        if metric == "cost":
            return [t.cost for t in self.trials]
        return [t.time_s for t in self.trials]

    def mean(self, metric: str) -> float | None:
        values = self.values(metric)
        known = [v for v in values if v is not None]
        return None if len(known) < len(values) else float(np.mean(known))

    def resolved(self) -> int:
        return sum(t.resolved for t in self.trials)


def _side(
    rows: SideRows, strict: bool = False, fail_unfinished: bool = False
) -> tuple[Side, dict[str, _Task], set[str]]:
    trials = trials_of(rows.rows)
    complete = [t for t in trials if t.complete]
    infra = sum(t.infra_error for t in complete)
    kept = [  # strict: infra errors are failures; fail_unfinished: so are incomplete trials
        t
        for t in trials
        if (t.complete and (t.scored or (strict and t.infra_error))) or (fail_unfinished and not t.complete)
    ]
    scored = {tid: ts for tid, ts in by_task(kept).items() if ts}
    hashes = _hashes(rows.rows)
    tasks = {tid: _Task(ts, hashes[tid]) for tid, ts in scored.items()}
    side = Side(
        name=rows.name,
        config=rows.config,
        run_dir=rows.run_dir,
        tasks=len({t.task_id for t in trials}),
        trials=len(complete),
        scored=sum(len(ts) for ts in scored.values()),
        resolved=sum(t.resolved() for t in tasks.values()),
        infra_errors=infra,
        infra_share=infra / len(complete) if complete else None,
        repeats=int(np.median([len(ts) for ts in scored.values()])) if scored else 0,
        tampering=sorted({t.final.task_id for t in complete if t.final and t.final.tampering}),
    )
    return side, tasks, {t.task_id for t in trials}


def _hashes(rows: list[ResultRow]) -> dict[str, set[str]]:
    """Each task's content hashes, over all its rows (complete trials or not)."""
    out: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        out[row.task_id].add(row.task_hash)
    return out


def unfinished_tasks(baseline: list[ResultRow], candidate: list[ResultRow]) -> list[str]:
    """The baseline's tasks the candidate has not finished: no row at all (a run cut short), or a
    trial without a final row (an abandoned try the run stopped before retrying)."""
    cand = by_task(trials_of(candidate))
    return sorted(
        {
            t.task_id
            for t in trials_of(baseline)
            if t.task_id not in cand or not all(x.complete for x in cand[t.task_id])
        }
    )


def _names(tasks: list[str]) -> str:
    return ", ".join(tasks[:8]) + (", ..." if len(tasks) > 8 else "")


def _transcript(run_dir: str, trials: list[Trial], resolved: bool) -> str:
    trial = next((t for t in trials if t.resolved == resolved), trials[0])
    path = trial.final.transcript_path if trial.final else ""
    if not path:
        return ""
    return str(Path(run_dir) / path) if run_dir else path


def _flip(tid: str, b: _Task, c: _Task, base: Side, cand: Side, lost: bool) -> Flip:
    return Flip(
        task_id=tid,
        baseline=f"{b.resolved()}/{len(b.trials)}",
        candidate=f"{c.resolved()}/{len(c.trials)}",
        baseline_rate=b.resolved() / len(b.trials),
        candidate_rate=c.resolved() / len(c.trials),
        baseline_transcript=_transcript(base.run_dir, b.trials, resolved=lost),
        candidate_transcript=_transcript(cand.run_dir, c.trials, resolved=not lost),
        why=_why(b, c, base, cand, lost),
    )


def _why(b: _Task, c: _Task, base: Side, cand: Side, lost: bool) -> FlipWhy | None:
    """The failing side's causes on its failed trial, and where it went apart from the other side's resolved one."""
    (fail, fail_side), (ok, ok_side) = ((c, cand), (b, base)) if lost else ((b, base), (c, cand))
    failed = next((t.final for t in fail.trials if not t.resolved and t.final is not None), None)
    resolved = next((t.final for t in ok.trials if t.resolved and t.final is not None), None)
    if failed is None or resolved is None:
        return None
    return why_flipped("candidate" if lost else "baseline", fail_side.run_dir, failed, ok_side.run_dir, resolved)


def _trial_noise(tasks: list[_Task], metric: str) -> float | None:
    """Pooled within-task variance of one trial's value (None when no task has two trials)."""
    ss, dof = 0.0, 0
    for t in tasks:
        values = [v for v in t.values(metric) if v is not None]
        if len(values) >= 2:
            ss += float(np.sum((np.asarray(values) - np.mean(values)) ** 2))
            dof += len(values) - 1
    return ss / dof if dof else None


# ---------------------------------------------------------------------------- the gate


def gate(
    baseline: SideRows,
    candidate: SideRows,
    *,
    metric: str = "resolve",
    margin: float = 0.0,
    alpha: float = 0.05,
    power: float = POWER,
    strict: bool = False,
    policy: Policy = DEFAULT_POLICY,
) -> GateResult:
    """The decision; `margin` is a fraction (0.05: 5 points of resolve rate, or 5 % more cost/time);
    `strict`: infra errors (and, for the resolve metric, the baseline's tasks the candidate has not
    finished) count as failures (else they make it not enough evidence, as changed specs always do);
    `policy`: the acceptance policy of the `accept` metric (raises NotMeasured when a resolved row of
    either side has no acceptance axes)."""
    if metric == "accept":
        baseline = replace(
            baseline, rows=as_accepted(baseline.rows, policy, where=baseline.name, run_dir=baseline.run_dir or None)
        )
        candidate = replace(
            candidate, rows=as_accepted(candidate.rows, policy, where=candidate.name, run_dir=candidate.run_dir or None)
        )
    unfinished = unfinished_tasks(baseline.rows, candidate.rows)
    counted = strict and metric in RATES  # a task never finished is a failure; it has no cost or time
    out = _decide(
        baseline,
        candidate,
        metric=metric,
        margin=margin,
        alpha=alpha,
        power=power,
        strict=strict,
        fail_unfinished=unfinished if counted else [],
    )
    out.unfinished = unfinished
    b_infra, c_infra = infra_by_task(baseline.rows), infra_by_task(candidate.rows)
    if not strict:
        ran_b, ran_c = {t.task_id for t in trials_of(baseline.rows)}, {t.task_id for t in trials_of(candidate.rows)}
        out.infra_tasks = sorted((b_infra | c_infra) & ran_b & ran_c)
    open_tasks = [] if counted else unfinished
    if out.infra_tasks or open_tasks or out.changed:
        redo_tasks = sorted(set(out.infra_tasks) | set(open_tasks))
        out.redo = infra_redo(
            [("baseline", baseline.run_dir, b_infra), ("candidate", candidate.run_dir, c_infra | set(open_tasks))],
            redo_tasks,
        )
        without = {
            REGRESSION: "a regression",
            NO_REGRESSION: "no regression",
            NOT_ENOUGH: "not enough evidence either",
        }[out.verdict]
        p = "" if out.p_value is None else f", p = {out.p_value:.3g}"
        why = []
        if out.infra_tasks:
            why.append(infra_reason(out.infra_tasks, [r for r in out.redo if set(r.tasks) & set(out.infra_tasks)]))
        if open_tasks:
            why.append(
                f"{len(open_tasks)} task(s) of the baseline are not finished in the candidate ({_names(open_tasks)}: "
                "missing or incomplete trials, a run cut short): their outcome is unknown, so they are neither "
                "left out nor guessed; finish the candidate's run (resume it: see below), or count them as "
                "failures with --strict"
                + (
                    ""
                    if metric in RATES
                    else " (resolve metric only, and accept: a task never finished has no cost or time)"
                )
            )
        if out.changed:
            why.append(
                f"{len(out.changed)} task(s) have a changed spec (a different content hash) in the candidate "
                f"({_names(out.changed)}): a changed spec is not a result and cannot be paired; review the "
                "change, and gate against a baseline run of the new specs"
            )
        out.reason = f"{'; '.join(why)} (without them, on {len(out.shared)} task(s): {without}{p})"
        out.verdict, out.tasks_needed, out.repeats_needed, out.repeats_note = NOT_ENOUGH, None, None, ""
    return out


def _decide(
    baseline: SideRows,
    candidate: SideRows,
    *,
    metric: str,
    margin: float,
    alpha: float,
    power: float,
    strict: bool,
    fail_unfinished: list[str] | None = None,
) -> GateResult:
    """The test's decision on the tasks both sides scored (see the module's docstring)."""
    if metric not in METRICS:
        raise ReportInputError(f"unknown metric {metric!r}: one of {', '.join(METRICS)}")
    if not 0 < alpha < 1:
        raise ReportInputError(f"alpha must be between 0 and 1, not {alpha}")
    if margin < 0 or (metric in RATES and margin > 1):
        raise ReportInputError(f"a margin of {100 * margin:g} {'points' if metric in RATES else '%'} makes no sense")
    base, b_tasks, b_all = _side(baseline, strict)
    cand, c_tasks, c_all = _side(candidate, strict, fail_unfinished=bool(fail_unfinished))
    for tid in fail_unfinished or []:  # the baseline's tasks the candidate never ran: one failed trial each
        if tid not in c_all and tid in b_tasks:
            c_tasks[tid] = _Task([Trial(tid, 0, [])], set(b_tasks[tid].hashes))
            c_all = c_all | {tid}
    b_hashes, c_hashes = _hashes(baseline.rows), _hashes(candidate.rows)
    out = GateResult(
        strict=strict,
        metric=metric,
        margin=margin,
        alpha=alpha,
        power=power,
        baseline=base,
        candidate=cand,
        min_tasks=min_tasks(alpha),
    )
    said = infra_shares_differ(base.name, base.infra_share, cand.name, cand.infra_share)
    out.infra_shares = (
        f"{said}: the sides were paired on different tasks; resume the run(s) to redo them" if said else ""
    )
    both = sorted(b_all & c_all)
    out.only_baseline = sorted(b_all - c_all)
    out.only_candidate = sorted(c_all - b_all)
    out.unscored = [t for t in both if t not in b_tasks or t not in c_tasks]
    out.changed = [t for t in both if c_hashes.get(t, b_hashes.get(t)) != b_hashes.get(t)]
    paired = [t for t in both if t in b_tasks and t in c_tasks and t not in out.changed]
    for tid in paired:
        b, c = b_tasks[tid], c_tasks[tid]
        rb, rc = b.resolved() / len(b.trials), c.resolved() / len(c.trials)
        if rc < rb:
            out.lost.append(_flip(tid, b, c, base, cand, lost=True))
        elif rc > rb:
            out.won.append(_flip(tid, b, c, base, cand, lost=False))
    if metric == "cost":
        out.cost_unknown = [t for t in paired if b_tasks[t].mean("cost") is None or c_tasks[t].mean("cost") is None]
    out.shared = [t for t in paired if t not in out.cost_unknown]
    n = len(out.shared)
    if n == 0:
        out.verdict = NOT_ENOUGH
        out.tasks_needed = out.min_tasks
        why = "no task was scored on both sides with the same content hash"
        if out.cost_unknown:
            why += f" and a known cost ({len(out.cost_unknown)} shared tasks have an unknown price)"
        out.reason = why
        return out

    bv = np.array([b_tasks[t].mean(metric) for t in out.shared], dtype=float)
    cv = np.array([c_tasks[t].mean(metric) for t in out.shared], dtype=float)
    if metric in RATES:
        e = (cv - bv) + margin
        k_b, k_c = 1.0, 1.0
        out.difference = float(np.mean(cv - bv))
    else:
        e = (1 + margin) * bv - cv
        k_b, k_c = (1 + margin) ** 2, 1.0
        out.difference = float(cv.sum() / bv.sum() - 1) if bv.sum() > 0 else None
    out.baseline_value, out.candidate_value = float(np.mean(bv)), float(np.mean(cv))
    out.p_value, out.exact = signflip_p(e)
    out.test = f"one-sided paired sign-flip test ({'exact' if out.exact else f'Monte Carlo, {MC_PATTERNS:,} patterns'})"

    mu, m2 = float(np.mean(e)), float(np.mean(e * e))
    sd = math.sqrt(max(m2 - mu * mu, 0.0))
    if out.p_value < alpha:
        out.verdict = REGRESSION
        out.reason = (
            f"the candidate is worse than the baseline by more than the margin (p = {out.p_value:.3g} < {alpha:g})"
        )
        return out
    blind = n < out.min_tasks
    if not blind and mu >= 0:
        out.verdict = NO_REGRESSION
        out.reason = (
            f"no sign of a regression beyond the margin on {n} shared tasks (p = {out.p_value:.3g}; "
            "the candidate is not worse than allowed on average)"
        )
        return out
    out.verdict = NOT_ENOUGH
    out.tasks_needed = tasks_needed(mu, m2, sd, alpha, power) if mu < 0 else out.min_tasks
    if blind:
        out.reason = (
            f"{n} shared task{'s' if n != 1 else ''}: too few for the test to ever reach p < {alpha:g} "
            f"(it needs at least {out.min_tasks}, even if the candidate lost every one)"
        )
    else:
        out.reason = (
            f"the candidate looks worse than allowed (p = {out.p_value:.3g}, not below {alpha:g}): "
            f"{n} shared tasks are too few to tell"
        )
    if mu < 0 and blind:
        out.repeats_note = f"repeats cannot make up for too few tasks: the test needs {out.min_tasks} shared tasks"
    elif mu < 0:
        r_now = max(1, min(base.repeats, cand.repeats))
        noise_b, noise_c = (
            _trial_noise([b_tasks[t] for t in out.shared], metric),
            _trial_noise([c_tasks[t] for t in out.shared], metric),
        )
        if noise_b is not None and noise_c is not None:
            noise = k_b * noise_b + k_c * noise_c
            between = max(sd * sd - noise / r_now, 0.0)
            out.repeats_needed = repeats_needed(mu, between, noise, n, alpha, power, start=r_now + 1)
            out.repeats_note = (
                ""
                if out.repeats_needed
                else "more repeats of these tasks alone would not do: the tasks differ for real"
            )
        else:
            out.repeats_needed = repeats_needed(mu, 0.0, sd * sd, n, alpha, power, start=2)
            out.repeats_note = (
                "with one repeat per task noise cannot be told from real change: the repeats "
                "figure assumes every difference is noise, a lower bound"
            )
    return out
