"""Bootstrap intervals already computed, kept on disk, so a report of rows seen before needs no numpy.

A percentile bootstrap is a pure function of its inputs (the per-task values, the seed, the number
of resamples, the confidence level) and of the code that computes it. Importing numpy costs more
than the rest of `wholeloop report` together (issue 12: a report in at most 0.5 s), and the same
intervals are asked for again and again: `wholeloop run` prints the report when it ends, then
`report`, `show`, `compare` and CI read the same rows. So each interval is kept under its inputs'
hash (with `CODE`, bumped whenever the computation changes) in `$WHOLELOOP_CACHE/intervals.json`
(default ~/.cache/wholeloop), this module's record: the newest `LIMIT` entries, written once when
the process ends. A lost, broken or unwritable file only makes the next report compute again.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Literal

from ..paths import cache_dir

CODE = "percentile-scipy-v1"  # bump when the bootstrap's result for the same inputs changes
FILE = "intervals.json"
LIMIT = 4096

_lock = threading.Lock()
_path: Path | Literal[True] | None = True  # True: the default file, found on first use; None: no memo
_known: dict[str, list[float]] | None = None
_new: dict[str, list[float]] = {}
_registered = False


def default_path() -> Path:
    return cache_dir() / FILE


def use(path: Path | None) -> None:
    """Keep intervals in this file from now on (None: keep none, compute every time)."""
    global _path, _known
    flush()
    with _lock:
        _path, _known = path, None


def key(*inputs: object) -> str:
    return hashlib.sha256(json.dumps([CODE, *inputs]).encode()).hexdigest()[:40]


def _file() -> Path | None:
    global _path
    if _path is True:
        _path = default_path()
    return _path


def get(k: str) -> tuple[float, float] | None:
    global _known
    with _lock:
        path = _file()
        if path is None:
            return None
        if _known is None:
            _known = _read(path)
        found = _new.get(k) or _known.get(k)
    return (float(found[0]), float(found[1])) if found else None


def put(k: str, low: float, high: float) -> None:
    global _registered
    with _lock:
        if _file() is None:
            return
        if not _registered:
            _registered = True
            atexit.register(flush)
        _new[k] = [low, high]


def flush() -> None:
    """Write the intervals computed since the last flush (merged with what the file holds now)."""
    with _lock:
        path = _file()
        if path is None or not _new:
            _new.clear()
            return
        merged = {**_read(path), **_new}
        kept = dict(list(merged.items())[-LIMIT:])
        _new.clear()
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(kept))
            os.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)


def _read(path: Path) -> dict[str, list[float]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
