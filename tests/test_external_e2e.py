"""Real agent CLIs, installed from the registries, run on demo tasks through the metering proxy.

mini-swe-agent (PyPI), Claude Code and Codex CLI (npm) each solve demo tasks, and aider (PyPI) one, against the scripted provider
(tests/support/scripted_cli.py, which this test starts): the CLI runs for real inside a `--network none`
container with its install mounted read-only and reaches the provider only through our forwarder
and the proxy. Checked: the patch is graded; the tokens the provider reported = the run's rows =
what the CLI itself reports; the cost = litellm's price for them; the API key (and its base64) is
in no file of the run folder, no container's environment, no image's history or layers; and from
inside the container every other target fails (a listener on the host's bridge address, the
provider's port, a public address, DNS, IPv6, the proxy with another attempt's token).

The installs are cached by a hash of their steps (~/.cache/wholeloop/agents): the first run
downloads and builds them (on this 2-core machine, idle to loaded: mini 50-120 s, Claude Code
~15 s, Codex ~17 s, aider 140-400 s), later runs reuse them.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.fakellm import FakeLLM
from support.scripted_cli import AiderPlan, Plan

from harness.agents import get_agent
from harness.models.pricing import cost_usd, lookup_price
from harness.models.types import Usage
from harness.records import RunFolder
from harness.run import Runner, RunOptions
from harness.tasks import load_task
from harness.transcript import read_transcript

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-wholeloop-e2e-REAL-provider-key-7f3a9c"
TASKS = ["inikit-001", "ledgerly-001"]


class Listener:
    """A TCP listener on the host's Docker bridge address: no container may reach it."""

    def __init__(self, host: str) -> None:
        self.sock = socket.socket()
        self.sock.bind((host, 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


def bridge_address() -> str:
    out = subprocess.run(
        ["docker", "network", "inspect", "bridge", "-f", "{{range .IPAM.Config}}{{.Gateway}}{{end}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return out or "172.17.0.1"


class ContainerWatch:
    """Inspects every wholeloop container while the run goes on: their environment and mounts."""

    def __init__(self) -> None:
        self.seen: dict[str, dict] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(0.5):
            ids = subprocess.run(
                ["docker", "ps", "-q", "--filter", "label=wholeloop=1"], capture_output=True, text=True
            ).stdout.split()
            for cid in ids:
                if cid in self.seen:
                    continue
                found = subprocess.run(["docker", "inspect", cid], capture_output=True, text=True)
                if found.returncode == 0:
                    self.seen[cid] = json.loads(found.stdout)[0]

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


def check_secrets(run: Path, watch: ContainerWatch, images: list[str], *, layers: bool = False) -> None:
    """The key is in no file of the run folder, no container's configuration, no image's history or
    configuration, and (with `layers`, the slow part: `docker save`) no image layer."""
    needles = [KEY.encode(), base64.b64encode(KEY.encode()), base64.b64encode(f"x:{KEY}".encode())[4:20]]
    for path in run.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not any(n in data for n in needles), f"the API key is in {path}"
    assert watch.seen, "no container was seen running"
    for info in watch.seen.values():
        text = json.dumps(info)
        assert KEY not in text and needles[1].decode() not in text, f"the key is in container {info['Name']}"
    for image in images:
        history = subprocess.run(["docker", "history", "--no-trunc", image], capture_output=True, text=True).stdout
        config = subprocess.run(["docker", "image", "inspect", image], capture_output=True, text=True).stdout
        assert KEY not in history and KEY not in config
        if not layers:
            continue
        saved = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
        tail = b""
        while chunk := saved.stdout.read(1 << 20):
            assert KEY.encode() not in tail + chunk, f"the key is in a layer of {image}"
            tail = chunk[-64:]
        saved.wait()


def check_probes(plan: Plan, listener: Listener, expected: int) -> None:
    # one probe per attempt (more when the runner redid a unit after a machine failure)
    assert len(plan.probes) >= expected, plan.probes
    for probe in plan.probes:
        assert probe["bridge"].startswith("ENETUNREACH"), probe
        assert probe["provider_port"].startswith("ECONNREFUSED"), probe  # the container's own loopback
        assert probe["public"].startswith("ENETUNREACH"), probe  # no route at all: nothing was sent
        assert probe["ipv6"].split()[0] in ("ENETUNREACH", "EADDRNOTAVAIL", "EAFNOSUPPORT"), probe
        assert probe["dns"].startswith("failed"), probe
        assert probe["routes"] == 0 and probe["interfaces"] == ["lo"], probe
        assert probe["proxy_own_token"] == 200 and probe["proxy_no_token"] == 401, probe
    assert [p["proxy_other_token"] for p in plan.probes[1:]] == [401] * (len(plan.probes) - 1)
    assert listener.accepted == 0


def run_cli(
    tmp_path: Path,
    monkeypatch,
    agent_name: str,
    plan: Plan,
    url_env: str,
    key_env: str,
    openai_path: bool,
    task_ids: list[str],
    model: str | None = None,
):
    tasks = [load_task(ROOT / "tasks" / "demo" / f"{t}.yaml") for t in task_ids]
    plan.tasks = tasks
    listener = Listener(bridge_address())
    plan.bridge = (listener.sock.getsockname()[0], listener.port)
    watch = ContainerWatch()
    try:
        with FakeLLM(responder=plan) as fake:
            plan.provider_port = int(fake.base_url.rsplit(":", 1)[1])
            monkeypatch.setenv(url_env, fake.openai_url if openai_path else fake.base_url)
            monkeypatch.setenv(key_env, KEY)
            agent = get_agent(agent_name, model=model)
            out = tmp_path / "run"
            rows = Runner(tasks, agent, RunOptions(out=out)).run()
    finally:
        watch.close()
        listener.close()
    return rows, fake, out, watch, listener


def provider_cost(fake: FakeLLM, model: str, provider: str, anthropic: bool) -> float:
    price = lookup_price(model, provider)
    total = 0.0
    for u in fake.reported:
        usage = Usage(
            input_tokens=u.input + u.cache_read + (u.cache_write if anthropic else 0),
            output_tokens=u.output,
            cache_read_tokens=u.cache_read,
            cache_write_tokens=u.cache_write if anthropic else 0,
        )
        total += cost_usd(usage, price)
    return total


def metered(out: Path, *, unfinished: bool) -> tuple[Usage, float]:
    """Usage and cost of the model_response events of the run's transcripts (with `unfinished`,
    also those of tries the runner redid after a machine failure: the provider answered them too)."""
    usage, cost = Usage(), 0.0
    pattern = "transcript*.jsonl" if unfinished else "transcript.jsonl"
    for path in sorted(out.glob(f"attempts/*/*/rep-*/{pattern}")):
        for event in read_transcript(path):
            if event.type == "model_response":
                usage += Usage(**event.usage)
                cost += event.cost_usd or 0.0
    return usage, cost


def check_tokens(fake: FakeLLM, rows: list, out: Path, model: str, provider: str, anthropic: bool) -> None:
    """Tokens: what the provider reported = what the proxy charged (all tries); the rows = the final
    tries' charges. Cost: litellm's price for the provider's figures."""
    reported = fake.usage_totals()
    everything, cost = metered(out, unfinished=True)
    assert everything.output_tokens == reported.output
    assert everything.cache_read_tokens == reported.cache_read
    assert everything.input_tokens == reported.input + reported.cache_read + (reported.cache_write if anthropic else 0)
    if anthropic:
        assert everything.cache_write_tokens == reported.cache_write
    assert cost == pytest.approx(provider_cost(fake, model, provider, anthropic))
    final, final_cost = metered(out, unfinished=False)
    assert sum((r.usage for r in rows), Usage()) == final
    assert sum(r.cost_usd for r in rows) == pytest.approx(final_cost)


def test_mini_swe_agent_end_to_end(tmp_path, monkeypatch):
    plan = Plan(tasks=[], tool="bash", token_var="OPENAI_API_KEY", auth_header="authorization")
    rows, fake, out, watch, listener = run_cli(
        tmp_path, monkeypatch, "external:mini-swe-agent", plan, "OPENAI_BASE_URL", "OPENAI_API_KEY", True, TASKS
    )
    assert [(r.task_id, r.outcome, r.stop_reason) for r in rows] == [(t, "resolved", "submitted") for t in TASKS]
    # tokens: provider = rows = the CLI's own report; cost = litellm's price for the provider's figures
    check_tokens(fake, rows, out, "gpt-6.1-sol", "openai", False)
    folder = RunFolder(out)
    for row in rows:
        events = read_transcript(out / row.transcript_path)
        said = next(e for e in events if e.type == "external_run").self_report
        assert (said["input_tokens"], said["output_tokens"], said["cache_read_tokens"]) == (
            row.usage.input_tokens,
            row.usage.output_tokens,
            row.usage.cache_read_tokens,
        )
        assert said["cost_usd"] == pytest.approx(row.cost_usd) and said["calls"] == row.model_calls == 5
        kinds = [e.kind for e in events if e.type == "tool_call"]
        assert kinds == ["test", "edit", "test", "shell", "shell"]
        runs = [e.green for e in events if e.type == "test_run"]
        assert runs == [False, True]
        assert (out / row.transcript_path).parent.joinpath("agent/attempt-1/mini.traj.json").is_file()
    manifest = folder.manifest()
    assert manifest["agent"]["external"]["version"] == "2.4.6"
    assert manifest["agent"]["external"]["installed"].startswith("mini-swe-agent 2.4.6")
    assert manifest["agent"]["external"]["install"] == ["pip: mini-swe-agent==2.4.6 litellm==1.110.2"]
    check_probes(plan, listener, expected=len(TASKS))
    check_secrets(out, watch, sorted({i["task"] for i in manifest["images"].values()}), layers=True)
    # side by side with the built-in agent (replaying its recorded demo turns), same statistics
    tasks = [load_task(ROOT / "tasks" / "demo" / f"{t}.yaml") for t in TASKS]
    builtin = tmp_path / "builtin"
    Runner(
        tasks, get_agent("default", model=f"replay:{ROOT / 'tasks' / 'demo' / 'recordings'}"), RunOptions(out=builtin)
    ).run()
    wholeloop = str(Path(sys.executable).with_name("wholeloop"))
    wide = {**__import__("os").environ, "COLUMNS": "250"}  # a table cell must not wrap the needles below
    compared = subprocess.run([wholeloop, "compare", str(out), str(builtin)], capture_output=True, text=True, env=wide)
    assert compared.returncode == 0, compared.stderr
    for needle in (
        "mini-swe-agent+openai/gpt-6.1-sol",
        "default+replay:recordings",
        "exact McNemar",
        "scaffold: mini-swe-agent 2.4.6 (openai-chat; install: pip: mini-swe-agent==2.4.6 litellm==1.110.2",
    ):
        assert needle in " ".join(compared.stdout.split()), needle
    page = tmp_path / "side.html"
    html = subprocess.run(
        [wholeloop, "report", str(out), str(builtin), "--html", str(page)], capture_output=True, text=True, env=wide
    )
    assert html.returncode == 0, html.stderr
    text = page.read_text()
    assert "mini-swe-agent+openai/gpt-6.1-sol" in text and "default+replay:recordings" in text and "scaffold" in text
    # the recovery figures come from the recorded traffic: a red run, an edit, then green
    report = subprocess.run([wholeloop, "report", str(out)], capture_output=True, text=True)
    assert report.returncode == 0 and "mini-swe-agent" in report.stdout


def test_mini_swe_agent_with_an_anthropic_model_end_to_end(tmp_path, monkeypatch):
    """The issue's new-user failure: mini-swe-agent's own default family. Its config speaks
    Anthropic's wire too (litellm underneath); the run picks it for an anthropic/ model, hands the
    CLI an Anthropic endpoint and key, and meters the Messages traffic to the token."""
    plan = Plan(tasks=[], tool="bash", token_var="ANTHROPIC_API_KEY", auth_header="x-api-key")
    rows, fake, out, watch, listener = run_cli(
        tmp_path,
        monkeypatch,
        "external:mini-swe-agent",
        plan,
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_API_KEY",
        False,
        TASKS,
        model="anthropic/claude-sonnet-5-5",
    )
    assert [(r.task_id, r.outcome, r.stop_reason) for r in rows] == [(t, "resolved", "submitted") for t in TASKS]
    assert all(r.model_calls == 5 for r in rows)
    assert {b["model"] for b in fake.bodies() if isinstance(b, dict)} == {"claude-sonnet-5-5"}
    check_tokens(fake, rows, out, "claude-sonnet-5-5", "anthropic", True)
    for row in rows:
        events = read_transcript(out / row.transcript_path)
        said = next(e for e in events if e.type == "external_run").self_report
        assert (said["input_tokens"], said["output_tokens"], said["cache_read_tokens"]) == (
            row.usage.input_tokens,
            row.usage.output_tokens,
            row.usage.cache_read_tokens,
        ), said
        assert said["cost_usd"] == pytest.approx(row.cost_usd) and said["calls"] == row.model_calls
        assert [e.kind for e in events if e.type == "tool_call"] == ["test", "edit", "test", "shell", "shell"]
        assert [e.green for e in events if e.type == "test_run"] == [False, True]
    manifest = RunFolder(out).manifest()
    assert manifest["agent"]["external"]["wire"] == "anthropic"
    assert manifest["agent"]["external"]["model"] == "anthropic/claude-sonnet-5-5"
    check_probes(plan, listener, expected=len(TASKS))
    check_secrets(out, watch, sorted({i["task"] for i in manifest["images"].values()}))


def test_claude_code_end_to_end(tmp_path, monkeypatch):
    plan = Plan(
        tasks=[],
        tool="Bash",
        token_var="ANTHROPIC_API_KEY",
        auth_header="x-api-key",
        finish=None,
        extra={"description": "a step"},
    )
    rows, fake, out, watch, listener = run_cli(
        tmp_path, monkeypatch, "external:claude-code", plan, "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", False, TASKS
    )
    assert [(r.task_id, r.outcome, r.stop_reason) for r in rows] == [(t, "resolved", "submitted") for t in TASKS]
    check_tokens(fake, rows, out, "claude-sonnet-5-5", "anthropic", True)
    for row in rows:
        events = read_transcript(out / row.transcript_path)
        said = next(e for e in events if e.type == "external_run").self_report
        assert (said["input_tokens"], said["output_tokens"], said["cache_read_tokens"], said["cache_write_tokens"]) == (
            row.usage.input_tokens,
            row.usage.output_tokens,
            row.usage.cache_read_tokens,
            row.usage.cache_write_tokens,
        )
        assert said["cost_usd"] == pytest.approx(row.cost_usd)
        assert [e.green for e in events if e.type == "test_run"] == [False, True]
        assert list((out / row.transcript_path).parent.glob("agent/attempt-1/claude/projects/*/*.jsonl"))
    check_probes(plan, listener, expected=len(TASKS))
    manifest = RunFolder(out).manifest()
    assert manifest["agent"]["external"]["installed"].startswith("2.1.332")
    check_secrets(out, watch, sorted({i["task"] for i in manifest["images"].values()}))


def test_codex_end_to_end(tmp_path, monkeypatch):
    # A dated model id Codex has no metadata for (litellm prices it): Codex then offers its classic
    # tools (exec_command) instead of "code mode", which the scripted provider does not speak.
    plan = Plan(
        tasks=[], tool="exec_command", arg="cmd", token_var="WL_API_KEY", auth_header="authorization", finish=None
    )
    rows, fake, out, watch, listener = run_cli(
        tmp_path,
        monkeypatch,
        "external:codex",
        plan,
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        True,
        TASKS,
        model="gpt-5.5-2026-04-23",
    )
    assert [(r.task_id, r.outcome, r.stop_reason) for r in rows] == [(t, "resolved", "submitted") for t in TASKS]
    check_tokens(fake, rows, out, "gpt-5.5-2026-04-23", "openai", False)
    for row in rows:
        events = read_transcript(out / row.transcript_path)
        said = next(e for e in events if e.type == "external_run").self_report
        assert (said["input_tokens"], said["output_tokens"], said["cache_read_tokens"]) == (
            row.usage.input_tokens,
            row.usage.output_tokens,
            row.usage.cache_read_tokens,
        )
        assert [e.green for e in events if e.type == "test_run"] == [False, True]
        assert list((out / row.transcript_path).parent.glob("agent/home/codex/sessions/**/rollout-*.jsonl"))
    check_probes(plan, listener, expected=len(TASKS))
    manifest = RunFolder(out).manifest()
    assert manifest["agent"]["external"]["installed"] == "codex-cli 0.171.0"
    check_secrets(out, watch, sorted({i["task"] for i in manifest["images"].values()}))


def test_aider_end_to_end(tmp_path, monkeypatch):
    # text-based: its edits are SEARCH/REPLACE blocks in the reply, its tests its own --test-cmd
    task = load_task(ROOT / "tasks" / "demo" / "inikit-001.yaml")
    plan = AiderPlan(task)
    watch = ContainerWatch()
    try:
        with FakeLLM(responder=plan) as fake:
            monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_url)
            monkeypatch.setenv("OPENAI_API_KEY", KEY)
            out = tmp_path / "run"
            [row] = Runner([task], get_agent("external:aider"), RunOptions(out=out)).run()
    finally:
        watch.close()
    assert (row.outcome, row.stop_reason) == ("resolved", "submitted")
    check_tokens(fake, [row], out, "gpt-6.1-sol", "openai", False)
    events = read_transcript(out / row.transcript_path)
    said = next(e for e in events if e.type == "external_run").self_report
    assert (said["input_tokens"], said["output_tokens"]) == (row.usage.input_tokens, row.usage.output_tokens)
    edits = [e for e in events if e.type == "tool_call"]
    assert edits and all(e.kind == "edit" and e.name == "search_replace" for e in edits)
    logs = (out / row.transcript_path).parent / "agent" / "attempt-1"
    assert (logs / "aider.chat.md").is_file() and (logs / "aider.llm.txt").is_file()
    assert ".aider" not in (out / row.dir / "patch.diff").read_text()  # its own files are not its patch
    check_secrets(out, watch, [])
