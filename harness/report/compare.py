"""Paired comparison of configurations on the tasks they share.

For each pair (A, B) and each shared task, a task's success rate in a configuration is the share
of its scored trials (all repeats; infra errors left out) that resolved. Then:

- **wins / losses / ties** per task compare those rates (A wins a task when its rate is higher);
- **exact McNemar test** on one outcome per task: the *first* scored repeat of each
  configuration (the lowest repeat number), so each task gives exactly one paired 0/1 outcome as
  the test assumes. b = tasks A resolved and B did not, c = the reverse; the two-sided p value is
  ``scipy.stats.binomtest(b, b + c, 0.5)``, computed exactly (1.0 when there are no discordant tasks). Using the
  first repeat instead of a per-task majority keeps ties out and is what a single-run comparison
  would have seen;
- **paired bootstrap interval** for the difference in resolve rate A - B, using *all* repeats:
  the statistic is the mean over tasks of (rate_A - rate_B); tasks are resampled with
  replacement, the pair of rates staying together (percentile method, fixed seed);
- cost and time per resolved trial of each configuration on the shared tasks.

Infrastructure errors never drop a task silently: when either configuration has an infra error on
a task both ran (any repeat), the verdict is "not enough evidence" (no ranking; `wholeloop compare`
exits 4), naming those tasks and the `run --out` that would redo them, unless `strict` counts them
as failures (`--strict`). The same rule holds in `wholeloop gate` (`infra_tasks`, `redo`). Nor do
unfinished or changed tasks, as in the gate: a task one configuration ran that the other has not
finished (no row: a run cut short; or a trial without a final row: an abandoned try) is
`unfinished` on that side, and a task both ran whose content hash differs (over all its rows) is
`changed` and never paired. Either makes the verdict "not enough evidence" (exit 4), naming them
(and, for unfinished ones, the resume of the side that has not finished them); `strict` counts an
unfinished task as failures of that side (one failed trial for a task it never ran), a changed
spec never.

Verdict: when the interval contains zero the data does not separate them ("same tier") and no
ranking is made; otherwise the configuration the interval favours is named, with the interval,
and a ``caution`` is attached when the exact McNemar test disagrees (p >= 0.05): with few tasks
the percentile bootstrap interval is too narrow, and a reader should see both.
"""

from __future__ import annotations

import os
import shlex
from itertools import combinations
from math import comb
from pathlib import Path

from pydantic import BaseModel, Field

from .divergence import FlipWhy, why_flipped
from .stats import BootstrapSettings, ConfigRows, Interval, Trial, bootstrap_mean, bootstrap_ratio, by_task, trials_of

#: The version of `compare --json`: 1 had no version field; 2 adds `schema_version`, and each
#: comparison's `unfinished` and `changed` (both make the verdict not enough evidence: exit 4); 3 adds
#: each flipped task's `why` (docs/failures.md).
JSON_SCHEMA_VERSION = 3
SAME_TIER = "same tier: the data does not separate them"
NOT_ENOUGH_EVIDENCE = "not enough evidence"
INFRA_SHARES_DIFFER = (
    0.05  # infra-error shares this far apart (of all trials) are flagged: the rates left out different trials
)


class TaskPair(BaseModel):
    task_id: str
    rate_a: float
    rate_b: float
    trials_a: int
    trials_b: int
    first_a: bool  # first scored repeat resolved?
    first_b: bool
    result: str  # "a" | "b" | "tie"
    transcripts_a: list[str] = Field(default_factory=list)  # run folder / transcript of each trial
    transcripts_b: list[str] = Field(default_factory=list)
    why: FlipWhy | None = None  # first repeats flipped: the failing side's causes, where the two went apart


class Redo(BaseModel):
    """What would redo one side's infrastructure errors: its run, resumed (resume redoes every
    unit whose final row is an infra error)."""

    side: str  # "baseline" / "candidate" (gate), or the configuration (compare)
    run_dir: str
    command: str  # the run's own command with --out RUN_DIR ("" when the manifest has none)
    cwd: str = ""  # where that command was run (its relative paths are relative to it)
    tasks: list[str] = Field(default_factory=list)  # the shared tasks with infra errors on this side


class SideFigures(BaseModel):
    config: str
    resolve_rate: float | None = None  # mean of per-task rates on the shared tasks
    resolved_trials: int = 0
    trials: int = 0
    cost_per_resolved: Interval = Field(default_factory=Interval)
    time_per_resolved: Interval = Field(default_factory=Interval)


class Comparison(BaseModel):
    a: str
    b: str
    shared_tasks: int = 0
    only_a: list[str] = Field(default_factory=list)
    only_b: list[str] = Field(default_factory=list)
    wins_a: int = 0
    wins_b: int = 0
    ties: int = 0
    mcnemar_b: int = 0  # A resolved, B not (first repeat)
    mcnemar_c: int = 0  # B resolved, A not (first repeat)
    mcnemar_p: float | None = None
    difference: Interval = Field(default_factory=Interval)  # resolve rate A - B, paired bootstrap
    same_tier: bool = True
    better: str | None = None  # None when same tier
    verdict: str = SAME_TIER
    caution: str = ""  # set when the paired test and the interval disagree
    infra_shares: str = ""  # set when the two configurations' infra-error shares differ (INFRA_SHARES_DIFFER)
    strict: bool = False  # infra errors counted as failures (--strict)
    infra_tasks: list[str] = Field(default_factory=list)  # shared tasks with an infra error on a side
    unfinished: list[str] = Field(default_factory=list)  # ran by one side, not finished by the other (not strict)
    changed: list[str] = Field(default_factory=list)  # on both sides, different content hash: not paired
    redo: list[Redo] = Field(default_factory=list)  # the runs that would redo them
    side_a: SideFigures
    side_b: SideFigures
    tasks: list[TaskPair] = Field(default_factory=list)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p value on the discordant pairs (b, c)."""
    if b + c == 0 or b == c:
        return 1.0
    # Binomial(n, 1/2) is symmetric: the two-sided p value is twice the tail of the smaller count.
    n = b + c
    tail = sum(comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)


def _scored_by_task(
    cfg: ConfigRows, strict: bool = False, unfinished: set[str] | None = None
) -> dict[str, list[Trial]]:
    """Each task's scored trials (`strict`: its infra errors too, as failures, and the incomplete
    trials of its `unfinished` tasks, one failed trial for such a task it never ran)."""
    trials, unfinished = trials_of(cfg.rows), unfinished or set()
    kept = [
        t for t in trials if t.scored or (strict and (t.infra_error or (not t.complete and t.task_id in unfinished)))
    ]
    out = {tid: ts for tid, ts in by_task(kept).items() if ts}
    if strict:
        ran = {t.task_id for t in trials}
        out.update({tid: [Trial(tid, 0, [])] for tid in sorted(unfinished - ran)})
    return dict(sorted(out.items()))


def not_finished(ran: dict[str, list[Trial]], other: dict[str, list[Trial]]) -> set[str]:
    """The tasks `ran` has that `other` has not finished: no trial, or a trial without a final row."""
    return {tid for tid in ran if tid not in other or not all(t.complete for t in other[tid])}


def changed_tasks(a: list, b: list) -> list[str]:
    """Tasks in both row lists whose content hashes (over all their rows) differ."""
    ha: dict[str, set[str]] = {}
    hb: dict[str, set[str]] = {}
    for rows, hashes in ((a, ha), (b, hb)):
        for row in rows:
            hashes.setdefault(row.task_id, set()).add(row.task_hash)
    return sorted(t for t in ha.keys() & hb.keys() if ha[t] != hb[t])


def infra_by_task(rows) -> set[str]:
    """The tasks with a trial whose final row is an infrastructure error."""
    return {t.task_id for t in trials_of(rows) if t.infra_error}


def redo_command(run_dir: str | Path) -> tuple[str, str]:
    """(command, cwd): the command that wrote `run_dir` (its manifest's), with `--out RUN_DIR`: run
    again, it resumes and redoes every unit whose final row is an infra error. ("", "") without a
    recorded command."""
    from ..records import RunFolder

    try:
        manifest = RunFolder(Path(run_dir)).info()
    except (OSError, ValueError):  # pydantic's ValidationError too: a manifest not as written
        return "", ""
    argv = manifest.command
    if not argv:
        return "", ""
    out, skip = ["wholeloop" if os.path.basename(argv[0]) == "wholeloop" else argv[0]], False
    for arg in argv[1:]:
        if skip:
            skip = False
        elif arg in ("--out", "-o"):
            skip = True
        elif not arg.startswith("--out="):
            out.append(arg)
    return shlex.join([*out, "--out", str(run_dir)]), str(manifest.cwd or "")


def infra_redo(sides: list[tuple[str, str, set[str]]], shared: list[str]) -> list[Redo]:
    """For each side (name, run folder, its infra tasks) with infra errors on `shared` tasks: the redo."""
    out = []
    for name, run_dir, infra in sides:
        tasks = [t for t in shared if t in infra]
        if tasks:
            command, cwd = redo_command(run_dir)
            out.append(Redo(side=name, run_dir=str(run_dir), command=command, cwd=cwd, tasks=tasks))
    return out


def _names(tasks: list[str]) -> str:
    return ", ".join(tasks[:8]) + (", ..." if len(tasks) > 8 else "")


def infra_reason(infra_tasks: list[str], redo: list[Redo]) -> str:
    """The words of the "not enough evidence" verdict that infra errors on shared tasks give."""
    names = _names(infra_tasks)
    sides = " and ".join(r.side for r in redo)
    return (
        f"{len(infra_tasks)} shared task(s) have infrastructure errors ({names}) on the {sides} side: "
        "their outcome is unknown, so they are neither left out nor guessed; redo them "
        "(resume the run: see below), or count them as failures with --strict"
    )


def _side(
    cfg: ConfigRows, tasks: dict[str, list[Trial]], shared: list[str], rates: list[float], settings: BootstrapSettings
) -> SideFigures:
    trials = [tasks[t] for t in shared]
    resolved = [sum(x.resolved for x in ts) for ts in trials]
    out = SideFigures(
        config=cfg.name,
        resolve_rate=sum(rates) / len(rates) if rates else None,
        resolved_trials=sum(resolved),
        trials=sum(len(ts) for ts in trials),
    )
    costs = [[x.cost for x in ts] for ts in trials]
    if any(c is None for cs in costs for c in cs):
        out.cost_per_resolved = Interval(unknown=True, n=len(shared), note="a price is unknown for some attempts")
    else:
        task_costs = [sum(c for c in cs if c is not None) for cs in costs]  # (every price is known here)
        out.cost_per_resolved = bootstrap_ratio(task_costs, resolved, settings=settings)
    out.time_per_resolved = bootstrap_ratio([sum(x.time_s for x in ts) for ts in trials], resolved, settings=settings)
    return out


def _transcripts(cfg: ConfigRows, trials: list[Trial]) -> list[str]:
    paths = [
        str(cfg.run_dir / t.final.transcript_path)
        for t in sorted(trials, key=lambda t: t.repeat)
        if t.final is not None and t.final.transcript_path
    ]
    return list(dict.fromkeys(paths))


def _why(a: ConfigRows, b: ConfigRows, trials_a: list[Trial], trials_b: list[Trial]) -> FlipWhy | None:
    """A task whose first repeats flipped: the failing side's causes and the first divergence."""
    first_a, first_b = min(trials_a, key=lambda t: t.repeat), min(trials_b, key=lambda t: t.repeat)
    (fail, fail_t), (ok, ok_t) = ((b, first_b), (a, first_a)) if first_a.resolved else ((a, first_a), (b, first_b))
    if fail_t.final is None or ok_t.final is None:
        return None
    return why_flipped(fail.name, fail.run_dir, fail_t.final, ok.run_dir, ok_t.final)


def compare_pair(
    a: ConfigRows, b: ConfigRows, settings: BootstrapSettings | None = None, *, strict: bool = False
) -> Comparison:
    settings = settings or BootstrapSettings()
    all_a, all_b = by_task(trials_of(a.rows)), by_task(trials_of(b.rows))
    changed = changed_tasks(a.rows, b.rows)
    open_a, open_b = not_finished(all_b, all_a) - set(changed), not_finished(all_a, all_b) - set(changed)
    ta, tb = _scored_by_task(a, strict, open_a), _scored_by_task(b, strict, open_b)
    infra_a, infra_b = (set(), set()) if strict else (infra_by_task(a.rows), infra_by_task(b.rows))
    ran_a, ran_b = set(all_a), set(all_b)
    infra_tasks = sorted((infra_a | infra_b) & ran_a & ran_b)
    unfinished = [] if strict else sorted(open_a | open_b)
    shared = sorted((set(ta) & set(tb)) - set(changed))
    pairs: list[TaskPair] = []
    for tid in shared:
        ra = sum(t.resolved for t in ta[tid]) / len(ta[tid])
        rb = sum(t.resolved for t in tb[tid]) / len(tb[tid])
        fa = min(ta[tid], key=lambda t: t.repeat).resolved
        fb = min(tb[tid], key=lambda t: t.repeat).resolved
        pairs.append(
            TaskPair(
                task_id=tid,
                rate_a=ra,
                rate_b=rb,
                trials_a=len(ta[tid]),
                trials_b=len(tb[tid]),
                first_a=fa,
                first_b=fb,
                result="a" if ra > rb else "b" if rb > ra else "tie",
                transcripts_a=_transcripts(a, ta[tid]),
                transcripts_b=_transcripts(b, tb[tid]),
                why=_why(a, b, ta[tid], tb[tid]) if fa != fb else None,
            )
        )
    rates_a, rates_b = [p.rate_a for p in pairs], [p.rate_b for p in pairs]
    cmp = Comparison(
        a=a.name,
        b=b.name,
        shared_tasks=len(shared),
        only_a=sorted(ran_a - ran_b),
        only_b=sorted(ran_b - ran_a),
        wins_a=sum(p.result == "a" for p in pairs),
        wins_b=sum(p.result == "b" for p in pairs),
        ties=sum(p.result == "tie" for p in pairs),
        mcnemar_b=sum(p.first_a and not p.first_b for p in pairs),
        mcnemar_c=sum(p.first_b and not p.first_a for p in pairs),
        side_a=_side(a, ta, shared, rates_a, settings),
        side_b=_side(b, tb, shared, rates_b, settings),
        tasks=pairs,
    )
    if shared:
        cmp.mcnemar_p = mcnemar_exact(cmp.mcnemar_b, cmp.mcnemar_c)
        cmp.difference = bootstrap_mean(
            [x - y for x, y in zip(rates_a, rates_b)], settings=settings, method="paired-bootstrap-percentile"
        )
    cmp.infra_shares = _infra_shares(a, b)
    cmp.strict, cmp.infra_tasks, cmp.unfinished, cmp.changed = strict, infra_tasks, unfinished, changed
    diff = cmp.difference
    if infra_tasks or unfinished or changed:
        if not strict:
            infra_a, infra_b = infra_a | open_a, infra_b | open_b
        cmp.redo = infra_redo(
            [(a.name, str(a.run_dir), infra_a), (b.name, str(b.run_dir), infra_b)], sorted({*infra_tasks, *unfinished})
        )
        cmp.same_tier, cmp.better = True, None
        why = (
            [infra_reason(infra_tasks, [r for r in cmp.redo if set(r.tasks) & set(infra_tasks)])] if infra_tasks else []
        )
        for name, tasks in ((a.name, [] if strict else sorted(open_a)), (b.name, [] if strict else sorted(open_b))):
            if tasks:
                why.append(
                    f"{len(tasks)} task(s) are not finished by {name} ({_names(tasks)}: missing or incomplete "
                    "trials, a run cut short): their outcome is unknown, so they are neither left out nor guessed; "
                    "finish that run (resume it: see below), or count them as failures with --strict"
                )
        if changed:
            why.append(
                f"{len(changed)} task(s) have a changed spec (a different content hash) ({_names(changed)}): a "
                "changed spec is not a result and cannot be paired; compare runs of the same specs"
            )
        cmp.verdict = f"{NOT_ENOUGH_EVIDENCE}: {'; '.join(why)}"
    elif diff.value is None or diff.low is None or diff.high is None or diff.low <= 0 <= diff.high:
        cmp.same_tier, cmp.better, cmp.verdict = True, None, SAME_TIER
        if diff.value is not None and diff.low is None:
            cmp.verdict += f" ({diff.note or 'no interval'})"
    else:
        cmp.same_tier = False
        cmp.better = a.name if diff.low > 0 else b.name
        sign = 1 if diff.low > 0 else -1
        lo, hi = sorted((sign * diff.low, sign * diff.high))
        worse = b.name if cmp.better == a.name else a.name
        cmp.verdict = (
            f"{cmp.better} resolves more than {worse}: +{100 * sign * diff.value:.1f} points "
            f"(95% CI {100 * lo:+.1f} to {100 * hi:+.1f}, {len(shared)} paired tasks)"
        )
        if cmp.mcnemar_p is not None and cmp.mcnemar_p >= 0.05:
            cmp.caution = (
                f"the exact McNemar test on the first repeat does not reach 0.05 (p = {cmp.mcnemar_p:.3g}, "
                f"{cmp.mcnemar_b + cmp.mcnemar_c} discordant tasks): a percentile bootstrap over few tasks "
                f"is optimistic; more tasks would settle it"
            )
    return cmp


def _infra_shares(a: ConfigRows, b: ConfigRows) -> str:
    """Words when the infra-error shares of two configurations differ, else ""."""
    shares = []
    for cfg in (a, b):
        done = [t for t in trials_of(cfg.rows) if t.complete]
        shares.append(sum(t.infra_error for t in done) / len(done) if done else 0.0)
    said = infra_shares_differ(a.name, shares[0], b.name, shares[1])
    return f"{said}; resume the run(s) to redo them, or compare with --strict" if said else ""


def infra_shares_differ(a: str, share_a: float | None, b: str, share_b: float | None) -> str:
    """The one rule `compare` and `gate` flag by: words when two infra-error shares (of all
    trials) are INFRA_SHARES_DIFFER or more apart, else "". (No trial: a share of 0.)"""
    share_a, share_b = share_a or 0.0, share_b or 0.0
    if round(abs(share_a - share_b), 9) < INFRA_SHARES_DIFFER:  # rounded: 25 % - 20 % is 5 points, not 4.99...
        return ""
    return f"infra-error shares differ: {a} {share_a:.0%}, {b} {share_b:.0%} of trials left out of the rates"


def compare_all(
    configs: list[ConfigRows], settings: BootstrapSettings | None = None, *, strict: bool = False
) -> list[Comparison]:
    """Every pair of configurations, in the order given (A = the earlier one)."""
    return [compare_pair(a, b, settings, strict=strict) for a, b in combinations(configs, 2)]
