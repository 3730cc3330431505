"""What a reviewer needs of one attempt, read from the run folder: the problem statement, each
failing hidden test with its failure message, the FAIL_TO_PASS tests it made pass, and the
attempt as plain data (`show --json`). Used by `show`, the HTML report and the Inspect export.

Failure messages come from the attempt's grade.json (`messages`, written by grading from the
parser's TestReport); for runs graded before grade.json had them, the attempt's test_output.txt
is parsed again with the task's parser (the one its spec names, pytest when the spec is gone).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..records import Manifest, ResultRow
from ..transcript import Event, read_transcript
from .acceptance import DEFAULT_POLICY, Policy, judge, model_reviews, tell

PASSING = ("PASSED", "XFAIL")


def grade_of(run_dir: Path, row: ResultRow) -> dict:
    path = Path(run_dir) / row.dir / "grade.json"
    try:
        return json.loads(path.read_text()) if row.dir and path.is_file() else {}
    except ValueError:
        return {}


def fail_to_pass(row: ResultRow) -> list[str]:
    """The FAIL_TO_PASS test ids (grading lists them first in `tests`)."""
    return list(row.tests)[: int(row.fail_to_pass.get("total", 0) or 0)]


def failing_tests(row: ResultRow) -> list[tuple[str, str, str]]:
    """(test, status, 'FAIL_TO_PASS' | 'PASS_TO_PASS') of each listed test that ran and did not pass
    (a test that never ran, as with an empty patch, did not fail)."""
    f2p = set(fail_to_pass(row))
    return [
        (t, s, "FAIL_TO_PASS" if t in f2p else "PASS_TO_PASS")
        for t, s in row.tests.items()
        if s not in PASSING and s not in ("SKIPPED", "not_run")
    ]


def _spec_of(manifest: Manifest | None, task_id: str) -> dict:
    entry = manifest.tasks.get(task_id) if manifest is not None else None
    spec = entry.spec if entry is not None else ""
    if not spec or not Path(spec).is_file():
        return {}
    import yaml

    try:
        data = yaml.safe_load(Path(spec).read_text())
    except (OSError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def failure_messages(run_dir: Path, row: ResultRow, manifest: Manifest | None = None) -> dict[str, str]:
    """test id -> failure message, for the failing listed tests of this attempt."""
    wanted = {t for t, _, _ in failing_tests(row)}
    if not wanted:
        return {}
    grade = grade_of(run_dir, row)
    if "messages" in grade:
        return {t: m for t, m in (grade.get("messages") or {}).items() if t in wanted}
    output = Path(run_dir) / row.dir / "test_output.txt"
    if not row.dir or not output.is_file():
        return {}
    from ..parsers import get_parser
    from ..registry import UnknownName

    name = ((_spec_of(manifest, row.task_id).get("hidden_tests") or {}).get("parser")) or "pytest"
    try:
        parser = get_parser(name)
    except UnknownName:
        return {}
    report = parser.parse(output.read_text(errors="replace"), None)
    return {t: m for t, m in report.messages.items() if t in wanted}


def problem_statement(
    run_dir: Path, row: ResultRow, events: list[Event] | None = None, manifest: Manifest | None = None
) -> str:
    """What the agent was asked: the transcript's attempt_start, else the task spec the manifest
    names, else the first user message the model was sent."""
    if events is None:
        path = Path(run_dir) / row.transcript_path
        events = read_transcript(path) if row.transcript_path and path.is_file() else []
    for event in events:
        if event.type == "attempt_start" and event.problem_statement:
            return event.problem_statement
    spec = _spec_of(manifest, row.task_id).get("problem_statement")
    if isinstance(spec, str) and spec.strip():
        return spec
    for event in events:
        if event.type == "model_request":
            for message in event.new_messages:
                if message.get("role") == "user":
                    return str(message.get("content", ""))
    return ""


def steps_of(events: list, attempt: int) -> list[dict]:
    """The steps of one attempt: what the agent said, each tool call with its result."""
    steps: list[dict] = []
    current = 0
    calls: dict[str, dict] = {}
    for event in events:
        if event.type == "attempt_start":
            current = event.attempt
            continue
        if current != attempt:
            continue
        if event.type == "model_response":
            steps.append(
                {
                    "step": event.step,
                    "text": event.text,
                    "usage": event.usage,
                    "cost_usd": event.cost_usd,
                    "latency_s": event.latency_s,
                    "tool_calls": [],
                }
            )
        elif event.type == "tool_call" and steps:
            call = {
                "id": event.call_id,
                "name": event.name,
                "arguments": event.arguments,
                "raw_arguments": event.raw_arguments,
                "result": None,
            }
            calls[event.call_id] = call
            steps[-1]["tool_calls"].append(call)
        elif event.type == "tool_result" and event.call_id in calls:
            calls[event.call_id]["result"] = {
                "output": event.output,
                "is_error": event.is_error,
                "exit_code": event.exit_code,
                "timed_out": event.timed_out,
                "truncated": event.truncated,
                "duration_s": event.duration_s,
            }
        elif event.type == "test_run" and steps:
            steps[-1].setdefault("test_runs", []).append(
                {
                    "command": event.command,
                    "green": event.green,
                    "passed": event.passed,
                    "failed": event.failed,
                    "errors": event.errors,
                    "failing": event.failing,
                }
            )
    return steps


def attempt_data(
    run_dir: Path, rows: list[ResultRow], manifest: Manifest | None = None, policy: Policy = DEFAULT_POLICY
) -> dict[str, Any]:
    """One (task, configuration, repeat) as data: the problem and, per attempt, its row, failing
    tests with messages, the tests it made pass, its acceptance under `policy` (verdict, reasons,
    evidence), its steps and its patch. What `show --json` prints."""
    run_dir = Path(run_dir)
    first = rows[0]
    path = run_dir / first.transcript_path
    events = read_transcript(path) if first.transcript_path and path.is_file() else []
    out: dict[str, Any] = {
        "run_dir": str(run_dir),
        "task_id": first.task_id,
        "config": first.config,
        "repeat": first.repeat,
        "problem_statement": problem_statement(run_dir, first, events, manifest),
        "transcript_path": str(path),
        "attempts": [],
    }
    reviews = model_reviews(run_dir, rows, policy)  # read only when the policy counts a model
    for row in rows:
        messages = failure_messages(run_dir, row, manifest)
        patch = run_dir / row.patch_path if row.patch_path else None
        verdict = judge(row, policy, reviews)
        out["attempts"].append(
            {
                "row": row.model_dump(mode="json"),
                "failing_tests": [
                    {"test": t, "status": s, "kind": k, "message": messages.get(t, "")}
                    for t, s, k in failing_tests(row)
                ],
                "fail_to_pass_passing": [t for t in fail_to_pass(row) if row.tests.get(t) in PASSING],
                "acceptance": {
                    "verdict": verdict.acceptance.value,
                    "reasons": verdict.reasons,
                    "evidence": verdict.evidence,
                    "said": tell(verdict),
                    "policy": policy.describe(),
                },
                "steps": steps_of(events, row.attempt),
                "patch": patch.read_text(errors="replace") if patch and patch.is_file() else "",
            }
        )
    return out
