"""From model traffic to the transcript an external CLI's attempt would have written itself.

The proxy hands each model call (request body, reply, usage, cost) to a `Recorder`, on the
proxy's recording thread. It writes the same events wholeloop's own agent writes:

- `model_request` with only what is new in the conversation: CLIs resend the whole conversation
  every time, so each request is compared with the previous one of the same conversation (known
  by its first message) with cache marks removed; the messages after the first difference are
  recorded (`from_index` says where they start; aider rewrites earlier messages, Claude Code
  moves cache marks, mini and Codex only append);
- `tool_result` events for the tool results in those new messages (tool_result blocks, role
  "tool" messages, function_call_output items), matched to their calls by id, and a `test_run`
  after a shell command the agent config's rules call a test run, read by the task's test parser;
- `model_response` with text, tool calls, usage and cost, then one `tool_call` event per call,
  its kind ("shell", "test", "edit") from the agent config's rules;
- for a text-based CLI (aider), its SEARCH/REPLACE blocks as edit calls;
- an `error` event for a call the provider answered with an error.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

import msgspec
import orjson

from ...parsers import get_parsers, parse_run
from ...transcript import (
    ErrorEvent,
    ModelRequest,
    ModelResponse,
    TestRun,
    ToolCallEvent,
    ToolResultEvent,
    TranscriptWriter,
)
from ..tools import TEST_COMMANDS
from .config import ToolRules
from .relay import Exchange
from .script import nested_calls
from .wire import LIMIT_KEYS, Call, Wire, strip_cache_marks

#: Shell commands that run tests, besides the task's own test command and the config's patterns
#: (the built-in agent's bash reads the same).
DEFAULT_TEST_COMMANDS = TEST_COMMANDS
_SEARCH_REPLACE = re.compile(r"(?ms)^([^\n`]*?)\n(?:```[^\n]*\n)?<{5,9} SEARCH\n(.*?)\n?={5,9}\n(.*?)\n?>{5,9} REPLACE")
_TOP_LEVEL = msgspec.json.Decoder(dict[str, msgspec.Raw])
#: How old the transcript's last fsync may be when a call's events are written (they are flushed
#: as written: a killed run keeps them; a power loss takes at most this much).
SYNC_EVERY_S = 1.0
_EDIT_FAILED = re.compile(r"SearchReplaceNoExactMatch|failed to match|did not match|Unable to apply", re.I)


@dataclass
class _Call:
    step: int
    name: str
    kind: str
    command: str


_SCANNER = json.JSONDecoder()


def _first_item(raw: bytes) -> bytes:
    """The bytes of the first element of a JSON array (the whole value if it is not an array),
    found by parsing that element alone."""
    text = raw.decode("utf-8", "replace")
    start = len(text) - len(text.lstrip())
    if not text.startswith("[", start):
        return raw
    rest = text[start + 1 :]
    offset = len(rest) - len(rest.lstrip())
    try:
        _, end = _SCANNER.raw_decode(rest, offset)
    except ValueError:
        return raw
    return rest[offset:end].encode()


def _digest(value: Any) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


class Recorder:
    """Writes the events of one attempt's model calls (see the module docstring)."""

    def __init__(
        self,
        transcript: TranscriptWriter,
        wire: Wire,
        rules: ToolRules,
        *,
        test_command: str = "",
        parser: str | list[str] = "pytest",
    ) -> None:
        self.transcript, self.wire, self.rules = transcript, wire, rules
        self.parsers = get_parsers(parser)
        tests = list(rules.test_commands) or list(DEFAULT_TEST_COMMANDS)
        if test_command.strip():
            tests.append(re.escape(test_command.strip()))
        self.test_patterns = [re.compile(p) for p in tests]
        self.edit_patterns = [re.compile(p) for p in rules.edit_commands]
        self.exit_pattern = re.compile(rules.exit_code) if rules.exit_code else None
        # first message -> the latest conversation sent (raw, and its messages), and the chained hash after each
        # (its bytes less the closing bracket, kept so that a request extending it is recognised by a
        # prefix compare without slicing 100 KB copies on every call)
        self.conversations: dict[str, tuple[bytes, bytes, list[dict], list[bytes]]] = {}
        self.heads: dict[str, str] = {}  # first message -> digest of its system prompt and tools
        self.calls: dict[str, _Call] = {}
        self.answered: set[str] = set()
        self.text_edits: list[tuple[str, _Call]] = []  # aider's edit blocks waiting for the next request
        self.at: float | None = None  # when what is being written happened (time.monotonic)

    def __call__(self, ex: Exchange) -> None:
        # Flushed event by event (a killed run keeps them: its spend is read back from them);
        # fsynced at most every SYNC_EVERY_S, not once per event: the recorder's CPU per call.
        with self.transcript.batch(SYNC_EVERY_S):
            self._record(ex)

    def _record(self, ex: Exchange) -> None:
        top = ex.top if ex.top is not None else _TOP_LEVEL.decode(ex.raw)
        fields = {k: orjson.loads(bytes(top[k])) for k in ("model", *LIMIT_KEYS) if k in top}
        key, same, sent, chain, head = self._conversation(top)
        fresh = [strip_cache_marks(m) for m in sent[same:]]
        self.at = ex.sent_at  # tool results were there when this request came in
        self._results(fresh)
        extra = {"from_index": same, "model": str(fields.get("model") or "")}
        limit = fields.get(self.wire.limit_key(fields))
        if isinstance(limit, int):
            extra["max_tokens"] = limit
        whole = chain[-1].hex()[:16] if chain else ""
        self.transcript.write(
            ModelRequest(step=ex.step, messages_hash=whole, new_messages=head + fresh, **extra), at=ex.sent_at
        )
        if ex.reply is None:
            self.transcript.write(
                ErrorEvent(where="provider", error_type=f"HTTP {ex.status}", message=ex.error),
                at=ex.answered_at or None,
            )
            return
        reply = ex.reply
        calls = list(reply.calls) + self._text_edit_calls(reply.text, ex.step)
        self.transcript.write(
            ModelResponse(
                step=ex.step,
                text=reply.text,
                stop_reason=reply.stop_reason,
                usage=reply.usage.model_dump(),
                cost_usd=ex.cost_usd,
                latency_s=round(ex.latency_s, 3),
                model=reply.model,
                tool_calls=[
                    {"id": c.id, "name": c.name, "arguments": c.arguments if c.arguments is not None else {}}
                    for c in calls
                ],
            ),
            at=ex.answered_at or None,
        )
        self.at = ex.answered_at or None
        if reply.error:
            self.transcript.write(
                ErrorEvent(where="provider", error_type="stream error", message=reply.error), at=self.at
            )
        for call in calls:
            self._call(call, ex.step)

    def _conversation(self, top: dict) -> tuple[str, int, list[dict], list[bytes], list[dict]]:
        """(key, messages unchanged since the last request of this conversation, the messages, the
        chained hash after each, the head to show when the system prompt or tools changed).

        Most CLIs only append: then the new request's bytes start with the previous one's, and only
        the appended tail is parsed. Otherwise the whole list is parsed and compared as objects, a
        message that differs compared again without cache marks (Claude Code moves them)."""
        conv_key = self.wire.conversation_key
        raw = bytes(top[conv_key]) if conv_key in top else b"[]"
        # A request that extends one seen before starts with its bytes (less the closing bracket),
        # so it has the same first message: that conversation, found without parsing.
        key = next(
            (k for k, (_, prefix, prev, _) in self.conversations.items() if prev and prefix and raw.startswith(prefix)),
            "",
        )
        if not key:
            first = _first_item(raw)  # the conversation is known by its first message, cache marks aside
            if b"cache_control" in first:
                first = orjson.dumps(strip_cache_marks(orjson.loads(first)))
            key = hashlib.sha256(first).hexdigest()[:16]
        old_raw, old_prefix, previous, chain = self.conversations.get(key, (b"", b"", [], []))
        sent: list[dict] | None = None
        if old_raw and raw == old_raw:
            sent, same = previous, len(previous)
        elif old_prefix and previous and raw.startswith(old_prefix):
            rest = raw[len(old_prefix) :].lstrip()
            if rest.startswith(b","):
                tail = orjson.loads(b"[" + rest[1:])
                if isinstance(tail, list):
                    sent, same = previous + tail, len(previous)
        if sent is None:
            value = orjson.loads(raw)
            _, sent = self.wire.conversation({conv_key: value})
            same = 0
            for old, new in zip(previous, sent):
                if old != new and strip_cache_marks(old) != strip_cache_marks(new):
                    break
                same += 1
        chain = chain[:same]
        for message in sent[same:]:  # the conversation's hash, chained: only new messages serialised
            chain.append(hashlib.sha256((chain[-1] if chain else b"") + orjson.dumps(message)).digest())
        self.conversations[key] = (raw, raw[:-1] if raw.endswith(b"]") else b"", sent, chain)
        head_raw = b"\0".join(bytes(top[k]) for k in self.wire.head_keys if k in top)
        digest = hashlib.sha256(head_raw).hexdigest()[:16]
        head: list[dict] = []
        if head_raw and self.heads.get(key) != digest:  # parsed only when it changed
            head, _ = self.wire.conversation({k: orjson.loads(bytes(top[k])) for k in self.wire.head_keys if k in top})
        self.heads[key] = digest
        return key, same, sent, chain, head

    # ------------------------------------------------------------------ calls

    def _call(self, call: Call, step: int) -> None:
        kind, command = self.classify(call)
        self.calls[call.id] = _Call(step, call.name, kind, command)
        self.transcript.write(
            ToolCallEvent(
                step=step,
                call_id=call.id,
                name=call.name,
                arguments=call.arguments,
                raw_arguments=call.raw if call.arguments is None else "",
                kind=kind,
                command=command,
            ),
            at=self.at,
        )

    def classify(self, call: Call) -> tuple[str, str]:
        """(kind, command) of a call by the config's rules."""
        if call.name in self.rules.edit or (self.rules.text_edits and call.name == "search_replace"):
            return "edit", ""
        if call.name in self.rules.scripts:
            return self._classify_script(str((call.arguments or {}).get(self.rules.scripts[call.name], "")))
        arg = self.rules.shell.get(call.name)
        if arg is None:
            return "", ""
        value = (call.arguments or {}).get(arg, "")
        command = " ".join(map(str, value)) if isinstance(value, list) else str(value)
        return self._classify_command(command), command

    def _classify_script(self, source: str) -> tuple[str, str]:
        """A code-mode script: its shell tools' commands joined by " ; ", its kind the first of test,
        edit, shell that one of its calls has (a script that edits and runs the tests is a test run,
        as a command `git apply x && pytest` is)."""
        nested = nested_calls(source, self.rules.shell)
        commands = [c.argument for c in nested if c.tool in self.rules.shell and c.argument is not None]
        command = " ; ".join(commands)
        kinds = {self._classify_command(c) for c in commands}
        if any(c.tool in self.rules.edit for c in nested):
            kinds.add("edit")
        kind = next((k for k in ("test", "edit", "shell") if k in kinds), "")
        return kind, command

    def _classify_command(self, command: str) -> str:
        if any(p.search(command) for p in self.test_patterns):
            return "test"
        if any(p.search(command) for p in self.edit_patterns):
            return "edit"
        return "shell"

    def _text_edit_calls(self, text: str, step: int) -> list[Call]:
        if self.rules.text_edits != "search_replace" or "SEARCH" not in text:
            return []
        found = []
        for n, match in enumerate(_SEARCH_REPLACE.finditer(text), 1):
            call = Call(
                f"edit-{step}-{n}",
                "search_replace",
                {"path": match.group(1).strip().strip("`*"), "search": match.group(2), "replace": match.group(3)},
            )
            found.append(call)
            self.text_edits.append((call.id, _Call(step, call.name, "edit", "")))
        return found

    # ------------------------------------------------------------------ results

    def _results(self, fresh: list[dict]) -> None:
        for result in self.wire.results(fresh):
            if result.call_id in self.answered:
                continue
            self.answered.add(result.call_id)
            call = self.calls.get(result.call_id, _Call(0, "?", "", ""))
            output, exit_code = self._unpack(call, result.output, result.is_error)
            self.transcript.write(
                ToolResultEvent(
                    step=call.step,
                    call_id=result.call_id,
                    name=call.name,
                    output=output,
                    is_error=result.is_error,
                    exit_code=exit_code,
                    kind=call.kind,
                ),
                at=self.at,
            )
            if call.kind == "test":
                self._test_run(call, output, exit_code)
        if self.text_edits:  # aider says what went wrong with an edit in its next message
            said = "\n".join(
                m.get("content", "") for m in fresh if m.get("role") == "user" and isinstance(m.get("content"), str)
            )
            failed = bool(_EDIT_FAILED.search(said))
            for call_id, call in self.text_edits:
                self.transcript.write(
                    ToolResultEvent(
                        step=call.step,
                        call_id=call_id,
                        name=call.name,
                        output=said[-2000:] or "(no reply from the CLI)",
                        is_error=failed,
                        kind="edit",
                    ),
                    at=self.at,
                )
            self.text_edits.clear()

    def _unpack(self, call: _Call, output: str, is_error: bool) -> tuple[str, int | None]:
        """A shell result's output text and exit code, as the config's rules find them."""
        if not call.command:  # not a shell command (an edit tool, another tool): no exit code
            return output, None
        keys = self.rules.result_json
        if keys and output.lstrip().startswith("{"):
            try:
                value = orjson.loads(output)
            except orjson.JSONDecodeError:
                value = None
            if isinstance(value, dict):
                code = value.get(keys.get("exit_code", ""))
                text = value.get(keys.get("output", ""))
                return (text if isinstance(text, str) else output), (code if isinstance(code, int) else None)
        if self.exit_pattern is not None:
            match = self.exit_pattern.search(output)
            if match:
                return output, int(match.group(1))
        return output, 1 if is_error else 0

    def _test_run(self, call: _Call, output: str, exit_code: int | None) -> None:
        report = parse_run(self.parsers, output, lambda path: None)
        failing = report.failing() + report.collection_errors
        green = exit_code == 0 and not failing
        self.transcript.write(
            TestRun(
                step=call.step,
                command=call.command,
                exit_code=exit_code,
                passed=report.count("passed"),
                failed=report.count("failed"),
                errors=report.count("errors"),
                failing=failing[:50],
                green=green,
            ),
            at=self.at,
        )
