"""Whose failure it is: a sandbox error of the agent's turn (or of the visible tests run for
feedback between attempts) is judged by the engine's evidence, never by the exception's type alone
(docs/outcomes.md).

The agent's doing -- its processes got the container OOM-killed (`memory_limit`) or left it
unusable (`container_broken`) -- ends the turn with that stop reason and the attempt is graded;
the machine's (the container removed or stopped from outside, the engine gone or failing) goes up
as InfraError, for the unit to be retried.
"""

from __future__ import annotations

from sandbox import DiskLimitReached, InfraError, Limits, Sandbox, SandboxError, parse_size

from ..agents import Agent, AgentContext, AgentResult
from ..grading import Grade, feedback_text
from ..grading.feedback import FeedbackMode
from ..tasks import Task
from ..transcript import ErrorEvent, LimitHit, Stop, TranscriptWriter
from ..vocabulary import StopReason


def run_agent(agent: Agent, ctx: AgentContext, sb: Sandbox, limits: Limits) -> AgentResult:
    """The agent's turn. A full disk ends it as `disk_limit`, whether the agent stopped on the
    sandbox's DiskLimitReached (ours does), let it through (any agent), or ended otherwise with
    its disk still full. A container that failed under the agent is the agent's doing when the
    engine says so (`whose`: `memory_limit`, `container_broken`), and the attempt is graded;
    else the machine failed, and InfraError goes up to be retried."""
    try:
        result = agent.run(ctx)
    except DiskLimitReached as exc:
        ctx.transcript.write(LimitHit(limit=StopReason.disk_limit, value=exc.used, maximum=exc.limit))
        ctx.transcript.write(Stop(reason=StopReason.disk_limit, detail=str(exc)))
        return AgentResult(stop_reason=StopReason.disk_limit)
    except SandboxError as exc:  # let through by the agent (a script, a CLI's runner)
        result = AgentResult(stop_reason=StopReason.error, detail=f"{type(exc).__name__}: {exc}")
        reason = whose(sb, infra=isinstance(exc, InfraError))
        if reason is None:
            if isinstance(exc, InfraError):
                raise
            raise InfraError(result.detail) from exc
        return agents_doing(ctx, result, reason, limits)
    if (
        result.stop_reason == StopReason.infra_error and result.infra_retryable
    ):  # the agent caught the sandbox's InfraError
        reason = whose(sb, infra=True)
        if reason is not None:
            result.detail = (result.infra_error or "").removeprefix("infra_error: ")
            result.infra_error, result.infra_retryable = None, False
            return agents_doing(ctx, result, reason, limits)
    if (
        result.stop_reason not in (StopReason.disk_limit, StopReason.interrupted)
        and not result.infra_error
        and sb.limit_reached() == StopReason.disk_limit
    ):
        ctx.transcript.write(
            LimitHit(
                limit=StopReason.disk_limit, value=float(limits.disk_bytes or 0), maximum=float(limits.disk_bytes or 0)
            )
        )
        result.stop_reason = StopReason.disk_limit
    return result


def whose(sb: Sandbox, *, infra: bool) -> StopReason | None:
    """Whose failure a sandbox error of the agent's turn is, by the engine's evidence: the kernel
    OOM-killed the container -> "memory_limit"; it still runs and the engine answers, yet a
    command or file operation could not be done (not an engine error) -> "container_broken";
    None (the machine's) when it was removed or stopped from outside (PID 1 never exits and
    ignores every signal from inside), the engine is gone, or the engine itself failed."""
    try:
        state = sb.status()
    except SandboxError:
        return None
    if state.oom_killed:
        return StopReason.memory_limit
    if state.running and not infra:
        return StopReason.container_broken
    return None


def agents_doing(ctx: AgentContext, result: AgentResult, reason: StopReason, limits: Limits) -> AgentResult:
    """End the turn as the agent's doing (`reason`): the limit hit and the stop, in the transcript."""
    if reason == StopReason.memory_limit:
        ctx.transcript.write(
            LimitHit(limit=StopReason.memory_limit, value=0.0, maximum=float(parse_size(limits.memory) or 0))
        )
    ctx.transcript.write(Stop(reason=reason, detail=result.detail))
    result.stop_reason = reason
    return result


def next_feedback(
    mode: FeedbackMode, task: Task, grade_: Grade, report, sb: Sandbox | None, transcript: TranscriptWriter
) -> str:
    """What the next attempt hears, the visible tests run in the agent's (restarted) container.
    Visible tests that fill the disk, or that (the agent's code) get the container OOM-killed or
    leave it unusable, are the agent's: the feedback says so and the container is started again.
    The machine failing under them raises (SandboxError: the unit is retried). Without a container
    (it cannot start again) the feedback runs no tests."""
    try:
        return feedback_text(mode, task, grade_, report, sb)
    except DiskLimitReached as exc:  # the visible tests filled the disk: the next turn starts full
        return f"{feedback_text(mode, task, grade_, report, None)}\n({exc})".strip()
    except SandboxError as exc:  # the visible tests (the agent's code) broke its container, or the machine failed
        if sb is None:  # (no container, no tests run: not theirs)
            raise
        reason = whose(sb, infra=isinstance(exc, InfraError))
        if reason is None:
            raise
        said = {StopReason.memory_limit: "they exhausted the container's memory and the kernel stopped it"}.get(
            reason, "they left the container unusable"
        )
        feedback = (
            f"{feedback_text(mode, task, grade_, report, None)}\n(the visible tests "
            f"did not finish: {said}: {exc}; the container was started again)"
        ).strip()
        transcript.write(ErrorEvent(where="feedback", error_type=type(exc).__name__, message=str(exc)))
        sb.stop()
        sb.restart()
        return feedback


PHASES = {
    "image": "the image build",
    "container_start": "starting the agent's container",
    "agent": "the agent's turn",
    "patch": "taking the patch",
    "feedback": "the visible tests run for feedback",
}


def recurring_place(where: dict) -> str:
    """Where an infrastructure error happened, in words: "grading step 'run the hidden tests'",
    "the agent's turn (ContainerGone)"."""
    if where.get("phase") == "grading" and where.get("step"):
        return f"grading step {where['step']!r}"
    return f"{PHASES.get(where.get('phase', ''), where.get('phase') or '?')} ({where.get('error_type') or '?'})"
