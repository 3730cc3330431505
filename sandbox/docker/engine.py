"""The connection to the Docker engine, error translation, labels and pruning.

Everything here speaks Engine API 1.41 (Docker 20.10), the oldest engine we support: nothing
newer is used even when the engine is newer.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import docker
import docker.errors
import requests.exceptions

from ..base import pid_alive
from ..errors import ContainerGone, EngineUnavailable, ImageNotFound, InfraError, SandboxError

API_VERSION = "1.41"
LABEL = "wholeloop"  # every image and container we make carries LABEL=1
LABEL_RUN = "wholeloop.run"  # the run id a container belongs to
LABEL_OWNER = "wholeloop.owner"  # "<hostname>:<pid>" of the process that made it
LABEL_ROLE = "wholeloop.role"  # agent | grading | build


@functools.cache
def client() -> docker.DockerClient:
    """The shared Docker client (DOCKER_HOST etc. are honoured); raises EngineUnavailable."""
    timeout = int(os.environ.get("WHOLELOOP_DOCKER_TIMEOUT", "120"))
    try:
        cli = docker.DockerClient.from_env(version=API_VERSION, timeout=timeout)
        cli.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException, ConnectionError) as exc:
        client.cache_clear()
        raise EngineUnavailable(f"Docker engine not reachable: {_short(exc)}") from exc
    return cli


def owner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def labels(role: str, run_id: str = "", **extra: str) -> dict[str, str]:
    out = {LABEL: "1", LABEL_ROLE: role, LABEL_OWNER: owner_id()}
    if run_id:
        out[LABEL_RUN] = run_id
    out.update(extra)
    return out


@contextlib.contextmanager
def translate(what: str) -> Iterator[None]:
    """Turn docker SDK / transport errors raised inside the block into SandboxErrors."""
    try:
        yield
    except SandboxError:
        raise
    except docker.errors.ImageNotFound as exc:
        raise ImageNotFound(f"{what}: image not found: {_short(exc)}") from exc
    except docker.errors.NotFound as exc:
        raise ContainerGone(f"{what}: {_short(exc)}") from exc
    except docker.errors.APIError as exc:
        if exc.status_code == 409 and "is not running" in str(exc):  # it died (OOM, engine restart)
            raise ContainerGone(f"{what}: {_short(exc)}") from exc
        if exc.status_code and exc.status_code >= 500:
            raise InfraError(f"{what}: engine error: {_short(exc)}") from exc
        raise SandboxError(f"{what}: {_short(exc)}") from exc
    except (docker.errors.DockerException, requests.exceptions.RequestException, ConnectionError) as exc:
        raise EngineUnavailable(f"{what}: Docker engine not reachable: {_short(exc)}") from exc


def _short(exc: BaseException) -> str:
    explanation = getattr(exc, "explanation", None)
    return (
        str(explanation or exc).strip().splitlines()[0][:500] if str(explanation or exc).strip() else type(exc).__name__
    )


@dataclass
class PruneReport:
    removed: list[str]
    kept_live: list[str]


def _owner_alive(owner: str) -> bool:
    host, _, pid = owner.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine's container: never ours to judge
    return int(pid) == os.getpid() or pid_alive(int(pid))


def prune_containers(*, all_owners: bool = False, run_id: str | None = None) -> PruneReport:
    """Remove our containers whose owning process is gone (or all of ours with all_owners); with
    `run_id`, only that run's.

    A live run's containers are never touched: the owner label names the process that made them.
    """
    report = PruneReport([], [])
    wanted = [f"{LABEL}=1"] + ([f"{LABEL_RUN}={run_id}"] if run_id else [])
    with translate("listing containers"):  # one call: no per-container inspect that could race
        found = client().api.containers(all=True, filters={"label": wanted})
    for raw in found:
        name, owner = raw["Names"][0].lstrip("/"), (raw.get("Labels") or {}).get(LABEL_OWNER, "")
        if not all_owners and _owner_alive(owner):
            report.kept_live.append(name)
            continue
        try:
            with translate("removing a container"):
                client().api.remove_container(raw["Id"], force=True, v=True)
        except ContainerGone:
            pass  # removed meanwhile, by another run's prune
        except SandboxError as exc:
            if "already in progress" not in str(exc):
                raise
        report.removed.append(name)
    from .disk import sweep_leftovers  # (here: disk.py uses this module)

    sweep_leftovers()
    return report


def engine_version() -> dict:
    """The engine's version facts: Version, ApiVersion, Os (raises EngineUnavailable)."""
    with translate("asking the engine for its version"):
        return dict(client().version())


def engine_root() -> str:
    """The engine's data folder (where images and containers take disk space)."""
    with translate("asking the engine for its data folder"):
        return client().info().get("DockerRootDir", "/var/lib/docker")
