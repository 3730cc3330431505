"""The Ray executor on a cluster whose worker nodes share nothing with the driver (issue 27): each
worker in its own network and mount namespaces with its own Docker engine, wholeloop from a built
wheel, no view of the driver's files (see tests/support/raycluster.py). Everything here talks to
the cluster from subprocesses (the CLI, or a small probe), so this process never joins it.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.fakellm import Call, FakeLLM, Reply, Tokens
from support.raycluster import ROOT, RayCluster, build_wheel, can_make_namespaces, template_venv

from harness.records import latest_rows, read_results
from harness.report.stats import config_stats, load_configs
from sandbox.base import DEFAULT_BASE

DEMO = ROOT / "tasks" / "demo"
RECORDINGS = DEMO / "recordings"

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """A head and two worker nodes (see tests/support/raycluster.py), torn down after the session
    whatever happened."""
    pytest.importorskip("ray")
    why = can_make_namespaces()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the multi-node Ray cluster: {why}")
        pytest.skip(why)
    wheel = build_wheel(tmp_path_factory.mktemp("wheel"))
    env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env["OPENAI_API_KEY"] = "sk-cluster-test-not-a-key"  # the nodes' agents call the tests' scripted model
    cluster = RayCluster(workers=2, base_images=(DEFAULT_BASE,), env=env)
    try:
        cluster.start(wheel, template_venv())
        yield cluster
    finally:
        cluster.stop()


def driver_env(cluster: RayCluster) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    return {**env, "RAY_USAGE_STATS_ENABLED": "0", **cluster.env}


PROBE = r"""
import json, os, sys, ray
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
paths = json.loads(sys.argv[2])

@ray.remote(num_cpus=0)
def look(paths):
    import harness, socket
    from sandbox.docker.engine import client
    routes = [line.split()[1] for line in open("/proc/net/route").read().splitlines()[1:]]
    return {
        "host": ray.get_runtime_context().get_node_id(),
        "ip": ray.util.get_node_ip_address(),
        "seen": [p for p in paths if os.path.exists(p)],
        "harness": harness.__file__,
        "docker_host": os.environ.get("DOCKER_HOST"),
        "docker_root": client().info()["DockerRootDir"],
        "default_route": "00000000" in routes,
        "main_socket_is_socket": __import__("stat").S_ISSOCK(os.stat("/var/run/docker.sock").st_mode)
        if os.path.exists("/var/run/docker.sock") else False,
    }

out = {}
for name in json.loads(sys.argv[3]):
    out[name] = ray.get(look.options(resources={name: 0.01}).remote(paths), timeout=120)
print(json.dumps(out))
"""


def probe_nodes(cluster: RayCluster, paths: list[str]) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, cluster.address, json.dumps(paths), json.dumps([n.name for n in cluster.nodes])],
        capture_output=True,
        text=True,
        env=driver_env(cluster),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_worker_nodes_share_no_files_network_or_engine_with_the_driver(cluster, tmp_path):
    run_folder = tmp_path / "a-run"
    run_folder.mkdir()
    (run_folder / "results.jsonl").write_text("")
    driver_paths = [str(run_folder), str(DEMO), str(DEMO / "inikit-001.yaml"), str(ROOT), str(tmp_path)]
    seen = probe_nodes(cluster, driver_paths)
    assert set(seen) == {"node1", "node2"}
    for node in cluster.nodes:
        info = seen[node.name]
        assert info["seen"] == []  # none of the driver's files exists on the node
        assert info["ip"] == node.ip and not info["default_route"]  # its own namespace: no way out
        assert info["harness"].startswith(str(node.root / "venv"))  # installed from the wheel
        assert info["docker_host"] == node.docker_host and info["docker_root"] == str(node.root / "docker")
        assert not info["main_socket_is_socket"]  # the main engine's socket is covered
        assert node.images() >= {DEFAULT_BASE}  # loaded, not pulled
    assert all(Path(p).exists() for p in driver_paths)  # while the driver sees them all
    assert len({seen[n]["host"] for n in seen}) == 2


AGENTS = {"gold": ["--agent", "gold"], "noop": ["--agent", "noop"], "replay": ["--model", f"replay:{RECORDINGS}"]}


def demo_runs(root: Path, *extra: str, env: dict | None = None) -> dict[str, tuple[Path, int, str]]:
    """gold, noop and replay of the demo suite at once (three CLI runs side by side: the units
    mostly wait, so this costs about one run's time, not three): agent -> (run folder, exit code,
    output)."""
    procs = {}
    for agent in AGENTS:
        out, log = root / agent, root / f"{agent}.log"
        cmd = [sys.executable, "-m", "harness.cli", "run", str(DEMO), *AGENTS[agent], "--out", str(out), *extra]
        with open(log, "w") as fh:
            procs[agent] = (out, log, subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, env=env))
    runs = {}
    try:
        for agent, (out, log, proc) in procs.items():
            runs[agent] = (out, proc.wait(timeout=900), log.read_text())
    finally:
        for _, _, proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return runs


def run_logged(cmd: list[str], log: Path, cluster: RayCluster, timeout: float) -> subprocess.CompletedProcess:
    """The CLI run with its output in LOG as it goes; past TIMEOUT it is killed and the test fails
    with what it had printed, its rows so far and the tail of each node's logs (a bare
    TimeoutExpired says nothing of where a cluster run stalled)."""
    with open(log, "w") as fh:
        env = {**driver_env(cluster), "PYTHONFAULTHANDLER": "1"}  # SIGABRT prints every thread's stack
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, env=env)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            rows = ""
            if "--out" in cmd:
                results = Path(cmd[cmd.index("--out") + 1]) / "results.jsonl"
                rows = results.read_text()[-3000:] if results.exists() else "(no results.jsonl)"
            nodes = "".join(
                f"\n--- {path}:\n{path.read_text(errors='replace')[-2000:]}" for path in cluster.logs if path.exists()
            )
            pytest.fail(f"timed out after {timeout:.0f} s\n{log.read_text()[-8000:]}\n--- rows:\n{rows}{nodes}")
    return subprocess.CompletedProcess(cmd, code, log.read_text(), "")


@pytest.fixture(scope="session")
def local_runs(tmp_path_factory) -> dict[str, tuple[Path, int]]:
    """gold, noop and replay of the demo suite with the local executor: the results to match."""
    runs = demo_runs(tmp_path_factory.mktemp("local"), "--workers", "2")
    for _, code, text in runs.values():
        assert code in (0, 1), text[-3000:]
    return {agent: (out, code) for agent, (out, code, _) in runs.items()}


def report_text(run: Path, into: Path) -> Path:
    """`wholeloop report RUN` as compare_runs reads it, less what differs by executor alone: the
    command line, and the table widths that follow from the seconds (which are hidden)."""
    proc = subprocess.run(
        [sys.executable, "-m", "harness.cli", "report", str(run)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "400"},
    )
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if "harness/cli/__main__.py run" not in line]
    into.write_text("\n".join(re.sub(r"[━─ ]+", " ", line) for line in lines) + "\n")
    return into


@pytest.mark.parametrize("agent", list(AGENTS))
def test_the_cluster_runs_the_demo_suite_as_the_local_executor_does(cluster, local_runs, agent, tmp_path):
    out = tmp_path / agent
    ray = ["--executor", "ray", "--ray-address", cluster.address, "--workers", "2"]
    cmd = [sys.executable, "-m", "harness.cli", "run", str(DEMO), *AGENTS[agent], "--out", str(out), *ray]
    proc = run_logged(cmd, tmp_path / f"{agent}.log", cluster, timeout=900)
    local, local_code = local_runs[agent]
    assert proc.returncode == local_code, proc.stdout[-3000:]
    reports = [report_text(local, tmp_path / "local.txt"), report_text(out, tmp_path / "ray.txt")]
    compare = [sys.executable, str(ROOT / "scripts" / "compare_runs.py"), str(local), str(out)]
    same = subprocess.run(
        [*compare, "--report-before", str(reports[0]), "--report-after", str(reports[1])],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert same.returncode == 0, same.stdout[-4000:] + same.stderr[-2000:]  # rows, costs, grades, report
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 7 and {r["node"] for r in rows} <= {n.name for n in cluster.nodes}  # run on the workers
    manifest = json.loads((out / "manifest.json").read_text())
    arrived = {task: info.get("arrived") for task, info in manifest["images"].items()}
    assert set(arrived) == {r["task_id"] for r in rows}
    assert set(arrived.values()) <= {"shipped", "present"}  # never built on a node (it cannot reach a registry)
    for node in cluster.nodes:
        assert node.containers() == []  # nothing of the run outlives it on the nodes


def test_a_driver_killed_mid_run_resumes_against_the_same_cluster(cluster, local_runs, tmp_path):
    """The driver (the CLI) is SIGKILLed once two units have finished; the same command again
    resumes against the same cluster: finished units untouched, the rest run on the nodes, each
    unit one final row with the local run's outcome, nothing left on the nodes' engines."""
    out = tmp_path / "resumed"
    ray = ["--executor", "ray", "--ray-address", cluster.address, "--workers", "2"]
    cmd = [sys.executable, "-m", "harness.cli", "run", str(DEMO), *AGENTS["replay"], "--out", str(out), *ray]
    log = tmp_path / "first.log"
    with open(log, "w") as fh:
        first = subprocess.Popen(
            cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, env=driver_env(cluster), start_new_session=True
        )
    results = out / "results.jsonl"
    try:
        deadline = time.monotonic() + 300
        while len(read_results(results)) < 2:
            assert first.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # no clean-up of any kind in the driver
        first.wait()
    before = read_results(results)
    assert 2 <= len(before) < 7
    deadline = time.monotonic() + 60  # Ray ends the dead driver's units; the next unit on a node prunes them
    while any(_owned_by_live_processes(n) for n in cluster.nodes) and time.monotonic() < deadline:
        time.sleep(0.5)
    second = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=driver_env(cluster), timeout=600)
    assert second.returncode == local_runs["replay"][1], second.stdout[-3000:] + second.stderr[-3000:]
    assert f"{7 - len(before)} to run, {len(before)} already done" in second.stdout
    after = read_results(results)
    assert after[: len(before)] == before  # finished units never redone
    abandoned = [r for r in after if r.retried]  # the units in flight when the driver died
    assert all((r.failed_in or {}).get("error_type") == "Abandoned" for r in abandoned)
    assert len({r.task_id for r in abandoned}) == len(abandoned)
    local = {r.task_id: r for r in read_results(local_runs["replay"][0] / "results.jsonl")}
    final = [r for r in after if not r.retried]
    assert sorted(r.task_id for r in final) == sorted(local) and all(r.final for r in final)
    assert {r.task_id: (r.outcome, r.resolved) for r in final} == {k: (r.outcome, r.resolved) for k, r in local.items()}
    assert {r.node for r in final} <= {n.name for n in cluster.nodes}
    assert [n.containers() for n in cluster.nodes] == [[], []]


def _owned_by_live_processes(node) -> list[str]:
    """Containers on the node whose owner (the unit's process; the node shares this machine's pid
    namespace) is alive."""
    proc = node.docker("ps", "-a", "--format", '{{.Label "wholeloop.owner"}}')
    pids = [line.partition(":")[2] for line in proc.stdout.split()] if proc.returncode == 0 else []
    return [pid for pid in pids if pid.isdigit() and Path(f"/proc/{pid}").exists()]


def test_a_lost_nodes_try_is_recorded_once_with_the_spend_it_had_streamed(cluster, local_runs, tmp_path):
    """A scripted model answers the unit's first call (1000 + 50 tokens, a tool call), then holds
    the second; the node running the unit is SIGKILLed once that first call's usage has streamed
    to the driver. Ray redoes the unit on the other node (one call, no patch): the lost try is one
    abandoned row with the first call's spend, the redo the one final row, the run's cost both,
    exit 0 with the lost-node warning. The node is brought back after, for the tests that follow."""
    seen, hold = threading.Event(), threading.Event()
    calls = itertools.count()

    def respond(request):
        n = next(calls)
        if n == 0:
            return Reply(calls=[Call("bash", {"command": "ls"})], usage=Tokens(1000, 50))
        if n == 1:
            seen.set()  # the lost try's second call: it never gets an answer
            hold.wait(300)
            return Reply(text="too late", usage=Tokens(1, 1))
        return Reply(text="I give up", usage=Tokens(10, 2))  # the redone try: one call, no patch

    out = tmp_path / "spend"
    log = tmp_path / "run.log"
    with FakeLLM(responder=respond, host=cluster.head_ip) as model:
        cmd = [sys.executable, "-m", "harness.cli", "run", str(DEMO / "inikit-001.yaml"), "--model", "openai/gpt-4o"]
        cmd += ["--base-url", f"{model.base_url}/v1", "--out", str(out)]
        cmd += ["--executor", "ray", "--ray-address", cluster.address]
        with open(log, "w") as fh:
            run = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, env=driver_env(cluster))
        lost = None
        try:
            assert seen.wait(300), log.read_text()[-3000:]
            deadline = time.monotonic() + 60  # the first call's usage is in the driver's live copy
            while not any('"model_response"' in p.read_text() for p in out.rglob("transcript.live.jsonl")):
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.2)
            (lost,) = [n for n in cluster.nodes if n.containers()]  # the node the unit runs on
            cluster.kill_node(lost)
            code = run.wait(timeout=600)
        finally:
            hold.set()
            if run.poll() is None:
                run.kill()
                run.wait()
            if lost is not None:
                cluster.restart_node(lost)
    text = log.read_text()
    assert code == 0, text[-3000:]
    rows = read_results(out / "results.jsonl")
    abandoned = [r for r in rows if r.retried]
    assert len(abandoned) == 1, [r.model_dump() for r in rows]  # the lost try, recorded once
    gone = abandoned[0]
    assert (gone.failed_in or {}).get("error_type") == "Abandoned" and not gone.final
    assert gone.model_calls == 1 and (gone.usage.input_tokens, gone.usage.output_tokens) == (1000, 50)
    assert (gone.cost_usd or 0) > 0 and (out / gone.transcript_path).name.startswith("transcript.unfinished-")
    (final,) = [r for r in latest_rows(rows) if r.final]
    assert final.model_calls == 1 and final.node != lost.name
    stats = config_stats(load_configs([out])[0])
    assert stats.retried_tries == 1 and stats.total_cost_usd == pytest.approx(gone.cost_usd + final.cost_usd)
    assert not list(out.rglob("transcript.live.jsonl"))
    manifest = json.loads((out / "manifest.json").read_text())
    (gone_node,) = manifest["executor"]["lost_nodes"]
    assert gone_node["node"] == lost.name and gone_node["units_redone"] == 1
    assert f"node {lost.name} lost at {gone_node['lost_at']}; 1 unit(s) redone" in text
    assert all(n.containers() == [] for n in cluster.nodes if n is not lost)


def test_a_node_lost_mid_run_has_its_units_redone_on_the_other(cluster, local_runs, tmp_path):
    """Runs last (it kills node2): its raylet, Ray workers and engine are SIGKILLed while units run
    there; Ray resubmits them, node1 runs them, each unit ends with one final row."""
    out = tmp_path / "lost"
    ray = ["--executor", "ray", "--ray-address", cluster.address, "--workers", "4"]
    cmd = [sys.executable, "-m", "harness.cli", "run", str(DEMO), *AGENTS["replay"], "--out", str(out), *ray]
    log = tmp_path / "run.log"
    with open(log, "w") as fh:
        run = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, env=driver_env(cluster))
    node1, node2 = cluster.nodes
    try:
        deadline = time.monotonic() + 300
        while not node2.containers():  # a unit is running on node2
            assert run.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        cluster.kill_node(node2)
        code = run.wait(timeout=600)
    finally:
        if run.poll() is None:
            run.kill()
    text = log.read_text()
    assert code == 0, text[-3000:]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    final = [r for r in rows if not r.get("retried")]
    assert sorted(r["task_id"] for r in final) == sorted(
        json.loads(line)["task_id"] for line in (local_runs["replay"][0] / "results.jsonl").read_text().splitlines()
    )  # each unit exactly one final row
    local = {
        r["task_id"]: r for r in map(json.loads, (local_runs["replay"][0] / "results.jsonl").read_text().splitlines())
    }
    for row in final:
        assert (row["outcome"], row["resolved"]) == (
            local[row["task_id"]]["outcome"],
            local[row["task_id"]]["resolved"],
        )
    redone = {r["task_id"] for r in rows if r.get("retried")}
    assert all((r.get("failed_in") or {}).get("error_type") == "Abandoned" for r in rows if r.get("retried"))
    assert len(redone) == len([r for r in rows if r.get("retried")])  # each lost try recorded once
    assert node1.containers() == []
    manifest = json.loads((out / "manifest.json").read_text())
    (lost,) = manifest["executor"]["lost_nodes"]
    assert lost["node"] == "node2" and lost["units_redone"] >= 1  # a unit was running there
    assert f"node node2 lost at {lost['lost_at']}; {lost['units_redone']} unit(s) redone" in text
