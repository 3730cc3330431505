"""Issue 25: acceptance axes measured on the agent's raw patch (harness.grading.acceptance), the
policy applied at report time (harness.report.acceptance), and what reports say of them."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from support import ROOT

from harness.grading.acceptance import measure
from harness.tasks import Task, load_tasks

GOLD = (
    "diff --git a/pkg/core.py b/pkg/core.py\n"
    "--- a/pkg/core.py\n+++ b/pkg/core.py\n"
    "@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n"
)


def _task(gold: str = GOLD) -> Task:
    return Task(
        id="t-1",
        repo=".",
        base_commit="0" * 40,
        problem_statement="p",
        hidden_tests={"command": "python -m pytest tests", "files": {"tests/test_core.py": "def test(): pass\n"}},
        gold_patch=gold,
        FAIL_TO_PASS=["tests/test_core.py::test"],
    )


def _section(path: str, removed: list[str], added: list[str], *, new: bool = False, deleted: bool = False) -> str:
    head = f"diff --git a/{path} b/{path}\n"
    if new:
        head += "new file mode 100644\n--- /dev/null\n"
    elif deleted:
        head += f"deleted file mode 100644\n--- a/{path}\n"
    else:
        head += f"--- a/{path}\n"
    head += "+++ /dev/null\n" if deleted else f"+++ b/{path}\n"
    body = f"@@ -1,{len(removed) + 1} +1,{len(added) + 1} @@\n x = 0\n"
    body += "".join(f"-{line}\n" for line in removed) + "".join(f"+{line}\n" for line in added)
    return head + body


def test_gold_has_no_finding_on_any_demo_or_polyglot_task():
    tasks = load_tasks([ROOT / "tasks" / "demo", ROOT / "tasks" / "polyglot"])
    assert len(tasks) == 13
    for task in tasks:
        axes = measure(task, task.gold())
        assert axes.lines_changed == axes.gold_lines_changed > 0 and axes.size_ratio == 1.0, task.id
        found = {
            k: v
            for k, v in axes.model_dump().items()
            if k in ("outside_scope", "tests_deleted", "tests_weakened", "top_level_added", "debug_leftovers") and v
        }
        assert not found and not axes.binary_files, (task.id, found)


def test_a_file_outside_golds_modules_is_out_of_scope_one_inside_them_is_not():
    patch = GOLD + _section("pkg/other.py", [], ["y = 1"]) + _section("docs/notes.md", [], ["more"])
    patch += _section("setup.py", [], ["# x"]) + _section("pkg/sub/deep.py", [], ["z = 1"])
    axes = measure(_task(), patch)
    assert axes.outside_scope == ["docs/notes.md", "setup.py"]


def test_size_is_counted_against_golds():
    patch = GOLD + _section("pkg/core.py", [], [f"v{i} = {i}" for i in range(8)])
    axes = measure(_task(), patch)
    assert (axes.lines_changed, axes.gold_lines_changed, axes.size_ratio) == (10, 2, 5.0)


def test_a_deleted_test_file_and_removed_assertions_are_recorded_with_their_lines():
    patch = GOLD + _section("tests/test_core.py", ["assert f() == 2", "assert g()"], ["pass"])
    patch += _section("tests/test_old.py", ["def test(): assert True"], [], deleted=True)
    axes = measure(_task(), patch)
    assert axes.tests_deleted == ["tests/test_old.py"]
    assert [(e.path, e.line) for e in axes.tests_weakened] == [
        ("tests/test_core.py", "assert f() == 2"),
        ("tests/test_core.py", "assert g()"),
    ]
    # an assertion rewritten (one removed, one added) is not a weakened test
    rewritten = measure(_task(), GOLD + _section("tests/test_core.py", ["assert f() == 2"], ["assert f() == 3"]))
    assert rewritten.tests_weakened == []


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("pkg/core.py", 'print("here", x)'),
        ("pkg/core.py", "breakpoint()"),
        ("pkg/core.py", "import pdb; pdb.set_trace()"),
        ("src/a.ts", "console.log(value);"),
        ("src/a.rs", "dbg!(&value);"),
        ("cmd/a.go", 'fmt.Println("debug", v)'),
    ],
)
def test_debugging_left_in_added_lines_is_found(path, line):
    axes = measure(_task(), GOLD + _section(path, [], [line]))
    assert [(e.path, e.line) for e in axes.debug_leftovers] == [(path, line)]


def test_debugging_removed_or_in_golds_own_lines_or_in_tests_is_not_a_leftover():
    gold = GOLD + _section("pkg/cli.py", [], ['print("usage")'])
    patch = gold + _section("pkg/core.py", ['print("old")'], ["pass"])
    patch += _section("tests/test_core.py", [], ['print("in a test")'])
    assert measure(_task(gold), patch).debug_leftovers == []


def test_new_top_level_files_and_binary_files_are_recorded():
    binary = (
        "diff --git a/pkg/logo.png b/pkg/logo.png\nnew file mode 100644\n"
        "index 0000000..1111111\nGIT binary patch\nliteral 3\nKcmZ?wa{vGU0RR91\n\nliteral 0\nHcmV?d00001\n\n"
    )
    patch = GOLD + _section("notes.txt", [], ["todo"], new=True) + binary
    axes = measure(_task(), patch)
    assert axes.top_level_added == ["notes.txt"]
    assert axes.binary_files == ["pkg/logo.png"]


# ------------------------------------------------------------------------------------ in real grading


def gold_text(demo, path: str) -> str:
    """`path` of the demo task's repository with the gold patch applied."""
    tree = demo["where"] / "gold-tree"
    if not tree.exists():
        shutil.copytree(demo["clone"], tree, symlinks=True)
        subprocess.run(["git", "apply"], input=demo["task"].gold(), text=True, cwd=tree, check=True)
    return (tree / path).read_text()


@pytest.mark.docker
@pytest.mark.usefixtures("no_leftovers")
def test_grading_records_the_axes_of_the_raw_patch_a_deleted_test_included(demo):
    """Grading strips protected paths, so the deleted test never reaches the graded tree (the patch
    resolves); the grade still records the deletion, measured on the raw patch."""
    from support.redteam import BUGGY_FILE, crafted, grade_all

    fixed = gold_text(demo, BUGGY_FILE)
    patch = crafted(demo, {BUGGY_FILE: fixed, "tests/test_config.py": None})
    ((result, output),) = grade_all(demo, {"deleted": patch}).values()
    assert result.resolved, (result.outcome, result.note, output[-1000:])
    assert any(s.path == "tests/test_config.py" for s in result.stripped)
    assert result.acceptance is not None and result.acceptance.tests_deleted == ["tests/test_config.py"]
    assert result.acceptance.outside_scope == [] and result.acceptance.debug_leftovers == []
