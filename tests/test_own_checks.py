"""The repository's own checks (issue 25, item 1): inference from the base's config, one parser per
output format, diff-aware counting, the policy over the recorded axis; end to end on the own-checks
fixture (scripts/make_checks_fixture.py: ruff, mypy and eslint configured), graded for real in Docker."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from harness.grading.own_checks import (
    Finding,
    counts,
    infer,
    is_config,
    new_findings,
    normalise,
    parse_black,
    parse_eslint_json,
    parse_flake8,
    parse_isort,
    parse_mypy_lines,
    parse_ruff_json,
)

ROOT = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------------------------ inference


def _reader(files: dict[str, str]):
    return files.get


def test_inference_reads_pre_commit_versions_pyproject_sections_setup_cfg_and_package_json():
    pre = (
        "repos:\n"
        "  - repo: https://github.com/astral-sh/ruff-pre-commit\n    rev: v0.6.9\n    hooks: [{id: ruff}]\n"
        "  - repo: https://github.com/pre-commit/mirrors-mypy\n    rev: v1.11.2\n    hooks: [{id: mypy}]\n"
        "  - repo: https://github.com/some/unknown-hook\n    rev: v1.0\n    hooks: [{id: x}]\n"
    )
    assert infer(_reader({".pre-commit-config.yaml": pre})) == ["ruff==0.6.9", "mypy==1.11.2"]
    # pyproject's tool sections name tools without versions; pre-commit's version wins
    pyproject = "[tool.black]\nline-length = 100\n[tool.isort]\nprofile = 'black'\n[tool.mypy]\nstrict = true\n"
    assert infer(_reader({"pyproject.toml": pyproject, ".pre-commit-config.yaml": pre})) == [
        "ruff==0.6.9",
        "black",
        "isort",
        "mypy==1.11.2",
    ]
    assert infer(_reader({"setup.cfg": "[metadata]\nname = x\n\n[flake8]\nmax-line-length = 99\n"})) == ["flake8"]
    assert infer(_reader({"mypy.ini": "[mypy]\n"})) == ["mypy"]
    pkg = json.dumps({"devDependencies": {"eslint": "^9.12.0", "vitest": "2.1.9"}})
    assert infer(_reader({"package.json": pkg})) == ["eslint==9.12.0"]
    # a pytest-only project, a broken file: nothing, and no exception
    assert infer(_reader({"pyproject.toml": "[tool.pytest.ini_options]\n"})) == []
    assert infer(_reader({"pyproject.toml": "[tool.ruff\n", "package.json": "{", ".pre-commit-config.yaml": ":"})) == []


def test_the_files_the_checks_read_their_settings_from_are_config_files_anywhere_in_the_tree():
    for path in (
        "pyproject.toml",
        "pkg/ruff.toml",
        "setup.cfg",
        "sub/.flake8",
        "mypy.ini",
        ".eslintrc.json",
        "a/.eslintrc",
    ):
        assert is_config(path), path
    assert not is_config("pkg/core.py") and not is_config("docs/pyproject.md")


# ------------------------------------------------------------------------------------ parsers


def test_each_output_format_is_read_into_file_rule_and_message():
    ruff = json.dumps(
        [{"filename": "/repo/pkg/a.py", "code": "F401", "message": "`os` imported but unused", "location": {"row": 3}}]
    )
    assert parse_ruff_json(ruff) == [Finding(file="pkg/a.py", rule="F401", message="`os` imported but unused")]
    mypy = (
        'pkg/a.py:12: error: Incompatible return value type (got "int", expected "str")  [return-value]\n'
        "pkg/b.py:3:5: error: Function is missing a type annotation  [no-untyped-def]\n"
        "pkg/b.py:4: note: See https://mypy.readthedocs.io\n"
        "Found 2 errors in 2 files\n"
    )
    assert [(f.file, f.rule) for f in parse_mypy_lines(mypy)] == [
        ("pkg/a.py", "return-value"),
        ("pkg/b.py", "no-untyped-def"),
    ]
    assert parse_flake8("./pkg/a.py:1:1: F401 'os' imported but unused\n") == [
        Finding(file="pkg/a.py", rule="F401", message="'os' imported but unused")
    ]
    assert parse_black("would reformat /repo/pkg/a.py\nOh no!\n") == [
        Finding(file="pkg/a.py", rule="black", message="would reformat")
    ]
    assert [
        f.file for f in parse_isort("ERROR: /repo/pkg/a.py Imports are incorrectly sorted and/or formatted.\n")
    ] == ["pkg/a.py"]
    eslint = json.dumps(
        [
            {
                "filePath": "/repo/src/a.js",
                "messages": [{"ruleId": "no-unused-vars", "message": "'x' is unused", "line": 2}],
            }
        ]
    )
    assert parse_eslint_json(eslint) == [Finding(file="src/a.js", rule="no-unused-vars", message="'x' is unused")]
    assert parse_ruff_json("not json") == [] and parse_eslint_json("") == []


DATA = ROOT / "tests" / "data" / "own_checks"


def test_pyright_tsc_prettier_rustfmt_and_clippy_output_is_read_from_what_the_tools_print():
    """Each parser on the tool's real output (pyright 1.1.385 --outputjson, tsc 5.6.3 --pretty
    false, prettier 3.3.3 --list-different, cargo fmt --check --message-format short and cargo
    clippy --message-format json of rust 1.95, run on small projects; paths as in the container)."""
    from harness.grading.own_checks import TOOLS, parse_clippy_json, parse_pyright_json, parse_tsc

    assert parse_pyright_json((DATA / "pyright.json").read_text()) == [
        Finding(file="src/b.py", rule="reportReturnType", message='Type "str" is not assignable to return type "int"'),
        Finding(
            file="src/b.py", rule="reportAttributeAccessIssue", message='"nope" is not a known attribute of module "os"'
        ),
    ]
    tsc = (
        "src/a.ts(2,3): error TS2322: Type 'string' is not assignable to type 'number'.\n"
        "src/a.ts(4,7): error TS2322: Type 'string' is not assignable to type 'number'.\n"
    )
    found = parse_tsc(tsc)
    assert (
        found
        == [Finding(file="src/a.ts", rule="TS2322", message="Type 'string' is not assignable to type 'number'.")] * 2
    )
    assert counts(found)[found[0].key] == 2  # one key, counted twice: a third would be new
    assert TOOLS["prettier"].parse("src/c.js\n[warn] src/c.js\n") == [
        Finding(file="src/c.js", rule="prettier", message="would reformat")
    ]
    assert TOOLS["rustfmt"].parse("/repo/src/lib.rs\n") == [
        Finding(file="src/lib.rs", rule="rustfmt", message="not rustfmt-formatted")
    ]
    # the compiler-artifact and build-finished lines, and "N warnings emitted" (no code), left out
    assert parse_clippy_json((DATA / "clippy.jsonl").read_text()) == [
        Finding(file="src/lib.rs", rule="clippy::needless_return", message="unneeded `return` statement")
    ]
    assert parse_pyright_json("") == [] and parse_clippy_json("warning: not json\n") == []


def test_inference_of_pyright_tsc_prettier_and_rust_checks_and_from_ci_workflow_steps():
    pkg = json.dumps({"devDependencies": {"typescript": "5.6.3", "prettier": "^3.3.3"}})
    assert infer(_reader({"package.json": pkg, "tsconfig.json": "{}"})) == ["tsc==5.6.3", "prettier==3.3.3"]
    assert infer(_reader({"package.json": pkg})) == ["prettier==3.3.3"]  # typescript without a tsconfig: a dependency
    assert infer(_reader({"pyproject.toml": "[tool.pyright]\nstrict = ['pkg']\n"})) == ["pyright"]
    assert infer(_reader({"pyrightconfig.json": "{}", ".prettierrc": "{}"})) == ["pyright", "prettier"]
    pre = (
        "repos:\n"
        "  - repo: https://github.com/RobertCraigie/pyright-python\n    rev: v1.1.385\n    hooks: [{id: pyright}]\n"
        "  - repo: https://github.com/doublify/pre-commit-rust\n    rev: v1.0\n    hooks: [{id: fmt}, {id: clippy}]\n"
    )
    rust = frozenset({"cargo", "rustfmt", "cargo-clippy"})
    assert infer(_reader({".pre-commit-config.yaml": pre}), rust) == ["pyright==1.1.385", "rustfmt", "clippy"]
    # a Cargo crate gets them when the image has the tools, not when it lacks them
    assert infer(_reader({"Cargo.toml": "[package]\nname = 'x'\n"}), rust) == ["rustfmt", "clippy"]
    assert infer(_reader({"Cargo.toml": "[package]\nname = 'x'\n"}), frozenset({"cargo", "rustfmt"})) == ["rustfmt"]
    assert infer(_reader({"Cargo.toml": "[package]\nname = 'x'\n"})) == []
    workflow = (
        "name: ci\non: [push]\njobs:\n  lint:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n"
        "      - run: pip install ruff mypy\n"
        "      - name: lint\n        run: |\n          ruff check .\n          npx tsc --noEmit\n"
        "      - run: cargo clippy -- -D warnings\n"
        "  docs:\n    steps:\n      - run: echo checking the docs\n"
    )
    assert infer(_reader({}), rust, (workflow,)) == ["ruff", "mypy", "tsc", "clippy"]
    assert infer(_reader({}), frozenset(), (workflow,)) == ["ruff", "mypy", "tsc"]  # no cargo in the image
    assert infer(_reader({}), frozenset(), ("jobs: [", "on: push\n")) == []  # broken or jobless: nothing


# ------------------------------------------------------------------------------------ diff-aware


def test_findings_are_matched_without_line_numbers_and_counted():
    assert normalise('Name "x" already defined on line 12') == normalise('Name "x" already defined on line 40')
    base_findings = [
        Finding(file="a.py", rule="E741", message="Ambiguous variable name: `l`"),
        Finding(file="a.py", rule="F401", message="`os` imported but unused"),
    ]
    base = counts(base_findings)
    # the same findings, moved: nothing new
    assert new_findings("ruff", base, list(base_findings)) == []
    # one more of a kind the base has once: one new, with its count; a new kind: new
    now = [*base_findings, base_findings[0], Finding(file="a.py", rule="F841", message="unused `y`")]
    found = {(n.rule, n.count) for n in new_findings("ruff", base, now)}
    assert found == {("E741", 1), ("F841", 1)}
    # a finding the patch removed is not "negative"
    assert new_findings("ruff", base, base_findings[:1]) == []
    assert new_findings("ruff", Counter(), []) == []


def test_inline_settings_a_patch_adds_are_taken_out_before_the_checks_run_and_kept_as_evidence():
    """mypy, pyright, tsc, black, prettier, rustfmt and clippy honour inline settings no flag turns
    off (`# mypy: ignore-errors`, a module-level `# type: ignore`, `// @ts-nocheck`, `#![allow]`):
    the lines the patch adds are applied without them, so what they hid is found. A line gold adds
    too, a setting the patch also removes in that file (a line rewritten with the setting it had),
    a string that only looks like one, and noqa/eslint-disable (turned off by flags) are left."""
    from harness.grading.own_checks import NEUTRAL, unsilence

    def diff(path: str, lines: list[str]) -> str:
        body = "".join(line + "\n" for line in lines)
        old = sum(not line.startswith("+") for line in lines)
        new = sum(not line.startswith("-") for line in lines)
        return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,{old} +1,{new} @@\n{body}"

    patch = (
        diff(
            "pkg/text.py",
            [
                "+# mypy: ignore-errors",
                "+# type: ignore",
                " import re",
                "-x = f(a)  # type: ignore[arg-type]",
                "+x = f(b)  # type: ignore[arg-type]",
                '+y = g("it\'s")  # type: ignore[call-arg]',
                '+z = "# type: ignore"',
                "+import os  # noqa: F401",
                "+from typing import cast  # type: ignore[attr-defined]",
                "+    # fmt: off",
            ],
        )
        + diff(
            "src/a.ts",
            [
                "+// @ts-nocheck",
                " const a = 1;",
                "+const b: number = 'x'; // @ts-ignore",
                "+// eslint-disable",
                "+  /* prettier-ignore */ const c = [1,2];",
            ],
        )
        + diff("src/lib.rs", ["+#![allow(clippy::all)]", " fn a() {}", "+    #[allow(dead_code)] fn b() {}"])
    )
    gold = diff("pkg/text.py", ["+from typing import cast  # type: ignore[attr-defined]"])
    out, found = unsilence(patch, gold)
    added = [line[1:] for line in out.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert added == [
        "# " + NEUTRAL,
        "# " + NEUTRAL,
        "x = f(b)  # type: ignore[arg-type]",  # rewritten with the setting the base line had
        'y = g("it\'s")',
        'z = "# type: ignore"',  # a string
        "import os  # noqa: F401",  # ruff --ignore-noqa, flake8 --disable-noqa
        "from typing import cast  # type: ignore[attr-defined]",  # gold adds it too
        "    # " + NEUTRAL,
        "// " + NEUTRAL,
        "const b: number = 'x';",
        "// eslint-disable",  # eslint --no-inline-config
        "  const c = [1,2];",  # a block comment: the code after it kept
        "// " + NEUTRAL,
        "    fn b() {}",
    ]
    assert [(s.file, s.line) for s in found] == [
        ("pkg/text.py", "# mypy: ignore-errors"),
        ("pkg/text.py", "# type: ignore"),
        ("pkg/text.py", 'y = g("it\'s")  # type: ignore[call-arg]'),
        ("pkg/text.py", "# fmt: off"),
        ("src/a.ts", "// @ts-nocheck"),
        ("src/a.ts", "const b: number = 'x'; // @ts-ignore"),
        ("src/a.ts", "/* prettier-ignore */ const c = [1,2];"),
        ("src/lib.rs", "#![allow(clippy::all)]"),
        ("src/lib.rs", "#[allow(dead_code)] fn b() {}"),
    ]
    # the hunks still count what they did: the patch applies as the original would
    assert out.count("\n") == patch.count("\n") and out.count("\n+") == patch.count("\n+")
    # nothing to take out: the patch unchanged
    assert unsilence(gold, gold) == (gold, [])


# ------------------------------------------------------------------------------------ the policy


def _row(own_checks):
    from harness.records import ResultRow

    axes = {"files": ["a.py"], "outside_scope": [], "size_ratio": 1.0}
    if own_checks is not ...:
        axes["own_checks"] = own_checks
    return ResultRow(
        run_id="r",
        task_id="t",
        task_hash="h",
        config="c",
        agent="a",
        outcome="resolved",
        resolved=True,
        acceptance=axes,
    )


def test_the_policy_refuses_new_findings_and_an_unmeasured_axis_is_not_measured_never_false(tmp_path):
    from harness.report.acceptance import judge, load_policy, tell

    finding = {"check": "ruff", "file": "a.py", "rule": "F401", "message": "`os` imported but unused", "count": 1}
    assert judge(_row({"checks": ["ruff"], "new": []})).accepted
    assert judge(_row({"checks": [], "new": []})).accepted  # a repository without checks
    refused = judge(_row({"checks": ["ruff"], "new": [finding]}))
    assert refused.reasons == ["new findings of the repository's own checks"]
    assert tell(refused) == (
        "not accepted: new findings of the repository's own checks (ruff F401 in a.py: `os` imported but unused)"
    )
    # graded before grader 9 (no such key), or the checks could not run: not measured
    assert judge(_row(...)).acceptance == "not_measured"
    assert judge(_row({"checks": ["ruff"], "error": "ImageBuildError: no network"})).acceptance == "not_measured"
    # a team that does not count them
    (tmp_path / "p.yaml").write_text("acceptance:\n  own_checks: false\n")
    lenient = load_policy(tmp_path / "p.yaml")
    assert judge(_row({"checks": ["ruff"], "new": [finding]}), lenient).accepted
    assert judge(_row(...), lenient).accepted


def test_wholeloop_yaml_and_a_task_spec_take_a_checks_list_and_an_empty_one_switches_them_off():
    from harness.authoring.environment import RepoConfig
    from harness.tasks.spec import Task

    assert RepoConfig.model_validate({"checks": ["ruff==0.6.9", "mypy"]}).checks == ["ruff==0.6.9", "mypy"]
    assert RepoConfig.model_validate({"checks": []}).checks == []
    base = {
        "id": "t",
        "repo": ".",
        "base_commit": "a" * 40,
        "problem_statement": "p",
        "hidden_tests": {"command": "pytest"},
        "FAIL_TO_PASS": ["x"],
    }
    unset, off, named = (Task.model_validate(base | extra) for extra in ({}, {"checks": []}, {"checks": ["ruff"]}))
    assert unset.checks is None and off.checks == [] and named.checks == ["ruff"]
    # a spec written before the field keeps its content hash; switching checks off changes it
    assert len({unset.content_hash(), off.content_hash(), named.content_hash()}) == 3


# ------------------------------------------------------------------------------------ end to end, in Docker


@pytest.fixture(scope="module")
def checks_suite(tmp_path_factory) -> dict:
    """The own-checks fixture (ruff, mypy and eslint pinned by its .pre-commit-config.yaml), gold and noop
    run on both tasks through the real Runner, and three crafted patches of tidyco-001, each fixing
    the bug as gold does and leaving what the repository's own checks see."""
    import subprocess
    import sys

    import yaml
    from support.hostile import RUN_PREFIX, Script, run

    from harness.agents import get_agent

    where = tmp_path_factory.mktemp("own-checks")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_checks_fixture.py"), str(where / "fixture")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    specs = sorted((where / "fixture" / "tasks").glob("*.yaml"))
    first = specs[0]
    repo = where / "fixture" / "repo"
    base = subprocess.run(
        ["git", "show", "HEAD~2:tidyco/text.py"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    fixed = base.replace('return "-".join(words)', 'return "-".join(w.lower() for w in words)')
    assert fixed != base

    def writes(files):
        def step(sb):
            for path, text in files.items():
                sb.write_file(path, text)

        return step

    unused = fixed.replace("import re\n", "import os\nimport re\n")
    pyproject = subprocess.run(
        ["git", "show", "HEAD~2:pyproject.toml"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    silenced = pyproject.replace('select = ["E", "F", "B"]', 'select = ["E", "F", "B"]\nignore = ["F401"]')
    assert silenced != pyproject
    typed = fixed + "\n\ndef width(text: str) -> int:\n    return text\n"
    js = subprocess.run(
        ["git", "show", "HEAD~2:web/slug.js"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    js_unused = js.replace("export function slug(title) {\n", "export function slug(title) {\n  const extra = 1;\n")
    assert js_unused != js
    # three crafted patches, each one task (a copy of tidyco-001's spec under its own id) of ONE run
    # with two workers: a run per patch cost a Runner and its containers each, one after another
    agents = {
        # its own linter, and an inline suppression, which is ignored (at base as in the attempt)
        "ruff": Script(
            writes({"tidyco/text.py": unused.replace("import os\n", "import os\nimport sys  # noqa: F401\n")}),
            name="unused-imports",
        ),
        # an attempt to silence it in the config the checks read: they read the base's
        "config": Script(
            writes(
                {
                    "tidyco/text.py": unused,
                    "pyproject.toml": silenced,
                    "tidyco/ruff.toml": "[lint]\nignore = ['F401']\n",
                }
            ),
            name="silences-ruff-in-config",
        ),
        # its type checker, and its JavaScript linter
        "types": Script(writes({"tidyco/text.py": typed, "web/slug.js": js_unused}), name="type-and-eslint"),
    }
    crafted = where / "fixture" / "crafted"  # beside tasks/: the spec's `repo: ../repo` still holds
    crafted.mkdir()
    copies = []
    for name in agents:
        spec = yaml.safe_load(first.read_text())
        spec["id"] = f"tidyco-001-{name}"
        copies.append(crafted / f"{spec['id']}.yaml")
        copies[-1].write_text(yaml.safe_dump(spec, sort_keys=False))

    class ByTask:
        """Each crafted task's Script, by the task's id."""

        model = None
        name = "crafted"

        def run(self, ctx):
            return agents[ctx.task.id.removeprefix("tidyco-001-")].run(ctx)

        def describe(self) -> dict:
            return {"agent": self.name, "by_task": {n: a.describe() for n, a in agents.items()}}

    out = {
        "gold": run(specs, get_agent("gold"), where / f"{RUN_PREFIX}checks-gold", workers=2),
        "noop": run(specs, get_agent("noop"), where / f"{RUN_PREFIX}checks-noop", workers=2),
        "crafted": run(copies, ByTask(), where / f"{RUN_PREFIX}checks-crafted", workers=2),
        "dirs": {"gold": where / f"{RUN_PREFIX}checks-gold", "crafted": where / f"{RUN_PREFIX}checks-crafted"},
    }
    return out


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
def test_gold_is_accepted_on_every_task_of_the_checks_fixture_and_noop_on_none(checks_suite):
    from harness.report.acceptance import judge

    gold, noop = checks_suite["gold"], checks_suite["noop"]
    assert len(gold) == 2 and all(r.resolved for r in gold.values()), {t: r.note for t, r in gold.items()}
    for task, row in gold.items():
        checks = row.acceptance["own_checks"]
        assert checks["checks"] == ["ruff==0.6.9", "mypy==1.11.2", "eslint==9.12.0"], checks
        assert checks["error"] is None, checks
        # the base's findings in the touched file (an ambiguous name, an untyped function) moved
        # down with gold's new lines: matched without line numbers, nothing new
        # (base_total: ruff's one in the touched file, and mypy's of the whole tree, which it runs
        # on: five at the first task's base, six at the second's)
        assert checks["base_total"] == {"tidyco-001": 6, "tidyco-002": 7}[task] and checks["new"] == [], checks
        assert judge(row).accepted
    assert not any(judge(r).accepted for r in noop.values())


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
@pytest.mark.parametrize(
    ("name", "evidence"),
    [
        (
            "ruff",
            [
                "ruff F401 in tidyco/text.py: `os` imported but unused",
                "ruff F401 in tidyco/text.py: `sys` imported but unused",  # despite its noqa
            ],
        ),
        ("config", ["ruff F401 in tidyco/text.py: `os` imported but unused"]),
        (
            "types",
            [
                "mypy return-value in tidyco/text.py: Incompatible return value type",
                "eslint no-unused-vars in web/slug.js: 'extra' is assigned a value but never used",
            ],
        ),
    ],
)
def test_a_patch_that_adds_a_finding_of_the_repositorys_own_checks_is_resolved_and_not_accepted(
    checks_suite, name, evidence
):
    """Its own linter (ruff), an attempt to silence it in the config the checks read (the base's
    config is what they read) or inline (noqa is ignored, at base as in the attempt), its type
    checker (mypy), its JavaScript linter (eslint): resolved, not accepted, each finding named in
    show and show --json."""
    from support.cli import wl

    reason = "new findings of the repository's own checks"
    row = checks_suite["crafted"][f"tidyco-001-{name}"]
    where = checks_suite["dirs"]["crafted"]
    assert row.resolved and row.outcome == "resolved", (row.outcome, row.note)
    checks = row.acceptance["own_checks"]
    assert checks["error"] is None and checks["new_total"] == len(evidence), checks
    shown = wl("show", where, row.task_id, env={"COLUMNS": "400"})
    said = next((line for line in shown.stdout.splitlines() if line.startswith("acceptance: ")), "")
    assert shown.returncode == 0 and said.startswith("acceptance: not accepted: ") and f"{reason} (" in said, said
    for each in evidence:
        assert each in shown.stdout, each
    data = json.loads(wl("show", where, row.task_id, "--json").stdout)
    [attempt] = data["attempts"]
    # (the config attack is also out of scope: pyproject.toml)
    assert attempt["acceptance"]["verdict"] == "not_accepted" and reason in attempt["acceptance"]["reasons"]


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
def test_the_report_counts_each_patch_with_new_findings_resolved_and_not_accepted(checks_suite, tmp_path):
    """report --json and the HTML report over the crafted run: three resolved, none accepted, each
    for the repository's own checks."""
    from support.cli import wl

    reason = "new findings of the repository's own checks"
    figures, html = tmp_path / "f.json", tmp_path / "r.html"
    done = wl("report", checks_suite["dirs"]["crafted"], "--json", figures, "--html", html, env={"COLUMNS": "300"})
    assert done.returncode == 0, done.stderr[-2000:]
    [acc] = json.loads(figures.read_text())["acceptance"]
    assert (acc["resolved"], acc["accepted"], acc["reasons"][reason]) == (3, 0, 3), acc
    page = html.read_text()
    section = page[page.index('id="acceptance"') :]
    assert f"<b>{reason.replace(chr(39), '&#39;')}</b> 3" in section


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
def test_the_task_images_of_one_environment_share_one_install_of_the_tools(checks_suite, tmp_path):
    """The fixture's two tasks have two base commits, so two task images and two checks layers;
    the tools (a venv with ruff and mypy, eslint from npm: the slow part, minutes cold) are
    installed once, on their common environment image, and copied into both layers."""
    from harness.agents import get_agent
    from harness.grading.own_checks import CHECKS_DIR, base_command, install_commands
    from harness.run import Runner, RunOptions
    from harness.tasks import load_task
    from sandbox.docker import images

    specs = sorted((checks_suite["dirs"]["gold"].parent / "fixture" / "tasks").glob("*.yaml"))
    assert len(specs) == 2, specs
    runner = Runner([load_task(p) for p in specs], get_agent("gold"), RunOptions(out=tmp_path / "run"))
    task_ids = {images.image_id(runner.prepare(t).image) for t in runner.tasks}
    assert len(task_ids) == 2
    checks = next(iter(checks_suite["gold"].values())).acceptance["own_checks"]["checks"]
    install, base_run = install_commands(checks), (base_command(checks),)
    tags = {images.checks_image_tags(t, install, base_run, CHECKS_DIR) for t in task_ids}
    assert len({tools for tools, _ in tags}) == 1 and len({layer for _, layer in tags}) == 2, tags
    for _, layer in tags:  # both layers were built (by the fixture's grading) and hold the tools
        assert images.image_exists(layer), layer


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
def test_the_type_checker_at_grading_reads_the_cache_its_base_run_left_in_the_layer(checks_suite, tmp_path):
    """The type checker's budget (+10 s per resolved attempt, docs/performance.md) rests on this:
    mypy at grading, run with the very command grading uses on the whole tree, finds the standard
    library's cache its base run made in the layer at check time (builtins' metadata fresh, never
    parsed again); only the patched tree is checked. Without that cache the same run took 6.6 s
    against 2.4 s (scripts/bench_overhead.py --only own_checks)."""
    from harness.agents import get_agent
    from harness.grading.own_checks import layer, run_command
    from harness.run import Runner, RunOptions
    from harness.sandboxes import default_backend
    from harness.tasks import load_task
    from sandbox import Limits

    spec = sorted((checks_suite["dirs"]["gold"].parent / "fixture" / "tasks").glob("*.yaml"))[0]
    task = load_task(spec)
    runner = Runner([task], get_agent("gold"), RunOptions(out=tmp_path / "run"))
    image = runner.prepare(runner.tasks[0]).image
    checks = checks_suite["gold"][task.id].acceptance["own_checks"]["checks"]
    mypy = next(c for c in checks if c.startswith("mypy"))
    backend = default_backend()
    built = layer(backend, image, checks)  # built by the fixture's grading: found
    command = run_command(mypy, None)
    assert "--cache-dir" in command
    with backend.start(built.tag, limits=Limits(network=False), role="grading") as sb:
        sb.write_file("/tmp/gold.diff", task.gold())
        ran = sb.exec(
            "git apply /tmp/gold.diff && " + command.replace(" --show-error-codes", " -v --show-error-codes", 1),
            timeout=300,
        )
    log = ran.stdout + ran.stderr
    assert "Metadata fresh for builtins" in log, log[-3000:]
    assert "Parsing " not in "".join(line for line in log.splitlines() if "(builtins)" in line), log[-3000:]
    assert "tidyco/text.py" in log  # the patched tree itself is checked


@pytest.mark.docker
@pytest.mark.usefixtures("no_leftovers")
def test_tasks_check_records_the_base_findings_once_and_makes_the_layer_grading_uses(tmp_path):
    import subprocess
    import sys

    from harness.authoring.check import CheckOptions, check_task, read_verdict
    from harness.tasks import load_task

    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_checks_fixture.py"), str(tmp_path / "fixture")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    spec = tmp_path / "fixture" / "tasks" / "tidyco-001.yaml"
    check_task(load_task(spec), CheckOptions(repeats=1))
    verdict = read_verdict(spec)
    assert verdict is not None and verdict.passed and verdict.own_checks is not None, verdict
    own = verdict.own_checks
    assert own["checks"] == ["ruff==0.6.9", "mypy==1.11.2", "eslint==9.12.0"] and own["error"] is None
    # the whole base tree: an ambiguous name in each module, untyped functions in modules and
    # tests, a `let` never reassigned in web/slug.js
    assert own["totals"] == {"ruff": 2, "mypy": 5, "eslint": 1}
    assert own["findings"]["ruff"] == {
        "tidyco/numbers.py | E741 | Ambiguous variable name: `l`": 1,
        "tidyco/text.py | E741 | Ambiguous variable name: `l`": 1,
    }
    assert own["image"].startswith("wholeloop-checks:")
    # gold adds none: no control failure
    assert "own_checks" not in verdict.gold_not_accepted and verdict.gold_acceptance["own_checks"]["new"] == []


def test_checks_are_inferred_from_the_image_and_a_layer_that_cannot_be_built_is_an_error_not_a_verdict(tmp_path):
    """Through a backend that builds no images (tests/support's local one): the checks are read from
    the image's base files; the layer fails, so the axis records why and is not measured."""
    from support.fakesandbox import LocalBackend

    from harness.grading.own_checks import checks_of, measure_own_checks
    from harness.report.acceptance import judge
    from sandbox import Limits

    image = tmp_path / "image"
    image.mkdir()
    (image / "pyproject.toml").write_text("[tool.ruff]\nline-length = 99\n[tool.mypy]\nstrict = true\n")
    backend = LocalBackend()
    checks = checks_of(None, backend, str(image), Limits())
    assert checks == ["ruff", "mypy"]
    assert checks_of([], backend, str(image), Limits()) == []  # `checks: []` switches them off
    result = measure_own_checks(checks, "diff --git a/x.py b/x.py\n", ["x.py"], str(image), backend, Limits())
    assert result.error is not None and "builds no images" in result.error and result.new == []
    assert judge(_row(result.model_dump(mode="json"))).acceptance == "not_measured"


def test_a_go_module_gets_gofmt_and_go_vet_when_the_image_has_go_and_they_run_on_its_packages():
    from harness.grading.own_checks import parse_go_vet, parse_gofmt, run_command

    files = {"go.mod": "module example.com/verkit\n\ngo 1.19\n"}
    assert infer(files.get, frozenset({"go", "gofmt"})) == ["gofmt", "go-vet"]
    assert infer(files.get) == []  # no Go toolchain in the image: nothing to run them with
    assert run_command("go-vet", ["semver/compare.go", "semver/parse.go", "main.go"]).startswith("go vet . ./semver ")
    assert "./..." in run_command("go-vet", None)
    vet = "# example.com/verkit/semver\nsemver/compare.go:12:2: unreachable code\n./cmd/x.go:3:1: fmt.Printf format %d has arg s of wrong type string\n"
    assert [(f.file, f.rule) for f in parse_go_vet(vet)] == [("semver/compare.go", "vet"), ("cmd/x.go", "vet")]
    assert parse_gofmt("semver/compare.go\n") == [
        Finding(file="semver/compare.go", rule="gofmt", message="not gofmt-formatted")
    ]


@pytest.mark.docker
@pytest.mark.usefixtures("no_leftovers")
def test_go_gold_is_clean_and_a_patch_gofmt_and_go_vet_refuse_is_found(tmp_path):
    """The polyglot suite's Go task: its image has Go, so gofmt and go vet are inferred; gold adds no
    finding; gold plus an unformatted line and a vet finding adds one of each."""
    import subprocess

    from support import git

    from harness.agents import get_agent
    from harness.grading.own_checks import checks_of, measure_own_checks
    from harness.run import Runner, RunOptions
    from harness.sandboxes import default_backend
    from harness.tasks import load_task
    from sandbox import Limits

    spec = ROOT / "tasks" / "polyglot" / "verkit-001.yaml"
    task = load_task(spec)
    runner = Runner([task], get_agent("gold"), RunOptions(out=tmp_path / "run"))
    image = runner.prepare(runner.tasks[0]).image
    backend, limits = default_backend(), Limits()
    checks = checks_of(None, backend, image, limits)
    assert checks == ["gofmt", "go-vet"]
    gold = task.gold()
    clean = measure_own_checks(checks, gold, ["semver/compare.go"], image, backend, limits)
    assert clean.error is None and clean.new == [], clean
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str((spec.parent / task.repo).resolve()), str(clone)], check=True)
    git(clone, "checkout", "-q", task.base_commit)
    (tmp_path / "gold.diff").write_text(gold)
    git(clone, "apply", str(tmp_path / "gold.diff"))
    path = clone / "semver" / "compare.go"
    path.write_text(path.read_text() + '\nfunc  wrongFormat( ) string {\n\treturn fmt.Sprintf("%d", "text")\n}\n')
    if 'import "fmt"' not in path.read_text() and '"fmt"' not in path.read_text():
        text = path.read_text().replace("package semver\n", 'package semver\n\nimport "fmt"\n', 1)
        path.write_text(text)
    git(clone, "add", "-A")
    crafted = git(clone, "diff", "--cached", task.base_commit) + "\n"
    found = measure_own_checks(checks, crafted, ["semver/compare.go"], image, backend, limits)
    assert found.error is None, found
    assert {(n.check, n.rule) for n in found.new} == {("gofmt", "gofmt"), ("go-vet", "vet")}, found


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
def test_pyright_and_prettier_installed_in_a_layer_find_what_a_patch_adds_and_nothing_of_gold(tmp_path):
    """pyright (pip, its Node program fetched at install) and prettier (npm) named by a task's
    `checks:`, on the own-checks fixture's image: gold adds nothing; gold plus a type error and a
    new misformatted script adds one finding of each, matched against the base run in the layer."""
    import subprocess
    import sys

    from support import git

    from harness.agents import get_agent
    from harness.grading.own_checks import measure_own_checks
    from harness.run import Runner, RunOptions
    from harness.sandboxes import default_backend
    from harness.tasks import load_task
    from sandbox import Limits

    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_checks_fixture.py"), str(tmp_path / "fixture")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    task = load_task(tmp_path / "fixture" / "tasks" / "tidyco-001.yaml")
    runner = Runner([task], get_agent("gold"), RunOptions(out=tmp_path / "run"))
    image = runner.prepare(runner.tasks[0]).image
    backend, limits = default_backend(), Limits()
    checks = ["pyright==1.1.385", "prettier==3.3.3"]
    gold = task.gold()
    clean = measure_own_checks(checks, gold, ["tidyco/text.py"], image, backend, limits)
    # (pyright in its standard mode finds nothing in the base, prettier neither: base_total 0)
    assert clean.error is None and clean.new == [] and clean.files == ["tidyco/text.py"], clean
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(tmp_path / "fixture" / "repo"), str(clone)], check=True)
    git(clone, "checkout", "-q", task.base_commit)
    (tmp_path / "gold.diff").write_text(gold)
    git(clone, "apply", str(tmp_path / "gold.diff"))
    text = clone / "tidyco" / "text.py"
    text.write_text(text.read_text() + "\n\ndef width(text: str) -> int:\n    return text\n")
    (clone / "web" / "extra.js").write_text("export const  extra = {a:1,\nb:2}\n")
    git(clone, "add", "-A")
    crafted = git(clone, "diff", "--cached", task.base_commit) + "\n"
    found = measure_own_checks(checks, crafted, ["tidyco/text.py", "web/extra.js"], image, backend, limits)
    assert found.error is None, found
    assert {(n.check, n.rule, n.file) for n in found.new} == {
        ("pyright", "reportReturnType", "tidyco/text.py"),
        ("prettier", "prettier", "web/extra.js"),
    }, found


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
def test_the_typescript_task_gets_tsc_from_its_package_json_gold_is_clean_and_a_type_error_is_found(tmp_path):
    """The polyglot suite's TypeScript task: package.json's typescript with a tsconfig.json names
    tsc (installed at that version in the layer); gold adds no finding; gold plus a value of the
    wrong type adds one TS2322, under a `// @ts-nocheck` the patch adds (taken out)."""
    import subprocess

    from support import git

    from harness.agents import get_agent
    from harness.grading.own_checks import checks_of, measure_own_checks
    from harness.run import Runner, RunOptions
    from harness.sandboxes import default_backend
    from harness.tasks import load_task
    from sandbox import Limits

    spec = ROOT / "tasks" / "polyglot" / "timespan-001.yaml"
    task = load_task(spec)
    runner = Runner([task], get_agent("gold"), RunOptions(out=tmp_path / "run"))
    image = runner.prepare(runner.tasks[0]).image
    backend, limits = default_backend(), Limits()
    checks = checks_of(None, backend, image, limits)
    assert checks == ["tsc==5.6.3"]
    gold = task.gold()
    clean = measure_own_checks(checks, gold, ["src/parse.ts"], image, backend, limits)
    assert clean.error is None and clean.new == [] and clean.files == ["src/parse.ts"], clean
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str((spec.parent / task.repo).resolve()), str(clone)], check=True)
    git(clone, "checkout", "-q", task.base_commit)
    (tmp_path / "gold.diff").write_text(gold)
    git(clone, "apply", str(tmp_path / "gold.diff"))
    path = clone / "src" / "parse.ts"
    # the type error under a `// @ts-nocheck` the patch adds: tsc is run without it, so it finds the
    # error (one tsc run proves both: each costs a whole-program check, about 17 s at load 12)
    path.write_text("// @ts-nocheck\n" + path.read_text() + '\nexport const limit: number = "ten";\n')
    git(clone, "add", "-A")
    hidden = git(clone, "diff", "--cached", task.base_commit) + "\n"
    found = measure_own_checks(checks, hidden, ["src/parse.ts"], image, backend, limits, gold=gold)
    assert found.error is None, found
    assert [(n.check, n.rule, n.file, n.count) for n in found.new] == [("tsc", "TS2322", "src/parse.ts", 1)], found
    assert [(u.file, u.line) for u in found.unsilenced] == [("src/parse.ts", "// @ts-nocheck")], found
