"""Recovery: inside an attempt (from its transcript) and across attempts (from results rows).

Inside an attempt, from the typed events of ``transcript.jsonl`` (one transcript per trial; the
attempts of a trial are told apart by their ``attempt_start`` events):

- **red runs before green**: ``test_run`` events with ``green`` False before the first green one
  (all of them when the attempt never went green);
- **edits after red**: file changes made while the latest test run was red. A file change is a
  successful (no tool error) ``edit`` call with command ``create``, ``str_replace`` or ``insert``, a
  call of kind ``edit`` (an external CLI's edit tool, per its agent config), or a ``bash`` call (or
  a call of kind ``shell``) whose command matches a heuristic: ``sed -i``, ``tee``, ``git apply``, ``patch``, or an output redirection (``>``/``>>``) to a
  path other than ``/dev/null``, ``/tmp/...`` or a file descriptor (``2>&1``). Writes made by
  scripts (``python -c "open(...).write"``) are not seen;
- **tool errors**: ``tool_result`` with ``is_error``, or a ``bash`` (or kind ``shell`` or ``edit``)
  result with a non-zero exit code (``run_tests``, or a kind ``test`` command, going red is a red run, not a
  tool error). An error is **recovered** when the
  next result of the same tool succeeds; an error with no later call of that tool is unrecovered;
- **steps and seconds to first green**: the step of the first green ``test_run``, and its
  ``elapsed_s`` minus the attempt's start.

Across attempts (rows with ``attempt`` 1..K, ``final`` on the last): a trial is *resolved at
attempt k* when k is its first attempt row with ``resolved``. pass@attempt-1 = resolved at 1 /
trials; pass@attempt-K = resolved at any / trials; recovery rate = resolved later / failed first.
Trials with an ``infra_error`` attempt are left out.
"""

from __future__ import annotations

import re
from pathlib import Path
from statistics import median

from pydantic import BaseModel, Field

from ..records import ResultRow
from ..transcript import STEP_EVENTS, AttemptStart, TestRun, ToolCallEvent, ToolResultEvent, read_transcript
from .stats import NOT_SCORED, ConfigRows, trials_of

EDIT_COMMANDS = {"create", "str_replace", "insert"}
_SED_INPLACE = re.compile(r"\bsed\s+(?:-[^\s]*\s+)*-[a-zA-Z]*i")
_TEE = re.compile(r"(?:^|[|;&\s])tee\s")
_REDIRECT = re.compile(r"(?<![0-9&<>])>>?\s*(?!&)([^\s;&|<>]+)")
_APPLY = re.compile(r"\bgit\s+apply\b|(?:^|[;&|(]\s*)patch\s")  # as the shipped CLIs' edit_commands


class AttemptRecovery(BaseModel):
    task_id: str
    config: str
    repeat: int
    attempt: int
    transcript_path: str = ""  # relative to the run folder
    found: bool = True  # False when the transcript (or this attempt in it) is missing
    steps: int = 0
    test_runs: int = 0
    red_runs: int = 0
    red_before_green: int = 0
    reached_green: bool = False
    green_after_red: bool = False  # at least one red run, then a green one
    edits: int = 0
    edits_after_red: int = 0
    tool_errors: int = 0
    tool_errors_recovered: int = 0
    steps_to_green: int | None = None
    seconds_to_green: float | None = None


class RecoverySummary(BaseModel):
    """Inside-attempt recovery, aggregated over a configuration's attempts."""

    attempts: int = 0
    with_transcript: int = 0
    with_tests: int = 0  # attempts that ran the visible tests at least once
    reached_green: int = 0
    saw_red: int = 0  # attempts with at least one red run
    green_after_red: int = 0  # of those, how many got to green afterwards
    red_runs_before_green_mean: float | None = None
    edits_after_red_mean: float | None = None
    tool_errors: int = 0
    tool_errors_recovered: int = 0
    tool_error_recovery_rate: float | None = None
    median_steps_to_green: float | None = None
    median_seconds_to_green: float | None = None


class AcrossAttempts(BaseModel):
    """Recovery with feedback between attempts (issue 4 item 1)."""

    max_attempts: int = 1
    trials: int = 0
    infra_excluded: int = 0
    resolved_at: dict[int, int] = Field(default_factory=dict)  # attempt number -> trials first resolved there
    pass_at_attempt_1: float | None = None
    pass_at_attempt_k: float | None = None
    failed_first: int = 0
    resolved_later: int = 0
    recovery_rate: float | None = None  # resolved later / failed first


class ConfigRecovery(BaseModel):
    config: str
    inside: RecoverySummary = Field(default_factory=RecoverySummary)
    across: AcrossAttempts = Field(default_factory=AcrossAttempts)
    attempts: list[AttemptRecovery] = Field(default_factory=list)


# ---------------------------------------------------------------------------- inside an attempt


def bash_modifies_files(command: str) -> bool:
    """The documented heuristic: sed -i, tee, git apply, patch, or a redirection to a real file."""
    if _SED_INPLACE.search(command) or _TEE.search(command) or _APPLY.search(command):
        return True
    for target in _REDIRECT.findall(command):
        target = target.strip("'\"")
        if target == "/dev/null" or target.startswith(("/tmp/", "&")):
            continue
        return True
    return False


def is_edit(call: ToolCallEvent) -> bool:
    if call.kind == "edit":  # an external CLI's edit tool or edit command, as its agent config says
        return True
    if call.kind in ("shell", "test"):
        return bash_modifies_files(call.command)
    args = call.arguments or {}
    if call.name == "edit":
        return args.get("command") in EDIT_COMMANDS
    if call.name == "bash":
        return bash_modifies_files(str(args.get("command", "")))
    return False


def is_tool_error(result: ToolResultEvent) -> bool:
    if result.kind == "test":  # a red test run is a red run, not a tool error (as with run_tests)
        return False
    if result.is_error:
        return True
    return (result.name == "bash" or result.kind in ("shell", "edit")) and result.exit_code not in (None, 0)


def attempt_events(events: list, attempt: int) -> list | None:
    """The events of one attempt: from its attempt_start to the next attempt_start. A transcript
    with no attempt_start at all is taken whole for attempt 1."""
    starts = [i for i, e in enumerate(events) if isinstance(e, AttemptStart)]
    if not starts:
        return events if attempt == 1 else None
    for n, i in enumerate(starts):
        if events[i].attempt == attempt:
            end = starts[n + 1] if n + 1 < len(starts) else len(events)
            return events[i:end]
    return None


def analyse_attempt(events: list, base: AttemptRecovery) -> AttemptRecovery:
    out = base.model_copy()
    t0 = events[0].elapsed_s if events else 0.0
    red_seen = False
    last_red = False  # the latest test run was red
    pending: dict[str, int] = {}  # tool name -> errors waiting for the next result of that tool
    edit_calls: dict[str, bool] = {}  # call id of an edit -> was the latest test run red when it was made
    steps = set()
    for e in events:
        if isinstance(e, STEP_EVENTS):
            steps.add(e.step)
        if isinstance(e, ToolCallEvent) and is_edit(e):
            edit_calls[e.call_id] = last_red
        elif isinstance(e, ToolResultEvent):
            after_red = edit_calls.pop(e.call_id, None)
            if after_red is not None and not is_tool_error(e):  # an edit that failed changed nothing
                out.edits += 1
                out.edits_after_red += after_red
            if is_tool_error(e):
                out.tool_errors += 1
                pending[e.name] = pending.get(e.name, 0) + 1
            elif e.name in pending:
                out.tool_errors_recovered += pending.pop(e.name)
        elif isinstance(e, TestRun):
            out.test_runs += 1
            if e.green:
                if not out.reached_green:
                    out.reached_green = True
                    out.green_after_red = red_seen
                    out.steps_to_green = e.step
                    out.seconds_to_green = round(e.elapsed_s - t0, 3)
                last_red = False
            else:
                red_seen = last_red = True
                out.red_runs += 1
                if not out.reached_green:
                    out.red_before_green += 1
    out.steps = len(steps)
    return out


def attempt_recovery(run_dir: Path, row: ResultRow, config: str, cache: dict | None = None) -> AttemptRecovery:
    base = AttemptRecovery(
        task_id=row.task_id, config=config, repeat=row.repeat, attempt=row.attempt, transcript_path=row.transcript_path
    )
    path = Path(run_dir) / row.transcript_path if row.transcript_path else None
    if path is None or not path.is_file():
        return base.model_copy(update={"found": False})
    cache = {} if cache is None else cache
    if path not in cache:
        cache[path] = read_transcript(path)
    events = attempt_events(cache[path], row.attempt)
    if events is None:
        return base.model_copy(update={"found": False})
    return analyse_attempt(events, base)


def summarise(attempts: list[AttemptRecovery]) -> RecoverySummary:
    found = [a for a in attempts if a.found]
    out = RecoverySummary(attempts=len(attempts), with_transcript=len(found))
    tested = [a for a in found if a.test_runs]
    out.with_tests = len(tested)
    out.reached_green = sum(a.reached_green for a in found)
    red = [a for a in found if a.red_runs]
    out.saw_red = len(red)
    out.green_after_red = sum(a.green_after_red for a in found)
    if tested:
        out.red_runs_before_green_mean = sum(a.red_before_green for a in tested) / len(tested)
    if red:
        out.edits_after_red_mean = sum(a.edits_after_red for a in red) / len(red)
    out.tool_errors = sum(a.tool_errors for a in found)
    out.tool_errors_recovered = sum(a.tool_errors_recovered for a in found)
    if out.tool_errors:
        out.tool_error_recovery_rate = out.tool_errors_recovered / out.tool_errors
    greens = [a for a in found if a.reached_green]
    if greens:
        # (both are set when green is reached)
        out.median_steps_to_green = float(median(a.steps_to_green for a in greens if a.steps_to_green is not None))
        out.median_seconds_to_green = float(
            median(a.seconds_to_green for a in greens if a.seconds_to_green is not None)
        )
    return out


# ---------------------------------------------------------------------------- across attempts


def across_attempts(rows: list[ResultRow]) -> AcrossAttempts:
    out = AcrossAttempts(max_attempts=max((r.attempt for r in rows), default=1))
    for trial in trials_of(rows):
        if not trial.complete:
            continue
        if any(r.outcome in NOT_SCORED for r in trial.attempts):
            out.infra_excluded += 1
            continue
        out.trials += 1
        first = next((r.attempt for r in trial.attempts if r.resolved), None)
        if first is not None:
            out.resolved_at[first] = out.resolved_at.get(first, 0) + 1
        if first != 1:
            out.failed_first += 1
            if first is not None:
                out.resolved_later += 1
    out.resolved_at = dict(sorted(out.resolved_at.items()))
    if out.trials:
        out.pass_at_attempt_1 = out.resolved_at.get(1, 0) / out.trials
        out.pass_at_attempt_k = sum(out.resolved_at.values()) / out.trials
    if out.failed_first and out.max_attempts > 1:  # with one attempt there was no chance to recover
        out.recovery_rate = out.resolved_later / out.failed_first
    return out


def config_recovery(cfg: ConfigRows) -> ConfigRecovery:
    cache: dict = {}
    rows = sorted(cfg.rows, key=lambda r: (r.task_id, r.repeat, r.attempt))
    attempts = [attempt_recovery(cfg.run_dir, r, cfg.name, cache) for r in rows if r.outcome not in NOT_SCORED]
    return ConfigRecovery(
        config=cfg.name, inside=summarise(attempts), across=across_attempts(cfg.rows), attempts=attempts
    )
