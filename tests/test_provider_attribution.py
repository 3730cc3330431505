"""Whose failure a provider's answer is (issue 21, causes 8, 10, 11): one rule,
`harness.agents.provider.attribute`, for external CLIs and the built-in agent.

The attacks, first as they were made: a CLI that got one refused call early (401, 404 for the
configured model, 429), then answers, then exits 1 -- each ended as `infra_error` (the proxy kept
the old error); a CLI whose every call is rate-limited, or whose provider is down, and which then
exits 0 -- scored as the agent's `empty_patch`; a CLI waiting out rate limits -- scored as its
`time_limit`; the built-in agent whose model's own output (a whitespace-only text block) makes the
next request a 400 -- `infra_error`. The CLI here is a small scripted one (Python, in the task's
container, through the real forwarder and proxy) talking to a scripted provider (FakeLLM).
"""

from __future__ import annotations

import base64
import json
import textwrap
import threading
import time
from pathlib import Path

import pytest
from support.fakellm import Call as FakeCall
from support.fakellm import Error, FakeLLM, Reply
from support.fakesandbox import LocalSandbox

from harness.agents import AgentContext, get_agent
from harness.agents.budget import MAX_BACKOFF_S, AgentLimits, Budget
from harness.agents.config import load_agent_config
from harness.agents.loop import ToolAgent
from harness.agents.provider import Call, ProviderClock, attribute, model_id, same_model
from harness.models import BadRequest, ScriptedModel, get_model, tool_turn
from harness.run import Runner, RunOptions
from harness.tasks import Task, load_task
from harness.transcript import TranscriptWriter

ROOT = Path(__file__).resolve().parent.parent
MODEL = "openai/gpt-6.1-sol"

# ---------------------------------------------------------------------------- the rule


def test_an_early_refusal_answered_by_a_later_success_is_not_why_the_attempt_ended():
    for status in (401, 404, 429, 503, 0):
        calls = [Call(status, "gpt-6.1-sol", f"HTTP {status}", 1, 2), Call(200, "gpt-6.1-sol", "", 3, 4)]
        assert attribute(calls, MODEL, exit_code=1) is None, status


def test_the_last_call_decides_whose_it_is():
    def last(status, model="gpt-6.1-sol", before=(), code=1):
        return attribute([*before, Call(status, model, f"HTTP {status}", 10, 11)], MODEL, exit_code=code)

    ok = [Call(200, "gpt-6.1-sol", "", 1, 2)]
    for status in (429, 500, 503, 529, 408, 0):  # the provider failing: the machine's, whatever the exit code
        for code in (0, 1):
            said = last(status, code=code)
            assert said is not None and said.infra and said.retryable and said.reason == "model_error"
    for status in (401, 403):  # credentials: the setup's, not retried
        said = last(status, before=ok)
        assert said is not None and said.infra and not said.retryable
    said = last(404)  # the configured model, by its exact id
    assert said is not None and said.infra and "configured model 'gpt-6.1-sol'" in said.detail
    for other in ("gpt-6.1-sol-mini", "evil/gpt-6.1-sol", "gpt-6.1-sol-2026-01-01", ""):  # the agent's own choice
        said = last(404, model=other)
        assert said is not None and not said.infra and said.reason == "agent_error", other
    assert last(404, model="gpt-6.1-sol-mini", code=0) is None
    said = last(400, before=ok)  # the same model took a request before: the conversation made this one wrong
    assert said is not None and not said.infra and said.reason == "agent_error"
    said = last(400)  # the first request already refused: its parameters, the setup's
    assert said is not None and said.infra and not said.retryable
    said = attribute(ok, MODEL, waited_out=1800.0)
    assert said is not None and said.infra and said.retryable and "max_provider_wait_s" in said.detail


def test_model_ids_are_compared_exactly_after_routing_prefixes():
    assert model_id("litellm/openrouter/qwen/qwen3-coder") == "qwen/qwen3-coder"
    assert same_model("qwen/qwen3-coder", "litellm/openrouter/qwen/qwen3-coder")
    assert not same_model("qwen3-coder", "litellm/openrouter/qwen/qwen3-coder")
    assert same_model("claude-sonnet-5-5", "anthropic/claude-sonnet-5-5")
    assert not same_model("x/claude-sonnet-5-5", "anthropic/claude-sonnet-5-5")  # the old split said yes
    assert not same_model("", "anthropic/claude-sonnet-5-5")


def test_the_clock_pauses_while_the_provider_fails():
    budget = Budget(AgentLimits(max_provider_wait_s=100))
    clock = ProviderClock(budget)
    t = time.monotonic()
    clock.note(Call(429, "m", "", t - 10, t - 9))  # failed: 1 s, then the CLI backs off...
    assert budget.waiting_since == t - 9 and budget.wait_s == pytest.approx(1)
    assert clock.waited() >= 10  # ...still waiting now
    clock.note(Call(200, "m", "", t - 4, t - 3))  # ...until its next call went out
    assert budget.waiting_since is None and budget.wait_s == pytest.approx(6)
    clock.note(Call(400, "m", "", t - 2, t - 1))  # the agent's own error pauses nothing
    assert budget.wait_s == pytest.approx(6) and budget.waiting_since is None


def test_one_failed_call_pauses_the_clock_for_a_back_off_at_most():
    # Attack: one rate-limited call, then work for an hour without calling again, on a paused clock.
    budget = Budget(AgentLimits(max_wall_s=600))
    budget.started = time.monotonic() - 3600
    clock = ProviderClock(budget)
    clock.note(Call(429, "m", "", budget.started + 1, budget.started + 2))
    assert clock.waited() == pytest.approx(1 + MAX_BACKOFF_S, abs=0.5)
    assert budget.working_s() > 3000
    clock.note(Call(200, "m", "", budget.started + 3000, budget.started + 3001))
    assert budget.wait_s == pytest.approx(1 + MAX_BACKOFF_S) and budget.waiting_since is None


# ---------------------------------------------------------------------------- the built-in agent


@pytest.fixture
def task():
    return Task.model_validate(
        {
            "id": "t",
            "repo": "r",
            "base_commit": "c",
            "problem_statement": "add() subtracts",
            "hidden_tests": {"command": "pytest"},
            "FAIL_TO_PASS": ["x"],
        }
    )


def run_tool_agent(model, task, tmp_path, **limits):
    config = load_agent_config()
    config.limits = config.limits.model_copy(update=limits)
    (tmp_path / "repo").mkdir(exist_ok=True)
    with TranscriptWriter(tmp_path / "t.jsonl", secrets=[], fsync=False) as tw:
        return ToolAgent(model, config).run(
            AgentContext(task=task, sandbox=LocalSandbox(tmp_path / "repo"), transcript=tw)
        )


def test_a_whitespace_only_text_block_of_the_model_is_not_sent_back(task, tmp_path):
    # Attack (cause 11): the model answers with a whitespace-only text block and a tool call; the
    # provider refuses the next request that carries that block (400), as Anthropic's does. The old
    # adapter sent it back and the attempt ended as infra_error; now the adapter leaves it out.
    def provider(request):
        for message in request.body.get("messages", []):
            for block in message.get("content") if isinstance(message.get("content"), list) else []:
                if block.get("type") == "text" and not block.get("text", "").strip():
                    return Error(400, "messages: text content blocks must contain non-whitespace text")
        if len(fake.requests) == 1:
            return Reply(text=" \n ", calls=[FakeCall("bash", {"command": "true"})])
        return Reply(text="done", calls=[FakeCall("submit", {})])

    with FakeLLM(responder=provider) as fake:
        model = get_model("anthropic/claude-sonnet-5-5", base_url=fake.base_url, api_key="k")
        result = run_tool_agent(model, task, tmp_path)
    assert result.stop_reason == "submitted" and result.infra_error is None, result
    assert len(fake.requests) == 2


def test_a_400_after_an_accepted_request_is_the_agents_a_400_on_the_first_is_the_setups(task, tmp_path):
    refused = BadRequest("provider answered 400: tool_use ids must be unique", status_code=400)
    result = run_tool_agent(ScriptedModel([tool_turn("bash", {"command": "true"}), refused]), task, tmp_path)
    assert result.stop_reason == "agent_error" and result.infra_error is None  # graded, never retried
    result = run_tool_agent(
        ScriptedModel([BadRequest("400: temperature is not supported", status_code=400)]), task, tmp_path
    )
    assert result.stop_reason == "model_error" and result.infra_error and not result.infra_retryable


def test_the_built_in_agent_stops_as_infra_when_waiting_on_the_provider_passes_its_cap(task, tmp_path):
    def waited_out(*_):
        turn = tool_turn("bash", {"command": "true"})
        turn.retry_wait_s = 5.0  # the adapter waited out 429s for 5 s
        return turn

    result = run_tool_agent(ScriptedModel([waited_out, tool_turn("submit", {})]), task, tmp_path, max_provider_wait_s=3)
    assert (
        result.stop_reason == "model_error" and result.infra_retryable and "max_provider_wait_s" in result.infra_error
    )


# ---------------------------------------------------------------------------- an external CLI, end to end

# A CLI that calls the model as its plan says (through the proxy, with the attempt's token), then
# exits with the plan's code. `until_ok`: keep calling, `sleep` s apart, until a call succeeds.
CLI = textwrap.dedent("""
    import json, os, sys, time, urllib.error, urllib.request
    plan = json.loads(os.environ["WL_PLAN"])
    def call(model):
        body = json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 20}).encode()
        request = urllib.request.Request(os.environ["WL_BASE"] + "/v1/chat/completions", data=body, headers={
            "authorization": "Bearer " + os.environ["WL_TOKEN"], "content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                reply.read()
            print("ok", model, flush=True)
            return True
        except urllib.error.HTTPError as e:
            print("refused", e.code, model, flush=True)
            return False
    for model in plan.get("calls", []):
        call(model)
    if plan.get("until_ok"):
        while not call(plan["until_ok"]):
            time.sleep(plan.get("sleep", 0.5))
    sys.exit(plan["exit"])
""")


def cli_config(tmp_path: Path, plan: dict, limits: dict | None = None) -> Path:
    encoded = base64.b64encode(CLI.encode()).decode()
    config = {
        "kind": "external",
        "name": "scripted",
        "cli": "scripted-cli",
        "version": "1.0.0",
        "wire": "openai-chat",
        "model": MODEL,
        "provider": {"api_key_env": "OPENAI_API_KEY", "base_url_env": "OPENAI_BASE_URL"},
        "install": [{"shell": f"mkdir -p bin && echo {encoded} | base64 -d > bin/the-cli"}],
        "check": ["/bin/sh", "-c", "test -s /opt/wl-agent/bin/the-cli && echo scripted-cli 1.0.0"],
        "command": ["python3", "/opt/wl-agent/bin/the-cli"],
        "env": {"WL_BASE": "{base_url}", "WL_TOKEN": "{token}", "WL_PLAN": json.dumps(plan)},
        "grace_s": 2,
        "limits": limits or {},
    }
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "scripted.yaml"
    path.write_text(json.dumps(config))
    return path


class Provider:
    """Answers by the model named and a queue of statuses for the configured one."""

    def __init__(self, statuses: list[int], then: int = 200) -> None:
        self.statuses, self.then, self.lock = list(statuses), then, threading.Lock()

    def __call__(self, request):
        with self.lock:
            status = self.statuses.pop(0) if self.statuses else self.then
        if request.body.get("model") != "gpt-6.1-sol":
            return Error(404, f"The model {request.body.get('model')} does not exist")
        return Reply(text="fine") if status == 200 else Error(status, f"scripted {status}")


def run_cli(tmp_path, monkeypatch, plan, provider, limits=None):
    with FakeLLM(responder=provider) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-attribution-test-key-123456")
        agent = get_agent("scripted", config_path=str(cli_config(tmp_path, plan, limits)))
        task = load_task(ROOT / "tasks" / "demo" / "inikit-001.yaml")
        [row] = Runner([task], agent, RunOptions(out=tmp_path / "run", infra_retries=0)).run()
    return row, fake


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize(
    ("first", "model"), [(401, "gpt-6.1-sol"), (404, "gpt-6.1-sol"), (429, "gpt-6.1-sol"), (404, "gpt-old")]
)
def test_a_refusal_early_in_an_attempt_is_not_why_a_cli_that_went_on_exited_1(tmp_path, monkeypatch, first, model):
    # Attack (cause 8): one refused call, answered calls after it, then the CLI exits 1: the old
    # proxy kept the first error and the attempt ended as infra_error (429: retried).
    row, fake = run_cli(
        tmp_path, monkeypatch, {"calls": [model, "gpt-6.1-sol", "gpt-6.1-sol"], "exit": 1}, Provider([first])
    )
    # (a call naming another model may be refused by the proxy before it leaves: not counted here)
    assert sum(r.body.get("model") == "gpt-6.1-sol" for r in fake.requests) == 2 + (model == "gpt-6.1-sol")
    assert row.outcome == "empty_patch" and row.stop_reason == "agent_error", (row.outcome, row.stop_reason, row.error)


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("status", [429, 503])
def test_a_provider_that_refuses_every_call_ends_the_attempt_as_infra_even_when_the_cli_exits_0(
    tmp_path, monkeypatch, status
):
    # Attack (cause 10): every call rate-limited (or the provider down), the CLI gives up and exits
    # 0: the old code scored it as the agent's empty_patch.
    row, _ = run_cli(tmp_path, monkeypatch, {"calls": ["gpt-6.1-sol"] * 3, "exit": 0}, Provider([], then=status))
    assert row.outcome == "infra_error" and "the provider kept failing" in row.error, (row.outcome, row.error)


@pytest.mark.docker
@pytest.mark.slow
def test_waiting_out_rate_limits_is_not_the_cli_agents_time_and_has_a_hard_cap(tmp_path, monkeypatch):
    # Attack (cause 10): a CLI that backs off on 429s for 8.8 s, with 8 s of agent time: the old
    # proxy counted the waiting and refused its first answered call as the agent's time_limit.
    # (The back-offs alone exceed the limit, so that fails however fast the machine; the CLI's own
    # time is its start and a few requests, well under 8 s even on a loaded machine.)
    plan = {"until_ok": "gpt-6.1-sol", "sleep": 0.8, "exit": 0}
    row, fake = run_cli(tmp_path / "pause", monkeypatch, plan, Provider([429] * 11), {"max_wall_s": 8})
    assert row.stop_reason == "submitted" and row.outcome == "empty_patch", (row.stop_reason, row.error)
    assert len(fake.requests) == 12 and row.phases.retry_wait_s >= 8.8
    # ...but not for ever: past max_provider_wait_s the attempt ends, as the machine's
    row, _ = run_cli(tmp_path / "cap", monkeypatch, plan, Provider([], then=429), {"max_provider_wait_s": 2})
    assert row.outcome == "infra_error" and "max_provider_wait_s" in row.error, (row.outcome, row.error)
