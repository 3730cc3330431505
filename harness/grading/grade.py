"""Grade a patch with the hidden tests, in a fresh container the agent never touched.

Steps, in a container started from the task image: read the facts its build recorded (which test
plugins the environment had), place grading's own tools, apply the hidden tests, decide from the
patch text which of its files grading applies (stripping `.git/`, paths leaving the repository,
bytecode, package metadata, start-up hooks, symlinks out of the repository, protected paths and
modules that would shadow installed ones; see `patching`), apply the rest (`git apply`, then the
fallbacks, each in a fresh container), delete all bytecode, run the hidden tests with plugin
autoloading off and a structured report asked for, read the results from both channels and the
exit code, and decide the outcome only when they agree. Everything stripped is recorded in the
grade, with evidence that it holds in the tree the tests ran on (content hashes of each claimed
path before the patch and before the tests, `evidence`); a disagreement, or a claim the evidence
does not bear out, is recorded as suspected tampering and is never resolved. A task may name
several parsers (one per framework its hidden command runs): each gets its own setup and report,
and their results are joined (`harness.parsers.parse_run`). Files parts of which are the tests'
or pick what runs (Rust's `#[cfg(test)]` modules, package.json's bin and scripts) are read before
the patch is applied and have those parts put back after it.
A hidden test patch that does not apply to the base is the task's fault: `task_error`, never the
agent's.

`prepare_hidden_tests` and `run_hidden_tests` are the hidden-test steps on their own: `wholeloop
tasks check` runs the base with them, so a check reads results exactly as grading does.
"""

from __future__ import annotations

import io
import json
import secrets
import tarfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from sandbox import Backend, FileOpError, Limits, Sandbox, SandboxError

from ..parsers import NOT_RUN, TEST_LIMIT_VAR, Parser, RunSetup, TestReport, parse_run
from ..sandboxes import default_backend
from ..tasks import Task
from .acceptance import measure
from .determinism import GRADING_SEED, HASH_SEED_VAR, hash_seed
from .evidence import Hasher, TreeEvidence, claims, judge
from .feedback import scrub_messages
from .outcome import GRADER_VERSION, FailedStep, Grade, Outcome, Stripped, TestTally, classify
from .own_checks import OwnChecks, checks_of, measure_own_checks
from .patching import (
    APPLIERS,
    RUNNER_MODULES,
    WORK,
    Decision,
    apply_patch,
    base_symlinks,
    clear_bytecode,
    decide,
    parse_patch,
    read_guarded,
    restore_inline_tests,
    shadowing_modules,
)
from .patching import Stripped as StrippedPath

TEST_OUTPUT_BYTES = 5_000_000  # kept per stream; head and tail, so the summary at the end survives
REPORT_BYTES = 100_000_000  # the structured report, at most


def grade(
    task: Task,
    patch: str,
    image: str,
    *,
    base: str,
    limits: Limits,
    backend: Backend | None = None,
    run_id: str = "",
    hasher: Hasher | None = None,
    seed: int = GRADING_SEED,
) -> tuple[Grade, str, TestReport | None]:
    """Grade `patch` for `task` in fresh containers from `image` started by `backend` (default:
    `harness.sandboxes.default_backend()`); returns the grade, the test output and the parsed report (None when no tests ran),
    whose failure messages have every line of the hidden tests removed. Infrastructure problems
    become an `infra_error` grade, never an exception. (`base` is the snapshot's commit; `hasher`
    reads the content hashes that check what the grade claims it stripped, see `evidence`; `seed`:
    the hash seed and test-order seed, grading's unless `tasks check` varies it, see `determinism`.)
    Every grade records the acceptance axes of the raw `patch` (before anything is stripped; see
    `acceptance`)."""
    applied = _Applied()
    graded, output, parsed = _grade(task, patch, image, base, limits, backend, run_id, hasher, seed, applied)
    graded.acceptance = measure(task, patch)
    if graded.resolved and graded.outcome is Outcome.resolved:
        graded.acceptance.own_checks = _own_checks(task, applied, image, limits, backend or default_backend(), run_id)
    return graded, output, parsed


@dataclass
class _Applied:
    """What grading applied of the patch (the text and the files it changes), once it applied."""

    text: str = ""
    files: list[str] = field(default_factory=list)


def _own_checks(task: Task, applied: _Applied, image: str, limits: Limits, backend: Backend, run_id: str) -> OwnChecks:
    """The repository's own checks on the files the graded patch changes (`own_checks`)."""
    try:
        checks = checks_of(task.checks, backend, image, limits)
    except SandboxError as exc:
        return OwnChecks(error=f"cannot read the base's config: {type(exc).__name__}: {exc}")
    if not checks or not applied.text.strip():
        return OwnChecks(checks=checks)
    return measure_own_checks(
        checks, applied.text, applied.files, image, backend, limits, run_id, gold=task.gold() or ""
    )


def _grade(
    task: Task,
    patch: str,
    image: str,
    base: str,
    limits: Limits,
    backend: Backend | None,
    run_id: str,
    hasher: Hasher | None,
    seed: int,
    applied: _Applied,
) -> tuple[Grade, str, TestReport | None]:
    backend = backend or default_backend()
    started = time.monotonic()
    output = ""
    if not patch.strip():  # nothing to test: no test runs, so none passed and none failed
        empty = Grade(
            task_id=task.id,
            grader_version=GRADER_VERSION,
            outcome=Outcome.empty_patch,
            resolved=False,
            note="the patch is empty",
        )
        empty.tests = dict.fromkeys([*task.fail_to_pass, *task.pass_to_pass], NOT_RUN)
        empty.fail_to_pass = TestTally(total=len(task.fail_to_pass), ran=False)
        empty.pass_to_pass = TestTally(total=len(task.pass_to_pass), ran=False)
        return empty, output, None
    sections, unparsed = parse_patch(patch)
    parsers = task.hidden_tests.parsers()
    decision: Decision | None = None
    at = _At()
    try:
        for method in APPLIERS:
            if decision is not None and method == "patch --fuzz=5" and not all(s.plain() for s in decision.kept):
                break  # only plain text changes of regular files may go to `patch`
            at.step = "start a grading container"
            with backend.start(image, limits=limits.with_(network=False), role="grading", run_id=run_id) as sb:
                at.step = "prepare the hidden tests"
                prepared = prepare_hidden_tests(sb, task, parsers, facts_dir=backend.facts_dir)
                if decision is None:
                    shadowing = shadowing_modules(
                        sb,
                        sections,
                        task.hidden_tests.command,
                        (*RUNNER_MODULES, *(m for s in prepared.setups for m in s.imports)),
                    )
                    decision = decide(task, sections, unparsed, shadowing, base_symlinks(sb, sections))
                text = decision.text()
                claimed = claims(decision.reverted, [(s.path, s.reason) for s in decision.stripped])
                hasher = hasher or Hasher()
                at.step = "read the base's hashes of the claimed paths"
                base_hashes = hasher.hashes(sb, list(claimed))  # nothing of the patch is in the tree yet
                at.step = "read the files whose inline tests are put back"
                guarded = read_guarded(sb, task, decision.kept) if text else None
                if text and not apply_patch(sb, text, "agent.diff", method, decision.kept):
                    if not decision.kept or method == APPLIERS[-1]:
                        break
                    continue
                try:
                    at.step = "restore the inline hidden tests"
                    inline = restore_inline_tests(sb, guarded)
                    at.step = "read the graded tree's hashes of the claimed paths"
                    evidence = (
                        judge(claimed, base_hashes, hasher.hashes(sb, list(claimed)), hasher.tool) if claimed else None
                    )
                    at.step = "run the hidden tests"
                    result, output, parsed = _run_tests(sb, task, prepared, seed)
                except SandboxError:
                    at.patchs_doing = bool(text) and _by_itself(sb)
                    raise
                result.apply_method = method if text else None
                applied.text = text
                applied.files = [p for sec in decision.kept for p in (sec.new,) if p is not None]
                _record(result, decision, inline)
                _hold(result, evidence)
                return _timed(result, started), output, parsed
        result = Grade(
            task_id=task.id,
            grader_version=GRADER_VERSION,
            outcome=Outcome.patch_apply_failed,
            resolved=False,
            note="the patch does not apply with git apply, git apply --3way or patch --fuzz=5",
        )
        if decision is not None:
            _record(result, decision)
        return _timed(result, started), output, None
    except TestPatchError as exc:
        result = Grade(
            task_id=task.id, grader_version=GRADER_VERSION, outcome=Outcome.task_error, resolved=False, note=str(exc)
        )
        return _timed(result, started), output, None
    except SandboxError as exc:
        said = f"{type(exc).__name__}: {exc}"
        if at.patchs_doing and _passes_on_base(task, image, limits, backend, run_id, parsers):
            result = Grade(
                task_id=task.id,
                grader_version=GRADER_VERSION,
                outcome=Outcome.environment_broken,
                resolved=False,
                failed_step=FailedStep(step=at.step, output=said),
                note=f"grading step {at.step!r} failed with the patch applied and passes on the base: {said}",
            )
            if decision is not None:
                _record(result, decision)
            return _timed(result, started), output, None
        result = Grade(
            task_id=task.id,
            grader_version=GRADER_VERSION,
            outcome=Outcome.infra_error,
            resolved=False,
            failed_step=FailedStep(step=at.step, output=said),
            note=said,
        )
        return _timed(result, started), output, None


class _At:
    """Where grading is: the step running now; whether a step failed, with the patch applied, in a
    container that failed by itself (not removed or stopped from outside, the engine answering)."""

    step: str = ""
    patchs_doing: bool = False


def _by_itself(sb: Sandbox) -> bool:
    """Is the container still there, running, or stopped by the kernel's OOM killer? (PID 1 never
    exits and ignores every signal from inside: stopped otherwise, it was stopped from outside.)"""
    try:
        state = sb.status()
    except SandboxError:
        return False
    return state.running or state.oom_killed


def _passes_on_base(
    task: Task, image: str, limits: Limits, backend: Backend, run_id: str, parsers: list[Parser]
) -> bool:
    """Does the hidden test run go through on the base (no patch), in a fresh container? Then a
    step that failed with the patch applied failed because of it (`environment_broken`)."""
    try:
        with backend.start(image, limits=limits.with_(network=False), role="grading", run_id=run_id) as sb:
            run_hidden_tests(sb, task, prepare_hidden_tests(sb, task, parsers, facts_dir=backend.facts_dir))
        return True
    except (SandboxError, TestPatchError):
        return False


class TestPatchError(Exception):
    """The task's hidden test patch does not apply to its base commit: the task's to fix."""

    __test__ = False  # not a pytest test class


@dataclass
class HiddenTests:
    """A container made ready for the hidden tests (before anything of a patch)."""

    __test__ = False  # not a pytest test class

    parsers: list[Parser]  # one per framework the hidden command runs
    setups: list[RunSetup]  # what each parser asked of the run (environment, structured report)
    hidden_text: list[str]  # the hidden tests' text, kept out of feedback


@dataclass
class HiddenRun:
    """One run of the hidden test command, read from every channel."""

    output: str  # stdout, then stderr under a "[stderr]" line
    report: TestReport | None  # what the parsers read, cross-checked with the exit code (None: timed out)
    exit_code: int | None
    timed_out: bool
    seconds: float
    refused: str = ""  # why the run could not start on this tree (bytecode not cleared): the patch's failure
    seeds: dict[str, str] = field(default_factory=dict)  # what fixed its hash seed and test order (`determinism`)


def prepare_hidden_tests(
    sb: Sandbox, task: Task, parsers: list[Parser] | None = None, *, facts_dir: str
) -> HiddenTests:
    """Before anything of the patch: the image's facts (under the backend's `facts_dir`), grading's tools and the folders of the
    structured reports, the hidden tests (and their text, to keep it out of feedback). Raises
    TestPatchError when the test patch does not apply with `git apply`."""
    parsers = parsers or task.hidden_tests.parsers()
    token = secrets.token_hex(12)
    setups = [p.run_setup(_facts(sb, facts_dir, p.name), token, tuple(task.hidden_tests.plugins)) for p in parsers]
    # the folders of the fixed results files the hidden command writes (pytest's report-log makes its own)
    folders = {p.results_file.rsplit("/", 1)[0] + "/.keep": b"" for p in parsers if p.results_file}
    _place(sb, {f"{WORK}/.keep": b"", **folders, **{k: v for s in setups for k, v in s.files.items()}})
    test_patch = task.test_patch()
    if test_patch.strip():
        sections, _ = parse_patch(test_patch)
        if not apply_patch(sb, test_patch, "tests.diff", "git apply", sections):
            raise TestPatchError("the task's hidden test patch does not apply to its base commit (the task's to fix)")
    for path, content in task.hidden_tests.files.items():
        sb.write_file(path, content)
    _plant_canaries(sb, task, parsers, setups)
    return HiddenTests(parsers, setups, _hidden_lines(task))


# A hidden command that picks tests by name runs no canary (its other tests are skipped).
_BY_NAME = ("-t", "--testNamePattern")


def _plant_canaries(sb: Sandbox, task: Task, parsers: list[Parser], setups: list[RunSetup]) -> None:
    """Append each parser's canary tests (`Parser.canary`) to every hidden test file that holds a
    listed test, titled at random for this grading, and record them in its setup: the parser
    checks them after the run (a must-fail canary reported passed: the results were forged inside
    the process that ran the tests). The test files are protected, so nothing of the patch is
    in them."""
    words = task.hidden_tests.command.split()
    if len(parsers) != 1 or any(w.startswith(_BY_NAME) for w in words):
        return  # several parsers: the exit code is a chain's, which the canaries' failure would hide
    listed = [*task.fail_to_pass, *task.pass_to_pass]
    for parser, setup in zip(parsers, setups):
        files = sorted({f for t in listed if (f := parser.test_file(t))})
        for path in files:
            nonce = secrets.token_hex(8)
            must_fail, must_pass = f"checks {secrets.token_hex(6)}", f"checks {secrets.token_hex(6)}"
            source = parser.canary(path, must_fail, must_pass, nonce)
            if source is None:
                continue
            try:
                text = sb.read_file(path)
            except FileOpError:
                continue  # not in the tree: its tests are missing anyway
            sb.write_file(path, text + source.encode())
            setup.canaries[path] = (must_fail, must_pass)


def run_hidden_tests(sb: Sandbox, task: Task, prepared: HiddenTests, seed: int = GRADING_SEED) -> HiddenRun:
    """Run the hidden test command once (bytecode cleared, the parsers' environment, fresh
    structured reports; PYTHONHASHSEED and the test-order randomisers fixed by `seed`, see
    `determinism`) and read its results with the parsers, cross-checked with the exit code."""
    refused = clear_bytecode(sb)
    if refused:  # never an InfraError: what the tree holds is the patch's (see clear_bytecode)
        return HiddenRun(refused, None, None, False, 0.0, refused)
    stale = [s.report_path for s in prepared.setups if s.report_path]
    if stale:  # a report left by an earlier run in this container is not this run's
        sb.exec(["rm", "-f", "--", *stale], timeout=sb.limits.step_timeout_s)
    env = {k: v for s in prepared.setups for k, v in s.env_for(seed).items()}
    if "PYTEST_PLUGINS" in env and task.environment.env.get("PYTEST_PLUGINS"):
        env["PYTEST_PLUGINS"] = task.environment.env["PYTEST_PLUGINS"]  # the task's own, never the patch's
    env[HASH_SEED_VAR] = hash_seed(task, seed)
    env[TEST_LIMIT_VAR] = f"{task.timeouts.per_test_s():g}"  # read by pytest's plugin (parsers.pytest)
    seeds = {HASH_SEED_VAR: env[HASH_SEED_VAR]}
    seeds.update(
        {s.seed_var: " ".join(o.format(seed=seed) for o in s.seed_options) for s in prepared.setups if s.seed_options}
    )
    run = sb.exec(task.hidden_tests.command, env=env, timeout=task.timeouts.tests_s, output_bytes=TEST_OUTPUT_BYTES)
    output = run.stdout + (("\n[stderr]\n" + run.stderr) if run.stderr.strip() else "")
    if run.timed_out:
        return HiddenRun(output, None, run.returncode, True, run.duration_s, seeds=seeds)
    parsed = parse_run(
        prepared.parsers,
        run.stdout + "\n" + run.stderr,
        lambda path: _structured_report(sb, path),
        setups=prepared.setups,
        exit_code=run.returncode,
    )
    return HiddenRun(output, parsed, run.returncode, False, run.duration_s, seeds=seeds)


def _hidden_lines(task: Task) -> list[str]:
    """What of the hidden tests the agent never saw: the lines the test patch adds (with its context,
    which the base has anyway) and the hidden test files, to be kept out of feedback."""
    added = [
        line[1:] for line in task.test_patch().split("\n") if line[:1] in ("+", " ") and not line.startswith("+++ ")
    ]
    return ["\n".join(added), *task.hidden_tests.files.values()]


def _place(sb: Sandbox, files: dict[str, bytes]) -> None:
    """Absolute paths -> bytes, written in one archive (one round trip; the engine makes missing
    folders, and leaves existing ones as they are)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, data in files.items():
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    sb.put_archive("/", buf.getvalue())


def _facts(sb: Sandbox, facts_dir: str, name: str) -> dict | None:
    """What the image build recorded for this parser (outside the repository), or None."""
    try:
        return json.loads(sb.read_file(f"{facts_dir}/{name}.json", max_bytes=1_000_000))
    except (FileOpError, ValueError):
        return None


def _run_tests(sb: Sandbox, task: Task, prepared: HiddenTests, seed: int) -> tuple[Grade, str, TestReport | None]:
    run = run_hidden_tests(sb, task, prepared, seed)
    output = run.output
    if run.refused:  # the tree the patch left cannot be cleaned: the patch's failure, not the infrastructure's
        result = Grade(
            task_id=task.id, grader_version=GRADER_VERSION, outcome=Outcome.unresolved, resolved=False, note=run.refused
        )
        result.tests = dict.fromkeys([*task.fail_to_pass, *task.pass_to_pass], NOT_RUN)
        result.fail_to_pass = TestTally(total=len(task.fail_to_pass), failed=len(task.fail_to_pass))
        result.pass_to_pass = TestTally(total=len(task.pass_to_pass))
        return result, output, None
    if run.timed_out or run.report is None:
        result = Grade(task_id=task.id, grader_version=GRADER_VERSION, outcome=Outcome.test_timeout, resolved=False)
        result.seeds = run.seeds
        result.note = f"the hidden tests did not finish within {task.timeouts.tests_s:g}s"
        return result, output, None
    parsed = run.report
    result = classify(task, parsed.statuses, run.exit_code, parsed.consistent, parsed.why)
    result.seeds = run.seeds
    result.messages = {t: parsed.messages[t] for t in result.failing() if t in parsed.messages}  # for reviewers
    parsed.messages = scrub_messages(parsed.messages, prepared.hidden_text)  # what feedback may use
    result.channels, result.tampering = dict(parsed.channels), parsed.disagreement or None
    notes = [result.note] if result.note else []
    if not parsed.found_summary:
        notes.append(parsed.missing_hint)
    for channel, said in parsed.channels.items():  # "structured", or "go: structured" in a task with several
        if said.startswith("unavailable"):
            who = f" ({channel.rsplit(': ', 1)[0]})" if ": " in channel else ""
            notes.append(f"graded on one channel{who}: " + said.removeprefix("unavailable: "))
    if result.tampering:
        notes.insert(0, "suspected tampering: " + result.tampering)
    result.note = "; ".join(dict.fromkeys(n for n in notes if n))
    return result, output, parsed


def _structured_report(sb: Sandbox, path: str | None) -> bytes | None:
    """The structured report's bytes (None when it is missing or larger than any report pytest
    writes for a task's tests). The code under test could rewrite it however it is read: that is the
    in-process limit of docs/grading.md."""
    if path is None:
        return None
    try:
        return sb.read_file(path, max_bytes=REPORT_BYTES)
    except FileOpError:
        return None


def _record(result: Grade, decision: Decision, inline: Sequence[StrippedPath] = ()) -> None:
    result.stripped = [Stripped(path=s.path, reason=s.reason) for s in [*decision.stripped, *inline]]
    result.reverted = list(decision.reverted) + [f"{s.path} ({s.reason.rsplit(': ', 1)[-1]})" for s in inline]
    extra = []
    if decision.stripped:
        extra.append(f"{len(decision.stripped)} path(s) of the patch not applied (see stripped)")
    if inline:
        extra.append(f"{len(inline)} file(s) of the patch had their inline tests put back (see stripped)")
    if decision.unparsed:
        extra.append(f"{decision.unparsed} line(s) outside any file section dropped")
    result.note = "; ".join(x for x in [result.note, *extra] if x)


def _hold(result: Grade, evidence: TreeEvidence | None) -> None:
    """Record the evidence of the grade's claims; a claim it does not bear out is the patch's doing
    (nothing but the patch changed the tree between the two readings): never resolved, tampering
    noted."""
    result.evidence = evidence
    if evidence is None or evidence.verified:
        return
    broken = evidence.broken()
    said = (
        "what grading claims it reverted or stripped does not hold in the graded tree: "
        + ", ".join(f"{e.path} (base: {e.expected}, found: {e.found})" for e in broken[:5])
        + (f" and {len(broken) - 5} more" if len(broken) > 5 else "")
    )
    result.tampering = "; ".join(x for x in (result.tampering, said) if x)
    if result.outcome is Outcome.resolved:
        result.outcome, result.resolved = Outcome.unresolved, False
    result.note = "; ".join(x for x in ("suspected tampering: " + said, result.note) if x)


def _timed(grade_: Grade, started: float) -> Grade:
    grade_.seconds = round(time.monotonic() - started, 3)
    return grade_
