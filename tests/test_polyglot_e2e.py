"""The Go, TypeScript and Rust demo suite (tasks/polyglot) end to end on the real engine: gold
resolves every task and noop none, through the real CLI; a change that does not fix is graded per
test from each framework's own report."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from support import ROOT
from support.polyglot import craft

from harness.grading import grade
from harness.parsers import get_parser
from harness.records import read_results
from harness.tasks import load_tasks
from sandbox import Limits
from sandbox.docker.engine import LABEL_RUN, client

pytestmark = pytest.mark.docker
POLYGLOT = ROOT / "tasks" / "polyglot"


def our_containers(*run_dirs) -> list[str]:
    """Names of containers left by these runs; one listing, no per-container inspect (other
    processes' containers come and go meanwhile)."""
    names = {d.name for d in run_dirs}
    return [
        c["Names"][0]
        for c in client().api.containers(all=True, filters={"label": "wholeloop=1"})
        if (c.get("Labels") or {}).get(LABEL_RUN) in names
    ]


def wholeloop(*args):
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, cwd=ROOT)


@pytest.mark.slow  # about 2 minutes: the six tasks twice through the CLI
def test_gold_resolves_every_polyglot_task_and_noop_none(polyglot_images, tmp_path):
    ids = {t.id for t in load_tasks([POLYGLOT])}
    assert ids == {"verkit-001", "verkit-002", "timespan-001", "timespan-002", "linefold-001", "linefold-002"}
    for agent, expected in (("gold", True), ("noop", False)):
        out = tmp_path / agent
        result = wholeloop("run", str(POLYGLOT), "--agent", agent, "--out", str(out), "--workers", "2")
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        rows = read_results(out / "results.jsonl")
        assert {r.task_id for r in rows} == ids
        assert all(r.resolved is expected for r in rows), [(r.task_id, r.outcome, r.error) for r in rows]
        if expected:  # graded per test: every listed test passed, by the framework's own report
            for row in rows:
                assert set(row.tests.values()) == {"PASSED"}, (row.task_id, row.tests)
        report = wholeloop("report", str(out))
        assert report.returncode == 0 and ("100%" if expected else " 0%") in report.stdout
    assert not our_containers(tmp_path / "gold", tmp_path / "noop")


# A change to a source file that leaves the bug in place, per language.
NOT_A_FIX = {
    "verkit-001": ("semver/semver.go", "\n// touched\n"),
    "timespan-001": ("src/parse.ts", "\n// touched\n"),
    "linefold-001": ("src/wrap.rs", "\n// touched\n"),
}


def test_a_change_that_does_not_fix_fails_its_tests_one_by_one(polyglot_images, tmp_path):
    """FAIL_TO_PASS tests fail and PASS_TO_PASS tests pass, each read from the framework's report
    (test2json events, Vitest's JSON, libtest's lines); the run is consistent with its exit code, and
    a grade that rests on one channel says so."""

    def one(task_id):
        task, image, base = polyglot_images[task_id]
        path, tail = NOT_A_FIX[task_id]
        patch = craft(task, {path: lambda old: old + tail})
        return grade(
            task, patch, image, base=base, limits=task.limits.apply(Limits()), run_id=f"polyglot-{tmp_path.name}"
        )

    with ThreadPoolExecutor(3) as pool:
        graded = dict(zip(NOT_A_FIX, pool.map(one, NOT_A_FIX)))
    for task_id, (result, output, report) in graded.items():
        task = polyglot_images[task_id][0]
        assert result.outcome == "unresolved" and result.consistent, (
            task_id,
            result.outcome,
            result.note,
            output[-2000:],
        )
        assert {result.tests[t] for t in task.fail_to_pass} == {"FAILED"}, (task_id, result.tests)
        assert {result.tests[t] for t in task.pass_to_pass} == {"PASSED"}, (task_id, result.tests)
        assert result.fail_to_pass.failed == len(task.fail_to_pass) and result.pass_to_pass.failed == 0
        single = "graded on one channel" in result.note
        assert single is (task_id != "timespan-001"), (task_id, result.channels, result.note)
        assert result.channels == report.channels and not result.tampering, (task_id, result.channels)
        code = "101" if task_id.startswith("linefold") else "1"  # libtest's failure code is 101
        assert result.channels["exit_code"] == code and result.channels["summary"] == "agrees", result.channels
    assert graded["timespan-001"][0].channels == {
        "structured": "agrees",
        "summary": "agrees",
        "verbose": "agrees",
        "exit_code": "1",
    }
    for task_id, what in (
        ("linefold-001", "cargo test writes no structured report"),
        ("verkit-001", "go test writes no report of its own"),
    ):
        result = graded[task_id][0]
        assert result.channels["structured"] == "unavailable: " + get_parser(what.split()[0]).no_report
        assert what in result.note, result.note


def test_mining_a_go_history_finds_the_authored_tasks_fix_with_the_same_tests(polyglot_images, tmp_path):
    """`wholeloop mine` + `tasks check` on the Go demo repository's history with no wholeloop.yaml
    (go.mod picks the parser and the environment; docs/tasks.md's example): the commit that fixed the bug of verkit-001
    becomes a checked task whose FAIL_TO_PASS and PASS_TO_PASS are the authored task's."""
    repo = tmp_path / "verkit"
    subprocess.run(["git", "clone", "-q", str(ROOT / "repos" / "verkit.bundle"), str(repo)], check=True)
    out = tmp_path / "mined"
    done = wholeloop(
        "mine", str(repo), "--out", str(out), "--paths", "semver/compare*.go", "--test-scope", "all", "--repeats", "2"
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    authored = next(t for t in load_tasks([POLYGLOT]) if t.id == "verkit-001")
    mined = {t.base_commit: t for t in load_tasks([out])}
    fix = mined[authored.base_commit]  # the fix commit's parent is the authored task's base
    assert fix.quarantined is None and fix.hidden_tests.parser == "go", fix.quarantined
    assert fix.fail_to_pass == authored.fail_to_pass and sorted(fix.pass_to_pass) == sorted(authored.pass_to_pass)


def test_a_vet_finding_is_not_a_test_result_the_go_command_grades_tests(polyglot_images, tmp_path):
    """Debian's spf13/pflag (the realism corpus) never got a healthy environment: one line of its
    flag_test.go (`fmt.Println("\\n" + got)`) is a finding of vet's printf check, and `go test` runs
    that check before any test, so every test of the package was "[build failed]" with Go 1.19, 1.21,
    1.22 and 1.23 alike. Vet findings are not test results: the Go command mining writes runs the
    tests with -vet=off, and go vet stays an acceptance check (own_checks go-vet). Planted here: the
    gold fix of verkit-001 plus a helper vet flags; before, the package did not build and the fix
    was unresolved."""
    task, image, base = polyglot_images["verkit-001"]
    hidden = task.hidden_tests.model_copy(update={"command": get_parser("go").test_command(None)})
    task = task.model_copy(update={"hidden_tests": hidden})
    helper = 'package semver\n\nimport "fmt"\n\nfunc debugLine() { fmt.Println("version\\n") }\n'
    patch = task.gold() + craft(task, {"semver/debug.go": helper})
    result, output, _ = grade(
        task, patch, image, base=base, limits=task.limits.apply(Limits()), run_id=f"polyglot-{tmp_path.name}"
    )
    assert result.outcome == "resolved" and result.consistent, (result.outcome, result.note, output[-2000:])
    assert "[build failed]" not in output
