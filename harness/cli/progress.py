"""The live display of a run: an overall bar, and one line per unit in flight saying what it does."""

from __future__ import annotations

import threading

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

OUTCOME_COLOUR = {"resolved": "green", "infra_error": "bold red", "regression": "red"}


class RunProgress:
    def __init__(self, console: Console, total: int) -> None:
        self.console = console
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(bar_width=30),
                                 MofNCompleteColumn(), TimeElapsedColumn(), console=console)
        self.bar = self.progress.add_task("[bold]all tasks", total=total)
        self.lines: dict[str, TaskID] = {}
        self._lock = threading.Lock()  # updates come from every worker thread

    def __enter__(self) -> RunProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def update(self, event: str, unit: str, text: str) -> None:
        with self._lock:
            if event == "plan":
                done = int(text.split(", ")[1].split()[0])
                self.progress.update(self.bar, completed=done)
                if done:
                    self.console.print(f"resuming: {text}")
            elif event == "done":
                self._drop(unit)
                self.progress.advance(self.bar)
                colour = OUTCOME_COLOUR.get(text, "yellow")
                self.console.print(f"  {unit}: [{colour}]{text}[/]")
            elif event in ("interrupt", "note", "retry"):
                self.console.print(f"[yellow]{unit + ': ' if unit else ''}{text}[/]")
            elif unit:
                if unit not in self.lines:
                    self.lines[unit] = self.progress.add_task("", total=None)
                self.progress.update(self.lines[unit], description=f"  {unit}: [dim]{text[:90]}[/]")

    def _drop(self, unit: str) -> None:
        line = self.lines.pop(unit, None)
        if line is not None:
            self.progress.remove_task(line)
