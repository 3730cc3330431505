"""Parsers, agent kinds and model adapters extend the same way: a built-in registry line, or a
Python entry point from a team's own package (installed here as a real dist-info on sys.path,
read by importlib.metadata in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.parsers import PARSERS, get_parser
from harness.registry import Registry, UnknownName
from harness.tasks import Task, TaskSpecError, load_task

ROOT = Path(__file__).resolve().parent.parent


def test_built_in_entries_load_lazily_and_unknown_names_say_what_exists():
    reg = Registry("wholeloop.test-nothing", "widget", {"json": "json:dumps"})
    assert reg.names() == ["json"] and reg.get("json") is json.dumps
    with pytest.raises(UnknownName, match=r"unknown widget 'yaml'; known: json .*wholeloop.test-nothing"):
        reg.get("yaml")
    assert "pytest" in PARSERS and get_parser("pytest").name == "pytest"


def test_a_task_names_only_a_registered_parser(tmp_path):
    spec = tmp_path / "t.yaml"
    spec.write_text(
        "id: t\nrepo: r\nbase_commit: c\nproblem_statement: p\nFAIL_TO_PASS: [a]\n"
        "hidden_tests: {command: run, parser: nosuch}\n"
    )
    with pytest.raises(TaskSpecError, match="unknown parser 'nosuch'; known: .*pytest"):
        load_task(spec)


def test_default_protected_paths_come_from_the_tasks_parser():
    task = Task.model_validate(
        {
            "id": "t",
            "repo": "r",
            "base_commit": "c",
            "problem_statement": "p",
            "FAIL_TO_PASS": ["a"],
            "hidden_tests": {"command": "pytest"},
        }
    )
    assert task.protected() == list(get_parser("pytest").protected_paths)
    own = task.model_copy(update={"protected_paths": ["only/**"]})
    assert own.protected() == ["only/**"]


def test_a_teams_own_package_adds_a_parser_an_agent_kind_and_a_model_through_entry_points(tmp_path):
    site = tmp_path / "site"
    pkg = site / "teamplug"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        textwrap.dedent("""
        from harness.parsers import PASSED, TestReport

        class LineParser:
            name = "lines"
            results_file = None
            protected_paths = ("checks/**",)

            def parse(self, output, results=None):
                return TestReport(statuses={l.split()[1]: PASSED for l in output.splitlines() if l.startswith("ok ")},
                                  found_summary=True)

        class EchoAgent:
            name, model = "echo", None

            def run(self, ctx):
                raise NotImplementedError

            def describe(self):
                return {"agent": "echo"}

        def build(spec):
            return EchoAgent()

        class TeamModel:
            provider, base_url = "team", None

            def __init__(self, model, **kw):
                self.name = "team/" + model

            def for_task(self, task_id):
                return self

            def complete(self, messages, tools, settings=None):
                raise NotImplementedError
    """)
    )
    dist = site / "teamplug-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: teamplug\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        textwrap.dedent("""
        [wholeloop.parsers]
        lines = teamplug:LineParser

        [wholeloop.agents]
        echo-kind = teamplug:build

        [wholeloop.models]
        team = teamplug:TeamModel
    """)
    )
    config = tmp_path / "echo.yaml"
    config.write_text("kind: echo-kind\n")
    probe = textwrap.dedent(f"""
        import json
        from harness.agents import get_agent
        from harness.models import get_model
        from harness.parsers import get_parser
        from harness.tasks import Task
        task = Task.model_validate({{"id": "t", "repo": "r", "base_commit": "c", "problem_statement": "p",
                                    "FAIL_TO_PASS": ["a"], "hidden_tests": {{"command": "x", "parser": "lines"}}}})
        report = get_parser("lines").parse("ok a\\nok b\\n")
        agent = get_agent("mine", config_path={str(config)!r})
        print(json.dumps({{"statuses": report.statuses, "protected": task.protected(), "agent": agent.describe(),
                          "spec": agent.spec.name, "model": get_model("team/big-1").name}}))
    """)
    env = {"PYTHONPATH": f"{site}:{ROOT}", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got == {
        "statuses": {"a": "PASSED", "b": "PASSED"},
        "protected": ["checks/**"],
        "agent": {"agent": "echo"},
        "spec": "mine",
        "model": "team/big-1",
    }
