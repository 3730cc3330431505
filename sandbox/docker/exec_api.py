"""The Engine API exec path: one `docker exec` per command, used when the in-container helper
(`sandbox.docker.exec_fast`) cannot be (no python3 in the image, fast exec off, the helper busy or dead).

Same contract as the helper path (see `Sandbox.exec`): at the timeout the host kills the
command's process tree (SIGTERM, a grace, then SIGKILL, freezing the tree first so no child
escapes by being reparented); `timeout -k` inside the container is only a backstop for when the
host cannot. Output goes into the caller's capped buffers; the caller decodes.
"""

from __future__ import annotations

import socket
import time

from ..errors import SandboxError
from .engine import client, translate
from .exec_fast import MARKER_ENV, raise_if_stopped

TERM_GRACE_S = 0.5  # on a timeout: SIGTERM, then SIGKILL this much later (both paths)
# Engine API path: the host kills the command's process tree at the timeout (while the tree is
# intact: a daemon whose parent died is found by nothing but its marker); `timeout` in the
# container, BACKSTOP_S later, ends the command even if the host cannot.
BACKSTOP_S = 2
HOST_GRACE_S = 5  # after the kill, how long the output may still take to end

# The command's processes: those carrying a marker (PATTERN), their descendants, and -- given the
# command's start (the start time of its marked root, the process docker exec'd: parent 0) --
# processes adopted by PID 1 since then, outside PID 1's own session (a daemon that cleared its
# environment and double-forked). Start times tick every 10 ms: only later ticks count, so a job an
# earlier command left running is never taken for one (the helper also knows the pids at the start
# and is exact). POSIX sh, no ps: any image. Fields after "(comm) ": 2 ppid, 4 session, 20 start.
KILL_SH = r"""
since=""
for p in /proc/[0-9]*; do  # a timeout ("term") only: other callers pass a helper's marker too
  [ "$1" = term ] && grep -qasE 'PATTERN' $p/environ 2>/dev/null || continue
  s=$(cat $p/stat 2>/dev/null) || continue
  s=${s##*) }; set -- $s; [ "$2" = 0 ] && since=${20}
done
pids() {
  all=""; found=" "
  for p in /proc/[0-9]*; do
    s=$(cat $p/stat 2>/dev/null) || continue
    s=${s##*) }; set -- $s; all="$all ${p#/proc/}:$2"
    if grep -qasE 'PATTERN' $p/environ 2>/dev/null; then found="$found${p#/proc/} "
    elif [ -n "$since" ] && [ "$2" = 1 ] && [ "$4" != 1 ] && [ "${20}" -gt "$since" ]; then found="$found${p#/proc/} "
    fi
  done
  grew=1
  while [ $grew = 1 ]; do grew=0
    for e in $all; do
      case "$found" in *" ${e#*:} "*) case "$found" in *" ${e%%:*} "*) ;; *) found="$found${e%%:*} "; grew=1;; esac;; esac
    done
  done
  echo $found
}
t0=""
if [ "$1" = term ]; then  # SIGTERM, a grace, then SIGKILL to those too (reparented since)
  t0=$(pids); [ -n "$t0" ] && kill -TERM $t0 2>/dev/null && sleep TERM_GRACE
fi
t=$(pids); [ -n "$t$t0" ] && kill -STOP $t $t0 2>/dev/null
t2=$(pids); [ -n "$t$t0$t2" ] && kill -KILL $t $t0 $t2 2>/dev/null; true
"""


def api_exec(
    container_id: str,
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str] | None,
    timeout: float,
    stdin: bytes | None,
    marker: str,
    out,
    err,
    started: float,
) -> tuple[int, bool]:
    """Run one command as one Engine API exec, filling `out` and `err` (`_Capped`s): (exit code,
    timed out). Raises SandboxError, ContainerGone when the container stopped under it."""
    wrapped = ["timeout", "-k", str(BACKSTOP_S), str(max(timeout, 0.1) + BACKSTOP_S), *argv]
    api = client().api
    with translate("running a command"):
        exec_id = api.exec_create(
            container_id,
            wrapped,
            stdin=stdin is not None,
            workdir=cwd,
            environment={**(env or {}), MARKER_ENV: marker},
        )["Id"]
        sock = api.exec_start(exec_id, socket=True)
        raw = getattr(sock, "_sock", sock)
        try:
            if stdin is not None:
                raw.sendall(stdin)
                raw.shutdown(socket.SHUT_WR)
            timed_out = _drain(container_id, raw, started + max(timeout, 0.1), out, err, marker)
        finally:
            sock.close()
        info = api.exec_inspect(exec_id)
    code = info.get("ExitCode")
    if not timed_out and (code in (None, 137) or info.get("Running")):  # killed with its container?
        raise_if_stopped(container_id)
    if code is None or info.get("Running"):
        return 124, True
    if timed_out and code != 137:  # what `timeout` says of a command that obeyed SIGTERM
        code = 124
    return code, timed_out


def _drain(container_id: str, raw: socket.socket, deadline: float, out, err, marker: str) -> bool:
    """Read the exec stream until it ends; past the deadline kill the command's processes,
    then read what is left for a short grace. True when the deadline was hit.

    The stream is Docker's multiplexed format: an 8-byte header (stream id, 3 zero bytes,
    big-endian length) before each frame. We parse it ourselves because the SDK's reader
    blocks in poll() without a timeout.
    """
    hit = False
    pending = b""  # header bytes read so far
    remaining, target = 0, out
    while True:
        raw.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            if remaining == 0:
                chunk = raw.recv(8 - len(pending))
                if not chunk:
                    return hit
                pending += chunk
                if len(pending) == 8:
                    target = err if pending[0] == 2 else out
                    remaining = int.from_bytes(pending[4:8], "big")
                    pending = b""
                continue
            chunk = raw.recv(min(remaining, 1 << 16))
            if not chunk:
                return hit
            remaining -= len(chunk)
            target.add(chunk)
            if time.monotonic() > deadline:
                raise TimeoutError
        except TimeoutError:
            if hit:  # still streaming after the kill and the grace: give up on this stream
                return True
            hit = True
            kill_marked(container_id, marker, term=True)
            deadline = time.monotonic() + HOST_GRACE_S


def kill_marked(container_id: str, *markers: str, term: bool = False) -> None:
    """Kill every process whose environment carries one of these markers (setsid included),
    and their descendants (`env -i` drops the marker, not the parent): freeze them, look
    again for children forked meanwhile, then SIGKILL (as the helper does, in sh here)."""
    pattern = "|".join(f"{MARKER_ENV}={m}" for m in markers)
    script = KILL_SH.replace("PATTERN", pattern).replace("TERM_GRACE", str(TERM_GRACE_S))
    try:
        with translate("killing timed-out processes"):
            argv = ["/bin/sh", "-c", script, "kill", "term" if term else "kill"]
            exec_id = client().api.exec_create(container_id, argv)["Id"]
            client().api.exec_start(exec_id)
    except SandboxError:
        pass  # the container may be gone; close() still removes it
