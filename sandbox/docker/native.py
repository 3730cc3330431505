"""Small static binaries of ours, built from C sources shipped in `native/`, for use inside
containers (mounted read-only, so neither the task image nor the agent can replace them).

A program is `native/<name>.c`; `binary(name)` compiles it once with the host's C compiler
(`cc -static -O2`, no libc dependency inside the container: the task image may have no libc
at all) into the wholeloop cache, keyed by a hash of the source and the compiler, and returns
the path. Builds of the same key happen once across threads and processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from ..errors import InfraError
from ..snapshot import cache_dir

SOURCES = Path(__file__).with_name("native")
_lock = threading.Lock()


class NativeBuildError(InfraError):
    """A native helper could not be compiled (no C compiler or no static libc on this host)."""

    hint = "Install a C compiler with a static libc (Debian: apt-get install gcc libc6-dev)."


def compiler() -> str:
    found = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not found:
        raise NativeBuildError("no C compiler found (cc or gcc) to build wholeloop's container helpers")
    return found


def binary(name: str) -> Path:
    """The compiled static binary of `native/<name>.c` (built on first use, then cached)."""
    source = SOURCES / f"{name}.c"
    if not source.is_file():
        raise FileNotFoundError(f"no native source {source}")
    cc = compiler()
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
    key = hashlib.sha256(source.read_bytes() + "\0".join([cc, *version]).encode()).hexdigest()[:16]
    target = cache_dir() / "native" / f"{name}-{key}"
    if target.is_file():
        return target
    with _build_lock(target):
        if target.is_file():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{name}-")
        os.close(fd)
        proc = subprocess.run([cc, "-static", "-O2", "-s", "-o", tmp, str(source)], capture_output=True, text=True)
        if proc.returncode != 0:
            Path(tmp).unlink(missing_ok=True)
            raise NativeBuildError(f"compiling {source.name} failed: {(proc.stderr or proc.stdout).strip()[-800:]}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    return target


@contextlib.contextmanager
def _build_lock(target: Path) -> Iterator[None]:
    target.parent.mkdir(parents=True, exist_ok=True)
    with _lock, open(str(target) + ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
