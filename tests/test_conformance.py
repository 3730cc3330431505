"""The sandbox contract, checked: the core tier against every sandbox (the Docker one and the
tests' host fake), the isolation tier against Docker only (it would act on the host otherwise)."""

from __future__ import annotations

import contextlib

import pytest
from fakesandbox import LocalSandbox

from sandbox import DEFAULT_BASE, DockerSandbox, Limits
from sandbox.conformance import CORE, ISOLATION

LIMITS = Limits(command_timeout_s=30, pids=64, memory="256m", output_bytes=100_000)


@contextlib.contextmanager
def docker_sandbox():
    with DockerSandbox.start(DEFAULT_BASE, limits=LIMITS, workdir="/") as sb:
        sb.exec(["mkdir", "-p", "/work"])
        sb.workdir = "/work"
        yield sb


@contextlib.contextmanager
def local_sandbox(tmp_path):
    root = tmp_path / "work"
    root.mkdir()
    with LocalSandbox(root, LIMITS) as sb:
        yield sb


@pytest.mark.docker
@pytest.mark.parametrize("check", CORE + ISOLATION, ids=lambda c: c.__name__.removeprefix("check_"))
def test_docker_sandbox(check):
    with docker_sandbox() as sb:
        check(sb)


@pytest.mark.parametrize("check", CORE, ids=lambda c: c.__name__.removeprefix("check_"))
def test_local_fake_sandbox(check, tmp_path):
    with local_sandbox(tmp_path) as sb:
        check(sb)
