"""Typed transcript events and an append-only JSONL writer/reader.

A transcript is what a reviewer reads to see *why* an attempt ended the way it did, so every event
is written and flushed the moment it happens: a crash leaves everything up to the crash. Big
payloads are capped (a viewer must be able to open the file) and secrets are scrubbed from every
string before it is capped and reaches disk (by harness.scrub, the one scrubbing boundary).

This module is a leaf: it imports pydantic, the standard library, jsonl and scrub only.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from . import scrub as scrubber
from .jsonl import complete_lines, drop_torn_tail, escape_surrogates

SCHEMA_VERSION = 1
MAX_TEXT = 20_000  # characters kept of any one string field in an event


class _Event(BaseModel):
    model_config = ConfigDict(extra="allow")
    schema_version: int = SCHEMA_VERSION  # of the transcript format; every event says it
    seq: int = 0
    time: str = ""  # ISO 8601, UTC
    elapsed_s: float = 0.0  # since the transcript was opened


class AttemptStart(_Event):
    type: Literal["attempt_start"] = "attempt_start"
    task_id: str
    attempt: int
    repeat: int = 0
    config: str = ""
    image: str = ""
    problem_statement: str = ""  # what the agent was asked (on attempt 1; a reviewer reads it first)


class PhaseEvent(_Event):
    """A timed piece of infrastructure work: image, container start, grading..."""

    type: Literal["phase"] = "phase"
    name: str
    seconds: float
    detail: str = ""


class ModelRequest(_Event):
    type: Literal["model_request"] = "model_request"
    step: int
    messages_hash: str  # hash of the whole conversation sent
    new_messages: list[dict[str, Any]]  # only what was added since the previous request


class ModelResponse(_Event):
    type: Literal["model_response"] = "model_response"
    step: int
    text: str = ""
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    stop_reason: str = ""
    usage: dict[str, int] = Field(default_factory=dict)
    cost_usd: float | None = None
    latency_s: float = 0.0
    retry_wait_s: float = 0.0
    model: str = ""


class ModelRetry(_Event):
    """The model call of `step` failed and is tried again after `wait_s` (not the agent's time)."""

    type: Literal["retry"] = "retry"
    step: int
    attempt: int
    error_type: str
    status_code: int | None = None
    message: str = ""
    wait_s: float = 0.0


class ToolCallEvent(_Event):
    type: Literal["tool_call"] = "tool_call"
    step: int
    call_id: str
    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str = ""
    # What the call does, when the name alone does not say (an external CLI's tools, read by the
    # rules of its agent config): "shell" (runs `command`), "test" (a shell command that runs the
    # tests), "edit" (changes files); "" for wholeloop's own tools, known by name.
    kind: str = ""
    command: str = ""


class ToolResultEvent(_Event):
    type: Literal["tool_result"] = "tool_result"
    step: int
    call_id: str
    name: str
    output: str
    is_error: bool = False
    exit_code: int | None = None
    truncated: bool = False
    timed_out: bool = False
    duration_s: float = 0.0
    kind: str = ""  # the call's kind (see ToolCallEvent)


class TestRun(_Event):
    type: Literal["test_run"] = "test_run"
    step: int
    command: str
    exit_code: int | None
    passed: int = 0
    failed: int = 0
    errors: int = 0
    failing: list[str] = Field(default_factory=list)
    green: bool = False


class LimitHit(_Event):
    type: Literal["limit"] = "limit"
    limit: str
    value: float
    maximum: float


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    where: str
    error_type: str
    message: str


class Stop(_Event):
    type: Literal["stop"] = "stop"
    reason: str  # submitted | no_tool_call | step_limit | time_limit | token_limit | cost_limit | model_error | ...
    detail: str = ""


class PatchEvent(_Event):
    type: Literal["patch"] = "patch"
    attempt: int
    bytes: int
    files: list[str] = Field(default_factory=list)
    diff: str = ""


class GradeEvent(_Event):
    type: Literal["grade"] = "grade"
    attempt: int
    outcome: str
    resolved: bool
    failing: list[str] = Field(default_factory=list)
    detail: str = ""


class ExternalRun(_Event):
    """An external CLI's run inside the container: how it ended, what it says it spent, its own logs."""

    type: Literal["external_run"] = "external_run"
    attempt: int
    cli: str
    version: str = ""
    exit_code: int | None = None
    seconds: float = 0.0
    timed_out: bool = False
    stopped_by: str = ""  # why wholeloop stopped it, when it did (a budget limit, the run stopping)
    logs: list[str] = Field(default_factory=list)  # its stdout/stderr and own logs, relative to the transcript
    self_report: dict[str, Any] | None = None  # the tokens and cost the CLI itself reports
    stderr_tail: str = ""
    logs_left_out: str = ""  # what of its logs was not copied out of the container (over the size limit)


class Feedback(_Event):
    type: Literal["feedback"] = "feedback"
    attempt: int
    mode: str
    text: str


Event = Annotated[
    AttemptStart
    | PhaseEvent
    | ModelRequest
    | ModelResponse
    | ModelRetry
    | ToolCallEvent
    | ToolResultEvent
    | TestRun
    | LimitHit
    | ErrorEvent
    | Stop
    | PatchEvent
    | GradeEvent
    | Feedback
    | ExternalRun,
    Field(discriminator="type"),
]
_adapter: TypeAdapter[Event] = TypeAdapter(Event)
#: The events that belong to a step of the agent (a model call and the tools it asked for).
STEP_EVENTS = (ModelRequest, ModelResponse, ModelRetry, ToolCallEvent, ToolResultEvent, TestRun)


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """The secrets the scrubber replaces (see harness.scrub.secret_values)."""
    return scrubber.secret_values(environ)


def scrub(value: Any, secrets: list[str] | None = None) -> Any:
    """Replace every form of every secret in every string of a JSON-like value, then cap long
    strings (in that order: a cut must never keep half a key)."""
    value = scrubber.scrub_value(value, secrets)
    return _cap(value)


#: Appends made durable: fdatasync writes the data and the size that reads it (all an append
#: needs), without the timestamps fsync also journals; fsync where there is no fdatasync.
_sync = os.fdatasync if sys.platform.startswith("linux") else os.fsync


@functools.lru_cache(maxsize=64)
def _forms(needles: tuple[str, ...]) -> tuple[str, ...]:
    """Each form of a secret, and the form's JSON escape (as it stands in a dumped string)."""
    return tuple(dict.fromkeys([*needles, *(json.dumps(n, ensure_ascii=False)[1:-1] for n in needles)]))


def _cap(value: Any) -> Any:
    if isinstance(value, str):
        if len(value) > MAX_TEXT:
            cut = len(value) - MAX_TEXT
            value = (
                value[: MAX_TEXT // 2]
                + f"\n[... {cut} characters not kept in the transcript ...]\n"
                + value[-MAX_TEXT // 2 :]
            )
        return value
    if isinstance(value, dict):
        return {k: _cap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cap(v) for v in value]
    return value


class TranscriptWriter:
    """Appends events to a JSONL file, one line each, flushed as they happen and fsynced (each
    event at once; inside `batch`, together)."""

    def __init__(self, path: Path, *, secrets: list[str] | None = None, fsync: bool = True) -> None:
        """`secrets`: the values to scrub; None (the default) means what harness.scrub finds at
        each write (the environment's secrets and the registered ones)."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._secrets = secrets
        self._fsync = fsync
        self._lock = threading.Lock()
        self._batch = 0  # open batch() blocks: their events are fsynced once, when the last one ends
        self._dirty = False  # written and flushed, not fsynced yet
        self._synced = time.monotonic()  # the last fsync
        self._t0 = time.monotonic()
        drop_torn_tail(self.path)
        existing = read_transcript(self.path) if self.path.exists() else []
        self._seq = existing[-1].seq + 1 if existing else 0
        self._fh = open(self.path, "a", encoding="utf-8")

    def write(self, event: _Event, *, at: float | None = None) -> _Event:
        """Append `event`. `at` (a time.monotonic() reading) is when it happened, for an event
        written a little later (the metering proxy records off its relay path); default: now."""
        with self._lock:
            event.seq = self._seq
            now = time.monotonic()
            happened = now if at is None else min(at, now)
            stamp = datetime.now(UTC).timestamp() - (now - happened)
            event.time = datetime.fromtimestamp(stamp, UTC).isoformat(timespec="milliseconds")
            event.elapsed_s = round(happened - self._t0, 3)
            self._fh.write(escape_surrogates(self._line(event.model_dump(mode="json"))) + "\n")
            self._fh.flush()  # in the kernel now: a killed process keeps it
            if self._fsync:
                self._dirty = True
                if not self._batch:
                    self._sync()
            self._seq += 1
        return event

    def _line(self, data: dict) -> str:
        """The event's JSON line: every form of every secret replaced, long strings capped (see
        `scrub`). When the line as dumped holds no form of a secret (nor a form's JSON escape) and
        is no longer than MAX_TEXT (so no string in it is), both would leave it as it is: it is
        written without walking the event twice (the metering proxy's recorder writes every call)."""
        line = json.dumps(data, ensure_ascii=False)
        if len(line) <= MAX_TEXT and not any(form in line for form in _forms(scrubber.needles(self._secrets))):
            return line
        return scrubber.scrub_text(json.dumps(scrub(data, self._secrets), ensure_ascii=False), self._secrets)

    def _sync(self) -> None:  # (under the lock)
        if self._dirty and not self._fh.closed:
            _sync(self._fh.fileno())
            self._dirty, self._synced = False, time.monotonic()

    @contextlib.contextmanager
    def batch(self, max_delay_s: float = 0.0) -> Iterator[TranscriptWriter]:
        """Events written inside are flushed one by one (in the kernel: a killed process keeps
        each) and fsynced together when the outermost batch ends, or, with `max_delay_s`, then only
        if the last fsync is that old (else by a later write, batch or close): what a power loss
        can take is bounded by it; a kill takes nothing either way."""
        with self._lock:
            self._batch += 1
        try:
            yield self
        finally:
            with self._lock:
                self._batch -= 1
                if not self._batch and time.monotonic() - self._synced >= max_delay_s:
                    self._sync()

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._sync()
                self._fh.close()

    def __enter__(self) -> TranscriptWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_transcript(path: Path) -> list[Event]:
    """All complete events of a transcript; a torn last line (a crash mid-write) is skipped."""
    events: list[Event] = []
    for line in complete_lines(Path(path)):
        try:
            events.append(_adapter.validate_python(json.loads(line)))
        except (ValueError, TypeError):
            continue  # an event type from a newer version: keep reading
    return events
