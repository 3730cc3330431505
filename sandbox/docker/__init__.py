"""The Docker implementation of the sandbox contract: containers, the engine, images.

The harness imports Docker-specific things from here (never from the modules inside, never the
docker SDK itself): the backend that starts containers, image builds, pruning, engine facts.
"""

from . import native
from .container import MAX_PATCH_BYTES, DockerBackend, DockerSandbox
from .disk import check_room
from .engine import (
    API_VERSION,
    LABEL_OWNER,
    LABEL_RUN,
    PruneReport,
    engine_root,
    engine_version,
    owner_id,
    pid_alive,
    prune_containers,
)
from .images import (
    CACHE_PATTERNS,
    DEFAULT_BASE,
    FACTS_DIR,
    REPO_DIR,
    BuiltImage,
    EnvSpec,
    ImageInfo,
    bootstrap_base_image,
    deps_image,
    env_image,
    existing_task_image,
    image_exists,
    image_id,
    list_images,
    remove_images,
    task_image,
)

__all__ = [
    "API_VERSION",
    "BuiltImage",
    "CACHE_PATTERNS",
    "DEFAULT_BASE",
    "DockerBackend",
    "DockerSandbox",
    "EnvSpec",
    "FACTS_DIR",
    "ImageInfo",
    "LABEL_OWNER",
    "check_room",
    "LABEL_RUN",
    "MAX_PATCH_BYTES",
    "PruneReport",
    "REPO_DIR",
    "bootstrap_base_image",
    "engine_root",
    "engine_version",
    "env_image",
    "deps_image",
    "existing_task_image",
    "image_exists",
    "image_id",
    "list_images",
    "native",
    "owner_id",
    "pid_alive",
    "prune_containers",
    "remove_images",
    "task_image",
]
