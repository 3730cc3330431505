"""Per-test results from pytest's output, with node ids as SWE-bench writes them.

We read the `-rA` "short test summary info" block (`PASSED tests/test_x.py::test_a`), and only the
*last* such block: code under test can print lines that look like results, but they appear in
captured-output sections before the real summary. The closing line (`3 failed, 10 passed in
0.5s`) gives counts to cross-check against the lines we parsed.
"""

from __future__ import annotations

import re
import shlex
from fnmatch import fnmatchcase
from pathlib import PurePosixPath
from typing import ClassVar

from .base import ERROR, FAILED, PASSED, SKIPPED, STATUSES, TestReport

# Files pytest reads that an agent must not be able to plant or change to pass the grade: the
# tests, pytest's configuration in every file and folder pytest looks for it (a planted
# `addopts = -p plugin` runs the agent's code inside the test process), and the modules Python
# runs at start-up. Top-level modules that shadow the test runner or the standard library are
# handled by grading (see `harness.grading.patching.remove_shadowing`).
PROTECTED_PATHS = (
    "**/conftest.py",
    "**/test_*.py",
    "**/*_test.py",
    "**/tests/**",
    "**/testing/**",
    "**/pytest.ini",
    "**/.pytest.ini",
    "**/tox.ini",
    "**/setup.cfg",
    "**/pyproject.toml",
    "**/sitecustomize.py",
    "**/usercustomize.py",
    "**/__snapshots__/**",
)
# Test-runner and packaging configuration: a fix that needs one changed is not mined by default.
CONFIG_FILES = ("pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "setup.py", "noxfile.py",
                "MANIFEST.in")
TEST_DIRS = ("tests", "test", "testing")
TEST_MODULES = ("test_*.py", "*_test.py")
COMMAND = "python -m pytest -rA -p no:cacheprovider"
_HEADER = re.compile(r"^=+ short test summary info =+$")
# "==== 1 failed, 2 passed in 0.1s ====", or without the rules under -q
_CLOSING = re.compile(
    r"^(=+ )?(?P<body>(\d+ (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)(, )?)+ in [\d.]+s\b.*?)( =+)?$"
)
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


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


def _message(rest: str, node: str) -> str:
    """The ' - message' after a node id in a summary line, if any."""
    tail = rest[len(node):].strip()
    return tail[2:].strip() if tail.startswith("- ") else ""


def parse_pytest(output: str) -> TestReport:
    """Statuses from the last -rA summary block, counts from the closing line."""
    lines = [_ANSI.sub("", line.rstrip("\r")) for line in output.splitlines()]
    report = TestReport(missing_hint="no pytest summary in the output (is -rA in the hidden test command?)")
    starts = [i for i, line in enumerate(lines) if _HEADER.match(line.strip())]
    if starts:
        report.found_summary = True
        for line in lines[starts[-1] + 1 :]:
            status, _, rest = line.partition(" ")
            if status.startswith("SUBFAILED"):  # pytest 9: a failed unittest subTest of a PASSED test
                status = FAILED
            if status not in STATUSES or not rest:
                if _CLOSING.match(line.strip()):
                    break
                continue
            if status == SKIPPED:
                continue  # "SKIPPED [1] file.py:12: reason" carries no node id
            node = _node_id(rest)
            report.listed_passed += status == PASSED
            if status == ERROR and "::" not in node:
                report.collection_errors.append(node)
                continue
            # a test reported twice (error in teardown, failed subtest): the failure wins
            if report.statuses.get(node) in (FAILED, ERROR):
                continue
            report.statuses[node] = status
            if status in (FAILED, ERROR) and (message := _message(rest, node)):
                report.messages[node] = message
    for line in reversed(lines):
        match = _CLOSING.match(line.strip())
        if match:
            for num, word in _COUNT.findall(match.group("body")):
                key = "errors" if word.startswith("error") else word
                report.counts[key] = int(num)
            break
    return report


class PytestParser:
    """pytest with `-rA`: node ids as SWE-bench writes them."""

    name: ClassVar[str] = "pytest"
    results_file: ClassVar[str | None] = None
    protected_paths: ClassVar[tuple[str, ...]] = PROTECTED_PATHS
    config_files: ClassVar[tuple[str, ...]] = CONFIG_FILES

    def parse(self, output: str, results: bytes | None = None) -> TestReport:
        return parse_pytest(output)

    def is_test_path(self, path: str) -> bool:
        """test_*.py, *_test.py, conftest.py, or anything under a folder named tests/test/testing."""
        parts = PurePosixPath(path).parts
        return self.is_test_module(path) or parts[-1] == "conftest.py" or any(d in TEST_DIRS for d in parts[:-1])

    def is_test_module(self, path: str) -> bool:
        name = PurePosixPath(path).name
        return any(fnmatchcase(name, pattern) for pattern in TEST_MODULES)

    def test_command(self, files: list[str] | None) -> str:
        return COMMAND + "".join(" " + shlex.quote(f) for f in files or ())

    def test_file(self, test_id: str) -> str | None:
        """`tests/test_x.py::TestA::test_b[p]` -> `tests/test_x.py`."""
        path = test_id.split("::", 1)[0]
        return path if "::" in test_id and path.endswith(".py") else None
