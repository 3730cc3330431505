import json

from harness.grading import Outcome, classify
from harness.records import ResultRow, RunFolder, latest_rows, retried_tries
from harness.tasks import Task
from harness.transcript import Stop, ToolResultEvent, TranscriptWriter, read_transcript, scrub, secret_values
from sandbox import OutputCap


def make_task(**kw):
    data = {
        "id": "t",
        "repo": "r",
        "base_commit": "c",
        "problem_statement": "p",
        "hidden_tests": {"command": "pytest"},
        "FAIL_TO_PASS": ["a", "b"],
        "PASS_TO_PASS": ["c"],
        **kw,
    }
    return Task.model_validate(data)


def test_classify_outcomes():
    task = make_task()
    # XFAIL counts as passed only for a test the task expects to xfail (pytest.xfail() at run time is no fix)
    assert classify(task, {"a": "PASSED", "b": "XFAIL", "c": "PASSED"}, 0, True, "").outcome is Outcome.unresolved
    expecting = make_task(expected_xfail=["b"])
    assert classify(expecting, {"a": "PASSED", "b": "XFAIL", "c": "PASSED"}, 0, True, "").outcome is Outcome.resolved
    assert classify(expecting, {"a": "PASSED", "b": "XFAIL", "c": "PASSED"}, 0, True, "").failing() == []
    assert classify(task, {"a": "PASSED", "b": "XFAIL", "c": "PASSED"}, 0, True, "").failing() == ["b"]
    assert classify(task, {"a": "PASSED", "b": "FAILED", "c": "PASSED"}, 1, True, "").outcome is Outcome.unresolved
    assert classify(task, {"a": "PASSED", "b": "PASSED"}, 0, True, "").outcome is Outcome.regression  # c missing
    assert classify(task, {"a": "PASSED", "b": "PASSED", "c": "SKIPPED"}, 0, True, "").outcome is Outcome.resolved
    inconsistent = classify(task, {"a": "PASSED", "b": "PASSED", "c": "PASSED"}, 1, False, "why")
    assert inconsistent.outcome is Outcome.unresolved and not inconsistent.resolved


def row(task_id, outcome="resolved", attempt=1):
    return ResultRow(
        run_id="r",
        task_id=task_id,
        task_hash="h",
        config="c",
        agent="gold",
        outcome=outcome,
        resolved=outcome == "resolved",
        attempt=attempt,
    )


def test_results_file_survives_a_torn_last_line(tmp_path):
    path = tmp_path / "results.jsonl"
    results = RunFolder(tmp_path)
    results.append(row("a"))
    with open(path, "a") as fh:
        fh.write('{"run_id": "r", "task_')  # a crash mid-write
    results = RunFolder(tmp_path)  # reopening repairs
    results.append(row("b"))
    assert [r.task_id for r in results.rows()] == ["a", "b"]
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_latest_row_per_attempt_wins():
    rows = [row("a", "infra_error"), row("a", "resolved"), row("b")]
    assert sorted((r.task_id, r.outcome) for r in latest_rows(rows)) == [("a", "resolved"), ("b", "resolved")]


def test_an_abandoned_try_never_counts_and_is_one_retried_try_even_when_nothing_came_after_it():
    graded = row("a", "unresolved")
    graded.final = False
    gone = row("a", "infra_error", attempt=2)
    gone.final, gone.retried = False, True
    redo = row("a")
    assert latest_rows([graded, gone, redo]) == [redo]
    assert retried_tries([graded, gone, redo]) == [[graded, gone]]
    assert latest_rows([graded, gone]) == [] and retried_tries([graded, gone]) == [[graded, gone]]  # killed there
    # a final infra_error a resume redid is a retried try too; a killed try (no infra error) is not
    final_infra, unfinished = row("b", "infra_error"), row("c", "unresolved")
    unfinished.final = False
    rows = [final_infra, row("b"), unfinished, row("c")]
    assert retried_tries(rows) == [[final_infra]]
    assert retried_tries([final_infra]) == []  # the unit's trial: an infra error, in no rate, not retried (yet)


def test_transcript_scrubs_secrets_and_caps_payloads(tmp_path):
    secrets = secret_values({"ANTHROPIC_API_KEY": "sk-ant-canary-123456", "HOME": "/root", "X_TOKEN": "short"})
    assert secrets == ["sk-ant-canary-123456"]
    path = tmp_path / "t.jsonl"
    with TranscriptWriter(path, secrets=secrets, fsync=False) as tw:
        tw.write(ToolResultEvent(step=1, call_id="1", name="bash", output="key=sk-ant-canary-123456 " + "x" * 50_000))
        tw.write(Stop(reason="submitted"))
    text = path.read_text()
    assert "canary" not in text and "[REDACTED]" in text and len(text) < 30_000
    events = read_transcript(path)
    assert [e.type for e in events] == ["tool_result", "stop"] and events[1].seq == 1
    assert scrub({"a": ["sk-ant-canary-123456"]}, secrets) == {"a": ["[REDACTED]"]}


def test_transcript_appends_after_a_torn_line(tmp_path):
    path = tmp_path / "t.jsonl"
    with TranscriptWriter(path, secrets=[], fsync=False) as tw:
        tw.write(Stop(reason="a"))
    with open(path, "a") as fh:
        fh.write('{"type": "sto')
    with TranscriptWriter(path, secrets=[], fsync=False) as tw:
        tw.write(Stop(reason="b"))
    assert [e.reason for e in read_transcript(path)] == ["a", "b"]


def test_capped_output_keeps_head_and_tail_with_a_marker():
    cap = OutputCap(10)
    for chunk in (b"0123", b"4567", b"89abcdef"):
        cap.add(chunk)
    text = cap.text()
    assert cap.truncated and cap.total == 16
    assert text.startswith("01234") and text.endswith("bcdef") and "6 bytes of output truncated" in text
    small = OutputCap(10)
    small.add("é".encode()[:1])
    small.add("é".encode()[1:])  # a multi-byte character split across reads decodes whole
    assert small.text() == "é" and not small.truncated


def test_every_transcript_event_says_its_schema_version(tmp_path):
    path = tmp_path / "t.jsonl"
    with TranscriptWriter(path, secrets=[], fsync=False) as tw:
        tw.write(Stop(reason="submitted"))
    (line,) = path.read_text().splitlines()
    assert json.loads(line)["schema_version"] == 1 and read_transcript(path)[0].schema_version == 1


def test_the_scrubber_finds_a_key_in_every_form_and_split_across_writes(monkeypatch):
    import base64
    import io

    from harness import scrub

    key = "sk-test-" + "0123456789abcdef" * 2
    monkeypatch.setenv("SOME_PROVIDER_API_KEY", key)
    for prefix in (b"", b"u:", b"us:", b"use:"):  # every alignment inside a longer base64 text
        encoded = base64.b64encode(prefix + key.encode() + b":tail").decode()
        out = scrub.scrub_text(encoded)
        # what stays of the encoding beside the mark: the prefix's and tail's characters, and at
        # most 2 characters of the key's own on each side
        assert out.count(scrub.REDACTED) == 1 and len(out) - len(scrub.REDACTED) <= len(encoded) - len(key) * 4 // 3 + 4
    assert scrub.scrub_text(f"a {key} b {base64.urlsafe_b64encode(key.encode()).decode()}").count(scrub.REDACTED) == 2
    assert scrub.scrub_bytes(b'{"e": "' + key.encode() + b'"}') == b'{"e": "[REDACTED]"}'
    sink = io.StringIO()
    stream = scrub.ScrubbingStream(sink)
    stream.write("error: " + key[:10])
    stream.write(key[10:] + " was refused\nnext")
    stream.flush()
    assert sink.getvalue() == "error: [REDACTED] was refused\nnext"
    other = "registered-" + "9" * 20  # a key given in code, not in the environment
    scrub.register(other)
    assert scrub.scrub_text(f"x{other}x") == "x[REDACTED]x"
    assert scrub.scrub_text("short values like true or 12345 stay") == "short values like true or 12345 stay"


def test_a_row_holding_a_lone_surrogate_reads_back_as_written(tmp_path):
    """A file name that is not UTF-8 (read with surrogateescape) in the acceptance evidence, or a
    model's lone surrogate in an error, is written as a `\\udcff` escape, which pydantic's JSON
    parser refuses: the row was skipped as invalid and the run returned no rows (test_attribution).
    Every such row reads back, with the same text."""
    name = b"calc/n\xffame.txt".decode("utf-8", "surrogateescape")
    odd = row("a")
    odd.error = "lone \ud800 surrogate"
    odd.acceptance = {"version": 1, "files": [name]}
    folder = RunFolder(tmp_path)
    folder.append(odd)
    folder.append(row("b"))
    rows = RunFolder(tmp_path).rows()
    assert [r.task_id for r in rows] == ["a", "b"]
    assert rows[0].error == odd.error and rows[0].acceptance["files"] == [name]


def test_reports_history_and_the_gate_read_the_manifest_typed():
    """The manifest is read through the typed Manifest (`RunFolder.info()`) by every reader of
    runs: no report, history or gate module reads it as a raw dict (`.manifest()`, `manifest.get`,
    `manifest[...]`). A version-1 folder reads the same way (tests/test_old_runs.py)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "harness"
    readers = [*(root / "report").rglob("*.py"), *(root / "history").rglob("*.py"), root / "cli" / "gate.py"]
    raw = re.compile(r"\.manifest\(\)|\bmanifest\.get\(|\bmanifest\[")
    found = [
        f"{path.relative_to(root)}:{n}: {line.strip()}"
        for path in readers
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if raw.search(line)
    ]
    assert not found, "\n".join(found)
