"""One exception hierarchy for everything a model can raise.

Each adapter translates its SDK's exceptions at the boundary (see ``from_status``); callers never
see anthropic / openai / litellm types. Families are grouped by why a caller catches them:
``retryable`` errors are retried by ``harness.models.retry`` and, once retries run out, become
``ModelUnavailable`` (the attempt ends as infra_error, not as the agent's failure); the others are
raised at once because repeating the same request cannot help. ``infra`` says whether an error
that ends an attempt is the setup's or the provider's (not the agent's), and ``rerun`` whether a
later try of the whole unit may succeed.
"""

from __future__ import annotations

import re
import time
from typing import Any

from ..errors import UserError


class ModelError(Exception):
    """Root of every error raised by the models layer."""

    retryable: bool = False  # the same request may succeed if sent again (retry policy)
    infra: bool = False  # ending an attempt, it is the setup's or the provider's fault, not the agent's
    #: What the user can do about it; shown under the message by the CLI.
    hint: str = ""

    @property
    def rerun(self) -> bool:
        """May a later try of the unit succeed (the provider was failing), or would it fail the same?"""
        return self.retryable

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        retry_after_s: float | None = None,
        request_id: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        #: What the server asked us to wait (Retry-After), if it said.
        self.retry_after_s = retry_after_s
        self.request_id = request_id
        #: RetryEvents recorded before this error ended the call (set by harness.models.retry).
        self.retries: list[Any] = []
        self.retry_wait_s = 0.0
        if hint is not None:
            self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


# --- transient: retried ---------------------------------------------------------------------


class RateLimited(ModelError):
    """429: the provider asks us to slow down."""

    retryable = True
    infra = True
    hint = "lower --workers, or raise the account's rate limit"


class ServerError(ModelError):
    """5xx: the provider failed; usually transient."""

    retryable = True
    infra = True


class Overloaded(ServerError):
    """529 / 503: the provider is overloaded or temporarily unavailable."""

    hint = "the provider is overloaded; retry later or lower --workers"


class ModelTimeout(ModelError):
    """No complete answer within Settings.timeout_s."""

    retryable = True
    infra = True
    hint = "raise the model timeout (Settings.timeout_s) if long generations are expected"


class ConnectionFailed(ModelError):
    """The provider could not be reached (DNS, refused, reset)."""

    retryable = True
    infra = True
    hint = "check the network and the base URL"


# --- the request itself is wrong: never retried ---------------------------------------------


class AuthError(ModelError):
    """401 / 403: missing, wrong or unauthorised credentials."""

    infra = True


class NotFound(ModelError):
    """404: unknown model or wrong endpoint."""

    infra = True

    hint = "check the model name and the base URL"


class BadRequest(ModelError):
    """400 (and other 4xx): the provider rejected the request as malformed or unsupported."""

    infra = True


class ContextLengthExceeded(BadRequest):
    """The conversation no longer fits the model's context window."""

    infra = False  # the agent's conversation outgrew the window: its own outcome
    hint = "the conversation outgrew the context window; lower max_tokens or shorten tool output"


# --- ours -----------------------------------------------------------------------------------


class ModelUnavailable(ModelError):
    """Retries ran out; the last error is the ``__cause__``. Infra trouble, not the agent's."""

    infra = True
    hint = "the provider kept failing; the attempt counts as infra_error: rerun or resume later"

    @property
    def rerun(self) -> bool:
        return True


class ReplayExhausted(ModelError):
    """A replayed recording has no turn left for the request."""


class ModelConfigError(ModelError, UserError):
    """A model spec or option is invalid (unknown prefix, unsupported setting)."""

    infra = True


# --- translation helpers used by the adapters -----------------------------------------------

# Substrings providers use for context overflow (Anthropic "prompt is too long", OpenAI
# "maximum context length" / code context_length_exceeded, litellm's wording, vLLM and others).
_CONTEXT_RE = re.compile(
    r"context[ _]length|context window|prompt is too long|maximum context|too many tokens"
    r"|input is too long|exceeds the (?:model's )?(?:context|maximum)",
    re.IGNORECASE,
)


def is_context_length_message(text: str) -> bool:
    return bool(_CONTEXT_RE.search(text or ""))


def parse_retry_after(headers: Any, *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date)."""
    if not headers:
        return None
    get = headers.get
    ms = get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        import email.utils  # only a Retry-After date needs it

        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def from_status(
    status: int,
    message: str,
    *,
    provider: str,
    env_key: str | None = None,
    code: str | None = None,
    retry_after_s: float | None = None,
    request_id: str | None = None,
) -> ModelError:
    """The ModelError for an HTTP error status (adapters call this from their SDK's errors)."""
    kw: dict[str, Any] = {"status_code": status, "retry_after_s": retry_after_s, "request_id": request_id}
    text = f"{provider} answered {status}: {message}"
    if status in (401, 403):
        hint = f"set {env_key} (or pass api_key) to a valid key" if env_key else "check the API key"
        return AuthError(text, hint=hint, **kw)
    if status == 404:
        return NotFound(text, **kw)
    if status == 429:
        return RateLimited(text, **kw)
    if status in (503, 529):
        return Overloaded(text, **kw)
    if status in (408, 504):
        return ModelTimeout(text, **kw)
    if status >= 500:
        return ServerError(text, **kw)
    if code == "context_length_exceeded" or is_context_length_message(message):
        return ContextLengthExceeded(text, **kw)
    return BadRequest(text, **kw)
