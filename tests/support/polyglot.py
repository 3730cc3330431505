"""Patches of a polyglot task's base, made by git on the host."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from harness.tasks import Task
from support import git

Content = str | None | tuple[str, str] | Callable[[str], str]


def craft(task: Task, files: dict[str, Content]) -> str:
    """A patch of `task`'s base: each path set to its new content (text; None deletes it;
    ("exec", text) an executable; a callable gets the base text and returns the new one), made by
    git on the host."""
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"wl-craft-{secrets.token_hex(4)}"
    try:
        subprocess.run(["git", "clone", "-q", task.repo_source(), str(work)], check=True, capture_output=True)
        git(work, "checkout", "-q", task.base_commit)
        for path, content in files.items():
            target = work / path
            if content is None:
                target.unlink()
                continue
            if callable(content):
                content = content(target.read_text())
            target.parent.mkdir(parents=True, exist_ok=True)
            text = content[1] if isinstance(content, tuple) else content
            target.write_text(text)
            if isinstance(content, tuple):
                target.chmod(0o755)
        git(work, "add", "-A", "-f")
        return subprocess.run(
            ["git", "diff", "--cached", "--binary", "--full-index", task.base_commit],
            cwd=work,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        shutil.rmtree(work, ignore_errors=True)
