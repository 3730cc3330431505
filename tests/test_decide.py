"""`wholeloop decide SWEEP` (docs/sweeps.md): the decision record of a sweep, HTML and Markdown, its
rule applied; the page rendered in headless chromium with the front and the table (screenshot).
In CI (CI=true) a missing chromium is a failure; elsewhere the browser test is skipped."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from support.browser import CHROMIUM, Browser
from support.cli import wl
from support.history import row, write_run
from support.sweeps import run_quality_sweep

from harness.report.stats import BootstrapSettings
from harness.sweep.decide import NotASweep, decide


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    planned = run_quality_sweep(tmp_path_factory.mktemp("decide"))
    record = json.loads((planned.out / "sweep.json").read_text())
    record["sweep"]["question"] = "Which scripted model and agent should fix inikit's bugs?"
    (planned.out / "sweep.json").write_text(json.dumps(record))
    return planned.out


@pytest.fixture
def browser(tmp_path):
    if not CHROMIUM:
        if os.environ.get("CI"):
            pytest.fail("CI needs chromium for the decision page's screenshot (bash scripts/setup.sh installs it)")
        pytest.skip("chromium not installed (apt-get install chromium, or bash scripts/setup.sh)")
    b = Browser(tmp_path / "profile")
    yield b
    b.close()


def test_the_decision_page_renders_in_chromium_with_the_front_and_the_table(swept, tmp_path, browser):
    done = wl("decide", swept, "--out", tmp_path / "decision")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "recommendation: model=cheap,name=builtin,attempts=1" in done.stdout
    page = tmp_path / "decision" / "decision.html"
    browser.open(page)
    assert browser.errors() == []
    assert browser.js("document.querySelectorAll('svg.front').length") == 2  # cost x rate, time x rate
    assert browser.js("document.querySelectorAll('svg.front[data-axis=cost] g.pt').length") == 12
    assert browser.js("document.querySelectorAll('svg.front[data-axis=cost] g.pt[data-state=front]').length") == 5
    assert browser.js("document.querySelectorAll('#front-table tbody tr').length") == 12
    assert browser.js("document.querySelector('#front-table tr.chosen td').textContent") == (
        "model=cheap,name=builtin,attempts=1"
    )
    assert "fix inikit" in browser.js("document.getElementById('question').textContent")
    assert browser.js("document.querySelectorAll('#candidates ~ details').length") == 12
    width = browser.js("document.querySelector('svg.front').getBoundingClientRect().width")
    assert width > 300  # drawn, not collapsed
    shot = browser.screenshot(tmp_path / "decision-page.png", full=True)
    assert shot.stat().st_size > 20_000
    target = os.environ.get("WHOLELOOP_ARTIFACTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(target) / shot.name)


def test_the_markdown_record_says_the_question_the_rule_and_what_cannot_be_separated(swept, tmp_path):
    done = wl("decide", swept, "--out", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    md = (tmp_path / "decision.md").read_text()
    assert "**Question.** Which scripted model and agent should fix inikit's bugs?" in md
    assert "**Recommendation.** model=cheap,name=builtin,attempts=1" in md
    assert "cannot separate from the best at alpha (Holm-corrected)" in md
    assert "smallest p the test can reach is 0.125" in md  # four tasks: said, not hidden
    assert md.count("```yaml") == 12 and "scripted/dear" in md  # every recipe
    assert "## Contamination split" in md and "## Failure-cost weighting" in md
    assert "## Regimes" in md and "<= 32k tokens" in md


def _sweep_of(tmp_path: Path, configs: dict[str, tuple[int, float]], tasks: int = 12) -> Path:
    """A sweep folder by hand: per configuration (tasks it resolves of `tasks`, USD a trial)."""
    out = tmp_path / "sweep"
    cells = []
    for label, (resolved, price) in configs.items():
        rows = [row(f"t{i:02d}", label, "resolved" if i < resolved else "unresolved", cost=price) for i in range(tasks)]
        write_run(out / "cells" / label, rows)
        cells.append({"name": label, "label": label, "axes": {"agent.model": label}, "run": f"cells/{label}"})
    (out / "sweep.json").write_text(json.dumps({"schema_version": 1, "name": "hand", "sweep": {}, "cells": cells}))
    return out


def test_the_rule_picks_the_cheapest_the_data_cannot_separate_from_the_best(tmp_path):
    """On 12 tasks the best (12/12 at $0.30) is separated from `bad` (0/12 at $0.05, the cheapest)
    but not from `near` (11/12 at $0.10): the rule recommends `near`."""
    sweep = _sweep_of(tmp_path, {"best": (12, 0.3), "near": (11, 0.1), "bad": (0, 0.05)})
    _, decision = decide(sweep, settings=BootstrapSettings(n_resamples=999))
    assert decision.considered == ["best", "near"] and decision.recommended == "near"
    assert "cannot separate near from it" in decision.because and "few tasks" not in decision.because


def test_the_failure_cost_rule_weighs_outcomes_by_the_scoring_file(tmp_path):
    sweep = _sweep_of(tmp_path, {"best": (12, 0.3), "near": (11, 0.1)})
    scoring = tmp_path / "costs.yaml"
    scoring.write_text("unresolved: 10\n")
    _, decision = decide(sweep, scoring=scoring, rule="failure-cost", settings=BootstrapSettings(n_resamples=999))
    assert decision.recommended == "best"  # near's one failure costs 10/12 a task; best's none
    assert "expected failure cost per task is 0" in decision.because
    with pytest.raises(Exception, match="needs a scoring file"):
        decide(sweep, rule="failure-cost")


def test_decide_on_a_folder_that_is_not_a_sweep_says_what_to_give(tmp_path):
    with pytest.raises(NotASweep, match="no sweep.json here"):
        decide(tmp_path)
    done = wl("decide", tmp_path)
    assert done.returncode == 2 and "not a sweep's folder" in done.stderr and "wholeloop sweep" in done.stderr


def test_report_of_a_sweeps_folder_reports_its_cells_with_the_front_in_the_terminal(swept):
    done = wl("report", swept, "--no-tasks", env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "The front (resolve rate)" in done.stdout
    assert "the best" in done.stdout and "dominated" in done.stdout
    assert "smallest possible p is 0.125" in done.stdout


def test_the_hardest_failures_link_to_transcripts_that_open(tmp_path):
    """No configuration resolved t11: it leads the hardest failures, each link a relative path from
    the page to a transcript on disk; the recommended configuration's own failures follow."""
    out = tmp_path / "sweep"
    cells = []
    for label, resolved in (("a", 11), ("b", 10)):
        rows = []
        for i in range(12):
            rows.append(row(f"t{i:02d}", label, "resolved" if i < resolved else "unresolved", cost=0.1))
        for r in write_run(out / "cells" / label, rows).rows():  # the folder names each attempt's transcript
            path = out / "cells" / label / r.transcript_path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("{}\n")
        cells.append({"name": label, "label": label, "axes": {}, "run": f"cells/{label}"})
    (out / "sweep.json").write_text(json.dumps({"schema_version": 1, "name": "hand", "sweep": {}, "cells": cells}))
    from harness.sweep.decide import write_decision

    html, md, decision = write_decision(out, tmp_path / "record", settings=BootstrapSettings(n_resamples=199))
    text = md.read_text()
    hardest = text.split("## Hardest failures")[1].split("##")[0]
    assert hardest.strip().startswith("- t11: no configuration resolved it")
    links = [part.split(")")[0] for part in hardest.split("](")[1:]]
    assert links and all((html.parent / link).is_file() for link in links), links
    assert decision.recommended == "a" and "the recommended configuration failed it" in hardest
    assert html.read_text().count("transcript.jsonl") == len(links)
