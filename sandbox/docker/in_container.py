# in_container: runs wholeloop's commands inside a container, one at a time, for sandbox/docker/exec_fast.py.
#
# It is sent over the stdin of one long-lived `docker exec` and speaks a small framed protocol on
# stdin/stdout, so a command costs a fork+exec instead of an Engine API round trip (~55 ms).
# Stdlib only and Python 3.5-compatible (no f-strings): it runs on whatever python3 the task image
# has. It keeps the guarantees of the Engine API path: each command carries a marker in its
# environment, and on timeout every process carrying it is killed (setsid daemons included);
# output is capped per stream (head streamed, tail kept here), so huge outputs never cross the
# stream. Frames both ways: kind (1 byte), payload length (4 bytes, big-endian), payload.
import json
import os
import select
import signal
import stat
import struct
import subprocess
import sys
import time

PROTOCOL = 1
MARKER_ENV = "WHOLELOOP_EXEC"
HEADER = struct.Struct(">cI")
CHUNK = 1 << 16
TERM_GRACE_S = 0.5  # SIGTERM at the deadline, SIGKILL this much later (like the API path)
DRAIN_S = 1.0  # after the SIGKILL, read what is left this long at most
AFTER_EXIT_S = 0.25  # background jobs holding the pipes: keep their output this long, no longer
MAX_ORPHANS = 64


def _base_env():
    # The environment docker exec gave us, before Python touched it (PEP 538 locale coercion may
    # add LC_CTYPE to os.environ): commands must see exactly what an API exec would give them.
    try:
        with open("/proc/self/environ", "rb") as fh:
            items = [i.split(b"=", 1) for i in fh.read().split(b"\0") if b"=" in i]
        return {k.decode("utf-8", "surrogateescape"): v.decode("utf-8", "surrogateescape") for k, v in items}
    except OSError:
        return dict(os.environ)


def write_frame(kind, payload=b""):
    data = HEADER.pack(kind, len(payload)) + payload
    while data:
        data = data[os.write(1, data) :]


def _stat(pid):
    """(ppid, session, start time in clock ticks) of a process."""
    with open("/proc/%s/stat" % pid, "rb") as fh:
        fields = fh.read().rsplit(b")", 1)[1].split()
    return int(fields[1]), int(fields[3]), int(fields[19])


def command_pids(marker, since=None, before=()):
    """The command's processes: those carrying its marker; their descendants (a process that
    cleared its environment, `env -i`, is still a child of one that did not); and, given the
    command's start time and the pids that existed then, processes adopted by PID 1 that appeared
    since (a daemon that cleared its environment and double-forked, the one link left) -- except
    PID 1's own, in its session. Start times tick every 10 ms, hence the pids as well."""
    needle = ("%s=%s\0" % (MARKER_ENV, marker)).encode()
    found, parent = set(), {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, os.getpid()):
            continue
        pid = int(name)
        try:
            ppid, session, start = _stat(pid)
            parent[pid] = ppid
            with open("/proc/%s/environ" % pid, "rb") as fh:  # empty for zombies
                if needle in fh.read():
                    found.add(pid)
            if since is not None and ppid == 1 and session != 1 and start >= since and pid not in before:
                found.add(pid)
        except (OSError, IndexError, ValueError):
            pass
    grew = True
    while grew:
        more = {pid for pid, ppid in parent.items() if ppid in found} - found
        found |= more
        grew = bool(more)
    return found


def kill_marked(marker, sig, also=(), since=None, before=()):
    """Signal the command's processes (and `also`: those signalled before, which a parent's death
    may have reparented to PID 1 since). Returns the pids signalled."""
    if sig != signal.SIGKILL:
        targets = command_pids(marker, since, before) | set(also)
    else:
        # Freeze first, until no new process appears (a stopped process cannot fork, and a child
        # forked before the stop is found next round), so no child escapes being reparented to
        # PID 1 by its parent's death before we saw it; then kill them all.
        targets = set(also)
        _signal(targets, signal.SIGSTOP)
        for _ in range(20):
            more = command_pids(marker, since, before) - targets
            if not more:
                break
            _signal(more, signal.SIGSTOP)
            targets |= more
    _signal(targets, sig)
    return targets


def _signal(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


class Stream:
    """One output stream: the head goes to the host as it comes, the tail is kept here."""

    def __init__(self, kind, cap):
        self.kind, self.room, self.tail_cap = kind, cap // 2, cap - cap // 2
        self.tail, self.tail_len, self.dropped = [], 0, 0

    def add(self, data):
        if self.room > 0:
            head, data = data[: self.room], data[self.room :]
            self.room -= len(head)
            write_frame(self.kind, head)
        if data:
            self.tail.append(data)
            self.tail_len += len(data)
            while self.tail and self.tail_len - len(self.tail[0]) >= self.tail_cap:
                self.dropped += len(self.tail[0])
                self.tail_len -= len(self.tail.pop(0))

    def finish(self):
        tail = b"".join(self.tail)
        cut = max(0, len(tail) - self.tail_cap)
        if self.dropped + cut:
            write_frame(b"d", self.kind + struct.pack(">Q", self.dropped + cut))
        if tail[cut:]:
            write_frame(self.kind, tail[cut:])


class Helper:
    def __init__(self):
        self.env = _base_env()
        self.buf = bytearray()
        self.orphans = []  # pipes of finished commands still held by their background jobs
        # SIGCHLD wakes select() through this pipe: a command's exit is seen at once even when
        # a background job keeps its output pipes open.
        self.wake, wake_w = os.pipe()
        for fd in (self.wake, wake_w):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)

    # ---------------------------------------------------------------- reading requests

    def read_host(self):
        data = os.read(0, CHUNK)
        if not data:
            raise EOFError
        self.buf += data

    def drain_orphan(self, fd):
        try:
            data = os.read(fd, CHUNK)
        except OSError:
            data = b""
        if not data:
            self.orphans.remove(fd)
            os.close(fd)

    def frame(self):
        size = None
        while size is None or len(self.buf) < HEADER.size + size:
            if size is None and len(self.buf) >= HEADER.size:
                kind, size = HEADER.unpack(bytes(self.buf[: HEADER.size]))
                continue
            for fd in select.select([0, self.wake] + self.orphans, [], [])[0]:
                if fd == 0:
                    self.read_host()
                elif fd == self.wake:
                    self.drain_wake()
                else:
                    self.drain_orphan(fd)
        payload = bytes(self.buf[HEADER.size : HEADER.size + size])
        del self.buf[: HEADER.size + size]
        return kind, payload

    def drain_wake(self):
        try:
            while os.read(self.wake, 512):
                pass
        except OSError:  # empty (EAGAIN)
            pass

    def serve(self):
        # The shell commands run under, found as `command -v bash || echo /bin/sh` would: saves
        # the host a probe.
        path = [d for d in self.env.get("PATH", "/usr/bin:/bin").split(":") if d]
        bash = [os.path.join(d, "bash") for d in path if os.access(os.path.join(d, "bash"), os.X_OK)]
        hello = {
            "protocol": PROTOCOL,
            "pid": os.getpid(),
            "python": sys.version.split()[0],
            "shell": bash[0] if bash else "/bin/sh",
        }
        write_frame(b"h", json.dumps(hello).encode())
        while True:
            kind, payload = self.frame()
            if kind != b"r":
                raise ValueError("unexpected frame %r" % kind)
            req = json.loads(payload.decode())
            stdin = self.frame()[1] if req.get("stdin") else None
            if req.get("op", "exec") != "exec":
                self.file_op(req, stdin)
                continue
            try:
                self.run(req, stdin)
            except BaseException:  # whatever happens to us, the command does not outlive it
                kill_marked(req["marker"], signal.SIGKILL)
                raise

    # ---------------------------------------------------------------- files

    def file_op(self, req, data):
        """Read or write one file, with the archive API's semantics (the host's fallback): a read
        takes regular files only, not what a symlink points to; a write replaces whatever is at
        the path (a symlink too, never its target) by a new file, creating parents. Bytes exact."""
        path, end = req["path"], {"code": 0}  # type: str, dict[str, object]
        try:
            if req["op"] == "read":
                st = os.lstat(path)
                if stat.S_ISDIR(st.st_mode) or not stat.S_ISREG(st.st_mode):
                    end = {"code": 1, "error": "dir" if stat.S_ISDIR(st.st_mode) else "notfile"}
                elif st.st_size > req["max"]:
                    end = {"code": 1, "error": "toolarge", "size": st.st_size}
                else:
                    with open(path, "rb") as fh:
                        for chunk in iter(lambda: fh.read(1 << 20), b""):
                            write_frame(b"o", chunk)
            else:
                parent = os.path.dirname(path) or "/"
                if not os.path.isdir(parent):
                    os.makedirs(parent)
                if os.path.isdir(path) and not os.path.islink(path):
                    end = {"code": 1, "error": "dir"}
                else:
                    tmp = os.path.join(parent, ".wholeloop-write-%d" % os.getpid())
                    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
                    try:
                        view = memoryview(data)
                        while view:
                            view = view[os.write(fd, view) :]
                        os.fchmod(fd, req["mode"])
                    finally:
                        os.close(fd)
                    os.replace(tmp, path)
        except OSError as exc:
            end = {
                "code": 1,
                "error": "missing" if isinstance(exc, FileNotFoundError) else "os",
                "message": "%s: %s" % (type(exc).__name__, exc.strerror or exc),
            }
        write_frame(b"x", json.dumps(end).encode())

    # ---------------------------------------------------------------- one command

    def spawn(self, req, stdin):
        env = dict(self.env)
        env.update(req.get("env") or {})
        env[MARKER_ENV] = req["marker"]
        cwd = req.get("cwd") or "/"
        if not os.path.isdir(cwd):
            return None, 126, "wholeloop: cannot change to directory %s: No such directory\n" % cwd
        try:
            # A new session: `kill 0` in the command hits the command, never the helper.
            proc = subprocess.Popen(
                req["argv"],
                cwd=cwd,
                env=env,
                start_new_session=True,
                close_fds=True,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except Exception as exc:  # the exit codes `timeout` gives for the same failures
            code = 127 if isinstance(exc, FileNotFoundError) else 126
            what = req["argv"][0] if req["argv"] else ""
            return (
                None,
                code,
                "wholeloop: failed to run command %r: %s\n" % (what, getattr(exc, "strerror", None) or exc),
            )
        return proc, None, ""

    def run(self, req, stdin):
        out, err = Stream(b"o", req["cap"]), Stream(b"e", req["cap"])
        before = frozenset(int(n) for n in os.listdir("/proc") if n.isdigit())  # ~50 us; see command_pids
        proc, code, why = self.spawn(req, stdin)
        if proc is None:
            err.add(why.encode())
            err.finish()
            write_frame(b"x", json.dumps({"code": code, "timed_out": False}).encode())
            return
        deadline = time.monotonic() + max(float(req["timeout"]), 0.1)
        try:
            since = _stat(proc.pid)[2]
        except (OSError, IndexError, ValueError):
            since = None
        streams = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
        pending, writer = stdin or b"", None
        if stdin is not None:
            if pending:
                writer = proc.stdin.fileno()
                os.set_blocking(writer, False)
            else:
                proc.stdin.close()
        timed_out, killed_at, ended_at, termed = False, None, None, set()
        while True:
            now = time.monotonic()
            if code is None:
                code = proc.poll()
                ended_at = now if code is not None else None
            # ended_at is set together with code (from the same poll): it says the command has exited
            if ended_at is not None and (not streams or (not timed_out and now - ended_at >= AFTER_EXIT_S)):
                break  # done; background jobs may keep the pipes (drained, not waited for)
            if not timed_out and code is None and now >= deadline:
                timed_out = True
                termed = kill_marked(req["marker"], signal.SIGTERM, (), since, before)
            if timed_out and killed_at is None and now >= deadline + TERM_GRACE_S:
                killed_at = now
                termed |= kill_marked(req["marker"], signal.SIGKILL, termed, since, before)
            if killed_at is not None and now - killed_at >= DRAIN_S:
                break
            if ended_at is not None and not timed_out:
                until = ended_at + AFTER_EXIT_S
            elif killed_at is not None:
                until = killed_at + DRAIN_S
            else:
                until = deadline + (TERM_GRACE_S if timed_out else 0)
            ready, writable = select.select(
                list(streams) + [0, self.wake] + self.orphans,
                [writer] if writer is not None else [],
                [],
                max(until - now, 0),
            )[:2]
            for fd in ready:
                if fd == 0:  # the host sends nothing during a command: EOF means it is gone
                    self.read_host()
                elif fd == self.wake:
                    self.drain_wake()
                elif fd in streams:
                    data = os.read(fd, CHUNK)
                    if data:
                        streams[fd].add(data)
                    else:
                        del streams[fd]
                else:
                    self.drain_orphan(fd)
            if writable and writer is not None:  # (writable is only ever [writer])
                try:
                    pending = pending[os.write(writer, pending[:CHUNK]) :]
                except OSError:  # the command closed its stdin: the rest is not wanted
                    pending = b""
                if not pending:
                    proc.stdin.close()
                    writer = None
        if timed_out:
            kill_marked(req["marker"], signal.SIGKILL, termed, since, before)
        if code is None:
            try:
                code = proc.wait(timeout=1)
            except subprocess.TimeoutExpired:  # unkillable (D state): report the kill, move on
                code = -signal.SIGKILL
        for fd in streams:
            if len(self.orphans) < MAX_ORPHANS:
                self.orphans.append(os.dup(fd))
        for pipe in (proc.stdout, proc.stderr, proc.stdin):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass
        out.finish()
        err.finish()
        if code < 0:  # killed by a signal: report it as a shell would, 128 + signal
            code = 128 - code
        if timed_out and code != 128 + signal.SIGKILL:
            code = 124  # what `timeout` reports when the command obeyed SIGTERM
        write_frame(b"x", json.dumps({"code": code, "timed_out": timed_out}).encode())


def main():
    helper = Helper()
    try:
        helper.serve()
    except EOFError:
        return
    except Exception as exc:  # tell the host why, then go: it falls back or restarts us
        try:
            write_frame(b"z", ("%s: %s" % (type(exc).__name__, exc)).encode())
        except OSError:
            pass
        sys.exit(2)


if __name__ == "__main__":
    main()
