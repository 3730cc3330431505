"""Bad input gets a clear message before any agent container starts: an unknown agent name, a
config with a typo'd key or an unpinned version, an install step that fails (which step, and its
output), a check that fails; and a CLI that exits at once says so in the attempt's row."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.agents import get_agent
from harness.agents.external import ExternalConfigError, InstallError
from harness.agents.external.config import load_external_config, shipped_configs, shipped_path
from harness.run import Runner, RunOptions
from harness.tasks import load_task

ROOT = Path(__file__).resolve().parent.parent
WHOLELOOP = str(Path(sys.executable).with_name("wholeloop"))
TASK = ROOT / "tasks" / "demo" / "inikit-001.yaml"


def config(tmp_path: Path, body: str, name: str = "agent.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(BASE) + textwrap.dedent(body))
    return path


BASE = """\
    kind: external
    name: scratch
    cli: scratch-cli
    version: "1.0.0"
    wire: openai-chat
    model: openai/gpt-6.1-sol
    provider: {api_key_env: OPENAI_API_KEY, base_url_env: OPENAI_BASE_URL}
    """


def test_every_shipped_config_loads_and_names_a_priced_current_model():
    from harness.models.pricing import lookup_price

    assert shipped_configs() == ["aider", "claude-code", "codex", "mini-swe-agent"]
    for name in shipped_configs():
        cfg = load_external_config(shipped_path(name))
        model = cfg.model.split("/", 1)[-1]
        assert lookup_price(model, "anthropic" if cfg.wire == "anthropic" else "openai") is not None, name
        assert "4-5" not in model and "sonnet-4" not in model  # retired 2026-11-30


def test_unknown_agent_name_lists_the_shipped_ones(tmp_path):
    with pytest.raises(ExternalConfigError, match="no shipped external agent 'nope'; there are: aider, claude-code"):
        get_agent("external:nope")
    out = subprocess.run(
        [WHOLELOOP, "run", str(TASK), "--agent", "external:nope", "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "no shipped external agent 'nope'" in out.stderr
    assert not (tmp_path / "run").exists()


def test_a_typo_names_the_key_and_the_known_ones(tmp_path):
    path = config(
        tmp_path,
        """\
        install: [{pip: ["x==1"]}]
        check: ["true"]
        comand: ["x"]
        tools: {shel: {bash: command}}
        """,
    )
    with pytest.raises(ExternalConfigError) as err:
        load_external_config(path)
    message = str(err.value)
    assert "comand: unknown key (known:" in message and "command" in message
    assert "tools.shel: unknown key (known: edit, edit_commands, exit_code" in message
    assert "command: Field required" in message


def test_versions_must_be_pinned(tmp_path):
    path = config(
        tmp_path,
        """\
        install: [{pip: ["mini-swe-agent"]}, {npm: ["@openai/codex"]}]
        check: ["true"]
        command: ["x"]
        """,
    )
    with pytest.raises(
        ExternalConfigError, match=r"install\.0.*'mini-swe-agent' is not pinned.*install\.1.*@openai/codex"
    ):
        load_external_config(path)


def test_a_missing_key_is_said_before_anything_runs(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent = get_agent("external:mini-swe-agent")
    with pytest.raises(ExternalConfigError, match="OPENAI_API_KEY is not set.*OAuth logins cannot be metered"):
        agent.prepare()


def test_a_model_the_cli_s_wire_cannot_reach_is_refused_before_anything_starts(tmp_path):
    """Claude Code speaks Anthropic's wire only: given an OpenAI model, every unit would end as an
    infrastructure error after its container started (issue 28, first met with mini-swe-agent). `run`
    exits 2 at once, naming the models and the agents that would work; a reachable pairing passes."""
    env = {**__import__("os").environ, "OPENAI_API_KEY": "sk-test-key-123456789", "ANTHROPIC_API_KEY": "sk-ant-1"}
    out = subprocess.run(
        [WHOLELOOP, "run", str(TASK), "--agent", "external:claude-code", "--model", "openai/gpt-4o"]
        + ["--out", str(tmp_path / "run"), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 2, out.stdout + out.stderr
    message = " ".join(out.stderr.split())
    assert "speaks the anthropic wire only" in message and "needs openai-chat or openai-responses" in message
    assert "external:mini-swe-agent" in message and "external:codex" in message
    assert not (tmp_path / "run" / "results.jsonl").exists()
    codex = get_agent("external:codex", model="claude-sonnet-4-5")  # a bare id: litellm's map says whose
    assert any("does not reach anthropic's models" in p for p in codex.check())


def test_a_cli_that_speaks_several_wires_speaks_the_one_its_model_needs(monkeypatch):
    """mini-swe-agent (litellm underneath) speaks OpenAI's and Anthropic's wires: the run picks the
    one the model's provider needs, with that wire's key and URL variables, and the preflight passes;
    before, an Anthropic model was refused (or, earlier still, failed in every container)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-123456789")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key-987654321")
    claude = get_agent("external:mini-swe-agent", model="anthropic/claude-sonnet-4-5")
    assert claude.config.wire == "anthropic" and claude.config.provider.api_key_env == "ANTHROPIC_API_KEY"
    assert (
        claude.config.env["ANTHROPIC_BASE_URL"] == "{base_url}" and claude.config.env["ANTHROPIC_API_KEY"] == "{token}"
    )
    assert not [p for p in claude.check() if "wire" in p or "price" in p]
    assert claude.describe()["external"]["wire"] == "anthropic"
    gpt = get_agent("external:mini-swe-agent", model="openai/gpt-4o")
    assert gpt.config.wire == "openai-chat" and gpt.config.provider.api_key_env == "OPENAI_API_KEY"
    assert not [p for p in gpt.check() if "wire" in p]
    bare = get_agent("external:mini-swe-agent", model="claude-sonnet-4-5")  # litellm's map says anthropic
    assert bare.config.wire == "anthropic"
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ExternalConfigError, match="ANTHROPIC_API_KEY is not set"):
        claude.prepare()


@pytest.mark.docker
def test_a_failing_install_step_says_which_and_shows_its_output(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-123456789")
    path = config(
        tmp_path,
        f"""\
        env: {{OPENAI_BASE_URL: "{{base_url}}/v1", OPENAI_API_KEY: "{{token}}"}}
        install:
          - shell: "echo the first step is fine"
          - shell: "echo broken-step-output-{tmp_path.name}; exit 3"
        check: ["true"]
        command: ["x"]
        """,
    )
    with pytest.raises(InstallError) as err:
        get_agent("scratch", config_path=str(path)).prepare()
    message = str(err.value)
    assert "step 2 of 2 (shell: echo broken-step-output" in message and "failed with exit code 3" in message
    assert f"broken-step-output-{tmp_path.name}" in message.split("failed with exit code 3:")[1]
    out = subprocess.run(
        [WHOLELOOP, "run", str(TASK), "--agent-config", str(path), "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ},
    )
    assert out.returncode == 2 and "step 2 of 2" in out.stderr
    assert not (tmp_path / "run" / "results.jsonl").exists()  # no unit ran, no agent container started


@pytest.mark.docker
def test_a_cli_that_cannot_start_fails_its_check(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-123456789")
    path = config(
        tmp_path,
        f"""\
        install: [{{shell: "mkdir -p bin && echo {tmp_path.name}"}}]
        check: ["/opt/wl-agent/bin/the-cli", "--version"]
        command: ["/opt/wl-agent/bin/the-cli"]
        """,
    )
    with pytest.raises(InstallError, match="the check '/opt/wl-agent/bin/the-cli --version' failed"):
        get_agent("scratch", config_path=str(path)).prepare()


@pytest.mark.docker
def test_a_cli_that_exits_at_once_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never called
    path = config(
        tmp_path,
        f"""\
        install:
          - shell: |
              mkdir -p bin
              printf '#!/bin/sh\\necho "the-cli: unknown option $1 ({tmp_path.name})" >&2\\nexit 2\\n' > bin/the-cli
              chmod +x bin/the-cli
        check: ["/bin/sh", "-c", "test -x /opt/wl-agent/bin/the-cli && echo the-cli 1.0.0"]
        command: ["/opt/wl-agent/bin/the-cli", "--frobnicate"]
        """,
    )
    agent = get_agent("scratch", config_path=str(path))
    [row] = Runner([load_task(TASK)], agent, RunOptions(out=tmp_path / "run", infra_retries=0)).run()
    assert row.outcome == "infra_error" and row.stop_reason == "error"
    assert "scratch-cli exited at once (exit code 2) without calling the model" in row.error
    assert "unknown option --frobnicate" in row.error


# An Anthropic variant that names the provider's variables but hands the CLI no endpoint or key of
# its own: the CLI (litellm) would read ANTHROPIC_BASE_URL, find nothing and call the public API,
# which the container cannot reach; every unit an infrastructure error (issue 28's new user).
VARIANT = """\
    install: [{shell: "true"}]
    check: ["true"]
    command: ["x"]
    env: {OPENAI_BASE_URL: "{base_url}/v1", OPENAI_API_KEY: "{token}"}
    wires:
      anthropic:
        provider: {api_key_env: ANTHROPIC_API_KEY, base_url_env: ANTHROPIC_BASE_URL}
    """


def variant(tmp_path: Path, name: str, env: str = "", default_env: bool = True) -> Path:
    body = VARIANT.rstrip() + "\n" + (f"        env: {env}\n" if env else "")
    if not default_env:
        body = body.replace('    env: {OPENAI_BASE_URL: "{base_url}/v1", OPENAI_API_KEY: "{token}"}\n', "")
    return config(tmp_path, body, name)


def test_a_wire_that_hands_the_cli_no_endpoint_or_key_is_refused(tmp_path, monkeypatch):
    """The pairing's wire is spoken, but its variant points nothing at the proxy: refused, saying which
    variables to set; the same config with them passes, and so does its OpenAI default."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-123456789")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key-987654321")
    claude = "anthropic/claude-sonnet-5-5"
    silent = variant(tmp_path, "silent.yaml")
    problems = " ".join(get_agent("scratch", config_path=str(silent), model=claude).check())
    assert "anthropic wire hands the CLI no endpoint" in problems and "ANTHROPIC_BASE_URL" in problems, problems
    assert "no key" in problems and "{token}" in problems, problems
    assert not get_agent("scratch", config_path=str(silent), model="openai/gpt-6.1-sol").check()
    wrong = variant(tmp_path, "wrong.yaml", '{OPENAI_BASE_URL: "{base_url}", OPENAI_API_KEY: "{token}"}')
    problems = " ".join(get_agent("scratch", config_path=str(wrong), model=claude).check())
    assert "only as OPENAI_BASE_URL" in problems, problems
    fixed = variant(tmp_path, "fixed.yaml", '{ANTHROPIC_BASE_URL: "{base_url}", ANTHROPIC_API_KEY: "{token}"}')
    assert not get_agent("scratch", config_path=str(fixed), model=claude).check()
    nothing = variant(tmp_path, "nothing.yaml", default_env=False)
    problems = " ".join(get_agent("scratch", config_path=str(nothing)).check())
    assert "openai-chat wire hands the CLI no endpoint" in problems and "no key" in problems, problems


def containers_created_by(pid: int, since: float, until: float) -> int:
    """Containers the process `pid` created in that time (their owner label), from the engine's events:
    other engineers' runs on this machine are not counted."""
    events = subprocess.run(
        ["docker", "events", "--since", str(int(since) - 1), "--until", str(int(until) + 1)]
        + ["--filter", "type=container", "--filter", "event=create"]
        + ["--format", '{{index .Actor.Attributes "wholeloop.owner"}}'],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    return sum(owner.endswith(f":{pid}") for owner in events)


def wholeloop(*args: str, env: dict) -> tuple[subprocess.CompletedProcess, int]:
    """`wholeloop ARGS`, and how many containers it created."""
    import time

    since = time.time()
    proc = subprocess.Popen([WHOLELOOP, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out, err = proc.communicate(timeout=600)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    return done, containers_created_by(proc.pid, since, time.time())


@pytest.mark.docker
@pytest.mark.slow
def test_agents_verify_and_run_refuse_a_pairing_before_any_container_starts(tmp_path):
    """`agents verify` and `run` make the same check: the pairing whose wire hands the CLI no
    endpoint exits 2 naming it, and `run` starts no container (counted from the engine's events by
    the process's owner label); the fixed config is accepted, and its run does start containers (the
    count is not blind)."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-key-123456789", "ANTHROPIC_API_KEY": "sk-ant-test-key-9876"}
    env["ANTHROPIC_BASE_URL"] = "http://127.0.0.1:9"  # never called: the CLI exits at once
    claude = "anthropic/claude-sonnet-5-5"
    cli = """\
        install:
          - shell: |
              mkdir -p bin
              printf '#!/bin/sh\\necho the-cli here >&2\\nexit 2\\n' > bin/the-cli
              chmod +x bin/the-cli
        check: ["/bin/sh", "-c", "test -x /opt/wl-agent/bin/the-cli && echo the-cli 1.0.0"]
        command: ["/opt/wl-agent/bin/the-cli"]
        env: {OPENAI_BASE_URL: "{base_url}/v1", OPENAI_API_KEY: "{token}"}
        wires:
          anthropic:
            provider: {api_key_env: ANTHROPIC_API_KEY, base_url_env: ANTHROPIC_BASE_URL}
        """
    silent = config(tmp_path, cli, "silent.yaml")
    verified, started = wholeloop("agents", "verify", "--agent-config", str(silent), "--model", claude, env=env)
    assert verified.returncode == 2 and started == 0, verified.stdout + verified.stderr
    assert "anthropic wire hands the CLI no endpoint" in " ".join(verified.stderr.split())
    out = tmp_path / "refused"
    run, started = wholeloop(
        "run", str(TASK), "--agent-config", str(silent), "--model", claude, "--out", str(out), env=env
    )
    assert run.returncode == 2, run.stdout + run.stderr
    assert "anthropic wire hands the CLI no endpoint" in " ".join(run.stderr.split())
    assert started == 0 and not (out / "results.jsonl").exists()
    anthropic_env = '            env: {ANTHROPIC_BASE_URL: "{base_url}", ANTHROPIC_API_KEY: "{token}"}\n'
    fixed = config(tmp_path, cli.rstrip(" ") + anthropic_env, "fixed.yaml")
    verified, started = wholeloop(
        "agents", "verify", "--static", "--agent-config", str(fixed), "--model", claude, env=env
    )
    assert verified.returncode == 0 and started == 0, verified.stdout + verified.stderr
    assert "wire used" in verified.stdout and "anthropic" in verified.stdout.split("wire used")[1].splitlines()[0]
    out = tmp_path / "accepted"
    run, started = wholeloop(
        "run",
        str(TASK),
        "--agent-config",
        str(fixed),
        "--model",
        claude,
        "--out",
        str(out),
        "--infra-retries",
        "0",
        env=env,
    )
    assert started >= 1 and (out / "results.jsonl").exists(), run.stdout + run.stderr


def test_every_shipped_agent_verifies_with_its_own_model_and_each_wire_it_speaks():
    """`wholeloop agents verify` accepts every shipped config with its default model, and
    mini-swe-agent with an Anthropic model too (its second wire): the shipped configs hand their
    CLI the proxy's endpoint and token on every wire they declare. Exit 0, the wire named."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-key-123456789", "ANTHROPIC_API_KEY": "sk-ant-test-key-9876"}
    pairs = [(name, None) for name in shipped_configs()] + [("mini-swe-agent", "anthropic/claude-sonnet-5-5")]
    for name, model in pairs:
        args = [WHOLELOOP, "agents", "verify", "--static", f"external:{name}"] + (["--model", model] if model else [])
        out = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
        assert out.returncode == 0, (name, out.stdout, out.stderr)
        wire = load_external_config(shipped_path(name)).wire if model is None else "anthropic"
        assert out.stdout.split("wire used", 1)[1].split()[0] == wire, out.stdout
        assert "ok: a run with this agent and model can start" in out.stdout
