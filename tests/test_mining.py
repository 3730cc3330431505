"""Mining and checking, the parts that need no container: the rules that split and skip commits,
statements from issue exports, environment inference, secrets, verdict files, contamination
dating, and bad input (clear messages, nothing half-written). The demo repositories are mined
and checked on the real engine at the end (tests marked docker)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support import git, write

from harness.authoring.check import Verdict, check_status, rewrite_spec, verdict_path
from harness.authoring.environment import RepoConfig, infer_environment, load_config
from harness.authoring.gitrepo import GitRepo, MineError
from harness.authoring.mine import MineOptions, classify, commit_kind, judge
from harness.authoring.secrets import SecretScanner, hashed, redact
from harness.authoring.statements import BaseFailure, load_issues, model_statement, referenced_issue, statement_prompt
from harness.parsers import get_parser
from harness.tasks import load_task, load_tasks

ROOT = Path(__file__).resolve().parent.parent
PYTEST = get_parser("pytest")
# An AWS-access-key-shaped string detect-secrets flags; built here so no file of ours holds it.
FAKE_KEY = "AKIA" + "QWERTYUIOPASDFGH"


def wholeloop(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, cwd=cwd)


def commit(repo: Path, message: str, files: dict[str, str], date: str = "2024-01-01T12:00:00+00:00") -> str:
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message, env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def small_repo(tmp_path: Path) -> dict:
    """A package with a history: root, a fix with its test, docs only, a test-only change."""
    repo = tmp_path / "smallpkg"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    root = commit(
        repo,
        "initial",
        {
            "pyproject.toml": '[project]\nname = "smallpkg"\nversion = "1.0"\ndependencies = ["attrs>=21"]\n'
            '[project.optional-dependencies]\ntest = ["pytest>=7", "hypothesis"]\n'
            '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n',
            "smallpkg/__init__.py": "def add(a, b):\n    return a - b\n",
            "tests/test_add.py": "from smallpkg import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
            "README.md": "# smallpkg\n",
        },
        "2024-01-01T12:00:00+00:00",
    )
    fix = commit(
        repo,
        "Fix add (fixes #12)\n\nIt subtracted.",
        {
            "smallpkg/__init__.py": "def add(a, b):\n    return a + b\n",
            "tests/test_add.py": "from smallpkg import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n\n\n"
            "def test_add():\n    assert add(2, 3) == 5\n",
            "CHANGES.rst": "1.1: add adds\n",
        },
        "2024-02-01T12:00:00+00:00",
    )
    docs = commit(repo, "docs", {"docs/index.rst": "hello\n"}, "2024-03-01T12:00:00+00:00")
    tests_only = commit(
        repo, "more tests", {"tests/test_more.py": "def test_x():\n    pass\n"}, "2024-04-01T12:00:00+00:00"
    )
    return {"repo": repo, "root": root, "fix": fix, "docs": docs, "tests_only": tests_only}


# ----------------------------------------------------------------------------- the rules


@pytest.mark.parametrize(
    "path, kind",
    [
        ("setup.cfg", "protected"),
        ("tests/tox.ini", "protected"),
        ("pyproject.toml", "protected"),
        ("MANIFEST.in", "protected"),
        ("pkg/noxfile.py", "protected"),
        ("tests/test_a.py", "test"),
        ("pkg/a_test.py", "test"),
        ("pkg/conftest.py", "test"),
        ("pkg/test/data/x.json", "test"),
        ("testing/helpers.py", "test"),
        ("tests/README.md", "test"),
        ("docs/conf.py", "docs"),
        (".github/workflows/ci.yml", "docs"),
        (".gitignore", "docs"),
        (".idea/x.xml", "docs"),
        ("requirements.txt", "docs"),
        ("CHANGELOG.rst", "docs"),
        ("LICENSE", "docs"),
        ("pkg/NOTES.md", "docs"),
        ("src/pkg/core.py", "source"),
        ("pkg/tests.py", "source"),
        ("contest.py", "source"),
        ("pkg/.hidden.py", "source"),
        ("uv.lock", "docs"),
        ("poetry.lock", "docs"),
        ("web/package-lock.json", "docs"),
        ("Cargo.lock", "docs"),
    ],
)
def test_each_path_is_classified_by_the_first_rule_that_matches(path, kind):
    assert classify(path, PYTEST) == kind


def test_a_lock_file_is_packaging_not_source_and_a_parser_that_protects_it_still_does(small_repo):
    """trial5: a dependabot commit changing only uv.lock and a test was a candidate, uv.lock its
    whole gold patch. A lock file is not a source change: the environment is built at the base
    commit, so a gold patch bumping it would install nothing. Where a parser protects its
    ecosystem's lock file (Vitest's pnpm-lock.yaml, Go's go.sum) that rule comes first."""
    repo_dir = small_repo["repo"]
    bump = commit(
        repo_dir,
        "chore(deps): bump attrs",
        {"uv.lock": "version = 1\n", "tests/test_more.py": "def test_x():\n    assert True\n"},
        "2024-05-01T12:00:00+00:00",
    )
    fix = commit(
        repo_dir,
        "fix: add keeps ints",
        {
            "smallpkg/__init__.py": "def add(a, b):\n    return int(a + b)\n",
            "uv.lock": "version = 2\n",
            "tests/test_more.py": "def test_x():\n    assert True\n\n\ndef test_y():\n    pass\n",
        },
        "2024-06-01T12:00:00+00:00",
    )
    repo = GitRepo.open(repo_dir)
    assert judge(repo, repo.commit(bump), PYTEST, MineOptions()).skipped == "no source change"
    cand = judge(repo, repo.commit(fix), PYTEST, MineOptions()).candidate
    assert cand is not None
    assert cand.gold_files == ["smallpkg/__init__.py"] and cand.docs_files == ["uv.lock"]
    assert classify("pnpm-lock.yaml", get_parser("vitest")) == "protected"
    assert classify("go.sum", get_parser("go")) == "protected"


def test_commits_are_split_skipped_with_their_reason_and_get_stable_ids(small_repo):
    repo = GitRepo.open(small_repo["repo"])
    judged = {c.sha: judge(repo, c, PYTEST, MineOptions()) for c in repo.commits()}
    assert judged[small_repo["root"]].skipped == "root commit (no parent)"
    assert judged[small_repo["docs"]].skipped == "docs or packaging only"
    assert judged[small_repo["tests_only"]].skipped == "no source change"
    cand = judged[small_repo["fix"]].candidate
    assert cand.task_id == f"smallpkg-{small_repo['fix'][:10]}" and cand.parent == small_repo["root"]
    assert cand.gold_files == ["smallpkg/__init__.py"] and cand.test_files == ["tests/test_add.py"]
    assert cand.docs_files == ["CHANGES.rst"] and cand.lines == 2 + 4
    assert (
        judge(repo, repo.commit(small_repo["fix"]), PYTEST, MineOptions(max_lines=5)).skipped
        == "diff too large (6 changed lines > 5)"
    )


def test_protected_files_skip_unless_allowed_and_then_join_the_gold(small_repo):
    repo_dir = small_repo["repo"]
    sha = commit(
        repo_dir,
        "fix with config",
        {
            "smallpkg/__init__.py": "def add(a, b):\n    return b + a\n",
            "tests/test_add.py": "def test_y():\n    pass\n",
            "tests/pytest.ini": "[pytest]\n",
        },
        "2024-05-01T12:00:00+00:00",
    )
    repo = GitRepo.open(repo_dir)
    assert judge(repo, repo.commit(sha), PYTEST, MineOptions()).skipped == "changes protected file tests/pytest.ini"
    cand = judge(repo, repo.commit(sha), PYTEST, MineOptions(allow_config=True)).candidate
    assert cand.gold_files == ["smallpkg/__init__.py", "tests/pytest.ini"] and cand.protected_files == [
        "tests/pytest.ini"
    ]


def test_issue_references_and_exports(tmp_path):
    assert referenced_issue("Refactor (see #3)\n\nfixes #12") == "12"
    assert referenced_issue("closes PROJ-7: crash") == "PROJ-7"
    assert referenced_issue("GH-44 follow-up") == "44" and referenced_issue("no issue here, a#b") is None
    github = tmp_path / "gh.json"
    github.write_text(json.dumps([{"number": 12, "title": "add() subtracts", "body": "2+3 gives -1"}]))
    gitlab = tmp_path / "gl.json"
    gitlab.write_text(json.dumps([{"iid": 5, "title": "t", "description": "d"}]))
    jira = tmp_path / "jira.csv"
    jira.write_text("Issue key,Summary,Description\nPROJ-7,Crash on start,Stack trace here\n")
    assert load_issues(github)["12"].statement() == "add() subtracts\n\n2+3 gives -1\n"
    assert load_issues(gitlab)["5"].body == "d" and load_issues(jira)["PROJ-7"].title == "Crash on start"
    for bad, message in (
        ("[{]", "not valid JSON"),
        ("name,size\nx,1\n", "needs a header with id, title and body"),
        ('[{"title": "no number"}]', "has no number/iid"),
    ):
        (tmp_path / "bad").write_text(bad)
        with pytest.raises(MineError, match=message):
            load_issues(tmp_path / "bad")
    with pytest.raises(MineError, match="cannot read the issue export"):
        load_issues(tmp_path / "missing.json")


def test_a_model_written_statement_is_asked_from_the_failure_and_the_issue(monkeypatch):
    from support.fakellm import FakeLLM, Reply

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    failure = BaseFailure(["tests/test_add.py::test_add"], "E       assert -1 == 5\n1 failed in 0.01s\n")
    prompt = statement_prompt(failure, "add() subtracts\n\n2+3 gives -1\n")
    assert "tests/test_add.py::test_add" in prompt and "assert -1 == 5" in prompt and "2+3 gives -1" in prompt
    assert "The issue:" not in statement_prompt(failure, None)  # no issue linked: the failure alone
    with FakeLLM() as server:
        server.script(Reply(text="add() returns the difference of its arguments instead of their sum."))
        text = model_statement("anthropic/claude-test", prompt, base_url=server.base_url)
        sent = json.dumps(server.bodies())
    assert text.startswith("add() returns the difference") and "assert -1 == 5" in sent


# ----------------------------------------------------------------------------- environments


def test_environment_inferred_from_the_base_commit_and_overridden(small_repo, tmp_path):
    repo = GitRepo.open(small_repo["repo"])
    when = datetime(2024, 2, 1, 12, tzinfo=UTC)
    plan = infer_environment(repo, small_repo["root"], when, RepoConfig())
    assert plan.requirements == ["setuptools>=61", "attrs>=21", "pytest>=7", "hypothesis"]
    assert plan.install == ["pip install --no-build-isolation --no-deps -e ."]
    assert plan.as_of == "2024-02-01T12:00:00Z" and plan.sources == ["pyproject.toml"]
    override = tmp_path / "wholeloop.yaml"
    override.write_text("test_requirements: [pytest==8.3.5]\ndependencies_as_of: latest\ninstall: [make dev]\n")
    plan = infer_environment(repo, small_repo["root"], when, load_config(override, repo))
    assert plan.requirements == ["setuptools>=61", "attrs>=21", "pytest==8.3.5"] and plan.as_of is None
    assert plan.install == ["make dev"]
    override.write_text("instal: [x]\ntest_command: pytest\n")
    with pytest.raises(MineError) as err:
        load_config(override, repo)
    assert "instal: unknown key" in str(err.value) and "test_command: Value error, must contain {files}" in str(
        err.value
    )
    override.write_text("test_command: go test -json ./...\ntest_scope: all\n")  # the whole suite: nothing to name
    assert load_config(override, repo).test_command == "go test -json ./..."


def test_every_kind_of_dependency_file_is_read(tmp_path):
    repo_dir = tmp_path / "legacy"
    repo_dir.mkdir()
    git(repo_dir, "init", "-q", "-b", "main")
    base = commit(
        repo_dir,
        "legacy layout",
        {
            "setup.py": "from setuptools import setup\nsetup(name='legacy', install_requires=['six'], "
            "tests_require=['mock'], extras_require={'test': ['nose2']})\n",
            "setup.cfg": "[options]\ninstall_requires =\n    idna\n[options.extras_require]\ntesting =\n    coverage\n",
            "requirements-dev.txt": "-r requirements/base.txt\nflake8  # lint\n-e .\n",
            "requirements/base.txt": "tomli\n",
            "tox.ini": "[testenv]\ndeps =\n    pytest-xdist\n    py38: oldthing\n    {[base]deps}\n",
            "noxfile.py": "import nox\n@nox.session\ndef tests(session):\n    session.install('-r', 'x.txt', 'freezegun')\n",
            "legacy.py": "X = 1\n",
        },
    )
    plan = infer_environment(GitRepo.open(repo_dir), base, datetime(2020, 1, 1, tzinfo=UTC), RepoConfig())
    # build, then runtime (setup.cfg, setup.py, requirements/base.txt), then test requirements; tox's
    # factor-conditional lines and substitutions are left out; pytest is added since nothing names it
    assert plan.requirements == [
        "setuptools",
        "wheel",
        "idna",
        "six",
        "tomli",
        "coverage",
        "mock",
        "nose2",
        "flake8",
        "pytest-xdist",
        "freezegun",
        "pytest",
    ]
    assert plan.sources == [
        "setup.cfg",
        "setup.py",
        "requirements-dev.txt",
        "requirements/base.txt",
        "tox.ini",
        "noxfile.py",
    ]


def test_an_environment_that_cannot_be_inferred_says_which_file_to_write(tmp_path):
    repo_dir = tmp_path / "scripts"
    repo_dir.mkdir()
    git(repo_dir, "init", "-q", "-b", "main")
    commit(repo_dir, "start", {"tool.py": "X = 1\n", "tests/test_tool.py": "def test_a():\n    pass\n"})
    commit(repo_dir, "fix", {"tool.py": "X = 2\n", "tests/test_tool.py": "def test_b():\n    pass\n"})
    out = tmp_path / "out"
    result = wholeloop("mine", str(repo_dir), "--out", str(out))
    assert result.returncode == 2 and "cannot infer how to install" in result.stderr
    assert "wholeloop.yaml" in result.stderr and not out.exists()


# ----------------------------------------------------------------------------- secrets


def test_secrets_are_found_with_file_line_and_rule_cached_baselined_and_redacted(small_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("WHOLELOOP_CACHE", str(tmp_path / "cache"))
    repo_dir = small_repo["repo"]
    sha = commit(
        repo_dir,
        "fix with a key",
        {
            "smallpkg/__init__.py": f"KEY = '{FAKE_KEY}'\n\ndef add(a, b):\n    return a + b\n",
            "tests/test_add.py": "def test_k():\n    pass\n",
        },
    )
    repo = GitRepo.open(repo_dir)
    parent = repo.commit(sha).parents[0]
    scanner = SecretScanner()
    found = scanner.scan_commit(repo, parent, sha, "Fix add", ["smallpkg/__init__.py"], ["tests/test_add.py"])
    assert [(f.file, f.line, f.rule, f.where) for f in found] == [("smallpkg/__init__.py", 1, "AWS Access Key", "gold")]
    assert redact(f"x = '{FAKE_KEY}'", found) == "x = '<redacted:AWS-Access-Key>'"
    tree = scanner.scan_tree(repo, sha)
    assert [(f.file, f.line) for f in tree] == [("smallpkg/__init__.py", 1)] and scanner.scan_tree(repo, sha) == tree
    assert scanner.scan_tree(repo, parent) == []
    baseline = tmp_path / ".secrets.baseline"
    baseline.write_text(
        json.dumps(
            {
                "results": {
                    "smallpkg/__init__.py": [
                        {"type": "AWS Access Key", "hashed_secret": hashed(FAKE_KEY), "line_number": 1}
                    ]
                }
            }
        )
    )
    assert SecretScanner(baseline).scan_commit(repo, parent, sha, "Fix add", ["smallpkg/__init__.py"], []) == []
    # a mined task is refused naming the finding; nothing of it is written
    out = tmp_path / "out"
    monkeypatch.setenv("COLUMNS", "200")  # the reason on one line of the table
    result = wholeloop("tasks", "from-commit", str(repo_dir), sha, "--out", str(out), "--no-check")
    assert result.returncode == 1  # mine keeps nothing: exit 1 (exit_codes.NEGATIVE)
    assert "refused: secret found: smallpkg/__init__.py:1 AWS Access Key" in result.stdout
    assert not list(out.glob("*.yaml"))


# ----------------------------------------------------------------------------- verdicts


def test_a_verdict_goes_stale_when_the_spec_changes_and_rewrites_keep_the_header(tmp_path):
    spec = tmp_path / "t.yaml"
    spec.write_text(
        "# generated: edit the source instead\nid: t-1\nrepo: .\nbase_commit: abc\nproblem_statement: x\n"
        "hidden_tests: {command: pytest}\nFAIL_TO_PASS: [t.py::a]\n"
    )
    task = load_task(spec)
    assert check_status(task, look_up_image=False) == ("unchecked", "never checked")
    verdict_path(spec).write_text(Verdict(task_id="t-1", spec_hash=task.content_hash(), passed=True).model_dump_json())
    assert check_status(task, look_up_image=False)[0] == "checked"
    rewrite_spec(spec, {"quarantined": "gold patch does not apply", "FAIL_TO_PASS": []})
    text = spec.read_text()
    assert text.startswith("# generated: edit the source instead\nid: t-1\nquarantined: gold patch does not apply\n")
    task = load_task(spec)
    assert check_status(task, look_up_image=False) == ("quarantined", "gold patch does not apply")
    rewrite_spec(spec, {"quarantined": None, "FAIL_TO_PASS": ["t.py::b"]})
    assert check_status(load_task(spec), look_up_image=False)[0] == "stale"


def test_an_empty_fail_to_pass_needs_a_quarantine(tmp_path):
    from harness.tasks import TaskSpecError

    spec = tmp_path / "t.yaml"
    spec.write_text(
        "id: t-1\nrepo: .\nbase_commit: abc\nproblem_statement: x\nhidden_tests: {command: pytest}\nFAIL_TO_PASS: []\n"
    )
    with pytest.raises(TaskSpecError, match="FAIL_TO_PASS: Value error, is empty"):
        load_task(spec)
    spec.write_text(spec.read_text() + "quarantined: not checked yet\n")
    assert load_task(spec).quarantined == "not checked yet"


# ----------------------------------------------------------------------------- contamination dating


def test_reports_split_each_configuration_by_the_training_cutoff(tmp_path):
    from harness.records import PhaseTimes, ResultRow, RunFolder
    from harness.report.figures import compute_figures

    run = tmp_path / "run"
    folder = RunFolder(run, create=True)
    created = {
        "old-1": "2024-01-10T00:00:00+00:00",
        "old-2": "2025-03-31T23:00:00+00:00",
        "new-1": "2025-04-01T00:00:01+00:00",
        "new-2": "2025-06-01T00:00:00+00:00",
        "undated": None,
    }
    folder.update_manifest(
        lambda m: m.update({"run_id": "run", "tasks": {t: {"created_at": c} for t, c in created.items()}})
    )
    resolved = {"old-1": True, "old-2": True, "new-1": False, "new-2": True, "undated": False}
    for task_id, ok in resolved.items():
        folder.append(
            ResultRow(
                run_id="run",
                task_id=task_id,
                task_hash="h",
                config="m",
                agent="default",
                model="anthropic/claude-sonnet-4-20250514",
                outcome="resolved" if ok else "unresolved",
                resolved=ok,
                final=True,
                phases=PhaseTimes(),
            )
        )
    split = compute_figures([run]).dating[0]
    assert split.cutoff == "2025-03" and "docs.anthropic.com" in split.cutoff_source
    assert (split.before.resolved, split.before.trials) == (2, 2)
    assert (split.after.resolved, split.after.trials) == (1, 2) and split.after.rate.low is not None
    assert (split.undated.resolved, split.undated.trials) == (0, 1)
    other = compute_figures([run], cutoffs={"claude-sonnet-4*": "2024-06"}).dating[0]
    assert other.cutoff == "2024-06" and other.after.trials == 3 and other.cutoff_source == "given for this report"
    result = wholeloop("report", str(run), "--cutoff", "claude-sonnet-4-20250514=2025-05")
    assert result.returncode == 0 and "Contamination dating" in result.stdout and "2025-05" in result.stdout
    assert wholeloop("report", str(run), "--cutoff", "nonsense").returncode != 0


def test_a_run_without_dated_tasks_is_not_split_and_needs_no_cutoff_table(tmp_path):
    """Nothing to split by: the report says so, and does not parse the shipped table (a YAML import
    a report of undated tasks, the demo's, need not pay for)."""
    from harness.records import PhaseTimes, ResultRow, RunFolder

    run = tmp_path / "run"
    folder = RunFolder(run, create=True)
    folder.update_manifest(lambda m: m.update({"run_id": "run", "tasks": {"t1": {"created_at": None}, "t2": {}}}))
    for task_id in ("t1", "t2"):
        folder.append(
            ResultRow(
                run_id="run",
                task_id=task_id,
                task_hash="h",
                config="m",
                agent="default",
                model="anthropic/claude-sonnet-4-20250514",
                outcome="resolved",
                resolved=True,
                final=True,
                phases=PhaseTimes(),
            )
        )
    probe = (
        "import json, sys\nfrom harness.report.figures import compute_figures\n"
        "split = compute_figures([sys.argv[1]]).dating[0]\n"
        "print(json.dumps([split.cutoff, split.note, 'yaml' in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(run)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    cutoff, note, parsed_yaml = json.loads(done.stdout)
    assert cutoff is None and "no task of the run has a date" in note and parsed_yaml is False
    from harness.report.figures import compute_figures  # a cutoff given still shows, with nothing to split

    given = compute_figures([run], cutoffs={"claude-sonnet-4*": "2024-06"}).dating[0]
    assert given.cutoff == "2024-06" and given.undated.trials == 2 and given.after.trials == 0


# ----------------------------------------------------------------------------- bad input


def test_bad_input_gets_a_clear_message_and_nothing_is_written(small_repo, tmp_path):
    out = tmp_path / "out"
    (tmp_path / "plain").mkdir()
    cases = [
        (["mine", str(tmp_path / "plain"), "--out", str(out)], "not a git repository"),
        (["mine", str(tmp_path / "nowhere"), "--out", str(out)], "no such folder or file"),
        (
            ["tasks", "from-commit", str(small_repo["repo"]), "deadbeef", "--out", str(out)],
            "commit 'deadbeef' not found",
        ),
        (
            ["mine", str(small_repo["repo"]), "--since", "2030-01-01", "--out", str(out)],
            "no commits in the range since",
        ),
        (
            ["mine", str(small_repo["repo"]), "--since", "2024-03-01", "--out", str(out)],
            "no candidate commit in the range since 2024-03-01 (2 commit(s): 1 docs or packaging only; 1 no source change)",
        ),
        (
            ["mine", str(small_repo["repo"]), "--issues", str(tmp_path / "gone.json"), "--out", str(out)],
            "cannot read the issue export",
        ),
        (["mine", str(small_repo["repo"]), "--since", "yesterday", "--out", str(out)], "is not a date"),
    ]
    for args, message in cases:
        result = wholeloop(*args)
        assert result.returncode == 2 and message in result.stderr, (args, result.stdout + result.stderr)
        assert "Traceback" not in result.stderr
        assert not out.exists()


# ----------------------------------------------------------------------------- the demo repositories (Docker)


def _files(patch: str) -> dict[str, str]:
    """A git diff split into its files' sections."""
    out, current = {}, None
    for line in patch.splitlines(keepends=True):
        if line.startswith("diff --git a/"):
            current = line[len("diff --git a/") :].split(" b/", 1)[0]
            out[current] = ""
        if current is not None:
            out[current] += line
    return out


@pytest.mark.docker
def test_mining_the_demo_repositories_finds_every_demo_task(tmp_path):
    demo = {t.id: t for t in load_tasks([ROOT / "tasks" / "demo"])}
    mined = {}
    for name in ("inikit", "ledgerly"):
        out = tmp_path / name
        result = wholeloop("mine", str(ROOT / "repos" / f"{name}.bundle"), "--out", str(out), "--no-check")
        assert result.returncode == 0, result.stdout + result.stderr
        mined.update({t.origin.commit: t for t in load_tasks([out])})
    for task_id, task in demo.items():
        found = mined.get(task.metadata["fix_commit"])
        assert found is not None, f"{task_id}: its fix commit was not mined"
        assert found.base_commit == task.base_commit and found.test_patch() == task.test_patch(), task_id
        ours, theirs = _files(found.gold()), _files(task.gold())
        assert all(theirs[path] == section for path, section in ours.items()), task_id
        # the demo's gold patch also carries docs (ledgerly-003: README.md); mining drops docs
        assert all(classify(path, PYTEST) == "docs" for path in theirs.keys() - ours.keys()), task_id
        assert found.created_at and found.quarantined.startswith("not checked yet")


@pytest.mark.docker
@pytest.mark.slow
def test_tasks_check_passes_on_the_demo_suite_and_run_then_calls_them_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # table cells on one line (a task and its mark)
    shutil.copytree(ROOT / "tasks", tmp_path / "tasks")
    shutil.copytree(ROOT / "repos", tmp_path / "repos", ignore=shutil.ignore_patterns("src"))
    suite = tmp_path / "tasks" / "demo"
    result = wholeloop("tasks", "check", str(suite), "--workers", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "checking 7 task(s): 42 test runs" in result.stdout and result.stdout.count("ok ") == 7
    assert sorted(p.name for p in suite.glob("*.check.json")) == sorted(
        f"{t}.check.json" for t in [p.stem for p in suite.glob("*.yaml")]
    )
    assert (suite / "inikit-001.yaml").read_text() == (ROOT / "tasks" / "demo" / "inikit-001.yaml").read_text()
    again = wholeloop("tasks", "check", str(suite))
    assert again.returncode == 0 and "nothing to check" in again.stdout
    spec = suite / "inikit-002.yaml"
    spec.write_text(spec.read_text().replace("problem_statement: |", "problem_statement: |\n  (edited)", 1))
    run = wholeloop(
        "run",
        str(suite / "inikit-002.yaml"),
        str(suite / "inikit-001.yaml"),
        "--agent",
        "gold",
        "--out",
        str(tmp_path / "run"),
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 task(s) stale (inikit-002)" in run.stdout
    assert "inikit-002 (stale)" in wholeloop("report", str(tmp_path / "run")).stdout


def test_docs_tasks_md_names_every_field_of_the_spec_and_of_wholeloop_yaml():
    from harness.tasks.spec import Environment, HiddenTests, LimitsSpec, Origin, Task, Timeouts

    text = (ROOT / "docs" / "tasks.md").read_text()
    missing = [
        f"{model.__name__}.{field.alias or name}"
        for model in (Task, Environment, HiddenTests, LimitsSpec, Timeouts, Origin, RepoConfig)
        for name, field in model.model_fields.items()
        if f"`{field.alias or name}`" not in text
    ]
    assert missing == []
    assert "docs/tasks.md" in (ROOT / "README.md").read_text()


def test_env_like_files_never_enter_a_snapshot_unless_the_task_names_them(tmp_path, monkeypatch):
    from sandbox import cached_snapshot, make_snapshot

    monkeypatch.setenv("WHOLELOOP_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "app"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    base = commit(
        repo,
        "app",
        {
            "app.py": "X = 1\n",
            ".env": "TOKEN=abc\n",
            "deploy/prod.env": "K=v\n",
            "config/.env.test": "T=1\n",
            ".netrc": "machine x\n",
            "environment.py": "E = 1\n",
        },
    )
    made = make_snapshot(str(repo), base, tmp_path / "snap")
    assert sorted(made.excluded) == [".env", ".netrc", "config/.env.test", "deploy/prod.env"]
    assert not (tmp_path / "snap" / ".env").exists() and (tmp_path / "snap" / "environment.py").exists()
    listed = git(tmp_path / "snap", "ls-files")
    assert ".env" not in listed.split() and "app.py" in listed.split()
    kept = cached_snapshot(str(repo), base, keep=("config/.env.test",))
    assert (kept.path / "config" / ".env.test").exists() and "config/.env.test" not in kept.excluded
    assert cached_snapshot(str(repo), base).excluded == made.excluded  # the marker beside the cached snapshot


@pytest.mark.docker
def test_a_statement_comes_from_the_issue_the_commit_names(small_repo, tmp_path):
    issues = tmp_path / "issues.json"
    issues.write_text(json.dumps([{"number": 12, "title": "add() subtracts", "body": "add(2, 3) gives -1."}]))
    out = tmp_path / "out"
    result = wholeloop(
        "tasks",
        "from-commit",
        str(small_repo["repo"]),
        small_repo["fix"],
        "--out",
        str(out),
        "--issues",
        str(issues),
        "--no-check",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    task = load_task(out / f"smallpkg-{small_repo['fix'][:10]}.yaml")
    assert task.problem_statement == "add() subtracts\n\nadd(2, 3) gives -1.\n"
    assert task.origin.statement == "issue" and task.origin.issue == "12" and task.origin.commit == small_repo["fix"]
    assert task.created_at == "2024-02-01T12:00:00+00:00" and task.origin.dependencies_as_of == "2024-02-01T12:00:00Z"
    assert task.hidden_tests.command == "python -m pytest -rA -p no:cacheprovider tests/test_add.py"
    assert task.quarantined.startswith("not checked yet") and (out / "mine-report.json").exists()
    setup = "\n".join(task.environment.setup)
    assert "uv pip install" in setup and "attrs==" in setup and "hypothesis==" in setup  # pinned, as of the date


# ----------------------------------------------------------------------------- steering a mine


def test_list_shows_candidates_and_skip_counts_without_docker_and_writes_nothing(small_repo, tmp_path):
    repo_dir = small_repo["repo"]
    # (not a bot's message: those are skipped; the subject is shown verbatim, never read as markup)
    commit(repo_dir, "[adder] fix [bold]the[/bold] adder", {
        "smallpkg/__init__.py": "def add(a, b):\n    return b + a\n",
        "tests/test_add.py": "def test_add():\n    pass\n",
    }, "2024-05-01T12:00:00+00:00")  # fmt: skip
    env = {"DOCKER_HOST": "unix:///nonexistent/docker.sock", "COLUMNS": "150"}  # nothing may reach an engine
    work = tmp_path / "work"
    work.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "harness.cli", "mine", str(repo_dir), "--list"],
        capture_output=True, text=True, cwd=work, env={**os.environ, **env},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "2 candidate(s) in 5 commit(s)" in out
    assert "[adder] fix [bold]the[/bold]" in out  # verbatim, not read as markup
    assert "smallpkg/__init__.py; tests/test_add.py" in out and "fix " in out
    assert "1 │ skipped: root commit (no parent)" in out and "1 │ skipped: no source change" in out
    assert max(len(line) for line in out.splitlines()) <= 150  # the table fits the terminal
    assert not list(work.iterdir())  # nothing written


@pytest.mark.parametrize(
    "subject, kind",
    [
        ("feat(array): range", "feat"),
        ("fix!: drop the old default", "fix"),
        ("Chore: bump deps", "chore"),
        # a module, class or package before the colon is no conventional-commit type: the words decide
        # (found mining pydantic-settings and go-humanize, whose kinds read
        # "googlesecretmanagersettingss..." and "si")
        ("GoogleSecretManagerSettingsSource: support loading secrets by version", "feature"),
        ("SI: handle negative numbers", "fix"),
        ("color: add Equals() method", "feature"),
        ("toml: rename a helper", "change"),
    ],
)
def test_the_kind_is_a_conventional_type_only_when_the_prefix_is_one(subject, kind):
    assert commit_kind(subject) == kind


def test_only_picks_commits_and_the_table_counts_per_reason(small_repo, tmp_path):
    repo_dir = small_repo["repo"]
    second = commit(repo_dir, "Fix add again", {
        "smallpkg/__init__.py": "def add(a, b):\n    return b + a\n",
        "tests/test_add.py": "def test_add():\n    pass\n",
    }, "2024-05-01T12:00:00+00:00")  # fmt: skip
    out = tmp_path / "out"
    result = wholeloop("mine", str(repo_dir), "--out", str(out), "--no-check", "--only", small_repo["fix"][:8])
    assert result.returncode == 0, result.stdout + result.stderr  # a spec to check: --no-check is no failure
    assert [p.name for p in out.glob("*.yaml")] == [f"smallpkg-{small_repo['fix'][:10]}.yaml"]
    report = json.loads((out / "mine-report.json").read_text())
    by_commit = {c["commit"]: c for c in report["commits"]}
    assert by_commit[second]["skipped"] == "not picked (--only)"
    assert "1 │ skipped: not picked (--only)" in result.stdout and "1 │ not checked yet" in result.stdout
    bad = wholeloop("mine", str(repo_dir), "--out", str(tmp_path / "x"), "--since", "2024-02-15", "--only",
                    small_repo["fix"][:8])  # fmt: skip
    assert bad.returncode == 2 and "is not in the range since 2024-02-15" in bad.stderr


def test_mine_exits_1_when_it_keeps_nothing(small_repo, tmp_path):
    repo_dir = small_repo["repo"]
    sha = commit(repo_dir, "fix with a key", {
        "smallpkg/__init__.py": f"KEY = '{FAKE_KEY}'\n",
        "tests/test_add.py": "def test_k():\n    pass\n",
    })  # fmt: skip
    result = wholeloop("tasks", "from-commit", str(repo_dir), sha, "--out", str(tmp_path / "out"), "--no-check")
    assert result.returncode == 1 and "0 kept" in result.stdout
    assert "1 │ refused: secret found" in result.stdout


def test_refresh_env_reapplies_a_changed_wholeloop_yaml_and_origin_names_it(small_repo, tmp_path):
    repo_dir = small_repo["repo"]
    config = tmp_path / "smallpkg.wholeloop.yaml"  # beside the repository
    config.write_text("setup: ['echo one']\ninstall: ['true']\n")
    out = tmp_path / "out"
    first = wholeloop("mine", str(repo_dir), "--out", str(out), "--no-check")
    assert first.returncode == 0, first.stdout + first.stderr
    (spec,) = out.glob("*.yaml")
    task = load_task(spec)
    assert task.origin.environment_from[0] == str(config) and task.environment.setup == ["echo one"]
    before = task.content_hash()
    config.write_text("setup: ['echo two']\ninstall: ['true']\ntests_timeout_s: 120\n")
    again = wholeloop("mine", str(repo_dir), "--out", str(out), "--no-check")
    assert load_task(spec).content_hash() == before  # without --refresh-env a mined spec stays as it was
    refreshed = wholeloop("mine", str(repo_dir), "--out", str(out), "--no-check", "--refresh-env")
    assert again.returncode == refreshed.returncode == 0, refreshed.stdout + refreshed.stderr
    task = load_task(spec)
    assert task.environment.setup == ["echo two"] and task.timeouts.tests_s == 120
    assert task.content_hash() != before and task.quarantined.startswith("not checked yet")
    said = " ".join(refreshed.stdout.split())
    assert "their content hashes changed, so `gate` and `compare` pair nothing" in said
    report = json.loads((out / "mine-report.json").read_text())
    assert [c.get("environment_refreshed") for c in report["commits"] if "spec" in c] == [True]
    unchanged = wholeloop("mine", str(repo_dir), "--out", str(out), "--no-check", "--refresh-env")
    assert (
        "content hashes changed" not in " ".join(unchanged.stdout.split())
        and load_task(spec).content_hash() == task.content_hash()
    )


PYPROJECT_V1 = """[project]
name = "smallpkg"
classifiers = ["Programming Language :: Python :: 3.12"]
dependencies = ["attrs"]

[tool.ruff]
line-length = 100
"""


def test_a_pyproject_change_that_only_describes_the_project_is_dropped_like_docs(small_repo):
    # as packaging 26.2 (only [tool.ruff]) and annotated-types 0.7.0 (classifiers): nothing a test run
    # reads changed, so the release is a candidate; pyproject.toml stays out of the gold patch
    repo_dir = small_repo["repo"]
    commit(repo_dir, "add pyproject", {"pyproject.toml": PYPROJECT_V1}, "2024-04-01T12:00:00+00:00")
    described = PYPROJECT_V1.replace('3.12"]', '3.12", "Programming Language :: Python :: 3.13"]').replace("100", "120")
    sha = commit(
        repo_dir,
        "fix: add in the other order",
        {
            "smallpkg/__init__.py": "def add(a, b):\n    return b + a\n",
            "tests/test_add.py": "def test_y():\n    pass\n",
            "pyproject.toml": described,
        },
        "2024-05-01T12:00:00+00:00",
    )
    repo = GitRepo.open(repo_dir)
    cand = judge(repo, repo.commit(sha), PYTEST, MineOptions()).candidate
    assert cand is not None and cand.gold_files == ["smallpkg/__init__.py"] and "pyproject.toml" in cand.docs_files
    # a change to what installing or testing reads is still protected
    sha = commit(
        repo_dir,
        "fix: needs cattrs",
        {
            "smallpkg/__init__.py": "def add(a, b):\n    return a + b\n",
            "tests/test_add.py": "def test_z():\n    pass\n",
            "pyproject.toml": described.replace('["attrs"]', '["attrs", "cattrs"]'),
        },
        "2024-06-01T12:00:00+00:00",
    )
    assert judge(repo, repo.commit(sha), PYTEST, MineOptions()).skipped == "changes protected file pyproject.toml"
