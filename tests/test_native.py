"""Static helper binaries of ours (sandbox.docker.native): built once, cached, and run inside a
container read-only, without anything from the image."""

from __future__ import annotations

import pytest

from sandbox import DEFAULT_BASE, Mount
from sandbox.docker import DockerSandbox, native


def test_a_helper_is_built_once_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("WHOLELOOP_CACHE", str(tmp_path))
    first = native.binary("wl-hello")
    assert first.is_file() and first.parent == tmp_path / "native"
    mtime = first.stat().st_mtime_ns
    assert native.binary("wl-hello") == first and first.stat().st_mtime_ns == mtime
    with pytest.raises(FileNotFoundError):
        native.binary("no-such-helper")


@pytest.mark.docker
def test_a_helper_runs_read_only_in_a_container_without_using_the_image():
    path = native.binary("wl-hello")
    with DockerSandbox.start(DEFAULT_BASE, workdir="/", mounts=(Mount(str(path), "/opt/wl/wl-hello"),)) as box:
        ran = box.exec(["/opt/wl/wl-hello"], env={"LD_LIBRARY_PATH": "/nonexistent"})  # static: no loader needed
        assert ran.ok and ran.stdout == "wholeloop native helper ok\n"
        assert not box.exec("echo x > /opt/wl/wl-hello").ok  # read-only: the agent cannot replace it
