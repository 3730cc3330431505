"""harness.models end to end: the real anthropic / openai / litellm SDKs against tests/support/fakellm.py.

No network and no keys: every request goes to a local server that speaks the providers' wire
formats, and tests assert both what came back and what the SDK actually sent.
"""

from __future__ import annotations

import email.utils
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.fakellm import Call, Error, FakeLLM, Reply, Tokens

from harness.models import (
    AuthError,
    BadRequest,
    ConnectionFailed,
    ContextLengthExceeded,
    ModelConfigError,
    ModelError,
    ModelUnavailable,
    NotFound,
    RateLimited,
    ReplayExhausted,
    ReplayModel,
    ScriptedModel,
    Settings,
    ToolCall,
    ToolSpec,
    Turn,
    Usage,
    get_model,
    tool_turn,
)
from harness.models.errors import parse_retry_after
from harness.models.pricing import Price, cost_usd, lookup_price

ROOT = Path(__file__).resolve().parent.parent
# litellm runs twice: through its openai provider and through its own Anthropic client.
PROVIDERS = ["anthropic", "openai", "litellm", "litellm-anthropic"]
# Models litellm's price map knows, so costs can be checked against litellm itself:
# provider -> (spec, id in the price map, its provider, wire format the fake speaks).
KNOWN = {
    "anthropic": ("anthropic/claude-sonnet-5-5", "claude-sonnet-5-5", "anthropic", "anthropic"),
    "openai": ("openai/gpt-4o", "gpt-4o", "openai", "openai"),
    "litellm": ("litellm/openai/gpt-4o", "gpt-4o", "openai", "openai"),
    "litellm-anthropic": ("litellm/anthropic/claude-sonnet-5-5", "claude-sonnet-5-5", "anthropic", "anthropic"),
}
TOOLS = [
    ToolSpec(
        name="bash",
        description="Run a shell command.",
        input_schema={"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
    ),
    ToolSpec(name="submit", description="Finish.", input_schema={"type": "object"}),
]
MESSAGES = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Fix the failing test."}]
FAST = Settings(max_retries=3, retry_max_wait_s=30)

# litellm's own pydantic warnings, not ours.
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*ReadOnly.*:UserWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm.*"),
]


@pytest.fixture
def srv():
    with FakeLLM() as server:
        yield server


class Sleeps(list):
    """An injected sleep that records what it was asked to wait, and returns at once."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def make(provider: str, server: FakeLLM, *, stream: bool = False, spec: str | None = None, **kw):
    spec = spec or KNOWN[provider][0]
    url = server.base_url if KNOWN[provider][3] == "anthropic" else server.openai_url
    kw.setdefault("sleep", Sleeps())
    return get_model(spec, base_url=url, api_key="test-key", stream=stream, **kw)


def litellm_cost(model: str, provider: str, usage: Usage) -> float:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    prompt, completion = litellm.cost_per_token(
        model=model,
        custom_llm_provider=provider,
        prompt_tokens=usage.input_tokens,
        completion_tokens=usage.output_tokens,
        cache_read_input_tokens=usage.cache_read_tokens,
        cache_creation_input_tokens=usage.cache_write_tokens,
    )
    return prompt + completion


# --- happy paths ----------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_text_tool_calls_usage_and_cost(srv, provider, stream):
    wire = KNOWN[provider][3]
    cache_write = 50 if wire == "anthropic" else 0  # OpenAI reports no cache writes
    srv.script(
        Reply(
            text="I will list the files first.",
            calls=[Call("bash", {"cmd": "ls -la"}, id="c1"), Call("submit", {}, id="c2")],
            usage=Tokens(input=1000, output=200, cache_read=300, cache_write=cache_write, reasoning=20),
        )
    )
    model = make(provider, srv, stream=stream)
    turn = model.complete(MESSAGES, TOOLS, FAST)

    assert turn.text == "I will list the files first."
    assert [(c.id, c.name, c.arguments, c.parse_error) for c in turn.tool_calls] == [
        ("c1", "bash", {"cmd": "ls -la"}, None),
        ("c2", "submit", {}, None),
    ]
    assert turn.stop_reason == "tool_use"
    # Our input_tokens include cache reads and writes, whatever the provider's convention.
    assert turn.usage == Usage(
        input_tokens=1300 + cache_write,
        output_tokens=200,
        cache_read_tokens=300,
        cache_write_tokens=cache_write,
        reasoning_tokens=20,
    )
    _, price_id, price_provider, _ = KNOWN[provider]
    expected = litellm_cost(price_id, price_provider, turn.usage)
    assert expected > 0
    assert turn.cost_usd == pytest.approx(expected, rel=1e-12)
    assert turn.retries == [] and turn.retry_wait_s == 0
    assert turn.latency_s > 0  # set-up and retry waits left out: test_sdk_import_and_client_set_up_are_not_latency
    assert turn.model
    assert len(srv.requests) == 1
    body = srv.requests[0].body
    assert body.get("stream", False) is stream
    if not provider.startswith("litellm"):  # litellm makes up its own response ids
        assert turn.request_id == "req_fake_1"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_malformed_tool_arguments_do_not_crash(srv, provider, stream):
    srv.script(Reply(calls=[Call("bash", '{"cmd": "ls', id="bad")]))
    turn = make(provider, srv, stream=stream).complete(MESSAGES, TOOLS, FAST)
    (call,) = turn.tool_calls
    assert call.name == "bash" and call.arguments is None
    if (provider, stream) != ("litellm-anthropic", False):  # litellm re-encodes a str input
        assert call.raw_arguments == '{"cmd": "ls'
    assert call.parse_error and "JSON" in call.parse_error


def test_anthropic_request_shape(srv):
    """System prompt separate; consecutive tool results merged into one user message."""
    srv.script(Reply(text="done"))
    history = MESSAGES + [
        {
            "role": "assistant",
            "content": "Two commands.",
            "tool_calls": [
                {"id": "t1", "name": "bash", "arguments": {"cmd": "ls"}},
                {"id": "t2", "name": "bash", "arguments": {"cmd": "false"}},
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "name": "bash", "content": "a.py", "is_error": False},
        {"role": "tool", "tool_call_id": "t2", "name": "bash", "content": "exit 1", "is_error": True},
    ]
    settings = Settings(max_tokens=1234, thinking_budget=2048)
    turn = make("anthropic", srv).complete(history, TOOLS, settings)
    assert turn.text == "done" and turn.stop_reason == "end_turn"
    body = srv.requests[0].body
    assert body["system"] == "You fix bugs."
    assert body["max_tokens"] == 1234 and "temperature" not in body and "top_p" not in body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"] == [
        {"type": "text", "text": "Two commands."},
        {"type": "tool_use", "id": "t1", "name": "bash", "input": {"cmd": "ls"}},
        {"type": "tool_use", "id": "t2", "name": "bash", "input": {"cmd": "false"}},
    ]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "a.py", "is_error": False},
        {"type": "tool_result", "tool_use_id": "t2", "content": "exit 1", "is_error": True},
    ]
    assert body["tools"][0] == {
        "name": "bash",
        "description": "Run a shell command.",
        "input_schema": TOOLS[0].input_schema,
    }


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_anthropic_thinking_blocks_go_back_signed(srv, stream):
    """With thinking and tool use, the API needs the signed thinking block back, first."""
    srv.script(Reply(thinking="Let me look.", calls=[Call("bash", {"cmd": "ls"}, id="t1")]), Reply(text="done"))
    model = make("anthropic", srv, stream=stream)
    settings = Settings(thinking_budget=1024, max_tokens=4096)
    turn = model.complete(MESSAGES, TOOLS, settings)
    assert turn.thinking == [{"type": "thinking", "thinking": "Let me look.", "signature": "sig_fake"}]
    history = MESSAGES + [
        json.loads(json.dumps(turn.to_message())),  # survives a transcript
        {"role": "tool", "tool_call_id": "t1", "name": "bash", "content": "a.py", "is_error": False},
    ]
    model.complete(history, TOOLS, settings)
    sent = srv.requests[1].body["messages"][1]["content"]
    assert [b["type"] for b in sent] == ["thinking", "tool_use"]
    assert sent[0]["signature"] == "sig_fake"


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_missing_api_key_is_an_auth_error_with_a_hint(provider, monkeypatch):
    monkeypatch.delenv(f"{provider.upper()}_API_KEY", raising=False)
    with FakeLLM() as server:
        url = server.base_url if provider == "anthropic" else server.openai_url
        model = get_model(KNOWN[provider][0], base_url=url, sleep=Sleeps())
        with pytest.raises(AuthError, match=f"{provider.upper()}_API_KEY"):
            model.complete(MESSAGES, TOOLS, FAST)
        assert server.requests == []


@pytest.mark.parametrize("provider", ["openai", "litellm"])
def test_openai_format_request_shape_echoes_raw_arguments(srv, provider):
    srv.script(Reply(text="ok"))
    bad = ToolCall.parse("c9", "bash", "{oops")
    history = MESSAGES + [
        Turn(text="", tool_calls=[bad]).to_message(),
        {"role": "tool", "tool_call_id": "c9", "name": "bash", "content": "arguments were not JSON", "is_error": True},
    ]
    make(provider, srv).complete(history, TOOLS, Settings(top_p=0.5, max_tokens=99))
    body = srv.requests[0].body
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool"]
    assert body["messages"][2]["tool_calls"] == [
        {"id": "c9", "type": "function", "function": {"name": "bash", "arguments": "{oops"}}
    ]
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "c9", "content": "arguments were not JSON"}
    assert body["tools"][0] == {
        "type": "function",
        "function": {"name": "bash", "description": "Run a shell command.", "parameters": TOOLS[0].input_schema},
    }
    assert body["top_p"] == 0.5 and "temperature" not in body
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    assert limit == 99


def test_openai_stream_asks_for_usage(srv):
    srv.script(Reply(text="hi", usage=Tokens(input=7, output=3)))
    turn = make("openai", srv, stream=True).complete(MESSAGES, [], FAST)
    assert srv.requests[0].body["stream_options"] == {"include_usage": True}
    assert "tools" not in srv.requests[0].body
    assert (turn.text, turn.usage.input_tokens, turn.usage.output_tokens) == ("hi", 7, 3)


def test_unsupported_settings_are_refused_not_dropped(srv):
    with pytest.raises(ModelConfigError, match="thinking budget"):
        make("openai", srv).complete(MESSAGES, TOOLS, Settings(thinking_budget=1000))
    # The Anthropic SDK 2.x / API 2026-10-21 reject sampling parameters outright.
    with pytest.raises(ModelConfigError, match="temperature"):
        make("anthropic", srv).complete(MESSAGES, TOOLS, Settings(temperature=0.0))
    assert srv.requests == []


def test_unknown_model_costs_none_not_zero(srv):
    srv.script(Reply(text="a"), Reply(text="b"))
    for provider, spec in [("anthropic", "anthropic/claude-from-the-future-9"), ("openai", "openai/my-local-llama")]:
        turn = make(provider, srv, spec=spec).complete(MESSAGES, TOOLS, FAST)
        assert turn.usage.input_tokens > 0
        assert turn.cost_usd is None


def test_price_table_overrides_the_map(srv):
    srv.script(Reply(text="a", usage=Tokens(input=100, output=10, cache_read=50, cache_write=20)))
    prices = {
        "anthropic/claude-from-the-future-9": {
            "input_cost_per_token": 1.0,
            "output_cost_per_token": 10.0,
            "cache_read_input_token_cost": 0.1,
            "cache_creation_input_token_cost": 2.0,
        }
    }
    turn = make("anthropic", srv, spec="anthropic/claude-from-the-future-9", prices=prices).complete(
        MESSAGES, TOOLS, FAST
    )
    assert turn.cost_usd == pytest.approx(100 * 1.0 + 10 * 10.0 + 50 * 0.1 + 20 * 2.0)


# --- retries ---------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_retry_after_twice_then_success(srv, provider):
    srv.script(Error(429, "slow down", retry_after=1), Error(429, "slow down", retry_after="2"), Reply(text="finally"))
    sleeps = Sleeps()
    turn = make(provider, srv, sleep=sleeps).complete(MESSAGES, TOOLS, FAST)
    assert turn.text == "finally"
    assert sleeps == [1.0, 2.0]
    assert [(e.attempt, e.error_type, e.status_code, e.wait_s) for e in turn.retries] == [
        (1, "RateLimited", 429, 1.0),
        (2, "RateLimited", 429, 2.0),
    ]
    assert turn.retry_wait_s >= 3.0
    assert len(srv.requests) == 3
    # The SDK's own retries are off: every request is a first try as far as it knows.
    assert {r.headers.get("x-stainless-retry-count", "0") for r in srv.requests} == {"0"}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_sdk_import_and_client_set_up_are_not_latency(srv, provider):
    # A deliberately slow set-up (the SDK may be imported already): latency starts after it. No
    # wall-time bound: latency lies inside the call, after the set-up, whatever the machine's load.
    srv.script(Reply(text="ok"))
    model = make(provider, srv)
    prepare, set_up = model._prepare, []

    def slow_prepare():
        started = time.monotonic()
        time.sleep(0.3)
        prepare()
        set_up.append(time.monotonic() - started)

    model._prepare = slow_prepare
    started = time.monotonic()
    turn = model.complete(MESSAGES, TOOLS, FAST)
    elapsed = time.monotonic() - started
    assert len(set_up) == 1 and set_up[0] >= 0.3
    assert 0 < turn.latency_s <= elapsed - set_up[0]


def test_retry_after_is_really_honoured_and_not_counted_as_latency(srv):
    srv.script(Error(429, retry_after=1), Reply(text="ok"))
    start = time.monotonic()
    turn = make("anthropic", srv, sleep=time.sleep).complete(MESSAGES, TOOLS, FAST)
    elapsed = time.monotonic() - start
    assert elapsed >= 1.0
    assert turn.retry_wait_s == 1.0
    assert turn.latency_s < elapsed - 0.9  # the wait is not the model's time


def test_retry_after_http_date_and_cap(srv, monkeypatch):
    now = 2_000_000_000  # the clock the date is read against, fixed: no test of the machine's speed
    monkeypatch.setattr("harness.models.errors.time", SimpleNamespace(time=lambda: now))
    soon = email.utils.formatdate(now + 3, usegmt=True)
    srv.script(Error(503, retry_after=soon), Error(429, retry_after=1000), Reply(text="ok"))
    sleeps = Sleeps()
    turn = make("openai", srv, sleep=sleeps).complete(MESSAGES, TOOLS, Settings(retry_max_wait_s=5))
    assert sleeps[0] == 3.0  # an HTTP date, read against the clock
    assert sleeps[1] == 5.0  # capped at retry_max_wait_s
    assert [e.error_type for e in turn.retries] == ["Overloaded", "RateLimited"]


@pytest.mark.parametrize(
    "status,error_type", [(529, "Overloaded"), (503, "Overloaded"), (500, "ServerError"), (502, "ServerError")]
)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_server_errors_are_retried_with_jittered_backoff(srv, provider, status, error_type):
    srv.script(Error(status), Error(status), Reply(text="ok"))
    sleeps = Sleeps()
    turn = make(provider, srv, sleep=sleeps).complete(MESSAGES, TOOLS, FAST)
    assert turn.text == "ok" and len(srv.requests) == 3
    assert [(e.error_type, e.status_code) for e in turn.retries] == [(error_type, status)] * 2
    # No Retry-After: exponential from 1 s, plus up to 1 s of jitter.
    assert 1.0 <= sleeps[0] <= 2.0 and 2.0 <= sleeps[1] <= 3.0


@pytest.mark.parametrize("status,exc", [(400, BadRequest), (401, AuthError), (403, AuthError), (404, NotFound)])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_client_errors_are_not_retried(srv, provider, status, exc):
    srv.script(Error(status, "nope", retry_after=1), Reply(text="never sent"))
    sleeps = Sleeps()
    with pytest.raises(exc) as info:
        make(provider, srv, sleep=sleeps).complete(MESSAGES, TOOLS, FAST)
    assert len(srv.requests) == 1 and sleeps == []
    assert not info.value.retryable and info.value.status_code == status
    assert "nope" in str(info.value)
    if exc is AuthError and provider in ("anthropic", "openai"):
        assert f"{provider.upper()}_API_KEY" in str(info.value)


@pytest.mark.parametrize(
    "provider,error",
    [
        ("anthropic", Error(400, "prompt is too long: 250000 tokens > 200000 maximum")),
        ("openai", Error(400, "This model's maximum context length is 128000 tokens.", code="context_length_exceeded")),
        (
            "litellm",
            Error(400, "This model's maximum context length is 128000 tokens.", code="context_length_exceeded"),
        ),
        ("litellm-anthropic", Error(400, "prompt is too long: 250000 tokens > 200000 maximum")),
    ],
)
def test_context_length_is_not_retried(srv, provider, error):
    srv.script(error, Reply(text="never sent"))
    with pytest.raises(ContextLengthExceeded) as info:
        make(provider, srv).complete(MESSAGES, TOOLS, FAST)
    assert len(srv.requests) == 1 and not info.value.retryable


@pytest.mark.parametrize("provider", PROVIDERS)
def test_retries_exhausted_raise_model_unavailable(srv, provider):
    srv.script(*[Error(429)] * 4)
    with pytest.raises(ModelUnavailable) as info:
        make(provider, srv).complete(MESSAGES, TOOLS, Settings(max_retries=3))
    err = info.value
    assert len(srv.requests) == 4
    assert isinstance(err.__cause__, RateLimited)
    assert [e.attempt for e in err.retries] == [1, 2, 3] and err.retry_wait_s > 0
    assert not err.retryable


@pytest.mark.parametrize("provider", PROVIDERS)
def test_timeout_is_retried(srv, provider):
    srv.script(Reply(text="too late", delay_s=1.5), Reply(text="in time"))
    turn = make(provider, srv).complete(MESSAGES, TOOLS, Settings(timeout_s=0.4))
    assert turn.text == "in time"
    assert [e.error_type for e in turn.retries] == ["ModelTimeout"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_connection_refused_is_retried_then_unavailable(provider):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}" + ("" if KNOWN[provider][3] == "anthropic" else "/v1")
    model = get_model(KNOWN[provider][0], base_url=base, api_key="k", sleep=Sleeps())
    with pytest.raises(ModelUnavailable) as info:
        model.complete(MESSAGES, TOOLS, Settings(max_retries=2))
    assert isinstance(info.value.__cause__, ConnectionFailed)
    assert len(info.value.retries) == 2


def test_anthropic_error_event_mid_stream_is_retried(srv):
    srv.script(Reply(text="partial", stream_error="overloaded_error"), Reply(text="whole"))
    turn = make("anthropic", srv, stream=True).complete(MESSAGES, TOOLS, FAST)
    assert turn.text == "whole"
    assert [e.error_type for e in turn.retries] == ["Overloaded"]


def test_parse_retry_after():
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    date = email.utils.formatdate(1_000_010, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=1_000_000) == 10.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


# --- replay and scripted ---------------------------------------------------------------------


def test_replay_from_list_and_jsonl_then_exhausted(tmp_path):
    recorded = [
        tool_turn("bash", {"cmd": "pytest"}).model_copy(update={"cost_usd": 0.01}),
        Turn(text="done", usage=Usage(input_tokens=5, output_tokens=1)),
    ]
    path = tmp_path / "turns.jsonl"
    path.write_text("\n".join(t.model_dump_json() for t in recorded) + "\n")
    for model in (ReplayModel([t.model_dump() for t in recorded]), get_model(f"replay:{path}")):
        first = model.complete(MESSAGES, TOOLS)
        assert first.tool_calls[0].arguments == {"cmd": "pytest"} and first.cost_usd == 0.01
        assert model.complete(MESSAGES, TOOLS) == recorded[1]
        with pytest.raises(ReplayExhausted, match="2 turns") as info:
            model.complete(MESSAGES, TOOLS)
        assert isinstance(info.value, ModelError) and not info.value.retryable


def test_scripted_model():
    model = ScriptedModel(
        [
            "hello",
            lambda messages, tools, settings: tool_turn("submit", {}, text=messages[-1]["content"]),
            RateLimited("scripted 429"),
        ]
    )
    assert model.complete(MESSAGES, TOOLS).text == "hello"
    assert model.complete(MESSAGES, TOOLS).text == "Fix the failing test."
    with pytest.raises(RateLimited):
        model.complete(MESSAGES, TOOLS)
    with pytest.raises(ReplayExhausted):
        model.complete(MESSAGES, TOOLS)
    assert len(model.calls) == 4


# --- types, spec parsing, pricing, import cost -----------------------------------------------


def test_get_model_specs():
    with pytest.raises(ModelConfigError) as info:
        get_model("gemini/pro")
    for form in ("anthropic/", "openai/", "litellm/", "replay:"):
        assert form in str(info.value)
    with pytest.raises(ModelConfigError, match="provider"):
        get_model("litellm/gpt-4o")
    m = get_model("litellm/anthropic/claude-sonnet-5-5", base_url="http://x")
    assert (m.name, m.provider, m.base_url) == ("litellm/anthropic/claude-sonnet-5-5", "litellm", "http://x")


def test_tool_call_parse_and_usage_add():
    assert ToolCall.parse("i", "n", "").arguments == {}
    assert ToolCall.parse("i", "n", '{"a": 1}').arguments == {"a": 1}
    listed = ToolCall.parse("i", "n", "[1]")
    assert listed.arguments is None and "object" in listed.parse_error
    total = Usage(input_tokens=1, cache_read_tokens=2) + Usage(input_tokens=10, output_tokens=3)
    assert total == Usage(input_tokens=11, output_tokens=3, cache_read_tokens=2)
    turn = tool_turn("bash", "{bad")
    assert json.loads(turn.model_dump_json())["tool_calls"][0]["parse_error"]
    assert turn.to_message()["tool_calls"][0]["raw_arguments"] == "{bad"


def test_pricing_lookup_rules():
    assert lookup_price("gpt-4o", "openai") is not None
    assert lookup_price("openai/gpt-4o", "litellm") is not None  # litellm id, bare map key
    assert lookup_price("anthropic/gpt-4o", "litellm") is None  # wrong owner: no guessing
    assert lookup_price("no-such-model", "openai") is None
    # A cache price that is unknown is charged at the input price, never at 0.
    price = Price(input_cost_per_token=2.0, output_cost_per_token=3.0)
    assert cost_usd(Usage(input_tokens=10, output_tokens=1, cache_read_tokens=4), price) == 23.0
    assert cost_usd(Usage(input_tokens=10), None) is None


@pytest.mark.parametrize("prompt", [100_000, 300_000])
def test_long_context_tier_prices_match_litellm(prompt):
    # gpt-6-sol bills a prompt above 272k tokens at a higher rate, for the whole request.
    price = lookup_price("gpt-6-sol", "openai")
    assert 272_000 in price.tiers
    usage = Usage(input_tokens=prompt, output_tokens=1000, cache_read_tokens=50_000)
    assert cost_usd(usage, price) == pytest.approx(litellm_cost("gpt-6-sol", "openai", usage))


def test_importing_models_imports_no_sdk():
    # What makes `import harness.models` slow is an SDK; which modules load is checked, not seconds.
    code = (
        "import sys; import harness.models; "
        "print([m for m in sys.modules if m.split('.')[0] in "
        "('anthropic', 'openai', 'litellm', 'httpx', 'httpx2')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out == "[]\n"
