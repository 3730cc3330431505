"""Models: one ``Model`` protocol, adapters for anthropic / openai / litellm, replay and scripted.

Importing this package imports no SDK: adapters load theirs on first use, so a run that needs no
model does not pay seconds of import time.

    model = get_model("anthropic/claude-sonnet-4-5")
    turn = model.complete(messages, tools, Settings(max_tokens=2048))
"""

from __future__ import annotations

from typing import Any

from ..registry import Registry
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

SPEC_FORMS = ("anthropic/<model>", "openai/<model>", "litellm/<provider>/<model>", "replay:<path to a JSONL of Turns>")

#: `--model <prefix>/<id>`: the adapter class for each prefix, imported on first use (an adapter
#: takes the id and base_url, api_key, stream, plus its own options). Add one here, or from your
#: own package through the "wholeloop.models" entry-point group.
MODEL_ADAPTERS = Registry(
    "wholeloop.models",
    "model adapter",
    {
        "anthropic": "harness.models.anthropic_model:AnthropicModel",
        "openai": "harness.models.openai_model:OpenAIModel",
        "litellm": "harness.models.litellm_model:LiteLLMModel",
    },
)


def get_model(
    spec: str, *, base_url: str | None = None, api_key: str | None = None, stream: bool = False, **kw: Any
) -> Model:
    """The Model named by ``spec``; ``kw`` goes to the adapter (prices, sleep, reasoning_effort
    for openai, drop_params for litellm). Raises ModelConfigError for an unknown form."""
    prefix, _, rest = spec.partition("/")
    if spec.startswith("replay:"):
        return ReplayModel(spec[len("replay:") :], **kw)
    if rest and prefix in MODEL_ADAPTERS:
        return MODEL_ADAPTERS.get(prefix)(rest, base_url=base_url, api_key=api_key, stream=stream, **kw)
    raise ModelConfigError(f"unknown model {spec!r}; use one of: {', '.join(SPEC_FORMS)}")


__all__ = [
    "AssistantMessage",
    "AuthError",
    "MODEL_ADAPTERS",
    "BadRequest",
    "ConnectionFailed",
    "ContextLengthExceeded",
    "Message",
    "Model",
    "ModelConfigError",
    "ModelError",
    "ModelTimeout",
    "ModelUnavailable",
    "NotFound",
    "Overloaded",
    "RateLimited",
    "ReplayExhausted",
    "ReplayModel",
    "RetryEvent",
    "ScriptedModel",
    "ServerError",
    "Settings",
    "SPEC_FORMS",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "ToolSpec",
    "Turn",
    "Usage",
    "UserMessage",
    "get_model",
    "load_turns_jsonl",
    "tool_turn",
]
