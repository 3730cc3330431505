"""Issue 12 on real runs (the engine, the demo suite, the real `wholeloop` command in a subprocess):
the live display, `show` leading with why an attempt failed, `show --json`, the Inspect AI export
read back by the real inspect_ai package, and a fixed cause being retried on resume.

One replay run of the demo suite (about a minute) is shared by the session (tests/support/demo_replay.py,
test_interop_atif reads it too); it runs under a pseudo-terminal so the live display draws as it
does for a person.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import ROOT
from support.cli import DEMO, wl

from harness.records import RunFolder, read_results

pytestmark = pytest.mark.docker
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


@pytest.fixture(scope="module")
def demo_run(demo_replay):
    """The README's first command (the demo, replayed), on a terminal: (run folder, what it drew).
    One run per session (tests/support/demo_replay.py), read by test_interop_atif too."""
    return demo_replay


# ---------------------------------------------------------------------------- item 4: the live display


def test_the_live_display_says_how_far_how_good_how_much_and_how_long(demo_run):
    _, drawn = demo_run
    # per unit in flight: its phase and its step
    assert re.search(r"(inikit|ledgerly)-\d+: agent working \(attempt 1\) · step \d+", drawn), drawn[-2000:]
    assert re.search(r"(inikit|ledgerly)-\d+: grading attempt 1", drawn)
    # overall: done/total, resolved/failed so far, cost so far, an ETA from finished units
    assert re.search(r"[1-6]/7 · \d resolved · \d failed · \$0\.\d{4} · ETA \d+:\d\d:\d\d", drawn), drawn[-3000:]
    assert re.search(r"7/7 · 5 resolved · 2 failed · \$0\.5101", drawn), drawn[-3000:]


# ---------------------------------------------------------------------------- item 3: show leads with why


def test_show_opens_with_the_problem_the_outcome_and_each_failing_test_with_its_message(demo_run):
    run, _ = demo_run
    out = wl("show", run, "inikit-004", env={"COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    text = out.stdout
    problem = text.index("ParseError does not say which file or line is wrong")
    outcome = text.index("unresolved")
    failing = text.index("tests/test_parse_errors.py::test_load_reports_the_file")
    message = text.index("assert PosixPath(")
    first_step = text.index("step 1")
    assert problem < outcome < failing < message < first_step, (problem, outcome, failing, message, first_step)
    assert "AssertionError" in text[failing:first_step]
    head = text[:first_step]
    assert head.count("PASSED") == 0  # the passing tests are not what a reviewer needs first


def test_show_of_a_resolved_attempt_ends_with_the_tests_it_made_pass(demo_run):
    run, _ = demo_run
    out = wl("show", run, "inikit-001", env={"COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    text = out.stdout
    rows = [r for r in RunFolder(run).latest() if r.task_id == "inikit-001"]
    f2p = list(rows[0].tests)[: rows[0].fail_to_pass["total"]]
    tail = text[text.rindex("step ") :]
    assert "FAIL_TO_PASS now passing" in tail and all(t in tail for t in f2p), tail


def test_show_json_gives_one_attempt_as_data(demo_run):
    run, _ = demo_run
    out = wl("show", run, "inikit-004", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    [attempt] = data["attempts"]
    row = next(r for r in RunFolder(run).latest() if r.task_id == "inikit-004")
    assert attempt["row"]["outcome"] == row.outcome == "unresolved"
    assert data["problem_statement"].startswith("ParseError does not say")
    [fail] = attempt["failing_tests"]
    assert (
        fail["test"] == "tests/test_parse_errors.py::test_load_reports_the_file" and "AssertionError" in fail["message"]
    )
    assert len(list(attempt["steps"])) == row.steps
    assert all(call["name"] for s in attempt["steps"] for call in s["tool_calls"])


# ---------------------------------------------------------------------------- item 6: Inspect AI


def test_export_inspect_is_read_back_by_the_real_inspect_ai(demo_run, tmp_path):
    inspect_log = pytest.importorskip("inspect_ai.log")
    run, _ = demo_run
    target = tmp_path / "demo.eval"
    out = wl("export", "inspect", run, "--out", target)
    assert out.returncode == 0, out.stdout + out.stderr
    log = inspect_log.read_eval_log(str(target))
    rows = RunFolder(run).latest()
    assert log.status == "success" and len(log.samples) == len(rows) == 7
    by_task = {r.task_id: r for r in rows}
    assert {s.id for s in log.samples} == set(by_task)
    from harness.transcript import read_transcript

    for sample in log.samples:
        row = by_task[sample.id]
        events = read_transcript(run / row.transcript_path)
        calls = [e for e in events if e.type == "tool_call"]
        responses = [e for e in events if e.type == "model_response"]
        assistant = [m for m in sample.messages if m.role == "assistant"]
        assert len(assistant) == len(responses) == row.steps
        assert sum(len(m.tool_calls or []) for m in assistant) == len(calls)
        assert [c.function for m in assistant for c in (m.tool_calls or [])] == [c.name for c in calls]
        assert len([m for m in sample.messages if m.role == "tool"]) == len(calls)
        score = next(iter(sample.scores.values()))
        assert score.value == (1 if row.resolved else 0) and score.answer == row.outcome
        usage = next(iter(sample.model_usage.values()))
        assert usage.input_tokens == row.usage.input_tokens and usage.output_tokens == row.usage.output_tokens
        assert sample.epoch == row.repeat + 1
    accuracy = log.results.scores[0].metrics["accuracy"].value
    assert accuracy == pytest.approx(sum(r.resolved for r in rows) / len(rows))
    total_in = sum(u.input_tokens for u in log.stats.model_usage.values())
    assert total_in == sum(r.usage.input_tokens for r in rows)
    # the inspect command line reads it too (what `inspect view` lists)
    inspect = Path(sys.executable).parent / "inspect"
    dumped = subprocess.run([str(inspect), "log", "dump", str(target)], capture_output=True, text=True, timeout=120)
    assert dumped.returncode == 0 and json.loads(dumped.stdout)["eval"]["task"], dumped.stderr[-2000:]
    # and `inspect view` shows it: the viewer's page, in headless chromium, renders a sample's messages
    from support.browser import CHROMIUM, Browser

    if not CHROMIUM:
        pytest.fail("chromium is needed to look at `inspect view` (bash scripts/setup.sh installs it)")
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    viewer = subprocess.Popen(
        [str(inspect), "view", "start", "--log-dir", str(tmp_path), "--port", str(port), "--host", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    browser = Browser(tmp_path / "profile")
    try:
        from urllib.request import urlopen

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the viewer's server is up when it lists the log
            try:
                if target.name in urlopen(f"http://127.0.0.1:{port}/api/logs", timeout=5).read().decode():
                    break
            except OSError:
                time.sleep(0.5)
        browser.call(
            "Page.navigate", url=f"http://127.0.0.1:{port}/#/logs/{target.name}/samples/sample/inikit-004/1/messages"
        )
        text = ""
        while time.monotonic() < deadline:
            text = browser.js("document.body ? document.body.innerText : ''") or ""
            if "ASSISTANT" in text and "ParseError does not say" in text:
                break
            time.sleep(0.5)
        assert "ASSISTANT" in text and "ParseError does not say" in text and "unresolved" in text, text[:2000]
        browser.screenshot(tmp_path / "inspect-view.png")
    finally:
        browser.close()
        viewer.terminate()
        viewer.wait(timeout=20)


# ---------------------------------------------------------------------------- items 1, 2 (exit 3), 11


def _spec(tmp_path: Path, setup_first: str | None) -> Path:
    """inikit-001 with absolute paths, optionally with a failing first setup command."""
    specs = tmp_path / "specs"
    specs.mkdir(exist_ok=True)
    text = (DEMO / "inikit-001.yaml").read_text().replace("../../repos/", f"{ROOT}/repos/")
    text = text.replace("patch_file: inikit-001/", f"patch_file: {DEMO}/inikit-001/")
    if setup_first:
        text = text.replace("  setup:\n", f"  setup:\n  - {json.dumps(setup_first)}\n")
    (specs / "inikit-001.yaml").write_text(text)
    return specs


def test_a_fixed_cause_is_retried_on_resume_and_redo_names_tasks(tmp_path):
    run = tmp_path / "run"
    tls = (
        "echo 'pip._vendor.urllib3.exceptions.SSLError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify "
        "failed: unable to get local issuer certificate (_ssl.c:1006)' >&2; exit 1"
    )
    specs = _spec(tmp_path, tls)
    cmd = ["run", specs, "--agent", "gold", "--out", run, "--infra-retries", "0"]
    broken = wl(*cmd)
    # item 2: a run whose units ended in infrastructure errors exits 3
    assert broken.returncode == 3, broken.stdout + broken.stderr
    [row] = read_results(run / "results.jsonl")
    assert row.outcome == "infra_error"
    # item 11: the summary line carries the cause, the log's path and the TLS hint
    first = row.error.splitlines()[0]
    assert "CERTIFICATE_VERIFY_FAILED" in first and str(run / "logs" / "images.log") in first, first
    assert "trust_ca_bundle" in first and not first.rstrip().endswith(":"), first
    assert row.phases.image_cached is False
    assert "CERTIFICATE_VERIFY_FAILED" in broken.stdout
    accepted = wl(*cmd, "--allow-infra-errors")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "1 to run" in accepted.stdout  # the error was not kept as done
    # item 1: fix the spec; the same command redoes the unit, the old rows stay (superseded)
    _spec(tmp_path, None)
    fixed = wl(*cmd)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "1 to run" in fixed.stdout and "1 infrastructure error redone" in fixed.stdout, fixed.stdout
    every = read_results(run / "results.jsonl")
    assert [r.outcome for r in every] == ["infra_error", "infra_error", "resolved"]
    assert [r.outcome for r in RunFolder(run).latest()] == ["resolved"]
    again = wl(*cmd)
    assert again.returncode == 0 and "0 to run, 1 already done" in again.stdout, again.stdout
    redo = wl(*cmd, "--redo", "inikit-001")
    assert redo.returncode == 0 and "1 to run" in redo.stdout, redo.stdout
    assert len(read_results(run / "results.jsonl")) == 4 and [r.outcome for r in RunFolder(run).latest()] == [
        "resolved"
    ]
    unknown = wl(*cmd, "--redo", "nope-001")
    assert unknown.returncode == 2 and "nope-001" in unknown.stderr and "inikit-001" in unknown.stderr
