"""Hostile agents against real containers: scripted agents, runs with infra retries off, and the
containers of this process's hostile runs (the `no_leftovers` fixture of tests/conftest.py)."""

from __future__ import annotations

import contextlib
import os
import textwrap
import time
from pathlib import Path

import docker.errors

from harness.agents import AgentResult
from harness.run import Runner, RunOptions
from harness.tasks import LimitsSpec, load_task
from harness.transcript import Stop, ToolCallEvent, ToolResultEvent
from sandbox.docker.engine import LABEL_OWNER, LABEL_RUN, client, owner_id

RUN_PREFIX = f"hostile-{os.getpid()}-"  # this process's runs (other copies of this file may run meanwhile)


class Found:
    """A container as the engine lists it (no per-container inspect: others come and go meanwhile)."""

    def __init__(self, raw: dict):
        self.id, self.labels = raw["Id"], raw.get("Labels") or {}
        self.name = raw["Names"][0].lstrip("/")

    def remove(self) -> None:
        with contextlib.suppress(docker.errors.NotFound):
            client().api.remove_container(self.id, force=True, v=True)


def our_containers() -> list[Found]:
    """Containers of this process's runs (its `wholeloop run` subprocesses' included) or made by it."""
    found = [Found(raw) for raw in client().api.containers(all=True, filters={"label": "wholeloop=1"})]
    return [
        c
        for c in found
        if c.labels.get(LABEL_RUN, "").startswith(RUN_PREFIX) or c.labels.get(LABEL_OWNER) == owner_id()
    ]


def remove_leftovers() -> list[str]:
    """Remove the containers of this process's hostile runs (or made by it); their names."""
    left = our_containers()
    for container in left:
        container.remove()
    return [c.name for c in left]


class Script:
    """A scripted agent: each step is a shell command, `(command, timeout)`, or a callable given
    the sandbox. Tool calls and results go to the transcript as a model-driven agent's would."""

    model = None

    def __init__(self, *steps, name: str = "hostile"):
        self.steps, self.name = steps, name
        self.outputs: list = []

    def run(self, ctx) -> AgentResult:
        started = time.monotonic()
        for i, step in enumerate(self.steps, 1):
            if callable(step):
                self.outputs.append(step(ctx.sandbox))
                continue
            cmd, timeout = step if isinstance(step, tuple) else (step, None)
            ctx.transcript.write(ToolCallEvent(step=i, call_id=f"s{i}", name="bash", arguments={"command": cmd}))
            result = ctx.sandbox.exec(cmd, timeout=timeout)
            self.outputs.append(result)
            ctx.transcript.write(
                ToolResultEvent(
                    step=i,
                    call_id=f"s{i}",
                    name="bash",
                    output=result.combined(),
                    is_error=not result.ok,
                    exit_code=result.returncode,
                    truncated=result.truncated,
                    timed_out=result.timed_out,
                    duration_s=result.duration_s,
                )
            )
        ctx.transcript.write(Stop(reason="submitted"))
        return AgentResult(stop_reason="submitted", steps=len(self.steps), tool_s=time.monotonic() - started)

    def describe(self) -> dict:
        return {"agent": self.name, "steps": [s if isinstance(s, (str, tuple)) else repr(s) for s in self.steps]}


def run(spec_paths, agent, out: Path, workers: int = 1, **limits):
    """Run the tasks through the real Runner; {task id: final row}. Infra retries are off: an
    infra_error must show as one, at once."""
    paths = spec_paths if isinstance(spec_paths, list) else [spec_paths]
    options = RunOptions(out=out, workers=workers, infra_retries=0, limits=LimitsSpec(**limits))
    rows = Runner([load_task(p) for p in paths], agent, options).run()
    assert len(rows) == len(paths)
    return {r.task_id: r for r in rows}


EVIL_PLUGIN = textwrap.dedent("""\
    # Rewrites every test report to "passed" (and so pytest's exit status to 0).
    import _pytest.reports as _r

    _orig = _r.TestReport.from_item_and_call.__func__


    def _fake(cls, item, call):
        rep = _orig(cls, item, call)
        rep.outcome, rep.longrepr = "passed", None
        return rep


    _r.TestReport.from_item_and_call = classmethod(_fake)
    """)


FORCE_PASS_CONFTEST = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    out = yield\n    out.get_result().outcome = 'passed'\n"
)
