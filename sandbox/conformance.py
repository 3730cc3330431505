"""A conformance suite for sandboxes: run it against any implementation of `sandbox.base.Sandbox`.

Three tiers:

- `BACKEND`: what every `sandbox.base.Backend` keeps -- it names itself and its facts folder, says
  the id of an image it has, refuses an image it has not (ImageNotFound), and starts every sandbox
  fresh from its image (what one sandbox wrote is not in the next; a closed sandbox is gone).

- `CORE`: the contract every sandbox keeps, the tests' fakes included -- commands (exit codes,
  streams, cwd, env, stdin, timeouts, output caps), files (exact bytes, parents, errors), the
  patch taken from outside (changed, new, deleted, binary, executable and symlinked files; the
  sandbox's own repository, ignore rules and caches playing no part; huge files refused), and
  that every error is a `SandboxError`.
- `ISOLATION`: what only a real container gives -- no network, process-tree kills at a timeout,
  the pids and memory limits, stopping everything the agent left running, pausing. Never run
  these against a sandbox that acts on the host: they fork-bomb and fill memory on purpose.

Each check is a function `check(sb)` that raises AssertionError with what was wrong. `sb` is a
fresh sandbox whose `workdir` holds `BASE_TREE` as the tree it started with (for a container: its
image has them; `base_tree_script` writes them) and may be written, with `git` and a POSIX shell
available, and `limits.command_timeout_s` of at least 10 s. The host needs git (the patch is taken
with it). Run them with pytest by
parametrizing over `CORE` (and `ISOLATION` for containers), as tests/test_conformance.py does.
"""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Callable

from .base import Backend, ExecResult, Limits, Sandbox, SandboxStatus
from .errors import ContainerGone, FileOpError, ImageNotFound, PatchError, SandboxError
from .patch import BaseRules, take_patch

Check = Callable[[Sandbox], None]
# (backend, an image of it whose `workdir` holds BASE_TREE, that workdir)
BackendCheck = Callable[[Backend, str, str], None]

_GIT = "git -c user.name=t -c user.email=t@example.invalid -c init.defaultBranch=main"


def _ok(result: ExecResult, what: str) -> ExecResult:
    assert result.returncode == 0 and not result.timed_out, f"{what}: {result.returncode} {result.combined()}"
    return result


# What the workdir holds when a check starts: the sandbox's image had it (BASE_TREE is the tree the
# patch is taken against).
BASE_TREE: dict[str, bytes] = {
    "a.txt": b"one\ntwo\n",
    "old.txt": b"gone\n",
    "keep/k.txt": b"kept\n",
    ".gitignore": b"*.log\n",
    "lib/data.bin": bytes(range(256)),
}


# ------------------------------------------------------------------------------ core: commands


def check_exit_codes_and_streams(sb: Sandbox) -> None:
    result = sb.exec("echo out; echo err >&2; exit 3")
    assert result.returncode == 3 and not result.ok, result
    assert result.stdout == "out\n" and result.stderr == "err\n", (result.stdout, result.stderr)
    assert sb.exec(["sh", "-c", 'printf "%s" "$1"', "sh", "a b"]).stdout == "a b", "argv lists are not re-split"


def check_cwd_env_and_stdin(sb: Sandbox) -> None:
    assert sb.exec("pwd").stdout.strip().endswith(sb.workdir.rstrip("/") or "/"), "commands start in workdir"
    _ok(sb.exec("mkdir -p sub"), "mkdir")
    assert sb.exec("pwd", cwd=f"{sb.workdir.rstrip('/')}/sub").stdout.strip().endswith("/sub")
    assert sb.exec('printf "%s" "$WL_CHECK"', env={"WL_CHECK": "v 1"}).stdout == "v 1"
    assert sb.exec("cat", stdin=b"piped\x00bytes").stdout == "piped\x00bytes"


def check_timeout_returns_and_says_so(sb: Sandbox) -> None:
    started = time.monotonic()
    result = sb.exec("sleep 30", timeout=1)
    took = time.monotonic() - started
    assert result.timed_out and not result.ok, result
    assert took < 10, f"a 1 s timeout returned after {took:.1f} s"


def check_output_is_capped_with_a_marker(sb: Sandbox) -> None:
    result = sb.exec("head -c 200000 /dev/zero | tr '\\0' x", output_bytes=1000)
    assert result.truncated and result.output_bytes >= 200000, result.output_bytes
    assert len(result.stdout) < 2000 and "truncated" in result.stdout, len(result.stdout)
    invalid = sb.exec("printf 'a\\377b'")
    assert invalid.stdout == "a\ufffdb", repr(invalid.stdout)


# ------------------------------------------------------------------------------ core: files


def check_files_round_trip_exact_bytes(sb: Sandbox) -> None:
    data = bytes(range(256)) * 3 + b"\r\nno newline"
    sb.write_file("deep/er/blob.bin", data)
    assert sb.read_file("deep/er/blob.bin") == data, "bytes changed on the way"
    sb.write_file(f"{sb.workdir.rstrip('/')}/abs.txt", "text é\n")
    assert sb.read_file("abs.txt") == "text é\n".encode(), "absolute and relative paths differ"
    _ok(sb.exec("ln -s abs.txt link.txt"), "ln")
    sb.write_file("link.txt", b"replaced")
    assert sb.read_file("abs.txt") == "text é\n".encode(), "a write followed a symlink"
    assert sb.read_file("link.txt") == b"replaced"


def check_file_errors(sb: Sandbox) -> None:
    for bad in ("missing.txt", "."):
        try:
            sb.read_file(bad)
        except FileOpError:
            pass
        else:
            raise AssertionError(f"reading {bad!r} did not raise FileOpError")
    sb.write_file("big.txt", b"x" * 100)
    try:
        sb.read_file("big.txt", max_bytes=10)
    except FileOpError:
        pass
    else:
        raise AssertionError("a file over max_bytes was read")


def check_put_archive(sb: Sandbox) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("unpacked/f.txt")
        payload = b"from a tar\n"
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    sb.put_archive(sb.workdir, buf.getvalue())
    assert sb.read_file("unpacked/f.txt") == b"from a tar\n"


# ------------------------------------------------------------------------------ core: the patch


def base_tree_script(workdir: str) -> str:
    """A shell script that writes BASE_TREE into `workdir` (for an image the checks start from)."""
    lines = [f"mkdir -p {workdir}"]
    for path, data in BASE_TREE.items():
        octal = "".join(f"\\{b:03o}" for b in data)
        lines.append(f"mkdir -p \"$(dirname {workdir}/{path})\" && printf '{octal}' > {workdir}/{path}")
    return " && ".join(lines)


def _host_apply(patch: str) -> dict[str, bytes]:
    """BASE_TREE with `patch` applied by the host's git, outside any repository: {path: bytes or
    b"-> target" for a symlink}."""
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="wholeloop-conformance-") as tmp:
        root = Path(tmp) / "tree"
        for path, data in BASE_TREE.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(data)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": tmp,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
        }
        done = subprocess.run(
            ["git", "apply", "--binary", "-"], cwd=root, input=patch.encode(), capture_output=True, env=env
        )
        assert done.returncode == 0, f"the patch does not apply to the base tree: {done.stderr.decode()}\n{patch}"
        out = {}
        for sub in sorted(root.rglob("*")):
            rel = str(sub.relative_to(root))
            if sub.is_symlink():
                out[rel] = b"-> " + os.fsencode(os.readlink(sub))
            elif sub.is_file():
                out[rel] = sub.read_bytes() + (b" (x)" if sub.stat().st_mode & 0o111 else b"")
        return out


def check_the_patch_is_taken_from_outside(sb: Sandbox) -> None:
    """Changed, new, deleted, binary, executable and symlinked files make the patch, from the change
    list and the trees read out of the stopped sandbox and its image; the sandbox's own repository
    (commits, index, .gitignore, exclude) and caches play no part; the patch applies to the base."""
    rules = BaseRules(tracked=frozenset(BASE_TREE), gitignores=((".gitignore", BASE_TREE[".gitignore"]),))
    _ok(sb.exec(f"{_GIT} init -q . && {_GIT} add -A && {_GIT} commit -qm base"), "making a repository")
    _ok(
        sb.exec(
            "printf 'one\\nTWO\\n' > a.txt && rm old.txt && printf 'new\\n' > new.txt && "
            "printf '\\000\\001\\377' > lib/more.bin && chmod +x keep/k.txt && ln -s a.txt link && "
            "mkdir -p deep/er && printf 'x\\n' > deep/er/f.txt && printf 'noise\\n' > x.log && "
            "mkdir -p __pycache__ && printf 'pyc' > __pycache__/m.cpython-311.pyc && "
            "printf 'new.txt\\n' >> .gitignore && printf 'deep/\\n' >> .git/info/exclude && "
            f"{_GIT} add -A && {_GIT} commit -qm work"
        ),
        "changing files",
    )
    sb.stop()
    try:
        taken = take_patch(sb, rules)
    finally:
        sb.restart()
    patch = taken.text
    for needle in (
        "a/a.txt",
        "+TWO",
        "deleted file mode",
        "b/new.txt",
        "GIT binary patch",
        "new mode 100755",
        "new file mode 120000",
        "b/deep/er/f.txt",
        "b/.gitignore",
    ):
        assert needle in patch, f"{needle!r} missing from the patch:\n{patch}"
    for absent in ("x.log", "__pycache__", " a/.git/", " b/.git/"):
        assert absent not in patch, f"{absent!r} is in the patch:\n{patch}"
    assert "x.log" in taken.ignored and taken.ignored_count >= 2, taken.ignored
    applied = _host_apply(patch)
    assert applied["a.txt"] == b"one\nTWO\n" and "old.txt" not in applied and applied["new.txt"] == b"new\n"
    assert applied["lib/more.bin"] == b"\000\001\377" and applied["keep/k.txt"] == b"kept\n (x)"
    assert applied["link"] == b"-> a.txt" and applied["deep/er/f.txt"] == b"x\n"
    assert _ok(sb.exec("cat new.txt"), "the sandbox runs again after restart").stdout == "new\n"


def check_an_unchanged_tree_has_an_empty_patch(sb: Sandbox) -> None:
    _ok(sb.exec("cat a.txt > /dev/null"), "reading")
    assert take_patch(sb, BaseRules()).text == "", "a tree the agent left as it was has an empty patch"


def check_a_huge_file_is_refused(sb: Sandbox) -> None:
    _ok(sb.exec("head -c 5000 /dev/zero > big.bin && printf 'x' >> a.txt"), "writing a big file")
    try:
        take_patch(sb, BaseRules(), max_file_bytes=4000)
    except PatchError as exc:
        assert "big.bin" in str(exc), exc
        return
    raise AssertionError("a file over max_file_bytes became part of a patch")


def check_errors_are_sandbox_errors(sb: Sandbox) -> None:
    _ok(sb.exec("head -c 5000 /dev/zero > big.bin"), "writing a big file")
    for call in (lambda: sb.read_file("nope/nope"), lambda: sb.read_tree(["big.bin"], max_file_bytes=10)):
        try:
            call()
        except SandboxError:
            continue
        except Exception as exc:  # noqa: BLE001 (the point of the check)
            raise AssertionError(f"{type(exc).__name__} leaked instead of a SandboxError: {exc}") from exc
    assert sb.read_tree(["no/such/path"]) == [], "a missing path is left out"


def check_no_limit_is_reached_by_small_work(sb: Sandbox) -> None:
    _ok(sb.exec("echo small > small.txt && rm small.txt"), "a small write")
    assert sb.limit_reached() is None, f"limit_reached() says {sb.limit_reached()!r} after a small write"


def check_status_is_typed_and_follows_stop(sb: Sandbox) -> None:
    """`status()` is a `SandboxStatus` (never an engine's raw dict): running while commands can run,
    not running once stopped, running again after `restart`."""
    now = sb.status()
    assert isinstance(now, SandboxStatus), f"status() gave a {type(now).__name__}, not a SandboxStatus"
    assert now.running and not now.oom_killed, now
    sb.stop()
    try:
        stopped = sb.status()
        assert isinstance(stopped, SandboxStatus) and not stopped.running, f"running after stop(): {stopped}"
    finally:
        sb.restart()
    assert sb.status().running, "not running after restart()"
    _ok(sb.exec("true"), "a command after restart")


CORE: list[Check] = [
    check_no_limit_is_reached_by_small_work,
    check_exit_codes_and_streams,
    check_cwd_env_and_stdin,
    check_timeout_returns_and_says_so,
    check_output_is_capped_with_a_marker,
    check_files_round_trip_exact_bytes,
    check_file_errors,
    check_put_archive,
    check_the_patch_is_taken_from_outside,
    check_an_unchanged_tree_has_an_empty_patch,
    check_a_huge_file_is_refused,
    check_errors_are_sandbox_errors,
    check_status_is_typed_and_follows_stop,
]


# ------------------------------------------------------------------------------ isolation (containers only)


def check_no_network(sb: Sandbox) -> None:
    probe = sb.exec("cat /proc/net/route | tail -n +2 | wc -l; ls /sys/class/net")
    routes, *interfaces = probe.stdout.split()
    assert routes == "0" and interfaces == ["lo"], f"network is not off: {probe.stdout!r}"


def check_timeout_kills_the_process_tree(sb: Sandbox) -> None:
    sb.exec("(sleep 300 &) ; setsid sleep 301 & nohup sleep 302 >/dev/null 2>&1 & sleep 60", timeout=1)
    time.sleep(1.0)
    left = sb.exec("ps -eo args | grep -c '^sleep 30[012]' || true").stdout.strip()
    assert left == "0", f"{left} processes of a timed-out command survived"


def check_pids_limit_holds(sb: Sandbox) -> None:
    result = sb.exec(f"for i in $(seq 1 {sb.limits.pids + 50}); do sleep 5 & done; wait", timeout=3)
    assert "fork" in result.stderr.lower() or "resource" in result.stderr.lower(), result.stderr[-300:]
    sb.stop_processes()
    _ok(sb.exec("true"), "the sandbox is usable after a fork flood")


def _bytes(size: str) -> int:
    units = {"k": 2**10, "m": 2**20, "g": 2**30}
    return int(float(size[:-1]) * units[size[-1].lower()]) if size[-1].lower() in units else int(size)


def check_memory_limit_holds(sb: Sandbox) -> None:
    twice = 2 * _bytes(sb.limits.memory)  # `tail` of a stream without newlines holds it all in memory
    result = sb.exec(f"head -c {twice} /dev/zero | tail > /dev/null", timeout=60)
    assert result.returncode != 0, f"twice the memory limit ({twice} bytes) was held in memory"
    _ok(sb.exec("true"), "the sandbox is usable after an out-of-memory kill")


def check_stop_processes_leaves_nothing_running(sb: Sandbox) -> None:
    _ok(sb.exec("setsid sleep 400 >/dev/null 2>&1 < /dev/null & echo started"), "starting a daemon")
    sb.write_file("kept.txt", b"kept")
    sb.stop_processes()
    left = sb.exec("ps -eo args | grep -c '^sleep 400' || true").stdout.strip()
    assert left == "0", "a daemon survived stop_processes"
    assert sb.read_file("kept.txt") == b"kept", "files were lost"


def check_stop_ends_everything_until_restart(sb: Sandbox) -> None:
    _ok(
        sb.exec("setsid sh -c 'while :; do date +%s%N >> tick; sleep 0.05; done' >/dev/null 2>&1 < /dev/null &"),
        "starting a ticker",
    )
    time.sleep(0.5)
    sb.stop()
    try:
        first = [e.data for e in sb.read_tree(["tick"])]
        time.sleep(0.6)
        assert first and [e.data for e in sb.read_tree(["tick"])] == first, "something ran while stopped"
    finally:
        sb.restart()
    left = sb.exec("ps -eo args | grep -c '^sh -c while' || true").stdout.strip()
    assert left == "0", "a process of before the stop runs again"
    assert sb.read_file("tick") == first[0], "files were lost"


def check_pause_freezes(sb: Sandbox) -> None:
    _ok(
        sb.exec("setsid sh -c 'while :; do date +%s%N >> tick; sleep 0.05; done' >/dev/null 2>&1 < /dev/null &"),
        "starting a ticker",
    )
    time.sleep(0.5)
    sb.pause()
    try:
        time.sleep(1.0)
    finally:
        sb.unpause()
    # Resumed processes may take a while to tick again on a loaded machine: wait for three ticks
    # after the longest gap (up to 15 s) rather than a fixed half second.
    deadline = time.monotonic() + 15
    while True:
        ticks = [int(t) for t in sb.read_file("tick").split()]
        gaps = [(b - a) / 1e9 for a, b in zip(ticks, ticks[1:])]
        if (gaps and gaps.index(max(gaps)) < len(gaps) - 2) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert gaps and max(gaps) >= 0.8, f"processes ran while paused (longest gap {max(gaps, default=0):.2f} s)"
    assert gaps.index(max(gaps)) < len(gaps) - 2, "processes did not run again after unpause"


ISOLATION: list[Check] = [
    check_no_network,
    check_timeout_kills_the_process_tree,
    check_pids_limit_holds,
    check_memory_limit_holds,
    check_stop_processes_leaves_nothing_running,
    check_stop_ends_everything_until_restart,
    check_pause_freezes,
]


# ------------------------------------------------------------------------------ backend (every backend)

_BACKEND_LIMITS = Limits(command_timeout_s=30, pids=64, memory="256m")


def check_backend_names_itself_and_its_images(backend: Backend, image: str, workdir: str) -> None:
    assert backend.name and backend.name.isidentifier(), f"a backend's name is a registry name: {backend.name!r}"
    assert backend.facts_dir.startswith("/"), f"facts_dir is an absolute path in a sandbox: {backend.facts_dir!r}"
    first = backend.image_id(image)
    assert isinstance(first, str) and first and backend.image_id(image) == first, "an image's id is stable"
    try:
        backend.image_id("wholeloop-conformance/no-such-image:never")
    except ImageNotFound:
        pass
    else:
        raise AssertionError("image_id of an image that does not exist did not raise ImageNotFound")
    assert isinstance(backend.facts(), dict), "facts() is what a manifest records"


def check_backend_refuses_a_missing_image(backend: Backend, image: str, workdir: str) -> None:
    try:
        backend.start("wholeloop-conformance/no-such-image:never", limits=_BACKEND_LIMITS, workdir=workdir).close()
    except ImageNotFound:
        return
    raise AssertionError("starting from an image that does not exist did not raise ImageNotFound")


def check_backend_starts_every_sandbox_fresh(backend: Backend, image: str, workdir: str) -> None:
    """Grading relies on it: a sandbox starts from its image, never from what an earlier one left."""
    with backend.start(image, limits=_BACKEND_LIMITS, workdir=workdir) as first:
        assert first.read_file("a.txt") == BASE_TREE["a.txt"], "the sandbox does not hold its image's tree"
        assert first.status().running, "a started sandbox is running"
        first.write_file("a.txt", b"changed\n")
        first.write_file("left.txt", b"left behind\n")
    try:
        status = first.status()
    except ContainerGone:
        pass
    else:
        raise AssertionError(f"a closed sandbox still reports a status: {status}")
    with backend.start(image, limits=_BACKEND_LIMITS, workdir=workdir) as second:
        assert second.read_file("a.txt") == BASE_TREE["a.txt"], "a change of an earlier sandbox is in a new one"
        try:
            second.read_file("left.txt")
        except FileOpError:
            pass
        else:
            raise AssertionError("a file an earlier sandbox wrote is in a new one")
        assert second.changes() == [], f"a fresh sandbox has changes: {second.changes()}"


BACKEND: list[BackendCheck] = [
    check_backend_names_itself_and_its_images,
    check_backend_refuses_a_missing_image,
    check_backend_starts_every_sandbox_fresh,
]
