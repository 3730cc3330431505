#!/usr/bin/env python3
"""Reference miner: which commits of a repository make tasks, and their FAIL_TO_PASS/PASS_TO_PASS.

    python scripts/mine_reference.py REPO [--since DATE] [--until DATE] [--max-lines N]
                                          [--repeats R] [--allow-config] --out FILE.json

An independent implementation of the mining rules below, for `wholeloop mine` and `wholeloop tasks
check` to be tested against. It does not import wholeloop: stdlib, git, venv/pip, pytest and
detect-secrets only. It runs everything on the host, where wholeloop uses Docker; the protocol
is the same. Its output for the fixture of scripts/make_mining_fixture.py is committed as
tests/data/mining/<package>.expected.json. Run it with a Python 3.11 that has detect-secrets
(DETECT_SECRETS_PIN) installed, e.g. the project's .venv plus `pip install detect-secrets==1.5.0`;
the environments it makes need PyPI (or pip's cache) for pytest and the build backends.

THE MINING RULES (pytest ecosystem)

1. Commits. Those reachable from HEAD (`git rev-list HEAD`, every parent followed) whose committer
   date is within [--since, --until], both inclusive; a bare date means that day 00:00:00 UTC for
   --since and 23:59:59 UTC for --until; a full ISO time may be given. Each commit is judged on
   its own against its first parent, so the walk order does not matter; the output lists commits
   by (committer date, commit id).

2. The diff. `git diff --no-renames --binary FIRST_PARENT COMMIT`: a rename is a delete plus an
   add (both paths count). Line counts come from `git diff --no-renames --numstat`; a binary file
   counts 0 lines.

3. Each changed path (old or new side, repository-relative, `/`-separated) is classified by the
   first rule that matches:
   a. protected config: its basename is pytest.ini, .pytest.ini, tox.ini, setup.cfg,
      pyproject.toml, setup.py, noxfile.py or MANIFEST.in, at any depth (also under a test
      folder: a tox.ini in tests/ is protected);
   b. test: its basename matches test_*.py, *_test.py or is conftest.py, or any DIRECTORY
      component (not the basename) is exactly `tests`, `test` or `testing` (every file under such
      a folder, data files included, is a test file);
   c. docs: the first path component is `docs`, `doc` or `.github`; or the path has one component
      that starts with "." (a dotfile at the root, e.g. .gitignore, .readthedocs.yaml) or the
      first component starts with "." (a dot-folder at the root, e.g. .idea/); or the basename
      ends in .md, .rst or .txt (case-insensitive; so requirements.txt is docs); or the basename,
      upper-cased, starts with LICENSE, CHANGES, CHANGELOG, HISTORY, NEWS or AUTHORS; or the
      basename is a dependency lock file (LOCK_FILES: uv.lock, poetry.lock, package-lock.json...);
   d. source: everything else.
   A protected pyproject.toml whose two sides both parse as TOML and are equal once the [project]
   keys classifiers, urls, description, keywords, authors, maintainers, readme, license and
   license-files and the [tool.*] tables of linters, formatters, type checkers and release tools
   (ruff, black, isort, mypy, pyright, codespell, towncrier, ...: LINT_TOOLS below) are removed
   is docs instead (the change describes the project; nothing a test run reads changed).

4. Reasons a commit is skipped, checked in this order (the first that applies is reported):
   "merge commit"                       more than one parent;
   "root commit (no parent)"            no parent;
   "docs or packaging only"             no test file and no source file (only docs and/or
                                        protected files), checked before the next two so that a
                                        docs-only commit does not read "no test change";
   "no test change"                     no test file;
   "no source change"                   test files, but no source file (tests, or tests + docs,
                                        or tests + protected files);
   "changes protected file <path>"      a protected file changed; <path> is the first in sorted
                                        order. Not a skip with --allow-config: then every
                                        protected file the commit changes joins the gold patch
                                        (and is exempt from protection for that task);
   "diff too large (<N> changed lines > <MAX>)"   N = added + deleted lines of the gold patch plus
                                        the hidden test patch (docs never count; protected files
                                        count only with --allow-config, being part of the gold);
                                        skipped when N > MAX (--max-lines, default 800);
   "no problem statement (the message is a bot's only)"   every non-blank line of the message is
                                        a trailer (`Something-by:`), a "Generated with" line, or
                                        pre-commit.ci's autofix subject and its link.
   The classification itself does not depend on --allow-config.

5. A candidate that is not skipped: base = first parent; gold patch = the diff restricted to
   its source files (+ protected files with --allow-config); hidden test patch = the diff
   restricted to its test files; docs files are dropped from both (listed as docs_files);
   task id = <repository folder name>-<first 10 hex digits of the commit id>; created_at = the
   commit's committer date (ISO 8601, UTC); problem statement = the full commit message
   (`git log -1 --format=%B`).

6. Secrets (a refusal, checked before anything is run): detect-secrets (pinned below) with its
   default plugins and filters scans the statement and, for each file of the gold and test
   patches that exists after the commit, that file's content after the commit; a finding counts
   only on a line the commit added (new-side line numbers of `git diff -U0`) or anywhere in the
   statement. Findings are ordered statement first, then gold files, then test files (each by
   path), then line, then rule; the task is refused with the first:
   "secret found: <file>:<line> <rule>", <file> being the path or `statement` (a line of the
   commit message, 1-based), <rule> the detect-secrets type (e.g. "AWS Access Key"). All findings
   are listed in "findings".

7. Environment. One per candidate ("image"): a venv made with the Python running this script
   (3.11), then `pip install PYTEST_PIN` and `pip install -e .` from the base tree (editable, so
   that patches applied to the tree are what is imported, src layouts included; build
   dependencies come through pip's build isolation). The tree is the base commit's files
   (`git archive`), no .git. A build failure quarantines: "environment build failed".
   The environment is never rebuilt after a patch: with --allow-config a gold patch that changes
   setup.py or pyproject.toml is applied as files only (like a patch applied in a container).
   A fresh environment = that image's tree copied anew to the same path (what a new container
   from the image is), plus an empty temporary directory of its own (TMPDIR, so
   tempfile.gettempdir() differs per environment, as /tmp does per container) and HOME.

8. Check protocol. Hidden test files = the commit's test files that exist after it and whose
   basename matches test_*.py or *_test.py (conftest.py, helpers and data files are applied but
   not named on the command line). None: quarantined "no test file to run".
   Hidden test command: `python -m pytest -rA -p no:cacheprovider <hidden test files, sorted>`,
   run in the tree, with the venv first on PATH, no PYTHON* or PYTEST* variables.
   - base phase: ONE fresh environment; apply the test patch (`git apply`); if it does not
     apply: quarantined "test patch does not apply". Run the command R times (--repeats,
     default 3) in that same environment.
   - gold phase: R FRESH environments; in each apply the test patch then the gold patch (if it
     does not apply: quarantined "gold patch does not apply"), run the command once.
   - a run that exceeds TIMEOUT_S seconds: quarantined "tests timed out"; a run whose output has
     no "short test summary info" block: quarantined "no pytest summary in the output".
   Statuses of a run, from the last "short test summary info" block of its output: lines
   "<STATUS> <node id>[ - message]" with STATUS in PASSED FAILED ERROR XFAIL XPASS (node id =
   the text up to " - " outside brackets); SKIPPED lines carry no node id and are ignored; an
   ERROR line whose id has no "::" is a collection error and is not a test; a test reported
   twice (e.g. PASSED then ERROR at teardown) keeps FAILED/ERROR over anything else.
   The tests = every node id reported by any run of either phase. A test that a run does not
   report has status MISSING in that run (its file failed to collect, it was skipped, or it
   does not exist there). "Failing" means FAILED, ERROR or MISSING.
   - flaky: a test whose status differs between the runs of one phase (base or gold); it is
     dropped from every list, recorded in dropped_flaky as
     "flaky: base <s1>,<s2>,<s3>; gold <s1>,<s2>,<s3>".
   - FAIL_TO_PASS = tests not flaky, failing in every base run and PASSED in every gold run.
   - PASS_TO_PASS = tests not flaky, PASSED in every base run and every gold run.
   - broken by gold = tests not flaky, PASSED in every base run and failing in every gold run.
     (A test failing both at base and with gold is in no list and quarantines nothing: it was
     already broken; XFAIL/XPASS tests are in no list.)
   Quarantine reasons, in this order (after the ones above): "gold leaves tests failing: <ids>"
   (the broken-by-gold ids, sorted, comma-separated); "FAIL_TO_PASS is empty: no test fails at
   base and passes with gold", whose detail says which: "already passes at base: all <N> tests
   that pass with gold pass at base too", or "no test passes with gold", or "<N> tests pass with
   gold and none of them fails at base" (XFAIL/XPASS at base); "; <N> flaky tests dropped"
   is appended when some were.
   A task that passes every check is kept.

OUTPUT: {"repository", "head", "parameters", "commits": [...]}, each commit
{"commit", "committed_at", "subject", and one of: "skipped": reason | "refused": reason (+
"findings") | "quarantined": reason (+ "detail", "task_id", "dropped_flaky") | "kept": {task_id,
base, created_at, gold_files, docs_files, test_files, test_command, FAIL_TO_PASS, PASS_TO_PASS,
dropped_flaky}}, lists sorted, JSON with sorted keys: the same repository gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

PYTEST_PIN = "pytest==8.3.5"
DETECT_SECRETS_PIN = "detect-secrets==1.5.0"  # the version the committed outputs were made with
DEFAULT_MAX_LINES = 800
DEFAULT_REPEATS = 3
TIMEOUT_S = 300

PROTECTED = {
    "pytest.ini",
    ".pytest.ini",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "setup.py",
    "noxfile.py",
    "MANIFEST.in",
}
TEST_DIRS = {"tests", "test", "testing"}
DOCS_PREFIXES = ("LICENSE", "CHANGES", "CHANGELOG", "HISTORY", "NEWS", "AUTHORS")
LOCK_FILES = {
    "package-lock.json",
    "npm-shrinkwrap.json",
    "pnpm-lock.yaml",
    "yarn.lock",
    "Cargo.lock",
    "go.sum",
    "go.work.sum",
    "poetry.lock",
    "uv.lock",
    "pdm.lock",
    "Pipfile.lock",
    "composer.lock",
    "packages.lock.json",
    "Package.resolved",
}
STATUSES = ("PASSED", "FAILED", "ERROR", "XFAIL", "XPASS")
FAILING = ("FAILED", "ERROR", "MISSING")


class MineError(RuntimeError):
    pass


# ----------------------------------------------------------------------------- classification


def classify(path: str) -> str:
    """protected | test | docs | source, for a repository-relative path."""
    parts = PurePosixPath(path).parts
    base = parts[-1]
    if base in PROTECTED:
        return "protected"
    if fnmatchcase(base, "test_*.py") or fnmatchcase(base, "*_test.py") or base == "conftest.py":
        return "test"
    if any(d in TEST_DIRS for d in parts[:-1]):
        return "test"
    if parts[0] in ("docs", "doc", ".github") or parts[0].startswith("."):
        return "docs"
    if base.lower().endswith((".md", ".rst", ".txt")) or base.upper().startswith(DOCS_PREFIXES):
        return "docs"
    if base in LOCK_FILES:
        return "docs"
    return "source"


DESCRIBING = {
    "classifiers",
    "urls",
    "description",
    "keywords",
    "authors",
    "maintainers",
    "readme",
    "license",
    "license-files",
}
LINT_TOOLS = set(
    "ruff black isort mypy pyright codespell towncrier bumpversion bumpver tbump pylint pydocstyle check-manifest "
    "cibuildwheel repo-review commitizen interrogate docformatter typos semantic_release pyproject-fmt zizmor djlint "
    "mdformat check-wheel-contents validate-pyproject pyroma".split()
)


def _only_description(repo: Path, parent: str, commit: str, path: str) -> bool:
    import tomllib

    sides = []
    for rev in (parent, commit):
        proc = subprocess.run(["git", "-C", str(repo), "show", f"{rev}:{path}"], capture_output=True)
        if proc.returncode != 0:
            return False
        try:
            data = tomllib.loads(proc.stdout.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError):
            return False
        data["project"] = {k: v for k, v in data.get("project", {}).items() if k not in DESCRIBING}
        data["tool"] = {k: v for k, v in data.get("tool", {}).items() if k not in LINT_TOOLS}
        sides.append(data)
    return sides[0] == sides[1]


def is_test_module(path: str) -> bool:
    base = PurePosixPath(path).name
    return fnmatchcase(base, "test_*.py") or fnmatchcase(base, "*_test.py")


# ----------------------------------------------------------------------------- git


def git(repo: Path, *args: str, check: bool = True, input: bytes | None = None) -> str:
    env = dict(os.environ, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", LC_ALL="C")
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, env=env, input=input)
    if check and proc.returncode != 0:
        raise MineError(f"git {' '.join(args)}: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode("utf-8", errors="surrogateescape")


def parse_date(text: str, end_of_day: bool) -> datetime:
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        text += "T23:59:59+00:00" if end_of_day else "T00:00:00+00:00"
    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def commits_in_range(repo: Path, since: datetime | None, until: datetime | None) -> list[dict]:
    out = git(repo, "log", "--format=%H%x00%P%x00%cI%x00%s", "HEAD")
    commits = []
    for line in out.splitlines():
        sha, parents, date, subject = line.split("\x00", 3)
        when = datetime.fromisoformat(date)
        if (since and when < since) or (until and when > until):
            continue
        commits.append({"commit": sha, "parents": parents.split(), "date": when, "subject": subject})
    commits.sort(key=lambda c: (c["date"], c["commit"]))
    return commits


def changed_paths(repo: Path, parent: str, commit: str) -> list[tuple[str, int]]:
    """[(path, added + deleted lines)] of the commit against `parent`, renames split."""
    out = git(repo, "diff", "--no-renames", "--numstat", "-z", parent, commit)
    rows = []
    for entry in out.split("\x00"):
        if not entry:
            continue
        added, deleted, path = entry.split("\t", 2)
        lines = 0 if added == "-" else int(added) + int(deleted)
        rows.append((path, lines))
    return rows


def patch(repo: Path, parent: str, commit: str, paths: list[str]) -> bytes:
    if not paths:
        return b""
    env = dict(os.environ, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", LC_ALL="C")
    proc = subprocess.run(
        ["git", "-C", str(repo), "diff", "--no-renames", "--binary", parent, commit, "--", *paths],
        capture_output=True, env=env, check=True,
    )  # fmt: skip
    return proc.stdout


def exists_after(repo: Path, commit: str, path: str) -> bool:
    return bool(git(repo, "ls-tree", "--name-only", commit, "--", path).strip())


# ----------------------------------------------------------------------------- secrets


def added_lines(repo: Path, parent: str, commit: str, path: str) -> set[int]:
    out = git(repo, "diff", "--no-renames", "-U0", parent, commit, "--", path)
    lines: set[int] = set()
    for match in re.finditer(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", out, re.M):
        start, count = int(match.group(1)), int(match.group(2) or "1")
        lines.update(range(start, start + count))
    return lines


def scan_secrets(repo: Path, parent: str, commit: str, statement: str, gold: list[str], tests: list[str]) -> list[dict]:
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    findings = []
    with tempfile.TemporaryDirectory(prefix="mine-secrets-") as tmp:
        targets = [("statement", None)] + [(p, p) for p in sorted(gold)] + [(p, p) for p in sorted(tests)]
        for label, path in targets:
            dest = Path(tmp) / "files" / (path or "COMMIT_MESSAGE")
            dest.parent.mkdir(parents=True, exist_ok=True)
            if path is None:
                dest.write_text(statement)
                wanted = None
            else:
                if not exists_after(repo, commit, path):
                    continue
                env = dict(os.environ, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
                blob = subprocess.run(
                    ["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True, env=env, check=True
                ).stdout
                if b"\x00" in blob:
                    continue  # binary
                dest.write_bytes(blob)
                wanted = added_lines(repo, parent, commit, path)
            with default_settings():
                collection = SecretsCollection()
                collection.scan_file(str(dest))
                found = sorted({(s.line_number, s.type) for _, s in collection})
            for line, rule in found:
                if wanted is None or line in wanted:
                    findings.append({"file": label, "line": line, "rule": rule})
    return findings


# ----------------------------------------------------------------------------- pytest output

_HEADER = re.compile(r"^=+ short test summary info =+$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _node_id(rest: str) -> str:
    depth = 0
    for i, ch in enumerate(rest):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        elif depth == 0 and rest.startswith(" - ", i):
            return rest[:i].strip()
    return rest.strip()


def parse_statuses(output: str) -> dict[str, str] | None:
    """{node id: status} from the last short test summary block; None if there is none."""
    lines = [_ANSI.sub("", line.rstrip("\r")) for line in output.splitlines()]
    starts = [i for i, line in enumerate(lines) if _HEADER.match(line.strip())]
    if not starts:
        return None
    statuses: dict[str, str] = {}
    for line in lines[starts[-1] + 1 :]:
        status, _, rest = line.partition(" ")
        if status not in STATUSES or not rest:
            continue
        node = _node_id(rest)
        if "::" not in node:
            continue  # a collection error of a file, not a test
        if statuses.get(node) in ("FAILED", "ERROR"):
            continue
        statuses[node] = status
    return statuses


# ----------------------------------------------------------------------------- environments


class Quarantine(Exception):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason)
        self.reason, self.detail = reason, detail


class Image:
    """A venv with the package installed editable from the base tree, and a pristine copy of the tree."""

    def __init__(self, repo: Path, base: str, work: Path, log):
        self.work = work
        self.tree = work / "tree"
        self.pristine = work / "pristine"
        self.venv = work / "venv"
        archive = subprocess.run(
            ["git", "-C", str(repo), "archive", "--format=tar", base], capture_output=True, check=True
        ).stdout
        self.tree.mkdir(parents=True)
        subprocess.run(["tar", "-x", "-C", str(self.tree)], input=archive, check=True)
        venv.EnvBuilder(with_pip=True, symlinks=True).create(self.venv)
        pip = [str(self.venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        for args in ([PYTEST_PIN], ["-e", "."]):
            proc = subprocess.run(
                pip + args, cwd=self.tree, capture_output=True, text=True, env=self._env(work / "home")
            )
            if proc.returncode != 0:
                tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
                raise Quarantine("environment build failed", f"pip install {' '.join(args)}: {tail}")
        shutil.copytree(self.tree, self.pristine, symlinks=True)
        self.count = 0

    def _env(self, home: Path, tmp: Path | None = None) -> dict[str, str]:
        home.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST", "VIRTUAL_ENV"))}
        env.update(
            PATH=f"{self.venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            VIRTUAL_ENV=str(self.venv),
            HOME=str(home),
        )
        if tmp is not None:
            env.update(TMPDIR=str(tmp), TEMP=str(tmp), TMP=str(tmp))
        return env

    def fresh(self) -> dict[str, str]:
        """Reset the tree to the image's and give it a new temporary folder: a new container."""
        self.count += 1
        shutil.rmtree(self.tree)
        shutil.copytree(self.pristine, self.tree, symlinks=True)
        tmp = self.work / f"tmp-{self.count}"
        tmp.mkdir()
        return self._env(self.work / f"home-{self.count}", tmp)

    def apply(self, diff: bytes, env: dict[str, str]) -> bool:
        if not diff:
            return True
        env = dict(env, GIT_CEILING_DIRECTORIES=str(self.tree.parent))
        proc = subprocess.run(
            ["git", "apply", "--whitespace=nowarn", "-"], cwd=self.tree, input=diff, capture_output=True, env=env
        )
        return proc.returncode == 0

    def run(self, files: list[str], env: dict[str, str]) -> dict[str, str]:
        cmd = [str(self.venv / "bin" / "python"), "-m", "pytest", "-rA", "-p", "no:cacheprovider", *files]
        try:
            proc = subprocess.run(cmd, cwd=self.tree, capture_output=True, text=True, env=env, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise Quarantine("tests timed out", f"a run took more than {TIMEOUT_S} s") from None
        statuses = parse_statuses(proc.stdout)
        if statuses is None:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
            raise Quarantine("no pytest summary in the output", f"exit {proc.returncode}: {tail}")
        return statuses


def check_task(
    repo: Path, base: str, test_patch: bytes, gold_patch: bytes, files: list[str], repeats: int, work: Path, log
) -> dict:
    image = Image(repo, base, work, log)
    env = image.fresh()
    if not image.apply(test_patch, env):
        raise Quarantine("test patch does not apply")
    base_runs = [image.run(files, env) for _ in range(repeats)]
    gold_runs = []
    for _ in range(repeats):
        env = image.fresh()
        if not image.apply(test_patch, env):
            raise Quarantine("test patch does not apply")
        if not image.apply(gold_patch, env):
            raise Quarantine("gold patch does not apply")
        gold_runs.append(image.run(files, env))
    tests = sorted(set().union(*base_runs, *gold_runs))
    flaky, f2p, p2p, broken, gold_passing = {}, [], [], [], []
    for test in tests:
        b = [run.get(test, "MISSING") for run in base_runs]
        g = [run.get(test, "MISSING") for run in gold_runs]
        if len(set(b)) > 1 or len(set(g)) > 1:
            flaky[test] = f"flaky: base {','.join(b)}; gold {','.join(g)}"
            continue
        if g[0] == "PASSED":
            gold_passing.append(test)
            if b[0] in FAILING:
                f2p.append(test)
            elif b[0] == "PASSED":
                p2p.append(test)
        elif g[0] in FAILING and b[0] == "PASSED":
            broken.append(test)
    result = {"FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p, "dropped_flaky": flaky}
    if broken:
        raise _quarantine_with(f"gold leaves tests failing: {', '.join(broken)}", "", result)
    if not f2p:
        if not gold_passing:
            detail = "no test passes with gold"
        elif len(gold_passing) == len(p2p):
            detail = f"already passes at base: all {len(p2p)} tests that pass with gold pass at base too"
        else:
            detail = f"{len(gold_passing)} tests pass with gold and none of them fails at base"
        if flaky:
            detail += f"; {len(flaky)} flaky tests dropped"
        raise _quarantine_with("FAIL_TO_PASS is empty: no test fails at base and passes with gold", detail, result)
    return result


def _quarantine_with(reason: str, detail: str, result: dict) -> Quarantine:
    q = Quarantine(reason, detail)
    q.result = result
    return q


# ----------------------------------------------------------------------------- mining


def _bot_line(line: str) -> bool:
    text = line.strip().lower()
    return (
        not text
        or bool(re.match(r"[\w-]+-by\s*:", text))
        or text.startswith(("generated with", "[pre-commit.ci]", "for more information, see https://pre-commit.ci"))
    )


def judge(repo: Path, c: dict, args, work: Path, log) -> dict:
    out = {
        "commit": c["commit"],
        "committed_at": c["date"].astimezone(UTC).isoformat(),
        "subject": c["subject"],
    }
    if len(c["parents"]) > 1:
        return {**out, "skipped": "merge commit"}
    if not c["parents"]:
        return {**out, "skipped": "root commit (no parent)"}
    parent, commit = c["parents"][0], c["commit"]
    rows = changed_paths(repo, parent, commit)
    kinds: dict[str, list[str]] = {"protected": [], "test": [], "docs": [], "source": []}
    lines: dict[str, int] = {}
    for path, n in rows:
        kind = classify(path)
        if kind == "protected" and PurePosixPath(path).name == "pyproject.toml":
            kind = "docs" if _only_description(repo, parent, commit, path) else kind
        kinds[kind].append(path)
        lines[path] = n
    for paths in kinds.values():
        paths.sort()
    if not kinds["test"] and not kinds["source"]:
        return {**out, "skipped": "docs or packaging only"}
    if not kinds["test"]:
        return {**out, "skipped": "no test change"}
    if not kinds["source"]:
        return {**out, "skipped": "no source change"}
    if kinds["protected"] and not args.allow_config:
        return {**out, "skipped": f"changes protected file {kinds['protected'][0]}"}
    gold_files = sorted(kinds["source"] + (kinds["protected"] if args.allow_config else []))
    test_files = kinds["test"]
    n = sum(lines[p] for p in gold_files + test_files)
    if n > args.max_lines:
        return {**out, "skipped": f"diff too large ({n} changed lines > {args.max_lines})"}
    message = git(repo, "log", "-1", "--format=%B", commit)
    if all(_bot_line(line) for line in message.splitlines()):
        return {**out, "skipped": "no problem statement (the message is a bot's only)"}

    task_id = f"{repo.resolve().name}-{commit[:10]}"
    statement = git(repo, "log", "-1", "--format=%B", commit)
    findings = scan_secrets(repo, parent, commit, statement, gold_files, test_files)
    if findings:
        first = findings[0]
        return {
            **out,
            "refused": f"secret found: {first['file']}:{first['line']} {first['rule']}",
            "findings": findings,
        }

    hidden = sorted(p for p in test_files if is_test_module(p) and exists_after(repo, commit, p))
    if not hidden:
        return {**out, "quarantined": "no test file to run", "detail": "", "task_id": task_id, "dropped_flaky": {}}
    gold_patch = patch(repo, parent, commit, gold_files)
    test_patch = patch(repo, parent, commit, test_files)
    started = time.monotonic()
    try:
        result = check_task(repo, parent, test_patch, gold_patch, hidden, args.repeats, work / task_id, log)
    except Quarantine as q:
        log(f"  {task_id}: quarantined: {q.reason} ({time.monotonic() - started:.1f} s)")
        res = getattr(q, "result", {})
        return {
            **out,
            "quarantined": q.reason,
            "detail": q.detail,
            "task_id": task_id,
            "dropped_flaky": res.get("dropped_flaky", {}),
        }
    finally:
        shutil.rmtree(work / task_id, ignore_errors=True)
    log(f"  {task_id}: kept, {len(result['FAIL_TO_PASS'])} FAIL_TO_PASS, {len(result['PASS_TO_PASS'])} "
        f"PASS_TO_PASS, {len(result['dropped_flaky'])} flaky ({time.monotonic() - started:.1f} s)")  # fmt: skip
    return {
        **out,
        "kept": {
            "task_id": task_id,
            "base": parent,
            "created_at": out["committed_at"],
            "gold_files": gold_files,
            "docs_files": kinds["docs"],
            "test_files": test_files,
            "test_command": "python -m pytest -rA -p no:cacheprovider " + " ".join(hidden),
            "FAIL_TO_PASS": result["FAIL_TO_PASS"],
            "PASS_TO_PASS": result["PASS_TO_PASS"],
            "dropped_flaky": result["dropped_flaky"],
        },
    }


def mine(repo: Path, args, log=print) -> dict:
    if not repo.is_dir() or not git(repo, "rev-parse", "--git-dir", check=False).strip():
        raise MineError(f"{repo}: not a git repository")
    try:
        from importlib.metadata import version

        found = version("detect-secrets")
    except Exception:
        raise MineError(f"detect-secrets is not installed in this Python: pip install '{DETECT_SECRETS_PIN}'") from None
    if found != DETECT_SECRETS_PIN.split("==")[1]:
        print(f"warning: detect-secrets {found}, not {DETECT_SECRETS_PIN}: findings may differ", file=sys.stderr)
    since = parse_date(args.since, False) if args.since else None
    until = parse_date(args.until, True) if args.until else None
    commits = commits_in_range(repo, since, until)
    results = []
    with tempfile.TemporaryDirectory(prefix="mine-reference-") as tmp:
        for c in commits:
            log(f"{c['commit'][:10]} {c['subject'][:60]}")
            results.append(judge(repo, c, args, Path(tmp), log))
    return {
        "repository": repo.resolve().name,
        "head": git(repo, "rev-parse", "HEAD").strip(),
        "parameters": {
            "since": args.since,
            "until": args.until,
            "max_lines": args.max_lines,
            "repeats": args.repeats,
            "allow_config": args.allow_config,
            "pytest": PYTEST_PIN,
            "detect_secrets": DETECT_SECRETS_PIN,
        },  # fmt: skip
        "commits": results,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--since", help="committer date, inclusive (YYYY-MM-DD or ISO time)")
    parser.add_argument("--until", help="committer date, inclusive (YYYY-MM-DD or ISO time)")
    parser.add_argument("--max-lines", type=int, default=DEFAULT_MAX_LINES)
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument("--allow-config", action="store_true")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        started = time.monotonic()
        data = mine(args.repo, args, log=lambda m: print(m, file=sys.stderr))
    except MineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, args.out)
    print(f"{args.out}: {len(data['commits'])} commits in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
