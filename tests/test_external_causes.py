"""Failure causes and recovery metrics through real agent CLIs, the same as through the built-in agent.

mini-swe-agent and Claude Code (installed from their registries, cached like tests/test_external_e2e.py's)
and the built-in agent run three demo tasks in Docker against the scripted provider
(tests/support/scripted_cli.py), each task with its own plan of shell commands, the same for every
scaffold: one flails (an install, the same command three times, a red test run, then it finishes),
one changes a file where the fix is not and finishes without running the tests, one solves the task
(red run, the gold patch, green run). Their tool calls and test runs are what the proxy recorded
from the CLIs' traffic. Checked: each plan's causes are found, with evidence that is in the
transcript, for the three scaffolds alike; the solution has none; and the recovery metrics of each
attempt are equal across the scaffolds.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from support.fakellm import FakeLLM
from support.scripted_cli import Plan

from harness.agents import get_agent
from harness.records import RunFolder
from harness.report.causes import attempt_causes, causes_of
from harness.report.recovery import attempt_recovery
from harness.run import Runner, RunOptions
from harness.tasks import load_task
from harness.transcript import read_transcript
from harness.vocabulary import Cause, Outcome, StopReason

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-wholeloop-causes-provider-key-2c81"
FLAILS, ELSEWHERE, SOLVES = "inikit-001", "inikit-002", "ledgerly-001"


def red(task) -> str:
    return f"{task.test_command} tests/test_wl_repro_missing.py"  # red: there is no such test file


def script(task) -> list[str]:
    if task.id == FLAILS:
        return [
            "pip install --no-index inikit-extras",
            "git status --short",
            "cd . && git status --short",
            "git status --short | head -20",
            red(task),
        ]
    if task.id == ELSEWHERE:
        return ["echo 'values keep their # and ;' >> NOTES.md"]
    gold = base64.b64encode(task.gold().encode()).decode()
    return [red(task), f"echo {gold} | base64 -d > /tmp/wl-fix.diff && git apply /tmp/wl-fix.diff", task.test_command]


EXPECTED = {
    FLAILS: {Cause.environment_confusion, Cause.looped, Cause.submitted_failing, Cause.gave_up_early},
    ELSEWHERE: {Cause.never_ran_tests, Cause.edited_elsewhere, Cause.gave_up_early},
}

SCAFFOLDS = {
    # agent, its plan, the provider's variables (base URL, key), the OpenAI path or not, the model
    "mini": ("external:mini-swe-agent", {}, ("OPENAI_BASE_URL", "OPENAI_API_KEY"), True, None),
    "claude": (
        "external:claude-code",
        {"tool": "Bash", "finish": None, "extra": {"description": "a step"}},
        ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"),
        False,
        None,
    ),
    "builtin": ("default", {"finish_tool": "submit"}, ("OPENAI_BASE_URL", "OPENAI_API_KEY"), True, "openai/gpt-4o"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    tasks = [load_task(ROOT / "tasks" / "demo" / f"{t}.yaml") for t in (FLAILS, ELSEWHERE, SOLVES)]
    out = {}
    for name, (agent, plan_args, (url_env, key_env), openai_path, model) in SCAFFOLDS.items():
        plan = Plan(tasks=tasks, script=script, **plan_args)
        with pytest.MonkeyPatch.context() as mp, FakeLLM(responder=plan) as fake:
            mp.setenv(url_env, fake.openai_url if openai_path else fake.base_url)
            mp.setenv(key_env, KEY)
            folder = tmp_path_factory.mktemp(name) / "run"
            Runner(tasks, get_agent(agent, model=model), RunOptions(out=folder)).run()
        out[name] = folder
    return out


def rows_of(folder: Path) -> dict:
    return {r.task_id: r for r in RunFolder(folder).rows()}


@pytest.mark.parametrize("scaffold", list(SCAFFOLDS))
def test_a_plan_that_shows_causes_gets_them_with_evidence_and_a_solution_none(runs, scaffold):
    folder = runs[scaffold]
    manifest = RunFolder(folder).info()  # the typed manifest (issue 22)
    rows = rows_of(folder)
    assert rows[SOLVES].outcome == Outcome.resolved, rows[SOLVES]
    for task_id, expected in EXPECTED.items():
        row = rows[task_id]
        assert row.outcome in (Outcome.unresolved, Outcome.empty_patch) and row.stop_reason == StopReason.submitted, row
        found = attempt_causes(folder, row, row.config, manifest)
        assert found.found
        by_cause = {f.cause: f for f in found.causes}
        assert expected <= set(by_cause), (task_id, found.names())
        if task_id == FLAILS:
            assert Cause.never_ran_tests not in by_cause  # its one test run was a shell command
        events = {e.seq: e for e in read_transcript(folder / row.transcript_path)}
        for cause in expected:
            assert by_cause[cause].evidence, cause
            for evidence in by_cause[cause].evidence:
                if evidence.source == "transcript":
                    assert evidence.seq in events and evidence.quote, (cause, evidence)
        loop = by_cause.get(Cause.looped)
        if loop is not None:
            assert [e.quote for e in loop.evidence] == ["$ git status --short"] * 3
    # the solution: no cause, also were it graded unresolved (nothing in how it worked is one)
    row = rows[SOLVES]
    assert attempt_causes(folder, row, row.config, manifest).causes == []
    events = read_transcript(folder / row.transcript_path)
    failed = row.model_copy(update={"outcome": Outcome.unresolved, "resolved": False})
    assert causes_of(events, failed) == []


def test_recovery_metrics_of_the_external_clis_equal_the_built_in_agents(runs):
    def metrics(scaffold: str) -> dict:
        folder = runs[scaffold]
        out = {}
        for task_id, row in rows_of(folder).items():
            found = attempt_recovery(folder, row, row.config)
            assert found.found
            out[task_id] = found.model_dump(exclude={"config", "transcript_path", "seconds_to_green"})
        return out

    builtin = metrics("builtin")
    solved = builtin[SOLVES]
    assert (solved["test_runs"], solved["red_before_green"], solved["edits"], solved["edits_after_red"]) == (2, 1, 1, 1)
    assert solved["green_after_red"] and solved["steps_to_green"] == 3
    assert builtin[FLAILS]["tool_errors"] == 1  # the failed install (a red test run is not a tool error)
    for scaffold in ("mini", "claude"):
        assert metrics(scaffold) == builtin, scaffold
