"""The scripted provider: a local LLM server that speaks the Anthropic and OpenAI wire formats.

`wholeloop agents verify` runs an agent CLI against it (harness/verify.py). Tests script it with a
queue of responses, point a real SDK at ``base_url`` and then assert what came back *and* what the
SDK sent (every request body is recorded). It exists so that the real anthropic / openai / litellm
clients and agent CLIs run end to end, with no network and no mocks.

    with FakeLLM() as srv:
        srv.script(Reply(text="hi", usage=Tokens(input=10, output=2)), Error(429, retry_after=1))
        ...  # Anthropic SDK: base_url=srv.base_url; OpenAI SDK: base_url=srv.openai_url

Instead of a queue, a test may answer every request itself: ``FakeLLM(responder=fn)`` calls
``fn(request)`` (concurrently, outside the server's lock) and sends the Reply or Error it returns.

Usage figures in a script are neutral (``Tokens``); each protocol renders them the way that
provider reports them (Anthropic: ``input_tokens`` excludes cache reads/writes; OpenAI:
``prompt_tokens`` includes cache reads, and there is no cache-write figure).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Streamed text and arguments are cut into pieces this small so delta assembly is really exercised.
CHUNK = 5


@dataclass
class Tokens:
    input: int = 10  # uncached prompt tokens
    output: int = 5  # includes reasoning
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0


@dataclass
class Call:
    """A tool call in a scripted reply. ``args`` as a dict is sent as JSON; a str is sent raw."""

    name: str
    args: dict | str = field(default_factory=dict)
    id: str | None = None


@dataclass
class Reply:
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    usage: Tokens = field(default_factory=Tokens)
    stop_reason: str | None = None  # protocol-native; derived from `calls` when None
    model: str | None = None  # echoed model id; the requested one when None
    delay_s: float = 0.0  # sleep before answering (timeout tests)
    stream_error: str | None = None  # Anthropic only: an `error` event of this type mid-stream
    thinking: str = ""  # Anthropic only: a signed thinking block before the text
    hold: threading.Event | None = None  # streams: after the first event, wait for this before the rest
    cut_after: int | None = None  # streams: send this many events, then drop the connection (no last chunk)


@dataclass
class Error:
    status: int
    message: str = "scripted error"
    retry_after: str | float | None = None  # rendered as the Retry-After header
    code: str | None = None  # OpenAI error.code / Anthropic error.type override
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None  # full body override (anything JSON-serialisable, or raw str)


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any
    received: float = field(default_factory=time.time)  # wall clock, when the body was read


_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out hangs up before the (delayed) answer: expected, not news.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeLLM:
    """Threaded HTTP server on 127.0.0.1 (or `host`; random port); a context manager."""

    def __init__(self, responder: Callable[[Request], Reply | Error] | None = None, host: str = "127.0.0.1") -> None:
        self.responder = responder  # answers every request when set (the queue is then unused)
        self.queue: deque[Reply | Error] = deque()
        self.requests: list[Request] = []
        self.other_requests: list[Request] = []  # not model calls: token counting, the model list
        self.reported: list[Tokens] = []  # the usage of every successful reply, as sent
        self._lock = threading.Lock()
        self._server = _Server((host, 0), _make_handler(self))
        # A short poll interval keeps shutdown (once per test) fast.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_url(self) -> str:
        # The OpenAI SDK and litellm's openai/ provider expect the /v1 prefix in the base URL.
        return self.base_url + "/v1"

    def script(self, *entries: Reply | Error) -> FakeLLM:
        with self._lock:
            self.queue.extend(entries)
        return self

    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    def __enter__(self) -> FakeLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def log(self, request: Request) -> None:
        """Keep a request that is not a model call (token counting, the model list)."""
        with self._lock:
            self.other_requests.append(request)

    def usage_totals(self) -> Tokens:
        """The sum of the usage this server reported in its successful replies."""
        with self._lock:
            found = list(self.reported)
        total = Tokens(0, 0, 0, 0, 0)
        for u in found:
            total.input += u.input
            total.output += u.output
            total.cache_read += u.cache_read
            total.cache_write += u.cache_write
            total.reasoning += u.reasoning
        return total

    def _next(self, request: Request) -> Reply | Error:
        with self._lock:
            self.requests.append(request)
            responder = self.responder
            if responder is None and not self.queue:
                # 418 is never retried, so a test that under-scripts fails at once and says why.
                return Error(418, "fakellm: the script is empty; this request was not expected")
            if responder is None:
                return self.queue.popleft()
        return responder(request)


def echo_key_401(request: Request) -> Error:
    """A responder for a provider that echoes the key it was sent in its 401 body (some do): as
    it was sent, base64-encoded, and inside an HTTP Basic credential (base64 of "user:key", so the
    key's base64 is shifted by the prefix)."""
    import base64

    key = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
    basic = base64.b64encode(b"wholeloop-user:" + key.encode()).decode()
    return Error(
        401,
        f"invalid x-api-key {key!r} (base64 {base64.b64encode(key.encode()).decode()}, "
        f"as Basic {basic}); check your key",
    )


def _make_handler(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, chunked streaming

        def log_message(self, *args: object) -> None:  # quiet test output
            pass

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in separate writes: without this every answer waits ~40 ms
            # for the client's delayed ACK (Nagle), which would swamp the proxy benchmark.
            with contextlib.suppress(OSError):
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _read_body(self) -> bytes:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                parts = []
                while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()
                self.rfile.readline()
                return b"".join(parts)
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def do_HEAD(self) -> None:  # Claude Code's connectivity probe
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            fake.log(Request(path, {k.lower(): v for k, v in self.headers.items()}, None))
            if path.endswith("/models"):
                return self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
            return self._json(404, {"error": {"message": f"fakellm: no route GET {path}"}})

        def do_POST(self) -> None:
            raw = self._read_body()
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                body = raw.decode("utf-8", "replace")
            path = self.path.split("?")[0]
            headers = {k.lower(): v for k, v in self.headers.items()}
            if path.endswith("/messages/count_tokens"):  # free, never a scripted turn
                fake.log(Request(path, headers, body))
                return self._json(200, {"input_tokens": max(1, len(raw) // 4)})
            proto: Any
            if path.endswith("/messages"):
                proto = _Anthropic
            elif path.endswith("/chat/completions"):
                proto = _OpenAI
            elif path.endswith("/responses"):
                proto = _Responses
            else:
                return self._json(404, {"error": {"message": f"fakellm: no route {path}"}})
            entry = fake._next(Request(path, headers, body))
            if isinstance(entry, Error):
                return self._error(entry, proto)
            if entry.delay_s:
                time.sleep(entry.delay_s)
            with fake._lock:
                fake.reported.append(entry.usage)
            req = body if isinstance(body, dict) else {}
            model = entry.model or req.get("model", "fake-model")
            rid = {
                "request-id": f"req_fake_{len(fake.requests)}",  # Anthropic's header
                "x-request-id": f"req_fake_{len(fake.requests)}",
            }  # OpenAI's
            if req.get("stream"):
                return self._sse(proto.stream(entry, model, req), rid, entry)
            return self._json(200, proto.message(entry, model), rid)

        def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _error(self, err: Error, proto: Any) -> None:
            headers = dict(err.headers)
            if err.retry_after is not None:
                headers["Retry-After"] = str(err.retry_after)
            body = err.body if err.body is not None else proto.error_body(err)
            self._json(err.status, body, headers)

        def _sse(self, events: list[str], headers: dict[str, str], entry: Reply) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            for n, ev in enumerate(events):
                if n == entry.cut_after:  # the provider drops the stream here
                    self.close_connection = True
                    return
                data = ev.encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                if n == 0 and entry.hold is not None:
                    entry.hold.wait(30)
            self.wfile.write(b"0\r\n\r\n")

    return Handler


def _pieces(s: str) -> list[str]:
    return [s[i : i + CHUNK] for i in range(0, len(s), CHUNK)] or [""]


def _args_text(call: Call) -> str:
    return call.args if isinstance(call.args, str) else json.dumps(call.args)


_ids = itertools.count(1)
_id_of: dict[int, tuple[Call, str]] = {}  # the call is kept, so its id() is never reused


def _call_id(call: Call, i: int, prefix: str) -> str:
    """The call's id, or one made up for it: unique across replies (CLIs match results by id), and
    the same every time this call object is rendered."""
    if call.id:
        return call.id
    if id(call) not in _id_of:
        _id_of[id(call)] = (call, f"{prefix}{next(_ids):06d}")
    return _id_of[id(call)][1]


class _Anthropic:
    @staticmethod
    def error_body(err: Error) -> dict:
        etype = err.code or _ANTHROPIC_ERROR_TYPES.get(err.status, "api_error")
        return {"type": "error", "error": {"type": etype, "message": err.message}}

    @staticmethod
    def _usage(u: Tokens) -> dict:
        usage: dict[str, Any] = {
            "input_tokens": u.input,
            "output_tokens": u.output,
            "cache_read_input_tokens": u.cache_read,
            "cache_creation_input_tokens": u.cache_write,
        }
        if u.reasoning:
            usage["output_tokens_details"] = {"thinking_tokens": u.reasoning}
        return usage

    @staticmethod
    def _stop(r: Reply) -> str:
        return r.stop_reason or ("tool_use" if r.calls else "end_turn")

    @classmethod
    def message(cls, r: Reply, model: str) -> dict:
        content: list[dict] = []
        if r.thinking:
            content.append({"type": "thinking", "thinking": r.thinking, "signature": "sig_fake"})
        if r.text:
            content.append({"type": "text", "text": r.text})
        for i, c in enumerate(r.calls):
            # A str here reaches the SDK as a non-object `input`: the closest the non-streaming
            # wire format gets to malformed arguments.
            content.append({"type": "tool_use", "id": _call_id(c, i, "toolu_"), "name": c.name, "input": c.args})
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": cls._stop(r),
            "stop_sequence": None,
            "usage": cls._usage(r.usage),
        }

    @classmethod
    def stream(cls, r: Reply, model: str, req: dict) -> list[str]:
        def ev(name: str, data: dict) -> str:
            return f"event: {name}\ndata: {json.dumps(data)}\n\n"

        start = cls.message(Reply(usage=Tokens(r.usage.input, 1, r.usage.cache_read, r.usage.cache_write)), model)
        start.update(content=[], stop_reason=None)
        out = [ev("message_start", {"type": "message_start", "message": start}), ev("ping", {"type": "ping"})]
        if r.stream_error:  # the API can fail after a 200, e.g. overloaded mid-generation
            return out + [
                ev("error", {"type": "error", "error": {"type": r.stream_error, "message": "scripted stream error"}})
            ]
        blocks: list[tuple[dict, str, list[str]]] = []
        if r.thinking:
            blocks.append(
                ({"type": "thinking", "thinking": "", "signature": ""}, "thinking_delta", _pieces(r.thinking))
            )
        if r.text:
            blocks.append(({"type": "text", "text": ""}, "text_delta", _pieces(r.text)))
        for i, c in enumerate(r.calls):
            head = {"type": "tool_use", "id": _call_id(c, i, "toolu_"), "name": c.name, "input": {}}
            blocks.append((head, "input_json_delta", _pieces(_args_text(c))))
        for idx, (head, kind, parts) in enumerate(blocks):
            out.append(ev("content_block_start", {"type": "content_block_start", "index": idx, "content_block": head}))
            key = {"text_delta": "text", "thinking_delta": "thinking"}.get(kind, "partial_json")
            for p in parts:
                out.append(
                    ev(
                        "content_block_delta",
                        {"type": "content_block_delta", "index": idx, "delta": {"type": kind, key: p}},
                    )
                )
            if kind == "thinking_delta":
                out.append(
                    ev(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": idx,
                            "delta": {"type": "signature_delta", "signature": "sig_fake"},
                        },
                    )
                )
            out.append(ev("content_block_stop", {"type": "content_block_stop", "index": idx}))
        # message_delta carries the final, cumulative usage.
        out.append(
            ev(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": cls._stop(r), "stop_sequence": None},
                    "usage": cls._usage(r.usage),
                },
            )
        )
        out.append(ev("message_stop", {"type": "message_stop"}))
        return out


class _OpenAI:
    @staticmethod
    def error_body(err: Error) -> dict:
        return {"error": {"message": err.message, "type": "invalid_request_error", "param": None, "code": err.code}}

    @staticmethod
    def _usage(u: Tokens) -> dict:
        prompt = u.input + u.cache_read
        return {
            "prompt_tokens": prompt,
            "completion_tokens": u.output,
            "total_tokens": prompt + u.output,
            "prompt_tokens_details": {"cached_tokens": u.cache_read},
            "completion_tokens_details": {"reasoning_tokens": u.reasoning},
        }

    @staticmethod
    def _finish(r: Reply) -> str:
        return r.stop_reason or ("tool_calls" if r.calls else "stop")

    @classmethod
    def message(cls, r: Reply, model: str) -> dict:
        msg: dict = {"role": "assistant", "content": r.text or None}
        if r.calls:
            msg["tool_calls"] = [
                {
                    "id": _call_id(c, i, "call_"),
                    "type": "function",
                    "function": {"name": c.name, "arguments": _args_text(c)},
                }
                for i, c in enumerate(r.calls)
            ]
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": msg, "finish_reason": cls._finish(r)}],
            "usage": cls._usage(r.usage),
        }

    @classmethod
    def stream(cls, r: Reply, model: str, req: dict) -> list[str]:
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

        def chunk(delta: dict | None, finish: str | None = None, **extra: Any) -> str:
            choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
            return "data: " + json.dumps({**base, "choices": choices, **extra}) + "\n\n"

        out = [chunk({"role": "assistant", "content": ""})]
        if r.text:
            out += [chunk({"content": p}) for p in _pieces(r.text)]
        for i, c in enumerate(r.calls):
            head = {
                "index": i,
                "id": _call_id(c, i, "call_"),
                "type": "function",
                "function": {"name": c.name, "arguments": ""},
            }
            out.append(chunk({"tool_calls": [head]}))
            out += [chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}) for p in _pieces(_args_text(c))]
        out.append(chunk({}, cls._finish(r)))
        if (req.get("stream_options") or {}).get("include_usage"):
            out.append(chunk(None, usage=cls._usage(r.usage)))
        out.append("data: [DONE]\n\n")
        return out


class _Responses:
    """The OpenAI Responses API (what Codex CLI speaks), JSON and SSE."""

    error_body = _OpenAI.error_body

    @staticmethod
    def _usage(u: Tokens) -> dict:
        prompt = u.input + u.cache_read
        return {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": u.cache_read},
            "output_tokens": u.output,
            "output_tokens_details": {"reasoning_tokens": u.reasoning},
            "total_tokens": prompt + u.output,
        }

    @staticmethod
    def _items(r: Reply) -> list[dict]:
        items: list[dict] = []
        if r.text:
            items.append(
                {
                    "type": "message",
                    "id": "msg_fake",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": r.text, "annotations": []}],
                }
            )
        for i, c in enumerate(r.calls):
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_fake{i:04d}",
                    "call_id": _call_id(c, i, "call_"),
                    "name": c.name,
                    "arguments": _args_text(c),
                    "status": "completed",
                }
            )
        return items

    @classmethod
    def message(cls, r: Reply, model: str) -> dict:
        return {
            "id": "resp_fake",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": model,
            "output": cls._items(r),
            "usage": cls._usage(r.usage),
        }

    @classmethod
    def stream(cls, r: Reply, model: str, req: dict) -> list[str]:
        seq = iter(range(1_000_000))

        def ev(name: str, data: dict) -> str:
            return f"event: {name}\ndata: {json.dumps({'type': name, 'sequence_number': next(seq), **data})}\n\n"

        final = cls.message(r, model)
        out = [
            ev("response.created", {"response": {**final, "status": "in_progress", "output": [], "usage": None}}),
            ev("response.in_progress", {"response": {**final, "status": "in_progress", "output": [], "usage": None}}),
        ]
        for index, item in enumerate(final["output"]):
            if item["type"] == "message":
                text = item["content"][0]["text"]
                out.append(
                    ev(
                        "response.output_item.added",
                        {"output_index": index, "item": {**item, "content": [], "status": "in_progress"}},
                    )
                )
                out.append(
                    ev(
                        "response.content_part.added",
                        {
                            "output_index": index,
                            "item_id": item["id"],
                            "content_index": 0,
                            "part": {"type": "output_text", "text": ""},
                        },
                    )
                )
                out += [
                    ev(
                        "response.output_text.delta",
                        {"output_index": index, "item_id": item["id"], "content_index": 0, "delta": p},
                    )
                    for p in _pieces(text)
                ]
                out.append(
                    ev(
                        "response.output_text.done",
                        {"output_index": index, "item_id": item["id"], "content_index": 0, "text": text},
                    )
                )
            else:
                out.append(
                    ev(
                        "response.output_item.added",
                        {"output_index": index, "item": {**item, "arguments": "", "status": "in_progress"}},
                    )
                )
                out += [
                    ev(
                        "response.function_call_arguments.delta",
                        {"output_index": index, "item_id": item["id"], "delta": p},
                    )
                    for p in _pieces(item["arguments"])
                ]
                out.append(
                    ev(
                        "response.function_call_arguments.done",
                        {"output_index": index, "item_id": item["id"], "arguments": item["arguments"]},
                    )
                )
            out.append(ev("response.output_item.done", {"output_index": index, "item": item}))
        out.append(ev("response.completed", {"response": final}))
        return out
