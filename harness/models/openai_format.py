"""The OpenAI Chat Completions format, shared by the openai and litellm adapters.

No SDK is imported here: responses are read by attribute or key (``field``), so the openai SDK's
objects, litellm's ModelResponse and plain dicts all work.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .base import field, translate_transport
from .errors import (
    AuthError,
    ConnectionFailed,
    ContextLengthExceeded,
    ModelError,
    ModelTimeout,
    from_status,
    parse_retry_after,
)
from .types import Message, Settings, ToolCall, ToolSpec, Turn, Usage

_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m["role"]
        if role in ("system", "user"):
            out.append({"role": role, "content": m["content"]})
        elif m["role"] == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": m.get("content") or None}
            calls = m.get("tool_calls") or []
            if calls:
                # Echo malformed arguments verbatim so the model sees what it actually sent.
                msg["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {
                            "name": c["name"],
                            "arguments": c.get("raw_arguments") or json.dumps(c.get("arguments") or {}),
                        },
                    }
                    for c in calls
                ]
            elif msg["content"] is None:
                msg["content"] = ""
            out.append(msg)
        elif m["role"] == "tool":
            # The format has no error flag; the tool's text says what went wrong.
            out.append({"role": "tool", "tool_call_id": m["tool_call_id"], "content": m["content"]})
        else:
            raise ValueError(f"unknown message role {role!r}")
    return out


def to_openai_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}
        for t in tools
    ]


def base_request(model: str, messages: list[Message], tools: list[ToolSpec], settings: Settings) -> dict[str, Any]:
    """Fields every OpenAI-format request has; only settings that are set are sent."""
    req: dict[str, Any] = {"model": model, "messages": to_openai_messages(messages)}
    if tools:
        req["tools"] = to_openai_tools(tools)
    if settings.temperature is not None:
        req["temperature"] = settings.temperature
    if settings.top_p is not None:
        req["top_p"] = settings.top_p
    return req


def usage_from(u: Any) -> Usage:
    """OpenAI usage -> Usage. prompt_tokens already includes cached tokens."""
    prompt = field(u, "prompt_tokens", 0)
    details = field(u, "prompt_tokens_details")
    out_details = field(u, "completion_tokens_details")
    cache_read = field(details, "cached_tokens", 0)
    # Some OpenAI-compatible servers (and litellm for Anthropic) report cache writes too.
    cache_write = field(details, "cache_write_tokens", 0) or field(u, "cache_creation_input_tokens", 0)
    return Usage(
        input_tokens=prompt,
        output_tokens=field(u, "completion_tokens", 0),
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=field(out_details, "reasoning_tokens", 0),
    )


def turn_from_response(resp: Any, default_model: str, request_id: str | None = None) -> Turn:
    choices = field(resp, "choices", [])
    if not choices:
        raise ModelError(f"{default_model}: the response has no choices")
    choice = choices[0]
    msg = field(choice, "message")
    calls = [
        ToolCall.parse(
            field(c, "id", ""), field(field(c, "function"), "name", ""), field(field(c, "function"), "arguments", "")
        )
        for c in field(msg, "tool_calls", [])
    ]
    finish = field(choice, "finish_reason", "stop")
    return Turn(
        text=field(msg, "content", "") or "",
        tool_calls=calls,
        usage=usage_from(field(resp, "usage")),
        stop_reason=_STOP.get(finish, finish),
        model=field(resp, "model", default_model),
        request_id=request_id or field(resp, "id"),
    )


def turn_from_chunks(chunks: Iterable[Any], default_model: str) -> Turn:
    """Assemble a streamed response: text deltas, tool-call deltas by index, the usage chunk."""
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    usage: Any = None
    finish, model, resp_id = None, default_model, None
    for ch in chunks:
        model = field(ch, "model", model)
        resp_id = field(ch, "id", resp_id)
        if field(ch, "usage") is not None:
            usage = field(ch, "usage")  # the final chunk when include_usage is on
        for choice in field(ch, "choices", []):
            delta = field(choice, "delta")
            if field(delta, "content"):
                text.append(field(delta, "content"))
            for tc in field(delta, "tool_calls", []):
                slot = calls.setdefault(field(tc, "index", 0), {"id": "", "name": "", "args": []})
                slot["id"] = field(tc, "id", slot["id"])
                fn = field(tc, "function")
                slot["name"] = slot["name"] or field(fn, "name", "")
                slot["args"].append(field(fn, "arguments", ""))
            finish = field(choice, "finish_reason", finish)
    finish = finish or "stop"
    return Turn(
        text="".join(text),
        tool_calls=[ToolCall.parse(c["id"], c["name"], "".join(c["args"])) for _, c in sorted(calls.items())],
        usage=usage_from(usage),
        stop_reason=_STOP.get(finish, finish),
        model=model,
        request_id=resp_id,
    )


def translate_openai_error(
    exc: Exception, *, provider: str, env_key: str | None, base_url: str | None
) -> ModelError | None:
    """openai SDK exceptions, and litellm's (which wrap them), -> ModelError.

    litellm re-labels some errors (a refused connection becomes a 500, a 529 or 403 a generic
    APIError) but keeps the SDK's original in the exception chain, so the chain is searched.
    """
    import openai

    chain = _chain(exc)
    if not any(isinstance(e, openai.OpenAIError) for e in chain):
        return None
    for e in chain:
        if isinstance(e, openai.APITimeoutError):
            return ModelTimeout(f"{provider}: request timed out: {e}")
        if isinstance(e, openai.APIConnectionError):
            return ConnectionFailed(f"{provider}: cannot reach {base_url or 'the API'}: {e}")
        transport = translate_transport(e)  # litellm's own HTTP client (its Anthropic path)
        if transport is not None:
            transport.message = f"{provider}: {transport.message}"
            return transport
    # The deepest HTTP response is what the server really said (litellm turns a 529 into a 500).
    wire = [getattr(getattr(e, "response", None), "status_code", None) for e in chain]
    labels = [getattr(e, "status_code", None) for e in chain]
    status = next((s for s in [*reversed(wire), *labels] if isinstance(s, int)), None)
    if status is None:
        if "api_key" in str(exc):  # the client could not find a key
            return AuthError(f"{provider}: {exc}", hint=f"set {env_key} (or pass api_key)" if env_key else None)
        return None
    sdk = next(
        (e for e in chain if isinstance(e, openai.APIStatusError) and type(e).__module__.startswith("openai")), exc
    )
    err = from_status(
        status,
        _error_message(sdk),
        provider=provider,
        env_key=env_key,
        code=getattr(sdk, "code", None),
        retry_after_s=_retry_after(chain),
        request_id=getattr(sdk, "request_id", None),
    )
    if type(exc).__name__ == "ContextWindowExceededError" and status < 500:
        err = ContextLengthExceeded(err.message, status_code=status)
    return err


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and e not in out:
        out.append(e)
        e = e.__cause__ or e.__context__
    return out


def _retry_after(chain: list[BaseException]) -> float | None:
    for e in chain:
        response = getattr(e, "response", None)
        for headers in (getattr(e, "litellm_response_headers", None), getattr(response, "headers", None)):
            seconds = parse_retry_after(headers)
            if seconds is not None:
                return seconds
    return None


def _error_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(getattr(exc, "message", None) or exc)
