"""The demo task inikit-001 as the red team attacks it: its image and base (`prepare_demo`, the
`demo` fixture of tests/conftest.py), patches crafted against its base, graded by the real grader."""

from __future__ import annotations

import difflib
import secrets
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

from harness.grading import grade
from harness.run import Runner, RunOptions
from harness.tasks import load_task
from sandbox import Limits
from support import ROOT, git
from support.hostile import RUN_PREFIX, Script

TASK = ROOT / "tasks" / "demo" / "inikit-001.yaml"
BUGGY_FILE = "inikit/parser.py"
F2P = "tests/test_parser.py::test_markers_inside_values_are_kept[url-fragment]"


def prepare_demo(tmp_path_factory) -> dict:
    """The demo task, its image and snapshot base, and a maker of patches against its base."""
    where = tmp_path_factory.mktemp("redteam")
    task = load_task(TASK)
    runner = Runner([task], Script(), RunOptions(out=where / f"{RUN_PREFIX}redteam-prepare"))
    prepared = runner.prepare(runner.tasks[0])
    clone = where / "clone"
    subprocess.run(["git", "clone", "-q", str((TASK.parent / task.repo).resolve()), str(clone)], check=True)
    git(clone, "checkout", "-q", task.base_commit)
    return {"task": task, "image": prepared.image, "base": prepared.base_commit, "clone": clone, "where": where}


def base_text(demo, path: str) -> str:
    return (demo["clone"] / path).read_text()


def crafted(demo, files: dict[str, str | tuple | None]) -> str:
    """A git patch (by the host's git) of the base with `files` set to new text (None: deleted;
    ("link", target): a symlink)."""
    work = demo["where"] / secrets.token_hex(4)
    shutil.copytree(demo["clone"], work, symlinks=True)
    for path, text in files.items():
        target = work / path
        if text is None:
            target.unlink()
        elif isinstance(text, tuple):
            shutil.rmtree(target) if target.is_dir() and not target.is_symlink() else target.unlink(missing_ok=True)
            target.symlink_to(text[1])
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    git(work, "add", "-A", "-f")
    out = subprocess.run(
        ["git", "diff", "--cached", "--binary", "--full-index"], cwd=work, capture_output=True, text=True, check=True
    ).stdout
    shutil.rmtree(work)
    return out


def traditional(path: str, old: str | None, new: str, stamp: str = "") -> str:
    """A traditional (non-git) unified diff section, by hand; `stamp` follows each name."""
    a = (old or "").splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    body = "".join(difflib.unified_diff(a, b, "/dev/null" if old is None else f"a/{path}{stamp}", f"b/{path}{stamp}"))
    return body


def non_fix(demo) -> str:
    """A change to the buggy file that fixes nothing (one comment line)."""
    return crafted(demo, {BUGGY_FILE: base_text(demo, BUGGY_FILE) + "# touched, not fixed\n"})


def grade_all(demo, patches: dict[str, str]) -> dict:
    """Grade each patch for the demo task (three at a time); {name: (grade, output)}."""
    task = demo["task"]
    limits = task.limits.apply(Limits())

    def one(patch):
        result, output, _ = grade(
            task, patch, demo["image"], base=demo["base"], limits=limits, run_id=f"{RUN_PREFIX}redteam"
        )
        return result, output

    with ThreadPoolExecutor(3) as pool:
        return dict(zip(patches, pool.map(one, patches.values())))


def assert_not_resolved(result, output: str) -> None:
    assert result.outcome != "infra_error", result.note
    assert not result.resolved and result.outcome != "resolved", (
        result.outcome,
        result.tests.get(F2P),
        result.stripped,
        result.note,
        output[-1500:],
    )
