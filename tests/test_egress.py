"""The one egress rule (harness/egress.py, docs/privacy.md): a feature that sends repository content
to a model is off unless asked, says what it sends before it sends it, records it in the spec, and is
refused before any request when the machine (WHOLELOOP_NO_EGRESS=1) or the suite (`egress: forbid`
in wholeloop.yaml) forbids it. The model is a local scripted provider that counts requests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, git, write
from support.fakellm import FakeLLM, Reply

from harness.tasks import load_tasks

SETUP = "setup: ['pip install -q pytest==8.3.4']\ninstall: ['true']\n"


def wholeloop(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "ANTHROPIC_API_KEY": "test-key", **(env or {})},
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("egress")
    repo = root / "addpkg"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(
        repo,
        {"addpkg/__init__.py": "def add(a, b):\n    return a - b\n", "tests/test_add.py": "def test_x():\n    pass\n"},
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "initial")
    write(
        repo,
        {
            "addpkg/__init__.py": "def add(a, b):\n    return a + b\n",
            "tests/test_add.py": "from addpkg import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        },
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Fix add: COMMIT-MESSAGE-MARKER\n\nIt subtracted.")
    (root / "allow.yaml").write_text(SETUP)
    (root / "forbid.yaml").write_text(SETUP + "egress: forbid\n")
    return repo


def mine(repo: Path, out: Path, env_file: str, url: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return wholeloop(
        "mine",
        str(repo),
        "--out",
        str(out),
        "--no-check",
        "--env-file",
        str(repo.parent / env_file),
        "--statement-model",
        "anthropic/claude-test",
        "--statement-base-url",
        url,
        env=env,
    )


@pytest.mark.parametrize(
    ("env_file", "env", "who"),
    [
        ("allow.yaml", {"WHOLELOOP_NO_EGRESS": "1"}, "this machine (WHOLELOOP_NO_EGRESS=1)"),
        ("forbid.yaml", {}, "this suite (egress: forbid in"),
    ],
    ids=["machine", "suite"],
)
def test_forbidden_egress_is_refused_before_any_request(repo, tmp_path, env_file, env, who):
    with FakeLLM(lambda _: Reply(text="add() returns the difference.")) as server:
        result = mine(repo, tmp_path / "out", env_file, server.base_url, env)
        assert len(server.requests) == 0  # not one request reached the provider
    assert result.returncode == 2, result.stdout + result.stderr
    assert who in result.stderr + result.stdout and "--statement-model" in result.stderr + result.stdout
    assert not (tmp_path / "out").exists()  # nothing written


def test_without_a_statement_model_nothing_is_sent_and_nothing_recorded(repo, tmp_path):
    result = wholeloop(
        "mine", str(repo), "--out", str(tmp_path / "out"), "--no-check", "--env-file", str(repo.parent / "forbid.yaml")
    )
    assert result.returncode == 0, result.stdout + result.stderr  # egress forbidden: mining without a model is fine
    (task,) = load_tasks([tmp_path / "out"])
    assert task.origin.egress == [] and "sending to" not in result.stdout


@pytest.mark.docker
def test_allowed_egress_sends_the_failure_at_base_never_the_gold_patch_said_before_and_recorded(repo, tmp_path):
    reply = "add(2, 3) gives -1; it should give 5."
    with FakeLLM(lambda _: Reply(text=reply)) as server:
        result = mine(repo, tmp_path / "out", "allow.yaml", server.base_url)
        requests, sent = len(server.requests), json.dumps(server.bodies())
    assert result.returncode == 0, result.stdout + result.stderr
    assert requests == 1
    gold = git(repo, "diff", "HEAD~1", "HEAD", "--", "addpkg")
    added = [line[1:].strip() for line in gold.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added == ["return a + b"]
    assert not [line for line in added if line in sent]  # not one line of the fix's code
    assert "COMMIT-MESSAGE-MARKER" not in sent  # nor the commit message, which describes the fix
    # the hidden test's failure at base: its id and pytest's account of the failed assertion
    assert "tests/test_add.py::test_add" in sent and "assert -1 == 5" in sent
    said = f"--statement-model: sending to anthropic/claude-test at {server.base_url}: the hidden tests' output at base"
    assert said in " ".join(result.stdout.split())
    (task,) = load_tasks([tmp_path / "out"])
    (record,) = task.origin.egress
    assert record["feature"] == "--statement-model" and record["model"] == "anthropic/claude-test"
    assert record["endpoint"] == server.base_url and record["chars"] > 0 and len(record["sha256"]) == 64
    assert record["sent"][0].startswith("the hidden tests' output at base (1 failing test(s))")
    assert "assert -1 == 5" in task.origin.statement_prompt and "return a + b" not in task.origin.statement_prompt
    assert task.origin.statement == "model" and task.origin.statement_model == "anthropic/claude-test"
    assert task.problem_statement == reply + "\n"
    # the model's one line is thin; what it replaced ("Fix add" and a body) was a commit message
    assert task.origin.statement_quality == "thin" and task.origin.statement_replaced_quality == "commit_message"
