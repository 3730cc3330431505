"""The HTML report in a real browser: Debian's chromium, headless, driven over the DevTools
protocol (websocket-client), with the file opened from a file:// path and no network.

A run folder is fabricated with the real writers (RunFolder, TranscriptWriter): two
configurations, repeats, every outcome, realistic transcripts. The test checks the page loads
without JS errors, that one click on a matrix cell opens the attempt's transcript and a second one
its diff, and leaves a screenshot (tmp_path, and $WHOLELOOP_ARTIFACTS when set).

In CI (CI=true) a missing chromium is a failure; elsewhere the browser tests are skipped.
`python tests/test_html_report.py [N]` prints the size and first-render time of an N-attempt report.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest
from support.browser import CHROMIUM, Browser
from support.fabricate import fabricate_run

from harness.records import RunFolder, write_json
from harness.report import svgplot
from harness.report.figures import compute_figures
from harness.report.format import axis_labels
from harness.report.html import build_payload, collect, write_html
from harness.report.stats import BootstrapSettings
from harness.transcript import (
    ToolResultEvent,
    TranscriptWriter,
)

# ------------------------------------------------------------------------ a fabricated run folder


# ------------------------------------------------------------------------ headless chromium over CDP


@pytest.fixture
def browser(tmp_path):
    if not CHROMIUM:
        if os.environ.get("CI"):
            pytest.fail("CI needs chromium for the HTML report test (bash scripts/setup.sh installs it)")
        pytest.skip("chromium not installed (apt-get install chromium, or bash scripts/setup.sh)")
    b = Browser(tmp_path / "profile")
    yield b
    b.close()


def _keep(png: Path) -> None:
    target = os.environ.get("WHOLELOOP_ARTIFACTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(png, Path(target) / png.name)


# ------------------------------------------------------------------------ tests


def _figures(runs: list[Path]):
    """The figures the CLI would pass, with fewer bootstrap resamples (the numbers are not under test)."""
    return compute_figures(runs, settings=BootstrapSettings(n_resamples=499))


def test_payloads_are_capped_and_lazy(tmp_path):
    run = tmp_path / "run"
    fabricate_run(run, tasks=3, configs=["cfg-a"], repeats=1)
    rows_file = run / "attempts" / "pkg-001" / "cfg-a" / "rep-0" / "transcript.jsonl"
    with TranscriptWriter(rows_file, secrets=[], fsync=False) as tw:  # one enormous output
        tw.write(ToolResultEvent(step=99, call_id="x", name="bash", output="y" * 19_000))
    reps = collect([run])
    payload = build_payload(next(r for r in reps if r.final.task_id == "pkg-001"))
    outputs = [e["output"] for e in payload["events"] if e["type"] == "tool_result"]
    assert max(len(o) for o in outputs) < 9000 and any("left out of the HTML report" in o for o in outputs)
    html = write_html([run], tmp_path / "r.html", figures=_figures([run])).read_text()
    assert html.count('type="application/x-wholeloop+gzip"') == len(reps)
    assert "<script>alert(1)</script>" not in html  # transcript text never lands in the markup as HTML
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "") and "https://" not in html


def test_report_opens_from_disk_and_two_clicks_reach_transcript_and_diff(tmp_path, browser):
    runs = [tmp_path / "run-a", tmp_path / "run-b"]
    fabricate_run(runs[0], tasks=12, configs=["claude-ish", "gpt-ish"], repeats=3, seed=1)
    fabricate_run(runs[1], tasks=12, configs=["cheap-model"], repeats=3, seed=2)
    report = write_html(runs, tmp_path / "report.html", figures=_figures(runs))

    browser.open(report)
    browser.wait_js("window.__wholeloop && window.__wholeloop.ready")
    assert browser.errors() == []
    assert browser.js("document.querySelectorAll('#mx .cell').length") == 12 * 3
    assert browser.js("document.querySelectorAll('svg.chart:not(.front)').length") == 6  # cost, phases, 4 distributions
    assert browser.js("document.querySelectorAll('#front svg.front').length") == 2  # the front: cost and time x rate
    assert browser.js("document.getElementById('drawer').hidden") is True
    shot = browser.screenshot(tmp_path / "html-report-overview.png", full=True)

    # click 1: a matrix cell of a failed task opens its attempt with the transcript
    browser.js("document.querySelector('#mx tr[data-kind~=\"fail\"] .cell.st-none').click()")
    browser.wait_js("document.querySelector('#dr-body .ev-step') !== null")
    assert browser.js("document.getElementById('drawer').hidden") is False
    assert browser.js("document.querySelectorAll('#dr-body .say').length") >= 5
    assert "<script>" in browser.js("document.querySelector('#dr-body .say').textContent")  # shown as text
    assert browser.js("document.querySelector('#dr-body .stop').textContent").startswith("stopped: submitted")
    assert browser.js("document.querySelectorAll('#dr-reps .chip').length") == 3
    transcript_png = browser.screenshot(tmp_path / "html-report-transcript.png")

    # click 2: the Diff tab shows the patch with added and removed lines coloured
    browser.js("document.querySelector('#dr-tabs [data-tab=diff]').click()")
    browser.wait_js(
        "document.querySelector('#dr-body .diff tr.add') !== null || "
        "document.querySelector('#dr-body').textContent.includes('patch is empty')"
    )
    browser.js("document.querySelector('#dr-reps .chip:nth-child(2)').click()")  # another repeat keeps the tab
    browser.wait_js(
        "document.querySelector('#dr-reps .chip.on') === document.querySelector('#dr-reps .chip:nth-child(2)')"
    )
    browser.wait_js(
        "document.querySelector('#dr-body .diff tr.add') !== null || "
        "document.querySelector('#dr-body').textContent.includes('patch is empty')"
    )
    diff_png = browser.screenshot(tmp_path / "html-report-diff.png")

    browser.js("document.querySelector('#dr-tabs [data-tab=tests]').click()")
    browser.wait_js("document.querySelector('#dr-body table.tests') !== null")
    assert browser.js("document.querySelector('#dr-body .tally').textContent").count("FAIL_TO_PASS") == 1
    tests_png = browser.screenshot(tmp_path / "html-report-tests.png")

    # hardest failures link to their attempts; Esc closes
    browser.js("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'}))")
    assert browser.js("document.getElementById('drawer').hidden") is True
    assert browser.js("document.querySelectorAll('#failures .linkbtn').length") >= 1
    browser.js("document.querySelector('#failures .linkbtn').click()")
    browser.wait_js("document.querySelector('#dr-body .ev-step') !== null")
    assert browser.errors() == []
    for png in (shot, transcript_png, diff_png, tests_png):
        assert png.stat().st_size > 10_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        _keep(png)


@pytest.mark.parametrize(
    "shape", ["one-task", "one-task-unknown-price", "one-task-infra-error", "one-task-two-configs"]
)
def test_a_report_of_one_task_renders_and_opens(tmp_path, browser, shape):
    """One task gives bootstrap intervals without bounds (one task to resample): the report says
    so instead of failing (it raised TypeError), and the page opens without a JS error."""
    run = tmp_path / "run"
    configs = ["cheap", "dear"] if shape == "one-task-two-configs" else ["only"]
    fabricate_run(run, tasks=1, configs=configs, repeats=1, seed=3)
    if shape != "one-task":  # rewrite the rows: price unknown, or the only trial an infra error
        folder = RunFolder(run)
        rows = folder.rows()
        folder.results_path.unlink()
        for row in rows:
            if shape == "one-task-unknown-price":
                row.cost_usd = None
            elif shape == "one-task-infra-error":
                row.outcome, row.resolved, row.error = "infra_error", False, "docker daemon went away"
            folder.append(row)
    report = write_html([run], tmp_path / "one.html", figures=_figures([run]))
    browser.open(report)
    browser.wait_js("window.__wholeloop && window.__wholeloop.ready")
    assert browser.errors() == []
    assert browser.js("document.querySelectorAll('#mx .cell').length") == len(configs)
    browser.js("document.querySelector('#mx .cell').click()")
    browser.wait_js("document.querySelector('#dr-body .ev-step') !== null")
    assert browser.errors() == []


def measure(n_attempts: int = 500) -> dict:
    """Size and time to first render of a report over n_attempts fabricated attempts."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        repeats, configs = 5, ["model-a", "model-b"]
        fabricate_run(tmp / "run", tasks=n_attempts // (repeats * len(configs)), configs=configs, repeats=repeats)
        t0 = time.monotonic()
        report = write_html([tmp / "run"], tmp / "report.html")
        build_s = time.monotonic() - t0
        b = Browser(tmp / "profile")
        try:
            load_s = b.open(report)
            b.wait_js("window.__wholeloop && window.__wholeloop.ready")
            nav = b.js("JSON.stringify(performance.getEntriesByType('navigation')[0].toJSON())")
            paint = b.js(
                "JSON.stringify(performance.getEntriesByType('paint').map(p => [p.name, Math.round(p.startTime)]))"
            )
            ready_ms = b.js("window.__wholeloop.renderedMs")
            t1 = time.monotonic()
            b.js("document.querySelector('#mx .cell').click()")
            b.wait_js("document.querySelector('#dr-body .ev-step') !== null")
            open_s = time.monotonic() - t1
            errors = b.errors()
        finally:
            b.close()
        nav = json.loads(nav)
        return {
            "attempts": n_attempts,
            "bytes": report.stat().st_size,
            "build_s": round(build_s, 2),
            "load_event_s": round(load_s, 3),
            "dom_content_loaded_ms": round(nav["domContentLoadedEventEnd"]),
            "paint_ms": json.loads(paint),
            "script_done_ms": round(ready_ms),
            "open_cell_s": round(open_s, 3),
            "errors": errors,
        }


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 500), indent=2))


def _add_failure_messages_and_problem(run: Path) -> None:
    """What grading and the runner now record: failure messages per failing test in grade.json,
    the problem statement in the transcript's attempt_start event."""
    for row in RunFolder(run).latest():
        grade_file = run / row.dir / "grade.json"
        grade = json.loads(grade_file.read_text())
        grade["messages"] = {
            t: f"AssertionError: {t.split('::')[-1]} expected 'a' got 'b'"
            for t, s in row.tests.items()
            if s == "FAILED"
        }
        write_json(grade_file, grade)
        path = run / row.transcript_path
        events = [json.loads(line) for line in path.read_text().splitlines()]
        events[0]["problem_statement"] = f"{row.task_id}: values with quotes are dropped\n\nMore detail here."
        path.write_text("".join(json.dumps(e) + "\n" for e in events))


def test_tests_tab_leads_with_the_problem_and_each_failing_test_with_its_message(tmp_path, browser):
    run = tmp_path / "run"
    fabricate_run(run, tasks=8, configs=["cfg-a"], repeats=1, seed=3)
    _add_failure_messages_and_problem(run)
    report = write_html([run], tmp_path / "report.html", figures=_figures([run]))
    browser.open(report)
    browser.wait_js("window.__wholeloop && window.__wholeloop.ready")
    rows = RunFolder(run).latest()
    failed = next(r for r in rows if r.outcome in ("unresolved", "regression"))
    resolved = next(r for r in rows if r.resolved)
    for row in (failed, resolved):
        browser.js(f"document.querySelector('#mx tr[data-task=\"{row.task_id}\"] .cell').click()")
        browser.wait_js(
            f"document.getElementById('dr-task').textContent === '{row.task_id}' && "
            "document.querySelector('#dr-tabs [data-tab=tests]') !== null"
        )
        browser.js("document.querySelector('#dr-tabs [data-tab=tests]').click()")
        browser.wait_js("document.querySelector('#dr-body .why') !== null")
        why = browser.js("document.querySelector('#dr-body .why').innerText")
        assert why.index(f"{row.task_id}: values with quotes are dropped") < why.index(row.outcome), why
        if row is failed:
            failing = [t for t, s in row.tests.items() if s == "FAILED"]
            for t in failing:
                assert t in why and f"AssertionError: {t.split('::')[-1]} expected 'a' got 'b'" in why, why
            assert why.index(failing[0]) < why.index("AssertionError")
            assert "PASSED" not in why
        else:
            f2p = [t for t in row.tests if "test_new_" in t]
            assert "FAIL_TO_PASS now passing" in why and all(t in why for t in f2p), why
        png = browser.screenshot(tmp_path / f"html-tests-{row.outcome}.png")
        _keep(png)
        browser.js("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'}))")
    assert browser.errors() == []


def _ticks(svg: str) -> list[str]:
    import re

    return re.findall(r'<text class="tick"[^>]*text-anchor="(?:middle|end)">([^<]*)</text>', svg)


@pytest.mark.parametrize(
    "draw",
    [
        # a cheap suite: every trial costs a fraction of a cent (the axis read "$0 $0 $0 $0")
        lambda: svgplot.cost_rate_svg([svgplot.Point("a", 0.00004, 0.5), svgplot.Point("b", 0.00011, 1.0)]),
        # fast attempts: 0.10-0.14 s (the axis read "0.1s 0.1s 0.1s")
        lambda: svgplot.box_strip_svg([svgplot.Series("gold", [0.101, 0.12, 0.139])], title="t"),
        lambda: svgplot.phase_bars_svg([("gold", {"agent": 0.11, "grade": 0.03})]),
        lambda: svgplot.trend_svg(
            [svgplot.TrendLine("a", [(0, 0.00002, None, None), (1, 0.00003, None, None)])],
            ["r1", "r2"],
            title="t",
            kind="usd",
        ),
    ],
)
def test_no_two_ticks_of_an_axis_read_the_same(draw):
    ticks = _ticks(draw())
    numeric = [t for t in ticks if t[:1].isdigit() or t.startswith("$")]
    assert len(numeric) >= 3, ticks
    assert len(set(numeric)) == len(numeric), numeric


def test_axis_labels_take_as_few_decimals_as_tell_ticks_apart():
    assert axis_labels([0, 0.5, 1.0, 1.5], "usd") == ["$0", "$0.5", "$1", "$1.5"]
    assert axis_labels([0, 0.00002, 0.00004], "usd") == ["$0", "$0.00002", "$0.00004"]
    assert axis_labels([0, 30, 60, 90], "seconds") == ["0s", "30s", "60s", "90s"]
    assert axis_labels([0, 0.02, 0.04], "seconds") == ["0s", "0.02s", "0.04s"]
    assert axis_labels([0, 600, 1200], "seconds") == ["0m", "10m", "20m"]


def test_a_noop_control_reads_as_a_control_with_nothing_resolved(tmp_path):
    """The noop control resolves nothing at $0: its cost per resolved task is 'n/a (none resolved)'
    as the terminal says (it read 'unknown'), and its scaffold is a control, not the tool agent."""
    run = tmp_path / "run"
    fabricate_run(run, tasks=3, configs=["noop"], repeats=1, seed=5)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["agent"] = {"agent": "noop", "model": None}
    write_json(run / "manifest.json", manifest)
    folder = RunFolder(run)
    rows = folder.rows()
    folder.results_path.unlink()
    for row in rows:
        row.outcome, row.resolved, row.cost_usd, row.model = "unresolved", False, 0.0, None
        folder.append(row)
    html = write_html([run], tmp_path / "noop.html", figures=_figures([run])).read_text()
    assert "n/a (none resolved)" in html
    assert "a control that changes nothing" in html
    assert "wholeloop&#39;s tool-calling agent" not in html and "wholeloop's tool-calling agent" not in html
