"""The metering proxy: every model call of an external CLI goes through it, on the host.

One `MeteringProxy` serves one attempt. It listens on a Unix socket only (no TCP address at all,
so nothing else on a container network can reach it); the agent's container, which has no network,
reaches it through that socket's folder, bind-mounted, and our loopback forwarder inside. For each
request it:

- refuses CONNECT, absolute-form targets ("http://elsewhere/..."), and any method or path the
  wire format does not have (403/404/405); forwards only to the one configured provider;
- refuses a request without the attempt's token (401): a container cannot spend another's budget;
- swaps the token for the real key, which never enters the container;
- checks the attempt's `Budget` (the same code the built-in agent uses: model calls, wall time,
  tokens, cost) before every model call, clamps `max_tokens` to what is left, and once a limit is
  reached answers every further call with an error in the protocol's shape and the status the
  agent config names (`x-should-retry: false`), forwarding nothing more;
- relays the reply as it comes (streams are written chunk by chunk before they are read), then
  reads usage from it, charges it with cost from the shared price map, and hands the request and
  reply to the `Recorder` on its own thread, so writing the transcript is off the relay path.

Requests are parsed once with orjson (stdlib json under the GIL was too slow for 8 concurrent
100 KB streams) and re-serialised only when the proxy changes them.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import hmac
import os
import queue
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec
import orjson

from ...models.pricing import Price, PriceTable, cost_usd, litellm_price_map, lookup_price
from ...models.types import Usage
from ..budget import Budget, LimitReached
from .http1 import HOP, BadMessage, Head, Upstream, chunks, head_bytes, read_body, read_head
from .wire import Reply, Wire, sse_payloads

_KINDS = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
          405: "invalid_request_error", 413: "request_too_large", 415: "invalid_request_error", 429: "rate_limit_error"}
MAX_BODY = 64 * 1024 * 1024
_TOP_LEVEL = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ENCODER = msgspec.json.Encoder()
_FIELDS = ("model", "stream", "stream_options", "max_tokens", "max_completion_tokens", "max_output_tokens")
RECORD_DELAY_S = 2.0  # at most this long does recording wait for the relaying to pause


@dataclass
class Exchange:
    """One model call as the recorder gets it."""

    step: int
    raw: bytes = b""  # the request as forwarded (the recorder reads it on its own thread)
    model: str = ""
    sent_at: float = field(default_factory=time.monotonic)  # when the request came in
    answered_at: float = 0.0  # when the reply was complete
    reply: Reply | None = None
    events: list[bytes] | None = None  # a streamed reply's SSE events, read into `reply` on the recorder's thread
    settled_usage: Usage | None = None
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
    upstream_errors: int = 0
    last_upstream_error: str = ""
    after_limit_forwarded: int = 0  # must stay 0: calls forwarded once a limit was reached
    usage: Usage = field(default_factory=Usage)


class MeteringProxy:
    """The proxy of one attempt (see the module docstring). A context manager."""

    def __init__(self, socket_path: str, *, wire: Wire, upstream: str, api_key: str, token: str, budget: Budget,
                 refuse_status: int = 429, prices: PriceTable | None = None, provider: str = "",
                 record: Callable[[Exchange], None] | None = None, on_limit: Callable[[LimitReached], None] | None = None,
                 log: Callable[[dict], None] | None = None) -> None:
        self.socket_path, self.wire, self.token, self.budget = socket_path, wire, token, budget
        self.refuse_status, self.prices, self.provider = refuse_status, prices, provider
        self.on_limit, self.log = on_limit, log
        self.api_key = api_key
        parts = urllib.parse.urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the provider's base URL must be http(s)://host[:port][/prefix], not {upstream!r}")
        self.up_https = parts.scheme == "https"
        self.up_host, self.up_port = parts.hostname, parts.port or (443 if self.up_https else 80)
        self.up_prefix = parts.path.rstrip("/").removesuffix("/v1")
        default_port = parts.port is None or parts.port == (443 if self.up_https else 80)
        self.up_host_header = self.up_host if default_port else f"{self.up_host}:{self.up_port}"
        self.lock = threading.Lock()
        self.stats = ProxyStats()
        self.limit: LimitReached | None = None  # set once a limit is reached; every call is refused from then on
        self._local = threading.local()
        self._queue: queue.SimpleQueue[Exchange | None] = queue.SimpleQueue()
        self._record = record
        self._recorder = threading.Thread(target=self._drain, name="wl-proxy-recorder", daemon=True)
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._clients: set[socket.socket] = set()
        self._upstreams: list[Upstream] = []
        self._model = ""  # the model of the latest call, for the cost clamp
        self._prices: dict[str, Price | None] = {}
        self.in_flight = 0  # requests being relayed now

    # ------------------------------------------------------------------ life cycle

    def start(self) -> MeteringProxy:
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.socket_path)
        os.chmod(self.socket_path, 0o666)  # the container's user may not be root
        listener.listen(64)
        self._listener = listener
        self._thread = threading.Thread(target=self._accept, name="wl-proxy", daemon=True)
        self._thread.start()
        self._recorder.start()
        return self

    def _accept(self) -> None:
        listener = self._listener
        while listener is not None:
            try:
                sock, _ = listener.accept()
            except OSError:
                return  # closed
            with self.lock:
                self._clients.add(sock)
            threading.Thread(target=_Connection(self, sock).serve, name="wl-proxy-conn", daemon=True).start()

    def forget(self, sock: socket.socket) -> None:
        with self.lock:
            self._clients.discard(sock)

    def close(self) -> None:
        """Stop serving, finish recording what was received, remove the socket."""
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
            if self._thread is not None:
                self._thread.join(timeout=5)
        with self.lock:
            clients, self._clients = list(self._clients), set()
            upstreams, self._upstreams = list(self._upstreams), []
        for sock in clients:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._recorder.is_alive():
            self._queue.put(None)
            self._recorder.join(timeout=60)
        for upstream in upstreams:
            with contextlib.suppress(OSError):
                upstream.close()
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)

    def __enter__(self) -> MeteringProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ budget

    def admit(self, model: str = "") -> tuple[int, int | None] | LimitReached:
        """Before a model call: its step number and the output tokens it may use, or the limit that refuses it."""
        with self.lock:
            if self.limit is None:
                try:
                    self.budget.check()
                except LimitReached as hit:
                    self._reached(hit)
            if self.limit is not None:
                self.stats.refused_budget += 1
                return self.limit
            step = self.budget.start_call()
            self.stats.calls += 1
            return step, self._output_left(model)

    def _output_left(self, model: str) -> int:
        """Output tokens the call may use: what the token limit leaves, and what the money left buys."""
        left = self.budget.output_tokens_left()
        limit = self.budget.limits.max_cost_usd
        price = self._price(model)
        if limit is not None and price is not None and self.budget.cost_known and price.output_cost_per_token > 0:
            left = min(left, int(max(limit - self.budget.cost, 0) / price.output_cost_per_token))
        return max(left, 1)

    def _price(self, model: str | None) -> Price | None:
        name = model or self._model
        if not name:
            return None
        if name not in self._prices:  # a lookup builds a pydantic model: once per model, not per call
            self._prices[name] = lookup_price(name, self.provider, overrides=self.prices)
        return self._prices[name]

    def settle(self, usage: Usage, model: str, latency_s: float) -> float | None:
        """After a model call: charge its usage and cost; a limit reached now refuses every later call."""
        price = self._price(model)
        cost = cost_usd(usage, price)
        with self.lock:
            self._model = model or self._model
            self.budget.charge(usage, cost, latency_s)
            self.stats.usage += usage
            try:
                self.budget.check()
            except LimitReached as hit:  # spent now: the next call is refused, and the grace starts
                self._reached(hit)
        return cost

    def _reached(self, hit: LimitReached) -> None:
        if self.limit is None:
            self.limit = hit
            if self.on_limit is not None:
                threading.Thread(target=self.on_limit, args=(hit,), daemon=True).start()

    # ------------------------------------------------------------------ upstream

    def upstream(self, fresh: bool = False) -> Upstream:
        """This thread's kept-alive connection to the provider (a new one when `fresh`)."""
        conn = None if fresh else self._local.__dict__.get("conn")
        if conn is None:
            conn = Upstream(self.up_host, self.up_port, self.up_https)
            self._local.conn = conn
            with self.lock:
                self._upstreams.append(conn)
        return conn

    def drop_upstream(self) -> None:
        """Forget this thread's connection to the provider (it closed, or it failed)."""
        conn = self._local.__dict__.pop("conn", None)
        if conn is not None:
            with self.lock:
                if conn in self._upstreams:
                    self._upstreams.remove(conn)
            with contextlib.suppress(OSError):
                conn.close()

    # ------------------------------------------------------------------ recording

    def record(self, exchange: Exchange) -> None:
        if self._record is not None:
            self._queue.put(exchange)

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            # Recording waits while calls are being relayed (their relay must not wait on the GIL
            # for it); a CLI's calls come one by one, so it mostly runs while the CLI works.
            waited = 0.0
            while self.in_flight and waited < RECORD_DELAY_S:
                time.sleep(0.005)
                waited += 0.005
            try:
                if item.events is not None:  # a stream: read it whole now, off the relay path
                    reader = self.wire.stream()
                    for block in item.events:
                        _feed(reader, block)
                    item.reply = reader.done()
                    if item.settled_usage is not None:
                        item.reply.usage = item.settled_usage  # what was charged, to the token
                self._record(item)
            except Exception as exc:  # a recording bug must not stop the relay
                self.note({"event": "record_failed", "error": f"{type(exc).__name__}: {exc}"})

    def note(self, entry: dict) -> None:
        if self.log is not None:
            self.log({"t": round(time.time(), 3), **entry})



@functools.lru_cache(maxsize=256)
def max_output_tokens(model: str) -> int | None:
    """The model's maximum reply length in litellm's map, when it is there."""
    entry = litellm_price_map().get(model) or litellm_price_map().get(model.split("/")[-1]) or {}
    value = entry.get("max_output_tokens") or entry.get("max_tokens")
    return value if isinstance(value, int) and value > 0 else None


def _event_blocks(data: bytes) -> tuple[list[bytes], bytes]:
    """The complete SSE events in `data` (each ends with a blank line), and the rest."""
    data = data.replace(b"\r\n", b"\n")
    cut = data.rfind(b"\n\n")
    if cut < 0:
        return [], data
    return [b for b in data[:cut].split(b"\n\n") if b.strip()], data[cut + 2:]


class _Connection:
    """One connection from the container (through the forwarder): requests in order, kept alive."""

    def __init__(self, proxy: MeteringProxy, sock: socket.socket) -> None:
        self.proxy, self.wire, self.sock = proxy, proxy.wire, sock
        self.rf = sock.makefile("rb", buffering=1 << 16)
        self.send = sock.sendall

    def serve(self) -> None:
        proxy = self.proxy
        try:
            while True:
                head = read_head(self.rf)
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

    def reply_json(self, status: int, payload: dict, headers: list[tuple[str, str]] = ()) -> None:
        data = orjson.dumps(payload)
        self.send(head_bytes(f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}",
                             [("content-type", "application/json"), ("content-length", str(len(data))), *headers]) + data)

    def refuse(self, status: int, message: str, why: str, method: str, target: str, counter: str) -> None:
        proxy = self.proxy
        with proxy.lock:
            _count(proxy.stats, counter)
        proxy.note({"event": "refused", "why": why, "method": method, "path": target[:200], "status": status})
        self.reply_json(status, self.wire.error_body(f"wholeloop proxy: {message}", _KINDS.get(status, "api_error")),
                        [("x-should-retry", "false")])

    # -------------------------------------------------------------- one request

    def handle(self, head: Head) -> bool:
        """Answer one request; False when the connection must close."""
        parts = head.line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            self.reply_json(400, {"error": {"message": "wholeloop proxy: not an HTTP/1.1 request"}},
                            [("connection", "close")])
            return False
        method, target, _ = parts
        keep = head.get("connection").lower() != "close"
        if method == "CONNECT":
            self.refuse(405, "CONNECT is refused: this proxy forwards to one model provider only", "connect", method,
                        target, "refused_target")
            return False
        try:
            raw = read_body(self.rf, head, MAX_BODY)
        except BadMessage as exc:
            self.reply_json(413 if "large" in str(exc) else 400, {"error": {"message": f"wholeloop proxy: {exc}"}},
                            [("connection", "close")])
            return False
        if not target.startswith("/") or target.startswith("//"):
            self.refuse(403, "only the configured model provider can be reached", "target", method, target,
                        "refused_target")
            return keep
        path = target.split("?", 1)[0]
        kind = self.wire.route(method, path)
        if kind is None:
            self.refuse(404 if method in ("GET", "POST") else 405, f"{method} {path} is not part of the "
                        f"{self.wire.name} API", "route", method, target, "refused_target")
            return keep
        if not self.authorized(head):
            self.refuse(401, "this request does not carry the attempt's token", "token", method, target, "refused_token")
            return keep
        encoding = head.get("content-encoding").lower()
        if encoding == "gzip":
            raw = gzip.decompress(raw)
        elif encoding not in ("", "identity"):
            self.refuse(415, f"request bodies encoded with {encoding} are not supported; turn off the CLI's request "
                        "compression", "encoding", method, target, "refused_target")
            return keep
        if kind == "free":
            with self.proxy.lock:
                self.proxy.stats.free += 1
            return self.forward(method, target, head, raw, None) and keep
        try:  # the top level only: the conversation inside stays bytes, unparsed on this path
            top = _TOP_LEVEL.decode(raw)
        except msgspec.DecodeError:
            self.refuse(400, "the request body is not a JSON object", "json", method, target, "refused_target")
            return keep
        try:
            fields = {k: orjson.loads(bytes(top[k])) for k in _FIELDS if k in top}
        except orjson.JSONDecodeError:
            fields = {}
        model = fields.get("model") if isinstance(fields.get("model"), str) else ""
        admitted = self.proxy.admit(model)
        if isinstance(admitted, LimitReached):
            self.proxy.note({"event": "refused", "why": "budget", "method": method, "path": target[:200],
                             "status": self.proxy.refuse_status})
            self.reply_json(self.proxy.refuse_status, self.wire.error_body(
                f"wholeloop proxy: the attempt's {admitted.reason.replace('_', ' ')} is reached ({admitted.detail}); "
                "no more model calls are allowed", _KINDS.get(self.proxy.refuse_status, "api_error")),
                [("x-should-retry", "false")])
            return keep
        step, out_left = admitted
        before = dict(fields)
        self.wire.prepare(fields, out_left, max_output_tokens(model))
        if fields != before:  # only then re-encoded, the untouched values copied as they came
            for k, v in fields.items():
                if k not in before or before[k] != v:
                    top[k] = msgspec.Raw(orjson.dumps(v))
            raw = _ENCODER.encode(top)
        return self.forward(method, target, head, raw, Exchange(step=step, raw=raw, model=model)) and keep

    def authorized(self, head: Head) -> bool:
        given = head.get("x-api-key")
        auth = head.get("authorization")
        if not given and auth[:7].lower() == "bearer ":
            given = auth[7:].strip()
        return bool(given) and hmac.compare_digest(given.encode(), self.proxy.token.encode())

    # -------------------------------------------------------------- upstream and back

    def forward(self, method: str, target: str, head: Head, raw: bytes, exchange: Exchange | None) -> bool:
        proxy = self.proxy
        headers = [(k, v) for k, v in head.headers if k not in HOP]
        headers += [("host", proxy.up_host_header), *self.wire.upstream_auth(proxy.api_key).items(),
                    ("accept-encoding", "identity"), ("content-length", str(len(raw)))]
        request = head_bytes(f"{method} {proxy.up_prefix}{target} HTTP/1.1", headers) + raw
        started = time.monotonic()
        upstream, answer, error = None, None, ""
        for fresh in (False, True):  # a kept-alive connection the provider closed: one new try
            try:
                upstream = proxy.upstream(fresh)
                upstream.sock.sendall(request)
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
            self.reply_json(502, self.wire.error_body(f"wholeloop proxy: the provider is unreachable ({error})",
                                                      "api_error"))
            return True
        status = int(answer.line.split(" ", 2)[1])
        line = "HTTP/1.1 " + answer.line.split(" ", 1)[1]
        out = [(k, v) for k, v in answer.headers if k not in HOP]
        no_body = method == "HEAD" or status in (204, 304) or status < 200
        counted = exchange is not None and status < 400
        sse = "text/event-stream" in answer.get("content-type")
        if sse and answer.chunked and not no_body:
            self.send(head_bytes(line, out + [("transfer-encoding", "chunked")]))
            data = b""
            self.relay_stream(upstream, exchange if counted else None, started)
        else:
            if no_body:
                data = b""
            elif answer.chunked or answer.get("content-length"):
                data = read_body(upstream.rf, answer, MAX_BODY)
            else:  # delimited by the provider closing the connection
                data = upstream.rf.read()
                proxy.drop_upstream()
            if counted:  # charged before the CLI sees the reply, so its next call is checked against it
                try:
                    if sse:
                        exchange.events = _event_blocks(data + b"\n\n")[0]
                        reader = self.wire.stream()
                        for block in exchange.events:
                            _feed(reader, block)
                        reply = reader.done()
                    else:
                        reply = self.wire.reply(orjson.loads(data))
                    self.settle(exchange, reply, started)
                except (orjson.JSONDecodeError, AttributeError, TypeError) as exc:
                    exchange.error = f"unreadable reply: {exc}"
            self.send(head_bytes(line, out + [("content-length", str(len(data)))]) + data)
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
            exchange.error = proxy.stats.last_upstream_error
        proxy.record(exchange)
        return True

    def settle(self, exchange: Exchange, reply: Reply, started: float) -> None:
        exchange.reply, exchange.latency_s = reply, time.monotonic() - started
        model = exchange.model or reply.model
        exchange.cost_usd = self.proxy.settle(reply.usage, model, exchange.latency_s)

    def relay_stream(self, upstream: Upstream, exchange: Exchange | None, started: float) -> None:
        """Forward a chunked stream frame for frame. Only events that carry usage are read on the
        way (so the reply is charged before its last event reaches the CLI); the rest are read by
        the recorder's thread afterwards."""
        usage = self.wire.stream()
        blocks: list[bytes] = []
        pending = b""
        settled = False
        for frame, data in chunks(upstream.rf):
            if exchange is not None:
                found, pending = _event_blocks(pending + data)
                blocks += found
                if not settled:
                    for block in found:
                        if b"usage" in block or b"error" in block:
                            _feed(usage, block)
                    if usage.complete:
                        self.settle(exchange, usage.done(), started)
                        settled = True
            self.send(frame)
        self.send(b"0\r\n\r\n")
        if exchange is not None:
            if pending.strip():
                blocks.append(pending)
            exchange.events = blocks
            if not settled:  # the stream ended without its final event: charge what it said
                for block in blocks[-1:]:
                    _feed(usage, block)
                self.settle(exchange, usage.done(), started)
            exchange.reply = None  # the whole reply is read from `events` on the recorder's thread
            exchange.settled_usage = usage.out.usage


def _feed(reader, block: bytes) -> None:
    for payload in sse_payloads(block + b"\n\n"):
        if payload == b"[DONE]":
            continue
        try:
            event = orjson.loads(payload)
        except orjson.JSONDecodeError:
            continue
        if isinstance(event, dict):
            reader.feed(event)


def _count(stats: ProxyStats, counter: str) -> None:
    """Count one refusal of this kind."""
    if counter == "refused_target":
        stats.refused_target += 1
    elif counter == "refused_token":
        stats.refused_token += 1


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 413: "Payload Too Large", 415: "Unsupported Media Type",
            429: "Too Many Requests", 502: "Bad Gateway"}
