"""Sweeps (docs/sweeps.md): the one estimator (also `run --dry-run`'s), the sweep file and its plan."""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import pytest
from support.cli import DEMO, wl
from support.history import row, write_run

from harness.history.url import sqlite_url
from harness.run.spec import RunSpec
from harness.sweep.estimate import Config, Estimator, Source
from harness.sweep.plan import BudgetError, plan
from harness.sweep.spec import Budget, SweepSpec, SweepSpecError
from harness.tasks import load_tasks

REPLAY = "replay:tasks/demo/recordings"
REPLAY_LABEL = "default+replay:recordings"


def _index(tmp_path):
    return sqlite_url(tmp_path / "runs" / "history.sqlite")


def test_the_estimator_takes_the_configuration_then_the_model_then_tokens_x_price(tmp_path):
    url = _index(tmp_path)
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
    ],
)
def test_a_sweep_file_that_is_wrong_says_where(tmp_path, text, error):
    path = _sweep_file(tmp_path, "suite: {paths: [tasks/demo]}\nbase: {agent: {name: gold}}\n" + text)
    with pytest.raises(SweepSpecError, match=error):
        SweepSpec.load(path).cells()


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
