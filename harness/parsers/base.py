"""What every test parser produces (`TestReport`) and declares (`Parser`).

Grading, the agent's run_tests tool and feedback consume only `TestReport`, so a framework is
supported by one parser module: how its results are read (from the output, or from a results file
the test command writes outside the repository), how they map to per-test statuses, and which
paths of its ecosystem an agent must not change (its tests and runner configuration).

Parsers are pure functions of text and bytes: no Docker, no files of their own.
"""

from __future__ import annotations

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
    # When no results were found: what to tell the task author (the parser knows its framework).
    missing_hint: str = ""

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


class Parser(Protocol):
    """One test framework. Register it with one line in `harness.parsers.PARSERS` (or an entry
    point in the "wholeloop.parsers" group)."""

    name: ClassVar[str]
    #: Where results come from: None = the command's output (stdout and stderr); otherwise the path
    #: of a results file the test command writes, outside the repository (grading reads it).
    results_file: ClassVar[str | None]
    #: Globs (as in a task's protected_paths) of the files of this ecosystem an agent must not
    #: change or plant: tests, fixtures, runner configuration, start-up hooks.
    protected_paths: ClassVar[tuple[str, ...]]

    #: Basenames of this ecosystem's test-runner and packaging configuration (at any depth): a
    #: commit that changes one is not mined unless allowed (`wholeloop mine --allow-config`).
    config_files: ClassVar[tuple[str, ...]]

    def parse(self, output: str, results: bytes | None = None) -> TestReport:
        """The report of one run, from its output and (when `results_file` is set) the bytes of
        the results file, None when the command did not write it."""
        ...

    def is_test_path(self, path: str) -> bool:
        """Is this repository-relative path (`/`-separated) part of the tests: a test module, a
        fixture or helper, or any file under a test folder? Mining splits a commit with it."""
        ...

    def is_test_module(self, path: str) -> bool:
        """Is this a file the test command runs by name (not a helper or data file)?"""
        ...

    def test_command(self, files: list[str] | None) -> str:
        """The hidden test command for these test files (None: the whole suite), in the form
        `parse` reads."""
        ...

    def test_file(self, test_id: str) -> str | None:
        """The repository-relative file a test id lives in, None when the id does not say."""
        ...
