"""Grade a patch with the hidden tests, in a fresh container the agent never touched.

Steps: apply the agent's patch (recording how), put back every protected file the patch touched
(test files, conftest.py, test-runner config: an agent must not pass by editing or planting
them), delete new modules that would shadow the test runner or the standard library, apply the
hidden tests, run them, read per-test results with the task's parser, cross-check them with the
exit code.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sandbox import Backend, DockerBackend, FileOpError, Limits, Sandbox, SandboxError

from ..parsers import NOT_RUN, TestReport, get_parser
from ..tasks import Task
from .outcome import Grade, Outcome, TestTally, classify
from .patching import WORK, apply_patch, remove_shadowing, revert_protected

TEST_OUTPUT_BYTES = 5_000_000  # kept per stream; head and tail, so the summary at the end survives


def grade(
    task: Task, patch: str, image: str, *, base: str, limits: Limits, backend: Backend | None = None,
    run_id: str = "",
) -> tuple[Grade, str, TestReport | None]:
    """Grade `patch` for `task` in a fresh container from `image` started by `backend` (default:
    Docker); returns the grade, the test output and the parsed report (None when no tests ran).
    Infrastructure problems become an `infra_error` grade, never an exception."""
    backend = backend or DockerBackend()
    started = time.monotonic()
    output = ""
    if not patch.strip():  # nothing to test: no test runs, so none passed and none failed
        empty = Grade(task_id=task.id, outcome=Outcome.empty_patch, resolved=False, note="the patch is empty")
        empty.tests = {t: NOT_RUN for t in [*task.fail_to_pass, *task.pass_to_pass]}
        empty.fail_to_pass = TestTally(total=len(task.fail_to_pass), ran=False)
        empty.pass_to_pass = TestTally(total=len(task.pass_to_pass), ran=False)
        return empty, output, None
    try:
        with backend.start(image, limits=limits.with_(network=False), role="grading", run_id=run_id) as sb:
            sb.exec(["mkdir", "-p", WORK], timeout=limits.setup_timeout_s)
            method = apply_patch(sb, patch, "agent.diff")
            if method is None:
                result = Grade(task_id=task.id, outcome=Outcome.patch_apply_failed, resolved=False)
                result.note = "the patch does not apply with git apply, git apply --3way or patch --fuzz=5"
                return _timed(result, started), output, None
            reverted = revert_protected(sb, task, base) + remove_shadowing(sb)
            if not apply_hidden_tests(sb, task):
                result = Grade(task_id=task.id, outcome=Outcome.task_error, resolved=False, apply_method=method)
                result.note = "the task's hidden test patch does not apply to its base commit (the task's to fix)"
                return _timed(result, started), output, None
            run = run_hidden_tests(sb, task)
            output = run.output
            if run.timed_out:
                result = Grade(task_id=task.id, outcome=Outcome.test_timeout, resolved=False, apply_method=method)
                result.note = f"the hidden tests did not finish within {task.timeouts.tests_s:g}s"
                result.reverted = reverted
                return _timed(result, started), output, None
            parsed = run.report
            consistent, why = parsed.consistent_with(run.exit_code)
            result = classify(task, parsed.statuses, run.exit_code, consistent, why)
            result.apply_method, result.reverted = method, reverted
            if not parsed.found_summary:
                result.note = (result.note + "; " if result.note else "") + parsed.missing_hint
            return _timed(result, started), output, parsed
    except SandboxError as exc:
        result = Grade(task_id=task.id, outcome=Outcome.infra_error, resolved=False, note=f"{type(exc).__name__}: {exc}")
        return _timed(result, started), output, None


@dataclass
class HiddenRun:
    """One run of a task's hidden test command in a container."""

    output: str  # stdout, then stderr under a "[stderr]" line
    report: TestReport  # what the task's parser read (empty when the run timed out)
    exit_code: int | None
    timed_out: bool
    seconds: float


def apply_hidden_tests(sb: Sandbox, task: Task) -> bool:
    """Apply the task's hidden test patch (exactly, with `git apply`) and write its hidden files;
    False when the patch does not apply."""
    test_patch = task.test_patch()
    if test_patch.strip() and apply_patch(sb, test_patch, "tests.diff") != "git apply":
        return False
    for path, content in task.hidden_tests.files.items():
        sb.write_file(path, content)
    return True


def run_hidden_tests(sb: Sandbox, task: Task) -> HiddenRun:
    """Run the hidden test command once and read its results with the task's parser."""
    run = sb.exec(task.hidden_tests.command, timeout=task.timeouts.tests_s, output_bytes=TEST_OUTPUT_BYTES)
    output = run.stdout + (("\n[stderr]\n" + run.stderr) if run.stderr.strip() else "")
    if run.timed_out:
        return HiddenRun(output, TestReport(), run.returncode, True, run.duration_s)
    parser = get_parser(task.hidden_tests.parser)
    parsed = parser.parse(run.stdout + "\n" + run.stderr, _results_file(sb, parser.results_file))
    return HiddenRun(output, parsed, run.returncode, False, run.duration_s)


def _results_file(sb: Sandbox, path: str | None) -> bytes | None:
    """The results file a parser reads (None when it has none or the command did not write it)."""
    if path is None:
        return None
    try:
        return sb.read_file(path, max_bytes=TEST_OUTPUT_BYTES * 4)
    except FileOpError:
        return None


def _timed(grade_: Grade, started: float) -> Grade:
    grade_.seconds = round(time.monotonic() - started, 3)
    return grade_
