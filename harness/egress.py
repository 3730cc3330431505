"""One rule for every feature that sends a repository's content to a model (docs/privacy.md).

Such a feature (today `mine --statement-model` and the setup agent) is off unless asked for, and before its first
request it

1. asks `check(feature, ...)`, which refuses (EgressForbidden, before any request) when the machine
   forbids egress (`WHOLELOOP_NO_EGRESS=1`) or the suite does (`egress: forbid` in its
   wholeloop.yaml);
2. says what it will send, to whom (`Egress.announce()`: model, endpoint, what, how much);
3. records what it sent (`Egress.record()`), in the spec or manifest it writes.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

from .errors import UserError

ENV = "WHOLELOOP_NO_EGRESS"
_TRUE = ("1", "true", "yes", "on")
# where a provider's SDK sends requests when no base URL is given (its own variable first)
_DEFAULT_ENDPOINTS = {
    "anthropic": ("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
    "openai": ("OPENAI_BASE_URL", "https://api.openai.com/v1"),
}


class EgressForbidden(UserError):
    """Sending repository content to a model is forbidden here (machine or suite)."""


def forbidden_by(suite_setting: str | None = None, suite_source: str = "wholeloop.yaml") -> str | None:
    """Who forbids egress: the machine (the environment variable) or the suite; None when allowed."""
    if os.environ.get(ENV, "").strip().lower() in _TRUE:
        return f"this machine ({ENV}={os.environ[ENV]})"
    if suite_setting == "forbid":
        return f"this suite (egress: forbid in {suite_source})"
    return None


def check(feature: str, model: str, *, suite_setting: str | None = None, suite_source: str = "wholeloop.yaml") -> None:
    """Raise EgressForbidden, naming who forbids it and what to do, before anything is sent."""
    who = forbidden_by(suite_setting, suite_source)
    if who:
        raise EgressForbidden(
            f"{feature} would send repository content to {model}, and {who} forbids sending it to any model",
            f"run without {feature}" + (f", or unset {ENV}" if who.startswith("this machine") else ""),
        )


def endpoint_of(model: str, base_url: str | None = None) -> str:
    """Where requests for `model` go: the base URL given, else the provider's variable or default."""
    if base_url:
        return base_url
    provider = model.partition("/")[0]
    if provider in _DEFAULT_ENDPOINTS:
        var, default = _DEFAULT_ENDPOINTS[provider]
        return os.environ.get(var) or default
    return f"{provider}'s default endpoint (litellm)"


@dataclass
class Egress:
    """What one feature sends to one model: announced before, recorded after."""

    feature: str  # e.g. "--statement-model"
    model: str
    endpoint: str
    sent: list[str] = field(default_factory=list)  # what, in words: "the commit message of 3f2c1a9 (212 chars)"
    chars: int = 0
    digest: str = ""  # sha256 of every prompt sent, in order

    def add(self, what: str, text: str) -> None:
        self.sent.append(f"{what} ({len(text):,} chars)")
        self.chars += len(text)
        self.digest = hashlib.sha256((self.digest + hashlib.sha256(text.encode()).hexdigest()).encode()).hexdigest()

    def announce(self) -> str:
        return f"{self.feature}: sending to {self.model} at {self.endpoint}: " + "; ".join(self.sent)

    def record(self) -> dict:
        return {
            "feature": self.feature,
            "model": self.model,
            "endpoint": self.endpoint,
            "sent": list(self.sent),
            "chars": self.chars,
            "sha256": self.digest,
        }
