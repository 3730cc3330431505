"""The one egress rule (harness/egress.py, docs/privacy.md): a feature that sends repository content
to a model is off unless asked, says what it sends before it sends it, records it in the spec, and is
refused before any request when the machine (WHOLELOOP_NO_EGRESS=1) or the suite (`egress: forbid`
in wholeloop.yaml) forbids it. The model is a local scripted provider that counts requests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, git, write
from support.fakellm import FakeLLM, Reply

from harness.tasks import load_tasks

SETUP = "setup: ['true']\ninstall: ['true']\n"


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
    git(repo, "commit", "-qm", "Fix add\n\nIt subtracted.")
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


def test_allowed_egress_is_said_before_and_recorded_in_the_spec(repo, tmp_path):
    reply = "add() returns the difference of its arguments.\n\nadd(2, 3) gives -1; it should give 5."
    with FakeLLM(lambda _: Reply(text=reply)) as server:
        result = mine(repo, tmp_path / "out", "allow.yaml", server.base_url)
        requests = len(server.requests)
    assert result.returncode == 0, result.stdout + result.stderr
    assert requests == 1
    said = f"--statement-model: sending to anthropic/claude-test at {server.base_url}: the commit message of"
    assert said in " ".join(result.stdout.split())
    (task,) = load_tasks([tmp_path / "out"])
    (record,) = task.origin.egress
    assert record["feature"] == "--statement-model" and record["model"] == "anthropic/claude-test"
    assert record["endpoint"] == server.base_url and record["chars"] > 0 and len(record["sha256"]) == 64
    assert record["sent"][0].startswith("the commit message of") and "gold patch" in record["sent"][1]
    assert task.origin.statement == "model" and task.problem_statement.startswith("add() returns the difference")
    # "Fix add / It subtracted." was a commit message with a body; the model's text is an issue report
    assert task.origin.statement_replaced_quality == "commit_message" and task.origin.statement_quality == "issue"


def test_without_a_statement_model_nothing_is_sent_and_nothing_recorded(repo, tmp_path):
    result = wholeloop(
        "mine", str(repo), "--out", str(tmp_path / "out"), "--no-check", "--env-file", str(repo.parent / "forbid.yaml")
    )
    assert result.returncode == 0, result.stdout + result.stderr  # egress forbidden: mining without a model is fine
    (task,) = load_tasks([tmp_path / "out"])
    assert task.origin.egress == [] and "sending to" not in result.stdout
