"""The node's side of the Ray executor (see harness.run.executors.ray): one (task, repeat) run by
`UnitRunner.run_unit` in a temporary run folder, the runner rebuilt from the driver's RunSpec as it
was shipped, its inputs kept in this node's cache; its rows and files go back to the driver. Imported on the nodes by Ray; imports ray only when fetching.
"""

from __future__ import annotations

import copy
import io
import json
import os
import shutil
import socket
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox import pid_alive

if TYPE_CHECKING:
    from ..spec import RunSpec

WORKDIR_PREFIX = "wholeloop-ray-"  # + the worker's pid: a unit's temporary run folder on the node
LIVE_EVENT = "transcript"  # a ProgressBox item carrying new transcript lines of a unit's try (see TranscriptStream)


class ProgressBox:
    """A Ray actor holding progress lines from the nodes until the driver drains them."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str, str]] = []

    def push(self, item: tuple[str, str, str]) -> None:
        self.items.append(item)
        if len(self.items) > 1000:  # a driver that stopped looking must not grow this without bound;
            # the oldest progress lines go first, transcript lines (spend) only if 10000 are waiting
            progress = [i for i in self.items if i[0] != LIVE_EVENT][-500:]
            self.items = [i for i in self.items if i[0] == LIVE_EVENT or i in progress][-10000:]

    def drain(self) -> list[tuple[str, str, str]]:
        items, self.items = self.items, []
        return items


def node_info() -> dict:
    from ... import __version__

    return {"node": socket.gethostname(), "version": __version__}


def materialise(desc: dict) -> Path:
    """The shipped item in this node's cache (fetched from the object store only if missing)."""
    import ray

    from sandbox import cache_dir

    root = cache_dir() / "ray-files" / desc["key"]
    if not root.is_dir():
        root.parent.mkdir(parents=True, exist_ok=True)
        data = ray.get(desc["ref"])
        tmp = Path(tempfile.mkdtemp(dir=root.parent, prefix=".tmp-"))
        if desc["kind"] == "file":
            (tmp / desc["name"]).write_bytes(data)
        else:
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later
                    tar.extractall(tmp, filter="data")
                else:
                    tar.extractall(tmp)
        try:
            os.replace(tmp, root)
        except OSError:  # another process on this node got there first; same content
            shutil.rmtree(tmp, ignore_errors=True)
    return root / desc["name"] if desc["kind"] == "file" else root


def rebuild_task(payload: dict, workdir: Path):
    """The task, its file fields pointing at the shipped copies in this node's cache."""
    from ...tasks import Task

    data = copy.deepcopy(payload["task"])
    for field, desc in payload["files"].items():
        if "missing" in desc:
            value = desc["missing"]
        else:
            value = str(materialise(desc) / desc["inner"]) if "inner" in desc else str(materialise(desc))
        *parents, leaf = field.split(".")
        target = data
        for key in parents:
            target = target[key]
        target[leaf] = value
    task = Task.model_validate(data)
    task._spec_path = workdir / Path(payload["spec"]).name
    return task


def rebuild_spec(payload: dict) -> RunSpec:
    """The driver's RunSpec, as it shipped it."""
    from ..spec import RunSpec

    return RunSpec.of(payload["spec"], "the RunSpec shipped to this node")


def rebuild_agent(spec: RunSpec, config_text: str | None, task_payload: dict, task_id: str, workdir: Path):
    """The driver's agent, by `build_agent(spec.agent)`, its config file and recording shipped with it."""
    from ...agents import build_agent

    agent_spec = spec.agent.model_copy(deep=True)
    if config_text is not None:
        config = workdir / "agent-config.yaml"
        config.write_text(config_text)
        agent_spec.config_path = str(config)
    model = agent_spec.model
    if model and model.startswith("replay:"):
        recording = task_payload["recording"]
        if recording is not None and not task_payload["replay_is_dir"]:
            agent_spec.model = "replay:" + str(materialise(recording))
        else:  # a folder holding this task's recording, or none (the agent then says so, as locally)
            folder = workdir / "replay"
            folder.mkdir()
            if recording is not None:
                shutil.copyfile(materialise(recording), folder / f"{task_id}.jsonl")
            agent_spec.model = "replay:" + str(folder)
        # the rows and transcripts name the model as the driver does, not by a node's path
        agent_spec.model_options = {**agent_spec.model_options, "name": model}
    agent = build_agent(agent_spec)
    if model:
        agent.model = model
    return agent


def rebuild_runner(payload: dict, workdir: Path, progress: Callable[[str, str, str], None] | None = None):
    """(the task, a UnitRunner for it in a run folder under `workdir`), from the shipped RunSpec:
    the agent and the options are made from it as the driver made its own."""
    from ...records import RunFolder
    from ..unit import RunOptions, UnitRunner

    spec = rebuild_spec(payload)
    task = rebuild_task(payload["task"], workdir)
    agent = rebuild_agent(spec, payload["config_text"], payload["task"], task.id, workdir)
    options = RunOptions.from_spec(spec, out=workdir / payload["run_id"])
    options.workers, options.label = 1, payload["config"]  # one unit here; named as on the driver
    return task, UnitRunner(agent, options, RunFolder(options.out, create=True), progress=progress)


def run_unit(payload: dict) -> dict:
    """On a node: one (task, repeat) in a temporary run folder; its rows and files come back."""
    from sandbox import SandboxError

    from ... import __version__
    from ...sandboxes import default_backend

    host = socket.gethostname()
    try:
        default_backend().prune()  # containers of units whose worker process died on this node
    except SandboxError:
        pass
    _remove_orphaned_workdirs()
    workdir = Path(tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-"))
    try:
        task, runner = rebuild_runner(payload, workdir, forwarder(payload.get("progress"), host))
        folder = runner.folder
        arrival = receive_images(payload["task"].get("images"))
        path = folder.transcript_path(task.id, runner.label, payload["repeat"])
        stream = TranscriptStream(payload.get("progress"), path, task.id, payload["repeat"])
        with stream:
            rows = runner.run_unit(task, payload["repeat"])
        run_dir = folder.path
        files = {
            str(p.relative_to(run_dir)): p.read_bytes()
            for p in sorted((run_dir / "attempts").rglob("*"))
            if p.is_file()
        }
        log = folder.image_log_path
        images = {**folder.info().images.get(task.id, {}), **arrival}
        return {
            "rows": [row.model_dump(mode="json") for row in rows],
            "files": files,
            "log": log.read_text() if log.exists() else "",
            "images": images,
            "node": host,
            "version": __version__,
            "try": stream.head["try"],  # the try these rows are from (see RayExecutor._settle)
        }
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def receive_images(desc: dict | None) -> dict:
    """The task's images on this node's engine: loaded from the archive the driver shipped when
    the engine lacks any of them (once per node, whichever unit gets there first; one load at a
    time on the node). Says how they
    arrived: "shipped" (loaded here now), "present" (already here), "node" (nothing was shipped:
    the unit builds or finds them itself)."""
    if desc is None:
        return {"arrived": "node"}
    import fcntl

    import ray

    from sandbox import ImageNotFound, cache_dir

    from ...sandboxes import default_backend

    backend = default_backend()

    def missing() -> bool:
        for tag in desc["tags"]:
            try:
                backend.image_id(tag)
            except ImageNotFound:
                return True
        return False

    if not missing():
        return {"arrived": "present", "archive": desc["key"]}
    # one load at a time per node, whatever the archive: task archives share their base layers, and
    # two loads at once would unpack those layers twice into the one engine (and race on them)
    lock = cache_dir() / "ray-files" / "images.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        if not missing():
            return {"arrived": "present", "archive": desc["key"]}
        backend.import_images(ray.get(desc["ref"]))
    return {"arrived": "shipped", "archive": desc["key"], "archive_bytes": desc["size"]}


class TranscriptStream:
    """Sends the unit's transcript lines to the driver as they are written (about twice a second),
    tagged with this try's id, so the spend of calls already made survives a kill of the node or of
    the driver. A new transcript file (the node's own retry moved the last aside, and recorded it)
    starts the driver's live copy afresh."""

    def __init__(self, box, path: Path, task_id: str, repeat: int, every: float = 0.5) -> None:
        self.box, self.path, self.every = box, path, every
        self.head = {"try": uuid.uuid4().hex, "task": task_id, "repeat": repeat}
        self.inode: int | None = None
        self.offset = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="wholeloop-transcript-stream", daemon=True)

    def __enter__(self) -> TranscriptStream:
        if self.box is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()

    def _loop(self) -> None:
        while not self.stop.wait(self.every):
            try:
                self.flush()
            except Exception:  # never fails the unit
                pass

    def flush(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                inode = os.fstat(fh.fileno()).st_ino
                fresh = inode != self.inode
                fh.seek(0 if fresh else self.offset)
                data = fh.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1  # whole lines only
        if not end and not fresh:
            return
        lines = data[:end].decode(errors="replace").splitlines()
        self.box.push.remote((LIVE_EVENT, "", json.dumps({**self.head, "fresh": fresh, "lines": lines})))
        self.inode, self.offset = inode, (0 if fresh else self.offset) + end


def _remove_orphaned_workdirs() -> None:
    """Unit folders of worker processes that were killed (a killed driver's units are) go."""
    for path in Path(tempfile.gettempdir()).glob(f"{WORKDIR_PREFIX}*-*"):
        pid = path.name.removeprefix(WORKDIR_PREFIX).split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def forwarder(box, host: str) -> Callable[[str, str, str], None]:
    """A progress function sending the node's progress lines to the driver (never blocking, never
    failing the unit; image-build lines at most one a second per unit)."""
    last: dict[str, float] = {}

    def progress(event: str, unit: str, text: str) -> None:
        if box is None:
            return
        if event == "build":
            now = time.monotonic()
            if now - last.get(unit, 0.0) < 1.0:
                return
            last[unit] = now
        if event == "start":
            text = f"{text} on {host}"
        try:
            box.push.remote((event, unit, text))
        except Exception:
            pass

    return progress
