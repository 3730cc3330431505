"""One flat record per attempt (the latest rows of each run folder): what `report --csv` writes
and what the Python API's `attempts_df()` holds. Columns are documented in docs/records.md."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from ..records import ResultRow, open_run, write_atomic

COLUMNS = (
    "run_dir",
    "run_id",
    "task_id",
    "config",
    "repeat",
    "attempt",
    "final",
    "outcome",
    "resolved",
    "stop_reason",
    "agent",
    "model",
    "steps",
    "model_calls",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "cost_usd",
    "image_s",
    "image_cached",
    "container_start_s",
    "agent_s",
    "model_s",
    "tool_s",
    "retry_wait_s",
    "patch_s",
    "grading_s",
    "total_s",
    "fail_to_pass_passed",
    "fail_to_pass_total",
    "pass_to_pass_passed",
    "pass_to_pass_total",
    "patch_bytes",
    "error",
    "note",
    "instance_id",
    "task_hash",
    "started_at",
    "finished_at",
    "dir",
    "transcript_path",
    "patch_path",
)


def flat(row: ResultRow, run_dir: Path | str) -> dict:
    """The row as one flat record (nested usage, phases and tallies spread into columns)."""
    return {
        "run_dir": str(run_dir),
        "run_id": row.run_id,
        "task_id": row.task_id,
        "config": row.config,
        "repeat": row.repeat,
        "attempt": row.attempt,
        "final": row.final,
        "outcome": row.outcome,
        "resolved": row.resolved,
        "stop_reason": row.stop_reason,
        "agent": row.agent,
        "model": row.model,
        "steps": row.steps,
        "model_calls": row.model_calls,
        "input_tokens": row.usage.input_tokens,
        "output_tokens": row.usage.output_tokens,
        "cache_read_tokens": row.usage.cache_read_tokens,
        "cache_write_tokens": row.usage.cache_write_tokens,
        "reasoning_tokens": row.usage.reasoning_tokens,
        "cost_usd": row.cost_usd,
        **row.phases.model_dump(),
        "fail_to_pass_passed": row.fail_to_pass.get("passed", 0),
        "fail_to_pass_total": row.fail_to_pass.get("total", 0),
        "pass_to_pass_passed": row.pass_to_pass.get("passed", 0),
        "pass_to_pass_total": row.pass_to_pass.get("total", 0),
        "patch_bytes": row.patch_bytes,
        "error": (row.error or "").split("\n", 1)[0],
        "note": row.note,
        "instance_id": row.instance_id,
        "task_hash": row.task_hash,
        "started_at": row.started_at,
        "finished_at": row.finished_at,
        "dir": row.dir,
        "transcript_path": row.transcript_path,
        "patch_path": row.patch_path,
    }


def attempt_records(run_dirs: Sequence[Path | str]) -> list[dict]:
    """Every attempt that counts (the latest-row rule) of every run, in a stable order."""
    out = []
    for run_dir in run_dirs:
        rows = open_run(run_dir).latest()
        out += [flat(r, run_dir) for r in sorted(rows, key=lambda r: (r.task_id, r.config, r.repeat, r.attempt))]
    return out


def write_csv(run_dirs: list[Path | str], path: Path | str) -> Path:
    """The attempts as CSV (one header line, then one line per attempt); empty cells for None."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for record in attempt_records(run_dirs):
        writer.writerow({k: "" if v is None else v for k, v in record.items()})
    write_atomic(Path(path), buf.getvalue())
    return Path(path)
