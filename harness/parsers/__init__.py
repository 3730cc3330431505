"""Test-result parsers: one `TestReport` for every framework, and the registry of parsers.

Adding a framework is one module beside `pytest.py` (copy it) and one line in `PARSERS`; a team's
own package can add one through the "wholeloop.parsers" entry-point group instead.

A task names one parser (`hidden_tests.parser: go`) or several, when its hidden command runs more
than one framework (`parser: [go, vitest]`): then each reads the output (and its own results
file), the report is their union (`parse_run`), and grading protects the union of their paths.
Each parser's channels are then cross-checked among themselves (their `problems`), and the exit
code, being the chain's, against the union; pytest's structured report, which it checks against
its own exit status, is not read in such a task (its text channel is).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..registry import Registry
from .base import (
    ERROR,
    FAILED,
    MISSING,
    NOT_RUN,
    PASSED,
    REPO_ROOT,
    REPORTS_DIR,
    SKIPPED,
    STATUSES,
    TEST_LIMIT_VAR,
    XFAIL,
    XPASS,
    Parser,
    ParserBase,
    RunSetup,
    TestReport,
    finish,
    glob_match,
    is_protected_path,
    killed_by,
    matches_any,
)

PARSERS = Registry(
    "wholeloop.parsers",
    "test parser",
    {
        "cargo": "harness.parsers.cargo:CargoParser",
        "go": "harness.parsers.go:GoParser",
        "jest": "harness.parsers.jest:JestParser",
        "junit": "harness.parsers.junit:JUnitParser",
        "pytest": "harness.parsers.pytest:PytestParser",
        "vitest": "harness.parsers.vitest:VitestParser",
    },
)


def get_parser(name: str) -> Parser:
    """An instance of the parser registered as `name`; raises registry.UnknownName."""
    return PARSERS.get(name)()


def get_parsers(names: str | Sequence[str]) -> list[Parser]:
    """The parsers a task names (one name or a list), in its order."""
    return [get_parser(n) for n in ([names] if isinstance(names, str) else names)]


def protected_union(parsers: Sequence[Parser]) -> list[str]:
    """Every parser's protected paths, in order, each once."""
    return list(dict.fromkeys(p for parser in parsers for p in parser.protected_paths))


def parse_run(
    parsers: Sequence[Parser],
    output: str,
    read: Callable[[str], bytes | None],
    *,
    setups: Sequence[RunSetup] | None = None,
    exit_code: int | None = None,
) -> TestReport:
    """One report of one run of a hidden (or visible) test command: each parser reads the output
    and its structured report (`read(path)`, None when the command wrote none) at the path its
    setup named (grading) or at its results_file (the run_tests tool); with `exit_code`, the
    channels are cross-checked (`consistent`, `why`, `disagreement`, `channels`)."""
    each: list[RunSetup | None] = list(setups) if setups is not None else [None] * len(parsers)

    def report_of(parser: Parser, setup: RunSetup | None) -> bytes | None:
        path = setup.report_path if setup is not None else parser.results_file
        return read(path) if path else None

    if len(parsers) == 1:
        return parsers[0].parse(output, report_of(parsers[0], each[0]), setup=each[0], exit_code=exit_code)
    reports = [p.parse(output, report_of(p, s), setup=s) for p, s in zip(parsers, each)]
    merged = merge(reports, [p.name for p in parsers])
    return merged if exit_code is None else finish(merged, exit_code)


def merge(reports: Sequence[TestReport], names: Sequence[str]) -> TestReport:
    """The union of several frameworks' reports of one run. Each one's own cross-checks (totals,
    channels) become problems of the whole; the exit code is then only known to be the chain's, so
    any non-zero code must come with a failure somewhere, and 0 with none."""
    merged = TestReport(failed_exit_codes=None, found_summary=any(r.found_summary for r in reports))
    for report, name in zip(reports, names):
        for test_id, status in report.statuses.items():
            if merged.statuses.get(test_id) not in (FAILED, ERROR):
                merged.statuses[test_id] = status
        merged.messages.update({k: v for k, v in report.messages.items() if k not in merged.messages})
        merged.collection_errors += report.collection_errors
        merged.skip_reasons.update(report.skip_reasons)
        merged.collection_messages.update(report.collection_messages)
        merged.problems += [f"{name}: {p}" for p in report.problems]
        merged.channels.update({f"{name}: {k}": v for k, v in report.channels.items()})
        merged.listed.update({k: v for k, v in report.listed.items() if k not in merged.listed})
        merged.exception_types.update(
            {k: v for k, v in report.exception_types.items() if k not in merged.exception_types}
        )
        ok, why = TestReport(counts=report.counts, listed_passed=report.listed_passed).consistent_with(None)
        if not ok:
            merged.problems.append(f"{name}: {why}")
        if not report.found_summary:
            merged.missing_hint = "; ".join(h for h in (merged.missing_hint, f"{name}: {report.missing_hint}") if h)
    if all(r.counts for r in reports):  # totals of the whole, for the run_tests summary (checked per framework above)
        for report in reports:
            for key, value in report.counts.items():
                merged.counts[key] = merged.counts.get(key, 0) + value
    merged.listed_passed = merged.counts.get("passed", 0)
    return merged


__all__ = [
    "ERROR",
    "FAILED",
    "MISSING",
    "NOT_RUN",
    "PARSERS",
    "PASSED",
    "Parser",
    "ParserBase",
    "REPORTS_DIR",
    "REPO_ROOT",
    "RunSetup",
    "SKIPPED",
    "STATUSES",
    "TEST_LIMIT_VAR",
    "TestReport",
    "XFAIL",
    "XPASS",
    "finish",
    "get_parser",
    "get_parsers",
    "glob_match",
    "is_protected_path",
    "killed_by",
    "matches_any",
    "merge",
    "parse_run",
    "protected_union",
]
