"""The little of HTTP/1.1 the metering proxy needs, on raw sockets, without re-encoding bodies.

`http.server` and `http.client` parse every header block with the email package (~0.15 ms each,
under the GIL); with 8 calls at once that alone cost milliseconds. Here a head is split by hand,
a body is read by Content-Length or chunk by chunk, and a streamed reply is forwarded chunk for
chunk exactly as the provider framed it.
"""

from __future__ import annotations

import io
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass

MAX_HEAD = 64 * 1024  # bytes of a request or status line plus headers
HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization", "transfer-encoding", "te",
                 "trailer", "upgrade", "host", "content-length", "content-encoding", "accept-encoding",
                 "x-api-key", "authorization"})


class BadMessage(ValueError):
    """The peer sent something that is not HTTP/1.1 as we read it."""


@dataclass
class Head:
    line: str  # the request line or the status line
    headers: list[tuple[str, str]]  # (lower-case name, value), in order

    def get(self, name: str, default: str = "") -> str:
        for key, value in self.headers:
            if key == name:
                return value
        return default

    @property
    def chunked(self) -> bool:
        return "chunked" in self.get("transfer-encoding").lower()


def read_head(rf: io.BufferedReader) -> Head | None:
    """The next head on the stream, or None at a clean end of stream (the peer closed)."""
    line = rf.readline(MAX_HEAD)
    while line in (b"\r\n", b"\n"):  # stray line breaks between messages are allowed
        line = rf.readline(MAX_HEAD)
    if not line:
        return None
    if not line.endswith(b"\n"):
        raise BadMessage("request line too long")
    headers: list[tuple[str, str]] = []
    size = len(line)
    while True:
        raw = rf.readline(MAX_HEAD)
        size += len(raw)
        if not raw or size > MAX_HEAD:
            raise BadMessage("header block too long or cut off")
        if raw in (b"\r\n", b"\n"):
            break
        name, sep, value = raw.decode("latin-1").partition(":")
        if not sep:
            raise BadMessage(f"malformed header line {raw[:60]!r}")
        headers.append((name.strip().lower(), value.strip()))
    return Head(line.decode("latin-1").rstrip("\r\n"), headers)


def chunks(rf: io.BufferedReader) -> Iterator[tuple[bytes, bytes]]:
    """(frame, data) of each chunk of a chunked body, the frame exactly as read; the last chunk
    (size 0, trailers) ends the iteration and is not yielded."""
    while True:
        size_line = rf.readline(1024)
        if not size_line.endswith(b"\n"):
            raise BadMessage("chunk size line cut off")
        size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while rf.readline(MAX_HEAD) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return
        data = rf.read(size)
        end = rf.readline(4)
        if len(data) != size or end not in (b"\r\n", b"\n"):
            raise BadMessage("chunk cut off")
        yield size_line + data + end, data


def read_body(rf: io.BufferedReader, head: Head, limit: int) -> bytes:
    """A whole body, by Content-Length or chunked; raises BadMessage past `limit` bytes."""
    if head.chunked:
        parts, total = [], 0
        for _, data in chunks(rf):
            total += len(data)
            if total > limit:
                raise BadMessage("body too large")
            parts.append(data)
        return b"".join(parts)
    length = int(head.get("content-length") or 0)
    if length > limit:
        raise BadMessage("body too large")
    data = rf.read(length) if length else b""
    if len(data) != length:
        raise BadMessage("body cut off")
    return data


def head_bytes(line: str, headers: list[tuple[str, str]]) -> bytes:
    return (line + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n").encode("latin-1")


class Upstream:
    """One kept-alive connection to the provider (TCP_NODELAY; TLS for https)."""

    def __init__(self, host: str, port: int, https: bool, timeout: float = 900.0) -> None:
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if https:
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        self.sock = sock
        self.rf = sock.makefile("rb", buffering=1 << 16)

    def close(self) -> None:
        try:
            self.rf.close()
        finally:
            self.sock.close()
