"""Units on a Ray cluster: `wholeloop run SUITE --executor ray [--ray-address HEAD:PORT]`.

Each (task, repeat) runs as one Ray task on some node, against that node's own Docker engine, by
`Runner.run_unit` itself, in a temporary run folder there. The node hands back the unit's rows
and files (transcript, patches, grades, test output, image log); this process writes the files
under the one run folder and the runner appends the rows to results.jsonl, once. What is pending
is decided here, from results.jsonl, exactly as for a local run, so resume works the same way.

A node needs nothing of this machine's disk. What a task spec references is shipped: the
repository (a bundle as it is, a local checkout as `git bundle --all`), the gold and test patch
files, a Dockerfile's folder, a CA bundle file; so are the agent config and, for `replay:` models,
each task's recording. Every item goes into Ray's object store once, keyed by its content, and a
node fetches it only when its cache (`<wholeloop cache>/ray-files/`) lacks it, so its repository
mirrors, snapshots and images stay cached across units and runs. Repositories named by URL are
cloned by the node itself. An item larger than WHOLELOOP_RAY_MAX_SHIP_MB (default 256) stops the
run before anything is submitted.

Trade-offs: a transcript is written as it happens on the node but reaches the run folder when its
unit ends; images are built (once) on every node that runs a task needing them; model API keys
are read from each node's environment (nothing secret is shipped).

What a node runs at once is bounded by Ray's scheduler, from what each node declares at `ray
start` and what each unit reserves (see `reservation`): its CPUs (`--num-cpus`; a unit reserves
WHOLELOOP_RAY_UNIT_CPUS, default 1), its memory budget (`--memory`; a unit reserves its
containers' memory limit, or WHOLELOOP_RAY_UNIT_MEMORY_MB) and, when nodes declare one, a cap on
concurrent containers (`--resources='{"wholeloop_containers": N}'`; a unit reserves the containers
it holds at once). A run that no live node could ever fit stops before anything is submitted.

The node's side lives in harness.ray_node. `ray` is imported by these two modules only, and they
only when `--executor ray` is asked for.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import UserError
from ...records import ResultRow
from ...redact import hide_url_passwords
from . import Unit, UnitResult, Units
from .ray_node import LIVE_EVENT, ProgressBox, node_info, run_unit

if TYPE_CHECKING:
    from ...tasks import Task

DEFAULT_MAX_SHIP_MB = 256
#: the custom Ray resource a node declares to cap its concurrent containers (Docker engines degrade
#: past a few dozen): `ray start --resources='{"wholeloop_containers": 24}'`
CONTAINERS = "wholeloop_containers"
DEFAULT_MAX_IMAGE_MB = 2048  # an image archive larger than this is not shipped: the node builds it


class RayExecutorError(UserError):
    """The Ray executor cannot run this: no ray package, no cluster, an input too large to ship."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


class RayExecutor:
    """Runs units as Ray tasks. Connects on creation (raises RayExecutorError when it cannot).

    `address`: HEAD:PORT of a cluster; None means RAY_ADDRESS or the cluster started on this
    machine with `ray start --head`; "local" starts a private one-machine cluster for this run.
    `max_in_flight`: units submitted at once (None: twice the live nodes' CPUs; Ray's scheduler,
    from what the nodes declare and each unit reserves, bounds what runs).
    `unit_cpus`: CPUs a unit reserves on its node (units mostly wait on Docker and the model).
    `unit_memory_mb`: memory a unit reserves on its node (None: its containers' memory limit;
    0: none). See `reservation`.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        max_in_flight: int | None = None,
        unit_cpus: float | None = None,
        max_ship_mb: float | None = None,
        unit_memory_mb: float | None = None,
    ) -> None:
        self.address = address
        self.max_in_flight = max_in_flight
        self.unit_cpus = unit_cpus if unit_cpus is not None else float(os.environ.get("WHOLELOOP_RAY_UNIT_CPUS", "1"))
        if unit_memory_mb is None and os.environ.get("WHOLELOOP_RAY_UNIT_MEMORY_MB"):
            unit_memory_mb = float(os.environ["WHOLELOOP_RAY_UNIT_MEMORY_MB"])
        self.unit_memory = None if unit_memory_mb is None else int(unit_memory_mb * 2**20)
        mb = (
            max_ship_mb
            if max_ship_mb is not None
            else float(os.environ.get("WHOLELOOP_RAY_MAX_SHIP_MB", DEFAULT_MAX_SHIP_MB))
        )
        self.max_ship_bytes = int(mb * 1024 * 1024)
        self._max_retries = 2  # Ray's own retries when a unit's worker process or node dies
        self._inflight: dict[Any, Any] = {}
        self._box = None
        self._tries: dict[tuple[str, int], str] = {}  # the try (an id made on its node) each unit is in
        self._open: set[tuple[str, int]] = set()  # the units of run_units not finished yet
        self._owns = False
        #: the shipper (and its lock) siblings share (`sibling`); None: each run_units ships afresh
        self.shipping: tuple[_Shipper, threading.Lock] | None = None
        self._record: dict = {}  # the manifest's executor record of the current run
        self._hosts: dict[str, list[str]] = {}  # the nodes each unit started on, in order
        self._known: set[str] = set()  # the nodes alive when run_units began (none before)
        self._lost: dict[str, float] = {}  # node host name: when it was first seen gone
        self._looked = 0.0
        self.ray = _import_ray()
        self._connect()

    def sibling(self) -> RayExecutor:
        """Another executor on this cluster, through the same connection (it never owns it: only
        the executor that connected shuts it down), with its own units, tries and progress box; the
        inputs it ships are shared with this one's other siblings (each put once, keyed by content:
        a repository bundle or an image archive is not made again for every unit of a sweep)."""
        if self.shipping is None:
            self.shipping = (_Shipper(self.ray, self.max_ship_bytes), threading.Lock())
        other = RayExecutor(
            self.address,
            max_in_flight=self.max_in_flight,
            unit_cpus=self.unit_cpus,
            max_ship_mb=self.max_ship_bytes / (1024 * 1024),
            unit_memory_mb=None if self.unit_memory is None else self.unit_memory / 2**20,
        )
        other.shipping = self.shipping
        return other

    # ------------------------------------------------------------------ connection

    def _connect(self) -> None:
        ray = self.ray
        if ray.is_initialized():
            return
        address = self.address or os.environ.get("RAY_ADDRESS") or "auto"
        extra = {"include_dashboard": False} if address == "local" else {}
        _check_reachable(address)  # ray.init would retry an unreachable address for many minutes
        try:
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False, **extra)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise RayExecutorError(
                f"cannot reach a Ray cluster at {address}: {str(exc).strip().splitlines()[0] if str(exc).strip() else exc}",
                hint="start one with `ray start --head --disable-usage-stats` (and `ray start --address=HEAD:PORT` on the "
                "other nodes), then pass --ray-address HEAD:PORT",
            ) from exc
        self._owns = True

    def nodes(self) -> list[dict]:
        """The cluster's live nodes: host name, address, and what they declared: CPUs, memory
        (bytes) and the cap on concurrent containers (None: no cap declared)."""
        return [
            {
                "host": n.get("NodeManagerHostname"),
                "address": n.get("NodeManagerAddress"),
                "cpus": n.get("Resources", {}).get("CPU", 0),
                "memory": int(n.get("Resources", {}).get("memory", 0)),
                "containers": n.get("Resources", {}).get(CONTAINERS),
            }
            for n in self.ray.nodes()
            if n.get("Alive")
        ]

    # ------------------------------------------------------------------ the Executor protocol

    def map(self, fn: Callable[[Any], Any], units: Iterable[Any]) -> Iterator[Any]:
        """`fn(unit)` as a Ray task per unit (fn must be importable on the nodes); results as they
        complete. A unit that failed raises here."""
        for _, outcome in self._submit(fn, list(units)):
            if isinstance(outcome, BaseException):
                raise outcome
            yield outcome

    def shutdown(self, *, cancel: bool) -> None:
        ray = self.ray
        if cancel and self._inflight and ray.is_initialized():
            refs = list(self._inflight)
            for ref in refs:
                try:
                    ray.cancel(ref)  # a KeyboardInterrupt in the unit: its containers are closed on the way out
                except Exception:  # already finished, or the cluster is gone
                    pass
            ray.wait(refs, num_returns=len(refs), timeout=30)
            self._inflight.clear()
        if cancel:
            return
        if self._box is not None and ray.is_initialized():
            try:
                ray.kill(self._box)
            except Exception:
                pass
            self._box = None
        if self._owns and ray.is_initialized():
            ray.shutdown()
            self._owns = False

    def _submit(
        self,
        fn: Callable[[Any], Any],
        units: list[Any],
        tick: Callable[[], None] | None = None,
        reserve: Callable[[Any], dict] | None = None,
    ) -> Iterator[tuple[Any, Any]]:
        """(unit, result or exception) per unit, as they complete, at most max_in_flight at once;
        `reserve(unit)`: the Ray resources the unit holds while it runs (default: unit_cpus)."""
        ray = self.ray
        base = ray.remote(fn)
        remotes: dict[str, Any] = {}

        def remote_for(unit: Any) -> Any:
            need = reserve(unit) if reserve is not None else {"num_cpus": self.unit_cpus}
            key = json.dumps(need, sort_keys=True)
            if key not in remotes:
                remotes[key] = base.options(
                    **need, max_retries=self._max_retries, retry_exceptions=False, scheduling_strategy="SPREAD"
                )
            return remotes[key]

        queue = deque(units)
        limit, looked = self._in_flight_limit(), time.monotonic()
        while queue or self._inflight:
            if time.monotonic() - looked > 5:  # nodes come and go
                limit, looked = self._in_flight_limit(), time.monotonic()
            while queue and len(self._inflight) < limit:
                unit = queue.popleft()
                self._inflight[remote_for(unit).remote(unit)] = unit
            refs = list(self._inflight)
            done, _ = ray.wait(refs, num_returns=1, timeout=0.5)
            if done and len(refs) > 1:  # every other unit finished by now, in the same look
                done, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            if tick:
                tick()
            for ref in done:
                unit = self._inflight.pop(ref)
                try:
                    yield unit, ray.get(ref)
                except Exception as exc:  # the unit's process or node died, or our code failed there
                    yield unit, exc
        if tick:
            tick()

    def _in_flight_limit(self) -> int:
        """Units submitted at once: max_in_flight, else twice what the live nodes' CPUs run at
        once (at least 8), so that the driver's look at its units (ray.wait over all of them)
        stays as cheap at 10,000 units as at 100, while every node always has the next unit queued."""
        if self.max_in_flight is not None:
            return self.max_in_flight
        try:
            cpus = sum(n["cpus"] for n in self.nodes())
        except Exception:  # the cluster is unreachable: the units' own errors say so
            cpus = 0
        return max(8, 2 * int(cpus / max(self.unit_cpus, 0.01)))

    # ------------------------------------------------------------------ wholeloop units

    def run_units(self, run: Units, units: Iterable[Unit]) -> Iterator[list[ResultRow]]:
        """Run (task, repeat) units of `run` on the cluster; hand each unit's rows and files to
        `run.receive` (which writes them into the run folder and appends the rows) and yield them."""
        from ... import __version__

        units = list(units)
        if not units:
            return
        self._connect()
        self._max_retries = run.spec.settings.infra_retries
        probe = self._probe()
        run.progress("note", "", f"ray: {len(self.nodes())} node(s); wholeloop {probe['version']} on {probe['node']}")
        if probe["version"] != __version__:
            run.progress("note", "", f"ray: the nodes run wholeloop {probe['version']}, this machine {__version__}")
        nodes = self.nodes()
        capped = any(n["containers"] for n in nodes)
        needs = {task.id: self.reservation(run, task, capped=capped) for task, _ in units}
        for need in {json.dumps(n, sort_keys=True): n for n in needs.values()}.values():
            check_fits(nodes, need)  # before anything is shipped or submitted
        for node in nodes:
            if capped and node["cpus"] and not node["containers"]:
                run.progress(
                    "note", "", f"ray: node {node['host']} declares no {CONTAINERS} (others do): it runs no units"
                )
        if self.shipping is None:
            shipper = _Shipper(self.ray, self.max_ship_bytes)
            payloads = unit_payloads(run, units, shipper)
        else:  # a sibling's: one shipper for all of them, one at a time
            shipper, lock = self.shipping
            with lock:
                payloads = unit_payloads(run, units, shipper)
        returned = 0  # bytes of the units' rows and files that came back
        self._record = {
            "kind": "ray",
            "address": self.address or os.environ.get("RAY_ADDRESS") or "auto",
            "nodes": nodes,
            "unit_cpus": self.unit_cpus,
            "reservations": sorted({json.dumps(n, sort_keys=True) for n in needs.values()}),
        }
        run.note_executor(self._record)
        # on the driver's own node: a box on a worker would go with that worker, and with it the
        # progress and the streamed spend of every unit
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        # (hard: a soft affinity was seen to place it on a worker, which then took it down with it)
        here = NodeAffinitySchedulingStrategy(self.ray.get_runtime_context().get_node_id(), soft=False)
        self._box = self.ray.remote(num_cpus=0, scheduling_strategy=here)(ProgressBox).remote()
        for payload in payloads:
            payload["progress"] = self._box
        by_id = {t.id: t for t, _ in units}
        self._tries, self._open = {}, {(t.id, r) for t, r in units}
        self._hosts, self._lost, self._looked = {}, {}, time.monotonic()
        self._known = {n["host"] for n in self.nodes()}
        for task, repeat in units:  # a killed driver's live copies: abandoned tries, recorded once
            run.abandon(task, repeat)
        reserve = lambda payload: needs[payload["task"]["task"]["id"]]  # noqa: E731
        for payload, outcome in self._submit(run_unit, payloads, tick=lambda: self._relay(run, by_id), reserve=reserve):
            task, repeat = by_id[payload["task"]["task"]["id"]], payload["repeat"]
            self._relay(run, by_id)  # the unit's last streamed lines, before its live copy is settled
            self._open.discard((task.id, repeat))  # later lines of its try are stale
            if isinstance(outcome, BaseException):
                yield run.lost(task, repeat, outcome)
            else:
                returned += len(json.dumps(outcome["rows"])) + sum(map(len, outcome["files"].values()))
                self._settle(run, task, repeat, outcome.get("try"))
                yield run.receive(
                    task,
                    repeat,
                    UnitResult(
                        rows=outcome["rows"],
                        files=outcome["files"],
                        log=outcome["log"],
                        images=outcome["images"],
                        node=outcome["node"],
                    ),
                )
        # what went through the object store: the inputs and image archives put once for the run,
        # the rows and files the units handed back
        self._record["traffic"] = {"put_bytes": shipper.put_bytes, "put_items": shipper.put_items}
        self._record["traffic"]["returned_bytes"] = returned
        run.note_executor(self._record)
        self._look_for_lost_nodes(force=True)
        # a unit redone on another node: Ray resubmits as soon as the try's worker is gone, often
        # before the cluster marks its node dead (a missed health check, some 15-30 s); wait for that
        redone_from = {h for hosts in self._hosts.values() for h in hosts[:-1] if h != hosts[-1]}
        deadline = time.monotonic() + 45
        while redone_from & self._known - set(self._lost) and time.monotonic() < deadline:
            time.sleep(1)
            self._look_for_lost_nodes(force=True)
        if self._lost:
            lost = [
                {"node": host, "lost_at": time.strftime("%H:%M:%S", time.localtime(when)), "units_redone": n}
                for host, when in sorted(self._lost.items(), key=lambda kv: kv[1])
                for n in [sum(host in hosts[:-1] for hosts in self._hosts.values())]
            ]
            for item in lost:
                run.progress(
                    "note",
                    "",
                    f"ray: warning: node {item['node']} lost at {item['lost_at']}; "
                    f"{item['units_redone']} unit(s) redone on other nodes",
                )
            run.note_executor({**self._record, "lost_nodes": lost})

    def reservation(self, run: Units, task: Task, *, capped: bool) -> dict:
        """The Ray resources one unit of `task` holds on its node while it runs: unit_cpus CPUs;
        memory, the memory limit of the containers it holds at once (or unit_memory); and, when the
        nodes cap their containers (`capped`), those containers: 2 when attempts > 1 (the agent's
        container waits while an attempt is graded), else 1."""
        from sandbox import Limits, parse_size

        containers = 2 if run.spec.settings.attempts > 1 else 1
        limits = run.spec.limits.apply(task.limits.apply(Limits()))
        memory = self.unit_memory if self.unit_memory is not None else (parse_size(limits.memory) or 0) * containers
        need: dict[str, Any] = {"num_cpus": self.unit_cpus}
        if memory:
            need["memory"] = memory
        if capped:
            need["resources"] = {CONTAINERS: containers}
        return need

    def _settle(self, run: Units, task: Task, repeat: int, finished: str | None) -> None:
        """Before a unit's rows land (which drops its live copy): a live copy streamed by another
        try than the one that `finished` (a try whose node died, when Ray's redo ended before it
        streamed a line) is that lost try's, recorded once as an abandoned try with its spend. A
        node of an older wholeloop names no try (`finished` None): its copy is taken as the rows'."""
        streamed = self._tries.pop((task.id, repeat), None)
        if finished is not None and streamed not in (None, finished):
            run.abandon(task, repeat)

    def _look_for_lost_nodes(self, force: bool = False) -> None:
        """Nodes of the cluster that were alive when the run began and are gone now (every 5 s)."""
        now = time.monotonic()
        if not force and now - self._looked < 5:
            return
        self._looked = now
        try:
            alive = {n["host"] for n in self.nodes()}
        except Exception:  # the cluster is unreachable: the units' own errors say so
            return
        for host in self._known - alive:
            self._lost.setdefault(host, time.time())

    def _probe(self) -> dict:
        ref = self.ray.remote(node_info).options(num_cpus=0).remote()
        try:
            return self.ray.get(ref, timeout=180)
        except Exception as exc:
            last = (str(exc).strip().splitlines() or [""])[-1]
            raise RayExecutorError(
                f"the Ray workers cannot run wholeloop: {type(exc).__name__}: {last}",
                hint="install wholeloop on every node (bash scripts/setup.sh) and run `ray start` from its .venv",
            ) from exc

    def _relay(self, run: Units, by_id: dict[str, Task]) -> None:
        """Progress lines the nodes sent since the last look."""
        if self._box is None:
            return
        try:
            events = self.ray.get(self._box.drain.remote(), timeout=10)
        except Exception:
            return
        for event in events:
            if event[0] == LIVE_EVENT:
                self._stream(run, by_id, json.loads(event[2]))
            else:
                if event[0] == "start" and " on " in event[2]:
                    self._hosts.setdefault(event[1], []).append(event[2].rsplit(" on ", 1)[1])
                run.progress(*event)
        if self._known:  # during run_units
            self._look_for_lost_nodes()

    # ------------------------------------------------------------------ spend streamed from the nodes

    def _stream(self, run: Units, by_id: dict[str, Task], batch: dict) -> None:
        """New transcript lines of a try on a node, for its live copy. The first lines of a new try
        of the unit (Ray resubmitted it) make the last try's copy an abandoned try."""
        key = (batch["task"], batch["repeat"])
        task = by_id.get(batch["task"])
        if key not in self._open or task is None:
            return  # not a unit of this session, or one already finished: a stale line
        if self._tries.get(key, batch["try"]) != batch["try"]:
            run.abandon(task, batch["repeat"])
        self._tries[key] = batch["try"]
        run.stream(task, batch["repeat"], batch["lines"], fresh=batch["fresh"])

    # ------------------------------------------------------------------ what is shipped


# ---------------------------------------------------------------------------- shipping (driver)


def _import_ray():
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # never phone home
    try:
        import ray
    except ImportError as exc:
        raise RayExecutorError(
            "--executor ray needs the ray package", hint="pip install -e '.[ray]' (bash scripts/setup.sh installs it)"
        ) from exc
    return ray


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """A HOST:PORT that accepts no TCP connection fails at once, with a hint."""
    host, sep, port = address.rpartition(":")
    if not sep or "://" in address or not port.isdigit():
        return  # "auto", "local", ray://...: Ray resolves those itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise RayExecutorError(
            f"no Ray cluster answers at {address}: {exc.strerror or exc}",
            hint="check HEAD:PORT (the head prints it: `ray start --address=HEAD:PORT`), or start one with "
            "`ray start --head --disable-usage-stats`",
        ) from exc


def check_fits(nodes: list[dict], need: dict) -> None:
    """Raise RayExecutorError (a hint saying what to change) when no live node declares enough for
    one unit's reservation `need`: Ray would keep such a unit waiting for ever."""
    containers = need.get("resources", {}).get(CONTAINERS, 0)
    for node in nodes:
        if (
            node["cpus"] >= need["num_cpus"]
            and node["memory"] >= need.get("memory", 0)
            and (node["containers"] or 0) >= containers
        ):
            return
    gib = need.get("memory", 0) / 2**30
    have = "; ".join(
        f"{n['host']}: {n['cpus']:g} CPU, {n['memory'] / 2**30:.1f} GiB"
        + (f", {n['containers']:g} containers" if n["containers"] else "")
        for n in nodes
    )
    raise RayExecutorError(
        f"no node of the Ray cluster can run a unit that reserves {need['num_cpus']:g} CPU, {gib:.1f} GiB"
        + (f" and {containers} container(s)" if containers else "")
        + f" (nodes: {have or 'none'})",
        hint="give the nodes more (`ray start --num-cpus N --memory BYTES --resources "
        f"'{{\"{CONTAINERS}\": N}}'`), lower the tasks' memory limit (--memory), or reserve less per unit "
        "(WHOLELOOP_RAY_UNIT_CPUS, WHOLELOOP_RAY_UNIT_MEMORY_MB)",
    )


def unit_payloads(run: Units, units: list[Unit], shipper: _Shipper) -> list[dict]:
    """One payload per unit: the run's RunSpec as it is (a node rebuilds its unit runner from it,
    see ray_node.rebuild_spec), the task and the files it references, the agent's config file and
    replay recording. Raises RayExecutorError (nothing submitted) if an input is too big."""
    spec = run.spec.model_dump(mode="json")
    if spec["history"]["url"]:  # a node never writes the history: its password stays here
        spec["history"]["url"] = hide_url_passwords(spec["history"]["url"])
    agent = run.spec.agent
    config_text = Path(agent.config_path).read_text() if agent.config_path else None
    model = agent.model or ""
    replay = model.removeprefix("replay:") if model.startswith("replay:") else None
    per_task = {}
    for task in {t.id: t for t, _ in units}.values():
        per_task[task.id] = _task_payload(task, shipper)
        per_task[task.id]["images"] = shipper.images(task)
        per_task[task.id]["recording"] = _recording(Path(replay), task.id, shipper) if replay is not None else None
        per_task[task.id]["replay_is_dir"] = replay is not None and Path(replay).is_dir()
    common = {"run_id": run.run_id, "config": run.label, "spec": spec, "config_text": config_text}
    return [{**common, "task": per_task[task.id], "repeat": repeat} for task, repeat in units]


class _Shipper:
    """Puts each referenced input into the object store once, keyed by content."""

    def __init__(self, ray, limit: int, image_limit: int | None = None) -> None:
        self.ray, self.limit = ray, limit
        mb = float(os.environ.get("WHOLELOOP_RAY_MAX_IMAGE_MB", DEFAULT_MAX_IMAGE_MB))
        self.image_limit = image_limit if image_limit is not None else int(mb * 1024 * 1024)
        self._done: dict[tuple[str, str], dict] = {}
        self._refs: dict[str, Any] = {}
        self._images: dict[str, dict | None] = {}
        self.put_bytes = self.put_items = 0  # what this shipper put into the object store

    def _put(self, data: bytes) -> Any:
        self.put_bytes += len(data)
        self.put_items += 1
        return self.ray.put(data)

    def images(self, task) -> dict | None:
        """The task's images as one archive in the object store, keyed by their content (the
        image ids), for a node that lacks them; None when this machine's engine does not have them
        all (or has no engine): the node then builds them, as a local run would."""
        from sandbox import SandboxError

        from ...sandboxes import default_backend
        from ..images import present_image_tags

        try:
            backend = default_backend()
            tags = present_image_tags(task, backend)
            if not tags:
                return None
            ids = [backend.image_id(tag) for tag in tags]
        except SandboxError:
            return None
        key = hashlib.sha256(json.dumps(sorted(zip(tags, ids))).encode()).hexdigest()[:24]
        if key not in self._images:
            data = backend.export_images(tags)
            self._images[key] = (
                None
                if len(data) > self.image_limit
                else {"key": key, "tags": tags, "ref": self._put(data), "size": len(data)}
            )
            del data
        return self._images[key]

    def _item(self, key: str, kind: str, name: str, data: bytes, path: Path, what: str) -> dict:
        if len(data) > self.limit:
            raise RayExecutorError(
                f"{what}: {path} is {len(data) / 2**20:.0f} MB, more than the {self.limit / 2**20:.0f} MB "
                "the Ray executor ships to its workers",
                hint="raise WHOLELOOP_RAY_MAX_SHIP_MB, or name the repository by a git URL the nodes can clone",
            )
        if key not in self._refs:
            self._refs[key] = self._put(data)
        return {"key": key, "kind": kind, "name": name, "ref": self._refs[key], "size": len(data)}

    def file(self, path: Path, what: str) -> dict | None:
        if not path.is_file():
            return None
        cached = self._done.get(("file", str(path)))
        if cached is None:
            data = path.read_bytes()
            key = hashlib.sha256(b"file\0" + path.name.encode() + b"\0" + data).hexdigest()[:24]
            cached = self._done[("file", str(path))] = self._item(key, "file", path.name, data, path, what)
        return cached

    def repo(self, path: Path, what: str) -> dict | None:
        """A bundle file as it is; a local checkout as a bundle of all its refs."""
        if path.is_file():
            return self.file(path, what)
        if not path.is_dir():
            return None
        cached = self._done.get(("repo", str(path)))
        if cached is None:
            with tempfile.TemporaryDirectory() as tmp:
                bundle = Path(tmp) / "repo.bundle"
                proc = subprocess.run(
                    ["git", "-C", str(path), "bundle", "create", str(bundle), "--all"], capture_output=True, text=True
                )
                if proc.returncode != 0:
                    return None  # not a git repository: the node says so, as a local run would
                data = bundle.read_bytes()
            key = hashlib.sha256(b"bundle\0" + data).hexdigest()[:24]
            cached = self._done[("repo", str(path))] = self._item(key, "file", "repo.bundle", data, path, what)
        return cached

    def folder(self, path: Path, what: str) -> dict | None:
        if not path.is_dir():
            return None
        cached = self._done.get(("folder", str(path)))
        if cached is None:
            from sandbox import tar_directory

            data = tar_directory(path)
            digest = hashlib.sha256(b"folder\0")
            for file in sorted(p for p in path.rglob("*") if p.is_file()):
                digest.update(str(file.relative_to(path)).encode() + b"\0" + file.read_bytes())
            cached = self._done[("folder", str(path))] = self._item(
                digest.hexdigest()[:24], "tar", "", data, path, what
            )
        return cached


def _task_payload(task, shipper: _Shipper) -> dict:
    """The task as data, and what each of its file fields points at: a shipped item, or (when the
    file is missing here) the missing path, so the node fails as a local run would."""
    files: dict[str, dict] = {}

    def add(field: str, desc: dict | None, path: Path, **extra: str) -> None:
        files[field] = {**desc, **extra} if desc is not None else {"missing": str(path)}

    if "://" not in task.repo and not task.repo.startswith("git@"):
        path = Path(task.repo_source())
        add("repo", shipper.repo(path, f"task {task.id}: repository"), path)
    if task.gold_patch_file:
        path = task.resolve_path(task.gold_patch_file)
        add("gold_patch_file", shipper.file(path, f"task {task.id}: gold_patch_file"), path)
    if task.hidden_tests.patch_file:
        path = task.resolve_path(task.hidden_tests.patch_file)
        add("hidden_tests.patch_file", shipper.file(path, f"task {task.id}: hidden_tests.patch_file"), path)
    if task.environment.dockerfile:
        path = task.resolve_path(task.environment.dockerfile)
        add(
            "environment.dockerfile",
            shipper.folder(path.parent, f"task {task.id}: Dockerfile folder"),
            path,
            inner=path.name,
        )
    if isinstance(task.environment.trust_ca_bundle, str):
        path = task.resolve_path(task.environment.trust_ca_bundle)
        add("environment.trust_ca_bundle", shipper.file(path, f"task {task.id}: trust_ca_bundle"), path)
    return {"task": task.model_dump(mode="json", by_alias=True), "files": files, "spec": str(task.spec_path)}


def _recording(source: Path, task_id: str, shipper: _Shipper) -> dict | None:
    """The recording a replay model would read for this task (see ReplayModel.for_task)."""
    if source.is_file():
        return shipper.file(source, "replay recording")
    candidates = [
        source / f"{task_id}.jsonl",
        *sorted((source / "attempts" / task_id).glob("*/rep-0/transcript.jsonl")),
    ]
    for path in candidates:
        if path.is_file():
            return shipper.file(path, f"replay recording of {task_id}")
    return None
