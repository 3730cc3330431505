"""Per-test results from pytest's output, with node ids as SWE-bench writes them.

We read the `-rA` "short test summary info" block (`PASSED tests/test_x.py::test_a`), and only the
*last* such block: code under test can print lines that look like results, but they appear in
captured-output sections before the real summary. The closing line (`3 failed, 10 passed in
0.5s`) gives counts to cross-check against the lines we parsed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PASSED, FAILED, ERROR, SKIPPED, XFAIL, XPASS = "PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS"
_STATUSES = (PASSED, FAILED, ERROR, SKIPPED, XFAIL, XPASS)
_HEADER = re.compile(r"^=+ short test summary info =+$")
# "==== 1 failed, 2 passed in 0.1s ====", or without the rules under -q
_CLOSING = re.compile(
    r"^(=+ )?(?P<body>(\d+ (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)(, )?)+ in [\d.]+s\b.*?)( =+)?$"
)
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class PytestReport:
    statuses: dict[str, str] = field(default_factory=dict)  # node id -> status
    counts: dict[str, int] = field(default_factory=dict)  # from the closing line
    collection_errors: list[str] = field(default_factory=list)  # files that failed to import
    found_summary: bool = False
    passed_lines: int = 0  # PASSED lines in the summary block, before de-duplication

    def failing(self) -> list[str]:
        return [t for t, s in self.statuses.items() if s in (FAILED, ERROR)]

    def consistent_with(self, exit_code: int | None) -> tuple[bool, str]:
        """Does what we parsed agree with pytest's exit code and its closing counts?"""
        bad = bool(self.failing() or self.collection_errors)
        if exit_code == 0 and bad:
            return False, "exit code 0 but failures were reported"
        if exit_code == 1 and not bad:
            return False, "exit code 1 (tests failed) but no failure was reported"
        if self.counts:
            if self.counts.get("passed", 0) != self.passed_lines:
                return False, (
                    f"the closing line says {self.counts.get('passed', 0)} passed "
                    f"but {self.passed_lines} PASSED lines were found"
                )
        return True, ""


def _node_id(rest: str) -> str:
    """The node id at the start of `rest`, which may be followed by ' - message'."""
    depth, i = 0, 0
    while i < len(rest):
        ch = rest[i]
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(depth - 1, 0)
        elif depth == 0 and rest.startswith(" - ", i):
            break
        i += 1
    return rest[:i].strip()


def parse_pytest(output: str) -> PytestReport:
    lines = [_ANSI.sub("", line.rstrip("\r")) for line in output.splitlines()]
    report = PytestReport()
    starts = [i for i, line in enumerate(lines) if _HEADER.match(line.strip())]
    if starts:
        report.found_summary = True
        for line in lines[starts[-1] + 1 :]:
            status, _, rest = line.partition(" ")
            if status.startswith("SUBFAILED"):  # pytest 9: a failed unittest subTest of a PASSED test
                status = FAILED
            if status not in _STATUSES or not rest:
                if _CLOSING.match(line.strip()):
                    break
                continue
            if status == SKIPPED:
                continue  # "SKIPPED [1] file.py:12: reason" carries no node id
            node = _node_id(rest)
            report.passed_lines += status == PASSED
            if status == ERROR and "::" not in node:
                report.collection_errors.append(node)
                continue
            # a test reported twice (error in teardown, failed subtest): the failure wins
            if report.statuses.get(node) in (FAILED, ERROR):
                continue
            report.statuses[node] = status
    for line in reversed(lines):
        match = _CLOSING.match(line.strip())
        if match:
            for num, word in _COUNT.findall(match.group("body")):
                key = "errors" if word.startswith("error") else word
                report.counts[key] = int(num)
            break
    return report


PARSERS = {"pytest": parse_pytest}
