"""Agents: what runs inside the task container and produces a patch.

An agent gets an `AgentContext` (the task, the sandbox, the transcript, its limits) and returns an
`AgentResult` saying why it stopped and what it cost. The runner does everything else (images,
containers, the patch, grading, records).

Kinds of agent, each one module with a `build(spec) -> Agent` and one line in `AGENT_KINDS`
(or an entry point in the "wholeloop.agents" group): `control` -- `gold` applies the task's
reference patch, `noop` does nothing, the controls every suite is checked with (gold must resolve
100 %, noop 0 %); `tool` -- wholeloop's own tool-calling loop on any model, shaped by an agent
config; `external` -- an agent CLI (Claude Code, Codex, aider, mini-swe-agent...) installed into its
own folder and run inside the container, every model call metered by wholeloop's proxy. An agent
config file names its kind (`kind:`, default `tool`).

An agent whose container must be arranged before it starts (mounts: an install folder, the
proxy's socket, a logs folder) is also a `ContainerAgent`; the runner asks it for a `Workspace`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import yaml
from pydantic import BaseModel, Field

from sandbox import Backend, Mount, Sandbox

from ..errors import UserError
from ..models.types import Usage
from ..registry import Registry, UnknownName
from ..tasks import Task
from ..transcript import TranscriptWriter
from ..vocabulary import StopReason
from .budget import Budget

CONTROL_NAMES = ("gold", "noop")

AGENT_KINDS = Registry(
    "wholeloop.agents",
    "agent kind",
    {
        "control": "harness.agents.controls:build",
        "tool": "harness.agents.loop:build",
        "external": "harness.agents.external:build",
    },
)
EXTERNAL_PREFIX = "external:"  # `--agent external:NAME` names a shipped external agent config


@dataclass
class Workspace:
    """What an agent arranged for its container before the container starts."""

    mounts: tuple[Mount, ...] = ()
    logs_dir: Path | None = None  # on the host: the agent's own logs, kept beside the transcript
    # Files the agent itself leaves in the repository (a CLI's history, caches), as ignore patterns:
    # the harness leaves them out of the patch. Declared here, on the host: nothing the agent writes
    # in its container (its .gitignore, .git/info/exclude) decides what its patch is.
    own_files: tuple[str, ...] = ()


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
    workspace: Workspace = field(default_factory=Workspace)  # what the agent arranged for this container
    # Told each step's number as it starts (the run's live display shows it); any agent may call it.
    on_step: Callable[[int], None] = field(default=lambda step: None)


@dataclass
class AgentResult:
    stop_reason: StopReason  # records keep it as a string (docs/outcomes.md)
    steps: int = 0
    model_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = 0.0
    model_s: float = 0.0
    tool_s: float = 0.0
    retry_wait_s: float = 0.0
    infra_error: str | None = None  # set when the attempt failed for reasons not the agent's
    infra_retryable: bool = False  # ...and another try may succeed (provider down, container died)
    task_error: str | None = None  # set when the task's own inputs are wrong (its gold patch does not apply)
    detail: str = ""  # why the turn ended, when the runner decided it (a memory limit, a broken container)

    @classmethod
    def from_budget(cls, budget: Budget, stop_reason: StopReason, **extra: Any) -> AgentResult:
        """The result of an attempt that spent `budget`."""
        return cls(
            stop_reason=stop_reason,
            steps=budget.steps,
            model_calls=budget.steps,
            usage=budget.usage,
            cost_usd=budget.cost if budget.cost_known else None,
            model_s=budget.model_s,
            tool_s=budget.tool_s,
            retry_wait_s=budget.wait_s,
            **extra,
        )


class AgentSpec(BaseModel):
    """The recipe of an agent: `build_agent(spec)` makes it again (on a Ray worker, say)."""

    name: str
    model: str | None = None
    config_path: str | None = None
    model_options: dict[str, Any] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)


class Agent(Protocol):
    name: str
    model: str | None
    spec: AgentSpec  # how to build this agent again

    def run(self, ctx: AgentContext) -> AgentResult: ...

    def describe(self) -> dict:
        """Everything about this agent a manifest needs to reproduce it."""
        ...


@runtime_checkable
class ContainerAgent(Protocol):
    """An agent that needs its container arranged before it starts (an external CLI)."""

    def check(self, *, allow_unknown_price: bool = False) -> list[str]:
        """Cheap checks before a run, nothing built or sent (credentials, the model's price): what
        is wrong, one line each; empty when nothing is."""
        ...

    def prepare(self, log: Callable[[str], None] | None = None, backend: Backend | None = None) -> None:
        """Get ready before any agent container starts (build an install, check it) on `backend`
        (the run's; default `harness.sandboxes.default_backend()`); raises with a clear message
        when that is impossible."""
        ...

    def workspace(self, task: Task, folder: Path, backend: Backend | None = None) -> AbstractContextManager[Workspace]:
        """The mounts for one unit's container on `backend`; `folder` is the unit's folder in the
        run (its transcript's), where the agent's own logs are kept. Cleaned up when the block ends."""
        ...


def prepare_agent(agent: Agent, log: Callable[[str], None] | None, backend: Backend) -> None:
    """Let an agent that needs it get ready on the run's backend (see ContainerAgent.prepare);
    others need nothing."""
    if isinstance(agent, ContainerAgent):
        agent.prepare(log, backend)


def agent_workspace(agent: Agent, task: Task, folder: Path, backend: Backend) -> AbstractContextManager[Workspace]:
    """The workspace of one unit's container on the run's backend: the agent's own, or nothing to arrange."""
    if isinstance(agent, ContainerAgent):
        return agent.workspace(task, folder, backend)
    return contextlib.nullcontext(Workspace())


class UnknownAgent(UserError):
    pass


def config_kind(config_path: str | None) -> str:
    """The `kind:` an agent config file declares (default: tool)."""
    if config_path is None:
        return "tool"
    try:
        data = yaml.safe_load(Path(config_path).read_text()) or {}
    except (OSError, yaml.YAMLError):
        return "tool"  # the kind's own loader reports what is wrong with the file
    kind = data.get("kind", "tool") if isinstance(data, dict) else "tool"
    return kind if isinstance(kind, str) else "tool"


def get_agent(
    name: str,
    *,
    model: str | None = None,
    config_path: str | None = None,
    model_options: dict | None = None,
    settings: dict | None = None,
) -> Agent:
    """`gold` / `noop`, or an agent of the kind its config says (`default`: the tool loop) on `model`."""
    spec = AgentSpec(
        name=name,
        model=model,
        config_path=None if config_path is None else str(config_path),
        model_options=dict(model_options or {}),
        settings=dict(settings or {}),
    )
    return build_agent(spec)


def build_agent(spec: AgentSpec) -> Agent:
    """The agent `spec` describes; raises UnknownAgent (or the kind's config error)."""
    if spec.name.startswith(EXTERNAL_PREFIX):  # a shipped external agent config, by name
        if spec.config_path is not None:
            raise UnknownAgent(
                f"--agent {spec.name} names a shipped config; drop --agent-config, or use --agent-config alone"
            )
        kind = "external"
    else:
        kind = "control" if spec.name in CONTROL_NAMES else config_kind(spec.config_path)
    try:
        build = AGENT_KINDS.get(kind)
    except UnknownName as exc:
        raise UnknownAgent(f"{spec.config_path}: {exc}") from None
    agent = build(spec)
    agent.spec = spec
    return agent
