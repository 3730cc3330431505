"""A Sandbox stand-in that runs commands on the host in a folder: for tests of logic that is not
Docker's (tools, the agent loop). Docker's own behaviour is tested against the real engine."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from sandbox import ExecResult, FileOpError, Limits


class LocalSandbox:
    def __init__(self, root: Path, limits: Limits = Limits()):
        self.root = Path(root)
        self.workdir = str(self.root)
        self.limits = limits
        self.commands: list[str] = []

    def exec(self, cmd, *, cwd=None, env=None, timeout=None, stdin=None, output_bytes=None) -> ExecResult:
        self.commands.append(cmd if isinstance(cmd, str) else " ".join(cmd))
        started = time.monotonic()
        try:
            proc = subprocess.run(cmd, shell=isinstance(cmd, str), cwd=cwd or self.root, input=stdin,
                                  capture_output=True, timeout=timeout or self.limits.command_timeout_s)
        except subprocess.TimeoutExpired:
            return ExecResult(124, "", "timed out", time.monotonic() - started, timed_out=True)
        return ExecResult(proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"),
                          time.monotonic() - started)

    def _path(self, path: str) -> Path:
        return Path(path) if path.startswith("/") else self.root / path

    def read_file(self, path: str, *, max_bytes: int = 10_000_000) -> bytes:
        try:
            return self._path(path).read_bytes()
        except OSError as exc:
            raise FileOpError(f"{path}: {exc.strerror}") from exc

    def write_file(self, path: str, data, *, mode: int = 0o644) -> None:
        target = self._path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)

    def diff(self, base: str = "HEAD", *, repo=None) -> str:
        return ""
