"""The live display of a run: how far (done/total), how good (resolved/failed so far), how much
(cost so far), how long (an ETA from the units finished in this session), and one line per unit in
flight saying its phase and step.

Events come from the runner's progress callback (plan, start, build, agent, step, grade, done,
retry, note, interrupt); rows from the run folder's `on_row` hook, as they are appended. A line is
printed per finished unit with the same summary, so a log (no terminal) says it too.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskID, TextColumn

from ..records import ResultRow
from ..report.format import usd
from ..vocabulary import Outcome

OUTCOME_COLOUR: dict[str, str] = {Outcome.resolved: "green", Outcome.infra_error: "bold red", Outcome.regression: "red"}


def clock(seconds: float) -> str:
    return str(timedelta(seconds=max(0, round(seconds))))


class RunProgress:
    def __init__(self, console: Console, total: int, *, workers: int = 1) -> None:
        self.console, self.total, self.workers = console, total, workers
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(bar_width=30),
            TextColumn("{task.fields[summary]}"),
            console=console,
        )
        self.bar = self.progress.add_task("[bold]all tasks", total=total, summary="")
        self.lines: dict[str, TaskID] = {}
        self.phase: dict[str, str] = {}
        self._lock = threading.Lock()  # updates come from every worker thread
        self._started = time.monotonic()
        self._before = 0  # units finished in earlier sessions
        self._finished_now = 0  # units finished in this session (the ETA's evidence)
        self._final: dict[tuple, ResultRow] = {}  # each unit's final row that counts
        self._cost = 0.0  # every attempt's cost in this session
        self._cost_unknown = False

    def __enter__(self) -> RunProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    # ------------------------------------------------------------------ the numbers

    def row(self, row: ResultRow) -> None:
        """A row was appended (RunFolder.on_row): its cost, and its outcome when it is final."""
        with self._lock:
            if row.cost_usd is None:
                self._cost_unknown = True
            else:
                self._cost += row.cost_usd
            if row.final:
                self._final[row.unit()] = row

    def summary(self) -> str:
        done = self._before + self._finished_now
        finals = list(self._final.values())
        resolved = sum(r.resolved for r in finals)
        infra = sum(r.outcome == Outcome.infra_error for r in finals)
        failed = len(finals) - resolved - infra
        parts = [f"{done}/{self.total}", f"{resolved} resolved", f"{failed} failed"]
        if infra:
            parts.append(f"{infra} infra error{'s' if infra > 1 else ''}")
        parts.append(usd(self._cost) + (" + unknown" if self._cost_unknown else ""))
        left = self.total - done
        elapsed = time.monotonic() - self._started
        if left == 0:
            parts.append(f"took {clock(elapsed)}")
        elif self._finished_now:
            parts.append(f"ETA {clock(elapsed / self._finished_now * left)} · {clock(elapsed)} so far")
        else:
            parts.append(f"ETA after the first unit · {clock(elapsed)} so far")
        return " · ".join(parts)

    # ------------------------------------------------------------------ events

    def update(self, event: str, unit: str, text: str) -> None:
        with self._lock:
            if event == "plan":
                self._before = int(text.split(", ")[1].split()[0])
                self.progress.update(self.bar, completed=self._before)
                if self._before or ";" in text:
                    self.console.print(f"resuming: {text}")
            elif event == "done":
                self._drop(unit)
                self._finished_now += 1
                self.progress.advance(self.bar)
                colour = OUTCOME_COLOUR.get(text, "yellow")
                self.console.print(f"  {escape(unit)}: [{colour}]{text}[/]   [dim]{self.summary()}[/]")
            elif event in ("interrupt", "note", "retry"):
                self.console.print(f"[yellow]{escape(unit) + ': ' if unit else ''}{escape(text)}[/]")
            elif unit:
                if event == "step":
                    line = f"{self.phase.get(unit, 'agent working')} · step {text}"
                else:
                    self.phase[unit] = text[:90]
                    line = self.phase[unit]
                if unit not in self.lines:
                    self.lines[unit] = self.progress.add_task("", total=None, summary="")
                self.progress.update(self.lines[unit], description=f"  {escape(unit)}: [dim]{escape(line)}[/]")
            self.progress.update(self.bar, summary=self.summary())

    def seed(self, rows: list[ResultRow]) -> None:
        """The final rows of units finished in earlier sessions (a resumed run counts them)."""
        with self._lock:
            for row in rows:
                if row.final:
                    self._final.setdefault(row.unit(), row)
                self._cost += row.cost_usd or 0.0
                self._cost_unknown |= row.cost_usd is None

    def _drop(self, unit: str) -> None:
        line = self.lines.pop(unit, None)
        self.phase.pop(unit, None)
        if line is not None:
            self.progress.remove_task(line)
