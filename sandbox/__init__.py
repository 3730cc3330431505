"""Docker and git, nothing else: the sandbox contract, repository snapshots, errors, and the Docker
implementation (`sandbox.docker`).

This package never imports `harness`.
"""

from .base import DEFAULT_DISK, Backend, ExecResult, Limits, Mount, OutputCap, Sandbox, SandboxStatus, parse_size
from .docker import DEFAULT_BASE, REPO_DIR, BuiltImage, DockerBackend, DockerSandbox, EnvSpec
from .errors import (
    ContainerBroken,
    ContainerGone,
    DiskLimitReached,
    DiskSpaceError,
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
from .patch import BaseRules, Change, TakenPatch, TreeEntry, take_patch
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
    "Backend",
    "BaseRules",
    "BuiltImage",
    "Change",
    "ENV_LIKE_FILES",
    "TakenPatch",
    "TreeEntry",
    "take_patch",
    "ContainerBroken",
    "ContainerGone",
    "DEFAULT_BASE",
    "DEFAULT_DISK",
    "DiskLimitReached",
    "DiskSpaceError",
    "DockerBackend",
    "DockerSandbox",
    "EngineUnavailable",
    "EnvSpec",
    "ExecError",
    "ExecResult",
    "FileOpError",
    "ImageBuildError",
    "ImageNotFound",
    "InfraError",
    "InputError",
    "Limits",
    "Mount",
    "OutputCap",
    "PatchError",
    "REPO_DIR",
    "RepositoryError",
    "Sandbox",
    "SandboxError",
    "SandboxStatus",
    "Snapshot",
    "cache_dir",
    "cached_snapshot",
    "env_like",
    "find_commit",
    "make_snapshot",
    "open_repository",
    "parse_size",
    "tar_directory",
]
