"""Applying patches in a grading container and undoing what an agent must not change.

Every function here runs its commands in a container grading started from the task image, never
in the agent's; each step waits at most `limits.step_timeout_s`.
"""

from __future__ import annotations

from sandbox import InfraError, Sandbox

from ..tasks import Task

WORK = "/tmp/wholeloop-grade"


def apply_patch(sb: Sandbox, patch: str, name: str) -> str | None:
    """Apply a patch in the container's repository; the method that worked, or None."""
    path = f"{WORK}/{name}"
    sb.write_file(path, patch if patch.endswith("\n") else patch + "\n")
    for method, cmd in (
        ("git apply", f"git apply --binary --whitespace=nowarn {path}"),
        ("git apply --3way", f"git apply --binary --3way --whitespace=nowarn {path}"),
        ("patch --fuzz=5", f"patch --batch --forward --fuzz=5 -p1 -i {path}"),
    ):
        result = sb.exec(cmd, timeout=sb.limits.step_timeout_s)
        if result.ok:
            return method
        sb.exec("git checkout -q -- . && git clean -fdq -e .git", timeout=sb.limits.step_timeout_s)  # undo a partial apply
    return None


def revert_protected(sb: Sandbox, task: Task, base: str) -> list[str]:
    """Put protected paths the agent changed back to `base`; delete the ones it created. The
    task's `allowed_paths` (protected files its own fix changes) are exempt, unless the hidden
    tests themselves write them."""
    hidden = touched_files(task.test_patch()) + list(task.hidden_tests.files)
    specs = [f":(glob){p}" for p in task.protected()] + [f":(literal){p}" for p in hidden]
    if not specs:
        return []
    specs += [f":(exclude,literal){p}" for p in task.allowed_paths if p not in hidden]
    listing = sb.exec(["git", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *specs], timeout=sb.limits.step_timeout_s)
    if not listing.ok:
        raise InfraError(f"cannot list changed files: {listing.stderr.strip()[-300:]}")
    entries = [e for e in listing.stdout.split("\0") if e]
    reverted, tracked, untracked = [], [], []
    for entry in entries:
        status, path = entry[:2], entry[3:]
        (untracked if status == "??" else tracked).append(path)
        reverted.append(path)
    if tracked:
        sb.exec(["git", "checkout", "-q", base, "--", *tracked], timeout=sb.limits.step_timeout_s)
    if untracked:
        sb.exec(["rm", "-rf", "--", *untracked], timeout=sb.limits.step_timeout_s)
    return reverted


# Run by the grading environment's Python in the repository: reads the new files' paths (NUL-separated)
# and prints those that are a top-level module or package on a sys.path entry inside the repository
# (the repository itself, as `python -m pytest` puts it first; PYTHONPATH; editable installs) and
# that shadow a module importable without the repository.
_SHADOW_PROBE = r"""
import importlib.util, os, sys
repo = os.path.realpath(os.getcwd())
inside = lambda p: p == repo or p.startswith(repo + os.sep)
roots = {repo} | {os.path.realpath(p) for p in sys.path if p and inside(os.path.realpath(p))}
sys.path[:] = [p for p in sys.path if p and not inside(os.path.realpath(p))]
for path in sorted(p for p in sys.stdin.read().split("\0") if p):
    full = os.path.normpath(os.path.join(repo, path))  # not realpath: a symlinked pytest.py imports too
    parent, leaf = os.path.split(full)
    if leaf == "__init__.py" or leaf.startswith("__init__."):
        parent, leaf = os.path.split(parent)
        shown = os.path.relpath(os.path.join(parent, leaf), repo) + "/"
    else:
        shown = path
    name = leaf.split(".")[0]
    if parent in roots and name.isidentifier():
        try:
            found = importlib.util.find_spec(name) is not None
        except Exception:
            found = True
        if found:
            print(shown)
"""


def remove_shadowing(sb: Sandbox) -> list[str]:
    """Delete new modules that shadow the test runner or the standard library; returns them.

    `python -m pytest` puts the repository first on sys.path, so a planted `pytest.py`, `pluggy/`
    or `inspect.py` would run instead of the real one, inside the test process. A fix has no reason
    to add a top-level module named like one the environment already has.
    """
    listing = sb.exec(["git", "status", "--porcelain=v1", "-z", "--untracked-files=all"], timeout=sb.limits.step_timeout_s)
    new = [e[3:] for e in listing.stdout.split("\0") if e.startswith("?? ")]
    new = [p for p in new if p.endswith((".py", ".pyc", ".so"))]
    if not listing.ok or not new:
        return []
    probe = sb.exec(["sh", "-c", 'exec "$(command -v python || command -v python3)" -c "$1"', "sh", _SHADOW_PROBE],
                    timeout=sb.limits.step_timeout_s, stdin="\0".join(new).encode())
    if probe.returncode in (126, 127):
        return []  # no Python in this environment: nothing for a Python module to shadow
    if not probe.ok:
        raise InfraError(f"cannot check the patch for shadowing modules: {probe.stderr.strip()[-300:]}")
    shadowing = [line for line in probe.stdout.splitlines() if line.strip()]
    if shadowing:
        sb.exec(["rm", "-rf", "--", *shadowing], timeout=sb.limits.step_timeout_s)
    return shadowing


def touched_files(patch: str) -> list[str]:
    """Paths a git diff creates, changes or deletes (binary ones included), from its headers."""
    files: list[str] = []
    for line in patch.splitlines():
        path = None
        if line.startswith("diff --git a/"):
            path = line[len("diff --git a/"):].split(" b/", 1)[0]
        elif line.startswith(("+++ b/", "--- a/")):
            path = line[6:].split("\t")[0].strip()
        if path and path not in files:
            files.append(path)
    return files
