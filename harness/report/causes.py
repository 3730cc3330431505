"""Failure causes: why an attempt that did not resolve failed, each with its evidence.

Causes are computed at report time, deterministically, from what a run folder recorded: the
attempt's transcript (tool calls, their results, test runs, the patch, the stop), its row (the
outcome, the stop reason, the FAIL_TO_PASS counts), grading's test output, and the task's gold
patch when the spec the manifest names is still there. Nothing is asked of a model. Every cause
comes with its evidence: the transcript events (their ``seq``, the event id) or the lines of a
graded file it rests on, quoted. A cause refines an outcome and a stop reason and never repeats
them: an attempt whose outcome is ``resolved`` or not scored (``infra_error``, ``task_error``) has
none, nor has a control's (gold, noop). The rules and their thresholds are documented in docs/failures.md; any change of what they
decide bumps ``RULES_VERSION`` (the history index recomputes causes stored under another version).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from ..records import Manifest, ResultRow
from ..transcript import (
    ModelResponse,
    PatchEvent,
    Stop,
    TestRun,
    ToolCallEvent,
    ToolResultEvent,
    read_transcript,
)
from ..vocabulary import NOT_SCORED, Cause, Outcome, StopReason
from .recovery import attempt_events, is_edit

RULES_VERSION = 2  # 2: the turn that finished with a text reply is a step; git apply/patch in bash are edits

LOOP_REPEATS = 3  # the same normalised action this many times (with no file change between, but for edits)
TOOL_ERRORS = 3  # refused tool calls in one attempt
EARLY_STEPS = 3  # an agent that stops by itself within this many steps gave up early
QUOTE = 200  # characters of a quoted line

_TEST_COMMAND = re.compile(
    r"(?:^|[\s;&|(])(?:py\.?test|python[0-9.]*\s+-m\s+(?:pytest|unittest)|tox|nox|go\s+test|cargo\s+(?:test|nextest)"
    r"|(?:npm|yarn|pnpm)\s+(?:run\s+)?test|npx\s+(?:jest|vitest)|jest|vitest|mvn\s+(?:-\S+\s+)*test"
    r"|gradle\w*\s+test|make\s+test)\b"
)
_INSTALL = re.compile(
    r"(?:^|[\s;&|(])(?:pip[0-9.]*|python[0-9.]*\s+-m\s+pip|uv\s+pip|poetry|conda|mamba|apt-get|apt|apk|yum|npm|yarn|pnpm)"
    r"\s+(?:-\S+\s+)*(?:install|add)\b"
)
_MISSING_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '?([\w.]+)'?")
_CANNOT_IMPORT = re.compile(r"ImportError: cannot import name '?(\w+)'?")
_SYNTAX = re.compile(r"\b(?:SyntaxError|IndentationError|TabError)\b")
_NOT_FOUND = re.compile(r"\b(?:command not found|No such file or directory: '?(?:pip|pip3|pytest)'?)")
_CD_PREFIX = re.compile(r"^\s*cd\s+\S+\s*(?:&&|;)\s*")
_PAGER_TAIL = re.compile(r"\s*\|\s*(?:head|tail)(?:\s+-n)?(?:\s+-?\d+)?\s*$")
#: The controls' stop reasons: a control is no agent, its failures have no cause.
CONTROL_STOPS = frozenset({StopReason.noop, StopReason.no_gold_patch, StopReason.gold_patch_failed})
_DIFF_FILE = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.M)


class Evidence(BaseModel):
    """One thing a cause rests on: a transcript event (``seq``, its id) or a line of a graded file."""

    source: str = "transcript"  # transcript | grade.json | test_output.txt
    seq: int | None = None  # the transcript event's id
    step: int | None = None
    line: int | None = None  # 1-based, in a file source
    quote: str = ""


class Finding(BaseModel):
    cause: Cause
    summary: str  # one line: what the rule found
    evidence: list[Evidence] = Field(default_factory=list)


class AttemptCauses(BaseModel):
    task_id: str
    config: str
    repeat: int = 0
    attempt: int = 1
    outcome: str = ""
    stop_reason: str = ""
    transcript_path: str = ""
    found: bool = True  # False: the transcript (or this attempt in it) is missing; causes from the grade only
    rules_version: int = RULES_VERSION
    causes: list[Finding] = Field(default_factory=list)

    def names(self) -> list[str]:
        return [f.cause.value for f in self.causes]


@dataclass
class TaskFacts:
    """What the task's spec says that the rules use (empty when the spec is gone)."""

    gold_files: set[str] = field(default_factory=set)
    fail_to_pass: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------- helpers


def _quote(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= QUOTE else text[: QUOTE - 3] + "..."


def normalise(command: str) -> str:
    """A command as the loop rule compares it: leading `cd DIR &&`, `2>&1` and a trailing
    `| head`/`| tail` dropped, whitespace collapsed."""
    text = command.strip()
    while True:
        shorter = _CD_PREFIX.sub("", text, count=1)
        if shorter == text:
            break
        text = shorter
    text = text.replace("2>&1", " ")
    text = _PAGER_TAIL.sub("", text)
    return " ".join(text.split())


def command_of(call: ToolCallEvent) -> str:
    """The shell command a call runs ("" when it runs none)."""
    if call.command:
        return call.command
    if call.name == "bash":
        return str((call.arguments or {}).get("command", ""))
    return ""


def action_key(call: ToolCallEvent) -> str:
    """What the agent did, compared across calls: a normalised command, or the tool and its arguments."""
    command = command_of(call)
    if command:
        return f"$ {normalise(command)}"
    if call.name == "run_tests":
        return "run_tests"
    return f"{call.name} {json.dumps(call.arguments or {}, sort_keys=True)}"


def is_test_call(call: ToolCallEvent) -> bool:
    return call.name == "run_tests" or call.kind == "test" or bool(_TEST_COMMAND.search(command_of(call)))


def is_refused(result: ToolResultEvent) -> bool:
    """A call the tool refused (bad arguments, an edit that does not apply); a command that ran and
    exited non-zero is not one."""
    return result.is_error or (result.kind == "edit" and result.exit_code not in (None, 0))


def _lines(text: str, pattern: re.Pattern) -> list[tuple[int, str, re.Match]]:
    return [(n, line, m) for n, line in enumerate(text.splitlines(), 1) if (m := pattern.search(line))]


def patch_files(diff: str) -> list[str]:
    return list(dict.fromkeys(b for _, b in _DIFF_FILE.findall(diff)))


def task_facts(manifest: Manifest, task_id: str) -> TaskFacts:
    """Gold's footprint and the FAIL_TO_PASS ids, from the spec the manifest names (if still there)."""
    entry = manifest.tasks.get(task_id)
    if entry is None or not entry.spec:
        return TaskFacts()
    path = Path(entry.spec)
    if not path.is_absolute():
        path = Path(manifest.cwd or ".") / path
    import yaml

    try:
        data = yaml.safe_load(path.read_text())
        gold = data.get("gold_patch") or ""
        if not gold and data.get("gold_patch_file"):
            gold = (path.parent / data["gold_patch_file"]).read_text()
    except (OSError, yaml.YAMLError, AttributeError):
        return TaskFacts()
    return TaskFacts(set(patch_files(str(gold))), [str(t) for t in data.get("FAIL_TO_PASS") or []])


# ---------------------------------------------------------------------------- the rules


@dataclass
class _Attempt:
    """One attempt's events, sorted into what the rules read."""

    calls: list[ToolCallEvent] = field(default_factory=list)
    results: dict[int, ToolResultEvent] = field(default_factory=dict)  # a call's seq -> its result
    tests: list[tuple[ToolCallEvent, ToolResultEvent | None, TestRun | None]] = field(default_factory=list)
    patch: PatchEvent | None = None
    stop: Stop | None = None
    first_edit_seq: int | None = None  # the first successful file change
    edits: int = 0
    steps: int = 0


def runs_by_call(events: list) -> dict[int, TestRun]:
    """A test call's seq -> the test_run event it produced. The built-in agent and the external CLIs'
    recorder write a test_run right after the result of the call that ran the tests; one step can
    hold several calls (a CLI's parallel tool calls), so the step alone does not say which."""
    out: dict[int, TestRun] = {}
    waiting: dict[str, ToolCallEvent] = {}
    last: ToolCallEvent | None = None  # the call whose result came last
    for e in events:
        if isinstance(e, ToolCallEvent):
            waiting[e.call_id] = e
        elif isinstance(e, ToolResultEvent):
            last = waiting.pop(e.call_id, None)
        elif isinstance(e, TestRun) and last is not None and last.seq not in out:
            out[last.seq] = e
            last = None
    return out


def _sort(events: list) -> _Attempt:
    at = _Attempt()
    runs = runs_by_call(events)
    steps = set()
    waiting: dict[str, ToolCallEvent] = {}  # call ids repeat (a scripted model's, some CLIs'): the latest call's
    last_turn: ModelResponse | None = None
    for e in events:
        if isinstance(e, ToolCallEvent):
            at.calls.append(e)
            steps.add(e.step)
            waiting[e.call_id] = e
        elif isinstance(e, ToolResultEvent):
            call = waiting.pop(e.call_id, None)
            if call is not None:
                at.results[call.seq] = e
        elif isinstance(e, PatchEvent):
            at.patch = e
        elif isinstance(e, Stop):
            at.stop = e
        elif isinstance(e, ModelResponse):
            last_turn = e
    for call in at.calls:
        result = at.results.get(call.seq)
        if is_edit(call) and result is not None and not is_refused(result) and result.exit_code in (None, 0):
            at.edits += 1
            if at.first_edit_seq is None:
                at.first_edit_seq = call.seq
        if is_test_call(call):
            at.tests.append((call, result, runs.get(call.seq)))
    if last_turn is not None and not last_turn.tool_calls:
        steps.add(last_turn.step)  # it finished by saying so (Claude Code, a no_tool_call stop): a step as a submit is
    at.steps = len(steps)
    return at


def _red(result: ToolResultEvent | None, run: TestRun | None) -> bool:
    if run is not None:
        return not run.green
    return result is not None and (result.exit_code not in (None, 0) or result.timed_out)


def _test_quote(call: ToolCallEvent, result: ToolResultEvent | None, run: TestRun | None) -> Evidence:
    if run is not None:
        failing = f": failing {', '.join(run.failing[:5])}" if run.failing else ""
        text = f"{run.command}: exit {run.exit_code}, {run.passed} passed, {run.failed} failed, {run.errors} errors{failing}"
        return Evidence(seq=run.seq, step=run.step, quote=_quote(text))
    code = result.exit_code if result is not None else None
    return Evidence(seq=(result or call).seq, step=call.step, quote=_quote(f"$ {command_of(call)}  (exit {code})"))


def _stop_evidence(at: _Attempt, stop_reason: str) -> Evidence:
    if at.stop is not None:
        detail = f" ({at.stop.detail})" if at.stop.detail else ""
        return Evidence(seq=at.stop.seq, quote=_quote(f"stop: {at.stop.reason}{detail}"))
    return Evidence(source="grade.json", quote=f"stop_reason: {stop_reason or '(none)'}")


def _never_ran_tests(at: _Attempt, row: ResultRow) -> Finding | None:
    if at.tests:
        return None
    return Finding(
        cause=Cause.never_ran_tests,
        summary=f"{at.steps} step(s), {len(at.calls)} tool call(s), no test run",
        evidence=[_stop_evidence(at, row.stop_reason)],
    )


def _submitted_failing(at: _Attempt, row: ResultRow) -> Finding | None:
    if row.stop_reason != StopReason.submitted or not at.tests:
        return None
    call, result, run = at.tests[-1]
    if not _red(result, run):
        return None
    return Finding(
        cause=Cause.submitted_failing,
        summary="submitted while its last test run was red",
        evidence=[_test_quote(call, result, run), _stop_evidence(at, row.stop_reason)],
    )


def _roots(files: list[str]) -> set[str]:
    """Module names a patch's files make importable: `pkg/mod.py` gives `pkg` and `pkg.mod`."""
    out = set()
    for f in files:
        parts = [p for p in f.removesuffix(".py").split("/") if p not in ("src", "lib")]
        for i in range(1, len(parts) + 1):
            out.add(".".join(parts[:i]))
    return out


def _broke(at: _Attempt, row: ResultRow, grading_output: str) -> Finding | None:
    files = at.patch.files if at.patch else []
    ours = _roots(files)

    def introduced(line: str) -> bool:
        if _SYNTAX.search(line) or _CANNOT_IMPORT.search(line):
            return True
        missing = _MISSING_MODULE.search(line)
        return bool(missing and missing.group(1) in ours)

    evidence: list[Evidence] = []
    before: set[str] = set()
    for call in at.calls:
        result = at.results.get(call.seq)
        if result is None:
            continue
        hits = [(n, line) for n, line in enumerate(result.output.splitlines(), 1) if introduced(line)]
        if at.first_edit_seq is None or call.seq < at.first_edit_seq:
            before |= {_quote(line) for _, line in hits}
            continue
        for _, line in hits:
            if _quote(line) not in before and len(evidence) < 3:
                evidence.append(Evidence(seq=result.seq, step=result.step, quote=_quote(line)))
                before.add(_quote(line))
    if row.outcome != Outcome.empty_patch:
        for n, line in [(n, line) for n, line in enumerate(grading_output.splitlines(), 1) if introduced(line)][:3]:
            evidence.append(Evidence(source="test_output.txt", line=n, quote=_quote(line)))
    if not evidence:
        return None
    return Finding(
        cause=Cause.broke_syntax_or_import, summary="a syntax or import error after its edits", evidence=evidence
    )


def _edited_elsewhere(at: _Attempt, row: ResultRow, facts: TaskFacts, diff: str) -> Finding | None:
    files = at.patch.files if at.patch and at.patch.files else patch_files(diff)
    if not facts.gold_files or not files or set(files) & facts.gold_files:
        return None
    ev = (
        Evidence(seq=at.patch.seq, quote=_quote("patch: " + ", ".join(files)))
        if at.patch
        else Evidence(source="patch.diff", quote=_quote("patch: " + ", ".join(files)))
    )
    return Finding(
        cause=Cause.edited_elsewhere,
        summary=f"changed {', '.join(files[:5])}; the fix is in {', '.join(sorted(facts.gold_files)[:5])}",
        evidence=[ev],
    )


def _partial_fix(row: ResultRow, facts: TaskFacts) -> Finding | None:
    f2p = row.fail_to_pass
    passed, total = int(f2p.get("passed", 0) or 0), int(f2p.get("total", 0) or 0)
    if not (0 < passed < total):
        return None
    ids = facts.fail_to_pass or list(row.tests)[:total]
    failing = [t for t in ids if row.tests.get(t) not in ("PASSED", "XFAIL")]
    quote = f"FAIL_TO_PASS: {passed} of {total} pass" + (f"; failing {', '.join(failing[:5])}" if failing else "")
    return Finding(
        cause=Cause.partial_fix,
        summary=f"{passed} of {total} FAIL_TO_PASS tests pass",
        evidence=[Evidence(source="grade.json", quote=_quote(quote))],
    )


def _looped(at: _Attempt) -> Finding | None:
    segment: dict[str, list[ToolCallEvent]] = {}
    edits: dict[str, list[ToolCallEvent]] = {}
    for call in at.calls:
        key = action_key(call)
        result = at.results.get(call.seq)
        editing = is_edit(call)
        seen = (edits if editing else segment).setdefault(key, [])
        seen.append(call)
        if len(seen) >= LOOP_REPEATS:
            return Finding(
                cause=Cause.looped,
                summary=f"the same {'edit' if editing else 'action'} {len(seen)} times"
                + ("" if editing else " with no file changed between"),
                evidence=[Evidence(seq=c.seq, step=c.step, quote=_quote(key)) for c in seen],
            )
        if editing and result is not None and not is_refused(result) and result.exit_code in (None, 0):
            segment = {}  # a file changed: running the same thing again is checking it
    return None


def _gave_up_early(at: _Attempt, row: ResultRow) -> Finding | None:
    if row.stop_reason not in (StopReason.submitted, StopReason.no_tool_call):
        return None
    if at.edits and at.steps > EARLY_STEPS:
        return None
    why = "with no change" if not at.edits else f"after {at.steps} step(s)"
    return Finding(
        cause=Cause.gave_up_early,
        summary=f"stopped by itself {why} ({at.steps} step(s), {at.edits} change(s))",
        evidence=[_stop_evidence(at, row.stop_reason)],
    )


def _environment_confusion(at: _Attempt) -> Finding | None:
    ours = _roots(at.patch.files if at.patch else [])
    evidence: list[Evidence] = []
    for call in at.calls:
        command = command_of(call)
        if command and _INSTALL.search(command):
            evidence.append(Evidence(seq=call.seq, step=call.step, quote=_quote(f"$ {command}")))
        result = at.results.get(call.seq)
        if result is None:
            continue
        for _, line, m in _lines(result.output, _MISSING_MODULE) + _lines(result.output, _NOT_FOUND):
            if m.re is _MISSING_MODULE and m.group(1) in ours:
                continue  # a module of the patch: the agent broke it (broke_syntax_or_import)
            evidence.append(Evidence(seq=result.seq, step=result.step, quote=_quote(line)))
            break
    if not evidence:
        return None
    return Finding(
        cause=Cause.environment_confusion,
        summary=f"{len(evidence)} install attempt(s) or missing module(s)/command(s)",
        evidence=evidence[:5],
    )


def _tool_misuse(at: _Attempt) -> Finding | None:
    refused = [r for c in at.calls if (r := at.results.get(c.seq)) is not None and is_refused(r)]
    if len(refused) < TOOL_ERRORS:
        return None
    names = sorted({r.name for r in refused})
    return Finding(
        cause=Cause.tool_misuse,
        summary=f"{len(refused)} tool call(s) refused ({', '.join(names)})",
        evidence=[
            Evidence(seq=r.seq, step=r.step, quote=_quote(next(iter(r.output.splitlines()), ""))) for r in refused[:5]
        ],
    )


def causes_of(
    events: list, row: ResultRow, facts: TaskFacts | None = None, *, grading_output: str = "", diff: str = ""
) -> list[Finding]:
    """The causes of one attempt from its events (only this attempt's: `recovery.attempt_events`),
    its row, the task's facts, grading's output and its patch. None for an attempt that resolved or
    is not scored."""
    if row.resolved or row.outcome in NOT_SCORED or row.stop_reason in CONTROL_STOPS:
        return []
    facts = facts or TaskFacts()
    at = _sort(events)
    found = [
        _never_ran_tests(at, row) if events else None,
        _submitted_failing(at, row),
        _broke(at, row, grading_output),
        _edited_elsewhere(at, row, facts, diff),
        _partial_fix(row, facts),
        _looped(at),
        _gave_up_early(at, row) if events else None,
        _environment_confusion(at),
        _tool_misuse(at),
    ]
    return [f for f in found if f is not None]


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace") if path.is_file() else ""
    except OSError:
        return ""


def attempt_causes(
    run_dir: Path, row: ResultRow, config: str, manifest: Manifest, cache: dict | None = None
) -> AttemptCauses:
    """One row's causes, from its run folder. `cache` keeps transcripts and task facts between rows."""
    cache = {} if cache is None else cache
    out = AttemptCauses(
        task_id=row.task_id,
        config=config,
        repeat=row.repeat,
        attempt=row.attempt,
        outcome=row.outcome,
        stop_reason=row.stop_reason,
        transcript_path=row.transcript_path,
    )
    if row.resolved or row.outcome in NOT_SCORED or row.stop_reason in CONTROL_STOPS:
        return out
    path = Path(run_dir) / row.transcript_path if row.transcript_path else None
    events = None
    if path is not None and path.is_file():
        if path not in cache:
            cache[path] = read_transcript(path)
        events = attempt_events(cache[path], row.attempt)
    out.found = events is not None
    key = ("facts", row.task_id)
    if key not in cache:
        cache[key] = task_facts(manifest, row.task_id)
    adir = Path(run_dir) / row.dir if row.dir else None
    out.causes = causes_of(
        events or [],
        row,
        cache[key],
        grading_output=_read(adir / "test_output.txt") if adir else "",
        diff=_read(adir / "patch.diff") if adir else "",
    )
    return out
