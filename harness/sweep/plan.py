"""A sweep's plan: its cells, each one's run folder and units still to do, and their estimates.

Planning reads the cells' run folders (what is done) and the run history (the one estimator), and
starts nothing; `wholeloop sweep --dry-run` prints it, a sweep's run follows it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..records import RunFolder, slug
from ..run.runner import pending_units
from ..tasks import Task, load_tasks
from .estimate import Config, Estimate, Estimator, price_of
from .spec import Budget, Cell, SweepSpec, SweepSpecError

SWEEP_RECORD = "sweep.json"
CELLS = "cells"


class BudgetError(UserError):
    """A budget the sweep cannot keep: a cell whose spend cannot be known in dollars."""


@dataclass
class CellPlan:
    cell: Cell
    out: Path
    config: Config
    todo: list[tuple[Task, int]]  # (task, repeat) units still to do, repeat-major
    total: int  # units of the cell in all
    estimate: Estimate

    @property
    def name(self) -> str:
        return self.cell.name

    @property
    def done(self) -> int:
        return self.total - len(self.todo)

    def unit_cost(self, estimator: Estimator, task_id: str) -> float | None:
        return estimator.unit(self.config, task_id).cost_usd


@dataclass
class SweepPlan:
    sweep: SweepSpec
    out: Path
    cells: list[CellPlan]
    excluded: dict[str, list[str]]
    estimator: Estimator
    budget: Budget = field(default_factory=Budget)

    @property
    def units(self) -> int:
        return sum(len(c.todo) for c in self.cells)

    @property
    def seconds(self) -> float | None:
        """Serial seconds of every unit to do (None: a unit's time is unknown)."""
        parts = [c.estimate.seconds for c in self.cells]
        return None if any(p is None for p in parts) else sum(p for p in parts if p is not None)

    @property
    def cost_usd(self) -> float | None:
        parts = [c.estimate.cost_usd for c in self.cells]
        return None if any(p is None for p in parts) else sum(p for p in parts if p is not None)

    def wall_seconds(self) -> float | None:
        seconds = self.seconds
        return None if seconds is None else seconds / max(1, min(self.sweep.workers, self.units or 1))

    def interleaved(self) -> Iterator[tuple[CellPlan, Task, int]]:
        """Every unit to do, round-robin across the cells (a cell's units repeat-major), so that a
        sweep stopped at any point has run about as many units of each cell."""
        longest = max((len(c.todo) for c in self.cells), default=0)
        for i in range(longest):
            for cell in self.cells:
                if i < len(cell.todo):
                    task, repeat = cell.todo[i]
                    yield cell, task, repeat


def sweep_out(sweep: SweepSpec) -> Path:
    """The sweep's folder: `out`, else runs/sweeps/<name>."""
    return Path(sweep.out) if sweep.out else Path("runs") / "sweeps" / slug(sweep.name)


def cell_out(out: Path, cell: Cell) -> Path:
    """A cell's run folder, under the sweep's."""
    return out / CELLS / slug(cell.name)


def plan(
    sweep: SweepSpec,
    tasks: list[Task],
    *,
    estimator: Estimator | None = None,
    history_url: str | None = None,
    budget: Budget | None = None,
    cell_tasks: dict[str, list[Task]] | None = None,
) -> SweepPlan:
    """The plan of `sweep` over `tasks` (the suite's, as a run selects them); nothing is written.
    A cell whose override narrows its suite runs the tasks of `cell_tasks[name]` (its launch's),
    else those of its own suite paths; each must be one of `tasks` (SweepSpecError otherwise)."""
    cells, excluded = sweep.cells()
    out = sweep_out(sweep)
    if estimator is None:
        estimator = Estimator.from_history(history_url, [t.id for t in tasks], prices=sweep.prices or None)
    planned = []
    for cell in cells:
        own = _cell_tasks(sweep, cell, tasks, (cell_tasks or {}).get(cell.name))
        folder = RunFolder(cell_out(out, cell))
        done = folder.finished_units() if folder.is_run() else set()
        repeats = cell.spec.settings.repeats
        todo = pending_units(own, cell.label, repeats, done)
        config = Config(cell.label, cell.spec.agent.name, cell.spec.agent.model)
        estimate = estimator.units(config, [t.id for t, _ in todo])
        planned.append(CellPlan(cell, folder.path, config, todo, len(own) * repeats, estimate))
    result = SweepPlan(sweep, out, planned, excluded, estimator, budget or sweep.budget)
    check_budget(result)
    return result


def _cell_tasks(sweep: SweepSpec, cell: Cell, tasks: list[Task], given: list[Task] | None) -> list[Task]:
    """The tasks a cell runs: the sweep's, unless an override narrowed its suite (then `given`, its
    launch's, else its suite's specs loaded here); refused when one is not among the sweep's."""
    if cell.spec.suite.paths == sweep.suite.paths:
        return tasks
    own = given if given is not None else load_tasks(list[str | Path](cell.spec.suite.paths))
    known = {t.id for t in tasks}
    outside = sorted(t.id for t in own if t.id not in known)
    if outside:
        raise SweepSpecError(
            f"cell {cell.name}: {', '.join(outside)} not in the sweep's suite",
            "an override's suite.paths names spec files of the sweep's suite (docs/sweeps.md)",
        )
    keep = {t.id for t in own}
    return [t for t in tasks if t.id in keep]  # the sweep's own Task objects, in the suite's order


def priced(cell: CellPlan, sweep: SweepSpec) -> bool:
    """Whether the cell's spend is known in dollars as it runs: a control spends nothing, a replay
    model's recordings carry their cost, any other model needs a price (the map, or `prices:`)."""
    if cell.config.control:
        return True
    model = cell.config.model
    if model is None:
        return False
    return model.startswith("replay:") or price_of(model, sweep.prices or None) is not None


def check_budget(plan: SweepPlan) -> None:
    """Under a budget every cell must be priced; BudgetError (with the fix) for one that is not."""
    if plan.budget.max_cost is None and plan.budget.per_cell is None:
        return
    unpriced = [c for c in plan.cells if not priced(c, plan.sweep)]
    if unpriced:
        names = ", ".join(f"{c.name} ({c.config.model or c.config.agent})" for c in unpriced)
        raise BudgetError(
            f"a budget is set but these cells' models have no price: {names}",
            "give their prices (USD per token) under `prices:` in the sweep file, or run without a budget",
        )
