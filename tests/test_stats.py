"""Report statistics on fabricated run folders (no Docker): every figure is checked against an
independent computation (closed-form Wilson, brute-force enumeration for pass@k / pass^k, hand
counts), so a wrong formula in harness/report fails here."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import types
from itertools import combinations
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import transcript as tr
from harness.cli import main
from harness.records import PhaseTimes, ResultRow, RunFolder, write_json
from harness.report.compare import SAME_TIER, compare_pair, mcnemar_exact
from harness.report.errors import ReportInputError
from harness.report.evidence import write_evidence
from harness.report.figures import compute_figures
from harness.report.recovery import across_attempts, bash_modifies_files, config_recovery
from harness.report.scoring import Scoring, load_scoring
from harness.report.stats import (
    BootstrapSettings,
    bootstrap_mean,
    config_stats,
    load_configs,
    pass_at_k,
    pass_hat_k,
    wilson,
)
from harness.transcript import AttemptStart, Stop, ToolCallEvent, ToolResultEvent, TranscriptWriter

ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------------------- fabricated runs


def make_row(task, config="A", repeat=0, outcome="resolved", attempt=1, final=True, cost=0.1, seconds=10.0, **kw):
    return ResultRow(
        run_id="fake",
        task_id=task,
        task_hash="h",
        config=config,
        agent="fake",
        model="m/1",
        repeat=repeat,
        attempt=attempt,
        final=final,
        outcome=outcome,
        resolved=outcome == "resolved",
        cost_usd=cost,
        phases=PhaseTimes(total_s=seconds),
        stop_reason=kw.pop("stop_reason", "submitted"),
        **kw,
    )


def make_run(path: Path, rows: list[ResultRow], manifest: dict | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    results = RunFolder(path)
    for r in rows:
        folder = results.rep_dir(r.task_id, r.config, r.repeat)
        r.transcript_path = str((folder / "transcript.jsonl").relative_to(path))
        r.dir = str((folder / f"attempt-{r.attempt}").relative_to(path))
        r.patch_path = r.dir + "/patch.diff"
        results.append(r)
    write_json(
        path / "manifest.json",
        manifest
        or {
            "run_id": path.name,
            "command": ["wholeloop", "run", "tasks"],
            "wholeloop": {"version": "0.1.0", "git_commit": "abc123"},
            "agent": {
                "agent": "fake",
                "model": "m/1",
                "base_url": "http://llm.local",
                "config": {"settings": {"temperature": 0.2}, "prompt_sha256": "p", "tool_schema_sha256": "t"},
            },
            "options": {"repeats": 1},
            "tasks": {},
            "started_at": "2026-01-01T00:00:00+00:00",
            "finished_at": "2026-01-01T01:00:00+00:00",
        },
    )
    return path


def rates_run(path: Path, config: str, successes: dict[str, int], repeats: int, **kw) -> Path:
    """A run where task t resolves in its first successes[t] repeats of `repeats`."""
    rows = [
        make_row(t, config, r, "resolved" if r < c else "unresolved", **kw)
        for t, c in successes.items()
        for r in range(repeats)
    ]
    return make_run(path, rows)


# ---------------------------------------------------------------------------- Wilson, pass@k, pass^k


def wilson_closed_form(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize("k,n", [(0, 7), (5, 7), (7, 7), (15, 21), (1, 1), (37, 100)])
def test_wilson_matches_the_closed_form(k, n):
    iv = wilson(k, n)
    lo, hi = wilson_closed_form(k, n)
    assert iv.value == pytest.approx(k / n)
    assert iv.low == pytest.approx(max(lo, 0.0), abs=1e-9) and iv.high == pytest.approx(min(hi, 1.0), abs=1e-9)


def brute_pass(n: int, c: int, k: int, every: bool) -> float:
    """Enumerate every k-subset of n trials (the first c successes): the share where any / all succeed."""
    subsets = list(combinations(range(n), k))
    hits = [all(i < c for i in s) if every else any(i < c for i in s) for s in subsets]
    return sum(hits) / len(subsets)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6])
def test_pass_at_k_and_pass_hat_k_match_enumeration(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(brute_pass(n, c, k, every=False))
            assert pass_hat_k(n, c, k) == pytest.approx(brute_pass(n, c, k, every=True))


def test_config_stats_on_a_run_with_repeats(tmp_path):
    successes = {"t1": 3, "t2": 2, "t3": 0, "t4": 1}
    run = rates_run(tmp_path / "run", "A", successes, repeats=3)
    rows = load_configs([run])[0].rows
    rows.append(make_row("t5", "A", 0, "infra_error"))  # the machine's failure: left out, counted apart
    (stats,) = [config_stats(c) for c in load_configs([make_run(tmp_path / "run2", rows)])]
    assert (stats.scored, stats.resolved, stats.infra_errors, stats.repeats) == (12, 6, 1, 3)
    lo, hi = wilson_closed_form(6, 12)
    assert (stats.resolve_rate.low, stats.resolve_rate.high) == (pytest.approx(lo), pytest.approx(hi))
    assert [t.rate for t in stats.per_task if t.task_id != "t5"] == [
        1.0,
        pytest.approx(2 / 3),
        0.0,
        pytest.approx(1 / 3),
    ]
    for item in stats.pass_at_k:  # averaged over the four scored tasks, independently enumerated
        want = sum(brute_pass(3, c, item.k, every=False) for c in successes.values()) / 4
        assert item.value == pytest.approx(want)
    for item in stats.pass_hat_k:
        want = sum(brute_pass(3, c, item.k, every=True) for c in successes.values()) / 4
        assert item.value == pytest.approx(want)
    assert [v.k for v in stats.pass_at_k] == [1, 2, 3]
    assert stats.pass_at_k[2].value == pytest.approx(0.75) and stats.pass_hat_k[2].value == pytest.approx(0.25)
    # cost: 0.1 per trial; per resolved = total / resolved trials
    assert stats.cost_per_trial.value == pytest.approx(0.1)
    assert stats.cost_per_resolved.value == pytest.approx(1.2 / 6)
    assert stats.cost_per_resolved.low <= stats.cost_per_resolved.value <= stats.cost_per_resolved.high


def test_unknown_cost_is_unknown_never_zero(tmp_path):
    run = make_run(tmp_path / "run", [make_row("t1", cost=None), make_row("t2", cost=0.3)])
    stats = config_stats(load_configs([run])[0])
    assert stats.total_cost_usd is None
    assert stats.cost_per_resolved.unknown and stats.cost_per_resolved.value is None
    assert stats.cost_per_trial.unknown
    out = CliRunner().invoke(main, ["report", str(run), "--no-tasks"], terminal_width=200)
    assert out.exit_code == 0, out.output
    assert "unknown" in out.output


def test_no_resolved_task_gives_no_cost_per_resolved(tmp_path):
    run = make_run(tmp_path / "run", [make_row("t1", outcome="unresolved"), make_row("t2", outcome="empty_patch")])
    stats = config_stats(load_configs([run])[0])
    assert stats.cost_per_resolved.value is None and stats.cost_per_resolved.unbounded


def test_bootstrap_is_deterministic_and_seeded():
    values = [((i * 7919) % 101) / 17 for i in range(25)]  # spread out: different resamples give different bounds
    few = BootstrapSettings(n_resamples=300)
    a = bootstrap_mean(values, settings=few)
    b = bootstrap_mean(values, settings=few)
    assert (a.low, a.high) == (b.low, b.high)
    assert a.value == pytest.approx(sum(values) / len(values)) and a.low < a.value < a.high
    other = bootstrap_mean(values, settings=BootstrapSettings(n_resamples=300, seed=1))
    assert (other.low, other.high) != (a.low, a.high)


def test_one_extra_task_is_not_enough_to_rank(tmp_path):
    # A resolves one task B does not; everything else ties: the interval touches zero -> same tier
    tasks = {f"t{i}": 1 if i < 5 else 0 for i in range(10)}
    a = rates_run(tmp_path / "a", "A", {**tasks, "t9": 1}, repeats=1)
    b = rates_run(tmp_path / "b", "B", tasks, repeats=1)
    cmp = compare_pair(*load_configs([a, b]))
    assert (cmp.wins_a, cmp.wins_b, cmp.mcnemar_b, cmp.mcnemar_c, cmp.mcnemar_p) == (1, 0, 1, 0, 1.0)
    assert cmp.difference.low == 0 and cmp.difference.high > 0
    assert cmp.same_tier and cmp.better is None


# ---------------------------------------------------------------------------- compare


def test_exact_mcnemar_on_a_hand_made_table():
    assert mcnemar_exact(8, 2) == pytest.approx(0.109375)  # 2 * P(X <= 2), X ~ Bin(10, 1/2) = 2 * 56/1024
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(10, 0) == pytest.approx(2 / 1024)


def test_compare_refuses_to_rank_when_the_interval_includes_zero(tmp_path):
    tasks = [f"t{i}" for i in range(10)]
    a = rates_run(tmp_path / "a", "A", {t: 1 if i < 6 else 0 for i, t in enumerate(tasks)}, repeats=1)
    b = rates_run(tmp_path / "b", "B", {t: 1 if 1 <= i < 6 or i == 9 else 0 for i, t in enumerate(tasks)}, repeats=1)
    ca, cb = load_configs([a, b])
    cmp = compare_pair(ca, cb)
    assert (cmp.wins_a, cmp.wins_b, cmp.ties) == (1, 1, 8)
    assert (cmp.mcnemar_b, cmp.mcnemar_c, cmp.mcnemar_p) == (1, 1, 1.0)
    assert cmp.difference.low <= 0 <= cmp.difference.high
    assert cmp.same_tier and cmp.better is None and cmp.verdict == SAME_TIER
    out = CliRunner().invoke(main, ["compare", str(a), str(b)], terminal_width=200)
    assert out.exit_code == 0, out.output
    assert "same tier: the data does not separate them" in out.output


def test_compare_ranks_when_the_data_separates_them(tmp_path):
    tasks = [f"t{i}" for i in range(20)]
    a = rates_run(tmp_path / "a", "A", {t: 3 if i < 18 else 0 for i, t in enumerate(tasks)}, repeats=3)
    b = rates_run(tmp_path / "b", "B", {t: 1 if i < 2 else 0 for i, t in enumerate(tasks)}, repeats=3)
    cmp = compare_pair(*load_configs([b, a]))  # B first: the verdict must still name A
    assert (cmp.wins_a, cmp.wins_b, cmp.ties) == (0, 18, 2)
    assert (cmp.mcnemar_b, cmp.mcnemar_c) == (0, 16)
    assert cmp.mcnemar_p == pytest.approx(2 / 2**16)
    assert cmp.difference.value == pytest.approx((2 / 3 - 18) / 20)
    assert cmp.difference.high < 0
    assert not cmp.same_tier and cmp.better == "A" and not cmp.caution
    assert cmp.verdict.startswith("A resolves more than B")
    out = CliRunner().invoke(main, ["compare", str(a), str(b)], terminal_width=200)
    assert out.exit_code == 0 and "A resolves more than B" in out.output and "same tier" not in out.output


def test_compare_needs_two_configurations(tmp_path):
    run = rates_run(tmp_path / "a", "A", {"t1": 1}, repeats=1)
    out = CliRunner().invoke(main, ["compare", str(run)])
    assert out.exit_code == 2 and "at least two configurations" in out.output


# ---------------------------------------------------------------------------- scoring and failures


def test_scoring_file_costs_and_expected_cost(tmp_path):
    scoring_file = tmp_path / "costs.yaml"
    scoring_file.write_text("regression: 3\nempty_patch: 1\nresolved: 0\ndefault: 2\n")
    scoring = load_scoring(scoring_file)
    assert scoring.cost("regression", False) == 3 and scoring.cost("unresolved", False) == 2
    rows = [
        make_row("t1", repeat=0, outcome="regression"),
        make_row("t1", repeat=1, outcome="resolved"),
        make_row("t2", outcome="empty_patch"),
        make_row("t3", outcome="unresolved"),
        make_row("t4", outcome="infra_error"),
    ]
    run = make_run(tmp_path / "run", rows)
    figures = compute_figures([run], scoring_file)
    (score,) = figures.scoring.configs
    assert score.tasks == 3  # t4 had only an infra error
    assert score.expected_cost_per_task.value == pytest.approx(((3 + 0) / 2 + 1 + 2) / 3)
    assert score.by_outcome == {"regression": 3, "resolved": 0, "empty_patch": 1, "unresolved": 2}
    default = compute_figures([run]).scoring.configs[0]
    assert default.expected_cost_per_task.value == pytest.approx((0.5 + 1 + 1) / 3)
    assert Scoring().cost("regression", False) == 1 and Scoring().cost("resolved", True) == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("infra_error: 5\n")
    with pytest.raises(ReportInputError, match="infra_error"):
        load_scoring(bad)
    bad.write_text("regression: lots\n")
    with pytest.raises(ReportInputError, match="number"):
        load_scoring(bad)


def test_failure_counts_and_hardest_failures(tmp_path, monkeypatch):
    a = make_run(
        tmp_path / "a",
        [
            make_row("easy", "A"),
            make_row("hard", "A", 0, "regression"),
            make_row("hard", "A", 1, "unresolved", stop_reason="step_limit"),
            make_row("flaky", "A", 0, "unresolved"),
            make_row("broken", "A", 0, "infra_error"),
        ],
    )
    b = make_run(
        tmp_path / "b",
        [
            make_row("easy", "B", outcome="unresolved"),
            make_row("hard", "B", 0, "empty_patch"),
            make_row("flaky", "B", 0, "resolved"),
        ],
    )
    figures = compute_figures([a, b])
    fa = figures.failures.configs[0]
    assert fa.outcomes == {"resolved": 1, "regression": 1, "unresolved": 2, "infra_error": 1}
    assert fa.stop_reasons == {"submitted": 4, "step_limit": 1}
    (hard,) = figures.failures.hardest
    assert hard.task_id == "hard" and hard.configs == ["A", "B"] and hard.trials == 3
    assert {t.transcript_path for t in hard.transcripts} == {
        "attempts/hard/A/rep-0/transcript.jsonl",
        "attempts/hard/A/rep-1/transcript.jsonl",
        "attempts/hard/B/rep-0/transcript.jsonl",
    }
    assert all(t.show_command.startswith(f"wholeloop show {t.run_dir} hard") for t in hard.transcripts)
    evidence = tmp_path / "evidence"
    lines = write_evidence(figures, [a, b], evidence)  # the HTML renderer is part of the package: always written
    assert lines[-1] == f"wrote {evidence / 'report.html'}" and "<html" in (evidence / "report.html").read_text()
    data = json.loads((evidence / "figures.json").read_text())
    assert data["failures"]["hardest"][0]["task_id"] == "hard"
    assert (evidence / "manifests" / "a.json").exists() and (evidence / "manifests" / "b.json").exists()
    md = (evidence / "hardest_failures.md").read_text()
    assert "## hard" in md and "attempts/hard/B/rep-0/transcript.jsonl" in md and "easy" not in md
    calls = []
    fake = types.ModuleType("harness.report.html")
    fake.write_html = lambda run_dirs, path, *, figures: calls.append((run_dirs, path, figures)) or path
    monkeypatch.setattr("harness.report.html", fake)
    lines = write_evidence(figures, [a, b], evidence)
    assert calls == [([a, b], evidence / "report.html", figures)] and lines[-1] == f"wrote {evidence / 'report.html'}"


# ---------------------------------------------------------------------------- recovery


def write_attempt(w: TranscriptWriter, attempt: int, script: list[tuple]) -> None:
    w.write(AttemptStart(task_id="t1", attempt=attempt, config="A"))
    for step, item in enumerate(script, start=1):
        kind = item[0]
        if kind == "bash":
            _, command, code = item
            w.write(ToolCallEvent(step=step, call_id=f"c{step}", name="bash", arguments={"command": command}))
            w.write(ToolResultEvent(step=step, call_id=f"c{step}", name="bash", output="", exit_code=code))
        elif kind == "edit":
            _, command, is_error = item
            w.write(
                ToolCallEvent(
                    step=step, call_id=f"c{step}", name="edit", arguments={"command": command, "path": "x.py"}
                )
            )
            w.write(ToolResultEvent(step=step, call_id=f"c{step}", name="edit", output="", is_error=is_error))
        elif kind == "tests":
            green = item[1]
            w.write(ToolCallEvent(step=step, call_id=f"c{step}", name="run_tests", arguments={}))
            w.write(
                ToolResultEvent(step=step, call_id=f"c{step}", name="run_tests", output="", exit_code=0 if green else 1)
            )
            w.write(tr.TestRun(step=step, command="pytest", exit_code=0 if green else 1, green=green))
    w.write(Stop(reason="submitted"))


def test_recovery_inside_and_across_attempts(tmp_path):
    run = tmp_path / "run"
    rows = [
        make_row("t1", "A", 0, "unresolved", attempt=1, final=False),
        make_row("t1", "A", 0, "resolved", attempt=2),
        make_row("t2", "A", 0, "resolved", attempt=1),
        make_row("t3", "A", 0, "unresolved", attempt=1, final=False),
        make_row("t3", "A", 0, "regression", attempt=2),
    ]
    make_run(run, rows)
    with TranscriptWriter(run / "attempts/t1/A/rep-0/transcript.jsonl", secrets=[], fsync=False) as w:
        write_attempt(
            w,
            1,
            [
                ("bash", "cat nope.py", 1),  # 1 tool error ...
                ("bash", "ls", 0),  # ... recovered by the next bash
                ("tests", False),  # red
                ("edit", "view", False),  # not an edit
                ("edit", "str_replace", False),  # edit after red
                ("bash", "sed -i 's/a/b/' x.py", 0),  # edit after red (heuristic)
                ("tests", False),  # red again
                ("edit", "insert", True),  # a failed edit changes nothing: a tool error ...
                ("bash", "echo hi > /tmp/scratch", 0),  # scratch file: not an edit
                ("tests", True),  # green at step 10
                ("edit", "create", False),  # ... recovered by the next edit; after green: not "after red"
                ("edit", "str_replace", True),  # an error never retried: unrecovered
            ],
        )
        write_attempt(w, 2, [("tests", True)])
    rec = config_recovery(load_configs([run])[0])
    first = next(a for a in rec.attempts if a.task_id == "t1" and a.attempt == 1)
    assert first.found and first.test_runs == 3 and first.red_runs == 2 and first.red_before_green == 2
    assert first.reached_green and first.green_after_red and first.steps_to_green == 10 and first.steps == 12
    assert (first.edits, first.edits_after_red) == (3, 2)
    assert (first.tool_errors, first.tool_errors_recovered) == (3, 2)
    assert first.seconds_to_green is not None and first.seconds_to_green >= 0
    second = next(a for a in rec.attempts if a.task_id == "t1" and a.attempt == 2)
    assert second.found and second.red_before_green == 0 and second.steps_to_green == 1 and second.edits == 0
    missing = [a for a in rec.attempts if a.task_id != "t1"]
    assert missing and not any(a.found for a in missing)  # no transcript written for t2, t3
    assert rec.inside.with_transcript == 2 and rec.inside.saw_red == 1 and rec.inside.green_after_red == 1
    assert rec.inside.tool_errors == 3 and rec.inside.tool_error_recovery_rate == pytest.approx(2 / 3)
    # across attempts: t1 resolved at 2 (recovered), t2 at 1 (not a recovery), t3 never
    across = rec.across
    assert across.resolved_at == {1: 1, 2: 1} and across.max_attempts == 2
    assert across.pass_at_attempt_1 == pytest.approx(1 / 3) and across.pass_at_attempt_k == pytest.approx(2 / 3)
    assert (across.failed_first, across.resolved_later, across.recovery_rate) == (2, 1, 0.5)
    # the main resolve rate judges each trial by its final attempt
    stats = config_stats(load_configs([run])[0])
    assert (stats.trials, stats.attempts, stats.resolved) == (3, 5, 2)


def test_across_attempts_with_one_attempt_reports_no_recovery_rate():
    rows = [make_row("t1", outcome="unresolved"), make_row("t2")]
    across = across_attempts(rows)
    assert across.failed_first == 1 and across.recovery_rate is None and across.pass_at_attempt_1 == 0.5


@pytest.mark.parametrize(
    "command,edits",
    [
        ("sed -i 's/x/y/' a.py", True),
        ("sed -n 1,5p a.py", False),
        ("echo x > a.py", True),
        ("cat >> b.py <<EOF", True),
        ("python t.py > /dev/null 2>&1", False),
        ("ls 2>&1 | head", False),
        ("echo x | tee a.py", True),
        ("printf 'a' > /tmp/s.ini", False),
        ("grep -rn foo .", False),
        ("[ 1 -gt 0 ]", False),
    ],
)
def test_bash_edit_heuristic(command, edits):
    assert bash_modifies_files(command) is edits


# ---------------------------------------------------------------------------- figures and the CLI


def test_figures_json_round_trip_and_recipe(tmp_path):
    run = rates_run(tmp_path / "run", "A", {"t1": 1, "t2": 0}, repeats=2)
    figures = compute_figures([run])
    data = json.loads(json.dumps(figures.model_dump(mode="json")))
    assert data["schema_version"] == 1 and data["bootstrap"]["seed"] == BootstrapSettings().seed
    recipe = data["runs"][0]["recipe"]
    assert (
        recipe["git_commit"] == "abc123" and recipe["models"] == ["m/1"] and recipe["base_urls"] == ["http://llm.local"]
    )
    assert recipe["sampling"] == {"temperature": 0.2} and recipe["agent_config_sha256"]
    assert len(data["cells"]) == 4 and data["cells"][0]["transcript_path"].endswith("transcript.jsonl")
    out = CliRunner().invoke(main, ["report", str(run), "--json", str(tmp_path / "f.json")], terminal_width=200)
    assert out.exit_code == 0, out.output
    for needle in ("recipe", "abc123", "pass@2", "pass^2", "Wilson", "Recovery", "Hardest failures", "t2"):
        assert needle in out.output, needle
    assert json.loads((tmp_path / "f.json").read_text())["configs"][0]["resolved"] == 1


def test_same_label_in_two_runs_gets_unique_names(tmp_path):
    a = rates_run(tmp_path / "one", "A", {"t1": 1}, repeats=1)
    b = rates_run(tmp_path / "two", "A", {"t1": 0}, repeats=1)
    names = [c.name for c in load_configs([a, b])]
    assert names == ["A [one]", "A [two]"]


@pytest.fixture
def no_memo():
    """Every interval computed here and now, none read back from the memo of earlier ones."""
    from harness.report import memo

    memo.use(None)
    yield
    memo.use(memo.default_path())


def test_the_numpy_bootstrap_and_closed_forms_are_scipys_to_the_last_bit(no_memo):
    """Reports no longer import scipy (a second of start-up); the intervals must not move for it."""
    import warnings

    import numpy as np
    from scipy.stats import binomtest, bootstrap

    def statistic(a, b, axis=-1):
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.sum(a, axis=axis) / np.sum(b, axis=axis)
        return np.where(np.isnan(r), np.inf, r)

    rng = np.random.default_rng(5)
    for trial in range(60):
        n = int(rng.integers(2, 30))
        num = rng.random(n) * 3
        den = np.ones(n) if trial % 3 == 0 else (rng.random(n) < rng.random()).astype(float)
        settings = BootstrapSettings(n_resamples=[9999, 499, 1000][trial % 3])
        with warnings.catch_warnings(), np.errstate(invalid="ignore"):
            warnings.simplefilter("ignore")
            ref = bootstrap(
                (num, den),
                statistic,
                paired=True,
                vectorized=True,
                n_resamples=settings.n_resamples,
                confidence_level=settings.confidence_level,
                method="percentile",
                rng=np.random.default_rng(settings.seed),
            ).confidence_interval
        from harness.report.stats import bootstrap_ratio

        ours = bootstrap_ratio(list(num), list(den), settings=settings)
        for mine, theirs in ((ours.low, ref.low), (ours.high, ref.high)):
            assert (mine is None and not np.isfinite(theirs)) or mine == float(theirs), (trial, mine, theirs)
    for k, n in [(0, 7), (5, 7), (7, 7), (15, 21), (1, 1), (37, 100), (3, 250)]:
        ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        iv = wilson(k, n)
        assert (iv.low, iv.high) == (float(ci.low), float(ci.high)), (k, n)
    for b, c in [(0, 3), (1, 5), (4, 4), (7, 2), (12, 30), (0, 1)]:
        assert mcnemar_exact(b, c) == pytest.approx(binomtest(b, b + c, 0.5).pvalue, rel=1e-12, abs=1e-15)


def test_the_infra_error_share_stands_next_to_the_rate_and_strict_counts_infra_errors_as_failures(tmp_path):
    run = make_run(
        tmp_path / "run",
        [
            make_row("t1"),
            make_row("t2", outcome="unresolved"),
            make_row("t3", outcome="environment_broken"),
            make_row("t4", outcome="infra_error"),
        ],
    )
    loose = compute_figures([run]).configs[0]
    assert (loose.scored, loose.resolved, loose.infra_errors, loose.infra_share) == (3, 1, 1, 0.25)
    assert loose.resolve_rate.value == pytest.approx(1 / 3)  # environment_broken is a counted failure
    strict = compute_figures([run], strict=True).configs[0]
    assert (strict.scored, strict.strict) == (4, True) and strict.resolve_rate.value == pytest.approx(1 / 4)
    shown = CliRunner().invoke(main, ["report", str(run), "--strict"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "1 (25%)" in shown.output and "--strict: infra errors counted as failures" in shown.output
    assert (
        "infra and task errors left out"
        in CliRunner().invoke(main, ["report", str(run)], env={"COLUMNS": "200"}).output
    )


def test_compare_flags_configurations_whose_infra_error_shares_differ(tmp_path):
    a = make_run(tmp_path / "a", [make_row(f"t{i}", "A") for i in range(4)])
    b = make_run(
        tmp_path / "b",
        [
            make_row("t0", "B"),
            make_row("t1", "B"),
            make_row("t2", "B", outcome="infra_error"),
            make_row("t3", "B", outcome="infra_error"),
        ],
    )
    (cmp,) = compute_figures([a, b]).comparisons
    assert "A 0%, B 50%" in cmp.infra_shares
    (same,) = compute_figures([a, make_run(tmp_path / "c", [make_row(f"t{i}", "C") for i in range(4)])]).comparisons
    assert same.infra_shares == ""
    shown = CliRunner().invoke(main, ["compare", str(a), str(b)], env={"COLUMNS": "200"})
    assert "infra-error shares differ" in shown.output, shown.output


def test_the_html_report_shows_the_infra_error_share(tmp_path):
    from harness.report.html import write_html

    run = make_run(tmp_path / "run", [make_row("t1"), make_row("t2", outcome="infra_error")])
    page = write_html([run], tmp_path / "r.html").read_text()
    assert "1 infra errors (50% of trials, left out of the rate)" in page


def test_an_interval_computed_once_is_read_back_the_same_without_numpy(tmp_path):
    """The memo of intervals (report/memo.py): a second process asking for the same interval gets
    the very same numbers without importing numpy; other inputs or settings are computed afresh."""
    from harness.report import memo
    from harness.report.stats import bootstrap_ratio

    kept = tmp_path / "intervals.json"
    memo.use(kept)
    try:
        first = bootstrap_ratio([0.5, 1.25, 0.0, 2.0], [1, 1, 0, 1])
        memo.flush()
    finally:
        memo.use(memo.default_path())
    assert kept.exists() and first.low is not None
    probe = (
        "import json, sys\nfrom pathlib import Path\nfrom harness.report import memo\n"
        "from harness.report.stats import BootstrapSettings, bootstrap_ratio\n"
        "memo.use(Path(sys.argv[1]))\n"
        "same = bootstrap_ratio([0.5, 1.25, 0.0, 2.0], [1, 1, 0, 1])\n"
        "print(json.dumps([same.model_dump(), 'numpy' in sys.modules]))\n"
        "other = bootstrap_ratio([0.5, 1.25, 0.0, 2.0], [1, 1, 0, 1], settings=BootstrapSettings(n_resamples=999))\n"
        "print(json.dumps([other.model_dump(), 'numpy' in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(kept)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    (same, numpy_then), (other, numpy_after) = [json.loads(line) for line in done.stdout.splitlines()]
    assert same == first.model_dump() and numpy_then is False
    assert numpy_after is True and other["n"] == 4  # other settings: computed, not read back
    # a broken memo is no memo: computed again, and the same
    kept.write_text("{not json")
    again = subprocess.run([sys.executable, "-c", probe, str(kept)], capture_output=True, text=True, cwd=ROOT)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout.splitlines()[0]) == [first.model_dump(), True]


def test_ungraded_rows_of_an_imported_trajectory_are_in_no_rate(tmp_path):
    """Issue 28: `wholeloop import atif` writes `ungraded` rows (trajectories of agents run elsewhere,
    with no patch graded). Every report leaves them out: 2 resolved, 1 unresolved, 3 ungraded is 2/3."""
    from harness.report.acceptance import config_acceptance
    from harness.report.cause_table import failed
    from harness.vocabulary import NOT_SCORED, Outcome

    rows = [make_row("t1"), make_row("t2"), make_row("t3", outcome="unresolved")]
    rows += [make_row(f"u{i}", outcome="ungraded", stop_reason="submitted") for i in range(3)]
    run = make_run(tmp_path / "run", rows)
    assert Outcome("ungraded") in NOT_SCORED
    cfg = load_configs([run])[0]
    stats = config_stats(cfg)
    assert (stats.scored, stats.resolved) == (3, 2) and stats.resolve_rate.value == pytest.approx(2 / 3)
    assert {t.task_id for t in stats.per_task if t.trials} == {"t1", "t2", "t3"}
    assert compute_figures([run]).configs[0].resolve_rate.value == pytest.approx(2 / 3)
    from harness.report.scoring import config_score

    score = config_score(cfg, Scoring(costs={"unresolved": 1.0}))
    assert (score.trials, set(score.by_outcome)) == (3, {"resolved", "unresolved"})
    with pytest.raises(ReportInputError):
        (tmp_path / "s.yaml").write_text("ungraded: 1\n")
        load_scoring(tmp_path / "s.yaml")
    accepted = config_acceptance(cfg)
    assert (accepted.trials, accepted.resolved) == (3, 2)
    recovery = config_recovery(cfg)
    assert {a.task_id for a in recovery.attempts} == {"t1", "t2", "t3"}
    assert recovery.across.trials == 3
    assert [r.task_id for r in cfg.rows if failed(r)] == ["t3"]  # the cause table's denominator
