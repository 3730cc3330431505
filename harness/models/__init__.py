"""Models: one ``Model`` protocol, adapters for anthropic / openai / litellm, replay and scripted.

Importing this package imports no SDK: adapters load theirs on first use, so a run that needs no
model does not pay seconds of import time.

    model = get_model("anthropic/claude-sonnet-4-5")
    turn = model.complete(messages, tools, Settings(max_tokens=2048))
"""

from __future__ import annotations

from typing import Any

from .errors import (
    AuthError,
    BadRequest,
    ConnectionFailed,
    ContextLengthExceeded,
    ModelConfigError,
    ModelError,
    ModelTimeout,
    ModelUnavailable,
    NotFound,
    Overloaded,
    RateLimited,
    ReplayExhausted,
    ServerError,
)
from .replay import ReplayModel, ScriptedModel, load_turns_jsonl, tool_turn
from .types import (
    AssistantMessage,
    Message,
    Model,
    RetryEvent,
    Settings,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    Turn,
    Usage,
    UserMessage,
)

SPEC_FORMS = ("anthropic/<model>", "openai/<model>", "litellm/<provider>/<model>",
              "replay:<path to a JSONL of Turns>")


def get_model(spec: str, *, base_url: str | None = None, api_key: str | None = None,
              stream: bool = False, **kw: Any) -> Model:
    """The Model named by ``spec``; ``kw`` goes to the adapter (prices, sleep, reasoning_effort
    for openai, drop_params for litellm). Raises ModelConfigError for an unknown form."""
    prefix, _, rest = spec.partition("/")
    if spec.startswith("replay:"):
        return ReplayModel(spec[len("replay:"):], **kw)
    common = dict(base_url=base_url, api_key=api_key, stream=stream, **kw)
    if rest:
        if prefix == "anthropic":
            from .anthropic_model import AnthropicModel
            return AnthropicModel(rest, **common)
        if prefix == "openai":
            from .openai_model import OpenAIModel
            return OpenAIModel(rest, **common)
        if prefix == "litellm":
            from .litellm_model import LiteLLMModel
            return LiteLLMModel(rest, **common)
    raise ModelConfigError(f"unknown model {spec!r}; use one of: {', '.join(SPEC_FORMS)}")


__all__ = [
    "AssistantMessage", "AuthError", "BadRequest", "ConnectionFailed", "ContextLengthExceeded",
    "Message", "Model", "ModelConfigError", "ModelError", "ModelTimeout", "ModelUnavailable",
    "NotFound", "Overloaded", "RateLimited", "ReplayExhausted", "ReplayModel", "RetryEvent",
    "ScriptedModel", "ServerError", "Settings", "SPEC_FORMS", "SystemMessage", "ToolCall",
    "ToolMessage", "ToolSpec", "Turn", "Usage", "UserMessage", "get_model", "load_turns_jsonl",
    "tool_turn",
]
