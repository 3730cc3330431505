"""Acceptance axes: what a reviewer would see in a patch besides whether the hidden tests pass.

Measured on the agent's RAW patch, the text it left before grading strips anything (grading puts
protected paths back, so a deleted test never reaches the graded tree; the axes must see it), and
compared with the task's gold patch. Each axis is a fact with its evidence (paths, lines); whether
a patch is *accepted* is a policy over these facts, applied at report time
(`harness.report.acceptance`), so a changed policy needs no regrade. See docs/acceptance.md.

The axes:

- `outside_scope`: files the patch changes that gold does not change and that lie outside the
  modules (folders) of gold's files (a top-level file is its own module); test files excluded;
- `size`: changed lines (added + removed) of the patch and of gold, and their ratio;
- `tests_deleted` / `tests_weakened`: test files the patch deletes; test files from which it
  removes more assertions than it adds (an assertion that always holds, `assert True`, adds none;
  the removed lines as evidence), and lines it adds to a test file that switch tests off (skip and
  xfail markers, `collect_ignore`, `it.skip`/`xit`/`.only`, `t.Skip`, `#[ignore]`) unless gold
  adds the same line;
- `top_level_added`: files the patch creates at the repository's top level that gold does not;
- `debug_leftovers`: lines the patch ADDS (never removed or context lines) that are debugging
  output (print, console.log, dbg!, breakpoint, pdb, fmt.Println ...) outside test files, unless
  gold adds the same line;
- `binary_files`: files the patch changes as binary;
- `own_checks`: the repository's own linters and type checkers on a resolved patch's files, the
  findings it adds to the base's (`own_checks`; measured by grading, not by `measure`).

Old grades have no axes: acceptance is then "not measured", never false.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel, Field

from ..parsers import glob_match
from ..tasks import Task
from .own_checks import OwnChecks
from .patching import TEST_DIR_NAMES, Section, parse_patch

# bump when an axis is measured differently (recorded beside the axes)
# 2: tests switched off and always-true assertions weaken; more debug forms. 3: a debugging statement
# after a CR inside an added line (red team 7)
AXES_VERSION = 3
EVIDENCE_LINES = 20  # lines kept per axis as evidence (the counts are whole)

# test files of every ecosystem wholeloop grades (besides the task parsers' own test paths)
TEST_GLOBS = (
    "**/test_*.py",
    "**/*_test.py",
    "**/conftest.py",
    "**/*_test.go",
    "**/*.test.*",
    "**/*.spec.*",
    "**/__tests__/**",
    "**/tests.rs",
)
# an assertion of pytest/unittest, Go's testing, Rust, JavaScript test runners
_ASSERTION = re.compile(
    r"^\s*(assert\b|self\.assert\w*\(|self\.fail\(|pytest\.raises\b|with\s+pytest\.raises\b|"
    r"\S*\.?(assert|expect)\w*\s*[(!]|t\.(Error|Errorf|Fatal|Fatalf|Fail|FailNow)\(|require\.\w+\(|"
    r"assert(_eq|_ne|_matches)?!\(|debug_assert\w*!\()"
)
# an assertion that always holds: it replaces a real one without counting as one
_TRIVIAL = re.compile(
    r"^\s*(assert\s*\(?\s*(True|1|not\s+False)\s*\)?\s*(,.*)?$|self\.assertTrue\(\s*True\s*\)|"
    r"expect\(\s*true\s*\)\.toBe\(\s*true\s*\)|assert!\(\s*true\s*\))"
)
# a line added to a test file that switches tests off (or focuses one, which switches off the rest)
_SWITCHED_OFF = re.compile(
    r"^\s*(pytestmark\s*[+]?=.*\b(skip|skipif|xfail)\b|@?pytest\.mark\.(skip|skipif|xfail)\b|"
    r"pytest\.(skip|xfail)\s*\(|self\.skipTest\s*\(|@?unittest\.(skip|skipIf|skipUnless|expectedFailure)\b|"
    r"collect_ignore(_glob)?\s*[+]?=|(it|test|describe|context)\.(skip|todo|only)\s*\(|[xf](it|describe|test)\s*\(|"
    r"t\.Skip(f|Now)?\s*\(|#\[ignore\b)"
)
# debugging output left behind, per language (matched on each statement of an added line)
_DEBUG = re.compile(
    r"^\s*(print\s*\(|pprint\s*\(|breakpoint\s*\(\s*\)|import\s+i?pdb\b|(i?pdb)\.set_trace\s*\(|"
    r"console\.(log|debug|trace|error|warn|info|dir|table)\s*\(|debugger\s*;?\s*$|dbg!\s*\(|e?print(ln)?!\s*\(|"
    r"println\s*\(|sys\.(stdout|stderr)\.write\s*\(|fmt\.Print(ln|f)?\s*\(|log\.Print(ln|f)?\s*\()"
)


def _debugging(line: str) -> bool:
    """A line with a debugging statement, also after a `;` (`x = 1; print(x)`) or a CR inside the
    line (a line end to Python and to Go, though the patch holds one line: red team 7)."""
    return any(_DEBUG.match(part) for piece in line.split("\r") for part in piece.split(";"))


# the axes whose findings the default acceptance policy refuses (harness.report.acceptance's
# DEFAULT_POLICY; tests/test_acceptance.py keeps the two equal): what `tasks check` flags in gold
DEFAULT_REFUSED = (
    "tests_deleted",
    "tests_weakened",
    "outside_scope",
    "top_level_added",
    "binary_files",
    "debug_leftovers",
    "own_checks",
)


class LineEvidence(BaseModel):
    path: str
    line: str


class Axes(BaseModel):
    """The acceptance axes of one patch (see the module docstring); every list is evidence."""

    version: int = AXES_VERSION
    files: list[str] = Field(default_factory=list, description="every path the raw patch changes")
    outside_scope: list[str] = Field(default_factory=list)
    lines_changed: int = 0
    gold_lines_changed: int = 0
    size_ratio: float | None = Field(None, description="lines_changed / gold_lines_changed (None: gold changes none)")
    tests_deleted: list[str] = Field(default_factory=list)
    tests_weakened: list[LineEvidence] = Field(default_factory=list, description="assertion lines removed")
    top_level_added: list[str] = Field(default_factory=list)
    debug_leftovers: list[LineEvidence] = Field(default_factory=list)
    binary_files: list[str] = Field(default_factory=list)
    own_checks: OwnChecks | None = Field(
        None,
        description="the repository's own checks on a resolved patch's files and the findings it adds "
        "(None: not measured -- unresolved, or graded before grader 9; see own_checks)",
    )


def refused_by_default(axes: Axes) -> list[str]:
    """The axes with findings that the default acceptance policy refuses (empty: accepted, if resolved)."""
    found = axes.model_dump()
    found["own_checks"] = new_findings(found)
    return [k for k in DEFAULT_REFUSED if found[k]]


def new_findings(axes: dict) -> list[dict]:
    """The own checks' new findings of recorded axes (none when not measured)."""
    checks = axes.get("own_checks")
    return list(checks.get("new") or []) if isinstance(checks, dict) else []


def is_test_file(task: Task, path: str) -> bool:
    """A test file of the task's frameworks, by their globs and wholeloop's own, or a file in a
    folder named like a test folder (`tests/`, `test/`, `testing/`)."""
    if any(p.is_test_path(path) for p in task.hidden_tests.parsers()):
        return True
    if any(part.lower() in TEST_DIR_NAMES for part in path.split("/")[:-1]):
        return True
    return any(glob_match(g, path) for g in TEST_GLOBS)


def measure(task: Task, patch: str) -> Axes:
    """The axes of `patch` (the raw text the agent left) for `task`, against its gold patch."""
    sections, _ = parse_patch(patch)
    gold_sections, _ = parse_patch(task.gold() or "")
    gold_files = {p for s in gold_sections for p in (s.old, s.new) if p is not None}
    gold_added_lines = {line.strip() for s in gold_sections for line in _added(s)}
    axes = Axes()
    axes.files = list(dict.fromkeys(p for s in sections for p in (s.old, s.new) if p is not None))
    axes.lines_changed = sum(_changed(s) for s in sections)
    axes.gold_lines_changed = sum(_changed(s) for s in gold_sections)
    if axes.gold_lines_changed:
        axes.size_ratio = round(axes.lines_changed / axes.gold_lines_changed, 3)
    gold_modules = {p.rsplit("/", 1)[0] + "/" for p in gold_files if "/" in p}
    for section in sections:
        path = section.new if section.new is not None else section.old
        if path is None:
            continue
        test = is_test_file(task, path)
        if section.binary:
            axes.binary_files.append(path)
        if not test and not _in_scope(path, gold_files, gold_modules):
            axes.outside_scope.append(path)
        if section.old is None and "/" not in path and path not in gold_files:
            axes.top_level_added.append(path)
        if test:
            if section.new is None:
                axes.tests_deleted.append(section.old or path)
            else:
                removed = [line for line in _removed(section) if _ASSERTION.match(line)]
                added = [line for line in _added(section) if _ASSERTION.match(line) and not _TRIVIAL.match(line)]
                if len(removed) > len(added):
                    axes.tests_weakened += [LineEvidence(path=path, line=line.strip()) for line in removed]
                axes.tests_weakened += [
                    LineEvidence(path=path, line=line.strip())
                    for line in _added(section)
                    if _SWITCHED_OFF.match(line) and line.strip() not in gold_added_lines
                ]
        else:
            axes.debug_leftovers += [
                LineEvidence(path=path, line=line.strip())
                for line in _added(section)
                if _debugging(line) and line.strip() not in gold_added_lines
            ]
    axes.tests_weakened = axes.tests_weakened[:EVIDENCE_LINES]
    axes.debug_leftovers = axes.debug_leftovers[:EVIDENCE_LINES]
    return axes


def _in_scope(path: str, gold_files: set[str], gold_modules: Iterable[str]) -> bool:
    """In gold's footprint, or inside the folder of one of gold's files (or below it)."""
    return path in gold_files or any(path.startswith(m) for m in gold_modules)


def _hunk_lines(section: Section) -> list[str]:
    """The section's hunk lines (its ---/+++ header left out); none for a binary patch."""
    if section.binary:
        return []
    body = section.body
    if len(body) >= 2 and body[0].startswith("--- ") and body[1].startswith("+++ "):
        body = body[2:]
    return body


def _added(section: Section) -> list[str]:
    return [x[1:] for x in _hunk_lines(section) if x.startswith("+")]


def _removed(section: Section) -> list[str]:
    return [x[1:] for x in _hunk_lines(section) if x.startswith("-")]


def _changed(section: Section) -> int:
    return len(_added(section)) + len(_removed(section))
