"""The history index: a cache of every run's rows in SQLite or PostgreSQL, through SQLAlchemy Core.

    index = HistoryIndex.open(url)            # connects and migrates (Alembic) when it must
    index.sync_run(RunFolder("runs/x"))       # (re)index one run folder from disk
    index.list_runs(HistoryFilter(suite="demo"))

Run folders are the truth; everything here can be recreated from them (`rebuild`). Writes go
through `sync_run` (a whole folder) and `LiveRun.add` (one row as the run appends it: see
`harness.history.live`). The latest-row rule of the run folder is kept as rows arrive: a row that
starts a new try of its unit, or ends one as abandoned (`retried`), marks that try's rows
`current = false`, exactly as `records.latest_rows` decides on disk.

Errors of the database (down, refused, wrong password, locked too long) become `HistoryError`,
whose message never carries the password.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import (
    Column,
    MetaData,
    String,
    Table,
    and_,
    bindparam,
    case,
    create_engine,
    delete,
    distinct,
    event,
    func,
    insert,
    inspect,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from ..errors import UserError
from ..vocabulary import Outcome
from . import listing
from . import url as urls
from .schema import HEAD, attempts, runs
from .types import (
    HistoryFilter,
    RunSummary,
    TaskAggregate,
    TrialFigure,
    bound_values,
    shape_of,
    summary_of,
    utc,
    with_acceptance,
)

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
# The statements a live run executes per row, built once: SQLAlchemy then compiles them once too.
_INSERT_ATTEMPT = insert(attempts)
_SUPERSEDE = (
    update(attempts)
    .where(
        and_(
            attempts.c.run == bindparam("b_run"),
            attempts.c.task_id == bindparam("b_task"),
            attempts.c.config == bindparam("b_config"),
            attempts.c.repeat == bindparam("b_repeat"),
            attempts.c.current,
        )
    )
    .values(current=False)
)
_RETRIED = (
    update(attempts)
    .where(
        and_(  # the current try of a unit turns out retried: its rows' spend is the unit's
            attempts.c.run == bindparam("b_run"),
            attempts.c.task_id == bindparam("b_task"),
            attempts.c.config == bindparam("b_config"),
            attempts.c.repeat == bindparam("b_repeat"),
            attempts.c.current,
        )
    )
    .values(current=False, retried=True)
)
_DROP_COPIES = delete(runs).where(runs.c.uid == bindparam("b_uid"), runs.c.id != bindparam("b_id"))
_REFRESH_RUN = update(runs).where(runs.c.id == bindparam("b_id"))  # SET: the columns a call gives
if TYPE_CHECKING:  # at run time imported where rows are read or written: listing needs no pydantic
    from ..records import Manifest, ResultRow, RunFolder

RESULTS_FILE = "results.jsonl"  # RunFolder.RESULTS (tests/test_history.py checks they agree)
_alembic_version = Table("alembic_version", MetaData(), Column("version_num", String(32), primary_key=True))


class HistoryError(UserError):
    """The history database cannot be used (down, refused, a wrong password, a missing driver): an
    input error, not a bug. The message names the database without its password."""


_utc = utc  # every time in the index is UTC


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return _utc(datetime.fromisoformat(str(text)))
    except ValueError:
        return None


def provisional_uid(folder: RunFolder) -> str:
    """The key of a run indexed before its manifest exists (a run's first moments): replaced by the
    manifest's run_uid as soon as there is one."""
    seed = f"{socket.gethostname()}|{folder.path.resolve()}"
    return "p-" + hashlib.sha256(seed.encode()).hexdigest()[:30]


def _written(manifest: Manifest) -> bool:
    """Whether the folder had a manifest at all (an empty Manifest is a run's first moments)."""
    return bool(manifest.model_fields_set or manifest.model_extra)


def run_uid(folder: RunFolder, manifest: Manifest) -> str:
    """The manifest's run_uid (for a regrade, derived from it: the regrade copied it from its source);
    for runs older than it, a hash of the folder, its run id and start time; without a manifest yet,
    `provisional_uid`."""
    run_id = manifest.run_id if "run_id" in manifest.model_fields_set else folder.path.name
    if manifest.run_uid:
        uid = str(manifest.run_uid)
        regraded = manifest.regraded_from
        if regraded is not None:  # a regrade copies its source's manifest, run_uid included:
            # it is a run of its own, keyed by its source and when it was made
            seed = f"{uid}|regrade|{regraded.get('at', '')}|{run_id}"
            return "r-" + hashlib.sha256(seed.encode()).hexdigest()[:30]
        return uid
    if not _written(manifest):
        return provisional_uid(folder)
    started = manifest.started_at if "started_at" in manifest.model_fields_set else ""
    seed = f"{folder.path.resolve()}|{run_id}|{started}"
    return hashlib.sha256(seed.encode()).hexdigest()[:32]


def regraded_source(manifest: Manifest) -> str | None:
    """The uid of the run a regrade re-graded (its manifest's run_uid, which the regrade copied)."""
    if manifest.regraded_from is not None and manifest.run_uid:
        return str(manifest.run_uid)
    return None


def reviews_json(folder: RunFolder, rows: list[ResultRow]) -> dict[tuple[str, str, int, int], str]:
    """The human verdicts that count for each of `rows` (RunFolder.current_reviews: the latest of
    each reviewer on the attempt's patch as it is now), as the index keeps them: JSON, reviewer ->
    {verdict, reason, at}. Empty when the run has no review file."""
    if not folder.reviews_path.exists():
        return {}
    return {
        key: json.dumps(
            {name: v.model_dump(mode="json", include={"verdict", "reason", "at"}) for name, v in sorted(by.items())},
            sort_keys=True,
        )
        for key, by in folder.current_reviews(rows).items()
    }


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def suite_of(manifest: Manifest) -> tuple[str, str]:
    """(name, path) of the folder holding the run's task specs: tasks/demo/*.yaml -> ("demo", ".../tasks/demo")."""
    specs = [Path(t.spec) for t in manifest.tasks.values() if t.spec]
    if not specs:
        return "", ""
    cwd = Path(manifest.cwd or ".")
    parents = [str((p if p.is_absolute() else cwd / p).parent) for p in specs]
    common = Path(os.path.commonpath(parents))
    return common.name, str(common)


def _row_values(
    row: ResultRow, run: int, seq: int, current: bool, retried: bool = False, reviews: str | None = None
) -> dict:
    return {
        "run": run,
        "seq": seq,
        "current": current,
        "retried": retried,
        "task_id": row.task_id,
        "task_hash": row.task_hash,
        "config": row.config,
        "agent": row.agent,
        "model": row.model,
        "repeat": row.repeat,
        "attempt": row.attempt,
        "final": row.final,
        "outcome": row.outcome,
        "resolved": row.resolved,
        "stop_reason": row.stop_reason or "",
        "cost_usd": row.cost_usd,
        "total_s": row.phases.total_s,
        "agent_s": row.phases.agent_s,
        "steps": row.steps,
        "input_tokens": row.usage.input_tokens,
        "output_tokens": row.usage.output_tokens,
        "transcript_path": row.transcript_path or "",
        "dir": row.dir or "",
        "started_at": row.started_at or "",
        "finished_at": row.finished_at or "",
        "tampering": row.tampering,
        "grader_version": row.grader_version,
        # the axes as grading recorded them (NULL: not measured); a policy applies to them at report time
        "acceptance": None if row.acceptance is None else json.dumps(row.acceptance, sort_keys=True),
        "reviews": reviews,
    }


def _run_values(folder: RunFolder, manifest: Manifest, rows: list[ResultRow]) -> dict:
    suite, suite_path = suite_of(manifest)
    started = parse_time(manifest.started_at) or parse_time(
        min((r.started_at for r in rows if r.started_at), default=None)
    )
    if started is None and folder.results_path.exists():
        started = datetime.fromtimestamp(folder.results_path.stat().st_mtime, UTC)
    wl = manifest.wholeloop
    return {
        "uid": run_uid(folder, manifest),
        "run_id": str(manifest.run_id or folder.path.name),
        "path": str(folder.path.resolve()),
        "host": socket.gethostname(),
        "suite": suite,
        "suite_path": suite_path,
        "started_at": started,
        "finished_at": parse_time(manifest.finished_at),
        "wholeloop_version": wl.get("version"),
        "git_commit": (wl.get("git_commit") or None),
        "regraded_from": regraded_source(manifest),
        "grader_version": _int(manifest.grader_version),
        "indexed_at": datetime.now(UTC),
    }


def superseded(found: Iterable[RunSummary]) -> set[str]:
    """uids of runs among `found` that a regrade among them re-graded: the regrade (the same
    attempts, graded by a newer grader) stands in for them in trends and as a gate's `latest`."""
    return {r.regraded_from for r in found if r.regraded_from}


def find_runs(roots: Iterable[Path | str]) -> list[Path]:
    """Every run folder (a folder with results.jsonl) under the roots; a run folder is not searched."""
    found: list[Path] = []
    for root in roots:
        for here, dirs, files in os.walk(root):
            if RESULTS_FILE in files:
                found.append(Path(here))
                dirs[:] = []
            else:
                dirs.sort()
    return sorted(found)


class HistoryIndex:
    """One history database. Thread-safe: writes of one process go one at a time."""

    def __init__(self, url: str, engine: Engine) -> None:
        self.url = url
        self.shown = urls.shown(url)
        self.engine = engine
        self._write_lock = threading.Lock()
        self._rows: _SqliteWriter | None = None  # the live rows' connection (SQLite), opened at the first row

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, url: str, *, create: bool = True) -> HistoryIndex:
        """Connect and bring the schema to the newest revision. `create=False`: a SQLite file that
        does not exist is an error (reading commands never create an empty index)."""
        urls.protect(url)
        url = urls.normalize(url)
        path = urls.sqlite_path(url)
        if path is not None:
            if not path.exists() and not create:
                raise FileNotFoundError(
                    f"no history index at {path} (runs index themselves as they run; "
                    "`wholeloop history --rebuild` makes one from the run folders)"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            engine = _engine(url)
        except (ImportError, SQLAlchemyError) as exc:  # no driver for the URL's scheme, a malformed URL
            raise HistoryError(urls.scrub(f"run history at {urls.shown(url)}: {exc}", url)) from exc
        index = cls(url, engine)
        try:
            index.migrate()
            index.compile_listings()
        except BaseException:
            index.close()
            raise
        return index

    def close(self) -> None:
        if self._rows is not None:
            self._rows.close()
            self._rows = None
        self.engine.dispose()

    def __enter__(self) -> HistoryIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def error(self, exc: BaseException, doing: str) -> HistoryError:
        """A HistoryError for a failed database call: the driver's own first line, never the password."""
        cause = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
        first = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
        return HistoryError(urls.scrub(f"run history at {self.shown}: {doing}: {first}", self.url))

    def _write(self) -> _transaction:
        return _transaction(self.engine, write=True)

    def _read(self) -> _transaction:
        return _transaction(self.engine, write=False, index=self)

    def migrate(self) -> None:
        """Apply the Alembic migrations the database lacks (none, most of the time: one cheap query)."""
        try:
            with self._read() as conn:
                if self._revision(conn) == HEAD:
                    return
            with self._write() as conn:
                if conn.dialect.name == "postgresql":  # two processes migrating at once: one waits
                    conn.execute(select(func.pg_advisory_xact_lock(0x57686F6C)))
                current = self._revision(conn)
                if current == HEAD:
                    return
                if current is not None and not any((MIGRATIONS / "versions").glob(f"{current}_*.py")):
                    raise HistoryError(
                        f"run history at {self.shown} has schema revision {current}, unknown to this "
                        "wholeloop (made by a newer one?)"
                    )
                from alembic import command
                from alembic.config import Config

                config = Config()
                config.set_main_option("script_location", str(MIGRATIONS))
                config.attributes["connection"] = conn
                command.upgrade(config, "head")
        except SQLAlchemyError as exc:
            raise self.error(exc, "cannot open or migrate the index") from exc

    @staticmethod
    def _revision(conn: Connection) -> str | None:
        if not inspect(conn).has_table("alembic_version"):
            return None
        return conn.execute(select(_alembic_version.c.version_num)).scalar()

    def revision(self) -> str | None:
        with self._read() as conn:
            return self._revision(conn)

    # ------------------------------------------------------------------ writing

    def sync_run(self, folder: RunFolder) -> LiveRun:
        """Index one run folder as it is on disk now (its earlier rows replaced); returns the state
        that `LiveRun.add` continues from."""
        from ..records import latest_rows, retried_tries

        rows = folder.rows()
        manifest = folder.info()
        latest = latest_rows(rows)
        current = {id(r) for r in latest}
        verdicts = reviews_json(folder, latest)
        retried = {id(r) for one in retried_tries(rows) for r in one}
        values = _run_values(folder, manifest, rows)
        try:
            with self._write_lock, self._write() as conn:
                key = self._upsert_run(conn, values, provisional_uid(folder))
                conn.execute(delete(attempts).where(attempts.c.run == key))
                if rows:
                    conn.execute(
                        _INSERT_ATTEMPT,
                        [
                            _row_values(
                                r,
                                key,
                                i,
                                id(r) in current,
                                id(r) in retried,
                                verdicts.get(r.key()) if id(r) in current else None,
                            )
                            for i, r in enumerate(rows)
                        ],
                    )
        except SQLAlchemyError as exc:
            raise self.error(exc, f"cannot index {folder.path}") from exc
        live = LiveRun(self, folder, key, values["uid"], seq=len(rows), has_manifest=_written(manifest))
        for row in rows:
            if id(row) in current:
                live.units[row.unit()] = max(live.units.get(row.unit(), 0), row.attempt)
                if row.final and row.outcome == Outcome.infra_error:
                    live.infra_final.add(row.unit())
        return live

    def _upsert_run(self, conn: Connection, values: dict, provisional: str) -> int:
        key = conn.execute(
            select(runs.c.id).where(runs.c.uid.in_([values["uid"], provisional])).order_by(runs.c.uid == provisional)
        ).scalar()
        if key is None:
            return conn.execute(insert(runs).values(**values).returning(runs.c.id)).scalar_one()
        conn.execute(update(runs).where(runs.c.id == key).values(**values))
        return key

    def refresh_run(self, live: LiveRun) -> None:
        """The run's manifest-derived facts (suite, start, finish, versions) again from its folder."""
        manifest = live.folder.info()
        values = _run_values(live.folder, manifest, [])
        live.uid = values["uid"]
        if not manifest.started_at:  # keep what the rows said when the run was first indexed
            values.pop("started_at")
        try:
            with self._write_lock, self._row_writer() as conn:
                # the same run indexed from another folder (a copy of this one): this folder is the one in use
                conn.execute(_DROP_COPIES, {"b_uid": values["uid"], "b_id": live.key})
                conn.execute(_REFRESH_RUN, {"b_id": live.key, **values})
        except (SQLAlchemyError, sqlite3.Error) as exc:
            raise self.error(exc, f"cannot update {live.folder.path}") from exc

    def add_row(self, live: LiveRun, row: ResultRow) -> None:
        """One row, just appended to the run folder: into the index, applying the latest-row rule."""
        unit = row.unit()
        try:
            with self._write_lock:
                with self._row_writer() as conn:
                    previous = live.units.get(unit)
                    which = {"b_run": live.key, "b_task": row.task_id, "b_config": row.config, "b_repeat": row.repeat}
                    # the try ends abandoned (the machine failed it: `retried`), or a new try redoes one whose
                    # final row was an infra_error: the earlier rows are a retried try's (records.retried_tries)
                    if row.retried or (previous is not None and row.attempt <= previous and unit in live.infra_final):
                        conn.execute(_RETRIED, which)
                    elif (
                        previous is not None and row.attempt <= previous
                    ):  # a new try: the old one's rows stop counting
                        conn.execute(_SUPERSEDE, which)
                    # a list of one: executemany, which does not fetch the new primary key (not needed)
                    conn.execute(_INSERT_ATTEMPT, [_row_values(row, live.key, live.seq, not row.retried, row.retried)])
                live.infra_final.discard(unit)
                if row.retried:
                    live.units.pop(unit, None)
                else:
                    live.units[unit] = row.attempt
                    if row.final and row.outcome == Outcome.infra_error:
                        live.infra_final.add(unit)
                live.seq += 1
        except (SQLAlchemyError, sqlite3.Error) as exc:
            raise self.error(exc, f"cannot index a row of {live.folder.path}") from exc

    def _row_writer(self):
        """Where a live run's rows are written: on SQLite, one sqlite3 connection kept open, running the
        statements as SQLAlchemy compiled them (a row costs a tenth of a millisecond instead of the
        half a millisecond SQLAlchemy's connection, events and result handling take: issue 14 bounds
        indexing at 5 % of the time a run spends writing its own records); elsewhere SQLAlchemy's."""
        path = urls.sqlite_path(self.url)
        if path is None:
            return self._write()
        if self._rows is None:
            self._rows = _SqliteWriter(path, self.engine.dialect)
        return self._rows

    def remove_run(self, path: Path | str) -> int:
        """Forget the runs indexed from this folder; returns how many."""
        resolved = str(Path(path).resolve())
        with self._write_lock, self._write() as conn:
            return conn.execute(delete(runs).where(runs.c.path == resolved)).rowcount

    def rebuild(self, roots: list[Path]) -> tuple[int, int]:
        """Empty the index and index every run folder under the roots again: (runs, rows)."""
        try:
            with self._write_lock, self._write() as conn:
                conn.execute(delete(attempts))
                conn.execute(delete(runs))
        except SQLAlchemyError as exc:
            raise self.error(exc, "cannot empty the index") from exc
        from ..records import RunFolder

        n_runs = n_rows = 0
        for path in find_runs(roots):
            live = self.sync_run(RunFolder(path))
            n_runs, n_rows = n_runs + 1, n_rows + live.seq
        return n_runs, n_rows

    # ------------------------------------------------------------------ reading

    def _remember(self, name: str, shape: str | None, query) -> None:
        """Keep the SQL SQLAlchemy compiles for a listing query of this shape beside a SQLite index,
        so the next `wholeloop history` runs it with the standard library alone (`listing`)."""
        path = urls.sqlite_path(self.url)
        if path is None or shape is None or listing.known(path, name, shape):
            return
        compiled = query.compile(dialect=self.engine.dialect)
        named = set(compiled.binds) & (set(shape.replace("+", ",").split(",")) - {""})
        constants = {key: value for key, value in compiled.construct_params().items() if key not in named}
        listing.remember(
            path,
            name,
            shape,
            compiled.string,
            list(compiled.positiontup or []),
            constants,
            list(query.selected_columns.keys()),
            HEAD,
        )

    def _trials(self, flt: HistoryFilter, only_runs=None):
        """One line per (run, config, task, repeat) of the current rows: a trial, as stats.py counts
        it; `only_runs`, a subquery of run ids, limits it to those runs."""
        a = attempts.c
        where = [or_(a.current, a.retried), *self._attempt_filter(flt)[1:]]  # the current rows decide; see below
        if isinstance(only_runs, (list, set, tuple)):
            where.append(a.run.in_(sorted(only_runs)))
        elif only_runs is not None:
            where.append(a.run.in_(select(only_runs.c.id)))
        final = and_(a.current, a.final)
        final_infra = and_(final, a.outcome == Outcome.infra_error.value)
        # `cost`: the trial's money, its unit's retried tries included (as stats.Trial.cost);
        # `retried_cost`: those tries alone (a unit with no complete trial still spent it)
        return (
            select(
                a.run,
                a.config,
                a.task_id,
                a.repeat,
                func.max(a.agent).label("agent"),
                func.max(a.model).label("model"),
                func.max(case((a.current, 1), else_=0)).label("counts"),  # 0: only retried tries' rows
                func.max(case((final, 1), else_=0)).label("complete"),
                func.max(case((and_(final, a.resolved), 1), else_=0)).label("resolved"),
                func.max(case((final_infra, 1), else_=0)).label("infra"),
                func.max(case((and_(final, a.tampering.is_not(None)), 1), else_=0)).label("tampering"),
                func.sum(a.cost_usd).label("cost"),
                func.max(case((a.cost_usd.is_(None), 1), else_=0)).label("cost_unknown"),
                func.sum(case((a.retried, a.cost_usd), else_=0.0)).label("retried_cost"),
                func.max(case((and_(a.retried, a.cost_usd.is_(None)), 1), else_=0)).label("retried_unknown"),
                func.sum(case((a.current, a.total_s), else_=0.0)).label("time"),
            )
            .where(*where)
            .group_by(a.run, a.config, a.task_id, a.repeat)
            .subquery("trials")
        )

    def _run_filter(self, flt: HistoryFilter) -> list:
        r = runs.c
        where = []
        value = bound_values(flt)  # named parameters: `listing` runs the compiled statement with the same
        if flt.suite:
            where.append(
                or_(
                    r.suite == bindparam("suite", value["suite"]),
                    r.suite_path == bindparam("suite_path", value["suite_path"]),
                )
            )
        if flt.since:
            where.append(r.started_at >= bindparam("since", value["since"], type_=r.started_at.type))
        if flt.finished_only:
            where.append(r.finished_at.is_not(None))
        if flt.exclude_paths:
            where.append(r.path.not_in([str(Path(p).resolve()) for p in flt.exclude_paths]))
        if flt.paths:
            where.append(r.path.in_([str(Path(p).resolve()) for p in flt.paths]))
        if flt.run:
            where.append(or_(r.run_id == flt.run, r.uid.startswith(flt.run, autoescape=True)))
        return where

    def _attempt_filter(self, flt: HistoryFilter) -> list:
        a = attempts.c
        where: list = [a.current]  # SQLAlchemy clauses
        for name, value in bound_values(flt).items():
            if name in ("model", "agent", "config"):
                where.append(a[name] == bindparam(name, value))
        return where

    def list_runs(self, flt: HistoryFilter | None = None, *, limit: int | None = None) -> list[RunSummary]:
        """Indexed runs, one line per configuration, newest first. With a limit, only the newest
        runs that match are aggregated (the listing stays quick however long the history)."""
        flt = flt or HistoryFilter()
        query, accepting = self._listing(flt, limit), self._accepting(flt, limit)
        self._remember("list_runs", shape_of(flt, limit), query)
        self._remember("list_acceptance", shape_of(flt, limit), accepting)
        with self._read() as conn:
            found = conn.execute(query).mappings().all()
            axes = conn.execute(accepting).all()
        return with_acceptance([summary_of(x) for x in found], axes)

    def _matching(self, flt: HistoryFilter, limit: int | None):
        """The ids of the runs a listing shows (the newest `limit` that match)."""
        r = runs.c
        matching = (
            select(r.id)
            .where(*self._run_filter(flt))
            .where(select(attempts.c.id).where(attempts.c.run == r.id, *self._attempt_filter(flt)).exists())
            .order_by(r.started_at.desc(), r.id.desc())
        )
        if limit:
            matching = matching.limit(bindparam("limit", limit))
        return matching.subquery("matching")

    def _accepting(self, flt: HistoryFilter, limit: int | None):
        """(run, config, acceptance axes as JSON text) of every resolved trial of the listed runs
        (its current final row): what the accept rate beside the resolve rate is judged from."""
        a = attempts.c
        return select(a.run, a.config, a.acceptance).where(
            *self._attempt_filter(flt), a.final, a.resolved, a.run.in_(select(self._matching(flt, limit).c.id))
        )

    def _listing(self, flt: HistoryFilter, limit: int | None):
        r = runs.c
        t = self._trials(flt, self._matching(flt, limit))
        scored = and_(t.c.complete == 1, t.c.infra == 0)
        per_config = (
            select(
                t.c.run,
                t.c.config,
                func.max(t.c.agent).label("agent"),
                func.max(t.c.model).label("model"),
                func.count(distinct(case((t.c.counts == 1, t.c.task_id)))).label("tasks"),
                func.sum(t.c.complete).label("trials"),
                func.sum(case((scored, 1), else_=0)).label("scored"),
                func.sum(case((scored, t.c.resolved), else_=0)).label("resolved"),
                func.sum(t.c.infra).label("infra"),
                func.sum(case((and_(t.c.complete == 0, t.c.counts == 1), 1), else_=0)).label("incomplete"),
                # everything spent (as stats' total_cost_usd): every complete trial's, retried tries included
                func.sum(case((t.c.complete == 1, t.c.cost), else_=t.c.retried_cost)).label("cost"),
                func.max(case((t.c.complete == 1, t.c.cost_unknown), else_=t.c.retried_unknown)).label("cost_unknown"),
                func.sum(case((scored, t.c.time), else_=0.0)).label("time"),
                func.sum(t.c.tampering).label("tampering"),
            )
            .group_by(t.c.run, t.c.config)
            .subquery("configs")
        )
        c = per_config.c
        query = (
            select(
                r.id,
                r.uid,
                r.run_id,
                r.path,
                r.suite,
                r.started_at,
                r.finished_at,
                c.config,
                c.agent,
                c.model,
                c.tasks,
                c.trials,
                c.scored,
                c.resolved,
                c.infra,
                c.incomplete,
                c.cost,
                c.cost_unknown,
                c.time,
                c.tampering,
                r.regraded_from,
            )
            .join(per_config, per_config.c.run == r.id)
            .order_by(r.started_at.desc(), r.id.desc(), c.config)
        )
        if limit:
            query = query.limit(bindparam("limit", limit))
        return query

    def count_runs(self, flt: HistoryFilter | None = None) -> int:
        """How many (run, configuration) lines `list_runs` would give without a limit."""
        flt = flt or HistoryFilter()
        query = self._counting(flt)
        self._remember("count_runs", shape_of(flt, None), query)
        with self._read() as conn:
            return int(conn.execute(query).scalar() or 0)

    def _counting(self, flt: HistoryFilter):
        a = attempts.c
        pairs = select(a.run, a.config).where(*self._attempt_filter(flt)).distinct().subquery("pairs")
        return (
            select(func.count()).select_from(pairs.join(runs, runs.c.id == pairs.c.run)).where(*self._run_filter(flt))
        )

    def compile_listings(self) -> None:
        """Leave the plain `wholeloop history` listing's SQL beside a SQLite index now (with and
        without a limit, and its count), so even the first listing after a run needs no SQLAlchemy."""
        flt, path = HistoryFilter(), urls.sqlite_path(self.url)
        for limit in (50, None):
            if path is not None and not listing.known(path, "list_runs", shape_of(flt, limit)):  # built only if missing
                self._remember("list_runs", shape_of(flt, limit), self._listing(flt, limit))
            if path is not None and not listing.known(path, "list_acceptance", shape_of(flt, limit)):
                self._remember("list_acceptance", shape_of(flt, limit), self._accepting(flt, limit))
        if path is not None and not listing.known(path, "count_runs", shape_of(flt, None)):
            self._remember("count_runs", shape_of(flt, None), self._counting(flt))

    def task_aggregates(self, keys: list[tuple[int, str]]) -> dict[tuple[int, str], list[TaskAggregate]]:
        """Per task, for each (run, config): scored trials, resolved ones, their cost and time."""
        if not keys:
            return {}
        t = self._trials(HistoryFilter(), {k for k, _ in keys})
        scored = and_(t.c.complete == 1, t.c.infra == 0)
        query = (
            select(
                t.c.run,
                t.c.config,
                t.c.task_id,
                func.sum(case((scored, 1), else_=0)).label("scored"),
                func.sum(case((scored, t.c.resolved), else_=0)).label("resolved"),
                func.sum(case((scored, t.c.cost), else_=0.0)).label("cost"),
                func.max(case((scored, t.c.cost_unknown), else_=0)).label("unknown"),
                func.sum(case((scored, t.c.time), else_=0.0)).label("time"),
            )
            .group_by(t.c.run, t.c.config, t.c.task_id)
            .order_by(t.c.run, t.c.config, t.c.task_id)
        )
        wanted = set(keys)
        out: dict[tuple[int, str], list[TaskAggregate]] = {k: [] for k in keys}
        with self._read() as conn:
            for x in conn.execute(query):
                if (x.run, x.config) in wanted:
                    out[(x.run, x.config)].append(
                        TaskAggregate(
                            run=x.run,
                            config=x.config,
                            task_id=x.task_id,
                            scored=int(x.scored or 0),
                            resolved=int(x.resolved or 0),
                            cost_usd=None if x.unknown else float(x.cost or 0.0),
                            time_s=float(x.time or 0.0),
                        )
                    )
        for found in out.values():  # in Python: the databases' collations order text differently
            found.sort(key=lambda t: t.task_id)
        return out

    def trial_figures(self, task_ids: Iterable[str]) -> list[TrialFigure]:
        """Every complete trial of these tasks in the index (current rows; not an infrastructure
        error; regrades left out, their runs are there already): configuration, agent, model, cost,
        time and tokens, summed over the trial's attempts. What `harness.sweep.estimate` reads."""
        ids = sorted(set(task_ids))
        if not ids:
            return []
        a = attempts.c
        final = and_(a.final, a.outcome != Outcome.infra_error.value)
        query = (
            select(
                a.config,
                a.task_id,
                func.max(a.agent).label("agent"),
                func.max(a.model).label("model"),
                func.sum(a.cost_usd).label("cost"),
                func.max(case((a.cost_usd.is_(None), 1), else_=0)).label("unknown"),
                func.sum(a.total_s).label("time"),
                func.sum(a.input_tokens).label("input"),
                func.sum(a.output_tokens).label("output"),
                func.max(case((final, 1), else_=0)).label("complete"),
            )
            .join(runs, runs.c.id == a.run)
            .where(a.current, a.task_id.in_(ids), runs.c.regraded_from.is_(None))
            .group_by(a.run, a.config, a.task_id, a.repeat)
        )
        with self._read() as conn:
            found = conn.execute(query).all()
        return [
            TrialFigure(
                config=x.config,
                agent=x.agent,
                model=x.model,
                task_id=x.task_id,
                cost_usd=None if x.unknown else float(x.cost or 0.0),
                time_s=float(x.time or 0.0),
                input_tokens=int(x.input or 0),
                output_tokens=int(x.output or 0),
            )
            for x in found
            if x.complete
        ]

    def rows_of(self, key: int, config: str) -> list[ResultRow]:
        """The current rows of one configuration of one run, as ResultRows (what the gate reads when
        the run folder itself is on another machine). Per-test results are not in the index."""
        from ..records import ResultRow

        a = attempts.c
        query = (
            select(attempts, runs.c.run_id)
            .join(runs, runs.c.id == a.run)
            .where(a.run == key, a.config == config, a.current)
            .order_by(a.seq)
        )
        with self._read() as conn:
            found = conn.execute(query).mappings().all()
        return [
            ResultRow(
                run_id=x["run_id"],
                task_id=x["task_id"],
                task_hash=x["task_hash"],
                config=x["config"],
                agent=x["agent"],
                model=x["model"],
                repeat=x["repeat"],
                attempt=x["attempt"],
                final=x["final"],
                outcome=x["outcome"],
                resolved=x["resolved"],
                stop_reason=x["stop_reason"],
                steps=x["steps"],
                cost_usd=x["cost_usd"],
                usage={"input_tokens": x["input_tokens"], "output_tokens": x["output_tokens"]},
                phases={"total_s": x["total_s"], "agent_s": x["agent_s"]},
                dir=x["dir"],
                transcript_path=x["transcript_path"],
                started_at=x["started_at"],
                finished_at=x["finished_at"],
                tampering=x["tampering"],
                grader_version=x["grader_version"],
                acceptance=None if x["acceptance"] is None else json.loads(x["acceptance"]),
            )
            for x in found
        ]

    # ------------------------------------------------------------------ human verdicts (issue 25)

    def store_reviews(self, key: int, found: dict[tuple[str, str, int, int], str | None]) -> None:
        """The verdicts that count (JSON, `reviews_json`) of current rows of the run, replacing
        what was kept (`wholeloop review` tells the index after each verdict)."""
        self._store_per_attempt(key, found, {"reviews": bindparam("b_text")}, "human verdicts")

    def stored_reviews(self, key: int) -> dict[tuple[str, str, int, int], dict]:
        """(task, config, repeat, attempt) -> reviewer -> {verdict, reason, at}, of the current rows
        of the run that have verdicts."""
        a = attempts.c
        query = select(a.task_id, a.config, a.repeat, a.attempt, a.reviews).where(
            a.run == key, a.current, a.reviews.is_not(None)
        )
        with self._read() as conn:
            return {(t, c, r, n): json.loads(text) for t, c, r, n, text in conn.execute(query)}

    # ------------------------------------------------------------------ failure causes (issue 26)

    def run_key(self, path: Path | str) -> int | None:
        """The key of the run indexed from this folder (the newest, if several), or None."""
        resolved = str(Path(path).resolve())
        with self._read() as conn:
            return conn.execute(select(func.max(runs.c.id)).where(runs.c.path == resolved)).scalar()

    def stored_causes(self, key: int, version: int) -> dict[tuple[str, str, int, int], str]:
        """(task, config, repeat, attempt) -> the causes (JSON) of each current row of the run whose
        causes were found by rules of this version; rows with none yet, or another version's, are left out."""
        a = attempts.c
        query = select(a.task_id, a.config, a.repeat, a.attempt, a.causes).where(
            a.run == key, a.current, a.causes_version == version, a.causes.is_not(None)
        )
        with self._read() as conn:
            return {(t, c, r, n): found for t, c, r, n, found in conn.execute(query)}

    def store_causes(self, key: int, found: dict[tuple[str, str, int, int], str], version: int) -> None:
        """Keep the causes (JSON) of current rows of the run, found by rules of this version."""
        self._store_per_attempt(
            key, found, {"causes": bindparam("b_text"), "causes_version": version}, "failure causes"
        )

    def _store_per_attempt(
        self, key: int, found: Mapping[tuple[str, str, int, int], str | None], values: dict, what: str
    ) -> None:
        """One UPDATE of the run's current rows, per (task, config, repeat, attempt) of `found`,
        setting `values` (bindparam("b_text") is that attempt's text)."""
        if not found:
            return
        a = attempts.c
        statement = (
            update(attempts)
            .where(
                a.run == key,
                a.current,
                a.task_id == bindparam("b_task"),
                a.config == bindparam("b_config"),
                a.repeat == bindparam("b_repeat"),
                a.attempt == bindparam("b_attempt"),
            )
            .values(**values)
        )
        params = [
            {"b_task": t, "b_config": c, "b_repeat": r, "b_attempt": n, "b_text": text}
            for (t, c, r, n), text in found.items()
        ]
        try:
            with self._write_lock, self._write() as conn:
                conn.execute(statement, params)
        except SQLAlchemyError as exc:
            raise self.error(exc, f"cannot store {what}") from exc

    def row_count(self) -> int:
        with self._read() as conn:
            return int(conn.execute(select(func.count()).select_from(attempts)).scalar() or 0)


@dataclass
class LiveRun:
    """Where the index stands on one run folder: its key, the next row's position, and the
    highest attempt of each unit's current try (the latest-row rule, kept in memory)."""

    index: HistoryIndex
    folder: RunFolder
    key: int
    uid: str
    seq: int = 0
    has_manifest: bool = False
    units: dict[tuple[str, str, int], int] = field(default_factory=dict)
    infra_final: set[tuple[str, str, int]] = field(default_factory=set)  # units whose current try ended infra_error

    def add(self, row: ResultRow) -> None:
        if not self.has_manifest and self.folder.manifest_path.exists():
            self.index.refresh_run(self)  # the run's manifest is written after the index was attached
            self.has_manifest = True
        self.index.add_row(self, row)


# ---------------------------------------------------------------------- engines


def _configure_sqlite(dbapi_connection) -> None:
    # The driver's own transaction handling off: BEGIN is ours. WAL lets readers and one writer
    # work at once; NORMAL durability is enough for a cache that can be rebuilt.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON", "busy_timeout=30000"):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


class _SqliteWriter:
    """`with writer as w: w.execute(statement, params)`: one write transaction (BEGIN IMMEDIATE, as
    every writer of the index takes it, when it has more than one statement) on a sqlite3
    connection of its own, each SQLAlchemy statement compiled once for the dialect, its values put
    through SQLAlchemy's bind processors, run with its parameters in order."""

    # (statement, parameter names) -> (SQL, each position's parameter name or constant): the statements
    # are module constants, so they are compiled once per process, as SQLAlchemy's own cache would
    # (and its bind processor, or None)
    compiled: dict[tuple, tuple[str, list[tuple[str | None, object, Callable | None]]]] = {}
    _compiling = threading.Lock()
    # in a `with`: the first statement, held until a second one opens a transaction; whether one is open
    waiting: tuple[str, list] | None
    open: bool

    def __init__(self, path: Path, dialect) -> None:
        self.conn = sqlite3.connect(str(path), timeout=30, check_same_thread=False)  # used under the index's lock
        _configure_sqlite(self.conn)
        self.dialect = dialect

    def _compiled(
        self, statement, names: tuple[str, ...]
    ) -> tuple[str, list[tuple[str | None, object, Callable | None]]]:
        key = (id(statement), names)
        with self._compiling:
            if key not in self.compiled:
                done = statement.compile(dialect=self.dialect, column_keys=list(names))
                slots = []
                for name in done.positiontup or []:
                    bind = done.binds[name]
                    process = bind.type.dialect_impl(self.dialect).bind_processor(
                        self.dialect
                    )  # e.g. its DateTime as text
                    slots.append((name if name in names else None, bind.effective_value, process))
                self.compiled[key] = (done.string, slots)
            return self.compiled[key]

    def execute(self, statement, params: dict | list[dict]) -> None:
        for one in params if isinstance(params, list) else [params]:
            sql, slots = self._compiled(statement, tuple(sorted(one)))
            values = [one[name] if name is not None else constant for name, constant, _ in slots]
            self._run(sql, [p(v) if p and v is not None else v for v, (_, _, p) in zip(values, slots)])

    def _run(self, sql: str, values: list) -> None:
        # A transaction of one statement needs no BEGIN / COMMIT of its own (SQLite makes each statement
        # one): the first statement waits, and only a second one opens the transaction around both.
        if self.waiting is None and not self.open:
            self.waiting = (sql, values)
            return
        if not self.open:
            self.conn.execute("BEGIN IMMEDIATE")
            self.open = True
            if self.waiting is not None:  # (always: not open, so the first statement waits)
                self.conn.execute(*self.waiting)
            self.waiting = None
        self.conn.execute(sql, values)

    def __enter__(self) -> _SqliteWriter:
        self.waiting, self.open = None, False
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if self.open:
            self.conn.execute("COMMIT" if kind is None else "ROLLBACK")
        elif self.waiting is not None and kind is None:
            self.conn.execute(*self.waiting)  # alone: its own transaction
        self.waiting, self.open = None, False

    def close(self) -> None:
        self.conn.close()


def _engine(url: str) -> Engine:
    if urls.is_sqlite(url):
        engine = create_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine, "connect")
        def _configure(dbapi_connection, _record) -> None:
            # The driver's own transaction handling off: BEGIN is ours (below). WAL lets readers and one
            # writer work at once; NORMAL durability is enough for a cache that can be rebuilt.
            _configure_sqlite(dbapi_connection)

        @event.listens_for(engine, "begin")
        def _begin(conn: Connection) -> None:
            # A writing transaction takes the write lock at once, so two processes never deadlock
            # upgrading a read lock; a reading one never blocks a writer.
            conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("wl_write") else "BEGIN")

        return engine
    # PostgreSQL: a short connect timeout (a run must not hang on a host that is gone); commits need
    # not wait for the server's disk (the index is a cache: a crash loses nothing the folders lack).
    return create_engine(
        url,
        pool_pre_ping=True,
        connect_args={"connect_timeout": 5, "options": "-c synchronous_commit=off", "application_name": "wholeloop"},
    )


class _transaction:
    """`with _transaction(engine, write=...) as conn:` one transaction, committed on success. With
    `index`, a database error becomes its HistoryError (reads: what a listing says when the
    database fails it; writes say what they were doing themselves)."""

    def __init__(self, engine: Engine, *, write: bool, index: HistoryIndex | None = None) -> None:
        self.engine, self.write, self.index = engine, write, index

    def __enter__(self) -> Connection:
        try:
            self.conn = self.engine.connect().execution_options(wl_write=self.write)
        except SQLAlchemyError as exc:
            if self.index is None:
                raise
            raise self.index.error(exc, "cannot connect") from exc
        try:
            self.trans = self.conn.begin()
        except BaseException:
            self.conn.close()
            raise
        return self.conn

    def __exit__(self, kind, exc, tb) -> None:
        try:
            if kind is None:
                self.trans.commit()
            else:
                self.trans.rollback()
        finally:
            self.conn.close()
        if self.index is not None and isinstance(exc, SQLAlchemyError):
            raise self.index.error(exc, "a query failed") from exc
