"""The real `wholeloop` command in a subprocess, without this environment's model credentials."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from support import ROOT

DEMO = ROOT / "tasks" / "demo"
WHOLELOOP = str(Path(sys.executable).parent / "wholeloop")
SECRET = re.compile(r"(KEY|TOKEN|SECRET)", re.I)


def wl(*args, env: dict | None = None, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """The real command, with no model credentials from this environment unless given."""
    base = {k: v for k, v in os.environ.items() if not SECRET.search(k)}
    return subprocess.run(
        [WHOLELOOP, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env={**base, **(env or {})},
        timeout=timeout,
    )
