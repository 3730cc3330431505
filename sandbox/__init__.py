"""Docker and git, nothing else: images, repository snapshots, containers, limits, errors.

This package never imports `harness`.
"""

from .container import ExecResult, Limits, Sandbox
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
from .images import DEFAULT_BASE, REPO_DIR, BuiltImage, EnvSpec
from .snapshot import Snapshot, make_snapshot

__all__ = [
    "BuiltImage", "ContainerGone", "DEFAULT_BASE", "EngineUnavailable", "EnvSpec", "ExecError",
    "ExecResult", "FileOpError", "ImageBuildError", "ImageNotFound", "InfraError", "InputError",
    "Limits", "PatchError", "REPO_DIR", "RepositoryError", "Sandbox", "SandboxError", "Snapshot",
    "make_snapshot",
]
