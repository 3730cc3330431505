"""From a sweep file to a running sweep: each cell prepared as a run is (`harness.launch.prepare`),
the plan made, then the cells' units run through one scheduler."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..launch import Launch, prepare
from ..run.runner import Runner
from ..tasks import load_tasks
from .plan import SweepPlan, cell_out, plan, sweep_out
from .scheduler import CellRun, RunnerCell, SweepResult, SweepRunner
from .spec import Budget, SweepSpec

Say = Callable[[str], None]


def load_sweep(
    path: Path | str,
    *,
    out: Path | str | None = None,
    max_cost: float | None = None,
    cell_max_cost: float | None = None,
) -> SweepSpec:
    """The sweep file, with the command line's folder and budgets over its own."""
    sweep = SweepSpec.load(path)
    if out is not None:
        sweep.out = str(out)
    budget = sweep.budget.model_dump()
    if max_cost is not None:
        budget["max_cost"] = max_cost
    if cell_max_cost is not None:
        budget["per_cell"] = cell_max_cost
    sweep.budget = Budget.model_validate(budget)
    return sweep


def history_url(sweep: SweepSpec) -> str | None:
    """The history every cell indexes into and the estimate reads: the base's `history.url`, else
    $WHOLELOOP_HISTORY_URL, else history.sqlite beside the sweep's folder; None with history off."""
    history = sweep.base.get("history") or {}
    if history.get("enabled", True) is False:
        return None
    from ..history.url import resolve

    return resolve(history.get("url"), sweep_out(sweep).resolve().parent)


def prepare_sweep(sweep: SweepSpec, *, say: Say | None = None) -> tuple[SweepPlan, dict[str, Launch]]:
    """Every cell checked as a run is before it starts (model, price, tasks, folder), then the
    plan; raises a UserError (nothing started) for the first cell that cannot run."""
    say = say or (lambda _line: None)
    cells, _ = sweep.cells()
    out, url = sweep_out(sweep), history_url(sweep)
    launches: dict[str, Launch] = {}
    for i, cell in enumerate(cells):
        update: dict = {"out": str(cell_out(out, cell))}
        if url is not None:
            update["history"] = cell.spec.history.model_copy(update={"url": url})
        cell.spec = cell.spec.model_copy(update=update)
        launches[cell.name] = prepare(cell.spec, say=say if i == 0 else None)
    # the suite's tasks: a cell's whose suite no override narrowed (else the suite's specs as they are)
    whole = [launch for launch in launches.values() if launch.spec.suite.paths == sweep.suite.paths]
    tasks = whole[0].tasks if whole else load_tasks(list[str | Path](sweep.suite.paths))
    cell_tasks = {name: launch.tasks for name, launch in launches.items()}
    planned = plan(sweep, tasks, history_url=url, cell_tasks=cell_tasks)
    for planned_cell in planned.cells:  # the recipe as the cell's run stores it (its folder, its history)
        planned_cell.cell.spec = launches[planned_cell.name].spec
    return planned, launches


def run_sweep(
    planned: SweepPlan,
    launches: dict[str, Launch],
    *,
    say: Say | None = None,
    warn: Say | None = None,
    backend=None,
) -> SweepResult:
    """Run the plan: one Runner per cell, its rows indexed into the history as a run's are."""
    url = history_url(planned.sweep)
    runs: dict[str, CellRun] = {}
    for cell in planned.cells:
        launch = launches[cell.name]
        runner = Runner(
            launch.tasks, launch.agent, launch.options, backend=backend, spec=launch.spec, executor=launch.executor
        )
        hook = None
        if url is not None:
            from ..history.live import attach

            hook = attach(runner.folder, url, warn=warn or (lambda _t: None))
        runs[cell.name] = RunnerCell(runner, hook)
    return SweepRunner(planned, runs, say=say).run()
