"""`wholeloop gate` on run folders fabricated with the real writers (no Docker): the decisions of
issue 14 through the real command, the test against brute-force enumeration, and the power
calculation against simulations of the very test the gate runs."""

from __future__ import annotations

import itertools
import json
import math
from datetime import UTC
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest
from support.history import cli, outcomes, row, write_run

from harness.history.url import sqlite_url
from harness.records import RunFolder
from harness.report import gate as gate_module
from harness.report.gate import SideRows, gate, min_tasks, repeats_needed, signflip_p, tasks_needed


def run_pair(tmp_path: Path, base: list, cand: list, **kw) -> tuple[Path, Path]:
    return (
        write_run(tmp_path / "runs" / "base", base, **kw).path,
        write_run(tmp_path / "runs" / "cand", cand, **kw).path,
    )


def side(path: Path) -> SideRows:
    rows = RunFolder(path).latest()
    return SideRows(str(path), rows[0].config, rows, str(path))


# ---------------------------------------------------------------------------- the done-when figures


def test_six_tasks_lost_of_thirty_paired_none_won_exits_1_naming_the_six(tmp_path):
    base, cand = run_pair(tmp_path, outcomes(30, set(range(20))), outcomes(30, set(range(6, 20))))
    done = cli("gate", str(base), str(cand), "--json", str(tmp_path / "gate.json"))
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "REGRESSION" in out and "lost 6" in out and "won 0" in out and "paired on 30 task(s)" in out
    lost_block = out.split("lost 6")[1].split("won 0")[0]
    for i in range(6):
        assert f"t{i:02d}  baseline 1/1 -> candidate 0/1" in lost_block
        for run in (base, cand):  # the transcripts of both sides, by their paths
            assert str(run / "attempts" / f"t{i:02d}" / "A" / "rep-0" / "transcript.jsonl") in lost_block
    assert "t06" not in lost_block
    assert "p = 0.01562" in out  # 0.5^6: the one-sided exact sign test on the six flipped tasks
    result = json.loads((tmp_path / "gate.json").read_text())
    assert result["verdict"] == "regression" and [f["task_id"] for f in result["lost"]] == [
        f"t{i:02d}" for i in range(6)
    ]


def test_identical_runs_exit_0(tmp_path):
    base, cand = run_pair(tmp_path, outcomes(30, set(range(20))), outcomes(30, set(range(20))))
    done = cli("gate", str(base), str(cand))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NO REGRESSION" in done.stdout and "lost 0" in done.stdout and "won 0" in done.stdout


@pytest.mark.parametrize("cand_resolved", [set(), {1}], ids=["both-lost", "one-each-way"])
def test_two_shared_tasks_that_both_flipped_exit_4_saying_how_many_are_needed(tmp_path, cand_resolved):
    base, cand = run_pair(tmp_path, outcomes(2, {0, 1} if not cand_resolved else {0}), outcomes(2, cand_resolved))
    done = cli("gate", str(base), str(cand))
    assert done.returncode == 4, done.stdout + done.stderr
    out = done.stdout
    assert "NOT ENOUGH EVIDENCE" in out and "2 shared tasks" in out and "at least 5 shared tasks" in out
    assert min_tasks(0.05) == 5 and 0.5**5 < 0.05 <= 0.5**4


def test_an_underpowered_drop_says_how_many_tasks_or_repeats(tmp_path):
    base, cand = run_pair(tmp_path, outcomes(30, set(range(20))), outcomes(30, set(range(2, 20))))
    done = cli("gate", str(base), str(cand))
    assert done.returncode == 4, done.stdout
    assert "looks worse" in done.stdout and "shared tasks or" in done.stdout and "repeats of each" in done.stdout
    r = gate(side(base), side(cand))
    # two losses in thirty: e = -1 twice -> mu = -1/15, E[e^2] = 1/15
    mu, m2 = -1 / 15, 1 / 15
    assert r.tasks_needed == tasks_needed(mu, m2, math.sqrt(m2 - mu * mu), 0.05) > 30
    assert r.repeats_needed and "lower bound" in r.repeats_note  # one repeat: noise cannot be told from change


# ---------------------------------------------------------------------------- pairing, shares, metrics


def test_pairs_only_tasks_with_the_same_content_hash_and_reports_infra_shares(tmp_path):
    base_rows = outcomes(10, set(range(10)))
    cand_rows = outcomes(10, set(range(10)))
    cand_rows[0].task_hash = "edited"  # the task changed between the runs: not compared
    cand_rows[1].outcome, cand_rows[1].resolved = "infra_error", False
    cand_rows[2].outcome, cand_rows[2].resolved = "infra_error", False
    cand_rows.append(row("t99"))  # only in the candidate
    base, cand = run_pair(tmp_path, base_rows, cand_rows)
    r = gate(side(base), side(cand))
    assert r.changed == ["t00"] and r.unscored == ["t01", "t02"] and r.only_candidate == ["t99"]
    assert r.shared == [f"t{i:02d}" for i in range(3, 10)]
    assert r.baseline.infra_share == 0 and r.candidate.infra_share == pytest.approx(2 / 11)
    out = cli("gate", str(base), str(cand)).stdout
    assert "infrastructure errors 0/10 (0.0%)" in out and "infrastructure errors 2/11 (18.2%)" in out
    assert "1 changed content hash, not compared (t00)" in out


def test_cost_and_time_metrics_with_a_relative_margin(tmp_path):
    base = outcomes(20, set(range(20)), cost=0.10, seconds=10)
    cand = outcomes(20, set(range(20)), cost=0.20, seconds=11)
    b, c = run_pair(tmp_path, base, cand)
    done = cli("gate", str(b), str(c), "--metric", "cost")
    assert done.returncode == 1 and "+100.0%" in done.stdout  # twice the money
    assert cli("gate", str(b), str(c), "--metric", "cost", "--margin", "150").returncode == 0  # 150 % more allowed
    assert gate(side(b), side(c), metric="time").verdict == "regression"  # 10 % slower, every task
    assert gate(side(b), side(c), metric="time", margin=0.2).verdict == "no_regression"
    r = gate(side(b), side(c), metric="cost")
    assert r.difference == pytest.approx(1.0) and r.p_value == pytest.approx(0.5**20)


def test_unknown_prices_leave_tasks_out_of_the_cost_metric(tmp_path):
    b, c = run_pair(tmp_path, outcomes(6, set(range(6))), outcomes(6, set(range(6)), cost=None))
    r = gate(side(b), side(c), metric="cost")
    assert r.verdict == "not_enough_evidence" and len(r.cost_unknown) == 6 and "unknown price" in r.reason


def test_repeats_are_averaged_per_task(tmp_path):
    base = [row(f"t{i}", repeat=k) for i in range(8) for k in range(3)]
    cand = [
        row(f"t{i}", "A", "resolved" if k or i >= 4 else "unresolved", repeat=k) for i in range(8) for k in range(3)
    ]
    b, c = run_pair(tmp_path, base, cand)
    r = gate(side(b), side(c))
    assert [(f.task_id, f.baseline, f.candidate) for f in r.lost] == [(f"t{i}", "3/3", "2/3") for i in range(4)]
    assert r.difference == pytest.approx(-4 / 3 / 8) and r.p_value == pytest.approx(0.5**4)
    assert r.baseline.repeats == 3


# ---------------------------------------------------------------------------- the test itself


def brute_signflip(e: list[float]) -> float:
    total = sum(e)
    hits = sum(
        sum(s * x for s, x in zip(signs, e)) <= total + 1e-9 for signs in itertools.product((1, -1), repeat=len(e))
    )
    return hits / 2 ** len(e)


def test_sign_flip_p_values_match_enumeration_and_the_exact_sign_test():
    rng = np.random.default_rng(3)
    for n in (1, 3, 6, 9, 12):
        for margin in (0.0, 0.05, 0.2):
            d = rng.integers(-3, 4, size=n) / 3 + margin  # rates with three repeats, shifted by a margin
            p, exact = signflip_p(d)
            assert exact and p == pytest.approx(brute_signflip(list(d)))
    for wins, losses, ties in ((0, 6, 24), (2, 9, 19), (5, 5, 0), (1, 0, 10)):
        e = [1] * wins + [-1] * losses + [0] * ties
        assert signflip_p(e)[0] == pytest.approx(
            binomtest(wins, wins + losses, 0.5, alternative="less").pvalue if wins + losses else 1.0
        )


def test_monte_carlo_p_values_agree_with_the_exact_ones(monkeypatch):
    rng = np.random.default_rng(5)
    e = np.round(rng.normal(-0.3, 1, size=14), 3)
    exact, is_exact = signflip_p(e)
    monkeypatch.setattr(gate_module, "EXACT_LIMIT", 0)
    approx, is_exact_now = signflip_p(e)
    assert is_exact and not is_exact_now
    assert approx == pytest.approx(exact, abs=0.005)


def simulated_power(
    n: int,
    p_lose: float,
    p_win: float,
    reps: int,
    seed: int,
    repeats: int = 1,
    base_rate: float | None = None,
    cand_rate: float | None = None,
) -> float:
    """Share of simulated gates (the gate's own test, margin 0, alpha 0.05) that find the regression."""
    rng = np.random.default_rng(seed)
    found = 0
    for _ in range(reps):
        if repeats == 1:
            u = rng.random(n)
            e = np.where(u < p_lose, -1.0, np.where(u < p_lose + p_win, 1.0, 0.0))
        else:
            e = rng.binomial(repeats, cand_rate, n) / repeats - rng.binomial(repeats, base_rate, n) / repeats
        found += signflip_p(e)[0] < 0.05
    return found / reps


def test_tasks_needed_gives_about_80_percent_power_in_simulation():
    p_lose, p_win = 0.25, 0.05  # a 20-point drop, flips both ways
    mu, m2 = p_win - p_lose, p_win + p_lose
    n = tasks_needed(mu, m2, math.sqrt(m2 - mu * mu), 0.05)
    assert n == 45  # Connor's McNemar sample size for these rates
    assert simulated_power(n, p_lose, p_win, 2000, seed=11) == pytest.approx(0.80, abs=0.05)
    assert simulated_power(n // 2, p_lose, p_win, 2000, seed=12) < 0.65


def test_repeats_needed_gives_about_80_percent_power_in_simulation():
    base, cand, n = 0.7, 0.55, 30  # every task alike: all of the difference between runs is trial noise
    noise = base * (1 - base) + cand * (1 - cand)
    r = repeats_needed(cand - base, 0.0, noise, n, 0.05)
    assert r is not None and r > 1
    assert simulated_power(n, 0, 0, 1500, seed=21, repeats=r, base_rate=base, cand_rate=cand) == pytest.approx(
        0.8, abs=0.07
    )
    assert simulated_power(n, 0, 0, 1500, seed=22, repeats=max(1, r // 2), base_rate=base, cand_rate=cand) < 0.7


# ---------------------------------------------------------------------------- baselines from the history


def test_a_baseline_from_the_history_latest_or_pinned(tmp_path):
    from datetime import datetime, timedelta

    root = tmp_path / "runs"
    url = sqlite_url(root / "history.sqlite")
    day = datetime(2026, 5, 1, tzinfo=UTC)
    write_run(root / "old", outcomes(30, set(range(30))), started=day, url=url)  # everything resolved
    write_run(root / "main", outcomes(30, set(range(20))), started=day + timedelta(days=1), url=url)
    write_run(root / "broken", outcomes(30, set()), started=day + timedelta(days=2), url=url, finished=False)
    cand = write_run(root / "cand", outcomes(30, set(range(6, 20))), started=day + timedelta(days=3), url=url).path
    # latest: the newest *finished* run of the candidate's suite and configuration, not the candidate itself
    done = cli("gate", "latest", str(cand), "--runs-root", str(root))
    assert done.returncode == 1 and "latest = main" in done.stdout and "lost 6" in done.stdout, done.stdout
    done = cli("gate", "latest:demo:A", str(cand), "--history-url", url)
    assert done.returncode == 1 and "latest:demo:A = main" in done.stdout
    done = cli("gate", "run:old", str(cand), "--runs-root", str(root))  # pinned: everything resolved there
    assert done.returncode == 1 and "lost 16" in done.stdout
    done = cli("gate", "run:main", "run:main", "--runs-root", str(root))
    assert done.returncode == 0
    for bad in ("latest:nosuch", "run:nosuch"):
        done = cli("gate", bad, str(cand), "--runs-root", str(root))
        assert done.returncode == 2 and "error:" in done.stderr


def test_usage_errors_exit_2(tmp_path):
    done = cli("gate", str(tmp_path / "nope"), str(tmp_path / "nope2"))
    assert done.returncode == 2 and "neither a run folder nor a history query" in done.stderr
    b, c = run_pair(tmp_path, outcomes(3, {0}), outcomes(3, {0}))
    assert cli("gate", str(b), str(c), "--alpha", "1.5").returncode == 2
    assert cli("gate", str(b), str(c), "--metric", "tokens").returncode == 2


def _with_infra(n: int, infra: int) -> list:
    rows = outcomes(n, set(range(n)))
    for r in rows[:infra]:
        r.outcome, r.resolved = "infra_error", False
    return rows


def test_the_gate_cautions_when_the_sides_infra_error_shares_differ_by_compares_threshold(tmp_path, monkeypatch):
    from harness.report import compare

    base, cand = run_pair(tmp_path / "far", _with_infra(20, 0), _with_infra(20, 1))  # 0 % and 5 %: 5 points apart
    r = gate(side(base), side(cand))
    assert f"{base} 0%, {cand} 5%" in r.infra_shares, r.infra_shares
    out = cli("gate", str(base), str(cand)).stdout
    assert "caution: infra-error shares differ" in out, out
    base, cand = run_pair(tmp_path / "edge", _with_infra(20, 4), _with_infra(20, 5))  # 20 % and 25 %: 5 points too
    assert gate(side(base), side(cand)).infra_shares
    base, cand = run_pair(tmp_path / "near", _with_infra(25, 0), _with_infra(25, 1))  # 4 points: no caution
    assert gate(side(base), side(cand)).infra_shares == ""
    assert "caution: infra-error" not in cli("gate", str(base), str(cand)).stdout
    monkeypatch.setattr(compare, "INFRA_SHARES_DIFFER", 0.01)  # one threshold, compare's
    assert gate(side(base), side(cand)).infra_shares


# ---------------------------------------------------------------------------- infra errors never drop a task silently


def test_a_candidate_whose_failures_are_infra_errors_is_not_enough_evidence_naming_the_tasks_and_the_redo(tmp_path):
    # Attack (issue 21, cause 9): the candidate failed half the tasks, but by an infra error each
    # (a provider refusal scored as the machine's); the old gate left them out of the pairing and
    # said "no regression" (exit 0). Now: not enough evidence (exit 4), the tasks named, the
    # `run --out` that redoes them printed; --strict counts them as failures: a regression.
    base, cand = run_pair(tmp_path, outcomes(20, set(range(20))), _with_infra(20, 10))
    done = cli("gate", str(base), str(cand), "--json", str(tmp_path / "gate.json"))
    assert done.returncode == 4, done.stdout + done.stderr
    out = done.stdout
    assert "NOT ENOUGH EVIDENCE" in out and "10 shared task(s) have infrastructure errors" in out, out
    assert "t00, t01, t02" in out and "infrastructure errors 10/20 (50.0%)" in out  # the share stays
    assert f"wholeloop run tasks/demo --out {cand}" in out  # the resume that redoes them
    result = json.loads((tmp_path / "gate.json").read_text())
    assert result["schema_version"] == gate_module.SCHEMA_VERSION >= 2
    assert result["verdict"] == "not_enough_evidence" and not result["strict"]
    assert result["infra_tasks"] == [f"t{i:02d}" for i in range(10)]
    [redo] = result["redo"]
    assert redo["side"] == "candidate" and redo["run_dir"] == str(cand) and redo["tasks"] == result["infra_tasks"]
    assert redo["command"] == f"wholeloop run tasks/demo --out {cand}" and redo["cwd"] == str(tmp_path)
    # --strict (in-process: the command's own printer; exit 1 is the regression verdict's)
    import io

    from rich.console import Console

    from harness.cli.gate import print_gate

    r = gate(side(base), side(cand), strict=True)
    printed = Console(file=io.StringIO(), width=200)
    print_gate(r, printed)
    out = printed.file.getvalue()
    assert r.verdict == "regression" and r.infra_tasks == [] and len(r.lost) == 10 and len(r.shared) == 20
    assert "REGRESSION" in out and "lost 10" in out and "counted as failures (--strict)" in out


def test_a_candidate_that_never_finished_its_lost_tasks_is_not_enough_evidence_naming_them_and_the_resume(tmp_path):
    # Attack (issue 21, held-out red team rows 23-24): the candidate lost ten tasks, but its run was
    # cut short before four of them and stopped on abandoned tries (no final row) of six; the old
    # gate paired the other ten and said "no regression". Now: exit 4 naming them and the resume.
    cand_rows = outcomes(20, set(range(20)))[4:]
    for r in cand_rows[:6]:  # t04..t09: an abandoned try (an infra failure, never final)
        r.outcome, r.resolved, r.final, r.retried = "infra_error", False, False, True
    base, cand = run_pair(tmp_path, outcomes(20, set(range(20))), cand_rows)
    done = cli("gate", str(base), str(cand), "--json", str(tmp_path / "gate.json"))
    assert done.returncode == 4, done.stdout + done.stderr
    out = done.stdout
    assert "NOT ENOUGH EVIDENCE" in out and "10 task(s) of the baseline are not finished in the candidate" in out
    assert "10 not finished by the candidate (t00, t01" in out
    assert f"redo the candidate's 10 task(s): wholeloop run tasks/demo --out {cand}" in out
    result = json.loads((tmp_path / "gate.json").read_text())
    assert result["schema_version"] == gate_module.SCHEMA_VERSION >= 3
    assert result["unfinished"] == [f"t{i:02d}" for i in range(10)] and result["infra_tasks"] == []
    [redo] = result["redo"]
    assert redo["side"] == "candidate" and redo["tasks"] == result["unfinished"]
    # --strict: each is a failure, and the test decides (ten lost of twenty: a regression)
    strict = cli("gate", str(base), str(cand), "--strict")
    assert strict.returncode == 1 and "lost 10" in strict.stdout, strict.stdout
    assert "tasks the candidate has not finished counted as failures (--strict)" in strict.stdout
    # the cost and time metrics have no figure for a task never finished: still not enough evidence
    r = gate(side(base), side(cand), metric="time", strict=True)
    assert r.verdict == "not_enough_evidence" and "resolve metric only" in r.reason


def test_a_changed_spec_is_not_enough_evidence_even_with_strict(tmp_path):
    cand_rows = outcomes(20, set(range(6, 20)))
    for r in cand_rows[:6]:
        r.task_hash = "respecified"
    base, cand = run_pair(tmp_path, outcomes(20, set(range(20))), cand_rows)
    for strict in ((), ("--strict",)):
        done = cli("gate", str(base), str(cand), *strict)
        assert done.returncode == 4, done.stdout + done.stderr
        assert "6 task(s) have a changed spec" in done.stdout and "t00, t01, t02, t03, t04, t05" in done.stdout


def test_infra_errors_on_the_baseline_or_in_one_repeat_are_not_enough_evidence_too(tmp_path):
    base, cand = run_pair(tmp_path / "base-side", _with_infra(20, 3), outcomes(20, set(range(20))))
    r = gate(side(base), side(cand))
    assert r.verdict == "not_enough_evidence" and r.infra_tasks == ["t00", "t01", "t02"]
    assert [x.side for x in r.redo] == ["baseline"] and "baseline" in r.reason
    # one repeat of three failed on the machine: the task is still named
    base_rows = [row(f"t{i}", repeat=k) for i in range(8) for k in range(3)]
    cand_rows = [
        row(f"t{i}", "A", "infra_error" if (i, k) == (5, 2) else "resolved", repeat=k)
        for i in range(8)
        for k in range(3)
    ]
    b, c = run_pair(tmp_path / "repeat", base_rows, cand_rows)
    r = gate(side(b), side(c))
    assert r.verdict == "not_enough_evidence" and r.infra_tasks == ["t5"]
    # --strict: the infra error is a failure (2/3 against 3/3 on t5: 4 points less, within a 5-point margin)
    r = gate(side(b), side(c), strict=True, margin=0.05)
    assert r.verdict == "no_regression" and r.infra_tasks == [] and r.shared == [f"t{i}" for i in range(8)]


def test_compare_says_not_enough_evidence_when_one_side_has_infra_errors_on_shared_tasks(tmp_path):
    from harness.report.compare import NOT_ENOUGH_EVIDENCE

    base_rows = outcomes(20, set(range(20)))
    cand_rows = _with_infra(20, 10)
    for r in cand_rows:
        r.config = "B"
    base, cand = run_pair(tmp_path, base_rows, cand_rows)
    done = cli("compare", str(base), str(cand), "--json", str(tmp_path / "cmp.json"))
    assert done.returncode == 4, done.stdout + done.stderr
    assert NOT_ENOUGH_EVIDENCE in done.stdout and "10 shared task(s) have infrastructure errors" in done.stdout
    assert f"wholeloop run tasks/demo --out {cand}" in done.stdout
    [cmp] = json.loads((tmp_path / "cmp.json").read_text())["comparisons"]
    assert cmp["verdict"].startswith(NOT_ENOUGH_EVIDENCE) and cmp["better"] is None
    assert cmp["infra_tasks"] == [f"t{i:02d}" for i in range(10)] and cmp["infra_shares"]
    strict = cli("compare", str(base), str(cand), "--strict", "--json", str(tmp_path / "strict.json"))
    assert strict.returncode == 0, strict.stdout + strict.stderr
    [cmp] = json.loads((tmp_path / "strict.json").read_text())["comparisons"]
    assert cmp["better"] == "A" and cmp["shared_tasks"] == 20 and cmp["wins_a"] == 10


def test_compare_never_drops_a_task_the_other_side_has_not_finished_or_respecified(tmp_path):
    # Attack (issue 21, gate's dodges carried to compare): B lost ten tasks to A, but its run was
    # cut short before four of them (t00-t03: no row), stopped on abandoned tries (no final row) of
    # three (t04-t06), and re-specified the last three (t07-t09: another content hash). The old
    # compare paired what was left and said "same tier" (exit 0). Now: not enough evidence (exit 4)
    # naming them and B's resume; --strict counts the unfinished ones as failures, never a changed spec.
    from harness.report.compare import JSON_SCHEMA_VERSION, NOT_ENOUGH_EVIDENCE

    cand_rows = outcomes(20, set(range(10, 20)), config="B")[4:]
    for r in cand_rows[:3]:  # t04..t06: an abandoned try
        r.outcome, r.resolved, r.final, r.retried = "infra_error", False, False, True
    for r in cand_rows[3:6]:  # t07..t09
        r.task_hash = "respecified"
    base, cand = run_pair(tmp_path, outcomes(20, set(range(20))), cand_rows)
    done = cli("compare", str(base), str(cand), "--json", str(tmp_path / "cmp.json"))
    assert done.returncode == 4, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    assert NOT_ENOUGH_EVIDENCE in out and "7 task(s) are not finished by B (t00, t01, t02, t03, t04, t05, t06" in out
    assert "3 task(s) have a changed spec (a different content hash) (t07, t08, t09)" in out, out
    assert f"redo B's 7 task(s): wholeloop run tasks/demo --out {cand}" in out, out
    result = json.loads((tmp_path / "cmp.json").read_text())
    assert result["schema_version"] == JSON_SCHEMA_VERSION >= 2
    [cmp] = result["comparisons"]
    assert cmp["better"] is None and cmp["verdict"].startswith(NOT_ENOUGH_EVIDENCE)
    assert cmp["unfinished"] == [f"t{i:02d}" for i in range(7)] and cmp["changed"] == ["t07", "t08", "t09"]
    assert cmp["shared_tasks"] == 10 and cmp["infra_tasks"] == []
    # the same two runs, B without the re-specified tasks: --strict counts the unfinished as failures
    # (in-process from here: the command's own comparison, CI time)
    from harness.report.compare import compare_pair
    from harness.report.stats import load_configs

    strict_rows = [r for r in cand_rows if r.task_hash != "respecified"]
    base, cand = run_pair(tmp_path / "strict", outcomes(20, set(range(20))), strict_rows)
    cmp = compare_pair(*load_configs([base, cand]), strict=True)
    assert cmp.better == "A" and cmp.shared_tasks == 20 and cmp.wins_a == 10 and cmp.unfinished == []
    # a changed spec is never a result, --strict or not
    base, cand = run_pair(tmp_path / "changed", outcomes(20, set(range(20))), cand_rows)
    cmp = compare_pair(*load_configs([base, cand]), strict=True)
    assert cmp.better is None and cmp.changed == ["t07", "t08", "t09"] and cmp.unfinished == []
    assert "3 task(s) have a changed spec" in cmp.verdict


def _axes(debug: bool) -> dict:
    """Acceptance axes as grading records them: clean, or with a debug print left in."""
    return {
        "files": ["pkg/a.py"],
        "outside_scope": [],
        "tests_deleted": [],
        "tests_weakened": [],
        "top_level_added": [],
        "binary_files": [],
        "debug_leftovers": [{"path": "pkg/a.py", "line": "print(x)"}] if debug else [],
        "size_ratio": 1.0,
        "own_checks": {"checks": ["ruff"], "new": [], "error": None},
    }


def test_gate_on_the_accept_rate_reads_a_baseline_from_the_history(tmp_path):
    """The history index keeps each attempt's acceptance axes (migration 0005), so `--metric
    accept` gates a candidate against a baseline found in the history, as against a folder: every
    patch resolves on both sides, ten of the candidate's leave a debug print."""
    from datetime import datetime, timedelta

    root = tmp_path / "runs"
    url = sqlite_url(root / "history.sqlite")
    day = datetime(2026, 5, 1, tzinfo=UTC)
    main_rows = [r.model_copy(update={"acceptance": _axes(False)}) for r in outcomes(30, set(range(30)))]
    cand_rows = [r.model_copy(update={"acceptance": _axes(n < 10)}) for n, r in enumerate(outcomes(30, set(range(30))))]
    write_run(root / "main", main_rows, started=day, url=url)
    cand = write_run(root / "cand", cand_rows, started=day + timedelta(days=1), url=url).path
    done = cli("gate", "latest", str(cand), "--runs-root", str(root), "--metric", "resolve")
    assert done.returncode == 0, done.stdout + done.stderr
    done = cli("gate", "latest", str(cand), "--runs-root", str(root), "--metric", "accept")
    assert done.returncode == 1 and "latest = main" in done.stdout and "lost 10" in done.stdout, (
        done.stdout + done.stderr
    )


def test_history_trend_gives_each_run_its_accept_rate_as_report_computes_it(tmp_path):
    """`history trend` reads the axes the index keeps: the accept rate of each point is the one
    `report` computes from the run folder; a run whose resolved attempts have no axes has none."""
    from datetime import datetime, timedelta

    from harness.history.db import HistoryIndex
    from harness.history.trend import trend
    from harness.report.acceptance import config_acceptance
    from harness.report.stats import load_configs

    root = tmp_path / "runs"
    url = sqlite_url(root / "history.sqlite")
    day = datetime(2026, 5, 1, tzinfo=UTC)
    clean = [r.model_copy(update={"acceptance": _axes(False)}) for r in outcomes(20, set(range(15)))]
    mixed = [r.model_copy(update={"acceptance": _axes(n < 4)}) for n, r in enumerate(outcomes(20, set(range(18))))]
    runs = [
        write_run(root / "a", clean, started=day, url=url).path,
        write_run(root / "b", mixed, started=day + timedelta(days=1), url=url).path,
        write_run(root / "c", outcomes(20, set(range(10))), started=day + timedelta(days=2), url=url).path,
    ]
    with HistoryIndex.open(url, create=False) as index:
        [series] = trend(index)
    points = {p.run_id: p for p in series.points}
    for cfg in load_configs(runs[:2]):
        theirs, ours = config_acceptance(cfg).accept_rate, points[cfg.run_dir.name].accept_rate
        assert (ours.value, ours.low, ours.high, ours.n) == (theirs.value, theirs.low, theirs.high, theirs.n)
    assert points["a"].accept_rate.value == pytest.approx(15 / 20) and points["b"].accept_rate.value == pytest.approx(
        14 / 20
    )
    assert points["c"].accept_rate.value is None and "not measured" in points["c"].accept_rate.note
