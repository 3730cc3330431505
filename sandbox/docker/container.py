"""A running container the agent (or the grader) works in.

Contract (every method says what it raises; all errors are `SandboxError`s):

- `exec(cmd, *, cwd, env, timeout, stdin) -> ExecResult`. A non-zero exit is a result, not an
  error. When the timeout expires, every process the command started is killed (SIGTERM, then
  SIGKILL 0.5 s later) -- including `setsid` daemons and background jobs, found by a marker in
  their environment, by descent from a marked process, or as daemons adopted by PID 1 since the
  command started (`env -i` double forks) -- and a deadline a little longer backs this up. Each of stdout and stderr keeps at most
  `output_bytes` (head and tail, with a visible marker in between); bytes are decoded once, at the
  end, replacing invalid UTF-8. Background jobs a command leaves running keep running (as with
  `docker exec`); the command returns at most ~0.25 s after it exits even if they hold its output.
  Two paths, same contract. When the image has python3, commands go through a small helper
  process inside the container over one attached stream (`sandbox.docker.exec_fast`: about 1 ms per
  command instead of about 55 ms; it times commands out itself). Otherwise, or with
  `fast_exec=False` / `WHOLELOOP_FAST_EXEC=0`, or while the helper is starting or busy with another
  thread's command, a command is one Engine API exec under `timeout -k`. The agent may kill the
  helper: the next command starts a new one; a command during which it died returns 137 with the
  loss said in stderr (never silently) and its processes are killed. A container that stopped
  under a command raises ContainerGone on either path.
- `read_file` / `write_file` work on bytes, so any content (binary, invalid UTF-8, huge lines)
  round-trips exactly: through the helper when it runs, else the Engine's archive API, with the
  archive API's semantics either way (regular files only; a write replaces a symlink, never
  follows it, and creates parents).
- `changes()` is the engine's change list under the workdir (`docker diff`), `read_tree(paths)` reads
  paths out through the archive API, from the container (stopped or not) or, with `image=True`,
  from a container of its image that is created and never started: `sandbox.patch.take_patch`
  builds the patch from those on the host. Nothing runs inside the container for it.
- `stop()` kills everything and leaves the container stopped (taking the patch and grading happen
  while it is); `restart()` starts it again for the next attempt.
- `close()` removes the container (forcefully: no 10 s SIGTERM wait). Use it as a context manager;
  never rely on garbage collection.
- PID 1 is wholeloop's own init (`native/wl-init.c`): a static binary mounted read-only at
  INIT_PATH and made the entrypoint, so it needs nothing from the image and nothing in the
  container can replace it. It reaps orphans, never exits, never runs another program, ignores
  every signal sent from inside (the container survives an agent's `kill -9 -1`) and is not
  dumpable (no ptrace, no /proc/1/mem). A restart (`stop_processes`) starts it alone: no program
  of the image -- which the agent, root in the container, may have replaced -- runs again until
  the harness asks for a command.
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import tarfile
import time
from pathlib import PurePosixPath
from typing import IO, TYPE_CHECKING, Any, ClassVar, cast

from ..base import REPO_DIR, Backend, BuiltImage, EnvSpec, ExecResult, Limits, LogFn, Mount, OutputCap, SandboxStatus
from ..errors import (
    ContainerBroken,
    ContainerGone,
    DiskLimitReached,
    EngineUnavailable,
    ExecError,
    FileOpError,
    PatchError,
    SandboxError,
)
from ..patch import MAX_PATCH_BYTES, Change, TreeEntry  # noqa: F401 (MAX_PATCH_BYTES: re-exported)
from ..snapshot import Snapshot
from . import disk, images
from .disk import DiskQuota, available, etc_mounts
from .engine import client, engine_version, labels, prune_containers, translate
from .exec_api import api_exec, kill_marked
from .exec_fast import FastExec
from .native import binary

INIT_PATH = "/.wholeloop/init"  # where wl-init is mounted (read-only) in every container


class DockerSandbox:
    """One container (a `sandbox.base.Sandbox`); see the module docstring for the contract."""

    def __init__(
        self,
        container,
        limits: Limits,
        workdir: str,
        *,
        fast_exec: bool | None = None,
        image: str | None = None,
        run_id: str = "",
        role: str = "agent",
        quota: DiskQuota | None = None,
        disk_enforcement: str = "none",
    ) -> None:
        self._container = container
        self.limits = limits
        self.workdir = workdir
        self.image, self.run_id = image, run_id
        self._image_tree: str | None = None  # a container of the image, created and never started
        self.role = role
        self._quota = quota
        self.disk_enforcement = disk_enforcement  # "filesystem", "file size only (why)" or "none"
        self._disk_full = False  # DiskLimitReached is raised when this turns True
        self._agent_turn = True  # False from stop_processes to unpause: the harness's own commands never raise it
        self._shell: str | None = None
        self.closed = False
        if fast_exec is None:
            fast_exec = os.environ.get("WHOLELOOP_FAST_EXEC", "1").strip().lower() not in ("0", "false", "no", "off")
        self._fast = FastExec(container.id, self._kill_marked) if fast_exec else None

    @property
    def id(self) -> str:
        return self._container.id

    @property
    def name(self) -> str:
        return self._container.name

    @property
    def exec_path(self) -> str:
        """How commands run now: "helper" once the in-container helper runs, "engine (why)" when
        each command is one Engine API exec, "pending" while the helper starts."""
        if self._fast is None:
            return "engine (fast exec is off)"
        if self._fast.disabled:
            return f"engine ({self._fast.disabled})"
        return "helper" if self._fast.running else "pending"

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
        mounts: tuple[Mount, ...] = (),
        networks: tuple[str, ...] = (),
        fast_exec: bool | None = None,
    ) -> DockerSandbox:
        """Create and start a container that idles until commands are executed in it.

        `mounts` are bind mounts (read-only unless said otherwise); `networks` are engine networks
        the container joins besides its own. `fast_exec` (default: on unless WHOLELOOP_FAST_EXEC=0)
        runs commands through the in-container helper when the image has python3. Raises
        ImageNotFound, EngineUnavailable, or SandboxError for a rejected configuration.
        """
        name = f"wholeloop-{role}-{secrets.token_hex(4)}"
        init = Mount(str(binary("wl-init")), INIT_PATH)  # built once per host, then cached
        mounts = (init, *mounts)
        disk = limits.disk_bytes
        hostname = None
        if disk and not limits.network:  # docker's /etc files live outside the layer: ours, read-only
            hostname = "wholeloop"
            mounts += tuple(Mount(source, target) for target, source in etc_mounts(hostname).items())
        api = client().api
        # The low-level calls: `containers.run` would also inspect the container (one more round
        # trip) only to build an object we can build from the id and name.
        with translate(f"starting a container from {image}"):
            # Networks: the default bridge only with limits.network; else the first network named
            # (an internal one, say) or none at all. The others are joined before the start.
            mode = "bridge" if limits.network else (networks[0] if networks else "none")
            extra = list(networks) if limits.network else list(networks[1:])
            host = api.create_host_config(
                network_mode=mode,
                nano_cpus=int(limits.cpus * 1e9),
                mem_limit=limits.memory,
                memswap_limit=limits.memory,
                pids_limit=limits.pids,
                security_opt=["no-new-privileges:true"],
                # no single file above the disk limit, whatever the filesystem (RLIMIT_FSIZE)
                ulimits=[{"name": "fsize", "soft": disk, "hard": disk}] if disk else None,
                binds={m.source: {"bind": m.target, "mode": "ro" if m.read_only else "rw"} for m in mounts} or None,
            )
            cid = api.create_container(
                image,
                entrypoint=[INIT_PATH],  # no command: the image's CMD is not used with an entrypoint
                hostname=hostname,
                name=name,
                detach=True,
                working_dir=workdir,
                environment=env or {},
                labels=labels(role, run_id),
                stop_signal="SIGKILL",  # PID 1 ignores SIGTERM: a `docker stop` must not wait 10 s
                host_config=host,
            )["Id"]
        quota, enforcement = None, "none"
        try:
            if disk:  # between create and start: the layer exists, nothing is mounted on it yet
                layer, why = available(cid)
                quota = DiskQuota.attach(layer, disk) if layer else None
                enforcement = "filesystem" if quota else f"file size only ({why})"
            with translate(f"starting a container from {image}"):
                for network in extra:
                    api.connect_container_to_network(cid, network)
                api.start(cid)
        except BaseException:
            with contextlib.suppress(Exception):
                api.remove_container(cid, force=True)
            raise
        container = client().containers.prepare_model({"Id": cid, "Name": "/" + name})
        box = cls(
            container,
            limits,
            workdir,
            fast_exec=fast_exec,
            image=image,
            run_id=run_id,
            role=role,
            quota=quota,
            disk_enforcement=enforcement,
        )
        if box._fast is not None:
            box._fast.warm()
        return box

    def close(self) -> None:
        """Remove the container; safe to call twice. Raises nothing for a container already gone."""
        if self.closed:
            return
        self.closed = True
        if self._fast is not None:
            self._fast.close()
        if self._image_tree is not None:
            with contextlib.suppress(SandboxError):
                with translate("removing a container"):
                    client().api.remove_container(self._image_tree, force=True, v=True)
        try:
            with translate("removing a container"):
                self._container.remove(force=True, v=True)
        except ContainerGone:
            pass
        except SandboxError as exc:  # a concurrent remove (a prune) is already doing our work
            if "already in progress" not in str(exc):
                raise

    def __enter__(self) -> DockerSandbox:
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
        cap = output_bytes or self.limits.output_bytes
        out, err = OutputCap(cap), OutputCap(cap)
        started = time.monotonic()
        ran = None
        if self._fast is not None:
            ran = self._fast.run(
                argv,
                cwd=cwd or self.workdir,
                env=env or {},
                timeout=timeout,
                stdin=stdin,
                cap=cap,
                marker=marker,
                out=out,
                err=err,
            )
        if ran is not None:  # the helper already killed the marked processes on a timeout
            code, timed_out = ran.code, ran.timed_out
            if ran.note:
                err.add(ran.note.encode())
        else:
            code, timed_out = self._api_exec(argv, cwd, env, timeout, stdin, marker, out, err, started)
        duration = time.monotonic() - started
        if code == 126 and not out.total and not err.total and duration < 1:
            raise ExecError(f"cannot run {argv[0]!r} in the container (permission denied)")
        if code in (124, 137) and duration >= timeout - 0.05:
            timed_out = True
        if timed_out:
            if ran is None:
                self._kill_marked(marker)
            err.add(f"\n[wholeloop: command timed out after {timeout:g}s; its processes were killed]\n".encode())
        full = self._disk_filled()
        if full:
            err.add(f"\n[wholeloop: {full}]\n".encode())
        result = ExecResult(
            returncode=code,
            stdout=out.text(),
            stderr=err.text(),
            duration_s=duration,
            truncated=out.truncated or err.truncated,
            timed_out=timed_out,
            output_bytes=out.total + err.total,
        )
        if full:
            raise self._disk_error(full, result)
        return result

    def _disk_filled(self) -> str | None:
        """Why the disk limit was reached, when it was by what just ran (the agent's container only:
        grading's commands simply fail on a full disk); None otherwise, and after that once."""
        if self._quota is None or self.role != "agent" or not self._agent_turn:
            return None
        full = self._quota.full()
        was, self._disk_full = self._disk_full, full
        if not full or was:
            return None
        return f"the container's disk limit ({self.limits.disk}) is reached: {self._quota.describe()}; the attempt ends"

    def _disk_error(self, why: str, result: ExecResult | None) -> DiskLimitReached:
        used = self._quota.usage()[0] if self._quota is not None else 0
        return DiskLimitReached(why, result=result, used=used, limit=self.limits.disk_bytes or 0)

    def limit_reached(self) -> str | None:
        """ "disk_limit" while the container's disk is full (bytes or files), else None."""
        return "disk_limit" if self._quota is not None and self._quota.full() else None

    def _api_exec(
        self,
        argv: list[str],
        cwd: str | None,
        env: dict[str, str] | None,
        timeout: float,
        stdin: bytes | None,
        marker: str,
        out: OutputCap,
        err: OutputCap,
        started: float,
    ) -> tuple[int, bool]:
        return api_exec(
            self._container.id,
            argv,
            cwd=cwd or self.workdir,
            env=env,
            timeout=timeout,
            stdin=stdin,
            marker=marker,
            out=out,
            err=err,
            started=started,
        )

    def _kill_marked(self, *markers: str) -> None:
        kill_marked(self._container.id, *markers)

    def shell(self) -> str:
        """bash when the image has it (agents expect it), else /bin/sh."""
        if self._shell is None and self._fast is not None and self._fast.shell:
            self._shell = self._fast.shell  # the helper looked when it started
        if self._shell is None:
            probe = self.exec(["/bin/sh", "-c", "command -v bash || echo /bin/sh"], timeout=self.limits.setup_timeout_s)
            self._shell = probe.stdout.strip().splitlines()[-1] if probe.stdout.strip() else "/bin/sh"
        return self._shell

    # ------------------------------------------------------------------ files

    def read_file(self, path: str, *, max_bytes: int = 10_000_000) -> bytes:
        """The bytes of a regular file. Raises FileOpError if missing, not a file, or too large."""
        path = self._abs(path)
        if self._fast is not None and (data := self._fast.read(path, max_bytes)) is not None:
            return data
        try:
            with translate(f"reading {path}"):
                stream, stat = self._container.get_archive(path)
        except ContainerGone as exc:
            raise FileOpError(f"{path}: no such file") from exc
        try:
            if stat.get("mode", 0) & (1 << 31):
                raise FileOpError(f"{path} is a directory")
            if stat.get("size", 0) > max_bytes:
                raise FileOpError(f"{path} is {stat['size']} bytes; the limit is {max_bytes}")
            with translate(f"reading {path}"):
                data = b"".join(stream)
        finally:
            # An unread archive response keeps its connection, and the engine (blocked writing
            # it) then stalls removing the container: closing the generator frees the response.
            stream.close()
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            member = tar.next()
            if member is None or not member.isfile():
                raise FileOpError(f"{path} is not a regular file")
            return cast(IO[bytes], tar.extractfile(member)).read()  # a regular file: never None

    def write_file(self, path: str, data: bytes | str, *, mode: int = 0o644) -> None:
        """Create or replace a file (parents are created). Raises FileOpError."""
        path = self._abs(path)
        payload = data.encode() if isinstance(data, str) else data
        try:
            self._write_file(path, payload, mode)
        except FileOpError:
            if full := self._disk_filled():
                raise self._disk_error(full, None) from None
            raise
        if full := self._disk_filled():
            raise self._disk_error(full, None)

    def _write_file(self, path: str, payload: bytes, mode: int) -> None:
        if self._fast is not None and self._fast.write(path, payload, mode):
            return
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
                made = self.exec(["mkdir", "-p", parent], timeout=self.limits.setup_timeout_s)
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

    # ------------------------------------------------------------------ the tree, from outside

    def changes(self) -> list[Change]:
        """The engine's change list under the workdir, relative to it. Raises ContainerGone; PatchError
        when the engine fails on this container's tree (a path past PATH_MAX: "file name too long")
        while it lists a fresh container of the same image: what the tree holds, not the machine."""
        try:
            with translate("listing the container's changes"):
                found = client().api.diff(self._container.id) or []
        except (ContainerGone, EngineUnavailable):
            raise
        except SandboxError as exc:
            if not self._image_lists():
                raise
            raise PatchError(
                f"the engine cannot list the container's changes ({exc}); it lists a fresh container of "
                "the same image: what the container's tree holds"
            ) from exc
        root = self.workdir.rstrip("/")
        out = []
        for item in found:
            path = item["Path"]
            if path == root or path.startswith(root + "/"):
                out.append(Change(_KINDS.get(item["Kind"], "C"), path[len(root) :].lstrip("/")))
        return out

    def read_tree(self, paths: list[str], *, image: bool = False, max_file_bytes: int = 50_000_000) -> list[TreeEntry]:
        """Files, symlinks and folders at `paths` (relative to the workdir), through the archive API
        of this container or of a never-started container of its image. Raises PatchError for a file
        over `max_file_bytes` (from the archive header, before its bytes are read)."""
        source = self._image_container() if image else self._container.id
        out: list[TreeEntry] = []
        for rel in paths:
            out += _read_archive(source, rel, self._abs(rel) if rel else self.workdir, max_file_bytes)
        return out

    def _image_lists(self) -> bool:
        """Does the engine list the changes of a container of this one's image (created, never started)?"""
        try:
            with translate("listing a fresh container's changes"):
                client().api.diff(self._image_container())
        except SandboxError:
            return False
        return True

    def _image_container(self) -> str:
        if self._image_tree is None:
            if not self.image:
                raise SandboxError("this sandbox does not know the image it started from")
            with translate(f"creating a container of {self.image}"):
                self._image_tree = client().api.create_container(
                    self.image,
                    command=["/bin/true"],
                    labels=labels("image-tree", self.run_id),
                    network_disabled=True,
                    host_config=client().api.create_host_config(network_mode="none"),
                )["Id"]
        return self._image_tree

    # ------------------------------------------------------------------ processes

    def stop(self) -> None:
        """Kill every process and leave the container stopped (files kept): what the agent left
        running (daemons, background jobs, a fork bomb, a loop rewriting files) stops before the
        patch is taken, and nothing runs until `restart`. Done from outside: a full process table leaves no room for a command that
        would do it from inside. A container that already stopped by itself (its memory use got PID 1
        OOM-killed) is left as it is. Raises ContainerGone when the container was removed.

        When it returns, PID 1 (wl-init, which runs nothing) is the only process: no program of the
        image runs again until the next `exec` (the exec helper starts then, not now), so nothing
        the agent planted -- a replaced sleep, sh or python3, an /etc/ld.so.preload -- comes back."""
        self._agent_turn = False
        if self._fast is not None:
            self._fast.close()
        try:
            with translate("stopping the container"):
                self._container.kill()
        except ContainerGone:  # already stopped (the OOM killer took PID 1): nothing to kill, files kept
            if self.status().running:  # status() raises ContainerGone when it was removed
                raise
        with translate("stopping the container"):
            client().api.wait(self._container.id, condition="not-running", timeout=self.limits.stop_timeout_s)

    def restart(self) -> None:
        """Start the stopped container again (its files kept, none of its processes). Raises ContainerGone;
        ContainerBroken when the engine cannot start it while a fresh container of the same image, with
        the same mounts, starts (what was left in its files keeps it from starting: the agent's doing)."""
        try:
            with translate("starting the container again"):
                self._container.start()
        except (ContainerGone, EngineUnavailable):
            raise
        except SandboxError as exc:
            if not self._image_starts():
                raise
            raise ContainerBroken(
                f"the container cannot start again ({exc}); a fresh container of its image with "
                "the same mounts starts: what its files hold keeps it from starting"
            ) from exc
        self._agent_turn = True  # the next attempt
        if self._fast is not None:
            self._fast = FastExec(self._container.id, self._kill_marked)  # started by the next command

    def _image_starts(self) -> bool:
        """Does a fresh container of this one's image, with its bind mounts and working folder, start?"""
        if not self.image:
            return False
        api = client().api
        try:
            with translate("starting a fresh container of the image"):
                self._container.reload()
                binds = (self._container.attrs.get("HostConfig") or {}).get("Binds") or None
                cid = api.create_container(
                    self.image,
                    entrypoint=[INIT_PATH],
                    working_dir=self.workdir,
                    labels=labels("probe", self.run_id),
                    host_config=api.create_host_config(network_mode="none", binds=binds),
                )["Id"]
                try:
                    api.start(cid)
                finally:
                    api.remove_container(cid, force=True, v=True)
        except SandboxError:
            return False
        return True

    def stop_processes(self) -> None:
        """Kill every process in the container and start it again, files kept. Raises ContainerGone."""
        self.stop()
        self.restart()

    def pause(self) -> None:
        """Freeze every process of the container (it keeps its state); raises SandboxError."""
        with translate("pausing a container"):
            client().api.pause(self._container.id)

    def unpause(self) -> None:
        """Let a paused container run again; raises SandboxError."""
        with translate("resuming a container"):
            client().api.unpause(self._container.id)
        self._agent_turn = True  # the next attempt

    def status(self) -> SandboxStatus:
        """The container's state, from the engine's (for OOM and exit diagnostics). Raises
        ContainerGone when it was removed."""
        with translate("inspecting a container"):
            self._container.reload()
            state = dict(self._container.attrs.get("State", {}))
        running = bool(state.get("Running", False))
        return SandboxStatus(
            running=running,
            oom_killed=bool(state.get("OOMKilled", False)),
            exit_code=None if running or state.get("ExitCode") is None else int(state["ExitCode"]),
            state=str(state.get("Status", "")),
            paused=bool(state.get("Paused", False)),
        )


_KINDS = {0: "C", 1: "A", 2: "D"}


class _Chunks(io.RawIOBase):
    """A file over the chunks of an archive response, for tarfile's streaming mode."""

    def __init__(self, chunks) -> None:
        self._chunks, self._left = iter(chunks), b""

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        while not self._left:
            try:
                self._left = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(buf), len(self._left))
        buf[:n], self._left = self._left[:n], self._left[n:]
        return n


def _read_archive(container: str, rel: str, path: str, max_file_bytes: int) -> list[TreeEntry]:
    """The entries of the archive of `path` in a container, named relative to the workdir."""
    try:
        with translate(f"reading {path}"):
            stream, stat = client().api.get_archive(container, path)
    except ContainerGone:
        return []  # no such path (the engine answers 404 for both)
    try:
        if not stat.get("mode", 0) & (1 << 31) and stat.get("size", 0) > max_file_bytes:  # a file: refuse unread
            raise PatchError(
                f"{rel} is {stat['size']} bytes; files larger than {max_file_bytes} bytes cannot be part of a patch"
            )
        prefix = str(PurePosixPath(rel).parent) if rel else ""
        prefix = "" if prefix == "." else prefix
        out: list[TreeEntry] = []
        files: dict[str, TreeEntry] = {}
        with (
            translate(f"reading {path}"),
            tarfile.open(fileobj=io.BufferedReader(_Chunks(stream), 1 << 16), mode="r|") as tar,
        ):
            for member in tar:
                name = member.name.rstrip("/")
                if not rel:  # the workdir itself: its archive is named after it
                    name = name.partition("/")[2]
                full = f"{prefix}/{name}" if prefix and name else (name or prefix)
                if member.isdir():
                    out.append(TreeEntry(full, "dir"))
                elif member.issym():
                    out.append(TreeEntry(full, "symlink", member.linkname.encode("utf-8", "surrogateescape")))
                elif member.isfile():
                    if member.size > max_file_bytes:
                        raise PatchError(
                            f"{full} is {member.size} bytes; files larger than {max_file_bytes} bytes "
                            "cannot be part of a patch"
                        )
                    entry = TreeEntry(
                        full,
                        "file",
                        cast(IO[bytes], tar.extractfile(member)).read(),  # a regular file: never None
                        0o755 if member.mode & 0o111 else 0o644,
                    )
                    files[member.name] = entry
                    out.append(entry)
                elif member.islnk() and member.linkname in files:  # a hard link to a file read before
                    out.append(TreeEntry(full, "file", files[member.linkname].data, files[member.linkname].mode))
        return out
    finally:
        stream.close()


class DockerBackend:
    """Starts `DockerSandbox`es from images built by the Docker engine: a `sandbox.base.Backend`."""

    name: ClassVar[str] = "docker"
    facts_dir: ClassVar[str] = images.FACTS_DIR

    def __init__(self, *, fast_exec: bool | None = None) -> None:
        self.fast_exec = fast_exec

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
    ) -> DockerSandbox:
        return DockerSandbox.start(
            image,
            limits=limits,
            role=role,
            run_id=run_id,
            workdir=workdir,
            env=env,
            mounts=mounts,
            networks=networks,
            fast_exec=self.fast_exec,
        )

    def env_image(self, spec: EnvSpec, log: LogFn | None = None) -> BuiltImage:
        return images.env_image(spec, log=log)

    def deps_image(
        self,
        env: BuiltImage,
        deps: tuple[tuple[str, bytes], ...],
        install: tuple[str, ...],
        network: bool,
        log: LogFn | None = None,
    ) -> BuiltImage:
        return images.deps_image(env, deps, install, network, log)

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
        return images.task_image(env, snapshot, install, network, log=log, setups=setups, deps=deps)

    def existing_task_image(
        self,
        spec: EnvSpec,
        snapshot: Snapshot,
        install: tuple[str, ...],
        network: bool,
        setups: tuple[tuple[str, str], ...] = (),
        deps: tuple[tuple[str, bytes], ...] = (),
    ) -> BuiltImage | None:
        return images.existing_task_image(spec, snapshot, install, network, setups, deps)

    def checks_image(
        self,
        image: str,
        install: tuple[str, ...],
        base_run: tuple[str, ...],
        log: LogFn | None = None,
        tools_dir: str | None = None,
    ) -> BuiltImage:
        return images.checks_image(image, install, base_run, log, tools_dir)

    def image_id(self, tag: str) -> str:
        return images.image_id(tag)

    def export_images(self, tags: list[str]) -> bytes:
        return images.export_images(tags)

    def import_images(self, archive: bytes) -> None:
        images.import_images(archive)

    def helper_binary(self, name: str) -> str:
        return str(binary(name))

    def check_room(self, disk_bytes: int | None, sandboxes: int) -> None:
        disk.check_room(disk_bytes, sandboxes)

    def prune(self) -> list[str]:
        return prune_containers().removed

    def facts(self) -> dict[str, Any]:
        try:
            info = engine_version()
        except Exception as exc:  # a manifest must never fail a run
            return {"error": str(exc)}
        return {"version": info.get("Version"), "api_version": info.get("ApiVersion"), "os": info.get("Os")}


if TYPE_CHECKING:  # mypy checks that DockerBackend keeps the whole Backend protocol
    _KEEPS_THE_CONTRACT: Backend = DockerBackend()
