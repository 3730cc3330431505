"""The sandbox contract, checked: the backend and core tiers against every backend (Docker, and the
tests' host-folder backend of tests/support/fakesandbox.py, found through the registry by the one
line that registers it), the isolation tier against Docker only (it would act on the host otherwise)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from support.fakesandbox import LocalBackend

from harness.sandboxes import SANDBOX_BACKENDS, backend
from sandbox import DEFAULT_BASE, EnvSpec, Limits
from sandbox.conformance import BACKEND, BASE_TREE, CORE, ISOLATION, base_tree_script
from sandbox.docker import DockerSandbox

LIMITS = Limits(command_timeout_s=30, pids=64, memory="256m", output_bytes=100_000)


@pytest.fixture(scope="module")
def base_tree_image() -> str:
    """The base image with BASE_TREE in /work: the tree a Docker sandbox starts with."""
    from sandbox.docker import env_image

    spec = EnvSpec(image=DEFAULT_BASE, setup=(base_tree_script("/work"),), network=False, python_venv=False)
    return env_image(spec).tag


@contextlib.contextmanager
def docker_sandbox(image: str):
    with DockerSandbox.start(image, limits=LIMITS, workdir="/work") as sb:
        yield sb


SANDBOX_BACKENDS.register("local", LocalBackend)  # a new backend: one file plus this one line


def local_image(tmp_path) -> str:
    """A local backend's image: a host folder holding BASE_TREE."""
    root = tmp_path / "image"
    for path, data in BASE_TREE.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return str(root)


@contextlib.contextmanager
def local_sandbox(tmp_path):
    with backend("local").start(local_image(tmp_path), limits=LIMITS, workdir="/work") as sb:
        yield sb


@pytest.mark.docker
@pytest.mark.parametrize("check", CORE + ISOLATION, ids=lambda c: c.__name__.removeprefix("check_"))
def test_docker_sandbox(check, base_tree_image):
    with docker_sandbox(base_tree_image) as sb:
        check(sb)


@pytest.mark.parametrize("check", CORE, ids=lambda c: c.__name__.removeprefix("check_"))
def test_local_fake_sandbox(check, tmp_path):
    with local_sandbox(tmp_path) as sb:
        check(sb)


@pytest.mark.docker
@pytest.mark.parametrize("check", BACKEND, ids=lambda c: c.__name__.removeprefix("check_"))
def test_docker_backend(check, base_tree_image):
    check(backend("docker"), base_tree_image, "/work")


@pytest.mark.parametrize("check", BACKEND, ids=lambda c: c.__name__.removeprefix("check_"))
def test_local_backend(check, tmp_path):
    check(backend("local"), local_image(tmp_path), "/work")


def test_an_unknown_backend_is_a_user_error_naming_the_known():
    from harness.registry import UnknownName

    with pytest.raises(UnknownName, match="docker"):
        backend("no-such-backend")


class _InPlace(LocalBackend):
    """A broken backend: its sandboxes work in the image folder itself, so one sees what the last left."""

    def start(self, image, *, limits=LIMITS, **_ignored):
        from support.fakesandbox import LocalSandbox

        if not Path(image).is_dir():
            return super().start(image, limits=limits)
        return LocalSandbox(Path(image), limits)


def test_the_backend_tier_catches_a_backend_whose_sandboxes_are_not_fresh(tmp_path):
    from sandbox.conformance import check_backend_starts_every_sandbox_fresh

    with pytest.raises(AssertionError, match="earlier sandbox"):
        check_backend_starts_every_sandbox_fresh(_InPlace(), local_image(tmp_path), "/work")
