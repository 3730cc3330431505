"""Grade a patch with the hidden tests, in a fresh container the agent never touched.

Steps: apply the agent's patch (recording how), put back every protected file the patch touched
(test files, conftest.py, test-runner config: an agent must not pass by editing or planting
them), delete new modules that would shadow the test runner or the standard library, apply the
hidden tests, run them, read per-test results with the task's parser, cross-check them with the
exit code.
"""

from __future__ import annotations

import time

from sandbox import Backend, DockerBackend, FileOpError, InfraError, Limits, Sandbox, SandboxError

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
    if not patch.strip():  # nothing to test: the base fails FAIL_TO_PASS by definition
        empty = Grade(task_id=task.id, outcome=Outcome.empty_patch, resolved=False, note="the patch is empty")
        empty.tests = {t: NOT_RUN for t in [*task.fail_to_pass, *task.pass_to_pass]}
        empty.fail_to_pass = TestTally(total=len(task.fail_to_pass), failed=len(task.fail_to_pass))
        empty.pass_to_pass = TestTally(total=len(task.pass_to_pass))
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
            test_patch = task.test_patch()
            if test_patch.strip() and apply_patch(sb, test_patch, "tests.diff") != "git apply":
                raise InfraError("the hidden test patch does not apply cleanly to the base commit (a task spec bug)")
            for path, content in task.hidden_tests.files.items():
                sb.write_file(path, content)
            run = sb.exec(task.hidden_tests.command, timeout=task.timeouts.tests_s, output_bytes=TEST_OUTPUT_BYTES)
            output = run.stdout + (("\n[stderr]\n" + run.stderr) if run.stderr.strip() else "")
            if run.timed_out:
                result = Grade(task_id=task.id, outcome=Outcome.test_timeout, resolved=False, apply_method=method)
                result.note = f"the hidden tests did not finish within {task.timeouts.tests_s:g}s"
                result.reverted = reverted
                return _timed(result, started), output, None
            parser = get_parser(task.hidden_tests.parser)
            parsed = parser.parse(run.stdout + "\n" + run.stderr, _results_file(sb, parser.results_file))
            consistent, why = parsed.consistent_with(run.returncode)
            result = classify(task, parsed.statuses, run.returncode, consistent, why)
            result.apply_method, result.reverted = method, reverted
            result.messages = {t: parsed.messages[t] for t in result.failing() if t in parsed.messages}
            if not parsed.found_summary:
                result.note = (result.note + "; " if result.note else "") + parsed.missing_hint
            return _timed(result, started), output, parsed
    except SandboxError as exc:
        result = Grade(task_id=task.id, outcome=Outcome.infra_error, resolved=False, note=f"{type(exc).__name__}: {exc}")
        return _timed(result, started), output, None


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
