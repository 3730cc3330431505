from harness.parsers import FAILED, PASSED
from harness.parsers.pytest import parse_pytest

OUTPUT = """\
============================= test session starts ==============================
collected 5 items

tests/test_a.py .F.                                                      [ 60%]
tests/test_b.py .E                                                       [100%]

==================================== ERRORS ====================================
=================================== FAILURES ===================================
_________________________________ test_two ___________________________________
----------------------------- Captured stdout call -----------------------------
PASSED tests/test_a.py::test_two
=========================== short test summary info ============================
PASSED tests/test_a.py::test_one
PASSED tests/test_a.py::test_three[a - b]
PASSED tests/test_b.py::test_four
FAILED tests/test_a.py::test_two - AssertionError: assert 1 == 2
ERROR tests/test_b.py::test_five - RuntimeError: boom
SKIPPED [1] tests/test_b.py:9: no network
==================== 1 failed, 3 passed, 1 skipped, 1 error in 0.12s ====================
"""


def test_summary_block_gives_statuses_with_swebench_node_ids():
    report = parse_pytest(OUTPUT)
    assert report.statuses == {
        "tests/test_a.py::test_one": "PASSED",
        "tests/test_a.py::test_three[a - b]": "PASSED",
        "tests/test_b.py::test_four": "PASSED",
        "tests/test_a.py::test_two": "FAILED",
        "tests/test_b.py::test_five": "ERROR",
    }
    assert report.counts == {"failed": 1, "passed": 3, "skipped": 1, "errors": 1}
    assert report.consistent_with(1) == (True, "")


def test_printed_result_lines_outside_the_last_summary_do_not_count():
    faked = "=== short test summary info ===\nPASSED tests/test_a.py::test_two\n" + OUTPUT
    assert parse_pytest(faked).statuses["tests/test_a.py::test_two"] == "FAILED"


def test_exit_code_contradicting_the_output_is_inconsistent():
    report = parse_pytest(OUTPUT)
    ok, why = report.consistent_with(0)
    assert not ok and "exit code 0" in why
    only_passes = parse_pytest("=== short test summary info ===\nPASSED t.py::a\n=== 1 passed in 0.1s ===\n")
    assert only_passes.consistent_with(0) == (True, "")
    assert not only_passes.consistent_with(1)[0]


def test_counts_mismatch_is_inconsistent():
    text = "=== short test summary info ===\nPASSED t.py::a\nPASSED t.py::b\n=== 1 passed in 0.1s ===\n"
    ok, why = parse_pytest(text).consistent_with(0)
    assert not ok and "1 passed" in why


def test_collection_error_and_teardown_error():
    text = (
        "=== short test summary info ===\nERROR tests/test_x.py - ImportError: nope\n"
        "PASSED tests/test_y.py::t\nERROR tests/test_y.py::t - teardown failed\n"
        "=== 1 passed, 2 errors in 0.1s ===\n"
    )
    report = parse_pytest(text)
    assert report.collection_errors == ["tests/test_x.py"]
    assert report.statuses == {"tests/test_y.py::t": "ERROR"}
    assert report.consistent_with(1) == (True, "")


def test_no_summary():
    report = parse_pytest("Traceback (most recent call last):\nSyntaxError\n")
    assert not report.found_summary and report.statuses == {}


def test_failed_subtest_fails_its_test():
    text = (
        "=== short test summary info ===\nSUBFAILED(x=1) tests/t.py::T::test_a - AssertionError\n"
        "PASSED tests/t.py::T::test_a\n=== 1 failed, 1 passed in 0.1s ===\n"
    )
    assert parse_pytest(text).statuses == {"tests/t.py::T::test_a": "FAILED"}


def test_a_parser_that_cannot_read_results_is_refused_when_it_is_defined():
    import pytest as _pytest

    from harness.parsers.base import ParserBase

    with _pytest.raises(TypeError, match="must define parse_output"):

        class Nothing(ParserBase):  # noqa: F841 - defining it is the test
            name = "nothing"


def test_a_node_id_whose_parameters_hold_unbalanced_brackets_ends_at_its_message():
    # wcwidth 0.9.3: pytest escapes the ANSI sequence of a parameter into the id ("\\x1b[31m": a `[`
    # never closed), so counting brackets ran the id on into its message
    node = "tests/test_h.py::test_parse[\\x1b[31mHello\\x1b[0m-0]"
    text = (
        "=== short test summary info ===\n"
        f"PASSED {node}\nERROR {node} - ValueError: boom\nFAILED tests/test_h.py::test_b[a - b] - assert 1\n"
        "PASSED tests/test_h.py::test_c[x - y]\n=== 1 failed, 2 passed, 1 error in 0.1s ===\n"
    )
    report = parse_pytest(text)
    assert report.statuses == {
        node: "ERROR",
        "tests/test_h.py::test_b[a - b]": "FAILED",
        "tests/test_h.py::test_c[x - y]": "PASSED",
    }
    assert report.listed[node] == {"PASSED", "ERROR"} and report.messages[node] == "ValueError: boom"


LONG_IDS = """\
import pytest


def check(value):
    assert value == "expected", "the helper says no"


def test_short():
    check("first test's own value")


@pytest.mark.parametrize("text", ["a fairly long parameter value number one that goes on", "number two " * 5])
def test_a_parser_reads_every_kind_of_line_written_by_the_tool(text):
    assert text.upper() == text, "second or third"
"""


def test_each_failing_test_gets_its_own_block_when_pytest_shortens_the_block_headers(tmp_path):
    """A test id too long for the terminal's width gets a block header with one underscore each side
    (`_ test_x[long id] _`): it was not read as a header, so its block went on the previous test's,
    and `show` printed two or three tests' assertions in one test's panel (issue 28). Real pytest
    output, 80 columns; a traceback of two entries (pytest's `_ _ _` line between them) stays one
    block."""
    import os
    import subprocess
    import sys

    (tmp_path / "test_long.py").write_text(LONG_IDS)
    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "test_long.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    ).stdout
    assert "\n_ test_a_parser_reads_every_kind_of_line_written_by_the_tool[" in out  # the short header
    assert "\n_ _ _ _" in out  # the separator between a traceback's entries
    report = parse_pytest(out)
    short = report.messages["test_long.py::test_short"]
    assert "the helper says no" in short and "first test's own value" in short
    assert "second or third" not in short and "NUMBER" not in short, short
    one, two = (n for n in report.messages if "[" in n)
    assert "NUMBER ONE" in report.messages[one] and "NUMBER TWO" not in report.messages[one], report.messages[one]
    assert "NUMBER TWO" in report.messages[two] and "NUMBER ONE" not in report.messages[two], report.messages[two]
    assert "first test's own value" not in report.messages[one] + report.messages[two]


def test_the_per_test_time_limit_fails_a_hanging_test_and_keeps_the_other_results(tmp_path):
    """wholeloop's pytest plugin (harness/data/pytest), run by this pytest in a subprocess as
    grading runs it: a test that loops, one that sleeps in a blocking call and one that swallows
    exceptions each fail where they hang; the tests around them pass; the run ends well within the
    limit's multiples, with pytest's exit code for failed tests."""
    import os
    import subprocess
    import sys
    from importlib import resources

    from harness.parsers import ERROR, TEST_LIMIT_VAR

    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "wholeloop_test_limit.py").write_bytes(
        resources.files("harness.data").joinpath("pytest/wholeloop_test_limit.py").read_bytes()
    )
    (tmp_path / "test_hang.py").write_text(
        "import time\nimport pytest\n\n\ndef test_before():\n    pass\n\n\n"
        "def test_loops():\n    while True:\n        pass\n\n\n"
        "def test_sleeps():\n    time.sleep(600)\n\n\n"
        "def test_swallows():\n    while True:\n        try:\n            time.sleep(600)\n"
        "        except Exception:\n            pass\n\n\n"
        "@pytest.fixture\ndef stuck():\n    while True:\n        pass\n\n\n"
        "def test_setup_hangs(stuck):\n    pass\n\n\n"
        "def test_after():\n    time.sleep(0.1)\n"
    )
    env = {**os.environ, TEST_LIMIT_VAR: "1", "PYTHONPATH": str(tools), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "-p", "wholeloop_test_limit", "test_hang.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = parse_pytest(run.stdout)
    assert run.returncode == 1, run.stdout[-3000:]
    assert report.statuses == {
        "test_hang.py::test_before": PASSED,
        "test_hang.py::test_loops": FAILED,
        "test_hang.py::test_sleeps": FAILED,
        "test_hang.py::test_swallows": FAILED,
        "test_hang.py::test_setup_hangs": ERROR,
        "test_hang.py::test_after": PASSED,
    }, run.stdout[-3000:]
    assert "ran longer than 1 s: wholeloop's per-test time limit" in report.messages["test_hang.py::test_loops"]
    # without the variable the plugin does nothing
    quiet = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-rA",
            "-p",
            "no:cacheprovider",
            "-p",
            "wholeloop_test_limit",
            "-k",
            "before or after",
            "test_hang.py",
        ],
        cwd=tmp_path,
        env={k: v for k, v in env.items() if k != TEST_LIMIT_VAR},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert quiet.returncode == 0, quiet.stdout[-2000:]


OUTPUT_THAT_LOOKS_LIKE_PYTEST = """\
import pytest

pytest_plugins = ["pytester"]


def test_alpha():
    assert 1 == 2, "alpha's own"


def test_prints_a_header():
    print("_" * 30 + " test_alpha " + "_" * 30)  # a header-shaped line in its captured output
    print("E   AssertionError: printed, not alpha's")
    print("_" * 34 + " test_alpha " + "_" * 34)  # ...padded as pytest pads, at the terminal's width
    print("E   AssertionError: printed, not alpha's")
    print("_" * 30 + " test_omega " + "_" * 30)  # ...naming a test that fails later
    print("E   AssertionError: printed, not omega's")
    print("=" * 30 + " a rule of its own " + "=" * 30)
    assert 3 == 4, "the printer's own"


def test_runs_pytest_inside(pytester):
    # a plugin's tests run pytest in pytest: the inner run's whole output is this test's output
    pytester.makepyfile("def test_alpha():\\n    assert 7 == 8, 'the inner alpha'\\n")
    print(pytester.runpytest("-rA").stdout.str())
    assert 9 == 10, "the nesting test's own"


class TestK:
    def test_in_class(self):
        print("=" * 30 + " FAILURES " + "=" * 30)
        assert 5 == 6, "the class test's own"


def test_omega():
    assert 11 == 12, "omega's own"
"""


def test_output_that_looks_like_pytests_own_lines_is_the_tests_output(tmp_path):
    """A test's captured output can hold lines shaped like pytest's block headers and rules: a
    printed `____ test_alpha ____`, or a whole inner pytest run (pytester). They were read as pytest's:
    test_alpha's panel showed the inner run's assertion, or the printed one, and the failures after
    the inner run's closing rule kept only the summary's one-line message. Real pytest output."""
    import os
    import subprocess
    import sys

    (tmp_path / "test_looks.py").write_text(OUTPUT_THAT_LOOKS_LIKE_PYTEST)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "test_looks.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        timeout=120,
    ).stdout
    assert "the inner alpha" in out and "printed, not alpha's" in out
    report = parse_pytest(out)
    own = {
        "test_alpha": "alpha's own",
        "test_prints_a_header": "the printer's own",
        "test_runs_pytest_inside": "the nesting test's own",
        "TestK::test_in_class": "the class test's own",
        "test_omega": "omega's own",
    }
    for name, mine in own.items():
        message = report.messages[f"test_looks.py::{name}"]
        assert f"AssertionError: {mine}" in message, (name, message)  # from its block, not the summary line
        others = [m for m in (*own.values(), "the inner alpha", "printed, not") if m != mine and m in message]
        assert not others, (name, message)


ADDRESS_IDS = """import pytest


class Thing:
    def __init__(self, ok):
        self.ok = ok


CASES = [Thing(True), Thing(False), Thing(True)]


@pytest.mark.parametrize("thing", CASES, ids=repr)
def test_thing(thing):
    assert thing.ok


@pytest.mark.parametrize("n", [1, 2])
def test_plain(n):
    assert n
"""


def _run_pytest_with_both_channels(tmp_path, source: str):
    import subprocess
    import sys

    from harness.parsers import get_parser

    (tmp_path / "test_ids.py").write_text(source)
    log = tmp_path / "report.jsonl"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-rA",
            "-p",
            "no:cacheprovider",
            "-p",
            "pytest_reportlog.plugin",
            f"--report-log={log}",
            "test_ids.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**__import__("os").environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    parser = get_parser("pytest")
    setup = parser.run_setup({"pytest": "8.3", "tools_path": True}, "t0ken")
    setup.report_path, setup.anchor = str(log), f"generated report log file: {log}"
    return parser.parse(run.stdout, log.read_bytes(), setup=setup, exit_code=run.returncode)


def test_memory_addresses_in_test_ids_are_one_token_and_a_collision_keeps_the_failure(tmp_path):
    """annotated-types: 45 parametrized ids hold `<... object at 0x7f84332ee990>`, an address that
    differs in every run, so no list could name them. The address is read as one token (`0xADDRESS`);
    ids that then collide are named (the check refuses the task) and, in grading, can never let a
    failing test hide behind a passing one: the failure wins, in both channels (a hostile agent's
    package can shape such ids: annotated-types builds its cases in the package)."""
    from harness.grading.outcome import classify

    report = _run_pytest_with_both_channels(tmp_path, ADDRESS_IDS)
    collided = "test_ids.py::test_thing[<test_ids.Thing object at 0xADDRESS>]"
    assert report.statuses == {
        collided: FAILED,
        "test_ids.py::test_plain[1]": PASSED,
        "test_ids.py::test_plain[2]": PASSED,
    }, report.statuses
    assert report.consistent, report.why
    assert report.merged_ids == {collided: 3}
    assert "assert False" in report.messages[collided]
    # a task listing that id is not resolved, whichever of the three objects passed
    from harness.tasks.spec import Task

    task = Task.model_validate(
        {
            "id": "t",
            "repo": ".",
            "base_commit": "0" * 40,
            "problem_statement": "x",
            "hidden_tests": {"command": "python -m pytest -rA", "patch": ""},
            "gold_patch": "x",
            "FAIL_TO_PASS": [collided],
            "PASS_TO_PASS": [],
        }
    )
    assert not classify(task, report.statuses, 1, report.consistent, report.why).resolved
    # without a collision: one id a test, named the same in every run
    alone = _run_pytest_with_both_channels(
        tmp_path, ADDRESS_IDS.replace("Thing(True), Thing(False), Thing(True)", "Thing(True)")
    )
    assert alone.statuses[collided] == PASSED and alone.merged_ids == {} and alone.consistent


SECTIONS_AFTER_PRINTED_OUTPUT = """\
import warnings

import pytest


@pytest.fixture
def broken():
    print("setting up, then failing")
    raise RuntimeError("the setup's own")


def test_needs_broken(broken):
    pass


def test_fails():
    print("some output of its own")
    warnings.warn("a warning")
    assert 1 == 2, "the failure's own"


def test_passes():
    print("passing output")
"""


def test_pytests_own_sections_still_end_a_block_that_ends_in_printed_output(tmp_path):
    """The guard of the test above, the other way: after a block's printed output, pytest's own next
    section (FAILURES after ERRORS, the warnings summary, PASSES) ends it. Real pytest output."""
    import os
    import subprocess
    import sys

    (tmp_path / "test_err.py").write_text(SECTIONS_AFTER_PRINTED_OUTPUT)
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "test_err.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        timeout=120,
    ).stdout
    assert "Captured stdout setup" in out and "warnings summary" in out and "= PASSES =" in out
    report = parse_pytest(out)
    assert report.messages["test_err.py::test_needs_broken"].endswith(
        "RuntimeError: the setup's own\ntest_err.py:9: RuntimeError"
    )
    assert report.messages["test_err.py::test_fails"].endswith("assert 1 == 2\ntest_err.py:19: AssertionError")
