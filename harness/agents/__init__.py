"""Agents: what runs inside the task container and produces a patch.

An agent gets an `AgentContext` (the task, the sandbox, the transcript, its limits) and returns an
`AgentResult` saying why it stopped and what it cost. The runner does everything else (images,
containers, the patch, grading, records).

Built in: `gold` applies the task's reference patch and `noop` does nothing -- the controls every
suite is checked with (gold must resolve 100 %, noop 0 %).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from sandbox import Sandbox

from ..records import Usage
from ..tasks import Task
from ..transcript import TranscriptWriter


@dataclass
class AgentContext:
    task: Task
    sandbox: Sandbox
    transcript: TranscriptWriter
    attempt: int = 1
    feedback: str | None = None  # what the previous attempt's grade said, if anything
    deadline_s: float | None = None  # wall time left for this attempt's agent phase


@dataclass
class AgentResult:
    stop_reason: str
    steps: int = 0
    model_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = 0.0
    model_s: float = 0.0
    tool_s: float = 0.0
    retry_wait_s: float = 0.0
    infra_error: str | None = None  # set when the attempt failed for reasons not the agent's


class Agent(Protocol):
    name: str
    model: str | None

    def run(self, ctx: AgentContext) -> AgentResult: ...

    def describe(self) -> dict:
        """Everything about this agent a manifest needs to reproduce it."""
        ...


class UnknownAgent(ValueError):
    pass


def get_agent(name: str, **options) -> Agent:
    from .controls import CONTROLS

    if name in CONTROLS:
        return CONTROLS[name]()
    raise UnknownAgent(f"unknown agent {name!r}; choose one of: {', '.join(sorted(CONTROLS))}")
