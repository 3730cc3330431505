"""`wholeloop import atif FILES... --out RUN`: trajectories of agents run elsewhere, in ATIF
(Harbor's Agent Trajectory Interchange Format), as a wholeloop run folder, so `show` and `report`
read them like wholeloop's own (rates and the failure analysis leave `ungraded` rows out).

Every file is first checked against Harbor's own `Trajectory` model (harbor_models: the pinned
wheel, in a subprocess); one it refuses stops the import before anything is written, naming the
file and the field. Each trajectory is then one attempt:

- the unit: `extra.wholeloop`'s task, configuration, repeat and attempt when the trajectory is one
  of wholeloop's own exports; else the task is `trajectory_id` (or `session_id`, or the file's
  name), the configuration the agent's name and model, repeat 0 (a further trajectory of the same
  unit is the next repeat), attempt 1;
- the transcript (TranscriptWriter, one per unit): `attempt_start` with the problem statement
  (`extra.wholeloop`'s, else the first user step's text), a `model_request` for the system and user
  steps before each agent step, a `model_response` for each agent step (text, tool calls, tokens,
  cost), a `tool_call` and a `tool_result` for each call and observation, and a `stop`;
- the row: outcome `ungraded` (in no rate: docs/outcomes.md), the tokens and cost of
  `final_metrics` (cost unknown when absent: never a silent 0). A patch the trajectory carries
  (`extra.wholeloop.patch`, as wholeloop's export writes it) is kept as the attempt's `patch.diff`,
  not graded: the row stays `ungraded` and its note says so.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import UserError
from ..records import ResultRow, RunFolder, write_json
from ..transcript import (
    AttemptStart,
    ModelRequest,
    ModelResponse,
    PatchEvent,
    Stop,
    ToolCallEvent,
    ToolResultEvent,
    TranscriptWriter,
)
from ..vocabulary import Outcome
from .harbor_models import validate

NOT_GRADED_NOTE = "imported from ATIF: its patch is kept, not graded"


class InvalidAtif(UserError):
    """An input file that is not a trajectory Harbor's ATIF model accepts."""


def _first_error(why: str) -> str:
    """The field and the complaint of pydantic's message ("N validation errors for X\\nloc\\n  msg")."""
    lines = [line.strip() for line in why.splitlines() if line.strip()]
    if len(lines) >= 3 and "validation error" in lines[0]:
        return f"{lines[1]}: {lines[2].split(' [type=')[0]}"
    return lines[0] if lines else "refused"


def check_files(files: list[Path]) -> list[dict]:
    """The files' JSON, after Harbor's model accepted each; InvalidAtif naming the first it refused."""
    docs: list[dict] = []
    for path in files:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise InvalidAtif(
                f"{path}: not a JSON file ({exc})", hint="wholeloop import atif reads ATIF trajectory files"
            ) from None
        if not isinstance(doc, dict):
            raise InvalidAtif(f"{path}: not an ATIF trajectory (a JSON object is)", hint="one trajectory per file")
        docs.append(doc)
    verdicts = validate("atif", files)
    for path in files:
        why = verdicts.get(str(path), "")
        if why:
            raise InvalidAtif(
                f"{path}: Harbor's ATIF model refuses it: {_first_error(why)}",
                hint="fix the field named (ATIF's schema: harbor.models.trajectories), then import again",
            )
    return docs


def _text(content: Any) -> str:
    """A message or an observation's content: a string, or ATIF's list of content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p.get("text", "") if isinstance(p, dict) and p.get("type") == "text" else json.dumps(p) for p in content
        ]
        return "\n".join(parts)
    return json.dumps(content)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0


def _unit(doc: dict, path: Path) -> tuple[str, str, int, int, dict]:
    meta = (doc.get("extra") or {}).get("wholeloop")
    if isinstance(meta, dict) and meta.get("task_id"):
        return (
            str(meta["task_id"]),
            str(meta.get("config") or "imported"),
            _int(meta.get("repeat")),
            max(1, _int(meta.get("attempt"))),
            meta,
        )
    agent = doc.get("agent") or {}
    config = "/".join(str(x) for x in (agent.get("name"), agent.get("model_name")) if x) or "imported"
    task = str(doc.get("trajectory_id") or doc.get("session_id") or path.stem)
    return task, config, 0, 1, {}


def _write_transcript(writer: TranscriptWriter, doc: dict, attempt: int, unit: tuple, meta: dict) -> dict:
    """One attempt's events; returns what its row needs (steps, model calls, stop reason, problem)."""
    task, config, repeat = unit
    steps = doc.get("steps") or []
    problem = str(meta.get("problem_statement") or "")
    if not problem:
        problem = next((_text(s.get("message")) for s in steps if s.get("source") == "user"), "")
    writer.write(AttemptStart(task_id=task, attempt=attempt, repeat=repeat, config=config, problem_statement=problem))
    pending: list[dict] = []
    step_no = 0
    for step in steps:
        source = step.get("source")
        if source in ("system", "user"):
            if step.get("message"):
                pending.append({"role": source, "content": _text(step.get("message"))})
        if source != "agent":
            continue
        step_no += 1
        writer.write(ModelRequest(step=step_no, messages_hash="", new_messages=pending))
        pending = []
        metrics = step.get("metrics") or {}
        extra = metrics.get("extra") or {}
        usage = {
            "input_tokens": _int(metrics.get("prompt_tokens")),
            "output_tokens": _int(metrics.get("completion_tokens")),
            "cache_read_tokens": _int(metrics.get("cached_tokens")),
            "cache_write_tokens": _int(extra.get("cache_write_tokens")),
            "reasoning_tokens": _int(extra.get("reasoning_tokens")),
        }
        calls = step.get("tool_calls") or []
        tool_calls = []
        for call in calls:
            raw = (call.get("extra") or {}).get("raw_arguments", "")
            args = call.get("arguments") if not raw else None
            tool_calls.append(
                {"id": call.get("tool_call_id", ""), "name": call.get("function_name", ""), "arguments": args}
            )
        writer.write(
            ModelResponse(
                step=step_no,
                text=_text(step.get("message")),
                tool_calls=tool_calls,
                stop_reason=str(extra.get("stop_reason") or ""),
                usage=usage,
                cost_usd=metrics.get("cost_usd"),
                latency_s=float(extra.get("latency_s") or 0.0),
                model=str(step.get("model_name") or ""),
            )
        )
        names = {}
        for call, made in zip(calls, tool_calls, strict=True):
            raw = (call.get("extra") or {}).get("raw_arguments", "")
            names[made["id"]] = made["name"]
            writer.write(
                ToolCallEvent(
                    step=step_no,
                    call_id=made["id"],
                    name=made["name"],
                    arguments=made["arguments"],
                    raw_arguments=raw if isinstance(raw, str) else json.dumps(raw),
                )
            )
        for result in (step.get("observation") or {}).get("results") or []:
            rx = result.get("extra") or {}
            call_id = str(result.get("source_call_id") or rx.get("call_id") or "")
            code = rx.get("exit_code")
            writer.write(
                ToolResultEvent(
                    step=step_no,
                    call_id=call_id,
                    name=str(rx.get("name") or names.get(call_id, "")),
                    output=_text(result.get("content")),
                    is_error=bool(rx.get("is_error")),
                    exit_code=code if isinstance(code, int) else None,
                    truncated=bool(rx.get("truncated")),
                    timed_out=bool(rx.get("timed_out")),
                    duration_s=float(rx.get("duration_s") or 0.0),
                )
            )
    patch = str(meta.get("patch") or "")
    if patch:
        files = re.findall(r"^diff --git a/(\S+) b/", patch, flags=re.M)
        writer.write(PatchEvent(attempt=attempt, bytes=len(patch.encode()), files=files, diff=patch))
    reason = str(meta.get("stop_reason") or "")
    writer.write(
        Stop(
            reason=reason,
            detail="imported from ATIF" + ("" if reason else ": the trajectory does not say why it ended"),
        )
    )
    return {"steps": step_no, "stop_reason": reason, "patch": patch}


def import_atif(files: list[Path | str], out: Path | str) -> list[ResultRow]:
    """Write the trajectories in `files` as the run folder `out` (which must not be a run yet)."""
    paths = [Path(f) for f in files]
    out = Path(out)
    folder = RunFolder(out)
    if folder.is_run():
        raise InvalidAtif(f"{out} is a run folder already", hint="import into a new folder (--out)")
    docs = check_files(paths)
    units: dict[tuple[str, str, int], list[tuple[int, dict, dict, Path]]] = defaultdict(list)
    for path, doc in zip(paths, docs, strict=True):
        task, config, repeat, attempt, meta = _unit(doc, path)
        while not meta and (task, config, repeat) in units:  # another trajectory of the same task: a repeat
            repeat += 1
        if any(a == attempt for a, _, _, _ in units[(task, config, repeat)]):
            raise InvalidAtif(
                f"{path}: a second trajectory of {task}/{config} repeat {repeat} attempt {attempt}",
                hint="import each attempt once",
            )
        units[(task, config, repeat)].append((attempt, doc, meta, path))
    run_id = f"import-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"
    folder = RunFolder(out, create=True)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    rows: list[ResultRow] = []
    for (task, config, repeat), attempts in sorted(units.items()):
        attempts.sort(key=lambda a: a[0])
        transcript = folder.transcript_path(task, config, repeat)
        transcript.parent.mkdir(parents=True, exist_ok=True)
        with TranscriptWriter(transcript) as writer:
            for i, (attempt, doc, meta, path) in enumerate(attempts):
                said = _write_transcript(writer, doc, attempt, (task, config, repeat), meta)
                adir = folder.attempt_dir(task, config, repeat, attempt)
                adir.mkdir(parents=True, exist_ok=True)
                patch_path = ""
                if said["patch"]:
                    (adir / "patch.diff").write_text(said["patch"], encoding="utf-8")
                    patch_path = str(folder.relative(adir / "patch.diff"))
                fm = doc.get("final_metrics") or {}
                fx = fm.get("extra") or {}
                agent = doc.get("agent") or {}
                cost = fm.get("total_cost_usd")
                row = ResultRow(
                    run_id=run_id,
                    task_id=task,
                    task_hash="",
                    config=config,
                    agent=str(agent.get("name") or "imported"),
                    model=agent.get("model_name"),
                    repeat=repeat,
                    attempt=attempt,
                    final=i == len(attempts) - 1,
                    outcome=Outcome.ungraded,
                    resolved=False,
                    stop_reason=said["stop_reason"],
                    steps=_int(fx.get("agent_steps")) or said["steps"],
                    model_calls=said["steps"],
                    usage={  # validated as a Usage by ResultRow
                        "input_tokens": _int(fm.get("total_prompt_tokens")),
                        "output_tokens": _int(fm.get("total_completion_tokens")),
                        "cache_read_tokens": _int(fm.get("total_cached_tokens")),
                        "cache_write_tokens": _int(fx.get("cache_write_tokens")),
                        "reasoning_tokens": _int(fx.get("reasoning_tokens")),
                    },
                    cost_usd=float(cost) if isinstance(cost, int | float) else None,
                    patch_bytes=len(said["patch"].encode()),
                    note=NOT_GRADED_NOTE if said["patch"] else f"imported from ATIF ({path.name}): no patch to grade",
                    instance_id=meta.get("instance_id"),
                    dir=str(folder.relative(adir)),
                    patch_path=patch_path,
                    transcript_path=str(folder.relative(transcript)),
                    started_at=now,
                    finished_at=now,
                )
                folder.append(row)
                rows.append(row)
    write_json(
        folder.manifest_path,
        {
            "run_id": run_id,
            "command": ["wholeloop", "import", "atif", *map(str, paths)],
            "wholeloop": {"version": __version__},
            "imported": {"format": "ATIF", "files": [str(p) for p in paths]},
            "options": {"repeats": max((r.repeat for r in rows), default=0) + 1},
            "tasks": {},
            "started_at": now,
            "finished_at": now,
        },
    )
    return rows
