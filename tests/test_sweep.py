"""Sweeps (docs/sweeps.md): the one estimator (also `run --dry-run`'s), the sweep file and its plan."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from support import ROOT
from support.cli import DEMO, wl
from support.history import row, write_run
from support.sweeps import PRICES, ScriptedCell, estimator_of, scripted_sweep

from harness.history.url import sqlite_url
from harness.records import RunFolder
from harness.run.runner import ENGINE_DOWN_AFTER, EngineDown
from harness.run.spec import RunSpec
from harness.sweep.estimate import Config, Estimator, Source
from harness.sweep.plan import BudgetError, plan
from harness.sweep.scheduler import SweepRunner
from harness.sweep.spec import Budget, SweepSpec, SweepSpecError
from harness.tasks import load_tasks

REPLAY = "replay:tasks/demo/recordings"
REPLAY_LABEL = "default+replay:recordings"


def _index(tmp_path):
    return sqlite_url(tmp_path / "runs" / "history.sqlite")


@pytest.fixture(params=["sqlite", "postgresql"])
def index_url(request, tmp_path):
    if request.param == "sqlite":
        return _index(tmp_path)
    return request.getfixturevalue("postgres").create_database()


def test_the_estimator_takes_the_configuration_then_the_model_then_tokens_x_price(tmp_path, index_url):
    url = index_url
    runs = tmp_path / "runs"
    write_run(
        runs / "gold", [row(t, "gold", agent="gold", model=None, cost=0.0, seconds=5.0) for t in ("a", "b")], url=url
    )
    mine = [row("a", "cfg", seconds=100.0, cost=0.40, model="anthropic/claude-sonnet-4-5", agent="default")]
    write_run(runs / "mine", mine, url=url)
    other = row("b", "other", seconds=60.0, cost=0.20, model="anthropic/claude-sonnet-4-5", agent="default")
    other.usage.input_tokens, other.usage.output_tokens = 100_000, 2_000
    write_run(runs / "other", [other], url=url)
    est = Estimator.from_history(url, ["a", "b", "c"])
    cfg = Config("cfg", "default", "anthropic/claude-sonnet-4-5")
    a, b = est.unit(cfg, "a"), est.unit(cfg, "b")
    # its own trial of a; for b the configuration's median over the suite (never gold's 5 s)
    assert (a.seconds, a.cost_usd, a.time_from) == (100.0, 0.40, Source.configuration)
    assert (b.seconds, b.time_from) == (100.0, Source.configuration)
    # a new configuration of the same model: the model's trials (other agents or settings)
    new = Config("new", "default", "anthropic/claude-sonnet-4-5")
    assert est.unit(new, "b").seconds == 60.0 and est.unit(new, "b").cost_from == Source.model
    # another model, in the price map: others' tokens on b at its price; its time is not guessed
    priced = est.unit(Config("h", "default", "anthropic/claude-haiku-4-5"), "b")
    assert priced.cost_from == Source.tokens and priced.cost_usd is not None and priced.cost_usd > 0
    assert priced.seconds is None and priced.time_from == Source.unknown
    # a model no map knows: unknown unless a price is given
    odd = Config("odd", "default", "openai/not-a-model")
    assert est.unit(odd, "b").cost_usd is None and est.unit(odd, "b").cost_from == Source.unknown
    given = Estimator.from_history(
        url, ["b"], prices={"openai/not-a-model": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-5}}
    )
    assert given.unit(odd, "b").cost_usd == 100_000 * 1e-6 + 2_000 * 1e-5
    # a control calls no model: its cost is 0, its time its own
    gold = est.unit(Config("gold", "gold", None), "a")
    assert (gold.seconds, gold.cost_usd, gold.cost_from) == (5.0, 0.0, Source.no_model)
    total = est.units(cfg, ["a", "b", "c"])
    assert (
        total.seconds == 300.0 and total.cost_usd == pytest.approx(1.2) and total.time_from == {Source.configuration: 3}
    )


def test_an_estimator_without_a_history_says_so_and_knows_nothing(tmp_path):
    est = Estimator.from_history(_index(tmp_path), ["a"])
    assert "no run history yet" in est.note and not (tmp_path / "runs" / "history.sqlite").exists()
    e = est.units(Config("cfg", "default", "openai/not-a-model"), ["a"])
    assert e.seconds is None and e.cost_usd is None and e.says("cost") == "1 unknown"


def test_dry_run_estimates_a_model_from_its_own_runs_never_from_gold_and_noop(tmp_path):
    """Failed before the one estimator: the time of a model's units came from any earlier run of
    the same tasks, gold and noop included (inikit-002 said ~10.0s, gold's time)."""
    runs = tmp_path / "runs"
    url = _index(tmp_path)
    ids = sorted(p.stem for p in DEMO.glob("*.yaml"))
    controls = [row(t, c, agent=c, model=None, cost=0.0, seconds=10.0) for t in ids for c in ("gold", "noop")]
    write_run(runs / "controls", controls, url=url)
    replay = [row("inikit-001", REPLAY_LABEL, agent="default", model=REPLAY, cost=0.05, seconds=90.0)]
    write_run(runs / "replay", replay, url=url)
    out = wl("run", DEMO, "--model", REPLAY, "--dry-run", "--out", runs / "new")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = {t: next(line for line in out.stdout.splitlines() if line.strip().startswith(t)) for t in ids}
    assert all("~90.0s" in line and "10.0s" not in line for line in lines.values()), out.stdout
    assert re.search(r"estimate: about 10\.5m .*\$0\.35", out.stdout), out.stdout
    # a model never run: its time is unknown, said so; gold's seconds are not its estimate
    shutil.copytree(DEMO / "recordings", tmp_path / "elsewhere")
    fresh = wl("run", DEMO, "--model", "replay:" + str(tmp_path / "elsewhere"), "--dry-run", "--out", runs / "n2")
    assert "10.0s" not in fresh.stdout and "time: unknown" in fresh.stdout, fresh.stdout + fresh.stderr


# ---------------------------------------------------------------------------- the sweep file and its plan


def _sweep_file(tmp_path, text: str) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(textwrap.dedent(text))
    return path


MATRIX = """
    suite: {paths: [tasks/demo/inikit-001.yaml, tasks/demo/inikit-002.yaml]}
    base: {agent: {name: default}, settings: {repeats: 2}}
    matrix:
      agent.model: {sonnet: anthropic/claude-sonnet-4-5, haiku: anthropic/claude-haiku-4-5}
      agent.settings.temperature: [0.0, 0.7]
      settings.attempts: [1, 2]
    exclude:
      - name: haiku-greedy-only
        where: {agent.model: haiku, agent.settings.temperature: 0.7}
"""


def test_each_cell_of_a_sweep_is_a_run_spec_named_by_its_axes_and_exclusions_are_named(tmp_path):
    sweep = SweepSpec.load(_sweep_file(tmp_path, MATRIX))
    cells, excluded = sweep.cells()
    assert [c.name for c in cells] == [
        "model=sonnet,temperature=0.0,attempts=1",
        "model=sonnet,temperature=0.0,attempts=2",
        "model=sonnet,temperature=0.7,attempts=1",
        "model=sonnet,temperature=0.7,attempts=2",
        "model=haiku,temperature=0.0,attempts=1",
        "model=haiku,temperature=0.0,attempts=2",
    ]
    assert excluded == {
        "haiku-greedy-only": ["model=haiku,temperature=0.7,attempts=1", "model=haiku,temperature=0.7,attempts=2"]
    }
    hot = cells[3].spec
    assert isinstance(hot, RunSpec) and hot.agent.model == "anthropic/claude-sonnet-4-5"
    assert hot.agent.settings == {"temperature": 0.7} and hot.settings.attempts == 2 and hot.settings.repeats == 2
    assert hot.settings.label == cells[3].name and hot.suite == sweep.suite and sweep.name == "sweep"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("matrix: {settings.atempts: [1, 2]}", r"cell .*settings\.atempts"),  # a RunSpec field misspelt
        ("matrix: {out: [a, b]}", r"matrix\.out.*not an axis"),
        ("matrix: {agent.name: [gold]}\nexclude: [{name: typo, where: {agent.name: glod}}]", "'typo' matches no cell"),
        ("matrix: {agent.name: [gold]}\nexclude: [{name: x, where: {agent.model: m}}]", "agent.model is not an axis"),
        ("base: {out: x}", r"base\.out"),
        ("base: {agent: {name: gold}}\nmatrix: {executor.kind: [local, ray]}", "share the sweep's workers"),
        (
            "matrix: {agent.name: [gold]}\noverrides: [{name: o, where: {agent.name: glod}, set: {agent.model: m}}]",
            "'o' matches no",
        ),
        ("matrix: {agent.name: [gold]}\noverrides: [{name: o, where: {agent.name: gold}, set: {out: x}}]", r"o.*out"),
    ],
)
def test_a_sweep_file_that_is_wrong_says_where(tmp_path, text, error):
    path = _sweep_file(tmp_path, "suite: {paths: [tasks/demo]}\nbase: {agent: {name: gold}}\n" + text)
    with pytest.raises(SweepSpecError, match=error):
        SweepSpec.load(path).cells()


def test_a_named_override_restricts_some_cells_to_a_subset_of_the_suite(tmp_path):
    text = (
        "suite: {paths: [tasks/demo]}\nbase: {agent: {name: default}}\n"
        "matrix: {agent.name: {builtin: default, ext: 'external:mini-swe-agent'}, agent.model: [scripted/cheap]}\n"
        "overrides: [{name: cli-on-two, where: {agent.name: ext},"
        " set: {suite.paths: [tasks/demo/inikit-001.yaml, tasks/demo/inikit-002.yaml]}}]\n"
    )
    sweep = SweepSpec.load(_sweep_file(tmp_path, text))
    sweep.out = str(tmp_path / "s")
    cells, _ = sweep.cells()
    assert cells[0].spec.suite.paths == ["tasks/demo"]
    assert cells[1].spec.suite.paths == ["tasks/demo/inikit-001.yaml", "tasks/demo/inikit-002.yaml"]
    assert cells[1].overrides == ["cli-on-two"] and cells[0].overrides == []
    tasks = [t for t in load_tasks(DEMO) if t.id.startswith("inikit")]
    planned = plan(sweep, tasks, estimator=Estimator([]))
    assert [(c.total, [t.id for t, _ in c.todo]) for c in planned.cells] == [
        (4, ["inikit-001", "inikit-002", "inikit-003", "inikit-004"]),
        (2, ["inikit-001", "inikit-002"]),
    ]
    # a cell's own suite must stay inside the sweep's: tasks from elsewhere are refused
    outside = SweepSpec.load(_sweep_file(tmp_path, text.replace("inikit-002.yaml", "ledgerly-001.yaml")))
    with pytest.raises(SweepSpecError, match=r"cell .*ledgerly-001.* not in the sweep's suite"):
        plan(outside, tasks, estimator=Estimator([]))


def test_the_plan_counts_each_cells_units_and_estimates_them_from_the_history(tmp_path):
    url = _index(tmp_path)
    sweep = SweepSpec.load(_sweep_file(tmp_path, MATRIX))
    sweep.out = str(tmp_path / "runs" / "sweeps" / "s")
    cells, _ = sweep.cells()
    seen = cells[0].label  # one cell ran inikit-001 before: 40 s, $0.30
    write_run(tmp_path / "runs" / "old", [row("inikit-001", seen, seconds=40.0, cost=0.30, model="x/y")], url=url)
    tasks = load_tasks([DEMO / "inikit-001.yaml", DEMO / "inikit-002.yaml"])
    planned = plan(sweep, tasks, history_url=url)
    assert planned.units == 6 * 2 * 2 and [len(c.todo) for c in planned.cells] == [4] * 6
    first = planned.cells[0].estimate
    assert (first.seconds, first.cost_usd, first.time_from) == (160.0, pytest.approx(1.2), {Source.configuration: 4})
    haiku = planned.cells[4].estimate  # never run, its model never run: cost by tokens x price needs tokens
    assert haiku.seconds is None and haiku.cost_usd is None
    order = [(c.name, t.id, rep) for c, t, rep in planned.interleaved()][:7]
    assert [o[0] for o in order[:6]] == [c.name for c in planned.cells] and order[6][1:] == ("inikit-002", 0)


def test_a_budget_refuses_a_cell_whose_model_has_no_price_unless_prices_are_given(tmp_path):
    text = """
        suite: {paths: [tasks/demo/inikit-001.yaml]}
        base: {agent: {name: default}}
        matrix: {agent.model: [openai/my-finetune, anthropic/claude-sonnet-4-5]}
        budget: {max_cost: 5}
    """
    sweep = SweepSpec.load(_sweep_file(tmp_path, text))
    sweep.out = str(tmp_path / "s")
    tasks = load_tasks(DEMO / "inikit-001.yaml")
    with pytest.raises(BudgetError, match="model=openai/my-finetune") as caught:
        plan(sweep, tasks, history_url=None)
    assert "prices:" in caught.value.hint and "sonnet" not in str(caught.value)
    priced = SweepSpec.load(
        _sweep_file(
            tmp_path,
            text + "    prices: {openai/my-finetune: {input_cost_per_token: 1.0e-6, output_cost_per_token: 2.0e-6}}\n",
        )
    )
    priced.out = str(tmp_path / "s")
    assert len(plan(priced, tasks, history_url=None).cells) == 2
    assert len(plan(sweep.model_copy(update={"budget": Budget()}), tasks, history_url=None).cells) == 2  # no budget


def test_sweep_dry_run_prints_the_plan_and_starts_nothing(tmp_path):
    path = _sweep_file(tmp_path, MATRIX + f"    out: {tmp_path / 'runs' / 's'}\n")
    out = wl("sweep", path, "--dry-run", env={"ANTHROPIC_API_KEY": "sk-ant-not-a-real-key-0000"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "6 cell(s), 24 unit(s) to run" in out.stdout and "excluded by haiku-greedy-only" in out.stdout
    assert "time unknown" in out.stdout and "nothing was started" in out.stdout
    assert not (tmp_path / "runs" / "s").exists()
    refused = wl("sweep", path, "--dry-run", "--max-cost", "1", env={"ANTHROPIC_API_KEY": "sk-ant-not-a-real-key-0000"})
    assert refused.returncode == 0, refused.stdout + refused.stderr  # both models are in the price map
    assert "budget: sweep $1.00" in refused.stdout


def test_sweep_dry_run_plans_an_overridden_cell_on_its_own_tasks(tmp_path):
    """Through the command's whole path (each cell prepared as a run, then planned): the gold cell on
    the whole suite, the noop cell narrowed to two of its tasks."""
    text = (
        f"suite: {{paths: [{DEMO}]}}\nmatrix: {{agent.name: [gold, noop]}}\nout: {tmp_path / 's'}\n"
        f"overrides: [{{name: two, where: {{agent.name: noop}}, "
        f"set: {{suite.paths: [{DEMO / 'inikit-001.yaml'}, {DEMO / 'inikit-002.yaml'}]}}}}]\n"
    )
    out = wl("sweep", _sweep_file(tmp_path, text), "--dry-run")
    assert out.returncode == 0, out.stdout + out.stderr
    whole = len(load_tasks(DEMO))
    assert f"2 cell(s), {whole + 2} unit(s) to run" in out.stdout, out.stdout
    assert "override two on name=noop: suite.paths (2 task(s))" in out.stdout, out.stdout


# ---------------------------------------------------------------------------- running a sweep
# The scheduler's cells here are run folders whose units a scripted model "runs" (a row with its
# known price): the interleaving, budgets and resume are the point, not Docker. The one Docker
# test below runs real units.


def _run(sweep, tasks, estimator, calls, **cell_kw):
    planned = plan(sweep, tasks, estimator=estimator)
    runs = {c.name: ScriptedCell(c, calls, **cell_kw) for c in planned.cells}
    return planned, SweepRunner(planned, runs).run()


def _rows(tmp_path):
    return [r for folder in sorted((tmp_path / "sweep" / "cells").iterdir()) for r in RunFolder(folder).rows()]


def test_a_killed_sweep_resumes_interleaved_and_runs_no_unit_twice(tmp_path):
    sweep, tasks = scripted_sweep(tmp_path)
    calls: list = []
    with pytest.raises(KeyboardInterrupt):
        _run(sweep, tasks, estimator_of(sweep, PRICES), calls, stop_at=6)
    record = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert record["status"] == "interrupted" and [c["finished"] for c in record["cells"]] == [2, 2, 1]
    # round-robin: every cell's first unit before any cell's second
    assert [c[:2] for c in calls[:4]] == [
        ("model=cheap", "inikit-001"),
        ("model=mid", "inikit-001"),
        ("model=dear", "inikit-001"),
        ("model=cheap", "inikit-002"),
    ]
    again: list = []
    planned, result = _run(sweep, tasks, estimator_of(sweep, PRICES), again)
    assert planned.units == 7 and result.status == "finished"
    assert ("model=dear", "inikit-002", 0) in again  # the unit interrupted before its row is done now
    units = [(r.config, r.task_id, r.repeat) for r in _rows(tmp_path)]
    assert len(units) == 12 and len(set(units)) == 12  # every unit once, none twice
    record = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert record["status"] == "finished" and record["spent_usd"] == pytest.approx(4 * 0.6)
    assert {c["status"] for c in record["cells"]} == {"finished"} and record["cells"][0]["run"] == "cells/model_cheap"
    assert record["cells"][1]["recipe"]["agent"]["model"] == "scripted/mid"


def test_a_sweep_killed_with_sigkill_resumes_with_no_unit_run_twice(tmp_path):
    """The sweep's process is killed (-9) while its sixth unit runs: the cells' folders keep five
    rows, their writer locks go with the process, and the same sweep started again runs the seven
    units left, each once."""
    code = f"from support.sweeps import run_until_killed; run_until_killed({str(tmp_path)!r}, 5)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE)
    try:
        cells = tmp_path / "sweep" / "cells"
        for _ in range(1200):  # until five rows are written (or the child ended: then it failed)
            written = sum(1 for f in cells.glob("*/results.jsonl") for _ in f.open()) if cells.exists() else 0
            if written >= 5 or child.poll() is not None:
                break
            time.sleep(0.1)
        assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
        assert written == 5
    finally:
        child.kill()
        child.wait()
    record = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert record["status"] == "running"  # what a killed sweep leaves; the next start rewrites it
    sweep, tasks = scripted_sweep(tmp_path)
    calls: list = []
    planned, result = _run(sweep, tasks, estimator_of(sweep, PRICES), calls)
    assert planned.units == 7 and len(calls) == 7 and result.status == "finished"
    units = [(r.config, r.task_id, r.repeat) for r in _rows(tmp_path)]
    assert len(units) == 12 == len(set(units))


def test_max_cost_stops_new_units_before_the_budget_and_reports_no_overshoot_when_estimates_hold(tmp_path):
    sweep, tasks = scripted_sweep(tmp_path, max_cost=1.0)
    calls: list = []
    _, result = _run(sweep, tasks, estimator_of(sweep, PRICES), calls)
    # cheap, mid, dear, cheap, mid = $0.90; dear's second unit would pass $1.00
    assert len(calls) == 5 and result.spent_usd == pytest.approx(0.9) and result.overshoot_usd == 0
    assert result.status == "stopped" and {c.stopped for c in result.cells} == {"sweep budget"}
    record = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert record["status"] == "stopped" and record["cells"][2]["status"] == "stopped: sweep budget"


def test_units_in_flight_past_the_budget_are_reported_as_overshoot(tmp_path):
    sweep, tasks = scripted_sweep(tmp_path, workers=3, max_cost=0.5)
    calls: list = []
    # the history says $0.10 a unit, every unit costs $0.30: three start at once, then the spend says stop
    together = threading.Barrier(3, timeout=60)  # the three run at once (else: BrokenBarrierError)
    _, result = _run(sweep, tasks, estimator_of(sweep, dict.fromkeys(PRICES, 0.1)), calls, price=0.3, together=together)
    assert len(calls) == 3 and result.spent_usd == pytest.approx(0.9)
    assert result.overshoot_usd == pytest.approx(0.4) and result.status == "stopped"


def test_a_cell_budget_stops_that_cell_only(tmp_path):
    sweep, tasks = scripted_sweep(tmp_path, per_cell=0.25)
    calls: list = []
    _, result = _run(sweep, tasks, estimator_of(sweep, PRICES), calls)
    ran = {name: sum(c[0] == name for c in calls) for name in ("model=cheap", "model=mid", "model=dear")}
    assert ran == {"model=cheap": 2, "model=mid": 1, "model=dear": 0}
    assert [c.stopped for c in result.cells] == ["cell budget"] * 3 and result.overshoot_usd == 0


@pytest.mark.docker
@pytest.mark.slow
def test_a_sweep_of_scripted_models_x_settings_stops_at_max_cost_then_resumes_to_the_end(tmp_path):
    """Real units: gold and the replayed (scripted) model x two temperatures on two inikit tasks, one
    worker. The replayed units cost $0.0712 on inikit-001 and nothing estimates them at first: $0.15
    lets gold, both replay cells' first units and gold's second start; replay's second (estimated at
    the cell's mean, $0.0712) would pass it. Then the same command without a budget finishes it."""
    path = _sweep_file(
        tmp_path,
        f"""
        suite: {{paths: [tasks/demo/inikit-001.yaml, tasks/demo/inikit-002.yaml]}}
        matrix:
          agent: {{gold: {{name: gold}}, replay: {{name: default, model: "{REPLAY}"}}}}
          agent.settings.temperature: [0.0, 0.7]
        exclude:
          - {{name: gold-once, where: {{agent: gold, agent.settings.temperature: 0.7}}}}
        out: {tmp_path / "runs" / "s"}
        """,
    )
    sweep_dir = tmp_path / "runs" / "s"
    first = wl("sweep", path, "--max-cost", "0.15")
    assert first.returncode == 0, first.stdout + first.stderr
    record = json.loads((sweep_dir / "sweep.json").read_text())
    assert record["status"] == "stopped" and record["spent_usd"] == pytest.approx(0.1424, abs=1e-4)
    assert [c["finished"] for c in record["cells"]] == [2, 1, 1] and record["overshoot_usd"] == 0
    assert "sweep stopped" in first.stdout and "stopped (sweep budget)" in first.stdout
    again = wl("sweep", path)  # resumes: the two units left, none twice
    assert again.returncode == 0 and "2 unit(s) to run" in again.stdout, again.stdout + again.stderr
    cells = sweep_dir / "cells"
    outcomes = {d.name: sorted(r.outcome for r in RunFolder(d).latest()) for d in cells.iterdir()}
    assert set(outcomes) == {
        "agent_gold_temperature_0.0",
        "agent_replay_temperature_0.0",
        "agent_replay_temperature_0.7",
    }
    assert outcomes["agent_gold_temperature_0.0"] == ["resolved", "resolved"]
    units = [(r.config, r.task_id, r.repeat) for d in cells.iterdir() for r in RunFolder(d).rows()]
    assert len(units) == 6 == len(set(units))
    record = json.loads((sweep_dir / "sweep.json").read_text())
    assert record["status"] == "finished" and record["excluded"] == {"gold-once": ["agent=gold,temperature=0.7"]}
    # the history beside the sweep's folder now knows every cell: a new sweep of them is estimated from it
    planned = wl("sweep", path, "--dry-run", "--out", tmp_path / "runs" / "s2")
    assert planned.stdout.count("time 2 from configuration; cost 2 from configuration") == 2, planned.stdout


def test_the_estimates_of_units_in_flight_count_against_the_budget(tmp_path):
    sweep, tasks = scripted_sweep(tmp_path, workers=3, max_cost=0.25)
    calls: list = []
    _, result = _run(sweep, tasks, estimator_of(sweep, dict.fromkeys(PRICES, 0.1)), calls, price=0.1)
    # two in flight ($0.20 estimated): a third would make $0.30, so it never starts
    assert len(calls) == 2 and result.spent_usd == pytest.approx(0.2) and result.overshoot_usd == 0


class EngineGoneCell(ScriptedCell):
    """Every unit ends as a unit does when the Docker engine does not answer."""

    def run_unit(self, task, repeat):
        self.calls.append((self.cell.name, task.id, repeat))
        r = row(task.id, self.cell.cell.label, "infra_error", cost=0.0, model=self.cell.config.model, repeat=repeat)
        r.error = "EngineUnavailable: the Docker engine does not answer"
        self.folder.append(r)
        return [r]


def test_a_sweep_stops_when_the_engine_is_down_as_a_run_does(tmp_path):
    sweep, tasks = scripted_sweep(tmp_path)
    planned = plan(sweep, tasks, estimator=estimator_of(sweep, PRICES))
    calls: list = []
    runs = {c.name: EngineGoneCell(c, calls) for c in planned.cells}
    with pytest.raises(EngineDown, match="engine does not answer"):
        SweepRunner(planned, runs).run()
    assert len(calls) == ENGINE_DOWN_AFTER  # not all 12 units burnt on an engine that is gone
    record = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert record["status"] == "engine down"


def test_a_bug_in_a_unit_leaves_the_record_saying_failed_not_running(tmp_path):
    class Broken(ScriptedCell):
        def run_unit(self, task, repeat):
            raise RuntimeError("a bug of ours")

    sweep, tasks = scripted_sweep(tmp_path)
    planned = plan(sweep, tasks, estimator=estimator_of(sweep, PRICES))
    with pytest.raises(RuntimeError, match="a bug of ours"):
        SweepRunner(planned, {c.name: Broken(c, []) for c in planned.cells}).run()
    assert json.loads((tmp_path / "sweep" / "sweep.json").read_text())["status"] == "failed"


@pytest.mark.docker
@pytest.mark.slow  # three sessions of a two-cell sweep on the tiny task (the image is built once)
@pytest.mark.timeout(600)
def test_a_sweep_killed_mid_attempt_counts_the_abandoned_trys_spend_once(tiny_task, tmp_path):
    """The done-when's kill through a sweep with the real runner: the sweep's process SIGKILLed while
    its first unit's second model call is in flight; the resumed sweep records that try once (an
    abandoned row with what it spent) and counts it once in the cell's and the sweep's spend; a third
    session with nothing left adds nothing."""
    from support.fakellm import Call, FakeLLM, Reply, Tokens

    seen, hold = threading.Event(), threading.Event()

    def respond(req):
        session = req.path.split("/")[1]
        turns = sum(m.get("role") == "assistant" for m in req.body.get("messages", []))
        if session == "s1":
            if turns == 0:
                return Reply(calls=[Call("bash", {"command": "ls"})], usage=Tokens(1000, 50))
            seen.set()  # the second call is in flight: the sweep is killed now
            hold.wait(120)
            return Reply(text="too late", usage=Tokens(1, 1))
        return Reply(text="I give up", usage=Tokens(10, 2))  # later sessions: one call, no patch

    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(
        f"name: killed\nsuite: {{paths: [{tiny_task['dir']}]}}\n"
        "base: {agent: {name: default, model: openai/gpt-4o}, history: {enabled: false}}\n"
        f"matrix: {{agent.settings.temperature: [0.0, 0.5]}}\nout: {tmp_path / 'sweep'}\n"
    )

    def launch(n: int, url: str) -> subprocess.Popen:
        env = {**os.environ, "OPENAI_API_KEY": "sk-kill-spend-not-a-key", "OPENAI_BASE_URL": f"{url}/s{n}/v1"}
        cmd = [sys.executable, "-m", "harness.cli", "sweep", str(sweep_file)]
        log = open(tmp_path / f"s{n}.log", "w")
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    with FakeLLM(responder=respond) as srv:
        first = launch(1, srv.base_url)
        try:
            assert seen.wait(500), (tmp_path / "s1.log").read_text()[-3000:]
        finally:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
            hold.set()
        second = launch(2, srv.base_url)
        assert second.wait(500) == 0, (tmp_path / "s2.log").read_text()[-3000:]
        third = launch(3, srv.base_url)  # nothing left to do
        assert third.wait(300) == 0, (tmp_path / "s3.log").read_text()[-3000:]
        assert "0 unit(s) to run" in (tmp_path / "s3.log").read_text()
    cells = sorted((tmp_path / "sweep" / "cells").iterdir())
    rows = {c.name: RunFolder(c).rows() for c in cells}
    abandoned = [r for rs in rows.values() for r in rs if r.retried]
    assert len(abandoned) == 1, {k: [r.model_dump() for r in v] for k, v in rows.items()}  # once, in all sessions
    gone = abandoned[0]
    assert gone.usage.input_tokens == 1000 and gone.usage.output_tokens == 50 and (gone.cost_usd or 0) > 0
    finals = [r for rs in rows.values() for r in rs if r.final]
    assert len(finals) == 2 and len({r.config for r in finals}) == 2  # each cell's one unit, once
    record = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    every = sum(r.cost_usd or 0.0 for rs in rows.values() for r in rs)
    assert record["status"] == "finished" and record["spent_usd"] == pytest.approx(every, abs=1e-6)
    killed = next(c for c in record["cells"] if c["label"] == gone.config)
    mine = sum(r.cost_usd or 0.0 for r in rows[Path(killed["run"]).name])
    assert killed["spent_usd"] == pytest.approx(mine, abs=1e-6) and mine > (gone.cost_usd or 0)
