"""Agents: what runs inside the task container and produces a patch.

An agent gets an `AgentContext` (the task, the sandbox, the transcript, its limits) and returns an
`AgentResult` saying why it stopped and what it cost. The runner does everything else (images,
containers, the patch, grading, records).

Built in: `gold` applies the task's reference patch and `noop` does nothing -- the controls every
suite is checked with (gold must resolve 100 %, noop 0 %).
"""

from __future__ import annotations

import threading
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
    # The conversation of this (task, repeat), owned by the runner: a later attempt continues it.
    messages: list = field(default_factory=list)
    # Set when the run is being stopped (Ctrl-C): the agent ends with stop_reason "interrupted",
    # and the attempt is not recorded, so a resumed run does it again.
    cancel: threading.Event = field(default_factory=threading.Event)


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
    infra_retryable: bool = False  # ...and another try may succeed (provider down, container died)


class Agent(Protocol):
    name: str
    model: str | None

    def run(self, ctx: AgentContext) -> AgentResult: ...

    def describe(self) -> dict:
        """Everything about this agent a manifest needs to reproduce it."""
        ...


class UnknownAgent(ValueError):
    pass


def get_agent(name: str, *, model: str | None = None, config_path: str | None = None,
              model_options: dict | None = None, settings: dict | None = None) -> Agent:
    """`gold` / `noop`, or a tool-calling agent (`default`, or the config file's) on `model`.

    The agent keeps its recipe as `agent.spec`: `get_agent(**agent.spec)` builds it again (the
    Ray executor rebuilds it on each worker that way)."""
    agent = _build_agent(name, model=model, config_path=config_path, model_options=model_options, settings=settings)
    agent.spec = {"name": name, "model": model, "config_path": None if config_path is None else str(config_path),
                  "model_options": dict(model_options or {}), "settings": dict(settings or {})}
    return agent


def _build_agent(name: str, *, model: str | None, config_path: str | None, model_options: dict | None,
                 settings: dict | None) -> Agent:
    from .controls import CONTROLS

    if name in CONTROLS:
        if model:
            raise UnknownAgent(f"the {name} control uses no model; drop --model or use --agent default")
        return CONTROLS[name]()
    if name != "default" and config_path is None:
        raise UnknownAgent(f"unknown agent {name!r}; choose gold, noop or default (or give --agent-config FILE)")
    if not model:
        raise UnknownAgent(f"the {name} agent needs a model: --model anthropic/<id>, openai/<id>, "
                           "litellm/<provider>/<id> or replay:<recording>")
    from ..models import get_model
    from .config import load_agent_config
    from .loop import ToolAgent

    config = load_agent_config(config_path, **(settings or {}))
    return ToolAgent(get_model(model, **(model_options or {})), config)
