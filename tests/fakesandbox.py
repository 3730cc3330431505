"""A Sandbox stand-in that runs commands on the host in a folder: for tests of logic that is not
Docker's (tools, the agent loop). It keeps the core contract of `sandbox.base.Sandbox` (commands,
files, the patch, errors; checked by the core conformance suite); it isolates nothing, so the
isolation suite never runs against it. Docker's own behaviour is tested against the real engine."""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
import threading
import time
from pathlib import Path

from sandbox import ExecError, ExecResult, FileOpError, Limits, OutputCap, PatchError


class LocalSandbox:
    def __init__(self, root: Path, limits: Limits = Limits()):
        self.root = Path(root)
        self.workdir = str(self.root)
        self.limits = limits
        self.commands: list[str] = []
        self._groups: set[int] = set()  # process groups of commands, for stop/pause
        self.closed = False

    @property
    def id(self) -> str:
        return f"local:{self.root}"

    def __enter__(self) -> LocalSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def shell(self) -> str:
        return shutil.which("bash") or "/bin/sh"

    # ------------------------------------------------------------------ commands

    def exec(self, cmd, *, cwd=None, env=None, timeout=None, stdin=None, output_bytes=None) -> ExecResult:
        self.commands.append(cmd if isinstance(cmd, str) else " ".join(cmd))
        argv = [self.shell(), "-c", cmd] if isinstance(cmd, str) else list(cmd)
        timeout = self.limits.command_timeout_s if timeout is None else timeout
        cap = output_bytes or self.limits.output_bytes
        out, err = OutputCap(cap), OutputCap(cap)
        started = time.monotonic()
        try:
            proc = subprocess.Popen(argv, cwd=cwd or self.root, env={**os.environ, **(env or {})},
                                    stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            raise ExecError(f"cannot run {argv[0]!r}: {exc.strerror}") from exc
        self._groups.add(proc.pid)
        readers = [threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True),
                   threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True)]
        for reader in readers:
            reader.start()
        if stdin is not None:
            try:
                proc.stdin.write(stdin)
                proc.stdin.close()
            except BrokenPipeError:
                pass
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _killpg(proc.pid, signal.SIGKILL)  # the whole process group: the command's tree
            proc.wait()
        for reader in readers:
            reader.join(timeout=0.25)
        self._groups.discard(proc.pid)
        if timed_out:
            err.add(f"\n[wholeloop: command timed out after {timeout:g}s; its processes were killed]\n".encode())
        code = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode  # killed by a signal, as a shell says
        return ExecResult(124 if timed_out else code, out.text(), err.text(), time.monotonic() - started,
                          truncated=out.truncated or err.truncated, timed_out=timed_out,
                          output_bytes=out.total + err.total)

    # ------------------------------------------------------------------ files

    def _path(self, path: str) -> Path:
        return Path(path) if path.startswith("/") else self.root / path

    def read_file(self, path: str, *, max_bytes: int = 10_000_000) -> bytes:
        target = self._path(path)
        if target.is_dir():
            raise FileOpError(f"{target} is a directory")
        if not target.is_file():
            raise FileOpError(f"{target}: no such file")
        if target.stat().st_size > max_bytes:
            raise FileOpError(f"{target} is {target.stat().st_size} bytes; the limit is {max_bytes}")
        try:
            return target.read_bytes()
        except OSError as exc:
            raise FileOpError(f"{path}: {exc.strerror}") from exc

    def write_file(self, path: str, data, *, mode: int = 0o644) -> None:
        target = self._path(path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink():
                target.unlink()  # replaced, never followed
            target.write_bytes(data.encode() if isinstance(data, str) else data)
            target.chmod(mode)
        except OSError as exc:
            raise FileOpError(f"cannot write {path}: {exc.strerror}") from exc

    def put_archive(self, path: str, tar_bytes: bytes) -> None:
        target = self._path(path)
        if not target.is_dir():
            raise FileOpError(f"cannot copy files to {path}: no such folder")
        with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
            tar.extractall(target, filter="data")

    # ------------------------------------------------------------------ git

    def diff(self, base: str = "HEAD", *, repo=None) -> str:
        """The patch from `base` to the work tree, through a throw-away index (the repository's own
        index and HEAD untouched), binary-safe, new and deleted files included."""
        where = str(self._path(repo) if repo else self.root)
        fd, index = tempfile.mkstemp(prefix="wholeloop-index-")
        os.close(fd)
        os.unlink(index)
        env = {**os.environ, "GIT_INDEX_FILE": index}
        git = ["git", "-c", "core.hooksPath=/dev/null"]
        try:
            for step in (["read-tree", base], ["add", "--all", "."],
                         ["diff", "--cached", "--binary", "--no-ext-diff", "--no-textconv", "--no-color",
                          "--full-index", base]):
                proc = subprocess.run([*git, *step], cwd=where, env=env, capture_output=True)
                if proc.returncode != 0:
                    raise PatchError(f"cannot compute the patch: {proc.stderr.decode(errors='replace').strip()[-500:]}")
            return proc.stdout.decode("utf-8", errors="replace")
        finally:
            Path(index).unlink(missing_ok=True)

    # ------------------------------------------------------------------ processes

    def stop_processes(self) -> None:
        for group in list(self._groups):
            _killpg(group, signal.SIGKILL)
        self._groups.clear()

    def pause(self) -> None:
        for group in self._groups:
            _killpg(group, signal.SIGSTOP)

    def unpause(self) -> None:
        for group in self._groups:
            _killpg(group, signal.SIGCONT)

    def status(self) -> dict:
        return {"Running": not self.closed, "Status": "exited" if self.closed else "running"}

    def limit_reached(self) -> str | None:
        return None  # a host folder has no disk limit of its own

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.stop_processes()


def _pump(stream, cap: OutputCap) -> None:
    for chunk in iter(lambda: stream.read1(65536), b""):
        cap.add(chunk)


def _killpg(group: int, sig: int) -> None:
    try:
        os.killpg(group, sig)
    except (ProcessLookupError, PermissionError):
        pass
