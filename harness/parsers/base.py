"""What every test parser produces (`TestReport`) and declares (`Parser`).

Grading, the agent's run_tests tool and feedback consume only `TestReport`, so a framework is
supported by one parser module: how its results are read, how they map to per-test statuses,
which paths of its ecosystem an agent must not change (its tests and runner configuration), and
what grading must do so results come through two channels that must agree: the framework's
printed summary and exit code, and a structured per-test report grading asks for itself
(`Parser.run_setup`), written outside the repository. A framework with no structured report is
graded on one channel, and the grade says so.

Parsers are pure functions of text and bytes: no Docker, no run folder.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

# Per-test statuses, as every parser reports them.
PASSED, FAILED, ERROR, SKIPPED, XFAIL, XPASS = "PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS"
STATUSES = (PASSED, FAILED, ERROR, SKIPPED, XFAIL, XPASS)
# Statuses grading gives a listed test that no parser reported.
MISSING = "missing"  # the tests ran, and this id was not in their results
NOT_RUN = "not_run"  # no tests ran (no patch to test)


@dataclass
class TestReport:
    """Per-test results of one run of a test command, with what is needed to cross-check them."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    statuses: dict[str, str] = field(default_factory=dict)  # test id -> status
    counts: dict[str, int] = field(default_factory=dict)  # the framework's own totals (passed, failed, errors...)
    collection_errors: list[str] = field(default_factory=list)  # files or packages that failed to load
    messages: dict[str, str] = field(default_factory=dict)  # test id -> its failure message, if given
    found_summary: bool = False  # the framework's results were found at all
    listed_passed: int = 0  # passing entries as listed, before de-duplication (to check against counts)
    listed: dict[str, set[str]] = field(default_factory=dict)  # test id -> every status it was listed with
    # When no results were found: what to tell the task author (the parser knows its framework).
    missing_hint: str = ""
    exception_types: dict[str, str] = field(default_factory=dict)  # test id -> the type of what it raised
    # The channels, once `Parser.parse` had the exit code: what each said, and whether they agree.
    channels: dict[str, str] = field(default_factory=dict)  # channel -> what it said ("agrees", "missing", ...)
    consistent: bool = True  # the results can be trusted to decide an outcome
    why: str = ""  # why not, when not consistent
    disagreement: str = ""  # channels that contradict each other: suspected tampering

    def failing(self) -> list[str]:
        return [t for t, s in self.statuses.items() if s in (FAILED, ERROR)]

    def count(self, key: str) -> int:
        """A total: the framework's own when it printed one, else counted from the statuses."""
        if key in self.counts:
            return self.counts[key]
        status = {"passed": PASSED, "failed": FAILED, "errors": ERROR, "skipped": SKIPPED,
                  "xfailed": XFAIL, "xpassed": XPASS}[key]
        return sum(s == status for s in self.statuses.values())

    def consistent_with(self, exit_code: int | None) -> tuple[bool, str]:
        """Do the parsed results agree with the exit code and the framework's own totals?"""
        bad = bool(self.failing() or self.collection_errors)
        if exit_code == 0 and bad:
            return False, "exit code 0 but failures were reported"
        if exit_code == 1 and not bad:
            return False, "exit code 1 (tests failed) but no failure was reported"
        if self.counts:
            if self.counts.get("passed", 0) != self.listed_passed:
                return False, (
                    f"the closing line says {self.counts.get('passed', 0)} passed "
                    f"but {self.listed_passed} PASSED lines were found"
                )
        return True, ""


@dataclass
class RunSetup:
    """What a parser asks of the hidden test run in grading's container (never the agent's)."""

    env: dict[str, str] = field(default_factory=dict)  # set for the test command
    files: dict[str, bytes] = field(default_factory=dict)  # absolute path -> bytes, placed before the run
    report_path: str | None = None  # where the structured report will be (outside the repository)
    no_report: str = ""  # why this environment gives no structured report (graded on one channel)
    anchor: str = ""  # text the runner prints itself just before its own summary
    imports: tuple[str, ...] = ()  # top-level modules the run imports before any test (its plugins)


class Parser(Protocol):
    """One test framework. Register it with one line in `harness.parsers.PARSERS` (or an entry
    point in the "wholeloop.parsers" group). `ParserBase` gives the defaults of a framework with
    no structured report."""

    name: ClassVar[str]
    #: Where the run_tests tool reads results: None = the command's output (stdout and stderr);
    #: otherwise the path of a results file the test command writes, outside the repository.
    results_file: ClassVar[str | None]
    #: Globs (as in a task's protected_paths) of the files of this ecosystem an agent must not
    #: change or plant: tests, fixtures, runner configuration, start-up hooks.
    protected_paths: ClassVar[tuple[str, ...]]
    #: A shell script run as the last step of building a task image (before any agent): its standard
    #: output (JSON) is recorded outside the repository and handed to `run_setup` as `facts` when
    #: grading (which plugins the environment had, say). None: nothing to record.
    image_setup: ClassVar[str | None]
    #: Exit codes of the test command that mean the tests ran to the end (only those can resolve).
    exit_codes_ran: ClassVar[tuple[int, ...] | None]

    def run_setup(self, facts: dict | None, token: str, plugins: tuple[str, ...] = ()) -> RunSetup:
        """What the hidden test run needs: its environment, files to place, where the structured
        report goes (a path holding `token`, a secret of this grading), and `plugins` the task
        names besides those `facts` recorded."""
        ...

    def parse(self, output: str, results: bytes | None = None, *, setup: RunSetup | None = None,
              exit_code: int | None = None) -> TestReport:
        """The report of one run, from its output and the structured report's bytes (None when
        the command did not write it), cross-checked when `exit_code` is given: `consistent`, `why`
        and `disagreement` say whether the channels can be trusted and agree."""
        ...


class ParserBase(ABC):
    """Defaults for a parser: results from the output alone, no image setup, no structured report
    (graded on one channel, and the grade says so), any exit code accepted."""

    results_file: ClassVar[str | None] = None
    image_setup: ClassVar[str | None] = None
    exit_codes_ran: ClassVar[tuple[int, ...] | None] = None

    def run_setup(self, facts: dict | None, token: str, plugins: tuple[str, ...] = ()) -> RunSetup:
        return RunSetup(no_report=f"the {self.name} parser has no structured report")  # type: ignore[attr-defined]

    def parse(self, output: str, results: bytes | None = None, *, setup: RunSetup | None = None,
              exit_code: int | None = None) -> TestReport:
        report = self.parse_output(output)
        if exit_code is not None:
            report.consistent, report.why = report.consistent_with(exit_code)
            if self.exit_codes_ran is not None and exit_code not in self.exit_codes_ran:
                report.consistent, report.why = False, f"exit code {exit_code}: the tests did not run to the end"
            report.channels = {"summary": "found" if report.found_summary else "missing",
                               "structured": (setup.no_report if setup else "") or "none"}
        return report

    @abstractmethod
    def parse_output(self, output: str) -> TestReport:
        """Statuses and counts from the command's output alone."""
