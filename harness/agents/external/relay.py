"""One connection from an agent's container, through the forwarder: HTTP/1.1 requests in order.

Each request is checked (target, route, the attempt's token), a model call is admitted against the
budget and clamped, then forwarded to the provider and its reply relayed back: a JSON reply whole
(charged before it is sent), a stream chunk for chunk as it arrives, re-framed plainly (charged before
its last event goes out). Only a request's top level is parsed here (msgspec; the conversation
stays bytes); reading the whole exchange is the recorder's job, on its own thread.
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import io
import socket
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import msgspec
import orjson

from ...models.pricing import litellm_price_map
from ...models.types import Usage
from ...scrub import REDACTED, needles
from ..budget import LimitReached
from .http1 import BadMessage, ChunkBatches, Head, Upstream, head_bytes, read_body, read_head
from .wire import CHOICE_KEYS, Reply, StreamReader, Wire, sse_payloads

if TYPE_CHECKING:
    from .proxy import MeteringProxy

KINDS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
    415: "invalid_request_error",
    429: "rate_limit_error",
}
MAX_BODY = 64 * 1024 * 1024
TOP_LEVEL = msgspec.json.Decoder(dict[str, msgspec.Raw])
ENCODER = msgspec.json.Encoder()
FIELDS = ("model", "stream", "stream_options", "max_tokens", "max_completion_tokens", "max_output_tokens", *CHOICE_KEYS)
#: Bytes a secret's forms (plain, hex, JSON-escaped, base64) are made of: a stream's chunk ending in
#: them is held back until the next chunk shows whether a secret continues there.
SECRET_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_\\")


@dataclass
class Exchange:
    """One model call as the recorder gets it."""

    step: int
    raw: bytes = b""  # the request as forwarded (the recorder reads it on its own thread)
    top: dict[str, msgspec.Raw] | None = None  # its top level, as the relay read it (the recorder's, then)
    model: str = ""
    sent_at: float = field(default_factory=time.monotonic)  # when the request came in
    answered_at: float = 0.0  # when the reply was complete
    reply: Reply | None = None
    events: list[bytes] | None = None  # a streamed reply's SSE events, read into `reply` on the recorder's thread
    stream: list[bytes] | None = None  # a streamed reply's data as served, split into `events` on the recorder's thread
    settled_usage: Usage | None = None
    estimated: bool = False  # the stream ended before its usage: counted with a tokenizer
    status: int = 0
    error: str = ""
    cost_usd: float | None = None
    latency_s: float = 0.0


@dataclass
class ProxyStats:
    calls: int = 0  # model calls forwarded
    free: int = 0  # token counting and other free requests forwarded
    refused_budget: int = 0
    refused_token: int = 0
    refused_target: int = 0
    refused_model: int = 0  # calls naming a model the attempt does not allow, or one without a price
    refused_connections: int = 0  # connections past the attempt's cap
    stripped: int = 0  # provider-side tool declarations removed from requests
    estimated: int = 0  # calls whose stream ended before its usage (charged a tokenizer's count)
    client_gone: int = 0  # replies the client hung up on (drained and charged all the same)
    upstream_errors: int = 0
    last_upstream_error: str = ""
    last_upstream_model: str = ""  # the model the refused call named (the CLI's choice, or the configured one)


@functools.lru_cache(maxsize=256)
def max_output_tokens(model: str) -> int | None:
    """The model's maximum reply length in litellm's map, when it is there."""
    entry = litellm_price_map().get(model) or litellm_price_map().get(model.split("/")[-1]) or {}
    value = entry.get("max_output_tokens") or entry.get("max_tokens")
    return value if isinstance(value, int) and value > 0 else None


class Scrubber:
    """Replaces the real key in what the provider answers (an echo), in every form `harness.scrub`
    knows, before the CLI gets it; `hold` says how much of a chunk's end must wait for the next."""

    def __init__(self, secrets: list[str]) -> None:
        self.needles = [n.encode() for n in needles([s for s in secrets if s])] if any(secrets) else []
        self.longest = max(map(len, self.needles), default=0)

    def __call__(self, data: bytes) -> bytes:
        for needle in self.needles:
            if needle in data:
                data = data.replace(needle, REDACTED.encode())
        return data

    def hold(self, data: bytes) -> int:
        """How many bytes at the end of `data` could be the start of a secret's form."""
        end, stop = len(data), max(len(data) - self.longest + 1, 0)
        i = end
        while i > stop and data[i - 1] in SECRET_BYTES:
            i -= 1
        return end - i


@functools.lru_cache(maxsize=1)
def _encoding():  # noqa: ANN202 (tiktoken's Encoding)
    import importlib.util
    import os

    spec = importlib.util.find_spec("litellm")  # litellm ships tiktoken's files: no download
    if spec is not None and spec.origin:
        os.environ.setdefault(
            "TIKTOKEN_CACHE_DIR", os.path.join(os.path.dirname(spec.origin), "litellm_core_utils", "tokenizers")
        )
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")


def count_tokens(text: str) -> int:
    """Tokens of `text` by cl100k_base (an estimate for any model); a quarter of its bytes if the
    tokenizer cannot load."""
    try:
        return len(_encoding().encode(text, disallowed_special=()))
    except Exception:  # noqa: BLE001 (an estimate: never fail the relay for it)
        return (len(text.encode()) + 3) // 4


def estimate(raw: bytes, reply: Reply, said: Usage) -> Usage:
    """The usage of a call whose reply ended before its usage event: what the provider said so far
    (Anthropic's message_start has the input), each figure at least a tokenizer's count of the
    request as sent and of the reply's text and tool calls as served."""
    served = reply.text + "".join(c.name + c.raw for c in reply.calls)
    return said.model_copy(
        update={
            "input_tokens": max(said.input_tokens, count_tokens(raw.decode("utf-8", "replace"))),
            "output_tokens": max(said.output_tokens, count_tokens(served)),
        }
    )


def event_blocks(data: bytes) -> tuple[list[bytes], bytes]:
    """The complete SSE events in `data` (each ends with a blank line), and the rest."""
    data = data.replace(b"\r\n", b"\n")
    cut = data.rfind(b"\n\n")
    if cut < 0:
        return [], data
    return [b for b in data[:cut].split(b"\n\n") if b.strip()], data[cut + 2 :]


def stream_events(served: list[bytes]) -> list[bytes]:
    """The SSE events of a stream's data as served (a last one cut before its blank line too)."""
    blocks, rest = event_blocks(b"".join(served))
    return [*blocks, rest] if rest.strip() else blocks


class Connection:
    """One connection from the container (through the forwarder): requests in order, kept alive."""

    def __init__(self, proxy: MeteringProxy, sock: socket.socket) -> None:
        self.proxy, self.wire, self.sock = proxy, proxy.wire, sock
        # "rb" with a buffer is a BufferedReader (typeshed says IOBase for any buffer size but -1 and 1)
        self.rf = cast(io.BufferedReader, sock.makefile("rb", buffering=1 << 18))
        self.gone = False  # the client hung up: what is still relayed is drained and charged, not sent

    def send(self, data: bytes) -> None:
        """Write to the client; once it has hung up, nothing (the reply is still read to its end)."""
        if self.gone:
            return
        try:
            self.sock.sendall(data)
        except OSError:
            self.gone = True

    def serve(self) -> None:
        proxy = self.proxy
        try:
            while not self.gone:
                try:
                    head = read_head(self.rf, strict=True)
                except BadMessage as exc:
                    self.reply_json(400, {"error": {"message": f"wholeloop proxy: {exc}"}}, [("connection", "close")])
                    return
                if head is None:
                    return
                with proxy.lock:
                    proxy.in_flight += 1
                try:
                    keep = self.handle(head)
                finally:
                    with proxy.lock:
                        proxy.in_flight -= 1
                if not keep:
                    return
        except (BadMessage, OSError, ValueError):
            return
        finally:
            with contextlib.suppress(OSError):
                self.rf.close()
                self.sock.close()
            self.proxy.forget(self.sock)

    # -------------------------------------------------------------- refusals

    def reply_json(self, status: int, payload: dict, headers: Sequence[tuple[str, str]] = ()) -> None:
        data = orjson.dumps(payload)
        self.send(
            head_bytes(
                f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}",
                [("content-type", "application/json"), ("content-length", str(len(data))), *headers],
            )
            + data
        )

    def refuse(
        self, status: int, message: str, why: str, method: str, target: str, counter: str, *, model: str = ""
    ) -> None:
        proxy = self.proxy
        with proxy.lock:
            count_refusal(proxy.stats, counter)
        entry = {"event": "refused", "why": why, "method": method, "path": target[:200], "status": status}
        proxy.note({**entry, "model": model[:200]} if model else entry)  # the id refused, for `agents verify`
        self.reply_json(
            status,
            self.wire.error_body(f"wholeloop proxy: {message}", KINDS.get(status, "api_error")),
            [("x-should-retry", "false")],
        )

    # -------------------------------------------------------------- one request

    def handle(self, head: Head) -> bool:
        """Answer one request; False when the connection must close."""
        parts = head.line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            self.reply_json(
                400, {"error": {"message": "wholeloop proxy: not an HTTP/1.1 request"}}, [("connection", "close")]
            )
            return False
        method, target, _ = parts
        keep = head.get("connection").lower() != "close"
        if method == "CONNECT":
            self.refuse(
                405,
                "CONNECT is refused: this proxy forwards to one model provider only",
                "connect",
                method,
                target,
                "refused_target",
            )
            return False
        try:
            raw = read_body(self.rf, head, MAX_BODY)
        except BadMessage as exc:
            self.reply_json(
                413 if "large" in str(exc) else 400,
                {"error": {"message": f"wholeloop proxy: {exc}"}},
                [("connection", "close")],
            )
            return False
        if not target.startswith("/") or target.startswith("//"):
            self.refuse(
                403, "only the configured model provider can be reached", "target", method, target, "refused_target"
            )
            return keep
        path = target.split("?", 1)[0]
        kind = self.wire.route(method, path)
        if kind is None:
            self.refuse(
                404 if method in ("GET", "POST") else 405,
                f"{method} {path} is not part of the {self.wire.name} API",
                "route",
                method,
                target,
                "refused_target",
            )
            return keep
        if not self.authorized(head):
            self.refuse(
                401, "this request does not carry the attempt's token", "token", method, target, "refused_token"
            )
            return keep
        encoding = head.get("content-encoding").lower()
        if encoding == "gzip":
            try:
                raw = gunzip(raw, MAX_BODY)
            except BadMessage as exc:
                self.refuse(413 if "large" in str(exc) else 400, str(exc), "encoding", method, target, "refused_target")
                return False
        elif encoding not in ("", "identity"):
            self.refuse(
                415,
                f"request bodies encoded with {encoding} are not supported; turn off the CLI's request compression",
                "encoding",
                method,
                target,
                "refused_target",
            )
            return keep
        if kind == "free":
            with self.proxy.lock:
                self.proxy.stats.free += 1
            return self.forward(method, target, head, raw, None) and keep
        try:  # the top level only: the conversation inside stays bytes, unparsed on this path
            top = TOP_LEVEL.decode(raw)
        except msgspec.DecodeError:
            self.refuse(400, "the request body is not a JSON object", "json", method, target, "refused_target")
            return keep
        try:
            fields = {k: orjson.loads(bytes(top[k])) for k in FIELDS if k in top}
        except orjson.JSONDecodeError:
            fields = {}
        model = given if isinstance(given := fields.get("model"), str) else ""
        choices = next((f"{k}={fields[k]}" for k in CHOICE_KEYS if fields.get(k) not in (None, 1)), "")
        if choices:
            self.refuse(
                400,
                f"a request for several choices ({choices}) is refused: each would spend past the clamp",
                "choices",
                method,
                target,
                "refused_target",
            )
            return keep
        refusal = self.proxy.refusal(model)
        if refusal:
            self.refuse(403, refusal, "model", method, target, "refused_model", model=model or "(none)")
            return keep
        changed, why = self.server_side(top)
        if why:
            self.refuse(400, why, "server_tools", method, target, "refused_target")
            return keep
        admitted = self.proxy.admit(model)
        if isinstance(admitted, LimitReached):
            self.proxy.note(
                {
                    "event": "refused",
                    "why": "budget",
                    "method": method,
                    "path": target[:200],
                    "status": self.proxy.refuse_status,
                }
            )
            self.reply_json(
                self.proxy.refuse_status,
                self.wire.error_body(
                    f"wholeloop proxy: the attempt's {admitted.reason.replace('_', ' ')} is reached ({admitted.detail}); "
                    "no more model calls are allowed",
                    KINDS.get(self.proxy.refuse_status, "api_error"),
                ),
                [("x-should-retry", "false")],
            )
            return keep
        step, out_left = admitted
        before = dict(fields)
        self.wire.prepare(fields, out_left, max_output_tokens(model))
        for k, v in fields.items():
            if k not in before or before[k] != v:
                top[k] = msgspec.Raw(orjson.dumps(v))
        for k in before.keys() - fields.keys():  # a limit key that is not a number: removed
            top.pop(k, None)
        # Always re-encoded (the values copied as they came): a key given twice goes out once, with
        # the value that was checked, so no provider's JSON reader can take the other one.
        raw = ENCODER.encode(top)
        return self.forward(method, target, head, raw, Exchange(step=step, raw=raw, model=model, top=top)) and keep

    def server_side(self, top: dict[str, msgspec.Raw]) -> tuple[bool, str]:
        """Remove provider-side tools (web search and fetch, code execution, file search) from a
        request, noting what was removed; (changed, why the request is refused: MCP servers, a
        container, or a tool choice that forces a provider-side tool)."""
        wire: Wire = self.wire
        for key in wire.server_keys:
            if key in top:
                return False, f"`{key}` is refused: the provider would reach out on the agent's behalf"
        changed, gone = False, []
        for key in wire.strip_keys:
            if key in top:
                del top[key]
                changed = True
                gone.append(key)
        tools_raw = bytes(top["tools"]) if "tools" in top else b""
        stripped: dict[str, str] = {}
        if tools_raw and any(kind.encode() in tools_raw for kind in wire.server_tools):  # (else nothing to parse)
            tools = orjson.loads(tools_raw)
            keep = []
            for tool in tools if isinstance(tools, list) else []:
                kind = wire.tool_kind(tool)
                if kind in self.proxy.server_tools:  # allowed by the agent config, and priced
                    keep.append(tool)
                    continue
                if kind in wire.refused_tools:
                    return False, f"a `{kind}` tool is refused: the provider would reach out on the agent's behalf"
                if kind:
                    stripped[str(tool.get("name") or kind)] = kind
                    gone.append(kind)
                else:
                    keep.append(tool)
            if stripped:
                changed = True
                if keep:
                    top["tools"] = msgspec.Raw(orjson.dumps(keep))
                else:
                    del top["tools"]
        if "tool_choice" in top and (stripped or wire.server_tools):
            choice_raw = bytes(top["tool_choice"])
            if stripped or any(kind.encode() in choice_raw for kind in wire.server_tools):
                forced = wire.forced_tool(orjson.loads(choice_raw), stripped)
                if forced and forced not in self.proxy.server_tools:
                    return False, f"a tool_choice forcing the provider-side tool `{forced}` is refused"
                if "tools" not in top:  # nothing left to choose from
                    del top["tool_choice"]
        if gone:
            with self.proxy.lock:
                self.proxy.stats.stripped += len(gone)
            self.proxy.note({"event": "stripped", "what": gone})
        return changed, ""

    def authorized(self, head: Head) -> bool:
        given = head.get("x-api-key")
        auth = head.get("authorization")
        if not given and auth[:7].lower() == "bearer ":
            given = auth[7:].strip()
        return bool(given) and hmac.compare_digest(given.encode(), self.proxy.token.encode())

    # -------------------------------------------------------------- upstream and back

    def forward(self, method: str, target: str, head: Head, raw: bytes, exchange: Exchange | None) -> bool:
        proxy = self.proxy
        headers = head.forwardable()
        headers += [
            ("host", proxy.up_host_header),
            *self.wire.upstream_auth(proxy.api_key).items(),
            ("accept-encoding", "identity"),
            ("content-length", str(len(raw))),
        ]
        request = head_bytes(f"{method} {proxy.up_prefix}{target} HTTP/1.1", headers) + raw
        started = time.monotonic()
        upstream, answer, error = None, None, ""
        for fresh in (False, True):  # a kept-alive connection the provider closed: one new try
            try:
                upstream = proxy.upstream(fresh)
                upstream.sock.sendall(request)
                answer = read_head(upstream.rf)
                while answer is not None and _interim(answer):  # a 1xx before the answer: skipped
                    answer = read_head(upstream.rf)
                if answer is not None:
                    break
                error = "the provider closed the connection"
            except (OSError, BadMessage) as exc:
                error = f"{type(exc).__name__}: {exc}"
            proxy.drop_upstream()
        if answer is None or upstream is None:
            with proxy.lock:
                proxy.stats.upstream_errors += 1
                proxy.stats.last_upstream_error = f"provider unreachable: {error}"
            if exchange is not None:
                exchange.status, exchange.error = 502, f"provider unreachable: {error}"
                proxy.record(exchange)
            self.reply_json(
                502, self.wire.error_body(f"wholeloop proxy: the provider is unreachable ({error})", "api_error")
            )
            return True
        status = int(answer.line.split(" ", 2)[1])
        line = "HTTP/1.1 " + answer.line.split(" ", 1)[1]
        out = answer.forwardable()
        no_body = method == "HEAD" or status in (204, 304) or status < 200
        counted = exchange is not None and status < 400
        sse = "text/event-stream" in answer.get("content-type")
        scrub = proxy.scrubber
        # Asked for identity, a provider may still encode its answer: it is read whole and inflated
        # (so it can be scrubbed and metered), or refused when it is not gzip.
        encoding = answer.get("content-encoding").strip().lower()
        encoded = encoding not in ("", "identity") and not no_body
        if sse and answer.chunked and not no_body and not encoded:
            data = b""
            self.relay_stream(
                upstream,
                exchange if counted else None,
                started,
                scrub(head_bytes(line, out + [("transfer-encoding", "chunked")])),
            )
        else:
            if no_body:
                data = b""
            elif answer.chunked or answer.get("content-length"):
                data = read_body(upstream.rf, answer, MAX_BODY)
            else:  # delimited by the provider closing the connection
                data = upstream.rf.read()
                proxy.drop_upstream()
            if encoded:
                try:
                    if encoding != "gzip":
                        raise BadMessage(f"content-encoding {encoding} was not asked for")
                    data = gunzip(data, MAX_BODY)
                except BadMessage as exc:
                    return self.unreadable(exchange, f"the provider's answer cannot be read: {exc}")
            # charged before the CLI sees the reply, so its next call is checked against it
            if counted and exchange is not None:  # (counted says there is one)
                try:
                    if sse:
                        exchange.events = event_blocks(data + b"\n\n")[0]
                        reader = self.wire.stream()
                        for block in exchange.events:
                            feed_events(reader, block)
                        reply = reader.done()
                        if not reader.complete:  # cut before its usage: what was served, estimated
                            self.estimated(exchange, reply)
                        exchange.settled_usage = reply.usage
                    else:
                        reply = self.read_reply(orjson.loads(data))
                    self.settle(exchange, reply, started)
                except (orjson.JSONDecodeError, AttributeError, TypeError) as exc:
                    exchange.error = f"unreadable reply: {exc}"
            data = scrub(data)  # a provider's echo of the key never reaches the CLI
            self.send(scrub(head_bytes(line, out + [("content-length", str(len(data)))])) + data)
        if answer.get("connection").lower() == "close":
            proxy.drop_upstream()
        if exchange is None:
            proxy.note({"event": "free", "path": target[:200], "status": status})
            return True
        exchange.status = status
        exchange.latency_s = exchange.latency_s or time.monotonic() - started
        exchange.answered_at = time.monotonic()
        if status >= 400:
            with proxy.lock:
                proxy.stats.upstream_errors += 1
                proxy.stats.last_upstream_error = f"HTTP {status}: {data[:500].decode('utf-8', 'replace')}"
                proxy.stats.last_upstream_model = exchange.model
            exchange.error = proxy.stats.last_upstream_error
        proxy.record(exchange)
        return True

    def read_reply(self, body: object) -> Reply:
        """A JSON reply read by the wire; one whose content cannot be read is still its usage."""
        if not isinstance(body, dict):
            raise TypeError(f"the reply is a JSON {type(body).__name__}, not an object")
        try:
            return self.wire.reply(body)
        except (AttributeError, TypeError, ValueError):
            usage = body.get("usage")
            return Reply(
                usage=self.wire.usage(usage if isinstance(usage, dict) else None), model=str(body.get("model") or "")
            )

    def unreadable(self, exchange: Exchange | None, error: str) -> bool:
        """Answer 502 for a provider's answer the proxy cannot read (so cannot scrub or meter)."""
        proxy = self.proxy
        with proxy.lock:
            proxy.stats.upstream_errors += 1
            proxy.stats.last_upstream_error = error
        if exchange is not None:
            exchange.status, exchange.error = 502, error
            proxy.record(exchange)
        self.reply_json(502, self.wire.error_body(f"wholeloop proxy: {error}", "api_error"))
        return True

    def estimated(self, exchange: Exchange, reply: Reply) -> None:
        """A stream that ended before its usage event: its usage becomes a tokenizer's estimate."""
        reply.usage = estimate(exchange.raw, reply, reply.usage)
        exchange.estimated = True
        with self.proxy.lock:
            self.proxy.stats.estimated += 1
        self.proxy.note({"event": "estimated", "step": exchange.step, "usage": reply.usage.model_dump()})

    def settle(self, exchange: Exchange, reply: Reply, started: float) -> None:
        exchange.reply, exchange.latency_s = reply, time.monotonic() - started
        model = exchange.model or reply.model
        exchange.cost_usd = self.proxy.settle(reply.usage, model, exchange.latency_s, reply.server_uses)

    def relay_stream(self, upstream: Upstream, exchange: Exchange | None, started: float, head: bytes) -> None:
        """Forward a chunked stream as it arrives: the chunks that have arrived are forwarded
        together, each re-framed plainly (an extension, which may carry anything, is dropped),
        with one write; the relay waits on the provider only when no whole chunk is there. The
        reply's `head` goes out with the first chunks (one write less a call; it is sent alone
        when the stream ends before any, or is cut). Only
        events that carry usage are read on the way (so the reply is charged before its last event
        reaches the CLI); the rest are read by the recorder's thread afterwards.

        A client that hangs up does not end the relay: the stream is drained to its end (the
        provider generates it whether or not anyone reads, up to the clamped max_tokens) and charged
        the provider's own figure. A stream that ends before its usage event (the provider cut it)
        is charged what was served, counted with a tokenizer and marked estimated; the client's
        connection is then closed without the last chunk, so it sees the reply incomplete. The real
        key is scrubbed from every chunk, a chunk's end held back while it could be the start of one."""
        proxy = self.proxy
        scrub = proxy.scrubber
        needles = bool(scrub.needles)
        usage = self.wire.stream()
        served: list[bytes] = []  # the data as served: split into events on the recorder's thread
        pending = held = b""
        settled = ended = False
        cut = ""
        batches = ChunkBatches(upstream.rf)
        try:
            for batch in batches:  # the chunks that have arrived, forwarded with one write
                out = []
                for data in batch:
                    if exchange is not None:
                        served.append(data)
                    if exchange is not None and not settled:  # read on the way: the events with usage (or an error)
                        buf = pending + data if pending else data
                        if b"\r" in buf:
                            buf = buf.replace(b"\r\n", b"\n")
                        end = buf.rfind(b"\n\n")
                        if end < 0:
                            pending = buf
                        else:
                            done, pending = buf[:end], buf[end + 2 :]
                            if b"usage" in done or b"error" in done:
                                for block in done.split(b"\n\n"):
                                    if b"usage" in block or b"error" in block:
                                        feed_events(usage, block)
                                if usage.complete:  # charged before the chunk with its usage goes out
                                    self.settle(exchange, usage.done(), started)
                                    settled = True
                    if self.gone:
                        continue
                    if needles:  # the key's forms scrubbed; a chunk's end that could start one waits for the next
                        data = scrub(held + data if held else data)
                        keep = scrub.hold(data)
                        held, data = (data[len(data) - keep :], data[: len(data) - keep]) if keep else (b"", data)
                    if data:
                        out.append(b"%x\r\n%s\r\n" % (len(data), data))
                if batches.ended and not self.gone:  # the end came with these chunks: one write
                    if held:
                        out.append(b"%x\r\n%s\r\n" % (len(held), scrub(held)))
                        held = b""
                    out.append(b"0\r\n\r\n")
                    ended = True
                if out:
                    if head:
                        out.insert(0, head)
                        head = b""
                    self.send(b"".join(out))
            if batches.extra:  # bytes after the body: the connection is out of step
                proxy.drop_upstream()
        except (BadMessage, OSError) as exc:
            cut = f"{type(exc).__name__}: {exc}"
            proxy.drop_upstream()
        if head:  # no chunk went out: the head alone, before the end (or the cut)
            self.send(head)
        if held:
            self.send(b"%x\r\n%s\r\n" % (len(held), scrub(held)))
        if cut:
            self.gone = True  # no last chunk: the client must see the reply did not end
        elif not ended:
            self.send(b"0\r\n\r\n")
        if self.gone:
            with proxy.lock:
                proxy.stats.client_gone += not cut
            proxy.note({"event": "stream_cut" if cut else "client_gone", "error": cut, "settled": settled})
        if exchange is not None:
            exchange.stream = served
            if not settled:  # the stream ended without its final event: read all of it, estimate
                reader = self.wire.stream()
                for block in stream_events(served):
                    feed_events(reader, block)
                reply = reader.done()
                if not reader.complete:
                    self.estimated(exchange, reply)
                self.settle(exchange, reply, started)
                usage.out.usage = reply.usage
            exchange.reply = None  # the whole reply is read from `stream` on the recorder's thread
            exchange.settled_usage = usage.out.usage


def gunzip(data: bytes, limit: int) -> bytes:
    """A gzip body inflated, member after member, never past `limit` bytes: BadMessage past it
    (a small body that inflates to gigabytes is refused before it is held) or when not gzip."""
    out: list[bytes] = []
    total = 0
    while data:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            part = inflater.decompress(data, limit - total + 1)
        except zlib.error as exc:
            raise BadMessage(f"the gzip body is malformed ({exc})") from None
        total += len(part)
        if total > limit or inflater.unconsumed_tail:
            raise BadMessage(f"body too large: it inflates past {limit} bytes")
        if not inflater.eof:
            raise BadMessage("the gzip body is cut off")
        out.append(part)
        data = inflater.unused_data
    return b"".join(out)


def _interim(answer: Head) -> bool:
    """An interim (1xx) answer, which a real answer follows on the same connection."""
    parts = answer.line.split(" ", 2)
    return len(parts) > 1 and len(parts[1]) == 3 and parts[1].startswith("1")


def feed_events(reader: StreamReader, block: bytes) -> None:
    """Give `reader` the events of one SSE block."""
    for payload in sse_payloads(block + b"\n\n"):
        if payload == b"[DONE]":
            continue
        try:
            event = orjson.loads(payload)
        except orjson.JSONDecodeError:
            continue
        if isinstance(event, dict):
            reader.feed(event)


def count_refusal(stats: ProxyStats, counter: str) -> None:
    """Count one refusal of this kind."""
    if counter == "refused_target":
        stats.refused_target += 1
    elif counter == "refused_token":
        stats.refused_token += 1
    elif counter == "refused_model":
        stats.refused_model += 1


REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Payload Too Large",
    415: "Unsupported Media Type",
    429: "Too Many Requests",
    502: "Bad Gateway",
}
