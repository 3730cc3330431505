"""A running container the agent (or the grader) works in.

Contract (every method says what it raises; all errors are `SandboxError`s):

- `exec(cmd, *, cwd, env, timeout, stdin) -> ExecResult`. A non-zero exit is a result, not an
  error. The command runs under `timeout` inside the container; when it expires, every process the
  command started is killed -- including `setsid` daemons and background jobs, found by a marker in
  their environment -- and a host-side deadline a little longer than the timeout backs this up.
  Each of stdout and stderr keeps at most `output_bytes` (head and tail, with a visible marker in
  between); bytes are decoded once, at the end, replacing invalid UTF-8.
- `read_file` / `write_file` work on bytes through the Engine's archive API, so any content
  (binary, invalid UTF-8, huge lines) round-trips exactly.
- `diff(base)` is the binary-safe patch of the work tree against the base commit, new and deleted
  files included, leaving the agent's own index and HEAD untouched.
- `close()` removes the container (forcefully: no 10 s SIGTERM wait). Use it as a context manager;
  never rely on garbage collection.
"""

from __future__ import annotations

import io
import secrets
import shlex
import socket
import tarfile
import time
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

import docker.errors

from .engine import client, labels, translate
from .errors import ContainerGone, ExecError, FileOpError, PatchError, SandboxError

MARKER_ENV = "WHOLELOOP_EXEC"
KILL_GRACE_S = 2  # SIGTERM first, then SIGKILL this much later (inside the container)
HOST_GRACE_S = 5  # host-side deadline beyond the in-container timeout
MAX_PATCH_BYTES = 50_000_000


@dataclass(frozen=True)
class Limits:
    """Resource limits of one container; every field can be set per task and per run."""

    cpus: float = 2.0
    memory: str = "4g"  # also the memory+swap limit: no swap
    pids: int = 1024
    output_bytes: int = 100_000  # kept per stream (stdout, stderr) of one command
    command_timeout_s: float = 300.0
    network: bool = False

    def with_(self, **changes: object) -> Limits:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


@dataclass
class ExecResult:
    returncode: int
    stdout: str
    stderr: str
    duration_s: float
    truncated: bool = False
    timed_out: bool = False
    output_bytes: int = 0  # bytes the command wrote in all, kept or not

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def combined(self) -> str:
        """stdout, then stderr labelled, as a model or a reviewer should read them."""
        parts = [self.stdout.rstrip("\n")] if self.stdout.strip() else []
        if self.stderr.strip():
            parts.append("[stderr]\n" + self.stderr.rstrip("\n"))
        return "\n".join(parts)


@dataclass
class _Capped:
    """Keeps the first and last `cap/2` bytes of a stream and counts the rest."""

    cap: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.cap // 2 - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.cap - self.cap // 2:
                del self.tail[: len(self.tail) - (self.cap - self.cap // 2)]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        if not self.truncated:
            return bytes(self.head + self.tail).decode("utf-8", errors="replace")
        dropped = self.total - len(self.head) - len(self.tail)
        marker = f"\n[... wholeloop: {dropped} bytes of output truncated ...]\n".encode()
        return bytes(self.head + marker + self.tail).decode("utf-8", errors="replace")


class Sandbox:
    """One container; see the module docstring for the contract."""

    def __init__(self, container, limits: Limits, workdir: str) -> None:
        self._container = container
        self.limits = limits
        self.workdir = workdir
        self._shell: str | None = None
        self.closed = False

    @property
    def id(self) -> str:
        return self._container.id

    @property
    def name(self) -> str:
        return self._container.name

    # ------------------------------------------------------------------ life cycle

    @classmethod
    def start(
        cls,
        image: str,
        *,
        limits: Limits = Limits(),
        role: str = "agent",
        run_id: str = "",
        workdir: str = "/repo",
        env: dict[str, str] | None = None,
    ) -> Sandbox:
        """Create and start a container that idles until commands are executed in it.

        Raises ImageNotFound, EngineUnavailable, or SandboxError for a rejected configuration.
        """
        name = f"wholeloop-{role}-{secrets.token_hex(4)}"
        with translate(f"starting a container from {image}"):
            container = client().containers.run(
                image,
                command=["sleep", "infinity"],
                name=name,
                detach=True,
                init=True,  # PID 1 reaps zombies and handles signals
                working_dir=workdir,
                environment=env or {},
                labels=labels(role, run_id),
                network_mode="bridge" if limits.network else "none",
                nano_cpus=int(limits.cpus * 1e9),
                mem_limit=limits.memory,
                memswap_limit=limits.memory,
                pids_limit=limits.pids,
                security_opt=["no-new-privileges:true"],
            )
        return cls(container, limits, workdir)

    def close(self) -> None:
        """Remove the container; safe to call twice. Raises nothing for a container already gone."""
        if self.closed:
            return
        self.closed = True
        try:
            with translate("removing a container"):
                self._container.remove(force=True, v=True)
        except ContainerGone:
            pass

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ commands

    def exec(
        self,
        cmd: str | list[str],
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float | None = None,
        stdin: bytes | None = None,
        output_bytes: int | None = None,
    ) -> ExecResult:
        """Run `cmd` (a shell string, or an argv list) and wait for it, within the timeout.

        Raises ContainerGone when the container died, ExecError when the command could not be
        started, EngineUnavailable when the engine stopped answering.
        """
        timeout = self.limits.command_timeout_s if timeout is None else timeout
        marker = secrets.token_hex(8)
        argv = cmd if isinstance(cmd, list) else [self.shell(), "-c", cmd]
        wrapped = ["timeout", "-k", str(KILL_GRACE_S), str(max(timeout, 0.1)), *argv]
        api = client().api
        cap = output_bytes or self.limits.output_bytes
        out, err = _Capped(cap), _Capped(cap)
        started = time.monotonic()
        timed_out = False
        with translate("running a command"):
            exec_id = api.exec_create(
                self._container.id,
                wrapped,
                stdin=stdin is not None,
                workdir=cwd or self.workdir,
                environment={**(env or {}), MARKER_ENV: marker},
            )["Id"]
            sock = api.exec_start(exec_id, socket=True)
            raw = getattr(sock, "_sock", sock)
            try:
                if stdin is not None:
                    raw.sendall(stdin)
                    raw.shutdown(socket.SHUT_WR)
                timed_out = self._drain(raw, started + timeout + 0.5, out, err, marker)
            finally:
                sock.close()
            info = api.exec_inspect(exec_id)
        duration = time.monotonic() - started
        code = info.get("ExitCode")
        if code is None or info.get("Running"):
            code = 124
            timed_out = True
        if code == 126 and not out.total and not err.total and duration < 1:
            raise ExecError(f"cannot run {argv[0]!r} in the container (permission denied)")
        if code in (124, 137) and duration >= timeout - 0.05:
            timed_out = True
        if timed_out:
            self._kill_marked(marker)
            err.add(f"\n[wholeloop: command timed out after {timeout:g}s; its processes were killed]\n".encode())
        return ExecResult(
            returncode=code,
            stdout=out.text(),
            stderr=err.text(),
            duration_s=duration,
            truncated=out.truncated or err.truncated,
            timed_out=timed_out,
            output_bytes=out.total + err.total,
        )

    def _drain(self, raw: socket.socket, deadline: float, out: _Capped, err: _Capped, marker: str) -> bool:
        """Read the exec stream until it ends; past the deadline kill the command's processes,
        then read what is left for a short grace. True when the deadline was hit.

        The stream is Docker's multiplexed format: an 8-byte header (stream id, 3 zero bytes,
        big-endian length) before each frame. We parse it ourselves because the SDK's reader
        blocks in poll() without a timeout.
        """
        hit = False
        pending = b""  # header bytes read so far
        remaining, target = 0, out
        while True:
            raw.settimeout(max(deadline - time.monotonic(), 0.01))
            try:
                if remaining == 0:
                    chunk = raw.recv(8 - len(pending))
                    if not chunk:
                        return hit
                    pending += chunk
                    if len(pending) == 8:
                        target = err if pending[0] == 2 else out
                        remaining = int.from_bytes(pending[4:8], "big")
                        pending = b""
                    continue
                chunk = raw.recv(min(remaining, 1 << 16))
                if not chunk:
                    return hit
                remaining -= len(chunk)
                target.add(chunk)
                if time.monotonic() > deadline:
                    raise TimeoutError
            except (TimeoutError, socket.timeout):
                if hit:  # still streaming after the kill and the grace: give up on this stream
                    return True
                hit = True
                self._kill_marked(marker)
                deadline = time.monotonic() + HOST_GRACE_S

    def _kill_marked(self, marker: str) -> None:
        """Kill every process whose environment carries this command's marker (setsid included)."""
        script = (
            f"for p in /proc/[0-9]*; do grep -qas '{MARKER_ENV}={marker}' $p/environ 2>/dev/null "
            "&& kill -9 ${p#/proc/} 2>/dev/null; done; true"
        )
        try:
            with translate("killing timed-out processes"):
                exec_id = client().api.exec_create(self._container.id, ["/bin/sh", "-c", script])["Id"]
                client().api.exec_start(exec_id)
        except SandboxError:
            pass  # the container may be gone; close() still removes it

    def shell(self) -> str:
        """bash when the image has it (agents expect it), else /bin/sh."""
        if self._shell is None:
            probe = self.exec(["/bin/sh", "-c", "command -v bash || echo /bin/sh"], timeout=30)
            self._shell = probe.stdout.strip().splitlines()[-1] if probe.stdout.strip() else "/bin/sh"
        return self._shell

    # ------------------------------------------------------------------ files

    def read_file(self, path: str, *, max_bytes: int = 10_000_000) -> bytes:
        """The bytes of a regular file. Raises FileOpError if missing, not a file, or too large."""
        path = self._abs(path)
        try:
            with translate(f"reading {path}"):
                stream, stat = self._container.get_archive(path)
        except ContainerGone as exc:
            raise FileOpError(f"{path}: no such file") from exc
        if stat.get("mode", 0) & (1 << 31):
            raise FileOpError(f"{path} is a directory")
        if stat.get("size", 0) > max_bytes:
            raise FileOpError(f"{path} is {stat['size']} bytes; the limit is {max_bytes}")
        with translate(f"reading {path}"):
            data = b"".join(stream)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            member = tar.next()
            if member is None or not member.isfile():
                raise FileOpError(f"{path} is not a regular file")
            return tar.extractfile(member).read()

    def write_file(self, path: str, data: bytes | str, *, mode: int = 0o644) -> None:
        """Create or replace a file (parents are created). Raises FileOpError."""
        path = self._abs(path)
        payload = data.encode() if isinstance(data, str) else data
        parent = str(PurePosixPath(path).parent)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(PurePosixPath(path).name)
            info.size, info.mode, info.mtime = len(payload), mode, int(time.time())
            tar.addfile(info, io.BytesIO(payload))
        for attempt in range(2):
            try:
                with translate(f"writing {path}"):
                    ok = self._container.put_archive(parent, buf.getvalue())
                if ok:
                    return
            except ContainerGone:
                pass
            except SandboxError as exc:
                raise FileOpError(f"cannot write {path}: {exc}") from exc
            if attempt == 0:
                made = self.exec(["mkdir", "-p", parent], timeout=30)
                if not made.ok:
                    raise FileOpError(f"cannot create {parent}: {made.stderr.strip()}")
        raise FileOpError(f"cannot write {path}")

    def put_archive(self, path: str, tar_bytes: bytes) -> None:
        """Unpack a tar archive at `path` (which must exist). Raises FileOpError."""
        with translate(f"copying files to {path}"):
            if not self._container.put_archive(path, tar_bytes):
                raise FileOpError(f"cannot copy files to {path}")

    def _abs(self, path: str) -> str:
        return path if path.startswith("/") else str(PurePosixPath(self.workdir) / path)

    # ------------------------------------------------------------------ git

    def diff(self, base: str = "HEAD", *, repo: str | None = None) -> str:
        """The patch from `base` to the work tree: binary-safe, new and deleted files included.

        A throw-away index is used, so the agent's own index and commits are not disturbed, and
        external diff drivers and text conversions are off. Raises PatchError when the repository
        is unusable (for example .git was deleted).
        """
        script = (
            "set -e; export GIT_INDEX_FILE=$(mktemp); trap 'rm -f $GIT_INDEX_FILE' EXIT; "
            "git -c core.hooksPath=/dev/null read-tree " + shlex.quote(base) + " && "
            "git -c core.hooksPath=/dev/null add --all . && "
            "git -c core.hooksPath=/dev/null -c diff.noprefix=false -c core.quotePath=true "
            "diff --cached --binary --no-ext-diff --no-textconv --no-color --full-index " + shlex.quote(base)
        )
        result = self.exec(
            ["/bin/sh", "-c", script], cwd=repo or self.workdir, timeout=300, output_bytes=MAX_PATCH_BYTES
        )
        if result.returncode != 0 or result.truncated:
            why = "the patch is larger than the output cap" if result.truncated else result.stderr.strip()[-500:]
            raise PatchError(f"cannot compute the patch: {why}")
        return result.stdout

    def status(self) -> dict:
        """The container's state as the engine reports it (for OOM and exit diagnostics)."""
        with translate("inspecting a container"):
            self._container.reload()
            return dict(self._container.attrs.get("State", {}))

