"""The exec contract through the in-container helper, its recovery when the agent kills it, and the
fallback to one Engine API exec per command (no python3, helper off, helper busy)."""

import resource
import threading
import time

import pytest

from sandbox import Limits
from sandbox.docker import DockerSandbox
from sandbox.docker.engine import client
from sandbox.docker.exec_fast import MAX_STARTS
from sandbox.docker.images import DEFAULT_BASE

pytestmark = pytest.mark.docker
LIMITS = Limits(output_bytes=4096, command_timeout_s=30)
NO_PYTHON = "wholeloop-test/nopython:1"


def settled(box, timeout=30):
    """The exec path once the helper's background start has ended, one way or the other."""
    deadline = time.monotonic() + timeout
    while box.exec_path == "pending" and time.monotonic() < deadline:
        time.sleep(0.02)
    return box.exec_path


@pytest.fixture(scope="module")
def sb():
    with DockerSandbox.start(DEFAULT_BASE, limits=LIMITS, workdir="/tmp", fast_exec=True) as box:
        assert settled(box) == "helper"
        yield box


@pytest.fixture
def fresh():
    with DockerSandbox.start(DEFAULT_BASE, limits=LIMITS, workdir="/tmp", fast_exec=True) as box:
        assert settled(box) == "helper"
        yield box


@pytest.fixture(scope="module")
def nopython_image():
    """The base image without any python: made once with `docker commit`, kept for reuse."""
    cli = client()
    try:
        cli.images.get(NO_PYTHON)
    except Exception:
        box = cli.containers.run(
            DEFAULT_BASE, ["/bin/sh", "-c", "rm -rf /usr/bin/python3* /opt/venv/bin/python*"], detach=True
        )
        try:
            box.wait(timeout=60)
            repo, tag = NO_PYTHON.split(":")
            box.commit(repository=repo, tag=tag, changes=["LABEL wholeloop=1 wholeloop.tier=test"])
        finally:
            box.remove(force=True)
    return NO_PYTHON


def marker_free_env(result):
    return sorted(line for line in result.stdout.splitlines() if not line.startswith(("WHOLELOOP_EXEC=", "HOSTNAME=")))


# ------------------------------------------------------------------ the contract, through the helper


def test_exit_codes_streams_and_stdin(sb):
    result = sb.exec("echo out; echo err >&2; exit 3")
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not result.timed_out and not result.truncated and result.output_bytes == 8
    assert sb.exec(["sh", "-c", "exit 0"]).ok
    assert sb.exec("kill -TERM $$").returncode == 143  # killed by a signal: 128 + signal, as a shell says
    assert sb.exec("cat", stdin=b"fed through stdin").stdout == "fed through stdin"
    big = bytes(range(256)) * 8192  # 2 MB, more than any pipe buffer
    assert sb.exec("sha256sum", stdin=big).stdout.split()[0] == __import__("hashlib").sha256(big).hexdigest()
    assert sb.exec("head -c 3", stdin=big).stdout == "\x00\x01\x02"  # a reader that stops early
    assert sb.exec("cat", stdin=b"").stdout == ""
    assert sb.exec("cat").stdout == ""  # no stdin: reads end at once, nothing hangs
    assert sb.exec_path == "helper"


def test_cwd_env_and_failures_match_the_engine_path(sb):
    with DockerSandbox.start(DEFAULT_BASE, limits=LIMITS, workdir="/tmp", fast_exec=False) as slow:
        for box in (sb, slow):
            assert box.exec("pwd").stdout == "/tmp\n"
            assert box.exec("pwd", cwd="/usr/lib").stdout == "/usr/lib\n"
            assert box.exec(["printenv", "FOO"], env={"FOO": "a b\nc"}).stdout == "a b\nc\n"
        assert marker_free_env(sb.exec("env", env={"X": "1"})) == marker_free_env(slow.exec("env", env={"X": "1"}))
        assert marker_free_env(sb.exec(["env"])) == marker_free_env(slow.exec(["env"]))
        for cmd, kw in ((["/nonexistent"], {}), (["/etc/passwd"], {}), ("pwd", {"cwd": "/nonexistent"})):
            assert sb.exec(cmd, **kw).returncode == slow.exec(cmd, **kw).returncode
        assert slow.exec_path.startswith("engine")


def test_timeout_kills_the_whole_tree_including_setsid_daemons(sb):
    # A daemon the kill missed would hold the output: the call would not return (pytest-timeout).
    result = sb.exec("setsid sleep 1000 & (sleep 1000 &) ; trap '' TERM; sleep 1000", timeout=1)
    assert result.timed_out and result.returncode in (124, 137)
    assert "timed out" in result.stderr
    assert sb.exec("ps -eo args | grep -c '^sleep 1000' || true").stdout.strip() == "0"
    assert sb.exec_path == "helper"  # the helper survived its command's kill


@pytest.mark.parametrize("fast", [True, False], ids=["helper", "engine"])
def test_timeout_kills_unmarked_term_proof_daemons_but_not_earlier_jobs(fast):
    """`env -i` drops the marker and these daemons ignore SIGTERM. The first hangs off the
    command's shell, which the SIGTERM kills (so by the SIGKILL it hangs off PID 1); the second is
    orphaned at once (double fork). Both die; a job an earlier command left running does not."""
    daemons = (
        "env -i setsid sh -c \"trap '' TERM; sleep 1009\" </dev/null >/dev/null 2>&1 & "
        "(env -i setsid sh -c \"trap '' TERM; sleep 1008\" </dev/null >/dev/null 2>&1 &); sleep 1000"
    )
    with DockerSandbox.start(DEFAULT_BASE, limits=LIMITS, workdir="/tmp", fast_exec=fast) as box:
        if fast:
            assert settled(box) == "helper"
        assert box.exec("(sleep 1500 >/dev/null 2>&1 &); sleep 1501 >/dev/null 2>&1 &").ok
        result = box.exec(daemons, timeout=1)
        assert result.timed_out and result.returncode in (124, 137)
        assert box.exec("ps -eo args | grep '^sleep 1[05][0-9][0-9]' | sort").stdout == "sleep 1500\nsleep 1501\n"


def test_background_jobs_do_not_hold_the_command_and_are_not_killed(sb):
    result = sb.exec("sleep 60 & echo started")
    assert result.stdout == "started\n" and result.ok and not result.timed_out
    # the job lives on (as with the engine): the call did not wait for it to end
    assert sb.exec("pgrep -fx 'sleep 60'").ok
    # done just before its deadline while a job still holds the output: done, not timed out
    late = sb.exec("sleep 0.9; sleep 61 & echo x", timeout=1)
    assert (late.stdout, late.timed_out, late.returncode) == ("x\n", False, 0)
    assert sb.exec("pgrep -fx 'sleep 61'").ok
    sb.exec("pkill -fx 'sleep 6[01]'")


def test_the_commands_session_is_its_own(sb):
    assert sb.exec("kill 0; echo after").returncode == 143  # `kill 0` hits the command only
    # The helper is not named python: the usual agent moves miss it (1: nothing matched).
    assert sb.exec(["pkill", "python3"]).returncode == sb.exec(["pkill", "-f", "python"]).returncode == 1
    assert sb.exec("echo still").stdout == "still\n" and sb.exec_path == "helper"


def test_output_is_capped_in_the_container_and_host_memory_stays_bounded(sb):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = sb.exec("head -c 50000000 /dev/zero | tr '\\0' x; echo END; head -c 50000000 /dev/zero >&2")
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert result.truncated and result.output_bytes == 100_000_004
    assert "bytes of output truncated" in result.stdout and result.stdout.endswith("END\n")
    assert result.stdout.startswith("x" * 2048) and len(result.stdout) < 4200
    assert "bytes of output truncated" in result.stderr and len(result.stderr) < 4200
    assert grown_mb < 20


def test_cap_keeps_exact_head_and_tail(sb):
    result = sb.exec("seq 1 100000", output_bytes=1000)
    head, _, tail = result.stdout.partition("\n[... wholeloop: ")
    text = "".join(f"{i}\n" for i in range(1, 100001))
    assert head == text[:500] and tail.split("...]\n", 1)[1] == text[-500:]
    dropped = int(tail.split(" bytes")[0])
    assert dropped == len(text) - 1000 == result.output_bytes - 1000


def test_invalid_utf8_and_characters_split_across_reads(sb):
    assert sb.exec("printf 'a\\xff\\xe2\\x82'; sleep 0.2; printf '\\xacb'").stdout == "a\ufffd€b"
    assert (
        sb.exec(
            "printf '\\xf0\\x9f'; sleep 0.2; printf '\\x98\\x80' >&1; printf '\\xc3' >&2; sleep 0.1; printf '\\xa9' >&2"
        ).stdout
        == "😀"
    )
    assert sb.exec("printf '\\xc3'; sleep 0.1; printf '\\xa9' >&2").stderr == "\ufffd"


@pytest.mark.parametrize("fast", [True, False], ids=["helper", "archive"])
def test_files_have_the_archive_semantics_on_both_paths(fast):
    from sandbox import FileOpError

    with DockerSandbox.start(DEFAULT_BASE, limits=LIMITS, workdir="/tmp", fast_exec=fast) as box:
        if fast:
            assert settled(box) == "helper"
        payload = bytes(range(256)) * 39_000  # 10 MB, every byte value
        box.write_file("/tmp/new/deep/f.bin", payload, mode=0o600)
        assert box.read_file("/tmp/new/deep/f.bin") == payload
        assert box.exec("stat -c '%a %U' /tmp/new/deep/f.bin").stdout == "600 root\n"
        box.write_file("rel.txt", "relative to the workdir é")
        assert box.read_file("/tmp/rel.txt") == "relative to the workdir é".encode()
        box.exec("echo target > /tmp/target; ln -s /tmp/target /tmp/link; mkfifo /tmp/fifo; touch /tmp/plain")
        for path, why in (
            ("/tmp/link", "not a regular file"),
            ("/tmp/fifo", "not a regular file"),
            ("/tmp/new", "is a directory"),
            ("/tmp/missing", "no such file"),
        ):
            with pytest.raises(FileOpError, match=why):
                box.read_file(path)
        with pytest.raises(FileOpError, match="the limit is 3"):
            box.read_file("/tmp/target", max_bytes=3)
        with pytest.raises(FileOpError, match="the limit is"):
            box.read_file("/tmp/new/deep/f.bin", max_bytes=1_000_000)  # unread: must not stall the engine
        box.write_file("/tmp/link", b"replaced")  # the link is replaced, its target untouched
        assert box.exec("cat /tmp/target; test -L /tmp/link || echo not-a-link").stdout == "target\nnot-a-link\n"
        with pytest.raises(FileOpError):
            box.write_file("/tmp/plain/under-a-file", b"x")


def test_a_write_onto_a_directory_is_refused_not_a_replacement(sb):
    from sandbox import FileOpError

    sb.exec("mkdir -p /tmp/keepme && touch /tmp/keepme/inside")
    with pytest.raises(FileOpError, match="directory"):
        sb.write_file("/tmp/keepme", b"x")
    assert sb.exec("ls /tmp/keepme").stdout == "inside\n"


# ------------------------------------------------------------------ the agent kills the helper


def test_helper_killed_by_the_command_is_reported_and_replaced(fresh):
    result = fresh.exec("pkill -f wlhelper; sleep 100")
    assert result.returncode == 137 and "result is incomplete" in result.stderr
    assert fresh.exec("ps -eo args | grep -c '^sleep 100' || true").stdout.strip() == "0"  # killed anyway
    assert fresh.exec("echo again").stdout == "again\n" and fresh.exec_path == "helper"


def test_kill_all_processes_leaves_the_container_and_commands_working(fresh):
    fresh.exec("sleep 1000 & echo")
    result = fresh.exec("kill -9 -1")
    assert not result.ok and "result is incomplete" in result.stderr
    assert fresh.status().state == "running"
    assert fresh.exec("echo after; ps -eo args | grep -c '^sleep 1000' || true").stdout == "after\n0\n"
    assert fresh.exec_path == "helper"


def test_helper_killed_between_commands_is_replaced_without_losing_a_result(fresh):
    fresh.exec("(sleep 0.3; pkill -9 -f wlhelper) >/dev/null 2>&1 &")
    time.sleep(1)
    result = fresh.exec("echo fine")
    assert (result.returncode, result.stdout, result.stderr) == (0, "fine\n", "")
    assert fresh.exec_path == "helper"


def test_a_helper_that_keeps_dying_gives_way_to_the_engine(fresh):
    for _ in range(MAX_STARTS + 1):
        fresh.exec("pkill -9 -f wlhelper")
    assert fresh.exec_path.startswith("engine")
    result = fresh.exec("echo out; echo err >&2; exit 4")
    assert (result.returncode, result.stdout, result.stderr) == (4, "out\n", "err\n")


def test_concurrent_commands_all_get_their_own_result(sb):
    results = {}

    def work(i):
        results[i] = sb.exec(f"sleep 0.3; echo {i}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {i: r.stdout for i, r in results.items()} == {i: f"{i}\n" for i in range(4)}


# ------------------------------------------------------------------ fallback


def test_an_image_without_python_falls_back_to_the_engine(nopython_image):
    with DockerSandbox.start(nopython_image, limits=LIMITS, workdir="/tmp") as box:
        result = box.exec("echo out; echo err >&2; exit 3")
        assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
        assert settled(box) == "engine (the helper cannot start: the image has no python3)"
        slow = box.exec("setsid sleep 1000 & sleep 1000", timeout=1)
        assert slow.timed_out and box.exec("ps -eo args | grep -c '^sleep 1000' || true").stdout == "0\n"
        assert box.exec("cat", stdin=b"in").stdout == "in"


def test_commands_before_the_helper_is_up_and_closing_while_it_starts():
    for _ in range(3):
        with DockerSandbox.start(DEFAULT_BASE, limits=LIMITS, workdir="/tmp") as box:
            assert box.exec("echo first").stdout == "first\n"  # engine or helper: the same answer
    with DockerSandbox.start(DEFAULT_BASE, limits=LIMITS, workdir="/tmp") as box:
        pass  # closed at once, while the helper may still be starting: nothing hangs or leaks
    assert not client().containers.list(all=True, filters={"name": box.name})


def test_fast_exec_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("WHOLELOOP_FAST_EXEC", "0")
    with DockerSandbox.start(DEFAULT_BASE, limits=LIMITS, workdir="/tmp") as box:
        assert box.exec("echo hi").stdout == "hi\n"
        assert box.exec_path == "engine (fast exec is off)"
        assert "wlhelper" not in box.exec("ps -eo args").stdout


@pytest.mark.parametrize("fast", [True, False])
def test_a_container_that_dies_mid_command_is_an_infrastructure_error(fast):
    from sandbox import ContainerGone

    with DockerSandbox.start(DEFAULT_BASE, limits=LIMITS, workdir="/tmp", fast_exec=fast) as box:
        if fast:
            assert settled(box) == "helper"
        threading.Timer(0.5, lambda: client().api.kill(box.id)).start()
        with pytest.raises(ContainerGone):
            box.exec("sleep 20")
