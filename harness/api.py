"""wholeloop's Python API: a run folder as typed objects, and its attempts as a table.

    import harness

    run = harness.load_run("runs/20260101-120000-default+anthropic_claude-sonnet-4-5")
    run.rows                    # the rows that count (ResultRow), one per attempt
    run.attempts[0].transcript()  # typed transcript events of that attempt (harness.transcript)
    run.figures()               # every figure of `wholeloop report` (report.figures.Figures)
    run.attempts_df()           # a pandas DataFrame, one row per attempt (columns: docs/records.md)
    harness.attempts_df(["runs/a", "runs/b"])   # several runs in one table

Everything is read from disk (no Docker), with the same rules as the command line: the latest-row
rule for rows, Wilson and bootstrap intervals for figures. pandas is an optional extra
(`pip install 'wholeloop[pandas]'`); only `attempts_df` needs it. See docs/api.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .records import Manifest, ResultRow, RunFolder, open_run

if TYPE_CHECKING:
    import pandas

    from .report.figures import Figures


@dataclass
class Attempt:
    """One attempt (one row) of a run, with the files that belong to it."""

    run_dir: Path
    row: ResultRow

    @property
    def task_id(self) -> str:
        return self.row.task_id

    @property
    def outcome(self) -> str:
        return self.row.outcome

    @property
    def resolved(self) -> bool:
        return self.row.resolved

    def transcript(self) -> list:
        """This attempt's transcript events, typed (harness.transcript); a later attempt of the
        same repeat shares the file, so only this attempt's events are returned."""
        from .transcript import read_transcript

        path = self.run_dir / self.row.transcript_path
        if not self.row.transcript_path or not path.is_file():
            return []
        out, current = [], 1
        for event in read_transcript(path):
            if event.type == "attempt_start":
                current = event.attempt
            if current == self.row.attempt:
                out.append(event)
        return out

    def patch(self) -> str:
        path = self.run_dir / self.row.patch_path
        return path.read_text(errors="replace") if self.row.patch_path and path.is_file() else ""

    def test_output(self) -> str:
        path = self.run_dir / self.row.dir / "test_output.txt"
        return path.read_text(errors="replace") if self.row.dir and path.is_file() else ""

    def failing_tests(self) -> list[dict]:
        """Each failing hidden test: test, status, kind (FAIL_TO_PASS / PASS_TO_PASS), message."""
        from .report.attempt import failing_tests, failure_messages

        messages = failure_messages(self.run_dir, self.row, open_run(self.run_dir).info())
        return [
            {"test": t, "status": s, "kind": k, "message": messages.get(t, "")} for t, s, k in failing_tests(self.row)
        ]

    def problem_statement(self) -> str:
        from .report.attempt import problem_statement

        return problem_statement(self.run_dir, self.row, manifest=open_run(self.run_dir).info())


@dataclass
class Run:
    """A run folder, loaded: its manifest, rows and attempts."""

    path: Path
    folder: RunFolder = field(repr=False)

    @cached_property
    def manifest(self) -> dict:
        return self.folder.manifest()

    @cached_property
    def info(self) -> Manifest:
        """The manifest, typed; `info.recipe` is the RunSpec the run was started from (None before
        manifest schema 2): `harness.run.RunSpec.of(run.info.recipe)`."""
        return self.folder.info()

    @cached_property
    def rows(self) -> list[ResultRow]:
        """The rows that count (the latest-row rule), in the order written."""
        return self.folder.latest()

    @cached_property
    def all_rows(self) -> list[ResultRow]:
        """Every row, superseded ones too (a redone unit keeps its earlier rows)."""
        return self.folder.rows()

    @cached_property
    def attempts(self) -> list[Attempt]:
        return [
            Attempt(self.path, r) for r in sorted(self.rows, key=lambda r: (r.task_id, r.config, r.repeat, r.attempt))
        ]

    def attempt(
        self, task_id: str, *, config: str | None = None, repeat: int = 0, attempt: int | None = None
    ) -> Attempt:
        """The attempt of a task (its last one unless `attempt` is given); KeyError when none."""
        found = [
            a
            for a in self.attempts
            if a.task_id == task_id
            and a.row.repeat == repeat
            and (config is None or a.row.config == config)
            and (attempt is None or a.row.attempt == attempt)
        ]
        if not found:
            raise KeyError(f"no attempt of {task_id!r} (repeat {repeat}) in {self.path}")
        return found[-1]

    def figures(self, scoring: Any = None) -> Figures:
        """Every figure `wholeloop report` shows (intervals, pass@k, recovery, failures)."""
        from .report.figures import compute_figures

        return compute_figures([self.path], scoring)

    def records(self) -> list[dict]:
        """One flat dict per attempt (the columns of `report --csv`)."""
        from .report.table import attempt_records

        return attempt_records([self.path])

    def attempts_df(self) -> pandas.DataFrame:
        return attempts_df([self.path])


def load_run(path: Path | str) -> Run:
    """A run folder; raises FileNotFoundError when `path` is not one (or has no row yet)."""
    folder = open_run(path)
    return Run(Path(path), folder)


def attempts_df(runs: Iterable[Path | str | Run] | Path | str | Run) -> pandas.DataFrame:
    """The attempts of one or more runs as a pandas DataFrame, one row per attempt."""
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError("attempts_df needs pandas: pip install 'wholeloop[pandas]'") from exc
    from .report.table import COLUMNS, attempt_records

    if isinstance(runs, (str, Path, Run)):
        runs = [runs]
    paths = [r.path if isinstance(r, Run) else Path(r) for r in runs]
    return pd.DataFrame(attempt_records(paths), columns=list(COLUMNS))
