"""Failure causes kept in the index (docs/failures.md), for `wholeloop failures`.

A look at causes already kept must answer within a second over 1,000 attempts, and importing
SQLAlchemy alone takes a good part of that: on a SQLite index the kept causes are read with the
standard library's sqlite3 (read-only); SQLAlchemy (`HistoryIndex`) is opened only to keep causes
just computed, or for another database. Anything this module cannot answer (no index, a run not in
it, an index from before migration 0004, a database error) is None: the caller computes the causes.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from urllib.parse import quote

from . import url as urls

Key = tuple[str, str, int, int]  # (task, config label, repeat, attempt): a current row of a run

_RUN = "SELECT max(id) FROM runs WHERE path = ?"
_KEPT = (
    'SELECT task_id, config, "repeat", attempt, causes FROM attempts '
    'WHERE run = ? AND "current" AND causes_version = ? AND causes IS NOT NULL'
)


def index_url(run_dir: Path | str, explicit: str | None = None) -> str:
    """A run's index, as `history.live.default_url` says (without importing the database layer)."""
    return urls.resolve(explicit, Path(run_dir).resolve().parent)


def read_sqlite(url: str, run_dir: Path | str, version: int) -> dict[Key, str] | None:
    """The causes (JSON) kept for the run's current rows under this rules version, read with sqlite3;
    None when this cannot be answered here."""
    path = urls.sqlite_path(url)
    if path is None or not path.is_file():
        return None
    try:
        with contextlib.closing(sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)) as conn:
            key = conn.execute(_RUN, (str(Path(run_dir).resolve()),)).fetchone()[0]
            if key is None:
                return None
            return {(t, c, r, n): text for t, c, r, n, text in conn.execute(_KEPT, (key, version))}
    except sqlite3.Error:
        return None
