"""End to end on the real engine with real git repositories: images, snapshot, agent, grading."""

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from support.runs import ScriptAgent, our_containers

from harness.cli import main
from harness.records import read_results
from harness.run import Runner, RunOptions
from harness.tasks import load_task

pytestmark = pytest.mark.docker


def run_one(spec, agent, out):
    rows = Runner([load_task(spec)], agent, RunOptions(out=out)).run()
    assert len(rows) == 1
    return rows[0]


def test_gold_resolves_and_noop_does_not_and_report_reads_disk(tiny_task, tmp_path):
    cli = CliRunner()
    for agent in ("gold", "noop"):
        result = cli.invoke(main, ["run", str(tiny_task["dir"]), "--agent", agent, "--out", str(tmp_path / agent)])
        assert result.exit_code == 0, result.output
    gold = read_results(tmp_path / "gold" / "results.jsonl")
    noop = read_results(tmp_path / "noop" / "results.jsonl")
    assert [(r.outcome, r.resolved) for r in gold] == [("resolved", True)]
    assert gold[0].tests == {"tests/test_add.py::test_add": "PASSED", "tests/test_mul.py::test_mul": "PASSED"}
    assert [(r.outcome, r.resolved) for r in noop] == [("empty_patch", False)]
    attempt = tmp_path / "gold" / gold[0].dir
    assert json.loads((attempt / "grade.json").read_text())["apply_method"] == "git apply"
    assert (
        "1 passed" in (attempt / "test_output.txt").read_text()
        or "2 passed" in (attempt / "test_output.txt").read_text()
    )
    manifest = json.loads((tmp_path / "gold" / "manifest.json").read_text())
    assert manifest["tasks"]["tiny-001"]["base_commit"] == tiny_task["base"]
    assert manifest["images"]["tiny-001"]["task"].startswith("wholeloop-task:")
    assert manifest["finished_at"] and manifest["docker_engine"]["api_version"]
    # the report needs no Docker: run it in a process whose Docker host points nowhere
    env = {"DOCKER_HOST": "unix:///nonexistent.sock", "PATH": "/usr/bin:/bin"}
    shown = subprocess.run(
        [sys.executable, "-m", "harness.cli", "report", str(tmp_path / "gold")], capture_output=True, text=True, env=env
    )
    assert shown.returncode == 0 and "100%" in shown.stdout, shown.stderr
    left = our_containers(tmp_path / "gold", tmp_path / "noop")
    assert not left, [(c.name, c.status, c.labels) for c in left]
    # running the same command again resumes: nothing is redone
    again = cli.invoke(main, ["run", str(tiny_task["dir"]), "--agent", "gold", "--out", str(tmp_path / "gold")])
    assert again.exit_code == 0 and "0 to run, 1 already done" in again.output
    assert len(read_results(tmp_path / "gold" / "results.jsonl")) == 1


def test_the_future_is_invisible_inside_the_agent_container(tiny_task, tmp_path):
    fix = tiny_task["fix"]
    probes = ScriptAgent(
        "git log --all --oneline",
        "git reflog",
        "git fsck --lost-found 2>&1; ls .git/lost-found 2>&1",
        f"git cat-file -e {fix} && echo FOUND || echo absent",
        "git branch -a; git tag; git remote -v; git stash list",
        "grep -r FIX-SECRET-MARKER .git || echo clean",
        "git count-objects -v",
    )
    run_one(tiny_task["spec"], probes, tmp_path / "run")
    log, reflog, fsck, cat, refs, grep, _ = (r.stdout + r.stderr for r in probes.outputs)
    assert len(log.strip().splitlines()) == 1 and "base" in log
    assert "FIX-SECRET-MARKER" not in log + reflog + fsck + refs
    assert "absent" in cat and "clean" in grep
    assert refs.split() == ["*", "main"]


def test_planted_conftest_and_edited_tests_do_not_help(tiny_task, tmp_path):
    cheat = ScriptAgent(
        # make every test pass by force, and delete/replace the hidden test target
        "printf 'import pytest\\n@pytest.hookimpl(hookwrapper=True)\\ndef pytest_runtest_makereport(item, call):\\n"
        '    out = yield\\n    out.get_result().outcome = "passed"\\n\' > conftest.py',
        "mkdir -p tests && printf 'def test_add():\\n    pass\\n' > tests/test_add.py",
        "printf 'def test_mul():\\n    pass\\n' > tests/test_mul.py",
    )
    row = run_one(tiny_task["spec"], cheat, tmp_path / "run")
    assert row.outcome == "unresolved" and not row.resolved
    grade = json.loads((tmp_path / "run" / row.dir / "grade.json").read_text())
    assert set(grade["reverted"]) == {"conftest.py", "tests/test_add.py", "tests/test_mul.py"}
    assert grade["tests"]["tests/test_add.py::test_add"] == "FAILED"


def test_breaking_a_passing_test_is_a_regression(tiny_task, tmp_path):
    fix_and_break = ScriptAgent("sed -i 's/a - b/a + b/; s/a \\* b/a ** b/' calc/__init__.py")
    assert run_one(tiny_task["spec"], fix_and_break, tmp_path / "run").outcome == "regression"


def test_hidden_tests_that_never_end_time_out(tiny_task, tmp_path):
    spec = tiny_task["spec"]
    text = (
        spec.read_text()
        .replace("command: python -m pytest -rA -p no:cacheprovider tests", "command: sleep 600")
        .replace("limits:", "timeouts: {tests_s: 2}\nlimits:")
    )
    spec.write_text(text)
    row = run_one(spec, ScriptAgent("echo '# touched' >> calc/__init__.py"), tmp_path / "run")
    assert row.outcome == "test_timeout"


def test_bad_inputs_get_an_outcome_and_the_run_goes_on(tiny_task, tmp_path):
    good = tiny_task["spec"].read_text()
    (tiny_task["dir"] / "missing-repo.yaml").write_text(
        good.replace("id: tiny-001", "id: bad-repo").replace("repo: ../repo", "repo: ../nope")
    )
    (tiny_task["dir"] / "bad-commit.yaml").write_text(
        good.replace("id: tiny-001", "id: bad-commit").replace(tiny_task["base"], "deadbeef" * 5)
    )
    (tiny_task["dir"] / "bad-gold.diff").write_text("--- a/nothing.py\n+++ b/nothing.py\n@@ -1 +1 @@\n-x\n+y\n")
    (tiny_task["dir"] / "bad-patch.yaml").write_text(
        good.replace("id: tiny-001", "id: bad-patch").replace(
            "gold_patch_file: gold.diff", "gold_patch_file: bad-gold.diff"
        )
    )
    # the command line refuses before any container: both broken tasks are named (issue 12, preflight)
    result = CliRunner().invoke(
        main, ["run", str(tiny_task["dir"]), "--agent", "gold", "--out", str(tmp_path / "run"), "--workers", "2"]
    )
    assert result.exit_code == 2, result.output
    assert (
        "missing-repo.yaml" in result.output and "bad-commit.yaml" in result.output and "Traceback" not in result.output
    )
    assert not (tmp_path / "run" / "results.jsonl").exists()
    # the runner itself still gives every task an outcome and goes on (a library caller, a task that breaks mid-run)
    from harness.tasks import load_tasks

    Runner(
        load_tasks([tiny_task["dir"]]),
        __import__("harness.agents", fromlist=["get_agent"]).get_agent("gold"),
        RunOptions(out=tmp_path / "run", workers=2),
    ).run()
    rows = {r.task_id: r for r in read_results(tmp_path / "run" / "results.jsonl")}
    assert rows["tiny-001"].outcome == "resolved"
    assert rows["bad-repo"].outcome == "infra_error" and "repository not found" in rows["bad-repo"].error
    assert rows["bad-commit"].outcome == "infra_error" and "not found" in rows["bad-commit"].error
    # a gold patch that does not apply is the task's error, not an empty patch; never retried
    assert rows["bad-patch"].stop_reason == "gold_patch_failed" and rows["bad-patch"].outcome == "task_error"
    assert "gold patch does not apply" in rows["bad-patch"].note
    assert [r.task_id for r in read_results(tmp_path / "run" / "results.jsonl")].count("bad-patch") == 1
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run")], env={"COLUMNS": "200"})
    assert "task_error bad-patch: the task's gold patch does not apply" in report.output, report.output
    assert "Traceback" not in report.output


def test_an_agent_patch_that_does_not_apply_is_its_own_outcome(tiny_task, tmp_path):
    from harness.grading import grade
    from harness.run import Runner as R

    task = load_task(tiny_task["spec"])
    runner = R([task], ScriptAgent(), RunOptions(out=tmp_path / "run"))
    runner.write_manifest()
    prepared = runner.prepare(task)
    bogus = "diff --git a/calc/x.py b/calc/x.py\n--- a/calc/x.py\n+++ b/calc/x.py\n@@ -1 +1 @@\n-nothing\n+here\n"
    result, _, _ = grade(task, bogus, prepared.image, base=prepared.base_commit, limits=__import__("sandbox").Limits())
    assert result.outcome.value == "patch_apply_failed"
    # a hidden test patch that does not apply to the base is the task's error, whatever the patch
    broken = task.model_copy(
        update={"hidden_tests": task.hidden_tests.model_copy(update={"patch": bogus, "patch_file": None})}
    )
    result, _, report = grade(
        broken, task.gold(), prepared.image, base=prepared.base_commit, limits=__import__("sandbox").Limits()
    )
    assert result.outcome.value == "task_error" and report is None and "hidden test patch" in result.note


def test_a_suite_moved_without_its_repositories_runs_with_repos_root(tmp_path, monkeypatch):
    """A suite's specs say `repo: ../../repos/x.bundle`: moved alone, it is re-pointed with
    --repos-root (specs unchanged, so their content hashes stay) instead of failing (issue 28)."""
    import shutil
    from pathlib import Path

    from harness.tasks.spec import REPOS_ROOT_ENV

    monkeypatch.setenv(REPOS_ROOT_ENV, "")  # the option sets it for the process: put it back after
    monkeypatch.delenv(REPOS_ROOT_ENV)
    root = Path(__file__).resolve().parents[1]
    suite = tmp_path / "elsewhere" / "suite"
    suite.mkdir(parents=True)
    shutil.copy(root / "tasks" / "demo" / "inikit-001.yaml", suite)
    shutil.copytree(root / "tasks" / "demo" / "inikit-001", suite / "inikit-001")
    repos = tmp_path / "clones"
    repos.mkdir()
    shutil.copy(root / "repos" / "inikit.bundle", repos)
    cli = CliRunner()
    lost = cli.invoke(main, ["tasks", "validate", str(suite)])  # (before any --repos-root of this process)
    assert lost.exit_code != 0 and "inikit.bundle" in lost.output
    found = cli.invoke(main, ["--repos-root", str(repos), "tasks", "validate", str(suite)])
    assert found.exit_code == 0, found.output
    ran = cli.invoke(
        main, ["--repos-root", str(repos), "run", str(suite), "--agent", "gold", "--out", str(tmp_path / "r")]
    )
    assert ran.exit_code == 0, ran.output
    assert [(r.task_id, r.outcome) for r in read_results(tmp_path / "r" / "results.jsonl")] == [
        ("inikit-001", "resolved")
    ]
    assert (
        load_task(suite / "inikit-001.yaml").content_hash()
        == load_task(root / "tasks/demo/inikit-001.yaml").content_hash()
    )
    wrong = cli.invoke(main, ["--repos-root", str(tmp_path), "tasks", "validate", str(suite)])
    assert wrong.exit_code != 0 and "repositories root" in wrong.output
