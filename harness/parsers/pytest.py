"""pytest: per-test results through two channels that must agree, with node ids as SWE-bench writes them.

Channel 1, the text: the `-rA` "short test summary info" block (`PASSED tests/test_x.py::test_a`),
its closing line (`3 failed, 10 passed in 0.5s`) and the exit code. Code under test can print lines
that look like results, so we read the block pytest itself printed: the one right after the line
the report-log plugin prints (holding a path with a secret of this grading), up to the first
closing line after it; output after pytest's closing line (a forked writer's) is ignored. Without
that line: the last block.

Channel 2, the structured report grading asks for itself: pytest-reportlog (from PyPI, a
dependency of wholeloop) writes one JSON line per test phase, node ids kept, outside the
repository. Its files are placed in the grading container under TOOLS_DIR, which the task image's
Python has on its path (a .pth file written at image build). Plugins never load from entry points
found at test time (`PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`): only those the environment had when its
image was built (recorded then, outside the repository), named with `-p`, plus those the task
names; test-order randomisers among them are seeded (`RANDOMISERS`). The test run writes no bytecode.

Both channels, and the exit code, must say the same; when they do not, the results are not
trusted and the disagreement is reported (suspected tampering). An environment whose pytest cannot
load the report-log plugin (pytest < 6) is graded on the text channel alone, and the grade says so.
"""

from __future__ import annotations

import json
import re
import shlex
from fnmatch import fnmatchcase
from importlib import resources
from pathlib import PurePosixPath
from typing import ClassVar

from .base import (
    ERROR,
    FAILED,
    PASSED,
    SKIPPED,
    STATUSES,
    XFAIL,
    XPASS,
    ParserBase,
    RunSetup,
    TestReport,
    killed_by,
)

# Files pytest reads that an agent must not be able to plant or change to pass the grade: the
# tests, pytest's configuration in every file and folder pytest looks for it (a planted
# `addopts = -p plugin` runs the agent's code inside the test process), and the modules Python
# runs at start-up. Top-level modules that shadow the test runner or the standard library are
# handled by grading (see `harness.grading.patching`).
PROTECTED_PATHS = (
    "**/conftest.py",
    "**/test_*.py",
    "**/*_test.py",
    "**/tests/**",
    # a `test/` or `testing/` folder is protected where it holds the hidden tests (grading adds it:
    # pytest's own repository keeps its tests in testing/), not wherever a library names a helper
    # package so (numpy.testing, a testing/ of fixtures for users)
    "**/pytest.ini",
    "**/.pytest.ini",
    "**/pytest.toml",  # pytest 9
    "**/.pytest.toml",
    "**/tox.ini",
    "**/setup.cfg",
    "**/pyproject.toml",
    "**/sitecustomize.py",
    "**/usercustomize.py",
    "**/__snapshots__/**",
)
# Test-runner and packaging configuration: a fix that needs one changed is not mined by default.
CONFIG_FILES = (
    "pytest.ini",
    ".pytest.ini",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "setup.py",
    "noxfile.py",
    "MANIFEST.in",
)
# Test-order randomisers, by the name of their pytest11 entry point, and the options that seed them
# ("{seed}": grading's, or a check run's; see harness.grading.determinism). Seeded rather than
# disabled, so a repository's own options for them stay valid. pytest-rng needs nothing: its seeds
# come from each test's node id. pytest-random-order's seed option also turns its shuffling on.
RANDOMISERS = {
    "randomly": ("--randomly-seed={seed}",),  # pytest-randomly: the order, and random/numpy/faker reseeded per test
    "random_order": ("--random-order-seed={seed}",),  # pytest-random-order
}
# Plugins that replace pytest's -rA summary block and closing line with their own (pytest-pretty: a
# "Results (0.5s): 3 passed" table), by their module: never loaded in a graded run, whose results are
# read from that block. Cosmetic: no test depends on them.
SUMMARY_REPLACERS = frozenset({"pytest_pretty"})
TEST_DIRS = ("tests", "test", "testing")
TEST_MODULES = ("test_*.py", "*_test.py")
COMMAND = "python -m pytest -rA -p no:cacheprovider"
TOOLS_DIR = "/opt/wholeloop/python"  # grading's own Python packages (never in the agent's container)
# wholeloop's own plugin: fails a test phase that outlasts the task's per-test limit (TEST_LIMIT_VAR)
TEST_LIMIT_PLUGIN = "wholeloop_test_limit"
REPORTLOG_MIN_PYTEST = (6, 0)  # pytest-reportlog's hooks (pytest_warning_recorded) need pytest 6
# Run at the end of a task image build, with the environment's `python`: records the pytest11 entry
# points the environment has (the plugins grading may load), pytest's version and the image's own
# PYTEST_ADDOPTS, and puts TOOLS_DIR on that Python's path (a directory only grading fills).
IMAGE_SETUP = r"""
py=$(command -v python || command -v python3 || true)
if [ -z "$py" ]; then echo '{}'; exit 0; fi
cd / && "$py" - <<'WHOLELOOP_PY'
import json, os, sys
out = {"python": sys.executable, "python_version": list(sys.version_info[:3]),
       "env_addopts": os.environ.get("PYTEST_ADDOPTS", "")}
try:
    import pytest
    out["pytest"] = pytest.__version__
except Exception:
    out["pytest"] = None
plugins = {}
try:
    try:
        from importlib.metadata import distributions
        found = [(ep.name, ep.value) for d in distributions() for ep in d.entry_points if ep.group == "pytest11"]
    except ImportError:
        import pkg_resources
        found = [(ep.name, str(ep).split("=", 1)[1].strip()) for ep in pkg_resources.iter_entry_points("pytest11")]
    for name, value in found:
        plugins.setdefault(name, {"name": name, "value": value})
except Exception as exc:
    out["plugins_error"] = repr(exc)
out["pytest11"] = sorted(plugins.values(), key=lambda p: p["name"])
try:
    import sysconfig
    purelib = sysconfig.get_paths()["purelib"]
    if not os.path.isdir(purelib):
        os.makedirs(purelib)
    with open(os.path.join(purelib, "zz_wholeloop_grading.pth"), "w") as fh:
        fh.write(TOOLS + "\n")
    out["tools_path"] = True
except Exception:
    out["tools_path"] = False
print(json.dumps(out))
WHOLELOOP_PY
""".replace("TOOLS", repr(TOOLS_DIR))

# An object's default repr in a parametrized id (`<pkg.Thing object at 0x7f84332ee990>`): its address
# differs in every run, so no list could name the test. It is read as one token, `0xADDRESS`, in both
# channels; tests whose ids then coincide are named in `merged_ids` (the check refuses such a task)
# and their status is the worst of theirs (a failure wins), so none can hide a failure (docs/grading.md).
_ADDRESS = re.compile(r"(?<=\bat 0x)[0-9a-fA-F]{6,}(?=>)")
ADDRESS_TOKEN = "ADDRESS"


def stable_id(node: str) -> str:
    """A node id with every object address in it read as one token."""
    return _ADDRESS.sub(ADDRESS_TOKEN, node) if "0x" in node else node


def _merged(raw: dict[str, set[str]]) -> dict[str, int]:
    return {node: len(ids) for node, ids in sorted(raw.items()) if len(ids) > 1}


# How far from a pass each status is: where several tests share one id once their addresses are read
# as one token, the id keeps the furthest of theirs. A skipped or xfailed twin is no more a pass than
# a failing one (red team 7: a case the code under test skips, merged with a passing twin it shaped).
_DISTANCE = {PASSED: 0, XPASS: 1, SKIPPED: 2, XFAIL: 2, FAILED: 3, ERROR: 3}


def _merge_status(raw_ids: dict[str, set[str]], node: str, raw_node: str, old: str | None, new: str) -> str:
    """The status `node` keeps when a report of `raw_node` says `new`: once another test shares the
    id (a merge), no report moves it closer to a pass; a lone test's phases are the caller's."""
    seen = raw_ids.setdefault(node, set())
    seen.add(raw_node)
    merge = old is not None and len(seen) > 1
    if merge and old is not None and _DISTANCE.get(old, 3) > _DISTANCE.get(new, 3):
        return old
    return new


_HEADER = re.compile(r"^=+ short test summary info =+$")
# "==== 1 failed, 2 passed in 0.1s ====", "=== no tests ran in 0.01s ===", or without the rules under -q
_CLOSING = re.compile(
    r"^(=+ )?(?P<body>(no tests ran|(\d+ (subtests (passed|failed|skipped|xfailed|xpassed)|passed|failed|errors?|"
    r"skipped|xfailed|xpassed|deselected|warnings?|rerun)(, )?)+) in [\d.]+s\b.*?)( =+)?$"
)
_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
COUNTED = ("passed", "failed", "errors", "skipped", "xfailed", "xpassed")


def _node_id(rest: str) -> str:
    """The node id at the start of `rest`, which may be followed by ' - message'. A parametrized id
    may hold " - " in its brackets (`test_x[a - b]`) and brackets that never close (an escaped ANSI
    sequence: `test_x[\\x1b[31mHi-0]`): the id ends at the first " - " where its last part is
    whole (no `[`, or ending in `]`); without one, `rest` is the id."""
    at = rest.find(" - ")
    while at != -1:
        last = rest[:at].rsplit("::", 1)[-1]
        if "[" not in last or last.endswith("]"):
            return rest[:at].strip()
        at = rest.find(" - ", at + 1)
    return rest.strip()


def _after_parameters(text: str) -> str:
    """What follows a leading "(...)" (brackets and quotes inside it balanced), stripped."""
    if not text.startswith("("):
        return text.strip()
    depth, quote = 0, ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return text[i + 1 :].strip()
    return ""


def _message(rest: str, node: str) -> str:
    """The ' - message' after a node id in a summary line, if any."""
    tail = rest[len(node) :].strip()
    return tail[2:].strip() if tail.startswith("- ") else ""


def parse_pytest(output: str, anchor: str = "") -> TestReport:
    """Statuses from pytest's own -rA summary block, counts from its closing line.

    With `anchor` (a line only pytest prints, just before its summary) found: the first block after
    it, up to the first closing line; everything after that line is ignored. Otherwise the last
    block and the last closing line."""
    lines = [_ANSI.sub("", line.rstrip("\r")) for line in output.splitlines()]
    report = TestReport(missing_hint="no pytest summary in the output (is -rA in the hidden test command?)")
    start_at = next((i for i, line in enumerate(lines) if anchor and anchor in line), None)
    if start_at is not None:
        starts = [i for i, line in enumerate(lines) if i > start_at and _HEADER.match(line.strip())][:1]
        closing = next((i for i, line in enumerate(lines) if i > start_at and _CLOSING.match(line.strip())), None)
        if starts and closing is not None and closing < starts[0]:
            starts = []
    else:
        starts = [i for i, line in enumerate(lines) if _HEADER.match(line.strip())][-1:]
        closing = next((i for i in range(len(lines) - 1, -1, -1) if _CLOSING.match(lines[i].strip())), None)
    listed = report.listed
    raw_ids: dict[str, set[str]] = {}
    if starts:
        report.found_summary = True
        for line in lines[starts[0] + 1 :]:
            status, _, rest = line.partition(" ")
            if status.startswith("SUBFAILED"):  # pytest 9: a failed unittest subTest of a PASSED test
                # its parameters may hold spaces: "SUBFAILED(sep='a b', limit=13) t.py::T::test_a"
                status, rest = FAILED, _after_parameters(line.removeprefix("SUBFAILED"))
            if status not in STATUSES or not rest:
                if _CLOSING.match(line.strip()):
                    break
                continue
            if status == SKIPPED:
                continue  # "SKIPPED [1] file.py:12: reason" carries no node id
            raw_node = _node_id(rest)
            node = stable_id(raw_node)
            report.listed_passed += status == PASSED
            if status == ERROR and "::" not in node:
                raw_ids.setdefault(node, set()).add(raw_node)
                report.collection_errors.append(node)
                continue
            listed.setdefault(node, set()).add(status)
            status = _merge_status(raw_ids, node, raw_node, report.statuses.get(node), status)
            # a test reported twice (error in teardown, failed subtest): the failure wins
            if report.statuses.get(node) in (FAILED, ERROR):
                continue
            report.statuses[node] = status
            if status in (FAILED, ERROR) and (message := _message(rest, node)):
                report.messages[node] = message
    report.merged_ids = _merged(raw_ids)
    _messages_from_sections(lines, report)
    if closing is not None and (match := _CLOSING.match(lines[closing].strip())):  # (it matched: found so)
        for num, word in _COUNT.findall(match.group("body")):
            key = "errors" if word.startswith("error") else word
            report.counts[key] = int(num)
    return report


_SECTION = re.compile(r"^=+ (FAILURES|ERRORS) =+$")
# A block's header: its test's name between runs of underscores, down to one each side when the name
# is too long for the terminal's width (`_ test_x[a long id] _`); not pytest's `_ _ _ _` line
# between a traceback's entries, whose "name" is underscores and spaces.
_BLOCK = re.compile(r"^_+ (?P<name>.*[^_ ].*?) _+$")
_RULE = re.compile(r"^=+ (?P<title>.*) =+$")
_LOCATION = re.compile(r"^\S+:\d+: \w+")
# The start of what a test printed (pytest's captured output), and of a whole pytest run inside it.
_CAPTURED = re.compile(r"^-+ Captured (stdout|stderr|log) (setup|call|teardown) -+$")
_SESSION = re.compile(r"^=+ test session starts =+$")
# The sections pytest prints after ERRORS and FAILURES, by title: inside a test's printed output
# only these (and, for ERRORS, FAILURES) end the section, not a rule the test printed.
_LATER = ("warnings summary", "PASSES", "XFAILURES", "XPASSES", "rerun test summary info")
MESSAGE_LINES = 40
MESSAGE_CHARS = 4000


def _padded(text: str, width: int) -> bool:
    """`text` is a header line as pytest pads one to the terminal's `width`: the same run of
    underscores each side (one more on the right when the width is odd), or one each side when
    the name is too long."""
    left, right = len(text) - len(text.lstrip("_")), len(text) - len(text.rstrip("_"))
    return right - left in (0, 1) and (abs(len(text) - width) <= 1 or (left == 1 and len(text) > width))


def _messages_from_sections(lines: list[str], report: TestReport) -> None:
    """Failure messages from the FAILURES / ERRORS sections (the `>` line, the `E` lines and the
    `file:line: Error` line of each block), which say far more than the summary line's cut message.
    A block is matched to a failing node id by its name (`test_x[p]`, `TestC.test_x`); a name two
    failing nodes share keeps the summary message.

    What a test printed (after pytest's `--- Captured stdout call ---`) is the test's: a line in it
    shaped like a header or a rule is pytest's only when it can be. A header is when it names a
    failing test whose block has not come yet, or no failing test and is padded as pytest pads the
    section's headers (a subtest's block); a header of a test already shown is text, however padded.
    A rule is when it is a section pytest prints later; a whole pytest run in it (a plugin's tests,
    pytester) is text up to that run's closing line."""
    failing = [n for n, s in report.statuses.items() if s in (FAILED, ERROR)]
    by_name: dict[str, list[str]] = {}
    for node in failing:
        by_name.setdefault(".".join(node.split("::")[1:]), []).append(node)
    section, name = "", None
    block: list[str] = []
    captured = nested = False  # in what a test printed; in a pytest run it printed
    seen: set[str] = set()  # the tests whose block this section has had (their header was pytest's)
    width = 0  # the length of the section's first header (pytest pads every header to the terminal's width)

    def key_of(title: str) -> str:  # a header's title as the failing node ids are keyed (addresses read as one token)
        return stable_id(title.removeprefix("ERROR at setup of ").removeprefix("ERROR at teardown of "))

    def close() -> None:
        if name is None:
            return
        nodes = by_name.get(key_of(name), [])
        if len(nodes) != 1:
            return
        # the traceback: what follows pytest's `--- Captured ... ---` lines is what the test printed
        trace = next((block[:i] for i, line in enumerate(block) if _CAPTURED.match(line.strip())), block)
        kept = [line for line in trace if line.startswith(("E ", ">")) or _LOCATION.match(line)]
        kept = kept or trace[-15:] or block[-15:]
        text = "\n".join(line.rstrip() for line in kept[-MESSAGE_LINES:]).strip()
        if text:
            report.messages[nodes[0]] = text[-MESSAGE_CHARS:]

    for line in lines:
        text = line.strip()
        if nested:  # a pytest run the test printed: its lines, to its closing line, are the test's
            nested = not (text.startswith("=") and _CLOSING.match(text))
            block.append(line)
            continue
        header = _BLOCK.match(text) if section else None
        rule = _RULE.match(text)
        real = header is not None and width > 0 and _padded(text, width)
        if captured and header:
            key = key_of(header.group("name"))
            if key in seen or (key not in by_name and not real):
                header = None  # the test printed it: a header of a test already shown, or of none that failed
        if captured and rule:
            title = rule.group("title")
            if not (title in _LATER or (section == "ERRORS" and title == "FAILURES")):
                rule = None  # a rule the test printed (pytest's own ones after this section are kept)
        if rule and (m := _SECTION.match(text)):
            close()
            section, name, block, captured, seen, width = m.group(1), None, [], False, set(), 0
        elif header:
            close()
            name, block = header.group("name"), []
            width = width or len(text)
            captured = captured and not real  # found in printed output: printed output too, until the real one
            if not captured:
                seen.add(key_of(name))
        elif rule:
            close()
            section, name, block, captured = "", None, [], False
        elif name is not None:
            block.append(line)
            if _CAPTURED.match(text):
                captured = True
            elif captured and _SESSION.match(text):
                nested = True
    close()


class ReportLog:
    """What a pytest-reportlog file says: per-test statuses, what each test listed in pytest's
    summary would be, counts, collection errors, failure messages and exception types, the exit status."""

    def __init__(self, data: bytes) -> None:
        self.statuses: dict[str, str] = {}
        self.listed: dict[str, set[str]] = {}
        self.counts = dict.fromkeys(COUNTED, 0)
        self.collection_errors: list[str] = []
        self.collection_messages: dict[str, str] = {}
        self.skip_reasons: dict[str, str] = {}
        self.messages: dict[str, str] = {}
        self.exception_types: dict[str, str] = {}
        self.exit_status: int | None = None
        self.problem = ""
        self.raw_ids: dict[str, set[str]] = {}
        for number, raw in enumerate(data.splitlines(), 1):
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw)
            except (ValueError, RecursionError):  # nested too deep for the decoder is not JSON we read either
                self.problem = f"line {number} of the structured report is not JSON"
                return
            if not isinstance(entry, dict):
                self.problem = f"line {number} of the structured report is not an object"
                return
            try:
                self._add(entry)
            except (AttributeError, TypeError, KeyError, ValueError):  # fields of the wrong shape: not pytest's
                self.problem = f"line {number} of the structured report is not a pytest-reportlog entry"
                return
        if self.exit_status is None and not self.problem:
            self.problem = "the structured report does not end with pytest's session finish"

    def _add(self, entry: dict) -> None:
        kind = entry.get("$report_type")
        if kind == "SessionFinish":
            self.exit_status = entry.get("exitstatus")
        elif kind == "CollectReport":
            if entry.get("outcome") == "failed":
                node = str(entry.get("nodeid", ""))
                self.collection_errors.append(node)
                self.collection_messages[node] = str(entry.get("longrepr") or "")[-2000:]
                self.counts["errors"] += 1
            elif entry.get("outcome") == "skipped":  # a module skipped whole (importorskip): pytest counts it
                self.counts["skipped"] += 1
                self.skip_reasons[str(entry.get("nodeid", ""))] = _skip_reason(entry.get("longrepr"))
        elif kind in ("TestReport", "SubTestReport"):
            self._test(entry, sub=kind == "SubTestReport")

    def _test(self, entry: dict, *, sub: bool) -> None:
        raw_node, when, outcome = str(entry.get("nodeid", "")), entry.get("when"), entry.get("outcome")
        node = stable_id(raw_node)
        xfail = "wasxfail" in entry
        if outcome == "failed":
            status = FAILED if when == "call" else ERROR
        elif outcome == "skipped":
            status = XFAIL if xfail else SKIPPED
        elif outcome == "passed" and when == "call":
            status = XPASS if xfail else PASSED
        else:
            self.raw_ids.setdefault(node, set()).add(raw_node)
            return  # a setup or teardown that passed, or a rerun
        if sub:  # a subtest: only its failure shows, as its test's failure
            if status not in (FAILED, ERROR):
                return
            status = FAILED
            self.counts["failed"] += 1  # pytest's closing line counts each failed subtest as failed
        else:
            self.counts[
                {
                    PASSED: "passed",
                    FAILED: "failed",
                    ERROR: "errors",
                    SKIPPED: "skipped",
                    XFAIL: "xfailed",
                    XPASS: "xpassed",
                }[status]
            ] += 1
        if status != SKIPPED:
            self.listed.setdefault(node, set()).add(status)
        elif not sub:
            self.skip_reasons[node] = _skip_reason(entry.get("longrepr"))
        if self.statuses.get(node) not in (FAILED, ERROR):  # the first failure wins
            self.statuses[node] = _merge_status(self.raw_ids, node, raw_node, self.statuses.get(node), status)
            if status in (FAILED, ERROR):
                self.messages[node], self.exception_types[node] = _failure(entry.get("longrepr"))


def _skip_reason(longrepr) -> str:
    """A skip's reason from its serialized longrepr ([path, line, "Skipped: reason"])."""
    text = str(longrepr[-1]) if isinstance(longrepr, (list, tuple)) and longrepr else str(longrepr or "")
    return text.removeprefix("Skipped: ").strip()


def _failure(longrepr) -> tuple[str, str]:
    """(message, exception type) of a failed phase's serialized longrepr."""
    if isinstance(longrepr, dict):
        crash = longrepr.get("reprcrash") or {}
        message = str(crash.get("message", ""))
        entries = (longrepr.get("reprtraceback") or {}).get("reprentries") or []
        kind = ""
        if entries and isinstance(entries[-1], dict):
            kind = str(((entries[-1].get("data") or {}).get("reprfileloc") or {}).get("message", ""))
        return message, kind or _type_of(message)
    if isinstance(longrepr, (list, tuple)) and longrepr:
        return str(longrepr[-1]), ""
    text = str(longrepr or "")
    last = text.strip().splitlines()[-1] if text.strip() else ""
    return last, _type_of(last.removeprefix("E").strip())


def _type_of(message: str) -> str:
    head = message.split(":", 1)[0].strip()
    if message.startswith("assert "):
        return "AssertionError"
    return head.rsplit(".", 1)[-1] if re.fullmatch(r"[A-Za-z_][\w.]*", head) and ":" in message else ""


def _version(text: str | None) -> tuple[int, ...]:
    found = re.match(r"(\d+)\.(\d+)", text or "")
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


class PytestParser(ParserBase):
    """pytest with `-rA`: node ids as SWE-bench writes them, cross-checked with pytest-reportlog."""

    name: ClassVar[str] = "pytest"
    results_file: ClassVar[str | None] = None
    protected_paths: ClassVar[tuple[str, ...]] = PROTECTED_PATHS
    config_files: ClassVar[tuple[str, ...]] = CONFIG_FILES
    image_setup: ClassVar[str | None] = IMAGE_SETUP
    exit_codes_ran: ClassVar[tuple[int, ...]] = (0, 1)  # all passed; some failed

    def run_setup(self, facts: dict | None, token: str, plugins: tuple[str, ...] = ()) -> RunSetup:
        facts = facts or {}
        recorded = [
            p
            for p in facts.get("pytest11", [])
            if isinstance(p, dict) and p.get("name") and _module(str(p.get("value", ""))) not in SUMMARY_REPLACERS
        ]
        plugins = tuple(p for p in plugins if p and _module(p) not in SUMMARY_REPLACERS)
        names = [str(p["name"]) for p in recorded] + list(plugins)
        opts = shlex.split(str(facts.get("env_addopts") or "")) + [x for n in dict.fromkeys(names) for x in ("-p", n)]
        setup = RunSetup(env={"PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
        loaded = _loaded_plugins(opts)
        setup.seed_options = tuple(o for name, options in RANDOMISERS.items() if name in loaded for o in options)
        setup.seed_var = "PYTEST_ADDOPTS"
        if not facts.get("pytest"):
            setup.no_report = "the environment records no pytest (no facts from its image build)"
        elif _version(facts["pytest"]) < REPORTLOG_MIN_PYTEST:
            setup.no_report = f"pytest {facts['pytest']} cannot load pytest-reportlog (it needs pytest 6)"
        elif not facts.get("tools_path"):
            setup.no_report = "the environment's Python could not be given grading's tools folder"
        else:
            path = f"/tmp/wholeloop-report-{token}/report.jsonl"
            own = any(str(p.get("value", "")).startswith("pytest_reportlog") for p in recorded)
            opts += ([] if own else ["-p", "pytest_reportlog.plugin"]) + [f"--report-log={path}"]
            opts += ["-p", TEST_LIMIT_PLUGIN]  # the per-test time limit (TEST_LIMIT_VAR)
            setup.report_path, setup.anchor = path, f"generated report log file: {path}"
            setup.files = {**_reportlog_files(), **_test_limit_files()}
        setup.env["PYTEST_ADDOPTS"] = shlex.join(opts)
        # PYTEST_PLUGINS loads modules even with autoload off: only the task's environment may name
        # them (grading passes its value on); nothing found at test time does
        setup.env["PYTEST_PLUGINS"] = ""
        values = [str(p.get("value", "")) for p in recorded] + [p for p in plugins if p]  # modules, not entry names
        setup.imports = tuple(dict.fromkeys(_module(v) for v in values if v.strip()))
        return setup

    def parse_output(self, output: str) -> TestReport:
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

    def parse(
        self, output: str, results: bytes | None = None, *, setup: RunSetup | None = None, exit_code: int | None = None
    ) -> TestReport:
        report = parse_pytest(output, setup.anchor if setup else "")
        if exit_code is None:
            return report
        report.consistent, report.why = report.consistent_with(exit_code)
        report.channels = {"summary": "found" if report.found_summary else "missing", "exit_code": str(exit_code)}
        if exit_code not in self.exit_codes_ran:
            report.consistent, report.why = False, f"exit code {exit_code}: the tests did not run to the end"
        if setup is None or setup.report_path is None:
            report.channels["structured"] = "unavailable: " + (setup.no_report if setup else "not asked for")
            return report
        if results is None:
            report.channels["structured"] = "missing"
            if report.consistent:
                _disagree(
                    report,
                    "the structured report (pytest-reportlog) is missing: the code under test may have "
                    "removed it, or the hidden test command does not run pytest with the environment's "
                    "PYTEST_ADDOPTS",
                )
            return report
        log = ReportLog(results)
        report.merged_ids = {**report.merged_ids, **_merged(log.raw_ids)}
        report.exception_types = log.exception_types
        report.skip_reasons, report.collection_messages = log.skip_reasons, log.collection_messages
        if log.exit_status is None and (signal := killed_by(exit_code)) is not None:
            # ended by a signal (the memory limit's SIGKILL): the report is cut because pytest was,
            # which is the tests not running to the end, not the channels disagreeing
            report.consistent = False
            report.why = f"exit code {exit_code}: the tests were killed by signal {signal} before the end"
            report.channels["structured"] = "cut: the run was killed"
            if log.statuses:
                report.statuses = dict(log.statuses)
            return report
        why = log.problem or _contradiction(report, log, exit_code)
        # messages: the structured report's; where the channels agree, the fuller ones pytest printed
        # (its FAILURES sections) -- printed lines that contradict the report can be anyone's
        report.messages = log.messages if why else {**log.messages, **report.messages}
        report.channels["structured"] = "agrees" if not why else "disagrees"
        if why:
            _disagree(report, why)
        if log.statuses:
            report.statuses = dict(log.statuses)  # the same when they agree; the more trusted one when not
        return report


def _module(value: str) -> str:
    """The top-level module of an entry point's value or a plugin name (`pytest_asyncio.plugin:x`)."""
    return value.split(":")[0].split(".")[0].strip()


def _loaded_plugins(opts: list[str]) -> set[str]:
    """The plugins `-p NAME` loads in these options, as pytest reads them: the last of `-p NAME` and
    `-p no:NAME` wins (a blocked randomiser takes no options)."""
    loaded: set[str] = set()
    for i, opt in enumerate(opts):
        if opt == "-p" and i + 1 < len(opts):
            value = opts[i + 1]
        elif opt.startswith("-p") and len(opt) > 2 and opts[i - 1 : i] != ["-p"]:
            value = opt[2:]
        else:
            continue
        if value.startswith("no:"):
            loaded.discard(value[3:])
        else:
            loaded.add(value)
    return loaded


def _contradiction(summary: TestReport, log: ReportLog, exit_code: int) -> str:
    """How the text channel, the exit code and the structured report contradict each other ("" if not)."""
    if log.exit_status != exit_code:
        return f"pytest's structured report ends with exit status {log.exit_status}, the command exited {exit_code}"
    if not summary.found_summary:
        return ""  # nothing to compare; no summary is unresolved on its own
    listed = summary.listed
    for node in sorted(set(listed) | set(log.listed)):
        if listed.get(node, set()) != log.listed.get(node, set()):
            said = "/".join(sorted(listed.get(node, set()))) or "nothing"
            logged = "/".join(sorted(log.listed.get(node, set()))) or "nothing"
            return f"{_shown(node)}: the summary says {said}, the structured report {logged}"
    if sorted(summary.collection_errors) != sorted(log.collection_errors):
        return "the summary and the structured report list different collection errors"
    for key in COUNTED:
        if summary.counts.get(key, 0) != log.counts.get(key, 0):
            return (
                f"the closing line counts {summary.counts.get(key, 0)} {key}, "
                f"the structured report {log.counts.get(key, 0)}"
            )
    return ""


def _shown(text: str, limit: int = 200) -> str:
    """A test id as it may be printed in a record: control characters escaped, length capped."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[:limit] + "..."


def _disagree(report: TestReport, why: str) -> None:
    report.consistent, report.why, report.disagreement = False, why, why


def _test_limit_files() -> dict[str, bytes]:
    """wholeloop's per-test time limit plugin (harness/data/pytest), for TOOLS_DIR."""
    source = resources.files("harness.data").joinpath(f"pytest/{TEST_LIMIT_PLUGIN}.py").read_bytes()
    return {f"{TOOLS_DIR}/{TEST_LIMIT_PLUGIN}.py": source}


def _reportlog_files() -> dict[str, bytes]:
    """pytest-reportlog's modules (the copy installed with wholeloop), for TOOLS_DIR."""
    package = resources.files("pytest_reportlog")
    return {
        f"{TOOLS_DIR}/pytest_reportlog/{item.name}": item.read_bytes()
        for item in package.iterdir()
        if item.name.endswith(".py")
    }
