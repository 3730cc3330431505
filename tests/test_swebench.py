"""SWE-bench interoperability: importing instances as task specs, exporting predictions, and a
fixture built from a real package (more-itertools from PyPI) graded on the host and in Docker."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.authoring.swebench import (
    SWEBenchError,
    export_predictions,
    hidden_test_files,
    import_swebench,
    load_specs,
    task_id_for,
)
from harness.tasks import load_task, load_tasks

GOLD = """\
diff --git a/calc/__init__.py b/calc/__init__.py
--- a/calc/__init__.py
+++ b/calc/__init__.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""
TEST_PATCH = """\
diff --git a/tests/test_add.py b/tests/test_add.py
new file mode 100644
--- /dev/null
+++ b/tests/test_add.py
@@ -0,0 +1,2 @@
+def test_add():
+    assert 1
diff --git a/tests/test_old.py b/tests/test_old.py
deleted file mode 100644
--- a/tests/test_old.py
+++ /dev/null
@@ -1 +0,0 @@
-x = 1
diff --git a/tests/data/cases.json b/tests/data/cases.json
--- a/tests/data/cases.json
+++ b/tests/data/cases.json
@@ -1 +1 @@
-[]
+[1]
diff --git a/tests/conftest.py b/tests/conftest.py
--- a/tests/conftest.py
+++ b/tests/conftest.py
@@ -1 +1 @@
-A = 1
+A = 2
diff --git a/tests/unit/test it.py b/tests/unit/test it.py
--- a/tests/unit/test it.py
+++ b/tests/unit/test it.py
@@ -1 +1 @@
-A = 1
+A = 2
"""


def instance(iid="calc__calc-1", **extra):
    data = {
        "instance_id": iid,
        "repo": "calc/calc",
        "base_commit": "0123456789abcdef0123456789abcdef01234567",
        "patch": GOLD,
        "test_patch": TEST_PATCH,
        "problem_statement": "add() subtracts.\n\nIt should add.",
        "hints_text": "",
        "created_at": "2023-05-01T12:00:00Z",
        "version": "1.0",
        "FAIL_TO_PASS": json.dumps(["tests/test_add.py::test_add"]),
        "PASS_TO_PASS": json.dumps(["tests/test_mul.py::test_mul", "tests/test_mul.py::test_x[a b]"]),
        "environment_setup_commit": "fedcba9876543210fedcba9876543210fedcba98",
    }
    data.update(extra)
    return {k: v for k, v in data.items() if v is not None}


def write_jsonl(path: Path, items: list) -> Path:
    path.write_text("".join((item if isinstance(item, str) else json.dumps(item)) + "\n" for item in items))
    return path


@pytest.fixture
def specs(tmp_path: Path) -> Path:
    (tmp_path / "repos" / "calc").mkdir(parents=True)
    path = tmp_path / "specs.yaml"
    path.write_text(
        textwrap.dedent("""\
        calc/calc:
          "*":
            repo_path: repos/calc
            setup: ["pip install pytest==8.3.5"]
            test_files_command: python -m pytest -rA -p no:cacheprovider {files}
            visible_test_command: python -m pytest -q
          "2.0":
            install: ["pip install -e ."]
            env: {CALC_MODE: strict}
        """)
    )
    return path


# ----------------------------------------------------------------------------- import


def test_import_writes_specs_that_load_back_with_patches_and_provenance(tmp_path, specs):
    jsonl = write_jsonl(
        tmp_path / "in.jsonl",
        [
            instance(),  # test lists JSON-encoded, as on the Hugging Face hub
            instance("calc__calc-2", version="2.0", FAIL_TO_PASS=["tests/test_add.py::test_add"], PASS_TO_PASS=[]),
        ],
    )
    written = import_swebench(jsonl, tmp_path / "out", specs_file=specs)
    assert written == [tmp_path / "out" / "calc__calc-1" / "task.yaml", tmp_path / "out" / "calc__calc-2" / "task.yaml"]
    assert written.skipped == []

    one, two = (load_task(p) for p in written)
    assert one.id == "calc__calc-1" and one.base_commit == instance()["base_commit"]
    assert one.problem_statement == "add() subtracts.\n\nIt should add."
    assert one.origin.statement_quality == "issue" and one.origin.statement_leaks == []  # every statement classed
    assert one.fail_to_pass == ["tests/test_add.py::test_add"]
    assert one.pass_to_pass == ["tests/test_mul.py::test_mul", "tests/test_mul.py::test_x[a b]"]
    assert one.gold() == GOLD and one.test_patch() == TEST_PATCH
    assert one.gold_patch_file == "gold.diff" and one.hidden_tests.patch_file == "test.diff"
    assert (written[0].parent / "gold.diff").read_bytes() == GOLD.encode()
    # the test files the test patch adds or changes (not deleted ones, data files or conftest.py),
    # then those the FAIL_TO_PASS / PASS_TO_PASS ids live in: every listed test is run
    files = "tests/test_add.py 'tests/unit/test it.py' tests/test_mul.py"
    assert one.hidden_tests.command == f"python -m pytest -rA -p no:cacheprovider {files}"
    assert one.created_at == "2023-05-01T12:00:00+00:00" and one.origin.kind == "swebench"
    assert one.test_command == "python -m pytest -q"
    assert one.repo == "../../repos/calc" and one.repo_source() == str((tmp_path / "repos" / "calc").resolve())
    assert one.environment.setup == ["pip install pytest==8.3.5"] and one.environment.install == []
    assert one.metadata == {
        "source": "swebench",
        "instance_id": "calc__calc-1",
        "repo": "calc/calc",
        "version": "1.0",
        "created_at": "2023-05-01T12:00:00Z",
        "environment_setup_commit": "fedcba9876543210fedcba9876543210fedcba98",
    }
    # a version's own entry overrides the '*' defaults key by key
    assert two.pass_to_pass == [] and two.environment.install == ["pip install -e ."]
    assert two.environment.env == {"CALC_MODE": "strict"} and two.environment.setup == ["pip install pytest==8.3.5"]
    assert [t.id for t in load_tasks([tmp_path / "out"])] == ["calc__calc-1", "calc__calc-2"]


def test_import_refuses_an_instance_with_a_secret_and_redact_replaces_it(tmp_path, specs):
    """`tasks import-swebench` through the CLI: a key in the statement skips the instance, naming
    the rule; with --redact it is imported with the key replaced and the finding recorded."""
    from click.testing import CliRunner

    from harness.cli import main

    key = "AKIA" + "QYLPMN5HZTRWXJ4B"  # an AWS access key id's shape (split: this file holds no key)
    jsonl = write_jsonl(
        tmp_path / "in.jsonl",
        [
            instance(problem_statement=f"add() subtracts.\n\nOur CI used {key} to reproduce it."),
            instance("calc__calc-2"),
        ],
    )
    refused = CliRunner().invoke(
        main, ["tasks", "import-swebench", str(jsonl), "--out", str(tmp_path / "a"), "--specs", str(specs)]
    )
    assert refused.exit_code == 1, refused.output  # an instance skipped: a negative verdict
    assert "calc__calc-1" in refused.output and "secret found" in refused.output and key not in refused.output
    assert not (tmp_path / "a" / "calc__calc-1").exists() and (tmp_path / "a" / "calc__calc-2" / "task.yaml").exists()
    done = CliRunner().invoke(
        main, ["tasks", "import-swebench", str(jsonl), "--out", str(tmp_path / "b"), "--specs", str(specs), "--redact"]
    )
    assert done.exit_code == 0, done.output
    task = load_task(tmp_path / "b" / "calc__calc-1" / "task.yaml")
    assert key not in task.problem_statement and "<redacted:" in task.problem_statement
    assert task.problem_statement.startswith("add() subtracts.") and task.metadata["secrets_redacted"]
    assert key not in (tmp_path / "b" / "calc__calc-1" / "task.yaml").read_text()


def test_bad_instances_are_skipped_with_line_and_field_and_the_rest_import(tmp_path, specs):
    no_patch = instance("calc__calc-4")
    del no_patch["patch"]
    jsonl = write_jsonl(
        tmp_path / "in.jsonl",
        [
            instance("calc__calc-1"),
            '{"instance_id": "broken", ',  # line 2: not JSON
            instance("calc__calc-3", FAIL_TO_PASS="[tests/test_add.py::test_add"),  # line 3: bad JSON list
            no_patch,  # line 4
            "",  # blank lines are fine
            instance("calc__calc-6", PASS_TO_PASS=json.dumps({"a": 1})),  # line 6: not a list
            instance("calc__calc-7", FAIL_TO_PASS="[]"),  # line 7: nothing to fail
            instance("calc__calc-1"),  # line 8: duplicate
            instance("other", repo="someone/else"),  # line 9: not in the specs file
            instance("calc__calc-10", base_commit=""),  # line 10
            "[1, 2]",  # line 11
            instance("calc__calc-12", FAIL_TO_PASS=["ok", 3]),  # line 12
            instance(
                "calc__calc-13",
                test_patch="diff --git a/x.json b/x.json\n--- a/x.json\n+++ b/x.json\n",
                FAIL_TO_PASS=["test_add (calc.tests.AddTests)"],
                PASS_TO_PASS=[],
            ),  # no file in the ids either
        ],
    )
    written = import_swebench(jsonl, tmp_path / "out", specs_file=specs)
    assert [p.parent.name for p in written] == ["calc__calc-1"]
    skipped = written.skipped
    assert len(skipped) == 11, skipped
    expect = [
        (2, "not valid JSON"),
        (3, "'FAIL_TO_PASS': not a JSON-encoded list"),
        (4, "missing field 'patch'"),
        (6, "'PASS_TO_PASS': must be a list"),
        (7, "'FAIL_TO_PASS': is empty"),
        (8, "'instance_id': same task id as line 1"),
        (9, "'repo': no entry for 'someone/else'"),
        (10, "'base_commit': must not be empty"),
        (11, "must be a JSON object"),
        (12, "'FAIL_TO_PASS': must be a list of test ids"),
        (13, "'test_patch': names no test file"),
    ]
    for (line, text), message in zip(expect, skipped, strict=True):
        assert message.startswith(f"{jsonl}:{line}:") and text in message, (line, message)
    assert "instance 'calc__calc-3'" in skipped[1]
    assert not (tmp_path / "out" / "calc__calc-3").exists()


def test_an_import_with_nothing_valid_is_an_error_listing_why(tmp_path):
    jsonl = write_jsonl(tmp_path / "in.jsonl", [instance(FAIL_TO_PASS="nope")])
    with pytest.raises(SWEBenchError, match=r"no instance could be imported:\n.*in.jsonl:1: .*'FAIL_TO_PASS'"):
        import_swebench(jsonl, tmp_path / "out")
    with pytest.raises(SWEBenchError, match="cannot read"):
        import_swebench(tmp_path / "missing.jsonl", tmp_path / "out")


def test_without_specs_instance_fields_and_defaults_apply(tmp_path):
    (tmp_path / "data" / "calc-repo").mkdir(parents=True)
    jsonl = tmp_path / "data" / "in.json"  # a JSON array, as some exports write
    jsonl.write_text(
        json.dumps(
            [
                instance("calc__calc-1"),
                instance(
                    "calc__calc-2",
                    repo_path="calc-repo",
                    install_command="pip install -e .",
                    test_command="python -m pytest -rA tests",
                ),
                instance("psf/requests#12", version=2.1),  # not a valid task id; numeric version
            ]
        )
    )
    written = import_swebench(jsonl, tmp_path / "out")
    one, two, three = (load_task(p) for p in written)
    assert one.repo == "https://github.com/calc/calc.git"
    assert (
        one.hidden_tests.command == "python -m pytest -rA tests/test_add.py 'tests/unit/test it.py' tests/test_mul.py"
    )
    assert one.test_command is None and one.environment.install == []
    assert two.repo_source() == str((tmp_path / "data" / "calc-repo").resolve())
    assert two.environment.install == ["pip install -e ."]
    assert two.hidden_tests.command == "python -m pytest -rA tests"
    assert three.id == "psf-requests-12" == task_id_for("psf/requests#12")
    assert three.metadata["instance_id"] == "psf/requests#12" and three.metadata["version"] == "2.1"


def test_specs_file_errors_name_the_entry_and_json_specs_work(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("calc/calc:\n  '1.0':\n    repo_pth: x\n    test_files_command: pytest\n  '2.0': [1]\n")
    with pytest.raises(SWEBenchError) as err:
        load_specs(bad)
    text = str(err.value)
    assert "calc/calc > 1.0 > repo_pth: unknown key" in text
    assert "calc/calc > 1.0 > test_files_command: must contain {files}" in text
    assert "calc/calc > 2.0: settings must be a mapping" in text
    good = tmp_path / "specs.json"
    good.write_text(
        json.dumps(
            {
                "calc/calc": {
                    "1.0": {
                        "repo_url": "https://example.invalid/calc.git",
                        "test_command": "make test",
                        "image": "python:3.11",
                    }
                }
            }
        )
    )
    jsonl = write_jsonl(tmp_path / "in.jsonl", [instance()])
    (task_path,) = import_swebench(jsonl, tmp_path / "out", specs_file=good)
    task = load_task(task_path)
    assert task.repo == "https://example.invalid/calc.git"
    assert task.hidden_tests.command == "make test" and task.environment.image == "python:3.11"


def test_reimport_replaces_the_files_of_the_same_instance(tmp_path):
    jsonl = write_jsonl(tmp_path / "in.jsonl", [instance()])
    import_swebench(jsonl, tmp_path / "out")
    write_jsonl(jsonl, [instance(problem_statement="changed")])
    (path,) = import_swebench(jsonl, tmp_path / "out")
    assert load_task(path).problem_statement == "changed"
    assert sorted(p.name for p in path.parent.iterdir()) == ["gold.diff", "task.yaml", "test.diff"]


def test_hidden_test_files_reads_plus_headers():
    assert hidden_test_files(TEST_PATCH) == ["tests/test_add.py", "tests/unit/test it.py"]
    assert hidden_test_files("+++ b/a/test_x.py\t2020-01-01\n+++ b/a/test_x.py\n") == ["a/test_x.py"]
    assert hidden_test_files("") == []


# ----------------------------------------------------------------------------- export


def fake_run(run_dir: Path, rows: list[dict], patches: dict[str, str], torn: str = "") -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    for rel, text in patches.items():
        (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / rel).write_text(text)
    (run_dir / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + torn)
    return run_dir


def row(task_id, attempt=1, repeat=0, **extra):
    return {
        "task_id": task_id,
        "agent": "loop",
        "model": "m-1",
        "config": "loop/m-1",
        "attempt": attempt,
        "repeat": repeat,
        "patch_path": f"a/{task_id}/r{repeat}/{attempt}.diff",
        "outcome": "resolved",
        "resolved": True,
        "something_new": {"x": 1},
        **extra,
    }


def test_export_uses_the_final_attempt_and_maps_back_to_instance_ids(tmp_path):
    rows = [
        row("psf-requests-12", 1, instance_id="psf/requests#12"),
        row("psf-requests-12", 2, instance_id="psf/requests#12"),
        row("calc__calc-1", 1),
        row("calc__calc-1", 1, repeat=1),
        row("calc__calc-9", 1, patch_path=""),  # the attempt left no patch
        row("calc__calc-8", 1, metadata={"instance_id": "calc/calc-8"}),
    ]
    patches = {
        "a/psf-requests-12/r0/1.diff": "first\n",
        "a/psf-requests-12/r0/2.diff": "second\r\n",
        "a/calc__calc-1/r0/1.diff": GOLD,
        "a/calc__calc-1/r1/1.diff": "repeat one\n",
        "a/calc__calc-8/r0/1.diff": "eight\n",
    }
    run_dir = fake_run(tmp_path / "run", rows, patches, torn='{"task_id": "calc__calc-1", "att')
    out = export_predictions(run_dir)
    assert out == run_dir / "predictions.jsonl"
    preds = [json.loads(line) for line in out.read_text().splitlines()]
    assert [p["instance_id"] for p in preds] == ["calc/calc-8", "calc__calc-1", "calc__calc-9", "psf/requests#12"]
    by_id = {p["instance_id"]: p for p in preds}
    assert by_id["psf/requests#12"]["model_patch"] == "second\r\n"
    assert by_id["calc__calc-1"]["model_patch"] == GOLD and by_id["calc__calc-9"]["model_patch"] == ""
    assert {p["model_name_or_path"] for p in preds} == {"loop/m-1"}
    assert all(set(p) == {"instance_id", "model_name_or_path", "model_patch"} for p in preds)

    other = export_predictions(run_dir, tmp_path / "elsewhere" / "p.jsonl", model_name="mine", repeat=1)
    assert [json.loads(line) for line in other.read_text().splitlines()] == [
        {"instance_id": "calc__calc-1", "model_name_or_path": "mine", "model_patch": "repeat one\n"}
    ]
    # the command, under both its names, writes the same file
    from click.testing import CliRunner

    from harness.cli import main

    for name in (["export", "predictions"], ["export-predictions"]):
        target = tmp_path / "cli" / f"{'-'.join(name)}.jsonl"
        done = CliRunner().invoke(main, [*name, str(run_dir), "--out", str(target)])
        assert done.exit_code == 0, done.output
        assert target.read_text() == out.read_text()


def test_export_needs_a_choice_when_a_run_holds_several_configs(tmp_path):
    rows = [row("t1"), row("t1", config="gold", agent="gold", model=None)]
    run_dir = fake_run(tmp_path / "run", rows, {"a/t1/r0/1.diff": "p\n"})
    with pytest.raises(SWEBenchError, match="several configurations"):
        export_predictions(run_dir)
    out = export_predictions(run_dir, config="gold")
    assert json.loads(out.read_text())["model_name_or_path"] == "gold"
    with pytest.raises(SWEBenchError, match="nothing ran as 'x'"):
        export_predictions(run_dir, config="x")
    with pytest.raises(SWEBenchError, match="no attempt of repeat 3"):
        export_predictions(run_dir, config="gold", repeat=3)
    (run_dir / "results.jsonl").write_text("{}\n")
    with pytest.raises(SWEBenchError, match=r"results.jsonl:1: .*'task_id'"):
        export_predictions(run_dir)
    with pytest.raises(SWEBenchError, match="cannot read"):
        export_predictions(tmp_path / "nothing-here")


# ----------------------------------------------------------------------------- the real package

# Records one outcome per test id (failed if any phase or subtest failed), whatever pytest's
# version prints: pytest >= 9 reports a unittest test whose subTest failed as PASSED + SUBFAILED.
OUTCOMES_PLUGIN = """
import json, os
_rank, _out = {"passed": 0, "skipped": 1, "failed": 2}, {}
def pytest_runtest_logreport(report):
    outcome = "failed" if report.failed else "skipped" if report.skipped and report.when != "teardown" else "passed"
    if _rank[outcome] >= _rank.get(_out.get(report.nodeid), -1):
        _out[report.nodeid] = outcome
def pytest_sessionfinish(session):
    with open(os.environ["OUTCOMES_FILE"], "w") as fh:
        json.dump(_out, fh)
"""


def run_hidden_tests(task, work: Path, plugin_dir: Path) -> dict[str, str]:
    """The task's hidden test command, run on the host with this Python's pytest."""
    argv = shlex.split(task.hidden_tests.command)
    assert argv[:3] == ["python", "-m", "pytest"], argv
    out_file = plugin_dir / "outcomes.json"
    out_file.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(plugin_dir), "OUTCOMES_FILE": str(out_file), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        [sys.executable, *argv[1:], "-p", "outcomes_plugin"], cwd=work, env=env, capture_output=True, text=True
    )
    assert out_file.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(out_file.read_text())


def import_fixture(fixture: Path, out: Path) -> list:
    written = import_swebench(fixture / "instances.jsonl", out, specs_file=fixture / "specs.yaml")
    assert written.skipped == []
    return [load_task(p) for p in written]


# The three real-package tests share the session's SWE-bench fixture, built from PyPI on first use
# (about 2 minutes; cached after): each of them is slow, whichever runs first.
@pytest.mark.slow  # 20 s with the fixture cached: the hidden tests of three instances, twice, on the host
def test_real_package_fixture_grades_correctly_on_the_host(swebench_fixture, tmp_path):
    """Catches fixture rot without Docker: per instance, base + test patch fails every FAIL_TO_PASS
    test, and + gold passes every FAIL_TO_PASS and PASS_TO_PASS test."""
    tasks = import_fixture(swebench_fixture, tmp_path / "tasks")
    assert len(tasks) == 3
    plugin_dir = tmp_path / "plugin"
    plugin_dir.mkdir()
    (plugin_dir / "outcomes_plugin.py").write_text(OUTCOMES_PLUGIN)
    for task in tasks:
        assert task.metadata["repo"] == "more-itertools/more-itertools" and len(task.pass_to_pass) > 300
        work = tmp_path / task.id
        subprocess.run(["git", "clone", "-q", task.repo_source(), str(work)], check=True)
        subprocess.run(["git", "checkout", "-q", task.base_commit], cwd=work, check=True)
        subprocess.run(["git", "apply", "-"], input=task.test_patch(), text=True, cwd=work, check=True)
        before = run_hidden_tests(task, work, plugin_dir)
        assert {t: before.get(t) for t in task.fail_to_pass} == dict.fromkeys(task.fail_to_pass, "failed"), task.id
        assert all(before.get(t) == "passed" for t in task.pass_to_pass), task.id
        subprocess.run(["git", "apply", "-"], input=task.gold(), text=True, cwd=work, check=True)
        after = run_hidden_tests(task, work, plugin_dir)
        wanted = [*task.fail_to_pass, *task.pass_to_pass]
        assert {t: after.get(t) for t in wanted} == dict.fromkeys(wanted, "passed"), task.id
        assert "failed" not in after.values(), task.id


def _wholeloop() -> list[str]:
    script = Path(sys.executable).parent / "wholeloop"
    return [str(script)] if script.exists() else [sys.executable, "-m", "harness.cli"]


def _final_rows(run_dir: Path) -> dict[str, dict]:
    final: dict[str, dict] = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["task_id"] not in final or r.get("attempt", 1) >= final[r["task_id"]].get("attempt", 1):
            final[r["task_id"]] = r
    return final


@pytest.mark.docker
@pytest.mark.slow  # the PyPI-built fixture; 20 s cached
@pytest.mark.timeout(3600)
def test_real_package_instances_gold_resolves_each_noop_none(swebench_fixture, tmp_path):
    if shutil.which("docker") and subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        pytest.skip("`docker info` fails: no usable Docker engine")
    if subprocess.run([*_wholeloop(), "run", "--help"], capture_output=True).returncode != 0:
        pytest.skip("the `wholeloop run` command is not available")
    tasks = import_fixture(swebench_fixture, tmp_path / "tasks")
    ids = {t.id for t in tasks}
    results = {}
    for agent in ("gold", "noop"):
        out = tmp_path / f"run-{agent}"
        proc = subprocess.run(
            [*_wholeloop(), "run", str(tmp_path / "tasks"), "--agent", agent, "--out", str(out), "--workers", "3"],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        results[agent] = _final_rows(out)
        assert set(results[agent]) == ids
    for task in tasks:
        gold, noop = results["gold"][task.id], results["noop"][task.id]
        assert (gold["outcome"], gold["resolved"]) == ("resolved", True), gold
        assert gold["fail_to_pass"]["passed"] == len(task.fail_to_pass)
        assert gold["pass_to_pass"]["passed"] == len(task.pass_to_pass)
        assert gold["instance_id"] == task.metadata["instance_id"]
        assert noop["resolved"] is False and noop["outcome"] != "resolved", noop
    predictions = export_predictions(tmp_path / "run-gold")
    exported = {json.loads(line)["instance_id"]: json.loads(line) for line in predictions.read_text().splitlines()}
    assert {t.metadata["instance_id"] for t in tasks} == set(exported)
    for task in tasks:  # the patch extracted from the container makes the gold's changes
        assert _changes(exported[task.metadata["instance_id"]]["model_patch"]) == _changes(task.gold())


def _changes(patch: str) -> list[str]:
    return [line for line in patch.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]


class _TouchReadme:
    """An agent whose patch changes nothing that matters: the base is graded with the hidden tests."""

    name, model = "touch-readme", None

    def run(self, ctx):
        from harness.agents import AgentResult

        ctx.sandbox.exec("echo >> README.rst")
        return AgentResult(stop_reason="submitted", steps=1)

    def describe(self):
        return {"agent": self.name}


@pytest.mark.docker
@pytest.mark.slow  # the PyPI-built fixture; 10 s cached
@pytest.mark.timeout(3600)
def test_real_package_base_fails_fail_to_pass_in_the_container(swebench_fixture, tmp_path):
    """noop is not graded (its patch is empty); a harmless patch is, in the real task image: every
    FAIL_TO_PASS test must fail there and every PASS_TO_PASS test pass."""
    from harness.run import Runner, RunOptions

    tasks = import_fixture(swebench_fixture, tmp_path / "tasks")
    rows = Runner(tasks, _TouchReadme(), RunOptions(out=tmp_path / "run", workers=3)).run()
    assert len(rows) == len(tasks)
    by_id = {t.id: t for t in tasks}
    for r in rows:
        task = by_id[r.task_id]
        assert (r.outcome, r.resolved) == ("unresolved", False), (r.task_id, r.outcome, r.note, r.error)
        assert r.fail_to_pass == {
            "passed": 0,
            "failed": len(task.fail_to_pass),
            "total": len(task.fail_to_pass),
            "ran": True,
        }
        assert r.pass_to_pass["passed"] == len(task.pass_to_pass)
