"""A unit's phases are timed, narrated and recorded by one mechanism (`UnitRunner.phase`): the
try is marked as in the phase, the watcher is told, and only a phase that ends records its
seconds and its transcript event. No Docker: the local backend of tests/support."""

from __future__ import annotations

import pytest
from support.fakesandbox import LocalBackend

from harness.agents import get_agent
from harness.records import RunFolder
from harness.run import RunOptions, UnitRunner
from harness.run.unit import TryState
from harness.transcript import PhaseEvent, TranscriptWriter, read_transcript


def _unit_runner(tmp_path, told):
    options = RunOptions(out=tmp_path / "run")
    folder = RunFolder(options.out, create=True)
    return UnitRunner(get_agent("noop"), options, folder, progress=lambda *e: told.append(e), backend=LocalBackend())


def test_a_phase_that_ends_is_timed_told_and_recorded_once(tmp_path):
    told: list[tuple] = []
    runner, at = _unit_runner(tmp_path, told), TryState()
    with TranscriptWriter(tmp_path / "t.jsonl") as transcript:
        with runner.phase(at, transcript, "t#1", "grading", "grading attempt 1") as ph:
            assert at.phase == "grading" and told == [("grade", "t#1", "grading attempt 1")]
            ph.seconds = 1.2345  # grading measured itself: its own seconds are the phase's
        with runner.phase(at, transcript, "t#1", "image", "preparing images") as ph:
            ph.detail = "cached"
        with runner.phase(at, transcript, "t#1", "patch"):  # no event of its own kind: the patch event says it
            pass
    events = [e for e in read_transcript(tmp_path / "t.jsonl") if isinstance(e, PhaseEvent)]
    assert [(e.name, e.detail) for e in events] == [("grading", ""), ("image", "cached")]
    assert events[0].seconds == at.phases.grading_s == 1.234 and at.phases.image_s == events[1].seconds
    assert [t[0] for t in told] == ["grade", "start"]  # the patch phase says nothing


def test_a_phase_that_raises_records_nothing_and_says_where_the_try_failed(tmp_path):
    runner, at = _unit_runner(tmp_path, []), TryState()
    with TranscriptWriter(tmp_path / "t.jsonl") as transcript:
        with pytest.raises(RuntimeError), runner.phase(at, transcript, "t", "container_start"):
            raise RuntimeError("engine gone")
    assert read_transcript(tmp_path / "t.jsonl") == []
    assert at.phases.container_start_s == 0.0
    assert at.failed_in(RuntimeError())["phase"] == "container_start"
