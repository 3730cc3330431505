"""A real CLI hits the attempt's budget: it stops with that stop reason, in bounded time, and the
proxy forwards nothing past the limit.

mini-swe-agent is refused with 403, which it retries with backoff (4 s, 4 s, 8 s...): it would go
on for minutes, so it is the runner that stops it, `grace_s` after the limit, TERM then KILL
3 s later. The bound asserted is grace + 8 s (the kill, and mini writing its trajectory). Claude
Code is refused with 403, which it treats as final: it stops by itself within the grace.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support.fakellm import FakeLLM
from support.scripted_cli import Plan

from harness.agents import get_agent
from harness.agents.external.config import shipped_path
from harness.run import Runner, RunOptions
from harness.tasks import load_task
from harness.transcript import read_transcript

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-wholeloop-budget-test-key-123456"
GRACE = 5.0
BOUND = GRACE + 8.0


def variant(tmp_path: Path, shipped: str, **changes) -> Path:
    data = yaml.safe_load(shipped_path(shipped).read_text())
    for key, value in changes.items():
        if isinstance(value, dict):
            data[key] = {**data.get(key, {}), **value}
        else:
            data[key] = value
    path = tmp_path / f"{shipped}-budget.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run(tmp_path: Path, monkeypatch, config: Path, plan: Plan, url_env: str, key_env: str, openai_path: bool):
    task = load_task(ROOT / "tasks" / "demo" / "inikit-002.yaml")
    plan.tasks = [task]
    with FakeLLM(responder=plan) as fake:
        monkeypatch.setenv(url_env, fake.openai_url if openai_path else fake.base_url)
        monkeypatch.setenv(key_env, KEY)
        agent = get_agent("budget", config_path=str(config))
        [row] = Runner([task], agent, RunOptions(out=tmp_path / "run")).run()
    events = read_transcript(tmp_path / "run" / row.transcript_path)
    return row, fake, events


def stop_times(events) -> tuple[float, float]:
    limit = next(e for e in events if e.type == "limit")
    ended = next(e for e in events if e.type == "external_run")
    return limit.elapsed_s, ended.elapsed_s


def test_mini_retrying_refusals_is_stopped_at_the_token_limit(tmp_path, monkeypatch):
    # each scripted reply has 30+ output tokens: the second call reaches 60
    config = variant(
        tmp_path,
        "mini-swe-agent",
        name="mini-budget",
        refuse_status=403,
        grace_s=GRACE,
        limits={"max_output_tokens": 60},
    )
    row, fake, events = run(tmp_path, monkeypatch, config, Plan(tasks=[]), "OPENAI_BASE_URL", "OPENAI_API_KEY", True)
    assert row.stop_reason == "token_limit"
    limit_at, ended_at = stop_times(events)
    print(
        f"mini: limit reached at {limit_at:.2f} s, the CLI ended at {ended_at:.2f} s "
        f"({ended_at - limit_at:.2f} s later; bound {BOUND:g} s)"
    )
    assert ended_at - limit_at <= BOUND, (limit_at, ended_at)
    run_event = next(e for e in events if e.type == "external_run")
    assert run_event.stopped_by.startswith("token_limit")  # the runner stopped it: mini kept retrying
    # nothing was forwarded past the limit: the provider saw exactly the two admitted calls
    assert len(fake.requests) == 2 == row.model_calls and row.usage.output_tokens >= 60
    log = (tmp_path / "run" / row.transcript_path).parent / "agent" / "attempt-1" / "proxy.jsonl"
    refused = [line for line in log.read_text().splitlines() if '"why":"budget"' in line]
    assert len(refused) >= 2, "mini retries the 403 (with backoff) until it is stopped"


def test_claude_code_stops_at_the_cost_limit(tmp_path, monkeypatch):
    # one scripted call costs 900 x $2e-6 + 30 x $1e-5 + cache: about $0.0023; the limit is $0.004
    config = variant(tmp_path, "claude-code", name="claude-budget", grace_s=GRACE, limits={"max_cost_usd": 0.004})
    plan = Plan(
        tasks=[],
        tool="Bash",
        token_var="ANTHROPIC_API_KEY",
        auth_header="x-api-key",
        finish=None,
        extra={"description": "a step"},
    )
    row, fake, events = run(tmp_path, monkeypatch, config, plan, "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", False)
    assert row.stop_reason == "cost_limit"
    assert row.cost_usd >= 0.004
    limit_at, ended_at = stop_times(events)
    print(
        f"claude: limit reached at {limit_at:.2f} s, the CLI ended at {ended_at:.2f} s "
        f"({ended_at - limit_at:.2f} s later; bound {BOUND:g} s)"
    )
    assert ended_at - limit_at <= BOUND
    assert len(fake.requests) == row.model_calls
    # max_tokens of the last call was clamped to what the money left could buy
    assert fake.requests[-1].body["max_tokens"] < 32000
