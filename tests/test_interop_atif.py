"""Issue 28 item 2: ATIF out (and in). The demo replay run exported as ATIF trajectories, each
checked by Harbor's own Trajectory model (its pinned wheel, in a subprocess)."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
from support.cli import wl

from harness.records import RunFolder
from harness.report.harbor_models import validate
from harness.transcript import read_transcript

pytestmark = [pytest.mark.slow, pytest.mark.docker]  # the demo replay runs on the engine


@pytest.fixture(scope="module")
def demo_run(demo_replay):
    """`wholeloop run tasks/demo --model replay:tasks/demo/recordings`: the README's first run, once
    per session (test_daily_docker reads the same run folder; tests/support/demo_replay.py)."""
    return demo_replay[0]


@pytest.fixture(scope="module")
def exported(demo_run, tmp_path_factory):
    target = tmp_path_factory.mktemp("atif-out") / "traj"
    out = wl("export", "atif", demo_run, "--out", target)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "validated against Harbor's ATIF model" in out.stdout
    return demo_run, target


def test_every_attempt_of_the_demo_is_one_trajectory_harbor_accepts(exported):
    run, target = exported
    files = sorted(target.glob("*.json"))
    rows = RunFolder(run).latest()
    assert len(files) == len(rows) == 7
    assert validate("atif", files) == {str(f): "" for f in files}  # checked again here, independently


def test_the_trajectory_holds_the_transcript_steps_calls_results_and_metered_tokens(exported):
    run, target = exported
    docs = {}
    for f in target.glob("*.json"):
        doc = json.loads(f.read_text())
        meta = doc["extra"]["wholeloop"]
        docs[(meta["task_id"], meta["config"], meta["repeat"], meta["attempt"])] = doc
    for row in RunFolder(run).latest():
        doc = docs[(row.task_id, row.config, row.repeat, row.attempt)]
        events = read_transcript(run / row.transcript_path)
        responses = [e for e in events if e.type == "model_response"]
        agent = [s for s in doc["steps"] if s["source"] == "agent"]
        assert [s["message"] for s in agent] == [e.text for e in responses]
        calls = [c["tool_call_id"] for s in agent for c in s.get("tool_calls", [])]
        assert calls == [str(c["id"]) for e in responses for c in e.tool_calls]
        results = [r for s in agent for r in s.get("observation", {}).get("results", [])]
        outputs = [e.output for e in events if e.type == "tool_result"]
        assert [r["content"] for r in results] == outputs and all(r["source_call_id"] for r in results)
        assert doc["steps"][0]["source"] == "system" and doc["steps"][1]["source"] == "user"
        assert "ParseError" in doc["steps"][1]["message"] or row.task_id != "inikit-004"
        fm = doc["final_metrics"]
        assert fm["total_prompt_tokens"] == row.usage.input_tokens > 0
        assert fm["total_completion_tokens"] == row.usage.output_tokens > 0
        assert fm["total_cost_usd"] == pytest.approx(row.cost_usd)
        assert sum(s["metrics"]["prompt_tokens"] for s in agent) == row.usage.input_tokens
        meta = doc["extra"]["wholeloop"]
        assert meta["outcome"] == row.outcome and meta["task_id"] == row.task_id
        assert meta["patch"] == (run / row.patch_path).read_text() if row.patch_path else meta["patch"] == ""
        assert [s["step_id"] for s in doc["steps"]] == list(range(1, len(doc["steps"]) + 1))


def test_harbor_model_refuses_a_broken_trajectory(exported, tmp_path):
    """The validator is Harbor's model, not a formality: a step out of order and a result naming
    a call that is not there are refused."""
    _, target = exported
    first = sorted(target.glob("*.json"))[0]
    doc = json.loads(first.read_text())
    doc["steps"][0]["step_id"] = 5
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    doc = json.loads(first.read_text())
    step = next(s for s in doc["steps"] if s.get("observation"))
    step["observation"]["results"][0]["source_call_id"] = "no-such-call"
    bad2 = tmp_path / "bad2.json"
    bad2.write_text(json.dumps(doc))
    found = validate("atif", [bad, bad2, first])
    assert "step_id" in found[str(bad)]
    assert "no-such-call" in found[str(bad2)]
    assert found[str(first)] == ""


def test_export_refuses_when_the_wheel_is_not_the_pinned_one(exported, tmp_path):
    run, _ = exported
    fake = tmp_path / "harbor-0.26.0-py3-none-any.whl"
    shutil.make_archive(str(tmp_path / "fake"), "zip", str(tmp_path))
    (tmp_path / "fake.zip").rename(fake)
    out = wl(
        "export",
        "atif",
        run,
        "--out",
        tmp_path / "t",
        env={"WHOLELOOP_CACHE": str(tmp_path / "cache"), "WHOLELOOP_HARBOR_WHEEL": str(fake)},
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "not the pinned Harbor 0.26.0 wheel" in out.stderr
    assert not (tmp_path / "cache" / "harbor" / "0.26.0").exists()  # nothing unchecked was unpacked


@pytest.fixture(scope="module")
def imported(exported, tmp_path_factory):
    run, target = exported
    into = tmp_path_factory.mktemp("atif-in") / "imported"
    out = wl("import", "atif", *sorted(target.glob("*.json")), "--out", into)
    assert out.returncode == 0, out.stdout + out.stderr
    return run, into


def _steps(run, task):
    out = wl("show", run, task, "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    shown = json.loads(out.stdout)
    return shown, [
        [
            (c["name"], c["arguments"], (c["result"] or {}).get("output"), (c["result"] or {}).get("exit_code"))
            for c in s["tool_calls"]
        ]
        + [s["text"]]
        for a in shown["attempts"]
        for s in a["steps"]
    ]


def test_an_imported_trajectory_shows_the_same_steps_as_the_original(imported):
    """Issue 28 item 2: `wholeloop import atif` of the demo's export; `show` of an imported attempt
    has the same steps (commands, outputs) as of the original; its rows are `ungraded`, kept out of
    every rate, and the patch is kept (not graded)."""
    run, into = imported
    original = {r.key(): r for r in RunFolder(run).latest()}
    rows = RunFolder(into).latest()
    assert {r.key() for r in rows} == set(original) and len(rows) == 7
    keys = [(folder, r.task_id) for r in rows for folder in (run, into)]
    with ThreadPoolExecutor(2) as pool:  # `show` of each task in both folders: 14 commands, two at a time
        shown = dict(zip(keys, pool.map(lambda key: _steps(*key), keys), strict=True))
    for row in rows:
        assert row.outcome == "ungraded" and not row.resolved
        before = original[row.key()]
        assert row.usage == before.usage and row.cost_usd == pytest.approx(before.cost_usd)
        assert row.stop_reason == before.stop_reason
        if before.patch_path:
            assert (into / row.patch_path).read_text() == (run / before.patch_path).read_text()
        shown_before, steps_before = shown[(run, row.task_id)]
        shown_after, steps_after = shown[(into, row.task_id)]
        assert steps_after == steps_before and any(s[:-1] for s in steps_after)
        assert shown_after["problem_statement"].strip()
    report = wl("report", into, "--json", into.parent / "figures.json")
    assert report.returncode == 0, report.stdout + report.stderr
    figures = json.loads((into.parent / "figures.json").read_text())["configs"][0]
    assert (figures["scored"], figures["resolved"], figures["trials"]) == (0, 0, 7)


def test_a_file_harbor_refuses_is_one_line_naming_the_file_and_the_field(exported, tmp_path):
    _, target = exported
    doc = json.loads(sorted(target.glob("*.json"))[0].read_text())
    del doc["steps"][0]["source"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    out = wl("import", "atif", bad, "--out", tmp_path / "run")
    assert out.returncode == 2, out.stdout + out.stderr
    first = out.stderr.strip().splitlines()[0]
    assert str(bad) in first and "steps.0.source" in first, out.stderr
    assert not (tmp_path / "run" / "results.jsonl").exists()
