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


# ------------------------------------------------------------------------------------ the policy, at report time


def _axes(**found) -> dict:
    base = {
        "version": 1,
        "files": ["pkg/core.py"],
        "outside_scope": [],
        "lines_changed": 2,
        "gold_lines_changed": 2,
        "size_ratio": 1.0,
        "tests_deleted": [],
        "tests_weakened": [],
        "top_level_added": [],
        "debug_leftovers": [],
        "binary_files": [],
        "own_checks": {"checks": ["ruff"], "new": []},
    }
    return {**base, **found}


DEBUG = {"debug_leftovers": [{"path": "pkg/core.py", "line": 'print("here")'}]}
DELETED = {"tests_deleted": ["tests/test_old.py"]}


def _run(path, cells: dict[str, list[tuple[str, bool, dict | None]]]):
    """A run folder written with the real writers: config -> [(task, resolved, axes)]."""
    from harness.records import ResultRow, RunFolder

    folder = RunFolder(path, create=True)
    folder.update_manifest(
        lambda m: m.update(
            {
                "run_id": path.name,
                "tasks": {},
                "started_at": "2026-01-01T00:00:00+00:00",
                "finished_at": "2026-01-01T01:00:00+00:00",
            }
        )
    )
    for config, rows in cells.items():
        for task, resolved, axes in rows:
            folder.append(
                ResultRow(
                    run_id=path.name,
                    task_id=task,
                    task_hash="h-" + task,
                    config=config,
                    agent="default",
                    outcome="resolved" if resolved else "unresolved",
                    resolved=resolved,
                    acceptance=axes,
                    dir=f"attempts/{task}/{config}/rep-0/attempt-1",
                )
            )
    return path


def test_the_policy_judges_the_recorded_axes_and_an_old_row_is_not_measured(tmp_path):
    from harness.records import ResultRow
    from harness.report.acceptance import DEFAULT_POLICY, judge, load_policy, tell

    def row(resolved, axes):
        return ResultRow(
            run_id="r",
            task_id="t",
            task_hash="h",
            config="c",
            agent="a",
            outcome="resolved" if resolved else "unresolved",
            resolved=resolved,
            acceptance=axes,
        )

    assert judge(row(True, _axes())).acceptance == "accepted"
    assert judge(row(False, _axes())).reasons == ["not resolved"]
    old = judge(row(True, None))
    assert old.acceptance == "not_measured" and not old.accepted and tell(old) == "not measured"
    refused = judge(row(True, _axes(**DEBUG, **DELETED)))
    assert refused.acceptance == "not_accepted" and refused.reasons == ["deleted tests", "debugging left in"]
    assert (
        tell(refused)
        == 'not accepted: deleted tests (tests/test_old.py), debugging left in (pkg/core.py: print("here"))'
    )
    # a team's policy in its wholeloop.yaml: debugging allowed, at most 3x gold's size
    (tmp_path / "wholeloop.yaml").write_text(
        "install: [pip install -e .]\nacceptance:\n  debug_leftovers: false\n  max_size_ratio: 3\n"
    )
    team = load_policy(tmp_path / "wholeloop.yaml")
    import yaml

    from harness.authoring.environment import RepoConfig

    # the same file is a valid wholeloop.yaml for mining (which does not read the policy)
    assert RepoConfig.model_validate(yaml.safe_load((tmp_path / "wholeloop.yaml").read_text())).acceptance
    assert judge(row(True, _axes(**DEBUG)), team).accepted
    assert judge(row(True, _axes(size_ratio=4.0, lines_changed=8)), team).reasons == [
        "larger than allowed against gold"
    ]
    assert judge(row(True, _axes(size_ratio=40.0)), DEFAULT_POLICY).accepted  # no size limit by default
    (tmp_path / "bad.yaml").write_text("acceptance:\n  debug_leftover: false\n")
    from harness.report.errors import ReportInputError

    with pytest.raises(ReportInputError, match="debug_leftover"):
        load_policy(tmp_path / "bad.yaml")


def test_report_json_shows_both_rates_how_many_resolved_were_not_accepted_and_why(tmp_path):
    from support.cli import wl

    run = _run(
        tmp_path / "run",
        {
            "agent-a": [
                ("t1", True, _axes()),
                ("t2", True, _axes(**DEBUG)),
                ("t3", True, _axes(**DELETED)),
                ("t4", False, _axes()),
            ],
            "old": [("t1", True, None), ("t2", False, None)],
        },
    )
    out, html = tmp_path / "figures.json", tmp_path / "report.html"
    proc = wl("report", run, "--json", out, "--html", html)
    assert proc.returncode == 0, proc.stderr
    import json

    by = {a["config"]: a for a in json.loads(out.read_text())["acceptance"]}
    a = by["agent-a"]
    assert (a["resolved"], a["accepted"], a["resolved_not_accepted"]) == (3, 1, 2)
    assert a["reasons"] == {"debugging left in": 1, "deleted tests": 1}
    assert a["resolve_rate"]["value"] == 0.75 and a["accept_rate"]["value"] == 0.25
    assert by["old"]["not_measured"] == 1 and by["old"]["accept_rate"]["value"] is None  # never false
    assert "accept" in proc.stdout and "2 of 3 resolved not accepted" in proc.stdout
    assert 't2 (repeat 0): debugging left in (pkg/core.py: print("here"))' in proc.stdout
    page = html.read_text()
    section = page[page.index('id="acceptance"') :]
    assert "<b>deleted tests</b> 1" in section and "t3 (repeat 0): deleted tests (tests/test_old.py)" in section
    assert "print(&#34;here&#34;)" in section or "print(&quot;here&quot;)" in section


def test_metric_accept_gives_compare_and_gate_the_acceptance_rate_with_the_same_statistics(tmp_path):
    import json

    from support.cli import wl

    clean = [(f"t{i}", True, _axes()) for i in range(12)]
    sloppy = [(f"t{i}", True, _axes(**DEBUG) if i < 8 else _axes()) for i in range(12)]
    base = _run(tmp_path / "base", {"clean": clean})
    cand = _run(tmp_path / "cand", {"sloppy": sloppy})
    same = wl("gate", base, cand, "--json", tmp_path / "resolve.json")
    assert same.returncode == 0, same.stdout + same.stderr  # both resolve all 12
    worse = wl("gate", base, cand, "--metric", "accept", "--json", tmp_path / "accept.json")
    decision = json.loads((tmp_path / "accept.json").read_text())
    assert worse.returncode == 1 and decision["verdict"] == "regression", worse.stdout + worse.stderr
    assert decision["metric"] == "accept" and decision["candidate_value"] == pytest.approx(4 / 12)
    cmp = wl("compare", base, cand, "--metric", "accept", "--json", tmp_path / "cmp.json")
    figures = json.loads((tmp_path / "cmp.json").read_text())
    assert figures["metric"] == "accept", cmp.stderr
    rates = {c["name"]: c["resolve_rate"]["value"] for c in figures["configs"]}
    assert rates == {"clean": 1.0, "sloppy": pytest.approx(4 / 12)}
    [comparison] = figures["comparisons"]
    assert comparison["shared_tasks"] == 12 and (comparison["mcnemar_b"], comparison["mcnemar_c"]) == (8, 0)
    assert comparison["better"] == "clean"
    # an old run's resolved rows were never measured: the accept metric refuses it, the resolve metric does not
    old = _run(tmp_path / "old", {"old": [(f"t{i}", True, None) for i in range(12)]})
    refused = wl("gate", old, cand, "--metric", "accept")
    assert refused.returncode == 2 and "not measured" in refused.stderr and "regrade" in refused.stderr


def test_scoring_gives_resolved_but_not_accepted_its_own_cost(tmp_path):
    from harness.report.figures import compute_figures

    run = _run(tmp_path / "run", {"a": [("t1", True, _axes()), ("t2", True, _axes(**DEBUG))]})
    (tmp_path / "scoring.yaml").write_text("not_accepted: 0.5\n")
    [score] = compute_figures([run], tmp_path / "scoring.yaml", recovery=False).scoring.configs
    assert score.expected_cost_per_task.value == pytest.approx(0.25)
    assert score.by_outcome == {"resolved": 0.0, "resolved_not_accepted": 0.5}
    [plain] = compute_figures([run], recovery=False).scoring.configs
    assert plain.expected_cost_per_task.value == 0.0


# ------------------------------------------------------------------------------------ the controls hold it


def test_the_default_policy_refuses_exactly_what_tasks_check_flags_in_gold():
    from harness.grading.acceptance import DEFAULT_REFUSED
    from harness.report.acceptance import AXES, DEFAULT_POLICY

    rules = DEFAULT_POLICY.model_dump()
    assert [k for k in AXES if rules[k]] == list(DEFAULT_REFUSED)


def _set_axes(run, axes_of):
    """Give each row of a copied run folder the axes `axes_of(task_id)` (a fabricated regrade)."""
    import json

    lines = []
    for line in (run / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        row["acceptance"] = axes_of(row["task_id"])
        lines.append(json.dumps(row))
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")


def test_a_gold_that_the_policy_does_not_accept_is_a_failed_control_and_noop_never_is(tmp_path):
    from harness.report.figures import compute_figures

    data = ROOT / "tests" / "data" / "runs"
    gold, noop = tmp_path / "v1-gold", tmp_path / "v1-noop"
    shutil.copytree(data / "v1-gold", gold)
    shutil.copytree(data / "v1-noop", noop)
    # graded before the axes existed: not measured, so no control fails (never false)
    assert compute_figures([gold, noop], recovery=False).controls == []
    _set_axes(gold, lambda _task: _axes())
    _set_axes(noop, lambda _task: _axes())
    figures = compute_figures([gold, noop], recovery=False)
    assert figures.controls == []
    assert {a.config: (a.accepted, a.resolved) for a in figures.acceptance}["gold"] == (3, 3)  # on every task
    assert {a.config: a.accepted for a in figures.acceptance}["noop"] == 0
    _set_axes(gold, lambda task: _axes(**DEBUG) if task == "ledgerly-002" else _axes())
    [failure] = compute_figures([gold, noop], recovery=False).controls
    assert failure.check == "gold-accepted" and failure.message.startswith("the control failed: gold")
    assert [(t.task_id, t.expected, t.trials) for t in failure.tasks] == [("ledgerly-002", 0, 1)]
    assert "ledgerly-002: debugging left in" in failure.message
    from support.cli import wl

    shown = wl("report", gold, "--no-tasks", env={"COLUMNS": "300"})
    assert shown.returncode == 0 and "control failed: gold (gold) is not accepted" in shown.stdout


@pytest.mark.docker
@pytest.mark.usefixtures("no_leftovers")
def test_tasks_check_records_golds_axes_and_flags_a_gold_the_default_policy_refuses(tmp_path):
    import yaml
    from support import git, write

    from harness.authoring.check import CheckOptions, check_task, read_verdict
    from harness.tasks import load_task

    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(
        repo,
        {
            "pkg/__init__.py": "def shout(text):\n    return text\n",
            "tests/test_old.py": "def test_old():\n    pass\n",
            "tests/test_legacy.py": "def test_legacy():\n    assert True\n",
        },
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    write(repo, {"tests/test_shout.py": "from pkg import shout\n\n\ndef test_shout():\n    assert shout('a') == 'A'\n"})
    git(repo, "add", "-A")
    test_patch = git(repo, "diff", "--cached", "HEAD") + "\n"
    git(repo, "reset", "-q", "--hard")
    # gold fixes it and deletes a test (its own axes are measured against itself: only what no
    # reviewer accepts from anyone -- deleted or weakened tests, binaries -- can flag it)
    write(repo, {"pkg/__init__.py": "def shout(text):\n    return text.upper()\n"})
    (repo / "tests" / "test_legacy.py").unlink()
    git(repo, "add", "-A")
    gold = git(repo, "diff", "--cached", "HEAD") + "\n"
    git(repo, "reset", "-q", "--hard")
    git(repo, "checkout", "-q", ".")
    spec = tmp_path / "noisy.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "id": "noisy",
                "repo": str(repo),
                "base_commit": base,
                "problem_statement": "shout() should upper-case its text",
                "environment": {"setup": ["pip install pytest==8.3.4"]},
                "hidden_tests": {"command": "python -m pytest -rA -p no:cacheprovider tests", "patch": test_patch},
                "gold_patch": gold,
                "FAIL_TO_PASS": ["tests/test_shout.py::test_shout"],
                "PASS_TO_PASS": ["tests/test_old.py::test_old"],
            },
            sort_keys=False,
        )
    )
    check_task(load_task(spec), CheckOptions(repeats=1))
    verdict = read_verdict(spec)
    assert verdict is not None and verdict.passed, verdict.model_dump_json(indent=1)
    assert verdict.schema_version == 3 and verdict.gold_not_accepted == ["tests_deleted"]
    assert verdict.gold_acceptance is not None and verdict.gold_acceptance["tests_deleted"] == ["tests/test_legacy.py"]


# ------------------------------------------------------------------------------------ crafted patches, end to end


@pytest.fixture(scope="module")
def crafted_runs(demo) -> dict:
    """Three agents (scripted, in their containers) that each fix the demo task as gold does and
    leave one thing a reviewer refuses; run through the real Runner and graded for real."""
    from support.hostile import RUN_PREFIX, Script, run
    from support.redteam import BUGGY_FILE, TASK

    fixed = gold_text(demo, BUGGY_FILE)
    marker = "def _strip_inline_comment"
    assert marker in fixed
    debug = fixed.replace(
        marker + "(value: str) -> str:\n", marker + "(value: str) -> str:\n    print('DEBUG', value)\n"
    )
    assert debug != fixed

    def writes(files):
        def step(sb):
            for path, text in files.items():
                sb.write_file(path, text)

        return step

    agents = {
        "unrelated": Script(writes({BUGGY_FILE: fixed}), "echo 'More notes.' >> README.md", name="unrelated-file"),
        "deleted": Script(writes({BUGGY_FILE: fixed}), "rm tests/test_config.py", name="deleted-test"),
        "debug": Script(writes({BUGGY_FILE: debug}), name="debug-print"),
    }
    # each agent its own task (a copy of the demo task's spec under its own id) of ONE run with two
    # workers: a run per agent cost a Runner and its containers each, one after another
    import yaml

    copies = demo["where"] / "accept-specs"
    copies.mkdir(exist_ok=True)
    specs = []
    for name in agents:
        spec = yaml.safe_load(TASK.read_text())
        spec["id"] = f"{spec['id']}-{name}"
        spec["repo"] = str((TASK.parent / spec["repo"]).resolve())
        spec["gold_patch_file"] = str(TASK.parent / spec["gold_patch_file"])
        spec["hidden_tests"]["patch_file"] = str(TASK.parent / spec["hidden_tests"]["patch_file"])
        specs.append(copies / f"{spec['id']}.yaml")
        specs[-1].write_text(yaml.safe_dump(spec, sort_keys=False))
    prefix = f"{demo['task'].id}-"

    class ByTask:
        """Each crafted task's Script, by the task's id."""

        model = None
        name = "crafted"

        def run(self, ctx):
            return agents[ctx.task.id.removeprefix(prefix)].run(ctx)

        def describe(self) -> dict:
            return {"agent": self.name, "by_task": {n: a.describe() for n, a in agents.items()}}

    where = demo["where"] / f"{RUN_PREFIX}accept-crafted"
    rows = run(specs, ByTask(), where, workers=2)
    return {name: (rows[prefix + name], where) for name in agents}


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
@pytest.mark.parametrize(
    ("name", "reason", "evidence"),
    [
        ("unrelated", "files outside the fix's scope", "README.md"),
        ("deleted", "deleted tests", "tests/test_config.py"),
        ("debug", "debugging left in", "print('DEBUG', value)"),
    ],
)
def test_a_crafted_patch_that_resolves_is_not_accepted_and_show_html_and_json_say_why(
    crafted_runs, name, reason, evidence, tmp_path
):
    import json

    from support.cli import wl

    row, where = crafted_runs[name]
    assert row.resolved and row.outcome == "resolved", (row.outcome, row.note)
    assert json.loads((where / row.dir / "grade.json").read_text())["acceptance"] == row.acceptance
    shown = wl("show", where, row.task_id, env={"COLUMNS": "300"})
    assert shown.returncode == 0 and f"acceptance: not accepted: {reason} (" in shown.stdout, shown.stdout[-3000:]
    assert evidence in shown.stdout
    data = json.loads(wl("show", where, row.task_id, "--json").stdout)
    [attempt] = data["attempts"]
    assert attempt["acceptance"]["verdict"] == "not_accepted" and attempt["acceptance"]["reasons"] == [reason]
    figures, html = tmp_path / "f.json", tmp_path / "r.html"
    done = wl("report", where, "--json", figures, "--html", html, env={"COLUMNS": "300"})
    assert done.returncode == 0, done.stderr[-2000:]
    [acc] = json.loads(figures.read_text())["acceptance"]  # the three crafted tasks: one reason each
    assert (acc["resolved"], acc["accepted"], acc["reasons"][reason]) == (3, 0, 1), acc
    assert acc["tasks_not_accepted"][row.task_id] == [reason], acc
    page = html.read_text()
    section = page[page.index('id="acceptance"') :]
    assert f"<b>{reason.replace(chr(39), '&#39;')}</b> 1" in section


# ------------------------------------------------------------------------------------ exports


def test_exports_carry_the_axes_inspect_as_a_score_swebench_in_a_sidecar(tmp_path):
    import json

    from support.cli import wl

    run = _run(tmp_path / "run", {"a": [("t1", True, _axes()), ("t2", True, _axes(**DEBUG)), ("t3", True, None)]})
    for task in ("t1", "t2", "t3"):
        (run / f"attempts/{task}/a/rep-0/attempt-1").mkdir(parents=True)
        (run / f"attempts/{task}/a/rep-0/attempt-1/patch.diff").write_text(GOLD)
    _rows_with_patches(run)
    done = wl("export", "predictions", run, "--out", tmp_path / "preds.jsonl")
    assert done.returncode == 0, done.stderr
    predictions = [json.loads(x) for x in (tmp_path / "preds.jsonl").read_text().splitlines()]
    assert all(set(p) == {"instance_id", "model_name_or_path", "model_patch"} for p in predictions)  # schema kept
    sidecar = {
        x["instance_id"]: x for x in map(json.loads, (tmp_path / "preds.acceptance.jsonl").read_text().splitlines())
    }
    assert sidecar["t2"]["acceptance"]["debug_leftovers"] == DEBUG["debug_leftovers"]
    assert sidecar["t3"]["acceptance"] is None and sidecar["t1"]["resolved"] is True
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    done = wl("export", "inspect", run, "--out", tmp_path / "log.json")
    assert done.returncode == 0, done.stderr
    samples = {s.id: s for s in read_eval_log(str(tmp_path / "log.json")).samples or []}
    assert samples["t1"].scores["acceptance"].value == 1
    refused = samples["t2"].scores["acceptance"]
    assert refused.value == 0 and refused.answer == "not_accepted" and "debugging left in" in refused.explanation
    assert refused.metadata["axes"]["debug_leftovers"] == DEBUG["debug_leftovers"]
    assert "acceptance" not in samples["t3"].scores and samples["t3"].scores["hidden_tests"].value == 1  # not measured


def _rows_with_patches(run):
    """Point each row of a fabricated run at its attempt folder's patch."""
    import json

    lines = []
    for line in (run / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        row["patch_path"] = row["dir"] + "/patch.diff"
        lines.append(json.dumps(row))
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")


@pytest.mark.docker
@pytest.mark.usefixtures("no_leftovers")
def test_a_run_from_before_the_axes_reports_not_measured_and_a_regrade_measures_it(demo, tmp_path):
    """tests/data/runs/v1-gold (graded before grader 8, no axes): its gold is not measured; regraded
    (its inikit-001 row), the new grade and row carry the axes and gold is accepted."""
    import json

    from support.hostile import RUN_PREFIX

    from harness.report.figures import compute_figures
    from harness.run.regrade import regrade

    old = tmp_path / "v1-gold"
    shutil.copytree(ROOT / "tests" / "data" / "runs" / "v1-gold", old)
    rows = [json.loads(x) for x in (old / "results.jsonl").read_text().splitlines()]
    (old / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows if r["task_id"] == "inikit-001"))
    [before] = compute_figures([old], recovery=False).acceptance
    assert (before.resolved, before.accepted, before.not_measured) == (1, 0, 1)
    new = tmp_path / f"{RUN_PREFIX}regraded"
    [row] = regrade(old, new, tasks=[demo["task"]])
    assert row.resolved and row.acceptance is not None and row.acceptance["files"] == ["inikit/parser.py"]
    assert json.loads((new / row.dir / "grade.json").read_text())["acceptance"] == row.acceptance
    [after] = compute_figures([new], recovery=False).acceptance
    assert (after.resolved, after.accepted, after.not_measured) == (1, 1, 0)


# ------------------------------------------------------------------------ known limits (held-out red team, 2026-12-02)
# A helper who wrote none of this tried to get a resolved patch that breaks the default policy
# `accepted`. These succeeded and are not fixed yet: each is a strict xfail that starts passing
# (and so fails the suite) the day the axis catches it. docs/acceptance.md lists them.


def _with_gold(task, extra: str) -> str:
    return (task.gold() or "") + extra


def _test_file_patch(*added: str) -> str:
    first = "from inikit import Config"
    body = "".join(f"+{line}\n" for line in added)
    return (
        "diff --git a/tests/test_parser.py b/tests/test_parser.py\n--- a/tests/test_parser.py\n"
        f"+++ b/tests/test_parser.py\n@@ -1,1 +1,{len(added) + 1} @@\n{body} {first}\n"
    )


# each was `accepted` on the old axes (a strict xfail until 2026-12-03)
@pytest.mark.parametrize(
    "added",
    [
        ("import pytest", "pytestmark = pytest.mark.skip('flaky')"),
        ("collect_ignore = ['test_parser.py']",),
        ("@pytest.mark.skip(reason='later')",),
        ("    pytest.skip('not today')",),
        ("    self.skipTest('later')",),
        ("@unittest.skip('later')",),
        ("it.skip('parses', () => {});",),
        ("describe.skip('parser', () => {});",),
        ("xit('parses', () => {});",),
        ('    t.Skip("later")',),
        ("#[ignore]",),
    ],
)
def test_a_test_switched_off_in_a_test_file_is_refused(added):
    from harness.grading.acceptance import refused_by_default
    from harness.tasks import load_task

    task = load_task(ROOT / "tasks" / "demo" / "inikit-001.yaml")
    axes = measure(task, _with_gold(task, _test_file_patch(*added)))
    assert "tests_weakened" in refused_by_default(axes), axes
    assert axes.tests_weakened[-1].line == added[-1].strip()


def test_an_assertion_replaced_by_one_that_always_holds_weakens_the_test():
    from harness.tasks import load_task

    task = load_task(ROOT / "tasks" / "demo" / "inikit-001.yaml")
    patch = (
        "diff --git a/tests/test_parser.py b/tests/test_parser.py\n--- a/tests/test_parser.py\n"
        "+++ b/tests/test_parser.py\n@@ -1,2 +1,2 @@\n from inikit import Config\n"
        "-    assert Config.parse('a=1')['a'] == '1'\n+    assert True\n"
    )
    assert [e.line for e in measure(task, patch).tests_weakened] == ["assert Config.parse('a=1')['a'] == '1'"]


def test_a_skip_marker_gold_adds_too_is_not_a_finding():
    from harness.tasks import load_task

    task = load_task(ROOT / "tasks" / "demo" / "inikit-001.yaml")
    line = "@pytest.mark.skipif(sys.platform == 'win32', reason='posix paths')"
    task_gold = _test_file_patch(line)
    axes = measure(
        task.model_copy(update={"gold_patch": (task.gold() or "") + task_gold, "gold_patch_file": None}), task_gold
    )
    assert axes.tests_weakened == []


@pytest.mark.parametrize(
    "line",
    [
        '_dbg = 1; print("DEBUG", _dbg)',
        'console.error("DEBUG", x)',
        "console.warn(x)",
        "console.info('here')",
        "println(x)",
        'eprint!("{:?}", x);',
        "sys.stderr.write(repr(x))",
        "sys.stdout.write(f'{x}')",
    ],
)
def test_debug_output_the_old_patterns_missed_is_refused(line):
    from harness.grading.acceptance import refused_by_default
    from harness.tasks import load_task

    task = load_task(ROOT / "tasks" / "demo" / "inikit-001.yaml")
    patch = _with_gold(
        task,
        "diff --git a/inikit/parser.py b/inikit/parser.py\n--- a/inikit/parser.py\n+++ b/inikit/parser.py\n"
        f"@@ -1,1 +1,2 @@\n import re\n+{line}\n",
    )
    assert refused_by_default(measure(task, patch)) == ["debug_leftovers"]
