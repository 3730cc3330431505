"""Grading without false negatives, and its parts on their own.

The hostile side (non-fixes that must never resolve) is tests/test_hostile.py; here: legitimate work
must still resolve under the same grader -- a fix with a new module, a new test file and a data
file; work the agent hid from its own git (its .gitignore, exclude, commits); a second attempt in
the same container; a task whose tests need pytest plugins (pytest-asyncio from the environment, a
module the task names); an expected xfail; a regrade that changes nothing. And the pure parts: what
a patch's paths are and which are stripped, the two result channels of pytest, feedback scrubbing.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import ROOT, git, write

from harness.agents import AgentResult
from harness.grading.feedback import scrub_messages
from harness.grading.patching import decide, parse_patch, touched_files
from harness.parsers import RunSetup
from harness.parsers.pytest import PytestParser, parse_pytest
from harness.records import read_results
from harness.run import Runner, RunOptions
from harness.tasks import Task, load_task
from harness.transcript import Stop

# ------------------------------------------------------------------------------------ the patch as data


def _task(**kw) -> Task:
    data = {
        "id": "t",
        "repo": "r",
        "base_commit": "c",
        "problem_statement": "p",
        "hidden_tests": {"command": "pytest", "files": {"tests/test_hidden.py": "x"}},
        "FAIL_TO_PASS": ["a"],
        **kw,
    }
    return Task.model_validate(data)


def _section(path: str, *, new_file: bool = True, mode: str = "100644", body: str = "+x") -> str:
    head = f"diff --git a/{path} b/{path}\n" + (
        f"new file mode {mode}\n--- /dev/null\n" if new_file else f"--- a/{path}\n"
    )
    return head + f"+++ b/{path}\n@@ -0,0 +1 @@\n{body}\n"


@pytest.mark.parametrize(
    "path, reason",
    [
        ("calc/fix.py", ""),
        ("calc/data/table.json", ""),
        ("docs/notes.md", ""),
        ("tests/test_new.py", "protected"),
        ("tests/test_hidden.py", "protected"),
        ("conftest.py", "protected"),
        ("calc/testing/helpers.py", ""),  # a library's testing/ package (numpy.testing): not the tests
        ("calc/testing/test_helpers.py", "protected"),
        ("calc/testing/conftest.py", "protected"),
        ("pkg/conftest.py", "protected"),
        ("setup.cfg", "protected"),
        (".git/hooks/pre-commit", "under .git/"),
        ("sub/.GIT/config", "under .git/"),
        ("calc/__pycache__/x.cpython-311.pyc", "bytecode or a cache"),
        ("pytest.pyc", "bytecode or a cache"),
        ("lib/.pytest_cache/v/x", "bytecode or a cache"),
        ("x-1.0.dist-info/entry_points.txt", "package metadata"),
        ("src/X.Egg-Info/PKG-INFO", "package metadata"),
        ("evil.pth", "a start-up hook"),
        ("src/sitecustomize.py", "a start-up hook"),
        ("usercustomize/__init__.py", "a start-up hook"),
        ("../outside.txt", "outside the repository"),
        ("a/../../b", "outside the repository"),
    ],
)
def test_each_path_of_a_patch_is_kept_or_stripped_with_its_reason(path, reason):
    sections, _ = parse_patch(_section(path))
    decision = decide(_task(), sections)
    got = {s.path: s.reason for s in decision.stripped}
    assert got.get(path, "") == reason, got
    assert (decision.text() != "") == (reason == "")


def test_a_test_folder_holding_the_hidden_tests_is_protected_whole():
    """pytest's own repository keeps its tests in testing/: there the folder's data and helpers are
    the tests'; elsewhere a testing/ package is library code."""
    task = _task(hidden_tests={"command": "pytest", "files": {"testing/python/test_hidden.py": "x"}})
    for path, reason in [
        ("testing/example_scripts/data.txt", "protected"),
        ("testing/helper.py", "protected"),
        ("src/testing/helper.py", ""),
        ("testingx/a.py", ""),
    ]:
        got = {s.path: s.reason for s in decide(task, parse_patch(_section(path))[0]).stripped}
        assert got.get(path, "") == reason, (path, got)


@pytest.mark.parametrize(
    "target, leaves",
    [
        ("../../etc", True),
        ("/etc/passwd", True),
        ("../.git/config", True),
        ("other.py", False),
        ("../calc/x.py", False),
    ],
)
def test_symlinks_leaving_the_repository_are_stripped(target, leaves):
    sections, _ = parse_patch(_section("calc/link", mode="120000", body=f"+{target}\n\\ No newline at end of file"))
    assert sections[0].symlink_target() == target
    stripped = decide(_task(), sections).stripped
    assert bool(stripped) is leaves, stripped


@pytest.mark.parametrize(
    "base, target, leaves",
    [
        ({"deep": "."}, "../deep/deep/../../etc", True),  # through a symlink of the base
        ({}, "../deep/deep/../../etc", False),  # no such symlink: `etc` inside
        ({"up": ".."}, "../up/x", True),
        ({"docs": "calc"}, "../docs/x.py", False),  # through one, staying inside
        ({"loop": "loop/a"}, "../loop", True),  # a loop counts as leaving
        ({"g": ".GIT"}, "../g/config", True),
    ],
)
def test_symlinks_are_resolved_through_the_trees_other_symlinks(base, target, leaves):
    sections, _ = parse_patch(_section("calc/link", mode="120000", body=f"+{target}\n\\ No newline at end of file"))
    stripped = decide(_task(), sections, base_links=base).stripped
    assert bool(stripped) is leaves, stripped


def test_what_is_kept_is_written_out_again_from_the_parsed_sections_only():
    patch = (
        "garbage before\n"
        + _section("calc/fix.py")
        + "a line patch would read as an ed script\n1a\nx\n.\n"
        + _section(".git/hooks/post-checkout", mode="100755")
        + _section("data.txt")
    )
    sections, unparsed = parse_patch(patch)
    decision = decide(_task(), sections, unparsed)
    assert [s.new for s in decision.kept] == ["calc/fix.py", "data.txt"]
    assert "garbage" not in decision.text() and "ed script" not in decision.text() and ".git" not in decision.text()
    assert decision.unparsed >= 4
    assert touched_files(patch) == ["calc/fix.py", ".git/hooks/post-checkout", "data.txt"]


def test_a_kept_section_is_written_out_byte_for_byte_crlf_and_form_feeds_included():
    patch = (
        "diff --git a/w.py b/w.py\nindex 1111111..2222222 100644\n--- a/w.py\n+++ b/w.py\n@@ -1,3 +1,3 @@\n"
        " a = 1\r\n-\x0c# page\r\n+\x0c# page two\r\n b = 2\x0b\u2028\n\\ No newline at end of file\n"
    )
    sections, unparsed = parse_patch(patch)
    assert unparsed == 0 and decide(_task(), sections).text() == patch


def test_paths_come_from_every_header_of_a_section():
    """A section whose ---/+++ names differ from its diff --git line is checked by all of them."""
    patch = "diff --git a/ok.py b/ok.py\n--- a/ok.py\n+++ b/.git/hooks/x\n@@ -1 +1 @@\n-a\n+b\n"
    sections, _ = parse_patch(patch)
    assert {s.path for s in decide(_task(), sections).stripped} == {".git/hooks/x"}


@pytest.mark.parametrize(
    "plus, checked",
    [
        ("+++ b/conftest.py 2024-01-01 00:00:00.000000000 +0000", "conftest.py"),  # a space, then a date: dropped
        ("+++ b/conftest.py Mon Jan  1 00:00:00 2024", "conftest.py"),
        ("+++ b/conftest.py\t2024-01-01 00:00:00", "conftest.py"),
        ("+++ b/conftest.py\rX", "conftest.py\rX"),  # anything else is part of the name...
        ("+++ b/conftest.py X", "conftest.py X"),
        ('+++ "b/sp ace\\303\\251.py"', "sp ace\u00e9.py"),
    ],
)
def test_an_applier_reads_exactly_the_names_grading_checked(plus, checked, tmp_path):
    """A hand-written section's names are written out again from what grading checked (quoted when
    they hold whitespace or other bytes), so git apply writes the checked path and nothing else."""
    patch = "--- /dev/null\n" + plus + "\n@@ -0,0 +1 @@\n+x\n"
    sections, _ = parse_patch(patch)
    assert sections[0].paths == [checked]
    decision = decide(_task(), sections)
    if checked == "conftest.py":
        assert [s.path for s in decision.stripped] == ["conftest.py"] and not decision.kept
        return
    assert not decision.stripped and not sections[0].plain()  # never to `patch`, which reads names its own way
    rendered = decision.text()
    assert parse_patch(rendered)[0][0].paths == [checked]
    git(tmp_path, "init", "-q")
    (tmp_path / "p.diff").write_bytes(rendered.encode("utf-8", "surrogateescape"))
    subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name not in (".git", "p.diff")) == [checked]


# ------------------------------------------------------------------------------------ two channels

ANCHOR_PATH = "/tmp/wholeloop-report-tok/report.jsonl"
SETUP = RunSetup(report_path=ANCHOR_PATH, anchor=f"generated report log file: {ANCHOR_PATH}")


def _summary(lines: list[str], closing: str) -> str:
    return (
        "============================= test session starts ==============================\n"
        f"------------------- generated report log file: {ANCHOR_PATH} --------------------\n"
        "=========================== short test summary info ============================\n"
        + "".join(line + "\n" for line in lines)
        + f"======================== {closing} ========================\n"
    )


def _log(*tests: tuple[str, str, str], exit_status: int = 1) -> bytes:
    """A pytest-reportlog file: (node id, phase, outcome) per report, then the session's end."""
    lines = [{"pytest_version": "8.3.4", "$report_type": "SessionStart"}]
    for node, when, outcome in tests:
        entry = {"nodeid": node, "when": when, "outcome": outcome, "$report_type": "TestReport", "longrepr": None}
        if outcome == "failed":
            entry["longrepr"] = {
                "reprcrash": {"path": "t.py", "lineno": 1, "message": "assert -1 == 5"},
                "reprtraceback": {
                    "reprentries": [
                        {
                            "type": "ReprEntry",
                            "data": {"reprfileloc": {"path": "t.py", "lineno": 1, "message": "AssertionError"}},
                        }
                    ]
                },
            }
        if outcome == "xfail":
            entry.update(outcome="skipped", wasxfail="reason")
        lines.append(entry)
    lines.append({"exitstatus": exit_status, "$report_type": "SessionFinish"})
    return "".join(json.dumps(x) + "\n" for x in lines).encode()


REAL = [
    ("t.py::a", "setup", "passed"),
    ("t.py::a", "call", "failed"),
    ("t.py::a", "teardown", "passed"),
    ("t.py::b", "setup", "passed"),
    ("t.py::b", "call", "passed"),
    ("t.py::b", "teardown", "passed"),
]


def test_channels_that_agree_give_the_statuses_messages_and_exception_types():
    out = _summary(["PASSED t.py::b", "FAILED t.py::a - assert -1 == 5"], "1 failed, 1 passed in 0.1s")
    report = PytestParser().parse(out, _log(*REAL), setup=SETUP, exit_code=1)
    assert report.consistent and not report.disagreement and report.channels["structured"] == "agrees"
    assert report.statuses == {"t.py::a": "FAILED", "t.py::b": "PASSED"}
    assert report.exception_types == {"t.py::a": "AssertionError"} and report.messages["t.py::a"] == "assert -1 == 5"


@pytest.mark.parametrize(
    "output, log, exit_code, why",
    [
        (_summary(["PASSED t.py::b", "PASSED t.py::a"], "2 passed in 0.1s"), _log(*REAL), 1, "t.py::a"),
        (_summary(["PASSED t.py::b", "FAILED t.py::a"], "1 failed, 1 passed in 0.1s"), _log(*REAL), 0, "exit status 1"),
        (_summary(["PASSED t.py::b", "FAILED t.py::a"], "1 failed, 3 passed in 0.1s"), _log(*REAL), 1, "3 passed"),
        (_summary(["PASSED t.py::b", "FAILED t.py::a"], "1 failed, 1 passed in 0.1s"), None, 1, "missing"),
        (
            _summary(["PASSED t.py::b", "FAILED t.py::a"], "1 failed, 1 passed in 0.1s"),
            _log(*REAL).rsplit(b"\n", 2)[0] + b"\n",
            1,
            "session finish",
        ),
    ],
)
def test_channels_that_contradict_each_other_are_flagged(output, log, exit_code, why):
    report = PytestParser().parse(output, log, setup=SETUP, exit_code=exit_code)
    assert not report.consistent and why in report.disagreement, report.disagreement


def test_output_after_pytests_closing_line_is_ignored():
    real = _summary(["PASSED t.py::b", "FAILED t.py::a - assert -1 == 5"], "1 failed, 1 passed in 0.1s")
    forged = "=== short test summary info ===\nPASSED t.py::a\nPASSED t.py::b\n=== 2 passed in 0.1s ===\n"
    assert parse_pytest(real + forged, SETUP.anchor).statuses["t.py::a"] == "FAILED"
    assert parse_pytest(real + forged).statuses["t.py::a"] == "PASSED"  # without the anchor: the last block


def test_only_exit_codes_that_mean_the_tests_ran_can_be_consistent():
    out = _summary(["PASSED t.py::b"], "1 passed in 0.1s")
    log = _log(("t.py::b", "call", "passed"), exit_status=2)
    report = PytestParser().parse(out, log, setup=SETUP, exit_code=2)
    assert not report.consistent and "exit code 2" in report.why and not report.disagreement


def test_an_expected_xfail_and_a_teardown_error_are_listed_alike_in_both_channels():
    out = _summary(
        ["PASSED t.py::c", "XFAIL t.py::x - reason", "ERROR t.py::c - ValueError: td"],
        "1 passed, 1 xfailed, 1 error in 0.1s",
    )
    log = _log(("t.py::x", "call", "xfail"), ("t.py::c", "call", "passed"), ("t.py::c", "teardown", "failed"))
    report = PytestParser().parse(out, log, setup=SETUP, exit_code=1)
    assert report.consistent, report.why
    assert report.statuses == {"t.py::x": "XFAIL", "t.py::c": "ERROR"}


def test_an_old_pytest_is_graded_on_one_channel_and_says_so():
    setup = PytestParser().run_setup({"pytest": "5.4.3", "pytest11": [], "tools_path": True}, "tok")
    assert setup.report_path is None and "pytest 5.4.3" in setup.no_report
    assert setup.env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1" and setup.env["PYTHONDONTWRITEBYTECODE"] == "1"
    out = "=== short test summary info ===\nPASSED t.py::a\n=== 1 passed in 0.1s ===\n"
    report = PytestParser().parse(out, None, setup=setup, exit_code=0)
    assert report.consistent and report.channels["structured"].startswith("unavailable")


def test_plugins_are_the_recorded_ones_plus_the_tasks_and_never_autoloaded():
    facts = {
        "pytest": "8.3.4",
        "tools_path": True,
        "env_addopts": "-x",
        "pytest11": [{"name": "asyncio", "value": "pytest_asyncio.plugin"}],
    }
    setup = PytestParser().run_setup(facts, "tok", ("myplug",))
    opts = setup.env["PYTEST_ADDOPTS"]
    assert opts.startswith("-x -p asyncio -p myplug -p pytest_reportlog.plugin --report-log=/tmp/wholeloop-report-tok/")
    assert any(p.endswith("pytest_reportlog/plugin.py") for p in setup.files)
    assert setup.imports == ("pytest_asyncio", "myplug") and setup.env["PYTEST_PLUGINS"] == ""


def test_a_plugin_that_replaces_pytests_summary_is_not_loaded():
    """pytest-pretty (pydantic-settings' dev dependency, trial5) prints a "Results (6.53s): 1 passed"
    table instead of the -rA summary block and the closing line: with it loaded, every check run
    was "no test results in the output" and the task was quarantined."""
    facts = {
        "pytest": "9.1.1",
        "tools_path": True,
        "pytest11": [{"name": "pretty", "value": "pytest_pretty"}, {"name": "pytest_mock", "value": "pytest_mock"}],
    }
    setup = PytestParser().run_setup(facts, "tok", ("pytest_pretty",))
    opts = shlex.split(setup.env["PYTEST_ADDOPTS"])
    assert "pretty" not in opts and "pytest_pretty" not in opts and opts[:2] == ["-p", "pytest_mock"]
    assert setup.imports == ("pytest_mock",)


def test_feedback_messages_lose_every_line_of_the_hidden_tests():
    hidden = ["from calc import add\n\n\ndef test_add():  # secret\n    assert add(2, 3) == 5\n"]
    messages = {"t": "AssertionError: from calc import add\n>> def test_add():  # secret\nassert -1 == 5\n" + "x" * 500}
    scrubbed = scrub_messages(messages, hidden)["t"]
    assert "secret" not in scrubbed and "from calc import add" not in scrubbed
    assert scrubbed.splitlines()[0] == "assert -1 == 5" and len(scrubbed.splitlines()[1]) < 220


def test_feedback_messages_lose_the_hidden_tests_literals_however_pytest_quotes_them():
    hidden = [
        'def test_p():\n    assert parse("k = a;b;c") == {"s": {"key": "a;b;c"}}\n    assert lang() == "C#"\n'
        '    assert port() == 8080\n    assert esc() == "tab\\there"\n'
    ]
    messages = {
        "t": "AssertionError: assert {'s': {'key': 'a'}} == {'s': {'key': 'a;b;c'}}\nE   assert 'C' == 'C#'\n"
        "assert 80 == 8080\nassert 'tab' == 'tab\\there'\nE   ValueError: no section 'x'"
    }
    scrubbed = scrub_messages(messages, hidden)["t"]
    assert scrubbed == "ValueError: no section 'x'", scrubbed


# ------------------------------------------------------------------------------------ no false negatives

BUGGY = "def add(a, b):\n    return a - b\n"
ADD_ID = "tests/test_add.py::test_add"


@pytest.fixture(scope="module")
def legit(tmp_path_factory) -> dict:
    """A small repository with a bug, a hidden test that reads a data file the fix must add, and a
    spec maker."""
    root = tmp_path_factory.mktemp("legit")
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(
        repo,
        {
            "calc/__init__.py": BUGGY,
            ".gitignore": "*.log\n",
            "tests/test_keep.py": "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
        },
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "initial")
    base = git(repo, "rev-parse", "HEAD")
    test_add = (
        "import json, pathlib\nfrom calc import add\n\n\ndef test_add():\n"
        "    table = json.loads(pathlib.Path('calc/data/table.json').read_text())\n"
        "    assert add(2, 3) == 5 == table['2+3']\n"
    )
    hidden = {"tests/test_add.py": test_add}

    def spec(where: Path, task_id: str, **extra) -> Path:
        data = {
            "id": task_id,
            "repo": str(repo),
            "base_commit": base,
            "problem_statement": "add subtracts",
            "environment": {"setup": ["pip install -q pytest==8.3.4"]},
            "hidden_tests": {"command": "python -m pytest -rA -p no:cacheprovider tests", "files": hidden},
            "FAIL_TO_PASS": [ADD_ID],
            "PASS_TO_PASS": ["tests/test_keep.py::test_zero"],
            "limits": {"command_timeout_s": 30},
            **extra,
        }
        where.mkdir(parents=True, exist_ok=True)
        (where / f"{task_id}.yaml").write_text(json.dumps(data))
        return where / f"{task_id}.yaml"

    return {"repo": repo, "spec": spec, "root": root}


FIX_WITH_MODULE = "from .ops import add_numbers as add  # noqa: F401\n"
OPS = "def add_numbers(a, b):\n    return a + b\n"
TABLE = '{"2+3": 5}\n'


class Steps:
    """Runs, per task id, steps in the agent's container: a shell command or a callable(sandbox).
    A step list per attempt when given as a list of lists."""

    model = None

    def __init__(self, steps: dict):
        self.steps, self.name, self.seen = steps, "steps", {}

    def run(self, ctx) -> AgentResult:
        todo = self.steps[ctx.task.id]
        if todo and isinstance(todo[0], list):
            todo = todo[min(ctx.attempt, len(todo)) - 1]
        for step in todo:
            result = step(ctx.sandbox) if callable(step) else ctx.sandbox.exec(step)
            self.seen.setdefault(ctx.task.id, []).append(result)
        ctx.transcript.write(Stop(reason="submitted"))
        return AgentResult(stop_reason="submitted", steps=len(todo))

    def describe(self) -> dict:
        return {"agent": self.name}


def _write(**files):
    def step(sb):
        for path, text in files.items():
            sb.write_file(path, text)

    return step


LEGIT = {
    # a new module, a new test file (not graded, not harmful) and a data file
    "new-module-test-and-data": [
        _write(
            **{
                "calc/__init__.py": FIX_WITH_MODULE,
                "calc/ops.py": OPS,
                "calc/data/table.json": TABLE,
                "tests/test_ops.py": "def test_ops():\n    assert True\n",
            }
        )
    ],
    # the agent's own ignore rules hide its new module from its own git: not from the patch
    "hidden-from-the-agents-git": [
        _write(**{"calc/__init__.py": FIX_WITH_MODULE, "calc/ops.py": OPS, "calc/data/table.json": TABLE}),
        "printf 'ops.py\\n' > calc/.gitignore; printf 'calc/data/\\n' >> .git/info/exclude",
    ],
    # committing the work (and moving HEAD) does not hide it
    "committed": [
        _write(**{"calc/__init__.py": FIX_WITH_MODULE, "calc/ops.py": OPS, "calc/data/table.json": TABLE}),
        "git add -A && git -c user.name=a -c user.email=a@a commit -qm fix && git log --oneline | wc -l",
    ],
    # the fix at the second attempt, in the same container: what attempt 1 left outside the repository is
    # still there, its processes are not
    "second-attempt": [
        ["echo kept > /tmp/state; (setsid sleep 900 >/dev/null 2>&1 &); echo '# wip' >> calc/__init__.py"],
        [
            'test "$(cat /tmp/state)" = kept',
            "test \"$(ps -eo args | grep -c '^sleep 900$')\" = 0",
            _write(**{"calc/__init__.py": FIX_WITH_MODULE, "calc/ops.py": OPS, "calc/data/table.json": TABLE}),
        ],
    ],
}


@pytest.fixture(scope="module")
def legit_rows(legit, tmp_path_factory) -> tuple[dict, Path, Steps]:
    where = tmp_path_factory.mktemp("legit-run")
    specs = [legit["spec"](where / "specs", name) for name in LEGIT]
    agent = Steps(LEGIT)
    out = where / "run"
    options = RunOptions(out=out, workers=2, infra_retries=0, attempts=2, feedback="hidden")
    Runner([load_task(p) for p in specs], agent, options).run()
    rows = {}
    for row in read_results(out / "results.jsonl"):
        rows.setdefault(row.task_id, []).append(row)
    return rows, out, agent


@pytest.mark.docker
@pytest.mark.parametrize("case", list(LEGIT))
def test_legitimate_work_resolves(case, legit_rows):
    rows, out, agent = legit_rows
    final = rows[case][-1]
    grade = json.loads((out / final.dir / "grade.json").read_text())
    assert final.resolved, (
        final.outcome,
        final.note,
        grade.get("stripped"),
        (out / final.patch_path).read_text()[:3000],
    )
    assert not final.tampering and grade["channels"]["structured"] == "agrees", grade["channels"]
    patch = (out / final.patch_path).read_text()
    assert "b/calc/ops.py" in patch and "b/calc/data/table.json" in patch
    if case == "new-module-test-and-data":
        assert {(s["path"], s["reason"]) for s in grade["stripped"]} == {("tests/test_ops.py", "protected")}
    if case == "second-attempt":
        assert [r.attempt for r in rows[case]] == [1, 2] and not rows[case][0].resolved
        assert all(r.ok for r in agent.seen[case][1:3]), agent.seen[case][1:3]


PLUGIN_TESTS = textwrap.dedent("""\
    import pytest
    from aioadd import add


    @pytest.mark.asyncio
    async def test_add(answer):
        assert await add(2, 3) == 5 and answer == 42
    """)


@pytest.mark.docker
def test_a_task_whose_tests_need_pytest_plugins_resolves_with_gold(tmp_path):
    """pytest-asyncio installed in the environment (loaded by its recorded entry point, autoload off)
    and a plugin module the task names (`hidden_tests.plugins`): gold resolves, noop does not."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(
        repo,
        {
            "aioadd/__init__.py": "async def add(a, b):\n    return a - b\n",
            "answerplug.py": "import pytest\n\n\n@pytest.fixture\ndef answer():\n    return 42\n",
            "tests/test_zero.py": "import pytest\nfrom aioadd import add\n\n\n@pytest.mark.asyncio\n"
            "async def test_zero():\n    assert await add(0, 0) == 0\n",
        },
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "initial")
    base = git(repo, "rev-parse", "HEAD")
    gold = (
        "diff --git a/aioadd/__init__.py b/aioadd/__init__.py\n--- a/aioadd/__init__.py\n+++ b/aioadd/__init__.py\n"
        "@@ -1,2 +1,2 @@\n async def add(a, b):\n-    return a - b\n+    return a + b\n"
    )
    spec = {
        "id": "plugins",
        "repo": str(repo),
        "base_commit": base,
        "problem_statement": "add subtracts",
        "environment": {"setup": ["pip install -q pytest==8.3.4 pytest-asyncio==0.24.0"]},
        "hidden_tests": {
            "command": "python -m pytest -rA -p no:cacheprovider tests",
            "files": {"tests/test_add.py": PLUGIN_TESTS},
            "plugins": ["answerplug"],
        },
        "FAIL_TO_PASS": ["tests/test_add.py::test_add"],
        "PASS_TO_PASS": ["tests/test_zero.py::test_zero"],
        "gold_patch": gold,
    }
    (tmp_path / "plugins.yaml").write_text(json.dumps(spec))
    dirs = {}
    for agent, resolved in (("gold", True), ("noop", False)):
        out = tmp_path / agent
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "harness.cli",
                "run",
                str(tmp_path / "plugins.yaml"),
                "--agent",
                agent,
                "--out",
                str(out),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        row = read_results(out / "results.jsonl")[0]
        grade = json.loads((out / row.dir / "grade.json").read_text())
        assert row.resolved is resolved, (
            row.outcome,
            row.note,
            (out / row.dir / "test_output.txt").read_text()[-3000:],
        )
        dirs[agent] = out / row.dir
        if resolved:
            assert grade["channels"]["structured"] == "agrees" and not row.tampering, grade["channels"]
    output = (dirs["gold"] / "test_output.txt").read_text()
    assert "plugins: asyncio-0.24.0" in output and "PASSED tests/test_add.py::test_add" in output


@pytest.mark.docker
def test_an_expected_xfail_counts_and_a_regrade_of_an_unchanged_run_changes_nothing(legit, tmp_path):
    """A FAIL_TO_PASS test the task lists in expected_xfail passes when it xfails; the same run,
    re-graded, keeps its rows and verdicts."""
    xfail_test = (
        "import pytest\n\n\n@pytest.mark.xfail(reason='known', strict=True)\ndef test_add():\n    assert False\n"
    )
    spec = legit["spec"](
        tmp_path,
        "xfail",
        hidden_tests={
            "command": "python -m pytest -rA -p no:cacheprovider tests",
            "files": {"tests/test_add.py": xfail_test},
        },
        expected_xfail=[ADD_ID],
        gold_patch="",
    )
    task = load_task(spec)
    agent = Steps({"xfail": ["echo '# touched' >> calc/__init__.py"]})
    out = tmp_path / "run"
    row = Runner([task], agent, RunOptions(out=out, infra_retries=0)).run()[0]
    assert row.resolved and row.tests[ADD_ID] == "XFAIL", (row.outcome, row.note)
    new = tmp_path / "regraded"
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "regrade", str(out), "--out", str(new)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    again = read_results(new / "results.jsonl")
    assert [(r.task_id, r.attempt, r.outcome) for r in again] == [(row.task_id, row.attempt, row.outcome)]
    assert "0 changed outcome" in done.stdout


def test_regrade_reads_a_saved_patch_byte_for_byte(tmp_path):
    """A CRLF file's patch keeps its CRs when a run is regraded (read_text() turned them into LF)."""
    from harness.run.regrade import read_patch

    patch = "diff --git a/w.txt b/w.txt\n--- a/w.txt\n+++ b/w.txt\n@@ -1 +1 @@\n-a\r\n+b\r\n"
    (tmp_path / "patch.diff").write_bytes(patch.encode())
    assert read_patch(tmp_path / "patch.diff") == patch


def test_pytest_9_subtests_are_read_alike_from_both_channels(tmp_path):
    """A real pytest (9, whose unittest subTest support is built in) with pytest-reportlog: a failed
    subtest whose parameters hold spaces (python-slugify 9.1's `SUBFAILED(separator='-', limit=13)`),
    passed subtests counted in the closing line ("465 passed, 24 subtests passed" in cachetools 8.0's run); both
    channels agree, and the failed subtest fails its test."""
    write(
        tmp_path,
        {
            "test_sub.py": (
                "import unittest\n\n\nclass T(unittest.TestCase):\n"
                "    def test_a(self):\n        for x in (1, 2, 3):\n"
                "            with self.subTest(x=x, sep='a b'):\n                self.assertNotEqual(x, 2)\n\n"
                "    def test_b(self):\n        for x in (1, 2):\n            with self.subTest(x=x):\n"
                "                self.assertTrue(x)\n\n    def test_c(self):\n        pass\n"
            )
        },
    )
    log = tmp_path / "report.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    runs = []
    for extra in ([], ["-q"]):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-rA",
                "-p",
                "no:cacheprovider",
                "--color=no",
                "-p",
                "pytest_reportlog.plugin",
                f"--report-log={log}",
                *extra,
            ],
            cwd=tmp_path,
            env={**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            capture_output=True,
            text=True,
        )
        runs.append(proc.stdout)
        setup = RunSetup(report_path=str(log), anchor=f"generated report log file: {log}")
        report = PytestParser().parse(proc.stdout, log.read_bytes(), setup=setup, exit_code=proc.returncode)
        assert report.consistent, (report.why, proc.stdout[-1500:])
        assert report.statuses == {
            "test_sub.py::T::test_a": "FAILED",
            "test_sub.py::T::test_b": "PASSED",
            "test_sub.py::T::test_c": "PASSED",
        }
    assert any("subtests passed" in out for out in runs), runs[-1][-300:]


def test_a_run_killed_by_a_signal_is_not_suspected_tampering():
    """The memory limit's killer (SIGKILL: exit 137) ends pytest mid-run: no summary, a structured
    report cut before the session's end. The tests did not run to the end; nothing disagrees."""
    out = (
        "============================= test session starts ==============================\ncollected 2 items\n\nt.py ."
    )
    cut = _log(*REAL).rsplit(b"\n", 2)[0] + b"\n"
    report = PytestParser().parse(out, cut, setup=SETUP, exit_code=137)
    assert not report.consistent and not report.disagreement, report.disagreement
    assert "signal 9" in report.why
    # a run that exits on its own with the report cut is still flagged
    report = PytestParser().parse(out, cut, setup=SETUP, exit_code=1)
    assert "session finish" in report.disagreement
