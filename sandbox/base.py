"""The sandbox contract: what the harness may ask of a place where commands run.

`Sandbox` is the whole surface the harness uses of one running environment (a container); a
`Backend` starts them. The Docker implementation (`sandbox.docker`) is one; the tests' fakes are
others. The patch of a sandbox is taken from outside it (`sandbox.patch.take_patch`, with the host's
git), from its change list and the trees read out of it and of its image. `sandbox.conformance` checks an implementation against this contract: its core part
(commands, files, the patch, errors) applies to every sandbox, its isolation part (network off,
process-tree kills, limits) to real containers only.

Every method says what it raises; everything raised is a `sandbox.errors.SandboxError`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from .patch import Change, TreeEntry

if TYPE_CHECKING:
    from .snapshot import Snapshot

LogFn = Callable[[str], None]
DEFAULT_BASE = "wholeloop/base:bookworm"  # the base image of tasks that name none (and of agent installs)
REPO_DIR = "/repo"  # where a task image holds the repository

DEFAULT_DISK = "2g"  # what agents write with the network off (builds, caches, scratch) fits; 16 workers need 32 GB free
_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_size(text: str | int | None) -> int | None:
    """Bytes of a size as Docker writes them ("50m", "4g", "512k", "1024"); None or 0 for none.
    Raises ValueError for anything else."""
    if text is None or text == 0:
        return None
    value = str(text).strip().lower()
    if value in ("", "0", "none", "off"):
        return None
    number, unit = value.rstrip("bkmgt"), value[len(value.rstrip("bkmgt")) :].removesuffix("b") or ""
    try:
        size = float(number) * _UNITS[unit]
    except (KeyError, ValueError):
        raise ValueError(f"{text!r} is not a size (say 50m, 4g or 0 for none)") from None
    return int(size) or None


@dataclass(frozen=True)
class Limits:
    """Resource limits and waits of one container; every field can be set per task and per run."""

    cpus: float = 2.0
    memory: str = "4g"  # also the memory+swap limit: no swap
    # Bytes (and, in proportion, files) the container may write, anywhere: its whole writable
    # layer is a filesystem of this size (see sandbox/docker/disk.py). None or "0": no limit.
    disk: str | None = DEFAULT_DISK
    pids: int = 1024
    output_bytes: int = 100_000  # kept per stream (stdout, stderr) of one command
    command_timeout_s: float = 300.0  # a command the agent runs
    network: bool = False
    # Waits of the harness's own steps inside a container (not the agent's commands):
    setup_timeout_s: float = 30.0  # short housekeeping commands (mkdir, probing the shell)
    step_timeout_s: float = 120.0  # one grading step: applying a patch, reverting files, a probe
    stop_timeout_s: float = 30.0  # waiting for a killed container to stop before it restarts

    def with_(self, **changes: Any) -> Limits:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    @property
    def disk_bytes(self) -> int | None:
        """The disk limit in bytes; None when there is none."""
        return parse_size(self.disk)


@dataclass(frozen=True)
class EnvSpec:
    """What an environment image is made of (the harness maps task specs onto this)."""

    image: str = DEFAULT_BASE  # base image reference (ignored when dockerfile is set)
    pull: str = "if-missing"  # if-missing | always | never
    dockerfile: str | None = None  # path to a Dockerfile; its folder is the build context
    setup: tuple[str, ...] = ()  # shell commands run once, without the repository
    env: tuple[tuple[str, str], ...] = ()  # environment variables baked into the image
    ca_bundle: str | None = None  # host path of a CA bundle the image should trust
    network: bool = True  # network while running setup and install commands
    python_venv: bool = True  # create /opt/venv and put it first on PATH when python3 exists


@dataclass
class BuiltImage:
    """An image a backend built or found: `tag` names it by a hash of its inputs, `id` is the
    backend's id of its content."""

    tag: str
    id: str
    cached: bool  # True when nothing had to be built
    seconds: float = 0.0
    log_tail: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Mount:
    """A host path made visible inside a container (read-only unless said otherwise)."""

    source: str  # on the host
    target: str  # inside the container
    read_only: bool = True


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
class OutputCap:
    """Keeps the first and last `cap/2` bytes of a stream and counts the rest; decoded once, at
    the end, with a visible marker where bytes were dropped and replacement for invalid UTF-8."""

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


@dataclass(frozen=True)
class SandboxStatus:
    """What a backend says of one environment's state: the same fields for every backend (never an
    engine's raw state), read by grading and by the runner's attribution of failures."""

    running: bool  # commands can run now (False once stopped, exited, or killed)
    oom_killed: bool = False  # the kernel's out-of-memory killer ended it (the memory limit)
    exit_code: int | None = None  # of its main process, once it is not running; None when unknown
    state: str = ""  # the backend's own word for it ("running", "exited", "paused"), for messages
    paused: bool = False


@runtime_checkable
class Sandbox(Protocol):
    """One running environment with a repository at `workdir`."""

    limits: Limits
    workdir: str

    @property
    def id(self) -> str:
        """The engine's id of this environment."""
        ...

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
        """Run `cmd` (a shell string run by `shell()`, or an argv list) and wait for it. A non-zero
        exit is a result, not an error. At the timeout (default `limits.command_timeout_s`) every
        process the command started is killed and `timed_out` is set. Each stream keeps at most
        `output_bytes` (default `limits.output_bytes`), head and tail, with a visible marker.
        Raises ContainerGone when the environment died, ExecError when the command could not be
        started, EngineUnavailable when the engine stopped answering."""
        ...

    def shell(self) -> str:
        """The shell string commands run in: bash when the image has it, else /bin/sh."""
        ...

    def read_file(self, path: str, *, max_bytes: int = 10_000_000) -> bytes:
        """The exact bytes of a regular file (relative paths are under `workdir`). Raises
        FileOpError when it is missing, not a regular file, or larger than `max_bytes`."""
        ...

    def write_file(self, path: str, data: bytes | str, *, mode: int = 0o644) -> None:
        """Create or replace a regular file, parents included; a symlink at `path` is replaced,
        never followed. Raises FileOpError."""
        ...

    def put_archive(self, path: str, tar_bytes: bytes) -> None:
        """Unpack a tar archive into the existing folder `path`. Raises FileOpError."""
        ...

    def changes(self) -> list[Change]:
        """What differs under `workdir` from the tree the environment started with (its image), as
        the engine (not anything inside the environment) lists it: added, changed and deleted paths,
        relative to `workdir`. Works while the environment is stopped. Raises ContainerGone."""
        ...

    def read_tree(self, paths: list[str], *, image: bool = False, max_file_bytes: int = 50_000_000) -> list[TreeEntry]:
        """The files, symlinks and folders at `paths` (relative to `workdir`, or absolute; a folder
        with all it holds; entries named as the paths were given), read from outside: from the environment (works while it is stopped), or with
        `image=True` from the image it started from. A path that does not exist is left out. Raises
        PatchError for a file larger than `max_file_bytes`, before its bytes are read."""
        ...

    def stop(self) -> None:
        """Kill every process and leave the environment stopped, files kept: nothing it ran can act
        until `restart`. `changes`, `read_tree`, `restart` and `close` work while it is stopped.
        An environment that already stopped by itself (OOM) stays stopped. Raises ContainerGone
        when it is gone."""
        ...

    def restart(self) -> None:
        """Start a stopped environment again (no process of before survives; files kept) so commands
        can run in it. Raises ContainerGone."""
        ...

    def stop_processes(self) -> None:
        """Kill every process in the environment, files kept, and make it usable again (`stop`, then
        `restart`): what was left running can change nothing afterwards. Raises ContainerGone."""
        ...

    def pause(self) -> None:
        """Freeze every process (state kept) until `unpause`. Raises SandboxError."""
        ...

    def unpause(self) -> None:
        """Let a paused environment run again. Raises SandboxError."""
        ...

    def status(self) -> SandboxStatus:
        """The environment's state (for exit and OOM diagnostics). Raises ContainerGone when it was
        removed, EngineUnavailable when the engine does not answer."""
        ...

    def limit_reached(self) -> str | None:
        """The limit the environment is at now ("disk_limit": its disk is full, bytes or files),
        or None. `exec` and `write_file` raise DiskLimitReached once, when a limit is reached."""
        ...

    def close(self) -> None:
        """Remove the environment; safe to call twice; raises nothing for one already gone."""
        ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(self, *exc: object) -> None: ...


class Backend(Protocol):
    """Everything a run needs from a place where sandboxes run: the images they start from (built or
    found by a hash of their inputs), the facts folder of those images, and sandboxes started from
    them. The harness's only way to get any of these: grading, the runner, agent installs and
    `tasks check` take a backend (`harness.sandboxes.default_backend()` when none is given).
    `sandbox.conformance.BACKEND` checks an implementation."""

    name: ClassVar[str]  # the registry name ("docker")
    # Inside a sandbox of a task image: where each image setup's output was kept, as <name>.json.
    facts_dir: ClassVar[str]

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
    ) -> Sandbox:
        """A started environment from `image` that idles until commands are executed in it, with
        `mounts` bound and attached to `networks` besides its own (none unless `limits.network`).
        Raises ImageNotFound, EngineUnavailable, or SandboxError for a rejected configuration."""
        ...

    def env_image(self, spec: EnvSpec, log: LogFn | None = None) -> BuiltImage:
        """The environment image of `spec`, built once and reused while its inputs are unchanged.
        Raises ImageBuildError, InputError, EngineUnavailable."""
        ...

    def deps_image(
        self,
        env: BuiltImage,
        deps: tuple[tuple[str, bytes], ...],
        install: tuple[str, ...],
        network: bool,
        log: LogFn | None = None,
    ) -> BuiltImage:
        """`env` + `deps` ((repository path, content) pairs) at REPO_DIR + `install` run on them
        alone: one image shared by every task whose dependency files are the same. Raises
        ImageBuildError, EngineUnavailable."""
        ...

    def task_image(
        self,
        env: BuiltImage,
        snapshot: Snapshot,
        install: tuple[str, ...],
        network: bool,
        log: LogFn | None = None,
        setups: tuple[tuple[str, str], ...] = (),
        deps: tuple[tuple[str, bytes], ...] = (),
    ) -> BuiltImage:
        """`env` + the snapshot at REPO_DIR + `install` commands; `setups` ((name, script) pairs) run
        last, each one's standard output kept as `facts_dir`/<name>.json. `deps` ((repository path,
        content) pairs): `install` runs on these files alone, in an image shared by every task with
        the same files, and the snapshot goes over what it installed. Tagged by a hash of its
        inputs: an unchanged input never rebuilds. Raises ImageBuildError, EngineUnavailable."""
        ...

    def existing_task_image(
        self,
        spec: EnvSpec,
        snapshot: Snapshot,
        install: tuple[str, ...],
        network: bool,
        setups: tuple[tuple[str, str], ...] = (),
        deps: tuple[tuple[str, bytes], ...] = (),
    ) -> BuiltImage | None:
        """The task image `env_image` + `task_image` would give, if it exists now; None when
        anything would have to be built. Never builds."""
        ...

    def checks_image(
        self,
        image: str,
        install: tuple[str, ...],
        base_run: tuple[str, ...],
        log: LogFn | None = None,
        tools_dir: str | None = None,
    ) -> BuiltImage:
        """The checks layer of the task image `image`: `install` run with the network on (the
        repository's own linters and type checkers, in their own folder), then `base_run` with the
        network off (each check on the base tree, its output and caches kept in the layer). Tagged
        by a hash of the task image's id and both steps: built once. With `tools_dir` (the one
        folder `install` fills) the install may be done once for every task image of the same
        environment and the folder copied into each layer. Raises ImageBuildError,
        ImageNotFound, EngineUnavailable."""
        ...

    def image_id(self, tag: str) -> str:
        """The id of an image there is (the content an install's cache key names). Raises
        ImageNotFound."""
        ...

    def export_images(self, tags: list[str]) -> bytes:
        """One archive of these images (as `docker save`), to load into another engine."""
        ...

    def import_images(self, archive: bytes) -> None:
        """Load an archive made by `export_images` (as `docker load`). Raises ImageBuildError."""
        ...

    def helper_binary(self, name: str) -> str:
        """The host path of a static helper program of wholeloop's built for the sandboxes'
        platform (`wl-fwd`, the forwarder an external agent's container reaches its proxy through),
        to mount into a sandbox. Raises SandboxError when it cannot be built."""
        ...

    def check_room(self, disk_bytes: int | None, sandboxes: int) -> None:
        """Refuse (DiskSpaceError) when `sandboxes` at once, each writing up to `disk_bytes`, may not
        fit; nothing to check when the backend cannot tell."""
        ...

    def prune(self) -> list[str]:
        """Remove sandboxes left by processes that are gone (a SIGKILL leaves them); the names
        removed. Raises SandboxError when the backend cannot be asked."""
        ...

    def facts(self) -> dict[str, Any]:
        """What a run's manifest records of the backend (its name, the engine's version...)."""
        ...


def pid_alive(pid: int) -> bool:
    """Is a process with this id running on this host? (One we may not signal counts as alive.)
    How the owner of a leftover (a container, a node's work folder) is judged gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
