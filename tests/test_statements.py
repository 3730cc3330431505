"""Problem statements of mined tasks: cleaned of trailers and tool noise, classified (issue,
commit_message, thin, leaks_fix) and recorded in the spec. The examples are the statements issue 24
quotes from real repositories. No container: the mined repository's wholeloop.yaml gives its setup,
so nothing is resolved, and nothing is checked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, git, write
from support.cli import DEMO, wl

from harness.authoring.statements import (
    ADDITIONS_HEADER,
    FixNames,
    added_api,
    change_kind,
    classify,
    clean_issue,
    clean_message,
    fix_names,
    imported_quality,
    interface_additions,
    leaked_names,
    names_tests_use,
)
from harness.tasks import load_task, load_tasks

SQUASHED = """\
Use WeakKeyDictionary for WRITE_LOCKS (#412)

* Use WeakKeyDictionary for WRITE_LOCKS

* [pre-commit.ci] auto fixes from pre-commit.com hooks

for more information, see https://pre-commit.ci

* lock

---------

Co-authored-by: pre-commit-ci[bot] <66853113+pre-commit-ci[bot]@users.noreply.github.com>
Signed-off-by: A Developer <dev@example.invalid>
"""

GENERATED = """\
Fix off-by-one in window sizes

The last window was dropped when the length was a multiple of the size.

🤖 Generated with [Claude Code](https://claude.com/claude-code)

Co-Authored-By: Claude <noreply@anthropic.com>
"""

WEAKREF_GOLD = "\n".join(
    [
        "diff --git a/cache/locks.py b/cache/locks.py",
        "--- a/cache/locks.py",
        "+++ b/cache/locks.py",
        "@@ -1,6 +1,7 @@",
        " import threading",
        "+import weakref",
        " ",
        "-WRITE_LOCKS = {}",
        "+WRITE_LOCKS = weakref.WeakKeyDictionary()",
        " ",
        " ",
        " def lock_for(obj):",
    ]
)
WEAKREF_TESTS = """\
diff --git a/tests/test_locks.py b/tests/test_locks.py
--- a/tests/test_locks.py
+++ b/tests/test_locks.py
@@ -1,3 +1,10 @@
 from cache.locks import lock_for
+import gc
+
+
+def test_locks_are_released_with_their_object():
+    class Thing: pass
+    lock_for(Thing())
+    gc.collect()
"""

COMPARE_GOLD = """\
diff --git a/semver/semver.go b/semver/semver.go
--- a/semver/semver.go
+++ b/semver/semver.go
@@ -20,3 +20,15 @@ func Parse(s string) (Version, error) {
     return v, nil
 }
+
+// Compare returns -1, 0 or 1.
+func Compare(a, b Version) int {
+    if a.Major != b.Major {
+        return cmpInt(a.Major, b.Major)
+    }
+    return cmpInt(a.Minor, b.Minor)
+}
"""
COMPARE_TESTS = """\
diff --git a/semver/semver_test.go b/semver/semver_test.go
--- a/semver/semver_test.go
+++ b/semver/semver_test.go
@@ -1,3 +1,9 @@
 package semver
+
+func TestCompare(t *testing.T) {
+    if Compare(MustParse("1.0.0"), MustParse("2.0.0")) != -1 {
+        t.Fatal("1.0.0 < 2.0.0")
+    }
+}
"""

PLUGGY_BASE = """\
class PluginManager:
    def register(self, plugin):
        self._plugins.append(plugin)

    def _remove_plugin(self, plugin):
        for hookcaller in self.hook.__dict__.values():
            hookcaller._remove_plugin(plugin)
            break
"""
PLUGGY_GOLD = """\
diff --git a/src/pluggy/_manager.py b/src/pluggy/_manager.py
--- a/src/pluggy/_manager.py
+++ b/src/pluggy/_manager.py
@@ -5,4 +5,3 @@ class PluginManager:
     def _remove_plugin(self, plugin):
         for hookcaller in self.hook.__dict__.values():
             hookcaller._remove_plugin(plugin)
-            break
"""
PLUGGY_TESTS = """\
diff --git a/testing/test_pluginmanager.py b/testing/test_pluginmanager.py
--- a/testing/test_pluginmanager.py
+++ b/testing/test_pluginmanager.py
@@ -1,2 +1,6 @@
 import pytest
+
+def test_unregister_removes_every_hookimpl(pm):
+    pm.register(Plugin())
+    pm.unregister(name="p")
"""


# ----------------------------------------------------------------------------- cleaning


def test_trailers_tool_lines_and_a_squashed_commit_list_are_removed():
    cleaned = clean_message(SQUASHED)
    assert cleaned.text == "Use WeakKeyDictionary for WRITE_LOCKS\n"
    assert cleaned.removed == [
        "pre-commit.ci",
        "co-authored-by",
        "signed-off-by",
        "separator",
        "squashed commits",
        "pull request number",
    ]
    generated = clean_message(GENERATED)
    assert generated.text == (
        "Fix off-by-one in window sizes\n\nThe last window was dropped when the length was a multiple of the size.\n"
    )
    assert generated.removed == ["generated-with", "co-authored-by"]


def test_noise_of_squashed_commits_leaves_the_subject_alone():
    # the issue's "* fix Monotonicity * fix comment * Monotonicity 2 * lock": GitHub's squash body
    cleaned = clean_message("Monotonicity (#88)\n\n* fix Monotonicity\n\n* fix comment\n\n* Monotonicity 2\n\n* lock\n")
    assert cleaned.text == "Monotonicity\n" and classify(cleaned.text, "commit_message", []) == "thin"


def test_a_squash_of_one_commit_loses_its_repeated_subject():
    # filelock's: GitHub repeats the one squashed commit's subject as a bullet before its body
    message = (
        "fix: handle missing `sqlite3` (#480)\n\n* fix: handle missing `sqlite3`\n\n"
        "`ReadWriteLock` imported sqlite3 unconditionally.\n"
    )
    cleaned = clean_message(message)
    assert cleaned.text == "fix: handle missing `sqlite3`\n\n`ReadWriteLock` imported sqlite3 unconditionally.\n"
    assert cleaned.removed == ["squashed commits", "pull request number"]


def test_a_written_body_and_a_hand_made_list_are_kept():
    message = "Fix parsing of empty ranges\n\nTwo cases were wrong:\n* an empty range\n* a range ending at 0\n"
    assert clean_message(message).text == message and clean_message(message).removed == []
    note = "Handle timeouts\n\nNote: the retry count is unchanged.\n"
    assert clean_message(note).text == note  # `Note:` is prose, not a trailer


def test_an_issue_loses_its_template_comments():
    cleaned = clean_issue("Crash on empty input\n\n<!-- Describe the bug -->\nparse('') raises IndexError\n")
    assert cleaned.text == "Crash on empty input\n\nparse('') raises IndexError\n"
    assert cleaned.removed == ["html comments"]


# ----------------------------------------------------------------------------- classifying


def test_a_subject_naming_what_the_gold_adds_leaks_the_fix():
    statement = clean_message(SQUASHED).text
    names = fix_names(WEAKREF_GOLD)
    assert "WeakKeyDictionary" in names.added and "WRITE_LOCKS" in names.changed
    leaked = leaked_names(statement, names, names_tests_use(WEAKREF_TESTS))
    assert leaked == ["WeakKeyDictionary", "WRITE_LOCKS"]
    assert classify(statement, "commit_message", leaked) == "leaks_fix"


def test_a_feature_subject_naming_the_interface_its_tests_use_is_thin_not_a_leak():
    statement = clean_message("feat: add Compare function (#163)\n\nCo-authored-by: x <x@example.invalid>\n").text
    assert statement == "feat: add Compare function\n"
    names = fix_names(COMPARE_GOLD)
    assert "Compare" in names.added and "cmpInt" in names.added  # cmpInt exists at base, unseen without it
    leaked = leaked_names(statement, names, names_tests_use(COMPARE_TESTS))
    assert leaked == [] and classify(statement, "commit_message", leaked) == "thin"
    api = added_api(COMPARE_GOLD, {}, {})
    assert api == {"Compare": "func Compare(a, b Version) int"}
    assert change_kind("feat", api, names_tests_use(COMPARE_TESTS)) == "feature"
    assert interface_additions(statement, api, names_tests_use(COMPARE_TESTS)) == []  # it names Compare
    assert interface_additions("semver: precedence\n", api, names_tests_use(COMPARE_TESTS)) == [
        "func Compare(a, b Version) int"
    ]
    assert change_kind("fix", {}, names_tests_use(COMPARE_TESTS)) == "fix"


def test_a_statement_naming_the_private_function_the_fix_changes_leaks():
    statement = (
        "Fix `_remove_plugin` to remove all hookimpls\n\n"
        "unregister() left hookimpls behind; return each HookCaller at most once.\n"
    )
    names = fix_names(PLUGGY_GOLD, {"src/pluggy/_manager.py": PLUGGY_BASE})
    assert "_remove_plugin" in names.changed and not names.added
    leaked = leaked_names(statement, names, names_tests_use(PLUGGY_TESTS))
    assert leaked == ["_remove_plugin"] and classify(statement, "commit_message", leaked) == "leaks_fix"
    # the same symptom told as a user sees it, naming the public call the tests make: no leak
    report = "unregister() leaves hookimpls behind\n\nAfter pm.unregister(name=...) the plugin's hooks still run.\n"
    assert leaked_names(report, names, names_tests_use(PLUGGY_TESTS)) == []
    assert classify(report, "issue", []) == "issue" and classify(report, "commit_message", []) == "commit_message"


def test_a_signature_of_what_the_tests_call_is_the_interface_a_body_saying_what_now_happens_leaks():
    # the demo repository inikit's own messages (repos/inikit.bundle)
    gold = "\n".join(
        [
            "diff --git a/inikit/core.py b/inikit/core.py",
            "--- a/inikit/core.py",
            "+++ b/inikit/core.py",
            "@@ -10,2 +10,6 @@ class Config:",
            " ",
            "+def load(*paths):",
            "+    config = Config()",
            "+    for path in paths:",
            "+        config.update(loads(open(path).read()))",
        ]
    )
    tests = (
        "+++ b/tests/test_load.py\n@@ -0,0 +1,2 @@\n+def test_load(tmp_path):\n+    assert load(tmp_path / 'a.ini')\n"
    )
    names = fix_names(gold)
    assert {"paths", "load"} <= names.added
    feature = "Add load() for reading files\n\n`load(*paths)` reads one or more files in order.\n"
    assert leaked_names(feature, names, names_tests_use(tests)) == []
    fix = fix_names(
        "+++ b/inikit/interp.py\n@@ -3,3 +3,4 @@ def expand(value, seen):\n     for ref in refs(value):\n"
        "+        if ref in seen: raise InterpolationError(ref)\n"
    )
    cycles = (
        "Report reference cycles\n\n`a = ${b}` with `b = ${a}` made get() recurse. expand() now tracks the chain.\n"
    )
    assert leaked_names(cycles, fix, names_tests_use("+    with raises(InterpolationError): cfg.get('a')\n")) == [
        "expand"
    ]


def test_an_imported_statement_is_classed_from_its_patches_alone():
    # no base files and no whole test files: a public changed function named as the symptom is not a leak
    calc = "+++ b/calc/__init__.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
    assert "add" in fix_names(calc).changed
    assert imported_quality("add() subtracts.\n\nIt should add.", calc, "") == ("issue", [])
    told = "Fix `_remove_plugin` to remove all hookimpls\n\nunregister() leaves them.\n"
    assert imported_quality(told, PLUGGY_GOLD, PLUGGY_TESTS) == ("leaks_fix", ["_remove_plugin"])
    assert imported_quality(clean_message(SQUASHED).text, WEAKREF_GOLD, "")[0] == "leaks_fix"


def test_a_name_in_prose_is_not_a_leak_unless_written_as_code():
    names = fix_names(WEAKREF_GOLD)  # adds `weakref`, an ordinary word in a sentence
    assert "weakref" in names.added
    assert leaked_names("Locks should be held by weakref\n\nso they go.\n", names, set()) == []
    assert leaked_names("Locks should use `weakref`\n", names, set()) == ["weakref"]
    # a name the gold writes only in a comment or a string (verkit's `vermax [-c RANGE]` usage) is not code
    usage = fix_names('+++ b/main.go\n@@ -1 +1,3 @@\n+//\tvermax [-c RANGE]\n+\tfmt.Println("usage: [-c RANGE]")\n')
    assert "RANGE" not in usage.added and "Println" in usage.added
    # "precedence (Compare, Less)": a word before a parenthesis is prose, `name(` is a call
    assert leaked_names("semver: precedence (Compare)\n", FixNames({"precedence"}, set()), set()) == []
    assert leaked_names("precedence() was wrong\n", FixNames({"precedence"}, set()), set()) == ["precedence"]
    # filelock's "respect POSIX default ACLs" and "__class__": a capitalised word and a dunder are not the fix's names
    assert leaked_names("feat(mode): respect POSIX default ACLs\n", FixNames({"POSIX"}, set()), set()) == []
    assert leaked_names("set `__class__` right\n", FixNames({"__class__"}, set()), set()) == []


# ----------------------------------------------------------------------------- mined and recorded


def wholeloop(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, cwd=ROOT)


def commit(repo: Path, message: str, files: dict[str, str]) -> str:
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A package whose fixes carry the statements issue 24 found: a trailer-laden leak, a thin
    feature subject, a message with a body, and one naming an issue."""
    tmp_path = tmp_path_factory.mktemp("history")
    repo = tmp_path / "lockpkg"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(
        repo,
        "initial",
        {
            "lockpkg/__init__.py": "import threading\n\nWRITE_LOCKS = {}\n\n\ndef lock_for(obj):\n"
            "    return WRITE_LOCKS.setdefault(obj, threading.Lock())\n",
            "tests/test_locks.py": "from lockpkg import lock_for\n\n\ndef test_same():\n"
            "    o = object()\n    assert lock_for(o) is lock_for(o)\n",
            "lockpkg/windows.py": "def windows(n, size):\n    return list(range(0, n - size, size))\n",
            "tests/test_windows.py": "from lockpkg.windows import windows\n\n\ndef test_one():\n"
            "    assert windows(4, 4) == []\n",
        },
    )
    leak = commit(
        repo,
        SQUASHED,
        {
            "lockpkg/__init__.py": "import threading\nimport weakref\n\nWRITE_LOCKS = weakref.WeakKeyDictionary()\n\n\n"
            "def lock_for(obj):\n    return WRITE_LOCKS.setdefault(obj, threading.Lock())\n",
            "tests/test_locks.py": "from lockpkg import lock_for\n\n\ndef test_same():\n"
            "    o = object()\n    assert lock_for(o) is lock_for(o)\n\n\ndef test_released():\n"
            "    class T:\n        pass\n    lock_for(T())\n",
        },
    )
    thin = commit(
        repo,
        "feat: add unlock_all function (#163)\n\nCo-authored-by: x <x@example.invalid>",
        {
            "lockpkg/extra.py": "def unlock_all(locks):\n    for lock in locks:\n        lock.release()\n",
            "tests/test_extra.py": "from lockpkg.extra import unlock_all\n\n\ndef test_none():\n    unlock_all([])\n",
        },
    )
    body = commit(
        repo,
        GENERATED,
        {
            "lockpkg/windows.py": "def windows(n, size):\n    return list(range(0, n, size))\n",
            "tests/test_windows.py": "from lockpkg.windows import windows\n\n\ndef test_exact():\n"
            "    assert windows(4, 2) == [0, 2]\n",
        },
    )
    issue = commit(
        repo,
        "Handle an empty list (fixes #7)",
        {
            "lockpkg/windows.py": "def windows(n, size):\n    if not n:\n        return []\n"
            "    return list(range(0, n, size))\n",
            "tests/test_windows.py": "from lockpkg.windows import windows\n\n\ndef test_exact():\n"
            "    assert windows(4, 2) == [0, 2]\n\n\ndef test_empty():\n    assert windows(0, 2) == []\n",
        },
    )
    feature = commit(
        repo,
        "Say where a window ends\n\nCallers need the end of each window, not only its start.",
        {
            "lockpkg/windows.py": "def windows(n, size):\n    if not n:\n        return []\n"
            "    return list(range(0, n, size))\n\n\nclass Window:\n"
            "    def __init__(self, start: int, size: int) -> None:\n        self.start, self.size = start, size\n\n"
            "    def end(self) -> int:\n        return self._last() + 1\n\n"
            "    def _last(self) -> int:\n        return self.start + self.size - 1\n",
            "tests/test_windows.py": "from lockpkg.windows import Window, windows\n\n\ndef test_exact():\n"
            "    assert windows(4, 2) == [0, 2]\n\n\ndef test_empty():\n    assert windows(0, 2) == []\n\n\n"
            "def test_end():\n    assert Window(2, 3).end() == 5\n",
        },
    )
    (tmp_path / "lockpkg.wholeloop.yaml").write_text("setup: ['true']\ninstall: ['true']\n")
    issues = tmp_path / "issues.json"
    issues.write_text(
        json.dumps([{"number": 7, "title": "windows(0, 2) fails", "body": "<!-- template -->\nIt should give []."}])
    )
    return {
        "repo": repo,
        "leak": leak,
        "thin": thin,
        "body": body,
        "issue": issue,
        "feature": feature,
        "issues": issues,
    }


@pytest.fixture(scope="module")
def mined(history: dict) -> Path:
    out = history["repo"].parent / "out"
    result = wholeloop(
        "mine", str(history["repo"]), "--out", str(out), "--issues", str(history["issues"]), "--no-check"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def test_mined_statements_are_cleaned_classified_and_recorded(history, tmp_path):
    out = tmp_path / "out"
    result = wholeloop(
        "mine", str(history["repo"]), "--out", str(out), "--issues", str(history["issues"]), "--no-check"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    tasks = {t.origin.commit: t for t in load_tasks([out])}
    expected = {
        "leak": ("Use WeakKeyDictionary for WRITE_LOCKS\n", "commit_message", "leaks_fix"),
        "thin": ("feat: add unlock_all function\n", "commit_message", "thin"),
        "body": (clean_message(GENERATED).text, "commit_message", "commit_message"),
        "issue": ("windows(0, 2) fails\n\nIt should give [].\n", "issue", "issue"),
    }
    for name, (statement, made_from, quality) in expected.items():
        task = tasks[history[name]]
        assert (task.problem_statement, task.origin.statement, task.origin.statement_quality) == (
            statement,
            made_from,
            quality,
        ), name
        assert "Co-authored-by" not in task.problem_statement and "Generated with" not in task.problem_statement
    assert tasks[history["leak"]].origin.statement_leaks == ["WeakKeyDictionary", "WRITE_LOCKS"]
    assert "co-authored-by" in tasks[history["thin"]].origin.statement_removed
    kinds = {name: tasks[history[name]].origin.change for name in expected}
    assert kinds == {"leak": "fix", "thin": "feature", "body": "fix", "issue": "fix"}
    assert tasks[history["thin"]].origin.statement_additions == []  # it names unlock_all
    spec = (out / f"{tasks[history['body']].id}.yaml").read_text()
    assert "statement: commit_message" in spec  # written although it is the default: the reader sees it


OLD_SPEC = """\
id: old-1
repo: .
base_commit: abc
problem_statement: |
  Fix add

  It subtracted.
hidden_tests:
  command: pytest tests/test_add.py
  patch: "--- a/tests/test_add.py\\n+++ b/tests/test_add.py\\n@@ -0,0 +1 @@\\n+def test_add(): pass\\n"
FAIL_TO_PASS: [tests/test_add.py::test_add]
gold_patch: "--- a/add.py\\n+++ b/add.py\\n@@ -1 +1 @@\\n-return a - b\\n+return a + b\\n"
origin:
  kind: commit
  commit: 0123456789abcdef
  subject: Fix add
"""


def test_a_spec_mined_before_classes_loads_unclassified_and_keeps_its_content_hash(tmp_path):
    spec = tmp_path / "old-1.yaml"
    spec.write_text(OLD_SPEC)
    task = load_task(spec)
    assert task.origin is not None and task.origin.statement_quality is None and task.origin.statement_leaks == []
    # the hash main gave this spec before the statement fields existed (gate and compare pair by it)
    assert task.content_hash() == "2650c6678740b761"


def test_a_run_takes_only_the_statement_classes_asked_for(mined):
    thin = wl(
        "run", mined, "--agent", "gold", "--dry-run", "--include-quarantined", "--statement-quality", "thin,leaks_fix"
    )
    assert thin.returncode == 0, thin.stdout + thin.stderr
    assert "2 of 5 task(s) with a statement of class leaks_fix, thin" in thin.stdout
    ids = {t.id: t.origin.statement_quality for t in load_tasks([mined])}
    planned = {task_id for task_id in ids if task_id in thin.stdout}
    assert {ids[t] for t in planned} == {"thin", "leaks_fix"}, thin.stdout
    unknown = wl("run", mined, "--agent", "gold", "--dry-run", "--statement-quality", "vague")
    assert unknown.returncode == 2 and "vague: no such class" in unknown.stderr + unknown.stdout
    # hand-written specs have no class: they are `unclassified`, and a filter that leaves nothing says so
    demo = wl("run", DEMO, "--agent", "gold", "--dry-run", "--statement-quality", "thin")
    assert demo.returncode == 2 and "the tasks' classes: unclassified" in demo.stderr + demo.stdout


def test_a_report_splits_the_resolve_rate_by_statement_class(mined, tmp_path):
    from harness.records import PhaseTimes, ResultRow, RunFolder
    from harness.report.figures import compute_figures
    from harness.run.manifest import build_manifest

    tasks = load_tasks([mined])
    manifest = build_manifest(run_id="run", agent={"agent": "gold"}, tasks=tasks, options={})
    quality = {t.id: t.origin.statement_quality for t in tasks}
    assert {tid: info.get("statement_quality") for tid, info in manifest["tasks"].items()} == quality
    run = tmp_path / "run"
    folder = RunFolder(run, create=True)
    folder.update_manifest(lambda m: m.update(manifest))
    for task in tasks:
        ok = quality[task.id] in ("issue", "leaks_fix")
        folder.append(
            ResultRow(
                run_id="run",
                task_id=task.id,
                task_hash="h",
                config="gold",
                agent="gold",
                outcome="resolved" if ok else "unresolved",
                resolved=ok,
                final=True,
                phases=PhaseTimes(),
            )
        )
    split = compute_figures([run]).statements[0]
    assert {name: (side.resolved, side.trials) for name, side in split.classes.items()} == {
        "issue": (1, 1),
        "commit_message": (0, 2),
        "thin": (0, 1),
        "leaks_fix": (1, 1),
    }
    shown = wl("report", run)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "Resolve rate by problem statement class" in shown.stdout and "leaks_fix" in shown.stdout
    # a run of hand-written tasks (every one unclassified) shows no such table
    folder.update_manifest(lambda m: m.update({"tasks": {t.id: {} for t in tasks}}))
    assert compute_figures([run]).statements[0].classes.keys() == {"unclassified"}
    assert "Resolve rate by problem statement class" not in wl("report", run).stdout


def test_a_feature_statement_gets_the_interface_its_tests_use_signatures_not_bodies(history, mined):
    task = next(t for t in load_tasks([mined]) if t.origin.commit == history["feature"])
    assert task.origin.change == "feature" and task.origin.statement_quality == "commit_message"
    signatures = [
        "class Window",
        "Window: def __init__(self, start: int, size: int) -> None",
        "Window: def end(self) -> int",
    ]
    assert task.origin.statement_additions == signatures  # `_last` is private, `windows` was there before
    assert task.problem_statement == (
        "Say where a window ends\n\nCallers need the end of each window, not only its start.\n\n"
        f"{ADDITIONS_HEADER}\n\n" + "".join(f"    {s}\n" for s in signatures)
    )
    assert "return" not in task.problem_statement and "_last" not in task.problem_statement


def test_mine_takes_only_the_kind_asked_for(history, tmp_path):
    out = tmp_path / "features"
    result = wholeloop("mine", str(history["repo"]), "--out", str(out), "--kind", "feature", "--no-check")
    assert result.returncode == 0, result.stdout + result.stderr
    kept = {t.origin.commit for t in load_tasks([out])}
    assert kept == {history["thin"], history["feature"]}
    report = json.loads((out / "mine-report.json").read_text())
    skipped = {c["commit"]: c.get("skipped") for c in report["commits"]}
    assert skipped[history["leak"]] == "a fix (--kind feature)"


def test_a_commit_whose_message_is_only_a_bots_is_skipped_not_given_the_bots_line(tmp_path):
    """tomli's 871f2c1c (the trial of issue 24): pre-commit.ci's autofix changed source and tests;
    cleaned, its message is empty, and the spec fell back to the bot's subject line."""
    from harness.authoring.mine import MineOptions, list_candidates

    repo = tmp_path / "botpkg"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "initial", {"botpkg/__init__.py": "X = 1\n", "tests/test_x.py": "def test_x():\n    pass\n"})
    bot = commit(
        repo,
        "[pre-commit.ci] auto fixes from pre-commit.com hooks\n\nfor more information, see https://pre-commit.ci",
        {"botpkg/__init__.py": "X = 1  # noqa\n", "tests/test_x.py": "def test_x():\n    assert True\n"},
    )
    fix = commit(repo, "Make X two", {"botpkg/__init__.py": "X = 2\n", "tests/test_x.py": "def test_x():\n    pass\n"})
    report = list_candidates(repo, MineOptions())
    fates = {j.commit.sha: j for j in report.judged}
    assert fates[fix].candidate is not None
    assert fates[bot].candidate is None and fates[bot].skipped == "no problem statement (the message is a bot's only)"


def test_an_added_signature_never_carries_a_body_and_is_read_across_lines():
    """The issue 24 trial: fatih/color's one-line Go helpers came with their body, and unjs/scule's
    generic TypeScript function was cut after `titleCase<`."""
    go = (
        "diff --git a/color.go b/color.go\n--- a/color.go\n+++ b/color.go\n@@ -1,1 +1,3 @@\n package color\n"
        "+func HiRedString(format string, a ...interface{}) string { return colorString(format, FgHiRed, a...) }\n"
        "+func (c *Color) PrintlnFunc() func(a ...interface{}) {\n"
    )
    assert added_api(go, {}, {}) == {
        "HiRedString": "func HiRedString(format string, a ...interface{}) string",
        "PrintlnFunc": "func (c *Color) PrintlnFunc() func(a ...interface{})",
    }
    ts = (
        "diff --git a/src/index.ts b/src/index.ts\n--- a/src/index.ts\n+++ b/src/index.ts\n@@ -1,1 +1,8 @@\n"
        " import x from 'x'\n+export function titleCase<\n+  T extends string | readonly string[],\n"
        "+  UserCaseOptions extends CaseOptions = CaseOptions,\n+>(str?: T, opts?: UserCaseOptions) {\n"
        "+  return (Array.isArray(str) ? str : splitByCase(str as string))\n+}\n"
        "+export const LIMIT = computeLimit(3)\n"
    )
    assert added_api(ts, {}, {}) == {
        "titleCase": "export function titleCase< T extends string | readonly string[], UserCaseOptions extends "
        "CaseOptions = CaseOptions, >(str?: T, opts?: UserCaseOptions)",
        "LIMIT": "export const LIMIT",
    }
    rust = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,1 +1,2 @@\n x\n"
    rust += "+pub fn width(s: &str) -> usize { s.chars().count() }\n"
    assert added_api(rust, {}, {}) == {"width": "pub fn width(s: &str) -> usize"}
