"""Attacks on the metering proxy (issue 21, causes 1-7), each against the real proxy with a real
SDK or a raw socket client on one side and a local scripted provider on the other.

Each test is an attack that succeeded on the proxy before its defence: it says what the attacker
did and what must hold.
"""

from __future__ import annotations

import base64
import io
import json
import socket
import socketserver
import tempfile
import threading
from pathlib import Path

import anthropic
import httpx
import httpx2
import openai
import pytest
from support.fakellm import FakeLLM, Reply, Tokens, echo_key_401

from harness.agents.budget import AgentLimits, Budget
from harness.agents.external.proxy import MeteringProxy
from harness.agents.external.wire import get_wire

KEY = "sk-real-key-for-the-provider-0123456789"
TOKEN = "wl-attempt-token-abcdefghijklmnop"


@pytest.fixture
def sock_dir():
    with tempfile.TemporaryDirectory(prefix="wl-a-") as folder:
        yield folder


def start(upstream: str, sock_dir: str, wire: str, *, name: str = "p", **kw) -> tuple[MeteringProxy, list[dict]]:
    notes: list[dict] = []
    kw.setdefault("model", "claude-sonnet-5-5" if wire == "anthropic" else "gpt-6.1-sol")
    proxy = MeteringProxy(
        f"{sock_dir}/{name}.sock",
        wire=get_wire(wire),
        upstream=upstream,
        api_key=KEY,
        token=TOKEN,
        budget=Budget(kw.pop("limits", None) or AgentLimits()),
        provider="anthropic" if wire == "anthropic" else "openai",
        log=notes.append,
        **kw,
    )
    return proxy, notes


def connect(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    return sock


def post(path: str, target: str, body: dict, extra: bytes = b"") -> bytes:
    """A raw request on a fresh connection; everything the proxy answers, until it closes or 2 s pass idle."""
    data = json.dumps(body).encode()
    sock = connect(path)
    sock.settimeout(10)
    sock.sendall(
        f"POST {target} HTTP/1.1\r\nhost: proxy\r\nx-api-key: {TOKEN}\r\nauthorization: Bearer {TOKEN}\r\n".encode()
        + extra
        + f"content-type: application/json\r\nconnection: close\r\ncontent-length: {len(data)}\r\n\r\n".encode()
        + data
    )
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    sock.close()
    return out


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def anthropic_client(proxy: MeteringProxy) -> anthropic.Anthropic:
    http_client = httpx2.Client(transport=httpx2.HTTPTransport(uds=proxy.socket_path))
    return anthropic.Anthropic(api_key=TOKEN, base_url="http://proxy", http_client=http_client, max_retries=0)


def openai_client(proxy: MeteringProxy) -> openai.OpenAI:
    http_client = httpx.Client(transport=httpx.HTTPTransport(uds=proxy.socket_path))
    return openai.OpenAI(api_key=TOKEN, base_url="http://proxy/v1", http_client=http_client, max_retries=0)


# ----------------------------------------------------------------------------- 1: cut streams


def test_a_client_hanging_up_mid_stream_is_charged_what_was_served(sock_dir):
    """Cause 1: the client reads the start of a streamed reply and hangs up before the usage event.
    The proxy drains the stream (the provider serves it anyway) and charges the provider's figure."""
    holds = [threading.Event() for _ in range(3)]
    with FakeLLM() as fake:
        fake.script(*[Reply(text="x" * 400, usage=Tokens(20_000, 300), hold=h) for h in holds])
        proxy, notes = start(fake.base_url, sock_dir, "anthropic")
        with proxy:
            for hold in holds:
                sock = connect(proxy.socket_path)
                body = json.dumps(
                    {
                        "model": "claude-sonnet-5-5",
                        "max_tokens": 1000,
                        "stream": True,
                        "messages": [{"role": "user", "content": "hi"}],
                    }
                ).encode()
                sock.sendall(
                    f"POST /v1/messages HTTP/1.1\r\nhost: p\r\nx-api-key: {TOKEN}\r\ncontent-length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                seen = b""
                while b"message_start" not in seen:
                    seen += sock.recv(4096)
                sock.close()  # before the usage event
                hold.set()
    assert proxy.budget.usage.input_tokens == 60_000 and proxy.budget.usage.output_tokens == 900
    assert proxy.budget.cost > 0 and proxy.budget.steps == 3
    assert [n["event"] for n in notes].count("client_gone") == 3


def test_a_stream_the_provider_cut_before_its_usage_is_charged_an_estimate(sock_dir):
    """Cause 1: the stream ends before its usage chunk (the provider dropped it): what was served
    is counted with a tokenizer, marked estimated, never 0."""
    from harness.agents.external.config import ToolRules
    from harness.agents.external.recorder import Recorder
    from harness.transcript import TranscriptWriter, read_transcript

    transcript = TranscriptWriter(Path(sock_dir) / "t.jsonl", secrets=[], fsync=False)
    with FakeLLM() as fake:
        fake.script(Reply(text="word " * 300, usage=Tokens(5000, 300), cut_after=40))
        recorder = Recorder(transcript, get_wire("openai-chat"), ToolRules())
        proxy, notes = start(fake.base_url, sock_dir, "openai-chat", record=recorder)
        with proxy:
            client = openai_client(proxy)
            with pytest.raises((httpx.HTTPError, openai.APIError)):
                for _ in client.chat.completions.create(
                    model="gpt-6.1-sol", stream=True, messages=[{"role": "user", "content": "say words " * 50}]
                ):
                    pass
    usage = proxy.budget.usage
    # 39 pieces of 5 characters served: about 39 tokens of text; the prompt's few hundred characters
    assert 20 <= usage.output_tokens <= 80 and usage.input_tokens >= 50
    assert proxy.stats.estimated == 1 and proxy.budget.cost > 0
    assert any(n["event"] == "estimated" for n in notes)
    transcript.close()
    events = read_transcript(Path(sock_dir) / "t.jsonl")
    response = next(e for e in events if e.type == "model_response")
    assert response.usage["output_tokens"] == usage.output_tokens  # the transcript has what was charged
    assert any(e.type == "error" and "estimated" in e.message for e in events)


def _ragged_stream(release: threading.Event):
    """An honest stream framed as awkwardly as HTTP allows: CRLF event separators, and a chunk
    every 3 bytes, so the word "usage", a separator's CR and its LF, and every event fall apart.
    The provider holds its last event (message_stop) until `release` is set."""
    events = [
        {"type": "message_start", "message": {"model": "claude-sonnet-5-5", "usage": {"input_tokens": 1234}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hel"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 56}},
        {"type": "message_stop"},
    ]
    sse = [b"event: %s\r\ndata: %s\r\n\r\n" % (e["type"].encode(), json.dumps(e).encode()) for e in events]

    def framed(data: bytes) -> list[bytes]:
        return [b"%x\r\n%s\r\n" % (len(data[i : i + 3]), data[i : i + 3]) for i in range(0, len(data), 3)]

    def answer(head: bytes):
        yield b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        yield from framed(b"".join(sse[:-1]))
        release.wait(10)
        yield from framed(sse[-1])
        yield b"0\r\n\r\n"

    return answer


def test_a_stream_cut_into_3_byte_chunks_is_charged_before_its_end_and_recorded_exactly(sock_dir):
    """The relay reads a stream's usage on the way without splitting every chunk into events (a
    chunk is read only when it completes an event with usage): however the provider cuts its
    events, the call is charged the provider's figure to the token as soon as its usage event has
    passed (before the stream ends, while the provider still holds its last event: the CLI's next
    call is checked against it), never an estimate; the recorder, which splits the stream as served
    on its own thread, gets the whole reply."""
    recorded, release = [], threading.Event()
    with _Scripted(_ragged_stream(release)) as provider:
        proxy, notes = start(provider.url, sock_dir, "anthropic", record=recorded.append)
        with proxy:
            body = json.dumps(
                {
                    "model": "claude-sonnet-5-5",
                    "max_tokens": 100,
                    "stream": True,
                    "messages": [{"role": "user", "content": "x"}],
                }
            ).encode()
            sock = connect(proxy.socket_path)
            sock.settimeout(10)
            sock.sendall(
                f"POST /v1/messages HTTP/1.1\r\nhost: p\r\nx-api-key: {TOKEN}\r\ncontent-length: {len(body)}\r\n\r\n".encode()
                + body
            )
            reader = sock.makefile("rb")
            while reader.readline() not in (b"\r\n", b""):
                pass  # the answer's head
            served = b""
            while b'"output_tokens": 56}}\r\n\r\n' not in served:  # the usage event has reached the client
                size = int(reader.readline(), 16)
                served += reader.read(size)
                assert size and reader.readline() == b"\r\n"
            charged = (proxy.budget.usage.input_tokens, proxy.budget.usage.output_tokens)
            release.set()
            while size := int(reader.readline(), 16):
                served += reader.read(size)
                reader.readline()
            reader.close()
            sock.close()
    assert charged == (1234, 56)  # charged before the stream ended
    assert served.endswith(b'{"type": "message_stop"}\r\n\r\n')
    assert (proxy.budget.usage.input_tokens, proxy.budget.usage.output_tokens) == (1234, 56)
    assert proxy.stats.estimated == 0 and not any(n["event"] == "estimated" for n in notes)
    (exchange,) = recorded
    assert exchange.reply is not None and exchange.reply.text == "hello"
    assert exchange.reply.stop_reason == "end_turn"
    assert (exchange.reply.usage.input_tokens, exchange.reply.usage.output_tokens) == (1234, 56)


# ----------------------------------------------------------------------------- 2: models


def test_only_the_configured_model_may_be_called(sock_dir):
    """Cause 2: a call to another (expensive, or unpriced) model is refused before it leaves; the
    configured one passes under its litellm prefix and as a dated alias, and an id that merely ends
    like it does not."""
    with FakeLLM(responder=lambda req: Reply(text="ok", usage=Tokens(10, 2))) as fake:
        proxy, notes = start(fake.base_url, sock_dir, "anthropic", limits=AgentLimits(max_cost_usd=0.05))
        with proxy:
            client = anthropic_client(proxy)
            for other in ("claude-opus-9", "some-unpriced-model", "evil/claude-sonnet-5-5", "claude-sonnet-5-5x"):
                with pytest.raises(anthropic.PermissionDeniedError) as refused:
                    client.messages.create(model=other, max_tokens=10, messages=[{"role": "user", "content": "x"}])
                assert "not allowed" in str(refused.value)
            for same in ("claude-sonnet-5-5", "anthropic/claude-sonnet-5-5", "claude-sonnet-5-5-20260115"):
                client.messages.create(model=same, max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert [r.body["model"] for r in fake.requests] == [
        "claude-sonnet-5-5",
        "anthropic/claude-sonnet-5-5",
        "claude-sonnet-5-5-20260115",
    ]
    assert proxy.budget.cost_known and proxy.stats.refused_model == 4
    # the proxy's log names each refused id (`agents verify` reads them: a CLI release asking for a new model)
    named = [n.get("model") for n in notes if n["event"] == "refused" and n["why"] == "model"]
    assert named == ["claude-opus-9", "some-unpriced-model", "evil/claude-sonnet-5-5", "claude-sonnet-5-5x"]


def test_an_allow_listed_side_model_is_priced_and_an_unpriced_one_needs_the_flag(sock_dir):
    """Cause 2: a side model in the allow-list is charged at its own price; a model without a price
    is refused unless the attempt allows unknown models, and then the token limit still holds."""
    with FakeLLM(responder=lambda req: Reply(text="ok", usage=Tokens(1000, 500))) as fake:
        proxy, _ = start(fake.base_url, sock_dir, "anthropic", models=["claude-haiku-5-5", "mystery-model-9"])
        loose, _ = start(
            fake.base_url,
            sock_dir,
            "anthropic",
            name="loose",
            models=["mystery-model-9"],
            allow_unknown_model=True,
            limits=AgentLimits(max_output_tokens=1000),
        )
        with proxy, loose:
            client = anthropic_client(proxy)
            client.messages.create(model="claude-haiku-5-5", max_tokens=10, messages=[{"role": "user", "content": "x"}])
            assert proxy.budget.cost_known and proxy.budget.cost > 0
            with pytest.raises(anthropic.PermissionDeniedError) as refused:
                client.messages.create(
                    model="mystery-model-9", max_tokens=10, messages=[{"role": "user", "content": "x"}]
                )
            assert "no price" in str(refused.value)
            assert proxy.budget.cost_known
            other = anthropic_client(loose)
            for _ in range(2):
                other.messages.create(
                    model="mystery-model-9", max_tokens=10, messages=[{"role": "user", "content": "x"}]
                )
            with pytest.raises(anthropic.RateLimitError):  # 1000 output tokens spent: the token limit holds
                other.messages.create(
                    model="mystery-model-9", max_tokens=10, messages=[{"role": "user", "content": "x"}]
                )
    assert not loose.budget.cost_known and loose.limit is not None and loose.limit.reason == "token_limit"
    assert len(fake.requests) == 3


# ----------------------------------------------------------------------------- 3: several choices


def test_several_choices_are_refused(sock_dir):
    """Cause 3: `n: 64` would multiply the output past the clamp."""
    with FakeLLM(responder=lambda req: Reply(text="ok")) as fake:
        proxy, _ = start(fake.base_url, sock_dir, "openai-chat", limits=AgentLimits(max_output_tokens=2000))
        with proxy:
            client = openai_client(proxy)
            with pytest.raises(openai.BadRequestError) as refused:
                client.chat.completions.create(model="gpt-6.1-sol", n=64, messages=[{"role": "user", "content": "x"}])
            assert "choices" in str(refused.value)
            answer = post(
                proxy.socket_path,
                "/v1/chat/completions",
                {"model": "gpt-6.1-sol", "best_of": 8, "messages": [{"role": "user", "content": "x"}]},
            )
            assert status_of(answer) == 400
            client.chat.completions.create(model="gpt-6.1-sol", n=1, messages=[{"role": "user", "content": "x"}])
    assert len(fake.requests) == 1


# ----------------------------------------------------------------------------- 4: provider-side tools


def test_provider_side_tools_are_stripped_and_mcp_servers_refused(sock_dir):
    """Cause 4: web search/fetch and code execution run at the provider (network off would not be
    off) and cost fees: stripped and recorded; MCP servers and a forced server tool are refused."""
    bash = {"name": "Bash", "description": "run", "input_schema": {"type": "object"}}
    with FakeLLM(responder=lambda req: Reply(text="ok")) as fake:
        proxy, notes = start(fake.base_url, sock_dir, "anthropic")
        responses, _ = start(fake.base_url, sock_dir, "openai-responses", name="r")
        chat, _ = start(fake.base_url, sock_dir, "openai-chat", name="c")
        with proxy, responses, chat:
            client = anthropic_client(proxy)
            client.messages.create(
                model="claude-sonnet-5-5",
                max_tokens=10,
                messages=[{"role": "user", "content": "x"}],
                tools=[
                    bash,
                    {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
                    {"type": "web_fetch_20250910", "name": "web_fetch"},
                    {"type": "code_execution_20250825", "name": "code_execution"},
                ],
            )
            with pytest.raises(anthropic.BadRequestError):
                client.messages.create(
                    model="claude-sonnet-5-5",
                    max_tokens=10,
                    messages=[{"role": "user", "content": "x"}],
                    extra_body={"mcp_servers": [{"type": "url", "url": "https://mcp.example", "name": "x"}]},
                )
            with pytest.raises(anthropic.BadRequestError):
                client.messages.create(
                    model="claude-sonnet-5-5",
                    max_tokens=10,
                    messages=[{"role": "user", "content": "x"}],
                    tools=[bash, {"type": "web_search_20250305", "name": "web_search"}],
                    tool_choice={"type": "tool", "name": "web_search"},
                )
            ro = openai_client(responses)
            ro.responses.create(
                model="gpt-6.1-sol",
                input="x",
                tools=[
                    {"type": "web_search_preview"},
                    {"type": "file_search", "vector_store_ids": ["vs_1"]},
                    {"type": "function", "name": "shell", "parameters": {"type": "object"}},
                ],
            )
            with pytest.raises(openai.BadRequestError):
                ro.responses.create(
                    model="gpt-6.1-sol",
                    input="x",
                    tools=[{"type": "mcp", "server_label": "x", "server_url": "https://mcp.example"}],
                )
            co = openai_client(chat)
            co.chat.completions.create(
                model="gpt-6.1-sol", messages=[{"role": "user", "content": "x"}], web_search_options={}
            )
    sent = [r.body for r in fake.requests]
    assert len(sent) == 3
    assert [t["name"] for t in sent[0]["tools"]] == ["Bash"]
    assert [t["type"] for t in sent[1]["tools"]] == ["function"]
    assert "web_search_options" not in sent[2]
    stripped = [n for n in notes if n["event"] == "stripped"]
    assert stripped and stripped[0]["what"] == ["web_search", "web_fetch", "code_execution"]
    assert proxy.stats.stripped == 3 and proxy.stats.refused_target == 2


def _searched(head: bytes) -> list[bytes]:
    """An Anthropic reply that used web search three times."""
    body = json.dumps(
        {
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-5-5",
            "content": [{"type": "text", "text": "found"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 1000, "output_tokens": 10, "server_tool_use": {"web_search_requests": 3}},
        }
    ).encode()
    return [b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)]


def test_a_provider_side_tool_the_config_allows_is_kept_and_its_fees_charged(sock_dir):
    """Cause 4: an agent config may allow a provider-side tool with its fee per use: the tool then
    reaches the provider, and each use the reply reports is charged at that fee."""
    from harness.models.pricing import cost_usd, lookup_price
    from harness.models.types import Usage

    tools = [{"type": "web_search_20250305", "name": "web_search"}, {"type": "web_fetch_20250910", "name": "web_fetch"}]
    with _Scripted(_searched) as provider:
        proxy, notes = start(provider.url, sock_dir, "anthropic", server_tools={"web_search": 0.01})
        with proxy:
            answer = post(
                proxy.socket_path,
                "/v1/messages",
                {
                    "model": "claude-sonnet-5-5",
                    "max_tokens": 50,
                    "messages": [{"role": "user", "content": "x"}],
                    "tools": tools,
                    "tool_choice": {"type": "tool", "name": "web_search"},
                },
            )
    assert status_of(answer) == 200
    sent = json.loads(provider.seen[0].split(b"\r\n\r\n", 1)[1])
    assert [t["name"] for t in sent["tools"]] == ["web_search"]  # web_fetch is not allowed: stripped
    tokens = cost_usd(Usage(input_tokens=1000, output_tokens=10), lookup_price("claude-sonnet-5-5", "anthropic"))
    assert proxy.budget.cost == pytest.approx(tokens + 0.03)
    assert [n["what"] for n in notes if n["event"] == "stripped"] == [["web_fetch"]]


# ----------------------------------------------------------------------------- 5: the key


class _Scripted(socketserver.ThreadingMixIn, socketserver.TCPServer):
    """A provider that answers every request with the bytes `answer(request_bytes)` returns."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, answer) -> None:
        self.answer, self.seen = answer, []

        class Handler(socketserver.BaseRequestHandler):
            def handle(handler) -> None:
                data = b""
                while b"\r\n\r\n" not in data:
                    more = handler.request.recv(65536)
                    if not more:
                        return
                    data += more
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    (int(x.split(b":")[1]) for x in head.split(b"\r\n") if x.lower().startswith(b"content-length")), 0
                )
                while len(body) < length:
                    body += handler.request.recv(65536)
                self.seen.append(head + b"\r\n\r\n" + body)
                for part in self.answer(head):
                    handler.request.sendall(part)

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()


def _echo_stream(head: bytes) -> list[bytes]:
    """A stream whose error event echoes the key plain, in hex and base64, each form cut in two
    HTTP chunks in the middle of the key."""
    start = json.dumps({"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 7}}})
    forms = [KEY, KEY.encode().hex(), base64.b64encode(b"u:" + KEY.encode()).decode()]
    error = json.dumps({"type": "error", "error": {"type": "x", "message": "bad key " + " / ".join(forms)}})
    events = f"event: message_start\ndata: {start}\n\nevent: error\ndata: {error}\n\n".encode()
    out = [b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"]
    cuts = sorted({0, len(events)} | {events.index(f.encode()) + len(f) // 2 for f in forms})
    for a, b in zip(cuts, cuts[1:]):
        out.append(b"%x\r\n%s\r\n" % (b - a, events[a:b]))
    return out + [b"0\r\n\r\n"]


def test_a_provider_echoing_the_key_never_reaches_the_cli(sock_dir):
    """Cause 5: a provider echoes the real key (plain, hex, base64) in a 401 body and in a stream,
    cut across chunk boundaries: the CLI gets [REDACTED]."""
    encoded = base64.b64encode(KEY.encode()).decode()
    with FakeLLM(responder=echo_key_401) as fake:
        proxy, _ = start(fake.base_url, sock_dir, "anthropic")
        with proxy:
            answer = post(
                proxy.socket_path,
                "/v1/messages",
                {"model": "claude-sonnet-5-5", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]},
            )
    assert status_of(answer) == 401 and b"REDACTED" in answer
    assert KEY.encode() not in answer and encoded[:20].encode() not in answer
    with _Scripted(_echo_stream) as provider:
        proxy, _ = start(provider.url, sock_dir, "anthropic", name="s")
        with proxy:
            answer = post(
                proxy.socket_path,
                "/v1/messages",
                {
                    "model": "claude-sonnet-5-5",
                    "max_tokens": 5,
                    "stream": True,
                    "messages": [{"role": "user", "content": "x"}],
                },
            )
    body = b"".join(answer.split(b"\r\n"))  # the chunk framing removed, so a key cut in two would show
    assert b"bad key" in body and body.count(b"REDACTED") == 3
    for form in (KEY, KEY.encode().hex(), base64.b64encode(b"u:" + KEY.encode()).decode()[4:30]):
        assert form.encode() not in body


# ----------------------------------------------------------------------------- 6: HTTP/1.1 heads


@pytest.mark.parametrize(
    "extra",
    [
        b"x-smuggle: a\rPOST /v1/files HTTP/1.1\r\n",  # a bare CR inside a header
        b"x-smuggle: a\nx-other: b\r\n",  # a bare LF ending a header line
        b" folded: continuation\r\n",  # obsolete line folding
        b"content-length: 1\r\n",  # a second, different content length
        b"transfer-encoding: chunked\r\n",  # both framings
    ],
)
def test_a_malformed_head_is_refused(sock_dir, extra):
    """Cause 6: a head a lax upstream would read differently (a second request, with the real
    key, on a path the proxy refuses) is refused with 400 and nothing is forwarded."""
    with FakeLLM(responder=lambda req: Reply(text="ok")) as fake:
        proxy, _ = start(fake.base_url, sock_dir, "anthropic")
        with proxy:
            answer = post(
                proxy.socket_path,
                "/v1/messages",
                {"model": "claude-sonnet-5-5", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]},
                extra,
            )
    assert status_of(answer) == 400
    assert not fake.requests and not fake.other_requests


# ----------------------------------------------------------------------------- 7: connections


def test_connections_past_the_cap_hurt_only_their_attempt(sock_dir):
    """Cause 7: an agent opens connection after connection to its proxy. Past the attempt's cap
    they are closed at once (no thread, no upstream socket); another attempt's proxy serves on."""
    with FakeLLM(responder=lambda req: Reply(text="ok")) as fake:
        greedy, notes = start(fake.base_url, sock_dir, "anthropic", max_connections=8)
        honest, _ = start(fake.base_url, sock_dir, "anthropic", name="h", max_connections=8)
        with greedy, honest:
            held = [connect(greedy.socket_path) for _ in range(60)]
            for _ in range(1000):  # until the proxy has taken each one (kept, or refused and closed)
                if len(greedy._clients) + getattr(greedy.stats, "refused_connections", 0) >= 60:
                    break
                threading.Event().wait(0.01)
            served = len(greedy._clients)
            closed = 0
            for sock in held:  # those past the cap are answered 503 and closed; the rest wait for a request
                sock.setblocking(False)
                try:
                    closed += sock.recv(65536).startswith(b"HTTP/1.1 503")
                except BlockingIOError:
                    pass
            anthropic_client(honest).messages.create(
                model="claude-sonnet-5-5", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
            for sock in held:
                sock.close()
    assert served <= 8 and closed >= 52
    assert greedy.stats.refused_connections >= 52 and any(n["event"] == "too_many_connections" for n in notes)
    assert len(fake.requests) == 1


def test_logs_copied_out_of_the_container_are_scrubbed(tmp_path, monkeypatch):
    """Cause 5: a CLI's own log (copied out of the container into the run folder) holds the key a
    provider echoed, plain, in hex and in base64: every copied byte is scrubbed as records are."""
    from support.fakesandbox import LocalSandbox

    from harness.agents.external import _copy_logs

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    logs = tmp_path / "container-logs"
    (logs / "attempt-1").mkdir(parents=True)
    (logs / "home").mkdir()
    forms = [KEY, KEY.encode().hex(), base64.b64encode(b"x:" + KEY.encode()).decode()]
    (logs / "attempt-1" / "cli.log").write_text("echo: " + "\n".join(forms) + "\n")
    (logs / "home" / "trace.json").write_text(json.dumps({"dump": KEY.encode().hex().upper()}))
    (tmp_path / "repo").mkdir()
    host = tmp_path / "host"
    host.mkdir()
    with LocalSandbox(tmp_path / "repo") as sb:
        assert _copy_logs(sb, str(logs), host) == ""
    copied = b"".join(p.read_bytes() for p in sorted(host.rglob("*")) if p.is_file())
    assert copied.count(b"[REDACTED]") == 4
    for form in (KEY, KEY.encode().hex(), KEY.encode().hex().upper(), forms[2][4:30]):
        assert form.encode() not in copied


@pytest.mark.parametrize(
    "lines",
    [
        [b"Content-Length: 5\r\n", b"X-A: 1\r\n"],
        [b"content-length :5\r\n", b"CONTENT-LENGTH:\t7 \r\n"],  # white space before the colon, twice
        [b"x-a: v\rContent-Length: 9\r\n", b"Content-Length: 4\r\n"],  # a bare CR hides the second name
        [b" content-length: 8\r\n", b"content-length: 3\n"],  # a folded line names nothing; a bare LF ends
        [b"Transfer-Encoding: gzip\r\n", b"transfer-encoding: chunked\r\n", b"connection: close\r\n"],
        [b"no colon here\r\n", b"x-empty:\r\n", b"x-api-key: \tsk \r\n"],
    ],
)
def test_a_head_is_read_as_the_http_grammar_says(lines):
    """A provider's head (read laxly) is split in one pass: each header's values are what the
    pattern `^name[ \\t]*:([^\\r\\n]*)` over its lines finds, in order (the rule the relay
    frames a body by), and what `get` returns is the first of them, stripped."""
    import re

    from harness.agents.external.http1 import Head

    head = Head("HTTP/1.1 200 OK", lines)
    raw = b"".join(lines)
    for name in ("content-length", "transfer-encoding", "x-a", "x-empty", "x-api-key", "connection", "absent"):
        expected = re.findall(rb"(?im)^" + re.escape(name.encode()) + rb"[ \t]*:([^\r\n]*)", raw)
        assert head.values(name) == expected, name
        assert head.get(name) == (expected[0].decode("latin-1").strip() if expected else "")


class _Pieces(io.RawIOBase):
    """A stream that arrives in the given pieces, one per read (as a socket delivers segments)."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = list(pieces)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if not self.pieces:
            return 0
        piece = self.pieces.pop(0)
        buffer[: len(piece)] = piece
        return len(piece)


def _batches(pieces: list[bytes]) -> tuple[list[list[bytes]], bool]:
    from harness.agents.external.http1 import ChunkBatches

    reader = ChunkBatches(io.BufferedReader(_Pieces(pieces), buffer_size=1 << 18))
    return list(reader), reader.extra


def test_a_chunked_stream_is_read_in_batches_of_what_has_arrived():
    """The relay forwards the chunks already there with one write: each batch is every chunk
    whole in what has arrived, however the provider's bytes are cut (inside a size line, a chunk's
    data, between its CR and LF), with chunk extensions and LF-only lines read as `chunks` reads
    them, trailers consumed, and bytes after the body flagged (the connection is then dropped)."""
    body = b"3\r\nabc\r\n2;ext=x\r\nde\r\n4\nfghi\n1\r\nj\r\n0\r\nx-trailer: 1\r\n\r\n"
    assert _batches([body]) == ([[b"abc", b"de", b"fghi", b"j"]], False)
    cuts = [body[:1], body[1:9], body[9:19], body[19:30], body[30:37], body[37:]]
    batches, extra = _batches(cuts)
    assert [d for batch in batches for d in batch] == [b"abc", b"de", b"fghi", b"j"] and not extra
    assert batches[0] == [b"abc"]  # forwarded before the rest arrived
    assert _batches([body + b"HTTP/1.1 200 OK\r\n"]) == ([[b"abc", b"de", b"fghi", b"j"]], True)
    from harness.agents.external.http1 import ChunkBatches

    for pieces, ended in (([body], True), ([body[:-2], body[-2:]], False), (cuts, False)):  # (cuts: trailers last)
        reader = ChunkBatches(io.BufferedReader(_Pieces(pieces), buffer_size=1 << 18))
        seen = [(batch, reader.ended) for batch in reader]  # ended: while the last batch is read
        assert [e for _, e in seen] == [False] * (len(seen) - 1) + [ended], pieces
        assert [d for b, _ in seen for d in b] == [b"abc", b"de", b"fghi", b"j"] and not reader.extra
    from harness.agents.external.http1 import BadMessage

    for broken in (b"3\r\nabcX\r\n0\r\n\r\n", b"zz\r\nabc\r\n", b"3\r\nab", b"1" * 2000):
        with pytest.raises(BadMessage):
            _batches([broken])


def test_the_provider_connection_blocks_with_the_kernels_timeout():
    """The relay's connection to the provider is a blocking socket (a socket with a Python timeout
    polls before every send and receive: one more syscall, and one more wait for the GIL behind
    the other calls' relays, each time), and its timeout still holds: a provider that accepts and
    never answers ends the read with an error instead of holding the relay forever."""
    from harness.agents.external.http1 import Upstream, read_head

    listener = socket.create_server(("127.0.0.1", 0))
    try:
        upstream = Upstream("127.0.0.1", listener.getsockname()[1], https=False, timeout=0.3)
        silent, _ = listener.accept()
        try:
            assert upstream.sock.gettimeout() is None  # no poll before each operation
            with pytest.raises(OSError):
                read_head(upstream.rf)  # as the relay reads the provider's answer
        finally:
            upstream.close()
            silent.close()
    finally:
        listener.close()


def _stream_answer(chunks: list[bytes], end: bytes):
    def answer(head: bytes):
        yield b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        for data in chunks:
            yield b"%x\r\n%s\r\n" % (len(data), data)
        yield end

    return answer


def _stream_through(sock_dir: str, answer, monkeypatch) -> tuple[list[bytes], bytes]:
    """What the relay wrote to the client (each write), and all the client read, for one stream."""
    from harness.agents.external import relay

    writes: list[bytes] = []
    send = relay.Connection.send

    def counted(self, data: bytes) -> None:
        writes.append(data)
        send(self, data)

    monkeypatch.setattr(relay.Connection, "send", counted)
    with _Scripted(answer) as provider:
        proxy, _ = start(provider.url, sock_dir, "anthropic")
        with proxy:
            body = json.dumps(
                {
                    "model": "claude-sonnet-5-5",
                    "max_tokens": 10,
                    "stream": True,
                    "messages": [{"role": "user", "content": "x"}],
                }
            ).encode()
            sock = connect(proxy.socket_path)
            sock.settimeout(10)
            sock.sendall(
                f"POST /v1/messages HTTP/1.1\r\nhost: p\r\nx-api-key: {TOKEN}\r\nconnection: close\r\n"
                f"content-length: {len(body)}\r\n\r\n".encode()
                + body
            )
            got = b""
            while more := sock.recv(65536):
                got += more
            sock.close()
    return writes, got


def test_a_streams_head_goes_out_with_its_first_chunks(sock_dir, monkeypatch):
    """A stream's head is written with the first chunks that arrive (one write less a call, one
    wait less for the GIL with 8 calls at once); a stream that ends before any chunk still gets
    its head and its end, and one cut before any chunk gets its head and no end (the client must
    see the reply did not finish)."""
    start_event = b'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":3}}}\n\n'
    writes, got = _stream_through(sock_dir, _stream_answer([start_event], b"0\r\n\r\n"), monkeypatch)
    assert writes[0].startswith(b"HTTP/1.1 200 OK\r\n") and start_event in writes[0]
    assert got.endswith(b"0\r\n\r\n") and got.count(b"HTTP/1.1 200") == 1
    writes, got = _stream_through(sock_dir, _stream_answer([], b"0\r\n\r\n"), monkeypatch)
    assert got.startswith(b"HTTP/1.1 200 OK\r\n") and got.endswith(b"\r\n\r\n0\r\n\r\n")
    writes, got = _stream_through(sock_dir, _stream_answer([], b""), monkeypatch)  # the provider hangs up
    assert got.startswith(b"HTTP/1.1 200 OK\r\n") and got.endswith(b"chunked\r\n\r\n")


def test_a_streams_end_goes_out_with_its_last_chunks(sock_dir, monkeypatch):
    """When the provider's last chunk and the body's end (size 0, trailers, blank line) arrive
    together, the relay forwards them with one write; an end that arrives on its own, later, is
    still forwarded (and a body whose end never comes is not ended: the cut stays visible)."""
    stop = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'

    def together(head: bytes):
        yield b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        yield b"%x\r\n%s\r\n0\r\nx-t: 1\r\n\r\n" % (len(stop), stop)

    writes, got = _stream_through(sock_dir, together, monkeypatch)
    assert stop in writes[-1] and writes[-1].endswith(b"\r\n0\r\n\r\n")
    assert got.endswith(stop + b"\r\n0\r\n\r\n") and got.count(b"0\r\n\r\n") == 1
    writes, got = _stream_through(sock_dir, _stream_answer([stop], b"0\r\n\r\n"), monkeypatch)
    assert got.endswith(stop + b"\r\n0\r\n\r\n")


def test_a_tls_provider_connection_keeps_its_timeout(tmp_path, monkeypatch):
    """Over TLS the timeout stays Python's (the ssl module retries a blocking socket's EAGAIN
    forever, so the kernel's timeout would never end a read): a TLS provider that accepts and
    never answers still ends the read with an error."""
    import shutil
    import ssl
    import subprocess

    from harness.agents.external import http1

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1"]
        + ["-subj", "/CN=localhost"],
        check=True,
        capture_output=True,
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    client = ssl.create_default_context(cafile=str(cert))
    client.check_hostname = False
    monkeypatch.setattr(http1.ssl, "create_default_context", lambda: client)
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def silent() -> None:
        conn, _ = listener.accept()
        with server.wrap_socket(conn, server_side=True):
            done.wait(30)  # the handshake, then nothing

    threading.Thread(target=silent, daemon=True).start()
    try:
        upstream = http1.Upstream("127.0.0.1", listener.getsockname()[1], https=True, timeout=0.3)
        try:
            with pytest.raises(OSError):
                http1.read_head(upstream.rf)
        finally:
            upstream.close()
    finally:
        done.set()
        listener.close()
