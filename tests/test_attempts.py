"""Attempts with feedback, and retries of infrastructure failures, on real containers."""

import pytest

from harness.agents import AgentResult
from harness.agents.config import load_agent_config
from harness.agents.loop import ToolAgent
from harness.models import ScriptedModel, tool_turn
from harness.records import read_results
from harness.run import Runner, RunOptions
from harness.tasks import load_task
from harness.transcript import read_transcript
from sandbox.docker.engine import client

pytestmark = pytest.mark.docker

FIX = {"command": "str_replace", "path": "calc/__init__.py", "old_str": "return a - b", "new_str": "return a + b"}


def test_fixed_at_the_second_attempt_after_hidden_feedback(tiny_task, tmp_path):
    seen = {}

    def second_attempt(messages, tools, settings):
        seen["feedback"] = messages[-1]["content"]
        return tool_turn("edit", FIX)

    model = ScriptedModel([tool_turn("submit", {}), second_attempt, tool_turn("submit", {})])
    agent = ToolAgent(model, load_agent_config())
    options = RunOptions(out=tmp_path / "run", attempts=3, feedback="hidden")
    Runner([load_task(tiny_task["spec"])], agent, options).run()
    rows = read_results(tmp_path / "run" / "results.jsonl")
    assert [(r.attempt, r.outcome, r.final) for r in rows] == [(1, "empty_patch", False), (2, "resolved", True)]
    assert "not accepted" in seen["feedback"] and "tests/test_add.py::test_add" in seen["feedback"]
    events = read_transcript(tmp_path / "run" / rows[0].transcript_path)
    assert [e.type for e in events if e.type in ("attempt_start", "feedback", "grade")] == [
        "attempt_start",
        "grade",
        "attempt_start",
        "feedback",
        "grade",
    ]
    assert rows[1].steps == 2  # this attempt's own steps; the conversation carried on


def test_resolved_at_the_first_attempt_makes_one_row(tiny_task, tmp_path):
    agent = ToolAgent(ScriptedModel([tool_turn("edit", FIX), tool_turn("submit", {})]), load_agent_config())
    Runner([load_task(tiny_task["spec"])], agent, RunOptions(out=tmp_path / "run", attempts=3)).run()
    rows = read_results(tmp_path / "run" / "results.jsonl")
    assert [(r.attempt, r.resolved, r.final) for r in rows] == [(1, True, True)]


class DiesOnce:
    """An agent whose container disappears under it the first time: a machine failure."""

    name, model = "dies-once", None

    def __init__(self):
        self.tries = 0

    def run(self, ctx):
        self.tries += 1
        if self.tries == 1:
            client().containers.get(ctx.sandbox.id).remove(force=True)
        ctx.sandbox.exec("sed -i 's/a - b/a + b/' calc/__init__.py")
        return AgentResult(stop_reason="submitted", steps=1)

    def describe(self):
        return {"agent": self.name}


def test_a_container_that_dies_is_retried_not_blamed_on_the_agent(tiny_task, tmp_path):
    agent = DiesOnce()
    rows = Runner([load_task(tiny_task["spec"])], agent, RunOptions(out=tmp_path / "run", infra_retries=1)).run()
    assert agent.tries == 2 and [(r.outcome, r.attempt) for r in rows] == [("resolved", 1)]
    kept = list((tmp_path / "run").rglob("transcript.unfinished-1.jsonl"))
    assert kept and any(e.type == "error" for e in read_transcript(kept[0]))


def test_retries_are_bounded_and_end_as_infra_error(tiny_task, tmp_path):
    class AlwaysDies(DiesOnce):
        def run(self, ctx):
            self.tries = 0
            return super().run(ctx)

    rows = Runner([load_task(tiny_task["spec"])], AlwaysDies(), RunOptions(out=tmp_path / "run", infra_retries=1)).run()
    assert [r.outcome for r in rows] == ["infra_error"] and "ContainerGone" in rows[0].error


def test_an_environment_that_cannot_be_built_is_infra_error_and_the_run_goes_on(tiny_task, tmp_path):
    broken = (
        tiny_task["spec"]
        .read_text()
        .replace("id: tiny-001", "id: tiny-broken")
        .replace(
            'setup: ["pip install -q pytest==8.3.4"]',
            'setup: ["pip install -q pytest==8.3.4", "echo cannot build >&2; exit 3"]',
        )
    )
    (tiny_task["dir"] / "broken.yaml").write_text(broken)
    from support.runs import ScriptAgent

    from harness.tasks import load_tasks

    agent = ScriptAgent("sed -i 's/a - b/a + b/' calc/__init__.py")
    rows = Runner(
        load_tasks([tiny_task["dir"]]), agent, RunOptions(out=tmp_path / "run", workers=2, infra_retries=1)
    ).run()
    outcomes = {r.task_id: (r.outcome, r.error or "") for r in rows}
    assert outcomes["tiny-001"][0] == "resolved"
    assert outcomes["tiny-broken"][0] == "infra_error" and "ImageBuildError" in outcomes["tiny-broken"][1]
    assert "cannot build" in outcomes["tiny-broken"][1]


def _engine_restart():
    import shutil
    import subprocess
    import time

    if shutil.which("systemctl") and subprocess.run(["systemctl", "is-active", "--quiet", "docker"]).returncode == 0:
        subprocess.run(["systemctl", "restart", "docker"], check=True)
    else:
        subprocess.run(["pkill", "-x", "dockerd"])
        for _ in range(100):
            if subprocess.run(["pgrep", "-x", "dockerd"], capture_output=True).returncode != 0:
                break
            time.sleep(0.2)
        subprocess.Popen("setsid nohup dockerd >>/var/log/wholeloop-dockerd.log 2>&1 </dev/null &", shell=True)
    for _ in range(120):
        if subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
            return
        time.sleep(0.5)
    raise RuntimeError("dockerd did not come back")


def test_the_engine_restarting_mid_attempt_is_retried_not_blamed_on_the_agent(tiny_task, tmp_path):
    import os

    if os.geteuid() != 0:
        pytest.skip("restarting the Docker engine needs root")

    class RestartsEngineOnce(DiesOnce):
        def run(self, ctx):
            self.tries += 1
            if self.tries == 1:
                _engine_restart()  # every container dies with the engine (no live-restore)
            ctx.sandbox.exec("sed -i 's/a - b/a + b/' calc/__init__.py")
            return AgentResult(stop_reason="submitted", steps=1)

    agent = RestartsEngineOnce()
    rows = Runner([load_task(tiny_task["spec"])], agent, RunOptions(out=tmp_path / "run", infra_retries=2)).run()
    assert agent.tries == 2 and [(r.outcome, r.attempt) for r in rows] == [("resolved", 1)]
