"""The images a task's containers start from, built the same way for a run and for `tasks check`.

env tier (the task's environment) -> snapshot of the repository at the base commit (no history,
no .env-like file the task does not name) -> task tier (env + snapshot + install commands, ending
with the test parser's image setup, whose facts grading reads). Each tier is tagged by a hash of
its inputs: an unchanged input never rebuilds. The backend builds and finds them (default:
`harness.sandboxes.default_backend()`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sandbox import Backend, BuiltImage, Snapshot, cached_snapshot

from ..sandboxes import default_backend
from ..tasks import Task


@dataclass
class TaskImages:
    env: BuiltImage
    snapshot: Snapshot
    task: BuiltImage

    @property
    def cached(self) -> bool:
        return self.env.cached and self.task.cached

    def record(self) -> dict:
        """What a manifest or a check verdict records of them."""
        out: dict[str, str | list[str]] = {
            "env": self.env.tag,
            "env_id": self.env.id,
            "task": self.task.tag,
            "task_id": self.task.id,
            "tree": self.snapshot.tree,
        }
        if self.snapshot.excluded:
            out["excluded"] = list(self.snapshot.excluded)
        return out


def parser_setups(task: Task) -> tuple[tuple[str, str], ...]:
    """The test parsers' image setups, as `task_image` takes them (none when no parser has one)."""
    return tuple((p.name, p.image_setup) for p in task.hidden_tests.parsers() if p.image_setup)


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
    image = backend.task_image(
        env, snapshot, tuple(task.environment.install), task.environment.network, log=log, setups=parser_setups(task)
    )
    return TaskImages(env, snapshot, image)


def existing_task_images(task: Task, backend: Backend | None = None) -> BuiltImage | None:
    """The task image as it exists now (None when something would have to be built)."""
    return (backend or default_backend()).existing_task_image(
        task.env_spec(),
        snapshot_of(task),
        tuple(task.environment.install),
        task.environment.network,
        parser_setups(task),
    )
