"""`wholeloop export atif RUN`: each attempt's trajectory in ATIF, Harbor's Agent Trajectory
Interchange Format (the viewers of Harbor, Inspect Scout, Phoenix, NeMo and agentevals read it).

One JSON file per attempt, `<task>__<config>__r<repeat>__a<attempt>.json`, built from the
transcript (the one record of what the agent saw and did). The mapping:

- `session_id` the run's id; `trajectory_id` task/config/repeat/attempt; `agent` the agent's
  name (`wholeloop/<agent>`), wholeloop's version, the model;
- the prompts of each model request (system, user: the problem statement, feedback between
  attempts) are `system` and `user` steps; each model response is an `agent` step: its text,
  its tool calls (`arguments` the parsed arguments; unparsable ones as {} with the raw text in
  `extra.raw_arguments`), its `metrics` (prompt tokens with cache reads and writes included as
  in wholeloop's Usage, completion tokens, cache reads as `cached_tokens`, cost; cache writes,
  reasoning tokens and latency in `extra`), and the results of its tool calls as its
  `observation` (`source_call_id` the call; error, exit code, truncation and timeout in `extra`);
- `final_metrics`: the attempt's token totals and cost from its result row (the metered figures);
- `extra.wholeloop`: what ATIF has no field for: task, configuration, repeat, attempt, outcome,
  stop reason, failing tests, and the attempt's patch (`patch`), which `wholeloop import atif`
  keeps as the imported attempt's patch.diff (not graded: docs/records.md).

Each file is validated against Harbor's own `Trajectory` model (harbor_models: the pinned wheel,
in a subprocess) before the command says it is done.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import UserError
from ..records import ResultRow, open_run
from ..transcript import read_transcript
from .attempt import failing_tests
from .harbor_models import validate

SCHEMA_VERSION = "ATIF-v1.6"  # the fields used here are all in 1.6; Harbor 0.26 reads up to 1.8


class InvalidTrajectory(UserError):
    """An exported trajectory Harbor's model refused (a bug of the export: it should never happen)."""


def _time(value: str) -> str | None:
    return value or None


def _arguments(call: dict) -> tuple[dict, dict]:
    args = call.get("arguments")
    extra: dict[str, Any] = {}
    if not isinstance(args, dict):
        extra["raw_arguments"] = call.get("raw_arguments") or ("" if args is None else json.dumps(args))
        args = {}
    if call.get("parse_error"):
        extra["parse_error"] = call["parse_error"]
    return args, extra


def _events_by_attempt(events: list) -> dict[int, list]:
    out: dict[int, list] = defaultdict(list)
    current = 0
    for event in events:
        if event.type == "attempt_start":
            current = event.attempt
        out[current].append(event)
    return out


def _steps(events: list) -> list[dict]:
    steps: list[dict] = []
    last_agent: dict | None = None
    for event in events:
        if event.type == "model_request":
            for message in event.new_messages:
                role = message.get("role")
                if role in ("system", "user"):
                    content = message.get("content", "")
                    text = content if isinstance(content, str) else json.dumps(content)
                    steps.append({"source": role, "message": text, "timestamp": _time(event.time)})
                    last_agent = None
        elif event.type == "model_response":
            usage = event.usage or {}
            calls = []
            for c in event.tool_calls:
                args, extra = _arguments(c)
                call = {
                    "tool_call_id": str(c.get("id", "")),
                    "function_name": str(c.get("name", "")),
                    "arguments": args,
                }
                if extra:
                    call["extra"] = extra
                calls.append(call)
            metrics = {
                "prompt_tokens": int(usage.get("input_tokens", 0)),
                "completion_tokens": int(usage.get("output_tokens", 0)),
                "cached_tokens": int(usage.get("cache_read_tokens", 0)),
                "cost_usd": event.cost_usd,
                "extra": {
                    "cache_write_tokens": int(usage.get("cache_write_tokens", 0)),
                    "reasoning_tokens": int(usage.get("reasoning_tokens", 0)),
                    "latency_s": event.latency_s,
                    "stop_reason": event.stop_reason,
                },
            }
            last_agent = {
                "source": "agent",
                "message": event.text or "",
                "timestamp": _time(event.time),
                "model_name": event.model or None,
                "tool_calls": calls or None,
                "metrics": metrics,
                "llm_call_count": 1,
                "extra": {"wholeloop_step": event.step},
            }
            steps.append(last_agent)
        elif event.type == "tool_result":
            ids = {c["tool_call_id"] for c in (last_agent or {}).get("tool_calls") or []}
            result: dict[str, Any] = {
                "source_call_id": event.call_id if event.call_id in ids else None,
                "content": event.output,
                "extra": {
                    "name": event.name,
                    "call_id": event.call_id,
                    "is_error": event.is_error,
                    "exit_code": event.exit_code,
                    "truncated": event.truncated,
                    "timed_out": event.timed_out,
                    "duration_s": event.duration_s,
                },
            }
            if last_agent is None:  # a result with no model turn before it: an observation of its own
                steps.append({"source": "system", "message": "", "observation": {"results": [result]}})
            else:
                last_agent.setdefault("observation", {"results": []})["results"].append(result)
    return steps


def _patch(run_dir: Path, row: ResultRow, events: list) -> str:
    if row.patch_path and (run_dir / row.patch_path).is_file():
        return (run_dir / row.patch_path).read_text(encoding="utf-8", errors="replace")
    for event in reversed(events):
        if event.type == "patch" and event.attempt == row.attempt:
            return str(event.diff)
    return ""


def trajectory(run_dir: Path, row: ResultRow, events: list, run_id: str) -> dict:
    """The ATIF trajectory (a JSON-ready dict) of one attempt, from its events."""
    steps = _steps(events)
    if not steps:  # ATIF needs one step at least: say that none was recorded
        steps = [
            {"source": "system", "message": f"no model call recorded ({row.outcome}: {row.error or row.stop_reason})"}
        ]
    steps = [{"step_id": i, **step} for i, step in enumerate(steps, start=1)]
    u = row.usage
    unit = f"{row.task_id}/{row.config}/r{row.repeat}/a{row.attempt}"
    doc = {
        "schema_version": SCHEMA_VERSION,
        "session_id": run_id,
        "trajectory_id": unit,
        "agent": {"name": f"wholeloop/{row.agent}", "version": __version__, "model_name": row.model or None},
        "steps": steps,
        "final_metrics": {
            "total_prompt_tokens": u.input_tokens,
            "total_completion_tokens": u.output_tokens,
            "total_cached_tokens": u.cache_read_tokens,
            "total_cost_usd": row.cost_usd,
            "total_steps": len(steps),
            "extra": {
                "cache_write_tokens": u.cache_write_tokens,
                "reasoning_tokens": u.reasoning_tokens,
                "agent_steps": row.steps,
            },
        },
        "extra": {
            "wholeloop": {
                "run_id": run_id,
                "task_id": row.task_id,
                "instance_id": row.instance_id,
                "config": row.config,
                "repeat": row.repeat,
                "attempt": row.attempt,
                "outcome": row.outcome,
                "resolved": row.resolved,
                "stop_reason": row.stop_reason,
                "failing_tests": [t for t, _, _ in failing_tests(row)],
                "patch": _patch(run_dir, row, events),
            }
        },
    }
    return _drop_none(doc)


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def _name(row: ResultRow) -> str:
    safe = re.sub(r"[^A-Za-z0-9._+-]+", "_", f"{row.task_id}__{row.config}")
    return f"{safe}__r{row.repeat}__a{row.attempt}.json"


def export_atif(run_dir: Path | str, out: Path | str, *, check: bool = True) -> list[Path]:
    """Write every attempt of the run as an ATIF trajectory into `out`; validated unless `check` is False."""
    run_dir, out = Path(run_dir), Path(out)
    folder = open_run(run_dir)
    run_id = folder.info().run_id or run_dir.name
    out.mkdir(parents=True, exist_ok=True)
    cache: dict[str, list] = {}
    written: list[Path] = []
    for row in sorted(folder.latest(), key=lambda r: (r.task_id, r.config, r.repeat, r.attempt)):
        key = row.transcript_path
        if key not in cache:
            path = run_dir / key
            cache[key] = read_transcript(path) if key and path.is_file() else []
        events = _events_by_attempt(cache[key]).get(row.attempt, [])
        target = out / _name(row)
        target.write_text(json.dumps(trajectory(run_dir, row, events, run_id), indent=2) + "\n", encoding="utf-8")
        written.append(target)
    if check:
        refused = {p: why for p, why in validate("atif", written).items() if why}
        if refused:
            first, why = next(iter(refused.items()))
            raise InvalidTrajectory(
                f"Harbor's ATIF model refused {len(refused)} of {len(written)} trajectories; {first}: {why}",
                hint="this is a bug of wholeloop's ATIF export: please report it with the file",
            )
    return written
