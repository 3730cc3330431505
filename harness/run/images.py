"""The images a task's containers start from, built the same way for a run and for `tasks check`.

env tier (the task's environment) -> snapshot of the repository at the base commit (no history,
no .env-like file the task does not name) -> deps tier when the task names dependency files (env +
those files + install commands: one per distinct lock file) -> task tier (env or deps + snapshot +
install commands when no deps tier ran them, ending
with the test parser's image setup, whose facts grading reads). Each tier is tagged by a hash of
its inputs: an unchanged input never rebuilds. The backend builds and finds them (default:
`harness.sandboxes.default_backend()`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sandbox import Backend, BuiltImage, Snapshot, cached_snapshot

from ..sandboxes import default_backend
from ..tasks import Task


@dataclass
class TaskImages:
    env: BuiltImage
    snapshot: Snapshot
    task: BuiltImage
    deps: BuiltImage | None = None  # the shared install of the task's dependency files, when it names some

    @property
    def cached(self) -> bool:
        return self.env.cached and self.task.cached and (self.deps is None or self.deps.cached)

    def record(self) -> dict:
        """What a manifest or a check verdict records of them."""
        out: dict[str, str | list[str]] = {
            "env": self.env.tag,
            "env_id": self.env.id,
            "task": self.task.tag,
            "task_id": self.task.id,
            "tree": self.snapshot.tree,
        }
        if self.deps is not None:
            out["deps"] = self.deps.tag
        if self.snapshot.excluded:
            out["excluded"] = list(self.snapshot.excluded)
        return out


def parser_setups(task: Task) -> tuple[tuple[str, str], ...]:
    """The test parsers' image setups, as `task_image` takes them (none when no parser has one)."""
    return tuple((p.name, p.image_setup) for p in task.hidden_tests.parsers() if p.image_setup)


#: the keys of a package.json an install reads: the rest (version, scripts, ...) changes with releases
#: and must not make tasks with the same lock file install again
INSTALL_KEYS = (
    "dependencies",
    "devDependencies",
    "optionalDependencies",
    "peerDependencies",
    "peerDependenciesMeta",
    "dependenciesMeta",
    "bundleDependencies",
    "bundledDependencies",
    "overrides",
    "resolutions",
    "pnpm",
    "packageManager",
    "engines",
    "workspaces",
)


def dependency_inputs(root: Path, files: list[str]) -> tuple[tuple[str, bytes], ...]:
    """(path, content) of the task's dependency files present in the snapshot at `root`: the
    install's whole input (a package.json reduced to INSTALL_KEYS), what the deps image is keyed by."""
    out = []
    for path in files:
        file = root / path
        if not file.is_file():
            continue
        data = file.read_bytes()
        if Path(path).name == "package.json":
            try:
                pkg = json.loads(data)
            except ValueError:
                pkg = None
            if isinstance(pkg, dict):
                data = json.dumps({k: pkg[k] for k in INSTALL_KEYS if k in pkg}, indent=2).encode() + b"\n"
        out.append((path, data))
    return tuple(out)


def snapshot_of(task: Task) -> Snapshot:
    return cached_snapshot(task.repo_source(), task.base_commit, keep=tuple(task.environment.env_files))


def build_task_images(
    task: Task, log: Callable[[str], None] | None = None, backend: Backend | None = None
) -> TaskImages:
    """Environment and task images for `task`, built by `backend` once per distinct input (safe
    across threads and processes). Raises SandboxError subclasses (ImageBuildError, RepositoryError, ...)."""
    backend = backend or default_backend()
    env = backend.env_image(task.env_spec(), log=log)
    snapshot = snapshot_of(task)
    install = tuple(task.environment.install)
    inputs = dependency_inputs(snapshot.path, task.environment.dependency_files)
    deps = backend.deps_image(env, inputs, install, task.environment.network, log) if inputs else None
    image = backend.task_image(
        deps or env,
        snapshot,
        () if deps else install,  # the deps image ran them (as task_image(deps=...) does)
        task.environment.network,
        log=log,
        setups=parser_setups(task),
    )
    return TaskImages(env, snapshot, image, deps)


def existing_task_images(task: Task, backend: Backend | None = None) -> BuiltImage | None:
    """The task image as it exists now (None when something would have to be built)."""
    snapshot = snapshot_of(task)
    return (backend or default_backend()).existing_task_image(
        task.env_spec(),
        snapshot,
        tuple(task.environment.install),
        task.environment.network,
        parser_setups(task),
        dependency_inputs(snapshot.path, task.environment.dependency_files),
    )


def present_image_tags(task: Task, backend: Backend | None = None) -> list[str] | None:
    """Every tag a node needs to run `task` without building (base image, environment, deps and
    task images), when all of them exist on this engine now; None when something would have to be
    built (then nothing is shipped and a node builds for itself). Never builds."""
    backend = backend or default_backend()
    if existing_task_images(task, backend) is None:
        return None
    built = build_task_images(task, backend=backend)  # every tier is there: this finds them
    spec = task.env_spec()
    tags = [] if spec.dockerfile else [spec.image]
    tags += [built.env.tag, *([built.deps.tag] if built.deps else []), built.task.tag]
    return tags
