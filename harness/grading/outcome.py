"""Outcomes and grades: what one graded attempt came to, and the rule that decides it."""

from __future__ import annotations

from pydantic import BaseModel, Field, PrivateAttr

from ..parsers import ERROR, FAILED, MISSING, NOT_RUN, PASSED, SKIPPED, XFAIL
from ..tasks import Task
from ..vocabulary import NOT_SCORED, Outcome
from .acceptance import Axes
from .evidence import TreeEvidence

__all__ = ["NOT_SCORED", "Outcome"]  # the vocabulary's, re-exported: grading decides them

GRADE_SCHEMA = 1
# The grader's version, recorded in every grade.json: bump it whenever grading changes meaning (what
# it trusts, strips or counts as passed), so older verdicts can be found and re-graded
# (`wholeloop regrade`). 1: before issue 9 (grade.json had no grader_version). 2: the patch taken
# from outside the agent's container; paths from the patch; two channels; XFAIL only when expected.
# 3: a grading step the patch makes fail (it passes on the base) is `environment_broken`, not infra_error.
# 4: after the red team -- shadowing asked of every new path and the hidden command's roots, names
# re-rendered for the appliers, symlinks resolved through symlinks, `testing/` protected only where
# the hidden tests are, hidden literals kept out of feedback.
# 5: every revert and strip the grade claims is checked with content hashes of the graded tree
# (`evidence`); a claim that does not hold is never resolved (issue 10, rule 3).
# 6: the hidden tests run with PYTHONHASHSEED fixed (0, or the task's) and the environment's
# test-order randomisers (pytest-randomly, pytest-random-order) seeded with 0, recorded in `seeds`
# (`determinism`; issue 20, item 3): a grade no longer depends on the run's hash seed or order.
# 7: Rust's `#[cfg(test)]` modules found with a real parser through the module tree (a decoy in a
# comment, a moved module, a new test module file), package.json's bin/scripts/jest/... put back
# with the rest of the file kept (issue 21).
# 8: every grade records the acceptance axes of the agent's raw patch (`acceptance`; issue 25):
# scope against gold, size, tests deleted or weakened, top-level files, debug leftovers, binaries.
# 9: a resolved grade records the repository's own checks on its files, diff-aware against the
# base (`acceptance.own_checks`; issue 25, item 1).
# 10: a pytest test that hangs fails at the per-test time limit (`timeouts.test_s`) whatever it does
# with the interruption, and the run goes on (it ended "tests timed out"); an object's address in a
# test id is read as one token, and where ids then coincide the failure wins; Go's tests run with
# -vet=off (a vet finding is an acceptance check, not a test result). Issue 23, red team 6.
# 11: where tests share an id once addresses are read as one token, the id keeps the status furthest
# from a pass of all of theirs (a skipped or xfailed twin too, not only a failure); the debug_leftovers
# axis reads an added line's parts after a CR (axes version 3). Red team 7.
GRADER_VERSION = 11


class TestTally(BaseModel):
    __test__ = False  # not a pytest test class

    passed: int = 0
    failed: int = 0
    total: int = 0
    ran: bool = True  # False: no test ran (nothing to test), so neither passed nor failed is meaningful


class Stripped(BaseModel):
    """A path of the patch grading did not apply (the base's version stays), and why."""

    path: str
    reason: str


class FailedStep(BaseModel):
    """A grading step that failed with the patch applied and passed on the base: the patch's doing."""

    step: str
    output: str


class Grade(BaseModel):
    schema_version: int = GRADE_SCHEMA
    grader_version: int | None = Field(None, description="GRADER_VERSION of the grader that wrote it (None: older)")
    task_id: str
    outcome: Outcome
    resolved: bool
    apply_method: str | None = None
    reverted: list[str] = Field(default_factory=list, description="protected files and shadowing modules left at base")
    stripped: list[Stripped] = Field(default_factory=list, description="every path of the patch not applied, and why")
    evidence: TreeEvidence | None = Field(
        None,
        description="each reverted and stripped path's content hash at the "
        "base and in the graded tree (None: nothing claimed, or no tests ran)",
    )
    tests: dict[str, str] = Field(default_factory=dict, description="FAIL_TO_PASS and PASS_TO_PASS statuses")
    fail_to_pass: TestTally = Field(default_factory=TestTally)
    pass_to_pass: TestTally = Field(default_factory=TestTally)
    messages: dict[str, str] = Field(
        default_factory=dict, description="failure message of each failing listed test, as the parser read it"
    )
    exit_code: int | None = None
    consistent: bool = True
    channels: dict[str, str] = Field(default_factory=dict, description="what each channel of results said")
    tampering: str | None = Field(None, description="channels that contradict each other: suspected tampering")
    failed_step: FailedStep | None = Field(
        None, description="environment_broken: the step the patch made fail, and its output"
    )
    seeds: dict[str, str] = Field(
        default_factory=dict,
        description="what fixed the hidden run's hash seed and test order: PYTHONHASHSEED, the randomisers' "
        "options (empty: a grade from before grader 6, or no tests ran)",
    )
    acceptance: Axes | None = Field(
        None,
        description="the acceptance axes of the agent's raw patch, with their evidence (None: a grade "
        "from before grader 8, not measured; see harness.grading.acceptance)",
    )
    note: str = ""
    seconds: float = 0.0

    _expected_xfail: set[str] = PrivateAttr(default_factory=set)

    def failing(self) -> list[str]:
        """The task's listed tests that ran and did not pass (absent from the output included; an
        unexpected XFAIL did not pass)."""
        return [
            t
            for t, s in self.tests.items()
            if s not in (PASSED, SKIPPED, NOT_RUN) and not (s == XFAIL and t in self._expected_xfail)
        ]


def _passed(status: str, test: str, task: Task) -> bool:
    """PASSED; XFAIL only for a test the task expects to xfail (pytest.xfail() at run time is not a pass)."""
    return status == PASSED or (status == XFAIL and test in task.expected_xfail)


def _failed(status: str) -> bool:
    return status in (FAILED, ERROR, MISSING)


def classify(task: Task, statuses: dict[str, str], exit_code: int | None, consistent: bool, note: str) -> Grade:
    """The outcome from parsed statuses (tests absent from the output count as failed)."""
    tests = {t: statuses.get(t, MISSING) for t in [*task.fail_to_pass, *task.pass_to_pass]}
    f2p = TestTally(total=len(task.fail_to_pass))
    f2p.passed = sum(_passed(tests[t], t, task) for t in task.fail_to_pass)
    f2p.failed = f2p.total - f2p.passed
    p2p = TestTally(total=len(task.pass_to_pass))
    p2p.failed = sum(_failed(tests[t]) for t in task.pass_to_pass)
    p2p.passed = sum(_passed(tests[t], t, task) for t in task.pass_to_pass)
    if p2p.failed:
        outcome = Outcome.regression
    elif f2p.failed == 0 and consistent:
        outcome = Outcome.resolved
    else:
        outcome = Outcome.unresolved
    graded = Grade(
        task_id=task.id,
        grader_version=GRADER_VERSION,
        outcome=outcome,
        resolved=outcome is Outcome.resolved,
        tests=tests,
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        exit_code=exit_code,
        consistent=consistent,
        note=note,
    )
    graded._expected_xfail = set(task.expected_xfail)
    return graded
