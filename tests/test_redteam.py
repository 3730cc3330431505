"""Red team of issue 9: someone who did not write the defences tries to get a non-fix graded
`resolved` on a demo task (inikit-001), a legitimate fix graded not resolved, and hidden test
source into the agent's view.

Every test asserts the SAFE outcome. An attack that succeeded is a strict xfail whose reason says
what it does (see /work/notes/redteam.md for the mechanism and a suggested fix): the suite stays
green and the integrator sees it; once the defence lands, the xfail turns into an XPASS failure
and the mark comes off.

Patches are crafted on the host against the real demo repository and graded by the real grader in
real containers (a patch is data: grading must hold for any patch, whoever wrote it). The demo
task's image is shared by every test (tags are hashes: one build, then lookups).
"""

from __future__ import annotations

import difflib
import secrets
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import ROOT, git
from harness.grading import grade
from harness.run import RunOptions, Runner
from harness.tasks import load_task
from sandbox import Limits
from test_hostile import FORCE_PASS_CONFTEST, RUN_PREFIX, Script, _no_leftovers  # noqa: F401 (autouse fixture)

pytestmark = pytest.mark.docker

TASK = ROOT / "tasks" / "demo" / "inikit-001.yaml"
BUGGY_FILE = "inikit/parser.py"
F2P = "tests/test_parser.py::test_markers_inside_values_are_kept[url-fragment]"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> dict:
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


def crafted(demo, files: dict[str, str | None]) -> str:
    """A git patch (by the host's git) of the base with `files` set to new text (None: deleted)."""
    work = demo["where"] / secrets.token_hex(4)
    shutil.copytree(demo["clone"], work, symlinks=True)
    for path, text in files.items():
        target = work / path
        if text is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    git(work, "add", "-A", "-f")
    out = subprocess.run(["git", "diff", "--cached", "--binary", "--full-index"], cwd=work,
                         capture_output=True, text=True, check=True).stdout
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
        result, output, _ = grade(task, patch, demo["image"], base=demo["base"], limits=limits,
                                  run_id=f"{RUN_PREFIX}redteam")
        return result, output

    with ThreadPoolExecutor(3) as pool:
        return dict(zip(patches, pool.map(one, patches.values())))


def assert_not_resolved(result, output: str) -> None:
    assert result.outcome != "infra_error", result.note
    assert not result.resolved and result.outcome != "resolved", (
        result.outcome, result.tests.get(F2P), result.stripped, result.note, output[-1500:])


# ------------------------------------------------------------------------------------ non-fixes

STAMP = " 2024-01-01 00:00:00.000000000 +0000"  # a timestamp after a space, as `diff -u` can write


def _non_fixes(demo) -> dict[str, str]:
    carrier = non_fix(demo)
    return {
        # A traditional section whose names carry a space-separated timestamp: grading reads the
        # name up to a TAB only ("conftest.py 2024-01-01 ..."), which no protected glob matches;
        # git apply strips the timestamp and writes conftest.py.
        "conftest_named_with_a_space_timestamp": carrier + traditional("conftest.py", None, FORCE_PASS_CONFTEST, STAMP),
    }


@pytest.fixture(scope="module")
def non_fix_grades(demo) -> dict:
    return grade_all(demo, _non_fixes(demo))


SUCCEEDED = {
    "conftest_named_with_a_space_timestamp": "red team: a traditional diff section names `b/conftest.py <space>timestamp`; "
    "grading checks the whole string, git apply strips the timestamp and writes conftest.py",
}


@pytest.mark.parametrize("attack", [
    pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=SUCCEEDED[name])) if name in SUCCEEDED else name
    for name in ["conftest_named_with_a_space_timestamp"]
])
def test_a_non_fix_is_never_resolved(attack, non_fix_grades):
    result, output = non_fix_grades[attack]
    assert_not_resolved(result, output)
