"""The demo suite end to end on the real engine: the controls, and the no-future guarantee."""

import subprocess
import sys
from pathlib import Path

import pytest
from support.runs import ScriptAgent, our_containers

from harness.records import read_results
from harness.run import Runner, RunOptions
from harness.tasks import load_task, load_tasks

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "tasks" / "demo"


def wholeloop(*args):
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, cwd=ROOT)


@pytest.mark.slow  # about 30 s: the seven demo tasks, gold and noop
def test_gold_resolves_every_demo_task_and_noop_none(tmp_path):
    ids = {t.id for t in load_tasks([DEMO])}
    for agent, expected in (("gold", True), ("noop", False)):
        out = tmp_path / agent
        result = wholeloop("run", str(DEMO), "--agent", agent, "--out", str(out), "--workers", "2")
        assert result.returncode == 0, result.stdout + result.stderr
        rows = read_results(out / "results.jsonl")
        assert {r.task_id for r in rows} == ids
        assert all(r.resolved is expected for r in rows), [(r.task_id, r.outcome, r.error) for r in rows]
        report = wholeloop("report", str(out))
        assert report.returncode == 0 and ("100%" if expected else " 0%") in report.stdout
    left = our_containers(tmp_path / "gold", tmp_path / "noop")
    assert not left, [(c.name, c.status, c.labels) for c in left]


@pytest.mark.parametrize("task_id", ["inikit-002", "ledgerly-003"])
def test_no_trace_of_the_fix_commit_inside_the_agent_container(task_id, tmp_path):
    task = load_task(DEMO / f"{task_id}.yaml")
    fix = task.metadata["fix_commit"]
    probes = ScriptAgent(
        "git log --all --format=%H%n%s",
        "git reflog --all",
        "git fsck --lost-found --no-reflogs 2>&1; ls -R .git/lost-found 2>&1",
        f"git cat-file -e {fix} && echo FOUND || echo absent",
        "git for-each-ref; git stash list; git remote -v",
        f"grep -rl {fix[:12]} .git 2>/dev/null || echo clean",
    )
    Runner([task], probes, RunOptions(out=tmp_path / "run")).run()
    log, reflog, fsck, cat, refs, grep = (r.stdout + r.stderr for r in probes.outputs)
    assert len(log.strip().splitlines()) == 2  # one commit: its id and subject
    assert fix not in log + reflog + fsck + refs
    assert "absent" in cat and "clean" in grep
    assert refs.strip().splitlines() == [line for line in refs.strip().splitlines() if "refs/heads/main" in line]
