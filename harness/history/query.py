"""Runs named by a history query, for `wholeloop gate BASELINE CANDIDATE`:

    latest                     the newest finished run of the candidate's suite and configuration
    latest:SUITE               the newest finished run of SUITE with the candidate's configuration
    latest:SUITE:CONFIG        the newest finished run of SUITE with configuration CONFIG
    run:RUN_ID                 a pinned run: its id (the run folder's name) or a prefix of its uid
    run:RUN_ID:CONFIG          one configuration of a pinned run that has several

SUITE is the name of the folder holding the task specs (`tasks/demo` -> `demo`) or its path;
CONFIG is the configuration label (`--config`, or agent+model). `latest` never picks the
candidate's own run, and only runs whose manifest says they finished; a run that was re-graded
(`wholeloop regrade`) is stood in for by its regrade (the same attempts, the newer grader).
Anything else is a path to a run folder.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UserError
from ..records import ResultRow
from .db import HistoryFilter, HistoryIndex, RunSummary, superseded


class QueryError(UserError):
    """A history query that names no run, or more than one."""


@dataclass
class Query:
    kind: str  # latest | run
    suite: str | None = None
    run: str | None = None
    config: str | None = None

    def __str__(self) -> str:
        if self.kind == "run":
            return f"run:{self.run}" + (f":{self.config}" if self.config else "")
        return (
            "latest"
            + (f":{self.suite or ''}" if self.suite or self.config else "")
            + (f":{self.config}" if self.config else "")
        )


def parse(spec: str) -> Query | None:
    """The query in `spec`, or None when `spec` is not one (then it is a run folder's path)."""
    if spec == "latest":
        return Query("latest")
    if spec.startswith("latest:"):
        suite, _, config = spec.removeprefix("latest:").partition(":")
        return Query("latest", suite=suite or None, config=config or None)
    if spec.startswith("run:"):
        run, _, config = spec.removeprefix("run:").partition(":")
        if not run:
            raise QueryError(f"{spec!r}: run: needs a run id (run:RUN_ID or run:RUN_ID:CONFIG)")
        return Query("run", run=run, config=config or None)
    return None


def resolve(
    index: HistoryIndex,
    query: Query,
    *,
    suite: str | None = None,
    config: str | None = None,
    exclude_paths: list[str] | None = None,
    exclude_uid: str | None = None,
) -> tuple[RunSummary, list[ResultRow]]:
    """The run (one configuration) a query names, and its current rows from the index. `suite`
    and `config` fill in what the query leaves out (the candidate's)."""
    if query.kind == "run":
        found = index.list_runs(HistoryFilter(run=query.run, config=query.config))
        runs = {r.uid for r in found}
        if not found:
            raise QueryError(f"{query}: no indexed run has that id in {index.shown}")
        if len(runs) > 1:
            listing = ", ".join(sorted(f"{r.run_id} (uid {r.uid[:12]}, {r.path})" for r in found))
            raise QueryError(f"{query}: several runs match ({listing}): pin one by its uid")
    else:
        flt = HistoryFilter(
            suite=query.suite or suite,
            config=query.config or config,
            finished_only=True,
            exclude_paths=list(exclude_paths or []),
        )
        found = [r for r in index.list_runs(flt) if r.uid != exclude_uid]
        regraded = superseded(found)  # a re-graded run's place is taken by its regrade
        found = [r for r in found if r.uid not in regraded]
        if not found:
            raise QueryError(
                f"{query}: no finished run of suite {flt.suite or '(any)'} with configuration "
                f"{flt.config or '(any)'} in {index.shown}"
            )
        newest = found[0].uid
        found = [r for r in found if r.uid == newest]
    if len(found) > 1:
        configs = ", ".join(r.config for r in found)
        raise QueryError(
            f"{query}: run {found[0].run_id} has several configurations ({configs}): "
            f"name one, as run:{found[0].run_id}:CONFIG"
        )
    run = found[0]
    return run, index.rows_of(run.key, run.config)
