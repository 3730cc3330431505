"""The setup agent (issue 24 item 4; harness/authoring/setup_agent.py): on a repository whose
environment cannot be inferred, a scripted provider proposes a wrong wholeloop.yaml, is shown the
failure, then proposes a right one; the result is a healthy environment and a file marked as
model-written with its transcript beside it. With egress forbidden, not one request is sent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support import ROOT, git, write
from support.fakellm import FakeLLM, Reply

from harness.tasks import load_tasks

# the same image as tests/test_egress.py's (built once); the right proposal differs in its command
SETUP = "setup: ['pip install -q pytest==8.3.4']\ninstall: ['true']\n"
WRONG = SETUP + "test_command: python -m pytest -rA -p no:cacheprovider checks {files}\n"
RIGHT = SETUP + "test_command: PYTHONPATH=lib python -m pytest -rA -p no:cacheprovider checks {files}\n"


def wholeloop(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "ANTHROPIC_API_KEY": "test-key", "COLUMNS": "200", **(env or {})},
    )


@pytest.fixture
def odd_repo(tmp_path: Path) -> Path:
    """No pyproject.toml, setup.py, requirements or tox.ini; the code under lib/, the tests under
    checks/ importing it as a top-level module: nothing to infer an environment from."""
    repo = tmp_path / "oddlayout"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(
        repo,
        {
            "lib/calc.py": "def add(a, b):\n    return a + b\n",
            "checks/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
            "README": "calc: run the checks with PYTHONPATH=lib\n",
        },
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "initial")
    write(
        repo,
        {
            "lib/calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
            "checks/test_calc.py": "from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
            "def test_sub():\n    assert sub(3, 2) == 1\n",
        },
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Add sub")
    return repo


def scripted(request) -> Reply:
    body = json.dumps(request.body)
    if "Your earlier proposals" not in body:
        return Reply(text=f"Here it is:\n```yaml\n{WRONG}```\n")
    return Reply(text=f"The module is under lib/:\n```yaml\n{RIGHT}```\n")


@pytest.mark.docker
@pytest.mark.slow
def test_a_scripted_setup_agent_turns_a_repository_inference_cannot_build_into_a_healthy_one(odd_repo, tmp_path):
    inferred = wholeloop("mine", str(odd_repo), "--out", str(tmp_path / "mined"), "--no-check")
    assert inferred.returncode != 0 and "cannot infer how to install" in " ".join(inferred.stderr.split())
    out = tmp_path / "proposed" / "wholeloop.yaml"
    with FakeLLM(scripted) as server:
        result = wholeloop(
            "env",
            "propose",
            str(odd_repo),
            "--model",
            "anthropic/claude-test",
            "--base-url",
            server.base_url,
            "--out",
            str(out),
        )
        bodies = [json.dumps(b) for b in server.bodies()]
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(bodies) == 2
    # the second request was shown what went wrong with the first proposal
    assert "No module named 'calc'" in bodies[1] and "No module named" not in bodies[0]
    said = " ".join(result.stdout.split())
    assert f"the setup agent: sending to anthropic/claude-test at {server.base_url}: round 1" in said
    text = out.read_text()
    assert text.startswith("# Written by a model: anthropic/claude-test")
    assert "2 collected, 2 passed, 0 failed" in text and "Read it before you commit it" in text
    assert yaml.safe_load(text) == yaml.safe_load(RIGHT)
    head, *rounds = [
        json.loads(line) for line in (out.parent / "wholeloop.yaml.transcript.jsonl").read_text().splitlines()
    ]
    assert head["model"] == "anthropic/claude-test" and head["egress"]["endpoint"] == server.base_url
    assert [r["healthy"] for r in rounds] == [False, True] and "cannot be collected" in rounds[0]["problem"]
    # `mine --setup-model`: inference fails for every candidate, the agent proposes a wholeloop.yaml
    # (tried at HEAD: the images above) where mining looks for one, beside the repository; mining uses it
    mined = tmp_path / "mined"
    with FakeLLM(lambda _: Reply(text=f"```yaml\n{RIGHT}```")) as server:
        result = wholeloop(
            "mine",
            str(odd_repo),
            "--out",
            str(mined),
            "--no-check",
            "--setup-model",
            "anthropic/claude-test",
            "--setup-base-url",
            server.base_url,
        )
        requests = len(server.requests)
    assert result.returncode == 0, result.stdout + result.stderr
    proposed = odd_repo.parent / "oddlayout.wholeloop.yaml"
    assert requests == 1 and proposed.read_text().startswith("# Written by a model")
    (task,) = load_tasks([mined])
    assert str(proposed) in task.origin.environment_from
    assert task.hidden_tests.command.startswith("PYTHONPATH=lib python -m pytest")
    assert "checks/test_calc.py" in task.hidden_tests.command


@pytest.mark.parametrize(("command", "forbid"), [("env propose", "machine"), ("mine --setup-model", "suite")])
def test_with_egress_forbidden_the_setup_agent_sends_nothing(odd_repo, tmp_path, forbid, command):
    env = {"WHOLELOOP_NO_EGRESS": "1"} if forbid == "machine" else {}
    if forbid == "suite":
        (odd_repo.parent / "oddlayout.wholeloop.yaml").write_text("egress: forbid\n")
    out = tmp_path / "out" / "wholeloop.yaml"
    with FakeLLM(scripted) as server:
        if command == "env propose":
            args = ["env", "propose", str(odd_repo), "--model", "anthropic/claude-test", "--out", str(out)]
            args += ["--base-url", server.base_url]
        else:
            args = ["mine", str(odd_repo), "--out", str(out.parent), "--no-check"]
            args += ["--setup-model", "anthropic/claude-test", "--setup-base-url", server.base_url]
        result = wholeloop(*args, env=env)
        assert len(server.requests) == 0
    assert result.returncode == 2, result.stdout + result.stderr
    assert "forbids" in result.stderr + result.stdout and not out.parent.exists()
