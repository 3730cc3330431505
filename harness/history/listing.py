"""`wholeloop history` without SQLAlchemy: the listing queries, as SQLAlchemy compiled them, run on a
SQLite index with the standard library's sqlite3.

Importing SQLAlchemy takes longer than the whole listing may (issue 14: at most 0.3 s over 1,000
runs). So the queries stay written once, in SQLAlchemy (`HistoryIndex.list_runs`, `count_runs`);
each time that code runs a query of a shape not seen yet on a SQLite index, it leaves the compiled
SQL beside the index (`history.sqlite.queries.json`, this module's record), and the next listing
of that shape runs it directly. The file is a cache of a cache: it is used only when it was made
by the same query code (a hash of the history package's sources) for the schema revision the
database has; anything else (another shape, PostgreSQL, a stale or broken file, a database
error) returns None and the caller goes the SQLAlchemy way, which says what is wrong.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sqlite3
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

from .types import HistoryFilter, RunSummary, bound_values, shape_of, summary_of, with_acceptance

SUFFIX = ".queries.json"
_SOURCES = ("db.py", "schema.py", "types.py", "listing.py")  # the code that builds, compiles and runs the queries


def sidecar(index: Path) -> Path:
    return index.with_name(index.name + SUFFIX)


@functools.cache  # the sources do not change while a process runs
def code_key() -> str:
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for name in _SOURCES:
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:32]


def _load(index: Path) -> dict:
    try:
        data = json.loads(sidecar(index).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("key") == code_key() else {}


def known(index: Path, name: str, shape: str | None) -> bool:  # (None: a shape never kept)
    return shape in (_load(index).get("statements", {}).get(name) or {})


def remember(
    index: Path, name: str, shape: str, sql: str, order: list[str], constants: dict, columns: list[str], head: str
) -> None:
    """Keep one compiled statement (best effort: a cache; an unwritable folder only keeps it slow)."""
    data = _load(index)
    if data.get("head") != head:
        data = {"key": code_key(), "head": head, "statements": {}}
    data.setdefault("statements", {}).setdefault(name, {})[shape] = {
        "sql": sql,
        "order": order,
        "constants": constants,
        "columns": columns,
    }
    path = sidecar(index)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=1, default=str))
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError):
        tmp.unlink(missing_ok=True)


def sqlite_value(value: object) -> object:
    """A bound value as SQLAlchemy's SQLite dialect stores it (its DateTime: text, microseconds)."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    return value


def list_runs(index: Path | None, flt: HistoryFilter, *, limit: int | None) -> tuple[list[RunSummary], int] | None:
    """(the newest `limit` lines, how many lines match in all) as `HistoryIndex.list_runs` and
    `count_runs` give them, or None when this cannot answer (the caller asks SQLAlchemy)."""
    shape = shape_of(flt, limit)
    if index is None or shape is None or not index.is_file():
        return None
    data = _load(index)
    statements = data.get("statements") or {}
    listing, accepting, counting = (
        (statements.get("list_runs") or {}).get(shape),
        (statements.get("list_acceptance") or {}).get(shape),
        (statements.get("count_runs") or {}).get(shape_of(flt, None)),
    )
    if not listing or not accepting or (limit and not counting):
        return None
    values = {**bound_values(flt), "limit": limit}
    try:
        conn = sqlite3.connect(f"file:{quote(str(index))}?mode=ro", uri=True, timeout=30)
    except sqlite3.Error:
        return None
    try:
        if conn.execute("SELECT version_num FROM alembic_version").fetchall() != [(data.get("head"),)]:
            return None
        found = [summary_of(dict(zip(listing["columns"], row))) for row in _run(conn, listing, values)]
        with_acceptance(found, _run(conn, accepting, values))
        total = len(found)
        if limit and counting and len(found) == limit:  # (a limit has its count: see above)
            total = int(_run(conn, counting, values)[0][0] or 0)
        return found, total
    except (sqlite3.Error, KeyError, IndexError, TypeError, ValueError):
        return None
    finally:
        conn.close()


def _run(conn: sqlite3.Connection, statement: dict, values: dict) -> list[tuple]:
    given = {**statement["constants"], **values}
    return conn.execute(statement["sql"], [sqlite_value(given[name]) for name in statement["order"]]).fetchall()
