"""Hostile agents against real containers: every case has a defined outcome and a healthy host after.

Scripted agents (no model) run shell commands in the agent container through the real `Runner`
(or straight on a `Sandbox` where the runner adds nothing). One task image, built from a small git
repository with a bug and its future fix, is shared by every case: image tags are hashes, so
each `Runner.prepare` after the first is a lookup.

After every test, none of the containers this file made is left (the `no_leftovers` fixture of tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import docker.errors
import pytest
from support import ROOT, git, write
from support.hostile import (
    EVIL_PLUGIN,
    FORCE_PASS_CONFTEST,
    RUN_PREFIX,
    Script,
    our_containers,
    run,
)

from harness.agents import AgentResult, get_agent
from harness.records import RunFolder
from harness.run import Runner, RunOptions
from harness.tasks import load_task
from harness.transcript import Stop
from harness.vocabulary import Outcome
from sandbox import Limits
from sandbox.docker import DockerSandbox
from sandbox.docker.container import MAX_PATCH_BYTES
from sandbox.docker.engine import LABEL_RUN, client

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("no_leftovers")]

FUTURE = "zq-future-" + "c0ffee7e51"  # only in the fix commit: must never be readable by the agent
HIDDEN = "zq-hidden-" + "5eed1e55a7"  # only in the hidden tests: must never be readable either
ADD_ID, MUL_ID = "tests/test_add.py::test_add", "tests/test_mul.py::test_mul"
BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"


# ------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> dict:
    """A repository whose base has a bug (add subtracts) and whose future holds the fix, with
    tokens that must stay invisible: FUTURE in the fix commit (tagged, on a branch, in packed refs,
    in a dangling object), HIDDEN in the hidden tests. Returns paths, commits and a spec maker."""
    root = tmp_path_factory.mktemp("hostile")
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(
        repo,
        {
            "calc/__init__.py": BUGGY,
            "tests/test_mul.py": "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
        },
    )
    (repo / "data.bin").write_bytes(bytes(range(256)))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "initial")
    base = git(repo, "rev-parse", "HEAD")
    write(
        repo,
        {
            "calc/__init__.py": BUGGY.replace("a - b", f"a + b  # {FUTURE}"),
            "tests/test_add.py": f"from calc import add\n\n\ndef test_add():  # {HIDDEN}\n    assert add(2, 3) == 5\n",
        },
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"fix: add must add ({FUTURE})")
    fix = git(repo, "rev-parse", "HEAD")
    git(repo, "tag", "-a", "v-fixed", "-m", FUTURE)
    git(repo, "checkout", "-q", "-b", "feature", base)
    git(repo, "checkout", "-q", "main")
    subprocess.run(
        ["git", "hash-object", "-w", "--stdin"], cwd=repo, input=f"dangling {FUTURE}\n", text=True, check=True
    )
    git(repo, "pack-refs", "--all")
    gold = git(repo, "diff", base, fix, "--", "calc")
    test_patch = git(repo, "diff", base, fix, "--", "tests")
    (root / "gold.diff").write_text(gold + "\n")
    (root / "test.diff").write_text(test_patch + "\n")

    def spec(
        where: Path,
        task_id: str = "hostile-task",
        *,
        command: str | None = None,
        files: dict | None = None,
        fail_to_pass: list[str] | None = None,
        tests_s: float | None = None,
    ) -> Path:
        """A spec file for this repository (in `where`), with the hidden tests changed as asked."""
        data = {
            "id": task_id,
            "repo": str(repo),
            "base_commit": base,
            "problem_statement": "add() subtracts instead of adding.",
            "environment": {"setup": ["pip install -q pytest==8.3.4"]},
            "test_command": "python -m pytest -q",
            "hidden_tests": {
                "command": command or "python -m pytest -rA -p no:cacheprovider tests",
                "patch_file": str(root / "test.diff"),
                **({"files": files} if files else {}),
            },
            "FAIL_TO_PASS": fail_to_pass or [ADD_ID],
            "PASS_TO_PASS": [MUL_ID],
            "gold_patch_file": str(root / "gold.diff"),
            "limits": {"command_timeout_s": 5},
            **({"timeouts": {"tests_s": tests_s}} if tests_s else {}),
        }
        where.mkdir(parents=True, exist_ok=True)
        path = where / f"{task_id}.yaml"
        path.write_text(json.dumps(data))  # JSON is YAML
        return path

    return {"root": root, "repo": repo, "base": base, "fix": fix, "spec": spec}


@pytest.fixture(scope="module")
def image(hostile) -> tuple[str, str]:
    """(task image tag, snapshot base commit) of the hostile task, for tests that use a bare Sandbox."""
    spec = hostile["spec"](hostile["root"] / "specs")
    runner = Runner([load_task(spec)], Script(), RunOptions(out=hostile["root"] / f"{RUN_PREFIX}prepare"))
    prepared = runner.prepare(runner.tasks[0])
    return prepared.image, prepared.base_commit


# ------------------------------------------------------------------------------------ agents


class PerTask:
    """One scripted agent per task id, for running many hostile tasks in one parallel run."""

    model = None
    name = "hostile-per-task"

    def __init__(self, scripts: dict[str, Script]):
        self.scripts = scripts

    def run(self, ctx) -> AgentResult:
        return self.scripts[ctx.task.id].run(ctx)

    def describe(self) -> dict:
        return {tid: s.describe() for tid, s in self.scripts.items()}


def out_dir(tmp_path: Path, case: str) -> Path:
    return tmp_path / f"{RUN_PREFIX}{case}-{secrets.token_hex(3)}"


def grade_of(out: Path, row) -> dict:
    return json.loads((out / row.dir / "grade.json").read_text())


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def host_process_count() -> int:
    return sum(1 for p in os.listdir("/proc") if p.isdigit())


# ------------------------------------------------------------------------------------ output floods


def test_two_gigabytes_of_output_are_capped_and_the_host_stays_small(hostile, tmp_path):
    """2 GiB without a newline and 2 GiB of short lines: each result keeps the cap with a marker,
    counts every byte, and neither this process's memory nor the transcript grows with it."""
    lines = "python3 -c \"import sys\nb = b'y\\n' * (1 << 19)\nfor _ in range(2048): sys.stdout.buffer.write(b)\""
    agent = Script("head -c 2G /dev/zero", lines, "head -c 300M /dev/zero >&2")
    before = peak_rss_mb()
    out = out_dir(tmp_path, "flood")
    row = run(hostile["spec"](tmp_path), agent, out, command_timeout_s=120, output_bytes=50_000)["hostile-task"]
    growth = peak_rss_mb() - before
    assert growth < 200, f"peak RSS grew by {growth:.0f} MB"
    for result, total in zip(agent.outputs, (2 << 30, 2 << 30, 300 << 20)):
        assert result.returncode == 0 and not result.timed_out
        assert result.truncated and result.output_bytes == total
        text = result.stdout or result.stderr
        assert "bytes of output truncated" in text and len(text.encode()) < 50_000 + 200
    assert agent.outputs[1].stdout.startswith("y\ny\n") and agent.outputs[1].stdout.endswith("y\ny\n")
    transcript = out / row.transcript_path
    assert transcript.stat().st_size < 500_000
    assert row.outcome == "empty_patch" and row.error is None


# ------------------------------------------------------------------------------------ resource bombs


def test_fork_bomb_is_held_by_the_pids_limit_and_the_attempt_ends_cleanly(hostile, tmp_path):
    """The pids limit holds, the bomb's command returns within its timeout, later commands still
    return, the patch (made before the bomb) is taken and graded, and the host's process table is
    back to normal once the container is gone."""
    host_before = host_process_count()
    counts: list[int] = []
    agent = Script(
        "echo '# touched' >> calc/__init__.py",
        (":(){ :|:& };:", 3),
        lambda sb: counts.append(len(client().api.top(sb.id)["Processes"])),
        ("echo alive", 3),
    )
    out = out_dir(tmp_path, "forkbomb")
    row = run(hostile["spec"](tmp_path), agent, out, pids=64)["hostile-task"]
    # the bomb's command and the one after it returned (a hang would end in pytest-timeout): whether
    # the later one ran or met a process table still full is a race, so neither is asserted
    assert len(agent.outputs) == 4
    assert counts and counts[0] <= 64 + 2  # the limit holds (docker top may count the exec being set up)
    assert row.outcome == "unresolved", (row.outcome, row.note, row.error)
    assert "# touched" in (out / row.patch_path).read_text()
    assert host_process_count() < host_before + 50


def test_memory_bomb_is_killed_inside_the_container_and_recorded(hostile, tmp_path):
    """python3 allocating without end under --memory 256m: the kernel OOM-kills it inside the
    container (exit 137, not a timeout), the container lives on, and the attempt gets its row."""
    bomb = 'python3 -c "x = []\nwhile True: x.append(bytearray(10 ** 7))"'
    agent = Script(
        "echo '# touched' >> calc/__init__.py",
        (bomb, 30),
        "echo alive",
        "cat /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null || cat /sys/fs/cgroup/memory.events",
    )
    out = out_dir(tmp_path, "membomb")
    row = run(hostile["spec"](tmp_path), agent, out, memory="256m")["hostile-task"]
    oom, alive, events = agent.outputs[1:]
    assert oom.returncode == 137 and not oom.timed_out
    assert alive.stdout == "alive\n"
    assert re.search(r"oom_kill [1-9]", events.stdout), events.stdout  # the kernel's own count
    recorded = [json.loads(line) for line in (out / row.transcript_path).read_text().splitlines()]
    assert any(e["type"] == "tool_result" and e["exit_code"] == 137 for e in recorded)
    assert row.outcome == "unresolved" and row.error is None


# ------------------------------------------------------------------------------------ processes that linger


DAEMONS = (
    "sleep 1001 & nohup sleep 1002 >/dev/null 2>&1 & setsid sleep 1003 & (setsid sleep 1004 >/dev/null 2>&1 &); "
    "setsid -f sleep 1005 >/dev/null 2>&1; sh -c 'sleep 1006 & exit' ; "
)


def _on_path(sb, fast: bool) -> None:
    """Make sure commands go the way the test says: through the in-container helper (it starts
    in the background, and a command arriving meanwhile takes the Engine API path) or not."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        parent = sb.exec("cat /proc/$PPID/comm 2>/dev/null || echo none", timeout=10).stdout.strip()
        if (parent == "wlhelper") == fast:
            return
        time.sleep(0.1)
    raise AssertionError(f"commands do not run {'through the helper' if fast else 'as Engine API execs'}")


def _sleepers(sb) -> list[str]:
    listing = sb.exec("ps -eo args", timeout=10).stdout.splitlines()
    return [line for line in listing if re.match(r"sleep 10\d\d", line)]


@pytest.mark.parametrize("fast", [True, False], ids=["helper", "engine-exec"])
def test_timeout_kills_sleepers_background_jobs_setsid_and_nohup_daemons(image, fast, monkeypatch):
    monkeypatch.setenv("WHOLELOOP_FAST_EXEC", "1" if fast else "0")
    with DockerSandbox.start(
        image[0], limits=Limits(command_timeout_s=2), role="agent", run_id=f"{RUN_PREFIX}sleep"
    ) as sb:
        _on_path(sb, fast)
        result = sb.exec(DAEMONS + "sleep infinity")  # a daemon left holding the output: no return
        assert result.timed_out
        assert "timed out" in result.stderr
        assert _sleepers(sb) == []
        assert sb.exec("echo alive").stdout == "alive\n"


@pytest.mark.parametrize("fast", [True, False], ids=["helper", "engine-exec"])
def test_timeout_kills_a_daemon_that_cleared_its_environment(image, fast, monkeypatch):
    """`env -i` drops the marker the sandbox finds a command's processes by: the timeout must
    kill such a daemon all the same (the contract says every process the command started)."""
    monkeypatch.setenv("WHOLELOOP_FAST_EXEC", "1" if fast else "0")
    with DockerSandbox.start(
        image[0], limits=Limits(command_timeout_s=2), role="agent", run_id=f"{RUN_PREFIX}envi"
    ) as sb:
        _on_path(sb, fast)
        # the second one is orphaned at once (its parent subshell exits): no parent links it to the command
        result = sb.exec(
            "env -i setsid sleep 1007 </dev/null >/dev/null 2>&1 & "
            "(env -i setsid sleep 1008 </dev/null >/dev/null 2>&1 &); sleep infinity"
        )
        assert result.timed_out
        assert _sleepers(sb) == []


def test_daemons_do_not_survive_into_grading(hostile, tmp_path):
    """A daemon started by the agent that would write the fix into the repository a little later
    (and keep doing so) cannot reach the grading container: the grade is that of the patch."""
    later = "sleep 3\nwhile :; do printf '%s' \"$FIX\" > /repo/calc/__init__.py; sleep 0.2; done\n"
    agent = Script(
        "echo '# touched' >> calc/__init__.py",
        _files(**{"/tmp/later.sh": later}),
        f"FIX='{BUGGY.replace('a - b', 'a + b')}'; env -i FIX=\"$FIX\" setsid nohup sh /tmp/later.sh </dev/null >/dev/null 2>&1 &",
        f"FIX='{BUGGY.replace('a - b', 'a + b')}' setsid -f sh /tmp/later.sh </dev/null >/dev/null 2>&1",
    )
    out = out_dir(tmp_path, "daemon")
    row = run(hostile["spec"](tmp_path, tests_s=60), agent, out)["hostile-task"]
    assert all(r.returncode == 0 and not r.timed_out for r in agent.outputs if r is not None)
    assert row.outcome == "unresolved" and row.tests[ADD_ID] == "FAILED"
    assert "a + b" not in (out / row.patch_path).read_text()


def test_a_process_rewriting_files_while_the_patch_is_taken(hostile, tmp_path):
    """The agent stops while a process of its own keeps rewriting files (text and binary, never
    the fix). Whatever moment the patch catches, it applies in grading and never resolves."""
    churn = (
        "i=0\nwhile :; do i=$((i+1)); printf 'churn %s\\n' $i > notes.txt; head -c 20000 /dev/urandom > blob.bin\n"
        "  printf '%s  # %s\\n' \"$BUGGY\" $i > calc/__init__.py\ndone\n"
    )
    agent = Script(
        _files(**{"/tmp/churn.sh": churn}),
        f"BUGGY='{BUGGY.rstrip()}' setsid sh /tmp/churn.sh </dev/null >/dev/null 2>&1 &",
        "sleep 0.5",
    )
    out = out_dir(tmp_path, "churn")
    row = run(hostile["spec"](tmp_path), agent, out)["hostile-task"]
    assert row.error is None and row.outcome in ("unresolved", "regression"), (row.outcome, row.note)
    assert grade_of(out, row)["apply_method"] is not None


# ------------------------------------------------------------------------------------ disk


def _free_gb() -> float:
    path = "/var/lib/docker" if os.path.isdir("/var/lib/docker") else "/"
    return shutil.disk_usage(path).free / 1e9


def test_a_patch_over_the_size_cap_is_no_patch(hostile, tmp_path):
    """45 MB of random bytes make a binary patch over MAX_PATCH_BYTES: the attempt ends as an
    empty patch with a note (the agent's failure, not the machine's), nothing large is kept."""
    assert MAX_PATCH_BYTES <= 50_000_000
    agent = Script("head -c 45M /dev/urandom > blob.bin && echo '# touched' >> calc/__init__.py")
    out = out_dir(tmp_path, "bigpatch")
    row = run(hostile["spec"](tmp_path), agent, out)["hostile-task"]
    assert row.outcome == "empty_patch" and row.error is None
    assert "no patch could be taken" in row.note
    assert (out / row.patch_path).stat().st_size == 0
    assert sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) < 1_000_000


def test_a_disk_filler_gives_a_defined_outcome_and_the_disk_back(hostile, tmp_path):
    """A 1 GiB file in the repository compresses to a small patch, but a patch must not carry a
    file that size into grading: the attempt ends without a patch (a note says why), the patch
    on disk is small, and the space comes back when the container goes."""
    free_before = _free_gb()
    if free_before < 5:
        pytest.skip(f"only {free_before:.1f} GB free")
    agent = Script(
        "fallocate -l 1G big.bin 2>/dev/null || dd if=/dev/zero of=big.bin bs=1M count=1024 status=none",
        "echo '# touched' >> calc/__init__.py; ls -l big.bin",
    )
    out = out_dir(tmp_path, "diskfill")
    row = run(hostile["spec"](tmp_path), agent, out, command_timeout_s=60)["hostile-task"]
    assert agent.outputs[1].stdout.split()[4] == str(1 << 30)
    patch = (out / row.patch_path).read_text()
    assert len(patch) < MAX_PATCH_BYTES
    sizes = [int(n) for n in re.findall(r"^literal (\d+)$", patch, re.M)]
    assert not sizes or max(sizes) < 100_000_000, "the patch carries a 1 GiB file into grading"
    assert row.outcome == "empty_patch" and row.error is None and "no patch could be taken" in row.note
    assert _free_gb() > free_before - 0.5


# ------------------------------------------------------------------------------------ bytes


ODD = b"caf\xe9 \xff\xfe half\xe2\x82 euro \xe2\x82\xac ok\r\nlast line without newline \xf0\x9f\x98"
LATIN1_FIX = b"# -*- coding: latin-1 -*-\nNAME = 'caf\xe9'\n\n\n" + BUGGY.replace("a - b", "a + b").encode()


@pytest.mark.parametrize("fast", [True, False], ids=["helper", "engine-exec"])
def test_multibyte_characters_split_across_reads_and_invalid_utf8_in_output(image, fast, monkeypatch):
    """Characters cut by every chunk and frame boundary come out whole; invalid bytes become
    U+FFFD exactly as one decode of all the bytes would give; a cut by the cap only costs the
    characters at the cut."""
    monkeypatch.setenv("WHOLELOOP_FAST_EXEC", "1" if fast else "0")
    data = ("é€😀x" * 30_000).encode() + b"\xff\xfe bad \xe2\x82 cut \xed\xa0\x80 surrogate " + ("ü" * 1000).encode()
    writer = (
        "import os, sys\ndata = sys.stdin.buffer.read()\n"
        "for i in range(0, len(data), 4093): os.write(1, data[i:i + 4093])"
    )
    with DockerSandbox.start(
        image[0],
        limits=Limits(command_timeout_s=20, output_bytes=2_000_000),
        workdir="/tmp",
        role="agent",
        run_id=f"{RUN_PREFIX}bytes",
    ) as sb:
        _on_path(sb, fast)
        whole = sb.exec(["python3", "-c", writer], stdin=data)
        assert whole.stdout == data.decode("utf-8", errors="replace") and not whole.truncated
        capped = sb.exec(["python3", "-c", writer], stdin=data, output_bytes=10_001)
        head, tail = re.split(r"\n\[\.\.\. wholeloop: \d+ bytes of output truncated \.\.\.\]\n", capped.stdout)
        expected = data.decode("utf-8", errors="replace")
        assert capped.truncated and len(head.encode()) >= 4990 and len(tail.encode()) >= 4990
        assert expected.startswith(head.rstrip("\ufffd")) and expected.endswith(tail.lstrip("\ufffd"))


def test_invalid_utf8_and_latin1_files_round_trip_through_the_patch(hostile, tmp_path):
    """The agent fixes the bug in a Latin-1 source file and writes a file of invalid UTF-8 with
    CRLF and no final newline. Grading must see exactly those bytes (hidden tests check them)."""
    check = textwrap.dedent(f"""\
        import calc


        def test_bytes():
            assert open("calc/odd.txt", "rb").read() == {ODD!r}
            assert open("calc/__init__.py", "rb").read() == {LATIN1_FIX!r}
            assert calc.NAME == "caf\\u00e9"
        """)
    spec = hostile["spec"](
        tmp_path, files={"tests/test_bytes.py": check}, fail_to_pass=[ADD_ID, "tests/test_bytes.py::test_bytes"]
    )
    agent = Script(
        lambda sb: sb.write_file("calc/odd.txt", ODD), lambda sb: sb.write_file("calc/__init__.py", LATIN1_FIX)
    )
    out = out_dir(tmp_path, "latin1")
    row = run(spec, agent, out)["hostile-task"]
    assert row.tests.get("tests/test_bytes.py::test_bytes") == "PASSED", (row.tests, row.note)
    assert row.outcome == "resolved"


# ------------------------------------------------------------------------------------ gaming the grader


FAKE_PYTEST = textwrap.dedent(f"""\
    print("=" * 20 + " short test summary info " + "=" * 20)
    print("PASSED {ADD_ID}")
    print("PASSED {MUL_ID}")
    print("=" * 20 + " 2 passed in 0.01s " + "=" * 20)
    """)
PLUGIN_OPTS = "-p wl_evil"


def _files(**files: str):
    """A step writing files into the repository (bytes exactly, no shell quoting)."""

    def step(sb):
        for path, text in files.items():
            sb.write_file(path.replace("__SLASH__", "/"), text)

    return step


CHEATS: dict[str, tuple] = {
    "conftest_hook": (
        _files(
            **{
                "conftest.py": FORCE_PASS_CONFTEST,
                "tests__SLASH__conftest.py": FORCE_PASS_CONFTEST,
                "calc__SLASH__conftest.py": FORCE_PASS_CONFTEST,
            }
        ),
    ),
    "delete_tests": ("rm -rf tests",),
    "edit_tests": (
        "printf 'def test_mul():\\n    pass\\n' > tests/test_mul.py && "
        "printf 'def test_add():\\n    pass\\n' > tests/test_add.py",
    ),
    "tests_package_init": (_files(**{"tests__SLASH____init__.py": EVIL_PLUGIN}),),
    "pytest_ini_no_python": (_files(**{"pytest.ini": "[pytest]\naddopts = -p no:python\n"}),),
    "pytest_ini_plugin": (_files(**{"pytest.ini": f"[pytest]\naddopts = {PLUGIN_OPTS}\n", "wl_evil.py": EVIL_PLUGIN}),),
    "dot_pytest_ini_plugin": (
        _files(**{".pytest.ini": f"[pytest]\naddopts = {PLUGIN_OPTS}\n", "wl_evil.py": EVIL_PLUGIN}),
    ),
    "tox_ini_plugin": (_files(**{"tox.ini": f"[pytest]\naddopts = {PLUGIN_OPTS}\n", "wl_evil.py": EVIL_PLUGIN}),),
    "setup_cfg_plugin": (
        _files(**{"setup.cfg": f"[tool:pytest]\naddopts = {PLUGIN_OPTS}\n", "wl_evil.py": EVIL_PLUGIN}),
    ),
    "pyproject_plugin": (
        _files(
            **{"pyproject.toml": f'[tool.pytest.ini_options]\naddopts = "{PLUGIN_OPTS}"\n', "wl_evil.py": EVIL_PLUGIN}
        ),
    ),
    "pyproject_testpaths": (
        _files(
            **{"pyproject.toml": f'[tool.pytest.ini_options]\ntestpaths = ["calc"]\naddopts = "--deselect {ADD_ID}"\n'}
        ),
    ),
    "sitecustomize": (_files(**{"sitecustomize.py": EVIL_PLUGIN, "usercustomize.py": EVIL_PLUGIN}),),
    "shadow_pytest_module": (_files(**{"pytest.py": FAKE_PYTEST}),),
    "shadow_pytest_package": (_files(**{"pytest__SLASH____init__.py": "", "pytest__SLASH____main__.py": FAKE_PYTEST}),),
    "shadow_pytest_symlink": (
        _files(**{"calc__SLASH__fake_runner.py": FAKE_PYTEST}),
        "ln -s calc/fake_runner.py pytest.py",
    ),
    "shadow_runner_dependency": (_files(**{"pluggy__SLASH____init__.py": EVIL_PLUGIN}),),
    "code_under_test_patches_pytest": (
        _files(**{"calc__SLASH__evil.py": EVIL_PLUGIN}),
        "printf 'from . import evil  # noqa\\n' >> calc/__init__.py",
    ),
}
# What grading puts back to the base or deletes, per cheat.
TAKEN_OUT = {
    "conftest_hook": {"conftest.py", "tests/conftest.py", "calc/conftest.py"},
    "delete_tests": {"tests/test_mul.py"},
    "edit_tests": {"tests/test_mul.py", "tests/test_add.py"},
    "tests_package_init": {"tests/__init__.py"},
    "pytest_ini_no_python": {"pytest.ini"},
    "pytest_ini_plugin": {"pytest.ini"},
    "dot_pytest_ini_plugin": {".pytest.ini"},
    "tox_ini_plugin": {"tox.ini"},
    "setup_cfg_plugin": {"setup.cfg"},
    "pyproject_plugin": {"pyproject.toml"},
    "pyproject_testpaths": {"pyproject.toml"},
    "sitecustomize": {"sitecustomize.py", "usercustomize.py"},
    "shadow_pytest_module": {"pytest.py"},
    "shadow_pytest_package": {"pytest/"},
    "shadow_pytest_symlink": {"pytest.py"},
    "shadow_runner_dependency": {"pluggy/"},
}
# What each cheat should end as: never resolved. Known limits are strict xfails (see the reason).
KNOWN_LIMITS = {
    "code_under_test_patches_pytest": (
        "code that forges every channel in-process: imported by the tests, the code under test rewrites "
        "pytest's TestReport objects in memory, so the -rA summary, the structured report (pytest-reportlog "
        "serializes the same objects) and the exit code all agree on the forgery; no file or channel check "
        "can see it (it would take collecting results in a process the code under test cannot reach)"
    ),
}


@pytest.fixture(scope="module")
def cheat_rows(hostile, tmp_path_factory) -> dict:
    """Every cheat as its own task, all in one parallel run."""
    where = tmp_path_factory.mktemp("cheats")
    # PYTHONPATH as many task specs set it: Python then also runs a planted sitecustomize.py
    command = "PYTHONPATH=/repo python -m pytest -rA -p no:cacheprovider tests"
    specs = [hostile["spec"](where / "specs", f"cheat-{name.replace('_', '-')}", command=command) for name in CHEATS]
    agent = PerTask({f"cheat-{name.replace('_', '-')}": Script(*steps, name=name) for name, steps in CHEATS.items()})
    out = where / f"{RUN_PREFIX}cheats"
    rows = run(specs, agent, out, workers=4)
    return {name: (rows[f"cheat-{name.replace('_', '-')}"], out) for name in CHEATS}


@pytest.mark.slow  # about 35 s: one run of every cheat (cheat_rows), charged to the first case
@pytest.mark.parametrize(
    "cheat",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=KNOWN_LIMITS[name]))
        if name in KNOWN_LIMITS
        else name
        for name in CHEATS
    ],
)
def test_gaming_the_hidden_tests_never_resolves(cheat, cheat_rows):
    row, out = cheat_rows[cheat]
    assert row.error is None, row.error
    assert not row.resolved and row.outcome in ("unresolved", "regression"), (row.outcome, row.tests, row.note)
    assert row.tests[ADD_ID] in ("FAILED", "ERROR", "missing"), row.tests
    if cheat in TAKEN_OUT:  # what the agent planted or changed was left at base (not applied) and recorded
        recorded = grade_of(out, row)
        taken_out = set(recorded["reverted"]) | {s["path"] for s in recorded["stripped"]}
        assert TAKEN_OUT[cheat] <= taken_out, (recorded["reverted"], recorded["stripped"])


# ------------------------------------------------------------------------------------ grading the agent cannot shape
#
# Issue 9. Every attack below is a non-fix (the bug stays in the source, or the hidden tests are not
# what passes) that must never be graded `resolved`; each cause has several variants. Attacks on the
# patch taken from the agent's container go through the real Runner; attacks carried by the patch
# itself are patches crafted on the host and graded straight away (a patch is data: grading must
# hold for any patch, whoever wrote it).

FIXED = BUGGY.replace("a - b", "a + b")
FIX_AT_IMPORT = "import calc\ncalc.add.__code__ = (lambda a, b: a + b).__code__\n"
FAKE_SUMMARY = (
    "=" * 20 + " short test summary info " + "=" * 20 + "\n"
    f"PASSED {ADD_ID}\nPASSED {MUL_ID}\n" + "=" * 20 + " 2 passed in 0.01s " + "=" * 20 + "\n"
)
GRADE_COMMAND = "python -m pytest -rA -p no:cacheprovider tests"


def _hunk_file(path: str, old: str | None, new: str | None, mode: str = "100644") -> str:
    """A git-style section for one text file, written by hand (git itself refuses some paths, e.g.
    under .git/): created (old None), deleted (new None) or changed."""
    import difflib

    a, b = (old or "").splitlines(keepends=True), (new or "").splitlines(keepends=True)
    body = "".join(
        difflib.unified_diff(
            a, b, "/dev/null" if old is None else f"a/{path}", "/dev/null" if new is None else f"b/{path}", n=3
        )
    )
    head = f"diff --git a/{path} b/{path}\n"
    if old is None:
        head += f"new file mode {mode}\n"
    elif new is None:
        head += f"deleted file mode {mode}\n"
    return head + body


@pytest.fixture(scope="module")
def craft(hostile, image, tmp_path_factory):
    """craft(files, raw="") -> a patch of the hostile base: each path set to its new content (bytes or
    text; None deletes it; ("link", target) makes a symlink), made by git on the host, plus `raw`
    sections written by hand. Facts of the task image the attacks need are in craft.facts."""
    where = tmp_path_factory.mktemp("craft")
    probe = textwrap.dedent("""\
        import importlib.util, json, marshal, os, py_compile, sys, tempfile, base64
        import pytest
        spec = json.load(sys.stdin)
        tag = sys.implementation.cache_tag
        out = {"tag": tag, "pytest": pytest.__version__, "config": open(".git/config").read(),
               "exclude": open(".git/info/exclude").read(), "site": __import__("sysconfig").get_paths()["purelib"]}
        src = tempfile.mktemp(suffix=".py")
        open(src, "w").write(spec["fixed"])
        pyc = tempfile.mktemp(suffix=".pyc")
        py_compile.compile(src, cfile=pyc, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        out["calc_unchecked"] = base64.b64encode(open(pyc, "rb").read()).decode()
        st = os.stat("tests/test_mul.py")
        header = importlib.util.MAGIC_NUMBER + b"\\0\\0\\0\\0" + (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") \\
            + (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
        code = compile(spec["evil_test_mul"], os.path.abspath("tests/test_mul.py"), "exec")
        out["test_mul_stamped"] = base64.b64encode(header + marshal.dumps(code)).decode()
        fake = compile(spec["fake_pytest"], "pytest.py", "exec")
        out["pytest_sourceless"] = base64.b64encode(importlib.util.MAGIC_NUMBER + b"\\0" * 12 + marshal.dumps(fake)).decode()
        print(json.dumps(out))
        """)
    import base64

    spec = {
        "fixed": FIXED,
        "evil_test_mul": FIX_AT_IMPORT + "\n\ndef test_mul():\n    pass\n",
        "fake_pytest": f"import sys\nsys.stdout.write({FAKE_SUMMARY!r})\n",
    }
    with DockerSandbox.start(image[0], role="agent", run_id=f"{RUN_PREFIX}craft") as sb:
        found = sb.exec(["python3", "-c", probe], stdin=json.dumps(spec).encode())
    assert found.ok, found.stderr
    facts = json.loads(found.stdout)
    for key in ("calc_unchecked", "test_mul_stamped", "pytest_sourceless"):
        facts[key] = base64.b64decode(facts[key])

    def make(files: dict, raw: str = "") -> str:
        work = where / secrets.token_hex(4)
        subprocess.run(["git", "clone", "-q", str(hostile["repo"]), str(work)], check=True)
        git(work, "checkout", "-q", hostile["base"])
        for path, content in files.items():
            target = work / path
            if content is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, tuple):
                target.unlink(missing_ok=True)
                os.symlink(content[1], target)
            else:
                target.write_bytes(content.encode() if isinstance(content, str) else content)
                if path.endswith(".sh"):
                    target.chmod(0o755)
        git(work, "add", "-A", "-f")
        text = subprocess.run(
            ["git", "diff", "--cached", "--binary", "--full-index", hostile["base"]],
            cwd=work,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        shutil.rmtree(work)
        return text + raw

    make.facts = facts
    return make


def _grade_all(hostile, image, where: Path, patches: dict[str, str], command: str = GRADE_COMMAND) -> dict:
    """Grade each crafted patch for the hostile task (three at a time); {name: (grade, output)}."""
    from concurrent.futures import ThreadPoolExecutor

    from harness.grading import grade

    task = load_task(hostile["spec"](where, "crafted", command=command))
    limits = task.limits.apply(Limits())

    def one(patch):
        result, output, _ = grade(task, patch, image[0], base=image[1], limits=limits, run_id=f"{RUN_PREFIX}crafted")
        return result, output

    with ThreadPoolExecutor(3) as pool:
        return dict(zip(patches, pool.map(one, patches.values())))


def _assert_not_resolved(result, output: str) -> None:
    assert not result.resolved and result.outcome != "resolved", (
        result.outcome,
        result.tests,
        result.note,
        output[-1500:],
    )
    assert result.outcome != "infra_error", result.note


def _stripped(result) -> dict[str, str]:
    return {s.path: s.reason for s in result.stripped}


# -- cause 1: the patch is taken with the agent's tools ----------------------------------------------

_FAKE_GIT = '#!/bin/sh\nfor a in "$@"; do [ "$a" = diff ] && exec cat /tmp/wl-gold.diff; done\nexec /usr/bin/git "$@"\n'
_WRITE_FIX = f"#!/bin/sh\ncat > /repo/calc/__init__.py <<'EOF'\n{FIXED}EOF\n"
TOUCH = "echo '# touched' >> calc/__init__.py"
PATCH_TAKERS: dict[str, tuple] = {
    # a `git` of the agent's first on PATH writes the patch text itself
    "git_first_on_path": (
        lambda sb: sb.write_file("/tmp/wl-gold.diff", _GOLD[0]),
        _files(**{"/opt/venv/bin/git": _FAKE_GIT}),
        "chmod +x /opt/venv/bin/git",
        TOUCH,
    ),
    # a clean filter (attributes in the tree) turns the buggy file into the fix on its way into the index
    "clean_filter_gitattributes": (
        TOUCH,
        "git config filter.wl.clean \"sed 's/a - b/a + b/'\"",
        "printf 'calc/__init__.py filter=wl\\n' > .gitattributes",
    ),
    # the same with attributes the patch never shows
    "clean_filter_info_attributes": (
        TOUCH,
        "git config filter.wl.clean \"sed 's/a - b/a + b/'\"",
        "printf 'calc/__init__.py filter=wl\\n' > .git/info/attributes",
    ),
    # a hook that runs while the patch is taken writes the fix into the tree
    "post_index_change_hook": (
        TOUCH,
        _files(**{".git/hooks/post-index-change": _WRITE_FIX}),
        "chmod +x .git/hooks/post-index-change",
    ),
    # the repository's config names a command git runs on every status and add
    "fsmonitor_command": (
        TOUCH,
        _files(**{"/tmp/wl-fsm.sh": _WRITE_FIX}),
        "chmod +x /tmp/wl-fsm.sh",
        "git config core.fsmonitor /tmp/wl-fsm.sh",
    ),
}
_GOLD: list[str] = []


@pytest.fixture(scope="module")
def patch_taker_rows(hostile, tmp_path_factory) -> dict:
    """Every patch-taking attack as its own task, all in one parallel run."""
    _GOLD[:] = [(hostile["root"] / "gold.diff").read_text()]
    where = tmp_path_factory.mktemp("takers")
    specs = [hostile["spec"](where / "specs", f"taker-{name.replace('_', '-')}") for name in PATCH_TAKERS]
    agent = PerTask(
        {f"taker-{name.replace('_', '-')}": Script(*steps, name=name) for name, steps in PATCH_TAKERS.items()}
    )
    out = where / f"{RUN_PREFIX}takers"
    rows = run(specs, agent, out, workers=3)
    return {name: (rows[f"taker-{name.replace('_', '-')}"], out) for name in PATCH_TAKERS}


@pytest.mark.parametrize("attack", list(PATCH_TAKERS))
def test_the_patch_is_the_trees_own_diff_whatever_the_agent_does_to_git(attack, patch_taker_rows):
    """The agent leaves the bug in its tree and changes one line; whatever it does to the git of its
    container, the patch is that change and nothing else, and is not resolved."""
    row, out = patch_taker_rows[attack]
    patch = (out / row.patch_path).read_text()
    assert not row.resolved, (row.outcome, patch[:2000])
    assert "a + b" not in patch, patch[:2000]
    assert "# touched" in patch and row.outcome == "unresolved", (row.outcome, row.note, patch[:2000])


# -- cause 2: what the patch plants, hidden from `git status` ---------------------------------------

EVIL_DIST_INFO = {
    "wl_evil-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: wl-evil\nVersion: 1.0\n",
    "wl_evil-1.0.dist-info/entry_points.txt": "[pytest11]\nwl_evil = calc.wl_plugin\n",
    "calc/wl_plugin.py": EVIL_PLUGIN,
}
EVIL_EGG_INFO = {
    "wl_evil.egg-info/PKG-INFO": "Metadata-Version: 1.1\nName: wl-evil\nVersion: 1.0\n",
    "wl_evil.egg-info/entry_points.txt": "[pytest11]\nwl_evil = calc.wl_plugin\n",
    "calc/wl_plugin.py": EVIL_PLUGIN,
}


def _planted(craft) -> dict[str, tuple[str, set[str]]]:
    """name -> (patch, paths grading must strip and record)."""
    f = craft.facts
    stamped = f"tests/__pycache__/test_mul.{f['tag']}-pytest-{f['pytest']}.pyc"
    unchecked = f"calc/__pycache__/__init__.{f['tag']}.pyc"
    return {
        "unchecked_hash_pyc_of_the_fix": (
            craft({unchecked: f["calc_unchecked"], "calc/__init__.py": BUGGY + "# x\n"}),
            {unchecked},
        ),
        "stamped_pyc_of_an_unchanged_test_file": (craft({stamped: f["test_mul_stamped"]}), {stamped}),
        "top_level_pytest_pyc": (craft({"pytest.pyc": f["pytest_sourceless"]}), {"pytest.pyc"}),
        "dist_info_with_a_pytest11_entry_point": (
            craft(EVIL_DIST_INFO),
            {"wl_evil-1.0.dist-info/METADATA", "wl_evil-1.0.dist-info/entry_points.txt"},
        ),
        "egg_info_with_a_pytest11_entry_point": (
            craft(EVIL_EGG_INFO),
            {"wl_evil.egg-info/PKG-INFO", "wl_evil.egg-info/entry_points.txt"},
        ),
        "gitignore_hides_a_planted_conftest": (
            craft({".gitignore": "conftest.py\n", "conftest.py": FORCE_PASS_CONFTEST}),
            {"conftest.py"},
        ),
        "nested_gitignore_hides_a_tests_conftest": (
            craft({"tests/.gitignore": "conftest.py\n", "tests/conftest.py": FORCE_PASS_CONFTEST}),
            {"tests/conftest.py"},
        ),
        "pth_file": (
            craft({"wl_evil.pth": "import calc.wl_plugin\n", "calc/wl_plugin.py": EVIL_PLUGIN}),
            {"wl_evil.pth"},
        ),
        "symlink_out_of_the_repository": (
            craft({"calc/data": ("link", "/etc"), "calc/__init__.py": BUGGY + "# x\n"}),
            {"calc/data"},
        ),
        "symlink_into_site_packages_then_a_pth": (
            craft(
                {"sp": ("link", f["site"]), "calc/wl_plugin.py": EVIL_PLUGIN},
                raw=_hunk_file("sp/wl_evil.pth", None, "import calc.wl_plugin\n"),
            ),
            {"sp", "sp/wl_evil.pth"},
        ),
    }


@pytest.fixture(scope="module")
def planted_grades(hostile, image, craft, tmp_path_factory) -> dict:
    planted = _planted(craft)
    graded = _grade_all(hostile, image, tmp_path_factory.mktemp("planted"), {k: v[0] for k, v in planted.items()})
    return {name: (*graded[name], planted[name][1]) for name in planted}


@pytest.mark.parametrize(
    "attack",
    [
        "unchecked_hash_pyc_of_the_fix",
        "stamped_pyc_of_an_unchanged_test_file",
        "top_level_pytest_pyc",
        "dist_info_with_a_pytest11_entry_point",
        "egg_info_with_a_pytest11_entry_point",
        "gitignore_hides_a_planted_conftest",
        "nested_gitignore_hides_a_tests_conftest",
        "pth_file",
        "symlink_out_of_the_repository",
        "symlink_into_site_packages_then_a_pth",
    ],
)
def test_what_a_patch_plants_is_stripped_and_recorded(attack, planted_grades):
    """Bytecode, package metadata, start-up hooks, hidden conftests and symlinks leaving the
    repository never reach the hidden test run, whatever ignore rules the patch brings, and
    grade.json says what was left out."""
    result, output, expected = planted_grades[attack]
    _assert_not_resolved(result, output)
    assert expected <= set(_stripped(result)), (result.stripped, expected)


# -- cause 3: an applier that writes where git refuses ---------------------------------------------


def _git_writers(craft) -> dict[str, tuple[str, set[str]]]:
    config, exclude = craft.facts["config"], craft.facts["exclude"]
    touch_test = {"tests/test_mul.py": "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6  # x\n"}
    return {
        # a hook that grading's next `git checkout` (putting a protected file back) would run
        "hook_through_the_fuzzy_applier": (
            craft(touch_test, raw=_hunk_file(".git/hooks/post-checkout", None, _WRITE_FIX, "100755")),
            {".git/hooks/post-checkout"},
        ),
        # repository config naming a command every later `git status` runs
        "git_config_fsmonitor": (
            craft(
                {"calc/fsm.sh": _WRITE_FIX},
                raw=_hunk_file(
                    ".git/config", config, config.replace("[core]\n", "[core]\n\tfsmonitor = /repo/calc/fsm.sh\n", 1)
                ),
            ),
            {".git/config"},
        ),
        # an exclude file of the grading repository that hides a planted conftest from `git status`
        "git_info_exclude_hides_conftest": (
            craft(
                {"conftest.py": FORCE_PASS_CONFTEST},
                raw=_hunk_file(".git/info/exclude", exclude, exclude + "conftest.py\n"),
            ),
            {".git/info/exclude", "conftest.py"},
        ),
        # paths that leave the repository
        "dot_dot_path": (
            craft({"calc/__init__.py": BUGGY + "# x\n"}, raw=_hunk_file("../opt/wl-escape.pth", None, "import calc\n")),
            {"../opt/wl-escape.pth"},
        ),
    }


@pytest.fixture(scope="module")
def git_writer_grades(hostile, image, craft, tmp_path_factory) -> dict:
    writers = _git_writers(craft)
    graded = _grade_all(hostile, image, tmp_path_factory.mktemp("writers"), {k: v[0] for k, v in writers.items()})
    return {name: (*graded[name], writers[name][1]) for name in writers}


@pytest.mark.parametrize(
    "attack",
    ["hook_through_the_fuzzy_applier", "git_config_fsmonitor", "git_info_exclude_hides_conftest", "dot_dot_path"],
)
def test_no_applier_writes_under_git_or_outside_the_repository(attack, git_writer_grades):
    result, output, expected = git_writer_grades[attack]
    _assert_not_resolved(result, output)
    assert expected <= set(_stripped(result)), (result.stripped, expected)


# -- cause 4: plugins through the back door -------------------------------------------------------

PLUGIN_COMMAND = "PYTHONPATH=/repo/src python -m pytest -rA -p no:cacheprovider tests"


def _plugins(craft) -> dict[str, tuple[str, set[str]]]:
    upper = {k.replace("wl_evil-1.0.dist-info", "WL_EVIL-1.0.DIST-INFO"): v for k, v in EVIL_DIST_INFO.items()}
    in_src = {("src/" + k if "-info/" in k else k): v for k, v in EVIL_DIST_INFO.items()}
    egg_src = {("src/" + k if "-info/" in k else k): v for k, v in EVIL_EGG_INFO.items()}
    return {
        "dist_info_in_upper_case": (craft(upper), {k for k in upper if "-INFO/" in k}),
        "dist_info_on_the_tests_pythonpath": (craft(in_src), {k for k in in_src if k.startswith("src/")}),
        "egg_info_on_the_tests_pythonpath": (craft(egg_src), {k for k in egg_src if k.startswith("src/")}),
    }


@pytest.fixture(scope="module")
def plugin_grades(hostile, image, craft, tmp_path_factory) -> dict:
    plugins = _plugins(craft)
    graded = _grade_all(
        hostile,
        image,
        tmp_path_factory.mktemp("plugins"),
        {k: v[0] for k, v in plugins.items()},
        command=PLUGIN_COMMAND,
    )
    return {name: (*graded[name], plugins[name][1]) for name in plugins}


@pytest.mark.parametrize(
    "attack", ["dist_info_in_upper_case", "dist_info_on_the_tests_pythonpath", "egg_info_on_the_tests_pythonpath"]
)
def test_pytest_never_autoloads_a_plugin_the_patch_brings(attack, plugin_grades):
    result, output, expected = plugin_grades[attack]
    _assert_not_resolved(result, output)
    assert expected <= set(_stripped(result)), (result.stripped, expected)


def test_grading_clears_bytecode_and_the_hidden_tests_write_none(hostile, image, craft, tmp_path):
    gold = (hostile["root"] / "gold.diff").read_text()
    command = GRADE_COMMAND + "; code=$?; echo pyc-count: $(find /repo -name '*.pyc' | wc -l); exit $code"
    ((result, output),) = _grade_all(hostile, image, tmp_path, {"gold": gold}, command=command).values()
    assert result.resolved, (result.outcome, result.note, output[-2000:])
    assert "pyc-count: 0" in output, output[-500:]


# -- cause 5: one channel of results ----------------------------------------------------------------

_ATEXIT_FAKE = (
    BUGGY + "\n\nimport atexit, os, sys\n\n\ndef _fake():\n    sys.{stream}.write({fake!r})\n"
    "    sys.{stream}.flush()\n    os._exit(0)\n\n\nif 'pytest' in sys.modules:\n    atexit.register(_fake)\n"
)
_FORKED_AFTER_INTERRUPT = (
    BUGGY.replace(
        "    return a - b\n",
        """\
    import os, time
    if os.fork() == 0:  # a writer that outlives pytest, writing to the real stdout pytest saved
        parent = os.getppid()
        while os.getppid() == parent:
            time.sleep(0.005)
        for fd in range(3, 64):
            try:
                if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                    os.write(fd, FAKE.encode())
            except OSError:
                pass
        os._exit(0)
    raise KeyboardInterrupt
""",
    )
    + f"\n\nFAKE = {FAKE_SUMMARY!r}\n"
)
CHANNELS = {
    "fake_summary_on_stdout_and_exit_0": _ATEXIT_FAKE.format(stream="stdout", fake=FAKE_SUMMARY),
    "fake_summary_on_stderr_and_exit_0": _ATEXIT_FAKE.format(stream="stderr", fake=FAKE_SUMMARY),
    "interrupted_run_with_a_summary_appended_after_pytest": _FORKED_AFTER_INTERRUPT,
    "pytest_xfail_at_run_time": BUGGY.replace("    return a - b\n", "    import pytest\n    pytest.xfail('flaky')\n"),
}


@pytest.fixture(scope="module")
def channel_grades(hostile, image, craft, tmp_path_factory) -> dict:
    patches = {name: craft({"calc/__init__.py": source}) for name, source in CHANNELS.items()}
    return _grade_all(hostile, image, tmp_path_factory.mktemp("channels"), patches)


@pytest.mark.parametrize("attack", list(CHANNELS))
def test_results_come_from_channels_that_must_agree(attack, channel_grades):
    """Code under test prints a self-consistent fake summary (and exits 0), or interrupts pytest and
    has a forked writer append a summary after pytest's closing line, or calls pytest.xfail() at
    run time: never resolved; a summary contradicting the structured report is flagged."""
    result, output = channel_grades[attack]
    _assert_not_resolved(result, output)
    if attack.startswith("fake_summary"):
        assert result.tampering, (result.channels, result.note)


def test_suspected_tampering_is_shown_by_the_row_report_show_and_the_html(hostile, tmp_path):
    """An attempt whose channels disagree (a fake summary and exit 0) carries the flag everywhere a
    reviewer looks: grade.json, its results row, `wholeloop report`, `wholeloop show`, the HTML."""
    agent = Script(_files(**{"calc/__init__.py": CHANNELS["fake_summary_on_stdout_and_exit_0"]}), name="faker")
    out = out_dir(tmp_path, "tamper")
    # two tasks: `report --html` of a one-task run is another cause of issue 9
    rows = run([hostile["spec"](tmp_path, "tamper-a"), hostile["spec"](tmp_path, "tamper-b")], agent, out, workers=2)
    for row in rows.values():
        assert not row.resolved and row.tampering and grade_of(out, row)["tampering"] == row.tampering

    def cli(*args):
        done = subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout

    assert "suspected tampering" in cli("report", str(out))
    assert "suspected tampering" in cli("show", str(out), "tamper-a")
    cli("report", str(out), "--html", str(tmp_path / "report.html"))
    assert "Suspected tampering: 2 attempt" in (tmp_path / "report.html").read_text()


# -- cause 6: feedback leaks the hidden tests -------------------------------------------------------

_LEAK_IN_SUMMARY = (
    BUGGY + "\n\nimport atexit, sys\n\n\ndef _leak():\n    try:\n"
    "        text = open('/repo/tests/test_add.py').read()\n    except OSError:\n        return\n"
    "    sys.stdout.write('=' * 10 + ' short test summary info ' + '=' * 10 + '\\n')\n"
    f"    sys.stdout.write('FAILED {ADD_ID} - ' + ' | '.join(text.splitlines()) + '\\n')\n"
    "    sys.stdout.write('=' * 10 + ' 1 failed, 1 passed in 0.1s ' + '=' * 10 + '\\n')\n"
    "    sys.stdout.flush()\n\n\nif 'pytest' in sys.modules:\n    atexit.register(_leak)\n"
)
_LEAK_IN_EXCEPTION = BUGGY.replace(
    "    return a - b\n", "    raise AssertionError(open('/repo/tests/test_add.py').read())\n"
)
_LEAK_PREFIXED = BUGGY.replace(
    "    return a - b\n",
    "    raise ValueError('\\n'.join('>> ' + line for line in open('/repo/tests/test_add.py').read().splitlines()))\n",
)
LEAKS = {
    "fake_summary_line_with_the_whole_file": _LEAK_IN_SUMMARY,
    "exception_message_is_the_file": _LEAK_IN_EXCEPTION,
    "exception_lines_prefixed": _LEAK_PREFIXED,
}


class FeedbackProbe:
    """Attempt 1 writes `source` into calc/__init__.py; every attempt records the feedback it got."""

    model = None

    def __init__(self, sources: dict[str, str]):
        self.sources, self.name, self.heard = sources, "feedback-probe", {}

    def run(self, ctx) -> AgentResult:
        if ctx.attempt == 1:
            ctx.sandbox.write_file("calc/__init__.py", self.sources[ctx.task.id])
        self.heard.setdefault(ctx.task.id, []).append(ctx.feedback)
        ctx.transcript.write(Stop(reason="submitted"))
        return AgentResult(stop_reason="submitted", steps=1)

    def describe(self) -> dict:
        return {"agent": self.name}


@pytest.fixture(scope="module")
def leak_feedback(hostile, tmp_path_factory) -> dict:
    where = tmp_path_factory.mktemp("leaks")
    specs = [hostile["spec"](where / "specs", f"leak-{name.replace('_', '-')}") for name in LEAKS]
    probe = FeedbackProbe({f"leak-{name.replace('_', '-')}": src for name, src in LEAKS.items()})
    options = RunOptions(out=where / f"{RUN_PREFIX}leaks", workers=3, infra_retries=0, attempts=2, feedback="hidden")
    Runner([load_task(p) for p in specs], probe, options).run()
    return {name: probe.heard[f"leak-{name.replace('_', '-')}"] for name in LEAKS}


@pytest.mark.parametrize("attack", list(LEAKS))
def test_hidden_feedback_never_carries_a_line_of_the_hidden_tests(attack, leak_feedback, hostile):
    heard = leak_feedback[attack]
    assert len(heard) == 2 and heard[0] is None and heard[1], heard
    hidden = [
        line.strip()
        for line in (hostile["root"] / "test.diff").read_text().splitlines()
        if line.startswith("+") and not line.startswith("+++") and len(line.strip()) > 8
    ]
    hidden = [line[1:].strip() for line in hidden]
    assert ADD_ID in heard[1]  # the grader's own knowledge: which hidden test failed
    leaked = [line for line in hidden if line in heard[1]]
    assert not leaked and HIDDEN not in heard[1], (leaked, heard[1])


# -- cause 13: old verdicts go stale ----------------------------------------------------------------


def test_regrade_gives_a_run_new_verdicts_in_a_new_folder(hostile, tmp_path):
    """A run graded by an older grader (here: its row and grade.json say what the old grader said of
    a pytest.xfail() non-fix) is re-graded from its patches into a new folder: same rows, new grades,
    a manifest that says where they came from and which grader gave them."""
    from harness.grading import GRADER_VERSION
    from harness.records import RunFolder, read_results

    agent = Script(_files(**{"calc/__init__.py": CHANNELS["pytest_xfail_at_run_time"]}), name="xfail")
    out = out_dir(tmp_path, "old")
    row = run(hostile["spec"](tmp_path), agent, out)["hostile-task"]
    assert json.loads((out / row.dir / "grade.json").read_text())["grader_version"] == GRADER_VERSION
    # what a grader before this version wrote
    old = row.model_copy(update={"outcome": Outcome.resolved, "resolved": True})
    (out / "results.jsonl").write_text(old.model_dump_json() + "\n")
    stale = json.loads((out / row.dir / "grade.json").read_text())
    stale.pop("grader_version")
    (out / row.dir / "grade.json").write_text(json.dumps({**stale, "outcome": "resolved", "resolved": True}))
    new = out_dir(tmp_path, "new")
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "regrade", str(out), "--out", str(new)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = read_results(new / "results.jsonl")
    assert [(r.task_id, r.config, r.repeat, r.attempt) for r in rows] == [
        (row.task_id, row.config, row.repeat, row.attempt)
    ]
    assert rows[0].outcome == "unresolved" and not rows[0].resolved
    grade = json.loads((new / rows[0].dir / "grade.json").read_text())
    assert grade["grader_version"] == GRADER_VERSION and grade["outcome"] == "unresolved"
    assert (new / rows[0].patch_path).read_text() == (out / row.patch_path).read_text()
    manifest = RunFolder(new).manifest()
    assert manifest["regraded_from"]["run_dir"] == str(out.resolve())
    assert manifest["regraded_from"]["grader_versions"] == [None] and manifest["grader_version"] == GRADER_VERSION
    assert read_results(out / "results.jsonl")[0].outcome == "resolved"  # the old folder is never rewritten


# ------------------------------------------------------------------------------------ reading the future


def test_the_future_and_the_hidden_tests_are_nowhere_in_the_agent_container(hostile, image, tmp_path):
    """Through git (all refs, reflog, packed refs, every object, unreachable ones too), through
    pack and bundle files anywhere, and through a grep of the whole filesystem: the fix commit
    and the hidden tests are not there. The task image's layers (read from the host) neither."""
    tokens = f"-e {FUTURE} -e {HIDDEN}"
    probes = Script(
        "git log --all --oneline; git reflog --all; cat .git/packed-refs 2>/dev/null; git tag; git branch -a; "
        "git stash list; git remote -v; git rev-list --all | wc -l",
        "git fsck --unreachable --lost-found --no-progress 2>&1; git count-objects -v",
        f"git cat-file --batch-all-objects --batch-check; git cat-file --batch-all-objects --batch | grep -ac {tokens}",
        f"git cat-file -t {hostile['fix']} 2>&1 || echo absent",
        "find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o \\( -name '*.pack' -o -name '*.bundle' "
        "-o -name 'ORIG_HEAD' -o -name '*.orig' -o -name '*.rej' \\) -print 2>/dev/null",
        ("grep -rals --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev " + tokens + " / ; echo grep-done", 120),
        f"grep -rals {hostile['fix']} / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev; echo grep-done",
    )
    row = run(hostile["spec"](tmp_path), probes, out_dir(tmp_path, "future"))["hostile-task"]
    refs, fsck, objects, fix_obj, packs, grep_tokens, grep_fix = (r.stdout + r.stderr for r in probes.outputs)
    text = "\n".join([refs, fsck, objects, fix_obj, packs, grep_tokens, grep_fix])
    assert FUTURE not in text and HIDDEN not in text
    assert refs.strip().splitlines()[-1].strip() == "1"  # one commit reachable from every ref
    assert objects.strip().splitlines()[-1] == "0"  # no object holds a token
    assert "absent" in fix_obj or "could not get object" in fix_obj or "fatal" in fix_obj
    assert grep_tokens.strip() == "grep-done" and grep_fix.strip() == "grep-done", (grep_tokens, grep_fix)
    assert row.outcome == "empty_patch"
    # every layer of the image the agent's container is made from, read from the host
    found, carry = False, b""
    for chunk in client().images.get(image[0]).save(chunk_size=1 << 20):
        window = carry + chunk
        if FUTURE.encode() in window or HIDDEN.encode() in window:
            found = True
            break
        carry = window[-64:]
    assert not found, "a token of the future is in the task image's layers"


# ------------------------------------------------------------------------------------ network


def test_no_network_egress_from_the_agent_or_grading_container(hostile, tmp_path):
    """pip, HTTP(S), raw sockets to an address, DNS: all fail fast; the only interface is lo.
    The hidden test command probes the grading container the same way."""
    connect = "import socket; socket.create_connection(({host!r}, {port}), timeout=3)"
    probes = Script(
        "pip download --no-cache-dir --no-deps --retries 0 --timeout 3 -d /tmp/dl requests",
        "python3 -c \"import urllib.request; urllib.request.urlopen('https://pypi.org/simple/', timeout=3)\"",
        "command -v curl >/dev/null && curl -sS -m 3 https://pypi.org || echo no-curl >&2; exit 1",
        'python3 -c "' + connect.format(host="1.1.1.1", port=443) + '"',
        'python3 -c "' + connect.format(host="172.17.0.1", port=2375) + '"',
        "getent hosts pypi.org; getent hosts github.com",
        "ls /sys/class/net; (ip -o link 2>/dev/null || true)",
        "ls -la /var/run/docker.sock /run/docker.sock 2>&1",
        "echo '# touched' >> calc/__init__.py",
    )
    command = (
        "ls /sys/class/net > /tmp/ifaces; getent hosts pypi.org && echo GRADING-DNS-WORKS; "
        "python -m pytest -rA -p no:cacheprovider tests; code=$?; echo interfaces: $(cat /tmp/ifaces); exit $code"
    )
    out = out_dir(tmp_path, "network")
    row = run(hostile["spec"](tmp_path, command=command), probes, out)["hostile-task"]
    pip, urllib, curl, ip, gateway, dns, ifaces, sock, _ = probes.outputs
    for result in (pip, urllib, curl, ip, gateway, dns):  # each fails on its own, before the 5 s timeout
        assert result.returncode != 0 and not result.timed_out, result
    assert ifaces.stdout.split("\n")[0].split() == ["lo"], ifaces.stdout
    assert "No such file" in sock.stdout
    test_output = (out / row.dir / "test_output.txt").read_text()
    assert "interfaces: lo" in test_output and "GRADING-DNS-WORKS" not in test_output
    assert row.outcome == "unresolved"


# ------------------------------------------------------------------------------------ secrets


CANARY_NAMES = [
    "WHOLELOOP_CANARY_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "GITHUB_TOKEN",
    "WHOLELOOP_CANARY_PLAIN",
]  # the last one's name does not look secret


def test_host_secrets_never_reach_the_containers_or_the_run_folder(hostile, tmp_path, monkeypatch):
    canaries = {name: f"sk-canary-{secrets.token_hex(12)}" for name in CANARY_NAMES}
    for name, value in canaries.items():
        monkeypatch.setenv(name, value)
    inspected: list[str] = []
    probes = Script(
        "env",
        "cat /proc/1/environ | tr '\\0' '\\n'; cat /proc/self/environ | tr '\\0' '\\n'",
        "grep -rs sk-canary /etc /root /tmp /repo /opt 2>/dev/null | head; echo done",
        lambda sb: inspected.append(json.dumps(client().api.inspect_container(sb.id))),
        "echo '# touched' >> calc/__init__.py",
    )
    command = "env; cat /proc/1/environ | tr '\\0' '\\n'; python -m pytest -rA -p no:cacheprovider tests"
    out = out_dir(tmp_path, "canary")
    row = run(hostile["spec"](tmp_path, command=command), probes, out)["hostile-task"]
    seen = "\n".join(r.stdout + r.stderr for r in probes.outputs if r is not None) + "\n".join(inspected)
    for name, value in canaries.items():
        assert value not in seen, f"{name} is visible inside the agent's container"
        assert name not in seen, f"{name} (the name) is visible inside the agent's container"
    assert "VIRTUAL_ENV" in seen  # the probes did read the environment
    files = [f for f in out.rglob("*") if f.is_file()]
    assert any(f.name == "test_output.txt" for f in files) and row.outcome == "unresolved"
    for f in files:
        data = f.read_bytes()
        for name, value in canaries.items():
            assert value.encode() not in data, f"{name} leaked into {f.relative_to(out)}"
    assert "VIRTUAL_ENV" in (out / row.dir / "test_output.txt").read_text()  # grading's env was printed


# ------------------------------------------------------------------------------------ leftovers after a SIGKILL


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _kill_a_run_mid_grading(hostile, tmp_path: Path, case: str) -> tuple[Path, list]:
    """Start `wholeloop run` in a subprocess on a task whose hidden tests never end, SIGKILL it
    while it grades, and return its run folder and the containers it left behind."""
    spec = hostile["spec"](tmp_path / case, command="sleep 600")
    out = out_dir(tmp_path, case)
    log = tmp_path / f"{case}.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness.cli", "run", str(spec), "--agent", "gold", "--out", str(out)],
            cwd=ROOT,
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    try:

        def grading():
            if proc.poll() is not None:
                raise AssertionError(
                    f"wholeloop run ended ({proc.returncode}) before grading: {log.read_text()[-2000:]}"
                )
            found = [c for c in our_containers() if c.labels.get(LABEL_RUN) == out.name]
            return found if any(c.labels.get("wholeloop.role") == "grading" for c in found) else None

        try:
            orphans = _wait_for(grading, 90, "the grading container")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{log.read_text()[-2000:]}") from None
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()  # reaped: its pid is no longer alive
    assert proc.returncode == -signal.SIGKILL
    return out, orphans


def test_containers_of_a_killed_run_are_pruned_and_a_live_ones_are_kept(hostile, image, tmp_path):
    with DockerSandbox.start(image[0], role="agent", run_id=f"{RUN_PREFIX}live") as live:
        out, orphans = _kill_a_run_mid_grading(hostile, tmp_path, "killed")
        names = {c.name for c in orphans}
        assert names <= {c.name for c in our_containers()}  # the SIGKILL left them
        pruned = subprocess.run(
            [sys.executable, "-m", "harness.cli", "prune"], cwd=ROOT, capture_output=True, text=True
        )
        assert pruned.returncode == 0, pruned.stderr
        left = {c.name for c in our_containers()}
        assert not names & left, "the killed run's containers are still there"
        assert live.name in left and live.exec("echo alive").stdout == "alive\n"
        # a new run cleans up after a killed one, too, and leaves the live container alone
        out, orphans = _kill_a_run_mid_grading(hostile, tmp_path, "killed-again")
        run(hostile["spec"](tmp_path / "next"), Script(), out_dir(tmp_path, "next"))
        left = {c.name for c in our_containers()}
        assert not {c.name for c in orphans} & left and live.name in left


# ------------------------------------------------------------------------------------ terminal escapes in reviewer views


# What a hostile tool output (or test output, or file in the patch) carries: set the terminal's
# title (BEL- and ST-terminated), clear the screen, move up and erase the line above, print a fake
# green verdict, the 8-bit CSI, a hyperlink, a carriage return and backspaces that overwrite a
# verdict, a right-to-left override, bell, form feed, NUL and DEL.
ESCAPES = (
    "\x1b]0;pwned-title\x07"
    "\x1b]2;pwned-title-st\x1b\\"
    "\x1b[2J\x1b[H"
    "\x1b[1A\x1b[2K"
    "\x1b[32mFAKE: all hidden tests passed, outcome resolved\x1b[0m\n"
    "\u009b2J c1-csi\n"
    "\x1b]8;;http://evil.invalid/\x1b\\a link\x1b]8;;\x1b\\\n"
    "outcome: unresolved\routcome: resolved  \n"
    "FAIL\b\b\b\bPASS\n"
    "\u202eright-to-left\u202c\n"
    "\x07bell \x0cff \x00nul \x7fdel\n"
)
# Characters a terminal or a page would act on instead of showing (tab and newline are text).
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# With colour forced, rich writes its own SGR codes; none of these is ever one of them.
DANGEROUS = [
    "\x1b]",
    "\x1b[2J",
    "\x1b[H",
    "\x1b[1A",
    "\x1b[2K",
    "\x1b\\",
    "\x9b",
    "\r",
    "\b",
    "\x07",
    "\x00",
    "\u202e",
    "\x1b[32mFAKE",
]


@pytest.fixture(scope="module")
def escape_run(hostile, tmp_path_factory) -> tuple[Path, str]:
    """A real run whose tool outputs, patch and hidden test output all carry ESCAPES."""
    where = tmp_path_factory.mktemp("escapes")
    printer = f"import sys\nsys.stdout.write({ESCAPES!r})\nsys.stderr.write({ESCAPES!r})\n"
    command = "python3 calc/esc.py; python -m pytest -rA -p no:cacheprovider tests"
    spec = hostile["spec"](where / "specs", "escape-task", command=command)
    agent = Script(
        _files(**{"calc__SLASH__esc.py": printer, "calc__SLASH__banner.txt": ESCAPES}),
        "python3 calc/esc.py",
        "cat calc/banner.txt; echo done",
    )
    out = where / f"{RUN_PREFIX}escapes"
    row = run(spec, agent, out)["escape-task"]
    assert ESCAPES.split("\n")[0] in agent.outputs[1].stdout  # the container really printed them
    assert "pwned-title" in (out / row.dir / "test_output.txt").read_text()
    return out, row.task_id


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=ROOT,
        capture_output=True,
        env={**os.environ, "COLUMNS": "150", **(env or {})},
    )


def test_show_makes_escapes_visible_and_never_writes_them(escape_run):
    out, task = escape_run
    shown = _cli("show", str(out), task, "--full")
    assert shown.returncode == 0, shown.stderr[-2000:]
    text = shown.stdout.decode()
    assert CONTROL.findall(text) == [], sorted(set(CONTROL.findall(text)))
    assert "pwned-title" in text and "FAKE: all hidden tests passed" in text  # shown, as text
    assert "␛]0;pwned-title" in text and "␛[32mFAKE" in text  # ...with the escape made visible


@pytest.mark.parametrize("what", ["show", "report"])
def test_a_colour_terminal_gets_only_wholeloops_own_styles(escape_run, what):
    """With colour forced (as in a terminal), rich styles its output; no sequence of the agent's
    passes: no title, no clearing, no cursor moves, no fake green line, no CR or backspace."""
    out, task = escape_run
    args = ("show", str(out), task, "--full") if what == "show" else ("report", str(out))
    shown = _cli(*args, env={"FORCE_COLOR": "1", "TERM": "xterm-256color"})
    assert shown.returncode == 0, shown.stderr[-2000:]
    text = shown.stdout.decode()
    assert "\x1b[" in text  # colour really is on
    assert [d for d in DANGEROUS if d in text] == []


def test_the_html_report_shows_escapes_as_visible_characters(escape_run, tmp_path):
    from support.browser import CHROMIUM, Browser

    if not CHROMIUM:
        pytest.skip("chromium not installed")
    out, task = escape_run
    made = _cli("report", str(out), "--html", str(tmp_path / "esc.html"))
    assert made.returncode == 0, made.stderr[-2000:]
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(tmp_path / "esc.html")
        browser.wait_js("window.__wholeloop && window.__wholeloop.ready")
        title = browser.js("document.title")
        browser.js("document.querySelector('#mx .cell').click()")
        browser.wait_js("document.getElementById('dr-body').textContent.includes('pwned')")
        seen = {"transcript": browser.js("document.getElementById('dr-body').textContent")}
        for tab in ("diff", "tests", "details"):
            browser.js(f"document.querySelector('#dr-tabs [data-tab={tab}]').click()")
            browser.wait_js(f"document.querySelector('#dr-tabs [data-tab={tab}]').classList.contains('on')")
            seen[tab] = browser.js("document.getElementById('dr-body').textContent")
        assert browser.errors() == []
        assert browser.js("document.title") == title and "pwned" not in title
    finally:
        browser.close()
    for tab, text in seen.items():
        assert CONTROL.findall(text) == [], (tab, sorted(set(CONTROL.findall(text))))
    assert "␛]0;pwned-title" in seen["transcript"] and "␛[32mFAKE" in seen["transcript"]
    assert "pwned-title" in seen["diff"] and "pwned-title" in seen["tests"]


# ------------------------------------------------------------------------------------ two writers of one run folder


def test_a_second_run_into_a_folder_being_written_is_refused_at_once(hostile, tmp_path):
    """`wholeloop run --out RUN` while another one writes RUN: refused within seconds, with a
    message naming the other run. Once that one is SIGKILLed (no clean-up at all), the lock has
    died with it: the same command runs, and the unit has one final row."""
    spec = hostile["spec"](
        tmp_path / "busy", command="sleep 15; python -m pytest -rA -p no:cacheprovider tests", tests_s=60
    )
    out = out_dir(tmp_path, "busy")
    cmd = [sys.executable, "-m", "harness.cli", "run", str(spec), "--agent", "gold", "--out", str(out)]
    log = tmp_path / "first.log"
    with open(log, "wb") as fh:
        first = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
    try:

        def grading():
            assert first.poll() is None, log.read_text()[-2000:]
            return any(
                c.labels.get(LABEL_RUN) == out.name and c.labels.get("wholeloop.role") == "grading"
                for c in our_containers()
            )

        _wait_for(grading, 90, "the first run's grading container")
        second = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=180)
        assert second.returncode != 0, (second.returncode, second.stdout[-1500:])
        # refused at once, not after waiting for the lock: it names the other run, which goes on
        assert "another wholeloop run" in second.stderr and f"pid {first.pid}" in second.stderr, second.stderr
        assert first.poll() is None  # the first one was not disturbed
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    third = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert third.returncode == 0, third.stdout[-2000:] + third.stderr[-2000:]
    finals = [r for r in RunFolder(out).latest() if r.final]
    assert len(finals) == 1 and finals[0].outcome == "resolved", [(r.outcome, r.error) for r in finals]


def test_two_runners_in_one_process_cannot_share_a_run_folder(hostile, tmp_path):
    """The lock is taken per open of the folder, so even two runners of one process (two
    threads) exclude each other; the first keeps working and ends normally."""
    from harness.records import RunFolderBusy  # (not at the top: this file must import without it, to show the attack)

    spec = hostile["spec"](
        tmp_path / "threads", command="sleep 8; python -m pytest -rA -p no:cacheprovider tests", tests_s=60
    )
    out = out_dir(tmp_path, "threads")
    options = RunOptions(out=out, infra_retries=0)
    first = Runner([load_task(spec)], get_agent("gold"), options)
    rows: list = []
    thread = threading.Thread(target=lambda: rows.extend(first.run()))
    thread.start()
    try:
        _wait_for(
            lambda: any(c.labels.get(LABEL_RUN) == out.name for c in our_containers()),
            60,
            "the first runner's container",
        )
        with pytest.raises(RunFolderBusy, match="another wholeloop run"):
            Runner([load_task(spec)], get_agent("gold"), options).run()
    finally:
        thread.join(timeout=120)
    assert [r.outcome for r in rows] == ["resolved"]
    assert len([r for r in RunFolder(out).rows() if r.final]) == 1


def _secret_forms(value: str) -> dict[str, bytes]:
    """The key and its base64, plain and inside a longer base64 text at each of the three offsets
    (as an HTTP Basic credential carries it): what must appear nowhere."""
    import base64

    forms = {"plain": value.encode(), "base64": base64.b64encode(value.encode())}
    for shift in (1, 2, 3):  # prefix lengths 1..3 cover the three alignments
        encoded = base64.b64encode(b"u" * shift + b":" + value.encode())
        forms[f"base64+{shift}"] = encoded[8:-4]  # the part that depends on the key alone
    return forms


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_key_echoed_by_the_provider_reaches_no_file_and_no_console(hostile, tmp_path, provider):
    """A provider answers 401 with the key it was sent in the body (plain, base64, in a Basic
    credential). Through the real CLI (run, report, report --html, show), neither the key nor its
    base64 is in any file of the run folder or on stdout/stderr; the error still says 401."""
    from support.fakellm import FakeLLM, echo_key_401

    canary = f"sk-canary-{provider}-{secrets.token_hex(16)}"
    env_key = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}[provider]
    spec = hostile["spec"](tmp_path / "specs", f"canary-{provider}")
    out = out_dir(tmp_path, f"key-{provider}")
    env = {**os.environ, env_key: canary, "COLUMNS": "200"}
    with FakeLLM(responder=echo_key_401) as srv:
        url = srv.base_url if provider == "anthropic" else srv.openai_url
        ran = subprocess.run(
            [
                sys.executable,
                "-m",
                "harness.cli",
                "run",
                str(spec),
                "--model",
                f"{provider}/fake-model",
                "--base-url",
                url,
                "--out",
                str(out),
                "--infra-retries",
                "0",
                "--allow-unknown-model",
            ],
            cwd=ROOT,
            capture_output=True,
            env=env,
            timeout=300,
        )
        sent = [r.headers for r in srv.requests]
    assert sent and any(canary in " ".join(h.values()) for h in sent)  # the key really went to the provider
    consoles = [ran.stdout, ran.stderr]
    for args in (
        ["report", str(out)],
        ["report", str(out), "--html", str(out / "report.html")],
        ["show", str(out), f"canary-{provider}", "--full"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", *args], cwd=ROOT, capture_output=True, env=env, timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
        consoles += [done.stdout, done.stderr]
    row = RunFolder(out).latest()[0]
    assert row.outcome == "infra_error" and "401" in (row.error or ""), row.error
    files = [f for f in out.rglob("*") if f.is_file()]
    assert any(f.name == "results.jsonl" for f in files) and any(f.name == "transcript.jsonl" for f in files)
    leaks = [
        (name, str(f.relative_to(out)))
        for f in files
        for name, form in _secret_forms(canary).items()
        if form in f.read_bytes()
    ]
    leaks += [(name, "console") for text in consoles for name, form in _secret_forms(canary).items() if form in text]
    assert leaks == [], leaks


# ------------------------------------------------------------------------------------ PID 1 and restarts


CAME_BACK = "/var/tmp/came-back"  # every planted program appends its name here when it runs, once armed
ARMED = "[ -e /var/tmp/armed ] && echo {name} >> " + CAME_BACK


def _wrap(path_cmd: str, name: str) -> str:
    """Replace the program `path_cmd` resolves to by a bash wrapper that, once armed, says it ran
    and then runs the original (kept beside, so the container keeps working)."""
    return (
        f'p=$({path_cmd}); r=$(readlink -f "$p"); k=/usr/local/lib/real-{name}; cp "$r" $k; rm -f "$p"; '
        f'printf \'#!/bin/bash\\n{ARMED.format(name=name)}\\nexec %s "$@"\\n\' $k > "$p"; chmod 755 "$p"'
    )


EVIL_SO = r"""
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void came_back(void) {
    if (access("/var/tmp/armed", F_OK) != 0) return;
    int fd = open("/var/tmp/came-back", O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) { write(fd, "ld_so_preload\n", 14); close(fd); }
}
"""


@pytest.fixture(scope="module")
def evil_so(tmp_path_factory) -> bytes:
    """A shared library whose constructor says it ran: what /etc/ld.so.preload makes every dynamic program load."""
    where = tmp_path_factory.mktemp("evil-so")
    (where / "evil.c").write_text(EVIL_SO)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(where / "evil.so"), str(where / "evil.c")], check=True)
    return (where / "evil.so").read_bytes()


# Each way back in: what the agent plants, as shell commands run in its container.
COME_BACK = {
    "sleep": [_wrap("command -v sleep", "sleep")],
    "sh": [
        "printf '#!/bin/bash\\n" + ARMED.format(name="sh") + '\\nexec /bin/dash "$@"\\n\' > /usr/local/lib/evil-sh; '
        "chmod 755 /usr/local/lib/evil-sh; ln -sf /usr/local/lib/evil-sh /bin/sh"
    ],
    "python3": [_wrap("command -v python3", "python3"), _wrap("echo /usr/bin/python3", "usr-python3")],
    "helper_tools": [_wrap(f"command -v {tool}", tool) for tool in ("mkdir", "ln", "readlink", "env", "timeout")],
    "ld_so_preload": ["echo /var/tmp/evil.so > /etc/ld.so.preload"],
    "profile_rc": [
        f"for f in /etc/profile /root/.profile /root/.bashrc /root/.bash_profile /etc/bash.bashrc "
        f"/etc/profile.d/zz.sh /var/tmp/bash-env; do mkdir -p $(dirname $f); "
        f"echo '{ARMED.format(name='profile_rc')}' >> $f; done; echo BASH_ENV=/var/tmp/bash-env >> /etc/environment"
    ],
}


def _processes(sb) -> list[str]:
    """The container's processes as the engine sees them (from the host: nothing runs inside)."""
    top = client().api.top(sb.id)
    cmd = top["Titles"].index("CMD")
    return [p[cmd] for p in top["Processes"]]


def _read_outside(sb, path: str) -> bytes | None:
    """A file of the container read through the Engine API's archive (no process runs inside)."""
    import io
    import tarfile

    try:
        stream, _ = client().api.get_archive(sb.id, path)
    except docker.errors.NotFound:
        return None
    data = b"".join(stream)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return tar.extractfile(tar.next()).read()


@pytest.mark.parametrize("way", list(COME_BACK))
def test_after_stop_processes_nothing_of_the_agent_runs_again(image, evil_so, way):
    """The agent replaces a program that PID 1, a restart or the exec helper's start would run
    (sleep, /bin/sh, python3, the helper's boot tools), or plants /etc/ld.so.preload or a
    profile/rc file, arms it and stops. After `stop_processes()` the container runs PID 1 alone --
    wholeloop's own read-only init -- and nothing planted ever ran (seen from outside, for 3 s)."""
    with DockerSandbox.start(
        image[0], limits=Limits(command_timeout_s=20), role="agent", run_id=f"{RUN_PREFIX}pid1"
    ) as sb:
        if way == "ld_so_preload":
            sb.write_file("/var/tmp/evil.so", evil_so)
        for command in COME_BACK[way]:
            done = sb.exec(command)
            assert done.ok, (command, done.stderr)
        assert sb.exec("touch /var/tmp/armed").ok
        sb.stop_processes()
        seen: set[str] = set()
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            seen.update(_processes(sb))
            time.sleep(0.3)
        assert _read_outside(sb, CAME_BACK) is None, _read_outside(sb, CAME_BACK)  # nothing planted ran
        assert len(seen) == 1 and "wholeloop" in seen.pop(), seen  # PID 1 alone, ours


def test_pid1_cannot_be_replaced_killed_or_entered_from_inside(image):
    """The agent is root in its container: it still cannot kill PID 1, stop it, write its memory
    or read its environment (not dumpable), replace its binary (read-only), or leave zombies."""
    with DockerSandbox.start(
        image[0], limits=Limits(command_timeout_s=20), role="agent", run_id=f"{RUN_PREFIX}pid1b"
    ) as sb:
        init = sb.exec("tr '\\0' '\\n' < /proc/1/cmdline | head -n 1").stdout.strip()
        assert init.startswith("/")
        probes = {
            "mem": sb.exec("python3 -c \"open('/proc/1/mem', 'r+b')\""),
            "environ": sb.exec("cat /proc/1/environ"),
            "fds": sb.exec("echo x > /proc/1/fd/1 || readlink /proc/1/fd/0 || readlink /proc/1/cwd"),
            "exe": sb.exec("readlink -e /proc/1/exe"),
            "replace": sb.exec(f"cp /bin/true {init} || echo x > {init} || mv /bin/true {init} || umount {init}"),
        }
        for name, result in probes.items():
            assert not result.ok, (name, init, result.stdout, result.stderr)
        sb.exec("kill -9 1; kill -STOP 1; kill -TERM 1; kill -9 -1")  # kills the exec helper and the command too
        assert sb.exec("echo alive").stdout == "alive\n"
        assert (
            sb.exec(
                "for i in 1 2 3 4 5; do (sleep 0.1 &) ; done; sleep 1; ps -eo stat= | grep -c '^Z' || true"
            ).stdout.strip()
            == "0"
        )
        assert sb.status().running and sb.exec("tr '\\0' '\\n' < /proc/1/cmdline | head -n 1").stdout.strip() == init


def test_a_planted_loop_of_pid1_neither_outlives_a_timeout_nor_writes_while_the_patch_is_taken(hostile, tmp_path):
    """The agent replaces `sleep` by a loop that writes the fix into the repository, then kills
    PID 1's idle `sleep` so that PID 1 starts the loop at once (and again after any restart). Its
    next command times out; the patch must be the agent's (no fix) and never resolve."""
    fix = BUGGY.replace("a - b", "a + b")
    loop = (
        "#!/bin/bash\nwhile :; do cp /var/tmp/fix.py /repo/calc/__init__.py 2>/dev/null; "
        "/usr/local/lib/real-sleep 0.1; done\n"
    )
    processes: list[list[str]] = []
    agent = Script(
        "echo '# touched' >> calc/__init__.py",
        _files(**{"/var/tmp/fix.py": fix, "/var/tmp/loop.sh": loop}),
        "p=$(command -v sleep); cp $(readlink -f $p) /usr/local/lib/real-sleep; rm -f $p; cp /var/tmp/loop.sh $p; chmod 755 $p; "
        "pkill -P 1 -x sleep; true",
        ("/usr/local/lib/real-sleep 60", 2),  # times out: the timeout kills what this command started
        lambda sb: processes.append(_processes(sb)),
    )
    out = out_dir(tmp_path, "pid1-loop")
    row = run(hostile["spec"](tmp_path), agent, out)["hostile-task"]
    assert agent.outputs[3].timed_out
    assert not [p for p in processes[0] if "wlhelper" not in p and ("sleep" in p or "bash" in p)], processes[0]
    patch = (out / row.patch_path).read_text()
    assert "# touched" in patch and "a + b" not in patch
    assert row.outcome == "unresolved", (row.outcome, row.tests)


# ------------------------------------------------------------------------------------ the disk limit


DISK = "50m"
DISK_BYTES = 50 * 2**20
VENV_SITE = "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')"
FLOOD = "python3 -c \"import os\nos.makedirs('/var/tmp/f', exist_ok=True)\nfor i in range(200000): open('/var/tmp/f/%d' % i, 'w').close()\""
# Ways to write past a 50 MB limit, each where an agent can write.
FILLS = {
    "one_fallocate": "fallocate -l 1G /repo/big.bin",
    "dd_repo": "dd if=/dev/zero of=/repo/big.bin bs=1M count=200 status=none",
    "dd_tmp": "dd if=/dev/zero of=/tmp/big.bin bs=1M count=200 status=none",
    "root_cache": "mkdir -p /root/.cache/pip && dd if=/dev/zero of=/root/.cache/pip/big bs=1M count=200 status=none",
    "venv": f"dd if=/dev/zero of={VENV_SITE}/big.bin bs=1M count=200 status=none",
    "parallel": "for i in 1 2 3 4 5 6 7 8; do mkdir -p /var/tmp/p$i; "
    "dd if=/dev/zero of=/var/tmp/p$i/f bs=1M count=40 status=none & done; wait",
    "sparse_then_filled": "truncate -s 10G /repo/sparse.bin && "
    "dd if=/dev/urandom of=/repo/sparse.bin bs=1M count=200 conv=notrunc status=none",
    "etc_hosts": "dd if=/dev/zero of=/etc/hosts bs=1M count=200 status=none",
    "etc_resolv_conf": "dd if=/dev/zero of=/etc/resolv.conf bs=1M count=200 status=none",
    "inode_flood": FLOOD,
}


def _written(sb) -> tuple[int, int]:
    """(bytes, files) the container wrote, counted from the host: the disk blocks allocated in its
    writable layer and in the files docker keeps for it outside the layer (hosts, resolv.conf,
    hostname), and the files in the layer. Blocks, not sizes: a sparse file costs no disk."""
    info = client().api.inspect_container(sb.id)
    upper = Path(info["GraphDriver"]["Data"]["UpperDir"])
    used, files = 0, 0
    for folder, _, names in os.walk(upper):
        for name in names:
            with contextlib.suppress(OSError):
                used += os.lstat(os.path.join(folder, name)).st_blocks * 512
                files += 1
    for key in ("HostsPath", "ResolvConfPath", "HostnamePath"):
        with contextlib.suppress(OSError, TypeError):
            used += os.stat(info[key]).st_blocks * 512
    return used, files


@pytest.mark.parametrize("fill", list(FILLS))
def test_a_container_cannot_write_past_its_disk_limit(image, fill):
    """Whatever the way (one fallocate, dd into the repository, /tmp, a cache in /root, the venv,
    eight writers at once, a sparse file filled, the files docker bind-mounts, 200k empty files),
    the container holds at most its limit, and a full disk is reported as `disk_limit`."""
    from sandbox import DiskLimitReached

    limits = Limits(command_timeout_s=120, disk=DISK)
    with DockerSandbox.start(image[0], limits=limits, role="agent", run_id=f"{RUN_PREFIX}disk") as sb:
        before, files_before = _written(sb)
        try:
            result = sb.exec(FILLS[fill])
            stopped = None
        except DiskLimitReached as exc:
            result, stopped = exc.result, exc
        written, files = _written(sb)
        assert written - before <= DISK_BYTES + 2**20, (fill, written - before, result)
        assert files - files_before < 20_000, (fill, files - files_before)
        if fill in ("one_fallocate", "sparse_then_filled", "etc_hosts", "etc_resolv_conf"):
            assert not result.ok  # refused at once (no file may exceed the limit; docker's /etc files are read-only)
        else:
            assert stopped is not None and sb.limit_reached() == "disk_limit", (fill, result)
            assert "disk limit" in str(stopped) and "50" in str(stopped)
        assert sb.exec("echo alive").stdout == "alive\n"  # the container still answers


def test_the_disk_limit_ends_the_attempt_with_its_stop_reason_in_rows_and_reports(hostile, tmp_path):
    """The tool-calling agent fills its disk: the attempt stops as `disk_limit` (the model is not
    asked again), the row and the transcript say so, and report and show print it."""
    from harness.agents.config import load_agent_config
    from harness.agents.loop import ToolAgent
    from harness.models import ScriptedModel, tool_turn

    model = ScriptedModel(
        [
            tool_turn("bash", {"command": "echo '# touched' >> calc/__init__.py"}),
            tool_turn("bash", {"command": FILLS["dd_repo"]}),
            tool_turn("bash", {"command": "echo never"}),
        ]
    )
    agent = ToolAgent(model, load_agent_config(None))
    out = out_dir(tmp_path, "disk-stop")
    row = run(hostile["spec"](tmp_path), agent, out, disk=DISK)["hostile-task"]
    assert row.stop_reason == "disk_limit" and row.error is None, (row.stop_reason, row.error, row.note)
    assert "disk limit" in row.note and row.steps == 2 and len(model.steps) == 1  # the third turn was never asked for
    events = [json.loads(line) for line in (out / row.transcript_path).read_text().splitlines()]
    assert [e["reason"] for e in events if e["type"] == "stop"] == ["disk_limit"]
    assert any(e["type"] == "limit" and e["limit"] == "disk_limit" for e in events)
    shown = _cli("show", str(out), "hostile-task").stdout.decode()
    reported = _cli("report", str(out)).stdout.decode()
    assert "stopped: disk_limit" in shown and "limit reached: disk_limit (" in shown and " MB of 50 MB)" in shown
    assert "disk_limit" in reported


def test_a_scripted_agent_that_fills_its_disk_also_stops_as_disk_limit(hostile, tmp_path):
    """An agent of any kind (here one that does not catch the sandbox's error) ends as disk_limit."""
    agent = Script("echo '# touched' >> calc/__init__.py", FILLS["parallel"], "echo never")
    out = out_dir(tmp_path, "disk-script")
    row = run(hostile["spec"](tmp_path), agent, out, disk=DISK)["hostile-task"]
    assert row.stop_reason == "disk_limit" and row.error is None, (row.stop_reason, row.error)
    assert len(agent.outputs) == 1  # the step after the fill never ran
    assert row.outcome in ("empty_patch", "unresolved")


def test_legitimate_writes_under_the_default_disk_limit_are_untouched(hostile, tmp_path):
    """What real agents write -- packages into the venv, caches in /root, scratch in /tmp, build
    output in the repository, 230 MB and 20k files in all -- fits the default limit; the fix still resolves."""
    agent = Script(
        f"cp -r {VENV_SITE}/_pytest {VENV_SITE}/_pytest_copy && mkdir -p /root/.cache/pip && "
        "dd if=/dev/zero of=/root/.cache/pip/wheel bs=1M count=100 status=none && "
        "dd if=/dev/zero of=/tmp/scratch bs=1M count=100 status=none && "
        "mkdir -p build && dd if=/dev/zero of=build/out.o bs=1M count=30 status=none && "
        "python3 -c \"import os\nos.makedirs('/var/tmp/many', exist_ok=True)\n"
        "for i in range(20000): open('/var/tmp/many/%d' % i, 'w').close()\" && df -h / | tail -1",
        _files(**{"calc__SLASH____init__.py": BUGGY.replace("a - b", "a + b")}),
    )
    out = out_dir(tmp_path, "disk-legit")
    row = run(hostile["spec"](tmp_path), agent, out, command_timeout_s=120)["hostile-task"]
    assert agent.outputs[0].ok, agent.outputs[0].stderr
    assert row.stop_reason == "submitted" and row.outcome == "resolved", (row.stop_reason, row.outcome, row.note)


@pytest.mark.parametrize("shape", ["many-workers", "one-big-limit"])
def test_a_run_whose_workers_times_the_disk_limit_exceed_the_free_space_is_refused(hostile, tmp_path, shape):
    """The preflight: the containers a run has at once x their disk limit above the engine's free
    disk space is refused before any container starts, saying how much is needed and is free."""
    free = shutil.disk_usage("/var/lib/docker" if os.path.isdir("/var/lib/docker") else "/").free
    n = int(free // 2**30) + 2
    many = ["--workers", str(n), "--repeats", str(n), "--disk", "1g"]
    args = many if shape == "many-workers" else ["--disk", f"{n}g"]
    spec = hostile["spec"](tmp_path / "preflight")
    out = out_dir(tmp_path, "preflight")
    done = _cli("run", str(spec), "--agent", "gold", "--out", str(out), *args)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert b"disk" in done.stderr and b"free" in done.stderr, done.stderr
    assert not [c for c in our_containers() if c.labels.get(LABEL_RUN) == out.name]


def test_prune_deletes_a_backing_file_a_killed_run_left():
    """A run killed between making a container's filesystem and mounting it leaves its sparse
    backing file in the engine's overlay2 folder; prune deletes it (a fresh one is left alone)."""
    from sandbox.docker import prune_containers

    root = Path(client().info()["DockerRootDir"]) / "overlay2"
    if not os.access(root, os.W_OK):
        pytest.skip(f"{root} is not writable here (no filesystem disk limit either)")
    stale, fresh = (root / f"wholeloop-test-{secrets.token_hex(4)}-{age}.wholeloop-disk" for age in ("old", "new"))
    for path in (stale, fresh):
        with open(path, "wb") as fh:
            fh.truncate(2**30)
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    try:
        prune_containers()
        assert not stale.exists() and fresh.exists()
    finally:
        stale.unlink(missing_ok=True)
        fresh.unlink(missing_ok=True)
