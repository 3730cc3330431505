"""Spend survives a kill: a try killed mid-attempt (kill -9) is recorded once, on resume, as an
abandoned try with the spend its transcript holds, and the report's cost includes it.

Before: the killed attempt left no row, resume redid the unit, and the report showed only the
redo's spend (the first session's model calls were paid and never counted).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.fakellm import Call, FakeLLM, Reply, Tokens

from harness.records import latest_rows, read_results
from harness.report.stats import config_stats, load_configs
from harness.run.unit import abandoned_attempt
from harness.transcript import AttemptStart, ErrorEvent, GradeEvent, ModelResponse

ROOT = Path(__file__).resolve().parent.parent


def test_the_attempt_a_transcript_stopped_in_and_its_spend():
    start = AttemptStart(task_id="t", attempt=1)
    call = ModelResponse(step=1, usage={"input_tokens": 100, "output_tokens": 7}, cost_usd=0.01)
    assert abandoned_attempt([start, call, call]) is not None
    attempt, spent = abandoned_attempt([start, call, call])  # type: ignore[misc]
    assert attempt == 1 and spent.model_calls == 2 and spent.usage.input_tokens == 200
    assert spent.cost_usd == pytest.approx(0.02)
    # an attempt that ended in a row (graded, or a runner error) is not abandoned; one that spent nothing neither
    assert abandoned_attempt([start, call, GradeEvent(attempt=1, outcome="unresolved", resolved=False)]) is None
    assert abandoned_attempt([start, call, ErrorEvent(where="runner", error_type="X", message="x")]) is None
    assert abandoned_attempt([start]) is None
    second = AttemptStart(task_id="t", attempt=2)
    unknown = ModelResponse(step=3, usage={"input_tokens": 5}, cost_usd=None)
    found = abandoned_attempt(
        [start, call, GradeEvent(attempt=1, outcome="unresolved", resolved=False), second, unknown]
    )
    assert found is not None and found[0] == 2 and found[1].cost_usd is None and found[1].model_calls == 1


def _launch(n: int, url: str, spec_dir: Path, out: Path, log: Path) -> subprocess.Popen:
    env = {**os.environ, "OPENAI_API_KEY": "sk-kill-spend-not-a-key", "OPENAI_BASE_URL": f"{url}/s{n}/v1"}
    cmd = [sys.executable, "-m", "harness.cli", "run", str(spec_dir), "--model", "openai/gpt-4o", "--out", str(out)]
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True
    )


@pytest.mark.docker
@pytest.mark.slow  # two sessions of a run on the tiny task (the image is built once)
@pytest.mark.timeout(600)
def test_a_try_killed_mid_attempt_is_recorded_once_with_its_spend(tiny_task, tmp_path):
    seen, hold = threading.Event(), threading.Event()

    def respond(req):
        session = req.path.split("/")[1]
        turns = sum(m.get("role") == "assistant" for m in req.body.get("messages", []))
        if session == "s1":
            if turns == 0:
                return Reply(calls=[Call("bash", {"command": "ls"})], usage=Tokens(1000, 50))
            seen.set()  # the second call is in flight: the session is killed now
            hold.wait(120)
            return Reply(text="too late", usage=Tokens(1, 1))
        return Reply(text="I give up", usage=Tokens(10, 2))  # the resumed session: one call, no patch

    out = tmp_path / "run"
    with FakeLLM(responder=respond) as srv:
        first = _launch(1, srv.base_url, tiny_task["dir"], out, tmp_path / "s1.log")
        try:
            assert seen.wait(500), (tmp_path / "s1.log").read_text()[-3000:]
        finally:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
            hold.set()
        assert not (out / "results.jsonl").exists() or not read_results(out / "results.jsonl")
        second = _launch(2, srv.base_url, tiny_task["dir"], out, tmp_path / "s2.log")
        assert second.wait(500) == 0, (tmp_path / "s2.log").read_text()[-3000:]
        third = _launch(3, srv.base_url, tiny_task["dir"], out, tmp_path / "s3.log")  # nothing left to do
        assert third.wait(300) == 0
    rows = read_results(out / "results.jsonl")
    abandoned = [r for r in rows if r.retried]
    assert len(abandoned) == 1, [r.model_dump() for r in rows]  # once, whatever the later sessions
    gone = abandoned[0]
    assert not gone.final and gone.attempt == 1 and gone.model_calls == 1
    assert gone.usage.input_tokens == 1000 and gone.usage.output_tokens == 50 and (gone.cost_usd or 0) > 0
    assert (out / gone.transcript_path).name.startswith("transcript.unfinished-")
    final = [r for r in latest_rows(rows) if r.final]
    assert len(final) == 1 and final[0].model_calls == 1
    stats = config_stats(load_configs([out])[0])
    assert stats.retried_tries == 1 and stats.retried_cost_usd == pytest.approx(gone.cost_usd)
    assert stats.total_cost_usd == pytest.approx(gone.cost_usd + final[0].cost_usd)
    assert stats.tokens_in == 1000 + final[0].usage.input_tokens
