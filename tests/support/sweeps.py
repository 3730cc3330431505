"""Sweeps whose cells are scripted: run folders whose units a scripted model "runs" (one final row
each at the model's known price). For the scheduler's interleaving, budgets, kill and resume, where
Docker is not the point (tests/test_sweep.py; the one Docker test there runs real units)."""

from __future__ import annotations

from harness.history.types import TrialFigure
from harness.records import RunFolder
from harness.sweep.estimate import Estimator
from harness.sweep.spec import SweepSpec
from harness.tasks import load_tasks
from support.cli import DEMO
from support.history import row

PRICES = {"scripted/cheap": 0.1, "scripted/mid": 0.2, "scripted/dear": 0.3}  # USD per unit


class ScriptedCell:
    """A cell whose units append one final row each at the model's price; `stop_at` interrupts
    the sweep (Ctrl-C) on that call of all cells' units, before its row."""

    def __init__(
        self, cell, calls: list, stop_at: int | None = None, price: float | None = None, together=None
    ) -> None:
        self.cell, self.calls, self.stop_at, self.together = cell, calls, stop_at, together
        self.price = PRICES[cell.config.model] if price is None else price
        self.folder = RunFolder(cell.out, create=True)

    def begin(self) -> None:
        pass

    def run_unit(self, task, repeat):
        self.calls.append((self.cell.name, task.id, repeat))
        if self.stop_at is not None and len(self.calls) == self.stop_at:
            raise KeyboardInterrupt
        if self.together is not None:  # a barrier: these units are in flight at once
            self.together.wait()
        r = row(task.id, self.cell.cell.label, cost=self.price, model=self.cell.config.model, repeat=repeat)
        self.folder.append(r)
        return [r]

    def cancel(self) -> None:
        pass

    def end(self) -> None:
        pass


def scripted_sweep(tmp_path, workers: int = 1, **budget):
    sweep = SweepSpec.model_validate(
        {
            "name": "s",
            "suite": {"paths": [str(DEMO)]},
            "base": {"agent": {"name": "default"}},
            "matrix": {"agent.model": {n.split("/")[1]: n for n in PRICES}},
            "prices": {n: {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6} for n in PRICES},
            "budget": budget,
            "workers": workers,
            "out": str(tmp_path / "sweep"),
        }
    )
    tasks = [t for t in load_tasks(DEMO) if t.id.startswith("inikit")]
    return sweep, tasks


def estimator_of(sweep, per_unit: dict[str, float]) -> Estimator:
    """Earlier trials of each cell at `per_unit` USD (the estimate the budget reads)."""
    trials = [
        TrialFigure(c.label, "default", c.spec.agent.model, t, per_unit[c.spec.agent.model], 10.0, 0, 0)
        for c in sweep.cells()[0]
        for t in ("inikit-001", "inikit-002", "inikit-003", "inikit-004")
    ]
    return Estimator(trials)


class HangingCell(ScriptedCell):
    """A scripted cell whose units hang once `after` units of the sweep have run (to be killed there)."""

    def __init__(self, cell, calls: list, after: int) -> None:
        super().__init__(cell, calls)
        self.after = after

    def run_unit(self, task, repeat):
        if len(self.calls) >= self.after:
            import time

            time.sleep(3600)
        return super().run_unit(task, repeat)


def run_until_killed(where: str, after: int) -> None:
    """The child of the SIGKILL test: a scripted sweep under `where` whose unit after `after` hangs."""
    from pathlib import Path

    from harness.sweep.plan import plan
    from harness.sweep.scheduler import SweepRunner

    sweep, tasks = scripted_sweep(Path(where))
    planned = plan(sweep, tasks, estimator=estimator_of(sweep, PRICES))
    calls: list = []
    SweepRunner(planned, {c.name: HangingCell(c, calls, after) for c in planned.cells}).run()
