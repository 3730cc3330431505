"""The three wire formats an external CLI may speak, as the metering proxy needs to know them.

For each: which paths are model calls (charged to the budget) and which are forwarded free
(token counting, the model list); how the real key goes upstream; how a request is prepared
(``max_tokens`` clamped to what the budget has left, usage asked for in streams); how a reply --
a JSON body or a stream of server-sent events -- becomes neutral ``Usage``, text and tool calls;
how a request's conversation and the tool results in it are found; and the protocol's error shape.

Usage is made neutral exactly as the built-in adapters do (``harness.models.types``): input
counts every prompt token, cache reads and writes included.
"""

from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import orjson

from ...models.types import Usage

WIRES = ("anthropic", "openai-chat", "openai-responses")
LIMIT_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
#: Request keys that ask for several replies at once (each one more output than the clamp allows).
CHOICE_KEYS = ("n", "best_of", "num_choices", "candidate_count")
_DATED = re.compile(r"(-\d{8}|-\d{4}-\d{2}-\d{2}|@\d{8}|-latest)$")


@dataclass
class Call:
    id: str
    name: str
    arguments: dict[str, Any] | None
    raw: str = ""


@dataclass
class Reply:
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = ""
    model: str = ""
    error: str = ""  # an error event inside a 200 stream
    server_uses: dict[str, int] = field(default_factory=dict)  # provider-side tool uses by kind (web_search: 2)


@dataclass
class Result:
    """A tool result found in a request: what the CLI sent back for one call."""

    call_id: str
    output: str
    is_error: bool = False


def strip_cache_marks(value: Any) -> Any:
    """The value without `cache_control` keys (Claude Code moves them between requests)."""
    if isinstance(value, dict):
        return {k: strip_cache_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_marks(v) for v in value]
    return value


def _text_of(content: Any) -> str:
    """Text of a content field: a string, or a list of blocks/parts with `text` (others named)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif isinstance(block.get("content"), (str, list)):
                    parts.append(_text_of(block["content"]))
                else:
                    parts.append(f"[{block.get('type', 'block')}]")
        return "\n".join(parts)
    return str(content)


def _parse_args(raw: str) -> dict[str, Any] | None:
    if not raw.strip():
        return {}
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


class Wire(ABC):
    """One protocol. Subclasses fill in the class attributes and the abstract methods."""

    name = ""
    prefixes: tuple[str, ...] = ()  # litellm's provider prefixes of this wire's models ("anthropic/")
    server_tools: tuple[str, ...] = ()  # tool types (prefixes) that run at the provider
    refused_tools: tuple[str, ...] = ()  # server tool kinds refused rather than stripped (MCP)
    server_keys: tuple[str, ...] = ()  # top-level keys that make the provider reach out (refused)
    # top-level keys stripped: provider-side features, and serving the meter cannot price (a dearer
    # `service_tier`; a `background` reply, generated and billed after a usage-less answer)
    strip_keys: tuple[str, ...] = ()
    counted: tuple[str, ...] = ()  # paths of model calls (charged, clamped, recorded)
    free: tuple[str, ...] = ()  # paths forwarded without charge (POST token counting, GET lists)
    clamp_key = "max_tokens"
    conversation_key = "messages"  # the top-level key of the conversation
    head_keys: tuple[str, ...] = ("tools",)  # top-level keys that frame it (system prompt, tools)

    def route(self, method: str, path: str) -> str | None:
        """ "call", "free", or None when the proxy must refuse this method and path."""
        if method == "POST" and path in self.counted:
            return "call"
        if method in ("POST", "GET") and path in self.free:
            return "free"
        return None

    def upstream_auth(self, key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {key}"}

    def model_id(self, model: str) -> str:
        """The one model-id rule of this wire: the id a call names, as compared with the configured
        one. Lower case; one of litellm's prefixes of this wire's provider removed ("anthropic/x"
        is "x"), any other "/" kept ("evil/x" is not "x"); a date or "-latest" at the end removed
        (a dated alias is its model)."""
        value = model.strip().lower()
        for prefix in self.prefixes:
            if value.startswith(prefix):
                value = value[len(prefix) :]
                break
        return _DATED.sub("", value)

    def same_model(self, a: str, b: str) -> bool:
        """Do the two ids name one model under `model_id`?"""
        return bool(a) and self.model_id(a) == self.model_id(b)

    def tool_kind(self, tool: object) -> str:
        """The kind of a server-side tool declaration ("web_search"), or "" for a tool the CLI runs."""
        kind = tool.get("type") if isinstance(tool, dict) else None
        if not isinstance(kind, str):
            return ""
        for prefix in self.server_tools:
            if kind == prefix or kind.startswith(prefix + "_"):
                return prefix
        return ""

    def forced_tool(self, choice: object, stripped: dict[str, str]) -> str:
        """The server tool a `tool_choice` forces ("" when none): `stripped` maps the names of the
        stripped declarations to their kinds."""
        if not isinstance(choice, dict):
            return ""
        name = choice.get("name")
        if isinstance(name, str) and name in stripped:
            return stripped[name]
        return self.tool_kind(choice)

    def prepare(self, body: dict, out_left: int | None, model_max: int | None = None) -> None:
        """Clamp the reply's length to what is left. When the CLI sent no limit (the model's own
        maximum applies), one is added only if what is left is below that maximum (or, with the
        maximum unknown, below 16k), so a provider never sees a limit above what the model allows.
        Every other limit key the request carries is clamped too (a provider may honour either of
        `max_tokens` and `max_completion_tokens`): one that is not a positive integer is removed."""
        if out_left is None:
            return
        key = self.limit_key(body)
        asked = body.get(key)
        if isinstance(asked, int) and asked > 0:
            body[key] = max(1, min(asked, out_left))
        elif out_left < (model_max or 16_384):
            body[key] = max(1, out_left)
        for other in LIMIT_KEYS:
            if other == key or other not in body:
                continue
            given = body[other]
            if isinstance(given, int) and given > 0:
                body[other] = max(1, min(given, out_left))
            else:
                del body[other]

    def limit_key(self, body: dict) -> str:
        return self.clamp_key

    @abstractmethod
    def conversation(self, body: dict) -> tuple[list[dict], list[dict]]:
        """(head, messages): what frames the conversation (system prompt, tool names), and its
        messages as sent (cache marks included: see `strip_cache_marks`)."""

    @abstractmethod
    def results(self, messages: list[dict]) -> list[Result]:
        """The tool results among `messages`."""

    @abstractmethod
    def reply(self, body: dict) -> Reply:
        """A JSON reply, read."""

    @abstractmethod
    def stream(self) -> StreamReader:
        """A reader for one streamed reply."""

    @abstractmethod
    def usage(self, raw: dict | None) -> Usage:
        """The protocol's usage object as neutral Usage."""

    def error_body(self, message: str, kind: str) -> dict:
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


class StreamReader(ABC):
    """Builds a Reply from the decoded `data:` payloads of a stream, one event at a time."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.out = Reply()
        self.complete = False  # the event with the final usage has been read

    @abstractmethod
    def feed(self, event: dict) -> None:
        """Take one decoded event."""

    def done(self) -> Reply:
        return self.out


def _tool_names(tools: Any) -> list[str]:
    names = []
    for tool in tools if isinstance(tools, list) else []:
        if isinstance(tool, dict):
            name = tool.get("name") or (tool.get("function") or {}).get("name")
            if isinstance(name, str):
                names.append(name)
            if tool.get("type") == "namespace":
                names += [f"{tool.get('name')}.{n}" for n in _tool_names(tool.get("tools"))]
    return names


def tools_head(tools: Any) -> dict:
    """How a request's tool list is recorded: names and a hash of the whole list, not the schemas."""
    if not tools:
        return {}
    return {"tools": _tool_names(tools), "tools_sha256": hashlib.sha256(orjson.dumps(tools)).hexdigest()[:16]}


# ----------------------------------------------------------------------------- Anthropic Messages


class Anthropic(Wire):
    name = "anthropic"
    prefixes = ("anthropic/",)
    server_tools = ("web_search", "web_fetch", "code_execution", "tool_search_tool", "mcp_toolset")
    refused_tools = ("mcp_toolset",)
    server_keys = ("mcp_servers", "container")
    head_keys = ("system", "tools")
    counted = ("/v1/messages",)
    free = ("/v1/messages/count_tokens", "/v1/models")

    def upstream_auth(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def conversation(self, body: dict) -> tuple[list[dict], list[dict]]:
        head = []
        if body.get("system"):
            head.append({"role": "system", "content": _text_of(body["system"]), **tools_head(body.get("tools"))})
        elif body.get("tools"):
            head.append({"role": "system", "content": "", **tools_head(body.get("tools"))})
        messages = body.get("messages")
        return head, messages if isinstance(messages, list) else []

    def results(self, messages: list[dict]) -> list[Result]:
        found = []
        for msg in messages:
            content = msg.get("content") if msg.get("role") == "user" else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found.append(
                        Result(
                            str(block.get("tool_use_id", "")),
                            _text_of(block.get("content")),
                            bool(block.get("is_error")),
                        )
                    )
        return found

    def usage(self, raw: dict | None) -> Usage:
        raw = raw or {}
        read, write = _int(raw.get("cache_read_input_tokens")), _int(raw.get("cache_creation_input_tokens"))
        split = raw.get("cache_creation")
        hour = _int(split.get("ephemeral_1h_input_tokens")) if isinstance(split, dict) else 0
        return Usage(
            input_tokens=_int(raw.get("input_tokens")) + read + write,
            output_tokens=_int(raw.get("output_tokens")),
            cache_read_tokens=read,
            cache_write_tokens=write,
            cache_write_1h_tokens=min(hour, write),
        )

    def reply(self, body: dict) -> Reply:
        out = Reply(
            usage=self.usage(body.get("usage")),
            stop_reason=str(body.get("stop_reason") or ""),
            model=str(body.get("model") or ""),
            server_uses=_anthropic_uses(body.get("usage")),
        )
        texts = []
        for block in body.get("content") or []:
            if not isinstance(block, dict):  # not a content block: skipped (the usage is read already)
                continue
            if block.get("type") == "text":
                texts.append(block.get("text", ""))
            elif block.get("type") == "tool_use":
                args = block.get("input")
                out.calls.append(
                    Call(
                        str(block.get("id", "")),
                        str(block.get("name", "")),
                        args if isinstance(args, dict) else None,
                        orjson.dumps(args).decode(),
                    )
                )
        out.text = "".join(texts)
        return out

    def stream(self) -> StreamReader:
        return _AnthropicStream(self)

    def error_body(self, message: str, kind: str) -> dict:
        return {"type": "error", "error": {"type": kind, "message": message}}


class _AnthropicStream(StreamReader):
    def __init__(self, wire: Wire) -> None:
        super().__init__(wire)
        self.blocks: dict[int, dict] = {}
        self.raw_usage: dict = {}

    def feed(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self.out.model = str(message.get("model") or "")
            self.raw_usage.update(message.get("usage") or {})
        elif kind == "content_block_start":
            block = dict(event.get("content_block") or {})
            block["_json"] = ""
            self.blocks[_int(event.get("index"))] = block
        elif kind == "content_block_delta":
            block = self.blocks.setdefault(_int(event.get("index")), {"type": "text", "text": "", "_json": ""})
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + delta.get("text", "")
            elif delta.get("type") == "input_json_delta":
                block["_json"] += delta.get("partial_json", "")
        elif kind == "message_delta":
            # The usage here is cumulative; fields it leaves out (or null) keep message_start's values.
            self.raw_usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
            self.out.stop_reason = str((event.get("delta") or {}).get("stop_reason") or self.out.stop_reason)
            self.complete = True
        elif kind == "error":
            self.out.error = str((event.get("error") or {}).get("message") or "stream error")

    def done(self) -> Reply:
        texts = []
        for _, block in sorted(self.blocks.items()):
            if block.get("type") == "text":
                texts.append(block.get("text", ""))
            elif block.get("type") == "tool_use":
                raw = block["_json"]
                args = _parse_args(raw) if raw else (block.get("input") if isinstance(block.get("input"), dict) else {})
                self.out.calls.append(Call(str(block.get("id", "")), str(block.get("name", "")), args, raw))
        self.out.text = "".join(texts)
        self.out.usage = self.wire.usage(self.raw_usage)
        self.out.server_uses = _anthropic_uses(self.raw_usage)
        return self.out


def _anthropic_uses(raw: Any) -> dict[str, int]:
    """Provider-side tool uses in Anthropic's usage (`server_tool_use.web_search_requests: 2`)."""
    found = (raw or {}).get("server_tool_use") if isinstance(raw, dict) else None
    if not isinstance(found, dict):
        return {}
    return {k.removesuffix("_requests"): v for k, v in found.items() if isinstance(v, int) and v > 0}


# ----------------------------------------------------------------------------- OpenAI Chat Completions


class OpenAIChat(Wire):
    name = "openai-chat"
    prefixes = ("openai/", "openai_like/", "text-completion-openai/")
    strip_keys = ("web_search_options", "service_tier")
    counted = ("/v1/chat/completions",)
    free = ("/v1/models",)
    clamp_key = "max_completion_tokens"

    def limit_key(self, body: dict) -> str:
        # Older servers know only max_tokens: keep the key the CLI used; add the current one.
        return "max_tokens" if "max_tokens" in body and "max_completion_tokens" not in body else self.clamp_key

    def prepare(self, body: dict, out_left: int | None, model_max: int | None = None) -> None:
        super().prepare(body, out_left, model_max)
        if body.get("stream"):  # the API leaves usage out of streams unless asked
            options = given if isinstance(given := body.get("stream_options"), dict) else {}
            body["stream_options"] = {**options, "include_usage": True}

    def conversation(self, body: dict) -> tuple[list[dict], list[dict]]:
        messages = sent if isinstance(sent := body.get("messages"), list) else []
        head = [{"role": "system", "content": "", **tools_head(body.get("tools"))}] if body.get("tools") else []
        return head, messages

    def results(self, messages: list[dict]) -> list[Result]:
        return [
            Result(str(m.get("tool_call_id", "")), _text_of(m.get("content")))
            for m in messages
            if m.get("role") == "tool"
        ]

    def usage(self, raw: dict | None) -> Usage:
        raw = raw or {}
        details = raw.get("prompt_tokens_details") or {}
        completion = raw.get("completion_tokens_details") or {}
        return Usage(
            input_tokens=_int(raw.get("prompt_tokens")),
            output_tokens=_int(raw.get("completion_tokens")),
            cache_read_tokens=_int(details.get("cached_tokens")),
            reasoning_tokens=_int(completion.get("reasoning_tokens")),
        )

    def reply(self, body: dict) -> Reply:
        choice = first if isinstance(first := (body.get("choices") or [{}])[0], dict) else {}
        message = given if isinstance(given := choice.get("message"), dict) else {}
        out = Reply(
            text=_text_of(message.get("content")),
            usage=self.usage(body.get("usage")),
            stop_reason=str(choice.get("finish_reason") or ""),
            model=str(body.get("model") or ""),
        )
        for call in message.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            fn = call.get("function") or {}
            raw = arguments if isinstance(arguments := fn.get("arguments"), str) else orjson.dumps(arguments).decode()
            out.calls.append(Call(str(call.get("id", "")), str(fn.get("name", "")), _parse_args(raw), raw))
        return out

    def stream(self) -> StreamReader:
        return _ChatStream(self)


class _ChatStream(StreamReader):
    def __init__(self, wire: Wire) -> None:
        super().__init__(wire)
        self.texts: list[str] = []
        self.calls: dict[int, dict] = {}

    def feed(self, event: dict) -> None:
        if event.get("model"):
            self.out.model = str(event["model"])
        if event.get("usage"):
            self.out.usage = self.wire.usage(event["usage"])
            self.complete = True  # the usage chunk comes last (the proxy always asks for it)
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                self.texts.append(delta["content"])
            for call in delta.get("tool_calls") or []:
                slot = self.calls.setdefault(_int(call.get("index")), {"id": "", "name": "", "args": ""})
                fn = call.get("function") or {}
                slot["id"] = call.get("id") or slot["id"]
                slot["name"] += fn.get("name") or ""
                slot["args"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                self.out.stop_reason = str(choice["finish_reason"])
        if event.get("error"):
            self.out.error = str((event.get("error") or {}).get("message") or "stream error")

    def done(self) -> Reply:
        self.out.text = "".join(self.texts)
        self.out.calls = [
            Call(c["id"], c["name"], _parse_args(c["args"]), c["args"]) for _, c in sorted(self.calls.items())
        ]
        return self.out


# ----------------------------------------------------------------------------- OpenAI Responses


class OpenAIResponses(Wire):
    name = "openai-responses"
    prefixes = ("openai/", "responses/")
    server_tools = (
        "web_search",
        "web_search_preview",
        "file_search",
        "code_interpreter",
        "image_generation",
        "mcp",
        "tool_search",
    )
    refused_tools = ("mcp",)
    strip_keys = ("background", "service_tier")
    conversation_key = "input"
    head_keys = ("instructions", "tools")
    counted = ("/v1/responses",)
    free = ("/v1/models",)
    clamp_key = "max_output_tokens"

    def conversation(self, body: dict) -> tuple[list[dict], list[dict]]:
        items = body.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        items = items if isinstance(items, list) else []
        head = []
        if body.get("instructions") or body.get("tools"):
            head.append(
                {"role": "system", "content": _text_of(body.get("instructions")), **tools_head(body.get("tools"))}
            )
        return head, items

    def results(self, messages: list[dict]) -> list[Result]:
        return [
            Result(str(m.get("call_id", "")), _text_of(m.get("output")))
            for m in messages
            if m.get("type") in ("function_call_output", "custom_tool_call_output")
        ]

    def usage(self, raw: dict | None) -> Usage:
        raw = raw or {}
        return Usage(
            input_tokens=_int(raw.get("input_tokens")),
            output_tokens=_int(raw.get("output_tokens")),
            cache_read_tokens=_int((raw.get("input_tokens_details") or {}).get("cached_tokens")),
            reasoning_tokens=_int((raw.get("output_tokens_details") or {}).get("reasoning_tokens")),
        )

    def reply(self, body: dict) -> Reply:
        out = Reply(
            usage=self.usage(body.get("usage")),
            stop_reason=str(body.get("status") or ""),
            model=str(body.get("model") or ""),
        )
        for item in body.get("output") or []:
            if isinstance(item, dict):
                self.add_item(out, item)
        return out

    @staticmethod
    def add_item(out: Reply, item: dict) -> None:
        kind = item.get("type")
        if kind == "message":
            out.text += _text_of(item.get("content"))
        elif kind == "function_call":
            raw = arguments if isinstance(arguments := item.get("arguments"), str) else ""
            out.calls.append(
                Call(str(item.get("call_id") or item.get("id") or ""), str(item.get("name", "")), _parse_args(raw), raw)
            )
        elif isinstance(kind, str) and kind.endswith("_call") and kind[:-5] in OpenAIResponses.server_tools:
            out.server_uses[kind[:-5]] = out.server_uses.get(kind[:-5], 0) + 1  # web_search_call: one use
        elif kind == "custom_tool_call":
            raw = given if isinstance(given := item.get("input"), str) else ""
            out.calls.append(
                Call(str(item.get("call_id") or item.get("id") or ""), str(item.get("name", "")), {"input": raw}, raw)
            )

    def stream(self) -> StreamReader:
        return _ResponsesStream(self)


class _ResponsesStream(StreamReader):
    def __init__(self, wire: Wire) -> None:
        super().__init__(wire)
        self.items: list[dict] = []
        self.final: dict | None = None

    def feed(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "response.output_item.done" and isinstance(event.get("item"), dict):
            self.items.append(event["item"])
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            self.final = event.get("response") or {}
            self.complete = True
            if kind == "response.failed":
                self.out.error = str((self.final.get("error") or {}).get("message") or "response failed")
        elif kind == "error":
            self.out.error = str(event.get("message") or "stream error")

    def done(self) -> Reply:
        final = self.final or {}
        items = self.items or list(final.get("output") or [])
        self.out.usage = self.wire.usage(final.get("usage"))
        self.out.stop_reason = str(final.get("status") or "")
        self.out.model = str(final.get("model") or "")
        for item in items:
            OpenAIResponses.add_item(self.out, item)
        return self.out


def get_wire(name: str) -> Wire:
    """The wire format called `name` (one of WIRES)."""
    wires: dict[str, type[Wire]] = {
        "anthropic": Anthropic,
        "openai-chat": OpenAIChat,
        "openai-responses": OpenAIResponses,
    }
    return wires[name]()


def sse_payloads(block: bytes) -> list[bytes]:
    """The `data:` payloads of complete SSE events in `block` (events end with a blank line)."""
    out = []
    for event in block.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:")]
        if data:
            out.append(b"\n".join(data))
    return out
