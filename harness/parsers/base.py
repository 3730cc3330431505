"""What every test parser produces (`TestReport`) and declares (`Parser`).

Grading, the agent's run_tests tool, feedback, mining and `tasks check` consume only this module's
names, so a framework is supported by one parser module: how its results are read (from the
output, or from a results file the test command writes outside the repository), how they map to
per-test statuses, which files of its ecosystem are tests (`test_paths`, `is_test_path`), which
paths an agent must not change (`protected_paths`: its tests and its runner's configuration and
start-up hooks), and the hidden test command that runs a given set of test files (`test_command`,
for mining).

Parsers are pure functions of text and bytes: no Docker, no files of their own.

Trust. Every framework here runs the code under test in the same process as (or a child of) the
thing that prints or writes its results, so any channel of results can be written to by that
code. Parsers therefore take what cannot be forged from inside that process where there is such a
thing (the exit code of the command), read every channel the framework has, and call a run
inconsistent (`problems`) when the channels disagree or when a test was reported in ways the
framework never reports one (two verdicts for one test, a pass after a failure). A failure always
wins over a pass.

Channels. Grading asks each parser what the hidden run needs (`run_setup`): pytest's structured
report, or the fixed path a framework's own JSON report is written to. `parse` with the exit code
then fills `channels` (what each channel said) and `consistent` / `why` / `disagreement`; a
contradiction between channels, or a test reported in a way its framework never reports one, is a
disagreement: suspected tampering, never resolved. A framework with no structured report (go
test's -json events are the test binary's own output; cargo's text) is graded on one channel,
checked against the exit code, and the grade says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import ClassVar, Protocol

# Per-test statuses, as every parser reports them.
PASSED, FAILED, ERROR, SKIPPED, XFAIL, XPASS = "PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS"
STATUSES = (PASSED, FAILED, ERROR, SKIPPED, XFAIL, XPASS)
# Statuses grading gives a listed test that no parser reported.
MISSING = "missing"  # the tests ran, and this id was not in their results
NOT_RUN = "not_run"  # no tests ran (no patch to test)

# Where grading's containers hold the repository (sandbox.REPO_DIR; parsers do not import the
# sandbox, tests/test_parsers_polyglot.py checks the two agree). Reports that name files by their
# absolute path (Jest, Vitest) are made relative to it.
REPO_ROOT = "/repo"
# Where grading keeps its own files in the grading container (harness.grading.patching.WORK):
# results files of the parsers that have one live under it, outside the repository.
REPORTS_DIR = "/tmp/wholeloop-grade/reports"

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def strip_ansi(text: str) -> str:
    """Text without terminal colour and cursor sequences (some runners colour even into a pipe)."""
    return _ANSI.sub("", text)


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
    # Exit codes with which this framework says "a test failed" (or, for some, "did not build");
    # None: any non-zero code. Exit 0 with a failure, or one of these without any, is inconsistent.
    failed_exit_codes: tuple[int, ...] | None = (1,)
    # True: any other non-zero exit code is inconsistent too (the runner was killed, or ended in a
    # way the framework never ends: its results cannot be trusted).
    strict_exit: bool = False
    # Contradictions found while reading (channels that disagree, a test reported twice in ways the
    # framework never reports one): each makes the run inconsistent.
    problems: list[str] = field(default_factory=list)
    exception_types: dict[str, str] = field(default_factory=dict)  # test id -> the type of what it raised
    # ids that several tests of this run share once read (pytest: an object's address in a parametrized
    # id read as one token): id -> how many tests; their status is the worst of theirs (a failure wins)
    merged_ids: dict[str, int] = field(default_factory=dict)
    # Why each skipped test (or module skipped whole at collection) was skipped, and what each file
    # that failed to load said, as the framework reported it (the environment's health: tasks check)
    skip_reasons: dict[str, str] = field(default_factory=dict)
    collection_messages: dict[str, str] = field(default_factory=dict)
    # The channels: what each said ("found", "missing", "agrees", "disagrees", "unavailable: why"), keyed
    # "summary" (the printed results), "structured" (a report file), "exit_code", and for a parser with
    # more ("verbose": Vitest's per-test lines); a task with several parsers prefixes each with its name.
    channels: dict[str, str] = field(default_factory=dict)
    consistent: bool = True  # the results can be trusted to decide an outcome (set once the exit code is known)
    why: str = ""  # why not, when not consistent
    disagreement: str = ""  # channels that contradict each other: suspected tampering

    def failing(self) -> list[str]:
        return [t for t, s in self.statuses.items() if s in (FAILED, ERROR)]

    def count(self, key: str) -> int:
        """A total: the framework's own when it printed one, else counted from the statuses."""
        if key in self.counts:
            return self.counts[key]
        status = {
            "passed": PASSED,
            "failed": FAILED,
            "errors": ERROR,
            "skipped": SKIPPED,
            "xfailed": XFAIL,
            "xpassed": XPASS,
        }[key]
        return sum(s == status for s in self.statuses.values())

    def consistent_with(self, exit_code: int | None) -> tuple[bool, str]:
        """Do the parsed results agree with the exit code, with each other and with the
        framework's own totals?"""
        if self.problems:
            return False, "; ".join(self.problems)
        bad = bool(self.failing() or self.collection_errors)
        if exit_code == 0 and bad:
            return False, "exit code 0 but failures were reported"
        failed_code = (
            exit_code not in (0, None) if self.failed_exit_codes is None else exit_code in self.failed_exit_codes
        )
        if failed_code and not bad:
            return False, f"exit code {exit_code} (tests failed) but no failure was reported"
        if self.strict_exit and exit_code not in (0, None) and not failed_code:
            return False, (
                f"the test command ended with exit code {exit_code}, which the test runner never ends with "
                "on its own (killed, or stopped before reporting): its results are not trusted"
            )
        if self.counts:
            if self.counts.get("passed", 0) != self.listed_passed:
                return False, (
                    f"the closing line says {self.counts.get('passed', 0)} passed "
                    f"but {self.listed_passed} PASSED lines were found"
                )
        return True, ""


# Grading's per-test time limit (a task's `timeouts.test_s`), in seconds, set for every hidden test
# run; pytest's plugin reads it (harness/data/pytest/wholeloop_test_limit.py); Jest, Vitest and Go
# have per-test limits of their own.
TEST_LIMIT_VAR = "WHOLELOOP_TEST_LIMIT_S"


@dataclass
class RunSetup:
    """What a parser asks of the hidden test run in grading's container (never the agent's)."""

    env: dict[str, str] = field(default_factory=dict)  # set for the test command
    files: dict[str, bytes] = field(default_factory=dict)  # absolute path -> bytes, placed before the run
    report_path: str | None = None  # where the structured report will be (outside the repository)
    no_report: str = ""  # why this environment gives no structured report (graded on one channel)
    anchor: str = ""  # text the runner prints itself just before its own summary
    imports: tuple[str, ...] = ()  # top-level modules the run imports before any test (its plugins)
    # options that seed the environment's test-order randomisers ("{seed}" in them), appended to the
    # environment variable `seed_var` of `env` (pytest: PYTEST_ADDOPTS); see harness.grading.determinism
    seed_options: tuple[str, ...] = ()
    seed_var: str = ""
    # canary tests grading planted in the hidden test files (`Parser.canary`): test file -> (title
    # of the one that must fail, title of the one that must pass), drawn at random per grading
    canaries: dict[str, tuple[str, str]] = field(default_factory=dict)

    def env_for(self, seed: int) -> dict[str, str]:
        """`env` with the randomisers seeded with `seed`."""
        env = dict(self.env)
        if self.seed_options and self.seed_var:
            seeded = [option.format(seed=seed) for option in self.seed_options]
            env[self.seed_var] = " ".join(x for x in (env.get(self.seed_var, ""), *seeded) if x)
        return env


class Parser(Protocol):
    """One test framework. Register it with one line in `harness.parsers.PARSERS` (or an entry
    point in the "wholeloop.parsers" group). `ParserBase` gives the defaults."""

    name: ClassVar[str]
    #: Where results come from besides the command's output (stdout and stderr): None, or the path
    #: of a results file the test command writes, outside the repository (the run_tests tool and
    #: grading read it; grading removes it before the run).
    results_file: ClassVar[str | None]
    #: Globs (as in a task's protected_paths: git's glob pathspecs, see `glob_match`) of the files
    #: of this ecosystem an agent must not change or plant: tests, fixtures, runner configuration,
    #: start-up hooks. Grading puts them back (or deletes them) before the hidden tests run.
    protected_paths: ClassVar[tuple[str, ...]]
    #: The subset of protected_paths that are tests and their data (globs): `is_test_path` by default.
    test_paths: ClassVar[tuple[str, ...]]
    #: Basenames of this ecosystem's test-runner, build and packaging configuration (at any depth):
    #: a commit that changes one is not mined unless allowed (`wholeloop mine --allow-config`).
    config_files: ClassVar[tuple[str, ...]]
    #: Globs of files parts of which are the tests' or decide what the test command runs, while a
    #: fix may change the rest of them, so no path rule can protect them (Rust's source files, which
    #: hold `#[cfg(test)]` modules; package.json, whose `bin` and `scripts` pick the program `npx`
    #: runs): when the patch touches one, grading reads every file they match before and after
    #: applying it and gives both trees to `restore_inline_tests`. Empty for most frameworks.
    inline_tests: ClassVar[tuple[str, ...]]
    #: A shell script run as the last step of building a task image (before any agent): its standard
    #: output (JSON) is recorded outside the repository and handed to `run_setup` as `facts` when
    #: grading (which plugins the environment had, say). None: nothing to record.
    image_setup: ClassVar[str | None]
    #: Exit codes of the test command that mean the tests ran to the end (only those can resolve).
    exit_codes_ran: ClassVar[tuple[int, ...] | None]

    def run_setup(self, facts: dict | None, token: str, plugins: tuple[str, ...] = ()) -> RunSetup:
        """What the hidden test run needs: its environment, files to place, where the structured
        report goes (a path holding `token`, a secret of this grading, or the parser's fixed
        results_file), and `plugins` the task names besides those `facts` recorded."""
        ...

    def parse(
        self, output: str, results: bytes | None = None, *, setup: RunSetup | None = None, exit_code: int | None = None
    ) -> TestReport:
        """The report of one run, from its output and the structured report's bytes (None when
        the command did not write it), cross-checked when `exit_code` is given: `consistent`, `why`
        and `disagreement` say whether the channels can be trusted and agree."""
        ...

    def is_test_path(self, path: str) -> bool:
        """Is this repository-relative path (`/`-separated) part of the tests: a test file, a
        fixture, helper or data file of the tests? Mining splits a commit with it."""
        ...

    def is_test_module(self, path: str) -> bool:
        """Is this a file the test command runs by name (not a helper or data file)?"""
        ...

    def test_command(self, files: list[str] | None) -> str:
        """The hidden test command for these test files (None: the whole suite), reporting the way
        `parse` reads (writing `results_file` when there is one)."""
        ...

    def test_file(self, test_id: str) -> str | None:
        """The repository-relative file a test id lives in, None when the id does not say."""
        ...

    def canary(self, path: str, must_fail: str, must_pass: str, nonce: str) -> str | None:
        """Source text that, appended to test file `path`, defines two top-level tests titled
        `must_fail` (whose assertion fails) and `must_pass` (whose assertion holds), named by
        `nonce` where it needs names of its own; None when this framework or file takes none.
        Grading plants them in the hidden test files and `parse` (given the setup's `canaries`)
        checks each was reported as it must be, then leaves them out of the results: a run whose
        results were rewritten inside the process that runs the tests reports the must-fail one
        passed."""
        ...

    def restore_inline_tests(
        self, before: Mapping[str, bytes], after: Mapping[str, bytes], read: Callable[[str], bytes | None]
    ) -> tuple[dict[str, bytes | None], list[tuple[str, str]]]:
        """`before` and `after`: every file of the repository matching `inline_tests` (path ->
        bytes) as the patch found it and as it left it; `read(path)`: one more file of `after` (None:
        there is none). Returns the files to write so that the parts that are the tests' are back as
        they were, the rest of the patch kept (path -> bytes; None: remove it), and what was put
        back, as (path, what) pairs."""
        ...


class ParserBase:
    """Defaults for the parts of the protocol a framework may not need: results from the output
    (`parse_output`) or, with a results_file, from `read(output, results)`; no image setup; the
    results file (if any) as the structured channel, else one channel and the grade says so; any
    exit code accepted; tests are the files `test_paths` match and each is run by name, ids do
    not name files, no configuration files block mining, no tests inline. Inherit it (the
    built-in parsers do); a parser still declares name, protected_paths and test_paths and
    defines parse_output (or read) and test_command."""

    name: ClassVar[str]  # each parser's own
    results_file: ClassVar[str | None] = None
    image_setup: ClassVar[str | None] = None
    exit_codes_ran: ClassVar[tuple[int, ...] | None] = None
    test_paths: ClassVar[tuple[str, ...]] = ()
    config_files: ClassVar[tuple[str, ...]] = ()
    inline_tests: ClassVar[tuple[str, ...]] = ()
    #: Why this framework has no structured report, when it has no results_file (the grade's note).
    no_report: ClassVar[str] = ""

    def run_setup(self, facts: dict | None, token: str, plugins: tuple[str, ...] = ()) -> RunSetup:
        if self.results_file:
            return RunSetup(report_path=self.results_file)
        return RunSetup(no_report=self.no_report or f"the {self.name} parser has no structured report")

    def parse(
        self, output: str, results: bytes | None = None, *, setup: RunSetup | None = None, exit_code: int | None = None
    ) -> TestReport:
        report = self.read(output, results)
        report.channels.setdefault("summary", "found" if report.found_summary else "missing")
        if not self.results_file:
            report.channels.setdefault(
                "structured",
                "unavailable: " + ((setup.no_report if setup else "") or self.run_setup(None, "").no_report),
            )
        if exit_code is not None:
            finish(report, exit_code, self.exit_codes_ran)
        return report

    def __init_subclass__(cls, **kwargs) -> None:
        # A parser reads its results somehow: refused when the class is defined, not at grading time.
        super().__init_subclass__(**kwargs)
        if cls.read is ParserBase.read and not any("parse_output" in vars(k) for k in cls.__mro__):
            raise TypeError(f"{cls.__name__} must define parse_output(output) or read(output, results)")

    def read(self, output: str, results: bytes | None) -> TestReport:
        """Statuses, counts, problems and the channels found, from the output and the results file
        (by default from the output alone: the subclass's `parse_output`)."""
        return self.parse_output(output)  # type: ignore[attr-defined]  # ensured by __init_subclass__

    def is_test_path(self, path: str) -> bool:
        return matches_any(self.test_paths, path)

    def is_test_module(self, path: str) -> bool:
        return self.is_test_path(path)

    def test_file(self, test_id: str) -> str | None:
        return None

    def canary(self, path: str, must_fail: str, must_pass: str, nonce: str) -> str | None:
        return None

    def restore_inline_tests(
        self, before: Mapping[str, bytes], after: Mapping[str, bytes], read: Callable[[str], bytes | None]
    ) -> tuple[dict[str, bytes | None], list[tuple[str, str]]]:
        return {}, []


# ------------------------------------------------------------------------------------ paths


@lru_cache(maxsize=4096)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """git's `:(glob)` pathspec as a regular expression: `*` and `?` never cross a `/`, `**/`
    is zero or more folders, a trailing `/**` everything inside, `[...]` a character class; a
    pattern without any wildcard also matches everything under it (as a folder), one with a
    wildcard only what it matches itself."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i) and (i == 0 or pattern[i - 1] == "/"):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == n:
            out.append("/.*")
            i += 3
        elif pattern.startswith("**", i) and i + 2 == n and (i == 0 or pattern[i - 1] == "/"):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end < 0:
                out.append(re.escape("["))
                i += 1
                continue
            body = pattern[i + 1 : end]
            if body[:1] in ("!", "^"):
                body = "^" + body[1:]
            out.append("(?!/)[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif pattern[i] == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    literal = not any(ch in pattern for ch in "*?[")
    return re.compile("".join(out) + ("(?:/.*)?" if literal else ""), re.DOTALL)


def glob_match(pattern: str, path: str) -> bool:
    """Does repository-relative `path` match `pattern` as grading's `git status -- :(glob)pattern`
    matches it? (tests/test_parsers_polyglot.py checks this against git itself.)"""
    # git tries the pattern as a literal path first ("[x].txt" names the file "[x].txt" too)
    return path == pattern or _glob_regex(pattern).fullmatch(path) is not None


def finish(report: TestReport, exit_code: int, exit_codes_ran: tuple[int, ...] | None = None) -> TestReport:
    """Cross-check a report with its run's exit code: `consistent` and `why`; contradictions found
    while reading (`problems`) are a disagreement (suspected tampering); each channel found says
    whether it agrees; the exit code is recorded as a channel."""
    report.consistent, report.why = report.consistent_with(exit_code)
    if exit_codes_ran is not None and exit_code not in exit_codes_ran:
        report.consistent, report.why = False, f"exit code {exit_code}: the tests did not run to the end"
    if report.problems:
        report.disagreement = "; ".join(report.problems)
    for name, said in report.channels.items():
        if said == "found":
            report.channels[name] = "disagrees" if report.disagreement else "agrees"
    report.channels["exit_code"] = str(exit_code)
    return report


def matches_any(patterns: Iterable[str], path: str) -> bool:
    return any(glob_match(p, path) for p in patterns)


def is_protected_path(parser: Parser, path: str) -> bool:
    """Would grading put `path` back if an agent changed it (a test, or runner configuration)?"""
    return matches_any(parser.protected_paths, path)


def shell_quote(paths: Sequence[str]) -> str:
    """Paths as shell words (for test_command)."""
    import shlex

    return " ".join(shlex.quote(p) for p in paths)


def killed_by(exit_code: int | None) -> int | None:
    """The signal that ended a test command, read from its exit code (a shell's 128 + N, or -N),
    or None. Test runners exit with small codes of their own; 129-159 is a signal's."""
    if exit_code is None:
        return None
    if exit_code < 0:
        return -exit_code
    return exit_code - 128 if 128 < exit_code < 160 else None
