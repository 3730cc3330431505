"""What every HTTP adapter shares: retries, cost, error translation for transport errors.

An adapter implements ``_attempt`` (one request, one Turn, SDK errors translated to ModelErrors)
and inherits ``complete``, which wraps it in the one retry policy and prices the result. SDKs are
imported inside the adapters' methods, never at module level, so importing harness.models stays
cheap for runs that use no model.
"""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from .. import scrub
from .errors import AuthError, ConnectionFailed, ModelError, ModelTimeout
from .pricing import PriceTable, turn_cost
from .retry import call_with_retries
from .types import Message, Settings, SleepFn, ToolSpec, Turn


class HTTPModel(ABC):
    """Base of the anthropic / openai / litellm adapters (a ``Model``)."""

    provider: str = ""
    #: The environment variable holding the key, named in AuthError hints.
    env_key: str | None = None

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        stream: bool = False,
        prices: PriceTable | None = None,
        sleep: SleepFn = time.sleep,
        client: Any = None,
    ) -> None:
        self.model = model  # the id the provider knows
        self.name = f"{self.provider}/{model}"
        self.base_url = base_url
        self.stream = stream
        self._api_key = api_key
        scrub.register(api_key)  # a key given in code is scrubbed like one from the environment
        self._prices = prices
        self._sleep = sleep
        self._client = client

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} base_url={self.base_url!r} stream={self.stream}>"

    def _sdk_client(self, factory: Any, sdk_error: type[Exception], label: str) -> Any:
        """An SDK client with the SDK's own retries off (retries are ours: harness.models.retry)."""
        kw: dict[str, Any] = {"max_retries": 0}
        if self.base_url:
            kw["base_url"] = self.base_url
        if self._api_key:
            kw["api_key"] = self._api_key
        try:
            return factory(**kw)
        except sdk_error as e:
            raise AuthError(
                f"cannot create the {label} client: {e}", hint=f"set {self.env_key} (or pass api_key)"
            ) from e

    def for_task(self, task_id: str) -> HTTPModel:
        return self  # one client serves every task

    def credential_env(self) -> tuple[str, ...]:
        """The environment variables, any one of which gives this adapter its credentials."""
        return (self.env_key,) if self.env_key else ()

    def missing_credentials(self) -> list[str]:
        """The variables to set when no credentials are there ([] when a key was given or one is
        set). Checked before a run starts; nothing is sent to the provider."""
        names = self.credential_env()
        if self._api_key or not names or any(os.environ.get(n) for n in names):
            return []
        return list(names)

    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec | dict], settings: Settings | None = None
    ) -> Turn:
        """One assistant turn. Raises ModelError (ModelUnavailable once retries are spent)."""
        settings = settings or Settings()
        specs = [t if isinstance(t, ToolSpec) else ToolSpec.model_validate(t) for t in tools]
        msgs = list(messages)
        self._prepare()  # SDK import and client set-up: seconds that are not the model's latency
        turn = call_with_retries(
            lambda: self._guarded(msgs, specs, settings), settings, sleep=self._sleep, what=self.name
        )
        cost = turn_cost(turn.usage, self.model, self.provider, overrides=self._prices)
        if cost is None and turn.model != self.model and turn.model.startswith(self.model):
            # An alias ("gpt-4o") answered by a dated snapshot the map may know by that name.
            cost = turn_cost(turn.usage, turn.model, self.provider, overrides=self._prices)
        return turn.model_copy(update={"cost_usd": cost})

    def _guarded(self, messages: list[Message], tools: list[ToolSpec], settings: Settings) -> Turn:
        try:
            return self._attempt(messages, tools, settings)
        except ModelError:
            raise
        except Exception as e:
            err = self._translate(e) or translate_transport(e)
            if err is None:
                raise  # a bug on our side, not the provider's: let it surface as is
            raise err from e

    # --- for subclasses ---------------------------------------------------------------------

    def _prepare(self) -> None:  # noqa: B027 -- optional hook: adapters without an SDK client skip it
        """Import the SDK and build the client (raises AuthError without credentials)."""

    @abstractmethod
    def _attempt(self, messages: list[Message], tools: list[ToolSpec], settings: Settings) -> Turn:
        """One request, one Turn; SDK errors may escape (``_translate`` maps them)."""

    def _translate(self, exc: Exception) -> ModelError | None:
        """The ModelError for an SDK exception, or None if it is not the SDK's."""
        return None


def translate_transport(exc: BaseException) -> ModelError | None:
    """Map raw httpx / httpx2 errors that escape an SDK while a stream is being read.

    Matched by class name so neither HTTP library is imported here.
    """
    names = {
        cls.__name__ for cls in type(exc).__mro__ if cls.__module__.split(".")[0] in ("httpx", "httpx2", "httpcore")
    }
    if "TimeoutException" in names or "TimeoutError" in names:
        return ModelTimeout(f"timed out while reading the response: {exc}")
    if names & {"TransportError", "NetworkError", "ProtocolError", "StreamError"}:
        return ConnectionFailed(f"connection failed while reading the response: {exc}")
    return None


def field(obj: Any, name: str, default: Any = None) -> Any:
    """``obj.name`` or ``obj[name]``: SDK objects and plain dicts alike (None-safe)."""
    if obj is None:
        return default
    if isinstance(obj, dict):
        value = obj.get(name, default)
    else:
        value = getattr(obj, name, default)
    return default if value is None else value
