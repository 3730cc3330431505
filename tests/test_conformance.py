"""The sandbox contract, checked: the core tier against every sandbox (the Docker one and the
tests' host fake), the isolation tier against Docker only (it would act on the host otherwise)."""

from __future__ import annotations

import contextlib

import pytest
from support.fakesandbox import LocalSandbox

from sandbox import DEFAULT_BASE, DockerSandbox, EnvSpec, Limits
from sandbox.conformance import BASE_TREE, CORE, ISOLATION, base_tree_script

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


@contextlib.contextmanager
def local_sandbox(tmp_path):
    root = tmp_path / "work"
    for path, data in BASE_TREE.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    with LocalSandbox(root, LIMITS) as sb:
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
