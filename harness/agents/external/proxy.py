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

import gzip
import hmac
import http.client
import os
import queue
import socket
import socketserver
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

import orjson

from ...models.pricing import Price, PriceTable, cost_usd, litellm_price_map, lookup_price
from ...models.types import Usage
from ..budget import Budget, LimitReached
from .wire import Reply, Wire, sse_payloads

_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "transfer-encoding", "te", "trailer",
        "upgrade", "host", "content-length", "content-encoding", "accept-encoding", "x-api-key", "authorization"}
_KINDS = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
          405: "invalid_request_error", 413: "request_too_large", 415: "invalid_request_error", 429: "rate_limit_error"}
MAX_BODY = 64 * 1024 * 1024


@dataclass
class Exchange:
    """One model call as the recorder gets it."""

    step: int
    body: dict
    reply: Reply | None = None
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
        self.lock = threading.Lock()
        self.stats = ProxyStats()
        self.limit: LimitReached | None = None  # set once a limit is reached; every call is refused from then on
        self._local = threading.local()
        self._queue: queue.SimpleQueue[Exchange | None] = queue.SimpleQueue()
        self._record = record
        self._recorder = threading.Thread(target=self._drain, name="wl-proxy-recorder", daemon=True)
        self._server: socketserver.ThreadingUnixStreamServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: list[http.client.HTTPConnection] = []
        self._model = ""  # the model of the latest call, for the cost clamp

    # ------------------------------------------------------------------ life cycle

    def start(self) -> MeteringProxy:
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        self._server = _Server(self.socket_path, _handler(self))
        os.chmod(self.socket_path, 0o666)  # the container's user may not be root
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="wl-proxy", daemon=True)
        self._thread.start()
        self._recorder.start()
        return self

    def close(self) -> None:
        """Stop serving, finish recording what was received, remove the socket."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._recorder.is_alive():
            self._queue.put(None)
            self._recorder.join(timeout=60)
        with self.lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
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
        return lookup_price(name, self.provider, overrides=self.prices) if name else None

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

    def connection(self, fresh: bool = False) -> http.client.HTTPConnection:
        conn = None if fresh else self._local.__dict__.get("conn")
        if conn is None:
            cls = http.client.HTTPSConnection if self.up_https else http.client.HTTPConnection
            conn = cls(self.up_host, self.up_port, timeout=900)
            conn.connect()
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._local.conn = conn
            with self.lock:
                self._connections.append(conn)
        return conn

    # ------------------------------------------------------------------ recording

    def record(self, exchange: Exchange) -> None:
        if self._record is not None:
            self._queue.put(exchange)

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            try:
                self._record(item)
            except Exception as exc:  # a recording bug must not stop the relay
                self.note({"event": "record_failed", "error": f"{type(exc).__name__}: {exc}"})

    def note(self, entry: dict) -> None:
        if self.log is not None:
            self.log({"t": round(time.time(), 3), **entry})


    def drop_connection(self) -> None:
        """Forget this thread's upstream connection (the provider closed it, or it failed)."""
        conn = self._local.__dict__.pop("conn", None)
        if conn is not None:
            conn.close()


def max_output_tokens(model: str) -> int | None:
    """The model's maximum reply length in litellm's map, when it is there."""
    entry = litellm_price_map().get(model) or litellm_price_map().get(model.split("/")[-1]) or {}
    value = entry.get("max_output_tokens") or entry.get("max_tokens")
    return value if isinstance(value, int) and value > 0 else None


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    request_queue_size = 64

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that hangs up mid-request is not news


def _handler(proxy: MeteringProxy) -> type[BaseHTTPRequestHandler]:
    wire = proxy.wire

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "wholeloop-proxy"
        sys_version = ""

        def log_message(self, *args: object) -> None:
            pass

        def address_string(self) -> str:
            return "container"

        def setup(self) -> None:
            super().setup()
            self.close_connection = False

        # -------------------------------------------------------------- refusals

        def _send(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
            data = orjson.dumps(payload)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _refuse(self, status: int, message: str, why: str, headers: dict[str, str] | None = None) -> None:
            proxy.note({"event": "refused", "why": why, "method": self.command, "path": self.path[:200], "status": status})
            self._send(status, wire.error_body(f"wholeloop proxy: {message}", _KINDS.get(status, "api_error")),
                       {"x-should-retry": "false", **(headers or {})})

        def do_CONNECT(self) -> None:
            with proxy.lock:
                proxy.stats.refused_target += 1
            self.close_connection = True
            self._refuse(405, "CONNECT is refused: this proxy forwards to one model provider only", "connect",
                         {"Connection": "close"})

        def do_GET(self) -> None:
            self._handle()

        def do_POST(self) -> None:
            self._handle()

        def do_HEAD(self) -> None:
            self._handle()

        do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_POST

        # -------------------------------------------------------------- the request

        def _body(self) -> bytes | None:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                parts = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        break
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()
                raw = b"".join(parts)
            else:
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY:
                    return None
                raw = self.rfile.read(length) if length else b""
            encoding = (self.headers.get("Content-Encoding") or "").lower()
            if encoding == "gzip":
                raw = gzip.decompress(raw)
            elif encoding not in ("", "identity"):
                raise ValueError(encoding)
            return raw

        def _authorized(self) -> bool:
            given = self.headers.get("x-api-key") or ""
            auth = self.headers.get("Authorization") or ""
            if not given and auth[:7].lower() == "bearer ":
                given = auth[7:].strip()
            return bool(given) and hmac.compare_digest(given.encode(), proxy.token.encode())

        def _handle(self) -> None:
            target = self.path
            if not target.startswith("/") or target.startswith("//"):
                with proxy.lock:
                    proxy.stats.refused_target += 1
                return self._refuse(403, "only the configured model provider can be reached", "target")
            path = urllib.parse.urlsplit(target).path
            kind = wire.route(self.command, path)
            if kind is None:
                with proxy.lock:
                    proxy.stats.refused_target += 1
                return self._refuse(404 if self.command in ("GET", "POST") else 405,
                                    f"{self.command} {path} is not part of the {wire.name} API", "route")
            try:
                raw = self._body()
            except ValueError as exc:
                return self._refuse(415, f"request bodies encoded with {exc} are not supported; "
                                    "turn off the CLI's request compression", "encoding")
            if raw is None:
                return self._refuse(413, "request body too large", "size")
            if not self._authorized():
                with proxy.lock:
                    proxy.stats.refused_token += 1
                return self._refuse(401, "this request does not carry the attempt's token", "token")
            if kind == "free":
                with proxy.lock:
                    proxy.stats.free += 1
                return self._forward(raw, None)
            try:
                body = orjson.loads(raw)
            except orjson.JSONDecodeError:
                return self._refuse(400, "the request body is not JSON", "json")
            if not isinstance(body, dict):
                return self._refuse(400, "the request body is not a JSON object", "json")
            admitted = proxy.admit(str(body.get("model") or ""))
            if isinstance(admitted, LimitReached):
                return self._refuse(proxy.refuse_status, f"the attempt's {admitted.reason.replace('_', ' ')} is reached "
                                    f"({admitted.detail}); no more model calls are allowed", "budget")
            step, out_left = admitted
            before = {k: body.get(k) for k in (wire.limit_key(body), "stream_options")}
            wire.prepare(body, out_left, max_output_tokens(str(body.get("model") or "")))
            changed = any(body.get(k) != v for k, v in before.items()) or wire.limit_key(body) not in before
            # forwarded as received unless the clamp changed it: no second serialisation
            self._forward(orjson.dumps(body) if changed else raw, Exchange(step=step, body=body))

        # -------------------------------------------------------------- the reply

        def _forward(self, raw: bytes, exchange: Exchange | None) -> None:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
            headers.update(wire.upstream_auth(proxy.api_key))
            headers["Accept-Encoding"] = "identity"
            headers["Content-Length"] = str(len(raw))
            target = proxy.up_prefix + self.path
            started = time.monotonic()
            response = None
            for fresh in (False, True):  # a kept-alive connection the provider closed: one new try
                try:
                    conn = proxy.connection(fresh=fresh)
                    conn.request(self.command, target, body=raw if raw or self.command == "POST" else None,
                                 headers=headers)
                    response = conn.getresponse()
                    break
                except (OSError, http.client.HTTPException) as exc:
                    conn_error = f"{type(exc).__name__}: {exc}"
                    proxy.drop_connection()
            if response is None:
                with proxy.lock:
                    proxy.stats.upstream_errors += 1
                    proxy.stats.last_upstream_error = f"provider unreachable: {conn_error}"
                if exchange is not None:
                    exchange.status, exchange.error = 502, f"provider unreachable: {conn_error}"
                    proxy.record(exchange)
                return self._send(502, wire.error_body(f"wholeloop proxy: the provider is unreachable ({conn_error})",
                                                       "api_error"))
            ctype = response.getheader("Content-Type", "")
            self.send_response(response.status)
            for k, v in response.getheaders():
                if k.lower() not in _HOP:
                    self.send_header(k, v)
            streamed = "text/event-stream" in ctype and self.command != "HEAD"
            counted = exchange is not None and response.status < 400
            if streamed:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                data = b""
                self._relay_stream(response, exchange if counted else None, started)
            else:
                data = response.read()
                if counted:  # charged before the CLI sees the reply, so its next call is checked against it
                    try:
                        self._settle(exchange, wire.reply(orjson.loads(data)), started)
                    except (orjson.JSONDecodeError, AttributeError, TypeError) as exc:
                        exchange.error = f"unreadable reply: {exc}"
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
            if response.will_close:
                proxy.drop_connection()
            if exchange is None:
                return proxy.note({"event": "free", "path": self.path[:200], "status": response.status})
            exchange.status = response.status
            exchange.latency_s = exchange.latency_s or time.monotonic() - started
            if response.status >= 400:
                with proxy.lock:
                    proxy.stats.upstream_errors += 1
                    proxy.stats.last_upstream_error = f"HTTP {response.status}: {data[:500].decode('utf-8', 'replace')}"
                exchange.error = proxy.stats.last_upstream_error
            proxy.record(exchange)
            reply = exchange.reply
            proxy.note({"event": "call", "step": exchange.step, "status": response.status,
                        "ms": round(exchange.latency_s * 1000, 1), "stream": streamed, "cost_usd": exchange.cost_usd,
                        "usage": reply.usage.model_dump(exclude_defaults=True) if reply else None})

        def _settle(self, exchange: Exchange, reply: Reply, started: float) -> None:
            exchange.reply, exchange.latency_s = reply, time.monotonic() - started
            model = str(exchange.body.get("model") or reply.model)
            exchange.cost_usd = proxy.settle(reply.usage, model, exchange.latency_s)

        def _relay_stream(self, response: http.client.HTTPResponse, exchange: Exchange | None, started: float) -> None:
            """Relay a stream chunk by chunk. Each chunk's complete events are read before it is
            written (microseconds), so the reply is charged before its last event reaches the CLI."""
            reader = wire.stream()
            pending = b""
            settled = False
            write, flush = self.wfile.write, self.wfile.flush
            while True:
                chunk = response.read1(65536)
                if chunk:
                    pending += chunk
                    cut = max(pending.rfind(b"\n\n"), pending.rfind(b"\r\n\r\n"))
                    if cut >= 0:
                        complete, pending = pending[:cut + 2], pending[cut + 2:].lstrip(b"\r\n")
                        self._feed(reader, complete)
                else:  # the stream ended: whatever is left is its last event
                    self._feed(reader, pending + b"\n\n")
                if exchange is not None and not settled and (reader.complete or not chunk):
                    self._settle(exchange, reader.done(), started)
                    settled = True
                if not chunk:
                    break
                write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                flush()
            write(b"0\r\n\r\n")
            flush()

        @staticmethod
        def _feed(reader, block: bytes) -> None:
            for payload in sse_payloads(block):
                if payload == b"[DONE]":
                    continue
                try:
                    event = orjson.loads(payload)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(event, dict):
                    reader.feed(event)

    return Handler
