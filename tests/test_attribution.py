"""Whose failure is it (issue 10): `infra_error` only when the machine failed, on real containers.

Each test is one behaviour an agent, its patch or its model can show; every one of them ended as
`infra_error` (retried, left out of the rates) before the rule. The genuine machine faults (a
container removed from outside) stay retried; tests/test_attempts.py has the engine restart."""

from __future__ import annotations

import json

import pytest
from support.runs import FIX, run_folder, run_rows

from harness.agents import AgentResult
from harness.agents.config import load_agent_config
from harness.agents.loop import ToolAgent
from harness.models import ScriptedModel, tool_turn
from harness.run import Runner, RunOptions
from harness.tasks import load_task
from harness.transcript import read_transcript
from sandbox.docker import DockerBackend
from sandbox.docker.engine import LABEL_ROLE, LABEL_RUN, client

pytestmark = pytest.mark.docker


def _with_limits(tiny_task, limits: str):
    spec = tiny_task["spec"]
    spec.write_text(
        spec.read_text().replace("limits: {command_timeout_s: 60}", f"limits: {{command_timeout_s: 60, {limits}}}")
    )
    return load_task(spec)


# ---------------------------------------------------------------- agent phase


def test_an_agent_whose_memory_use_gets_its_container_oom_killed_ends_as_memory_limit_and_is_graded(
    tiny_task, tmp_path
):
    """The agent fixes the bug, then fills memory that cannot be reclaimed (a tmpfs) with PID 1
    made the OOM killer's first choice: the kernel kills the container. That is the agent's doing."""
    task = _with_limits(tiny_task, "memory: 48m")
    oom = {"command": "echo 1000 > /proc/1/oom_score_adj; head -c 60m /dev/zero > /dev/shm/fill; echo done"}
    model = ScriptedModel([tool_turn("edit", FIX), tool_turn("bash", oom), tool_turn("submit", {})])
    rows = run_rows(task, ToolAgent(model, load_agent_config()), tmp_path)
    assert [(r.outcome, r.stop_reason, r.attempt) for r in rows] == [("resolved", "memory_limit", 1)], rows[0].error
    assert "memory" in rows[0].note
    assert not list(run_folder(tmp_path).rglob("transcript.unfinished-*.jsonl"))  # never retried
    events = read_transcript(run_folder(tmp_path) / rows[0].transcript_path)
    assert [e.limit for e in events if e.type == "limit"] == ["memory_limit"]


class BreaksItsContainer:
    """An agent (any kind: a CLI, a script) that removes the repository and the exec helper's
    interpreter, kills everything, and then trips over its own mess with an error it lets through."""

    name, model = "breaks-its-container", None

    def run(self, ctx):
        ctx.sandbox.exec("sed -i 's/a - b/a + b/' calc/__init__.py")
        ctx.sandbox.exec("cp -r /repo /tmp/keep; rm -rf /repo/calc; kill -9 -1")
        ctx.sandbox.read_file("calc/__init__.py")  # FileOpError: the agent removed it
        return AgentResult(stop_reason="submitted", steps=3)

    def describe(self):
        return {"agent": self.name}


def test_an_agent_that_breaks_its_container_ends_as_container_broken_and_is_graded(tiny_task, tmp_path):
    rows = run_rows(load_task(tiny_task["spec"]), BreaksItsContainer(), tmp_path)
    assert [(r.stop_reason, r.attempt) for r in rows] == [("container_broken", 1)], rows[0].error
    assert rows[0].outcome not in ("infra_error", "resolved") and rows[0].error is None
    assert "FileOpError" in rows[0].note


def test_a_tool_agent_whose_container_is_removed_from_outside_is_retried_and_left_out(tiny_task, tmp_path):
    """The machine's failure: the container vanishes under the agent (someone removed it)."""
    tries = []

    def remove_it_once(messages, tools, settings):
        if not tries:
            client().containers.get(_agent_container(tmp_path)).remove(force=True)
        tries.append(1)
        return tool_turn("bash", {"command": "true"})

    model = ScriptedModel([remove_it_once, tool_turn("edit", FIX), tool_turn("submit", {})] * 2)
    rows = run_rows(load_task(tiny_task["spec"]), ToolAgent(model, load_agent_config()), tmp_path, infra_retries=0)
    assert [(r.outcome, r.stop_reason) for r in rows] == [("infra_error", "error")]
    assert "ContainerGone" in rows[0].error


def _agent_container(tmp_path) -> str:
    (found,) = client().containers.list(
        filters={"label": [f"{LABEL_RUN}={run_folder(tmp_path).name}", f"{LABEL_ROLE}=agent"]}
    )
    return found.id


# ---------------------------------------------------------------- grading phase


def test_a_patch_whose_code_gets_the_grading_container_oom_killed_is_environment_broken_a_counted_failure(
    tiny_task, tmp_path
):
    """The patch fixes the bug and makes the code under test, when imported, exhaust memory with
    PID 1 the OOM killer's first choice: the grading container dies under the hidden test run (a
    grading step). The step passes on the base (re-run in a fresh container), so the failure is
    the patch's: counted, never retried."""
    from support.runs import ScriptAgent

    task = _with_limits(tiny_task, "memory: 48m")
    hog = "open('/proc/1/oom_score_adj', 'w').write('1000'); open('/dev/shm/fill', 'wb').write(bytes(60 * 2**20))"
    agent = ScriptAgent(f"sed -i 's/a - b/a + b/' calc/__init__.py && echo \"{hog}\" >> calc/__init__.py")
    rows = run_rows(task, agent, tmp_path)
    assert [(r.outcome, r.resolved, r.attempt) for r in rows] == [("environment_broken", False, 1)], rows[0].error
    assert not list(run_folder(tmp_path).rglob("transcript.unfinished-*.jsonl"))  # never retried
    graded = json.loads((run_folder(tmp_path) / rows[0].dir / "grade.json").read_text())
    assert graded["failed_step"]["step"] == "run the hidden tests" and "OOM" in graded["failed_step"]["output"]
    assert "passes on the base" in rows[0].note


class _RemovedUnderTheTests(DockerBackend):
    """Docker, except that a grading container is removed from outside (really) just as the hidden
    tests start in it: the machine's failure, whatever the patch."""

    def __init__(self):
        super().__init__()
        self.removed = 0

    def start(self, image, **kwargs):
        sb = super().start(image, **kwargs)
        if kwargs.get("role") == "grading" and not self.removed:
            real_exec = sb.exec

            def exec_(cmd, **kw):
                if isinstance(cmd, str) and "pytest" in cmd and not self.removed:
                    self.removed += 1
                    client().containers.get(sb.id).remove(force=True)
                return real_exec(cmd, **kw)

            sb.exec = exec_
        return sb


def test_a_grading_container_removed_from_outside_under_the_tests_stays_infra_error_and_is_retried(tiny_task, tmp_path):
    from support.runs import ScriptAgent

    backend = _RemovedUnderTheTests()
    rows = Runner(
        [load_task(tiny_task["spec"])],
        ScriptAgent("sed -i 's/a - b/a + b/' calc/__init__.py"),
        RunOptions(out=run_folder(tmp_path), infra_retries=1),
        backend=backend,
    ).run()
    assert backend.removed == 1 and [(r.outcome, r.attempt) for r in rows] == [("resolved", 1)]
    assert list(run_folder(tmp_path).rglob("transcript.unfinished-1.jsonl"))  # the first try, kept apart


def test_visible_feedback_whose_tests_get_the_agents_container_oom_killed_is_the_agents_and_the_next_attempt_goes_on(
    tiny_task, tmp_path
):
    """Attempt 1 leaves code that, imported by the visible tests the harness runs for feedback in the
    agent's own container, gets that container OOM-killed: the feedback says so and attempt 2 goes
    on in the same (restarted) container."""
    task = _with_limits(tiny_task, "memory: 48m")
    hog = "open('/proc/1/oom_score_adj', 'w').write('1000'); open('/dev/shm/fill', 'wb').write(bytes(60 * 2**20))"
    heard = []

    def second_attempt(messages, tools, settings):
        heard.append(messages[-1]["content"])
        return tool_turn("bash", {"command": "sed -i '/oom_score_adj/d' calc/__init__.py"})

    model = ScriptedModel(
        [
            tool_turn("edit", FIX),
            tool_turn("bash", {"command": f'echo "{hog}" >> calc/__init__.py'}),
            tool_turn("submit", {}),
            second_attempt,
            tool_turn("submit", {}),
        ]
    )
    rows = run_rows(task, ToolAgent(model, load_agent_config()), tmp_path, attempts=2, feedback="visible")
    assert [(r.attempt, r.outcome, r.final) for r in rows] == [
        (1, "environment_broken", False),
        (2, "resolved", True),
    ], rows[-1].error
    assert "memory" in heard[0]


# ---------------------------------------------------------------- recording


def test_whatever_the_model_and_its_tools_say_is_recorded_never_an_infra_error(tiny_task, tmp_path):
    """Lone surrogates, NUL, a huge line from the model; invalid UTF-8 and a path that is not
    UTF-8 from the tools: the attempt is recorded and graded like any other."""
    odd = "lone \ud800 surrogate, NUL \x00 here, " + "x" * 300_000
    weird = {
        "command": "printf 'bad \\xff\\xfe bytes\\n'; printf 'x' > \"$(printf 'calc/n\\xffame.txt')\"; "
        "printf '\\xc3\\x28' > calc/latin.txt; printf 'nul\\0byte\\n'; head -c 3000000 /dev/zero | tr '\\0' y; ls calc"
    }
    steps = [
        tool_turn("bash", weird),
        tool_turn("bash", {"command": "echo '\udcff' \x00"}),
        tool_turn("edit", {**FIX, "new_str": "return a + b  # \ud800"}),
        tool_turn("edit", FIX),
        odd,
    ]
    rows = run_rows(load_task(tiny_task["spec"]), ToolAgent(ScriptedModel(steps), load_agent_config()), tmp_path)
    assert [(r.outcome, r.stop_reason) for r in rows] == [("resolved", "no_tool_call")], rows[0].error
    events = read_transcript(run_folder(tmp_path) / rows[0].transcript_path)
    outputs = "".join(e.output for e in events if e.type == "tool_result")
    assert "bad" in outputs and "latin.txt" in outputs and "nul\x00byte" in outputs and "yyyy" in outputs
    assert any(e.type == "model_response" and "surrogate" in e.text for e in events)
    patch = (run_folder(tmp_path) / rows[0].patch_path).read_bytes()
    assert b"latin.txt" in patch and b"ame.txt" in patch


# ---------------------------------------------------------------- the engine down


def test_a_run_whose_engine_is_down_stops_after_a_few_units_and_exits_infra(tiny_task, tmp_path):
    """A real client against an engine that does not answer (DOCKER_HOST at a socket nobody
    listens on; the shared engine is never touched): three units fail on it, the run stops and says
    so, the other units are left for a resume."""
    import os
    import subprocess
    import sys

    from harness.records import read_results

    spec = tiny_task["spec"].read_text()
    for n in range(2, 7):
        (tiny_task["dir"] / f"tiny{n}.yaml").write_text(spec.replace("id: tiny-001", f"id: tiny-00{n}"))
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock", "WHOLELOOP_DOCKER_TIMEOUT": "5"}
    out = run_folder(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            str(tiny_task["dir"]),
            "--agent",
            "gold",
            "--out",
            str(out),
            "--infra-retries",
            "0",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "engine down" in done.stdout and "3 units in a row" in done.stdout
    rows = read_results(out / "results.jsonl")
    # the unit the pool started as the third ended may finish too; never all six
    assert 3 <= len(rows) <= 4 and {r.outcome for r in rows} == {"infra_error"}
    assert all("EngineUnavailable" in r.error for r in rows)
