"""Helpers shared by the test modules: no test module imports another (tests/test_architecture.py
checks it). Fixtures shared by several modules live in tests/conftest.py and call these."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository


def git(cwd: Path, *args: str, env: dict | None = None) -> str:
    full_env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        **(env or {}),
    }
    out = subprocess.run(["git", *args], cwd=cwd, env=full_env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
