"""Nothing lost, nothing billed twice: `wholeloop run` killed with SIGKILL at random moments (mid
model call, mid grading, mid write) a dozen times, stopped once with Ctrl-C, and resumed each time
by running the same command into the same run folder.

Set-up: six copies of the tiny task (kr-1 .. kr-6, one repository, one image), `--workers 2
--attempts 2`. A fake OpenAI-compatible server answers by task (its id is in the problem statement)
and by step (the number of assistant turns in the conversation) with a scripted tool-call sequence,
each call taking 0.3-0.8 s: odd tasks resolve at attempt 1; even ones submit a wrong patch first
(a non-final row) and resolve at attempt 2. Each session of the runner gets its own URL prefix
(/s<n>/v1), so every request says which process sent it, whatever its timing.

What "exactly one final row" means. The unit of resume is (task, config, repeat): `pending()` skips
a unit with a final row and redoes any other one from its first attempt (its container and its
conversation died with the process). Hence, asserted here:
- a finished unit (one with a final row) is never redone: exactly one final row for it in the
  *file* (not only among `latest_rows`), no row for it after that one, its transcript and grade
  untouched by later sessions, and no model request for it from any later session;
- its final attempt was billed once: in the session that wrote the final row, the unit's requests
  equal the `model_calls` of the rows that session wrote for it (attempts 1..k, in order);
- an unfinished unit may leave non-final rows (attempt 1 of a two-attempt task); its redo writes
  attempts 1..k again and supersedes them: `latest_rows` shows the redo only. The model calls of
  those earlier attempts are made again: resume is per unit, not per attempt (the summary line
  counts them);
- the file never holds an invalid line; a torn last line (injected once, as a crash mid-append
  would leave it: one write() of a line cannot be torn by SIGKILL, only by a power cut or a full
  disk) is skipped by the reader and cut by the next session before it appends; transcripts of
  finished units end with their `grade` event (a torn transcript tail, injected too, still reads);
- containers left by a killed session (agent ones paused mid-grading included) are pruned by the
  next session, which never touches a live process's containers; after the last session none of
  the run's remain;
- Ctrl-C (SIGINT to the process group, as a terminal sends it) in a first model call exits 130
  within a bound, with every line valid, no row for the interrupted units, their transcripts ending
  in `stop: interrupted`, and no container left (it cleans up itself); a later session finishes them.

The seed, the plan and a log of every kill (when, what was in flight, what it left) are printed;
reproduce the plan with WHOLELOOP_KILL_SEED=<seed>.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest
from support.fakellm import Call, Error, FakeLLM, Reply, Tokens

from harness.records import ResultRow, latest_rows, read_results
from harness.transcript import read_transcript

ROOT = Path(__file__).resolve().parent.parent
N_TASKS, WORKERS, ATTEMPTS = 6, 2, 2
KILLS = 12  # SIGKILLs; the issue asks for at least 10
CONFIG = "kr"
DELAY_S = (0.3, 0.8)  # per model call
SIGINT_EXIT_BOUND_S = 30.0
TRIGGER_TIMEOUT_S = 45.0
BASE_IMAGE = "wholeloop/base:bookworm"


def _edit(old: str, new: str) -> dict:
    return {"command": "str_replace", "path": "calc/__init__.py", "old_str": old, "new_str": new}


VIEW = ("edit", {"command": "view", "path": "calc/__init__.py"})
CHECK = ("bash", {"command": "python -c 'from calc import add; print(add(2, 3))'"})
FIX = ("edit", _edit("return a - b", "return a + b"))
WRONG = ("edit", _edit("return a * b", "return b * a"))  # harmless and useless: unresolved
TESTS = ("run_tests", {})
SUBMIT = ("submit", {})
ONE_ATTEMPT = [VIEW, CHECK, FIX, TESTS, SUBMIT]
TWO_ATTEMPTS = [WRONG, SUBMIT, FIX, SUBMIT]  # steps 0-1: attempt 1, steps 2-3: attempt 2

TASK_IDS = [f"kr-{i}" for i in range(1, N_TASKS + 1)]
SCRIPTS = {t: ONE_ATTEMPT if i % 2 else TWO_ATTEMPTS for i, t in enumerate(TASK_IDS, 1)}
FINAL_ATTEMPT = {t: 1 if SCRIPTS[t] is ONE_ATTEMPT else 2 for t in TASK_IDS}


def attempt_of(unit: str, step: int) -> int:
    return 1 if SCRIPTS[unit] is ONE_ATTEMPT or step < 2 else 2


# ---------------------------------------------------------------------------- the fake provider


@dataclass
class ModelCall:
    session: int
    unit: str
    step: int
    start: float  # wall clock
    end: float | None = None  # when the answer was ready (None: still thinking)


class Provider:
    """Answers by (task, step) after a per-call delay; remembers every call and which session sent it."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.calls: list[ModelCall] = []
        self.lock = threading.Lock()

    def __call__(self, req) -> Reply | Error:
        match = re.match(r"/s(\d+)/", req.path)
        messages = req.body.get("messages", []) if isinstance(req.body, dict) else []
        unit = re.search(r"\[unit (kr-\d+)\]", json.dumps(messages))
        if not match or not unit:
            return Error(418, f"fakellm: cannot tell the session or task of {req.path}")
        step = sum(1 for m in messages if m.get("role") == "assistant")
        call = ModelCall(int(match.group(1)), unit.group(1), step, req.received)
        with self.lock:
            self.calls.append(call)
        time.sleep(random.Random(f"{self.seed}:{call.unit}:{step}").uniform(*DELAY_S))
        call.end = time.time()
        script = SCRIPTS[call.unit]
        if step >= len(script):
            return Error(418, f"fakellm: {call.unit} has no step {step}")
        name, args = script[step]
        return Reply(
            calls=[Call(name, args, id=f"call_{call.unit}_{step}")], usage=Tokens(input=300 + 40 * step, output=25)
        )

    def of(self, session: int) -> list[ModelCall]:
        with self.lock:
            return [c for c in self.calls if c.session == session]

    def in_flight(self, session: int, at: float) -> list[ModelCall]:
        return [c for c in self.of(session) if c.start <= at and (c.end is None or c.end > at)]


# ---------------------------------------------------------------------------- the run folder


def results_rows(path: Path, allowed_tail: bytes = b"") -> list[ResultRow]:
    """Every row of results.jsonl, asserting each complete line is a valid row and that the bytes
    after the last newline are nothing (or, before a session repaired it, the tail we injected)."""
    data = path.read_bytes() if path.exists() else b""
    *lines, tail = data.split(b"\n")
    assert tail in (b"", allowed_tail), f"torn last line in results.jsonl: {tail[:120]!r}"
    rows = []
    for i, line in enumerate(lines, 1):
        try:
            rows.append(ResultRow.model_validate_json(line))
        except Exception as exc:  # noqa: BLE001 - the assertion says which line
            raise AssertionError(f"results.jsonl line {i} is not a valid row: {line[:200]!r}: {exc}") from exc
    assert [r.model_dump() for r in read_results(path)] == [r.model_dump() for r in rows]
    return rows


def finals(rows: list[ResultRow]) -> dict[str, ResultRow]:
    out: dict[str, ResultRow] = {}
    for row in rows:
        if row.final:
            assert row.task_id not in out, (
                f"two final rows for {row.task_id}: attempts {out[row.task_id].attempt}, {row.attempt}"
            )
            out[row.task_id] = row
    return out


def digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()


def run_containers(run_name: str, pid: int | None = None) -> list[dict]:
    """The run's containers (only those made by process `pid`, when given), as the engine lists
    them: one call, no inspection of each (a container may be removed meanwhile)."""
    from sandbox.docker.engine import client

    found = client().api.containers(all=True, filters={"label": f"wholeloop.run={run_name}"})
    return [c for c in found if pid is None or (c.get("Labels") or {}).get("wholeloop.owner", "").endswith(f":{pid}")]


def _role(c: dict) -> str:
    return (c.get("Labels") or {}).get("wholeloop.role", "")


def _cname(c: dict) -> str:
    return (c.get("Names") or [c["Id"]])[0].lstrip("/")


def fresh_grade_files(out: Path, since: float) -> list[Path]:
    """test_output.txt files written since `since` (grading is over; the row is being written)."""
    found = []
    for path in (out / "attempts").glob(f"*/{CONFIG}/rep-0/attempt-*/test_output.txt"):
        try:
            if path.stat().st_mtime >= since:
                found.append(path)
        except FileNotFoundError:
            pass
    return found


@dataclass
class Session:
    n: int
    kind: str  # kill | sigint | final
    target: str = ""
    done_before: set[str] = field(default_factory=set)
    rows_before: int = 0
    started: float = 0.0
    signal_at: float = 0.0
    rc: int | None = None
    pid: int = 0
    new_rows: list[ResultRow] = field(default_factory=list)
    landed: list[str] = field(default_factory=list)
    note: str = ""


# ---------------------------------------------------------------------------- the test


def test_records_of_a_redone_unit_supersede_the_killed_try():
    """A redo of an unfinished unit supersedes *all* rows of the killed try, not only those whose
    attempt number it reaches again (a redo may end earlier: a real model is not deterministic)."""

    def row(attempt, final, outcome):
        return ResultRow(
            run_id="r",
            task_id="t",
            task_hash="h",
            config="c",
            agent="a",
            attempt=attempt,
            final=final,
            outcome=outcome,
            resolved=outcome == "resolved",
        )

    killed_try = [row(1, False, "unresolved"), row(2, False, "unresolved")]  # killed in attempt 3
    redo = [row(1, True, "resolved")]
    other = ResultRow(run_id="r", task_id="u", task_hash="h", config="c", agent="a", outcome="resolved", resolved=True)
    latest = latest_rows([*killed_try, other, *redo])
    assert sorted((r.task_id, r.attempt, r.final, r.outcome) for r in latest) == [
        ("t", 1, True, "resolved"),
        ("u", 1, True, "resolved"),
    ]


@pytest.mark.docker
@pytest.mark.parametrize("vanishes", ["before inspection", "before removal"])
def test_pruning_at_start_survives_a_container_that_vanishes_meanwhile(vanishes, monkeypatch):
    """The prune a resumed run starts with lists containers, inspects each and removes those of dead
    owners. Another actor may remove one meanwhile (its live owner closing it, another run's prune,
    the engine finishing a removal a killed run asked for): the prune must go on with the others,
    not give up (the runner swallows the error and leaves every leftover in place).
    Real engine, real containers; only the moment of the other actor's removal is staged."""
    from docker.models.containers import ContainerCollection

    from sandbox.docker.engine import client, prune_containers

    cli = client()
    dead = subprocess.Popen(["true"])
    dead.wait()
    labels = {
        "wholeloop": "1",
        "wholeloop.role": "agent",
        "wholeloop.owner": f"{socket.gethostname()}:{dead.pid}",
        "wholeloop.run": f"kr-prune-{os.getpid()}",
    }
    gone, left = (cli.containers.create(BASE_IMAGE, ["sleep", "600"], labels=labels) for _ in range(2))
    try:
        if vanishes == "before inspection":
            real_listing = cli.api.containers

            def listing(*args, **kwargs):
                found = real_listing(*args, **kwargs)
                cli.api.remove_container(gone.id, force=True)
                return found

            monkeypatch.setattr(cli.api, "containers", listing)
        else:
            real_list = ContainerCollection.list

            def list_then_remove(self, *args, **kwargs):
                found = real_list(self, *args, **kwargs)
                cli.api.remove_container(gone.id, force=True)
                return found

            monkeypatch.setattr(ContainerCollection, "list", list_then_remove)
        report = prune_containers()
        monkeypatch.undo()
        assert left.name in report.removed and not _exists(left.id)
    finally:
        monkeypatch.undo()
        _remove([gone.id, left.id])


@pytest.mark.docker
@pytest.mark.slow  # about 80 s: sessions of a run killed at random moments, then resumed
@pytest.mark.timeout(420)
def test_sigkill_at_random_moments_then_resume_loses_nothing_and_bills_nothing_twice(tiny_task, tmp_path):
    seed = int(os.environ.get("WHOLELOOP_KILL_SEED") or random.SystemRandom().randrange(1, 2**31))
    rng = random.Random(seed)
    print(f"\nkill-resume seed {seed} (reproduce the plan with WHOLELOOP_KILL_SEED={seed})")
    wall0 = time.monotonic()

    # six tasks on one repository: the specs differ in id and problem statement only
    spec_dir = tiny_task["dir"]
    template = tiny_task["spec"].read_text()
    tiny_task["spec"].unlink()
    for tid in TASK_IDS:
        text = template.replace("id: tiny-001", f"id: {tid}").replace(
            "problem_statement: add() subtracts instead of adding.",
            f"problem_statement: 'add() subtracts instead of adding. [unit {tid}]'",
        )
        assert f"[unit {tid}]" in text
        (spec_dir / f"{tid}.yaml").write_text(text)
    out = tmp_path / f"kr-run-{seed}-{os.getpid()}"  # its name labels the run's containers: unique on the host
    run_name = out.name

    _warm_images(spec_dir / f"{TASK_IDS[0]}.yaml", tmp_path / "warm")

    # decoys for the pruning at start: one owned by a live process (this one), one by a dead one
    decoys = _make_decoys(run_name)
    provider = Provider(seed)
    # model: mid the k-th model call of the session; grading: mid the j-th grading; write: between
    # the grade files and the row; row: just after a row was appended; timer: any time
    plan = ["model"] * 3 + ["grading"] * 3 + ["write"] * 2 + ["row"] * 2 + ["timer"] * 2
    rng.shuffle(plan)
    assert len(plan) == KILLS
    sigint_after = KILLS // 2  # the Ctrl-C session sits between the kills, so a resume follows it too
    print(f"plan: {plan[:sigint_after]} + SIGINT + {plan[sigint_after:]} + final resume")

    sessions: list[Session] = []
    first_final_digest: dict[str, str] = {}
    injected_tail, repaired_by = b"", 0  # a torn last line we put in results.jsonl; the session that cut it
    log_lines: list[str] = []

    def check_folder() -> list[ResultRow]:
        rows = results_rows(out / "results.jsonl", injected_tail)
        done = finals(rows)
        for tid, row in done.items():
            # nothing for a finished unit after its final row
            later = [r for r in rows[rows.index(row) + 1 :] if r.task_id == tid]
            assert not later, f"{tid}: rows after its final row: {[(r.attempt, r.final) for r in later]}"
            transcript = out / row.transcript_path
            events = read_transcript(transcript)
            assert events and events[-1].type == "grade" and events[-1].attempt == row.attempt, (
                f"{tid}: the transcript of a finished unit does not end with its grade: {[e.type for e in events[-3:]]}"
            )
            adir = out / row.dir
            assert (adir / "patch.diff").exists() and (adir / "grade.json").exists(), f"{tid}: attempt files missing"
            d = digest(transcript, adir / "grade.json", adir / "patch.diff")
            assert first_final_digest.setdefault(tid, d) == d, (
                f"{tid}: finished unit's transcript/grade changed (redone?)"
            )
        return rows

    with FakeLLM(responder=provider) as srv:
        try:
            n = 0
            kills_done = 0
            while True:
                n += 1
                rows = check_folder()
                done = set(finals(rows))
                if kills_done == sigint_after and not any(s.kind == "sigint" for s in sessions):
                    kind, target = "sigint", "early model call"
                elif kills_done < KILLS:
                    kind, target = "kill", plan[kills_done]
                    # pace the progress so that kills land both before and after units finished,
                    # and work is left for the later ones: ahead of pace, a kill lands early
                    if len(done) >= 1 + kills_done * (N_TASKS - 2) / KILLS:
                        target = {"row": "write"}.get(target, target) + " (early)"
                else:
                    kind, target = "final", ""
                assert kind == "final" or len(done) < len(TASK_IDS), "every unit finished before the kills were done"
                sess = Session(n, kind, target, done_before=done, rows_before=len(rows))
                sessions.append(sess)
                proc, logf = _launch(n, srv, spec_dir, out, tmp_path)
                sess.started, sess.pid = time.time(), proc.pid
                try:
                    if kind == "final":
                        sess.rc = proc.wait(timeout=150)
                    elif kind == "sigint":
                        _sigint_session(sess, proc, provider, rng)
                    else:
                        _kill_session(sess, proc, provider, rng, out, run_name)
                        kills_done += 1 if sess.signal_at else 0
                finally:
                    if proc.poll() is None:
                        os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait()
                    logf.close()
                rows = check_folder()
                if injected_tail and not (out / "results.jsonl").read_bytes().endswith(injected_tail):
                    injected_tail, repaired_by = b"", n  # this session cut it before appending anything
                    sess.note = "repaired the torn last line"
                sess.new_rows = rows[sess.rows_before :]
                _landed(sess, provider, out, run_name)
                line = _describe(sess, provider, wall0)
                log_lines.append(line)
                print(line)
                if kind == "final":
                    break
                if kind == "kill" and not sess.signal_at:  # it ended before its moment came: cleanly?
                    assert sess.rc == 0, (tmp_path / f"session-{n}.log").read_text()[-3000:]
                if kind == "sigint":
                    _check_sigint(sess, provider, out, run_name, tmp_path)
                # a crash mid-append leaves a torn last line: fake one (a final row for an unfinished
                # unit, cut in half), once; the reader skips it and the next session must cut it
                if kind == "kill" and kills_done == 3 and not injected_tail and not repaired_by:
                    injected_tail = _inject_torn_tails(out, rows)
                    print(
                        f"    injected a torn last line into results.jsonl ({len(injected_tail)} bytes)"
                        " and into an unfinished transcript"
                    )
                # the live decoy survives every session; a session that got going pruned what the
                # killed ones before it left
                assert _exists(decoys["live"]), "a live process's container was pruned"
                if provider.of(sess.n):
                    stale = [
                        (_cname(c), c["Labels"].get("wholeloop.owner"), c.get("State"))
                        for c in run_containers(run_name)
                        if not c["Labels"].get("wholeloop.owner", "").endswith(f":{sess.pid}")
                    ]
                    assert not stale, (
                        f"session {sess.n} left containers of dead sessions in place: {stale}; owners alive: "
                        f"{[_pid_alive(o) for _, o, _ in stale]}\n"
                        + (tmp_path / f"session-{n}.log").read_text()[-2000:]
                    )

            final = sessions[-1]
            assert final.rc == 0, (tmp_path / f"session-{final.n}.log").read_text()[-3000:]
            assert repaired_by, "the injected torn line was never cut"
            _final_checks(sessions, provider, out, run_name, decoys, tmp_path)
        finally:
            _print_summary(sessions, log_lines, seed, wall0, provider, out)
            _remove(decoys)
            _remove([c["Id"] for c in run_containers(run_name)])  # after a failure: leave nothing behind


# ---------------------------------------------------------------------------- sessions


def _launch(n: int, srv: FakeLLM, spec_dir: Path, out: Path, tmp_path: Path):
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-kill-resume-not-a-key",
        "OPENAI_BASE_URL": f"{srv.base_url}/s{n}/v1",
        "PYTHONUNBUFFERED": "1",
    }
    cmd = [
        sys.executable,
        "-m",
        "harness.cli",
        "run",
        str(spec_dir),
        "--model",
        "openai/gpt-4o",
        "--out",
        str(out),
        "--workers",
        str(WORKERS),
        "--attempts",
        str(ATTEMPTS),
        "--config",
        CONFIG,
    ]
    logf = open(tmp_path / f"session-{n}.log", "w")
    # its own process group: a kill takes the runner and any child (git) with it, as a crash would
    # Ctrl-C as a terminal's: its foreground job never has SIGINT ignored, even when this test runs
    # in a background job that does (`cmd &` without job control ignores it, and children inherit that)
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=logf,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    return proc, logf


def _kill_session(sess: Session, proc, provider: Provider, rng: random.Random, out: Path, run_name: str) -> None:
    """Wait for the moment the target names, then SIGKILL the runner's process group."""
    t0 = time.monotonic()
    deadline = t0 + TRIGGER_TIMEOUT_S
    target = sess.target
    fire_at = None
    early = target.endswith(" (early)")
    target = target.removesuffix(" (early)")
    if target == "timer":
        fire_at = t0 + rng.uniform(0.5, 3.0 if early else 10.0)
    k = {"model": rng.randint(1, 2 if early else 10), "grading": rng.randint(1, 1 if early else 3)}.get(target, 0)
    lag = rng.uniform(0.05, 0.25) if target == "model" else rng.uniform(0.0, 0.8) if target == "grading" else 0.0
    gradings: set[str] = set()
    results = out / "results.jsonl"
    while proc.poll() is None and time.monotonic() < deadline:
        now = time.monotonic()
        if fire_at is not None:
            if now >= fire_at:
                break
        elif target == "model":
            if len(provider.of(sess.n)) >= k:
                fire_at = now + lag  # well inside that call's 0.3 s minimum
                continue
        elif target == "grading":
            gradings |= {_cname(c) for c in run_containers(run_name, proc.pid) if _role(c) == "grading"}
            if len(gradings) >= k:
                fire_at = now + lag
                continue
        elif target == "write":
            if fresh_grade_files(out, sess.started):
                break  # grading is over and its files are being written: now
        elif target == "row":
            if results.exists() and any(r.final for r in read_results(results)[sess.rows_before :]):
                break  # a final row was just appended
        time.sleep(0.002 if target in ("write", "row") else 0.005 if target == "model" else 0.03)
    if proc.poll() is not None:
        sess.note = f"exited by itself (rc {proc.returncode}) before the {target} trigger"
        sess.rc = proc.returncode
        return
    if time.monotonic() >= deadline:
        sess.note = f"trigger '{target}' not seen in {TRIGGER_TIMEOUT_S:.0f}s; killed anyway"
    sess.signal_at = time.time()
    os.killpg(proc.pid, signal.SIGKILL)
    sess.rc = proc.wait()


def _sigint_session(sess: Session, proc, provider: Provider, rng: random.Random) -> None:
    """Ctrl-C while a unit is in the first model call of its first attempt."""
    deadline = time.monotonic() + TRIGGER_TIMEOUT_S
    while proc.poll() is None and time.monotonic() < deadline:
        if any(c.step == 0 and c.end is None for c in provider.of(sess.n)):
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the run ended before Ctrl-C could be sent"
    time.sleep(rng.uniform(0.02, 0.15))
    sess.signal_at = time.time()
    os.killpg(proc.pid, signal.SIGINT)  # a terminal sends it to the whole foreground group
    try:
        sess.rc = proc.wait(timeout=SIGINT_EXIT_BOUND_S)
    except subprocess.TimeoutExpired:
        sess.rc = None
    sess.note = f"exited {time.time() - sess.signal_at:.1f}s after SIGINT"


def _landed(sess: Session, provider: Provider, out: Path, run_name: str) -> None:
    """Where the signal landed, from what was in flight and what it left behind."""
    if not sess.signal_at:
        return
    if provider.in_flight(sess.n, sess.signal_at):
        sess.landed.append("model call")
    left = run_containers(run_name, sess.pid)
    roles = Counter(_role(c) for c in left)
    if roles.get("grading"):
        sess.landed.append("grading")
    written = {r.dir for r in sess.new_rows}
    half = [p for p in fresh_grade_files(out, sess.started) if str(p.parent.relative_to(out)) not in written]
    litter = list(out.rglob(f".*.{sess.pid}.*.tmp"))
    if litter:
        sess.landed.append(
            "write (inside an atomic file write: " + ", ".join(p.name.split(".")[1] for p in litter) + ")"
        )
    elif half:
        sess.landed.append("write (grade files written, row not yet)")
    elif sess.target.split()[0] in ("write", "row"):
        sess.landed.append("write (just after the row was appended)")
    if roles.get("agent") and not sess.landed:
        sess.landed.append("tool / agent container")
    if not provider.of(sess.n) and not left:
        sess.landed.append("start-up")
    if not sess.landed:
        sess.landed.append("between steps")
    paused = sum(1 for c in left if c.get("State") == "paused")
    sess.note = (
        (sess.note + "; " if sess.note else "")
        + f"left {dict(roles) or 'no'} container(s)"
        + (f" ({paused} paused)" if paused else "")
    )


def _describe(sess: Session, provider: Provider, wall0: float) -> str:
    flying = [f"{c.unit}@{c.step}" for c in provider.in_flight(sess.n, sess.signal_at)] if sess.signal_at else []
    after = f"{sess.signal_at - sess.started:5.2f}s" if sess.signal_at else "  -  "
    rows = ", ".join(f"{r.task_id}/a{r.attempt}{'F' if r.final else ''}" for r in sess.new_rows) or "-"
    return (
        f"[{time.monotonic() - wall0:6.1f}s] session {sess.n:2} {sess.kind:6} target={sess.target or '-':16} "
        f"signal after {after} rc={sess.rc} landed={sess.landed or '-'} in-flight={flying or '-'} "
        f"done before={len(sess.done_before)} new rows=[{rows}] {sess.note}"
    )


def _check_sigint(sess: Session, provider: Provider, out: Path, run_name: str, tmp_path: Path) -> None:
    log = (tmp_path / f"session-{sess.n}.log").read_text()
    assert sess.rc == 130, f"Ctrl-C: exit code {sess.rc} (bound {SIGINT_EXIT_BOUND_S}s)\n{log[-3000:]}"
    assert "Traceback" not in log, log[-3000:]
    interrupted = {c.unit for c in provider.in_flight(sess.n, sess.signal_at) if c.step == 0}
    assert interrupted
    rows = sess.new_rows
    # (an abandoned row for an earlier, killed try of the unit, written as this session began it, is not this try's)
    mine = [r for r in rows if r.task_id in interrupted and not r.retried]
    assert not mine, f"rows for units interrupted at attempt 1: {rows}"
    for tid in interrupted:
        events = read_transcript(out / "attempts" / tid / CONFIG / "rep-0" / "transcript.jsonl")
        assert events[-1].type == "stop" and events[-1].reason == "interrupted", [e.type for e in events[-3:]]
    # a graceful stop removes its own containers: nothing for a later prune to do
    assert not run_containers(run_name), [_cname(c) for c in run_containers(run_name)]


# ---------------------------------------------------------------------------- final checks


def _final_checks(sessions: list[Session], provider: Provider, out: Path, run_name: str, decoys: dict, tmp_path: Path):
    rows = results_rows(out / "results.jsonl")
    assert (out / "results.jsonl").read_bytes().endswith(b"\n")
    done = finals(rows)
    assert set(done) == set(TASK_IDS), f"units without a final row: {set(TASK_IDS) - set(done)}"

    # exactly one final row per unit among the latest rows too, and it is the scripted outcome
    latest = latest_rows(rows)
    per_unit = Counter(r.task_id for r in latest if r.final)
    assert per_unit == Counter(TASK_IDS), per_unit
    for tid in TASK_IDS:
        unit_latest = sorted((r for r in latest if r.task_id == tid), key=lambda r: r.attempt)
        assert [(r.attempt, r.final, r.outcome) for r in unit_latest] == (
            [(1, True, "resolved")] if FINAL_ATTEMPT[tid] == 1 else [(1, False, "unresolved"), (2, True, "resolved")]
        ), tid

    # which session wrote each row (sessions only ever append)
    writer: list[int] = []
    for sess in sessions:
        writer += [sess.n] * len(sess.new_rows)
    assert len(writer) == len(rows)
    final_session = {tid: writer[rows.index(row)] for tid, row in done.items()}

    calls = defaultdict(list)
    for c in provider.calls:
        calls[c.unit].append(c)
    for tid in TASK_IDS:
        row = done[tid]
        fs = final_session[tid]
        # the finished try is whole: attempts 1..k, all written by the session that wrote the final row
        # (an abandoned row the final session wrote first is an earlier, killed try's: not this try's)
        own = [(r.attempt, r.final) for r, w in zip(rows, writer) if r.task_id == tid and w == fs and not r.retried]
        assert own == [(a, a == row.attempt) for a in range(1, row.attempt + 1)], (tid, own)
        # rows of earlier sessions for this unit are unfinished tries: never final
        assert all(not r.final for r, w in zip(rows, writer) if r.task_id == tid and w != fs)
        # billed once: the final session's requests for it are exactly the calls its rows count
        billed = [c for c in calls[tid] if c.session == fs]
        assert (
            len(billed)
            == sum(r.model_calls for r, w in zip(rows, writer) if r.task_id == tid and w == fs and not r.retried)
            == len(SCRIPTS[tid])
        ), (tid, [(c.step, c.session) for c in billed])
        assert sorted(c.step for c in billed) == list(range(len(SCRIPTS[tid])))
        # spend survives a kill: every call any session's rows count (graded attempts and the
        # abandoned ones a later session recorded from a killed try's transcript) was served, and
        # none is counted twice: a unit's rows never count more calls than the provider answered
        counted = sum(r.model_calls for r in rows if r.task_id == tid)
        assert counted <= len(calls[tid]), (tid, counted, len(calls[tid]))
        for r, w in zip(rows, writer):
            if r.task_id == tid and r.retried:  # recorded by the session after the killed one, once
                assert r.model_calls >= 1 and not r.final and "transcript.unfinished-" in r.transcript_path
                assert sum(c.session < w for c in calls[tid]) >= r.model_calls, (tid, w, r.model_calls)
        # no request for a finished unit from any session that started after it finished...
        later = [c for c in calls[tid] if c.session > fs]
        assert not later, f"{tid} finished in session {fs} and was asked again: {[(c.session, c.step) for c in later]}"
        # ...nor, by the clock, after its final row was written (finished_at has 1 s resolution)
        finished = datetime.fromisoformat(row.finished_at).timestamp() + 1
        assert all(c.start <= finished for c in calls[tid]), tid
        # its transcript: one model request per billed call, its attempts, ending in its grade
        events = read_transcript(out / row.transcript_path)
        assert [e.type for e in events].count("model_request") == len(SCRIPTS[tid])
        assert [e.attempt for e in events if e.type == "grade"] == list(range(1, row.attempt + 1))
    for sess in sessions:  # the session view of the same property
        asked_done = {c.unit for c in provider.of(sess.n)} & sess.done_before
        assert not asked_done, f"session {sess.n} asked the model about finished units {asked_done}"

    # the torn lines injected mid-run were repaired; the moved-aside transcripts still read
    for path in out.rglob("transcript.unfinished-*.jsonl"):
        read_transcript(path)

    # no leftovers: containers of killed sessions were pruned; a live owner's container was not
    assert not run_containers(run_name), [_cname(c) for c in run_containers(run_name)]
    proc = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=wholeloop.run={run_name}"], capture_output=True, text=True
    )
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout
    assert _exists(decoys["live"]), "a live process's container was pruned"
    assert not _exists(decoys["dead"]), "a dead process's container was not pruned"

    litter = [str(p.relative_to(out)) for p in out.rglob(".*.tmp")]
    print(f"  temporary files left by kills mid atomic write (harmless litter): {litter or 'none'}")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["finished_at"] and len(manifest.get("sessions", [])) >= 1
    assert sum(1 for s in sessions if s.kind == "kill" and s.signal_at) >= 10


def _print_summary(
    sessions: list[Session], log_lines: list[str], seed: int, wall0: float, provider: Provider, out: Path
) -> None:
    landed = Counter(p.split(" (")[0] for s in sessions if s.kind == "kill" for p in s.landed)
    exact = Counter(p.split(":")[0] for s in sessions if s.kind == "kill" for p in s.landed if p.startswith("write"))
    kills = sum(1 for s in sessions if s.kind == "kill" and s.signal_at)
    print(f"\nkill-resume seed {seed}: {kills} SIGKILLs, {len(sessions)} sessions, {time.monotonic() - wall0:.0f}s")
    print(f"  kills landed (a kill may count twice): {dict(landed)}; writes: {dict(exact)}")
    # Resume is per unit: the attempts of an unfinished unit that already had a (non-final) row are
    # redone, and their model calls made again. Allowed by the contract above; counted here.
    rows = read_results(out / "results.jsonl") if (out / "results.jsonl").exists() else []
    again = Counter()
    for sess in sessions:
        had_row = {(r.task_id, r.attempt) for r in rows[: sess.rows_before]}
        again.update(c.unit for c in provider.of(sess.n) if (c.unit, attempt_of(c.unit, c.step)) in had_row)
    total = len(provider.calls)
    print(
        f"  model calls: {total}; made again for an attempt that already had a row (its unit was unfinished): "
        f"{sum(again.values())} {dict(again) or ''}"
    )


# ---------------------------------------------------------------------------- helpers


def _warm_images(spec: Path, out: Path) -> None:
    """Build (or find) the task image once, so no session spends its life in an image build."""
    from harness.agents.controls import CONTROLS
    from harness.run import Runner, RunOptions
    from harness.tasks import load_task

    task = load_task(spec)
    runner = Runner([task], CONTROLS["noop"](), RunOptions(out=out))
    runner.prepare(task)


def _make_decoys(run_name: str) -> dict:
    from sandbox.docker.engine import client

    dead = subprocess.Popen(["true"])
    dead.wait()
    host = socket.gethostname()
    made = {}
    for kind, pid in (("live", os.getpid()), ("dead", dead.pid)):
        labels = {
            "wholeloop": "1",
            "wholeloop.role": "agent",
            "wholeloop.owner": f"{host}:{pid}",
            "wholeloop.run": f"{run_name}-decoy-{kind}",
        }
        made[kind] = (
            client()
            .containers.create(
                BASE_IMAGE,
                ["sleep", "600"],
                labels=labels,
                name=f"wholeloop-decoy-{kind}-{os.getpid()}-{random.randrange(16**6):06x}",
            )
            .id
        )
    return made


def _pid_alive(owner: str) -> bool:
    try:
        os.kill(int(owner.rpartition(":")[2]), 0)
    except ProcessLookupError:
        return False
    except (ValueError, PermissionError):
        pass
    return True


def _exists(container_id: str) -> bool:
    import docker.errors

    from sandbox.docker.engine import client

    try:
        client().containers.get(container_id)
        return True
    except docker.errors.NotFound:
        return False


def _remove(containers: dict | list) -> None:
    import docker.errors

    from sandbox.docker.engine import client

    for cid in containers.values() if isinstance(containers, dict) else containers:
        try:
            client().api.remove_container(cid, force=True)
        except docker.errors.APIError:  # gone already, or being removed
            pass


def _inject_torn_tails(out: Path, rows: list[ResultRow]) -> bytes:
    """Half of a final row for an unfinished unit at the end of results.jsonl (as a crash mid-append
    would leave it), and half an event at the end of an unfinished unit's transcript."""
    done = {r.task_id for r in rows if r.final}
    unfinished = [t for t in TASK_IDS if t not in done]
    tid = unfinished[0]
    fake = (
        ResultRow(
            run_id=out.name,
            task_id=tid,
            task_hash="torn",
            config=CONFIG,
            agent="default",
            outcome="resolved",
            resolved=True,
            final=True,
        )
        .model_dump_json()
        .encode()
    )
    tail = fake[: len(fake) // 2]
    with open(out / "results.jsonl", "ab") as fh:
        fh.write(tail)
    assert tid not in {r.task_id for r in read_results(out / "results.jsonl") if r.final}  # the reader skips it
    for t in unfinished:
        transcript = out / "attempts" / t / CONFIG / "rep-0" / "transcript.jsonl"
        if transcript.exists():
            with open(transcript, "ab") as fh:
                fh.write(b'{"type": "model_resp')
            read_transcript(transcript)
            break
    return tail
