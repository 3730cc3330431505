"""The agent end to end: the real SDKs against a local fake provider, the CLI, real containers.

What a run records must equal what the provider reported: tokens exactly, cost at litellm's price.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.fakellm import Call, Error, FakeLLM, Reply, Tokens

from harness.models.pricing import cost_usd, lookup_price
from harness.models.types import Usage
from harness.records import read_results
from harness.transcript import read_transcript

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parent.parent
CANARY = "sk-canary-do-not-leak-0123456789"

FIX = [
    Reply(
        text="Let me look at the code.",
        calls=[Call("edit", {"command": "view", "path": "calc/__init__.py"})],
        usage=Tokens(input=1200, output=40),
    ),
    Reply(
        calls=[Call("bash", {"command": "env; python -c 'from calc import add; print(add(2, 3))'"})],
        usage=Tokens(input=1500, output=30, cache_read=1000),
    ),
    Reply(
        text="add subtracts; fixing.",
        calls=[
            Call(
                "edit",
                {
                    "command": "str_replace",
                    "path": "calc/__init__.py",
                    "old_str": "return a - b",
                    "new_str": "return a + b",
                },
            )
        ],
        usage=Tokens(input=1800, output=60),
    ),
    Reply(calls=[Call("run_tests", {})], usage=Tokens(input=2100, output=10)),
    Reply(text="Done.", calls=[Call("submit", {})], usage=Tokens(input=2400, output=12)),
]

PROVIDERS = {
    # spec, model id for pricing, how the CLI reaches the fake server
    "anthropic": ("anthropic/claude-sonnet-4-5", {"ANTHROPIC_BASE_URL": "{base}", "ANTHROPIC_API_KEY": CANARY}, []),
    "openai": ("openai/gpt-4o", {"OPENAI_BASE_URL": "{openai}", "OPENAI_API_KEY": CANARY}, []),
    "litellm": ("litellm/openai/gpt-4o", {"OPENAI_API_KEY": CANARY}, ["--base-url", "{openai}"]),
}


def run_cli(spec_dir, out, model, env_extra, args, srv, *more):
    env = {**os.environ, **{k: v.format(base=srv.base_url, openai=srv.openai_url) for k, v in env_extra.items()}}
    cmd = [
        sys.executable,
        "-m",
        "harness.cli",
        "run",
        str(spec_dir),
        "--model",
        model,
        "--out",
        str(out),
        *[a.format(base=srv.base_url, openai=srv.openai_url) for a in args],
        *more,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)


def provider_usage(tokens: Tokens, provider: str) -> Usage:
    """What our neutral accounting should say for one scripted reply (input includes cache)."""
    return Usage(
        input_tokens=tokens.input + tokens.cache_read + tokens.cache_write,
        output_tokens=tokens.output,
        cache_read_tokens=tokens.cache_read,
        cache_write_tokens=tokens.cache_write,
    )


@pytest.mark.parametrize("provider", list(PROVIDERS))
@pytest.mark.parametrize("stream", [False, True])
def test_a_scripted_provider_resolves_the_task_with_exact_tokens_and_cost(provider, stream, tiny_task, tmp_path):
    model, env_extra, args = PROVIDERS[provider]
    with FakeLLM() as srv:
        srv.script(*FIX)
        result = run_cli(
            tiny_task["dir"], tmp_path / "run", model, env_extra, args, srv, "--stream" if stream else "--no-stream"
        )
    assert result.returncode == 0, result.stdout + result.stderr
    [row] = read_results(tmp_path / "run" / "results.jsonl")
    assert (row.outcome, row.stop_reason, row.steps) == ("resolved", "submitted", 5), row
    expected = Usage()
    for reply in FIX:
        expected += provider_usage(reply.usage, provider)
    assert row.usage.input_tokens == expected.input_tokens
    assert row.usage.output_tokens == expected.output_tokens
    assert row.usage.cache_read_tokens == expected.cache_read_tokens
    price = lookup_price(model.split("/")[-1], provider if provider != "litellm" else "openai")
    assert price is not None
    assert row.cost_usd == pytest.approx(sum(cost_usd(provider_usage(r.usage, provider), price) for r in FIX), rel=1e-9)
    # the key never reaches the container, the transcript, or anything else in the run folder
    events = read_transcript(tmp_path / "run" / row.transcript_path)
    env_output = [e for e in events if e.type == "tool_result" and e.name == "bash"][0].output
    assert "PATH=" in env_output and CANARY not in env_output
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert CANARY not in path.read_text(errors="replace"), path


def test_rate_limits_are_waited_out_and_cost_no_failed_attempt(tiny_task, tmp_path):
    model, env_extra, args = PROVIDERS["anthropic"]
    with FakeLLM() as srv:
        srv.script(Error(429, retry_after=1), Error(429, retry_after=1), *FIX)
        result = run_cli(tiny_task["dir"], tmp_path / "run", model, env_extra, args, srv)
    assert result.returncode == 0, result.stdout + result.stderr
    [row] = read_results(tmp_path / "run" / "results.jsonl")
    assert row.outcome == "resolved" and row.phases.retry_wait_s >= 2
    retries = [e for e in read_transcript(tmp_path / "run" / row.transcript_path) if e.type == "retry"]
    assert [(e.status_code, e.wait_s >= 1) for e in retries] == [(429, True), (429, True)]


def test_a_bad_key_ends_the_attempt_at_once_as_infrastructure(tiny_task, tmp_path):
    model, env_extra, args = PROVIDERS["anthropic"]
    with FakeLLM() as srv:
        srv.script(Error(401, message="invalid x-api-key"))
        result = run_cli(tiny_task["dir"], tmp_path / "run", model, env_extra, args, srv)
        assert len(srv.requests) == 1
    assert result.returncode == 3, result.stdout + result.stderr  # a run whose units ended in infra errors
    [row] = read_results(tmp_path / "run" / "results.jsonl")
    assert row.outcome == "infra_error" and "AuthError" in row.error and "ANTHROPIC_API_KEY" in row.error
    assert "infra_error" in result.stdout


def test_show_lets_a_reviewer_see_what_failed(tiny_task, tmp_path):
    model, env_extra, args = PROVIDERS["openai"]
    wrong = [
        Reply(calls=[Call("bash", {"command": "python -m pytest -q tests/test_nothing.py"})]),
        Reply(
            text="I'll change mul instead.",
            calls=[
                Call(
                    "edit",
                    {
                        "command": "str_replace",
                        "path": "calc/__init__.py",
                        "old_str": "return a * b",
                        "new_str": "return a * b + 0",
                    },
                )
            ],
        ),
        Reply(calls=[Call("run_tests", {})]),
        Reply(text="Looks fine.", calls=[Call("submit", {})]),
    ]
    with FakeLLM() as srv:
        srv.script(*wrong)
        result = run_cli(tiny_task["dir"], tmp_path / "run", model, env_extra, args, srv)
    assert result.returncode == 0
    [row] = read_results(tmp_path / "run" / "results.jsonl")
    assert row.outcome == "unresolved"
    shown = subprocess.run(
        [sys.executable, "-m", "harness.cli", "show", str(tmp_path / "run"), "tiny-001"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    text = shown.stdout
    assert shown.returncode == 0, shown.stderr
    assert "$ python -m pytest -q tests/test_nothing.py" in text and "exit 4" in text  # the failing command
    assert "tests GREEN" in text  # the visible tests were green...
    assert "hidden tests: unresolved" in text and "tests/test_add.py::test_add" in text  # ...the hidden ones not
