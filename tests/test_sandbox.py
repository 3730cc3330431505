"""The sandbox contract against the real Docker engine."""

import os

import pytest

from sandbox import BaseRules, FileOpError, Limits, Mount, take_patch
from sandbox.docker import DockerSandbox
from sandbox.docker.engine import client, prune_containers
from sandbox.docker.images import DEFAULT_BASE

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def sb():
    with DockerSandbox.start(
        DEFAULT_BASE, limits=Limits(output_bytes=4096, command_timeout_s=30), workdir="/tmp"
    ) as box:
        yield box


def test_exec_returns_code_and_separate_streams(sb):
    result = sb.exec("echo out; echo err >&2; exit 3")
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not result.timed_out and not result.truncated
    assert sb.exec("cat", stdin=b"fed through stdin").stdout == "fed through stdin"


def test_timeout_kills_the_whole_tree_including_setsid_daemons(sb):
    # A daemon the kill missed would hold the output: the call would not return (pytest-timeout).
    result = sb.exec("setsid sleep 1000 & (sleep 1000 &) ; sleep 1000", timeout=1)
    assert result.timed_out and result.returncode in (124, 137)
    assert "timed out" in result.stderr
    left = sb.exec("ps -eo args | grep -c '^sleep 1000' || true").stdout.strip()
    assert left == "0"


def test_output_is_capped_with_a_visible_marker(sb):
    result = sb.exec("head -c 50000000 /dev/zero | tr '\\0' x; echo END")
    assert result.truncated and result.output_bytes == 50_000_004
    assert "bytes of output truncated" in result.stdout and result.stdout.endswith("END\n")
    assert len(result.stdout) < 5000


def test_invalid_utf8_is_replaced_once_at_the_end(sb):
    result = sb.exec("printf 'a\\xff\\xe2\\x82'; printf '\\xacb'")
    assert result.stdout == "a\ufffd€b"


def test_files_round_trip_bytes_and_create_parents(sb):
    payload = bytes(range(256)) * 10
    sb.write_file("/tmp/deep/er/f.bin", payload)
    assert sb.read_file("/tmp/deep/er/f.bin") == payload
    with pytest.raises(FileOpError):
        sb.read_file("/tmp/missing.txt")
    with pytest.raises(FileOpError):
        sb.read_file("/tmp/deep")


def test_network_is_off_by_default(sb):
    result = sb.exec("python3 -c \"import socket; socket.create_connection(('pypi.org', 443), timeout=3)\"")
    assert result.returncode != 0


def test_limits_are_applied():
    with DockerSandbox.start(DEFAULT_BASE, limits=Limits(pids=64, memory="256m", cpus=0.5), workdir="/") as box:
        host = client().api.inspect_container(box.id)["HostConfig"]
        assert (host["PidsLimit"], host["Memory"], host["NanoCpus"]) == (64, 256 * 2**20, 500_000_000)
        assert host["NetworkMode"] == "none"
        bomb = box.exec("for i in $(seq 200); do sleep 5 & done; wait", timeout=3)
        assert "Resource temporarily unavailable" in bomb.stderr or "fork" in bomb.stderr


def test_the_patch_is_taken_from_outside_a_stopped_container_whatever_its_git():
    """Nothing of the container runs for its patch: with its git replaced by `false`, its repository
    deleted and the container stopped, the patch still has the new, changed, deleted and binary
    files, read through the engine, and the container starts again with its files."""
    with DockerSandbox.start(DEFAULT_BASE, workdir="/etc/apt") as box:
        box.exec(
            "printf 'new\\n' > new.txt && rm apt.conf.d/70debconf && echo '# x' >> sources.list && "
            "printf 'odd\\n' > \"apt.conf.d/caf$(printf '\\351')\" && cp /bin/false /usr/bin/git"
        )
        box.write_file("/etc/apt/blob.bin", bytes(range(256)))
        box.stop()
        assert [c.path for c in box.changes() if c.path == "new.txt"] == ["new.txt"]
        patch = take_patch(box, BaseRules(image_exclude=False)).text
        box.restart()
        assert "GIT binary patch" in patch and "+new" in patch and "+# x" in patch
        assert "b/blob.bin" in patch and "deleted file mode" in patch and "a/apt.conf.d/70debconf" in patch
        assert '"b/apt.conf.d/caf\\351"' in patch and "+odd" in patch  # a name that is not UTF-8, kept exactly
        assert "01autoremove" not in patch  # its folder was read whole, on both sides
        assert box.read_file("/etc/apt/new.txt") == b"new\n"


def test_prune_removes_only_containers_of_dead_owners():
    alive = DockerSandbox.start(DEFAULT_BASE, workdir="/")
    orphan = client().containers.run(
        DEFAULT_BASE,
        ["sleep", "infinity"],
        detach=True,
        init=True,
        labels={
            "wholeloop": "1",
            "wholeloop.role": "agent",
            "wholeloop.owner": "{}:999999999".format(__import__("socket").gethostname()),
        },
    )
    try:
        report = prune_containers()
        assert orphan.name in report.removed and alive.name in report.kept_live
    finally:
        alive.close()
        try:
            orphan.remove(force=True)
        except Exception:
            pass


def test_mounts_are_bound_read_only_unless_asked(tmp_path):
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "in.txt").write_text("from the host\n")
    (tmp_path / "rw").mkdir()
    mounts = (Mount(str(tmp_path / "ro"), "/mnt/ro"), Mount(str(tmp_path / "rw"), "/mnt/rw", read_only=False))
    with DockerSandbox.start(DEFAULT_BASE, workdir="/", mounts=mounts) as box:
        assert box.read_file("/mnt/ro/in.txt") == b"from the host\n"
        denied = box.exec("echo x > /mnt/ro/new.txt")
        assert denied.returncode != 0 and "Read-only file system" in denied.stderr
        assert box.exec("echo out > /mnt/rw/new.txt").ok
    assert (tmp_path / "rw" / "new.txt").read_text() == "out\n"


def test_named_networks_are_joined_and_no_other():
    net = client().networks.create(f"wholeloop-test-{os.getpid()}", internal=True, labels={"wholeloop": "1"})
    try:
        with DockerSandbox.start(DEFAULT_BASE, workdir="/", networks=(net.name,)) as box:
            attached = client().api.inspect_container(box.id)["NetworkSettings"]["Networks"]
            assert list(attached) == [net.name]
            assert box.exec("ls /sys/class/net").stdout.split() == ["eth0", "lo"]
    finally:
        net.remove()


def test_prune_of_one_run_folder_leaves_other_runs_alone(tmp_path):
    """`prune --run DIR` removes that run's leftovers only: another dead run's stay (issue 28)."""
    import socket

    from click.testing import CliRunner

    from harness.cli import main

    dead_owner = f"{socket.gethostname()}:999999999"

    def orphan(run_id: str):
        return client().containers.run(
            DEFAULT_BASE,
            ["sleep", "infinity"],
            detach=True,
            init=True,
            labels={
                "wholeloop": "1",
                "wholeloop.role": "agent",
                "wholeloop.owner": dead_owner,
                "wholeloop.run": run_id,
            },
        )

    (tmp_path / "run-a").mkdir()
    mine, theirs = orphan("run-a"), orphan("run-b")
    try:
        result = CliRunner().invoke(main, ["prune", "--run", str(tmp_path / "run-a")])
        assert result.exit_code == 0, result.output
        assert "removed 1 container(s) of run run-a" in result.output
        left = {c.name for c in client().containers.list(all=True, filters={"label": "wholeloop=1"})}
        assert mine.name not in left and theirs.name in left
    finally:
        for c in (mine, theirs):
            try:
                c.remove(force=True)
            except Exception:
                pass
