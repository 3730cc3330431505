"""Grade a patch with the hidden tests, in a fresh container the agent never touched.

Steps: apply the agent's patch (recording how), put back every protected file the patch touched
(test files, conftest.py, test-runner config: an agent must not pass by editing or planting
them), delete new modules that would shadow the test runner or the standard library, apply the
hidden tests, run them, parse per-test results, cross-check with the exit code.
"""

from __future__ import annotations

import time
from enum import Enum

from pydantic import BaseModel, Field

from sandbox import InfraError, Limits, Sandbox, SandboxError

from .parsers.pytest import ERROR, FAILED, PARSERS, PASSED, XFAIL
from .tasks import Task

GRADE_SCHEMA = 1
WORK = "/tmp/wholeloop-grade"
TEST_OUTPUT_BYTES = 5_000_000  # kept per stream; head and tail, so the summary at the end survives


class Outcome(str, Enum):
    resolved = "resolved"
    unresolved = "unresolved"
    regression = "regression"  # a PASS_TO_PASS test broke
    empty_patch = "empty_patch"
    patch_apply_failed = "patch_apply_failed"
    test_timeout = "test_timeout"
    infra_error = "infra_error"  # never counted as the agent's failure


class TestTally(BaseModel):
    passed: int = 0
    failed: int = 0
    total: int = 0


class Grade(BaseModel):
    schema_version: int = GRADE_SCHEMA
    task_id: str
    outcome: Outcome
    resolved: bool
    apply_method: str | None = None
    reverted: list[str] = Field(default_factory=list, description="protected files put back to base")
    tests: dict[str, str] = Field(default_factory=dict, description="FAIL_TO_PASS and PASS_TO_PASS statuses")
    fail_to_pass: TestTally = Field(default_factory=TestTally)
    pass_to_pass: TestTally = Field(default_factory=TestTally)
    exit_code: int | None = None
    consistent: bool = True
    note: str = ""
    seconds: float = 0.0

    def failing(self) -> list[str]:
        return [t for t, s in self.tests.items() if s not in (PASSED, XFAIL, "SKIPPED")]


def _passed(status: str) -> bool:
    return status in (PASSED, XFAIL)


def _failed(status: str) -> bool:
    return status in (FAILED, ERROR, "missing")


def classify(task: Task, statuses: dict[str, str], exit_code: int | None, consistent: bool, note: str) -> Grade:
    """The outcome from parsed statuses (tests absent from the output count as failed)."""
    tests = {t: statuses.get(t, "missing") for t in [*task.fail_to_pass, *task.pass_to_pass]}
    f2p = TestTally(total=len(task.fail_to_pass))
    f2p.passed = sum(_passed(tests[t]) for t in task.fail_to_pass)
    f2p.failed = f2p.total - f2p.passed
    p2p = TestTally(total=len(task.pass_to_pass))
    p2p.failed = sum(_failed(tests[t]) for t in task.pass_to_pass)
    p2p.passed = sum(_passed(tests[t]) for t in task.pass_to_pass)
    if p2p.failed:
        outcome = Outcome.regression
    elif f2p.failed == 0 and consistent:
        outcome = Outcome.resolved
    else:
        outcome = Outcome.unresolved
    return Grade(
        task_id=task.id,
        outcome=outcome,
        resolved=outcome is Outcome.resolved,
        tests=tests,
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        exit_code=exit_code,
        consistent=consistent,
        note=note,
    )


def apply_patch(sb: Sandbox, patch: str, name: str) -> str | None:
    """Apply a patch in the container's repository; the method that worked, or None."""
    path = f"{WORK}/{name}"
    sb.write_file(path, patch if patch.endswith("\n") else patch + "\n")
    for method, cmd in (
        ("git apply", f"git apply --binary --whitespace=nowarn {path}"),
        ("git apply --3way", f"git apply --binary --3way --whitespace=nowarn {path}"),
        ("patch --fuzz=5", f"patch --batch --forward --fuzz=5 -p1 -i {path}"),
    ):
        result = sb.exec(cmd, timeout=120)
        if result.ok:
            return method
        sb.exec("git checkout -q -- . && git clean -fdq -e .git", timeout=120)  # undo a partial apply
    return None


def revert_protected(sb: Sandbox, task: Task, base: str) -> list[str]:
    """Put protected paths the agent changed back to `base`; delete the ones it created."""
    specs = [f":(glob){p}" for p in task.protected_paths] + [f":(literal){p}" for p in touched_files(task.test_patch())]
    specs += [f":(literal){p}" for p in task.hidden_tests.files]
    if not specs:
        return []
    listing = sb.exec(["git", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *specs], timeout=120)
    if not listing.ok:
        raise InfraError(f"cannot list changed files: {listing.stderr.strip()[-300:]}")
    entries = [e for e in listing.stdout.split("\0") if e]
    reverted, tracked, untracked = [], [], []
    for entry in entries:
        status, path = entry[:2], entry[3:]
        (untracked if status == "??" else tracked).append(path)
        reverted.append(path)
    if tracked:
        sb.exec(["git", "checkout", "-q", base, "--", *tracked], timeout=120)
    if untracked:
        sb.exec(["rm", "-rf", "--", *untracked], timeout=120)
    return reverted


# Run by the grading environment's Python in the repository: reads the new files' paths (NUL-separated)
# and prints those that are a top-level module or package on a sys.path entry inside the repository
# (the repository itself, as `python -m pytest` puts it first; PYTHONPATH; editable installs) and
# that shadow a module importable without the repository.
_SHADOW_PROBE = r"""
import importlib.util, os, sys
repo = os.path.realpath(os.getcwd())
inside = lambda p: p == repo or p.startswith(repo + os.sep)
roots = {repo} | {os.path.realpath(p) for p in sys.path if p and inside(os.path.realpath(p))}
sys.path[:] = [p for p in sys.path if p and not inside(os.path.realpath(p))]
for path in sorted(p for p in sys.stdin.read().split("\0") if p):
    full = os.path.normpath(os.path.join(repo, path))  # not realpath: a symlinked pytest.py imports too
    parent, leaf = os.path.split(full)
    if leaf == "__init__.py" or leaf.startswith("__init__."):
        parent, leaf = os.path.split(parent)
        shown = os.path.relpath(os.path.join(parent, leaf), repo) + "/"
    else:
        shown = path
    name = leaf.split(".")[0]
    if parent in roots and name.isidentifier():
        try:
            found = importlib.util.find_spec(name) is not None
        except Exception:
            found = True
        if found:
            print(shown)
"""


def remove_shadowing(sb: Sandbox) -> list[str]:
    """Delete new modules that shadow the test runner or the standard library; returns them.

    `python -m pytest` puts the repository first on sys.path, so a planted `pytest.py`, `pluggy/`
    or `inspect.py` would run instead of the real one, inside the test process. A fix has no reason
    to add a top-level module named like one the environment already has.
    """
    listing = sb.exec(["git", "status", "--porcelain=v1", "-z", "--untracked-files=all"], timeout=120)
    new = [e[3:] for e in listing.stdout.split("\0") if e.startswith("?? ")]
    new = [p for p in new if p.endswith((".py", ".pyc", ".so"))]
    if not listing.ok or not new:
        return []
    probe = sb.exec(["sh", "-c", 'exec "$(command -v python || command -v python3)" -c "$1"', "sh", _SHADOW_PROBE],
                    timeout=120, stdin="\0".join(new).encode())
    if probe.returncode in (126, 127):
        return []  # no Python in this environment: nothing for a Python module to shadow
    if not probe.ok:
        raise InfraError(f"cannot check the patch for shadowing modules: {probe.stderr.strip()[-300:]}")
    shadowing = [line for line in probe.stdout.splitlines() if line.strip()]
    if shadowing:
        sb.exec(["rm", "-rf", "--", *shadowing], timeout=120)
    return shadowing


def touched_files(patch: str) -> list[str]:
    """Paths a git diff creates, changes or deletes (binary ones included), from its headers."""
    files: list[str] = []
    for line in patch.splitlines():
        path = None
        if line.startswith("diff --git a/"):
            path = line[len("diff --git a/"):].split(" b/", 1)[0]
        elif line.startswith(("+++ b/", "--- a/")):
            path = line[6:].split("\t")[0].strip()
        if path and path not in files:
            files.append(path)
    return files


def grade(
    task: Task, patch: str, image: str, *, base: str, limits: Limits, run_id: str = ""
) -> tuple[Grade, str]:
    """Grade `patch` for `task` in a fresh container from `image`; returns the grade and the
    test output. Infrastructure problems become an `infra_error` grade, never an exception."""
    started = time.monotonic()
    output = ""
    if not patch.strip():  # nothing to test: the base fails FAIL_TO_PASS by definition
        empty = Grade(task_id=task.id, outcome=Outcome.empty_patch, resolved=False, note="the patch is empty")
        empty.tests = {t: "not_run" for t in [*task.fail_to_pass, *task.pass_to_pass]}
        empty.fail_to_pass = TestTally(total=len(task.fail_to_pass), failed=len(task.fail_to_pass))
        empty.pass_to_pass = TestTally(total=len(task.pass_to_pass))
        return empty, output
    try:
        with Sandbox.start(image, limits=limits.with_(network=False), role="grading", run_id=run_id) as sb:
            sb.exec(["mkdir", "-p", WORK], timeout=30)
            method = apply_patch(sb, patch, "agent.diff")
            if method is None:
                result = Grade(task_id=task.id, outcome=Outcome.patch_apply_failed, resolved=False)
                result.note = "the patch does not apply with git apply, git apply --3way or patch --fuzz=5"
                return _timed(result, started), output
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
                return _timed(result, started), output
            parsed = PARSERS[task.hidden_tests.parser](run.stdout + "\n" + run.stderr)
            consistent, why = parsed.consistent_with(run.returncode)
            result = classify(task, parsed.statuses, run.returncode, consistent, why)
            result.apply_method, result.reverted = method, reverted
            if not parsed.found_summary:
                result.note = (result.note + "; " if result.note else "") + (
                    "no pytest summary in the output (is -rA in the hidden test command?)"
                )
            return _timed(result, started), output
    except SandboxError as exc:
        result = Grade(task_id=task.id, outcome=Outcome.infra_error, resolved=False, note=f"{type(exc).__name__}: {exc}")
        return _timed(result, started), output


def _timed(grade_: Grade, started: float) -> Grade:
    grade_.seconds = round(time.monotonic() - started, 3)
    return grade_

