"""The tool-calling agent: ask the model, run the tools it calls, repeat until it stops.

Three rules keep it small and honest:
- limits are checked in one place (`_check_limits`), before every model call;
- sandbox and tool errors become tool errors the model sees in one place (`_run_tool`), except
  infrastructure errors, which end the attempt as infra_error (not the agent's failure);
- stopping is an exception that carries its reason, so every transcript ends saying why.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field

from sandbox import InfraError, REPO_DIR, SandboxError

from ..models import ContextLengthExceeded, Model, ModelError, ReplayExhausted, ToolCall, Turn, Usage
from ..tools import Toolbox, ToolFailure, ToolOutput
from ..transcript import LimitHit, ModelRequest, ModelResponse, Retry, Stop, TestRun, ToolCallEvent, ToolResultEvent
from . import AgentContext, AgentResult
from .config import AgentConfig

# Model errors that say the *setup* is wrong or the provider is down: not the agent's failure.
_INFRA_MODEL_ERRORS = ("AuthError", "NotFound", "ModelUnavailable", "ModelConfigError", "BadRequest")


class StopAgent(Exception):
    def __init__(self, reason: str, detail: str = "", *, infra: bool = False, retryable: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.detail, self.infra, self.retryable = reason, detail, infra, retryable


@dataclass
class _State:
    started: float = field(default_factory=time.monotonic)
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    cost_known: bool = True
    model_s: float = 0.0
    tool_s: float = 0.0
    wait_s: float = 0.0
    sent: int = 0  # messages already logged in a model_request event

    def working_s(self) -> float:
        return time.monotonic() - self.started - self.wait_s


class ToolAgent:
    """Our own agent: any `Model`, the tools and prompts of an `AgentConfig`."""

    def __init__(self, model: Model, config: AgentConfig) -> None:
        self.model_obj, self.config = model, config
        self.name, self.model = config.name, model.name

    def describe(self) -> dict:
        return {"agent": self.name, "model": self.model, "provider": getattr(self.model_obj, "provider", ""),
                "base_url": getattr(self.model_obj, "base_url", None), "config": self.config.describe()}

    def run(self, ctx: AgentContext) -> AgentResult:
        # One agent serves every task of a run, in parallel: all per-attempt state lives in
        # `state`, `ctx.messages` and the per-task model (a replay of that task's recording).
        state, tools = _State(), Toolbox(ctx.sandbox, ctx.task, output_chars=self.config.output_chars,
                                         enabled=self.config.tools)
        try:
            model = self.model_obj.for_task(ctx.task.id) if hasattr(self.model_obj, "for_task") else self.model_obj
        except ModelError as exc:  # e.g. no recording for this task: the setup's fault, not the agent's
            ctx.transcript.write(Stop(reason="model_error", detail=str(exc)))
            return AgentResult(stop_reason="model_error", infra_error=f"model_error: {exc}")
        if not ctx.messages:
            values = {"repo_dir": REPO_DIR, "problem_statement": ctx.task.problem_statement,
                      "test_command": ctx.task.test_command, "task_id": ctx.task.id}
            ctx.messages += [{"role": "system", "content": self.config.render(self.config.system_prompt, **values)},
                             {"role": "user", "content": self.config.render(self.config.instance_prompt, **values)}]
        elif ctx.feedback:  # a later attempt continues the same conversation
            ctx.messages.append({"role": "user", "content": ctx.feedback})
        try:
            while True:
                self._check_limits(state, ctx)
                turn = self._ask(model, state, ctx)
                if not turn.tool_calls:
                    raise StopAgent("no_tool_call", "the model answered without calling a tool")
                for call in turn.tool_calls:
                    if self._run_tool(call, tools, state, ctx).stop:
                        raise StopAgent("submitted")
        except StopAgent as stop:
            ctx.transcript.write(Stop(reason=stop.reason, detail=stop.detail))
            return AgentResult(
                stop_reason=stop.reason, steps=state.steps, model_calls=state.steps,
                usage=state.usage, cost_usd=state.cost if state.cost_known else None,
                model_s=state.model_s, tool_s=state.tool_s, retry_wait_s=state.wait_s,
                infra_error=f"{stop.reason}: {stop.detail}" if stop.infra else None, infra_retryable=stop.retryable,
            )

    # ------------------------------------------------------------------ the one place for limits

    def _check_limits(self, state: _State, ctx: AgentContext) -> None:
        if ctx.cancel.is_set():
            raise StopAgent("interrupted", "the run is being stopped; this attempt will be redone on resume")
        lim = self.config.limits
        wall = min(lim.max_wall_s, ctx.deadline_s or lim.max_wall_s)
        checks = [
            ("step_limit", state.steps, lim.max_steps),
            ("time_limit", state.working_s(), wall),
            ("token_limit", state.usage.input_tokens, lim.max_input_tokens),
            ("token_limit", state.usage.output_tokens, lim.max_output_tokens),
        ]
        if lim.max_cost_usd is not None and state.cost_known:
            checks.append(("cost_limit", state.cost, lim.max_cost_usd))
        for reason, value, maximum in checks:
            if value >= maximum:
                ctx.transcript.write(LimitHit(limit=reason, value=round(value, 6), maximum=maximum))
                raise StopAgent(reason, f"{value:g} reached the limit of {maximum:g}")

    # ------------------------------------------------------------------ model

    def _ask(self, model: Model, state: _State, ctx: AgentContext) -> Turn:
        state.steps += 1
        digest = hashlib.sha256(json.dumps(ctx.messages, sort_keys=True, default=str).encode()).hexdigest()[:16]
        ctx.transcript.write(ModelRequest(step=state.steps, messages_hash=digest, new_messages=ctx.messages[state.sent:]))
        state.sent = len(ctx.messages)
        try:
            turn = model.complete(ctx.messages, self.config.tool_schemas(), self.config.settings)
        except ModelError as exc:
            for event in getattr(exc, "retries", []) or []:
                ctx.transcript.write(Retry(step=state.steps, **event.model_dump()))
            name = type(exc).__name__
            if isinstance(exc, ContextLengthExceeded):
                raise StopAgent("context_length", str(exc)) from exc
            if isinstance(exc, ReplayExhausted):
                raise StopAgent("model_error", str(exc)) from exc
            # A bad key or model name will not get better; a provider that kept failing might.
            retryable = exc.retryable or name == "ModelUnavailable"
            raise StopAgent("model_error", f"{name}: {exc}", infra=name in _INFRA_MODEL_ERRORS or retryable,
                            retryable=retryable) from exc
        for event in turn.retries:
            ctx.transcript.write(Retry(step=state.steps, **event.model_dump()))
        state.usage += turn.usage
        state.model_s += turn.latency_s
        state.wait_s += turn.retry_wait_s
        if turn.cost_usd is None:
            state.cost_known = False
        else:
            state.cost += turn.cost_usd
        ctx.transcript.write(ModelResponse(
            step=state.steps, text=turn.text, tool_calls=[c.model_dump() for c in turn.tool_calls],
            stop_reason=turn.stop_reason, usage=turn.usage.model_dump(), cost_usd=turn.cost_usd,
            latency_s=round(turn.latency_s, 3), retry_wait_s=round(turn.retry_wait_s, 3), model=turn.model,
        ))
        ctx.messages.append(turn.to_message())
        return turn

    # ------------------------------------------------------------------ the one place tool errors are translated

    def _run_tool(self, call: ToolCall, tools: Toolbox, state: _State, ctx: AgentContext) -> ToolOutput:
        ctx.transcript.write(ToolCallEvent(step=state.steps, call_id=call.id, name=call.name,
                                           arguments=call.arguments, raw_arguments=call.raw_arguments))
        started = time.monotonic()
        try:
            if call.parse_error:
                raise ToolFailure(f"your arguments for {call.name} were not usable: {call.parse_error}; "
                                  "send a JSON object matching the tool's schema")
            out = tools.call(call.name, call.arguments or {})
        except ToolFailure as exc:
            out = ToolOutput(f"error: {exc}", is_error=True)
        except InfraError as exc:  # the container or engine died: not the agent's doing
            raise StopAgent("infra_error", f"{type(exc).__name__}: {exc}", infra=True, retryable=True) from exc
        except SandboxError as exc:
            out = ToolOutput(f"error: {exc}", is_error=True)
        out.duration_s = time.monotonic() - started
        state.tool_s += out.duration_s
        ctx.transcript.write(ToolResultEvent(
            step=state.steps, call_id=call.id, name=call.name, output=out.content, is_error=out.is_error,
            exit_code=out.exit_code, truncated=out.truncated, timed_out=out.timed_out, duration_s=round(out.duration_s, 3),
        ))
        if out.test:
            t = out.test
            ctx.transcript.write(TestRun(step=state.steps, command=t.command, exit_code=t.exit_code, passed=t.passed,
                                         failed=t.failed, errors=t.errors, failing=t.failing, green=t.green))
        ctx.messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name,
                              "content": out.content, "is_error": out.is_error})
        return out
