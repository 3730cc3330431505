#!/usr/bin/env python3
"""Build the demo repositories (`repos/*.bundle`) and their task specs (`tasks/demo/`).

Each demo repository is kept as plain files under `repos/src/<name>/`: one folder per commit,
`NN-slug/`, holding `message.txt` (the commit message), an optional `deleted.txt` (paths to remove,
one a line) and the files that commit adds or changes; every commit is an overlay on the tree
before it. A commit folder that also holds `task.yaml` is the *fix* of a task: the task's base is
the commit before it, the test files it changes become the hidden tests and the rest the gold
patch. `repos/README.md` describes the layout.

Commit ids are stable: names, e-mails and dates are fixed (`repos/src/<name>/repo.json`) and git
runs without the user's configuration, so the ids the task specs name never change unless the
sources do.

    python scripts/build_demo_repos.py            # (re)write bundles whose commits changed
    python scripts/build_demo_repos.py --tasks    # also regenerate tasks/demo (runs pytest)
    python scripts/build_demo_repos.py --check    # exit 1 if bundles or specs are out of date
    python scripts/build_demo_repos.py --verify   # --check, measuring the lists; every commit's tests
    python scripts/build_demo_repos.py --materialize inikit 04 /tmp/tree   # tree after 04-*

`--tasks` computes FAIL_TO_PASS and PASS_TO_PASS by running the hidden test command on the host
(with this interpreter's pytest) at base + tests, then at base + tests + gold, and refuses to write
a task whose gold patch leaves a test failing or whose FAIL_TO_PASS would be empty.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from fixturelib import sync_files

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "repos" / "src"
BUNDLES = ROOT / "repos"
TASKS = ROOT / "tasks" / "demo"

RESERVED = {"message.txt", "deleted.txt", "task.yaml"}  # meta files of a commit folder, not committed
SKIP = {"__pycache__", ".pytest_cache"}
PYTEST_PIN = "pytest==8.3.4"
HIDDEN_COMMAND = "python -m pytest -rA -p no:cacheprovider tests"
VISIBLE_COMMAND = "python -m pytest -q tests"
TASK_KEYS = {"id", "bug_kind", "difficulty", "problem_statement"}


class BuildError(RuntimeError):
    """The sources or a generated task are not what they must be."""


# ------------------------------------------------------------------------------------ git


def _git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, LC_ALL="C", TZ="UTC")
    env.update(extra or {})
    return env


def git(cwd: Path, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
    """Run git without user or system configuration; return stdout (raises BuildError)."""
    cmd = ["git", "-c", "core.autocrlf=false", "-c", "commit.gpgsign=false", "-c", "pack.threads=1", *args]
    proc = subprocess.run(cmd, cwd=cwd, env=_git_env(env), capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise BuildError(f"git {' '.join(args)} failed in {cwd}:\n{proc.stderr.strip()}")
    return proc.stdout


# ------------------------------------------------------------------------------------ sources


@dataclass
class CommitSource:
    repo: str
    slug: str  # NN-short-slug
    path: Path
    task: dict | None = None
    sha: str = ""
    parent: str = ""


@dataclass
class RepoSource:
    name: str
    path: Path
    author: str
    email: str
    start: dt.datetime
    step_hours: float
    commits: list[CommitSource] = field(default_factory=list)


def load_sources(only: list[str] | None = None, suite: str = "demo") -> list[RepoSource]:
    """The repositories under repos/src of one suite (repo.json's "suite", "demo" when absent):
    the Go, TypeScript and Rust ones ("polyglot") are built by scripts/build_polyglot_repos.py."""
    repos = []
    for path in sorted(p for p in SRC.iterdir() if p.is_dir()):
        if only and path.name not in only:
            continue
        meta = json.loads((path / "repo.json").read_text())
        if meta.get("suite", "demo") != suite:
            continue
        repo = RepoSource(
            name=path.name,
            path=path,
            author=meta["author"],
            email=meta["email"],
            start=dt.datetime.fromisoformat(meta["start"]),
            step_hours=float(meta["step_hours"]),
        )
        for cdir in sorted(p for p in path.iterdir() if p.is_dir()):
            if not re.fullmatch(r"\d\d-[a-z0-9-]+", cdir.name):
                raise BuildError(f"{cdir}: commit folders are named NN-short-slug")
            if not (cdir / "message.txt").is_file():
                raise BuildError(f"{cdir}: missing message.txt")
            task = None
            if (cdir / "task.yaml").is_file():
                task = yaml.safe_load((cdir / "task.yaml").read_text())
                if set(task) != TASK_KEYS:
                    raise BuildError(f"{cdir}/task.yaml: keys must be exactly {sorted(TASK_KEYS)}")
            repo.commits.append(CommitSource(repo.name, cdir.name, cdir, task))
        if not repo.commits:
            raise BuildError(f"{path}: no commit folders")
        repos.append(repo)
    return repos


def overlay(commit: CommitSource, tree: Path) -> None:
    """Apply one commit folder to a work tree: deletions first, then added or changed files."""
    deleted = commit.path / "deleted.txt"
    if deleted.is_file():
        for line in deleted.read_text().splitlines():
            rel = line.strip()
            if not rel or rel.startswith("#"):
                continue
            target = tree / rel
            if not target.is_file():
                raise BuildError(f"{deleted}: {rel} does not exist in the tree")
            target.unlink()
    for src in sorted(commit.path.rglob("*")):
        rel = src.relative_to(commit.path)
        if src.is_dir() or rel.parts[0] in RESERVED or SKIP & set(rel.parts) or src.suffix == ".pyc":
            continue
        dest = tree / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        dest.chmod(0o755 if os.access(src, os.X_OK) else 0o644)


def build_repo(repo: RepoSource, dest: Path) -> None:
    """Create the repository in `dest` (a new folder), filling in each commit's sha."""
    git(dest.parent, "init", "-q", "-b", "main", str(dest))
    parent = ""
    for index, commit in enumerate(repo.commits):
        overlay(commit, dest)
        when = (repo.start + dt.timedelta(hours=repo.step_hours * index)).isoformat()
        identity = {
            "GIT_AUTHOR_NAME": repo.author,
            "GIT_AUTHOR_EMAIL": repo.email,
            "GIT_AUTHOR_DATE": when,
            "GIT_COMMITTER_NAME": repo.author,
            "GIT_COMMITTER_EMAIL": repo.email,
            "GIT_COMMITTER_DATE": when,
        }
        git(dest, "add", "--all")
        git(dest, "commit", "-q", "--no-verify", "-F", str(commit.path / "message.txt"), env=identity)
        commit.sha = git(dest, "rev-parse", "HEAD").strip()
        commit.parent = parent
        parent = commit.sha


def bundle_heads(bundle: Path) -> str:
    return git(bundle.parent, "bundle", "list-heads", str(bundle))


# ------------------------------------------------------------------------------------ tasks


def is_test_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return path.startswith("tests/") or name.startswith("test_") or name == "conftest.py"


def split_fix(repo_dir: Path, commit: CommitSource) -> tuple[str, str]:
    """(test diff, gold diff) of a fix commit against its parent."""
    changed = git(repo_dir, "diff", "--name-only", "--no-renames", commit.parent, commit.sha).split()
    tests = [p for p in changed if is_test_file(p)]
    source = [p for p in changed if not is_test_file(p)]
    if not tests or not source:
        raise BuildError(f"{commit.path}: a fix commit must change tests and source ({changed})")

    def diff(paths: list[str]) -> str:
        return git(
            repo_dir, "diff", "--no-color", "--no-ext-diff", "--no-renames", commit.parent, commit.sha, "--", *paths
        )

    return diff(tests), diff(source)


_SUMMARY = re.compile(r"^=+ short test summary info =+$")


def run_tests(tree: Path, command: str) -> tuple[int, dict[str, str]]:
    """Run a pytest command in `tree` with this interpreter; (exit code, node id -> status)."""
    argv = shlex.split(command)
    if argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    proc = subprocess.run(argv, cwd=tree, env=env, capture_output=True, text=True, timeout=600)
    statuses: dict[str, str] = {}
    lines = proc.stdout.splitlines()
    starts = [i for i, line in enumerate(lines) if _SUMMARY.match(line.strip())]
    for line in lines[starts[-1] + 1 :] if starts else []:
        status, _, rest = line.partition(" ")
        if status in ("PASSED", "FAILED", "ERROR") and rest:
            statuses.setdefault(rest.split(" - ", 1)[0].strip(), status)
    return proc.returncode, statuses


def apply_patch(tree: Path, patch: str) -> None:
    proc = subprocess.run(["git", "apply", "-"], cwd=tree, input=patch, text=True, capture_output=True, env=_git_env())
    if proc.returncode != 0:
        raise BuildError(f"git apply failed in {tree}:\n{proc.stderr}")


def grade_task(repo_dir: Path, commit: CommitSource, test_diff: str, gold_diff: str) -> tuple[list[str], list[str]]:
    """FAIL_TO_PASS and PASS_TO_PASS, measured; raises BuildError when the task is unsound."""
    task_id = commit.task["id"]
    with tempfile.TemporaryDirectory(prefix=f"{task_id}-") as tmp:
        tree = Path(tmp) / "repo"
        git(Path(tmp), "clone", "-q", str(repo_dir), str(tree))
        git(tree, "checkout", "-q", "--detach", commit.parent)
        ancestor = subprocess.run(
            ["git", "merge-base", "--is-ancestor", commit.sha, commit.parent], cwd=tree, env=_git_env()
        )
        if ancestor.returncode != 1:
            raise BuildError(f"{task_id}: the fix {commit.sha} must not be reachable from the base")
        apply_patch(tree, test_diff)
        _, before = run_tests(tree, HIDDEN_COMMAND)
        apply_patch(tree, gold_diff)
        code, after = run_tests(tree, HIDDEN_COMMAND)
    failing = sorted(t for t, s in after.items() if s != "PASSED")
    if code != 0 or failing or not after:
        raise BuildError(f"{task_id}: with the gold patch the hidden tests must all pass (exit {code}): {failing}")
    broken = sorted(t for t, s in before.items() if s == "PASSED" and after.get(t) != "PASSED")
    if broken:
        raise BuildError(f"{task_id}: the gold patch breaks {broken}")
    f2p = sorted(t for t in after if before.get(t) != "PASSED")
    p2p = sorted(t for t in after if before.get(t) == "PASSED")
    if not f2p:
        raise BuildError(f"{task_id}: no test fails before the gold patch")
    return f2p, p2p


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _str)


def render_spec(repo: RepoSource, commit: CommitSource, f2p: list[str], p2p: list[str]) -> str:
    task = commit.task
    data = {
        "id": task["id"],
        "repo": f"../../repos/{repo.name}.bundle",
        "base_commit": commit.parent,
        "problem_statement": task["problem_statement"],
        "environment": {"setup": [f"pip install {PYTEST_PIN}"], "install": ["pip install -e ."]},
        "test_command": VISIBLE_COMMAND,
        "hidden_tests": {"command": HIDDEN_COMMAND, "patch_file": f"{task['id']}/test.diff"},
        "gold_patch_file": f"{task['id']}/gold.diff",
        "FAIL_TO_PASS": f2p,
        "PASS_TO_PASS": p2p,
        "metadata": {
            "bug_kind": task["bug_kind"],
            "difficulty": task["difficulty"],
            "repo": repo.name,
            "fix_commit": commit.sha,
        },
    }
    header = (
        f"# Generated by scripts/build_demo_repos.py --tasks from repos/src/{repo.name}/{commit.slug}/task.yaml;\n"
        "# edit that file (or the commit sources) and regenerate rather than editing this one.\n"
    )
    return header + yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def task_files(repo: RepoSource, repo_dir: Path, commit: CommitSource, measure: bool) -> dict[Path, str]:
    """The three files of one task: spec, test.diff, gold.diff (relative to tasks/demo)."""
    task_id = commit.task["id"]
    test_diff, gold_diff = split_fix(repo_dir, commit)
    if measure:
        f2p, p2p = grade_task(repo_dir, commit, test_diff, gold_diff)
    else:  # --check: lists as they are on disk; the rest must match exactly
        spec = TASKS / f"{task_id}.yaml"
        old = yaml.safe_load(spec.read_text()) if spec.is_file() else {}
        f2p, p2p = old.get("FAIL_TO_PASS", []), old.get("PASS_TO_PASS", [])
    return {
        Path(f"{task_id}.yaml"): render_spec(repo, commit, f2p, p2p),
        Path(task_id) / "test.diff": test_diff,
        Path(task_id) / "gold.diff": gold_diff,
    }


# ------------------------------------------------------------------------------------ commands


def verify_commits(repo: RepoSource, repo_dir: Path) -> None:
    """Every commit's own tests pass (the visible suite is green throughout the history)."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "repo"
        git(Path(tmp), "clone", "-q", str(repo_dir), str(tree))
        for commit in repo.commits:
            git(tree, "checkout", "-q", "--detach", commit.sha)
            code, statuses = run_tests(tree, HIDDEN_COMMAND)
            bad = sorted(t for t, s in statuses.items() if s != "PASSED")
            if code != 0 or bad:
                raise BuildError(f"{repo.name} {commit.slug}: tests fail at this commit (exit {code}): {bad}")
            print(f"  {repo.name} {commit.slug}: {len(statuses)} tests pass")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    mode.add_argument("--tasks", action="store_true", help="also regenerate tasks/demo (runs pytest)")
    mode.add_argument(
        "--verify", action="store_true", help="like --check, and run the tests of every commit and every task"
    )
    mode.add_argument("--materialize", nargs=3, metavar=("REPO", "NN", "DIR"), help="write a tree, no git")
    parser.add_argument("--repo", action="append", help="only this repository (repeatable)")
    args = parser.parse_args(argv)

    try:
        if args.materialize:
            name, upto, dest = args.materialize
            found = load_sources([name])
            if not found:
                raise BuildError(f"no repository {name!r} under {SRC}")
            if Path(dest).exists():
                raise BuildError(f"{dest} already exists")
            repo = found[0]
            Path(dest).mkdir(parents=True)
            for commit in repo.commits:
                if commit.slug[:2] > upto:
                    break
                overlay(commit, Path(dest))
            print(f"wrote the tree of {name} after commit {upto} to {dest}")
            return 0

        stale: list[str] = []
        expected_tasks: dict[Path, str] = {}
        with tempfile.TemporaryDirectory(prefix="demo-repos-") as tmp:
            for repo in load_sources(args.repo):
                repo_dir = Path(tmp) / repo.name
                build_repo(repo, repo_dir)
                head = repo.commits[-1].sha
                bundle = BUNDLES / f"{repo.name}.bundle"
                fresh = Path(tmp) / f"{repo.name}.bundle"
                git(repo_dir, "bundle", "create", "-q", str(fresh), "--all")
                same = bundle.is_file() and bundle_heads(bundle) == bundle_heads(fresh)
                if args.check or args.verify:  # read-only modes
                    if not same:
                        stale.append(str(bundle.relative_to(ROOT)))
                elif same:
                    print(f"unchanged {bundle.relative_to(ROOT)} ({len(repo.commits)} commits, main={head})")
                else:
                    shutil.copyfile(fresh, bundle)
                    print(f"wrote {bundle.relative_to(ROOT)} ({len(repo.commits)} commits, main={head})")
                if args.verify:
                    verify_commits(repo, repo_dir)
                for commit in repo.commits:
                    if commit.task and (args.tasks or args.check or args.verify):
                        files = task_files(repo, repo_dir, commit, measure=args.tasks or args.verify)
                        expected_tasks.update(files)
                        if args.verify:
                            spec = yaml.safe_load(files[Path(f"{commit.task['id']}.yaml")])
                            print(
                                f"  {commit.task['id']}: base {commit.parent[:10]}, fix {commit.sha[:10]} not reachable; "
                                f"{len(spec['FAIL_TO_PASS'])} fail->pass, {len(spec['PASS_TO_PASS'])} pass->pass"
                            )

        if args.repo is None and (args.tasks or args.check or args.verify):  # needs every repository
            # recordings/ is written by scripts/record_demo.py, not generated here
            stale += sync_files(
                TASKS, expected_tasks, write=args.tasks, root=ROOT, generated=lambda rel: rel.parts[0] != "recordings"
            )
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    if stale:
        what = "out of date" if args.check or args.verify else "not regenerated (run with --tasks)"
        print(f"{what}:\n  " + "\n  ".join(stale), file=sys.stderr)
        return 1
    if args.check or args.verify:
        print("demo repositories and task specs are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
