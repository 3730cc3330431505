"""The README's first command, `wholeloop run tasks/demo --model replay:tasks/demo/recordings`, run
once per test session under a pseudo-terminal (so the live display draws as it does for a person)
and shared by the modules that read its run folder (tests/conftest.py's `demo_replay`): the live
display and `show` (test_daily_docker), the ATIF export and import (test_interop_atif). Readers
only: a test that changes a run folder makes its own."""

from __future__ import annotations

import os
import pty
import re
import select
import time
from pathlib import Path

from . import ROOT
from .cli import DEMO, WHOLELOOP

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


def run_in_pty(argv: list[str], *, env: dict, cwd: Path, timeout: float = 600) -> tuple[int, str]:
    """Run a command on a pseudo-terminal (as a person's terminal would); its exit code and output."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the command, with the pty as its terminal
        os.chdir(cwd)
        os.execve(argv[0], argv, env)
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    else:
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode(errors="replace")


def replay_demo(folder: Path) -> tuple[Path, str]:
    """The demo replayed into `folder`/demo on a terminal: (the run folder, what it drew, ANSI removed)."""
    run = folder / "demo"
    env = {k: v for k, v in os.environ.items() if not re.search(r"KEY|TOKEN|SECRET", k, re.I)}
    env.update(COLUMNS="160", LINES="40", TERM="xterm-256color")
    code, out = run_in_pty(
        [WHOLELOOP, "run", str(DEMO), "--model", f"replay:{DEMO / 'recordings'}", "--workers", "2", "--out", str(run)],
        env=env,
        cwd=ROOT,
    )
    assert code == 0, out[-3000:]
    return run, ANSI.sub("", out)
