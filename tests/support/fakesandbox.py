"""The second sandbox backend, in this one file: sandboxes are host folders, commands host processes.

`LocalSandbox` is a Sandbox stand-in that runs commands on the host in a folder: for tests of logic
that is not Docker's (tools, the agent loop). It keeps the core contract of `sandbox.base.Sandbox`
(commands, files, the change list and trees the patch is taken from, a typed status, errors;
checked by the core conformance suite); its "image" is a copy of the folder taken when it is made.
`LocalBackend` keeps `sandbox.base.Backend` (checked by the backend conformance tier): its images
are host folders, each sandbox a fresh copy of one. It builds no images and isolates nothing, so
the isolation suite never runs against it. Registered with one line
(`SANDBOX_BACKENDS.register("local", LocalBackend)`), it is what a new backend looks like: one file
plus one registry line. Docker's own behaviour is tested against the real engine."""

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
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from sandbox import (
    REPO_DIR,
    BuiltImage,
    ContainerGone,
    EnvSpec,
    ExecError,
    ExecResult,
    FileOpError,
    ImageBuildError,
    ImageNotFound,
    Limits,
    Mount,
    OutputCap,
    PatchError,
    SandboxError,
    SandboxStatus,
    Snapshot,
)
from sandbox.patch import Change, TreeEntry


class LocalSandbox:
    def __init__(self, root: Path, limits: Limits = Limits(), *, on_close: Callable[[], None] | None = None):
        self.root = Path(root)
        self._on_close = on_close  # what goes with it (a backend's copy of its image)
        self.workdir = str(self.root)
        self.limits = limits
        self.commands: list[str] = []
        self._groups: set[int] = set()  # process groups of commands, for stop/pause
        self.closed = self.stopped = False
        # the "image": a copy of the folder as it was when the sandbox was made
        self._image = Path(tempfile.mkdtemp(prefix="wholeloop-fake-image-")) / "tree"
        shutil.copytree(self.root, self._image, symlinks=True)

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
            proc = subprocess.Popen(
                argv,
                cwd=cwd or self.root,
                env={**os.environ, **(env or {})},
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise ExecError(f"cannot run {argv[0]!r}: {exc.strerror}") from exc
        self._groups.add(proc.pid)
        readers = [
            threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True),
            threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True),
        ]
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
        return ExecResult(
            124 if timed_out else code,
            out.text(),
            err.text(),
            time.monotonic() - started,
            truncated=out.truncated or err.truncated,
            timed_out=timed_out,
            output_bytes=out.total + err.total,
        )

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

    # ------------------------------------------------------------------ the tree, from outside

    def changes(self) -> list[Change]:
        """What differs from the copy of the folder taken when the sandbox was made (its "image")."""
        out: list[Change] = []
        _compare(self._image, self.root, "", out)
        return out

    def read_tree(self, paths, *, image=False, max_file_bytes=50_000_000) -> list[TreeEntry]:
        top = self._image if image else self.root
        out: list[TreeEntry] = []
        for rel in paths:
            if rel.startswith("/") and Path(rel).is_relative_to(self.root):
                rel = str(Path(rel).relative_to(self.root))
            if rel.startswith("/") and image:
                continue  # the fake's "image" is its folder only
            path = Path(rel) if rel.startswith("/") else (top / rel if rel else top)
            if not path.is_symlink() and not path.exists():
                continue
            for sub in [path] + (sorted(path.rglob("*")) if path.is_dir() and not path.is_symlink() else []):
                name = str(sub) if rel.startswith("/") else (str(sub.relative_to(top)) if sub != top else "")
                if sub.is_symlink():
                    out.append(TreeEntry(name, "symlink", os.fsencode(os.readlink(sub))))
                elif sub.is_dir():
                    out.append(TreeEntry(name, "dir"))
                elif sub.is_file():
                    if sub.stat().st_size > max_file_bytes:
                        raise PatchError(f"{name} is {sub.stat().st_size} bytes; the limit is {max_file_bytes}")
                    out.append(
                        TreeEntry(name, "file", sub.read_bytes(), 0o755 if sub.stat().st_mode & 0o111 else 0o644)
                    )
        return out

    # ------------------------------------------------------------------ processes

    def stop(self) -> None:
        for group in list(self._groups):
            _killpg(group, signal.SIGKILL)
        self._groups.clear()
        self.stopped = True

    def restart(self) -> None:
        self.stopped = False

    def stop_processes(self) -> None:
        self.stop()
        self.restart()

    def pause(self) -> None:
        for group in self._groups:
            _killpg(group, signal.SIGSTOP)

    def unpause(self) -> None:
        for group in self._groups:
            _killpg(group, signal.SIGCONT)

    def status(self) -> SandboxStatus:
        if self.closed:
            raise ContainerGone(f"{self.id} was closed")
        running = not self.stopped
        return SandboxStatus(
            running=running, exit_code=None if running else 137, state="running" if running else "exited"
        )

    def limit_reached(self) -> str | None:
        return None  # a host folder has no disk limit of its own

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.stop()
            shutil.rmtree(self._image.parent, ignore_errors=True)
            if self._on_close is not None:
                self._on_close()


class LocalBackend:
    """Sandboxes that are fresh copies of a host folder (the "image", named by its path)."""

    name: ClassVar[str] = "local"
    facts_dir: ClassVar[str] = "/nonexistent/wholeloop-facts"  # it builds no task images: no facts, ever

    def start(
        self,
        image: str,
        *,
        limits: Limits = Limits(),
        role: str = "agent",
        run_id: str = "",
        workdir: str = REPO_DIR,
        env: dict[str, str] | None = None,
        mounts: tuple[Mount, ...] = (),
        networks: tuple[str, ...] = (),
    ) -> LocalSandbox:
        source = Path(image)
        if not source.is_absolute() or not source.is_dir():
            raise ImageNotFound(f"image {image} is not present (a local image is a host folder)")
        if mounts or networks:
            raise SandboxError("the local backend binds no mounts and joins no networks")
        home = Path(tempfile.mkdtemp(prefix=f"wholeloop-local-{role}-"))
        root = home / "work"
        shutil.copytree(source, root, symlinks=True)
        return LocalSandbox(root, limits, on_close=lambda: shutil.rmtree(home, ignore_errors=True))

    def env_image(self, spec: EnvSpec, log: Callable[[str], None] | None = None) -> BuiltImage:
        raise ImageBuildError("the local backend builds no images: start it from a host folder")

    def deps_image(
        self,
        env: BuiltImage,
        deps: tuple[tuple[str, bytes], ...],
        install: tuple[str, ...],
        network: bool,
        log: Callable[[str], None] | None = None,
    ) -> BuiltImage:
        raise ImageBuildError("the local backend builds no images: start it from a host folder")

    def task_image(
        self,
        env: BuiltImage,
        snapshot: Snapshot,
        install: tuple[str, ...],
        network: bool,
        log: Callable[[str], None] | None = None,
        setups: tuple[tuple[str, str], ...] = (),
        deps: tuple[tuple[str, bytes], ...] = (),
    ) -> BuiltImage:
        raise ImageBuildError("the local backend builds no images: start it from a host folder")

    def existing_task_image(
        self,
        spec: EnvSpec,
        snapshot: Snapshot,
        install: tuple[str, ...],
        network: bool,
        setups: tuple[tuple[str, str], ...] = (),
        deps: tuple[tuple[str, bytes], ...] = (),
    ) -> BuiltImage | None:
        return None

    def checks_image(
        self,
        image: str,
        install: tuple[str, ...],
        base_run: tuple[str, ...],
        log: Callable[[str], None] | None = None,
        tools_dir: str | None = None,
    ) -> BuiltImage:
        raise ImageBuildError("the local backend builds no images: start it from a host folder")

    def image_id(self, tag: str) -> str:
        path = Path(tag)
        if not path.is_absolute() or not path.is_dir():
            raise ImageNotFound(f"image {tag} is not present (a local image is a host folder)")
        return f"local:{path.resolve()}"

    def export_images(self, tags: list[str]) -> bytes:
        raise SandboxError("the local backend has no images to export")

    def import_images(self, archive: bytes) -> None:
        raise SandboxError("the local backend has no images to import")

    def helper_binary(self, name: str) -> str:
        raise SandboxError(f"the local backend has no helper {name!r}: external agents need a container")

    def check_room(self, disk_bytes: int | None, sandboxes: int) -> None:
        return None  # host folders have no disk limit of their own

    def prune(self) -> list[str]:
        return []  # every sandbox removes its folder when closed

    def facts(self) -> dict[str, Any]:
        return {"backend": self.name}


def _compare(base: Path, now: Path, rel: str, out: list) -> None:
    """Changes from `base` to `now` below `rel`, as an engine lists them: a changed folder for each
    folder with changes below it, added and deleted paths (the top of a deleted folder only)."""
    b, n = base / rel if rel else base, now / rel if rel else now
    names = sorted(
        set(os.listdir(b) if b.is_dir() and not b.is_symlink() else [])
        | set(os.listdir(n) if n.is_dir() and not n.is_symlink() else [])
    )
    for name in names:
        sub = f"{rel}/{name}" if rel else name
        bs, ns = base / sub, now / sub
        was, is_ = bs.is_symlink() or bs.exists(), ns.is_symlink() or ns.exists()
        if was and not is_:
            out.append(Change("D", sub))
        elif is_ and not was:
            out.append(Change("A", sub))
            if ns.is_dir() and not ns.is_symlink():
                for below in sorted(ns.rglob("*")):
                    out.append(Change("A", str(below.relative_to(now))))
        elif ns.is_dir() and not ns.is_symlink() and bs.is_dir() and not bs.is_symlink():
            found: list = []
            _compare(base, now, sub, found)
            if found:
                out.append(Change("C", sub))
                out += found
        elif _differs(bs, ns):
            out.append(Change("C", sub))


def _differs(a: Path, b: Path) -> bool:
    if a.is_symlink() or b.is_symlink():
        return not (a.is_symlink() and b.is_symlink() and os.readlink(a) == os.readlink(b))
    if a.is_dir() != b.is_dir():
        return True
    return a.read_bytes() != b.read_bytes() or (a.stat().st_mode & 0o111) != (b.stat().st_mode & 0o111)


def _pump(stream, cap: OutputCap) -> None:
    for chunk in iter(lambda: stream.read1(65536), b""):
        cap.add(chunk)


def _killpg(group: int, sig: int) -> None:
    try:
        os.killpg(group, sig)
    except (ProcessLookupError, PermissionError):
        pass
