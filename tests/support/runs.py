"""Scripted agents (no model) and runs through the real Runner, for end-to-end tests on the engine."""

from __future__ import annotations

from pathlib import Path

from harness.agents import AgentResult
from harness.run import Runner, RunOptions
from sandbox.docker.engine import client


class ScriptAgent:
    """Runs shell commands in the agent container: a scripted stand-in for a model."""

    model = None

    def __init__(self, *commands, name="script"):
        self.commands, self.name, self.outputs = commands, name, []

    def run(self, ctx):
        for cmd in self.commands:
            self.outputs.append(ctx.sandbox.exec(cmd))
        return AgentResult(stop_reason="submitted", steps=len(self.commands))

    def describe(self):
        return {"agent": self.name, "commands": list(self.commands)}


def our_containers(*run_dirs):
    """Containers of these runs (other processes on this machine may be running their own)."""
    found = client().containers.list(all=True, filters={"label": "wholeloop=1"})
    names = {Path(d).name for d in run_dirs}
    return [c for c in found if c.labels.get("wholeloop.run") in names]


FIX = {"command": "str_replace", "path": "calc/__init__.py", "old_str": "return a - b", "new_str": "return a + b"}


def run_rows(task, agent, tmp_path, **options):
    """The rows of one run of `task` by `agent` into `run_folder(tmp_path)` (one infra retry unless told)."""
    options.setdefault("infra_retries", 1)
    return Runner([task], agent, RunOptions(out=run_folder(tmp_path), **options)).run()


def run_folder(tmp_path):
    return tmp_path / f"run-{tmp_path.name}"  # its name is the run id: unique among parallel test sessions
