import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.tasks import TaskSpecError, dump_task, load_task, load_tasks

VALID = """\
id: ok-1
repo: ../repo
base_commit: abc123
problem_statement: It breaks.
hidden_tests: {command: pytest -rA, patch: ""}
FAIL_TO_PASS: [t.py::a]
"""


def spec(tmp_path, text, name="t.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_valid_spec_resolves_paths_relative_to_the_file(tmp_path):
    task = load_task(spec(tmp_path, VALID))
    assert task.repo_source() == str((tmp_path.parent / "repo").resolve())
    assert task.fail_to_pass == ["t.py::a"] and task.pass_to_pass == []
    assert task.limits.apply(__import__("sandbox").Limits()).network is False


def test_unknown_key_names_file_and_field(tmp_path):
    path = spec(tmp_path, VALID + "enviroment: {setup: []}\n")
    with pytest.raises(TaskSpecError) as err:
        load_task(path)
    assert str(path) in str(err.value) and "enviroment: unknown key" in str(err.value)


def test_nested_errors_name_the_field(tmp_path):
    path = spec(tmp_path, VALID.replace("FAIL_TO_PASS: [t.py::a]", "FAIL_TO_PASS: []") + "limits: {cpus: -1}\n")
    message = str(pytest.raises(TaskSpecError, load_task, path).value)
    assert "FAIL_TO_PASS" in message and "limits.cpus" in message


def test_bad_yaml_and_non_mapping(tmp_path):
    assert "not valid YAML" in str(pytest.raises(TaskSpecError, load_task, spec(tmp_path, "id: [\n")).value)
    assert "mapping" in str(pytest.raises(TaskSpecError, load_task, spec(tmp_path, "- a\n")).value)


def test_duplicate_ids_and_all_bad_files_reported_together(tmp_path):
    spec(tmp_path, VALID, "a.yaml")
    spec(tmp_path, VALID, "b.yaml")
    spec(tmp_path, "id: 1\n", "c.yaml")
    message = str(pytest.raises(TaskSpecError, load_tasks, [tmp_path]).value)
    assert "also used by" in message and "c.yaml" in message


def test_missing_patch_file_is_a_clear_error(tmp_path):
    task = load_task(spec(tmp_path, VALID + "gold_patch_file: nope.diff\n"))
    assert "nope.diff" in str(pytest.raises(TaskSpecError, task.gold).value)


def test_dump_round_trips(tmp_path):
    task = load_task(spec(tmp_path, VALID.replace("It breaks.", "|\n  It breaks.\n  Badly.")))
    again = load_task(spec(tmp_path, dump_task(task), "again.yaml"))
    assert again.model_dump() == task.model_dump()


def test_validate_command_reports_bad_specs_without_traceback(tmp_path):
    spec(tmp_path, VALID + "bogus: 1\n")
    result = CliRunner().invoke(main, ["tasks", "validate", str(tmp_path)])
    assert result.exit_code == 1
    assert "bogus: unknown key" in result.output and "Traceback" not in result.output


def test_validate_reports_missing_repository(tmp_path):
    spec(tmp_path, VALID)
    result = CliRunner().invoke(main, ["tasks", "validate", str(tmp_path)])
    assert result.exit_code == 1 and "repository not found" in result.output


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("FAIL_TO_PASS", r'["t.py::a\ntests/t.py::b PASSED"]', "the control character U+000A"),
        ("FAIL_TO_PASS", r'["t.py::a\0"]', "the control character U+0000"),
        ("PASS_TO_PASS", r'["t.py::a\rt.py::b"]', "the control character U+000D"),
        ("PASS_TO_PASS", r'["t.py::\x1b[32mok"]', "the control character U+001B"),
        ("PASS_TO_PASS", r'["t.py::\u0085b"]', "the control character U+0085"),
        ("PASS_TO_PASS", r'["t.py::a\u2028b"]', "the line separator U+2028"),
        ("expected_xfail", r'["t.py::a\tb"]', "the control character U+0009"),
        ("PASS_TO_PASS", '["t.py::a", ""]', "empty"),
        ("FAIL_TO_PASS", '["  "]', "empty"),
    ],
)
def test_validate_refuses_a_test_id_with_a_control_character_or_an_empty_one(tmp_path, field, value, said):
    # Attack (issue 21): an id with a newline or NUL, or an empty PASS_TO_PASS id, was accepted;
    # a newline in an id can forge a line of the test report a parser reads.
    text = VALID if field != "FAIL_TO_PASS" else VALID.replace("FAIL_TO_PASS: [t.py::a]\n", "")
    spec(tmp_path, text + f"{field}: {value}\n")
    result = CliRunner().invoke(main, ["tasks", "validate", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert field in result.output and said in result.output and "Traceback" not in result.output


def test_ordinary_test_ids_stay_valid(tmp_path):
    ids = '["tests/t.py::test_a[x-1]", "pkg::mod::it works (ünïcode)", "TestSuite/Case#1", "a b c"]'
    task = load_task(spec(tmp_path, VALID + f"PASS_TO_PASS: {ids}\n"))
    assert len(task.pass_to_pass) == 4


def test_load_tasks_takes_one_bare_path_as_a_path(tmp_path):
    # Python callers write load_tasks("tasks/demo"); a str used to be iterated letter by letter.
    demo = Path(__file__).resolve().parents[1] / "tasks" / "demo"
    by_str = load_tasks(str(demo))
    assert [t.id for t in by_str] == [t.id for t in load_tasks([demo])]
    assert [t.id for t in load_tasks(demo)] == [t.id for t in by_str]


def test_run_names_quarantined_tasks_by_count_not_by_every_reason(tmp_path):
    """A run says how many tasks are quarantined, which, and the command that says why: it printed
    every quarantined task with its full reason (18 lines for 9 tasks, issue 28)."""
    import shutil

    from click.testing import CliRunner

    from harness.cli import main

    demo = Path(__file__).resolve().parents[1] / "tasks" / "demo"
    suite = tmp_path / "tasks" / "demo"
    shutil.copytree(demo, suite)
    shutil.copytree(demo.parents[1] / "repos", tmp_path / "repos", dirs_exist_ok=True)
    reason = "gold does not pass: tests/test_x.py::test_y failed in 2 of 3 runs " + "(details) " * 20
    specs = sorted(suite.glob("*.yaml"))
    for spec in specs[:6]:
        spec.write_text(spec.read_text() + f"quarantined: {reason!r}\n")
    result = CliRunner().invoke(main, ["run", str(suite), "--agent", "gold", "--dry-run"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert "6 task(s) quarantined" in result.output
    assert f"wholeloop tasks check {suite}" in result.output
    assert "(details)" not in result.output  # the reasons are where the command says, not here
