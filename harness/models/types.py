"""Neutral types shared by every model adapter, the agent loop and transcripts.

Messages are plain JSON-serialisable dicts in one neutral format (typed below as TypedDicts) so a
transcript can store them verbatim and any adapter can translate them to its wire format:

    {"role": "system", "content": str}
    {"role": "user", "content": str}
    {"role": "assistant", "content": str, "tool_calls": [{"id", "name", "arguments": dict}]}
    {"role": "tool", "tool_call_id": str, "name": str, "content": str, "is_error": bool}

Build the assistant message from a Turn with ``Turn.to_message()``: it also carries what a
provider needs back verbatim on the next request (malformed raw arguments, signed thinking blocks).

Token accounting is the same for every provider, so runs on different models compare:
``input_tokens`` counts *all* prompt tokens, cache reads and writes included (cache_read_tokens and
cache_write_tokens are subsets of it; cache_write_1h_tokens, of cache_write_tokens, are Anthropic's
one-hour cache writes, priced apart); ``output_tokens`` includes reasoning tokens.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Literal, NotRequired, Protocol, TypedDict, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..usage import Usage  # noqa: F401  (a leaf of its own: run records and reports import it without the models)

# --- messages -------------------------------------------------------------------------------


class ToolCallDict(TypedDict):
    id: str
    name: str
    arguments: dict[str, Any]
    # Only when the model's arguments were not a JSON object: the raw text, so the next request
    # shows the model exactly what it sent (OpenAI-format providers echo it back).
    raw_arguments: NotRequired[str]


class SystemMessage(TypedDict):
    role: Literal["system"]
    content: str


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: str
    tool_calls: NotRequired[list[ToolCallDict]]
    # Opaque provider blocks that must be sent back unchanged (Anthropic thinking with tool use).
    thinking: NotRequired[list[dict[str, Any]]]


class ToolMessage(TypedDict):
    role: Literal["tool"]
    tool_call_id: str
    name: str
    content: str
    is_error: bool


Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage


# --- tools and calls ------------------------------------------------------------------------


class ToolSpec(BaseModel):
    """A tool offered to the model; ``input_schema`` is a JSON Schema object."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    input_schema: dict[str, Any]


class ToolCall(BaseModel):
    """A tool call as the model made it. Malformed arguments never raise: ``arguments`` is None,
    ``raw_arguments`` keeps the text and ``parse_error`` says what was wrong, so the agent can tell
    the model instead of crashing."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str
    parse_error: str | None = None

    @classmethod
    def parse(cls, id: str, name: str, raw: str | None) -> ToolCall:
        raw = raw or ""
        if not raw.strip():
            # Providers send "" (or nothing) for a call without arguments.
            return cls(id=id, name=name, arguments={}, raw_arguments=raw)
        try:
            value = json.loads(raw)
        except ValueError as e:
            return cls(
                id=id, name=name, arguments=None, raw_arguments=raw, parse_error=f"arguments are not valid JSON: {e}"
            )
        if not isinstance(value, dict):
            return cls(
                id=id,
                name=name,
                arguments=None,
                raw_arguments=raw,
                parse_error=f"arguments must be a JSON object, got {type(value).__name__}",
            )
        return cls(id=id, name=name, arguments=value, raw_arguments=raw)

    def to_dict(self) -> ToolCallDict:
        d: ToolCallDict = {"id": self.id, "name": self.name, "arguments": self.arguments or {}}
        if self.parse_error is not None:
            d["raw_arguments"] = self.raw_arguments
        return d


# --- accounting -----------------------------------------------------------------------------


class Settings(BaseModel):
    """Sampling and transport settings, explicit so manifests record them. ``None`` means the
    parameter is not sent at all (the provider's default applies)."""

    model_config = ConfigDict(frozen=True)

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int = 4096
    thinking_budget: int | None = None
    timeout_s: float = 600.0
    max_retries: int = 6
    retry_max_wait_s: float = 120.0


class RetryEvent(BaseModel):
    """One failed attempt that was retried, and how long we waited before the next."""

    attempt: int
    error_type: str
    status_code: int | None = None
    message: str
    wait_s: float


class Turn(BaseModel):
    """One assistant response.

    ``cost_usd`` is None when the price is unknown (never 0 for unknown). ``latency_s`` is the
    time spent in requests, failed attempts included, excluding backoff sleeps, which are
    ``retry_wait_s`` (waiting on a provider is not the agent's time). ``stop_reason`` is
    normalised across providers: end_turn, tool_use, max_tokens, stop_sequence, refusal; anything
    else is passed through as the provider spelt it.
    """

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    latency_s: float = 0.0
    retry_wait_s: float = 0.0
    retries: list[RetryEvent] = Field(default_factory=list)
    stop_reason: str = "end_turn"
    model: str = ""
    request_id: str | None = None
    # Opaque provider blocks to send back with this turn (Anthropic signed thinking blocks).
    thinking: list[dict[str, Any]] = Field(default_factory=list)

    def to_message(self) -> AssistantMessage:
        """The neutral assistant message to append to the conversation."""
        msg: AssistantMessage = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            msg["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.thinking:
            msg["thinking"] = self.thinking
        return msg


# --- the protocol ---------------------------------------------------------------------------


@runtime_checkable
class Model(Protocol):
    """What the agent loop needs from a model. ``complete`` raises only ``ModelError``s; its tools
    are ToolSpecs or their dicts (the loop passes an agent config's schemas as dicts)."""

    name: str  # e.g. "anthropic/claude-sonnet-4-5"; recorded in manifests
    provider: str  # "anthropic", "openai", "litellm", "replay", "scripted"
    base_url: str | None

    def complete(
        self, messages: list[Message], tools: Sequence[ToolSpec | dict[str, Any]], settings: Settings
    ) -> Turn: ...

    def for_task(self, task_id: str) -> Model:
        """The model to use for one task: itself, or (a replay of a folder) that task's recording.
        Raises ModelError when there is none."""
        ...


#: How tests and the replay model may sleep; injectable so tests do not wait for real.
SleepFn = Callable[[float], None]
