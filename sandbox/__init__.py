"""Docker and git, nothing else: the sandbox contract, repository snapshots, errors, and the Docker
implementation (`sandbox.docker`).

This package never imports `harness`.
"""

from .base import Backend, ExecResult, Limits, Mount, OutputCap, Sandbox
from .docker import DEFAULT_BASE, REPO_DIR, BuiltImage, DockerBackend, DockerSandbox, EnvSpec
from .errors import (
    ContainerGone,
    EngineUnavailable,
    ExecError,
    FileOpError,
    ImageBuildError,
    ImageNotFound,
    InfraError,
    InputError,
    PatchError,
    RepositoryError,
    SandboxError,
)
from .snapshot import (
    ENV_LIKE_FILES,
    Snapshot,
    cache_dir,
    cached_snapshot,
    env_like,
    find_commit,
    make_snapshot,
    open_repository,
    tar_directory,
)

__all__ = [
    "Backend", "BuiltImage", "ENV_LIKE_FILES", "ContainerGone", "DEFAULT_BASE", "DockerBackend", "DockerSandbox", "EngineUnavailable",
    "EnvSpec", "ExecError", "ExecResult", "FileOpError", "ImageBuildError", "ImageNotFound", "InfraError",
    "InputError", "Limits", "Mount", "OutputCap", "PatchError", "REPO_DIR", "RepositoryError", "Sandbox", "SandboxError",
    "Snapshot", "cache_dir", "cached_snapshot", "env_like", "find_commit", "make_snapshot", "open_repository",
    "tar_directory",
]
