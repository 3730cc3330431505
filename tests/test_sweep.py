"""Sweeps (docs/sweeps.md): the one estimator (also `run --dry-run`'s), the sweep file and its plan."""

from __future__ import annotations

import re
import shutil

import pytest
from support.cli import DEMO, wl
from support.history import row, write_run

from harness.history.url import sqlite_url
from harness.sweep.estimate import Config, Estimator, Source

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
