#!/usr/bin/env python3
"""Build SWE-bench-format instances from a real open-source package: more-itertools from PyPI.

    python scripts/make_swebench_fixture.py OUT_DIR [--force] [--sdist FILE]

No GitHub here, so the repository is made from the package's released sdist (which ships the
project's own unittest suite), SWE-smith style:

  commit 1   the more-itertools 10.5.0 sources as released (PKG-INFO, a build artefact, left out)
  commit 2   a .gitignore
  commit 3+  one commit per instance that breaks one real function in a small, plausible way and
             deletes the upstream tests that catch it, so the suite is green at every commit.

For the instance made by commit N: base_commit = N, `patch` (gold) = the upstream source restoring
the function (commit N reversed, source files only), `test_patch` = the upstream tests restored
(commit N reversed, tests only). FAIL_TO_PASS and PASS_TO_PASS are measured, not written by hand:
each instance is checked out in a temporary clone, its test files are run with pytest after the
test patch and again after the gold patch; FAIL_TO_PASS = failed then passed (and must be exactly
the tests commit N deleted), PASS_TO_PASS = passed both times; nothing may fail after the gold.

OUT_DIR gets `more-itertools/` (the git repository), `instances.jsonl` (SWE-bench field names,
test lists JSON-encoded as on the Hugging Face hub), `specs.yaml` (for
`wholeloop tasks import-swebench OUT_DIR/instances.jsonl --specs OUT_DIR/specs.yaml`) and
`fixture.json`, written last: when it is present and matches this recipe, nothing is rebuilt.
Commits have fixed authors and dates, so the same recipe always gives the same commit ids.

Needs network access to PyPI (pip download) unless --sdist names the file, and pytest in the
Python running this script.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixturelib import FixtureError, build_once, fixture_main  # noqa: E402

PACKAGE = "more-itertools"
VERSION = "10.5.0"
SDIST = f"more-itertools-{VERSION}.tar.gz"
SDIST_SHA256 = "5482bfef7849c25dc3c6dd53a6173ae4795da2a41a80faea6700d9f5846c5da6"
REPO_NAME = "more-itertools/more-itertools"  # the upstream GitHub name, as SWE-bench writes it
SWEBENCH_VERSION = "10.5"
PYTEST_PIN = "pytest==8.3.5"  # in the task image: before pytest 9, subtests need no plugin
TEST_FILES_COMMAND = "python -m pytest -rA -p no:cacheprovider {files}"
VISIBLE_TEST_COMMAND = "python -m pytest -q -p no:cacheprovider tests"
FIXTURE_FORMAT = 1  # bump when the layout of OUT_DIR or the recipe's meaning changes
IDENTITY = ("wholeloop fixture", "fixture@wholeloop.invalid")
FIRST_DATE = "2024-09-05T10:00:00+00:00"  # more-itertools 10.5.0 was released in early September 2024


@dataclass(frozen=True)
class Bug:
    slug: str  # becomes the instance id suffix
    path: str  # source file, relative to the repository
    old: str  # upstream text (must occur exactly once)
    new: str  # the injected bug
    message: str  # commit message of the injection (reads like an innocent refactor)
    problem_statement: str


BUGS = [
    Bug(
        slug="windowed-fill",
        path="more_itertools/more.py",
        old="        yield tuple(window) + ((fillvalue,) * (n - len(window)))\n        return\n",
        new="        yield tuple(window)\n        return\n",
        message="windowed: return a short first window as it is",
        problem_statement="""\
windowed() ignores fillvalue when the iterable is shorter than n

The documentation of `windowed` says that when the window is larger than the iterable,
*fillvalue* is used in place of the missing values:

    >>> list(windowed([1, 2, 3], 4))
    [(1, 2, 3, None)]

With the current code I get `[(1, 2, 3)]` instead: the only window is shorter than n, and
passing `fillvalue='!'` makes no difference. Code that unpacks the windows into n names then
fails. It also shows in `locate()` and `rlocate()`: with a `window_size` larger than the
iterable, the predicate is now called with fewer than `window_size` arguments.
""",
    ),
    Bug(
        slug="split-at-maxsplit",
        path="more_itertools/more.py",
        old="            if maxsplit == 1:\n                yield list(it)\n                return\n"
        "            buf = []\n            maxsplit -= 1\n        else:\n            buf.append(item)\n"
        "    yield buf\n\n\ndef split_before(",
        new="            if maxsplit == 0:\n                yield list(it)\n                return\n"
        "            buf = []\n            maxsplit -= 1\n        else:\n            buf.append(item)\n"
        "    yield buf\n\n\ndef split_before(",
        message="split_at: stop splitting when maxsplit is used up",
        problem_statement="""\
split_at() makes one split more than maxsplit allows

`split_at` is documented to do at most *maxsplit* splits:

    >>> list(split_at(range(10), lambda n: n % 2 == 1, maxsplit=2))
    [[0], [2], [4, 5, 6, 7, 8, 9]]

but it returns `[[0], [2], [4], [6, 7, 8, 9]]`, i.e. three splits. With `maxsplit=1` I get two
splits. Without maxsplit (or with -1) the results are fine.
""",
    ),
    Bug(
        slug="unique-justseen-key",
        path="more_itertools/recipes.py",
        old="    return map(next, map(operator.itemgetter(1), groupby(iterable, key)))\n",
        new="    return map(operator.itemgetter(0), groupby(iterable, key))\n",
        message="unique_justseen: take the same groupby path with and without a key",
        problem_statement="""\
unique_justseen() with a key returns the keys instead of the items

    >>> list(unique_justseen('ABBCcAD', str.lower))
    ['a', 'b', 'c', 'a', 'd']

According to its documentation the result should be `['A', 'B', 'C', 'A', 'D']`: the key
function should only decide which neighbouring items count as duplicates, the items themselves
should be returned unchanged. `unique(iterable, key=...)` seems to have the same problem:
`list(unique(['1', '10', '2'], key=int))` gives integers rather than the original strings.
""",
    ),
]

# A pytest plugin that records one outcome per test id (failed if any phase or subtest failed).
OUTCOME_PLUGIN = """
import json, os
_rank = {"passed": 0, "skipped": 1, "failed": 2}
_out = {}
def pytest_runtest_logreport(report):
    outcome = "failed" if report.failed else "skipped" if report.skipped else "passed"
    if report.when == "teardown" and outcome == "skipped":
        outcome = "passed"
    if _rank[outcome] > _rank.get(_out.get(report.nodeid), -1):
        _out[report.nodeid] = outcome
    else:
        _out.setdefault(report.nodeid, outcome)
def pytest_sessionfinish(session):
    with open(os.environ["WL_OUTCOMES_FILE"], "w") as fh:
        json.dump(_out, fh)
"""


def recipe_hash() -> str:
    recipe = {
        "format": FIXTURE_FORMAT,
        "sdist": [SDIST, SDIST_SHA256],
        "bugs": [asdict(b) for b in BUGS],
        "pytest": PYTEST_PIN,
        "commands": [TEST_FILES_COMMAND, VISIBLE_TEST_COMMAND],
        "dates": FIRST_DATE,
        "identity": IDENTITY,
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def is_complete(out_dir: Path) -> bool:
    marker = out_dir / "fixture.json"
    try:
        data = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    needed = [out_dir / "instances.jsonl", out_dir / "specs.yaml", out_dir / "more-itertools" / ".git"]
    return data.get("recipe") == recipe_hash() and all(p.exists() for p in needed)


# ----------------------------------------------------------------------------- git


def _git_env(date: str | None = None) -> dict[str, str]:
    env = dict(os.environ, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", LC_ALL="C")
    if date:
        env.update(
            GIT_AUTHOR_NAME=IDENTITY[0], GIT_AUTHOR_EMAIL=IDENTITY[1], GIT_AUTHOR_DATE=date,
            GIT_COMMITTER_NAME=IDENTITY[0], GIT_COMMITTER_EMAIL=IDENTITY[1], GIT_COMMITTER_DATE=date,
        )  # fmt: skip
    return env


def git(repo: Path, *args: str, date: str | None = None, input: str | None = None) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=_git_env(date), input=input
    )
    if proc.returncode != 0:
        raise FixtureError(f"git {' '.join(args)} failed in {repo}:\n{proc.stderr.strip()}")
    return proc.stdout


def commit_all(repo: Path, message: str, date: str) -> str:
    git(repo, "add", "--all")
    git(repo, "commit", "-q", "--no-verify", "--no-gpg-sign", "-m", message, date=date)
    return git(repo, "rev-parse", "HEAD").strip()


def day(n: int) -> str:
    """FIRST_DATE plus n days (fixed, so commit ids are reproducible)."""
    from datetime import datetime, timedelta

    return (datetime.fromisoformat(FIRST_DATE) + timedelta(days=n)).isoformat()


# ----------------------------------------------------------------------------- pytest


def run_tests(repo: Path, targets: list[str], plugin_dir: Path) -> dict[str, str]:
    """{test id: passed | failed | skipped} for `targets`, run with this Python's pytest."""
    out_file = plugin_dir / "outcomes.json"
    out_file.unlink(missing_ok=True)
    env = dict(
        os.environ,
        PYTHONPATH=str(plugin_dir),
        WL_OUTCOMES_FILE=str(out_file),
        PYTHONDONTWRITEBYTECODE="1",
        PYTEST_ADDOPTS="",
    )
    env.pop("PYTEST_PLUGINS", None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "_wl_outcomes", *targets]
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
    if not out_file.exists() or proc.returncode not in (0, 1):
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:])
        raise FixtureError(f"pytest did not run in {repo} (exit {proc.returncode}):\n{tail}")
    return json.loads(out_file.read_text())


def remove_tests(path: Path, ids: list[str]) -> None:
    """Delete the test functions/methods named by `ids` (`file::Class::test` or `file::test`)."""
    source = path.read_text()
    lines = source.splitlines(keepends=True)
    tree = ast.parse(source)
    spans = []
    for test_id in ids:
        parts = test_id.split("::")[1:]
        body, node = tree.body, None
        for name in parts:
            defs = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
            node = next((n for n in body if isinstance(n, defs) and n.name == name), None)
            if node is None:
                raise FixtureError(f"{test_id}: not found in {path}")
            body = getattr(node, "body", [])
        if isinstance(node, ast.ClassDef):
            raise FixtureError(f"{test_id}: names a class; only test functions are removed")
        start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
        end = node.end_lineno
        if start > 0 and not lines[start - 1].strip():
            start -= 1  # the blank line that separated it from the previous definition
        spans.append((start, end, test_id))
    ordered = sorted(spans)
    for (_, e1, a), (s2, _, b) in zip(ordered, ordered[1:], strict=False):
        if s2 < e1:
            raise FixtureError(f"{a} and {b} overlap")
    for start, end, _ in sorted(spans, reverse=True):
        del lines[start:end]
    new = "".join(lines)
    tree = ast.parse(new)  # still valid Python
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        if not cls.body:
            raise FixtureError(f"removing tests would leave class {cls.name} empty")
    path.write_text(new)


# ----------------------------------------------------------------------------- build


def fetch_sdist(dest: Path, sdist: Path | None) -> Path:
    if sdist is None:
        cmd = [
            sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
            f"{PACKAGE}=={VERSION}", "--dest", str(dest),
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise FixtureError(f"pip download {PACKAGE}=={VERSION} failed:\n{proc.stderr.strip()[-2000:]}")
        sdist = dest / SDIST
    digest = hashlib.sha256(Path(sdist).read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        raise FixtureError(f"{sdist}: sha256 {digest} is not the pinned {SDIST_SHA256}")
    return Path(sdist)


def extract(sdist: Path, repo: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(sdist) as tar:
        kwargs = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(tmp, **kwargs)
        (top,) = Path(tmp).iterdir()
        (top / "PKG-INFO").unlink()  # written by the sdist builder, not part of the sources
        shutil.copytree(top, repo)


def build(out_dir: Path, *, sdist: Path | None = None, force: bool = False, log=print) -> Path:
    """Build the fixture in `out_dir` (skipped when already complete); returns instances.jsonl."""
    return build_once(
        out_dir,
        result="instances.jsonl",
        recipe=recipe_hash(),
        complete=is_complete,
        fill=lambda work: _build_into(work, sdist, log),
        force=force,
        log=log,
    )


def _build_into(out: Path, sdist: Path | None, log) -> None:
    scratch = out / ".scratch"
    plugin_dir = scratch / "plugin"
    plugin_dir.mkdir(parents=True)
    (plugin_dir / "_wl_outcomes.py").write_text(OUTCOME_PLUGIN)
    sdist = fetch_sdist(scratch, sdist)
    repo = out / "more-itertools"
    extract(sdist, repo)
    git(repo, "init", "-q", "--template=", "-b", "main")

    log(f"commit 1: {PACKAGE} {VERSION} as released")
    first = commit_all(repo, f"Import {PACKAGE} {VERSION}\n\nThe sources of the {VERSION} sdist from PyPI.", day(0))
    baseline = run_tests(repo, ["tests"], plugin_dir)
    if not baseline or any(v == "failed" for v in baseline.values()):
        raise FixtureError("the upstream test suite does not pass as released")
    (repo / ".gitignore").write_text("__pycache__/\n*.py[cod]\n*.egg-info/\nbuild/\ndist/\n.pytest_cache/\n.tox/\n")
    parent = commit_all(repo, "Add a .gitignore", day(1))

    records = []
    for number, bug in enumerate(BUGS):
        path = repo / bug.path
        text = path.read_text()
        if text.count(bug.old) != 1:
            raise FixtureError(f"{bug.slug}: the upstream text to change occurs {text.count(bug.old)} times")
        path.write_text(text.replace(bug.old, bug.new))
        failing = [t for t, o in run_tests(repo, ["tests"], plugin_dir).items() if o == "failed"]
        if not failing:
            raise FixtureError(f"{bug.slug}: no upstream test catches the injected bug")
        by_file: dict[str, list[str]] = {}
        for test_id in failing:
            by_file.setdefault(test_id.split("::")[0], []).append(test_id)
        for file, ids in by_file.items():
            remove_tests(repo / file, ids)
        still = [t for t, o in run_tests(repo, ["tests"], plugin_dir).items() if o == "failed"]
        if still:
            raise FixtureError(f"{bug.slug}: tests still fail after removing the ones that catch it: {still}")
        base = commit_all(repo, bug.message, day(2 + 2 * number))
        log(f"commit {number + 3}: {bug.slug}: removed {len(failing)} upstream tests")
        records.append((bug, parent, base, failing, day(3 + 2 * number)))
        parent = base

    instances = []
    for bug, parent_commit, base, deleted, created in records:
        instances.append(_instance(repo, bug, parent_commit, base, deleted, created, first, scratch, plugin_dir))
        log(f"{instances[-1]['instance_id']}: {len(deleted)} FAIL_TO_PASS, "
            f"{len(json.loads(instances[-1]['PASS_TO_PASS']))} PASS_TO_PASS")  # fmt: skip

    with open(out / "instances.jsonl", "w") as fh:
        for inst in instances:
            fh.write(json.dumps(inst) + "\n")
    specs = {
        REPO_NAME: {
            SWEBENCH_VERSION: {
                "repo_path": "more-itertools",
                "setup": [f"pip install {PYTEST_PIN}"],
                "test_files_command": TEST_FILES_COMMAND,
                "visible_test_command": VISIBLE_TEST_COMMAND,
            }
        }
    }
    (out / "specs.yaml").write_text(
        f"# Specs for the instances built by scripts/make_swebench_fixture.py ({PACKAGE} {VERSION}).\n"
        + yaml.safe_dump(specs, sort_keys=False)
    )
    shutil.rmtree(scratch)
    marker = {
        "recipe": recipe_hash(),
        "package": f"{PACKAGE}=={VERSION}",
        "sdist_sha256": SDIST_SHA256,
        "head": git(repo, "rev-parse", "HEAD").strip(),
        "instances": [i["instance_id"] for i in instances],
    }
    (out / "fixture.json").write_text(json.dumps(marker, indent=2) + "\n")


def _instance(repo, bug, parent, base, deleted, created, first, scratch, plugin_dir) -> dict:
    """The SWE-bench instance for one bug commit, with FAIL_TO_PASS/PASS_TO_PASS measured."""
    source_paths = [p for p in git(repo, "diff", "--name-only", base, parent).split() if not p.startswith("tests/")]
    gold = git(repo, "diff", base, parent, "--", *source_paths)
    test_patch = git(repo, "diff", base, parent, "--", "tests/")
    test_files = sorted({t.split("::")[0] for t in deleted})
    clone = scratch / f"clone-{bug.slug}"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True, env=_git_env())
    git(clone, "checkout", "-q", base)
    git(clone, "apply", "-", input=test_patch)
    before = run_tests(clone, test_files, plugin_dir)
    git(clone, "apply", "-", input=gold)
    after = run_tests(clone, test_files, plugin_dir)
    broken = [t for t, o in after.items() if o == "failed"]
    if broken:
        raise FixtureError(f"{bug.slug}: tests fail with the gold patch: {broken}")
    fail_to_pass = [t for t in after if before.get(t) == "failed" and after[t] == "passed"]
    pass_to_pass = [t for t in after if before.get(t) == "passed" and after[t] == "passed"]
    if sorted(fail_to_pass) != sorted(deleted):
        raise FixtureError(f"{bug.slug}: FAIL_TO_PASS {fail_to_pass} differs from the deleted tests {deleted}")
    shutil.rmtree(clone)
    return {
        "repo": REPO_NAME,
        "instance_id": f"more-itertools__more-itertools-{bug.slug}",
        "base_commit": base,
        "patch": gold,
        "test_patch": test_patch,
        "problem_statement": bug.problem_statement,
        "hints_text": "",
        "created_at": created.replace("+00:00", "Z"),
        "version": SWEBENCH_VERSION,
        "FAIL_TO_PASS": json.dumps(fail_to_pass),
        "PASS_TO_PASS": json.dumps(pass_to_pass),
        "environment_setup_commit": first,
    }


def main(argv: list[str] | None = None) -> int:
    return fixture_main(
        __doc__, build, source="sdist", source_help=f"use this {SDIST} instead of downloading it", argv=argv
    )


if __name__ == "__main__":
    sys.exit(main())
