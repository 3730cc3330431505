"""`wholeloop failures` (issue 26 item 3): causes x configurations from run folders of any age, the
causes kept in the history index (migration 0004) and computed again when the rules change."""

from __future__ import annotations

import json

import pytest
from support.history import cli, row, write_run

from harness import transcript as ev
from harness.history.db import HistoryIndex
from harness.history.url import resolve
from harness.report.causes import RULES_VERSION
from harness.transcript import TranscriptWriter


def _transcript(folder, r, plan):
    """A transcript as the built-in agent writes it: `plan` is a list of (tool, arguments, output, red)."""
    with TranscriptWriter(folder.path / r.transcript_path, secrets=[], fsync=False) as tw:
        tw.write(ev.AttemptStart(task_id=r.task_id, attempt=1, config=r.config))
        for step, (name, args, output, red) in enumerate(plan, 1):
            tw.write(ev.ModelResponse(step=step, text=f"step {step}: {name}"))
            tw.write(ev.ToolCallEvent(step=step, call_id=f"c{step}", name=name, arguments=args))
            long = "\n".join(f"{output} line {n}" for n in range(60))  # a page of output per step
            tw.write(ev.ToolResultEvent(step=step, call_id=f"c{step}", name=name, output=long))
            if name == "run_tests":
                tw.write(ev.TestRun(step=step, command="pytest", exit_code=int(red), failed=int(red), green=not red))
        tw.write(ev.Stop(reason="submitted"))


EDIT = ("edit", {"command": "str_replace", "path": "a.py", "old_str": "x", "new_str": "y"}, "ok", False)
SUBMIT = ("submit", {}, "submitted", False)
PLANS = {  # per (task, config): what the agent did
    ("t1", "A"): [EDIT, SUBMIT],  # never ran the tests
    ("t2", "A"): [("run_tests", {}, "1 failed", True), EDIT, ("run_tests", {}, "1 failed", True), SUBMIT],
    ("t3", "A"): [("run_tests", {}, "", True), EDIT, ("run_tests", {}, "", False), SUBMIT],  # resolved
    ("t1", "B"): [("run_tests", {}, "", True), EDIT, ("run_tests", {}, "", False), SUBMIT],  # resolved
    ("t2", "B"): [EDIT, ("bash", {"command": "ls"}, "", False)] * 1
    + [("bash", {"command": "ls "}, "", False)] * 2
    + [SUBMIT],
    ("t3", "B"): [EDIT, SUBMIT],
}
OUTCOMES = {("t1", "A"): "unresolved", ("t2", "A"): "unresolved", ("t3", "A"): "resolved"}
OUTCOMES |= {("t1", "B"): "resolved", ("t2", "B"): "unresolved", ("t3", "B"): "regression"}


def make_run(tmp_path):
    """A run folder as any earlier version wrote it (rows, transcripts: nothing about causes),
    indexed as it was written."""
    run_dir = tmp_path / "runs" / "r1"
    url = resolve(None, run_dir.parent)
    rows = [row(t, c, OUTCOMES[t, c]) for t, c in PLANS]
    folder = write_run(run_dir, rows, url=url)
    for r in folder.rows():
        _transcript(folder, r, PLANS[r.task_id, r.config])
    return run_dir, url


def failures(*args):
    done = cli("failures", *map(str, args))
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_failures_counts_causes_per_configuration_from_an_old_run_folder(tmp_path):
    run_dir, url = make_run(tmp_path)
    table = json.loads(failures(run_dir, "--json").stdout)
    cells = {(c["cause"], c["config"]): c for c in table["cells"]}
    assert table["failed"] == {"A": 2, "B": 2}
    assert cells["never_ran_tests", "A"]["tasks"] == ["t1"] and cells["never_ran_tests", "A"]["count"] == 1
    assert cells["submitted_failing", "A"]["tasks"] == ["t2"]
    assert cells["looped", "B"]["tasks"] == ["t2"]
    assert cells["never_ran_tests", "B"]["tasks"] == ["t2", "t3"]
    share = cells["never_ran_tests", "B"]["share"]
    assert share["value"] == 1.0 and share["method"] == "wilson" and 0 < share["low"] < 1
    looped = next(a for a in table["attempts"] if a["task_id"] == "t2" and a["config"] == "B")
    evidence = next(f for f in looped["causes"] if f["cause"] == "looped")["evidence"]
    assert [e["quote"] for e in evidence] == ["$ ls"] * 3 and all(e["seq"] for e in evidence)
    # the terminal: a row per cause, the tasks behind each cell
    shown = failures(run_dir).stdout
    assert "never_ran_tests" in shown and "1/2 50%" in shown and "looped · B: t2" in shown


def test_filters_by_cause_task_and_configuration(tmp_path):
    run_dir, _ = make_run(tmp_path)
    only = json.loads(failures(run_dir, "--json", "--cause", "looped").stdout)
    assert {c["cause"] for c in only["cells"]} == {"looped"}
    assert [(a["task_id"], a["config"]) for a in only["attempts"]] == [("t2", "B")]
    by_task = json.loads(failures(run_dir, "--json", "--task", "t1").stdout)
    assert by_task["failed"] == {"A": 1, "B": 0}
    by_config = json.loads(failures(run_dir, "--json", "--config", "B").stdout)
    assert by_config["configs"] == ["B"]
    wrong = cli("failures", str(run_dir), "--cause", "unresolved")
    assert wrong.returncode == 2 and "not a cause" in wrong.stderr


def test_causes_are_kept_in_the_index_and_computed_again_when_the_rules_change(tmp_path):
    run_dir, url = make_run(tmp_path)
    with HistoryIndex.open(url) as index:
        key = index.run_key(run_dir)
        assert index.stored_causes(key, RULES_VERSION) == {}  # a run indexes no causes as it writes rows
    first = json.loads(failures(run_dir, "--json").stdout)
    with HistoryIndex.open(url) as index:
        stored = index.stored_causes(key, RULES_VERSION)
        assert set(stored) == {("t1", "A", 0, 1), ("t2", "A", 0, 1), ("t2", "B", 0, 1), ("t3", "B", 0, 1)}
        # stored under another rules version: as if the rules changed since
        index.store_causes(key, dict.fromkeys(stored, "[]"), RULES_VERSION - 1)
        assert index.stored_causes(key, RULES_VERSION) == {}
    # the transcripts are read again (not the stale causes) ...
    assert json.loads(failures(run_dir, "--json").stdout)["cells"] == first["cells"]
    # ... and once kept, the index answers without them
    for path in run_dir.rglob("transcript.jsonl"):
        path.unlink()
    assert json.loads(failures(run_dir, "--json").stdout)["cells"] == first["cells"]


def test_the_html_report_has_a_failure_explorer(tmp_path):
    run_dir, _ = make_run(tmp_path)
    done = cli("report", str(run_dir), "--html", str(tmp_path / "r.html"))
    assert done.returncode == 0, done.stdout + done.stderr
    html = (tmp_path / "r.html").read_text()
    section = html[html.index('<section class="card" id="causes">') :]
    section = section[: section.index("</section>")]
    assert 'data-cause="never_ran_tests">never_ran_tests 3</button>' in section
    assert 'data-cause="looped">looped 1</button>' in section
    index = json.loads(html[html.index('id="wl-index">') + len('id="wl-index">') :].split("</script>")[0])
    rows = section[section.index("<tbody>") :].split("<tr ")[1:]
    assert len(rows) == 4  # the failed attempts: t1 A, t2 A, t2 B, t3 B
    looped = next(r for r in rows if "looped" in r.split(">")[0])
    rep = int(looped.split('data-open="')[1].split('"')[0])
    assert index[rep][:2] == ["t2", "B"]  # the link opens that very attempt...
    steps = [s.split('"')[0] for s in looped.split('data-step="')[1:]]
    assert steps[-3:] == ["2", "3", "4"]  # ...at the steps the loop rule quotes


def test_a_quoted_step_opens_the_attempt_at_that_step_in_a_browser(tmp_path):
    import os

    from support.browser import CHROMIUM, Browser

    if not CHROMIUM:
        if os.environ.get("CI"):
            pytest.fail("CI needs chromium for the HTML report tests")
        pytest.skip("chromium not installed")
    run_dir, _ = make_run(tmp_path)
    assert cli("report", str(run_dir), "--html", str(tmp_path / "r.html")).returncode == 0
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(tmp_path / "r.html")
        browser.wait_js("window.__wholeloop && window.__wholeloop.ready")
        # the chip filters the table to the looped attempt
        browser.js("document.querySelector('#fx-chips [data-cause=looped]').click()")
        shown = "Array.from(document.querySelectorAll('#fx-table tbody tr')).filter(r => r.style.display !== 'none')"
        assert browser.js(f"{shown}.length") == 1
        # its quoted step 3 opens the attempt and goes to that step
        browser.js("document.querySelector('#fx-table a[data-step=\"3\"]').click()")
        browser.wait_js("document.querySelector('#dr-body .ev-step') !== null")
        top = "Array.from(document.querySelectorAll('#dr-body .ev-step')).find(e => e.firstChild.textContent === 'step {}').getBoundingClientRect().top"
        browser.wait_js(
            f"(() => {{ try {{ const t = {top.format(3)}; return t >= 0 && t < window.innerHeight / 3; }} catch (e) {{ return false; }} }})()"
        )
        assert browser.js(top.format(1)) < 0  # scrolled there: step 1 is above the view
        assert browser.errors() == []
    finally:
        browser.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_causes_are_kept_and_replaced_on_both_databases(tmp_path, request, backend):
    from harness.history.url import sqlite_url

    url = (
        sqlite_url(tmp_path / "runs" / "h.sqlite")
        if backend == "sqlite"
        else request.getfixturevalue("postgres").create_database()
    )
    folder = write_run(tmp_path / "runs" / "r1", [row("t1", "A", "unresolved"), row("t2", "A", "resolved")], url=url)
    with HistoryIndex.open(url) as index:
        key = index.run_key(folder.path)
        index.store_causes(key, {("t1", "A", 0, 1): '[{"cause":"looped"}]'}, RULES_VERSION)
        assert index.stored_causes(key, RULES_VERSION) == {("t1", "A", 0, 1): '[{"cause":"looped"}]'}
        index.store_causes(key, {("t1", "A", 0, 1): "[]"}, RULES_VERSION + 1)  # newer rules replace them
        assert index.stored_causes(key, RULES_VERSION) == {}
        assert index.stored_causes(key, RULES_VERSION + 1) == {("t1", "A", 0, 1): "[]"}


def test_failures_imports_only_its_own_commands_module(tmp_path):
    """The CLI imports a command's module when the command is looked up: `failures` does not pay for
    the run, mining, task or machine commands' imports (issue 26: `failures` in <= 1 s)."""
    import subprocess
    import sys

    from harness.cli import COMMANDS, main

    run_dir, _ = make_run(tmp_path)
    code = (
        "import sys\nfrom harness.cli import main\n"
        f"main(['failures', {str(run_dir)!r}], standalone_mode=False)\n"
        "print(sorted(m for m in sys.modules if m.startswith('harness.cli.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.strip().splitlines()[-1]
    assert "harness.cli.reports" in loaded
    for module in ("run", "tasks", "mining", "machine", "gate", "history", "regrade"):
        assert f"harness.cli.{module}'" not in loaded, module
    # the map names every command there is (each module registers its own on `main`)
    for name in set(COMMANDS.values()):
        __import__(f"harness.cli.{name}")
    assert set(main.commands) == set(COMMANDS)
    assert main.list_commands(None) == sorted(COMMANDS)  # `wholeloop --help` lists them all
