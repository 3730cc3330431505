"""A sweep's run: every cell's units through one pool of workers, interleaved, under budgets, resumable.

What was chosen, and why it is honest:
- **One run folder per cell** (`<sweep>/cells/<cell>/`), written by that cell's own `Runner` (its
  manifest, rows, transcripts, history index): each cell is an ordinary run `report`, `compare`
  and `gate` read as is. The sweep's own record is `<sweep>/sweep.json`.
- **Interleaved**: the units are taken round-robin across the cells (each cell's units
  repeat-major, `SweepPlan.interleaved`) into one thread pool of `workers`; a sweep stopped at
  any point has run about as many units of each cell. Images are built once: their tags are
  content hashes and the build locks are per tag in this process, so cells share them.
- **Resumable**: what is left is the cells' runners' own resume (units without a final row that
  stands); a killed try is recorded once, as its runner records it, when its unit is redone.
- **Budgets**: a unit starts only when its cell's spend + the estimates of its cell's units in
  flight + its own estimate stay within the per-cell budget (else that cell starts no more), and
  the same over the whole sweep for `max_cost` (else no cell starts any more). Spend is every row
  the cells' folders hold (every try, abandoned ones included), counted as each row is appended; a
  unit's final row takes its estimate out of the in-flight sum in the same step (an earlier
  attempt's row counts beside the estimate: erring on the side of the budget).
  A unit's estimate is the one estimator's; when it has none, the mean spend of the cell's
  finished units in this sweep, else 0 (the first unit of a cell never seen runs unestimated).
  What was spent past a budget (units in flight when it was reached) is reported as overshoot.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from ..records import ResultRow, RunFolder, redo_on_resume, write_json
from ..run.executors import LocalExecutor
from ..run.runner import ENGINE_DOWN_AFTER, EngineDown
from ..tasks import Task
from ..vocabulary import Outcome
from .plan import SWEEP_RECORD, CellPlan, SweepPlan

SWEEP_RECORD_SCHEMA = 1
RECORD_EVERY_S = 1.0  # sweep.json is rewritten at most this often while units finish (and at the end)

Say = Callable[[str], None]


class CellRun(Protocol):
    """What the scheduler needs of one cell's run (a `Runner` gives it: `RunnerCell`)."""

    folder: RunFolder

    def begin(self) -> None:
        """Before its first unit (its folder's writer lock is held)."""
        ...

    def run_unit(self, task: Task, repeat: int) -> list[ResultRow]:
        """Run one unit here; its rows are appended to the folder."""
        ...

    def cancel(self) -> None:
        """Ask running units to stop at their next step."""
        ...

    def end(self) -> None:
        """After its last unit."""
        ...


class RunnerCell:
    """A cell run by an ordinary `Runner` (and indexed into the run history as a run is). With the
    runner's executor local, a unit runs in the sweep's worker thread; otherwise (Ray) each unit
    goes through the run's executor path (`run_units`: shipped, run on a node, its rows and files
    handed back to the run folder), by an executor of the same kind per worker thread (`sibling`),
    since one executor's state belongs to one caller at a time."""

    def __init__(self, runner: Any, hook: Any = None) -> None:
        self.runner, self.hook = runner, hook
        self.folder: RunFolder = runner.folder
        self._elsewhere = not isinstance(runner.executor, LocalExecutor)
        self._mine = threading.local()
        self._siblings: list[Any] = []
        self._guard = threading.Lock()

    def begin(self) -> None:
        self.runner.begin()

    def run_unit(self, task: Task, repeat: int) -> list[ResultRow]:
        if not self._elsewhere:
            return self.runner.view.run_unit(task, repeat)
        executor = self._mine.__dict__.get("executor")
        if executor is None:
            executor = self._mine.executor = self.runner.executor.sibling()
            with self._guard:
                self._siblings.append(executor)
        try:
            return [row for rows in executor.run_units(self.runner.view, [(task, repeat)]) for row in rows]
        finally:
            executor.shutdown(cancel=False)  # its progress box goes; the connection stays (not its own)

    def cancel(self) -> None:
        self.runner.units.cancel.set()
        with self._guard:
            siblings = list(self._siblings)
        for executor in siblings:
            executor.shutdown(cancel=True)

    def end(self) -> None:
        self.runner.end()
        if self._elsewhere:
            self.runner.executor.shutdown(cancel=False)  # the one that connected closes the connection
        if self.hook is not None:
            self.hook.finish()


@dataclass
class CellState:
    plan: CellPlan
    run: CellRun
    spent: float = 0.0  # every row's cost in its folder, as appended (None costs are not in it)
    unknown: int = 0  # rows whose cost was unknown
    in_flight: dict[tuple[str, int], float] = field(default_factory=dict)
    finished: int = 0  # units run in this session
    done: int = 0  # units with a final row that stands, in all (kept as units finish: no re-read)
    session_spent: float = 0.0
    stopped: str = ""  # why it starts no more units: "" | "cell budget" | "sweep budget" | "interrupted"

    def unit_estimate(self, task_id: str, known: float | None) -> float:
        if known is not None:
            return known
        return self.session_spent / self.finished if self.finished else 0.0


@dataclass
class SweepResult:
    status: str  # finished | stopped (a budget) | interrupted
    spent_usd: float
    overshoot_usd: float
    cells: list[CellState]


class SweepRunner:
    """Runs a plan's units; writes sweep.json at the start, as units finish and at the end."""

    def __init__(self, plan: SweepPlan, runs: dict[str, CellRun], *, say: Say | None = None) -> None:
        self.plan = plan
        self.cells = [CellState(c, runs[c.name]) for c in plan.cells]
        self.say = say or (lambda _line: None)
        self._lock = threading.Lock()
        self.status = "running"
        self.record_path = plan.out / SWEEP_RECORD
        self._written = 0.0  # when sweep.json was last written (monotonic)
        self._started_at: str | None = None

    # ------------------------------------------------------------------ spend

    def _watch(self, cell: CellState) -> None:
        for row in cell.run.folder.rows() if cell.run.folder.is_run() else []:
            self._count(cell, row)

        def on_row(row: ResultRow) -> None:
            with self._lock:  # a unit's spend replaces its in-flight estimate at once, never both
                self._count(cell, row)
                if row.final:
                    cell.in_flight.pop((row.task_id, row.repeat), None)

        cell.run.folder.on_row(on_row)

    @staticmethod
    def _count(cell: CellState, row: ResultRow) -> None:
        if row.cost_usd is None:
            cell.unknown += 1
        else:
            cell.spent += row.cost_usd

    @property
    def spent(self) -> float:
        return sum(c.spent for c in self.cells)

    def _admit(self, cell: CellState, task: Task) -> float | None:
        """The unit's estimate when it may start now; None when a budget says no (and why is noted)."""
        budget = self.plan.budget
        estimate = cell.unit_estimate(task.id, cell.plan.unit_cost(self.plan.estimator, task.id))
        if budget.per_cell is not None and cell.spent + sum(cell.in_flight.values()) + estimate > budget.per_cell:
            cell.stopped = "cell budget"
            return None
        if budget.max_cost is not None:
            flying = sum(sum(c.in_flight.values()) for c in self.cells)
            if self.spent + flying + estimate > budget.max_cost:
                for c in self.cells:
                    c.stopped = c.stopped or "sweep budget"
                return None
        return estimate

    # ------------------------------------------------------------------ the loop

    def run(self) -> SweepResult:
        """Every unit of the plan, or until a budget stops it. Raises KeyboardInterrupt through,
        and EngineDown after ENGINE_DOWN_AFTER units in a row found no engine (units in flight are
        asked to stop; finished work is kept; sweep.json says why it ended)."""
        self.plan.out.mkdir(parents=True, exist_ok=True)
        workers = self.plan.sweep.workers
        with ExitStack() as stack:
            for cell in self.cells:
                stack.enter_context(cell.run.folder.writer())
            for cell in self.cells:
                self._watch(cell)
                cell.run.begin()
                cell.done = cell.plan.done
            self.write_record()
            queue = self.plan.interleaved()
            pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="wholeloop-sweep")
            futures: dict[Future, tuple[CellState, Task, int]] = {}
            by_plan = {id(c.plan): c for c in self.cells}
            streak = 0  # units in a row (as they finish) that failed on an engine that does not answer
            try:
                exhausted = False
                while True:
                    while not exhausted and len(futures) < workers:
                        nxt = next(queue, None)
                        if nxt is None:
                            exhausted = True
                            break
                        plan_cell, task, repeat = nxt
                        cell = by_plan[id(plan_cell)]
                        if cell.stopped:
                            continue
                        with self._lock:
                            estimate = self._admit(cell, task)
                            if estimate is None:
                                continue
                            cell.in_flight[(task.id, repeat)] = estimate
                        futures[pool.submit(cell.run.run_unit, task, repeat)] = (cell, task, repeat)
                    if not futures:
                        break
                    done, _ = wait(futures, return_when=FIRST_COMPLETED)
                    for future in done:
                        cell, task, repeat = futures.pop(future)
                        rows = future.result()
                        with self._lock:
                            cell.in_flight.pop((task.id, repeat), None)
                            cell.finished += 1
                            cell.session_spent += sum(r.cost_usd or 0.0 for r in rows)
                        final = next((r for r in rows if r.final), None)
                        if final is not None and not redo_on_resume(final):
                            cell.done += 1
                        down = (
                            final is not None
                            and final.outcome == Outcome.infra_error
                            and "EngineUnavailable" in (final.error or "")
                        )
                        streak = streak + 1 if down else 0
                        self.say(
                            f"{cell.plan.name}  {task.id}#{repeat}  {final.outcome if final else 'no final row'}  "
                            f"(cell ${cell.spent:.4f}, sweep ${self.spent:.4f})"
                        )
                        if time.monotonic() - self._written >= RECORD_EVERY_S:
                            self.write_record()
                    if streak >= ENGINE_DOWN_AFTER:  # as a run stops: the rest would fail the same way
                        raise EngineDown(
                            f"{streak} units in a row failed because the Docker engine does not answer; the "
                            "sweep stopped: finished work is kept, a resume (the same command) redoes the rest"
                        )
                self.status = "stopped" if any(c.stopped for c in self.cells) else "finished"
            except (KeyboardInterrupt, EngineDown) as exc:
                self.status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "engine down"
                for cell in self.cells:
                    cell.stopped = cell.stopped or self.status
                    cell.run.cancel()
                pool.shutdown(wait=True, cancel_futures=True)
                raise
            except Exception:  # a bug of ours (a unit's own failures are rows): the record says so
                self.status = "failed"
                for cell in self.cells:
                    cell.run.cancel()
                raise
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
                for cell in self.cells:
                    cell.run.end()
                self.write_record()
        return SweepResult(self.status, self.spent, self.overshoot(), self.cells)

    def overshoot(self) -> float:
        """USD spent past the budgets: the larger of the spend past the sweep's and the sum of
        each cell's spend past its own."""
        budget = self.plan.budget
        over = 0.0
        if budget.max_cost is not None:
            over = max(over, self.spent - budget.max_cost)
        if budget.per_cell is not None:
            over = max(over, sum(max(0.0, c.spent - budget.per_cell) for c in self.cells))
        return over

    # ------------------------------------------------------------------ the record

    def write_record(self) -> None:
        """sweep.json: the matrix, the cells with their run folders, spend and status."""
        if self._started_at is None:  # a resumed sweep keeps when it first started
            try:
                self._started_at = json.loads(self.record_path.read_text()).get("started_at")
            except (OSError, ValueError):
                pass
            self._started_at = self._started_at or datetime.now(UTC).isoformat()
        with self._lock:
            record = sweep_record(self.plan, self.cells, self.status, self.overshoot(), self._started_at)
        write_json(self.record_path, record)
        self._written = time.monotonic()


def sweep_record(
    plan: SweepPlan, cells: list[CellState], status: str, overshoot: float, started_at: str
) -> dict[str, Any]:
    """The sweep's record. Later parts (the front, regimes, the decision) add their own keys."""
    now = datetime.now(UTC).isoformat()
    sweep = plan.sweep
    out: dict[str, Any] = {
        "schema_version": SWEEP_RECORD_SCHEMA,
        "name": sweep.name,
        "started_at": started_at,
        "updated_at": now,
        "status": status,
        "sweep": sweep.model_dump(mode="json"),  # the file as read: suite, base, matrix, exclusions, prices
        "excluded": plan.excluded,
        "budget": plan.budget.model_dump(mode="json"),
        "spent_usd": round(sum(c.spent for c in cells), 6),
        "overshoot_usd": round(overshoot, 6),
        "cells": [
            {
                "name": c.plan.name,
                "label": c.plan.cell.label,
                "axes": c.plan.cell.axes,
                "overrides": c.plan.cell.overrides,
                "run": str(Path(c.plan.out).relative_to(plan.out)) if _under(c.plan.out, plan.out) else str(c.plan.out),
                "recipe": c.plan.cell.spec.recipe(),
                "units": c.plan.total,
                "finished": c.done,
                "spent_usd": round(c.spent, 6),
                "unknown_cost_rows": c.unknown,
                "status": _cell_status(c, status),
            }
            for c in cells
        ],
    }
    return out


def _under(path: Path, root: Path) -> bool:
    try:
        Path(path).relative_to(root)
        return True
    except ValueError:
        return False


def _cell_status(cell: CellState, status: str) -> str:
    if cell.done >= cell.plan.total:
        return "finished"
    if cell.stopped:
        return f"stopped: {cell.stopped}"
    return "running" if status == "running" else "partial"
