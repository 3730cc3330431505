"""`wholeloop export inspect RUN`: the run as an Inspect AI eval log (`inspect view` shows it,
`inspect_ai.log.read_eval_log` reads it).

The log is built with inspect_ai's own types and written by its own `write_eval_log`, so what it
holds is what Inspect reads. The mapping:

- one sample per (task, configuration, repeat): `id` the task id, `epoch` the repeat + 1 (Inspect
  counts epochs from 1), `input` the problem statement, `target` the FAIL_TO_PASS test ids;
- `messages`: every attempt's conversation in order, from the transcript: the system and user
  prompts and the feedback between attempts (user), each model turn (assistant, with its tool
  calls), each tool result (tool, `error` set for a tool error);
- `scores["hidden_tests"]`: 1 when the final attempt resolved the task, 0 otherwise, `answer` the
  outcome, `explanation` the failing tests; an `infra_error` unit has no score and an `error`
  (it is not the agent's failure, as in every wholeloop figure);
- `scores["acceptance"]`: 1 when the final attempt is accepted under the default acceptance policy,
  0 otherwise, `answer` the verdict, `explanation` why not, `metadata` the axes grading recorded
  (docs/acceptance.md); absent for a unit graded before the axes existed (not measured, never 0)
  and for an `infra_error`;
- `model_usage`: the tokens (and cost) of all its attempts; the log's `stats.model_usage` sums them;
- `results`: accuracy (resolved / scored units) and its standard error over the scored units;
- `eval.metadata` / `sample.metadata`: what Inspect has no field for (the run folder, config,
  outcome, stop reason, per-phase seconds, paths of the transcript and patch).

inspect_ai is an optional extra (`pip install 'wholeloop[inspect]'`); only this module imports it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import __version__
from ..records import ResultRow, open_run
from ..transcript import read_transcript
from ..vocabulary import Outcome
from .acceptance import judge, tell
from .attempt import fail_to_pass, failing_tests, problem_statement

SCORER = "hidden_tests"
ACCEPTANCE_SCORER = "acceptance"


class InspectMissing(ImportError):
    hint = "pip install 'wholeloop[inspect]' (bash scripts/setup.sh installs it)"


def _inspect():
    try:
        import inspect_ai  # noqa: F401
    except ImportError as exc:
        raise InspectMissing(f"the Inspect export needs inspect_ai, which is not installed: {exc}") from None
    from inspect_ai import log, model, scorer, tool
    from inspect_ai._util.error import EvalError

    return log, model, scorer, tool, EvalError


def _messages(events: list, model_api: Any, tool_api: Any) -> list:
    """The conversation of a unit's transcript, every attempt in order, as Inspect chat messages."""
    out: list = []
    for event in events:
        if event.type == "model_request":
            for message in event.new_messages:  # prompts and feedback; the agent's own turns come below
                role, text = message.get("role"), str(message.get("content", ""))
                if role == "system":
                    out.append(model_api.ChatMessageSystem(content=text))
                elif role == "user":
                    out.append(model_api.ChatMessageUser(content=text))
        elif event.type == "model_response":
            calls = [
                tool_api.ToolCall(
                    id=c.get("id", ""),
                    function=c.get("name", ""),
                    arguments=c.get("arguments") if isinstance(c.get("arguments"), dict) else {},
                    parse_error=c.get("parse_error"),
                )
                for c in event.tool_calls
            ]
            out.append(
                model_api.ChatMessageAssistant(
                    content=event.text or "", tool_calls=calls or None, model=event.model or None
                )
            )
        elif event.type == "tool_result":
            error = tool_api.ToolCallError("unknown", event.output[:2000]) if event.is_error else None
            out.append(
                model_api.ChatMessageTool(
                    content=event.output, tool_call_id=event.call_id, function=event.name, error=error
                )
            )
    return out


def _usage(rows: list[ResultRow], model_api: Any):
    u = [r.usage for r in rows]
    costs = [r.cost_usd for r in rows]
    known_costs = [c for c in costs if c is not None]
    tin, tout = sum(x.input_tokens for x in u), sum(x.output_tokens for x in u)
    return model_api.ModelUsage(
        input_tokens=tin,
        output_tokens=tout,
        total_tokens=tin + tout,
        input_tokens_cache_read=sum(x.cache_read_tokens for x in u) or None,
        input_tokens_cache_write=sum(x.cache_write_tokens for x in u) or None,
        reasoning_tokens=sum(x.reasoning_tokens for x in u) or None,
        total_cost=None if len(known_costs) < len(costs) else float(sum(known_costs)),
    )


def _add_usage(total: dict, name: str, usage: Any, model_api: Any) -> None:
    if name not in total:
        total[name] = usage.model_copy()
        return
    t = total[name]
    t.input_tokens += usage.input_tokens
    t.output_tokens += usage.output_tokens
    t.total_tokens += usage.total_tokens
    t.input_tokens_cache_read = (t.input_tokens_cache_read or 0) + (usage.input_tokens_cache_read or 0) or None
    t.input_tokens_cache_write = (t.input_tokens_cache_write or 0) + (usage.input_tokens_cache_write or 0) or None
    t.reasoning_tokens = (t.reasoning_tokens or 0) + (usage.reasoning_tokens or 0) or None
    t.total_cost = None if t.total_cost is None or usage.total_cost is None else t.total_cost + usage.total_cost


def build_log(run_dir: Path | str):
    """The EvalLog of a run folder (not written)."""
    log_api, model_api, scorer_api, tool_api, EvalError = _inspect()
    run_dir = Path(run_dir)
    folder = open_run(run_dir)
    manifest = folder.info()
    units: dict[tuple, list[ResultRow]] = defaultdict(list)
    for row in folder.latest():
        units[row.unit()].append(row)
    samples: list[Any] = []  # inspect_ai EvalSample objects
    total_usage: dict[str, Any] = {}  # model name -> inspect_ai's ModelUsage
    scored: list[float] = []
    for (task_id, config, repeat), rows in sorted(units.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        rows.sort(key=lambda r: r.attempt)
        final = rows[-1]
        path = run_dir / final.transcript_path
        events = read_transcript(path) if final.transcript_path and path.is_file() else []
        name = final.model or f"wholeloop/{final.agent}"
        usage = _usage(rows, model_api)
        _add_usage(total_usage, name, usage, model_api)
        score, error = None, None
        scores: dict[str, Any] = {}
        if final.outcome == Outcome.infra_error:
            error = EvalError(message=final.error or "infrastructure error", traceback="", traceback_ansi="")
        else:
            failing = ", ".join(t for t, _, _ in failing_tests(final))
            score = scorer_api.Score(
                value=1 if final.resolved else 0,
                answer=final.outcome,
                explanation=f"failing: {failing}" if failing else "every listed test passes",
                metadata={"fail_to_pass": final.fail_to_pass, "pass_to_pass": final.pass_to_pass},
            )
            scored.append(1.0 if final.resolved else 0.0)
            scores[SCORER] = score
            verdict = judge(final)
            if final.acceptance is not None:  # measured: accepted or not (an old grade has no axes)
                scores[ACCEPTANCE_SCORER] = scorer_api.Score(
                    value=1 if verdict.accepted else 0,
                    answer=verdict.acceptance.value,
                    explanation=tell(verdict),
                    metadata={"axes": final.acceptance, "reasons": verdict.reasons},
                )
        total_s = sum(r.phases.total_s for r in rows)
        samples.append(
            log_api.EvalSample(
                id=task_id,
                epoch=repeat + 1,
                input=problem_statement(run_dir, rows[0], events, manifest) or task_id,
                target=fail_to_pass(final),
                messages=_messages(events, model_api, tool_api),
                output=model_api.ModelOutput(model=name, usage=usage),
                scores=scores or None,
                error=error,
                model_usage={name: usage},
                started_at=rows[0].started_at or None,
                completed_at=final.finished_at or None,
                total_time=round(total_s, 3),
                working_time=round(sum(r.phases.agent_s - r.phases.retry_wait_s for r in rows), 3),
                metadata={
                    "config": config,
                    "repeat": repeat,
                    "attempts": len(rows),
                    "outcome": final.outcome,
                    "stop_reason": final.stop_reason,
                    "steps": sum(r.steps for r in rows),
                    "cost_usd": usage.total_cost,
                    "phases": final.phases.model_dump(),
                    "transcript_path": final.transcript_path,
                    "patch_path": final.patch_path,
                    "instance_id": final.instance_id,
                    "run_dir": str(run_dir),
                },
            )
        )
    n = len(scored)
    accuracy = sum(scored) / n if n else 0.0
    stderr = math.sqrt(accuracy * (1 - accuracy) / (n - 1)) if n > 1 else 0.0
    configs = sorted({c for _, c, _ in units})
    agent = manifest.agent
    model = agent.get("model") or (f"wholeloop/{agent.get('agent')}" if agent.get("agent") else "wholeloop/unknown")
    # Inspect needs a creation time: the manifest's, else the first sample's, else the folder's own
    # (a manifest written by hand or by an interrupted start may have none).
    started = (
        manifest.started_at
        or (samples[0].started_at if samples else None)
        or datetime.fromtimestamp(run_dir.stat().st_mtime, UTC).isoformat()
    )
    finished = manifest.finished_at or ""
    spec = log_api.EvalSpec(
        created=started,
        task=f"wholeloop/{run_dir.name}",
        task_id=manifest.run_id or run_dir.name,
        run_id=manifest.run_id or run_dir.name,
        task_version=0,
        dataset=log_api.EvalDataset(
            name=run_dir.name, samples=len({t for t, _, _ in units}), sample_ids=sorted({t for t, _, _ in units})
        ),
        model=model,
        model_base_url=agent.get("base_url"),
        config=log_api.EvalConfig(epochs=max((r + 1 for _, _, r in units), default=1)),
        packages={"wholeloop": __version__},
        solver=agent.get("agent"),
        metadata={
            "wholeloop": {
                "run_dir": str(run_dir),
                "configs": configs,
                "command": manifest.command if "command" in manifest.model_fields_set else None,
                "options": manifest.options.model_dump(exclude_unset=True)
                if "options" in manifest.model_fields_set
                else None,
                "git_commit": manifest.wholeloop.get("git_commit"),
            }
        },
    )
    results = log_api.EvalResults(
        total_samples=len(samples),
        completed_samples=len(samples),
        scores=[
            log_api.EvalScore(
                name=SCORER,
                scorer=f"wholeloop/{SCORER}",
                scored_samples=n,
                unscored_samples=len(samples) - n,
                metrics={
                    "accuracy": log_api.EvalMetric(name="accuracy", value=accuracy),
                    "stderr": log_api.EvalMetric(name="stderr", value=stderr),
                },
            )
        ],
    )
    stats = log_api.EvalStats(started_at=started, completed_at=finished, model_usage=total_usage)
    return log_api.EvalLog(
        version=2,
        status="success" if finished else "started",
        eval=spec,
        plan=log_api.EvalPlan(name="wholeloop"),
        results=results,
        stats=stats,
        samples=samples,
    )


def export_inspect(run_dir: Path | str, path: Path | str) -> Path:
    """Write the run's eval log to `path` (`.eval`, Inspect's default, or `.json`)."""
    log_api = _inspect()[0]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    log_api.write_eval_log(build_log(run_dir), str(path), format="json" if path.suffix == ".json" else "eval")
    return path
