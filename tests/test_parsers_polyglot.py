"""The go, vitest, jest, cargo and junit parsers on real outputs of their frameworks
(tests/data/parsers: captured in wholeloop's images, see the README there), their defences against
forged results, their protected paths (checked against git's own pathspec matching) and the
restoring of Rust unit tests inside source files. No Docker."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support import ROOT, git

from harness.parsers import (
    ERROR,
    FAILED,
    PARSERS,
    PASSED,
    REPO_ROOT,
    REPORTS_DIR,
    SKIPPED,
    RunSetup,
    TestReport,
    get_parser,
    glob_match,
    is_protected_path,
    merge,
    parse_run,
)
from harness.parsers.jsreport import put_back_package_keys
from harness.parsers.rustmod import crate_roots, module_tree, put_back_tests
from harness.tasks import Task, TaskSpecError, load_task

DATA = ROOT / "tests" / "data" / "parsers"
FIXTURES = json.loads((DATA / "fixtures.json").read_text())["fixtures"]
sys.path.insert(0, str(ROOT / "scripts"))


def fixture(key: str) -> tuple[str, bytes | None, int]:
    """(output as grading joins it, results file bytes or None, exit code) of a captured run."""
    entry = FIXTURES[key]
    folder = DATA / key.split("/")[0]
    files = entry["files"]
    out = (folder / files["stdout"]).read_text()
    err = (folder / files["stderr"]).read_text() if "stderr" in files else ""
    report = (folder / files["report"]).read_bytes() if "report" in files else None
    return out + "\n" + err, report, entry["exit_code"]


def tally(report: TestReport) -> dict[str, int]:
    return {s: n for s in (PASSED, FAILED, ERROR, SKIPPED) if (n := sum(v == s for v in report.statuses.values()))}


# (fixture, parser, statuses by kind, collection errors, consistent with its exit code)
CASES = [
    ("go/go-test-json-verkit-001-fail", "go", {PASSED: 49, FAILED: 8}, [], True),
    ("go/go-test-json-verkit-001-pass", "go", {PASSED: 57}, [], True),
    ("go/go-test-json-verkit-002-fail", "go", {PASSED: 99, FAILED: 10}, [], True),
    ("go/go-test-json-verkit-002-pass", "go", {PASSED: 109}, [], True),
    ("go/go-test-json-build-failure", "go", {PASSED: 57}, ["example.org/verkit/constraint"], True),
    ("go/go-test-json-panic", "go", {PASSED: 57, FAILED: 1}, [], True),
    ("go/go-test-json-forged-lines", "go", {PASSED: 49, FAILED: 9}, [], False),
    ("go/go-test-v-verkit-001-fail", "go", {}, [], False),  # -v text is not -json: nothing found
    ("vitest/vitest-timespan-001-fail", "vitest", {PASSED: 43, FAILED: 8}, [], True),
    ("vitest/vitest-timespan-001-pass", "vitest", {PASSED: 51}, [], True),
    ("vitest/vitest-timespan-002-fail", "vitest", {PASSED: 78, FAILED: 10}, [], True),
    ("vitest/vitest-timespan-002-pass", "vitest", {PASSED: 88}, [], True),
    ("vitest/vitest-test-syntax-error", "vitest", {PASSED: 88}, ["test/zz-broken.spec.ts"], True),
    (
        "vitest/vitest-source-syntax-error",
        "vitest",
        {},
        ["src/parse.test.ts", "src/__tests__/long.test.ts", "test/format.spec.ts"],
        True,
    ),
    ("vitest/vitest-type-error-passes", "vitest", {PASSED: 89}, [], True),
    ("cargo/cargo-test-linefold-001-fail", "cargo", {PASSED: 19, FAILED: 5}, [], True),
    ("cargo/cargo-test-linefold-001-pass", "cargo", {PASSED: 24}, [], True),
    ("cargo/cargo-test-linefold-002-fail", "cargo", {PASSED: 42, FAILED: 7}, [], True),
    ("cargo/cargo-test-linefold-002-pass", "cargo", {PASSED: 49}, [], True),
    ("cargo/cargo-test-compile-error", "cargo", {}, ["could not compile linefold"], True),
    ("cargo/cargo-test-compile-error-test-file", "cargo", {}, ["could not compile linefold"], True),
    ("cargo/cargo-test-fail-fast", "cargo", {PASSED: 11, FAILED: 1}, [], True),  # the later targets: missing
    ("cargo/cargo-test-separate-streams", "cargo", {}, [], False),  # Running lines after the tests: no target
    ("cargo/cargo-test-format-json-unstable", "cargo", {}, [], False),
    ("junit/junit-vitest-timespan-001-fail", "junit", {PASSED: 43, FAILED: 8}, [], True),
    ("junit/junit-vitest-timespan-001-pass", "junit", {PASSED: 51}, [], True),
    ("junit/junit-vitest-source-syntax-error", "junit", {FAILED: 3}, [], True),
]


@pytest.mark.parametrize("key,parser,expected,errors,consistent", CASES, ids=[c[0] for c in CASES])
def test_real_outputs_give_per_test_statuses_that_agree_with_the_exit_code(key, parser, expected, errors, consistent):
    output, report_bytes, code = fixture(key)
    report = get_parser(parser).parse(output, report_bytes)
    assert tally(report) == expected
    assert report.collection_errors == errors
    assert report.consistent_with(code)[0] is consistent, report.consistent_with(code)
    if not consistent:
        return
    # the exit code of the other outcome contradicts the results
    other = 0 if code else {"go": 1, "vitest": 1, "cargo": 101, "junit": 1}[parser]
    assert not report.consistent_with(other)[0]


@pytest.mark.parametrize("key", [k for k, e in FIXTURES.items() if e.get("parsed_by_build_script")])
def test_ids_are_the_ones_the_build_script_measured_the_tasks_with(key):
    """The specs' FAIL_TO_PASS / PASS_TO_PASS come from scripts/build_polyglot_repos.py's own small
    readers: the grading parsers give every test the same id and status (except where a reader is
    fooled: the forged go run)."""
    import build_polyglot_repos as build

    folder = key.split("/")[0]
    output, report_bytes, _ = fixture(key)
    entry = FIXTURES[key]
    out = (DATA / folder / entry["files"]["stdout"]).read_text()
    err = (DATA / folder / entry["files"]["stderr"]).read_text() if "stderr" in entry["files"] else ""
    reference = {"go": build.parse_go, "vitest": build.parse_vitest, "cargo": build.parse_cargo}[folder](
        out, err, report_bytes.decode() if report_bytes else None
    )
    ours = get_parser(folder).parse(output, report_bytes).statuses
    as_ours = {k: {"passed": PASSED, "failed": FAILED, "skipped": SKIPPED}[v] for k, v in reference.items()}
    if key.endswith("forged-lines"):
        forged = "example.org/verkit/semver::TestCompareNumericIdentifiers"
        assert as_ours[forged] == PASSED and ours[forged] == FAILED  # the last event would have won
        as_ours[forged] = FAILED
    assert ours == as_ours


def test_every_task_of_the_polyglot_suite_lists_ids_its_parser_reports():
    """Each spec's ids are among the statuses the parser reads from that task's gold run."""
    runs = {
        "verkit-001": "go/go-test-json-verkit-001-pass",
        "verkit-002": "go/go-test-json-verkit-002-pass",
        "timespan-001": "vitest/vitest-timespan-001-pass",
        "timespan-002": "vitest/vitest-timespan-002-pass",
        "linefold-001": "cargo/cargo-test-linefold-001-pass",
        "linefold-002": "cargo/cargo-test-linefold-002-pass",
    }
    for task_id, key in runs.items():
        task = load_task(ROOT / "tasks" / "polyglot" / f"{task_id}.yaml")
        output, report_bytes, code = fixture(key)
        report = parse_run(task.hidden_tests.parsers(), output, lambda path, report_bytes=report_bytes: report_bytes)
        assert {t: report.statuses.get(t) for t in task.fail_to_pass + task.pass_to_pass} == dict.fromkeys(
            task.fail_to_pass + task.pass_to_pass, PASSED
        )
        assert report.consistent_with(code) == (True, "")


# ------------------------------------------------------------------------------------ go: forged events


def _event(action, test=None, package="example.org/m/p", output=None):
    event = {"Action": action, "Package": package}
    if test:
        event["Test"] = test
    if output is not None:
        event["Output"] = output
    return json.dumps(event)


def test_go_a_failure_is_never_overwritten_and_a_second_verdict_is_a_forgery():
    lines = [
        _event("run", "TestA"),
        _event("output", "TestA", output="    a_test.go:3: boom\n"),
        _event("fail", "TestA"),
        _event("pass", "TestA"),  # printed "--- PASS: TestA" after the real failure
        _event("run", "TestB"),
        _event("pass", "TestB"),
        _event("fail"),
    ]
    report = get_parser("go").parse("\n".join(lines))
    assert report.statuses == {"example.org/m/p::TestA": FAILED, "example.org/m/p::TestB": PASSED}
    assert report.messages["example.org/m/p::TestA"] == "    a_test.go:3: boom"
    ok, why = report.consistent_with(1)
    assert not ok and "more than once" in why
    early = [_event("pass", "TestA"), _event("fail", "TestA"), _event("fail")]  # a forged pass before the real fail
    assert get_parser("go").parse("\n".join(early)).statuses == {"example.org/m/p::TestA": FAILED}


def test_go_passes_of_a_package_that_failed_with_no_failing_test_are_not_trusted():
    """The binary printed passes, then died (os.Exit(1) in the code, a crash in TestMain): the
    package failed but no test did."""
    lines = [
        _event("run", "TestA"),
        _event("pass", "TestA"),
        _event("fail"),
        _event("run", "TestC", package="example.org/m/q"),
        _event("pass", "TestC", package="example.org/m/q"),
        _event("pass", package="example.org/m/q"),
    ]
    report = get_parser("go").parse("\n".join(lines))
    assert report.statuses == {"example.org/m/p::TestA": ERROR, "example.org/m/q::TestC": PASSED}
    assert report.collection_errors == ["example.org/m/p"]
    assert report.consistent_with(1) == (True, "")
    assert not report.consistent_with(0)[0]


def test_go_exit_codes_outside_go_tests_own_are_not_trusted():
    output, _, _ = fixture("go/go-test-json-verkit-001-pass")
    report = get_parser("go").parse(output)
    assert report.consistent_with(0) == (True, "")
    for code in (137, 143, 3):
        ok, why = report.consistent_with(code)
        assert not ok and f"exit code {code}" in why


# ------------------------------------------------------------------------------------ vitest and jest: two channels


def _vitest(key="vitest/vitest-timespan-001-fail"):
    output, report_bytes, code = fixture(key)
    return output, json.loads(report_bytes), code


def test_vitest_a_rewritten_report_contradicts_the_verbose_output_and_the_summary():
    output, data, code = _vitest()
    for file in data["testResults"]:  # what a process that outlived vitest could write into the report
        for result in file["assertionResults"]:
            result["status"] = "passed"
    forged = json.dumps(data).encode()
    report = get_parser("vitest").parse(output, forged)
    assert set(report.statuses.values()) == {PASSED}
    ok, why = report.consistent_with(0)
    assert not ok and "verbose output disagree on 8 test(s)" in why
    graded = get_parser("vitest").parse(output, forged, exit_code=0)  # as grading reads it: suspected tampering
    assert not graded.consistent and "verbose output disagree" in graded.disagreement
    assert graded.channels == {
        "structured": "disagrees",
        "summary": "disagrees",
        "verbose": "disagrees",
        "exit_code": "0",
    }
    data["numPassedTests"], data["numFailedTests"] = 51, 0
    ok, why = (
        get_parser("vitest")
        .parse("\n".join(line for line in output.splitlines() if "×" not in line), json.dumps(data).encode())
        .consistent_with(0)
    )
    assert not ok and "summary line says 8" in why


def test_vitest_ids_come_from_the_report_titles_and_a_duration_in_a_title_is_not_one():
    output, report_bytes, code = fixture("vitest/vitest-timespan-001-pass")
    report = get_parser("vitest").parse(output, report_bytes)
    assert report.statuses["src/parse.test.ts::parse > single terms > 250ms"] == PASSED
    assert report.channels == {"structured": "found", "summary": "found", "verbose": "found"}
    graded = get_parser("vitest").parse(output, report_bytes, exit_code=code)
    assert graded.consistent and not graded.disagreement
    assert graded.channels == {"structured": "agrees", "summary": "agrees", "verbose": "agrees", "exit_code": str(code)}
    slow = output.replace("parse > single terms > 1ms\n", "parse > single terms > 1ms 305ms\n")
    assert get_parser("vitest").parse(slow, report_bytes).consistent_with(0) == (True, "")


def test_vitest_without_its_json_report_reads_the_text_but_never_grades_by_it():
    output, _, code = fixture("vitest/vitest-timespan-001-fail")
    report = get_parser("vitest").parse(output, None)
    assert tally(report) == {PASSED: 43, FAILED: 8} and report.count("failed") == 8
    assert not report.found_summary and "no vitest JSON report" in report.missing_hint
    ok, why = report.consistent_with(code)
    assert not ok and "text output alone" in why
    graded = get_parser("vitest").parse(output, None, exit_code=code)
    assert graded.channels["structured"] == "missing" and "text output alone" in graded.disagreement
    garbage = get_parser("vitest").parse(output, b"{not json")
    assert not garbage.statuses and not garbage.consistent_with(1)[0]


CANARIES = {"src/parse.test.ts": ("checks 1a2b3c", "checks 4d5e6f"), "test/format.spec.ts": ("checks 77", "checks 88")}


def _with_canaries(output: str, data: dict, canary_status: dict[str, str]) -> tuple[str, bytes]:
    """A captured Vitest run (output, JSON report) as it reads with grading's canaries in it, each
    canary title reported with `canary_status[title]` ("passed" or "failed") in every channel."""
    lines, counts = [], {"passed": 0, "failed": 0}
    for file in data["testResults"]:
        path = file["name"].removeprefix("/repo/")
        for title in CANARIES[path]:
            status = canary_status[title]
            if status == "absent":
                continue
            file["assertionResults"].append({"ancestorTitles": [], "title": title, "status": status})
            if status == "failed":
                file["status"] = "failed"
                file["assertionResults"][-1]["failureMessages"] = ["AssertionError: expected 10001 to be 10002"]
            counts[status] += 1
            lines.append(f" {'✓' if status == 'passed' else '×'} {path} > {title}")
    data["numPassedTests"] += counts["passed"]
    data["numFailedTests"] += counts["failed"]
    passed, failed = data["numPassedTests"], data["numFailedTests"]
    summary = (
        f"      Tests  {failed} failed | {passed} passed ({passed + failed})"
        if failed
        else f"      Tests  {passed} passed ({passed})"
    )
    text = output.replace("      Tests  51 passed (51)", summary).replace(
        " Test Files", "\n".join(lines) + "\n Test Files", 1
    )
    return text, json.dumps(data).encode()


def test_vitest_grading_canaries_are_checked_then_left_out_of_the_results():
    output, report_bytes, code = fixture("vitest/vitest-timespan-001-pass")
    honest = get_parser("vitest").parse(output, report_bytes, exit_code=code)
    setup = RunSetup(report_path="x", canaries=dict(CANARIES))
    vitest = get_parser("vitest")
    ran = {"checks 1a2b3c": "failed", "checks 4d5e6f": "passed", "checks 77": "failed", "checks 88": "passed"}

    # an honest run: every canary as it must be, exit 1 (the must-fail ones): graded as the run without them
    text, data = _with_canaries(output, json.loads(report_bytes), ran)
    report = vitest.parse(text, data, setup=setup, exit_code=1)
    assert report.consistent and not report.disagreement, report.why
    assert report.statuses == honest.statuses and report.counts == honest.counts
    assert report.channels == {**honest.channels, "exit_code": "1"} and not report.messages
    # a real failure with them: still exit 1, still consistent, the failure stays
    failing = json.loads(report_bytes)
    failing["testResults"][0]["assertionResults"][0]["status"] = "failed"
    failing["numPassedTests"], failing["numFailedTests"] = 50, 1
    text1, data1 = _with_canaries(
        output.replace(
            " ✓ src/parse.test.ts > parse > single terms > 1ms", " × src/parse.test.ts > parse > single terms > 1ms"
        ).replace("      Tests  51 passed (51)", "      Tests  1 failed | 50 passed (51)"),
        failing,
        ran,
    )
    report = vitest.parse(
        text1.replace("      Tests  1 failed | 50 passed (51)", "      Tests  3 failed | 52 passed (55)"),
        data1,
        setup=setup,
        exit_code=1,
    )
    assert report.consistent, report.why
    assert report.failing() == ["src/parse.test.ts::parse > single terms > 1ms"]

    # rows 21 and 25 of docs/grading.md: every failure reported passed (the must-fail canaries too), exit 0
    text, data = _with_canaries(output, json.loads(report_bytes), dict.fromkeys(ran, "passed"))
    forged = vitest.parse(text, data, setup=setup, exit_code=0)
    assert not forged.consistent and "canary that must fail was reported PASSED" in forged.disagreement
    assert "src/parse.test.ts" in forged.disagreement and "test/format.spec.ts" in forged.disagreement
    assert "exit code 0 although grading's must-fail canary ran" in forged.disagreement
    assert forged.statuses == honest.statuses  # the canaries are never results

    # a rewrite that drops the canaries of a file whose other tests it reports
    text, data = _with_canaries(output, json.loads(report_bytes), {**ran, "checks 77": "absent", "checks 88": "absent"})
    report = vitest.parse(text, data, setup=setup, exit_code=1)
    assert not report.consistent and "test/format.spec.ts: the canary that must fail is missing" in report.disagreement

    # the canaries' exit code 1 does not hide an error thrown outside the tests (Vitest's "Errors" line)
    text, data = _with_canaries(output, json.loads(report_bytes), ran)
    errors = vitest.parse(
        text.replace(" Test Files", "      Errors  1 error\n Test Files", 1), data, setup=setup, exit_code=1
    )
    assert not errors.consistent and "exit code 1" in errors.why

    # a file that did not load: its canaries are missing with its tests, which is not a forgery
    broken = json.loads(report_bytes)
    broken["testResults"][1].update(status="failed", message="SyntaxError: x", assertionResults=[])
    broken["numPassedTests"] = 38
    text = "\n".join(line for line in output.splitlines() if "test/format.spec.ts >" not in line)
    text, data = _with_canaries(text, broken, {**ran, "checks 77": "absent", "checks 88": "absent"})
    report = vitest.parse(text, data, setup=setup, exit_code=1)
    assert report.collection_errors == ["test/format.spec.ts"] and "canary" not in report.disagreement
    assert report.consistent, report.why


def test_vitest_1_canaries_under_the_files_empty_title_are_found():
    """Vitest 1.x lists a file's top-level tests under the file's own suite, titled "" (ids
    `<file>:: > <title>`, as measured on unjs/defu's tasks): the canaries are found there too."""
    output, report_bytes, code = fixture("vitest/vitest-timespan-001-pass")
    data = json.loads(report_bytes)
    text, forged = _with_canaries(
        output,
        data,
        {"checks 1a2b3c": "failed", "checks 4d5e6f": "passed", "checks 77": "failed", "checks 88": "passed"},
    )
    data = json.loads(forged)
    for file in data["testResults"]:
        for result in file["assertionResults"]:
            result["ancestorTitles"] = ["", *result["ancestorTitles"]]
    text = text.replace("✓ src/parse.test.ts > ", "✓ src/parse.test.ts >  > ").replace(
        "× src/parse.test.ts > ", "× src/parse.test.ts >  > "
    )
    text = text.replace("✓ test/format.spec.ts > ", "✓ test/format.spec.ts >  > ").replace(
        "× test/format.spec.ts > ", "× test/format.spec.ts >  > "
    )
    report = get_parser("vitest").parse(
        text, json.dumps(data).encode(), setup=RunSetup(canaries=dict(CANARIES)), exit_code=1
    )
    assert report.consistent and not report.disagreement, report.why
    assert len(report.statuses) == 51 and not any("checks" in t for t in report.statuses)


def test_canary_sources_name_their_tests_as_the_parsers_read_them():
    for name in ("vitest", "jest"):
        source = get_parser(name).canary("src/a.test.ts", 'checks "x"', "checks y", "0123456789abcdef")
        assert source is not None and '"checks \\"x\\""' in source and '"checks y"' in source
        assert source.startswith("\n;")
    assert "import * as wl_0000000000000000 from 'vitest'" in (
        get_parser("vitest").canary("a.test.ts", "a", "b", "0" * 16) or ""
    )
    assert get_parser("vitest").canary("src/a.test.cjs", "a", "b", "0" * 16) is None  # no import in CommonJS
    assert get_parser("vitest").canary("src/helpers.ts", "a", "b", "0" * 16) is None  # not a test module
    assert get_parser("pytest").canary("tests/test_a.py", "a", "b", "0" * 16) is None


@pytest.mark.parametrize(
    "name,code,expected,errors",
    [
        ("jest-fail", 1, {PASSED: 1, FAILED: 3, SKIPPED: 2}, []),
        ("jest-pass", 0, {PASSED: 4, SKIPPED: 2}, []),
        ("jest-syntax-error", 1, {PASSED: 4, SKIPPED: 2}, ["test/broken.test.js"]),
    ],
)
def test_jest_reports(name, code, expected, errors):
    folder = DATA / "jest"
    output = (folder / f"{name}.stderr.txt").read_text()
    report = get_parser("jest").parse(output, (folder / f"{name}.json").read_bytes())
    assert tally(report) == expected and report.collection_errors == errors
    assert report.consistent_with(code) == (True, "")
    assert report.channels == {"structured": "found", "summary": "found"}
    assert get_parser("jest").parse(output, (folder / f"{name}.json").read_bytes(), exit_code=code).channels == {
        "structured": "agrees",
        "summary": "agrees",
        "exit_code": str(code),
    }
    assert "test/weeks.test.js::ageInWeeks > counts whole weeks" in report.statuses
    if name == "jest-fail":
        assert report.messages["test/days.test.js::ageInDays > after 10 days: 10"].startswith("Error: expect(received)")
        assert (
            not get_parser("jest")
            .parse(output.replace("3 failed", "2 failed"), (folder / f"{name}.json").read_bytes())
            .consistent_with(code)[0]
        )


# ------------------------------------------------------------------------------------ cargo: one channel


def test_cargo_printed_test_lines_do_not_add_up_with_libtests_totals():
    output, _, code = fixture("cargo/cargo-test-linefold-001-fail")
    # the code under test writes straight to stdout during tests/wrap.rs (not through print!)
    forged = output.replace(
        "test empty_and_blank_text_have_no_lines ... ok",
        "test empty_and_blank_text_have_no_lines ... ok\ntest a_line_may_fill_the_width_exactly ... ok",
        1,
    )
    report = get_parser("cargo").parse(forged)
    assert report.statuses["tests/wrap.rs::a_line_may_fill_the_width_exactly"] == FAILED
    ok, why = report.consistent_with(code)
    assert not ok and "do not match the test lines" in why


def test_cargo_the_final_failures_list_wins_and_a_binary_that_dies_is_a_collection_error():
    output, _, code = fixture("cargo/cargo-test-linefold-001-fail")
    relabelled = output.replace(
        "test single_letters_at_width_three ... FAILED", "test single_letters_at_width_three ... ok"
    )
    report = get_parser("cargo").parse(relabelled)
    assert report.statuses["tests/wrap.rs::single_letters_at_width_three"] == FAILED  # named in `failures:`
    assert not report.consistent_with(code)[0]  # and the totals no longer add up
    died = output.split("test result: FAILED. 7 passed; 4 failed")[0]  # the wrap binary ended mid-way
    report = get_parser("cargo").parse(died)
    assert "tests/wrap.rs (the test binary ended before its results)" in report.collection_errors
    assert report.consistent_with(101) == (True, "") and not report.consistent_with(137)[0]


def test_cargo_ids_and_the_single_channel():
    output, _, _ = fixture("cargo/cargo-test-linefold-002-pass")
    report = get_parser("cargo").parse(output)
    assert report.statuses["src/lib.rs::wrap::tests::options_builder"] == PASSED
    assert report.statuses["tests/unicode.rs::break_words_with_emoji"] == PASSED
    assert any(t.startswith("doc:linefold::src/lib.rs - (line ") for t in report.statuses)
    assert report.channels["structured"].startswith("unavailable: cargo test writes no structured report")
    graded = get_parser("cargo").parse(output, exit_code=0)
    assert graded.consistent and graded.channels["summary"] == "agrees" and graded.channels["exit_code"] == "0"
    assert report.counts == {"passed": 49 + 1, "failed": 0, "skipped": 0} or report.counts["failed"] == 0
    fail, _, _ = fixture("cargo/cargo-test-linefold-002-fail")
    messages = get_parser("cargo").parse(fail).messages
    assert any("char boundary" in m for m in messages.values()), messages


# ------------------------------------------------------------------------------------ junit


def test_junit_concatenated_documents_and_refusals():
    xml = (DATA / "junit" / "junit-libtest-linefold-001-fail.xml").read_bytes()
    report = get_parser("junit").parse("", xml)
    assert tally(report) == {PASSED: 19, FAILED: 5}  # four documents, one per test binary
    assert report.consistent_with(101) == (True, "") and report.consistent_with(1) == (True, "")
    assert not report.consistent_with(0)[0]
    assert report.statuses["integration::fill_uses_the_whole_width"] == FAILED
    evil = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><testsuite><testcase name="t"/></testsuite>'
    refused = get_parser("junit").parse("", evil)
    assert not refused.statuses and not refused.consistent_with(0)[0]
    lying = xml.replace(b'tests="7"', b'tests="8"', 1)
    assert not get_parser("junit").parse("", lying).consistent_with(101)[0]
    surefire = (
        b'<testsuite name="s" tests="3" failures="1" errors="1" skipped="0">'
        b'<testcase classname="a.B" name="ok"/><testcase classname="a.B" name="bad"><failure message="x&#10;y"/>'
        b'</testcase><testcase classname="a.B" name="err"><error message="npe"/></testcase></testsuite>'
    )
    report = get_parser("junit").parse("", surefire)
    assert report.statuses == {"a.B::ok": PASSED, "a.B::bad": FAILED, "a.B::err": ERROR}
    assert report.messages == {"a.B::bad": "x", "a.B::err": "npe"} and report.consistent_with(1) == (True, "")
    assert not get_parser("junit").parse("", None).found_summary
    graded = get_parser("junit").parse("", surefire, exit_code=1)
    assert graded.consistent and graded.channels["structured"] == "agrees"
    assert graded.channels["summary"].startswith("unavailable: ")  # one channel: the JUnit report


# ------------------------------------------------------------------------------------ several parsers in one task


def test_a_task_naming_several_parsers_joins_their_reports_and_protects_the_union(tmp_path):
    go_out, _, _ = fixture("go/go-test-json-verkit-001-fail")
    vt_out, vt_report, _ = fixture("vitest/vitest-timespan-001-pass")
    parsers = [get_parser("go"), get_parser("vitest")]
    report = parse_run(
        parsers, go_out + "\n" + vt_out, lambda path: vt_report if path.endswith("vitest.json") else None
    )
    assert tally(report) == {PASSED: 49 + 51, FAILED: 8}
    assert report.consistent_with(1) == (True, "") and not report.consistent_with(0)[0]
    assert report.channels == {
        "go: summary": "found",
        "go: structured": get_parser("go").parse("").channels["structured"],
        "vitest: structured": "found",
        "vitest: summary": "found",
        "vitest: verbose": "found",
    }
    graded = parse_run(
        parsers,
        go_out + "\n" + vt_out,
        lambda path: vt_report if path.endswith("vitest.json") else None,
        setups=[p.run_setup(None, "t") for p in parsers],
        exit_code=1,
    )
    assert graded.consistent and graded.channels["vitest: structured"] == "agrees"
    assert graded.channels["go: structured"].startswith("unavailable: ") and graded.channels["exit_code"] == "1"
    assert not parse_run(parsers, go_out + "\n" + vt_out, lambda path: None, exit_code=1).consistent  # no vitest report
    command = (
        "go test -json -count=1 ./...; a=$?; npx vitest run --reporter=json --outputFile.json="
        f"{REPORTS_DIR}/vitest.json; exit $((a | $?))"
    )
    base = {"id": "t", "repo": "r", "base_commit": "c", "problem_statement": "p", "FAIL_TO_PASS": ["a"]}
    task = Task.model_validate({**base, "hidden_tests": {"command": command, "parser": ["go", "vitest"]}})
    protected = task.protected()
    assert protected[: len(get_parser("go").protected_paths)] == list(get_parser("go").protected_paths)
    assert set(get_parser("vitest").protected_paths) <= set(protected) and len(protected) == len(set(protected))
    spec = tmp_path / "t.yaml"
    spec.write_text(json.dumps({**base, "hidden_tests": {"command": "npx vitest run", "parser": "vitest"}}))
    with pytest.raises(TaskSpecError, match="reads its results from /tmp/wholeloop-grade/reports/vitest.json"):
        load_task(spec)
    spec.write_text(json.dumps({**base, "hidden_tests": {"command": "go test", "parser": ["go", "go"]}}))
    with pytest.raises(TaskSpecError, match="named twice"):
        load_task(spec)
    merged = merge([TestReport(statuses={"x": PASSED}, counts={"passed": 2}, listed_passed=1)], ["pytest"])
    assert not merged.consistent_with(0)[0]  # a framework's own contradiction stays one in the union


# ------------------------------------------------------------------------------------ paths


PROTECTED = {  # parser: (paths it protects, paths it leaves to the agent)
    "go": (
        [
            "semver/compare_test.go",
            "x_test.go",
            "semver/testdata/v.txt",
            "go.mod",
            "sub/go.mod",
            "go.sum",
            "go.work",
            "vendor/modules.txt",
            "vendor/example.org/check/check.go",
        ],
        ["semver/compare.go", "cmd/vermax/main.go", "README.md", "testing/helper.go"],
    ),
    "vitest": (
        [
            "src/parse.test.ts",
            "test/format.spec.ts",
            "src/__tests__/long.test.ts",
            "src/__mocks__/clock.ts",
            "vitest.config.ts",
            "vite.config.mts",
            ".npmrc",
            "package-lock.json",
            "src/__snapshots__/a.snap",
        ],
        ["src/parse.ts", "package.json", "tsconfig.json", "README.md"],
    ),
    "jest": (
        [
            "test/days.test.js",
            "src/__mocks__/clock.js",
            "__mocks__/fs.js",
            "jest.config.js",
            "babel.config.js",
            ".babelrc",
            "jest.setup.js",
        ],
        ["src/age.js", "src/clock.js", "tsconfig.json", "package.json"],  # package.json: its keys, see below
    ),
    "cargo": (
        [
            "tests/wrap.rs",
            "tests/common/mod.rs",
            "crates/a/tests/x.rs",
            "Cargo.toml",
            "crates/a/Cargo.toml",
            "Cargo.lock",
            "build.rs",
            "crates/a/build.rs",
            ".cargo/config.toml",
            "src/wrap/tests.rs",
        ],
        ["src/wrap.rs", "src/lib.rs", "benches/b.rs", "examples/e.rs"],
    ),
    "junit": (
        [
            "src/test/java/a/BTest.java",
            "core/src/test/resources/x.json",
            "pom.xml",
            "core/build.gradle.kts",
            "gradle/wrapper/gradle-wrapper.properties",
            "gradlew",
            ".mvn/jvm.config",
            "buildSrc/src/main/kotlin/A.kt",
        ],
        ["src/main/java/a/B.java", "README.md"],
    ),
}


@pytest.mark.parametrize("name", sorted(PROTECTED))
def test_each_parser_protects_its_tests_and_runner_config_and_nothing_a_fix_needs(name):
    parser = get_parser(name)
    protected, free = PROTECTED[name]
    assert [p for p in protected if not is_protected_path(parser, p)] == []
    assert [p for p in free if is_protected_path(parser, p)] == []
    assert set(parser.test_paths) <= set(parser.protected_paths)
    assert all(parser.is_test_path(p) for p in protected if p.endswith((".test.ts", "_test.go", "Test.java")))
    assert not any(parser.is_test_path(p) for p in ("go.mod", "Cargo.toml", "pom.xml", "vitest.config.ts"))


@pytest.mark.parametrize("name", sorted(PROTECTED))
def test_grading_strips_each_parsers_protected_paths_from_a_patch_and_records_each(name):
    """The parsers' paths go through grading's own stripping (harness.grading.patching.decide,
    from the patch text): every protected path of the table is stripped as "protected", and
    recorded; the paths a fix needs are kept."""
    from harness.grading.patching import decide, parse_patch

    protected, free = PROTECTED[name]
    patch = "".join(
        f"diff --git a/{p} b/{p}\nnew file mode 100644\n--- /dev/null\n+++ b/{p}\n@@ -0,0 +1 @@\n+x\n"
        for p in protected + free
    )
    command = f"run --out {get_parser(name).results_file}" if get_parser(name).results_file else "run"
    task = Task.model_validate(
        {
            "id": "t",
            "repo": "r",
            "base_commit": "c",
            "problem_statement": "p",
            "FAIL_TO_PASS": ["a"],
            "hidden_tests": {"command": command, "parser": name},
        }
    )
    sections, _ = parse_patch(patch)
    decision = decide(task, sections)
    assert [(s.path, s.reason) for s in decision.stripped] == [(p, "protected") for p in protected]
    assert [s.new for s in decision.kept] == free and decision.reverted == protected


def test_glob_matching_is_gits_own(tmp_path):
    """mining and `tasks check` classify with glob_match, grading strips with the patterns of
    harness.grading.patching (tested above): glob_match must agree with git's own `:(glob)`
    pathspecs, on every parser's patterns and on untracked files too."""
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    paths = sorted(
        {p for name in PROTECTED for group in PROTECTED[name] for p in group}
        | {"a.spec/x", "tests", "we ird/[x].txt", "deep/a/b/vendor/c.go", "src/test.ts", "x.test"}
    )
    for path in paths:
        target = repo / path
        if path == "tests":
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("x\n")
    patterns = sorted(
        {p for name in PARSERS.names() for p in get_parser(name).protected_paths}
        | {"*.spec", "src/*", "**/tests", "we ird/[x].txt", "tests", "a"}
    )
    present = [p for p in paths if (repo / p).is_file()]
    for pattern in patterns:
        listed = subprocess.run(
            ["git", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", f":(glob){pattern}"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        by_git = sorted(e[3:] for e in listed.split("\0") if e)
        assert by_git == sorted(p for p in present if glob_match(pattern, p)), pattern


def test_the_parsers_constants_are_the_sandboxs_and_gradings():
    from harness.grading.patching import WORK
    from sandbox import REPO_DIR

    assert REPO_ROOT == REPO_DIR and REPORTS_DIR.startswith(WORK + "/")
    for name in PARSERS.names():
        parser = get_parser(name)
        assert parser.name == name
        assert parser.results_file is None or parser.results_file.startswith(REPORTS_DIR + "/")
        assert all(isinstance(p, str) for p in (*parser.protected_paths, *parser.test_paths, *parser.inline_tests))


def test_what_mining_asks_of_each_parser():
    """The test-file rules, configuration files, commands and id-to-file mapping mining and
    `tasks check` use, per framework."""
    go, vitest, jest, cargo, junit = (get_parser(n) for n in ("go", "vitest", "jest", "cargo", "junit"))
    assert (
        go.test_command(["semver/a_test.go", "semver/testdata/x", "b_test.go"])
        == "go test -json -count=1 -vet=off . ./semver"
    )
    assert go.test_command(None) == go.test_command(["semver/testdata/x"]) == "go test -json -count=1 -vet=off ./..."
    assert go.is_test_path("semver/testdata/x") and not go.is_test_module("semver/testdata/x")
    assert "go.mod" in go.config_files and go.test_file("example.org/m/p::TestA") is None
    assert vitest.test_command(["src/a.test.ts", "src/__mocks__/m.ts"]).endswith(
        f"--outputFile.json={REPORTS_DIR}/vitest.json src/a.test.ts"
    )
    assert vitest.test_command(None).endswith("vitest.json")
    assert vitest.is_test_module("src/__tests__/long.test.ts") and not vitest.is_test_module("src/__mocks__/m.ts")
    assert vitest.test_file("src/parse.test.ts::parse > fractions > 1.5h") == "src/parse.test.ts"
    assert "vitest.config.mts" in vitest.config_files and "package.json" not in vitest.config_files
    assert jest.test_command(["test/x.test.js"]).endswith("--runTestsByPath test/x.test.js")
    assert "package.json" in jest.config_files and "babel.config.js" in jest.config_files
    assert (
        cargo.test_command(["tests/wrap.rs", "tests/fill.rs"])
        == "cargo test --offline --no-fail-fast --test fill --test wrap 2>&1"
    )
    assert (
        cargo.test_command(["tests/common/mod.rs"])
        == cargo.test_command(None)
        == "cargo test --offline --no-fail-fast 2>&1"
    )
    assert cargo.is_test_module("tests/wrap.rs") and not cargo.is_test_module("tests/common/mod.rs")
    assert (
        cargo.test_file("tests/wrap.rs::a_line") == "tests/wrap.rs"
        and cargo.test_file("doc:linefold::src/lib.rs - (line 3)") is None
    )
    assert "build.rs" in cargo.config_files
    assert junit.test_command(["src/test/java/a/BTest.java", "src/test/resources/x.json"]).startswith(
        "mvn -q -o test -Dtest=BTest "
    )
    assert f"> {REPORTS_DIR}/junit.xml" in junit.test_command(None) and "pom.xml" in junit.config_files


# ------------------------------------------------------------------------------------ rust unit tests in source files


RUST = r"""//! A module with a tricky body.

pub fn f(s: &str) -> &str {
    let _brace = "}"; let _raw = r#"} { "#; let _c = '}'; let _lt: &'static str = "x";
    /* a comment with } and /* nested { */ */
    s // } after a line comment
}

#[cfg(test)]
#[allow(unused)]
mod tests {
    use super::*;

    #[test]
    fn keeps() {
        assert_eq!(f("a"), "a"); // {
        let _ = b"}{"; let _ = '\'';
    }
}

#[cfg(test)]
mod more { #[test] fn two() { assert!(true) } }
"""


LIB = 'mod a;\n#[path = "elsewhere/b_impl.rs"]\nmod b;\n\n#[cfg(test)]\nmod tests;\n'
SOURCES = {
    "src/lib.rs": LIB,
    "src/a.rs": RUST,
    "src/elsewhere/b_impl.rs": "pub fn g() {}\nmod inner;\n",
    "src/elsewhere/inner.rs": "#[cfg(test)]\nmod t { #[test] fn x() {} }\n",
    "src/tests.rs": "use super::*;\n#[test]\nfn whole() {}\n",
    "tests/it.rs": "#[test]\nfn it() {}\n",
    "build.rs": "fn main() {}\n",
}


def _tree(files: dict[str, str]) -> dict[str, bytes]:
    return {path: text.encode() for path, text in files.items()}


def test_the_module_tree_is_read_as_rustc_reads_it():
    """Comments, strings and chars are tokens of tree-sitter-rust's, never items; `mod x;` resolves
    to x.rs / x/mod.rs beside a mod-rs file, `#[path]` relative to the file's folder, and a file
    reached through `#[path]` is a mod-rs file (its `mod inner;` is beside it)."""
    files = _tree(SOURCES)
    assert crate_roots(files) == ["build.rs", "src/lib.rs", "tests/it.rs"]
    tree = module_tree(files, crate_roots(files))
    found = {k[1:]: (m.file, m.test, m.inline, m.target) for k, m in tree.items() if k[0] == "src/lib.rs"}
    assert found == {
        ("a",): ("src/lib.rs", False, False, "src/a.rs"),
        ("a", "tests"): ("src/a.rs", True, True, None),
        ("a", "more"): ("src/a.rs", True, True, None),
        ("b",): ("src/lib.rs", False, False, "src/elsewhere/b_impl.rs"),
        ("b", "inner"): ("src/elsewhere/b_impl.rs", False, False, "src/elsewhere/inner.rs"),
        ("b", "inner", "t"): ("src/elsewhere/inner.rs", True, True, None),
        ("tests",): ("src/lib.rs", True, False, "src/tests.rs"),
    }
    item = tree[("src/lib.rs", "a", "tests")]
    assert files["src/a.rs"][item.start : item.end].decode().startswith("#[cfg(test)]\n#[allow(unused)]\nmod tests {")


def test_putting_back_keeps_the_fix_and_finds_the_tests_wherever_the_patch_put_them():
    files = _tree(SOURCES)
    fixed = RUST.replace("s // } after", "s.trim() // } after")
    weakened = fixed.replace('assert_eq!(f("a"), "a");', "")
    assert put_back_tests(files, {**files, "src/a.rs": fixed.encode()}) == ({}, [])  # the fix alone: nothing
    writes, done = put_back_tests(files, {**files, "src/a.rs": weakened.encode()})
    assert writes == {"src/a.rs": fixed.encode()} and done == [("src/a.rs", "#[cfg(test)] mod tests")]
    # a decoy in a comment and in a raw string before the real module: the real one is put back
    decoy = weakened.replace(
        "#[cfg(test)]\n#[allow",
        '/* #[cfg(test)] mod tests {} */ const _N: &str = r#"mod tests {}"#;\n#[cfg(test)]\n#[allow',
    )
    writes, _ = put_back_tests(files, {**files, "src/a.rs": decoy.encode()})
    tail = "#[cfg(test)]\n#[allow"
    assert writes["src/a.rs"].decode() == decoy.replace(weakened[weakened.index(tail) :], fixed[fixed.index(tail) :])
    # the module moved with its file (src/a.rs -> src/a/mod.rs): put back there
    moved = {k: v for k, v in files.items() if k != "src/a.rs"} | {"src/a/mod.rs": weakened.encode()}
    writes, done = put_back_tests(files, moved)
    assert writes == {"src/a/mod.rs": fixed.encode()} and done == [("src/a/mod.rs", "#[cfg(test)] mod tests")]
    # removed: added again at the end of its parent
    removed = fixed.replace(fixed[fixed.index("#[cfg(test)]\nmod more") :], "")
    writes, done = put_back_tests(files, {**files, "src/a.rs": removed.encode()})
    assert done == [("src/a.rs", "#[cfg(test)] mod more")] and writes["src/a.rs"].decode().rstrip().endswith(
        "assert!(true) } }"
    )
    # a test module of its own file: the file is put back whole, and a declaration pointing elsewhere too
    writes, done = put_back_tests(files, {**files, "src/tests.rs": b"#[test]\nfn whole() {}\n"})
    assert writes == {"src/tests.rs": files["src/tests.rs"]}
    elsewhere = LIB.replace("#[cfg(test)]\nmod tests;", '#[cfg(test)]\n#[path = "zz.rs"]\nmod tests;')
    writes, _ = put_back_tests(files, {**files, "src/lib.rs": elsewhere.encode(), "src/zz.rs": b"#[test] fn w() {}\n"})
    assert writes == {"src/lib.rs": files["src/lib.rs"]}
    # a new test module of a file of its own is refused: its declaration goes
    added = LIB + "\n#[cfg(test)]\nmod extra;\n"
    writes, done = put_back_tests(
        files, {**files, "src/lib.rs": added.encode(), "src/extra.rs": b"#[test] fn e() {}\n"}
    )
    assert writes["src/lib.rs"].decode().rstrip() == LIB.rstrip() and "refused" in done[0][1]
    # the way to a test module declared otherwise for test builds: cfg alternatives, cfg_attr(test, path)
    twice = LIB.replace("mod a;", '#[cfg(test)]\n#[path = "evil.rs"]\nmod a;\n#[cfg(not(test))]\nmod a;')
    writes, done = put_back_tests(files, {**files, "src/lib.rs": twice.encode(), "src/evil.rs": weakened.encode()})
    assert writes["src/lib.rs"].decode().replace("\n\n", "\n") == LIB.replace("\n\n", "\n"), done
    assert [d for _, d in done] == ["mod a (a second declaration, refused)", "mod a (its declaration, as it was)"]
    swapped = LIB.replace("mod a;", '#[cfg_attr(test, path = "evil.rs")]\nmod a;')
    writes, _ = put_back_tests(files, {**files, "src/lib.rs": swapped.encode(), "src/evil.rs": weakened.encode()})
    assert writes == {"src/lib.rs": files["src/lib.rs"]}
    # a fix that adds a module and a re-export beside them keeps them
    grown = LIB + "mod extra;\npub use extra::thing;\n"
    assert put_back_tests(files, {**files, "src/lib.rs": grown.encode(), "src/extra.rs": b"pub fn thing() {}\n"}) == (
        {},
        [],
    )
    # a macro named like one the unit tests invoke, defined or imported anew: refused (textual scope)
    shadowing = "macro_rules! assert_eq {\n    ($($t:tt)*) => {};\n}\nuse crate::b::g as assert;\n" + LIB
    writes, done = put_back_tests(files, {**files, "src/lib.rs": shadowing.encode()})
    assert writes == {"src/lib.rs": b"\n\n" + files["src/lib.rs"]} and [p for p, _ in done] == ["src/lib.rs"] * 2
    assert {d.split("!")[0] for _, d in done} == {"assert", "assert_eq"}
    kept = LIB + "use std::fmt::Write;\nmacro_rules! other { () => {} }\n"  # not named like the tests' macros
    assert put_back_tests(files, {**files, "src/lib.rs": kept.encode()}) == ({}, [])
    # a module file only `read` finds (a folder reached through a symlink): found and put back
    hidden = {k: v for k, v in files.items() if k != "src/a.rs"}
    writes, _ = put_back_tests(files, hidden, {"src/a/mod.rs": weakened.encode()}.get)
    assert writes == {"src/a/mod.rs": fixed.encode()}
    assert get_parser("cargo").restore_inline_tests(files, {**files, "src/a.rs": weakened.encode()}, lambda _: None)[
        0
    ] == {"src/a.rs": fixed.encode()}


def test_package_json_keeps_a_fix_and_gets_back_the_keys_that_pick_what_runs():
    base = {"name": "x", "scripts": {"test": "vitest run"}, "devDependencies": {"vitest": "2.1.9"}}
    before = {"package.json": json.dumps(base).encode()}
    fix = {**base, "dependencies": {"ms": "2.1.3"}, "main": "src/a.js"}
    assert put_back_package_keys(before, {"package.json": json.dumps(fix).encode()}) == ({}, [])
    evil = {**fix, "bin": {"vitest": "./x.cjs"}, "scripts": {"test": "true"}, "jest": {"setupFiles": ["x"]}}
    writes, done = put_back_package_keys(before, {"package.json": json.dumps(evil).encode()})
    assert json.loads(writes["package.json"]) == fix and done == [("package.json", "package.json bin, scripts, jest")]
    # read differently by JSON.parse and Python (a key twice, a BOM, NaN): put back whole
    for text in ('{"bin": {}, "bin": {"vitest": "./x.cjs"}}', "\ufeff" + json.dumps(evil), '{"v": NaN}'):
        assert put_back_package_keys(before, {"package.json": text.encode()})[0] == before
    # a new package.json: its keys that pick what runs go, or all of it when it is not strict JSON
    writes, _ = put_back_package_keys({}, {"sub/package.json": b'{"name": "s", "bin": "x.js"}'})
    assert json.loads(writes["sub/package.json"]) == {"name": "s"}
    assert put_back_package_keys({}, {"sub/package.json": b"{,}"})[0] == {"sub/package.json": None}


# Vitest 0.34 (unjs/defu at 4111333b7f), two tests skipped with `it.skip`: its JSON report lists them
# as skipped but counts them in numPassedTests (19, numPendingTests 0); its summary line says 17 | 2
VITEST_034_OUTPUT = """
 RUN  v0.34.6 /repo

 ✓ test/defu.test.ts > defu > copies
 ✓ test/defu.test.ts > defu > nested

 Test Files  1 passed (1)
      Tests  2 passed | 2 skipped (4)
"""


def _vitest_034_report(passed: int, pending: int) -> bytes:
    statuses = [("copies", "passed"), ("custom constructor", "skipped"), ("date", "skipped"), ("nested", "passed")]
    return json.dumps(
        {
            "numTotalTests": 4,
            "numPassedTests": passed,
            "numFailedTests": 0,
            "numPendingTests": pending,
            "numTodoTests": 0,
            "success": True,
            "testResults": [
                {
                    "name": "/repo/test/defu.test.ts",
                    "status": "passed",
                    "assertionResults": [
                        {"ancestorTitles": ["defu"], "title": t, "status": s, "failureMessages": []}
                        for t, s in statuses
                    ],
                }
            ],
        }
    ).encode()


def test_vitest_034_counting_skipped_tests_as_passed_is_read_as_what_it_lists():
    """Before, the check quarantined defu's task: "the JSON report says 4 passed but vitest's summary line says 2"."""
    report = get_parser("vitest").parse(VITEST_034_OUTPUT, _vitest_034_report(4, 0), exit_code=0)
    assert report.consistent, report.disagreement
    assert report.counts["passed"] == 2 and report.counts["skipped"] == 2
    assert sorted(t for t, s in report.statuses.items() if s == SKIPPED) == [
        "test/defu.test.ts::defu > custom constructor",
        "test/defu.test.ts::defu > date",
    ]
    # a report whose counts agree with neither its list nor that quirk still disagrees
    forged = get_parser("vitest").parse(VITEST_034_OUTPUT, _vitest_034_report(3, 0), exit_code=0)
    assert not forged.consistent


def test_jest_runs_a_file_named_test_by_default_vitest_does_not():
    # Jest's default testMatch `**/?(*.)+(spec|test).[jt]s?(x)` takes a bare test.js (fastest-levenshtein
    # keeps its tests in test.ts, compiled to test.js); Vitest's `**/*.{test,spec}.?(c|m)[jt]s?(x)` does not
    jest, vitest = get_parser("jest"), get_parser("vitest")
    for path in ("test.js", "test.ts", "src/spec.mjs"):
        assert jest.is_test_path(path) and jest.is_test_module(path), path
        assert not vitest.is_test_path(path), path
    assert "--runTestsByPath test.js" in jest.test_command(["test.js", "mod.js"])
    assert not jest.is_test_path("latest.js") and not jest.is_test_path("test.json")
