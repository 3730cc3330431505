"""``litellm/<provider>/<model>``: any provider litellm supports, in the OpenAI format.

litellm is imported on first use only (it takes seconds). Its own retries are off
(``num_retries=0``, ``max_retries=0``) so retries stay in harness.models.retry, and only settings
that are set are sent. ``drop_params`` is off by default: a provider rejecting a setting is an
error to see, not a setting to drop silently while the manifest claims it was used.
"""

from __future__ import annotations

import os
from typing import Any

from .base import HTTPModel
from .errors import ModelError
from .openai_format import base_request, translate_openai_error, turn_from_chunks, turn_from_response
from .types import Message, Settings, ToolSpec, Turn


def import_litellm() -> Any:
    # Without this litellm fetches its price map over the network at import: seconds of delay
    # offline, and prices that change under a run. The bundled map is pinned by its version.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback" banners in our logs
    return litellm


class LiteLLMModel(HTTPModel):
    provider = "litellm"
    env_key: str  # always set: <PROVIDER>_API_KEY

    def __init__(self, model: str, *, drop_params: bool = False, **kw: Any) -> None:
        if "/" not in model:
            from .errors import ModelConfigError

            raise ModelConfigError(
                f"litellm model {model!r} needs a provider: litellm/<provider>/<model>, e.g. litellm/openai/gpt-4o"
            )
        super().__init__(model, **kw)
        self.drop_params = drop_params
        self.env_key = f"{model.split('/', 1)[0].upper()}_API_KEY"  # litellm's convention

    def request(self, messages: list[Message], tools: list[ToolSpec], settings: Settings) -> dict:
        req = base_request(self.model, messages, tools, settings)
        req["max_tokens"] = settings.max_tokens  # litellm maps it to each provider's name
        if settings.thinking_budget:
            req["thinking"] = {"type": "enabled", "budget_tokens": settings.thinking_budget}
        if self.drop_params:
            req["drop_params"] = True
        return req

    def missing_credentials(self) -> list[str]:
        """What litellm says this provider needs and is not set (its own table of variables)."""
        if self._api_key:
            return []
        litellm = import_litellm()
        try:
            found = litellm.validate_environment(model=self.model)
        except Exception:  # noqa: BLE001 - a provider litellm cannot tell about: the call will say
            return []
        return list(found.get("missing_keys") or []) if not found.get("keys_in_environment") else []

    def credential_env(self) -> tuple[str, ...]:
        return (self.env_key,)

    def _prepare(self) -> None:
        if self._client is None:
            self._client = import_litellm()

    def _attempt(self, messages: list[Message], tools: list[ToolSpec], settings: Settings) -> Turn:
        litellm = self._client
        req = self.request(messages, tools, settings)
        req.update(timeout=settings.timeout_s, num_retries=0, max_retries=0)
        if self.base_url:
            req["api_base"] = self.base_url
        if self._api_key:
            req["api_key"] = self._api_key
        if not self.stream:
            resp = litellm.completion(**req)
            return turn_from_response(resp, self.model)
        stream = litellm.completion(**req, stream=True, stream_options={"include_usage": True})
        return turn_from_chunks(stream, self.model)

    def _translate(self, exc: Exception) -> ModelError | None:
        return translate_openai_error(exc, provider=self.name, env_key=self.env_key, base_url=self.base_url)
