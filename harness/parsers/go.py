"""Per-test results from `go test -json` (test2json events), with ids `<import path>::<Test>[/<sub>...]`.

The id is the event's `Package`, "::", and its `Test` exactly as go names it (subtests are
`TestX/sub`, go already turned their spaces into `_`); parents and subtests are both ids (go fails
a parent when a subtest fails). A package that does not build has no JSON at all in go 1.19: cmd/go
prints `FAIL\t<pkg> [build failed]` (or `[setup failed]`) as plain text among the events and exits
2; that package is a collection error and its tests are absent.

Trust. test2json builds its events from the text the test binary prints, and the code under test
is that binary: a line it prints that looks like `--- PASS: TestX (0.00s)` becomes a second,
passing, event for TestX after its real failure (tests/data/parsers/go/go-test-json-forged-lines).
So here, for each test:

- a `fail` event wins over any number of `pass` events, in any order;
- a test with more than one verdict is FAILED and the run is inconsistent: go never reports a test
  twice, so one of them was printed by the code;
- a package whose own event is `fail` while none of its tests failed (the binary died, or exited,
  after printing passes: os.Exit in the code, a crash in init) has its passes not trusted: its
  tests become ERROR;
- the exit code of `go test` (cmd/go's, not the test binary's) must agree: 0 with no failure, 1 or
  2 with one.

What remains possible, and is a known limit (tests/test_hostile_polyglot.py): code that runs before
the tests (an `init` function of the package under test) can print a whole forged run and exit 0
before any test runs; nothing in go 1.19's output tells that apart from a real run.

This is one channel (the events; `go test -json` has no second report), checked against the exit
code. `-count=1` keeps go from replaying cached results of an earlier run. `-vet=off`: the command
mining writes grades tests, and a vet finding is not a test result. `go test` runs part of vet
(printf among it) before any test and, on a finding, builds no test binary: the package's tests are
absent, "[build failed]". Debian's spf13/pflag has such a line in a test file, and every Go of
bookworm and its backports (1.19, 1.21 to 1.23) refuses to run its tests; a patch's own vet finding
would read as every test of its package failing. Vet is an acceptance check instead (go-vet,
docs/acceptance.md), on the lines a patch changes.
"""

from __future__ import annotations

import json
import re
from typing import ClassVar

from .base import ERROR, FAILED, PASSED, SKIPPED, ParserBase, TestReport, shell_quote

TEST_PATHS = (
    "**/*_test.go",
    "**/testdata/**",  # fixtures the tests read; go never builds a package from a testdata folder
)
# go.mod and go.work decide which code a package import means (`replace` can point a dependency,
# an assertion library included, at the agent's own copy; the go directive turns vendoring on and
# off); vendor/ holds the dependencies' code itself. A fix that must change dependencies cannot be
# graded with these protected (and cannot be built offline anyway).
PROTECTED_PATHS = TEST_PATHS + (
    "**/go.mod",
    "**/go.sum",
    "**/go.work",
    "**/go.work.sum",
    "**/vendor/**",
)

_BUILD_FAILED = re.compile(r"^FAIL\s+(\S+)\s+\[(build|setup) failed\]\s*$")
_VERDICTS = {"pass": PASSED, "fail": FAILED, "skip": SKIPPED}
_MESSAGE_LINES = 6


def parse_go(output: str) -> TestReport:
    report = TestReport(
        missing_hint="no go test -json events in the output (is -json in the hidden test command?)",
        failed_exit_codes=(1, 2),
        strict_exit=True,
    )
    verdicts: dict[str, list[str]] = {}
    outputs: dict[str, list[str]] = {}
    package_verdict: dict[str, list[str]] = {}
    package_of: dict[str, str] = {}
    for raw in output.splitlines():
        line = raw.strip()
        if not line.startswith("{"):
            if match := _BUILD_FAILED.match(line):
                report.found_summary = True
                if match.group(1) not in report.collection_errors:
                    report.collection_errors.append(match.group(1))
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if (
            not isinstance(event, dict)
            or not isinstance(event.get("Action"), str)
            or not isinstance(event.get("Package"), str)
        ):
            continue
        action, package, test = event["Action"], event["Package"], event.get("Test")
        report.found_summary = True
        if not test:
            if action in ("pass", "fail"):
                package_verdict.setdefault(package, []).append(action)
            continue
        if not isinstance(test, str):
            continue
        test_id = f"{package}::{test}"
        package_of[test_id] = package
        if action in _VERDICTS:
            verdicts.setdefault(test_id, []).append(action)
        elif action == "output" and isinstance(event.get("Output"), str):
            outputs.setdefault(test_id, []).append(event["Output"])
    twice = []
    for test_id, seen in verdicts.items():
        if "fail" in seen:
            status = FAILED
        elif len(seen) > 1:
            status = FAILED
        else:
            status = _VERDICTS[seen[0]]
        if len(seen) > 1:
            twice.append(test_id)
        report.statuses[test_id] = status
        report.listed_passed += status == PASSED
        if status == FAILED and (message := _message(outputs.get(test_id, []))):
            report.messages[test_id] = message
    if twice:
        report.problems.append(
            f"go reported {len(twice)} test(s) more than once ({', '.join(sorted(twice)[:5])}): "
            "test2json read a verdict line the code under test printed"
        )
        for test_id in twice:
            report.messages.setdefault(test_id, "reported more than once (pass and fail lines printed by the code)")
    for package, seen in package_verdict.items():
        own = [t for t, p in package_of.items() if p == package and t in report.statuses]
        if "fail" in seen and not any(report.statuses[t] == FAILED for t in own):
            report.collection_errors.append(package)
            for test_id in own:
                if report.statuses[test_id] == PASSED:
                    report.statuses[test_id] = ERROR
                    report.listed_passed -= 1
                    report.messages[test_id] = (
                        f"package {package} failed with no failing test: its passes are not trusted"
                    )
    return report


def _message(lines: list[str]) -> str:
    """The first lines a failing test printed (its t.Error messages), without go's framing."""
    kept = [line.rstrip() for line in lines if line.strip() and not line.lstrip().startswith(("=== ", "--- "))]
    return "\n".join(kept[:_MESSAGE_LINES])[:1000]


class GoParser(ParserBase):
    """go test -json (go 1.19 and later)."""

    name: ClassVar[str] = "go"
    results_file: ClassVar[str | None] = None
    protected_paths: ClassVar[tuple[str, ...]] = PROTECTED_PATHS
    test_paths: ClassVar[tuple[str, ...]] = TEST_PATHS
    config_files: ClassVar[tuple[str, ...]] = ("go.mod", "go.sum", "go.work", "go.work.sum")
    no_report: ClassVar[str] = (
        "go test writes no report of its own: the -json events are the test binaries' output, "
        "the one channel, checked against the exit code"
    )

    def parse_output(self, output: str) -> TestReport:
        return parse_go(output)

    def is_test_module(self, path: str) -> bool:
        return path.endswith("_test.go")

    def test_command(self, files: list[str] | None) -> str:
        """The packages (folders) of the given test files; all of them (./...) for None."""
        folders = sorted(
            {"./" + f.rsplit("/", 1)[0] if "/" in f else "." for f in files or () if f.endswith("_test.go")}
        )
        return f"go test -json -count=1 -vet=off {shell_quote(folders) if folders else './...'}"
