"""`wholeloop tasks check`: run every task in the sandbox and decide whether it can be trusted.

The same images as a run (`harness.run.images`) and the same grading code (`harness.grading`):

- base phase: ONE fresh container from the task image; the hidden tests are applied (exactly, as
  grading does) and the hidden test command runs `repeats` times in that same container;
- gold phase: `repeats` times `grading.grade(task, gold patch)`, each in its own fresh container,
  exactly as a run grades a patch.

The n-th run of each phase runs with hash seed and test-order seed `check_seed(n)` (the first is
grading's, see `harness.grading.determinism`): varied on purpose, so a task whose test ids change
with them is quarantined ("test ids depend on the hash seed or the test order").

The verdict keeps every test's status in every run of both phases (so each test's status with
gold), compactly: see `Verdict.runs`.

A test whose status differs between the runs of one phase is flaky: it is dropped from the lists
with the reason recorded (a flaky FAIL_TO_PASS test of a spec that lists it quarantines the task).
With `discover` (or a spec whose FAIL_TO_PASS is still empty) FAIL_TO_PASS and PASS_TO_PASS are
computed: failing (failed, error, or not reported) in every base run and passed in every gold run
/ passed in every run of both. Otherwise the lists are checked: each FAIL_TO_PASS test fails at
base, each PASS_TO_PASS test passes there, every listed test is in the output and passes with gold.
Tests that xfail in every gold run fill the task's `expected_xfail`.

A task that fails a check is quarantined: its spec is rewritten with `quarantined: <reason>` (runs
skip it). The verdict goes beside the spec (`<spec>.check.json`), keyed by the spec's content hash
and the task image's id: a changed spec or a rebuilt image makes it stale.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, cast

import yaml
from pydantic import AliasChoices, BaseModel, Field

from sandbox import (
    Backend,
    ImageBuildError,
    ImageNotFound,
    InfraError,
    InputError,
    Limits,
    RepositoryError,
    Sandbox,
    SandboxError,
)

from .. import __version__
from ..grading import Outcome, TestPatchError, grade, prepare_hidden_tests, run_hidden_tests
from ..grading.acceptance import refused_by_default
from ..grading.determinism import check_seed, hash_seed_fixed_by_task
from ..grading.own_checks import base_checks
from ..parsers import ERROR, FAILED, MISSING, PASSED, SKIPPED, XFAIL, XPASS, TestReport, killed_by
from ..run.images import build_task_images, existing_task_images
from ..sandboxes import default_backend
from ..tasks.spec import Task, TaskSpecError, dump_yaml, load_task
from .testdeps import PROGRAM_PACKAGES, marker_excluded

# 1: before issue 20 (written as `format`); 2: per-run seeds, the environment's health at base.
# 3: gold's acceptance axes, and those the default acceptance policy refuses (issue 25).
VERDICT_SCHEMA = 3
DEFAULT_REPEATS = 3
NOT_CHECKED = "not checked yet: FAIL_TO_PASS and PASS_TO_PASS are unknown (run `wholeloop tasks check --discover`)"
NOT_CHECKED_PREFIX = "not checked yet"
FAILING = (FAILED, ERROR, MISSING)

CheckStatus = Literal["checked", "stale", "unchecked", "quarantined"]
ProgressFn = Callable[[str, str], None]  # (task id, text)


class Health(BaseModel):
    """The test command's health at base (its first run, grading's seed), read against gold's first
    run: a task counts only in a healthy environment (docs/tasks.md, "Environment health")."""

    collected: int = 0  # tests reported, plus modules skipped whole
    passed: int = 0
    failed: int = 0
    errored: int = 0
    skipped: int = 0
    collection_errors: dict[str, str] = Field(default_factory=dict)  # file -> its last line, at base
    skip_reasons: dict[str, int] = Field(default_factory=dict)  # reason -> how many tests it skipped
    import_errors: dict[str, int] = Field(default_factory=dict)  # missing module -> tests it broke or skipped
    healthy: bool = True
    summary: str = ""  # why not, one line: "12 of 80 tests skipped: Needs Rich. (add `rich` to ...)"


class Verdict(BaseModel):
    """What `tasks check` found for one spec, written beside it as <spec>.check.json."""

    schema_version: int = Field(VERDICT_SCHEMA, validation_alias=AliasChoices("schema_version", "format"))
    task_id: str
    spec_hash: str = ""  # content hash of the spec as written after the check
    image: dict = Field(default_factory=dict)  # env/task tags and ids, the tree, files left out
    checked_at: str = ""
    wholeloop: str = __version__
    repeats: int = DEFAULT_REPEATS
    discovered: bool = False
    passed: bool = False
    quarantined: str | None = None
    detail: str = ""
    fail_to_pass: list[str] = Field(default_factory=list)
    pass_to_pass: list[str] = Field(default_factory=list)
    expected_xfail: list[str] = Field(default_factory=list)
    dropped_flaky: dict[str, str] = Field(default_factory=dict)  # test id -> "flaky: base ...; gold ..."
    # Every test's status in every run: "<base runs> <gold runs>", one letter a run (RUN_CODES),
    # e.g. "FFF PPP" = failed in the 3 base runs, passed in the 3 gold runs; "-" = not reported.
    runs: dict[str, str] = Field(default_factory=dict)
    run_seconds: list[float] = Field(default_factory=list)  # each test run, base then gold
    # what fixed each test run's hash seed and test order, base then gold (grading.determinism): the
    # check varies them on purpose; the first run of each phase is grading's
    seeds: list[dict[str, str]] = Field(default_factory=list)
    seconds: dict[str, float] = Field(default_factory=dict)  # images, base, gold, total
    findings: list[dict] = Field(default_factory=list)  # secrets found (kept by --redact or in a baseline)
    health: Health | None = None  # the test command's health at base (None: no base run finished)
    # the gold patch's acceptance axes (grading.acceptance; None: checked before schema 3) and the
    # axes among them the default acceptance policy refuses: a gold that would not be accepted is a
    # control failure of the policy or the task (docs/acceptance.md), said by `tasks check`
    gold_acceptance: dict | None = None
    gold_not_accepted: list[str] = Field(default_factory=list)
    # the repository's own checks at the base (grading.own_checks.BaseChecks: the checks, their layer,
    # the base's findings by key); None: checked before they were measured
    own_checks: dict | None = None
    test_runs: int = 0


RUN_CODES = {PASSED: "P", FAILED: "F", ERROR: "E", SKIPPED: "S", XFAIL: "X", XPASS: "x", MISSING: "-"}
_STATUS_OF = {code: status for status, code in RUN_CODES.items()}


def encode_runs(base_runs: list[dict[str, str]], gold_runs: list[dict[str, str]]) -> dict[str, str]:
    tests = sorted(set().union(*base_runs, *gold_runs))
    code = lambda run, t: RUN_CODES.get(run.get(t, MISSING), "?")  # noqa: E731
    return {t: "".join(code(r, t) for r in base_runs) + " " + "".join(code(r, t) for r in gold_runs) for t in tests}


def gold_status(verdict: Verdict, test: str) -> str | None:
    """A test's status with gold when it was the same in every gold run, else None."""
    runs = verdict.runs.get(test)
    if runs is None:
        return None
    gold = set(runs.split(" ")[1])
    return _STATUS_OF.get(gold.pop()) if len(gold) == 1 else None


def verdict_path(spec: Path) -> Path:
    return spec.with_name(spec.stem + ".check.json")


def read_verdict(spec: Path) -> Verdict | None:
    path = verdict_path(spec)
    try:
        return Verdict.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None


def check_status(task: Task, *, look_up_image: bool = True) -> tuple[CheckStatus, str]:
    """Where a task stands: checked (a verdict for this spec and this image), stale (the spec or
    the image changed since), unchecked (no verdict), quarantined; with a short reason."""
    if task.quarantined:
        return "quarantined", task.quarantined
    verdict = read_verdict(task.spec_path) if task.spec_path else None
    if verdict is None:
        return "unchecked", "never checked"
    if verdict.spec_hash != task.content_hash():
        return "stale", "the spec changed since it was checked"
    if not verdict.passed:
        return "quarantined", verdict.quarantined or "failed its check"
    if verdict.schema_version < VERDICT_SCHEMA:
        return (
            "stale",
            "checked before the check varied the hash seed, read the environment's health and measured gold's acceptance",
        )
    if look_up_image:
        try:
            image = existing_task_images(task)
        except SandboxError:
            image = None
        if image is None:
            return "stale", "its image is not built (it will be rebuilt, with a new id)"
        if image.id != verdict.image.get("task_id"):
            return "stale", "its image was rebuilt since it was checked"
    return "checked", ""


def up_to_date(task: Task) -> bool:
    """Nothing to check: a verdict for exactly this spec exists (and, when it passed, for exactly
    its image), or the spec was quarantined before any check could run (mining found no test file
    to run, or no way to build its environment: clear `quarantined` after fixing it)."""
    status, _ = check_status(task)
    if status == "checked":
        return True
    verdict = read_verdict(task.spec_path) if task.spec_path else None
    if status == "quarantined" and verdict is None and task.quarantined:  # quarantined by the spec itself
        return not task.quarantined.startswith(NOT_CHECKED_PREFIX)
    return status == "quarantined" and verdict is not None and verdict.spec_hash == task.content_hash()


# ----------------------------------------------------------------------------- one task


class Quarantine(Exception):
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason, self.detail = reason, detail


@dataclass
class CheckOptions:
    repeats: int = DEFAULT_REPEATS
    discover: bool = False
    force: bool = False  # check again even when a current verdict exists
    workers: int = 1
    backend: Backend | None = None
    progress: ProgressFn | None = None
    findings: dict[str, list[dict]] = field(default_factory=dict)  # task id -> secrets to list in its verdict


@dataclass
class CheckResult:
    task: Task
    verdict: Verdict | None  # None: the machine failed (error says how); nothing was written
    skipped: bool = False  # an up-to-date verdict existed
    images_built: list[str] = field(default_factory=list)  # env/task tags this check had to build
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.verdict is not None and self.verdict.passed


def _statuses(report_statuses: dict[str, str]) -> dict[str, str]:
    return dict(sorted(report_statuses.items()))


def _show(status: str) -> str:
    return status.upper()


def check_task(task: Task, options: CheckOptions) -> CheckResult:
    """Check one task (see the module docstring), write its verdict and, when its lists, its
    expected xfails or its quarantine changed, its spec. Machine failures (the engine gone) raise
    InfraError and write nothing."""
    spec = task.spec_path
    if spec is None:
        raise TaskSpecError(f"task {task.id}: a spec file is needed to write the verdict beside")
    progress = options.progress or (lambda *_: None)
    if not options.force and up_to_date(task):
        return CheckResult(task, read_verdict(spec), skipped=True)
    discover = options.discover or not task.fail_to_pass
    verdict = Verdict(
        task_id=task.id,
        repeats=options.repeats,
        discovered=discover,
        checked_at=datetime.now(UTC).isoformat(timespec="seconds"),
        findings=options.findings.get(task.id, []),
    )
    backend = options.backend or default_backend()
    started = time.monotonic()
    built: list[str] = []
    try:
        progress(task.id, "images")
        t0 = time.monotonic()
        try:
            images = build_task_images(task, log=lambda line: progress(task.id, line[:100]), backend=backend)
        except RepositoryError as exc:
            raise Quarantine("repository or base commit not found", str(exc)) from None
        except (ImageBuildError, ImageNotFound, InputError) as exc:
            # the first lines say why and where the whole log is; the end of the log after them
            head, _, rest = str(exc).partition("\n")
            raise Quarantine("environment build failed", head + "\n" + rest[-1800:]) from None
        verdict.seconds["images"] = round(time.monotonic() - t0, 3)
        verdict.image = images.record()
        built = [b.tag for b in (images.env, images.deps, images.task) if b is not None and not b.cached]
        gold = task.gold()
        if not gold.strip():
            raise Quarantine("no gold patch", "the spec has neither gold_patch nor gold_patch_file")
        limits = task.limits.apply(Limits()).with_(network=False)
        progress(task.id, "own checks at base")
        own = base_checks(task.checks, images.task.tag, backend, limits)
        verdict.own_checks = own.model_dump(mode="json")
        verdict.seconds["own_checks"] = own.seconds
        base_runs, gold_runs = _run_phases(
            task, images.task.tag, images.snapshot.commit, gold, limits, backend, options.repeats, verdict, progress
        )
        verdict.runs = encode_runs(base_runs, gold_runs)
        _judge(task, verdict, discover, base_runs, gold_runs)
    except Quarantine as q:
        verdict.quarantined, verdict.detail = q.reason, q.detail
    except TaskSpecError as exc:  # a patch file the spec names cannot be read
        verdict.quarantined, verdict.detail = "a file the spec names cannot be read", str(exc)
    verdict.seconds["total"] = round(time.monotonic() - started, 3)
    verdict.test_runs = len(verdict.run_seconds)
    verdict.passed = verdict.quarantined is None
    task = _write_back(task, spec, verdict, discover)
    verdict.spec_hash = task.content_hash()
    _write_json(verdict_path(spec), verdict.model_dump(mode="json"))
    return CheckResult(task, verdict, images_built=built)


def _run_phases(
    task: Task,
    image: str,
    base_commit: str,
    gold: str,
    limits: Limits,
    backend: Backend,
    repeats: int,
    verdict: Verdict,
    progress: ProgressFn,
) -> tuple[list[dict], list[dict]]:
    base_runs: list[dict[str, str]] = []
    first_base: TestReport | None = None  # the health of the environment is read from the first runs
    first_gold: TestReport | None = None
    t0 = time.monotonic()
    with backend.start(image, limits=limits, role="check", run_id=f"check-{os.getpid()}") as sb:
        try:
            prepared = prepare_hidden_tests(sb, task, facts_dir=backend.facts_dir)
        except TestPatchError:
            raise Quarantine(
                "test patch does not apply", "git apply of the hidden test patch failed at the base commit"
            ) from None
        not_here = _marker_excluded(sb)
        for n in range(repeats):
            progress(task.id, f"base run {n + 1}/{repeats}")
            run = run_hidden_tests(sb, task, prepared, seed=check_seed(n))
            verdict.run_seconds.append(round(run.seconds, 3))
            verdict.seeds.append(run.seeds)
            if run.timed_out or run.report is None:
                raise Quarantine("tests timed out", f"a base run took more than {task.timeouts.tests_s:g} s")
            if (signal := killed_by(run.exit_code)) is not None:
                why = (
                    f"; SIGKILL under the {limits.memory} memory limit is the out-of-memory killer's"
                    if signal == 9
                    else ""
                )
                raise Quarantine(
                    "tests were killed",
                    f"base run: the test command ended by signal {signal} (exit {run.exit_code}) after "
                    f"{run.seconds:.0f} s{why}: {_tail(run.output)}",
                )
            if run.report.disagreement:
                raise Quarantine("test results cannot be trusted", f"base run: {run.report.disagreement}")
            if not run.report.found_summary:
                raise Quarantine(
                    "no test results in the output",
                    f"{run.report.missing_hint} (exit {run.exit_code}): {_tail(run.output)}",
                )
            _no_merged_ids(run.report, "base")
            base_runs.append(_statuses(run.report.statuses))
            first_base = first_base or run.report
    verdict.seconds["base"] = round(time.monotonic() - t0, 3)
    gold_runs: list[dict[str, str]] = []
    t0 = time.monotonic()
    for n in range(repeats):
        progress(task.id, f"gold run {n + 1}/{repeats}")
        t1 = time.monotonic()
        result, output, report = grade(
            task,
            gold,
            image,
            base=base_commit,
            limits=limits,
            backend=backend,
            run_id=f"check-{os.getpid()}",
            seed=check_seed(n),
        )
        verdict.run_seconds.append(round(time.monotonic() - t1, 3))
        verdict.seeds.append(result.seeds)
        if result.outcome is Outcome.patch_apply_failed:
            raise Quarantine("gold patch does not apply", result.note)
        if result.outcome is Outcome.task_error:
            raise Quarantine("test patch does not apply", result.note)
        if result.outcome is Outcome.test_timeout:
            raise Quarantine("tests timed out", result.note)
        if result.outcome is Outcome.infra_error:
            raise InfraError(f"checking {task.id}: {result.note}")
        if report is None or not report.found_summary:
            hint = report.missing_hint if report is not None else ""
            raise Quarantine("no test results in the output", f"{hint}: {_tail(output)}")
        if not report.consistent:  # grading would never resolve this task, whatever its lists
            raise Quarantine("test results cannot be trusted", f"with the gold patch: {report.why}")
        _no_merged_ids(report, "gold")
        gold_runs.append(_statuses(report.statuses))
        first_gold = first_gold or report
        if result.acceptance is not None and verdict.gold_acceptance is None:
            verdict.gold_acceptance = result.acceptance.model_dump(mode="json")
            verdict.gold_not_accepted = refused_by_default(result.acceptance)
    verdict.seconds["gold"] = round(time.monotonic() - t0, 3)
    if first_base is not None and first_gold is not None:
        verdict.health = environment_health(first_base, first_gold, not_here)
    return base_runs, gold_runs


def _no_merged_ids(report: TestReport, phase: str) -> None:
    """Tests whose ids differ only by an object's address cannot be told apart by any list (the parser
    reads the address as one token, parsers.pytest.stable_id): refused, naming them."""
    if report.merged_ids:
        shown = "; ".join(f"{t} ({n} tests)" for t, n in list(report.merged_ids.items())[:3])
        raise Quarantine(
            f"test ids hold memory addresses: {len(report.merged_ids)} id(s) of a {phase} run name several tests "
            "once their addresses are read as one token",
            "their ids differ only by an object's default repr (`<... object at 0x...>`), so no list can name one "
            "of them: " + shown,
        )


_DECLARED = r"""
import glob, json, os, sys
names = [n for n in ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini") if os.path.isfile(n)]
names += sorted(glob.glob("requirements*.txt") + glob.glob("requirements/*.txt"))
texts = {}
for n in names:
    with open(n, encoding="utf-8", errors="replace") as f:
        texts[n] = f.read(200000)
print(json.dumps({"python": list(sys.version_info[:3]), "texts": texts}))
"""


def _marker_excluded(sb: Sandbox) -> set[str]:
    """What the project asks for only under markers false on the image's Python (read in the
    container at base: its declaring files and its interpreter); empty when there is no Python."""
    try:
        result = sb.exec(
            ["sh", "-c", 'py=$(command -v python || command -v python3) && "$py" -'],
            stdin=_DECLARED.encode(),
            timeout=60,
        )
        found = json.loads(result.stdout.strip().splitlines()[-1])
        return marker_excluded(found["texts"], tuple(found["python"]))
    except (SandboxError, ValueError, IndexError, KeyError, TypeError):
        return set()


def _judge(
    task: Task, verdict: Verdict, discover: bool, base_runs: list[dict[str, str]], gold_runs: list[dict[str, str]]
) -> None:
    """Fill the verdict's lists from the runs, or raise Quarantine."""
    if verdict.health is not None and not verdict.health.healthy:
        raise Quarantine(f"environment unhealthy: {verdict.health.summary}", _health_detail(verdict.health))
    _same_ids(task, verdict, base_runs, gold_runs)
    tests = sorted(set().union(*base_runs, *gold_runs) | set(task.fail_to_pass) | set(task.pass_to_pass))
    flaky: dict[str, str] = {}
    stable_base: dict[str, str] = {}
    stable_gold: dict[str, str] = {}
    for test in tests:
        b = [run.get(test, MISSING) for run in base_runs]
        g = [run.get(test, MISSING) for run in gold_runs]
        if len(set(b)) > 1 or len(set(g)) > 1:
            flaky[test] = f"flaky: base {','.join(map(_show, b))}; gold {','.join(map(_show, g))}"
            continue
        stable_base[test], stable_gold[test] = b[0], g[0]
    verdict.expected_xfail = sorted(t for t, s in stable_gold.items() if s == XFAIL)
    if discover:
        verdict.dropped_flaky = flaky
        f2p = [t for t in stable_gold if stable_gold[t] == PASSED and stable_base[t] in FAILING]
        p2p = [t for t in stable_gold if stable_gold[t] == PASSED and stable_base[t] == PASSED]
        broken = [t for t in stable_gold if stable_gold[t] in FAILING and stable_base[t] == PASSED]
        verdict.fail_to_pass, verdict.pass_to_pass = f2p, p2p
        if broken:
            raise Quarantine(f"gold leaves tests failing: {', '.join(broken)}")
        if not f2p:
            passing = [t for t in stable_gold if stable_gold[t] == PASSED]
            if not passing:
                detail = "no test passes with gold"
            elif len(passing) == len(p2p):
                detail = f"already passes at base: all {len(p2p)} tests that pass with gold pass at base too"
            else:
                detail = f"{len(passing)} tests pass with gold and none of them fails at base"
            skipped = sorted(t for t in stable_gold if SKIPPED in (stable_gold[t], stable_base[t]))
            if skipped:  # neither failing nor passing: never "already passes"
                detail += f"; {len(skipped)} test(s) skipped at base or with gold, neither failing nor passing: " + (
                    ", ".join(skipped[:3]) + (" ..." if len(skipped) > 3 else "")
                )
            if flaky:
                detail += f"; {len(flaky)} flaky tests dropped"
            raise Quarantine("FAIL_TO_PASS is empty: no test fails at base and passes with gold", detail)
        return
    # checking the spec's own lists
    listed = task.fail_to_pass + task.pass_to_pass
    absent = [t for t in listed if all(t not in run for run in gold_runs)]
    verdict.fail_to_pass = list(task.fail_to_pass)
    verdict.pass_to_pass = [t for t in task.pass_to_pass if t not in flaky]
    verdict.dropped_flaky = {t: r for t, r in flaky.items() if t in task.pass_to_pass}
    if absent:
        raise Quarantine(
            f"not in the test output: {', '.join(absent)}",
            "these listed ids were not reported by any gold run (misspelt, or not collected)",
        )
    flaky_f2p = [t for t in task.fail_to_pass if t in flaky]
    if flaky_f2p:
        raise Quarantine(f"flaky FAIL_TO_PASS test: {', '.join(flaky_f2p)}", "; ".join(flaky[t] for t in flaky_f2p))
    skipped = [t for t in task.fail_to_pass if stable_base[t] == SKIPPED]
    if skipped:  # a skipped test is neither failing nor passing
        raise Quarantine(
            f"FAIL_TO_PASS test is skipped at base: {', '.join(skipped)}",
            "a skipped test neither fails nor passes: its fix cannot be seen (a missing optional dependency?)",
        )
    passes_at_base = [t for t in task.fail_to_pass if stable_base[t] not in FAILING]
    if passes_at_base:
        raise Quarantine(
            f"FAIL_TO_PASS test already passes at base: {', '.join(passes_at_base)}",
            ", ".join(f"{t}: {_show(stable_base[t])}" for t in passes_at_base),
        )
    failing_at_base = [t for t in verdict.pass_to_pass if stable_base[t] != PASSED]
    if failing_at_base:
        raise Quarantine(
            f"PASS_TO_PASS test does not pass at base: {', '.join(failing_at_base)}",
            ", ".join(f"{t}: {_show(stable_base[t])}" for t in failing_at_base),
        )
    listed_ok = verdict.fail_to_pass + verdict.pass_to_pass
    skipped_gold = [t for t in listed_ok if stable_gold[t] == SKIPPED]
    if skipped_gold:
        raise Quarantine(
            f"listed tests are skipped with gold: {', '.join(skipped_gold)}",
            "a skipped test neither fails nor passes (a missing optional dependency?)",
        )
    broken = [
        t for t in listed_ok if not (stable_gold[t] == PASSED or (stable_gold[t] == XFAIL and t in task.expected_xfail))
    ]
    if broken:
        raise Quarantine(
            f"gold leaves tests failing: {', '.join(broken)}",
            ", ".join(f"{t}: {_show(stable_gold[t])}" for t in broken),
        )


HEALTH_LIMIT = 0.05  # at most this share of collected tests may error (with gold too) or skip for a missing module
_MISSING = (
    re.compile(r"No module named '([\w.]+)'"),
    re.compile(r"could not import '([\w.]+)'"),  # pytest.importorskip
    re.compile(r"\b(?:[Nn]eeds?|[Rr]equires?|[Rr]equiring|[Ii]nstall)\s+(?:the\s+)?[`'\"]?([A-Za-z][\w.-]*)"),
    re.compile(r"[`'\"]?([A-Za-z][\w.-]*)[`'\"]?\s+(?:is\s+|are\s+)?not installed"),
)
_NOT_MODULES = {
    "a", "an", "the", "this", "it", "test", "tests", "network", "internet", "root", "gpu", "cuda", "docker",
    "display", "tty", "windows", "linux", "macos", "darwin", "posix", "unix", "win32", "python", "pypy", "cpython",
}  # fmt: skip


def missing_module(text: str) -> str | None:
    """The module a skip reason or an error says is missing ("Needs Rich." -> rich), or None."""
    for pattern in _MISSING:
        found = pattern.search(text)
        if found:
            name = found.group(1).rstrip(".-").split(".")[0].lower()
            if name and name not in _NOT_MODULES and not re.fullmatch(r"(python|py|pypy)?[\d.]*", name):
                return name
    return None


def environment_health(base: TestReport, gold: TestReport, not_here: set[str] | frozenset[str] = frozenset()) -> Health:
    """The test command's health at base: counts, skip reasons, import errors; unhealthy when a test
    file cannot be collected with gold either, or when more than HEALTH_LIMIT of the collected tests
    error with gold too or are skipped for a missing module. `not_here`: modules the project asks for
    only under markers false on this interpreter (testdeps.marker_excluded): skips for them are the
    project's own on this Python, named in skip_reasons but not counted."""
    statuses = base.statuses
    module_skips = {n: r for n, r in base.skip_reasons.items() if "::" not in n}
    health = Health(
        collected=len(statuses) + len(module_skips),
        passed=sum(s == PASSED for s in statuses.values()),
        failed=sum(s == FAILED for s in statuses.values()),
        errored=sum(s == ERROR for s in statuses.values()),
        skipped=sum(s == SKIPPED for s in statuses.values()) + len(module_skips),
        collection_errors={f: _last_line(base.collection_messages.get(f, "")) for f in base.collection_errors},
    )
    reasons = {n: r for n, r in base.skip_reasons.items() if "::" not in n or statuses.get(n) == SKIPPED}
    for reason in reasons.values():
        health.skip_reasons[reason] = health.skip_reasons.get(reason, 0) + 1
    modules: dict[str, int] = {}
    skipped_missing = 0
    for reason in reasons.values():
        if (module := missing_module(reason)) and module.replace("-", "_") not in not_here:
            modules[module] = modules.get(module, 0) + 1
            skipped_missing += 1
    # errors the fix does not explain: with gold too (at base alone, a new test's import of what the
    # fix adds fails, as it must)
    stuck_files = [f for f in base.collection_errors if f in gold.collection_errors]
    stuck_tests = [t for t, s in statuses.items() if s == ERROR and gold.statuses.get(t) == ERROR]
    for text in [base.collection_messages.get(f, "") for f in stuck_files] + [
        base.messages.get(t, "") for t in stuck_tests
    ]:
        if module := missing_module(text):
            modules[module] = modules.get(module, 0) + 1
    health.import_errors = dict(sorted(modules.items(), key=lambda kv: -kv[1]))
    hint = _hint(list(health.import_errors))
    limit = HEALTH_LIMIT * max(health.collected, 1)
    if stuck_files:
        shown = "; ".join(f"{f}: {health.collection_errors[f]}" for f in stuck_files[:3])
        health.healthy = False
        health.summary = f"{len(stuck_files)} test file(s) cannot be collected, with gold either: {shown}{hint}"
    elif skipped_missing + len(stuck_tests) > limit:
        parts = []
        if skipped_missing:
            why = [
                r
                for r, _ in sorted(health.skip_reasons.items(), key=lambda kv: -kv[1])
                if (m := missing_module(r)) and m.replace("-", "_") not in not_here
            ]
            parts.append(f"{skipped_missing} of {health.collected} tests skipped: {' / '.join(why[:3])}")
        if stuck_tests:
            message = _last_line(base.messages.get(stuck_tests[0], ""))
            parts.append(f"{len(stuck_tests)} of {health.collected} tests error, with gold too: {message}")
        health.healthy = False
        health.summary = "; ".join(parts) + hint
    return health


def _hint(missing: list[str]) -> str:
    """What to add for these missing names: programs Debian ships (testdeps.PROGRAM_PACKAGES) as
    wholeloop.yaml's system_packages, the rest as Python packages (extra_requirements)."""
    packages = sorted({p for m in missing if (p := PROGRAM_PACKAGES.get(m))})
    programs = [m for m in missing if m in PROGRAM_PACKAGES]
    modules = [m for m in missing if m not in PROGRAM_PACKAGES]
    parts = []
    if modules:
        parts.append("add " + ", ".join(f"`{m}`" for m in modules) + " to extra_requirements?")
    if packages:
        parts.append(f"programs: add to wholeloop.yaml `system_packages: [{', '.join(packages)}]` (Debian packages)?")
    if unpackaged := [m for m in programs if PROGRAM_PACKAGES[m] is None]:
        parts.append(f"{', '.join(unpackaged)}: a program Debian does not ship (an image of your own: `image:`)")
    return f" ({'; '.join(parts)})" if parts else ""


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _health_detail(health: Health) -> str:
    return (
        f"at base: {health.collected} collected, {health.passed} passed, {health.failed} failed, "
        f"{health.errored} errored, {health.skipped} skipped"
    )


_ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]{6,}")


def _same_ids(task: Task, verdict: Verdict, base_runs: list[dict[str, str]], gold_runs: list[dict[str, str]]) -> None:
    """The runs of one phase, each with its own hash seed and test order, must report the same test
    ids: otherwise a test grading lists may not exist in the run that grades it (parametrized ids
    built by iterating a set, say). Raises Quarantine naming the ids and the runs that had them."""
    for phase, runs, seeds in (
        ("base", base_runs, verdict.seeds[: len(base_runs)]),
        ("gold", gold_runs, verdict.seeds[len(base_runs) :]),
    ):
        ids = [set(run) for run in runs]
        if not ids or all(i == ids[0] for i in ids):
            continue
        every, some = set.intersection(*ids), set.union(*ids)
        odd = sorted(some - every)
        said = [
            f"{t} (in run(s) {', '.join(str(n + 1) for n, i in enumerate(ids) if t in i)} of {len(ids)})"
            for t in odd[:5]
        ]
        if odd and all(_ADDRESS.search(t) for t in odd):  # an object's default repr in a parametrized id
            raise Quarantine(
                f"test ids hold memory addresses: {len(odd)} of {len(some)} test ids of the {phase} runs are not in every run",
                "an id names an object by its default repr (`<... object at 0x...>`), which differs in every "
                "run, so no list can name it: " + "; ".join(said),
            )
        what = "the hash seed or the test order" if not hash_seed_fixed_by_task(task) else "the test order"
        seeds_said = "; ".join(
            f"run {n + 1}: {', '.join(f'{k}={v}' for k, v in s.items())}" for n, s in enumerate(seeds)
        )
        raise Quarantine(
            f"test ids depend on {what}: {len(odd)} of {len(some)} test ids of the {phase} runs are not in every run",
            "; ".join(said) + (f" and {len(odd) - 5} more" if len(odd) > 5 else "") + f" ({seeds_said})",
        )


def _write_back(task: Task, spec: Path, verdict: Verdict, discover: bool) -> Task:
    """Rewrite the spec (the task's file) when the check changed what it says; returns the task as
    now on disk."""
    changes: dict[str, object] = {}
    if verdict.passed:
        if discover or verdict.pass_to_pass != task.pass_to_pass:
            changes["FAIL_TO_PASS"], changes["PASS_TO_PASS"] = verdict.fail_to_pass, verdict.pass_to_pass
        if verdict.expected_xfail != task.expected_xfail:
            changes["expected_xfail"] = verdict.expected_xfail
        if task.quarantined:
            changes["quarantined"] = None
    else:
        # a failed check always says why (passed is quarantined is None)
        reason = cast(str, verdict.quarantined) + (
            f" ({verdict.detail})" if verdict.detail and len(verdict.detail) < 300 else ""
        )
        if task.quarantined != reason:
            changes["quarantined"] = reason
        if discover and verdict.fail_to_pass != task.fail_to_pass:
            changes["FAIL_TO_PASS"], changes["PASS_TO_PASS"] = verdict.fail_to_pass, verdict.pass_to_pass
    if not changes:
        return task
    rewrite_spec(spec, changes)
    return load_task(spec)


def rewrite_spec(path: Path, changes: dict[str, object]) -> None:
    """Set (None: remove) top-level keys of a spec file, keeping its other keys in their order
    and its leading comment lines; atomic."""
    text = path.read_text()
    header = []
    for line in text.splitlines(keepends=True):
        if not line.startswith("#"):
            break
        header.append(line)
    data = yaml.safe_load(text) or {}
    if "quarantined" in changes and changes["quarantined"] is not None and "quarantined" not in data:
        data = {"id": data.get("id"), "quarantined": None, **{k: v for k, v in data.items() if k != "id"}}
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    if "expected_xfail" in data and not data["expected_xfail"]:
        data.pop("expected_xfail")
    Task.model_validate(data)  # what we write must load
    body = dump_yaml(data)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(header) + body)
    os.replace(tmp, path)


def _tail(text: str, lines: int = 5) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


# ----------------------------------------------------------------------------- many tasks


GUESS_RUN_S = 10.0  # seconds per test run assumed when no earlier check of these tasks is known


@dataclass
class Plan:
    tasks: list[Task]
    to_check: list[Task]
    up_to_date: list[Task]
    runs: int
    seconds_estimate: float  # test runs and timed own checks (image builds come on top)
    estimated_from: int  # how many tasks' earlier checks the estimate comes from (0: a guess)
    images_to_build: int = 0
    # the repository's own checks (inferred at check time: eslint, ruff, mypy...): tasks whose
    # earlier checks timed them are in seconds_estimate; this many may have some, not estimated
    own_checks_unknown: int = 0
    own_checks_estimated: bool = False

    def describe(self, repeats: int) -> str:
        """What `check` says before it starts."""
        if not self.to_check:
            return f"all {len(self.tasks)} task(s) have a current verdict: nothing to check (--force checks again)"
        minutes = self.seconds_estimate / 60
        how_long = f"about {minutes:.0f} min" if minutes >= 1.5 else f"about {self.seconds_estimate:.0f} s"
        basis = (
            f"from earlier checks of {self.estimated_from} of them"
            if self.estimated_from
            else f"a guess of {GUESS_RUN_S:g} s a run: none was checked before"
        )
        text = (
            f"checking {len(self.to_check)} task(s): {self.runs} test runs ({repeats} at base in one container and "
            f"{repeats} with gold, each in a fresh container, per task), {how_long} ({basis})"
        )
        if self.own_checks_estimated:
            text += ", own checks included"
        if self.images_to_build:
            text += f", plus building images for {self.images_to_build} task(s)"
        if self.own_checks_unknown:
            text += (
                f", plus the repository's own checks (eslint, ruff, mypy...) for {self.own_checks_unknown} task(s), "
                "not included: minutes a task for some repositories"
            )
        if self.up_to_date:
            text += f"; {len(self.up_to_date)} up to date, skipped"
        return text


def plan_checks(tasks: list[Task], options: CheckOptions) -> Plan:
    """Which tasks need a check, how many test runs that makes and about how long they take
    (from the run times of earlier verdicts, stale ones included)."""
    to_check, fresh = [], []
    per_run: list[float] = []
    own_seconds = 0.0
    own_unknown = own_known = 0
    to_build = 0
    for task in tasks:
        verdict = read_verdict(task.spec_path) if task.spec_path else None
        if not options.force and up_to_date(task):
            fresh.append(task)
            continue
        to_check.append(task)
        if verdict and verdict.run_seconds:
            per_run.append(sum(verdict.run_seconds) / len(verdict.run_seconds))
        if task.checks == []:  # none, said in the spec
            pass
        elif verdict and "own_checks" in verdict.seconds:
            own_seconds += verdict.seconds["own_checks"]
            own_known += 1
        else:
            own_unknown += 1
        try:
            to_build += existing_task_images(task) is None
        except SandboxError:
            to_build += 1
    runs = len(to_check) * 2 * options.repeats
    mean = sum(per_run) / len(per_run) if per_run else GUESS_RUN_S
    estimate = (mean * runs + own_seconds) / max(1, min(options.workers, len(to_check) or 1))
    return Plan(tasks, to_check, fresh, runs, estimate, len(per_run), to_build, own_unknown, own_known > 0)


INFRA_RETRIES = 2


def _check_with_retries(task: Task, options: CheckOptions) -> CheckResult:
    """A machine failure (the engine restarting, a container gone) is tried again, twice; then
    the task is left unchecked with the error, never quarantined for it."""
    attempt = 0
    while True:
        try:
            return check_task(task, options)
        except InfraError as exc:
            if attempt == INFRA_RETRIES:
                return CheckResult(task, None, error=f"{type(exc).__name__}: {exc}")
            attempt += 1
            if options.progress:
                options.progress(task.id, f"infrastructure failure ({exc}); trying again")
            time.sleep(5 * attempt)


def check_tasks(tasks: list[Task], options: CheckOptions) -> list[CheckResult]:
    """Check every task (up-to-date verdicts are kept unless `force`), `workers` at a time."""
    if options.workers <= 1:
        return [_check_with_retries(t, options) for t in tasks]
    with ThreadPoolExecutor(options.workers) as pool:
        return list(pool.map(lambda t: _check_with_retries(t, options), tasks))
