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


# ---------------------------------------------------------------------------- scripted quality (the front)

#: model -> (quality, USD per attempt): the share of trial slots its attempt 1 resolves, and its price
QUALITY = {"scripted/cheap": (0.25, 0.1), "scripted/mid": (0.5, 0.2), "scripted/dear": (1.0, 0.3)}
#: agent -> (quality lost, price factor, seconds per attempt): the external CLI resolves a quarter
#: of the slots less than the built-in agent on the same model, spends twice as much and takes 3x as long
AGENTS = {"default": (0.0, 1.0, 10.0), "external:mini-swe-agent": (0.25, 2.0, 30.0)}


def resolves(quality: float, slot: int, attempt: int) -> bool:
    """Attempt 1 resolves the slots below 4 x quality; attempt 2 the same share, shifted by two
    slots (so a second attempt helps a model of quality 1/4 or 1/2)."""
    return (slot + 2 * (attempt - 1)) % 4 < round(4 * quality)


class QualityCell(ScriptedCell):
    """A cell whose units are scripted by its model's quality and price and its agent's: slot
    (task index + repeat) % 4, attempts up to the cell's `settings.attempts`, stopping at the first
    that resolves, each a row at its price and time."""

    def __init__(self, cell, calls: list, task_index: dict[str, int]) -> None:
        self.cell, self.calls, self.stop_at, self.together = cell, calls, None, None
        self.folder = RunFolder(cell.out, create=True)
        spec = cell.cell.spec
        quality, self.price = QUALITY[spec.agent.model]
        lost, factor, self.seconds = AGENTS[spec.agent.name]
        self.quality, self.price = max(0.0, quality - lost), self.price * factor
        self.attempts, self.task_index = spec.settings.attempts, task_index

    def run_unit(self, task, repeat):
        self.calls.append((self.cell.name, task.id, repeat))
        slot = (self.task_index[task.id] + repeat) % 4
        rows = []
        for attempt in range(1, self.attempts + 1):
            ok = resolves(self.quality, slot, attempt)
            last = ok or attempt == self.attempts
            r = row(
                task.id,
                self.cell.cell.label,
                "resolved" if ok else "unresolved",
                cost=self.price,
                seconds=self.seconds,
                model=self.cell.config.model,
                agent=self.cell.cell.spec.agent.name,
                repeat=repeat,
                attempt=attempt,
                final=last,
            )
            self.folder.append(r)
            rows.append(r)
            if last:
                break
        return rows


#: the external CLI's cells run these two of the four inikit tasks (issue 29's done-when)
CLI_TASKS = ("inikit-001", "inikit-002")


def quality_sweep(tmp_path, repeats: int = 2):
    """Three scripted models x the built-in agent and an external CLI (the latter on 2 tasks, CLI_TASKS)
    x one or two attempts, on the four inikit demo tasks, `repeats` each."""
    sweep = SweepSpec.model_validate(
        {
            "name": "front",
            "suite": {"paths": [str(DEMO)]},
            "base": {"agent": {"name": "default"}, "settings": {"repeats": repeats}},
            "matrix": {
                "agent.model": {n.split("/")[1]: n for n in QUALITY},
                "agent.name": {"builtin": "default", "ext": "external:mini-swe-agent"},
                "settings.attempts": [1, 2],
            },
            "overrides": [
                {
                    "name": "cli-on-two-tasks",
                    "where": {"agent.name": "ext"},
                    "set": {"suite.paths": [str(DEMO / f"{t}.yaml") for t in CLI_TASKS]},
                }
            ],
            "prices": {n: {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6} for n in QUALITY},
            "out": str(tmp_path / "sweep"),
        }
    )
    tasks = [t for t in load_tasks(DEMO) if t.id.startswith("inikit")]
    return sweep, tasks


def run_quality_sweep(tmp_path, repeats: int = 2):
    """The quality sweep run to its end through the sweep's scheduler; its plan."""
    from harness.sweep.plan import plan
    from harness.sweep.scheduler import SweepRunner

    sweep, tasks = quality_sweep(tmp_path, repeats)
    planned = plan(sweep, tasks, estimator=Estimator([]))
    index = {tid: i for i, tid in enumerate(sorted(t.id for t in tasks))}
    calls: list = []
    SweepRunner(planned, {c.name: QualityCell(c, calls, index) for c in planned.cells}).run()
    return planned
