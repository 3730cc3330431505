"""Held-out red team of issue 21: a hostile agent or a hostile provider against the metering proxy
of external CLIs (the real `MeteringProxy` on its Unix socket, a real provider on TCP) and against
the attribution of an external attempt's ending (the real proxy's recorded calls, `attribute` with
its exact model-id rule, as `harness.agents.external` calls it).

Every test asserts the SAFE outcome. An attack that succeeds today is marked
`xfail(strict=True, reason=...)`: the suite stays green and shows it; once a defence lands, the
strict xfail turns red and must be removed. The results table is in docs/grading.md ("Held-out red
team of issue 21").

The provider here is a raw socket server (`Provider`): a hostile provider frames its answers in
ways an honest HTTP server library never would (chunk extensions, a close-delimited stream, a
gzip body nobody asked for, an interim 100 answer), so it writes bytes, not objects.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable

import pytest
from support.hostile import RUN_PREFIX
from support.polyglot import craft

import harness.agents.external.proxy as proxy_module
from harness.agents.budget import AgentLimits, Budget
from harness.agents.external.proxy import MeteringProxy
from harness.agents.external.relay import Exchange
from harness.agents.external.wire import get_wire
from harness.agents.provider import Call, attribute
from harness.grading import grade
from harness.records import ResultRow
from harness.report.gate import NO_REGRESSION, REGRESSION, SideRows, gate
from sandbox import Limits

KEY = "sk-ant-api03-REDTEAM4redteam4REDTEAM4redteam4-QQ9z"
TOKEN = "wl-attempt-token-redteam4"
SONNET = "claude-sonnet-5-5"
HAIKU = "claude-haiku-4-5"
GPT = "gpt-6.1-sol"

Answer = Callable[[bytes, bytes, socket.socket], bool]  # (head, body, conn) -> keep the connection open


# ----------------------------------------------------------------------------- a raw provider


class Provider:
    """A provider on 127.0.0.1 that reads each request (Content-Length framed) and lets `answer`
    write whatever bytes it likes. Every request is kept in `requests` as (head, body)."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[tuple[bytes, bytes]] = []
        self.release = threading.Event()  # a slow answer waits on this
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        rf = conn.makefile("rb")
        with contextlib.suppress(OSError, ValueError):
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = rf.readline()
                    if not line:
                        return
                    head += line
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = rf.read(length) if length else b""
                self.requests.append((head, body))
                if not self.answer(head, body, conn):
                    break
        with contextlib.suppress(OSError):
            conn.close()

    def close(self) -> None:
        self.release.set()
        with contextlib.suppress(OSError):
            self.listener.close()


def json_answer(payload: dict, status: str = "200 OK", extra: bytes = b"") -> bytes:
    data = json.dumps(payload).encode()
    return b"HTTP/1.1 %s\r\ncontent-type: application/json\r\n%scontent-length: %d\r\n\r\n%s" % (
        status.encode(),
        extra,
        len(data),
        data,
    )


def anthropic_message(output_tokens: int = 5000, text: str = "done", content: list | None = None) -> dict:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": SONNET,
        "content": [{"type": "text", "text": text}] if content is None else content,
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1000, "output_tokens": output_tokens},
    }


def sse(*events: dict) -> bytes:
    return b"".join(b"event: %s\ndata: %s\n\n" % (e["type"].encode(), json.dumps(e).encode()) for e in events)


def stream_events(text: str, output_tokens: int, usage: bool = True) -> list[dict]:
    events = [
        {
            "type": "message_start",
            "message": {**anthropic_message(0, ""), "content": [], "usage": {"input_tokens": 1000}},
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
    ]
    if usage:
        events.append(
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": output_tokens}}
        )
        events.append({"type": "message_stop"})
    return events


def always(data: bytes, keep: bool = True) -> Answer:
    def answer(head: bytes, body: bytes, conn: socket.socket) -> bool:
        conn.sendall(data)
        return keep

    return answer


# ----------------------------------------------------------------------------- the proxy and a client


class Rig:
    """One attempt's real proxy on a Unix socket in front of `provider`, with what it recorded."""

    def __init__(self, provider: Provider, *, wire: str = "anthropic", model: str = SONNET, **kwargs) -> None:
        self.provider = provider
        self.folder = tempfile.mkdtemp(prefix="wl-rt4-", dir="/tmp")  # a socket path must be short
        self.socket = f"{self.folder}/p.sock"
        self.budget = Budget(limits=kwargs.pop("limits", AgentLimits()))
        self.exchanges: list[Exchange] = []
        self.notes: list[dict] = []
        self.proxy = MeteringProxy(
            self.socket,
            wire=get_wire(wire),
            upstream=provider.url,
            api_key=KEY,
            token=TOKEN,
            budget=self.budget,
            model=model,
            provider="anthropic" if wire == "anthropic" else "openai",
            record=self.exchanges.append,
            log=self.notes.append,
            **kwargs,
        ).start()

    def ask(self, body: dict | bytes, *, path: str = "/v1/messages", headers: dict | None = None) -> bytes:
        """One request on a fresh connection (closed after the answer); the whole answer as bytes."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        head = {"x-api-key": TOKEN, "content-type": "application/json", "connection": "close", **(headers or {})}
        head.setdefault("content-length", str(len(data)))
        raw = f"POST {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in head.items()) + "\r\n"
        return self.send(raw.encode() + data)

    def send(self, raw: bytes, timeout: float = 30) -> bytes:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(timeout)
            sock.connect(self.socket)
            sock.sendall(raw)
            out = b""
            with contextlib.suppress(OSError):
                while chunk := sock.recv(1 << 16):
                    out += chunk
            return out

    def close(self) -> None:
        self.proxy.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def calls(self) -> list[Call]:
        """The attempt's model calls as the external agent builds them (its `on_call`)."""
        deadline = time.monotonic() + 10
        while len(self.exchanges) < self.proxy.stats.calls and time.monotonic() < deadline:
            time.sleep(0.01)
        return [Call(e.status, e.model, e.error, e.sent_at, e.answered_at) for e in self.exchanges]


@pytest.fixture
def rig():
    made: list[tuple[Provider, Rig]] = []

    def make(answer: Answer, **kwargs) -> Rig:
        provider = Provider(answer)
        made.append((provider, r := Rig(provider, **kwargs)))
        return r

    yield make
    for provider, r in made:
        provider.close()
        r.close()


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def ask_sonnet(max_tokens: int = 100, **more) -> dict:
    return {"model": SONNET, "max_tokens": max_tokens, "messages": [{"role": "user", "content": "hi"}], **more}


# ============================================================================= metering and the key


def test_gzip_bomb_request_is_refused_before_decompressing_past_the_body_limit(rig):
    r = rig(always(json_answer(anthropic_message())))
    pad = b'{"model":"%s","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"pad":"' % SONNET.encode()
    bomb = gzip.compress(pad + b"a" * (70 * 1024 * 1024) + b'"}', compresslevel=9)
    assert len(bomb) < 1024 * 1024
    answer = r.ask(bomb, headers={"content-encoding": "gzip"})
    assert status_of(answer) == 413
    assert r.provider.requests == []


def test_a_small_gzip_request_is_still_inflated_and_forwarded(rig):
    r = rig(always(json_answer(anthropic_message(5))))
    answer = r.ask(gzip.compress(json.dumps(ask_sonnet()).encode()), headers={"content-encoding": "gzip"})
    assert status_of(answer) == 200
    assert json.loads(r.provider.requests[0][1])["model"] == SONNET


def test_every_output_limit_key_is_clamped_to_what_is_left(rig):
    r = rig(
        always(json_answer({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}})),
        wire="openai-chat",
        model=GPT,
        limits=AgentLimits(max_output_tokens=50),
    )
    r.ask(
        {
            "model": GPT,
            "max_tokens": 100_000,
            "max_completion_tokens": 10,
            "messages": [{"role": "user", "content": "x"}],
        },
        path="/v1/chat/completions",
    )
    sent = json.loads(r.provider.requests[0][1])
    assert all(sent[k] <= 50 for k in ("max_tokens", "max_completion_tokens") if k in sent)


def _first_wins(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for k, v in pairs:
        out.setdefault(k, v)
    return out


def test_a_duplicate_model_key_is_not_forwarded_ambiguous(rig):
    r = rig(always(json_answer(anthropic_message(5))))
    raw = (
        b'{"model":"claude-opus-5-5","max_tokens":10,"messages":[{"role":"user","content":"x"}],'
        b'"model":"%s"}' % SONNET.encode()
    )
    answer = r.ask(raw)
    if r.provider.requests:  # forwarded: every reader must see the allowed model
        sent = json.loads(r.provider.requests[0][1], object_pairs_hook=_first_wins)
        assert sent["model"] == SONNET
    else:
        assert status_of(answer) == 400


def test_the_key_in_a_chunk_extension_never_reaches_the_container(rig):
    body = sse(*stream_events("hello", 2))
    chunked = b"%x;echo=%s\r\n%s\r\n0\r\n\r\n" % (len(body), KEY.encode(), body)
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    r = rig(always(head + chunked, keep=False))
    answer = r.ask(ask_sonnet(stream=True))
    assert b"hello" in answer
    assert KEY.encode() not in answer


def _gunzipped(answer: bytes) -> bytes:
    body = answer.split(b"\r\n\r\n", 1)[1]
    with contextlib.suppress(Exception):
        return gzip.decompress(body)
    return body


def test_a_gzipped_echo_of_the_key_never_reaches_the_container(rig):
    echo = gzip.compress(json.dumps({"error": {"message": f"invalid x-api-key {KEY}"}}).encode())
    r = rig(
        always(
            b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(echo), echo)
        )
    )
    answer = r.ask(ask_sonnet())
    assert KEY.encode() not in _gunzipped(answer)


def test_a_gzipped_reply_is_charged_or_refused(rig):
    data = gzip.compress(json.dumps(anthropic_message(5000)).encode())
    r = rig(
        always(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(data), data)
        )
    )
    answer = r.ask(ask_sonnet(8000))
    assert r.budget.usage.output_tokens >= 5000 or status_of(answer) >= 500


def test_a_gzipped_stream_is_charged_and_scrubbed(rig):
    data = gzip.compress(sse(*stream_events(f"hello {KEY}", 4000)))
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data)
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\n"
    r = rig(always(head + b"transfer-encoding: chunked\r\n\r\n" + chunked, keep=False))
    answer = r.ask(ask_sonnet(8000, stream=True))
    assert b"hello" in answer
    assert KEY.encode() not in answer
    assert r.budget.usage.output_tokens >= 4000


def test_a_close_delimited_stream_cut_before_its_usage_is_charged_what_was_served(rig):
    served = "word " * 400
    body = sse(*stream_events(served, 0, usage=False))
    r = rig(always(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n" + body, keep=False))
    r.ask(ask_sonnet(8000, stream=True))
    assert r.budget.usage.output_tokens >= 300


def test_a_reply_with_an_odd_content_block_is_still_charged_its_usage(rig):
    r = rig(always(json_answer(anthropic_message(5000, content=[{"type": "text", "text": "ok"}, "thinking..."]))))
    r.ask(ask_sonnet(8000))
    assert r.budget.usage.output_tokens >= 5000


def test_an_interim_100_answer_does_not_leave_the_call_uncharged(rig):
    final = json_answer(anthropic_message(5000))

    def answer(head: bytes, body: bytes, conn: socket.socket) -> bool:
        if b"100-continue" in head.lower():
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        conn.sendall(final)
        return True

    r = rig(answer)
    r.ask(ask_sonnet(8000), headers={"expect": "100-continue"})
    deadline = time.monotonic() + 5
    while r.budget.usage.output_tokens < 5000 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert r.budget.usage.output_tokens >= 5000


@pytest.mark.slow
def test_closing_the_proxy_of_a_killed_try_is_bounded_and_charges_what_was_served(rig, monkeypatch):
    monkeypatch.setattr(proxy_module, "CLOSE_WAIT_S", 0.5)  # the 60 s wait, shortened; the mechanism is the same
    events = stream_events("word " * 300, 4000)
    first, rest = sse(*events[:3]), sse(*events[3:])
    holder: dict[str, Provider] = {}

    def answer(head: bytes, body: bytes, conn: socket.socket) -> bool:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            b"%x\r\n%s\r\n" % (len(first), first)
        )
        holder["p"].release.wait(120)  # the provider is still generating when the try ends
        with contextlib.suppress(OSError):
            conn.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(rest), rest))
        return False

    r = rig(answer)
    holder["p"] = r.provider
    threading.Thread(target=lambda: r.ask(ask_sonnet(8000, stream=True)), daemon=True).start()
    deadline = time.monotonic() + 10
    while not r.provider.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # the first chunk is relayed
    closer = threading.Thread(target=r.proxy.close, daemon=True)  # the try is killed
    closer.start()
    try:
        closer.join(15)  # 30 times the (shortened) bound
        closed, spent = not closer.is_alive(), r.budget.usage.model_copy()
    finally:
        r.provider.release.set()
        closer.join(30)
    assert closed
    assert spent.input_tokens >= 1000 and spent.output_tokens > 0


# ============================================================================= requests and neighbours


@pytest.mark.parametrize(
    "head",
    [
        "content-length: 5\r\ntransfer-encoding: chunked",
        "transfer-encoding: chunked\r\ntransfer-encoding: identity",
        "transfer-encoding: chunked, identity",
        "content-length: 5\r\ncontent-length: 6",
        "content-length: +5",
        "content-length: 0x5",
        "transfer-encoding : chunked",
        "x-pad: a\r\n folded",
        "x-pad: a\nx-smuggled: b",
    ],
)
def test_smuggling_heads_are_refused_and_never_forwarded(rig, head):
    r = rig(always(json_answer(anthropic_message(5))))
    body = json.dumps(ask_sonnet()).encode()
    raw = (
        f"POST /v1/messages HTTP/1.1\r\nx-api-key: {TOKEN}\r\nconnection: close\r\n{head}\r\n\r\n".encode()
        + b"0\r\n\r\n"
        + b"POST /v1/messages HTTP/1.1\r\nx-api-key: "
        + TOKEN.encode()
        + b"\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    )
    answer = r.send(raw)
    assert status_of(answer) == 400
    assert r.provider.requests == []
    assert r.budget.steps == 0


@pytest.mark.parametrize(
    "target",
    [
        "//evil.example/v1/messages",
        "http://evil.example/v1/messages",
        "/v1/messages/../../admin",
        "/v1/messages/batches",
    ],
)
def test_other_targets_never_reach_the_provider(rig, target):
    r = rig(always(json_answer(anthropic_message(5))))
    answer = r.ask(ask_sonnet(), path=target)
    assert status_of(answer) in (403, 404)
    assert r.provider.requests == []


def test_a_call_that_spoofs_host_and_auth_reaches_only_the_provider_with_the_real_key(rig):
    r = rig(always(json_answer(anthropic_message(5))))
    r.ask(ask_sonnet(), headers={"host": "evil.example", "authorization": f"Bearer {TOKEN}", "x-api-key": TOKEN})
    head = r.provider.requests[0][0].decode()
    assert "evil.example" not in head and TOKEN not in head
    assert f"x-api-key: {KEY}" in head


def test_a_flood_of_connections_does_not_starve_the_unit_beside_it(rig):
    release = threading.Event()

    def slow(head: bytes, body: bytes, conn: socket.socket) -> bool:
        release.wait(20)
        return False

    attacker = rig(slow, max_connections=8)
    honest = rig(always(json_answer(anthropic_message(7))))
    held = []
    try:
        for _ in range(40):  # far past the attacker's cap, each one held open
            sock = socket.socket(socket.AF_UNIX)
            sock.connect(attacker.socket)
            sock.sendall(b"POST /v1/messages HTTP/1.1\r\nx-api-key: " + TOKEN.encode() + b"\r\n")  # never finished
            held.append(sock)
        answer = honest.ask(ask_sonnet())
        assert status_of(answer) == 200
        assert honest.budget.usage.output_tokens == 7
    finally:
        release.set()
        for sock in held:
            sock.close()


# ============================================================================= attribution


def test_a_dated_alias_404_the_agent_chose_is_not_the_setups(rig):
    def answer(head: bytes, body: bytes, conn: socket.socket) -> bool:
        model = json.loads(body)["model"]
        if model == SONNET:
            conn.sendall(json_answer(anthropic_message(5)))
        else:
            conn.sendall(
                json_answer({"type": "error", "error": {"type": "not_found_error", "message": model}}, "404 Not Found")
            )
        return True

    r = rig(answer)
    assert status_of(r.ask(ask_sonnet())) == 200
    assert status_of(r.ask({**ask_sonnet(), "model": SONNET + "-20991231"})) == 404  # the proxy let it through
    said = attribute(r.calls(), SONNET, exit_code=1)
    assert said is not None and not said.infra


def test_a_malformed_last_call_to_the_side_model_is_the_agents(rig):
    def answer(head: bytes, body: bytes, conn: socket.socket) -> bool:
        if json.loads(body).get("bogus"):
            conn.sendall(
                json_answer(
                    {"type": "error", "error": {"type": "invalid_request_error", "message": "bogus"}}, "400 Bad Request"
                )
            )
        else:
            conn.sendall(json_answer(anthropic_message(5)))
        return True

    r = rig(answer, models=[HAIKU])
    for _ in range(2):
        assert status_of(r.ask(ask_sonnet())) == 200
    assert status_of(r.ask({**ask_sonnet(), "model": HAIKU, "bogus": True})) == 400
    said = attribute(r.calls(), SONNET, exit_code=1)
    assert said is not None and not said.infra


def test_a_malformed_last_call_to_the_configured_model_is_the_agents(rig):
    def answer(head: bytes, body: bytes, conn: socket.socket) -> bool:
        if json.loads(body).get("bogus"):
            conn.sendall(
                json_answer(
                    {"type": "error", "error": {"type": "invalid_request_error", "message": "bogus"}}, "400 Bad Request"
                )
            )
        else:
            conn.sendall(json_answer(anthropic_message(5)))
        return True

    r = rig(answer)
    assert status_of(r.ask(ask_sonnet())) == 200
    assert status_of(r.ask(ask_sonnet(bogus=True))) == 400
    said = attribute(r.calls(), SONNET, exit_code=1)
    assert said is not None and not said.infra and said.reason.value == "agent_error"


def test_a_call_the_proxy_refuses_is_not_evidence_against_the_provider(rig):
    """An agent that ends on a call the proxy refuses (another model: 403) must not make the
    ending look like the provider refused the credentials (infra)."""
    r = rig(always(json_answer(anthropic_message(5))))
    assert status_of(r.ask(ask_sonnet())) == 200
    assert status_of(r.ask({**ask_sonnet(), "model": "claude-opus-5-5"})) == 403
    said = attribute(r.calls(), SONNET, exit_code=1)
    assert said is None or not said.infra


def test_the_key_is_in_no_recorded_exchange_when_the_provider_echoes_it(rig):
    echo = json.dumps({"error": {"message": f"bad key {KEY}"}})
    r = rig(always(json_answer(json.loads(echo), "400 Bad Request")))
    answer = r.ask(ask_sonnet())
    assert KEY.encode() not in answer
    r.calls()
    recorded = " ".join(f"{e.error} {e.raw!r}" for e in r.exchanges) + json.dumps(r.notes)
    assert KEY not in recorded


# ============================================================================= polyglot grading

# A non-fix for linefold-001 (Rust): the bug is left as it is; a function in `.init_array` (run by the
# loader before libtest's main, in every test binary that links the crate) asks its own binary for
# its test names (`--list`), prints a whole passing libtest run for them, and exits 0. Nothing is
# under a protected path (src/lib.rs and src/wrap.rs are the files a fix edits); no dependency,
# build script or cargo config is needed. `wl_keep`, called from `wrap`, keeps the object holding
# the static in the integration test binaries too.
FORGE = r"""
#[used]
#[link_section = ".init_array"]
static WL_EARLY: extern "C" fn() = wl_early;

extern "C" fn wl_early() {
    use std::io::Write;
    if std::env::var_os("WL_INNER").is_some() || std::env::args().any(|a| a == "--list") {
        return;
    }
    let exe = match std::env::current_exe() { Ok(p) => p, Err(_) => return };
    let out = match std::process::Command::new(&exe).arg("--list").env("WL_INNER", "1").output() {
        Ok(o) => o,
        Err(_) => return,
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = text.lines().filter_map(|l| l.strip_suffix(": test")).collect();
    if names.is_empty() { return; }
    let mut s = format!("\nrunning {} tests\n", names.len());
    for n in &names { s += &format!("test {} ... ok\n", n); }
    s += &format!("\ntest result: ok. {} passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\n", names.len());
    let mut o = std::io::stdout();
    let _ = o.write_all(s.as_bytes());
    let _ = o.flush();
    std::process::exit(0);
}

#[doc(hidden)]
pub fn wl_keep() -> usize { unsafe { std::ptr::read_volatile(&WL_EARLY) as usize } }
"""


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="Rust: a function the patch puts in .init_array runs before libtest in every test binary, lists "
    "the binary's own tests, prints a passing run for them and exits 0; the bug unfixed is graded resolved",
)
def test_a_rust_non_fix_that_forges_libtests_run_before_main_is_not_resolved(polyglot_images):
    task, image, base = polyglot_images["linefold-001"]
    head = "pub fn wrap(text: &str, width: usize) -> Vec<String> {"
    patch = craft(
        task,
        {
            "src/lib.rs": lambda text: text + FORGE,
            "src/wrap.rs": lambda text: text.replace(head, head + "\n    let _ = crate::wl_keep();", 1),
        },
    )
    assert "init_array" in patch and "fn wl_keep" in patch
    result, output, _ = grade(
        task, patch, image, base=base, limits=task.limits.apply(Limits()), run_id=f"{RUN_PREFIX}redteam4"
    )
    assert result.outcome != "infra_error", result.note
    assert not result.resolved, (result.outcome, result.note, output[-1500:])


# A non-fix for timespan-001 (TypeScript, Vitest): the bug is left as it is; src/units.ts, which every
# module under test imports, turns chai's `Assertion.prototype.assert` (behind every `expect(...)`
# matcher Vitest defines) into a no-op in the worker. Every test then really passes: the JSON
# report, the verbose lines, the summary and the exit code all agree.
NO_ASSERT = "import { chai } from 'vitest';\n\n(chai as any).Assertion.prototype.assert = function () {};\n"


@pytest.mark.slow
def test_a_vitest_non_fix_that_disables_the_assertions_is_not_resolved(polyglot_images):
    task, image, base = polyglot_images["timespan-001"]
    patch = craft(task, {"src/units.ts": lambda text: NO_ASSERT + text})
    assert "Assertion.prototype.assert" in patch
    result, output, _ = grade(
        task, patch, image, base=base, limits=task.limits.apply(Limits()), run_id=f"{RUN_PREFIX}redteam4"
    )
    assert result.outcome != "infra_error", result.note
    assert not result.resolved, (result.outcome, result.note, output[-1500:])
    # caught by grading's canaries: the one that must fail passed
    assert result.tampering and "canary that must fail was reported PASSED" in result.tampering, result.note
    assert not any("checks " in t for t in result.tests)  # the canaries are not results


# A non-fix for timespan-001 found by a later attacker (docs/grading.md row 25): the bug is left as
# it is; src/parse.ts, imported by the test file, wraps the worker's RPC to the main process
# (`__vitest_worker__.rpc`) and rewrites every failed task result it sends as passed. The main
# process then makes every channel (JSON report, summary, verbose lines, exit code) from forged
# results, which all agree.
RPC_HIJACK = """
const w: any = (globalThis as any).__vitest_worker__
if (w && w.rpc && !w.__h) {
  w.__h = true
  const orig = w.rpc
  const fix = (r: any) => { if (r && r.state === 'fail') { r.state = 'pass'; delete r.errors } return r }
  w.rpc = new Proxy(orig, { get(t: any, m: any) {
    if (m === 'onTaskUpdate') return (packs: any[]) => orig.onTaskUpdate(packs.map((p: any) => [p[0], fix(p[1]), p[2]]))
    return orig[m]
  } })
}
"""


@pytest.mark.slow
def test_a_vitest_non_fix_that_rewrites_the_workers_results_is_not_resolved(polyglot_images):
    task, image, base = polyglot_images["timespan-001"]
    patch = craft(task, {"src/parse.ts": lambda text: text + RPC_HIJACK})
    assert "onTaskUpdate" in patch
    result, output, _ = grade(
        task, patch, image, base=base, limits=task.limits.apply(Limits()), run_id=f"{RUN_PREFIX}redteam4"
    )
    assert result.outcome != "infra_error", result.note
    assert not result.resolved, (result.outcome, result.note, output[-1500:])
    # caught by grading's canaries, planted in each hidden test file: the one that must fail passed
    assert result.tampering and "canary that must fail was reported PASSED" in result.tampering, result.note
    assert "src/parse.test.ts" in result.tampering and "test/format.spec.ts" in result.tampering


# The same rewrite, told about the canaries: code that has read grading's source spares the tests
# titled as its canaries are ("checks " and twelve hex digits) and rewrites every other failure.
RPC_HIJACK_SPARING_CANARIES = (
    RPC_HIJACK.replace(
        "if (r && r.state === 'fail')",
        "if (r && r.state === 'fail' && !/^checks [0-9a-f]{12}$/.test(names.get(p0) || ''))",
    )
    .replace(
        "packs.map((p: any) => [p[0], fix(p[1]), p[2]])",
        "packs.map((p: any) => { p0 = p[0]; return [p[0], fix(p[1]), p[2]] })",
    )
    .replace(
        "  w.__h = true\n",
        "  w.__h = true\n  let p0 = ''\n  const names = new Map<string, string>()\n"
        "  const walk = (t: any) => { names.set(t.id, t.name); (t.tasks || []).forEach(walk) }\n"
        "  const onCollected = w.rpc.onCollected.bind(w.rpc)\n",
    )
    .replace(
        "    return orig[m]",
        "    if (m === 'onCollected') return (files: any[]) => { files.forEach(walk); return onCollected(files) }\n"
        "    return orig[m]",
    )
)


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="Vitest: code under test that tells grading's canary tests apart (by their titles, or by reading the "
    "test files, where they are appended) rewrites every other failure as passed: known limit, docs/grading.md row 25",
)
def test_a_vitest_rewrite_that_spares_gradings_canaries_is_not_resolved(polyglot_images):
    task, image, base = polyglot_images["timespan-001"]
    assert RPC_HIJACK_SPARING_CANARIES.count("names") == 3  # every replacement took
    patch = craft(task, {"src/parse.ts": lambda text: text + RPC_HIJACK_SPARING_CANARIES})
    result, output, _ = grade(
        task, patch, image, base=base, limits=task.limits.apply(Limits()), run_id=f"{RUN_PREFIX}redteam4"
    )
    assert result.outcome != "infra_error", result.note
    assert not result.resolved, (result.outcome, result.note, output[-1500:])


# ============================================================================= the gate


def _rows(run: str, outcomes: dict[str, tuple[str, str, bool]]) -> list[ResultRow]:
    """One row per task: {task: (outcome, task hash, final)}."""
    return [
        ResultRow(
            run_id=run,
            task_id=task,
            task_hash=digest,
            config="c",
            agent="default",
            outcome=outcome,
            resolved=outcome == "resolved",
            final=final,
            retried=not final,
        )
        for task, (outcome, digest, final) in outcomes.items()
    ]


TASKS = [f"t{i:02d}" for i in range(12)]


def test_the_gate_is_not_dodged_by_changing_the_specs_of_the_regressed_tasks():
    baseline = _rows("base", dict.fromkeys(TASKS, ("resolved", "h", True)))
    candidate = _rows(
        "cand", {t: ("unresolved", "h2", True) if i < 6 else ("resolved", "h", True) for i, t in enumerate(TASKS)}
    )
    out = gate(SideRows("base", "c", baseline), SideRows("cand", "c", candidate), margin=0.05)
    assert out.verdict != NO_REGRESSION, out.reason
    assert out.changed == TASKS[:6] and "changed spec" in out.reason  # named as such
    strict = gate(SideRows("base", "c", baseline), SideRows("cand", "c", candidate), margin=0.05, strict=True)
    assert strict.verdict != NO_REGRESSION, strict.reason  # --strict does not make a changed spec a result


def test_the_gate_is_not_dodged_by_abandoned_tries_on_the_regressed_tasks():
    """The candidate's regressed units end on an abandoned try (an infra failure, never final) and
    the run stops before their retry: they must not silently leave the pairing."""
    baseline = _rows("base", dict.fromkeys(TASKS, ("resolved", "h", True)))
    candidate = _rows(
        "cand", {t: ("infra_error", "h", False) if i < 6 else ("resolved", "h", True) for i, t in enumerate(TASKS)}
    )
    out = gate(SideRows("base", "c", baseline), SideRows("cand", "c", candidate), margin=0.05)
    assert out.verdict != NO_REGRESSION, out.reason
    assert out.unfinished == TASKS[:6] and "not finished" in out.reason
    strict = gate(SideRows("base", "c", baseline), SideRows("cand", "c", candidate), margin=0.05, strict=True)
    assert strict.verdict == REGRESSION, strict.reason  # --strict: an unfinished trial is a failure


def test_the_gate_is_not_dodged_by_the_regressed_tasks_missing_from_the_candidate():
    baseline = _rows("base", dict.fromkeys(TASKS, ("resolved", "h", True)))
    candidate = _rows("cand", dict.fromkeys(TASKS[6:], ("resolved", "h", True)))
    out = gate(SideRows("base", "c", baseline), SideRows("cand", "c", candidate), margin=0.05)
    assert out.verdict != NO_REGRESSION, out.reason
    assert out.unfinished == TASKS[:6] and "not finished" in out.reason
    strict = gate(SideRows("base", "c", baseline), SideRows("cand", "c", candidate), margin=0.05, strict=True)
    assert strict.verdict == REGRESSION, strict.reason  # --strict: a task never run is a failure
