"""The tool-calling loop and its tools, driven by scripted models (fakes, not mocks)."""

import pytest
from support.fakesandbox import LocalSandbox

from harness.agents import AgentContext
from harness.agents.config import AgentConfigError, load_agent_config
from harness.agents.loop import ToolAgent
from harness.agents.tools import Toolbox, ToolFailure
from harness.models import AuthError, ContextLengthExceeded, ScriptedModel, Usage, tool_turn
from harness.tasks import Task
from harness.transcript import TranscriptWriter, read_transcript


@pytest.fixture
def task():
    return Task.model_validate(
        {
            "id": "t",
            "repo": "r",
            "base_commit": "c",
            "problem_statement": "add() subtracts",
            "test_command": "python -m pytest -q",
            "hidden_tests": {"command": "pytest"},
            "FAIL_TO_PASS": ["x"],
        }
    )


@pytest.fixture
def box(tmp_path):
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n")
    return LocalSandbox(tmp_path)


def run(agent_steps, task, box, tmp_path, **limits):
    config = load_agent_config()
    config.limits = config.limits.model_copy(update=limits)
    agent = ToolAgent(ScriptedModel(agent_steps), config)
    with TranscriptWriter(tmp_path / "t.jsonl", secrets=[], fsync=False) as tw:
        ctx = AgentContext(task=task, sandbox=box, transcript=tw)
        result = agent.run(ctx)
    return result, read_transcript(tmp_path / "t.jsonl"), ctx


def priced(turn, cost=0.01, tokens=(1000, 100)):
    turn.usage, turn.cost_usd = Usage(input_tokens=tokens[0], output_tokens=tokens[1]), cost
    return turn


def test_edit_tool_errors_tell_the_model_what_to_do(task, box):
    tools = Toolbox(box, task)
    with pytest.raises(ToolFailure, match=r"occurs 2 times .*lines \[2, 6\]"):
        tools.call("edit", {"command": "str_replace", "path": "calc.py", "old_str": "return a - b", "new_str": "x"})
    with pytest.raises(ToolFailure, match="not found"):
        tools.call("edit", {"command": "str_replace", "path": "calc.py", "old_str": "nope", "new_str": "x"})
    with pytest.raises(ToolFailure, match="missing \\['path'\\]"):
        tools.call("edit", {"command": "view"})
    with pytest.raises(ToolFailure, match="between 0 and 6"):
        tools.call("edit", {"command": "insert", "path": "calc.py", "insert_line": 99, "new_str": "x"})
    out = tools.call(
        "edit",
        {
            "command": "str_replace",
            "path": "calc.py",
            "old_str": "def add(a, b):\n    return a - b",
            "new_str": "def add(a, b):\n    return a + b",
        },
    )
    assert "return a + b" in out.content and (box.root / "calc.py").read_text().startswith(
        "def add(a, b):\n    return a + b"
    )
    tools.call("edit", {"command": "insert", "path": "calc.py", "insert_line": 0, "new_str": "import os"})
    assert (box.root / "calc.py").read_text().startswith("import os\ndef add")
    view = tools.call("edit", {"command": "view", "path": "calc.py", "view_range": [2, 3]}).content
    assert view.splitlines() == ["     2\tdef add(a, b):", "     3\t    return a + b"]
    tools.call("edit", {"command": "create", "path": "pkg/new.py", "file_text": "X = 1\n"})
    assert (box.root / "pkg/new.py").read_text() == "X = 1\n"


def test_the_loop_runs_tools_and_ends_on_submit(task, box, tmp_path):
    steps = [
        tool_turn("bash", {"command": "grep -n 'a - b' calc.py"}, text="Looking for the bug."),
        tool_turn("edit", {"command": "str_replace", "path": "calc.py", "old_str": "nope", "new_str": "x"}),
        tool_turn("bash", '{"command": oops'),
        tool_turn("submit", {}),
    ]
    result, events, ctx = run(steps, task, box, tmp_path)
    assert result.stop_reason == "submitted" and result.steps == 4 and result.infra_error is None
    results = [e for e in events if e.type == "tool_result"]
    assert results[0].exit_code == 0 and "2:    return a - b" in results[0].output
    assert results[1].is_error and "not found" in results[1].output
    assert results[2].is_error and "not valid JSON" in results[2].output
    assert events[-1].type == "stop" and events[-1].reason == "submitted"
    # every tool call got its result back into the conversation, in order
    tool_messages = [m for m in ctx.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_bash", "call_edit", "call_bash", "call_submit"]


def test_answer_without_a_tool_call_stops(task, box, tmp_path):
    result, events, _ = run(["I think it is fixed."], task, box, tmp_path)
    assert result.stop_reason == "no_tool_call" and events[-1].reason == "no_tool_call"


@pytest.mark.parametrize(
    "limit, value, reason",
    [
        ("max_steps", 3, "step_limit"),
        ("max_cost_usd", 0.025, "cost_limit"),
        ("max_input_tokens", 2500, "token_limit"),
        ("max_output_tokens", 150, "token_limit"),
    ],
)
def test_limits_end_the_attempt_with_their_reason(task, box, tmp_path, limit, value, reason):
    steps = [priced(tool_turn("bash", {"command": "true"})) for _ in range(10)]
    result, events, _ = run(steps, task, box, tmp_path, **{limit: value})
    assert result.stop_reason == reason
    assert [e.type for e in events][-2:] == ["limit", "stop"]
    assert result.steps < 10 and result.cost_usd == pytest.approx(0.01 * result.steps)


def test_time_limit_counts_work_not_waiting(task, box, tmp_path):
    import time

    def rate_limited_then_answered(*_):
        time.sleep(1.2)  # as if the adapter had waited out a 429 for 1.2 s
        turn = tool_turn("bash", {"command": "true"})
        turn.retry_wait_s = 1.2
        return turn

    slow = [tool_turn("bash", {"command": "sleep 0.25"}) for _ in range(10)]
    result, _, _ = run([rate_limited_then_answered, *slow], task, box, tmp_path, max_wall_s=1.0)
    # The 1.2 s of waiting alone exceed the 1 s limit: counted, the attempt would end after one
    # step. Only work counts, so a second step happens; each one works at least 0.25 s, so the
    # limit ends the attempt after at most five (a slower machine makes fewer, never more).
    assert result.stop_reason == "time_limit" and result.retry_wait_s == 1.2 and 2 <= result.steps <= 5


def test_unknown_price_makes_cost_unknown_not_zero(task, box, tmp_path):
    steps = [priced(tool_turn("bash", {"command": "true"})), priced(tool_turn("submit", {}), cost=None)]
    result, _, _ = run(steps, task, box, tmp_path)
    assert result.cost_usd is None


def test_auth_error_is_infrastructure_context_length_is_the_agents(task, box, tmp_path):
    result, events, _ = run([AuthError("401 invalid key", status_code=401)], task, box, tmp_path)
    assert result.stop_reason == "model_error" and "AuthError" in result.infra_error
    result, _, _ = run([ContextLengthExceeded("too long", status_code=400)], task, box, tmp_path)
    assert result.stop_reason == "context_length" and result.infra_error is None


def test_prompts_are_rendered_from_the_config(task, box, tmp_path):
    _, _, ctx = run([tool_turn("submit", {})], task, box, tmp_path)
    system, user = ctx.messages[0]["content"], ctx.messages[1]["content"]
    assert "/repo" in system and "add() subtracts" in user and "python -m pytest -q" in user


def test_bad_agent_config_is_a_clear_error(tmp_path):
    bad = tmp_path / "a.yaml"
    bad.write_text("system_prompt: x\ninstance_prompt: y\ntools: [bash, teleport]\n")
    with pytest.raises(AgentConfigError, match="teleport"):
        load_agent_config(bad)
    bad.write_text("system_prompt: x\ninstance_prompt: y\nlimts: {}\n")
    with pytest.raises(AgentConfigError, match="limts"):
        load_agent_config(bad)


def test_a_transcript_replays_the_same_attempt(task, box, tmp_path):
    from harness.models import ReplayModel

    steps = [
        priced(
            tool_turn(
                "edit",
                {
                    "command": "str_replace",
                    "path": "calc.py",
                    "old_str": "def add(a, b):\n    return a - b",
                    "new_str": "def add(a, b):\n    return a + b",
                },
            )
        ),
        priced(tool_turn("submit", {})),
    ]
    (tmp_path / "one").mkdir()
    first, _, first_ctx = run(steps, task, box, tmp_path / "one")
    (box.root / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n")
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    (tmp_path / "one" / "t.jsonl").rename(recordings / "t.jsonl")  # the transcript is the recording
    agent = ToolAgent(ReplayModel(recordings), load_agent_config())
    with TranscriptWriter(tmp_path / "two.jsonl", secrets=[], fsync=False) as tw:
        ctx = AgentContext(task=task, sandbox=box, transcript=tw)
        again = agent.run(ctx)
    assert (again.stop_reason, again.steps, again.usage, again.cost_usd) == (
        first.stop_reason,
        2,
        first.usage,
        first.cost_usd,
    )
    assert ctx.messages == first_ctx.messages
    assert "return a + b" in (box.root / "calc.py").read_text()
    missing = task.model_copy(update={"id": "other"})
    with TranscriptWriter(tmp_path / "three.jsonl", secrets=[], fsync=False) as tw:
        result = agent.run(AgentContext(task=missing, sandbox=box, transcript=tw))
    assert result.stop_reason == "model_error" and "no recording for task other" in result.infra_error


def test_a_killed_command_says_it_may_have_run_out_of_memory(task, box):
    out = Toolbox(box, task).call("bash", {"command": "sh -c 'kill -9 $$'"})
    assert out.exit_code == 137 and "memory limit of 4g" in out.content.splitlines()[0]
