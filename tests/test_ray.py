"""The Ray executor: units as Ray tasks on a real local cluster (`ray start --head`), results and
transcripts back in the one run folder, the same results as the local executor, and resume after
the driver is killed. The shipping of a task's inputs to a node is checked without Ray or Docker.

The cluster binds to loopback only (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 keeps Ray from swapping
127.0.0.1 for the machine's routable address), never reports usage statistics, and takes only
clients holding this test's own token.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
from dataclasses import replace
from pathlib import Path

import pytest
from support.fakellm import Call, FakeLLM, Reply, Tokens

from harness.agents import build_agent, get_agent
from harness.records import latest_rows, read_results
from harness.report.stats import config_stats, load_configs
from harness.run import Runner, RunOptions
from harness.run.executors import LocalExecutor
from harness.tasks import TaskSpecError, load_task, load_tasks
from harness.vocabulary import Outcome

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "tasks" / "demo"
RECORDINGS = DEMO / "recordings"
LOOPBACK_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


# ---------------------------------------------------------------------------- no Ray, no Docker


def test_ray_is_imported_only_when_the_ray_executor_is_asked_for():
    code = (
        "import sys, harness.cli, harness.run.runner, harness.run.executors; from harness.agents import get_agent; "
        "get_agent('gold'); print('ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "False", out.stderr


def test_an_agent_is_rebuilt_from_its_spec():
    for agent in (get_agent("gold"), get_agent("default", model=f"replay:{RECORDINGS}", settings={"temperature": 0.5})):
        again = build_agent(agent.spec)
        assert again.describe() == agent.describe()


class _FakeRay:
    """The two object-store calls shipping needs, in memory; counts what nodes fetch."""

    def __init__(self) -> None:
        self.fetched = 0

    def put(self, data: bytes):
        return ("ref", data)

    def get(self, ref, timeout=None):
        self.fetched += 1
        return ref[1]


@pytest.fixture
def fake_node(monkeypatch, tmp_path):
    """A 'node': its own wholeloop cache, and `import ray` giving the fake object store."""
    fake = _FakeRay()
    monkeypatch.setitem(sys.modules, "ray", types.SimpleNamespace(get=fake.get, put=fake.put))
    monkeypatch.setenv("WHOLELOOP_CACHE", str(tmp_path / "node-cache"))
    return fake


def test_a_task_is_shipped_whole_and_rebuilt_on_a_node(tiny_task, fake_node, tmp_path):
    from harness.run.executors.ray import _Shipper, _task_payload
    from harness.run.executors.ray_node import rebuild_task
    from sandbox.snapshot import find_commit

    task = load_task(tiny_task["spec"])
    payload = _task_payload(task, _Shipper(fake_node, 2**20))
    assert set(payload["files"]) == {"repo", "gold_patch_file", "hidden_tests.patch_file"}
    shipped = fake_node.fetched
    on_node = rebuild_task(payload, tmp_path / "unit-1")
    assert fake_node.fetched == shipped + 3
    assert on_node.gold() == task.gold() and on_node.test_patch() == task.test_patch()
    assert not on_node.repo_source().startswith(str(tiny_task["repo"]))  # a bundle in the node's cache
    _, commit = find_commit(on_node.repo_source(), task.base_commit)
    assert commit.hexsha == tiny_task["base"]
    again = rebuild_task(payload, tmp_path / "unit-2")  # a second unit on the node fetches nothing
    assert fake_node.fetched == shipped + 3 and again.repo_source() == on_node.repo_source()


def test_a_missing_input_fails_on_the_node_as_it_would_locally(tiny_task, fake_node, tmp_path):
    from harness.run.executors.ray import _Shipper, _task_payload
    from harness.run.executors.ray_node import rebuild_task

    (tiny_task["dir"] / "gold.diff").unlink()
    task = load_task(tiny_task["spec"])
    on_node = rebuild_task(_task_payload(task, _Shipper(fake_node, 2**20)), tmp_path / "unit")
    with pytest.raises(TaskSpecError, match="gold.diff"):
        on_node.gold()


def test_an_input_too_large_to_ship_stops_the_run_with_a_hint(tiny_task, fake_node):
    from harness.run.executors.ray import RayExecutorError, _Shipper, _task_payload

    with pytest.raises(RayExecutorError, match="repository.*more than") as info:
        _task_payload(load_task(tiny_task["spec"]), _Shipper(fake_node, 100))
    assert "WHOLELOOP_RAY_MAX_SHIP_MB" in info.value.hint


def test_a_replay_agent_is_rebuilt_on_a_node_with_the_tasks_recording(fake_node, tmp_path):
    from harness.run.executors.ray import _recording, _Shipper
    from harness.run.executors.ray_node import rebuild_agent

    model = f"replay:{RECORDINGS}"
    task_payload = {
        "recording": _recording(RECORDINGS, "inikit-001", _Shipper(fake_node, 2**20)),
        "replay_is_dir": True,
    }
    spec = RunOptions(out=tmp_path / "run").to_spec(get_agent("default", model=model).spec, [str(DEMO)])
    (tmp_path / "unit").mkdir()
    agent = rebuild_agent(spec, None, task_payload, "inikit-001", tmp_path / "unit")
    assert agent.model == model  # rows name the model as on the driver, not by the node's path
    assert len(agent.model_obj.for_task("inikit-001").turns) > 0


# ---------------------------------------------------------------------------- a real cluster


def test_a_run_assembled_in_code_ships_the_spec_its_options_come_from(tiny_task, fake_node, tmp_path):
    """A Runner made from tasks, an agent and options (no RunSpec) still ships a RunSpec, and the
    node's options made from it are the driver's (but for the one unit it runs, and where)."""
    from harness.run.executors.ray import _Shipper, unit_payloads
    from harness.run.executors.ray_node import rebuild_runner
    from harness.tasks import LimitsSpec

    options = RunOptions(
        out=tmp_path / "run",
        workers=3,
        repeats=2,
        attempts=2,
        feedback="visible",
        infra_retries=1,
        limits=LimitsSpec(memory="1g", cpus=1),
        label="mine",
        training_cutoff="2024-06",
    )
    task = load_task(tiny_task["spec"])
    runner = Runner([task], get_agent("noop"), options)
    [payload] = unit_payloads(runner.view, [(task, 1)], _Shipper(fake_node, 2**20))
    on_node, unit_runner = rebuild_runner(payload, tmp_path / "node")
    assert on_node.id == task.id and unit_runner.agent.spec == runner.agent.spec
    assert unit_runner.options == replace(options, out=tmp_path / "node" / "run", workers=1)
    assert unit_runner.label == runner.label == "mine"


def test_a_units_transcript_is_streamed_whole_lines_once_and_afresh_after_a_retry(tmp_path):
    from harness.run.executors.ray_node import LIVE_EVENT, ProgressBox, TranscriptStream

    box = ProgressBox()
    sender = types.SimpleNamespace(push=types.SimpleNamespace(remote=box.push))
    path = tmp_path / "transcript.jsonl"
    stream = TranscriptStream(sender, path, "t", 1)
    stream.flush()  # no transcript yet: nothing sent
    path.write_text('{"a": 1}\n{"b": ')  # a line being written is sent only when whole
    stream.flush()
    with open(path, "a") as fh:
        fh.write("2}\n")
    stream.flush()
    stream.flush()
    path.rename(tmp_path / "transcript.unfinished-1.jsonl")  # the node's own retry: a new file
    path.write_text('{"c": 3}\n')
    stream.flush()
    for n in range(1500):  # progress lines beyond the cap go; transcript lines stay
        box.push(("agent", "t", str(n)))
    batches = [json.loads(text) for event, _, text in box.drain() if event == LIVE_EVENT]
    assert [(b["fresh"], b["lines"]) for b in batches] == [
        (True, ['{"a": 1}']),
        (False, ['{"b": 2}']),
        (True, ['{"c": 3}']),
    ]
    assert len({b["try"] for b in batches}) == 1 and batches[0]["task"] == "t" and batches[0]["repeat"] == 1


def test_a_lost_tries_spend_is_kept_when_the_try_that_finished_streamed_nothing(tiny_task, tmp_path):
    """Try A streamed a model call, then its node died; Ray's redo (try B) finished before it
    streamed a line. B's rows replace the unit's live copy, so A's spend must be recorded first.
    Before: A's live copy was dropped with B's rows and its call never counted."""
    from harness.run.executors.ray import RayExecutor
    from harness.transcript import AttemptStart, ModelResponse, TranscriptWriter

    task = load_task(tiny_task["spec"])
    view = Runner([task], get_agent("noop"), RunOptions(out=tmp_path / "run")).view
    written = tmp_path / "try-a.jsonl"
    with TranscriptWriter(written) as transcript:
        transcript.write(AttemptStart(task_id=task.id, attempt=1))
        transcript.write(ModelResponse(step=1, usage={"input_tokens": 1000, "output_tokens": 50}, cost_usd=0.25))
    executor = RayExecutor.__new__(RayExecutor)  # no cluster: only its bookkeeping of tries
    executor._tries, executor._open = {}, {(task.id, 0)}
    batch = {"task": task.id, "repeat": 0, "try": "A", "fresh": True, "lines": written.read_text().splitlines()}
    executor._stream(view, {task.id: task}, batch)
    executor._settle(view, task, 0, "A")  # the try that streamed is the one that finished: nothing lost
    assert read_results(tmp_path / "run" / "results.jsonl") == []
    executor._stream(view, {task.id: task}, batch)
    executor._settle(view, task, 0, "B")
    (gone,) = read_results(tmp_path / "run" / "results.jsonl")
    assert gone.retried and gone.model_calls == 1 and gone.cost_usd == pytest.approx(0.25)
    executor._settle(view, task, 0, "B")  # recorded once
    assert len(read_results(tmp_path / "run" / "results.jsonl")) == 1


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def ray_cluster():
    """`ray start --head` on loopback, 2 CPUs, in its own session; stopped (that session only) after."""
    with _ray_head("--num-cpus=2") as address:
        yield address


@contextlib.contextmanager
def _ray_head(*declared: str):
    """A Ray head on loopback declaring `declared` (its CPUs, memory, resources): its address."""
    if importlib.util.find_spec("ray") is None:  # not imported here: Ray reads LOOPBACK_ENV on import
        if os.environ.get("CI"):
            pytest.fail("CI needs the ray extra (pip install -e '.[test,ray]'; scripts/setup.sh does it)")
        pytest.skip("ray is not installed (pip install -e '.[ray]')")
    port = _free_port()
    temp = Path(tempfile.mkdtemp(prefix="wlray-", dir="/tmp"))  # short: Ray's socket paths must stay short
    log = open(temp / "start.log", "w")
    # Token authentication with a token of this test's own (not ~/.ray/auth_token, whatever is there).
    cluster_env = {**LOOPBACK_ENV, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    cluster_env["OPENAI_API_KEY"] = "sk-ray-test-not-a-key"  # the nodes' agents call the tests' local fake model
    env = {**os.environ, **cluster_env}
    env.pop("RAY_ADDRESS", None)
    ray_bin = Path(sys.executable).with_name("ray")
    proc = subprocess.Popen(
        [
            str(ray_bin),
            "start",
            "--head",
            "--block",
            f"--port={port}",
            *declared,
            "--disable-usage-stats",
            "--include-dashboard=false",
            f"--temp-dir={temp}",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    patch = pytest.MonkeyPatch()
    try:
        deadline = time.monotonic() + 90
        while "Ray runtime started" not in (temp / "start.log").read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("ray start --head failed:\n" + (temp / "start.log").read_text()[-3000:])
            time.sleep(0.3)
        for key, value in cluster_env.items():
            patch.setenv(key, value)
        patch.delenv("RAY_ADDRESS", raising=False)
        if "ray._private.ray_constants" in sys.modules:  # imported before: its reading of the env is stale
            patch.setattr(sys.modules["ray._private.ray_constants"], "ENABLE_RAY_CLUSTER", False)
        yield f"127.0.0.1:{port}"
    finally:
        patch.undo()
        proc.send_signal(signal.SIGTERM)  # the head drains and stops its own processes
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # anything of that session still running
        except ProcessLookupError:
            pass
        proc.wait()
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture(scope="module")
def local_demo(tmp_path_factory):
    """The demo suite on the replayed model with the local executor: the results to match."""
    out = tmp_path_factory.mktemp("local") / "local-demo"
    agent = get_agent("default", model=f"replay:{RECORDINGS}")
    rows = Runner(load_tasks([DEMO]), agent, RunOptions(out=out, workers=2), executor=LocalExecutor(2)).run()
    for row in rows:
        row.run_dir = out  # where its files are
    return {r.task_id: r for r in rows}


def _summary(row):
    return (row.outcome, row.resolved, row.stop_reason, row.steps, row.model_calls, row.tests)


def _our_containers(run_id: str) -> list[dict]:
    """The run's containers, in one engine call (no per-container look-up racing their removal)."""
    from sandbox.docker.engine import client

    return client().api.containers(all=True, filters={"label": f"wholeloop.run={run_id}"})


@pytest.mark.docker
@pytest.mark.slow  # about 40 s: a Ray cluster and the demo suite run twice (the first user of both fixtures)
@pytest.mark.timeout(300)
def test_ray_runs_the_demo_suite_with_the_results_of_the_local_executor(ray_cluster, local_demo, tmp_path):
    from harness.run.executors.ray import RayExecutor

    out = tmp_path / "ray-demo"
    events = []
    agent = get_agent("default", model=f"replay:{RECORDINGS}")
    runner = Runner(
        load_tasks([DEMO]),
        agent,
        RunOptions(out=out),
        progress=lambda *e: events.append(e),
        executor=RayExecutor(ray_cluster),
    )
    rows = {r.task_id: r for r in runner.run()}
    assert {k: _summary(r) for k, r in rows.items()} == {k: _summary(r) for k, r in local_demo.items()}
    assert sum(r.resolved for r in rows.values()) == 5  # the demo recordings: 5 of 7 resolved
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == len(rows) == 7  # each row appended once, by the driver
    for row in rows.values():
        assert row.task_hash == local_demo[row.task_id].task_hash and row.node == socket.gethostname()
        local = local_demo[row.task_id]
        assert (out / row.patch_path).read_text() == (local.run_dir / local.patch_path).read_text()
        events_on_disk = [json.loads(line)["type"] for line in (out / row.transcript_path).read_text().splitlines()]
        assert events_on_disk[0] == "phase" and "grade" in events_on_disk
        assert (out / row.dir / "grade.json").is_file() and (out / row.dir / "test_output.txt").is_file()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["executor"]["kind"] == "ray" and set(manifest["images"]) == set(rows)
    relayed = [text for event, unit, text in events if event == "start"]
    assert relayed and all(text.endswith(f"on {socket.gethostname()}") for text in relayed)
    assert any(event == "agent" for event, *_ in events)  # the nodes' live progress reached the driver
    assert not _our_containers(out.name)
    plain = RayExecutor(ray_cluster)  # the Executor protocol: any function importable on the nodes
    try:
        assert sorted(plain.map(json.dumps, [1, [2]])) == ["1", "[2]"]
    finally:
        plain.shutdown(cancel=False)


@pytest.mark.docker
@pytest.mark.slow  # about 30 s: a Ray run killed midway and resumed
@pytest.mark.timeout(300)
def test_a_ray_run_killed_midway_resumes_without_redoing_finished_units(ray_cluster, local_demo, tmp_path):
    out = tmp_path / "ray-killed"
    cmd = [
        sys.executable,
        "-m",
        "harness.cli",
        "run",
        str(DEMO),
        "--model",
        f"replay:{RECORDINGS}",
        "--out",
        str(out),
        "--executor",
        "ray",
        "--ray-address",
        ray_cluster,
    ]
    log = tmp_path / "first.log"
    with open(log, "w") as fh:
        first = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    results = out / "results.jsonl"
    deadline = time.monotonic() + 150
    while len(read_results(results)) < 2:
        assert first.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)
    # the Ray driver holds the run folder: a second run into it (any executor) is refused at once,
    # naming the driver (it did not wait for the lock)
    rival = subprocess.run([*cmd[: cmd.index("--executor")]], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert rival.returncode == 2, rival.stdout[-2000:] + rival.stderr[-2000:]
    assert "another wholeloop run" in rival.stderr and f"pid {first.pid}" in rival.stderr, rival.stderr
    first.kill()  # SIGKILL: no clean-up of any kind in the driver
    first.wait()
    before = read_results(results)
    assert 2 <= len(before) < 7
    _wait_for_owners_to_die(out.name)  # Ray stops the dead driver's units; their containers are then pruned

    second = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert f"{7 - len(before)} to run, {len(before)} already done" in second.stdout
    after = read_results(results)
    assert after[: len(before)] == before  # finished units untouched, never redone
    # the units in flight when the driver died: each an abandoned try (with what it had spent), once
    abandoned = [r for r in after if r.retried]
    assert all((r.failed_in or {}).get("error_type") == "Abandoned" and r.model_calls for r in abandoned)
    assert len({r.task_id for r in abandoned}) == len(abandoned) and not {r.task_id for r in abandoned} & {
        r.task_id for r in before
    }
    after = [r for r in after if not r.retried]
    assert len(after) == 7 and len({r.task_id for r in after}) == 7 and all(r.final for r in after)
    assert {r.task_id: _summary(r) for r in after} == {k: _summary(r) for k, r in local_demo.items()}
    for row in after:
        assert (out / row.transcript_path).is_file() and (out / row.patch_path).is_file()
    assert not _our_containers(out.name)
    orphans = [
        p
        for p in Path(tempfile.gettempdir()).glob("wholeloop-ray-*")  # the killed units' folders
        if not Path(f"/proc/{p.name.split('-')[2]}").exists()
    ]
    assert not orphans


@pytest.mark.docker
@pytest.mark.slow  # about 40 s: a Ray driver killed mid-attempt, resumed twice, on the tiny task
@pytest.mark.timeout(400)
def test_a_ray_driver_killed_mid_attempt_keeps_the_attempts_spend_once(ray_cluster, tiny_task, tmp_path):
    """The node streams each model call to the driver as it happens: a driver killed -9 after the
    first call leaves a live copy, which the resume records once as an abandoned try with its spend.
    Before: the node's temporary folder went with its unit and the call was never counted."""
    seen, hold = threading.Event(), threading.Event()

    def respond(req):
        session = req.path.split("/")[1]
        turns = sum(m.get("role") == "assistant" for m in req.body.get("messages", []))
        if session == "s1":
            if turns == 0:
                return Reply(calls=[Call("bash", {"command": "ls"})], usage=Tokens(1000, 50))
            seen.set()  # the second call is in flight
            hold.wait(120)
            return Reply(text="too late", usage=Tokens(1, 1))
        return Reply(text="I give up", usage=Tokens(10, 2))  # the resumed sessions: one call, no patch

    out = tmp_path / "run"

    def launch(n: int, url: str) -> subprocess.Popen:
        cmd = [sys.executable, "-m", "harness.cli", "run", str(tiny_task["dir"]), "--model", "openai/gpt-4o"]
        cmd += ["--base-url", f"{url}/s{n}/v1", "--out", str(out), "--executor", "ray", "--ray-address", ray_cluster]
        log = open(tmp_path / f"s{n}.log", "w")
        return subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    with FakeLLM(responder=respond) as srv:
        first = launch(1, srv.base_url)
        try:
            assert seen.wait(300), (tmp_path / "s1.log").read_text()[-3000:]
            deadline = time.monotonic() + 60  # the first call's usage reaches the driver's run folder
            while not any('"model_response"' in p.read_text() for p in out.rglob("transcript.live.jsonl")):
                assert time.monotonic() < deadline, (tmp_path / "s1.log").read_text()[-3000:]
                time.sleep(0.2)
        finally:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
            hold.set()
        _wait_for_owners_to_die(out.name)
        assert launch(2, srv.base_url).wait(300) == 0, (tmp_path / "s2.log").read_text()[-3000:]
        assert launch(3, srv.base_url).wait(300) == 0  # nothing left to do: nothing billed again
    rows = read_results(out / "results.jsonl")
    abandoned = [r for r in rows if r.retried]
    assert len(abandoned) == 1, [r.model_dump() for r in rows]
    gone = abandoned[0]
    assert not gone.final and gone.attempt == 1 and gone.model_calls == 1
    assert gone.usage.input_tokens == 1000 and gone.usage.output_tokens == 50 and (gone.cost_usd or 0) > 0
    assert (out / gone.transcript_path).name.startswith("transcript.unfinished-")
    final = [r for r in latest_rows(rows) if r.final]
    assert len(final) == 1 and final[0].model_calls == 1
    stats = config_stats(load_configs([out])[0])
    assert stats.retried_tries == 1 and stats.total_cost_usd == pytest.approx(gone.cost_usd + final[0].cost_usd)
    assert not list(out.rglob("transcript.live.jsonl"))


# The CLI, with the node side of every unit replaced by one whose Ray worker dies on each try (as
# it does when its node is lost): defined in __main__, so Ray ships it by value to the workers.
DYING_NODE = r"""
import os, signal, sys
import harness.run.executors.ray as executor

TRIES = sys.argv[1]

def unit_on_a_lost_node(payload):
    with open(TRIES, "a") as fh:
        fh.write(f"{payload['task']['task']['id']} {payload['repeat']}\n")
    os.kill(os.getpid(), signal.SIGKILL)

executor.run_unit = unit_on_a_lost_node
sys.argv = ["wholeloop", *sys.argv[2:]]
from harness.cli import main
main()
"""


@pytest.mark.slow  # 20-80 s by load: a CLI run on the Ray cluster, each unit's worker killed 1 + infra_retries times
@pytest.mark.timeout(300)
def test_a_ray_run_whose_units_all_die_after_their_retries_exits_3(ray_cluster, tiny_task, tmp_path):
    """Every try of every unit loses its Ray worker (as with its node): Ray retries each unit
    infra_retries times, then the unit ends as infra_error and the run exits 3, as a local run
    whose units end in infrastructure errors does."""
    tries, out = tmp_path / "tries.txt", tmp_path / "run"
    run = [sys.executable, "-c", DYING_NODE, str(tries), "run", str(tiny_task["spec"]), "--agent", "noop"]
    run += ["--repeats", "2", "--infra-retries", "1", "--out", str(out), "--no-history"]
    run += ["--executor", "ray", "--ray-address", ray_cluster]
    proc = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 3, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "2 unit(s) ended in infrastructure errors" in proc.stdout and "exit 3" in proc.stdout
    task_id = load_task(tiny_task["spec"]).id
    assert sorted(tries.read_text().splitlines()) == [f"{task_id} 0"] * 2 + [f"{task_id} 1"] * 2  # 1 + 1 retry each
    final = [r for r in read_results(out / "results.jsonl") if r.final]
    assert sorted(r.repeat for r in final) == [0, 1]
    assert all(r.outcome == Outcome.infra_error and "ray: " in (r.error or "") for r in final), final


def test_a_units_reservation_is_its_cpus_its_containers_memory_and_the_nodes_container_cap(tiny_task, tmp_path):
    from harness.run.executors.ray import CONTAINERS, RayExecutor, RayExecutorError, check_fits
    from harness.tasks import LimitsSpec

    task = load_task(tiny_task["spec"])
    executor = RayExecutor.__new__(RayExecutor)  # no cluster: only its reservations
    executor.unit_cpus, executor.unit_memory = 1.0, None
    for attempts, limit, containers in ((1, "1g", 1), (2, "512m", 2)):
        options = RunOptions(out=tmp_path / "run", attempts=attempts, limits=LimitsSpec(memory=limit))
        view = Runner([task], get_agent("noop"), options).view
        need = executor.reservation(view, task, capped=True)
        one = 2**30 if limit == "1g" else 2**29
        assert need == {"num_cpus": 1.0, "memory": one * containers, "resources": {CONTAINERS: containers}}
        assert "resources" not in executor.reservation(view, task, capped=False)  # no node caps: none asked
    executor.unit_memory = 0  # WHOLELOOP_RAY_UNIT_MEMORY_MB=0: no memory reserved
    assert executor.reservation(view, task, capped=False) == {"num_cpus": 1.0}
    node = {"host": "n1", "cpus": 4, "memory": 6 * 2**30, "containers": 2}
    check_fits([node], {"num_cpus": 1, "memory": 6 * 2**30, "resources": {CONTAINERS: 2}})
    for need in ({"num_cpus": 5}, {"num_cpus": 1, "memory": 7 * 2**30}, {"num_cpus": 1, "resources": {CONTAINERS: 3}}):
        with pytest.raises(RayExecutorError, match="no node of the Ray cluster can run a unit") as info:
            check_fits([node, {**node, "host": "n2", "containers": None}], need)
        assert "--memory" in info.value.hint and CONTAINERS in info.value.hint


def _most_at_once(rows) -> int:
    """The most units whose [started_at, finished_at] overlapped at one moment."""
    from datetime import datetime

    edges = sorted(
        (datetime.fromisoformat(getattr(r, edge)), +1 if edge == "started_at" else -1)
        for r in rows
        for edge in ("started_at", "finished_at")
    )  # at one instant an end sorts before a start
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


@pytest.mark.docker
@pytest.mark.slow  # about 90 s: a Ray head with a budget, four units capped at two, then one at a time
@pytest.mark.timeout(600)
def test_the_scheduler_keeps_a_nodes_container_cap_and_memory_budget(tmp_path):
    """A node declaring 4 CPUs, 6 GiB and 2 containers: units of 1 GiB run at most 2 at once (the
    cap; its CPUs would take 4), units of 4 GiB one at a time (the memory), and units of 8 GiB
    no node can ever hold are refused before anything runs (exit 2, with a hint). Before: 4 at
    once, and an 8 GiB unit ran."""
    tasks = [str(DEMO / f"inikit-00{n}.yaml") for n in range(1, 5)]
    budget = ["--num-cpus=4", f"--memory={6 * 2**30}", '--resources={"wholeloop_containers": 2}']
    with _ray_head(*budget) as address:

        def run(name: str, memory: str) -> subprocess.CompletedProcess:
            cmd = [sys.executable, "-m", "harness.cli", "run", *tasks, "--agent", "noop", "--memory", memory]
            cmd += ["--out", str(tmp_path / name), "--no-history", "--executor", "ray", "--ray-address", address]
            return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=400)

        for name, memory, most in (("capped", "1g", 2), ("budget", "4g", 1)):
            proc = run(name, memory)
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
            rows = [r for r in read_results(tmp_path / name / "results.jsonl") if r.final]
            assert len(rows) == 4 and all(r.outcome != Outcome.infra_error for r in rows)
            assert _most_at_once(rows) <= most, [(r.started_at, r.finished_at) for r in rows]
            executor = json.loads((tmp_path / name / "manifest.json").read_text())["executor"]
            assert executor["nodes"][0]["containers"] == 2
        refused = run("too-big", "8g")
        assert refused.returncode == 2, refused.stdout[-3000:] + refused.stderr[-3000:]
        assert "no node of the Ray cluster can run a unit that reserves 1 CPU, 8.0 GiB" in refused.stderr
        assert not read_results(tmp_path / "too-big" / "results.jsonl")


def _wait_for_owners_to_die(run_id: str, timeout: float = 30) -> None:
    """Until no container of the run belongs to a live process (Ray kills a dead driver's workers)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = []
        for container in _our_containers(run_id):
            pid = (container.get("Labels") or {}).get("wholeloop.owner", ":").partition(":")[2]
            if pid.isdigit() and Path(f"/proc/{pid}").exists():
                alive.append(pid)
        if not alive:
            return
        time.sleep(0.5)


@pytest.mark.docker
@pytest.mark.slow  # about a minute: a sweep of two cells on the local Ray cluster, killed and resumed
@pytest.mark.timeout(400)
def test_a_sweep_runs_its_cells_on_ray_and_a_killed_one_resumes_with_no_unit_twice(ray_cluster, tmp_path):
    """`wholeloop sweep --executor ray`: each cell's units go through the Ray executor (the rows come
    back to the driver, each cell's manifest records the cluster); the driver SIGKILLed after some
    units, the same command again finishes the sweep and no unit has two final rows."""
    tasks = [DEMO / "inikit-001.yaml", DEMO / "inikit-002.yaml"]
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(
        f"name: on-ray\nsuite: {{paths: [{tasks[0]}, {tasks[1]}]}}\nbase: {{history: {{enabled: false}}}}\n"
        f"matrix: {{agent.name: [gold, noop]}}\nworkers: 2\nout: {tmp_path / 'sweep'}\n"
    )
    cmd = [sys.executable, "-m", "harness.cli", "sweep", str(sweep_file), "--executor", "ray"]
    cmd += ["--ray-address", ray_cluster]
    cells = tmp_path / "sweep" / "cells"
    log = tmp_path / "first.log"
    with open(log, "w") as fh:
        first = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 200

    def finals() -> list:
        return [r for f in sorted(cells.glob("*/results.jsonl")) for r in read_results(f) if r.final and not r.retried]

    while len(finals()) < 1:
        assert first.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)
    first.kill()  # SIGKILL: no clean-up in the driver
    first.wait()
    before = finals()
    assert 1 <= len(before) < 4, log.read_text()[-3000:]
    for cell in cells.iterdir():
        _wait_for_owners_to_die(cell.name)
    second = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    after = finals()
    units = [(r.config, r.task_id, r.repeat) for r in after]
    assert len(units) == len(set(units)) == 4  # every unit once
    assert {tuple(u) for u in units} >= {(r.config, r.task_id, r.repeat) for r in before}
    outcomes = {(r.config, r.task_id): r.outcome for r in after}
    assert outcomes == {
        ("name=gold", "inikit-001"): Outcome.resolved,
        ("name=gold", "inikit-002"): Outcome.resolved,
        ("name=noop", "inikit-001"): Outcome.empty_patch,
        ("name=noop", "inikit-002"): Outcome.empty_patch,
    }
    assert all((r.model_extra or {}).get("node") == socket.gethostname() for r in after)  # run by a Ray node
    for cell in ("name_gold", "name_noop"):
        manifest = json.loads((cells / cell / "manifest.json").read_text())
        assert manifest["executor"]["kind"] == "ray", manifest.get("executor")
        assert manifest["recipe"]["executor"]["kind"] == "ray"
    record = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert record["status"] == "finished" and all(c["status"] == "finished" for c in record["cells"])


@pytest.mark.slow  # a few seconds: connects to the module's Ray head
def test_a_sweeps_sibling_executors_ship_each_input_once(ray_cluster, tiny_task, tmp_path):
    """A sweep's worker threads each run units through a sibling executor; their inputs (the
    repository bundle, the patches, the images) go into the object store once, not once a unit."""
    from harness.run.executors.ray import RayExecutor, unit_payloads

    parent = RayExecutor(ray_cluster)
    try:
        a, b = parent.sibling(), parent.sibling()
        assert a.shipping is not None and a.shipping is b.shipping
        task = load_task(tiny_task["spec"])
        runner = Runner([task], get_agent("gold"), RunOptions(out=tmp_path / "run"))
        shipper = a.shipping[0]
        unit_payloads(runner.view, [(task, 0)], shipper)
        first = shipper.put_items
        assert first >= 3  # the repository, the gold patch, the test patch
        unit_payloads(runner.view, [(task, 1)], b.shipping[0])  # another thread's unit of the same task
        assert shipper.put_items == first
    finally:
        parent.shutdown(cancel=False)
