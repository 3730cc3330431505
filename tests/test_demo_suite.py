"""The built-in demo suite: bundles match their sources, specs are valid and every task is sound.

No Docker: the hidden tests run on the host, with this interpreter's pytest, in clones of the
bundles, and their output goes through the grader's own pytest parser.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from harness.parsers.pytest import parse_pytest
from harness.tasks import TaskSpecError, load_tasks

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "tasks" / "demo"
REQUIRED_KINDS = {"logic error", "edge case", "missing feature", "change across several files"}

try:  # a broken spec fails test_suite_shape, not the collection of every test module
    TASKS, LOAD_ERROR = load_tasks([DEMO]), None
except TaskSpecError as exc:
    TASKS, LOAD_ERROR = [], exc


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=check)


def test_bundles_and_specs_are_up_to_date():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_demo_repos.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_suite_shape():
    assert LOAD_ERROR is None, str(LOAD_ERROR)
    assert len(TASKS) >= 6
    assert {t.metadata["repo"] for t in TASKS} >= {"inikit", "ledgerly"}
    assert {t.metadata["bug_kind"] for t in TASKS} >= REQUIRED_KINDS
    for task in TASKS:
        assert Path(task.repo_source()).is_file(), task.id
        assert task.test_patch().startswith("diff --git a/"), task.id
        assert task.gold().startswith("diff --git a/"), task.id
        assert not set(task.fail_to_pass) & set(task.pass_to_pass), task.id


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_statement_does_not_leak_the_fix(task):
    statement = task.problem_statement
    assert task.metadata["fix_commit"][:7] not in statement
    for node in task.fail_to_pass:
        assert node.split("::")[-1].split("[")[0] not in statement
    added = [
        line[1:].strip() for line in task.gold().splitlines() if line.startswith("+") and not line.startswith("+++")
    ]
    code = [line for line in added if len(line) > 25 and not line.startswith(('"""', "#"))]
    assert not [line for line in code if line in statement]


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_task_is_sound(task, tmp_path):
    """Fix in the future of the base; noop fails every FAIL_TO_PASS; gold passes everything."""
    repo = tmp_path / "repo"
    _git(tmp_path, "clone", "-q", task.repo_source(), str(repo))
    fix = task.metadata["fix_commit"]
    assert _git(repo, "rev-parse", f"{fix}^").stdout.strip() == task.base_commit
    assert _git(repo, "merge-base", "--is-ancestor", fix, task.base_commit, check=False).returncode == 1
    _git(repo, "checkout", "-q", "--detach", task.base_commit)

    def run_hidden() -> tuple[int, dict[str, str]]:
        argv = shlex.split(task.hidden_tests.command)
        argv[0] = sys.executable if argv[0] in ("python", "python3") else argv[0]
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
        proc = subprocess.run(
            argv, cwd=repo, env={**env, "PYTHONDONTWRITEBYTECODE": "1"}, capture_output=True, text=True
        )
        report = parse_pytest(proc.stdout)
        assert report.consistent_with(proc.returncode)[0], proc.stdout[-2000:]
        return proc.returncode, report.statuses

    (tmp_path / "test.diff").write_text(task.test_patch())
    (tmp_path / "gold.diff").write_text(task.gold())
    _git(repo, "apply", str(tmp_path / "test.diff"))
    code, before = run_hidden()
    assert code == 1
    assert [t for t in task.fail_to_pass if before.get(t) == "PASSED"] == []
    assert [t for t in task.pass_to_pass if before.get(t) != "PASSED"] == []

    _git(repo, "apply", str(tmp_path / "gold.diff"))
    code, after = run_hidden()
    assert code == 0
    assert [t for t in task.fail_to_pass + task.pass_to_pass if after.get(t) != "PASSED"] == []
    assert set(after) == set(task.fail_to_pass) | set(task.pass_to_pass)
