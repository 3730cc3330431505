"""Retries are not extra tries (issue 10, rule 4), on real containers: a retried unit's abandoned
try stays on record with its spend, which counts in the configuration's cost once (also across a
resume); an infrastructure error that recurs in the same phase and step says so."""

from __future__ import annotations

import pytest

from harness.agents.config import load_agent_config
from harness.agents.loop import ToolAgent
from harness.models import ScriptedModel, Usage, tool_turn
from harness.records import RunFolder
from harness.report.figures import compute_figures
from harness.run import Runner, RunOptions
from harness.tasks import load_task
from sandbox.docker import DockerBackend
from sandbox.docker.engine import LABEL_ROLE, LABEL_RUN, client

pytestmark = pytest.mark.docker

FIX = {"command": "str_replace", "path": "calc/__init__.py", "old_str": "return a - b", "new_str": "return a + b"}


def _folder(tmp_path):
    return tmp_path / f"run-{tmp_path.name}"  # its name is the run id: unique among parallel test sessions


def _priced(turn, cost: float, tokens_in: int, tokens_out: int):
    turn.usage, turn.cost_usd = Usage(input_tokens=tokens_in, output_tokens=tokens_out), cost
    return turn


def _agent_container(tmp_path) -> str:
    (found,) = client().containers.list(
        filters={"label": [f"{LABEL_RUN}={_folder(tmp_path).name}", f"{LABEL_ROLE}=agent"]}
    )
    return found.id


def _figures(folder):
    (config,) = compute_figures([folder], recovery=False).configs
    return config


def test_a_retried_unit_keeps_its_abandoned_try_on_record_and_its_spend_counts_once(tiny_task, tmp_path):
    """Try 1: attempt 1 submits nothing (graded, $0.01), attempt 2's container is removed from
    outside mid-turn ($0.02 spent). Try 2 fixes it ($0.04 + $0.08). Every dollar counts, once."""

    def remove_it(messages, tools, settings):
        client().containers.get(_agent_container(tmp_path)).remove(force=True)
        return _priced(tool_turn("bash", {"command": "true"}), 0.02, 200, 20)

    model = ScriptedModel(
        [
            _priced(tool_turn("submit", {}), 0.01, 100, 10),
            remove_it,
            _priced(tool_turn("edit", FIX), 0.04, 400, 40),
            _priced(tool_turn("submit", {}), 0.08, 800, 80),
        ]
    )
    folder = _folder(tmp_path)
    task = load_task(tiny_task["spec"])
    Runner([task], ToolAgent(model, load_agent_config()), RunOptions(out=folder, attempts=2, infra_retries=1)).run()

    rows = RunFolder(folder).rows()
    assert [(r.attempt, r.outcome, r.final, getattr(r, "retried", False)) for r in rows] == [
        (1, "empty_patch", False, False),
        (2, "infra_error", False, True),
        (1, "resolved", True, False),
    ]
    abandoned = rows[1]
    assert abandoned.cost_usd == pytest.approx(0.02) and abandoned.usage.input_tokens == 200
    assert "ContainerGone" in abandoned.error and abandoned.phases.agent_s > 0
    assert abandoned.transcript_path.endswith("transcript.unfinished-1.jsonl")
    assert (folder / abandoned.transcript_path).is_file()
    assert [r.outcome for r in RunFolder(folder).latest()] == ["resolved"]  # the rates see one trial

    stats = _figures(folder)
    assert (stats.trials, stats.resolved, stats.infra_errors) == (1, 1, 0)
    assert stats.total_cost_usd == pytest.approx(0.15)  # 0.01 + 0.02 abandoned, 0.12 the trial that counts
    assert stats.retried_cost_usd == pytest.approx(0.03) and stats.retried_tries == 1
    assert (stats.tokens_in, stats.tokens_out) == (1500, 150)
    _reports_say_it(folder, tmp_path)

    # Killed right after the abandoned try's row (the next try had written nothing): the resume
    # redoes the unit and bills the abandoned try once.
    lines = (folder / "results.jsonl").read_text().splitlines(keepends=True)
    (folder / "results.jsonl").write_text("".join(lines[:2]))
    assert RunFolder(folder).latest() == []  # an abandoned try never counts as the unit's trial
    again = ScriptedModel(
        [_priced(tool_turn("edit", FIX), 0.04, 400, 40), _priced(tool_turn("submit", {}), 0.08, 800, 80)]
    )
    Runner([task], ToolAgent(again, load_agent_config()), RunOptions(out=folder, attempts=2, infra_retries=1)).run()
    rows = RunFolder(folder).rows()
    assert sum(bool(getattr(r, "retried", False)) for r in rows) == 1
    stats = _figures(folder)
    assert stats.total_cost_usd == pytest.approx(0.15) and stats.retried_cost_usd == pytest.approx(0.03)


def _reports_say_it(folder, tmp_path):
    """The terminal report, the HTML report and `report --json` (through the command) all say it."""
    import json

    from click.testing import CliRunner

    from harness.cli import main

    done = CliRunner().invoke(
        main,
        ["report", str(folder), "--json", str(tmp_path / "f.json"), "--html", str(tmp_path / "r.html")],
        env={"COLUMNS": "250"},
    )
    assert done.exit_code == 0, done.output
    said = " ".join(done.output.split())
    assert "$0.1500 in all over 1 attempt(s), of which $0.0300 (300 in / 30 out) on 1 retried try" in said, said
    (config,) = json.loads((tmp_path / "f.json").read_text())["configs"]
    assert (config["retried_tries"], config["retried_cost_usd"]) == (1, pytest.approx(0.03))
    assert config["total_cost_usd"] == pytest.approx(0.15)
    assert "of which $0.0300 on 1 retried try" in (tmp_path / "r.html").read_text()


class _GradingRemoved(DockerBackend):
    """Docker, except that every grading container is removed from outside (really) just as the
    hidden tests start in it: the same machine failure in the same step, every try."""

    def __init__(self):
        super().__init__()
        self.removed = 0

    def start(self, image, **kwargs):
        sb = super().start(image, **kwargs)
        if kwargs.get("role") == "grading":
            real_exec = sb.exec

            def exec_(cmd, **kw):
                if isinstance(cmd, str) and "pytest" in cmd:
                    self.removed += 1
                    client().containers.get(sb.id).remove(force=True)
                return real_exec(cmd, **kw)

            sb.exec = exec_
        return sb


def test_an_infra_error_that_recurs_in_the_same_grading_step_says_so(tiny_task, tmp_path):
    from support.runs import ScriptAgent

    backend = _GradingRemoved()
    folder = _folder(tmp_path)
    rows = Runner(
        [load_task(tiny_task["spec"])],
        ScriptAgent("sed -i 's/a - b/a + b/' calc/__init__.py"),
        RunOptions(out=folder, infra_retries=2),
        backend=backend,
    ).run()
    assert backend.removed == 3
    (final,) = rows
    assert final.outcome == "infra_error" and final.final
    summary = final.error.splitlines()[0]
    assert "the same failure 3 times in grading step 'run the hidden tests'" in summary, final.error
    assert "probably not transient" in summary and "transcript.unfinished-1.jsonl" in summary
    abandoned = [r for r in RunFolder(folder).rows() if getattr(r, "retried", False)]
    assert [(r.failed_in["phase"], r.failed_in["step"]) for r in abandoned] == [("grading", "run the hidden tests")] * 2

    from io import StringIO

    from rich.console import Console

    from harness.report.terminal import print_figures

    out = StringIO()
    print_figures(
        compute_figures([folder], recovery=False),
        RunFolder(folder).latest(),
        Console(file=out, width=200, color_system=None),
    )
    assert "the same failure 3 times in grading step 'run the hidden tests'" in " ".join(out.getvalue().split())
