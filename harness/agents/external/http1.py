"""The little of HTTP/1.1 the metering proxy needs, on raw sockets, without re-encoding bodies.

`http.server` and `http.client` parse every header block with the email package (~0.15 ms each,
under the GIL); with 8 calls at once that alone cost milliseconds. Here a head is split by hand,
a body is read by Content-Length or chunk by chunk, and a streamed reply is forwarded chunk for
chunk as it arrives (the chunks already there together, with one write).
"""

from __future__ import annotations

import io
import re
import socket
import ssl
from collections.abc import Iterator
from typing import cast

MAX_HEAD = 64 * 1024  # bytes of a request or status line plus headers
# A strict header line: a token, a colon, a value without CR, LF or NUL, and CRLF (RFC 9112: no bare
# CR or LF, no whitespace before the colon, no obsolete folding).
_STRICT_LINE = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[^\r\n\x00]*\r\n")
_STRICT_START = re.compile(rb"[^\r\n\x00]*\r\n")
_CHUNK_SIZE = re.compile(rb"([0-9a-fA-F]{1,16})[ \t]*(;[^\r\n]*)?\r?\n")
HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "host",
        "content-length",
        "content-encoding",
        "accept-encoding",
        "x-api-key",
        "authorization",
        "expect",  # the body is sent whole: an interim 100 answer is never asked for
    }
)


class BadMessage(ValueError):
    """The peer sent something that is not HTTP/1.1 as we read it."""


class Head:
    """A request or status line and its header lines, kept as bytes; split into names and values
    once, the first time a header is asked for (one pass over the lines, no pattern per lookup)."""

    __slots__ = ("line", "lines", "_values")

    def __init__(self, line: str, lines: list[bytes]) -> None:
        self.line = line  # the request line or the status line
        self.lines = lines  # the header lines as read (each ends with its line break)
        self._values: dict[str, list[bytes]] | None = None

    @property
    def raw(self) -> bytes:
        """The header lines, without the blank line."""
        return b"".join(self.lines)

    def values(self, name: str) -> list[bytes]:
        """Every value of header `name` (lower case) in order, as bytes up to the line's first CR
        or LF: a line is `name`, optional spaces or tabs, a colon (a line starting with white
        space, a folded continuation, names nothing)."""
        if self._values is None:
            found: dict[str, list[bytes]] = {}
            for line in self.lines:
                key, sep, value = line.partition(b":")
                if sep and key[:1] not in (b" ", b"\t"):
                    end = value.find(b"\r")
                    value = value[:end] if end >= 0 else value.rstrip(b"\n")
                    found.setdefault(key.rstrip(b" \t").lower().decode("latin-1"), []).append(value)
            self._values = found
        return self._values.get(name, [])

    def get(self, name: str, default: str = "") -> str:
        """The first header `name` (lower case), or `default`."""
        found = self.values(name)
        return found[0].decode("latin-1").strip() if found else default

    def forwardable(self) -> list[tuple[str, str]]:
        """Every header but the hop-by-hop ones and those the proxy sets itself."""
        out = []
        for line in self.lines:
            name, sep, value = line.partition(b":")
            key = name.strip().lower().decode("latin-1")
            if sep and key not in HOP:
                out.append((key, value.strip().decode("latin-1")))
        return out

    @property
    def chunked(self) -> bool:
        return "chunked" in self.get("transfer-encoding").lower()


def read_head(rf: io.BufferedReader, *, strict: bool = False) -> Head | None:
    """The next head on the stream, or None at a clean end of stream (the peer closed). Lines are
    only collected here; a header is parsed when it is asked for.

    `strict` (a request from an agent's container): every line ends with CRLF and has no other CR
    or LF, header names are tokens with no space before the colon, no line is folded, and the body's
    length is said once (one Content-Length, or Transfer-Encoding: chunked alone). A head a lax
    upstream could read as two requests is refused (BadMessage) rather than forwarded."""
    readline = rf.readline
    line = readline(MAX_HEAD)
    while line in (b"\r\n", b"\n"):  # line breaks between messages are allowed
        line = readline(MAX_HEAD)
    if not line:
        return None
    if strict and not _STRICT_START.fullmatch(line):
        raise BadMessage("the request line has a bare CR or LF")
    lines, size = [], len(line)
    while True:
        raw = readline(MAX_HEAD)
        size += len(raw)
        if not raw or size > MAX_HEAD:
            raise BadMessage("header block too long or cut off")
        if raw in (b"\r\n", b"\n"):
            if strict and raw != b"\r\n":
                raise BadMessage("the head ends with a bare LF")
            break
        if strict and not _STRICT_LINE.fullmatch(raw):
            raise BadMessage("a header line is malformed (a bare CR or LF, a folded line, or a space before the colon)")
        lines.append(raw)
    head = Head(line.rstrip(b"\r\n").decode("latin-1"), lines)
    if strict:
        _check_framing(head)
    return head


def _check_framing(head: Head) -> None:
    lengths = {v.strip() for v in head.values("content-length")}
    codings = head.values("transfer-encoding")
    if codings and (lengths or [c.strip().lower() for c in codings] != [b"chunked"]):
        raise BadMessage("the body's length is said twice, or with a transfer coding other than chunked")
    if len(lengths) > 1 or any(not v.isdigit() for v in lengths):
        raise BadMessage("Content-Length is given twice or is not a number")


def chunks(rf: io.BufferedReader) -> Iterator[tuple[bytes, bytes]]:
    """(frame, data) of each chunk of a chunked body, the frame exactly as read; the last chunk
    (size 0, trailers) ends the iteration and is not yielded."""
    while True:
        size_line = rf.readline(1024)
        if not size_line.endswith(b"\n"):
            raise BadMessage("chunk size line cut off")
        found = _CHUNK_SIZE.fullmatch(size_line)
        if found is None:
            raise BadMessage("a chunk size is not a hexadecimal number")
        size = int(found.group(1), 16)
        if size == 0:
            while rf.readline(MAX_HEAD) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return
        data = rf.read(size)
        end = rf.readline(4)
        if len(data) != size or end not in (b"\r\n", b"\n"):
            raise BadMessage("chunk cut off")
        yield size_line + data + end, data


class ChunkBatches:
    """The data of a chunked body's chunks in batches: a batch is every chunk whole in what has
    arrived when it is read, so a relay forwards it with one write and waits on the provider only
    when no whole chunk is there (`chunks` reads one chunk at a time). Framing as `chunks` reads
    it (a size in hex with an optional extension, CRLF or LF); the last chunk (size 0) and its
    trailers end the iteration; BadMessage when the framing is broken or the body is cut off.
    `extra` says bytes came after the body (no honest server sends any before the next request):
    the connection is then out of step and must not be used again."""

    def __init__(self, rf: io.BufferedReader) -> None:
        self.rf = rf
        self.extra = False

    def __iter__(self) -> Iterator[list[bytes]]:
        read1 = self.rf.read1
        buf, pos = bytearray(), 0
        while True:
            batch: list[bytes] = []
            while True:  # every chunk whole in `buf`
                eol = buf.find(b"\n", pos, pos + 1024)
                if eol < 0:
                    if len(buf) - pos >= 1024:
                        raise BadMessage("chunk size line cut off")
                    break
                found = _CHUNK_SIZE.fullmatch(buf, pos, eol + 1)
                if found is None:
                    raise BadMessage("a chunk size is not a hexadecimal number")
                size = int(found.group(1), 16)
                if size == 0:
                    if batch:
                        yield batch
                    self._trailers(buf, eol + 1)
                    return
                start, end = eol + 1, eol + 1 + size
                if len(buf) <= end or (buf[end] == 0x0D and len(buf) <= end + 1):
                    break  # the chunk's data or its line break has not all arrived
                if buf[end] == 0x0A:
                    pos = end + 1
                elif buf[end] == 0x0D and buf[end + 1] == 0x0A:
                    pos = end + 2
                else:
                    raise BadMessage("chunk cut off")
                batch.append(bytes(buf[start:end]))
            if batch:
                yield batch
            if pos:
                del buf[:pos]
                pos = 0
            more = read1(1 << 16)
            if not more:
                raise BadMessage("chunk cut off")
            buf += more

    def _trailers(self, buf: bytearray, pos: int) -> None:
        """Read the trailer lines up to the blank line that ends the body (or the end of stream)."""
        while True:
            eol = buf.find(b"\n", pos)
            if eol >= 0:
                line, pos = buf[pos : eol + 1], eol + 1
                if line in (b"\r\n", b"\n"):
                    self.extra = len(buf) > pos
                    return
                continue
            if len(buf) - pos > MAX_HEAD:
                raise BadMessage("a trailer line is too long")
            more = self.rf.read1(1 << 16)
            if not more:
                return
            del buf[:pos]
            pos = 0
            buf += more


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
        # "rb" with a buffer is a BufferedReader (typeshed says IOBase for any buffer size but -1 and 1)
        self.rf = cast(io.BufferedReader, sock.makefile("rb", buffering=1 << 18))

    def close(self) -> None:
        try:
            self.rf.close()
        finally:
            self.sock.close()
