"""The demo's recordings replay through the real loop in Docker to the outcomes they declare.

Uses `scripts/record_demo.py` (loaded from its path: scripts are not a package) so the test and
`python scripts/record_demo.py --check` check the same thing.
"""

import importlib.util
import math
import sys
from pathlib import Path

import pytest

from harness.models import Usage, load_turns_jsonl
from harness.records import read_results

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("record_demo", ROOT / "scripts" / "record_demo.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


record_demo = _script()


def test_every_demo_task_has_a_recording_and_the_mix_is_five_to_two():
    assert sorted(p.stem for p in record_demo.RECORDINGS.glob("*.jsonl")) == sorted(record_demo.EXPECTED)
    outcomes = list(record_demo.EXPECTED.values())
    assert outcomes.count("resolved") == 5 and {"unresolved", "regression"} <= set(outcomes)


@pytest.mark.parametrize("task_id", ["inikit-002", "ledgerly-002"])  # one resolved, one regression
def test_recording_replays_to_its_declared_outcome(task_id, tmp_path):
    row, problems = record_demo.replay_task(task_id, tmp_path / "run")
    assert problems == []
    assert row.outcome == record_demo.EXPECTED[task_id]
    assert row.stop_reason == "submitted"

    turns = load_turns_jsonl(record_demo.RECORDINGS / f"{task_id}.jsonl")
    recorded = sum((t.usage for t in turns), Usage())
    (on_disk,) = read_results(tmp_path / "run" / "results.jsonl")
    assert on_disk.usage.input_tokens == recorded.input_tokens > 0
    assert on_disk.usage.output_tokens == recorded.output_tokens > 0
    assert on_disk.steps == len(turns)
    assert math.isclose(on_disk.cost_usd, sum(t.cost_usd for t in turns), rel_tol=1e-9)
    assert all(t.model.startswith("demo-script") for t in turns)  # never passes for a real model
