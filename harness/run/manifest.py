"""manifest.json: the recipe behind every number in a run.

Command line, versions (wholeloop and its git commit, dependencies, Python, Docker engine), host
facts, the agent configuration, the tasks with content hashes and their image ids, and times.
Secrets never go in: model base URLs are recorded, keys are not, and a password in a URL on the
command line (a history database's, say) is recorded as `***`.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from sandbox import Backend, SandboxError, find_commit

from .. import __version__
from ..grading.patching import parse_patch
from ..records import MANIFEST_SCHEMA
from ..redact import hide_url_passwords
from ..sandboxes import default_backend
from ..tasks import TaskSpecError

_DEPENDENCIES = [
    "docker",
    "gitpython",
    "anthropic",
    "openai",
    "litellm",
    "tenacity",
    "pydantic",
    "rich",
    "click",
    "PyYAML",
]


def command_line() -> list[str]:
    """This process's command line as a manifest records it: passwords in URLs hidden."""
    return [hide_url_passwords(arg) for arg in sys.argv]


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _git_commit() -> str | None:
    root = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in _DEPENDENCIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _engine(backend: Backend | None) -> dict:
    try:
        return (backend or default_backend()).facts()
    except Exception as exc:  # the manifest must never fail a run
        return {"error": str(exc)}


def task_sizes(tasks: list) -> dict[str, dict[str, int | None]]:
    """Each task's size for the regimes (docs/sweeps.md), counted once when a run starts: the files
    of its repository's tree at the base commit (`repo_files`) and the files its gold patch changes
    (`gold_files`). None where it cannot be read (never guessed); one tree listing per repository
    and commit. The repository is the one the preflight has just opened (a local clone, or the
    cached mirror of a bundle or URL), so this reads no network."""
    trees: dict[tuple[str, str], int | None] = {}
    out: dict[str, dict[str, int | None]] = {}
    for t in tasks:
        try:
            source = t.repo_source()
            key = (source, t.base_commit)
            if key not in trees:
                repo, commit = find_commit(source, t.base_commit)
                listing = repo.git.execute(
                    ["git", f"--git-dir={repo.git_dir}", "ls-tree", "-r", "-z", "--name-only", commit.hexsha],
                    strip_newline_in_stdout=False,
                )
                trees[key] = sum(1 for p in listing.split("\0") if p)
            repo_files = trees[key]
        except (SandboxError, TaskSpecError, OSError):  # a repository this run cannot read: unknown
            repo_files = None
        try:
            gold = t.gold()
            # one section per file changed (a rename is one file)
            gold_files = len({s.new if s.new is not None else s.old for s in parse_patch(gold)[0]}) if gold else None
        except (TaskSpecError, OSError):  # a gold patch that does not read: unknown
            gold_files = None
        out[t.id] = {"repo_files": repo_files, "gold_files": gold_files}
    return out


def build_manifest(
    *,
    run_id: str,
    agent: dict,
    tasks: list,
    options: dict,
    checks: dict | None = None,
    recipe: dict | None = None,
    backend: Backend | None = None,
) -> dict:
    """A new run's manifest (schema 2); `recipe`: the RunSpec it was started from (`RunSpec.recipe()`),
    None for a run assembled in code without one; `backend`: the sandbox backend whose engine is recorded."""
    sizes = task_sizes(tasks)
    return {
        "schema_version": MANIFEST_SCHEMA,
        "run_id": run_id,
        "run_uid": uuid.uuid4().hex,  # tells apart runs with the same folder name (a history index's key)
        "command": command_line(),
        "cwd": os.getcwd(),
        "wholeloop": {"version": __version__, "git_commit": _git_commit()},
        "python": sys.version.split()[0],
        "dependencies": _versions(),
        "docker_engine": _engine(backend),
        "host": {
            "system": platform.system(),
            "release": platform.release(),
            "machine": platform.machine(),
            "cpu": _cpu_model(),
            "cpus": os.cpu_count(),
            "memory_bytes": _memory_bytes(),
        },
        "agent": agent,
        "options": options,
        "tasks": {
            t.id: {
                **sizes[t.id],
                "content_hash": t.content_hash(),
                "spec": str(t.spec_path),
                "repo": t.repo,
                "base_commit": t.base_commit,
                "created_at": t.created_at,
                **(
                    {"statement_quality": t.origin.statement_quality} if t.origin and t.origin.statement_quality else {}
                ),
                **({"check": checks[t.id]} if checks and t.id in checks else {}),
            }
            for t in tasks
        },
        "images": {},
        "started_at": now(),
        "finished_at": None,
        "sessions": [{"started_at": now(), "command": command_line()}],
        "recipe": recipe,
    }
