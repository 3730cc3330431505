"""Run folders written the way a run writes them (manifest, rows through the one append point),
for the run history and the gate; and the real command with no history URL from the environment."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from harness.history.live import attach
from harness.records import PhaseTimes, ResultRow, RunFolder

WHOLELOOP = Path(sys.executable).with_name("wholeloop")


def row(
    task: str,
    config: str = "A",
    outcome: str = "resolved",
    *,
    repeat: int = 0,
    attempt: int = 1,
    final: bool = True,
    cost: float | None = 0.1,
    seconds: float = 10.0,
    model: str = "m/1",
    agent: str = "fake",
    task_hash: str | None = None,
) -> ResultRow:
    return ResultRow(
        run_id="x",
        task_id=task,
        task_hash=task_hash or f"h-{task}",
        config=config,
        agent=agent,
        model=model,
        repeat=repeat,
        attempt=attempt,
        final=final,
        outcome=outcome,
        resolved=outcome == "resolved",
        cost_usd=cost,
        phases=PhaseTimes(total_s=seconds),
        stop_reason="submitted",
    )


def manifest(run_dir: Path, suite: str, started: datetime, *, finished: bool = True, tasks: list[str] = ()) -> dict:
    specs = {
        t: {"content_hash": f"h-{t}", "spec": str(run_dir.parent.parent / "tasks" / suite / f"{t}.yaml")} for t in tasks
    }
    return {
        "schema_version": 1,
        "run_id": run_dir.name,
        "run_uid": f"uid-{run_dir.name}-{started:%H%M%S%f}",
        "command": ["wholeloop", "run", f"tasks/{suite}"],
        "cwd": str(run_dir.parent.parent),
        "wholeloop": {"version": "0.1.0", "git_commit": "abc"},
        "tasks": specs,
        "started_at": started.isoformat(),
        "finished_at": (started + timedelta(minutes=5)).isoformat() if finished else None,
    }


def write_run(
    run_dir: Path,
    rows: list[ResultRow],
    *,
    suite: str = "demo",
    started: datetime | None = None,
    url: str | None = None,
    finished: bool = True,
    warn=None,
) -> RunFolder:
    """A run folder written the way a run writes it: the manifest first, then each row through the
    one append point - with the history hook attached when `url` is given."""
    started = started or datetime(2026, 1, 1, tzinfo=UTC)
    folder = RunFolder(run_dir, create=True)
    hook = attach(folder, url, warn or pytest.fail) if url else None
    folder.update_manifest(
        lambda m: m.update(
            manifest(run_dir, suite, started, finished=finished, tasks=sorted({r.task_id for r in rows}))
        )
    )
    for r in rows:
        r.run_id = run_dir.name
        r.transcript_path = str(folder.relative(folder.transcript_path(r.task_id, r.config, r.repeat)))
        folder.append(r)
    if hook:
        hook.finish()
    return folder


def outcomes(n: int, resolved: set[int], config: str = "A", **kw) -> list[ResultRow]:
    return [row(f"t{i:02d}", config, "resolved" if i in resolved else "unresolved", **kw) for i in range(n)]


def cli(
    *args: str, env: dict | None = None, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """The real `wholeloop` command in a subprocess."""
    full = {**os.environ, "COLUMNS": "200"}
    full.pop("WHOLELOOP_HISTORY_URL", None)
    full.update(env or {})
    return subprocess.run([str(WHOLELOOP), *args], capture_output=True, text=True, env=full, cwd=cwd, timeout=timeout)
