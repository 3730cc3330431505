"""An environment is proven before a task counts (issue 20, item 2; docs/tasks.md "Environment
health"): the check records the test command's health at base and quarantines a task whose
environment is unhealthy, naming the modules; a skipped test is neither failing nor passing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support import git, write
from support.shout import shout_task

from harness.authoring.check import (
    NOT_CHECKED,
    CheckOptions,
    Quarantine,
    Verdict,
    _judge,
    check_task,
    environment_health,
    missing_module,
    read_verdict,
)
from harness.authoring.testdeps import marker_excluded
from harness.parsers import ERROR, FAILED, PASSED, SKIPPED, RunSetup, TestReport, get_parser
from harness.tasks import load_task

PYTEST = get_parser("pytest")

RICH_TESTS = """\
import pytest

from pkg import shout

try:
    import rich
except ImportError:
    rich = None


@pytest.mark.skipif(rich is None, reason="Needs Rich.")
def test_shout_in_colour():
    assert shout("a") == "A"


@pytest.mark.skipif(rich is None, reason="Needs Rich.")
def test_shout_in_a_table():
    assert shout("b") == "B"


def test_plain():
    assert shout("a") == "A"
"""


@pytest.mark.parametrize(
    ("text", "module"),
    [
        ("Needs Rich.", "rich"),
        ("could not import 'yaml': No module named 'yaml'", "yaml"),
        ("ModuleNotFoundError: No module named 'rich.console'", "rich"),
        ("requires numpy", "numpy"),
        ("pandas is not installed", "pandas"),
        ("requires python3.12", None),
        ("needs the network", None),
        ("slow test", None),
    ],
)
def test_missing_modules_are_read_from_skip_reasons_and_errors(text, module):
    assert missing_module(text) == module


def _report(statuses: dict[str, str], skips: dict[str, str] | None = None, **kw) -> TestReport:
    return TestReport(statuses=statuses, skip_reasons=skips or {}, **kw)


def test_health_names_the_missing_module_beyond_five_percent():
    base = _report(
        {"t.py::a": PASSED, "t.py::b": FAILED, "t.py::c": SKIPPED, "t.py::d": SKIPPED},
        {"t.py::c": "Needs Rich.", "t.py::d": "Needs Rich."},
    )
    health = environment_health(base, base)
    assert (health.collected, health.passed, health.failed, health.skipped) == (4, 1, 1, 2)
    assert not health.healthy and health.import_errors == {"rich": 2}
    assert health.summary == "2 of 4 tests skipped: Needs Rich. (add `rich` to extra_requirements?)"


def test_a_few_skips_and_errors_the_fix_explains_are_healthy():
    many = {f"t.py::p{i}": PASSED for i in range(40)}
    base = _report({**many, "t.py::s": SKIPPED, "t.py::e": ERROR}, {"t.py::s": "Needs Rich."})
    gold = _report({**many, "t.py::s": SKIPPED, "t.py::e": PASSED})  # the error is the fix's to mend
    assert environment_health(base, gold).healthy
    # a new test file that cannot import what the fix adds is expected at base; with gold it collects
    broken = _report(many, collection_errors=["t_new.py"], collection_messages={"t_new.py": "E ImportError: x"})
    assert environment_health(broken, _report(many)).healthy
    stuck = environment_health(broken, _report(many, collection_errors=["t_new.py"]))
    assert not stuck.healthy and "cannot be collected" in stuck.summary


def test_a_skipped_test_is_never_said_to_already_pass():
    task = load_task_stub(fail_to_pass=["t.py::new"], pass_to_pass=["t.py::old"])
    runs_base = [{"t.py::new": SKIPPED, "t.py::old": PASSED}] * 2
    runs_gold = [{"t.py::new": SKIPPED, "t.py::old": PASSED}] * 2
    with pytest.raises(Quarantine) as listed:
        _judge(task, Verdict(task_id="x"), False, runs_base, runs_gold)
    assert "already passes" not in listed.value.reason and "skipped at base" in listed.value.reason
    with pytest.raises(Quarantine) as found:
        _judge(task, Verdict(task_id="x"), True, runs_base, runs_gold)
    assert "skipped at base or with gold, neither failing nor passing: t.py::new" in found.value.detail


def load_task_stub(**lists):
    from harness.tasks import Task

    return Task.model_validate(
        {
            "id": "x",
            "repo": ".",
            "base_commit": "0" * 40,
            "problem_statement": "p",
            "hidden_tests": {"command": "python -m pytest -rA"},
            "gold_patch": "diff",
            "FAIL_TO_PASS": lists["fail_to_pass"],
            "PASS_TO_PASS": lists["pass_to_pass"],
        }
    )


def test_a_module_skipped_whole_is_counted_as_pytest_counts_it(tmp_path):
    """pytest counts a module that importorskip skips in its closing line; the structured report
    must too, or every such run reads as channels that disagree (suspected tampering)."""
    write(
        tmp_path,
        {
            "tests/test_mod.py": 'import pytest\n\nrich = pytest.importorskip("no_such_rich")\n\n\ndef test_a():\n    pass\n',
            "tests/test_b.py": "def test_b():\n    pass\n",
        },
    )
    log = tmp_path / "r.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", f"--report-log={log}", "tests"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    setup = RunSetup(report_path=str(log), anchor=f"generated report log file: {log}")
    report = PYTEST.parse(done.stdout, log.read_bytes(), setup=setup, exit_code=done.returncode)
    assert report.consistent, report.why
    assert report.skip_reasons == {
        "tests/test_mod.py": "could not import 'no_such_rich': No module named 'no_such_rich'"
    }


@pytest.mark.docker
def test_new_tests_skipped_for_a_missing_optional_dependency_quarantine_the_task(tmp_path):
    repo = tmp_path / "rich"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(
        repo,
        {"pkg/__init__.py": "def shout(text):\n    return text\n", "tests/test_old.py": "def test_old():\n    pass\n"},
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    write(repo, {"tests/test_shout.py": RICH_TESTS})
    git(repo, "add", "-A")
    test_patch = git(repo, "diff", "--cached", "HEAD") + "\n"
    git(repo, "reset", "-q", "--hard")
    (repo / "tests" / "test_shout.py").unlink(missing_ok=True)
    write(repo, {"pkg/__init__.py": "def shout(text):\n    return text.upper()\n"})
    gold = git(repo, "diff", "HEAD") + "\n"
    git(repo, "checkout", "-q", ".")
    spec = tmp_path / "rich.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "id": "rich",
                "quarantined": NOT_CHECKED,
                "repo": str(repo),
                "base_commit": base,
                "problem_statement": "shout() should upper-case its text",
                "environment": {"setup": ["pip install pytest==8.3.4"]},
                "hidden_tests": {"command": "python -m pytest -rA -p no:cacheprovider tests", "patch": test_patch},
                "gold_patch": gold,
                "FAIL_TO_PASS": [],
                "PASS_TO_PASS": [],
            }
        )
    )
    check_task(load_task(spec), CheckOptions(discover=True, repeats=1))
    verdict = read_verdict(spec)
    assert verdict is not None and verdict.health is not None
    health = verdict.health
    assert (health.collected, health.passed, health.failed, health.skipped) == (4, 1, 1, 2)
    assert health.skip_reasons == {"Needs Rich.": 2} and health.import_errors == {"rich": 2}
    assert verdict.quarantined == (
        "environment unhealthy: 2 of 4 tests skipped: Needs Rich. (add `rich` to extra_requirements?)"
    )
    assert Path(spec).read_text().count("environment unhealthy") == 1  # the spec says why, too


def test_a_verdict_written_before_schema_2_reads_and_is_stale(tmp_path):
    """A check.json of schema 1 (`format: 1`, no seeds, no health) still loads; the task is stale:
    its check neither varied the hash seed nor read the environment's health."""
    import json

    from harness.authoring.check import VERDICT_SCHEMA, check_status, verdict_path

    spec = tmp_path / "t.yaml"
    spec.write_text("id: t-1\nrepo: .\nbase_commit: abc\nproblem_statement: x\nhidden_tests: {command: pytest}\n"
                    "FAIL_TO_PASS: [t.py::a]\n")  # fmt: skip
    task = load_task(spec)
    old = {"format": 1, "task_id": "t-1", "spec_hash": task.content_hash(), "passed": True, "runs": {"t.py::a": "F P"}}
    verdict_path(spec).write_text(json.dumps(old))
    verdict = read_verdict(spec)
    assert verdict is not None and verdict.schema_version == 1 and verdict.health is None
    assert check_status(task, look_up_image=False)[0] == "stale"
    verdict_path(spec).write_text(Verdict(task_id="t-1", spec_hash=task.content_hash(), passed=True).model_dump_json())
    assert json.loads(verdict_path(spec).read_text())["schema_version"] == VERDICT_SCHEMA
    assert check_status(task, look_up_image=False)[0] == "checked"


@pytest.mark.docker
def test_a_base_run_killed_by_a_signal_is_quarantined_as_killed_not_as_untrusted(tmp_path):
    """cachetools 8.0.2's new test loops at base, growing a cache until the memory limit's killer
    ends pytest: its structured report stops mid-run. That is the tests being killed, said so, not
    results that "cannot be trusted" (grading's word for suspected tampering). Here the test sends
    itself the killer's SIGKILL."""
    spec = shout_task(
        tmp_path,
        "killed",
        "import os\nimport signal\n\nfrom pkg import shout\n\n\ndef test_shout():\n"
        "    if shout('a') != 'A':\n        os.kill(os.getpid(), signal.SIGKILL)\n",
    )
    check_task(load_task(spec), CheckOptions(discover=True, repeats=1))
    verdict = read_verdict(spec)
    assert verdict is not None
    assert verdict.quarantined == "tests were killed", (verdict.quarantined, verdict.detail)
    assert "signal 9" in verdict.detail and "memory" in verdict.detail


def test_skips_for_a_module_the_projects_own_markers_leave_out_on_this_python_are_healthy():
    # as pyproject-metadata 0.12: `exceptiongroup>=1.0;python_version<"3.11"` (optional), and its
    # tests skip "exceptiongroup is not installed": on 3.11 its own CI skips them too
    many = {f"t.py::p{i}": PASSED for i in range(10)}
    skips = {f"t.py::g{i}": "exceptiongroup is not installed" for i in range(5)}
    base = _report({**many, **dict.fromkeys(skips, SKIPPED)}, skips)
    assert not environment_health(base, base).healthy
    health = environment_health(base, base, not_here={"exceptiongroup"})
    assert health.healthy and health.skipped == 5 and health.import_errors == {}
    assert health.skip_reasons == {"exceptiongroup is not installed": 5}  # still named
    # another module's skips still count
    other = {f"t.py::r{i}": "Needs Rich." for i in range(5)}
    both = _report({**many, **dict.fromkeys(skips, SKIPPED), **dict.fromkeys(other, SKIPPED)}, {**skips, **other})
    assert environment_health(both, both, not_here={"exceptiongroup"}).import_errors == {"rich": 5}


PYPROJECT_MARKERS = """[project]
name = "demo"
dependencies = ["packaging>=23", 'tomli; python_version < "3.11"']

[project.optional-dependencies]
test = ['exceptiongroup>=1.0;python_version<"3.11"', "pytest>=7", 'rich; python_version >= "3.8"']
"""


def test_modules_declared_only_under_markers_false_on_the_interpreter_are_named():
    texts = {"pyproject.toml": PYPROJECT_MARKERS, "requirements-dev.txt": "tomli==2.0.1\n"}
    assert marker_excluded(texts, (3, 11, 2)) == {"exceptiongroup"}  # tomli is also asked for unconditionally
    assert marker_excluded(texts, (3, 10, 12)) == set()
    assert marker_excluded(
        {"setup.cfg": "[options]\ninstall_requires =\n    exceptiongroup; python_version<'3.11'\n"}, (3, 12, 0)
    ) == {"exceptiongroup"}


def test_test_ids_that_differ_by_a_memory_address_are_said_so():
    # as annotated-types 0.7.0: parametrized ids hold an object's default repr, `<... object at 0x...>`;
    # every run had the same hash seed, so "depend on the test order" misled
    task = load_task_stub(fail_to_pass=["t.py::ok"], pass_to_pass=[])
    runs = [{"t.py::ok": PASSED, f"t.py::case[<demo.Meta object at 0x7f84332ee9{n}0>]": PASSED} for n in range(3)]
    with pytest.raises(Quarantine) as q:
        _judge(task, Verdict(task_id="x", seeds=[{"PYTHONHASHSEED": "0"}] * 6), True, runs, runs)
    assert q.value.reason.startswith("test ids hold memory addresses"), q.value.reason
    assert "object at 0x7f84332ee900" in q.value.detail


def _hanging_task(tmp_path: Path, timeouts: dict) -> Path:
    """A task whose new test loops forever at base (as cachetools 8.0.2's `test_ttl_iter_modify`,
    which inserts into the cache it iterates) and passes with gold; an old test passes throughout."""
    return shout_task(
        tmp_path,
        "hangs",
        "from pkg import shout\n\n\ndef test_shout():\n    n = 0\n"
        "    while shout('a') != 'A':\n        n += 1\n\n\ndef test_after():\n    assert shout('') == ''\n",
        timeouts=timeouts,
    )


@pytest.mark.docker
def test_a_test_that_hangs_at_base_fails_there_and_the_other_results_are_kept(tmp_path):
    """A test that never ends at base is a failing test, not an environment that gives no reading:
    wholeloop's per-test time limit (timeouts.test_s) fails it where it hangs and pytest goes on;
    the whole run's limit (tests_s) is not reached. Before it, the check quarantined the task "tests
    timed out" (or "tests were killed" when the loop filled the memory first)."""
    spec = _hanging_task(tmp_path, {"tests_s": 60, "test_s": 3})
    check_task(load_task(spec), CheckOptions(discover=True, repeats=2))
    verdict = read_verdict(spec)
    assert verdict is not None
    assert verdict.passed, (verdict.quarantined, verdict.detail)
    assert verdict.fail_to_pass == ["tests/test_shout.py::test_shout"]
    assert verdict.pass_to_pass == ["tests/test_old.py::test_old", "tests/test_shout.py::test_after"]
    assert verdict.runs["tests/test_shout.py::test_shout"] == "FF PP"
    assert verdict.health is not None and verdict.health.healthy


def test_a_skip_for_a_missing_program_names_its_debian_package_and_the_key_to_add_it():
    # dunamai: "Requires Mercurial / Darcs / Subversion" were hinted as extra_requirements (Python
    # packages); they are programs: the hint names Debian's packages and wholeloop.yaml's key
    many = {f"t.py::p{i}": PASSED for i in range(10)}
    skips = {"t.py::hg": "Requires Mercurial", "t.py::svn": "Requires Subversion", "t.py::rich": "Needs Rich."}
    base = _report({**many, **dict.fromkeys(skips, SKIPPED)}, skips)
    health = environment_health(base, base)
    assert not health.healthy
    assert "system_packages: [mercurial, subversion]" in health.summary, health.summary
    assert "`rich` to extra_requirements" in health.summary and "mercurial`" not in health.summary


def _address_task(tmp_path: Path, name: str, cases: str) -> Path:
    return shout_task(
        tmp_path,
        name,
        "import pytest\n\nfrom pkg import shout\n\n\nclass Case:\n    pass\n\n\n"
        f"@pytest.mark.parametrize('case', [{cases}], ids=repr)\n"
        "def test_shout(case):\n    assert shout('a') == 'A'\n",
    )


@pytest.mark.docker
def test_ids_holding_an_objects_address_are_checked_and_ids_that_then_collide_are_refused(tmp_path):
    """annotated-types 0.7.0: ids with `<... object at 0x7f...>` differ in every run; read with the
    address as one token they are the same in every run and the task is kept. Two tests whose ids
    differ only by an address cannot be told apart: refused, naming them."""
    spec = _address_task(tmp_path, "addresses", "Case()")
    check_task(load_task(spec), CheckOptions(discover=True, repeats=2))
    verdict = read_verdict(spec)
    assert verdict is not None and verdict.passed, (verdict.quarantined, verdict.detail)
    assert verdict.fail_to_pass == ["tests/test_shout.py::test_shout[<test_shout.Case object at 0xADDRESS>]"]
    spec = _address_task(tmp_path, "collide", "Case(), Case()")
    check_task(load_task(spec), CheckOptions(discover=True, repeats=2))
    verdict = read_verdict(spec)
    assert verdict is not None and not verdict.passed
    assert (verdict.quarantined or "").startswith("test ids hold memory addresses: 1 id(s) of a base run"), (
        verdict.quarantined
    )
    assert "(2 tests)" in verdict.detail
