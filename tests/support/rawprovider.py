"""A raw provider on 127.0.0.1 that writes whatever bytes an attack needs, and one attempt's real
metering proxy in front of it (the red teams' rig: tests/test_redteam4.py, tests/test_redteam5.py)."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable

from harness.agents.budget import AgentLimits, Budget
from harness.agents.external.proxy import MeteringProxy
from harness.agents.external.relay import Exchange
from harness.agents.external.wire import get_wire
from harness.agents.provider import Call

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


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0
