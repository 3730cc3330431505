"""The run folder on disk: the product's real interface.

    RUN/manifest.json        how to reproduce every number (written at start, completed at end)
    RUN/results.jsonl        one validated row per attempt, appended atomically
    RUN/attempts/<task>/<config>/rep-<r>/transcript.jsonl
    RUN/attempts/<task>/<config>/rep-<r>/attempt-<k>/{patch.diff,test_output.txt,grade.json}

Everything a report shows is recomputed from these files, with no Docker.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .models.types import Usage  # one token accounting for models, rows and reports (no SDK import)

RESULT_SCHEMA = 1


class Phases(BaseModel):
    """Seconds per phase. Working time and waiting time are kept apart (retry_wait_s)."""

    image_s: float = 0.0  # building (or finding) the environment and task images
    image_cached: bool = True
    container_start_s: float = 0.0
    agent_s: float = 0.0  # the whole agent phase, wall clock
    model_s: float = 0.0  # time in model calls (without retry waits)
    tool_s: float = 0.0  # time running tools in the container
    retry_wait_s: float = 0.0  # waiting on rate limits / overloads: not the agent's time
    patch_s: float = 0.0
    grading_s: float = 0.0
    total_s: float = 0.0


class ResultRow(BaseModel):
    model_config = ConfigDict(extra="allow")

    schema_version: int = RESULT_SCHEMA
    run_id: str
    task_id: str
    task_hash: str
    config: str  # label of the configuration (agent + model + settings)
    agent: str
    model: str | None = None
    repeat: int = 0
    attempt: int = 1
    final: bool = True  # the last attempt of this (task, config, repeat)
    outcome: str
    resolved: bool
    stop_reason: str = ""
    tests: dict[str, str] = Field(default_factory=dict)
    fail_to_pass: dict[str, int] = Field(default_factory=dict)
    pass_to_pass: dict[str, int] = Field(default_factory=dict)
    steps: int = 0
    model_calls: int = 0
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = 0.0  # None = the price is unknown (never silently 0)
    phases: Phases = Field(default_factory=Phases)
    patch_bytes: int = 0
    error: str | None = None
    note: str = ""
    instance_id: str | None = None
    dir: str = ""  # the attempt folder, relative to the run folder
    patch_path: str = ""
    transcript_path: str = ""
    started_at: str = ""
    finished_at: str = ""

    def key(self) -> tuple[str, str, int, int]:
        return (self.task_id, self.config, self.repeat, self.attempt)


def slug(text: str) -> str:
    """A folder-safe version of a label."""
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text).strip("_") or "x"


def rep_dir(run_dir: Path, task_id: str, config: str, repeat: int) -> Path:
    return run_dir / "attempts" / slug(task_id) / slug(config) / f"rep-{repeat}"


def attempt_dir(run_dir: Path, task_id: str, config: str, repeat: int, attempt: int) -> Path:
    return rep_dir(run_dir, task_id, config, repeat) / f"attempt-{attempt}"


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write a whole file or nothing: a temporary file renamed over the target."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data.encode() if isinstance(data, str) else data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_json(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


class ResultsFile:
    """results.jsonl: each row is one write() of one whole line, fsynced, under a lock."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._repair()

    def _repair(self) -> None:
        """A crash mid-append leaves a torn last line: cut it, so appends start clean."""
        if not self.path.exists():
            return
        with open(self.path, "rb+") as fh:
            data = fh.read()
            if data and not data.endswith(b"\n"):
                fh.truncate(data.rfind(b"\n") + 1)

    def append(self, row: ResultRow) -> None:
        line = (row.model_dump_json() + "\n").encode()
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)

    def rows(self) -> list[ResultRow]:
        return read_results(self.path)


def read_results(path: Path) -> list[ResultRow]:
    """Valid rows of a results file; a torn or invalid line is skipped, never fatal."""
    rows: list[ResultRow] = []
    if not Path(path).exists():
        return rows
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.endswith("\n"):
                break
            try:
                rows.append(ResultRow.model_validate_json(line))
            except ValidationError:
                continue
    return rows


def load_run(run_dir: Path) -> tuple[dict, list[ResultRow]]:
    """The manifest and the rows of a run folder. Raises FileNotFoundError with a clear message."""
    run_dir = Path(run_dir)
    results = run_dir / "results.jsonl"
    if not results.exists():
        raise FileNotFoundError(f"{run_dir} is not a wholeloop run folder (no results.jsonl)")
    manifest_path = run_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    return manifest, read_results(results)


def latest_rows(rows: list[ResultRow]) -> list[ResultRow]:
    """The rows of the last try of each (task, config, repeat), one per attempt.

    One try appends its attempts in increasing order, so a row whose attempt is not above the
    previous row of its unit starts a new try: a resumed run redoing an unfinished unit from its
    first attempt, or an infrastructure retry. The new try supersedes *every* row of the earlier
    one, also attempts it never reaches (a redo may be resolved sooner than the killed try got).
    """
    tries: dict[tuple[str, str, int], dict[int, ResultRow]] = {}
    for row in rows:
        unit = (row.task_id, row.config, row.repeat)
        current = tries.get(unit)
        if current is None or row.attempt <= max(current):
            current = tries[unit] = {}
        current[row.attempt] = row
    return [row for attempts in tries.values() for row in attempts.values()]
