"""Whose failure a provider's answer is: the one rule for the built-in agent and external CLIs.

A provider error belongs to the call that got it. When an agent's turn ends, `attribute` looks at
the model calls of the attempt, in order, and decides whether the provider had a part in the end
and whose failure it was (docs/outcomes.md, "Whose a provider error is"):

- the provider kept failing longer than `max_provider_wait_s` (the hard outer cap on waiting):
  the machine's (`model_error`, infra, retried);
- the last call succeeded, or there was none: the provider had no part (None): an error earlier in
  the attempt was answered by a later success, so it is not the reason the agent stopped;
- the last call was rate-limited or the provider failed (429, 408, 5xx, unreachable): the
  machine's (infra, retried), whatever the CLI's exit code;
- the last call was refused for its credentials (401, 403): the setup's (infra, not retried);
- the last call was refused with 404 for the configured model (`same_model`, exact ids): the
  setup's; for a model the agent named itself: the agent's;
- the last call was refused as malformed (400 and other 4xx) after a call of the attempt (of any
  model) was accepted: what changed is the conversation the agent built (its own output, its tools' results),
  so the agent's (`agent_error`, graded); with no accepted call before it: the setup's.

`ProviderClock` keeps waiting on a failing provider out of the agent's time: from the moment a
call that fails for the provider's reasons is sent until the next call after it is sent (the
failed call's latency and the CLI's back-off, at most `MAX_BACKOFF_S` of it: an agent cannot go on
working on a paused clock by not calling again), the budget's clock is paused.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..vocabulary import StopReason
from .budget import MAX_BACKOFF_S, Budget

#: Provider prefixes of a configured model id (wholeloop's and litellm's routing prefixes): the id a
#: provider sees is the configured one without them. Only these are stripped, never any segment
#: before a "/" (a model id may contain "/": openrouter's `qwen/qwen3-coder`).
ROUTING_PREFIXES = frozenset(
    {"anthropic", "openai", "litellm", "openrouter", "azure", "bedrock", "vertex_ai", "gemini", "mistral", "groq"}
)


def model_id(name: str) -> str:
    """A model id as a provider sees it: the configured id without its routing prefixes."""
    name = name.strip()
    while "/" in name and name.split("/", 1)[0].lower() in ROUTING_PREFIXES:
        name = name.split("/", 1)[1]
    return name


#: Which wire formats reach a provider's models (by the routing prefix of a model id): Anthropic's
#: only through the Messages API; OpenAI's and Azure's through Chat Completions and Responses; the
#: OpenAI-compatible routers through Chat Completions.
WIRES_OF_PROVIDER = {
    "anthropic": frozenset({"anthropic"}),
    "openai": frozenset({"openai-chat", "openai-responses"}),
    "azure": frozenset({"openai-chat", "openai-responses"}),
    "openrouter": frozenset({"openai-chat"}),
    "groq": frozenset({"openai-chat"}),
    "mistral": frozenset({"openai-chat"}),
}


def provider_of(model: str, price_map: dict | None = None) -> str | None:
    """The provider a model id names: its routing prefix, else (a bare id) the provider litellm's
    price map files it under; None when neither says."""
    head = model.strip().split("/", 1)[0].lower() if "/" in model else ""
    if head in WIRES_OF_PROVIDER:
        return head
    if not head and price_map is not None:
        entry = price_map.get(model.strip())
        found = entry.get("litellm_provider") if isinstance(entry, dict) else None
        return found if found in WIRES_OF_PROVIDER else None
    return None


def same_model(asked: str, configured: str) -> bool:
    """Did a call name the configured model? Exact ids after `model_id` (no split on "/", no alias
    matching: a dated alias the agent chose is another model)."""
    return bool(asked) and model_id(asked) == model_id(configured)


def transient(status: int) -> bool:
    """A status that says the provider failed or asked us to slow down (0: no answer at all)."""
    return status in (0, 408, 429) or status >= 500


@dataclass
class Call:
    """One model call as it ended: its HTTP status (0: the provider could not be reached), the
    model it named, the provider's error (if any), and when it was sent and answered."""

    status: int
    model: str = ""
    error: str = ""
    sent_at: float = 0.0
    answered_at: float = 0.0

    @property
    def ok(self) -> bool:
        return 0 < self.status < 400


@dataclass
class Attribution:
    """Whose the end of an attempt is: a stop reason, words, and whether it is the machine's or
    the setup's (`infra`: not graded, `infra_error`) and worth a new try (`retryable`)."""

    reason: StopReason
    detail: str
    infra: bool
    retryable: bool


def attribute(
    calls: Sequence[Call],
    configured: str,
    *,
    exit_code: int | None = None,
    waited_out: float | None = None,
    same: Callable[[str, str], bool] = same_model,
) -> Attribution | None:
    """The one rule (see the module docstring). `calls`: the attempt's model calls in the order
    they were sent; `configured`: the configured model id; `exit_code`: the CLI's (None for the
    built-in agent); `waited_out`: seconds waited on the provider when that reached the cap;
    `same`: the model-id rule (an external CLI's wire's own, when it has one).
    None: the provider had no part in how the attempt ended."""
    ordered = sorted(calls, key=lambda c: (c.sent_at, c.answered_at))
    if waited_out is not None:
        last_error = next((c.error for c in reversed(ordered) if c.error), "")
        return Attribution(
            StopReason.model_error,
            f"the provider kept failing: {waited_out:.0f} s spent waiting on it reached max_provider_wait_s"
            + (f" (last: {last_error[:300]})" if last_error else ""),
            infra=True,
            retryable=True,
        )
    if not ordered or ordered[-1].ok:
        return None
    last = ordered[-1]
    said = last.error[:500] or f"HTTP {last.status}"
    if transient(last.status):
        return Attribution(StopReason.model_error, f"the provider kept failing: {said}", infra=True, retryable=True)
    if last.status in (401, 403):
        return Attribution(
            StopReason.model_error, f"the provider refused the credentials: {said}", infra=True, retryable=False
        )
    if last.status == 404:
        if same(last.model, configured):
            return Attribution(
                StopReason.model_error,
                f"the provider does not know the configured model {model_id(configured)!r}: {said}",
                infra=True,
                retryable=False,
            )
        if exit_code == 0:
            return None
        return Attribution(
            StopReason.agent_error,
            f"the agent called a model the provider does not know ({last.model or 'none named'!r}, not the "
            f"configured {model_id(configured)!r}) and gave up: {said}",
            infra=False,
            retryable=False,
        )
    # Any model took an earlier request of this attempt: the setup works, so what made this one wrong
    # is what the agent built (its conversation, or a side model's request it shaped; red team 4,
    # attack 12: a malformed first call to the allowed side model was read as the setup's).
    accepted = any(c.ok for c in ordered[:-1])
    if accepted:
        if exit_code == 0:
            return None
        return Attribution(
            StopReason.agent_error,
            f"the provider refused a request built from the agent's own conversation (an earlier one was "
            f"accepted): {said}",
            infra=False,
            retryable=False,
        )
    return Attribution(
        StopReason.model_error,
        f"the provider refused the first request of {last.model or model_id(configured)!r} (the setup's: "
        f"its parameters or the model, not anything the agent said): {said}",
        infra=True,
        retryable=False,
    )


class ProviderClock:
    """Pauses `budget`'s clock while the provider is failing (see the module docstring); thread-safe.
    `waited()` is the time waited on the provider so far, the open stretch included."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.lock = threading.Lock()

    def note(self, call: Call) -> None:
        with self.lock:
            b = self.budget
            if b.waiting_since is not None and call.sent_at >= b.waiting_since:
                b.wait_s += min(max(call.sent_at - b.waiting_since, 0.0), MAX_BACKOFF_S)  # until the next call
                b.waiting_since = None
            if transient(call.status):
                end = call.answered_at or time.monotonic()
                if call.ok is False and b.waiting_since is None:
                    b.wait_s += max(end - call.sent_at, 0.0)  # the failed call itself
                    b.waiting_since = end  # ... and the back-off after it, until the next call

    def waited(self) -> float:
        with self.lock:
            return self.budget.provider_wait_s()
