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

Every one of those channels is made by the main process from what the workers send it, so code
under test that rewrites what its worker sends (Vitest's `__vitest_worker__.rpc`, Jest's worker
messages) or makes the assertions no-ops (chai's `Assertion.prototype.assert`) makes them all agree
on a forged pass. Canaries: grading appends to each hidden test file two tests of its own, titled
at random per grading (`canary_source`), one whose assertion fails and one whose assertion holds;
`check_canaries` requires the first reported failed and the second passed, in every channel, and
an exit code that says a test failed, then leaves both out of the results. A rewrite that turns
failures into passes, or assertions that no longer fail, turns the must-fail canary too: the run
is inconsistent, suspected tampering. (What this does not catch: code that tells the canaries
apart, e.g. by reading the test files, and spares them: docs/grading.md, row 25.)
"""

from __future__ import annotations

import json
import posixpath
import re

from .base import ERROR, FAILED, PASSED, REPO_ROOT, SKIPPED, ParserBase, RunSetup, TestReport, finish, strip_ansi

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


# ------------------------------------------------------------------------------------ canaries

# Vitest prints this in its summary when an error was thrown outside any test (an unhandled
# rejection): it ends with exit code 1 then even when every test passed.
_VITEST_ERRORS = re.compile(r"^\s*Errors\s{2,}\d+ errors?\b")
# Files a canary is not appended to: CommonJS files, where `import` is not allowed (Vitest) and
# Jest's globals may be all there is.
_NO_CANARY = (".cjs", ".cts")


def canary_source(framework: str, path: str, must_fail: str, must_pass: str, nonce: str) -> str | None:
    """Two top-level tests to append to test file `path`: `must_fail` asserts that two different
    numbers are equal, `must_pass` that one number equals itself. Vitest's are called through a
    namespace import of 'vitest' named by `nonce` (import declarations are hoisted, so it may come
    last); Jest's through its globals `test` and `expect`."""
    if path.endswith(_NO_CANARY):
        return None
    a = int(nonce[:6], 16) % 90_000 + 10_000  # two different five-digit numbers
    b = a + 1 + int(nonce[6:12] or "0", 16) % 1000
    if framework == "vitest":
        ns = f"wl_{nonce}"
        test, expect, head = f"{ns}.test", f"{ns}.expect", f"\n;import * as {ns} from 'vitest';\n"
    else:
        test, expect, head = "test", "expect", "\n;"
    return (
        f"{head}{test}({json.dumps(must_fail)}, () => {{ {expect}({a}).toBe({b}); }});\n"
        f"{test}({json.dumps(must_pass)}, () => {{ {expect}({a}).toBe({a}); }});\n"
    )


def check_canaries(
    framework: str, report: TestReport, canaries: dict[str, tuple[str, str]], exit_code: int | None, text: str
) -> int | None:
    """Check the canaries grading planted (test file -> (must-fail title, must-pass title)) against
    `report` (read with them in, its channels already cross-checked), then take them out of its
    statuses, messages and counts. Each canary reported otherwise than it must be, or missing from a
    file whose other tests were reported, is a problem (suspected tampering). Returns the exit code
    the runner would have ended with without the canaries (the must-fail one makes it 1 always;
    exit 0 then is itself a problem): 1 when a real test failed, a file did not load or (Vitest) an
    error was thrown outside the tests, else 0."""
    forged: list[str] = []
    seen = 0
    for path, (must_fail, must_pass) in sorted(canaries.items()):
        of_file = [t for t in report.statuses if t.startswith(path + "::")]
        for title, want in ((must_fail, FAILED), (must_pass, PASSED)):
            # top-level: no describe titles, or (Vitest 1.x) the file's own, empty, title: "<path>:: > <title>"
            test_id = next((t for t in of_file if _titles(t, path) == [title]), f"{path}::{title}")
            got = report.statuses.pop(test_id, None)
            for table in (report.messages, report.exception_types, report.listed, report.skip_reasons):
                table.pop(test_id, None)
            if got is None:
                if of_file and path not in report.collection_errors:
                    forged.append(f"{path}: the canary that must {'fail' if want == FAILED else 'pass'} is missing")
                continue
            seen += want == FAILED
            key = {PASSED: "passed", FAILED: "failed", SKIPPED: "skipped"}.get(got)
            if key and report.counts.get(key):
                report.counts[key] -= 1
            report.listed_passed -= got == PASSED
            if got != want:
                forged.append(f"{path}: the canary that must {'fail' if want == FAILED else 'pass'} was reported {got}")
    if forged:
        report.problems.append(
            f"grading's canary tests were not reported as they ran ({'; '.join(forged[:5])}): the results were "
            "rewritten, or the assertions disabled, in the process that runs the tests"
        )
    if exit_code is None or not seen:
        return exit_code
    if exit_code == 0:
        report.problems.append(f"{framework} ended with exit code 0 although grading's must-fail canary ran")
        return 0
    if exit_code != 1:
        return exit_code
    errors = framework == "vitest" and any(_VITEST_ERRORS.match(line) for line in text.splitlines())
    return 1 if report.failing() or report.collection_errors or errors else 0


def _titles(test_id: str, path: str) -> list[str]:
    """The non-empty titles of a test id of file `path` (describe titles, then the test's)."""
    return [t for t in test_id[len(path) + 2 :].split(" > ") if t]


class JsParser(ParserBase):
    """What Vitest's and Jest's parsers share: the JSON report, canaries, package.json's keys."""

    def read(self, output: str, results: bytes | None) -> TestReport:
        return parse_js_report(self.name, output, results)

    def parse(
        self, output: str, results: bytes | None = None, *, setup: RunSetup | None = None, exit_code: int | None = None
    ) -> TestReport:
        report = super().parse(output, results, setup=setup)
        if exit_code is None or setup is None or not setup.canaries:
            return report if exit_code is None else finish(report, exit_code, self.exit_codes_ran)
        without = check_canaries(self.name, report, setup.canaries, exit_code, strip_ansi(output))
        finish(report, exit_code if without is None else without, self.exit_codes_ran)
        report.channels["exit_code"] = str(exit_code)  # the run's own
        return report

    def canary(self, path: str, must_fail: str, must_pass: str, nonce: str) -> str | None:
        return canary_source(self.name, path, must_fail, must_pass, nonce) if is_js_test_module(path) else None

    def is_test_module(self, path: str) -> bool:
        return is_js_test_module(path)

    def test_file(self, test_id: str) -> str | None:
        return test_id.split("::", 1)[0] if "::" in test_id else None


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
