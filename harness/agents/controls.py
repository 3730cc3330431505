"""The control agents: `gold` (the reference patch) and `noop` (nothing)."""

from __future__ import annotations

import time

from ..transcript import Stop, ToolCallEvent, ToolResultEvent
from ..vocabulary import StopReason
from . import AgentContext, AgentResult, AgentSpec, UnknownAgent

GOLD_PATH = "/tmp/wholeloop-gold.diff"


class GoldAgent:
    """Applies the task's reference patch, as an agent would by editing files."""

    name = "gold"
    model = None

    def run(self, ctx: AgentContext) -> AgentResult:
        patch = ctx.task.gold()
        if not patch.strip():
            ctx.transcript.write(Stop(reason=StopReason.no_gold_patch, detail="the task has no gold patch"))
            return AgentResult(stop_reason=StopReason.no_gold_patch)
        started = time.monotonic()
        ctx.sandbox.write_file(GOLD_PATH, patch if patch.endswith("\n") else patch + "\n")
        cmd = f"git apply --binary --whitespace=nowarn {GOLD_PATH} && rm -f {GOLD_PATH}"
        ctx.transcript.write(ToolCallEvent(step=1, call_id="gold-1", name="bash", arguments={"command": cmd}))
        result = ctx.sandbox.exec(cmd)
        ctx.transcript.write(
            ToolResultEvent(
                step=1,
                call_id="gold-1",
                name="bash",
                output=result.combined(),
                is_error=not result.ok,
                exit_code=result.returncode,
                duration_s=result.duration_s,
            )
        )
        reason = StopReason.submitted if result.ok else StopReason.gold_patch_failed
        why = (
            None
            if result.ok
            else (
                "the task's gold patch does not apply to its base commit: "
                + (result.combined().strip().splitlines() or ["git apply failed"])[-1]
            )
        )
        ctx.transcript.write(Stop(reason=reason, detail=why or ""))
        return AgentResult(stop_reason=reason, steps=1, tool_s=time.monotonic() - started, task_error=why)

    def describe(self) -> dict:
        return {"agent": self.name}


class NoopAgent:
    """Changes nothing: every task must end unresolved (empty_patch)."""

    name = "noop"
    model = None

    def run(self, ctx: AgentContext) -> AgentResult:
        ctx.transcript.write(Stop(reason=StopReason.noop, detail="the noop control makes no change"))
        return AgentResult(stop_reason=StopReason.noop)

    def describe(self) -> dict:
        return {"agent": self.name}


CONTROLS = {"gold": GoldAgent, "noop": NoopAgent}


def build(spec: AgentSpec):
    """The control named by `spec` (the `control` agent kind)."""
    if spec.model:
        raise UnknownAgent(f"the {spec.name} control uses no model; drop --model or use --agent default")
    return CONTROLS[spec.name]()
