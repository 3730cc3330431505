"""The front (docs/sweeps.md): rates, cost and time per configuration, who is dominated on point
estimates and with intervals, each extra attempt's value, and the paired comparisons against the
best with Holm's correction; on a sweep of scripted models of known quality and price."""

from __future__ import annotations

import json

import pytest
from support.history import row, write_run
from support.sweeps import run_quality_sweep

from harness.report.figures import compute_figures
from harness.report.front import holm, sign_flip_p
from harness.report.stats import BootstrapSettings

FEW = BootstrapSettings(n_resamples=999)  # the intervals' exact digits are not under test


def _name(model: str, agent: str, attempts: int) -> str:
    return f"model={model},name={agent},attempts={attempts}"


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    planned = run_quality_sweep(tmp_path_factory.mktemp("front"))
    return compute_figures([c.out for c in planned.cells], settings=FEW)


def test_the_front_of_a_scripted_sweep_is_what_its_qualities_and_prices_imply(swept):
    """Per trial (tests/support/sweeps.py): the built-in agent resolves 1/4, 1/2, 1 of the slots on
    cheap ($0.1 an attempt), mid ($0.2), dear ($0.3); a second attempt doubles cheap's and mid's rate
    at (2 - rate) x the price; the external CLI resolves a quarter less at twice the price. So the
    front is cheap x1 (25 %, $0.10), cheap x2 (50 %, $0.175) and the three at 100 % for $0.30; mid x1
    (50 %, $0.20) is dominated by cheap x2, and every external-CLI cell by a built-in one."""
    front = swept.front
    on = {_name("cheap", "builtin", 1), _name("cheap", "builtin", 2), _name("mid", "builtin", 2)}
    on |= {_name("dear", "builtin", 1), _name("dear", "builtin", 2)}
    assert set(front.cost_front) == on
    assert front.cost_front[0] == _name("cheap", "builtin", 1)  # cheapest first
    rates = {p.config: (p.resolve_rate.value, p.cost_per_trial.value) for p in front.points}
    assert rates[_name("mid", "builtin", 2)] == pytest.approx((1.0, 0.3))
    assert rates[_name("cheap", "builtin", 2)] == pytest.approx((0.5, 0.175))
    dominated = {p.config for p in front.points if p.cost_dominated_by}
    assert dominated == {p.config for p in front.points} - on
    assert {p.config for p in front.points if p.on_cost_front} == on
    # with intervals: a subset of the point-dominated; mid x1 is not among them -- cheap x2 matches
    # its rate on average but not task by task (per task 1, 1/2, 0, 1/2 against 1/2 each)
    clear = {p.config for p in front.points if p.cost_dominated_with_intervals_by}
    assert clear <= dominated
    assert _name("mid", "builtin", 1) in dominated - clear
    assert front.point(_name("mid", "builtin", 1)).cost_dominated_by == [_name("cheap", "builtin", 2)]
    # the external CLI on cheap resolves nothing for more money: dominated with intervals too
    assert _name("cheap", "builtin", 2) in front.point(_name("cheap", "ext", 1)).cost_dominated_with_intervals_by
    assert _name("dear", "builtin", 1) in front.point(_name("dear", "ext", 2)).cost_dominated_with_intervals_by
    # time: the built-in agent takes 10 s an attempt, the CLI 30 s: only dear at 100 % in 10 s is on it
    assert set(front.time_front) == {_name("dear", "builtin", 1), _name("dear", "builtin", 2)}


def test_the_external_cli_ran_its_two_tasks_only_and_the_front_says_so(swept):
    """The done-when's sweep: the external CLI's cells on 2 of the 4 tasks (a named override of
    their suite), every trial of theirs on those two; the front's notes say which cells ran fewer."""
    ext = [p for p in swept.front.points if ",name=ext," in p.config]
    assert len(ext) == 6 and all(p.trials == 2 * 2 for p in ext)  # 2 tasks x 2 repeats
    assert all(p.trials == 4 * 2 for p in swept.front.points if ",name=builtin," in p.config)
    for p in ext:
        assert p.versus_best is None or p.versus_best.shared_tasks == 2
    assert any("2 of the 4 tasks" in n and "name=ext" in n for n in swept.front.notes), swept.front.notes


def test_each_extra_attempt_says_the_rate_it_buys_per_dollar(swept):
    steps = swept.front.point(_name("cheap", "builtin", 2)).attempts
    assert [(s.attempt, s.rate) for s in steps] == [(1, 0.25), (2, 0.5)]
    assert steps[1].cost_added == pytest.approx(0.075) and steps[1].rate_gained == pytest.approx(0.25)
    assert steps[1].rate_per_dollar == pytest.approx(0.25 / 0.075)
    assert swept.front.point(_name("cheap", "builtin", 1)).attempts == []  # one attempt: nothing to add


def test_four_tasks_cannot_separate_anything_and_the_front_says_so(swept):
    front = swept.front
    assert front.best in {_name("dear", "builtin", 1), _name("dear", "builtin", 2), _name("mid", "builtin", 2)}
    assert front.min_p == 2 / 2**4
    assert set(front.not_separable) == {p.config for p in front.points}  # no p below 0.125 on 4 tasks
    assert any("smallest possible p is 0.125" in n for n in front.notes), front.notes
    worst = front.point(_name("cheap", "builtin", 1)).versus_best
    assert worst.differing_tasks == 4 and worst.p == 0.125 and not worst.separable
    cli = front.point(_name("cheap", "ext", 1)).versus_best  # the CLI shares two tasks with the best
    assert cli.differing_tasks == 2 and cli.p == 0.5 and not cli.separable


def test_on_more_tasks_the_best_is_separated_from_the_worse_holm_corrected(tmp_path):
    tasks = [f"t{i:02d}" for i in range(12)]
    rates = {"best": 12, "near": 11, "bad": 0}  # tasks each resolves
    runs = []
    for label, n in rates.items():
        rows = [row(t, label, "resolved" if i < n else "unresolved", cost=0.1) for i, t in enumerate(tasks)]
        write_run(tmp_path / label, rows)
        runs.append(tmp_path / label)
    front = compute_figures(runs, settings=FEW).front
    assert front.best == "best"
    bad, near = front.point("bad").versus_best, front.point("near").versus_best
    assert bad.p == pytest.approx(2 / 2**12) and bad.p_holm == pytest.approx(2 * 2 / 2**12) and bad.separable
    assert near.p == 1.0 and near.p_holm == 1.0 and not near.separable
    assert front.not_separable == ["best", "near"] and front.notes == []


def test_the_sign_flip_test_and_holm_give_the_textbook_values():
    assert sign_flip_p([1, 1, 1, 1]) == 2 / 16
    assert sign_flip_p([0, 0]) == 1.0 and sign_flip_p([1, -1]) == 1.0
    # 1, 1, 1, -1: |sum| 2; of the 16 sign vectors, |sum| >= 2 for all but the 6 with sum 0
    assert sign_flip_p([1, 1, 1, -1]) == 10 / 16
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5]) == [0.5] and holm([]) == []


def test_infra_errors_are_left_out_of_the_front_and_said(tmp_path):
    tasks = [f"t{i}" for i in range(4)]
    write_run(tmp_path / "a", [row(t, "a") for t in tasks])
    write_run(tmp_path / "b", [row(t, "b", "infra_error" if t == "t0" else "resolved") for t in tasks])
    front = compute_figures([tmp_path / "a", tmp_path / "b"], settings=FEW).front
    assert front.point("b").trials == 3 and front.point("b").versus_best.shared_tasks == 3
    assert any(n.startswith("b: 1 trial(s) ended in an infrastructure error") for n in front.notes), front.notes


def test_past_sixteen_tasks_the_sign_flip_test_samples_and_stays_close_to_exact():
    # 20 equal positive differences: exact p = 2 / 2^20; sampled, (1 + hits) / 20001 with hits ~ 0
    assert sign_flip_p([1.0] * 20) == pytest.approx(1 / 20_001, abs=2e-4)
    # half up, half down: p near 1 either way
    assert sign_flip_p([1.0, -1.0] * 10) > 0.9
    assert sign_flip_p([1.0] * 16) == 2 / 2**16  # exact at the limit


def test_the_report_computes_the_all_pairs_comparisons_only_where_it_shows_them(tmp_path, monkeypatch):
    """Quadratic in configurations (most of a 12-cell report's time): the terminal report shows them
    only with --compare, so without it they are not computed; --compare, --json and --html have them."""
    from click.testing import CliRunner

    import harness.report.figures as figures_module
    from harness.cli import main

    calls: list[int] = []
    real = figures_module.compare_all
    monkeypatch.setattr(
        figures_module, "compare_all", lambda configs, *a, **k: calls.append(1) or real(configs, *a, **k)
    )
    runs = []
    for label in ("a", "b", "c"):
        write_run(tmp_path / label, [row(f"t{i}", label, cost=0.1) for i in range(3)])
        runs.append(str(tmp_path / label))
    plain = CliRunner().invoke(main, ["report", *runs])
    assert plain.exit_code == 0, plain.output
    assert calls == [] and "front" in plain.output.lower()
    shown = CliRunner().invoke(main, ["report", *runs, "--compare"])
    assert shown.exit_code == 0 and calls == [1], shown.output
    out = tmp_path / "f.json"
    assert CliRunner().invoke(main, ["report", *runs, "--json", str(out)]).exit_code == 0 and calls == [1, 1]
    assert len(json.loads(out.read_text())["comparisons"]) == 3
