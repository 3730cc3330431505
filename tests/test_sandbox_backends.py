"""A run goes through the backend it is given, for everything it needs from containers: images,
disk room, pruning, the manifest's engine facts (the local backend of tests/support builds no
images, so a run on it must say so, never fall back on Docker)."""

from __future__ import annotations

import json

from support.fakesandbox import LocalBackend
from support.runs import ScriptAgent, run_folder

from harness.run import Runner, RunOptions
from harness.tasks import load_task
from harness.vocabulary import Outcome


def test_a_run_builds_its_images_and_records_its_engine_through_the_backend_it_is_given(tiny_task, tmp_path):
    rows = Runner(
        [load_task(tiny_task["spec"])],
        ScriptAgent("true"),
        RunOptions(out=run_folder(tmp_path), infra_retries=0),
        backend=LocalBackend(),
    ).run()
    assert [r.outcome for r in rows] == [Outcome.infra_error], rows
    assert "the local backend builds no images" in (rows[0].error or ""), rows[0]
    manifest = json.loads((run_folder(tmp_path) / "manifest.json").read_text())
    assert manifest["docker_engine"] == {"backend": "local"}, manifest["docker_engine"]


def test_an_external_agents_install_goes_through_the_runs_backend(tiny_task, tmp_path, monkeypatch):
    """The install (its cache key names the backend's base image) and the forwarder binary come
    from the backend the run is given: on the local backend, which has neither, the run says so
    before any unit, never building or finding them through Docker."""
    import pytest

    from harness.agents import get_agent
    from sandbox import SandboxError

    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-key")  # the proxy's key, read on the host; nothing is sent
    agent = get_agent("external:mini-swe-agent", model="openai/gpt-4o-mini")
    runner = Runner(
        [load_task(tiny_task["spec"])],
        agent,
        RunOptions(out=run_folder(tmp_path), infra_retries=0),
        backend=LocalBackend(),
    )
    with pytest.raises(SandboxError, match="a local image is a host folder"):
        runner.run()
    assert agent.installed is None
