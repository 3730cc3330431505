"""Per-test results from JUnit XML, the report Maven Surefire, Gradle and many other tools write;
ids `<classname>::<name>` of each `<testcase>`.

The hidden command writes (or gathers) the XML into the results file, outside the repository.
Tools that write one file per test class concatenate them, which this parser reads (several XML
documents in one file, as libtest's `--format junit` prints them too), e.g.:

    mvn -q test; s=$?; cat target/surefire-reports/TEST-*.xml > /tmp/wholeloop-grade/reports/junit.xml; exit $s
    gradle test; s=$?; cat build/test-results/test/*.xml > /tmp/wholeloop-grade/reports/junit.xml; exit $s

A `<testcase>` with a `<failure>` is FAILED, with an `<error>` ERROR, with `<skipped>` SKIPPED,
otherwise PASSED (Surefire's `<flakyFailure>`: failed, then passed on a re-run, is PASSED). A
test case listed twice keeps a failure over a pass.

One channel: the report, checked against its own `tests`/`failures`/`errors`/`skipped` totals
and against the exit code (any non-zero code means "something failed" for these tools, so it
must come with a failure in the report, and 0 without one). A report with a DOCTYPE or entity
declarations is refused (JUnit never needs one; it is how XML parsers are attacked).

The protected paths are those of the JVM builds that write JUnit (Maven's and Gradle's test
sources, build files, wrappers and build logic). A task that reads JUnit written by another
framework lists that framework's parser as well (`parser: [junit, vitest]`) or its own
protected_paths.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import ClassVar

from .base import ERROR, FAILED, PASSED, REPORTS_DIR, SKIPPED, ParserBase, TestReport

RESULTS_FILE = f"{REPORTS_DIR}/junit.xml"
TEST_PATHS = (
    "**/src/test/**",
    "**/src/testFixtures/**",
    "**/src/integrationTest/**",
    "**/src/it/**",
)
# Build files decide which tests run and with what (surefire includes/excludes, testFailureIgnore,
# argLine -javaagent, Gradle's test { } block, buildSrc and init scripts are code that runs first),
# and the wrappers decide which Maven or Gradle runs.
CONFIG_PATHS = (
    "**/pom.xml",
    "**/.mvn/**",
    "**/mvnw",
    "**/mvnw.cmd",
    "**/build.gradle",
    "**/build.gradle.kts",
    "**/settings.gradle",
    "**/settings.gradle.kts",
    "**/gradle.properties",
    "**/gradle/**",
    "**/gradlew",
    "**/gradlew.bat",
    "**/buildSrc/**",
    "**/*.init.gradle",
    "**/*.init.gradle.kts",
)

_DECLARATION = re.compile(rb"<\?xml[^>]*\?>")
_FORBIDDEN = re.compile(rb"<!DOCTYPE|<!ENTITY", re.IGNORECASE)
MESSAGE_CHARS = 300


def _int(element: ET.Element, name: str) -> int | None:
    try:
        return int(element.get(name, ""))
    except ValueError:
        return None


def parse_junit(results: bytes | None) -> TestReport:
    report = TestReport(
        failed_exit_codes=None,
        channels={
            "structured": "missing" if results is None else "found",
            "summary": "unavailable: the runners that write JUnit (Maven, Gradle, ...) print no one text format; the JUnit "
            "report is the one channel, checked against the exit code",
        },
    )
    if results is None:
        report.missing_hint = f"no JUnit XML report was written (the hidden command must write it to {RESULTS_FILE})"
        return report
    if _FORBIDDEN.search(results):
        report.missing_hint = "the JUnit report declares a DOCTYPE or entities: refused"
        report.problems.append("the JUnit report declares a DOCTYPE or entities")
        return report
    body = _DECLARATION.sub(b"", results)
    try:
        root = ET.fromstring(b"<wholeloop-reports>" + body + b"</wholeloop-reports>")
    except ET.ParseError as exc:
        report.missing_hint = f"the JUnit report is not XML ({exc})"
        report.problems.append(f"the JUnit report is not XML ({exc})")
        return report
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    counted = True
    for suite in root.iter("testsuite"):
        if suite.find("testcase") is None:
            continue  # a suite of suites: its leaves are counted
        for key in totals:
            value = _int(suite, key)
            if value is None and key in ("tests", "failures"):
                counted = False
            totals[key] += value or 0
    for suite in root.iter("testsuite"):
        for case in suite.findall("testcase"):
            report.found_summary = True
            name = case.get("name", "")
            owner = case.get("classname") or suite.get("name") or ""
            test_id = f"{owner}::{name}" if owner else name
            status, message = PASSED, ""
            for child, child_status in (("failure", FAILED), ("error", ERROR), ("skipped", SKIPPED)):
                found = case.find(child)
                if found is not None:
                    status = child_status
                    message = found.get("message") or (found.text or "")
                    break
            report.listed_passed += status == PASSED
            if report.statuses.get(test_id) in (FAILED, ERROR):
                continue
            report.statuses[test_id] = status
            if status in (FAILED, ERROR) and (
                line := next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
            ):
                report.messages[test_id] = line[:MESSAGE_CHARS]
    if not report.found_summary and root.find(".//testsuite") is not None:
        report.found_summary = True  # suites with no test cases: a run of nothing
    if counted and report.found_summary:
        report.counts = {
            "passed": totals["tests"] - totals["failures"] - totals["errors"] - totals["skipped"],
            "failed": totals["failures"],
            "errors": totals["errors"],
            "skipped": totals["skipped"],
        }
    return report


class JUnitParser(ParserBase):
    """JUnit XML written to RESULTS_FILE (Maven, Gradle and any tool that writes the format)."""

    name: ClassVar[str] = "junit"
    results_file: ClassVar[str | None] = RESULTS_FILE
    protected_paths: ClassVar[tuple[str, ...]] = TEST_PATHS + CONFIG_PATHS
    test_paths: ClassVar[tuple[str, ...]] = TEST_PATHS
    config_files: ClassVar[tuple[str, ...]] = (
        "pom.xml",
        "mvnw",
        "mvnw.cmd",
        "build.gradle",
        "build.gradle.kts",
        "settings.gradle",
        "settings.gradle.kts",
        "gradle.properties",
        "gradlew",
        "gradlew.bat",
    )

    def read(self, output: str, results: bytes | None) -> TestReport:
        return parse_junit(results)

    def is_test_module(self, path: str) -> bool:
        """A test class Surefire runs by default (**/Test*.java, **/*Test.java, *Tests, *TestCase; .kt too)."""
        name = path.rsplit("/", 1)[-1]
        stem, _, ext = name.rpartition(".")
        return (
            self.is_test_path(path)
            and ext in ("java", "kt", "groovy", "scala")
            and (stem.startswith("Test") or stem.endswith(("Test", "Tests", "TestCase")))
        )

    def test_command(self, files: list[str] | None) -> str:
        """Maven's (the most common writer of JUnit): Surefire's reports gathered into the results file.
        A Gradle project names its own command in the task (or in mining, with --test-command)."""
        classes = sorted({f.rsplit("/", 1)[-1].rsplit(".", 1)[0] for f in files or () if self.is_test_module(f)})
        only = f" -Dtest={','.join(classes)} -Dsurefire.failIfNoSpecifiedTests=false" if classes else ""
        return (
            f"mvn -q -o test{only}; s=$?; cat target/surefire-reports/TEST-*.xml > {RESULTS_FILE} 2>/dev/null; exit $s"
        )
