"""Issue 12, using wholeloop day to day: each test runs the real `wholeloop` command in a
subprocess (no Docker needed: preflight stops a run before any container, and reports read disk).

Run folders are fabricated with the real writers (RunFolder, TranscriptWriter) where a real run
would only cost time; tests/test_daily_docker.py has the ones that need real runs.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT
from support.cli import DEMO, wl
from support.fabricate import fabricate_run
from support.history import row as history_row
from support.history import write_run

from harness.history.url import sqlite_url
from harness.records import PhaseTimes, ResultRow, RunFolder, write_json
from harness.transcript import AttemptStart, Stop, TranscriptWriter


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


# ---------------------------------------------------------------------------- item 2: exit codes, preflight


def test_help_and_readme_carry_one_table_of_exit_codes():
    out = wl("--help")
    assert out.returncode == 0
    from harness.cli.exit_codes import TABLE, markdown

    for code, meaning in TABLE:
        assert re.search(rf"^\s+{code}\s+{re.escape(meaning[:30])}", out.stdout, re.M), (code, out.stdout)
    assert markdown() in (ROOT / "README.md").read_text()
    assert {c for c, _ in TABLE} == {0, 1, 2, 3, 4, 70, 130}


def test_missing_credentials_stop_the_run_before_any_container(tmp_path):
    out = wl("run", DEMO, "--model", "anthropic/claude-sonnet-4-5", "--out", tmp_path / "run")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "ANTHROPIC_API_KEY" in out.stderr, out.stderr
    assert not (tmp_path / "run").exists()  # stopped before the run folder, so before any image or container


def test_a_misspelt_model_is_refused_with_close_names_unless_allowed(tmp_path):
    key = {"ANTHROPIC_API_KEY": "sk-ant-not-a-real-key-0000"}
    out = wl("run", DEMO, "--model", "anthropic/claude-sonet-9", "--out", tmp_path / "run", env=key)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "claude-sonet-9" in out.stderr and "claude-sonnet-4" in out.stderr and "--allow-unknown-model" in out.stderr
    assert not (tmp_path / "run" / "results.jsonl").exists()
    allowed = wl(
        "run",
        DEMO,
        "--model",
        "anthropic/claude-sonet-9",
        "--allow-unknown-model",
        "--dry-run",
        "--out",
        tmp_path / "run",
        env=key,
    )
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "dry run" in allowed.stdout and "7 task(s)" in allowed.stdout


def test_a_task_whose_repository_is_missing_stops_the_run_before_any_container(tmp_path):
    spec = tmp_path / "specs" / "broken.yaml"
    spec.parent.mkdir()
    text = (DEMO / "inikit-001.yaml").read_text().replace("../../repos/inikit.bundle", str(tmp_path / "no-such.bundle"))
    spec.write_text(
        text.replace("patch_file: inikit-001/", f"patch_file: {DEMO}/inikit-001/").replace(
            "gold_patch_file: inikit-001/", f"gold_patch_file: {DEMO}/inikit-001/"
        )
    )
    out = wl("run", spec, "--agent", "gold", "--out", tmp_path / "run")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "no-such.bundle" in out.stderr and "broken.yaml" in out.stderr
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_dry_run_prints_the_plan_with_an_estimate_from_earlier_runs(tmp_path):
    runs = tmp_path / "runs"
    ids = sorted(p.stem for p in DEMO.glob("*.yaml"))
    rows = [
        history_row(task, "gold", agent="gold", model=None, cost=0.0, seconds=10.0 + i) for i, task in enumerate(ids)
    ]
    write_run(runs / "20260101-000000-gold", rows, url=sqlite_url(runs / "history.sqlite"))  # indexed as a run does
    out = wl("run", DEMO, "--agent", "gold", "--dry-run", "--workers", "2", "--out", runs / "new")
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "dry run" in text and "7 task(s)" in text and all(t in text for t in ids)
    assert re.search(r"estimate: about .* \$0 \(time 7 from configuration; cost 7 from no model\)", text), text
    assert not (runs / "new").exists()  # a dry run writes nothing


def test_doctor_checks_the_model_credentials_when_given_a_model():
    out = wl("doctor", "--model", "anthropic/claude-sonnet-4-5")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "ANTHROPIC_API_KEY" in out.stdout
    ok = wl("doctor", "--model", "anthropic/claude-sonnet-4-5", env={"ANTHROPIC_API_KEY": "sk-ant-not-a-real-key-0000"})
    assert "model credentials" in ok.stdout and "ANTHROPIC_API_KEY is set" in ok.stdout


# ---------------------------------------------------------------------------- item 5: compare names what flipped


def _run_with(path: Path, label: str, outcomes: dict[str, str]) -> Path:
    folder = RunFolder(path, create=True)
    for task, outcome in outcomes.items():
        tpath = folder.transcript_path(task, label, 0)
        with TranscriptWriter(tpath, secrets=[], fsync=False) as tw:
            tw.write(AttemptStart(task_id=task, attempt=1, config=label))
            tw.write(Stop(reason="submitted"))
        adir = folder.attempt_dir(task, label, 0, 1)
        folder.append(
            ResultRow(
                run_id=path.name,
                task_id=task,
                task_hash="h",
                config=label,
                agent="gold",
                outcome=outcome,
                resolved=outcome == "resolved",
                cost_usd=0.0,
                phases=PhaseTimes(total_s=5.0),
                dir=str(folder.relative(adir)),
                transcript_path=str(folder.relative(tpath)),
            )
        )
    write_json(folder.manifest_path, {"run_id": path.name, "command": ["wholeloop", "run"], "tasks": {}})
    return path


def test_compare_names_the_flipped_tasks_and_tells_runs_of_one_label_apart(tmp_path):
    a = _run_with(
        tmp_path / "gold", "gold", {"t-1": "resolved", "t-2": "unresolved", "t-3": "resolved", "t-4": "resolved"}
    )
    b = _run_with(
        tmp_path / "gold_copy", "gold", {"t-1": "unresolved", "t-2": "resolved", "t-3": "resolved", "t-4": "resolved"}
    )
    out = wl("compare", a, b, env={"COLUMNS": "200"})
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "gold [gold]" in text and "gold [gold_copy]" in text, text
    # each flip, each way, with the transcripts to open
    first = text.index("only gold [gold] resolved (")
    second = text.index("only gold [gold_copy] resolved (")
    block_a, block_b = text[first:second], text[second:]

    def tasks_in(block: str) -> set[str]:  # the task lines (a tmp path may contain "t-1" too)
        return set(re.findall(r"^  (t-\d)$", block, re.M))

    assert tasks_in(block_a) == {"t-1"} and tasks_in(block_b) == {"t-2"}, text
    for run in (a, b):
        assert str(run / "attempts" / "t-1" / "gold" / "rep-0" / "transcript.jsonl") in block_a
        assert str(run / "attempts" / "t-2" / "gold" / "rep-0" / "transcript.jsonl") in block_b


# ---------------------------------------------------------------------------- item 7: user mistakes are one line


def _one_line_error(out: subprocess.CompletedProcess, *needles: str) -> None:
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    err = lines(out.stderr)
    assert len(err) == 1 and err[0].startswith("error: "), out.stderr
    for needle in needles:
        assert needle in err[0], (needle, err[0])
    assert ".tmp" not in err[0]


def test_user_mistakes_end_in_one_line_naming_the_path(tmp_path):
    file = tmp_path / "a-file"
    file.write_text("x")
    run = tmp_path / "run"
    fabricate_run(run, tasks=2, configs=["cfg"], repeats=1)
    _one_line_error(wl("run", DEMO, "--agent", "gold", "--out", file), str(file), "not a folder")
    _one_line_error(wl("run", DEMO, "--agent", "gold", "--out", file / "sub"), str(file), "not a folder")
    _one_line_error(wl("report", run, "--html", file / "r.html"), str(file / "r.html"), "not a folder")
    _one_line_error(
        wl("report", run, "--json", "/proc/wholeloop-figures.json"), "/proc/wholeloop-figures.json", "cannot write"
    )
    assert not (tmp_path / "r.html").exists()


def test_a_bug_is_a_log_with_the_traceback_and_exit_70(tmp_path):
    code = (
        "import sys, harness.cli as cli\n"
        "@cli.main.command('explode')\n"
        "def explode():\n"
        "    raise RuntimeError('boom in a command')\n"
        "sys.argv = ['wholeloop', 'explode']\n"
        "cli.main()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "WHOLELOOP_CACHE": str(tmp_path / "cache")},
        timeout=60,
    )
    assert out.returncode == 70, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and "internal error" in out.stderr and "boom in a command" in out.stderr
    logs = list((tmp_path / "cache" / "logs").glob("crash-*.log"))
    assert len(logs) == 1 and str(logs[0]) in out.stderr
    assert "Traceback" in logs[0].read_text() and "RuntimeError: boom in a command" in logs[0].read_text()


# ---------------------------------------------------------------------------- item 8: tables fit, --csv

_HEADER_WORDS = {
    w
    for col in (
        "task config rep outcome FAIL_TO_PASS PASS_TO_PASS stop agent grading cost",
        "config tasks trials resolved rate (Wilson) infra cost / trial cost / resolved time / trial expected cost / task",
        "config attempts ran tests green red -> green red runs before green edits after red tool errors recovered "
        "steps / s to green pass@att-1 pass@att-K recovered later",
        "config outcomes stop reasons",
    )
    for w in col.split()
}


def _cut_words(text: str) -> list[str]:
    """Tokens of table headers (the ┃ lines) that are a piece of a header word but not a word
    themselves: a word cut in two."""
    cut = []
    for line in (line for line in text.splitlines() if line.startswith("┃")):
        for token in re.split(r"[\s│┃┏┓┗┛┡┩━─┳┻╇╈┼┠┨]+", line):
            if len(token) < 2 or token in _HEADER_WORDS or not re.search(r"[A-Za-z]", token):
                continue
            if any(w != token and (w.startswith(token) or w.endswith(token)) and len(w) > 3 for w in _HEADER_WORDS):
                cut.append(token)
    return cut


@pytest.mark.parametrize("width", [80, 110, 150])
def test_report_tables_fit_the_terminal_and_never_cut_a_word(tmp_path, width):
    run = tmp_path / "run"
    fabricate_run(run, tasks=4, configs=["default+replay:recordings"], repeats=1)
    out = wl("report", run, env={"COLUMNS": str(width)})
    assert out.returncode == 0, out.stderr
    too_long = [line for line in out.stdout.splitlines() if len(line) > width]
    assert not too_long, too_long[:3]
    assert _cut_words(out.stdout) == [], _cut_words(out.stdout)
    # what did not fit is said, not silently lost
    for col in ("recovered later", "pass@att-1", "time / trial"):
        words = col.split()
        assert all(w in out.stdout for w in words), (col, out.stdout)


def test_report_writes_csv_beside_json(tmp_path):
    run = tmp_path / "run"
    n = fabricate_run(run, tasks=3, configs=["a", "b"], repeats=2)
    out = wl("report", run, "--csv", tmp_path / "attempts.csv", "--json", tmp_path / "figures.json")
    assert out.returncode == 0, out.stderr
    with open(tmp_path / "attempts.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == n
    disk = {(r.task_id, r.config, r.repeat, r.attempt): r for r in RunFolder(run).latest()}
    for row in rows:
        r = disk[(row["task_id"], row["config"], int(row["repeat"]), int(row["attempt"]))]
        assert row["outcome"] == r.outcome and int(row["input_tokens"]) == r.usage.input_tokens
        assert row["cost_usd"] == "" if r.cost_usd is None else float(row["cost_usd"]) == pytest.approx(r.cost_usd)
        assert float(row["total_s"]) == pytest.approx(r.phases.total_s)
        assert row["run_dir"] == str(run)
    assert json.loads((tmp_path / "figures.json").read_text())["configs"]


# ---------------------------------------------------------------------------- item 9: empty inputs


def test_validating_an_empty_folder_says_so_and_fails(tmp_path):
    (tmp_path / "empty").mkdir()
    out = wl("tasks", "validate", tmp_path / "empty")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "no task specs" in out.stderr and str(tmp_path / "empty") in out.stderr


def test_report_on_a_run_interrupted_before_any_row_says_what_is_there(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    write_json(
        run / "manifest.json",
        {
            "run_id": "run",
            "command": ["wholeloop", "run", "tasks/demo", "--out", str(run)],
            "tasks": {"a": {}, "b": {}},
            "started_at": "2026-01-01T00:00:00+00:00",
            "finished_at": None,
        },
    )
    out = wl("report", run)
    assert out.returncode == 2, out.stdout + out.stderr
    err = out.stderr
    assert "not a wholeloop run folder" not in err
    assert "no finished attempt" in err and "2 task" in err and "wholeloop run tasks/demo --out" in err, err


def test_show_says_which_repeats_and_configurations_there_are(tmp_path):
    run = tmp_path / "run"
    fabricate_run(run, tasks=2, configs=["cfg-a", "cfg-b"], repeats=2)
    out = wl("show", run, "pkg-001", "--repeat", "3")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "pkg-001" in out.stderr and "repeat 3" in out.stderr and "repeats 0, 1" in out.stderr, out.stderr
    assert "no attempt of task" not in out.stderr
    cfg = wl("show", run, "pkg-001", "--config", "nope")
    assert cfg.returncode == 2 and "cfg-a" in cfg.stderr and "cfg-b" in cfg.stderr, cfg.stderr
    task = wl("show", run, "pkg-404")
    assert task.returncode == 2 and "pkg-000" in task.stderr and "pkg-001" in task.stderr, task.stderr


# ---------------------------------------------------------------------------- item 10: the Python API


def test_the_python_api_loads_a_run_as_typed_objects_and_a_dataframe(tmp_path):
    pd = pytest.importorskip("pandas")
    run = tmp_path / "run"
    n = fabricate_run(run, tasks=3, configs=["a", "b"], repeats=2)
    import harness

    loaded = harness.load_run(run)
    assert len(loaded.rows) == n and all(isinstance(r, ResultRow) for r in loaded.rows)
    attempt = loaded.attempts[0]
    events = attempt.transcript()
    assert events and events[0].type == "attempt_start" and any(e.type == "tool_call" for e in events)
    assert {c.name for c in loaded.figures().configs} == {"a", "b"}
    df = loaded.attempts_df()
    assert isinstance(df, pd.DataFrame) and len(df) == n
    for col in (
        "task_id",
        "config",
        "repeat",
        "attempt",
        "outcome",
        "resolved",
        "cost_usd",
        "input_tokens",
        "output_tokens",
        "total_s",
        "transcript_path",
    ):
        assert col in df.columns, col
    assert df["input_tokens"].sum() == sum(r.usage.input_tokens for r in loaded.rows)
    both = harness.attempts_df([run, run])
    assert len(both) == 2 * n
