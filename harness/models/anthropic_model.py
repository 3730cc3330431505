"""``anthropic/<model>``: the Anthropic Messages API through the anthropic SDK.

Native tool use: tool calls are ``tool_use`` blocks, results go back as ``tool_result`` blocks in
a user message (consecutive results merged into one, as the API expects), and the system prompt is
a separate field. Base URL and key come from the arguments or, as the SDK does it,
ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY.
"""

from __future__ import annotations

import json
import os
from typing import Any

from .base import HTTPModel, field
from .errors import (
    AuthError,
    ConnectionFailed,
    ModelConfigError,
    ModelError,
    ModelTimeout,
    Overloaded,
    RateLimited,
    ServerError,
    from_status,
    parse_retry_after,
)
from .types import Message, Settings, ToolCall, ToolSpec, Turn, Usage

_STOP = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
}

# Error types the API can send inside a 200 stream (an `error` event), by what they mean.
_STREAM_ERRORS = {"overloaded_error": Overloaded, "rate_limit_error": RateLimited, "api_error": ServerError}


class AnthropicModel(HTTPModel):
    provider = "anthropic"
    env_key = "ANTHROPIC_API_KEY"

    def __init__(self, model: str, **kw: Any) -> None:
        super().__init__(model, **kw)
        # Recorded in manifests: where requests go (None = the SDK's default endpoint).
        self.base_url = self.base_url or os.environ.get("ANTHROPIC_BASE_URL")

    def credential_env(self) -> tuple[str, ...]:
        return ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")  # the SDK reads either

    def _prepare(self) -> None:
        self.client()

    def client(self) -> Any:
        if self._client is None:
            import anthropic

            self._client = self._sdk_client(anthropic.Anthropic, anthropic.AnthropicError, "Anthropic")
        return self._client

    def request(self, messages: list[Message], tools: list[ToolSpec], settings: Settings) -> dict:
        """The request body (without stream/timeout); public so tests can check the mapping."""
        system, msgs = to_anthropic_messages(messages)
        req: dict[str, Any] = {"model": self.model, "max_tokens": settings.max_tokens, "messages": msgs}
        if system:
            req["system"] = system
        if tools:
            req["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in tools
            ]
        if settings.temperature is not None or settings.top_p is not None:
            # The SDK (2.x, API version 2026-10-21) has no sampling parameters and the API
            # answers 400 to them; refuse here rather than let a manifest claim one was used.
            raise ModelConfigError(
                f"{self.name}: the Anthropic API takes no temperature/top_p",
                hint="leave temperature and top_p unset for anthropic/ models",
            )
        if settings.thinking_budget:
            req["thinking"] = {"type": "enabled", "budget_tokens": settings.thinking_budget}
        return req

    def _attempt(self, messages: list[Message], tools: list[ToolSpec], settings: Settings) -> Turn:
        req = self.request(messages, tools, settings)
        client = self.client()
        if not self.stream:
            msg = client.messages.create(**req, timeout=settings.timeout_s)
            # warnings=False: a non-object tool input is a case we handle, not a schema surprise.
            blocks = [b.model_dump(warnings=False) for b in msg.content]
            return _turn(
                blocks, msg.usage, msg.stop_reason, msg.model or self.model, getattr(msg, "_request_id", None) or msg.id
            )
        stream = client.messages.create(**req, stream=True, timeout=settings.timeout_s)
        try:
            return self._assemble(stream)
        finally:
            stream.close()

    def _assemble(self, stream: Any) -> Turn:
        """Build the Turn from raw stream events (text, thinking, tool-argument JSON deltas)."""
        blocks: dict[int, dict[str, Any]] = {}
        usage: dict[str, Any] = {}
        stop, model, msg_id = None, self.model, None
        for ev in stream:
            kind = ev.type
            if kind == "message_start":
                model, msg_id = ev.message.model or model, ev.message.id
                usage.update(_usage_dict(ev.message.usage))
            elif kind == "content_block_start":
                blocks[ev.index] = dict(ev.content_block.model_dump(), _json="")
            elif kind == "content_block_delta":
                block, d = blocks[ev.index], ev.delta
                if d.type == "text_delta":
                    block["text"] = block.get("text", "") + d.text
                elif d.type == "input_json_delta":
                    block["_json"] += d.partial_json
                elif d.type == "thinking_delta":
                    block["thinking"] = block.get("thinking", "") + d.thinking
                elif d.type == "signature_delta":
                    block["signature"] = d.signature
            elif kind == "message_delta":
                stop = ev.delta.stop_reason or stop
                # message_delta usage is cumulative; it may omit fields message_start gave.
                usage.update({k: v for k, v in _usage_dict(ev.usage).items() if v})
            elif kind == "error":
                err = field(ev, "error")
                cls = _STREAM_ERRORS.get(field(err, "type", ""), ServerError)
                raise cls(f"anthropic stream error: {field(err, 'message', err)}")
        for block in blocks.values():
            if block.get("type") == "tool_use":
                block["input"] = block.pop("_json")  # raw text: parsed (or not) in _turn
        request_id = getattr(stream, "response", None) and stream.response.headers.get("request-id")
        return _turn([blocks[i] for i in sorted(blocks)], usage, stop, model, request_id or msg_id)

    def _translate(self, exc: Exception) -> ModelError | None:
        import anthropic

        if isinstance(exc, anthropic.APITimeoutError):
            return ModelTimeout(f"{self.name}: request timed out: {exc}")
        if isinstance(exc, anthropic.APIConnectionError):
            return ConnectionFailed(f"{self.name}: cannot reach {self.base_url or 'the API'}: {exc}")
        if isinstance(exc, anthropic.APIStatusError):
            etype = getattr(exc, "type", None)
            if exc.status_code < 400 and etype in _STREAM_ERRORS:  # an error event mid-stream
                return _STREAM_ERRORS[etype](f"{self.name}: {exc}")
            return from_status(
                exc.status_code,
                getattr(exc, "api_message", None) or exc.message,
                provider=self.name,
                env_key=self.env_key,
                code=etype,
                retry_after_s=parse_retry_after(exc.response.headers),
                request_id=getattr(exc, "request_id", None),
            )
        no_key = isinstance(exc, TypeError) and "authentication method" in str(exc)  # SDK 2.x
        if no_key or (isinstance(exc, anthropic.AnthropicError) and "credential" in type(exc).__name__.lower()):
            return AuthError(f"{self.name}: no credentials: {exc}", hint="set ANTHROPIC_API_KEY (or pass api_key)")
        return None


def to_anthropic_messages(messages: list[Message]) -> tuple[str, list[dict]]:
    """Neutral messages -> (system prompt, Messages API messages)."""
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict]) -> None:
        # Consecutive same-role messages are merged: tool results that answer one assistant
        # turn must arrive together in a single user message.
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        role = m["role"]
        if m["role"] == "system":
            system.append(m["content"])
        elif m["role"] == "user":
            add("user", [{"type": "text", "text": m["content"]}])
        elif m["role"] == "tool":
            add(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": m["tool_call_id"],
                        "content": m["content"],
                        "is_error": bool(m.get("is_error")),
                    }
                ],
            )
        elif m["role"] == "assistant":
            blocks: list[dict] = list(m.get("thinking") or [])  # signed; must come back first
            if (m.get("content") or "").strip():  # a whitespace-only text block is refused (400): not sent
                blocks.append({"type": "text", "text": m["content"]})
            for c in m.get("tool_calls") or []:
                blocks.append({"type": "tool_use", "id": c["id"], "name": c["name"], "input": c.get("arguments") or {}})
            if not blocks:
                # The API rejects empty assistant content; keep the turn so roles still alternate.
                blocks.append({"type": "text", "text": "(no output)"})
            add("assistant", blocks)
        else:
            raise ValueError(f"unknown message role {role!r}")
    return "\n\n".join(system), out


def _usage_dict(u: Any) -> dict[str, int]:
    details = field(u, "output_tokens_details")
    return {
        "input_tokens": field(u, "input_tokens", 0),
        "output_tokens": field(u, "output_tokens", 0),
        "cache_read": field(u, "cache_read_input_tokens", 0),
        "cache_write": field(u, "cache_creation_input_tokens", 0),
        "cache_write_1h": field(field(u, "cache_creation"), "ephemeral_1h_input_tokens", 0) or 0,
        "reasoning": field(details, "thinking_tokens", 0),
    }


def _turn(blocks: list[dict], usage: Any, stop: str | None, model: str, request_id: str | None) -> Turn:
    u = usage if isinstance(usage, dict) and "cache_read" in usage else _usage_dict(usage)
    text: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[dict] = []
    for b in blocks:
        kind = b.get("type")
        if kind == "text":
            text.append(b.get("text") or "")
        elif kind == "tool_use":
            raw = b.get("input")
            if isinstance(raw, dict):
                calls.append(ToolCall(id=b["id"], name=b["name"], arguments=raw, raw_arguments=json.dumps(raw)))
            elif isinstance(raw, str):  # streamed JSON text, possibly malformed
                calls.append(ToolCall.parse(b["id"], b["name"], raw))
            else:
                calls.append(
                    ToolCall(
                        id=b["id"],
                        name=b["name"],
                        arguments=None,
                        raw_arguments=json.dumps(raw),
                        parse_error="arguments must be a JSON object",
                    )
                )
        elif kind in ("thinking", "redacted_thinking"):
            thinking.append({k: v for k, v in b.items() if not k.startswith("_") and v is not None})
    # Anthropic's input_tokens excludes cache reads and writes; ours includes them.
    return Turn(
        text="".join(text),
        tool_calls=calls,
        usage=Usage(
            input_tokens=u["input_tokens"] + u["cache_read"] + u["cache_write"],
            output_tokens=u["output_tokens"],
            cache_read_tokens=u["cache_read"],
            cache_write_tokens=u["cache_write"],
            cache_write_1h_tokens=min(u.get("cache_write_1h", 0), u["cache_write"]),
            reasoning_tokens=u["reasoning"],
        ),
        stop_reason=_STOP.get(stop or "", stop or "end_turn"),
        model=model,
        request_id=request_id,
        thinking=thinking,
    )
