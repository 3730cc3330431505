"""The tool-calling agent: ask the model, run the tools it calls, repeat until it stops.

Three rules keep it small and honest:
- limits are checked in one place, the attempt's `Budget`, before every model call;
- sandbox and tool errors become tool errors the model sees in one place (`_run_tool`), except
  infrastructure errors, which end the turn as infra_error (the runner then asks the engine whose
  it was: an OOM-killed container is the agent's `memory_limit`), and a full disk, which ends it
  as disk_limit;
- stopping is an exception (`AgentStopped`) that carries its reason, so every transcript ends
  saying why.
"""

from __future__ import annotations

import hashlib
import json
import time

from sandbox import REPO_DIR, DiskLimitReached, InfraError, SandboxError

from ..models import ContextLengthExceeded, Model, ModelError, ModelUnavailable, ReplayExhausted, ToolCall, Turn
from ..transcript import (
    LimitHit,
    ModelRequest,
    ModelResponse,
    ModelRetry,
    Stop,
    TestRun,
    ToolCallEvent,
    ToolResultEvent,
)
from ..vocabulary import StopReason
from . import AgentContext, AgentResult, AgentSpec, UnknownAgent
from .budget import AgentStopped, Budget, LimitReached
from .config import AgentConfig
from .provider import Call, attribute
from .tools import Toolbox, ToolFailure, ToolOutput


class ToolAgent:
    """Our own agent: any `Model`, the tools and prompts of an `AgentConfig`."""

    def __init__(self, model: Model, config: AgentConfig) -> None:
        self.model_obj, self.config = model, config
        self.name, self.model = config.name, model.name

    def describe(self) -> dict:
        return {
            "agent": self.name,
            "model": self.model,
            "provider": self.model_obj.provider,
            "base_url": self.model_obj.base_url,
            "config": self.config.describe(),
        }

    def run(self, ctx: AgentContext) -> AgentResult:
        # One agent serves every task of a run, in parallel: all per-attempt state lives in the
        # budget, `ctx.messages` and the per-task model (a replay of that task's recording).
        budget = Budget(self.config.limits, deadline_s=ctx.deadline_s)
        tools = Toolbox(ctx.sandbox, ctx.task, output_chars=self.config.output_chars, enabled=self.config.tools)
        sent = [0]  # messages already logged in a model_request event
        try:
            model = self.model_obj.for_task(ctx.task.id)
        except ModelError as exc:  # e.g. no recording for this task: the setup's fault, not the agent's
            ctx.transcript.write(Stop(reason=StopReason.model_error, detail=str(exc)))
            return AgentResult(stop_reason=StopReason.model_error, infra_error=f"model_error: {exc}")
        if not ctx.messages:
            values = {
                "repo_dir": REPO_DIR,
                "problem_statement": ctx.task.problem_statement,
                "test_command": ctx.task.test_command,
                "task_id": ctx.task.id,
            }
            ctx.messages += [
                {"role": "system", "content": self.config.render(self.config.system_prompt, **values)},
                {"role": "user", "content": self.config.render(self.config.instance_prompt, **values)},
            ]
        elif ctx.feedback:  # a later attempt continues the same conversation
            ctx.messages.append({"role": "user", "content": ctx.feedback})
        try:
            while True:
                if ctx.cancel.is_set():
                    raise AgentStopped(
                        StopReason.interrupted, "the run is being stopped; this attempt will be redone on resume"
                    )
                try:
                    budget.check()
                except LimitReached as hit:
                    ctx.transcript.write(LimitHit(limit=hit.reason, value=hit.value, maximum=hit.maximum))
                    raise
                turn = self._ask(model, budget, sent, ctx)
                if not turn.tool_calls:
                    raise AgentStopped(StopReason.no_tool_call, "the model answered without calling a tool")
                for call in turn.tool_calls:
                    if self._run_tool(call, tools, budget, ctx).stop:
                        raise AgentStopped(StopReason.submitted)
        except AgentStopped as stop:
            ctx.transcript.write(Stop(reason=stop.reason, detail=stop.detail))
            return AgentResult.from_budget(
                budget,
                stop.reason,
                infra_error=f"{stop.reason}: {stop.detail}" if stop.infra else None,
                infra_retryable=stop.rerun,
            )

    # ------------------------------------------------------------------ model

    def _ask(self, model: Model, budget: Budget, sent: list[int], ctx: AgentContext) -> Turn:
        step = budget.start_call()
        ctx.on_step(step)
        digest = hashlib.sha256(json.dumps(ctx.messages, sort_keys=True, default=str).encode()).hexdigest()[:16]
        ctx.transcript.write(ModelRequest(step=step, messages_hash=digest, new_messages=ctx.messages[sent[0] :]))
        sent[0] = len(ctx.messages)
        try:
            turn = model.complete(ctx.messages, self.config.tool_schemas(), self.config.settings)
        except ModelError as exc:
            for event in exc.retries:
                ctx.transcript.write(ModelRetry(step=step, **event.model_dump()))
            if isinstance(exc, ContextLengthExceeded):
                raise AgentStopped(StopReason.context_length, str(exc)) from exc
            if isinstance(exc, ReplayExhausted):
                raise AgentStopped(StopReason.model_error, str(exc)) from exc
            status = exc.status_code or (0 if exc.retryable or isinstance(exc, ModelUnavailable) else None)
            if status is None:  # not the provider's answer (a setting the adapter refused): the setup's
                raise AgentStopped(
                    StopReason.model_error, f"{type(exc).__name__}: {exc}", infra=exc.infra, rerun=exc.rerun
                ) from exc
            # Whose it is: the one rule (harness.agents.provider), as for external CLIs. A request
            # was accepted before when the conversation already has an answer of the model's.
            accepted = any(m.get("role") == "assistant" for m in ctx.messages)
            said = attribute(
                [
                    *([Call(200, self.model)] if accepted else []),
                    Call(status, self.model, f"{type(exc).__name__}: {exc}"),
                ],
                self.model,
            )
            assert said is not None  # (the last call failed: it always attributes)
            raise AgentStopped(said.reason, said.detail, infra=said.infra, rerun=said.retryable) from exc
        for event in turn.retries:
            ctx.transcript.write(ModelRetry(step=step, **event.model_dump()))
        budget.charge(turn.usage, turn.cost_usd, turn.latency_s, turn.retry_wait_s)
        waited = budget.provider_wait_over()
        if waited is not None:  # the provider kept failing: the hard outer cap on waiting for it
            said = attribute([], self.model, waited_out=waited)
            assert said is not None
            raise AgentStopped(said.reason, said.detail, infra=True, rerun=True)
        ctx.transcript.write(
            ModelResponse(
                step=step,
                text=turn.text,
                tool_calls=[c.model_dump() for c in turn.tool_calls],
                stop_reason=turn.stop_reason,
                usage=turn.usage.model_dump(),
                cost_usd=turn.cost_usd,
                latency_s=round(turn.latency_s, 3),
                retry_wait_s=round(turn.retry_wait_s, 3),
                model=turn.model,
            )
        )
        ctx.messages.append(turn.to_message())
        return turn

    # ------------------------------------------------------------------ the one place tool errors are translated

    def _run_tool(self, call: ToolCall, tools: Toolbox, budget: Budget, ctx: AgentContext) -> ToolOutput:
        step = budget.steps
        ctx.transcript.write(
            ToolCallEvent(
                step=step, call_id=call.id, name=call.name, arguments=call.arguments, raw_arguments=call.raw_arguments
            )
        )
        started = time.monotonic()
        full: DiskLimitReached | None = None
        try:
            if call.parse_error:
                raise ToolFailure(
                    f"your arguments for {call.name} were not usable: {call.parse_error}; "
                    "send a JSON object matching the tool's schema"
                )
            out = tools.call(call.name, call.arguments or {})
        except ToolFailure as exc:
            out = ToolOutput(f"error: {exc}", is_error=True)
        except InfraError as exc:  # the container or engine died: not the agent's doing
            raise AgentStopped(StopReason.infra_error, f"{type(exc).__name__}: {exc}", infra=True, rerun=True) from exc
        except DiskLimitReached as exc:  # the agent filled its disk: what ran is recorded, then the attempt ends
            full, done = exc, exc.result
            out = ToolOutput(
                f"exit code {done.returncode}\n{done.combined()}" if done else f"error: {exc}",
                is_error=True,
                exit_code=done.returncode if done else None,
                truncated=bool(done and done.truncated),
            )
        except SandboxError as exc:
            out = ToolOutput(f"error: {exc}", is_error=True)
        out.duration_s = time.monotonic() - started
        budget.charge_tool(out.duration_s)
        ctx.transcript.write(
            ToolResultEvent(
                step=step,
                call_id=call.id,
                name=call.name,
                output=out.content,
                is_error=out.is_error,
                exit_code=out.exit_code,
                truncated=out.truncated,
                timed_out=out.timed_out,
                duration_s=round(out.duration_s, 3),
                kind="test" if out.test else "",  # a red test run is a red run, not a tool error (recovery)
            )
        )
        if out.test:
            t = out.test
            ctx.transcript.write(
                TestRun(
                    step=step,
                    command=t.command,
                    exit_code=t.exit_code,
                    passed=t.passed,
                    failed=t.failed,
                    errors=t.errors,
                    failing=t.failing,
                    green=t.green,
                )
            )
        ctx.messages.append(
            {
                "role": "tool",
                "tool_call_id": call.id,
                "name": call.name,
                "content": out.content,
                "is_error": out.is_error,
            }
        )
        if full is not None:
            ctx.transcript.write(LimitHit(limit=StopReason.disk_limit, value=full.used, maximum=full.limit))
            raise AgentStopped(StopReason.disk_limit, str(full))
        return out


def build(spec: AgentSpec) -> ToolAgent:
    """The tool-calling agent of `spec` (the `tool` agent kind): its config on its model."""
    if spec.name != "default" and spec.config_path is None:
        raise UnknownAgent(f"unknown agent {spec.name!r}; choose gold, noop or default (or give --agent-config FILE)")
    if not spec.model:
        raise UnknownAgent(
            f"the {spec.name} agent needs a model: --model anthropic/<id>, openai/<id>, "
            "litellm/<provider>/<id> or replay:<recording>"
        )
    from ..models import get_model
    from .config import load_agent_config

    config = load_agent_config(spec.config_path, **spec.settings)
    return ToolAgent(get_model(spec.model, **spec.model_options), config)
