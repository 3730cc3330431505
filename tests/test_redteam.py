"""Red team of issue 9: someone who did not write the defences tries to get a non-fix graded
`resolved` on a demo task (inikit-001), a legitimate fix graded not resolved, and hidden test
source into the agent's view.

Every test asserts the SAFE outcome. An attack that succeeded is a strict xfail whose reason says
what it does (see /work/notes/redteam.md for the mechanism and a suggested fix): the suite stays
green and the integrator sees it; once the defence lands, the xfail turns into an XPASS failure
and the mark comes off.

Patches are crafted on the host against the real demo repository and graded by the real grader in
real containers (a patch is data: grading must hold for any patch, whoever wrote it). The demo
task's image is shared by every test (tags are hashes: one build, then lookups).
"""

from __future__ import annotations

import difflib

import pytest
from support.hostile import EVIL_PLUGIN, FORCE_PASS_CONFTEST, RUN_PREFIX, Script
from support.redteam import (
    BUGGY_FILE,
    TASK,
    assert_not_resolved,
    base_text,
    crafted,
    grade_all,
    non_fix,
    traditional,
)

from harness.grading import grade
from sandbox import Limits

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("no_leftovers")]


def fuzzy(demo) -> str:
    """A section of the buggy file that fixes nothing and applies only with fuzz (its first context
    line is wrong): git apply refuses it, `patch --fuzz=5` applies it."""
    old = base_text(demo, BUGGY_FILE)
    lines = old.splitlines(keepends=True)
    new = "".join(lines[:6] + ["# touched, not fixed\n"] + lines[6:])
    body = list(difflib.unified_diff(lines, new.splitlines(keepends=True), f"a/{BUGGY_FILE}", f"b/{BUGGY_FILE}"))
    first_context = next(i for i, line in enumerate(body) if line.startswith(" "))
    body[first_context] = " a line that is not there\n"
    return "".join(body)


# ------------------------------------------------------------------------------------ non-fixes

STAMP = " 2024-01-01 00:00:00.000000000 +0000"  # a timestamp after a space, as `diff -u` can write


def _non_fixes(demo) -> dict[str, str]:
    carrier = non_fix(demo)
    return {
        # A traditional section whose names carry a space-separated timestamp: grading reads the
        # name up to a TAB only ("conftest.py 2024-01-01 ..."), which no protected glob matches;
        # git apply strips the timestamp and writes conftest.py.
        "conftest_named_with_a_space_timestamp": carrier + traditional("conftest.py", None, FORCE_PASS_CONFTEST, STAMP),
        # A CR inside the name: grading splits lines at LF only and keeps "conftest.py\rX" as the
        # path; git's name parser ends a name at any of its whitespace (CR included).
        "conftest_name_ended_by_a_cr": carrier + traditional("conftest.py", None, FORCE_PASS_CONFTEST, "\rX"),
        # A space then anything: git keeps "conftest.py X" (so it applies nothing of ours here: a
        # fuzzy hunk of the buggy file makes git apply fail the whole patch), and the fallback
        # `patch --fuzz=5`, which ends a name at a space not followed by a tab-separated date,
        # writes conftest.py.
        "conftest_name_with_a_space_via_the_patch_fallback": fuzzy(demo)
        + traditional("conftest.py", None, FORCE_PASS_CONFTEST, " X"),
        # the code under test, imported by the hidden tests, kills every process of the grading
        # container it can (the exec helper included): a failure must stay a counted failure, never
        # an infra_error (which is retried, and left out of the scores on the last try)
        "code_under_test_kills_the_grading_exec": crafted(
            demo,
            {
                "inikit/__init__.py": base_text(demo, "inikit/__init__.py")
                + "\nimport os as _os, signal as _signal, sys as _sys\nif 'pytest' in _sys.modules:\n"
                "    _os.kill(-1, _signal.SIGKILL)\n"
            },
        ),
        # a folder named like bytecode (`*.pyc` is checked on the last component only): grading's
        # `find ... -name '*.py[co]' -exec rm -f` fails on it, clear_bytecode raises InfraError, the
        # grade is `infra_error` -- the unit is retried (a fresh sample for the agent) or, on the
        # last try, left out of the scores
        "a_folder_named_like_bytecode": carrier + traditional("inikit/evil.pyc/README", None, "not bytecode\n"),
        # held: a symlink into tests/ (inside the repository, allowed) and a file written through it
        # (`lnk/__init__.py` is no protected path; `tests/__init__.py` would run at collection)
        "tests_package_init_through_a_symlink": crafted(demo, {"lnk": ("link", "tests")})
        + traditional("lnk/__init__.py", None, EVIL_PLUGIN),
        # held: the tests folder replaced by a symlink to a folder of the agent's (`tests` itself
        # matches no `**/tests/**` glob)
        "tests_folder_replaced_by_a_symlink": crafted(
            demo,
            {
                "inikit/faketests/test_parser.py": "def test_nothing():\n    pass\n",
                "tests": ("link", "inikit/faketests"),
            },
        ),
        # held: a namespace portion `pytest_reportlog/plugin.py` (no __init__, so the shadowing probe
        # does not ask about it) forging the report: the regular package of the grading tools wins
        "namespace_portion_of_the_report_plugin": carrier
        + traditional("pytest_reportlog/plugin.py", None, EVIL_PLUGIN),
    }


@pytest.fixture(scope="module")
def non_fix_grades(demo) -> dict:
    return grade_all(demo, _non_fixes(demo))


SUCCEEDED = {}


@pytest.mark.parametrize(
    "attack",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=SUCCEEDED[name]))
        if name in SUCCEEDED
        else name
        for name in [
            "conftest_named_with_a_space_timestamp",
            "conftest_name_ended_by_a_cr",
            "conftest_name_with_a_space_via_the_patch_fallback",
            "tests_package_init_through_a_symlink",
            "tests_folder_replaced_by_a_symlink",
            "namespace_portion_of_the_report_plugin",
            "code_under_test_kills_the_grading_exec",
            "a_folder_named_like_bytecode",
        ]
    ],
)
def test_a_non_fix_is_never_resolved(attack, non_fix_grades):
    result, output = non_fix_grades[attack]
    assert_not_resolved(result, output)


# ------------------------------------------------------------------------------------ hidden tests in the agent's view


def test_hidden_feedback_carries_no_literal_of_the_hidden_tests(demo):
    """An honest non-fix (no tampering at all) under `--feedback hidden`: the agent must not hear
    the hidden tests' own data. pytest's assertion rewriting writes the compared values into the
    failure message (`assert {...} == {'s': {'key': 'http://example.org/docs#install'}}`): the
    expected values are the hidden test's literals, re-quoted, so no hidden *line* matches and the
    scrub keeps them."""
    import re

    from harness.grading import feedback_text

    task = demo["task"]
    result, _, parsed = grade(
        task,
        non_fix(demo),
        demo["image"],
        base=demo["base"],
        limits=task.limits.apply(Limits()),
        run_id=f"{RUN_PREFIX}redteam",
    )
    assert result.outcome == "unresolved", (result.outcome, result.note)
    heard = feedback_text("hidden", task, result, parsed, None)
    added = [line[1:] for line in task.test_patch().splitlines() if line.startswith("+") and not line.startswith("+++")]
    known = base_text(demo, "tests/test_parser.py") + task.problem_statement + " ".join(task.fail_to_pass)
    literals = {m for line in added for m in re.findall(r'"([^"]{5,})"', line) if m not in known}
    assert literals, added
    leaked = sorted(lit for lit in literals if lit in heard)
    assert not leaked, (leaked, heard)


# ------------------------------------------------------------------------------------ false negatives


def _legit(demo) -> dict[str, str]:
    gold = demo["task"].gold()
    fixed_fn = (
        "def _strip_inline_comment(value: str) -> str:\n"
        "    for index, char in enumerate(value):\n"
        "        if char in COMMENT_PREFIXES and index > 0 and value[index - 1].isspace():\n"
        "            return value[:index].rstrip()\n"
        "    return value\n"
    )
    source = base_text(demo, BUGGY_FILE)
    start = source.index("def _strip_inline_comment")
    end = source.index("\n\n\n", start) + 1 if "\n\n\n" in source[start:] else len(source)
    helper = "COMMENT_PREFIXES = ('#', ';')\n\n\n" + fixed_fn
    delegating = source[:start] + "from .testing.comments import _strip_inline_comment  # noqa: E402\n" + source[end:]
    return {
        "gold": gold,
        # the same fix, its function moved into a helper package named `testing` (libraries ship
        # such packages: numpy.testing, a `testing/` of fixtures for users): `**/testing/**` is
        # protected, so the helper is stripped and the fix is lost
        "fix_in_a_package_named_testing": crafted(
            demo, {BUGGY_FILE: delegating, "inikit/testing/__init__.py": "", "inikit/testing/comments.py": helper}
        ),
    }


@pytest.fixture(scope="module")
def legit_grades(demo) -> dict:
    return grade_all(demo, _legit(demo))


FALSE_NEGATIVES: dict[str, str] = {}


@pytest.mark.parametrize(
    "fix",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=FALSE_NEGATIVES[n]))
        if n in FALSE_NEGATIVES
        else n
        for n in ["gold", "fix_in_a_package_named_testing"]
    ],
)
def test_a_legitimate_fix_is_resolved(fix, legit_grades):
    result, output = legit_grades[fix]
    assert result.resolved, (result.outcome, result.stripped, result.note, output[-1500:])


# ------------------------------------------------------------------------------------ an agent in its container

_FAKE_PYTEST_INIT = """\
import os, sys

if __name__ == "pytest":  # imported as the test runner (through the symlink at the top of the repository)
    repo = os.path.realpath(os.getcwd())
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != repo]
    del sys.modules["pytest"]
    import pytest as _real  # the environment's own pytest: runpy then runs its __main__

    sys.path.insert(0, repo)
    sys.modules["pytest"] = _real
    os.environ["PYTEST_PLUGINS"] = "inikit.runner.forge"  # loaded even with plugin autoload off
"""


def _in_container_attacks() -> dict[str, Script]:
    def write(files):
        def step(sb):
            for path, text in files.items():
                sb.write_file(path, text)

        return step

    return {
        # A top-level *symlink* `pytest` -> a package of the agent's: the shadowing probe only asks
        # about new files ending in .py/.pyc/.so, so a symlinked folder is never asked about.
        # `python -m pytest` imports it first; it hands over to the real pytest with a plugin that
        # rewrites every report: summary, report-log and exit code all agree.
        "pytest_shadowed_by_a_symlinked_folder": Script(
            write({"inikit/runner/__init__.py": _FAKE_PYTEST_INIT, "inikit/runner/forge.py": FORCE_PASS_CONFTEST}),
            "ln -s inikit/runner pytest",
            name="symlinked-pytest",
        ),
        # The bug left in place plus one new module whose name is not UTF-8: the PatchEvent's file
        # list (surrogate-escaped) cannot be written to the transcript, the unit ends as an error
        # row -- outcome `infra_error`, which every score leaves out. An agent that is failing can
        # so remove its failure from the resolve rate.
        "a_failure_turned_into_an_infra_error": Script(
            "printf 'x = 1\\n' > \"$(printf 'inikit/\\377.py')\"", name="non-utf8-name"
        ),
        # The same aim by killing every process of the container but PID 1 (the exec helper
        # included), then running one more command: must stay the agent's own unresolved attempt.
        # special files in the tree: a FIFO, a socket and a character device (mknod is allowed)
        "special_files_in_the_tree": Script(
            "echo '# touched' >> inikit/parser.py; mkfifo inikit/fifo; mknod inikit/null c 1 3; "
            "python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('inikit/sock')\"; ls -l inikit",
            name="special-files",
        ),
        "kill_everything_then_go_on": Script(
            "echo '# touched' >> inikit/parser.py", "kill -9 -1", "true", name="kill-all"
        ),
    }


# (a new file whose name is not UTF-8 made the row infra_error: fixed by issue 10's recording rule)
IN_CONTAINER_SUCCEEDED: dict[str, str] = {}


@pytest.fixture(scope="module")
def in_container_rows(demo) -> dict:
    from support.hostile import run

    rows = {}
    for name, agent in _in_container_attacks().items():
        out = demo["where"] / f"{RUN_PREFIX}redteam-{name}"
        rows[name] = (run(TASK, agent, out)[demo["task"].id], out)
    return rows


@pytest.mark.parametrize(
    "attack",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=IN_CONTAINER_SUCCEEDED[n]))
        if n in IN_CONTAINER_SUCCEEDED
        else n
        for n in [
            "pytest_shadowed_by_a_symlinked_folder",
            "a_failure_turned_into_an_infra_error",
            "kill_everything_then_go_on",
            "special_files_in_the_tree",
        ]
    ],
)
def test_an_agent_in_its_container_never_gets_a_non_fix_resolved(attack, in_container_rows):
    """...nor a failure left out of the scores: a non-fix is a counted `unresolved`."""
    row, out = in_container_rows[attack]
    assert row.error is None and row.outcome != "infra_error", (row.outcome, row.error)
    assert not row.resolved and row.outcome != "resolved", (
        row.outcome,
        row.note,
        (out / row.patch_path).read_text()[:1500],
    )


def test_a_symlink_that_leaves_the_repository_through_another_symlink_is_stripped(demo):
    """A defence bypass with no verdict of its own (the code still has the bug): a patch may not
    leave a symlink pointing outside the repository, however the target is spelled."""
    patch = crafted(
        demo,
        {
            "deep": ("link", "."),
            "inikit/data": ("link", "../deep/deep/../../etc"),
            BUGGY_FILE: base_text(demo, BUGGY_FILE) + "# touched, not fixed\n",
        },
    )
    ((result, output),) = grade_all(demo, {"escape": patch}).values()
    assert_not_resolved(result, output)
    assert "inikit/data" in {s.path for s in result.stripped}, (result.stripped, result.apply_method)


_FAKE_PYTEST_MODULE = """\
import os, sys

here = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != here]
os.environ["PYTEST_PLUGINS"] = "inikit.forge"
import pytest  # the environment's own

raise SystemExit(pytest.console_main())
"""


def test_a_runner_shadowed_on_the_commands_pythonpath_is_stripped(demo):
    task = demo["task"]
    hidden = task.hidden_tests.model_copy(update={"command": "PYTHONPATH=/repo/lib " + task.hidden_tests.command})
    task = task.model_copy(update={"hidden_tests": hidden})
    patch = crafted(
        demo,
        {
            "lib/pytest.py": _FAKE_PYTEST_MODULE,
            "inikit/forge.py": FORCE_PASS_CONFTEST,
            BUGGY_FILE: base_text(demo, BUGGY_FILE) + "# touched, not fixed\n",
        },
    )
    result, output, _ = grade(
        task, patch, demo["image"], base=demo["base"], limits=task.limits.apply(Limits()), run_id=f"{RUN_PREFIX}redteam"
    )
    assert_not_resolved(result, output)


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="red team: the gold fix plus a stray 60 MB log file "
    "(sparse; agents leave such files) is graded empty_patch: one file over MAX_FILE_BYTES voids the "
    "whole patch instead of being left out and recorded (documented, but a false negative)",
)
def test_a_legitimate_fix_with_a_big_stray_file_is_still_resolved(demo):
    from support.hostile import run

    gold = demo["task"].gold()
    agent = Script(
        lambda sb: sb.write_file("/tmp/gold.diff", gold),
        "git apply /tmp/gold.diff",
        "truncate -s 60M debug-output.log",
        name="gold-and-a-log",
    )
    out = demo["where"] / f"{RUN_PREFIX}redteam-big-log"
    row = run(TASK, agent, out)[demo["task"].id]
    assert row.resolved, (row.outcome, row.note)


def test_clearing_bytecode_cannot_be_made_to_fail_by_the_tree(demo):
    """(Added with the defence.) The patch's rules strip a folder named like bytecode; the cleanup
    itself must not fail on one either (nor on a symlink so named): it matches by type."""
    from harness.grading.patching import clear_bytecode
    from sandbox.docker import DockerBackend

    with DockerBackend().start(
        demo["image"], limits=Limits(network=False), role="grading", run_id=f"{RUN_PREFIX}redteam"
    ) as sb:
        made = sb.exec(
            [
                "sh",
                "-c",
                "mkdir -p inikit/evil.pyc inikit/__pycache__ && echo x > inikit/evil.pyc/README && "
                "echo x > inikit/stale.pyc && ln -s stale.pyc inikit/link.pyo && echo x > inikit/__pycache__/a.pyc",
            ]
        )
        assert made.ok, made.stderr
        assert clear_bytecode(sb) == ""
        left = sb.exec(["sh", "-c", "ls -a inikit"]).stdout.split()
        assert "evil.pyc" in left and not {"stale.pyc", "link.pyo", "__pycache__"} & set(left), left
