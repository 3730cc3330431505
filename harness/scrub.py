"""The one scrubbing boundary: no secret reaches a byte wholeloop writes or prints.

Every writer goes through here: `records.write_atomic` (rows' companions, grade.json, the
manifest, attempt files, reports, the evidence pack), `jsonl.append_line` (results.jsonl),
`RunFolder.log_image`, the transcript writer (before it caps long strings, so a cut never keeps
half a key), the HTML report's compressed payloads, and the console: the command line wraps
stdout and stderr in `ScrubbingStream` before any command runs (errors, progress lines,
tracebacks included).

What is a secret: the value of every environment variable whose name looks secret (KEY, TOKEN,
SECRET, PASSWORD, PASSWD, CREDENTIAL, AUTH; at least 8 characters), read when a write happens, and
any value `register`ed (an API key passed in code). Each is replaced as it is, as JSON escapes
it, in hexadecimal, and in base64 (standard and URL-safe) at every alignment: a key inside a longer base64 text,
such as an HTTP Basic credential a provider echoes, is found by the part of its encoding that
depends on the key alone (at most two characters of the key's encoding stay beside the mark).

A leaf: it imports nothing of wholeloop.
"""

from __future__ import annotations

import base64
import functools
import io
import json
import os
import re
import threading
from typing import Any, overload

REDACTED = "[REDACTED]"
MIN_SECRET = 8  # shorter values (flags, "true") are not secrets worth the false positives
MIN_ENCODED = 12  # a base64 fragment shorter than this could match ordinary text
SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.I)

_registered: set[str] = set()
_lock = threading.Lock()


def register(value: str | None) -> None:
    """Treat `value` as a secret from now on (an API key given in code rather than the environment)."""
    if value and len(value) >= MIN_SECRET:
        with _lock:
            _registered.add(value)


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names look secret, and the registered ones; longest first."""
    env = os.environ if environ is None else environ
    found = {v for k, v in env.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET}
    if environ is None:
        with _lock:
            found |= _registered
    return sorted(found, key=len, reverse=True)


def _base64_fragments(secret: bytes) -> list[str]:
    """For each of the 3 alignments of `secret` in a byte stream, the base64 characters that
    depend on the secret's bytes alone (standard and URL-safe alphabets)."""
    out = []
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + secret).decode()
        start = (8 * shift + 5) // 6  # the first character without a bit of the unknown prefix
        end = (8 * (shift + len(secret))) // 6  # the last one ends inside the secret
        fragment = encoded[start:end]
        if len(fragment) >= MIN_ENCODED:
            out += [fragment, fragment.replace("+", "-").replace("/", "_")]
    return out


@functools.lru_cache(maxsize=64)
def _needles(secrets: tuple[str, ...]) -> tuple[str, ...]:
    found: set[str] = set()
    for secret in secrets:
        found.add(secret)
        found.add(json.dumps(secret)[1:-1])  # as it stands inside a JSON string
        if len(secret) * 2 >= MIN_ENCODED:  # in hexadecimal (a log that dumps bytes)
            found.update((secret.encode().hex(), secret.encode().hex().upper()))
        found.update(_base64_fragments(secret.encode()))
    return tuple(sorted(found, key=len, reverse=True))


def needles(secrets: list[str] | None = None) -> tuple[str, ...]:
    """Every form of the secrets that is replaced (longest first)."""
    return _needles(tuple(secret_values() if secrets is None else secrets))


def scrub_text(text: str, secrets: list[str] | None = None) -> str:
    """`text` with every form of every secret replaced by [REDACTED]."""
    for needle in needles(secrets):
        if needle in text:
            text = text.replace(needle, REDACTED)
    return text


def scrub_bytes(data: bytes, secrets: list[str] | None = None) -> bytes:
    """`data` (any bytes: UTF-8 text, a patch, JSON) with every form of every secret replaced."""
    for needle in needles(secrets):
        raw = needle.encode()
        if raw in data:
            data = data.replace(raw, REDACTED.encode())
    return data


@overload
def scrub(data: str, secrets: list[str] | None = None) -> str: ...
@overload
def scrub(data: bytes, secrets: list[str] | None = None) -> bytes: ...
def scrub(data: str | bytes, secrets: list[str] | None = None) -> str | bytes:
    return scrub_bytes(data, secrets) if isinstance(data, bytes) else scrub_text(data, secrets)


def scrub_value(value: Any, secrets: list[str] | None = None) -> Any:
    """Every string of a JSON-like value (dicts, lists, strings) scrubbed."""
    if isinstance(value, str):
        return scrub_text(value, secrets)
    if isinstance(value, dict):
        return {k: scrub_value(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_value(v, secrets) for v in value]
    return value


class ScrubbingStream(io.TextIOBase):
    """A text stream (stdout, stderr) that scrubs what goes through it. Whole lines are written
    as they end; the rest waits for the next newline or a flush, so a key split across two
    writes of one line is still found."""

    def __init__(self, stream) -> None:
        super().__init__()
        self.stream = stream
        self._pending = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self._pending += text
            cut = self._pending.rfind("\n") + 1
            if cut:
                ready, self._pending = self._pending[:cut], self._pending[cut:]
                self.stream.write(scrub_text(ready))
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                ready, self._pending = self._pending, ""
                self.stream.write(scrub_text(ready))
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]  # the wrapped stream's, read-only (an attribute in typeshed)
        return self.stream.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]  # the wrapped stream's, read-only (an attribute in typeshed)
        return self.stream.errors

    @property
    def buffer(self):
        """Bytes written here skip the line buffer: they are scrubbed as they are."""
        return _ScrubbingBuffer(self)


class _ScrubbingBuffer:
    def __init__(self, text: ScrubbingStream) -> None:
        self.text = text

    def write(self, data: bytes) -> int:
        self.text.flush()
        self.text.stream.buffer.write(scrub_bytes(bytes(data)))
        return len(data)

    def flush(self) -> None:
        self.text.stream.buffer.flush()


def scrub_console() -> None:
    """Route sys.stdout and sys.stderr through the scrubber (once; the command line calls it)."""
    import sys

    if sys.stdout is not None and not isinstance(sys.stdout, ScrubbingStream):
        sys.stdout = ScrubbingStream(sys.stdout)
    if sys.stderr is not None and not isinstance(sys.stderr, ScrubbingStream):
        sys.stderr = ScrubbingStream(sys.stderr)
