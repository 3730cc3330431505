"""A scripted provider for real agent CLIs: it solves demo tasks by asking for shell commands.

The CLI (mini-swe-agent, Claude Code...) runs for real in its container; the provider (FakeLLM
with this responder) answers each model call with the next command of a fixed plan for the task
named in the conversation: a red test run, the gold patch applied with `git apply`, a green test
run, a network probe, then the CLI's way of finishing. The probe's findings come back to the
provider as a tool result, which is how a test reads what was reachable from inside the container.
"""

from __future__ import annotations

import base64
import json
import re
import textwrap
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from support.fakellm import Call, Error, Reply, Tokens

# Runs inside the agent's container (python3 of the task image). Every target but the proxy with
# the attempt's own token must fail; the output is one JSON line.
PROBE = textwrap.dedent("""
    import errno, json, os, socket, time
    out = {"token": TOKEN_VAR and os.environ.get(TOKEN_VAR, "")}
    def tcp(family, host, port):
        s = socket.socket(family, socket.SOCK_STREAM); s.settimeout(3); t = time.monotonic()
        try:
            s.connect((host, port)); return "connected"
        except OSError as e:
            return f"{errno.errorcode.get(e.errno, e.errno)} after {time.monotonic() - t:.2f}s"
        finally:
            s.close()
    out["bridge"] = tcp(socket.AF_INET, BRIDGE, BRIDGE_PORT)
    out["provider_port"] = tcp(socket.AF_INET, "127.0.0.1", PROVIDER_PORT)
    out["public"] = tcp(socket.AF_INET, "203.0.113.7", 443)
    out["ipv6"] = tcp(socket.AF_INET6, "2001:db8::7", 443)
    try:
        out["dns"] = str(socket.getaddrinfo("pypi.org", 443))
    except OSError as e:
        out["dns"] = "failed: " + type(e).__name__
    out["routes"] = open("/proc/net/route").read().count(chr(10)) - 1
    out["interfaces"] = sorted(os.listdir("/sys/class/net"))
    def proxy(token, auth):
        s = socket.create_connection(("127.0.0.1", 8765), timeout=5)
        s.sendall(f"GET /v1/models HTTP/1.1\\r\\nHost: x\\r\\n{auth}: {token}\\r\\nConnection: close\\r\\n\\r\\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
        return int(data.split(b" ")[1])
    prefix = "Bearer " if AUTH == "authorization" else ""
    out["proxy_own_token"] = proxy(prefix + os.environ.get(TOKEN_VAR, ""), AUTH)
    out["proxy_other_token"] = proxy(prefix + OTHER, AUTH) if OTHER else None
    out["proxy_no_token"] = proxy("", "x-nothing")
    print("WLPROBE" + json.dumps(out))
""")


@dataclass
class Plan:
    """What the scripted provider does; the findings of the probes are kept in `probes`."""

    tasks: list  # harness.tasks.Task
    tool: str = "bash"  # the CLI's shell tool
    arg: str = "command"  # its argument with the command
    token_var: str = "OPENAI_API_KEY"  # where the CLI has the attempt's token
    auth_header: str = "authorization"
    bridge: tuple[str, int] = ("172.17.0.1", 9)
    provider_port: int = 9
    finish: str | None = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"  # None: finish with a text reply
    extra: dict = field(default_factory=dict)  # more arguments for each tool call (Claude's description)
    script: Callable[[Any], list[str]] | None = None  # the commands for a task (default: solve it, then probe)
    finish_tool: str | None = None  # finish by calling this tool without arguments (the built-in agent's submit)
    probes: list[dict] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def steps(self, task) -> list[str]:
        if self.script is not None:
            return self.script(task)
        probe = (
            PROBE.replace("TOKEN_VAR", repr(self.token_var))
            .replace("BRIDGE_PORT", str(self.bridge[1]))
            .replace("BRIDGE", repr(self.bridge[0]))
            .replace("PROVIDER_PORT", str(self.provider_port))
            .replace("AUTH", repr(self.auth_header))
        )
        with self.lock:
            other = next((p["token"] for p in reversed(self.probes) if p.get("token")), "")
        probe = probe.replace("OTHER", repr(other))
        encoded = base64.b64encode(probe.encode()).decode()
        gold = task.gold()
        return [
            f"{task.test_command} tests/test_wl_repro_missing.py",  # red: there is no such test file yet
            # base64: a CLI's shell tool may rewrite escapes in a here-document (Claude Code did)
            f"echo {base64.b64encode(gold.encode()).decode()} | base64 -d > /tmp/wl-fix.diff && git apply /tmp/wl-fix.diff",
            task.test_command,
            f"echo {encoded} | base64 -d > /tmp/wl-probe.py && python3 /tmp/wl-probe.py",
        ]

    def __call__(self, request) -> Reply | Error:
        body = request.body if isinstance(request.body, dict) else {}
        if not body.get("tools"):
            return Reply(text="ok", usage=Tokens(20, 2))
        conversation = json.dumps(body.get("messages") or body.get("input") or [])
        task = next((t for t in self.tasks if t.problem_statement.strip().splitlines()[0][:50] in conversation), None)
        if task is None:
            return Error(400, "scripted_cli: no known task in this conversation")
        self._read_probes(conversation)
        done = len(re.findall(r'"(?:tool_call_id|tool_use_id|call_id)"', conversation))
        done -= len(re.findall(r'"type": "function_call"', conversation))  # Responses: a call item also has call_id
        steps = self.steps(task)
        n = len(steps)
        usage = Tokens(
            input=900 + 50 * done, output=30 + done, cache_read=400 * done, cache_write=100 if done == 0 else 0
        )
        if done < n:
            return Reply(
                text=f"Step {done + 1}.", calls=[Call(self.tool, {self.arg: steps[done], **self.extra})], usage=usage
            )
        if done == n and self.finish_tool:
            return Reply(text="Done.", calls=[Call(self.finish_tool, {})], usage=usage)
        if done == n and self.finish:
            return Reply(text="Done.", calls=[Call(self.tool, {self.arg: self.finish, **self.extra})], usage=usage)
        return Reply(text="The fix is in and the tests pass.", usage=usage)

    def _read_probes(self, conversation: str) -> None:
        for text in _strings(json.loads(conversation)):
            for line in text.splitlines():
                if line.startswith("WLPROBE"):
                    data = json.loads(line.removeprefix("WLPROBE"))
                    with self.lock:
                        if data not in self.probes:
                            self.probes.append(data)


def _strings(value):
    """Every string in a JSON value; a string that is itself a JSON object (mini's tool results) is opened."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str) and "WLPROBE" in value:
        if value.lstrip().startswith("{"):
            try:
                yield from _strings(json.loads(value))
                return
            except ValueError:
                pass
        yield value


def search_replace_blocks(diff: str) -> str:
    """A unified diff as aider's SEARCH/REPLACE blocks (one per hunk)."""
    out = []
    for section in re.split(r"(?m)^diff --git ", diff)[1:]:
        path = re.search(r"(?m)^\+\+\+ b/(.*)$", section).group(1)
        for hunk in re.split(r"(?m)^@@[^\n]*\n", section)[1:]:
            search, replace = [], []
            for line in hunk.splitlines():
                if line.startswith("\\"):
                    continue
                tag, text = (line[:1], line[1:]) if line else (" ", "")
                if tag in (" ", "-"):
                    search.append(text)
                if tag in (" ", "+"):
                    replace.append(text)
            out.append(
                f"{path}\n```python\n<<<<<<< SEARCH\n"
                + "\n".join(search)
                + "\n=======\n"
                + "\n".join(replace)
                + "\n>>>>>>> REPLACE\n```\n"
            )
    return "\n".join(out)


@dataclass
class AiderPlan:
    """aider writes edits as text: the gold patch as SEARCH/REPLACE blocks. aider first asks to add
    the file the reply names, then sends the request again: both get the blocks; then "Done."."""

    task: object
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request) -> Reply | Error:
        with self.lock:
            self.requests += 1
            n = self.requests
        if n <= 2:
            return Reply(
                text="Here is the fix.\n\n" + search_replace_blocks(self.task.gold()),
                usage=Tokens(input=2000, output=300),
            )
        return Reply(text="Done.", usage=Tokens(input=2500, output=5, cache_read=0))
