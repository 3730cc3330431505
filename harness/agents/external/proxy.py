"""The metering proxy: every model call of an external CLI goes through it, on the host.

One `MeteringProxy` serves one attempt. It listens on a Unix socket only (no TCP address at all,
so nothing else on a container network can reach it); the agent's container, which has no network,
reaches it through that socket's folder, bind-mounted, and our loopback forwarder inside. For each
request it:

- refuses CONNECT, absolute-form targets ("http://elsewhere/..."), and any method or path the
  wire format does not have (403/404/405); forwards only to the one configured provider;
- refuses a request head that is not strict HTTP/1.1 (a bare CR or LF, folding, two framings),
  and connections past the attempt's cap (`max_connections`, 503);
- refuses a request without the attempt's token (401): a container cannot spend another's budget;
- refuses a call naming another model than the configured one and its allow-list (by the wire's
  `model_id` rule), or one without a price unless unknown prices are allowed (403); a request for
  several choices (`n` > 1, 400); MCP servers and a forced provider-side tool (400); strips the
  provider-side tools the config does not allow (and notes it);
- swaps the token for the real key, which never enters the container, and scrubs the key from
  every reply before the CLI gets it (an echo, in any form, across stream chunks);
- checks the attempt's `Budget` (the same code the built-in agent uses: model calls, wall time,
  tokens, cost) before every model call, clamps `max_tokens` to what is left, and once a limit is
  reached answers every further call with an error in the protocol's shape and the status the
  agent config names (`x-should-retry: false`), forwarding nothing more;
- relays the reply as it comes (streams are written chunk by chunk before they are read), then
  reads usage from it, charges it with cost from the shared price map, and hands the request and
  reply to the `Recorder` on its own thread, so writing the transcript is off the relay path. A
  stream the client hangs up on is drained and charged all the same; one that ends before its
  usage is charged a tokenizer's estimate (`relay.py`).

The HTTP side (one `Connection` per connection from the container) is in `relay.py`.
"""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import threading
import time
import urllib.parse
import weakref
from collections.abc import Callable

from ...models.pricing import Price, PriceTable, cost_usd, lookup_price
from ...models.types import Usage
from ..budget import Budget, LimitReached
from .config import ExternalConfigError
from .http1 import Upstream
from .relay import Connection, Exchange, ProxyStats, Scrubber, feed_events, stream_events
from .wire import Wire

RECORD_DELAY_S = 2.0  # at most this long does recording wait for the relaying to pause
CLOSE_WAIT_S = 60.0  # at most this long does closing wait for a reply being relayed or drained
CUT_WAIT_S = 5.0  # then at most this long for the replies it cut to be charged
_TOO_MANY = b'{"error":{"message":"wholeloop proxy: too many connections","type":"overloaded_error"}}'
TOO_MANY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"x-should-retry: false\r\ncontent-length: %d\r\n\r\n%s" % (len(_TOO_MANY), _TOO_MANY)
)


class MeteringProxy:
    """The proxy of one attempt (see the module docstring). A context manager."""

    def __init__(
        self,
        socket_path: str,
        *,
        wire: Wire,
        upstream: str,
        api_key: str,
        token: str,
        budget: Budget,
        model: str,
        models: list[str] | tuple[str, ...] = (),
        allow_unknown_model: bool = False,
        max_connections: int = 64,
        server_tools: dict[str, float] | None = None,
        refuse_status: int = 429,
        prices: PriceTable | None = None,
        provider: str = "",
        record: Callable[[Exchange], None] | None = None,
        on_limit: Callable[[LimitReached], None] | None = None,
        log: Callable[[dict], object] | None = None,  # (what it returns is not used)
    ) -> None:
        self.socket_path, self.wire, self.token, self.budget = socket_path, wire, token, budget
        self.refuse_status, self.prices, self.provider = refuse_status, prices, provider
        self.on_limit, self.log = on_limit, log
        self.api_key = api_key
        # The models a call may name: the configured one and the config's allow-list, by the wire's
        # model-id rule (each maps to the id whose price a dated alias without its own is charged at).
        self.models = {wire.model_id(m): m for m in (model, *models) if m}
        self.allow_unknown_model = allow_unknown_model
        self.max_connections = max_connections
        self.server_tools = dict(server_tools or {})  # provider-side tools allowed: kind -> USD per use
        self.scrubber = Scrubber([api_key])
        parts = urllib.parse.urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ExternalConfigError(
                f"the provider's base URL must be http(s)://host[:port][/prefix], not {upstream!r}"
            )
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
        self._threads: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
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
                full = len(self._clients) >= self.max_connections
                if not full:
                    self._clients.add(sock)
            if full:  # only this attempt's own calls can suffer: its connections are capped
                self._refuse_connection(sock)
                continue
            thread = threading.Thread(target=Connection(self, sock).serve, name="wl-proxy-conn", daemon=True)
            self._threads.add(thread)
            thread.start()

    def _refuse_connection(self, sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.setblocking(False)
            sock.sendall(TOO_MANY)
        with contextlib.suppress(OSError):
            sock.close()
        with self.lock:
            self.stats.refused_connections += 1
            first = self.stats.refused_connections == 1
        if first:
            self.note({"event": "too_many_connections", "limit": self.max_connections})

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
        # A reply still being relayed (or drained after its client hung up) is charged before the
        # attempt's spend is read: its connection ends once the provider's stream does.
        deadline = time.monotonic() + CLOSE_WAIT_S  # for all of them together
        for thread in list(self._threads):
            thread.join(timeout=max(deadline - time.monotonic(), 0))
        # Past the wait, a reply still streaming is cut: shutting the provider's socket down ends
        # the relay's read (closing it would wait on the read's buffer lock for as long as the
        # provider streams), and the relay charges what was served, estimated, before it ends.
        for upstream in upstreams:
            with contextlib.suppress(OSError):
                upstream.sock.shutdown(socket.SHUT_RDWR)
        for thread in list(self._threads):
            thread.join(timeout=CUT_WAIT_S)
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

    def refusal(self, model: str) -> str:
        """Why a call naming `model` may not leave ("" when it may): another model than the
        configured one (and the allow-list), or one without a price unless the attempt allows that."""
        key = self.wire.model_id(model)
        if key not in self.models:
            allowed = ", ".join(sorted(set(self.models.values())))
            return (
                f"model {model!r} is not allowed in this attempt (allowed: {allowed}); list the models a CLI "
                "calls on its own under `models:` in the agent config"
            )
        if self._price(model) is None and not self.allow_unknown_model:
            return (
                f"model {model!r} has no price, so the cost limit could not hold; add it under `prices:` in the "
                "agent config, or run with --allow-unknown-model (the token limits still hold)"
            )
        return ""

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
            price = lookup_price(name, self.provider, overrides=self.prices)
            same = self.models.get(self.wire.model_id(name))
            if price is None and same and same != name:  # a dated alias: its model's price
                price = lookup_price(same, self.provider, overrides=self.prices)
            self._prices[name] = price
        return self._prices[name]

    def settle(self, usage: Usage, model: str, latency_s: float, uses: dict[str, int] | None = None) -> float | None:
        """After a model call: charge its usage and cost (with the fees of the provider-side tools
        it used, at the config's price per use); a limit reached now refuses every later call."""
        price = self._price(model)
        cost = cost_usd(usage, price)
        for kind, count in (uses or {}).items():
            fee = self.server_tools.get(kind)
            cost = None if cost is None or fee is None else cost + fee * count
        with self.lock:
            self._model = model or self._model
            self.budget.charge(usage, cost, latency_s)
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
                if item.events is None and item.stream is not None:
                    item.events = stream_events(item.stream)
                if item.events is not None:  # a stream: read it whole now, off the relay path
                    reader = self.wire.stream()
                    for block in item.events:
                        feed_events(reader, block)
                    item.reply = reader.done()
                    if item.settled_usage is not None:
                        item.reply.usage = item.settled_usage  # what was charged, to the token
                    if item.estimated:  # said in the transcript too (an `error` event of the provider's)
                        item.reply.error = item.reply.error or (
                            "the stream ended before its usage event; its usage was estimated with a tokenizer"
                        )
                if self._record is not None:  # (always: exchanges are queued only then)
                    self._record(item)
            except Exception as exc:  # a recording bug must not stop the relay
                self.note({"event": "record_failed", "error": f"{type(exc).__name__}: {exc}"})

    def note(self, entry: dict) -> None:
        if self.log is not None:
            self.log({"t": round(time.time(), 3), **entry})
