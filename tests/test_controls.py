"""Control health, loudly: a report whose gold did not resolve every task (or whose noop resolved
one) says so before any number, in the terminal, the HTML report and the evidence pack's markdown;
`wholeloop run` exits 1 for it, before exit 3 (docs/outcomes.md, "Controls")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import ROOT
from support.cli import wl

from harness.cli.exit_codes import INFRA, NEGATIVE, OK, run_exit
from harness.report.controls import CHECKS, control_checks
from harness.report.figures import compute_figures

OLD = ROOT / "tests" / "data" / "runs"


def _copy(tmp_path: Path, name: str) -> Path:
    run = tmp_path / "runs" / name
    shutil.copytree(OLD / name, run)
    return run


def _set_outcome(run: Path, task_id: str, outcome: str, resolved: bool) -> None:
    """Rewrite the final row of `task_id` in a run's results.jsonl (a fabricated control failure)."""
    lines = []
    for line in (run / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["task_id"] == task_id and row["final"]:
            row["outcome"], row["resolved"] = outcome, resolved
        lines.append(json.dumps(row))
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")


def test_controls_that_held_say_nothing(tmp_path):
    gold, noop = _copy(tmp_path, "v1-gold"), _copy(tmp_path, "v1-noop")
    assert compute_figures([gold, noop]).controls == []
    done = wl("report", gold, noop, env={"COLUMNS": "200"})
    assert done.returncode == 0 and "control failed" not in done.stdout


def test_a_gold_that_missed_a_task_is_said_first_everywhere(tmp_path):
    gold = _copy(tmp_path, "v1-gold")
    _set_outcome(gold, "inikit-004", "unresolved", False)
    figures = compute_figures([gold])
    assert [(f.check, [(t.task_id, t.expected, t.trials) for t in f.tasks]) for f in figures.controls] == [
        ("gold-resolves-all", [("inikit-004", 0, 1)])
    ]
    message = figures.controls[0].message
    assert message.startswith("the control failed: gold") and "task inikit-004, 0 of 1" in message
    assert "do not trust its results" in message

    html, evidence = tmp_path / "r.html", tmp_path / "evidence"
    done = wl("report", gold, "--html", html, "--evidence", evidence, env={"COLUMNS": "300"})
    assert done.returncode == 0, done.stderr[-2000:]
    first = next(line for line in done.stdout.splitlines() if line.strip())
    assert "control failed" in first  # the panel's title: the first thing printed
    assert done.stdout.index("task inikit-004, 0 of 1") < done.stdout.index("inikit-001")  # before any table
    page = html.read_text()
    assert "the control failed: gold" in page
    assert page.index("the control failed: gold") < page.index('id="summary"')  # above the numbers
    markdown = (evidence / "hardest_failures.md").read_text()
    assert markdown.startswith("> **the control failed: gold") and "task inikit-004, 0 of 1" in markdown
    assert json.loads((evidence / "figures.json").read_text())["controls"][0]["check"] == "gold-resolves-all"


def test_a_task_error_of_gold_is_a_miss_and_an_infra_error_is_not(tmp_path):
    gold = _copy(tmp_path, "v1-gold")
    _set_outcome(gold, "inikit-001", "task_error", False)
    _set_outcome(gold, "inikit-004", "infra_error", False)
    for strict in (False, True):  # --strict counts infra errors in the rates, never as a control's miss
        [failure] = compute_figures([gold], strict=strict).controls
        assert [(t.task_id, t.expected, t.trials) for t in failure.tasks] == [("inikit-001", 0, 1)]


def test_a_noop_that_resolved_a_task_is_a_failed_control(tmp_path):
    noop = _copy(tmp_path, "v1-noop")
    _set_outcome(noop, "ledgerly-002", "resolved", True)
    [failure] = compute_figures([noop]).controls
    assert failure.check == "noop-resolves-none" and failure.message.startswith("the control failed: noop")
    assert [(t.task_id, t.expected, t.trials) for t in failure.tasks] == [("ledgerly-002", 0, 1)]


def test_control_checks_are_one_mechanism():
    # a later check (e.g. "gold not accepted") is one more function in CHECKS; each looks at one
    # configuration's figures and says nothing about configurations that are not its control
    assert len(CHECKS) >= 2
    assert control_checks([]) == []


@pytest.mark.parametrize(
    ("controls_failed", "infra", "allow", "code"),
    [
        (False, 0, False, OK),
        (False, 2, False, INFRA),
        (False, 2, True, OK),
        (True, 0, False, NEGATIVE),
        (True, 2, False, NEGATIVE),  # a failed control takes precedence over infra errors
        (True, 2, True, NEGATIVE),
    ],
)
def test_run_exit_code_precedence(controls_failed, infra, allow, code):
    assert run_exit(controls_failed=controls_failed, infra_errors=infra, allow_infra_errors=allow) == code


@pytest.mark.docker
def test_run_of_a_gold_that_fails_exits_1_and_says_why(tmp_path):
    """The real `wholeloop run --agent gold` on a task whose gold patch does not fix it."""
    import yaml
    from support import git, write

    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, {"pkg/__init__.py": "def shout(text):\n    return text\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    write(repo, {"tests/test_shout.py": "from pkg import shout\n\n\ndef test_shout():\n    assert shout('a') == 'A'\n"})
    git(repo, "add", "-A")
    test_patch = git(repo, "diff", "--cached", "HEAD") + "\n"
    git(repo, "reset", "-q", "--hard")
    (repo / "tests" / "test_shout.py").unlink(missing_ok=True)
    write(repo, {"pkg/__init__.py": "def shout(text):\n    return text  # not a fix\n"})
    gold = git(repo, "diff", "HEAD") + "\n"
    git(repo, "checkout", "-q", ".")
    spec = tmp_path / "tasks" / "broken.yaml"
    spec.parent.mkdir()
    spec.write_text(
        yaml.safe_dump(
            {
                "id": "broken-gold",
                "repo": str(repo),
                "base_commit": base,
                "problem_statement": "shout() should upper-case its text",
                "environment": {"setup": ["pip install pytest==8.3.4"]},
                "hidden_tests": {"command": "python -m pytest -rA -p no:cacheprovider tests", "patch": test_patch},
                "gold_patch": gold,
                "FAIL_TO_PASS": ["tests/test_shout.py::test_shout"],
                "PASS_TO_PASS": [],
            }
        )
    )
    done = wl("run", spec, "--agent", "gold", "--out", tmp_path / "runs" / "g", "--no-history", env={"COLUMNS": "200"})
    assert done.returncode == NEGATIVE, done.stdout[-3000:] + done.stderr[-2000:]
    assert "the control failed: gold" in done.stdout and "task broken-gold, 0 of 1" in done.stdout
    assert done.stdout.rstrip().splitlines()[-1].endswith(f"exit {NEGATIVE}")
