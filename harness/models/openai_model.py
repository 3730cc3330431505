"""``openai/<model>``: Chat Completions with function calling, through the openai SDK.

Works with any OpenAI-compatible server given its base URL (which includes ``/v1``). Base URL and
key come from the arguments or, as the SDK does it, OPENAI_BASE_URL / OPENAI_API_KEY.
"""

from __future__ import annotations

import os
from typing import Any

from .base import HTTPModel
from .errors import ModelConfigError, ModelError
from .openai_format import base_request, translate_openai_error, turn_from_chunks, turn_from_response
from .types import Message, Settings, ToolSpec, Turn


class OpenAIModel(HTTPModel):
    provider = "openai"
    env_key = "OPENAI_API_KEY"

    def __init__(self, model: str, *, reasoning_effort: str | None = None, **kw: Any) -> None:
        super().__init__(model, **kw)
        self.base_url = self.base_url or os.environ.get("OPENAI_BASE_URL")
        #: OpenAI's reasoning control ("low" / "medium" / "high"); it has no token budget.
        self.reasoning_effort = reasoning_effort

    def _prepare(self) -> None:
        self.client()

    def client(self) -> Any:
        if self._client is None:
            import openai

            self._client = self._sdk_client(openai.OpenAI, openai.OpenAIError, "OpenAI")
        return self._client

    def request(self, messages: list[Message], tools: list[ToolSpec], settings: Settings) -> dict:
        if settings.thinking_budget:
            # Refuse rather than silently drop a setting the manifest would claim was used.
            raise ModelConfigError(
                f"{self.name}: Chat Completions has no thinking budget",
                hint="unset thinking_budget and pass reasoning_effort to the openai adapter",
            )
        req = base_request(self.model, messages, tools, settings)
        # max_completion_tokens: the only limit OpenAI's reasoning models accept.
        req["max_completion_tokens"] = settings.max_tokens
        if self.reasoning_effort:
            req["reasoning_effort"] = self.reasoning_effort
        return req

    def _attempt(self, messages: list[Message], tools: list[ToolSpec], settings: Settings) -> Turn:
        req = self.request(messages, tools, settings)
        client = self.client()
        if not self.stream:
            resp = client.chat.completions.create(**req, timeout=settings.timeout_s)
            return turn_from_response(resp, self.model, getattr(resp, "_request_id", None))
        stream = client.chat.completions.create(
            **req, stream=True, stream_options={"include_usage": True}, timeout=settings.timeout_s
        )
        try:
            turn = turn_from_chunks(stream, self.model)
            request_id = stream.response.headers.get("x-request-id")
        finally:
            stream.close()
        return turn.model_copy(update={"request_id": request_id or turn.request_id})

    def _translate(self, exc: Exception) -> ModelError | None:
        return translate_openai_error(exc, provider=self.name, env_key=self.env_key, base_url=self.base_url)
