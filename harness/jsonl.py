"""Append-only JSONL files that survive a crash: one whole line per write, torn tails cut.

Both of wholeloop's JSONL records (results.jsonl, transcript.jsonl) are written by appending one
complete line with one `write()`; a process killed mid-write can leave a half line at the end,
which the next writer cuts (so its line starts clean) and every reader skips. A leaf module
(it uses harness.scrub, the one scrubbing boundary, itself a leaf).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from .scrub import scrub_bytes

_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(json_text: str) -> str:
    """JSON text that can be written as UTF-8: each lone surrogate (a model's, or a byte that was
    not UTF-8 read with surrogateescape, U+DC80-U+DCFF) as its `\\uXXXX` escape, which JSON
    readers turn back into the same string. The one escape wholeloop's JSON records use."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


def text_bytes(text: str) -> bytes:
    """Text of a plain file (a patch, test output) as bytes: UTF-8, with bytes that were not UTF-8
    (read with surrogateescape: a path or output that is not UTF-8) written back as they were, and
    any other lone surrogate as a backslash escape."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace")


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
