"""The JSON report Jest writes (`--json --outputFile=F`) and Vitest copies (`--reporter=json
--outputFile.json=F`), read the same way for both: ids `<file>::<describe titles..., test title>`.

`<file>` is `testResults[].name` (absolute) made relative to the repository; the titles are
`ancestorTitles` then `title`, joined by " > " (not `fullName`, which joins them with spaces and
is ambiguous). A file that fails to load (a syntax error, an import that throws) has a `message`
and no assertion results: it is a collection error, its tests are absent.

Trust. The report is written by the runner's main process; the code under test runs in its
workers (Vitest's forks or threads, Jest's workers), which cannot reach that process's memory but
can write files and print. So the report is checked against a second channel the main process
prints, when the command asks for it: the summary line (`Tests  8 failed | 43 passed (51)` for
Vitest, `Tests:       8 failed, 43 passed, 51 total` for Jest) and, for Vitest's verbose reporter,
one `✓`/`×` line per test. Disagreement makes the run inconsistent, and so does an exit code the
runner does not end with on its own.
"""

from __future__ import annotations

import json
import posixpath
import re

from .base import ERROR, FAILED, PASSED, REPO_ROOT, SKIPPED, TestReport, strip_ansi

_STATUS = {
    "passed": PASSED,
    "failed": FAILED,
    "pending": SKIPPED,
    "skipped": SKIPPED,
    "todo": SKIPPED,
    "disabled": SKIPPED,
    "focused": PASSED,
}
# Vitest:  "      Tests  8 failed | 43 passed | 1 skipped (52)"   Jest: "Tests:       8 failed, 43 passed, 51 total"
_VITEST_SUMMARY = re.compile(r"^\s*Tests\s{2,}(?P<body>.*?)\s*(?:\((?P<total>\d+)\))?\s*$")
_JEST_SUMMARY = re.compile(r"^\s*Tests:\s+(?P<body>.*\d+ total)\s*$")
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|todo|pending)")
# Vitest's verbose reporter: " ✓ src/a.test.ts > group > name 12ms" (duration only for slow tests)
_VERBOSE = re.compile(r"^\s*(?P<mark>[✓×✗↓])\s+(?P<name>\S.*?)\s*$")
_DURATION = re.compile(r"\s\d+(?:\.\d+)?\s?m?s$")
MESSAGE_CHARS = 300


_SCRIPT = (".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts")


def is_js_test_module(path: str) -> bool:
    """A file Jest and Vitest run by default: *.test.* / *.spec.* scripts, or scripts in __tests__/."""
    name = path.rsplit("/", 1)[-1]
    if not name.endswith(_SCRIPT):
        return False
    return ".test." in name or ".spec." in name or "/__tests__/" in f"/{path}"


def config_names(*stems: str) -> tuple[str, ...]:
    """Every script extension of each stem (vitest.config -> vitest.config.ts, .mjs, ...)."""
    return tuple(stem + ext for stem in stems for ext in _SCRIPT)


def relative(path: str) -> str:
    """A report's absolute file name as a repository-relative path."""
    if path == REPO_ROOT or path.startswith(REPO_ROOT + "/"):
        return posixpath.relpath(path, REPO_ROOT)
    return path


def first_line(text: str) -> str:
    for line in strip_ansi(text).splitlines():
        if line.strip():
            return line.strip()[:MESSAGE_CHARS]
    return ""


def parse_js_report(framework: str, output: str, results: bytes | None) -> TestReport:
    """`framework` is "vitest" or "jest": it picks the text channel's format and the hints."""
    report = TestReport(failed_exit_codes=(1,), strict_exit=True)
    text = strip_ansi(output)
    if results is None:
        report.missing_hint = (
            f"no {framework} JSON report was written (does the hidden test command write it to "
            "the parser's results_file?)"
        )
        report.channels["structured"] = "missing"
        _from_text(framework, text, report)
        return report
    try:
        data = json.loads(results.decode("utf-8", "replace"))
        files = data["testResults"]
        if not isinstance(files, list):
            raise TypeError("testResults is not a list")
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        return _unreadable(framework, report, exc)
    report.found_summary = True
    report.channels["structured"] = "found"
    try:
        _read_files(report, data, files)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # fields of the wrong shape: the code under
        return _unreadable(framework, TestReport(failed_exit_codes=(1,), strict_exit=True), exc)  # test can write it
    summary = _summary(framework, text)
    report.channels["summary"] = "missing" if summary is None else "found"
    if summary is not None:
        for key in ("passed", "failed"):
            if summary.get(key, 0) != report.counts.get(key, 0):
                report.problems.append(
                    f"the JSON report says {report.counts.get(key, 0)} {key} but {framework}'s summary line says "
                    f"{summary.get(key, 0)}"
                )
    if framework == "vitest":
        _check_verbose(text, report)
    return report


def _unreadable(framework: str, report: TestReport, exc: BaseException) -> TestReport:
    report.missing_hint = f"the {framework} JSON report cannot be read ({type(exc).__name__}: {exc})"
    report.channels["structured"] = "found"
    report.problems.append(f"the {framework} JSON report is not a report ({type(exc).__name__})")
    return report


def _read_files(report: TestReport, data: dict, files: list) -> None:
    """The tests, statuses, messages and counts of a JSON report's `testResults`."""
    for file in files:
        if not isinstance(file, dict):
            continue
        path = relative(str(file.get("name", "")))
        results_of_file = [r for r in file.get("assertionResults") or [] if isinstance(r, dict)]
        if file.get("status") == "failed" and not any(r.get("status") == "failed" for r in results_of_file):
            # it failed, and not because of a test in it: it did not load, or a hook outside tests threw
            report.collection_errors.append(path)
            if line := first_line(str(file.get("message") or "")):
                report.messages[path] = line
        for result in results_of_file:
            titles = [str(t) for t in result.get("ancestorTitles") or []] + [str(result.get("title", ""))]
            test_id = f"{path}::{' > '.join(titles)}"
            status = _STATUS.get(str(result.get("status")), ERROR)
            report.listed_passed += status == PASSED
            if report.statuses.get(test_id) in (FAILED, ERROR):
                continue  # two tests of one name in a file: a failure wins
            report.statuses[test_id] = status
            failures = result.get("failureMessages") or []
            if status in (FAILED, ERROR) and failures and (line := first_line(str(failures[0]))):
                report.messages[test_id] = line
    for key, field in (("passed", "numPassedTests"), ("failed", "numFailedTests")):
        if isinstance(data.get(field), int):
            report.counts[key] = data[field]
    if isinstance(data.get("numPendingTests"), int):
        report.counts["skipped"] = data["numPendingTests"] + int(data.get("numTodoTests") or 0)
    listed_skipped = sum(
        1
        for file in files
        if isinstance(file, dict)
        for r in file.get("assertionResults") or []
        if isinstance(r, dict) and _STATUS.get(str(r.get("status"))) == SKIPPED
    )
    if (
        listed_skipped
        and report.counts.get("skipped") == 0
        and report.counts.get("passed") == report.listed_passed + listed_skipped
    ):
        # Vitest before 1.0 counts the tests it skipped in numPassedTests (and none as pending) while
        # listing them as skipped: the counts are the list's (the summary line is still checked)
        report.counts["passed"], report.counts["skipped"] = report.listed_passed, listed_skipped


def _summary(framework: str, text: str) -> dict[str, int] | None:
    """Counts from the last summary line the runner printed, None when it printed none."""
    pattern = _VITEST_SUMMARY if framework == "vitest" else _JEST_SUMMARY
    for line in reversed(text.splitlines()):
        match = pattern.match(line)
        if match and (_COUNT.search(match.group("body")) or "no tests" in match.group("body")):
            counts: dict[str, int] = {}
            for num, word in _COUNT.findall(match.group("body")):
                key = "skipped" if word in ("skipped", "todo", "pending") else word
                counts[key] = counts.get(key, 0) + int(num)
            return counts
    return None


def _verbose_lines(text: str) -> list[tuple[str, str]]:
    """Vitest verbose lines as (name, status), name = "<file> > <titles>" as printed (a slow test's
    line ends in its duration, which a title can also end in: see `_lookup`)."""
    found = []
    for line in text.splitlines():
        match = _VERBOSE.match(line)
        if match and " > " in match.group("name"):
            mark = {"✓": PASSED, "×": FAILED, "✗": FAILED, "↓": SKIPPED}[match.group("mark")]
            found.append((match.group("name").removesuffix(" [skipped]"), mark))
    return found


def _check_verbose(text: str, report: TestReport) -> None:
    lines = _verbose_lines(text)
    report.channels["verbose"] = "found" if lines else "missing"
    if not lines:
        return
    seen: dict[str, set[str]] = {}
    for name, mark in lines:
        for key in {name, _DURATION.sub("", name)}:
            seen.setdefault(key, set()).add(mark)
    disagree = []
    for test_id, status in report.statuses.items():
        marks = seen.get(test_id.replace("::", " > ", 1))
        if not marks:
            continue
        if (status == PASSED and FAILED in marks) or (status == FAILED and marks == {PASSED}):
            disagree.append(test_id)
    if disagree:
        report.problems.append(
            f"the JSON report and the verbose output disagree on {len(disagree)} test(s) "
            f"({', '.join(sorted(disagree)[:5])})"
        )


def _from_text(framework: str, text: str, report: TestReport) -> None:
    """No JSON report (e.g. the agent's visible command): counts from the summary line and, with
    Vitest's verbose reporter, per-test lines. Never enough to grade by: the run is inconsistent."""
    summary = _summary(framework, text)
    if summary is not None:
        report.counts.update(summary)
        report.channels["summary"] = "found"
    if framework == "vitest":
        for name, mark in _verbose_lines(text):
            path, _, titles = name.partition(" > ")
            test_id = f"{path}::{titles}"
            if report.statuses.get(test_id) not in (FAILED, ERROR):
                report.statuses[test_id] = mark
            report.listed_passed += mark == PASSED
    report.problems.append(f"no {framework} JSON report: the results come from its text output alone")


# ------------------------------------------------------------------------------------ package.json

# The keys of package.json that decide which program `npx vitest` / `npx jest` / `npm test` runs
# and how the runner is configured: `bin` (npx runs the project's own bin of that name first) and
# `directories.bin` (every file of a folder a bin), `scripts`, `workspaces` and `packageManager`
# (npm's), `jest` (Jest's whole configuration) and `babel` (how babel-jest compiles the tests).
# A fix keeps everything else it changes (dependencies, exports, main, version).
PACKAGE_KEYS = ("bin", "directories", "scripts", "workspaces", "packageManager", "jest", "babel")


def _strict_json(data: bytes) -> dict | None:
    """A package.json's top-level object, read strictly (UTF-8 without a BOM, no NaN, no key twice,
    which JSON.parse and Python read differently); None when it cannot be."""

    def pairs(items: list) -> dict:
        keys = [k for k, _ in items]
        if len(keys) != len(set(keys)):
            raise ValueError("a key twice")
        return dict(items)

    def constant(name: str) -> None:
        raise ValueError(f"{name} is not JSON")

    try:
        value = json.loads(data.decode("utf-8"), object_pairs_hook=pairs, parse_constant=constant)
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def put_back_package_keys(
    before: dict[str, bytes], after: dict[str, bytes]
) -> tuple[dict[str, bytes | None], list[tuple[str, str]]]:
    """For each package.json of `after` (path -> bytes, the tree after the patch) that differs from
    `before` (the tree the patch was applied to): its PACKAGE_KEYS as they were in `before` (absent
    when they were, or when the file is new), every other change kept; a file that does not read
    as strict JSON is put back whole (or removed, when new). Returns the files to write (None:
    remove) and what was put back, as (path, what) pairs."""
    writes: dict[str, bytes | None] = {}
    done: list[tuple[str, str]] = []
    for path, data in sorted(after.items()):
        old_data = before.get(path)
        if data == old_data:
            continue
        old = _strict_json(old_data) if old_data is not None else {}
        new = _strict_json(data)
        if new is None or old is None:
            writes[path] = old_data
            done.append((path, "package.json whole (not strict JSON)"))
            continue
        keys = [k for k in PACKAGE_KEYS if (k in old, old.get(k)) != (k in new, new.get(k))]
        if not keys:
            continue
        for key in keys:
            if key in old:
                new[key] = old[key]
            else:
                del new[key]
        writes[path] = (json.dumps(new, indent=2, ensure_ascii=False) + "\n").encode()
        done.append((path, "package.json " + ", ".join(keys)))
    return writes, done
