"""The metering proxy with the real SDKs on one side and the scripted provider on the other.

No Docker: the SDKs reach the proxy's Unix socket directly (httpx's uds transport), as the
forwarder does inside a container. Checked: the key swap, the three wire formats (streaming and
not), usage and cost charged to the Budget, the clamp, refusals (token, target, CONNECT, budget),
and what the recorder writes.
"""

from __future__ import annotations

import http.client
import json
import socket
import tempfile
import threading
from pathlib import Path

import anthropic
import httpx
import httpx2
import openai
import pytest
from support.fakellm import Call, FakeLLM, Reply, Tokens

from harness.agents.budget import AgentLimits, Budget
from harness.agents.external.config import ToolRules
from harness.agents.external.proxy import MeteringProxy
from harness.agents.external.recorder import Recorder
from harness.agents.external.wire import get_wire
from harness.models.pricing import cost_usd, lookup_price
from harness.models.types import Usage
from harness.transcript import TranscriptWriter, read_transcript

KEY = "sk-real-key-for-the-provider-0123456789"
TOKEN = "wl-attempt-token-abcdefghijklmnop"


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("proxy")
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def raw(path: str, method: str, target: str, body: bytes = b"", headers: dict | None = None) -> tuple[int, dict]:
    conn = UnixConnection(path)
    conn.request(method, target, body=body or None, headers=headers or {})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, {"headers": dict(resp.getheaders()), "body": json.loads(data) if data else None}


@pytest.fixture
def sock_dir():
    with tempfile.TemporaryDirectory(prefix="wl-t-") as folder:
        yield folder


def start(
    fake: FakeLLM,
    sock_dir: str,
    wire: str,
    *,
    limits: AgentLimits | None = None,
    transcript=None,
    refuse_status: int = 429,
    name: str = "p",
    token: str = TOKEN,
    rules: ToolRules | None = None,
):
    hits = []
    recorder = None
    if transcript is not None:
        recorder = Recorder(transcript, get_wire(wire), rules or ToolRules(), test_command="pytest -q")
    proxy = MeteringProxy(
        f"{sock_dir}/{name}.sock",
        wire=get_wire(wire),
        upstream=fake.base_url,
        api_key=KEY,
        token=token,
        budget=Budget(limits or AgentLimits()),
        model="claude-sonnet-5-5" if wire == "anthropic" else "gpt-6.1-sol",
        refuse_status=refuse_status,
        provider="anthropic" if wire == "anthropic" else "openai",
        record=recorder,
        on_limit=hits.append,
    )
    return proxy, hits


def uds_client(path: str, sdk=httpx):
    """An HTTP client of the package the SDK is built on (openai: httpx, anthropic: httpx2) on the socket."""
    return sdk.Client(transport=sdk.HTTPTransport(uds=path))


def test_anthropic_messages_streaming_and_not(sock_dir, tmp_path):
    transcript = TranscriptWriter(tmp_path / "t.jsonl", secrets=[], fsync=False)
    with FakeLLM() as fake:
        fake.script(
            Reply(calls=[Call("Bash", {"command": "pytest -q"})], usage=Tokens(100, 20, cache_read=50, cache_write=10)),
            Reply(text="done", usage=Tokens(30, 5, cache_read=120)),
        )
        proxy, _ = start(fake, sock_dir, "anthropic", transcript=transcript, rules=ToolRules(shell={"Bash": "command"}))
        with proxy, uds_client(proxy.socket_path, httpx2) as http_client:
            client = anthropic.Anthropic(api_key=TOKEN, base_url="http://proxy", http_client=http_client, max_retries=0)
            first = client.messages.create(
                model="claude-sonnet-5-5",
                max_tokens=16000,
                messages=[{"role": "user", "content": "fix it"}],
                tools=[{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}],
            )
            call = first.content[0]
            with client.messages.stream(
                model="claude-sonnet-5-5",
                max_tokens=1000,
                messages=[
                    {"role": "user", "content": "fix it"},
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": call.id, "name": "Bash", "input": call.input}],
                    },
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": call.id,
                                "content": "FAILED tests/test_a.py::test_x - assert 1 == 2\n"
                                "========= 1 failed, 2 passed in 0.12s =========",
                                "is_error": True,
                            }
                        ],
                    },
                ],
            ) as stream:
                second = stream.get_final_message()
            count = client.messages.count_tokens(
                model="claude-sonnet-5-5", messages=[{"role": "user", "content": "hi"}]
            )
    transcript.close()
    assert second.content[0].text == "done" and count.input_tokens > 0
    # the provider saw the real key, never the token; the clamp left 16000 alone (far below the limit)
    assert all(r.headers["x-api-key"] == KEY for r in fake.requests + fake.other_requests)
    assert all(TOKEN not in json.dumps(r.headers) for r in fake.requests)
    assert [r.body["max_tokens"] for r in fake.requests] == [16000, 1000]
    total = Usage(input_tokens=100 + 50 + 10 + 30 + 120, output_tokens=25, cache_read_tokens=170, cache_write_tokens=10)
    assert proxy.budget.usage == total and proxy.stats.calls == 2 and proxy.stats.free == 1
    price = lookup_price("claude-sonnet-5-5", "anthropic")
    expected = cost_usd(
        Usage(input_tokens=160, output_tokens=20, cache_read_tokens=50, cache_write_tokens=10), price
    ) + cost_usd(Usage(input_tokens=150, output_tokens=5, cache_read_tokens=120), price)
    assert proxy.budget.cost == pytest.approx(expected)
    events = read_transcript(tmp_path / "t.jsonl")
    kinds = [e.type for e in events]
    assert kinds == [
        "model_request",
        "model_response",
        "tool_call",
        "tool_result",
        "test_run",
        "model_request",
        "model_response",
    ]
    requests = [e for e in events if e.type == "model_request"]
    assert [m["role"] for m in requests[0].new_messages] == ["system", "user"]  # the tool list, then the task
    assert requests[1].from_index == 1 and [m["role"] for m in requests[1].new_messages] == ["assistant", "user"]
    tool_call = events[2]
    assert tool_call.kind == "test" and tool_call.command == "pytest -q"
    result, run = events[3], events[4]
    assert result.name == "Bash" and result.is_error and result.exit_code == 1 and result.step == 1
    assert not run.green and run.failed == 1 and run.passed == 2
    assert events[6].usage["input_tokens"] == 150 and events[6].cost_usd == pytest.approx(
        expected - proxy.budget.cost + events[6].cost_usd
    )


def test_openai_chat_stream_gets_usage_and_responses_api(sock_dir):
    with FakeLLM() as fake:
        fake.script(
            Reply(text="hello", usage=Tokens(40, 7, cache_read=8)),
            Reply(calls=[Call("exec_command", {"cmd": "ls"})], usage=Tokens(50, 9, cache_read=10)),
            Reply(text="bye", usage=Tokens(60, 3)),
        )
        chat, _ = start(fake, sock_dir, "openai-chat", name="chat")
        responses, _ = start(fake, sock_dir, "openai-responses", name="resp")
        with chat, responses, uds_client(chat.socket_path) as c1, uds_client(responses.socket_path) as c2:
            client = openai.OpenAI(api_key=TOKEN, base_url="http://proxy/v1", http_client=c1, max_retries=0)
            parts = list(
                client.chat.completions.create(
                    model="gpt-6.1-sol", stream=True, messages=[{"role": "user", "content": "hi"}]
                )
            )
            rclient = openai.OpenAI(api_key=TOKEN, base_url="http://proxy/v1", http_client=c2, max_retries=0)
            with rclient.responses.stream(model="gpt-6.1-sol", input="list files") as stream:
                streamed = stream.get_final_response()
            plain = rclient.responses.create(model="gpt-6.1-sol", input="bye")
    assert "".join(p.choices[0].delta.content or "" for p in parts if p.choices) == "hello"
    # the proxy asked for usage in the stream, which the API otherwise leaves out
    assert fake.requests[0].body["stream_options"] == {"include_usage": True}
    assert fake.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert chat.budget.usage == Usage(input_tokens=48, output_tokens=7, cache_read_tokens=8)
    assert streamed.output[0].name == "exec_command" and plain.output_text == "bye"
    assert responses.budget.usage == Usage(input_tokens=120, output_tokens=12, cache_read_tokens=10)
    assert responses.budget.steps == 2


def test_refusals_reach_nothing_upstream(sock_dir):
    with FakeLLM() as fake:
        other, _ = start(fake, sock_dir, "anthropic", name="other", token="wl-another-attempts-token-xyz")
        proxy, _ = start(fake, sock_dir, "anthropic")
        body = json.dumps({"model": "claude-sonnet-5-5", "max_tokens": 10, "messages": []}).encode()
        with proxy, other:
            assert raw(proxy.socket_path, "POST", "/v1/messages", body)[0] == 401  # no token
            wrong = raw(proxy.socket_path, "POST", "/v1/messages", body, {"x-api-key": "wl-another-attempts-token-xyz"})
            assert wrong[0] == 401 and "token" in wrong[1]["body"]["error"]["message"]
            assert raw(other.socket_path, "POST", "/v1/messages", body, {"x-api-key": TOKEN})[0] == 401
            assert raw(proxy.socket_path, "CONNECT", "example.com:443", headers={"x-api-key": TOKEN})[0] == 405
            assert raw(proxy.socket_path, "POST", "http://169.254.169.254/latest", body, {"x-api-key": TOKEN})[0] == 403
            assert raw(proxy.socket_path, "GET", "/admin", headers={"x-api-key": TOKEN})[0] == 404
            assert raw(proxy.socket_path, "POST", "/v1/chat/completions", body, {"x-api-key": TOKEN})[0] == 404
            stats = proxy.stats
    assert not fake.requests and not fake.other_requests
    assert stats.refused_token == 2 and stats.refused_target == 4 and stats.calls == 0


def test_budget_refuses_past_the_limit_and_clamps(sock_dir):
    limits = AgentLimits(max_output_tokens=1000, max_steps=50)
    with FakeLLM() as fake:
        fake.script(Reply(text="a", usage=Tokens(10, 600)), Reply(text="b", usage=Tokens(10, 450)))
        proxy, hits = start(fake, sock_dir, "openai-chat", limits=limits, refuse_status=401)
        with proxy, uds_client(proxy.socket_path) as http_client:
            client = openai.OpenAI(api_key=TOKEN, base_url="http://proxy/v1", http_client=http_client, max_retries=3)
            client.chat.completions.create(model="gpt-6.1-sol", messages=[{"role": "user", "content": "1"}])
            client.chat.completions.create(
                model="gpt-6.1-sol", max_tokens=4000, messages=[{"role": "user", "content": "2"}]
            )
            with pytest.raises(openai.AuthenticationError) as refused:
                client.chat.completions.create(model="gpt-6.1-sol", messages=[{"role": "user", "content": "3"}])
    # the first call had no limit: one was added (what was left); the second's 4000 was clamped to 400
    assert fake.requests[0].body["max_completion_tokens"] == 1000
    assert fake.requests[1].body["max_tokens"] == 400
    assert len(fake.requests) == 2  # nothing went out once the limit was reached, retries included
    assert "token limit" in str(refused.value) and refused.value.response.headers["x-should-retry"] == "false"
    assert proxy.limit is not None and proxy.limit.reason == "token_limit"
    assert proxy.stats.refused_budget == 1


def test_cost_limit_clamps_and_refuses(sock_dir):
    price = lookup_price("claude-sonnet-5-5", "anthropic")
    limits = AgentLimits(max_cost_usd=0.01)
    with FakeLLM() as fake:
        fake.script(Reply(text="a", usage=Tokens(2000, 800)))
        proxy, hits = start(fake, sock_dir, "anthropic", limits=limits, refuse_status=403)
        with proxy, uds_client(proxy.socket_path, httpx2) as http_client:
            client = anthropic.Anthropic(api_key=TOKEN, base_url="http://proxy", http_client=http_client, max_retries=0)
            client.messages.create(
                model="claude-sonnet-5-5", max_tokens=8000, messages=[{"role": "user", "content": "x"}]
            )
            with pytest.raises(anthropic.PermissionDeniedError):
                client.messages.create(
                    model="claude-sonnet-5-5", max_tokens=8000, messages=[{"role": "user", "content": "y"}]
                )
            spent = proxy.budget.cost
    assert spent == pytest.approx(2000 * price.input_cost_per_token + 800 * price.output_cost_per_token)
    assert spent >= 0.01 and proxy.limit.reason == "cost_limit" and len(fake.requests) == 1
    # max_tokens clamped to what the money left buys: $0.01 at the output price
    assert fake.requests[0].body["max_tokens"] == int(0.01 / price.output_cost_per_token)
    assert [h.reason for h in hits] == ["cost_limit"]


def test_concurrent_streams_are_all_recorded(sock_dir, tmp_path):
    transcript = TranscriptWriter(tmp_path / "t.jsonl", secrets=[], fsync=False)
    with FakeLLM(responder=lambda req: Reply(text="x" * 200, usage=Tokens(10, 2))) as fake:
        proxy, _ = start(fake, sock_dir, "anthropic", transcript=transcript)
        errors = []

        def one(n: int) -> None:
            try:
                with uds_client(proxy.socket_path, httpx2) as http_client:
                    client = anthropic.Anthropic(api_key=TOKEN, base_url="http://proxy", http_client=http_client)
                    with client.messages.stream(
                        model="claude-sonnet-5-5",
                        max_tokens=10,
                        messages=[{"role": "user", "content": f"conversation {n}"}],
                    ) as s:
                        assert s.get_final_message().content[0].text == "x" * 200
            except Exception as exc:  # noqa: BLE001 (reported below)
                errors.append(exc)

        with proxy:
            threads = [threading.Thread(target=one, args=(n,)) for n in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    transcript.close()
    assert not errors
    events = read_transcript(Path(tmp_path / "t.jsonl"))
    assert sorted(e.step for e in events if e.type == "model_response") == list(range(1, 9))
    assert proxy.budget.usage.input_tokens == 80
