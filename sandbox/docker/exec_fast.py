"""Fast exec: a small helper process inside the container, spoken to over one attached stream.

Why: an Engine API exec costs about 55 ms (create, start, inspect, and the engine's own work), which
is most of an agent's tool time. The helper (`in_container.py`, stdlib only) is started once per
container over one `docker exec -i` whose stdin carries its source, so a command then costs a
fork+exec inside the container and one round trip on a socket that is already open.

It keeps the Engine API path's guarantees (see `Sandbox.exec`): the command's processes carry a
marker in their environment, and on timeout the helper kills them, their descendants and any
daemon orphaned since the command started (setsid, `env -i`, double forks included); each
stream keeps head and tail within the cap (the helper caps too, so 2 GB of output never crosses
the socket, and the host caps again, so a misbehaving helper cannot fill host memory); bytes are
decoded once, by the caller.

It also reads and writes files (the edit tool's read-modify-write, grading's patches) with the
archive API's semantics, a few ms instead of ~50 ms per archive call; a file operation is
idempotent, so when the helper cannot, the caller simply uses the archive API.

The helper is disposable. The agent is root in the container and may kill it (`pkill -f wlhelper`,
`kill -9 -1`, the OOM killer). A helper found dead before a command is restarted (at most
MAX_STARTS per container); a command during which it died comes back with returncode 137 and the
loss said in stderr -- never silently -- and that command's processes are killed through the
Engine API. When the image has no python3, the helper cannot start, it keeps dying, or it
breaks the protocol, `run` returns None and the caller uses one Engine API exec per command.
"""

from __future__ import annotations

import json
import secrets
import select
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ContainerGone, FileOpError, SandboxError
from .engine import client, translate

PROTOCOL = 1  # must match in_container.PROTOCOL
MARKER_ENV = "WHOLELOOP_EXEC"
HEADER = struct.Struct(">cI")  # our frames: kind, payload length
START_TIMEOUT_S = 20.0  # python3 starting on a loaded machine; a missing python3 answers at once
MAX_STARTS = 5  # a helper that keeps getting killed is not worth more restarts
# The helper reports at most TERM_GRACE + DRAIN (1.5 s) after the timeout; beyond this much more
# it is hung, and the host kills the command itself.
HOST_GRACE_S = 5.0
FILE_TIMEOUT_S = 60.0  # a file read or write through the helper (10 MB at most, usually tiny)
NO_PYTHON = 97
SOURCE = (Path(__file__).with_name("in_container.py")).read_bytes()

# Run python3 under a link named `wlhelper`, so `pkill python3` or `pkill -f python` (common agent
# moves) leave it alone; isolated (-I: no PYTHONPATH, user site) and without site (-S: faster).
BOOT_SH = """p=$(command -v python3) || exit 97
d=/tmp/.wholeloop
if mkdir -p $d 2>/dev/null && ln -sf "$(readlink -f "$p" 2>/dev/null || echo "$p")" $d/wlhelper 2>/dev/null
then p=$d/wlhelper; fi
unset PWD  # sh exported it; an Engine API exec would not have it
exec "$p" -I -S -c "$1"
"""
# Reads a 10-digit length and then the source from stdin with unbuffered reads (a buffered reader
# could swallow the first request), then runs it. One line, so `ps` shows it on one line.
BOOT_PY = (
    "import os;r=lambda n,b=b'':b if len(b)>=n else r(n,b+(os.read(0,n-len(b)) or os._exit(3)));exec(r(int(r(10))))"
)


def raise_if_stopped(container_id: str, settle_s: float = 0.3) -> None:
    """Raise ContainerGone (or EngineUnavailable) when the container stopped. A command killed
    together with its container ends a moment before the engine marks the container stopped,
    hence the short wait; callers ask only after a command ended by SIGKILL or a lost stream."""
    deadline = time.monotonic() + settle_s
    while True:
        with translate("inspecting a container"):
            state = client().api.inspect_container(container_id).get("State", {})
        if not state.get("Running"):
            raise ContainerGone(
                f"the container stopped while a command ran ({state.get('Status')}, "
                f"exit code {state.get('ExitCode')}, OOM killed: {state.get('OOMKilled')})"
            )
        if time.monotonic() >= deadline:
            return
        time.sleep(0.05)


@dataclass
class Ran:
    """How a command ended through the helper; the caller builds the ExecResult."""

    code: int
    timed_out: bool
    note: str = ""  # appended to stderr: why the result is incomplete


class _Dead(Exception):
    """The helper's stream ended, or it broke the protocol."""


class _Conn:
    """One running helper: its exec socket, and the demultiplexing of Docker's stream format."""

    def __init__(self, exec_id: str, sock, marker: str) -> None:
        self.exec_id, self.sock, self.marker = exec_id, sock, marker
        self.raw: socket.socket = getattr(sock, "_sock", sock)
        self.docker = bytearray()  # bytes as Docker sends them: 8-byte header + payload frames
        self.data = bytearray()  # the helper's stdout, demultiplexed: our frames
        self.log = bytearray()  # the helper's stderr (a traceback, if it crashed), last 4 KB
        self.dead = False
        self.max_frame = 1 << 20  # set per command from its cap: a bigger frame is a broken helper

    def send(self, kind: bytes, payload: bytes) -> None:
        self.raw.sendall(HEADER.pack(kind, len(payload)) + payload)

    def _pump(self, timeout: float) -> bool:
        """Read once (waiting up to `timeout`); False when nothing came in time."""
        self.raw.settimeout(max(timeout, 0.0))
        try:
            chunk = self.raw.recv(1 << 18)
        except (TimeoutError, BlockingIOError):
            return False
        except OSError as exc:
            raise _Dead(f"the helper's stream failed: {exc}") from exc
        if not chunk:
            raise _Dead("the helper's stream ended")
        self.docker += chunk
        while len(self.docker) >= 8:
            size = int.from_bytes(self.docker[4:8], "big")
            if len(self.docker) < 8 + size:
                break
            target = self.log if self.docker[0] == 2 else self.data
            target += self.docker[8 : 8 + size]
            del self.docker[: 8 + size]
        del self.log[:-4096]
        return True

    def frame(self, deadline: float) -> tuple[bytes, bytes] | None:
        """The next frame from the helper, or None at the deadline."""
        while True:
            if len(self.data) >= HEADER.size:
                kind, size = HEADER.unpack_from(self.data)
                if size > self.max_frame:
                    raise _Dead(f"a {size}-byte frame from the helper")
                if len(self.data) >= HEADER.size + size:
                    payload = bytes(self.data[HEADER.size : HEADER.size + size])
                    del self.data[: HEADER.size + size]
                    return kind, payload
            if not self._pump(deadline - time.monotonic()) and time.monotonic() >= deadline:
                return None

    def idle_check(self) -> None:
        """Raise _Dead when the helper died while idle (EOF waiting on the socket)."""
        while select.select([self.raw], [], [], 0)[0]:
            self._pump(0)
        if self.data:
            raise _Dead(f"unexpected output from the helper while idle: {bytes(self.data[:100])!r}")

    def close(self) -> None:
        self.dead = True
        try:
            self.sock.close()  # the helper reads EOF and exits
        except OSError:
            pass


class FastExec:
    """The host side of one container's helper. Thread-safe: one command at a time goes through
    the helper; a caller arriving while it is busy gets None and uses the Engine API path."""

    def __init__(self, container_id: str, kill: Callable[..., None]) -> None:
        self.container_id = container_id
        self._kill = kill  # kill(*markers) through the Engine API, for when the helper cannot
        self.disabled: str | None = None  # why the fast path is off for good, once it is
        self.starts = 0
        self.shell: str | None = None  # bash's path (or /bin/sh), as the helper found it
        self.closed = False
        self._conn: _Conn | None = None
        self._lock = threading.Lock()

    def warm(self) -> None:
        """Start the helper in the background. Commands arriving meanwhile use the Engine API
        (they do not wait), so a container's first command never costs more than before; an agent's
        first command usually comes after a model call, by when the helper is long ready."""
        threading.Thread(target=self._warm, name="wholeloop-helper-start", daemon=True).start()

    def _warm(self) -> None:
        with self._lock:
            try:
                if not self.closed and not self.disabled:
                    self._ready()
            except Exception as exc:  # a thread has no caller to tell: say it where it shows
                self.disabled = f"the helper cannot start: {type(exc).__name__}: {exc}"

    def run(
        self,
        argv: list[str],
        *,
        cwd: str,
        env: dict[str, str],
        timeout: float,
        stdin: bytes | None,
        cap: int,
        marker: str,
        out,
        err,
    ) -> Ran | None:
        """Run one command, filling `out` and `err` (`_Capped`s); None when it was not started."""
        env = {str(k): str(v) for k, v in env.items() if v is not None}  # as the Engine API would
        request = {
            "argv": [str(a) for a in argv],
            "cwd": cwd,
            "env": env,
            "timeout": timeout,
            "cap": cap,
            "marker": marker,
            "stdin": stdin is not None,
        }
        return self._call(request, stdin, lambda conn: self._collect(conn, marker, timeout, cap, out, err))

    def read(self, path: str, max_bytes: int) -> bytes | None:
        """A regular file's bytes; None when the helper cannot (use the archive API: a read is
        idempotent). Raises FileOpError as `Sandbox.read_file` documents."""
        request = {"op": "read", "path": path, "max": max_bytes, "stdin": False}
        got = self._call(request, None, lambda conn: self._file_reply(conn, max_bytes + (1 << 20)))
        if got is None:
            return None
        end, data = got
        why = {
            "missing": f"{path}: no such file",
            "dir": f"{path} is a directory",
            "notfile": f"{path} is not a regular file",
            "toolarge": f"{path} is {end.get('size')} bytes; the limit is {max_bytes}",
        }
        if end.get("code") != 0 or len(data) > max_bytes:  # > max_bytes: it grew while read
            raise FileOpError(why.get(end.get("error"), f"cannot read {path}: {end.get('message', 'too large')}"))
        return bytes(data)

    def write(self, path: str, data: bytes, mode: int) -> bool | None:
        """Create or replace a file, parents included; None when the helper cannot (use the archive
        API: a write is idempotent). Raises FileOpError."""
        request = {"op": "write", "path": path, "mode": mode, "stdin": True}
        got = self._call(request, data, lambda conn: self._file_reply(conn, 1 << 16))
        if got is None:
            return None
        end = got[0]
        if end.get("code") != 0:
            why = "it is a directory" if end.get("error") == "dir" else end.get("message", "")
            raise FileOpError(f"cannot write {path}: {why}")
        return True

    def _call(self, request: dict, payload: bytes | None, collect):
        """Send one request (and its payload) and collect the reply; None when the helper is
        unavailable or busy, or died before the request got through."""
        if self.disabled or self.closed or not self._lock.acquire(blocking=False):
            return None
        try:
            conn = self._ready()
            if conn is None:
                return None
            try:
                conn.send(b"r", json.dumps(request).encode())
                if payload is not None:
                    conn.send(b"i", payload)
            except OSError:  # dead before the request got through: nothing ran
                self._drop(conn)
                return None
            return collect(conn)
        finally:
            self._lock.release()

    def _file_reply(self, conn: _Conn, limit: int) -> tuple[dict, bytearray] | None:
        """(end, data) of a file operation; None when the helper died or hung (a file operation
        is idempotent: the caller redoes it through the archive API)."""
        conn.max_frame, data = limit, bytearray()
        deadline = time.monotonic() + FILE_TIMEOUT_S
        try:
            while (got := conn.frame(deadline)) is not None:
                kind, payload = got
                if kind == b"o":  # past the limit (a file growing while read): kept short, still read
                    data += payload[: max(0, limit - len(data))]
                elif kind == b"x":
                    return json.loads(payload), data
                else:
                    raise _Dead(f"unexpected frame {kind!r} for a file operation")
        except (_Dead, ValueError):
            pass
        self._drop(conn)
        self._kill(conn.marker)  # if it hung rather than died
        return None

    def _collect(self, conn: _Conn, marker: str, timeout: float, cap: int, out, err) -> Ran:
        deadline = time.monotonic() + max(timeout, 0.1) + 1.5 + HOST_GRACE_S
        conn.max_frame = cap + (1 << 16)
        streams = {b"o": out, b"e": err}
        try:
            while True:
                got = conn.frame(deadline)
                if got is None:
                    self._drop(conn)
                    self._kill(marker, conn.marker)
                    return Ran(
                        124,
                        True,
                        note=(
                            f"\n[wholeloop: the exec helper stopped answering {HOST_GRACE_S:g}s after the "
                            "timeout; the command's processes were killed through the engine]\n"
                        ),
                    )
                kind, payload = got
                if kind in streams:
                    streams[kind].add(payload)
                elif kind == b"d" and payload[:1] in streams and len(payload) == 9:
                    streams[payload[:1]].total += int.from_bytes(payload[1:], "big")  # dropped middle
                elif kind == b"x":
                    end = json.loads(payload)
                    return Ran(int(end["code"]), bool(end["timed_out"]))
                elif kind == b"z":
                    self.disabled = f"the helper failed: {payload.decode(errors='replace')[:300]}"
                    raise _Dead(self.disabled)
                else:
                    self.disabled = f"the helper broke the protocol (frame {kind!r})"
                    raise _Dead(self.disabled)
        except (_Dead, ValueError, KeyError) as exc:
            self._drop(conn)
            self._kill(marker, conn.marker)  # also gives a dying container time to be seen stopped
            raise_if_stopped(self.container_id)  # the container (or engine) going is not the helper's death
            return Ran(
                137,
                False,
                note=(
                    "\n[wholeloop: this command's result is incomplete: the in-container exec helper died "
                    f"while it ran ({exc}; killed by the command, `kill -9 -1` or the OOM killer?). Its "
                    "processes were killed; the next command starts a new helper.]\n"
                ),
            )

    def _ready(self) -> _Conn | None:
        if self.closed:
            return None
        conn = self._conn
        if conn is not None and not conn.dead:
            try:
                conn.idle_check()
                return conn
            except _Dead:
                self._drop(conn)
        if self.starts >= MAX_STARTS:
            self.disabled = f"the helper was started {self.starts} times and keeps dying"
            return None
        try:
            self._conn = self._start()
        except SandboxError as exc:
            self.disabled = f"the helper cannot start: {exc}"
            self._conn = None
        if self.closed and self._conn is not None:  # closed while it started
            self._drop(self._conn)
        return self._conn

    def _start(self) -> _Conn:
        """Start a helper; raises SandboxError (caught by _ready) when it cannot."""
        self.starts += 1
        marker = secrets.token_hex(8)  # lets the Engine API path kill a hung helper
        api = client().api
        with translate("starting the exec helper"):
            exec_id = api.exec_create(
                self.container_id,
                ["/bin/sh", "-c", BOOT_SH, "wlhelper", BOOT_PY],
                stdin=True,
                workdir="/",
                environment={MARKER_ENV: marker},
            )["Id"]
            sock = api.exec_start(exec_id, socket=True)
        conn = _Conn(exec_id, sock, marker)
        try:
            conn.raw.sendall(b"%010d" % len(SOURCE) + SOURCE)
            got = conn.frame(time.monotonic() + START_TIMEOUT_S)
            if got is None:
                raise _Dead(f"no greeting within {START_TIMEOUT_S:g}s")
            hello = json.loads(got[1]) if got[0] == b"h" else {}
            if hello.get("protocol") != PROTOCOL:
                raise _Dead(f"unexpected greeting {got!r:.200}")
            self.shell = hello.get("shell") or self.shell
            return conn
        except (_Dead, OSError, ValueError) as exc:
            conn.close()
            why = str(exc)
            with translate("inspecting the exec helper"):
                if api.exec_inspect(exec_id).get("ExitCode") == NO_PYTHON:
                    why = "the image has no python3"
            tail = conn.log.decode(errors="replace").strip()[-300:]
            raise SandboxError(why + (f": {tail}" if tail else "")) from None

    def _drop(self, conn: _Conn) -> None:
        conn.close()
        if self._conn is conn:
            self._conn = None

    @property
    def running(self) -> bool:
        return self._conn is not None and not self._conn.dead

    def close(self) -> None:
        """Stop the helper; never waits (a start or a command in another thread ends by itself
        when the container goes: their API calls fail, or the stream ends)."""
        self.closed = True
        conn = self._conn
        if conn is not None:
            conn.close()
