"""An attempt's budget: its limits (steps, wall time, tokens, cost) and what it has spent.

Any agent uses it, the built-in tool loop and an external CLI behind the metering proxy alike, so
every configuration is held to the same limits and its spend is counted the same way. Working
time and waiting time are kept apart: waiting on a provider's rate limits is not the agent's time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from ..models.types import Usage
from ..vocabulary import StopReason

#: After a call the provider failed, the agent's clock pauses until its next call, but for at most
#: this long (a CLI's back-off): an agent cannot work on a paused clock by not calling again.
MAX_BACKOFF_S = 120.0


class AgentLimits(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_steps: int = Field(40, gt=0, description="model calls")
    max_wall_s: float = Field(1800, gt=0, description="agent time, not counting waits on rate limits")
    max_input_tokens: int = Field(3_000_000, gt=0)
    max_output_tokens: int = Field(200_000, gt=0)
    max_cost_usd: float | None = Field(5.0, gt=0, description="unchecked when the model's price is unknown")
    max_provider_wait_s: float = Field(
        1800,
        gt=0,
        description="waiting on a failing provider (rate limits, outages) is not agent time, up to this "
        "much in all; past it the attempt ends as the machine's (infra_error)",
    )


class AgentStopped(Exception):
    """The attempt's agent phase ends; `reason` says why (every transcript ends saying it)."""

    def __init__(self, reason: StopReason, detail: str = "", *, infra: bool = False, rerun: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.detail = reason, detail
        self.infra = infra  # not the agent's failure (the setup or the provider)
        self.rerun = rerun  # ...and a later try of the unit may succeed


class LimitReached(AgentStopped):
    """A limit of the budget was reached: reason is step_limit, time_limit, token_limit or cost_limit."""

    def __init__(self, reason: StopReason, value: float, maximum: float) -> None:
        super().__init__(reason, f"{value:g} reached the limit of {maximum:g}")
        self.value, self.maximum = value, maximum


@dataclass
class Budget:
    """Limits and spend of one attempt. `deadline_s` (the task's agent timeout) caps max_wall_s."""

    limits: AgentLimits = field(default_factory=AgentLimits)
    deadline_s: float | None = None
    started: float = field(default_factory=time.monotonic)
    steps: int = 0  # model calls made
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    cost_known: bool = True  # False once a call's price was unknown: cost is then "unknown"
    model_s: float = 0.0  # time in model calls, retry waits excluded
    tool_s: float = 0.0  # time running tools
    wait_s: float = 0.0  # waiting on retries (rate limits, overloads)
    waiting_since: float | None = None  # a wait on a failing provider that is still going on (ProviderClock)

    @property
    def wall_limit_s(self) -> float:
        return min(self.limits.max_wall_s, self.deadline_s or self.limits.max_wall_s)

    def working_s(self) -> float:
        return time.monotonic() - self.started - self.provider_wait_s()

    def provider_wait_s(self) -> float:
        """Time spent waiting on the provider (retries, rate limits, outages), the open wait included."""
        since = self.waiting_since
        return self.wait_s + (min(max(time.monotonic() - since, 0.0), MAX_BACKOFF_S) if since is not None else 0.0)

    def provider_wait_over(self) -> float | None:
        """The time waited on the provider when it reached `max_provider_wait_s`, else None."""
        waited = self.provider_wait_s()
        return waited if waited >= self.limits.max_provider_wait_s else None

    def check(self) -> None:
        """Raise LimitReached if any limit is reached (called before every model call)."""
        lim = self.limits
        checks = [
            (StopReason.step_limit, self.steps, lim.max_steps),
            (StopReason.time_limit, self.working_s(), self.wall_limit_s),
            (StopReason.token_limit, self.usage.input_tokens, lim.max_input_tokens),
            (StopReason.token_limit, self.usage.output_tokens, lim.max_output_tokens),
        ]
        if lim.max_cost_usd is not None and self.cost_known:
            checks.append((StopReason.cost_limit, self.cost, lim.max_cost_usd))
        for reason, value, maximum in checks:
            if value >= maximum:
                raise LimitReached(reason, round(value, 6), maximum)

    def start_call(self) -> int:
        """Count a model call; returns its step number."""
        self.steps += 1
        return self.steps

    def charge(self, usage: Usage, cost_usd: float | None, latency_s: float, retry_wait_s: float = 0.0) -> None:
        """Add one model call's spend."""
        self.usage += usage
        self.model_s += latency_s
        self.wait_s += retry_wait_s
        if cost_usd is None:
            self.cost_known = False
        else:
            self.cost += cost_usd

    def charge_tool(self, seconds: float) -> None:
        self.tool_s += seconds

    def output_tokens_left(self) -> int:
        """Output tokens the attempt may still spend (a proxy clamps max_tokens to this)."""
        return max(self.limits.max_output_tokens - self.usage.output_tokens, 0)
