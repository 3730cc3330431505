"""Run folders written before this stage's changes still report, resume and regrade.

tests/data/runs holds two run folders exactly as wholeloop 0.1.0 at commit bff1e48 wrote them (before
the outcome vocabulary and the other changes of issue 19): `wholeloop run` of three demo tasks
(inikit-001, inikit-004, ledgerly-002) with the gold agent (v1-gold) and the noop agent (v1-noop).
Their manifests name the machine and the paths they were written on, as an old run's do.
v1-figures.json holds the figures `wholeloop report --json` gave for them then (`figures` below
says which). Every test works on a copy: the stored folders are never written.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from support import ROOT
from support.cli import wl

OLD = ROOT / "tests" / "data" / "runs"
TASKS = [ROOT / "tasks" / "demo" / f"{task}.yaml" for task in ("inikit-001", "inikit-004", "ledgerly-002")]


def figures(report: dict) -> dict:
    """What a report must keep saying about a run: per configuration its counts and resolve rate
    (with its interval), outcomes and stop reasons, expected cost; per attempt its verdict."""
    return {
        "configs": [
            {
                key: c[key]
                for key in ("name", "agent", "tasks", "trials", "attempts", "scored", "resolved", "infra_errors")
            }
            | {"resolve_rate": [round(c["resolve_rate"][k], 6) for k in ("value", "low", "high")]}
            for c in report["configs"]
        ],
        "failures": [
            {key: c[key] for key in ("config", "outcomes", "stop_reasons")} for c in report["failures"]["configs"]
        ],
        "expected_cost": {c["config"]: c["expected_cost_per_task"]["value"] for c in report["scoring"]["configs"]},
        "comparisons": [
            {key: c[key] for key in ("a", "b", "shared_tasks", "wins_a", "wins_b", "ties")}
            for c in report["comparisons"]
        ],
        "cells": [
            {key: c[key] for key in ("task_id", "config", "attempt", "final", "outcome", "resolved", "stop_reason")}
            for c in report["cells"]
        ],
    }


def rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def digest(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def old(tmp_path) -> Path:
    """A copy of the stored runs (a runs root of its own: a run's history index goes beside them)."""
    root = tmp_path / "runs"
    for name in ("v1-gold", "v1-noop"):
        shutil.copytree(OLD / name, root / name)
    return root


def test_an_old_run_reports_the_figures_it_reported_when_written(old, tmp_path):
    done = wl("report", "v1-gold", "v1-noop", "--json", tmp_path / "figures.json", cwd=old, env={"COLUMNS": "200"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    then = json.loads((OLD / "v1-figures.json").read_text())
    assert figures(json.loads((tmp_path / "figures.json").read_text())) == then
    table = done.stdout.splitlines()
    for cell in then["cells"]:  # the terminal's per-task table says the same
        assert any(
            cell["task_id"] in line and f" {cell['config']} " in line and f" {cell['outcome']} " in line
            for line in table
        ), cell


def test_resuming_a_finished_old_run_redoes_nothing(old):
    run = old / "v1-noop"
    before = (run / "results.jsonl").read_bytes()
    done = wl("run", *TASKS, "--agent", "noop", "--out", run)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "0 to run, 3 already done" in done.stdout, done.stdout[-2000:]
    assert (run / "results.jsonl").read_bytes() == before
    sessions = json.loads((run / "manifest.json").read_text())["sessions"]
    assert len(sessions) == 2  # the old session and the resume, on record


@pytest.mark.docker
def test_resuming_an_old_run_cut_short_redoes_only_the_unit_it_lacks(old):
    """The gold run as if killed before its last unit's row: the resume runs that unit alone."""
    run = old / "v1-gold"
    kept, lost = rows(run)[:-1], rows(run)[-1]
    lines = (run / "results.jsonl").read_text().splitlines(keepends=True)
    (run / "results.jsonl").write_text("".join(lines[:-1]))
    shutil.rmtree(run / Path(lost["transcript_path"]).parent)
    done = wl("run", *TASKS, "--agent", "gold", "--out", run)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 to run, 2 already done" in done.stdout, done.stdout[-2000:]
    now = rows(run)
    assert now[:-1] == kept  # the old rows stand as written
    assert (now[-1]["task_id"], now[-1]["outcome"], now[-1]["resolved"]) == (lost["task_id"], "resolved", True)
    assert now[-1]["tests"] == lost["tests"]


@pytest.mark.docker
def test_regrading_an_old_run_gives_its_verdicts_again_and_leaves_it_as_it_was(old, tmp_path):
    run, out = old / "v1-gold", tmp_path / "regraded"
    done = wl("regrade", run, "--out", out, *(arg for task in TASKS for arg in ("--tasks", task)))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert digest(run) == digest(OLD / "v1-gold")  # the old folder is never changed
    then = {r["task_id"]: r for r in rows(run)}
    regraded = {r["task_id"]: r for r in rows(out)}
    assert set(regraded) == set(then)
    for task_id, row in regraded.items():
        assert (row["outcome"], row["resolved"], row["tests"]) == ("resolved", True, then[task_id]["tests"]), task_id
        assert row["regraded_from"]["outcome"] == "resolved", task_id
    assert json.loads((out / "manifest.json").read_text())["regraded_from"]["run_id"] == "v1-gold"


# v1-replay: `wholeloop run tasks/demo --model replay:tasks/demo/recordings` written by the code of
# commit 72410fb (manifest schema 1, before the RunSpec recipe), trimmed to inikit-001 (resolved)
# and inikit-004 (unresolved): the rows, attempts, tasks and images of the other five removed.
REPLAY_TASKS = [ROOT / "tasks" / "demo" / f"{task}.yaml" for task in ("inikit-001", "inikit-004")]
REPLAY = ["--model", f"replay:{ROOT / 'tasks' / 'demo' / 'recordings'}", "--config", "default+replay:recordings"]


@pytest.fixture
def old_replay(tmp_path) -> Path:
    shutil.copytree(OLD / "v1-replay", tmp_path / "runs" / "v1-replay")
    return tmp_path / "runs" / "v1-replay"


def test_a_version_1_manifest_reads_typed_without_a_recipe(old_replay):
    from harness.records import RunFolder

    info = RunFolder(old_replay).info()
    assert (info.schema_version, info.recipe) == (1, None)
    assert info.options.config == "default+replay:recordings" and info.options.workers == 2
    assert set(info.tasks) == {"inikit-001", "inikit-004"} and info.tasks["inikit-001"].content_hash
    done = wl("report", old_replay, env={"COLUMNS": "200"})
    assert done.returncode == 0 and "inikit-004" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]


def test_resuming_a_version_1_replay_run_redoes_nothing_and_keeps_its_manifest(old_replay):
    before = (old_replay / "results.jsonl").read_bytes()
    done = wl("run", *REPLAY_TASKS, *REPLAY, "--no-history", "--out", old_replay)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "0 to run, 2 already done" in done.stdout, done.stdout[-2000:]
    assert (old_replay / "results.jsonl").read_bytes() == before
    manifest = json.loads((old_replay / "manifest.json").read_text())
    assert manifest["schema_version"] == 1 and "recipe" not in manifest and len(manifest["sessions"]) == 2


@pytest.mark.docker
def test_regrading_a_version_1_replay_run_gives_its_verdicts_again(old_replay, tmp_path):
    out = tmp_path / "regraded"
    done = wl("regrade", old_replay, "--out", out, *(arg for task in REPLAY_TASKS for arg in ("--tasks", task)))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    then = {r["task_id"]: r for r in rows(old_replay)}
    again = {r["task_id"]: r for r in rows(out)}
    assert {t: (r["outcome"], r["tests"]) for t, r in again.items()} == {
        t: (r["outcome"], r["tests"]) for t, r in then.items()
    }
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["schema_version"] == 2 and manifest["recipe"] is None  # a version-1 run had none


def test_export_inspect_of_a_run_whose_manifest_has_no_start_time(tmp_path):
    """A manifest without started_at (written by hand, or an interrupted start) exported to
    Inspect crashed (exit 70): the log's creation time falls back to the rows' or the folder's."""
    import json

    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log
    from support.cli import wl
    from support.fabricate import fabricate_run

    run = tmp_path / "run"
    fabricate_run(run, tasks=2, configs=["m"], repeats=1)
    manifest = json.loads((run / "manifest.json").read_text())
    del manifest["started_at"], manifest["finished_at"]
    (run / "manifest.json").write_text(json.dumps(manifest))
    done = wl("export", "inspect", run, "--out", tmp_path / "log.json")
    assert done.returncode == 0, done.stderr[-2000:]
    log = read_eval_log(str(tmp_path / "log.json"))
    assert log.eval.created and len(log.samples or []) == 2
