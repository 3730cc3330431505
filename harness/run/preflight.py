"""Before any container starts: can this run work at all, and what would it do?

`preflight` checks what fails a whole run the same way every time, so it fails in a second
instead of once per task after a container start each:
- the model: its credentials are set and it is in the price map (harness.models.preflight);
- every task: its repository opens and its base commit is in it, its patch files read;
- the run folder: it is (or can become) a folder we can write.

`estimate` reads earlier runs of the same tasks (the run folders beside this one, i.e. under the
same runs root) for a time and cost estimate, which `--dry-run` prints with the plan.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path

from sandbox import SandboxError, find_commit

from ..models.preflight import ModelCheck, check_model
from ..records import RunFolder, check_writable, latest_rows, read_results
from ..tasks import Task, TaskSpecError
from ..vocabulary import Outcome

MAX_EARLIER_RUNS = 50  # the most recent run folders an estimate reads


@dataclass
class Problem:
    """Something that stops the run before it starts: one line, and what to do."""

    what: str
    fix: str = ""


@dataclass
class Preflight:
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # checks that passed, for --dry-run and doctor

    @property
    def ok(self) -> bool:
        return not self.problems


def check_task(task: Task) -> Problem | None:
    """The task's repository and commit resolve and its patches read (what a unit needs first)."""
    where = f"{task.spec_path}" if task.spec_path else task.id
    try:
        task.gold(), task.test_patch()
        find_commit(task.repo_source(), task.base_commit)
    except (SandboxError, TaskSpecError) as exc:
        return Problem(f"{where}: {str(exc).splitlines()[0]}", exc.hint or "")
    return None


def preflight(
    tasks: list[Task], *, model: str | None, out: Path, base_url: str | None = None, allow_unknown_model: bool = False
) -> Preflight:
    """Every check; none starts a container or sends a model request."""
    result = Preflight()
    if model:
        checks: list[ModelCheck] = check_model(model, base_url=base_url, allow_unknown=allow_unknown_model)
        for check in checks:
            if check.ok:
                result.notes.append(f"{check.name}: {check.detail}")
            else:
                result.problems.append(Problem(check.detail, check.fix))
    bad = [p for p in (check_task(t) for t in tasks) if p is not None]
    result.problems += bad
    result.notes.append(f"tasks: {len(tasks) - len(bad)} of {len(tasks)} resolve (repository, commit, patches)")
    try:
        check_writable(out, folder=True)
        result.notes.append(f"run folder: {out} is writable")
    except OSError as exc:
        result.problems.append(Problem(f"{exc.filename}: {exc.strerror}", "give --out a folder path you can write"))
    return result


# ---------------------------------------------------------------------------- the estimate


@dataclass
class TaskEstimate:
    task_id: str
    seconds: float | None = None  # median time of one trial (all its attempts) in earlier runs
    cost_usd: float | None = None  # median cost of one trial with this model; None = no such trial
    trials: int = 0


@dataclass
class Estimate:
    tasks: list[TaskEstimate]
    runs: int  # earlier run folders with rows of these tasks
    seconds: float | None = None  # wall time of the units to run, over the workers
    cost_usd: float | None = None  # cost of the units to run (tasks seen with this model only)
    cost_tasks: int = 0  # tasks the cost is from

    @property
    def seen(self) -> int:
        return sum(t.trials > 0 for t in self.tasks)


def earlier_runs(out: Path) -> list[Path]:
    """The run folders beside `out` (under the same runs root), newest first."""
    root = Path(out).parent
    if not root.is_dir():
        return []
    found = [
        p
        for p in root.iterdir()
        if p.is_dir() and p.resolve() != Path(out).resolve() and (p / RunFolder.RESULTS).is_file()
    ]
    return sorted(found, key=lambda p: (p / RunFolder.RESULTS).stat().st_mtime, reverse=True)[:MAX_EARLIER_RUNS]


def estimate(
    tasks: list[Task], units: list[tuple[Task, int]], *, out: Path, model: str | None, agent: str, workers: int
) -> Estimate:
    """Time and cost of `units` from earlier runs of the same tasks: per task the median over its
    earlier trials (time: any configuration; cost: the same model and agent), the time spread over
    `workers`. Tasks never seen before are estimated at the median of those seen."""
    ids = {t.id for t in tasks}
    times: dict[str, list[float]] = {i: [] for i in ids}
    costs: dict[str, list[float]] = {i: [] for i in ids}
    runs = 0
    for run in earlier_runs(out):
        rows = [r for r in latest_rows(read_results(run / RunFolder.RESULTS)) if r.task_id in ids]
        if not rows:
            continue
        runs += 1
        trials: dict[tuple, list] = {}
        for row in rows:
            trials.setdefault(row.unit(), []).append(row)
        for group in trials.values():
            final = [r for r in group if r.final]
            if not final or final[-1].outcome == Outcome.infra_error:
                continue
            tid = group[0].task_id
            times[tid].append(sum(r.phases.total_s for r in group))
            same = all(r.model == model and r.agent == agent for r in group)
            if same and all(r.cost_usd is not None for r in group):
                costs[tid].append(sum(r.cost_usd for r in group))
    per_task = [
        TaskEstimate(
            i,
            statistics.median(times[i]) if times[i] else None,
            statistics.median(costs[i]) if costs[i] else None,
            len(times[i]),
        )
        for i in sorted(ids)
    ]
    result = Estimate(per_task, runs)
    known = [t.seconds for t in per_task if t.seconds is not None]
    if known:
        fill = statistics.median(known)
        by_id = {t.task_id: t for t in per_task}
        total = sum(s if (s := by_id[t.id].seconds) is not None else fill for t, _ in units)
        result.seconds = total / max(1, min(workers, len(units) or 1))
        priced = [c for t, _ in units if (c := by_id[t.id].cost_usd) is not None]
        if priced:
            result.cost_usd = sum(priced) / len(priced) * len(units)
            result.cost_tasks = len({t.id for t, _ in units if by_id[t.id].cost_usd is not None})
    return result
