"""Where the history index lives, and how its address is shown.

    (nothing)                     sqlite:///<runs root>/history.sqlite   one file beside the run folders
    WHOLELOOP_HISTORY_URL=...     the same for every command (a team's PostgreSQL, say)
    --history-url URL             this command only

A URL may be `sqlite:///path`, a bare file path, or `postgresql://user:password@host:port/db`
(`postgres://` too; both use psycopg 3). Its password is never printed, logged or written to a
manifest: `shown(url)` is the only form of a URL that leaves this package, and `protect(url)` hands
the password to the scrubbing boundary (harness.scrub) as a secret, for every other path out.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

from .. import scrub as scrubbing
from ..redact import hide_url_passwords

ENV = "WHOLELOOP_HISTORY_URL"
FILE = "history.sqlite"
DEFAULT_ROOT = Path("runs")


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def resolve(explicit: str | None = None, runs_root: Path | str | None = None) -> str:
    """The index to use: --history-url, else $WHOLELOOP_HISTORY_URL, else the SQLite file of the
    runs root (default ./runs)."""
    url = explicit or os.environ.get(ENV, "").strip()
    if not url:
        return sqlite_url(Path(runs_root or DEFAULT_ROOT) / FILE)
    protect(url)
    return normalize(url)


def protect(url: str | None) -> None:
    """Make the URL's password a secret of the scrubbing boundary (harness.scrub): from now on no
    file this process writes and no console line it prints carries it, whatever text it is in (the
    variable's name, WHOLELOOP_HISTORY_URL, does not look secret, so scrub would not know it)."""
    if not url or "://" not in url:
        return
    try:
        password = urlsplit(url).password
    except ValueError:
        return
    if password:
        scrubbing.register(password)
        scrubbing.register(unquote(password))


def normalize(url: str) -> str:
    """A URL SQLAlchemy understands: a bare path is a SQLite file; PostgreSQL goes through psycopg 3."""
    if "://" not in url:
        return sqlite_url(Path(url))
    scheme, rest = url.split("://", 1)
    if scheme in ("postgres", "postgresql"):
        return f"postgresql+psycopg://{rest}"
    return url


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def sqlite_path(url: str) -> Path | None:
    """The file of a sqlite:/// URL (None for an in-memory or non-SQLite database)."""
    if not is_sqlite(url):
        return None
    path = url.split("://", 1)[1].lstrip("/")
    return Path("/" + path) if path and path != ":memory:" else None


def shown(url: str) -> str:
    """The URL as it may be printed: its password replaced by ***."""
    return hide_url_passwords(url)


def scrub(text: str, url: str) -> str:
    """`text` (an error message, say) with the URL's password removed, plain or percent-encoded."""
    text = hide_url_passwords(text)
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    for secret in {s for s in (password, unquote(password) if password else None) if s}:
        text = text.replace(secret, "***")
    return text
