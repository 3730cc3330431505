"""What the history's readers pass and get back, without SQLAlchemy: `wholeloop history` lists runs
through `harness.history.listing` with these alone (its start-up time is measured), and
`harness.history.db` builds its queries from the same filters and rows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path


@dataclass
class HistoryFilter:
    """Which runs a listing, a trend or a baseline query looks at (None: any)."""

    suite: str | None = None  # the suite's folder name ("demo") or its path
    model: str | None = None
    agent: str | None = None
    config: str | None = None
    since: datetime | None = None
    finished_only: bool = False
    exclude_paths: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # only runs indexed from these folders
    run: str | None = None  # a run id (folder name) or a uid prefix


@dataclass
class RunSummary:
    """One configuration of one indexed run, as `wholeloop history` lists it."""

    key: int
    uid: str
    run_id: str
    path: str
    suite: str
    started_at: datetime | None
    finished_at: datetime | None
    config: str
    agent: str
    model: str | None
    tasks: int
    trials: int  # complete trials (a final row)
    scored: int  # trials that were not infrastructure errors
    resolved: int
    infra_errors: int
    incomplete: int
    cost_usd: float | None  # everything spent: every complete trial, retried tries included; None: a price unknown
    time_s: float  # over scored trials
    regraded_from: str | None = None  # a regrade: the uid of the run it re-graded
    tampering: int = 0  # complete trials whose grade suspects tampering
    # under the default acceptance policy, from the axes the index keeps (harness.report.axes)
    accepted: int = 0
    not_measured: int = 0  # resolved trials whose acceptance was not measured (then no accept rate)

    @property
    def rate(self) -> float | None:
        return self.resolved / self.scored if self.scored else None

    @property
    def accept_rate(self) -> float | None:
        """Accepted over scored trials; None when nothing was scored or a resolved trial was not
        measured (graded before the axes, or indexed before the index kept them): never a guess."""
        return self.accepted / self.scored if self.scored and not self.not_measured else None


@dataclass
class TaskAggregate:
    """One task of one configuration of one run: what trends and intervals are computed from."""

    run: int
    config: str
    task_id: str
    scored: int
    resolved: int
    cost_usd: float | None
    time_s: float


@dataclass
class TrialFigure:
    """One complete trial (its current rows, not an infrastructure error) of an indexed run: what
    an estimate of a later run's time and cost is made from."""

    config: str
    agent: str
    model: str | None
    task_id: str
    cost_usd: float | None  # None: a price was unknown
    time_s: float
    input_tokens: int
    output_tokens: int


def utc(value: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes: every time in the index is UTC."""
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def summary_of(x) -> RunSummary:
    """A RunSummary from one line of the listing's query (SQLAlchemy's row or a mapping by column
    name): counts may be NULL, times come back as datetimes or as SQLite's text."""
    return RunSummary(
        key=x["id"],
        uid=x["uid"],
        run_id=x["run_id"],
        path=x["path"],
        suite=x["suite"],
        started_at=utc(_when(x["started_at"])),
        finished_at=utc(_when(x["finished_at"])),
        config=x["config"],
        agent=x["agent"],
        model=x["model"],
        tasks=int(x["tasks"] or 0),
        trials=int(x["trials"] or 0),
        scored=int(x["scored"] or 0),
        resolved=int(x["resolved"] or 0),
        infra_errors=int(x["infra"] or 0),
        incomplete=int(x["incomplete"] or 0),
        cost_usd=None if x["cost_unknown"] else float(x["cost"] or 0.0),
        time_s=float(x["time"] or 0.0),
        regraded_from=x["regraded_from"],
        tampering=int(x["tampering"] or 0),
    )


def with_acceptance(found: list[RunSummary], axes: Iterable[Sequence]) -> list[RunSummary]:
    """`found` with each line's accepted and not-measured counts, judged under the default policy
    from (run key, config, acceptance JSON text or None) of its resolved trials."""
    import json

    from ..report.axes import decide
    from ..vocabulary import Acceptance

    lines = {(r.key, r.config): r for r in found}
    for run, config, text in axes:
        line = lines.get((run, config))
        if line is None:
            continue
        try:
            recorded = json.loads(text) if text else None
        except ValueError:
            recorded = None
        verdict = decide(True, recorded if isinstance(recorded, dict) else None)[0]
        line.accepted += verdict is Acceptance.accepted
        line.not_measured += verdict is Acceptance.not_measured
    return found


def _when(value: datetime | str | None) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def bound_values(flt: HistoryFilter) -> dict[str, object]:
    """The values a filter binds into the listing's queries, by parameter name: the one place they
    are computed, for SQLAlchemy's statements and for the compiled ones `listing` runs."""
    values: dict[str, object] = {}
    if flt.suite:
        values["suite"], values["suite_path"] = flt.suite, str(Path(flt.suite).resolve())
    if flt.since:
        values["since"] = utc(flt.since)
    for name, value in (("model", flt.model), ("agent", flt.agent), ("config", flt.config)):
        if value:
            values[name] = value
    return values


def shape_of(flt: HistoryFilter, limit: int | None) -> str | None:
    """Which parameters a listing query has (its compiled form depends only on this), or None for a
    filter `listing` does not run without SQLAlchemy (run ids, paths, finished runs only)."""
    if flt.finished_only or flt.exclude_paths or flt.paths or flt.run:
        return None
    return ",".join(sorted(bound_values(flt))) + ("+limit" if limit else "")
