"""Append-only JSONL files that survive a crash: one whole line per write, torn tails cut.

Both of wholeloop's JSONL records (results.jsonl, transcript.jsonl) are written by appending one
complete line with one `write()`; a process killed mid-write can leave a half line at the end,
which the next writer cuts (so its line starts clean) and every reader skips. A leaf module
(it uses harness.scrub, the one scrubbing boundary, itself a leaf).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from .scrub import scrub_bytes


def drop_torn_tail(path: Path) -> None:
    """Cut a half-written last line (left by a crash) so the next line starts on its own."""
    if not Path(path).exists():
        return
    with open(path, "rb+") as fh:
        data = fh.read()
        if data and not data.endswith(b"\n"):
            fh.truncate(data.rfind(b"\n") + 1)


def append_line(path: Path, line: bytes, *, fsync: bool = True) -> None:
    """Append one whole line (which must end with a newline) with a single write, scrubbed of
    secrets (harness.scrub)."""
    line = scrub_bytes(line)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def complete_lines(path: Path) -> Iterator[str]:
    """The lines of a JSONL file that were written whole; a torn last line is skipped."""
    if not Path(path).exists():
        return
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.endswith("\n"):
                return
            yield line
