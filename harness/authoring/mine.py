"""Tasks from a repository's history: `wholeloop mine` and `wholeloop tasks from-commit`.

The rules (docs/tasks.md says the same for users; scripts/mine_reference.py is an independent
implementation the tests compare against):

1. Commits: reachable from HEAD, every parent followed, committer date in [--since, --until]
   (bare dates: 00:00:00 / 23:59:59 UTC), optionally only those touching --paths. Each is judged
   on its own against its first parent.
2. Each changed path (both sides of a rename) is, by the first rule that matches: protected (a
   test-runner or packaging file of the parser's ecosystem: pytest.ini, tox.ini, setup.cfg,
   pyproject.toml, setup.py, noxfile.py, MANIFEST.in... at any depth), test (the parser decides:
   test_*.py, *_test.py, conftest.py, anything under tests/ test/ testing/), docs (under docs/,
   doc/, .github/, any root dotfile or dot-folder, *.md *.rst *.txt, LICENSE*, CHANGES*, CHANGELOG*,
   HISTORY*, NEWS*, AUTHORS*; and packaging: a dependency lock file, uv.lock, poetry.lock,
   package-lock.json, Cargo.lock... at any depth, unless the parser protects it), else source.
   A lock file is never source: the environment is built at the base commit, so a gold patch
   bumping one would install nothing.
   A pyproject.toml change confined to what describes the project (classifiers, urls, description,
   ...) and to the tables of tools that only lint, format, type-check or release it (describes_only)
   is docs, not protected.
3. Skipped, first reason that applies: merge commit; root commit (no parent); docs or packaging
   only; no test change; no source change; changes protected file <first path> (unless
   --allow-config: then protected files join the gold patch and are exempt from protection for
   that task); diff too large (<N> changed lines > <max>) with N = added + deleted lines of the
   gold and test parts; no problem statement (the message is a bot's only: nothing is left once
   trailers and tool lines are cleaned away, harness.authoring.statements.clean_message).
4. A candidate: base = first parent; gold patch = its source part (+ protected files with
   --allow-config); hidden tests = its test part; docs dropped; task id = <repository folder
   name>-<first 10 hex digits>, so mining again later adds only new commits; created_at = the
   committer date.
5. Refused before anything runs when the secret scanner finds something (harness.authoring.secrets).
6. Hidden test command: the parser's command over the touched test modules that exist after the
   commit (`--test-scope all`: the whole suite); none: quarantined "no test file to run".
7. The environment is inferred at the base commit (harness.authoring.environment); then `tasks check
   --discover` decides FAIL_TO_PASS / PASS_TO_PASS, keeps the task or quarantines it.

Specs go to OUT/<task id>.yaml with OUT/<task id>/{gold,test}.diff; the verdict of every commit
to OUT/mine-report.json. Bad input (not a repository, unknown commit, no candidate in the range,
an unreadable issue export, an environment that cannot be inferred) raises MineError before
anything is written.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal, cast

from ..egress import Egress, endpoint_of
from ..egress import check as egress_check
from ..parsers import PARSERS, Parser, get_parser
from ..tasks.spec import SYSTEM_CA_BUNDLES, Environment, HiddenTests, Origin, Task, Timeouts, dump_task, load_task
from .check import (
    FAILING,
    NOT_CHECKED,
    NOT_CHECKED_PREFIX,
    CheckOptions,
    check_tasks,
    plan_checks,
    read_verdict,
    rewrite_spec,
    up_to_date,
)
from .ecosystems import UnsupportedRepository, complete, detect
from .environment import (
    CONFIG_NAME,
    EnvironmentNotInferred,
    EnvPlan,
    MineError,
    RepoConfig,
    ResolutionFailed,
    environment_builds,
    infer_environment,
    load_config,
    resolve,
    setup_commands,
)
from .gitrepo import CommitInfo, GitRepo, parse_date
from .lockfiles import PARSERS as LOCK_PARSERS
from .secrets import Finding, SecretScanner, redact
from .setup_agent import FEATURE as SETUP_FEATURE
from .statements import (
    FAILURE_CHARS,
    IDENTIFIER,
    BaseFailure,
    FixNames,
    added_api,
    change_kind,
    clean_issue,
    clean_message,
    fix_names,
    interface_additions,
    leaked_names,
    load_issues,
    model_statement,
    names_tests_use,
    referenced_issue,
    statement_prompt,
    with_additions,
)
from .statements import classify as classify_statement

if TYPE_CHECKING:
    from sandbox import Backend as SandboxBackend

DEFAULT_MAX_LINES = 800
MAX_LISTED_WARNINGS = 100  # secret-scan warnings listed per commit in the report (the total is given)
REPORT_NAME = "mine-report.json"
DOCS_DIRS = ("docs", "doc", ".github")
DOCS_SUFFIXES = (".md", ".rst", ".txt")
DOCS_PREFIXES = ("LICENSE", "CHANGES", "CHANGELOG", "HISTORY", "NEWS", "AUTHORS")
GOLD_NAME, TEST_NAME = "gold.diff", "test.diff"
# Dependency lock files of every ecosystem (packaging, dropped like docs), the pre-commit pins aside.
LOCK_FILES = frozenset(name for name in LOCK_PARSERS if not name.startswith("."))

LogFn = Callable[[str], None]


def classify(path: str, parser: Parser) -> str:
    """protected | test | docs | source (rule 2 of the module docstring)."""
    parts = PurePosixPath(path).parts
    name = parts[-1]
    if name in parser.config_files:
        return "protected"
    if parser.is_test_path(path):
        return "test"
    if parts[0] in DOCS_DIRS or parts[0].startswith("."):
        return "docs"
    if name.lower().endswith(DOCS_SUFFIXES) or name.upper().startswith(DOCS_PREFIXES):
        return "docs"
    if name in LOCK_FILES:
        return "docs"
    return "source"


#: pyproject.toml keys that describe the project and tools that only lint, format, type-check or
#: release it: a change confined to them changes nothing that installing or testing reads
DESCRIPTIVE_PROJECT_KEYS = frozenset(
    "classifiers urls description keywords authors maintainers readme license license-files".split()
)
NON_TEST_TOOLS = frozenset(
    "ruff black isort mypy pyright codespell towncrier bumpversion bumpver tbump pylint pydocstyle "
    "check-manifest cibuildwheel repo-review commitizen interrogate docformatter typos semantic_release "
    "pyproject-fmt zizmor djlint mdformat check-wheel-contents validate-pyproject pyroma".split()
)


def describes_only(path: str, old: bytes | None, new: bytes | None) -> bool:
    """A pyproject.toml change confined to DESCRIPTIVE_PROJECT_KEYS and NON_TEST_TOOLS' sections
    (both sides parse, and are equal without them): mining drops it like docs (rule 2)."""
    if PurePosixPath(path).name != "pyproject.toml" or old is None or new is None:
        return False
    try:
        before, after = (tomllib.loads(side.decode("utf-8")) for side in (old, new))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False

    def essential(data: dict) -> dict:
        project = {k: v for k, v in (data.get("project") or {}).items() if k not in DESCRIPTIVE_PROJECT_KEYS}
        tool = {k: v for k, v in (data.get("tool") or {}).items() if k not in NON_TEST_TOOLS}
        return {**data, "project": project, "tool": tool}

    return essential(before) == essential(after)


_CONVENTIONAL = re.compile(r"^\s*(\w+)(\([^)]*\))?!?:\s")
# The types conventional commits use (Angular's, and the common additions): any other word before
# the colon is a module, class or package (`SI: handle ...`, `color: add ...`), not a kind.
_CONVENTIONAL_TYPES = frozenset(
    "feat feature fix bugfix hotfix docs doc style refactor perf test tests build ci chore revert deps security".split()
)
_FIX_WORDS = re.compile(r"\b(fix(es|ed)?|bug|crash(es)?|error|regression|wrong|broken|incorrect|handle)\b", re.I)
_FEATURE_WORDS = re.compile(r"\b(add(s|ed)?|support|implement|new|allow|introduce)\b", re.I)


def commit_kind(subject: str) -> str:
    """What a commit looks like from its subject, to help pick (`mine --list`): the conventional-
    commit type when it has one (fix, feat, ...), else fix / feature / change by its words. A
    guess for the reader; no rule depends on it."""
    match = _CONVENTIONAL.match(subject)
    if match and match.group(1).lower() in _CONVENTIONAL_TYPES:
        return match.group(1).lower()
    if _FIX_WORDS.search(subject):
        return "fix"
    if _FEATURE_WORDS.search(subject):
        return "feature"
    return "change"


@dataclass
class MineOptions:
    since: str | None = None
    until: str | None = None
    paths: list[str] = field(default_factory=list)
    max_candidates: int | None = None  # the N most recent candidates
    max_lines: int = DEFAULT_MAX_LINES
    allow_config: bool = False
    parser: str | None = None  # default: wholeloop.yaml's, else pytest
    test_scope: Literal["touched", "all"] | None = None
    issues: Path | None = None
    statement_model: str | None = None
    statement_model_url: str | None = None
    setup_model: str | None = None  # --setup-model: the setup agent proposes wholeloop.yaml when inference fails
    setup_model_url: str | None = None
    redact: bool = False
    secrets_baseline: Path | None = None
    env_file: Path | None = None
    dependencies_as_of: str | None = None  # commit | latest | a date
    check: bool = True
    repeats: int = 3
    workers: int = 1
    progress: Callable[[str, str], None] | None = None  # (task id, text) during checks
    announce: Callable[[str], None] | None = None  # told what the check will do before it starts
    only: list[str] = field(default_factory=list)  # --only: these commits (prefixes) of the range
    strict_secrets: bool = False  # every secret-scan finding refuses, warnings included
    refresh_env: bool = False  # re-apply wholeloop.yaml to the specs mined before
    kind: Literal["fix", "feature", "all"] = "all"  # --kind: only fixes, only features
    egress_notice: Callable[[str], None] | None = None  # told what a model is about to be sent
    detail: Callable[[str], None] | None = None  # what is under way (build output): a progress line, not a log


@dataclass
class Candidate:
    commit: CommitInfo
    parent: str
    task_id: str
    gold_files: list[str]
    test_files: list[str]
    docs_files: list[str]
    protected_files: list[str]
    lines: int


@dataclass
class Judged:
    """One commit's fate."""

    commit: CommitInfo
    skipped: str | None = None
    refused: str | None = None
    findings: list[Finding] = field(default_factory=list)  # those that refuse (or were redacted)
    warnings: list[Finding] = field(default_factory=list)  # listed, refusing nothing
    skip_key: str | None = None  # the skip reason without this commit's particulars (the table's counts)
    candidate: Candidate | None = None
    quarantined: str | None = None
    detail: str = ""
    kept: bool = False
    already: bool = False  # mined before: its spec was there
    refreshed: bool = False  # mined before, its environment re-applied from wholeloop.yaml (--refresh-env)
    task: Task | None = None
    dropped_flaky: dict[str, str] = field(default_factory=dict)

    def reason(self) -> str:
        """What became of the commit, without its particulars: the key the table counts by."""
        if self.kept:
            return "kept"
        if self.skipped:
            return f"skipped: {self.skip_key or self.skipped}"
        if self.refused:
            return "refused: secret found"
        if self.task is not None and (self.quarantined or self.task.quarantined or "").startswith(NOT_CHECKED_PREFIX):
            return "not checked yet"
        if self.task is not None:
            return f"quarantined: {_reason_key(self.quarantined or self.task.quarantined or '')}"
        return "?"

    def record(self) -> dict:
        out: dict = {"commit": self.commit.sha, "committed_at": self.commit.date_iso, "subject": self.commit.subject}
        if self.warnings:
            out["secret_warnings"] = [f.record() for f in self.warnings[:MAX_LISTED_WARNINGS]]
            if len(self.warnings) > MAX_LISTED_WARNINGS:
                out["secret_warnings_total"] = len(self.warnings)
        if self.skipped:
            out["skipped"] = self.skipped
        elif self.refused:
            out["refused"] = self.refused
            out["findings"] = [{"file": f.file, "line": f.line, "rule": f.rule} for f in self.findings]
        elif self.task is not None:
            cand = cast(Candidate, self.candidate)  # a task is only ever made of a candidate
            out["spec"] = f"{self.task.id}.yaml"
            if self.already:
                out["already_mined"] = True
            if self.refreshed:
                out["environment_refreshed"] = True
            if self.kept:
                out["kept"] = {
                    "task_id": self.task.id,
                    "base": self.task.base_commit,
                    "created_at": self.task.created_at,
                    "gold_files": cand.gold_files,
                    "docs_files": cand.docs_files,
                    "test_files": cand.test_files,
                    "test_command": self.task.hidden_tests.command,
                    "FAIL_TO_PASS": sorted(self.task.fail_to_pass),
                    "PASS_TO_PASS": sorted(self.task.pass_to_pass),
                    "dropped_flaky": self.dropped_flaky,
                }
            else:
                out.update(
                    quarantined=self.quarantined or "",
                    detail=self.detail,
                    task_id=self.task.id,
                    dropped_flaky=self.dropped_flaky,
                )
            if self.findings:
                out["findings"] = [f.record() for f in self.findings]
        return out


def judge(repo: GitRepo, commit: CommitInfo, parser: Parser, options: MineOptions) -> Judged:
    """Rules 1-4: skipped with its reason, or a candidate."""
    out = Judged(commit)
    if len(commit.parents) > 1:
        out.skipped = "merge commit"
        return out
    if not commit.parents:
        out.skipped = "root commit (no parent)"
        return out
    parent = commit.parents[0]
    kinds: dict[str, list[str]] = {"protected": [], "test": [], "docs": [], "source": []}
    lines: dict[str, int] = {}
    for changed in repo.changed(parent, commit.sha):
        kind = classify(changed.path, parser)
        if kind == "protected" and describes_only(
            changed.path, repo.read(parent, changed.path), repo.read(commit.sha, changed.path)
        ):
            kind = "docs"
        kinds[kind].append(changed.path)
        lines[changed.path] = changed.lines
    for paths in kinds.values():
        paths.sort()
    if not kinds["test"] and not kinds["source"]:
        out.skipped = "docs or packaging only"
    elif not kinds["test"]:
        out.skipped = "no test change"
    elif not kinds["source"]:
        out.skipped = "no source change"
    elif kinds["protected"] and not options.allow_config:
        out.skipped = f"changes protected file {kinds['protected'][0]}"
        out.skip_key = "changes a protected file (--allow-config takes it)"
    if out.skipped:
        return out
    gold = sorted(kinds["source"] + (kinds["protected"] if options.allow_config else []))
    n = sum(lines[p] for p in gold + kinds["test"])
    if n > options.max_lines:
        out.skipped = f"diff too large ({n} changed lines > {options.max_lines})"
        out.skip_key = f"diff too large (> {options.max_lines} changed lines: --max-lines)"
        return out
    if not clean_message(repo.message(commit.sha)).text.strip():  # e.g. pre-commit.ci's autofix
        out.skipped = "no problem statement (the message is a bot's only)"
        return out
    out.candidate = Candidate(
        commit,
        parent,
        f"{repo.name}-{commit.sha[:10]}",
        gold,
        kinds["test"],
        kinds["docs"],
        kinds["protected"] if options.allow_config else [],
        n,
    )
    return out


# ----------------------------------------------------------------------------- the pipeline


@dataclass
class MineReport:
    repository: str
    head: str
    out: Path
    judged: list[Judged]
    parameters: dict
    checked: list = field(default_factory=list)  # CheckResults
    images_built: list[str] = field(default_factory=list)
    environments: dict[str, dict[str, int]] = field(default_factory=dict)  # environment_builds of the check

    def counts(self) -> Counter:
        c: Counter = Counter()
        for j in self.judged:
            c[
                "kept"
                if j.kept
                else "skipped"
                if j.skipped
                else "refused"
                if j.refused
                else "unchecked"
                if j.task is not None and j.quarantined == NOT_CHECKED
                else "quarantined"
                if j.task is not None
                else "other"
            ] += 1
        return c

    def record(self) -> dict:
        return {
            "repository": self.repository,
            "head": self.head,
            "parameters": self.parameters,
            "commits": [j.record() for j in self.judged],
            **({"environments": self.environments} if self.environments else {}),
        }


def _location(repo: GitRepo, out: Path) -> str:
    """The repository as a spec in `out` names it: relative when on the same root, else absolute."""
    path = Path(repo.source).expanduser()
    if not path.exists():
        return repo.source  # a URL
    path, out = path.resolve(), out.resolve()
    if os.path.commonpath([path, out]) == path.anchor:
        return str(path)
    return os.path.relpath(path, out)


def _statement(
    repo: GitRepo, cand: Candidate, issues: dict, options: MineOptions, gold_patch: str, test_patch: str
) -> tuple[str, dict]:
    """The statement (cleaned) and the origin fields saying what it came from and its class."""
    message = repo.message(cand.commit.sha)
    origin: dict = {"statement": "commit_message"}
    ref = referenced_issue(message)
    if ref and ref in issues:
        origin.update(statement="issue", issue=ref)
        cleaned = clean_issue(issues[ref].statement())
    else:
        cleaned = clean_message(message)
    statement = cleaned.text
    change = _change(repo, cand, gold_patch, test_patch)
    names = fix_names(gold_patch, change.base_texts)
    if options.statement_model:  # written later, from the hidden tests' failure at base (_model_statement)
        replaced = leaked_names(statement, names, change.tests)
        origin["statement_replaced_quality"] = classify_statement(statement, origin["statement"], replaced)
        origin["_pending"] = _Pending(statement if origin["statement"] == "issue" else None, ref, names, change)
    leaked = leaked_names(statement, names, change.tests)
    # the class is the statement's as written; the interface appended after is recorded apart
    additions = interface_additions(statement, change.api, change.tests) if change.kind == "feature" else []
    origin.update(
        statement_quality=classify_statement(statement, origin["statement"], leaked),
        statement_leaks=leaked,
        statement_removed=cleaned.removed,
        change=change.kind,
        statement_additions=additions,
    )
    return with_additions(statement, additions), origin


def _proposed_config(repo: GitRepo, out: Path, parser: str, options: MineOptions, log: LogFn) -> RepoConfig:
    """--setup-model: inference failed for every candidate; the setup agent proposes a wholeloop.yaml
    (tried at HEAD) and mining uses it. It is written where mining looks for one, beside the
    repository as `<name>.wholeloop.yaml` (beside OUT for a URL; never in OUT, whose every .yaml is a
    spec), so mining it again finds it. One proposed before (beside OUT) is used as it is."""
    local = Path(repo.source).expanduser()
    path = (local.parent if local.is_dir() else out.parent) / f"{repo.name}.{CONFIG_NAME}"
    if path.exists():
        log(f"inference failed; using {path}, proposed before (--setup-model asks nothing)")
        return load_config(path, repo)
    from .setup_agent import propose

    log(f"inference failed for every candidate; {options.setup_model} proposes {path}")
    made = propose(
        repo,
        "HEAD",
        cast(str, options.setup_model),
        path,
        base_url=options.setup_model_url,
        parser=parser,
        notice=options.egress_notice,
        progress=options.detail,
    )
    log(f"{path}: written by {options.setup_model} in {len(made.attempts)} round(s); read it before committing it")
    return load_config(path, repo)


@dataclass
class _Pending:
    """What `--statement-model` needs once the spec exists: the linked issue's text (sent), and
    the names and interface of the change (used here to classify what the model writes, never sent)."""

    issue: str | None
    ref: str | None
    names: FixNames
    change: Change


def _model_statement(task: Task, pending: _Pending, options: MineOptions) -> str | None:
    """`--statement-model`: run the hidden tests once at base, send their failure (and the linked
    issue) to the model, and rewrite the spec's statement and origin. Never the gold patch nor the
    commit message. Returns why it could not (the spec keeps its statement), None when done."""
    model = cast(str, options.statement_model)  # (only called with one)
    try:
        failure = failure_at_base(task)
    except Exception as exc:  # the image, the engine, the test patch: the check will say it too
        return f"the hidden tests could not run at base: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    prompt = statement_prompt(failure, pending.issue)
    sending = Egress("--statement-model", model, endpoint_of(model, options.statement_model_url))
    sending.add(f"the hidden tests' output at base ({len(failure.failing)} failing test(s))", failure.output)
    if pending.issue:
        sending.add(f"issue {pending.ref}", pending.issue)
    if options.egress_notice:
        options.egress_notice(sending.announce())  # said before it is sent
    written = model_statement(model, prompt, base_url=options.statement_model_url)
    change = pending.change
    leaked = leaked_names(written, pending.names, change.tests)
    additions = interface_additions(written, change.api, change.tests) if change.kind == "feature" else []
    origin = cast(Origin, task.origin)  # mined: always has one
    updated = origin.model_copy(
        update={
            "statement": "model",
            "statement_model": model,
            "statement_prompt": prompt,
            "statement_quality": classify_statement(written, "model", leaked),
            "statement_leaks": leaked,
            "statement_additions": additions,
            "egress": [*origin.egress, sending.record()],
        }
    )
    rewrite_spec(
        cast(Path, task.spec_path),
        {
            "problem_statement": with_additions(written, additions),
            "origin": updated.model_dump(mode="json", exclude_defaults=True),
        },
    )
    return None


def failure_at_base(task: Task, backend: SandboxBackend | None = None) -> BaseFailure:
    """The hidden tests run once at the base commit, as the check's base phase runs them (the task
    image, network off; `backend` by default `harness.sandboxes.default_backend()`): the tests that
    fail and the end of the output. Raises SandboxError and TestPatchError."""
    from sandbox import Limits

    from ..grading import prepare_hidden_tests, run_hidden_tests
    from ..run.images import build_task_images
    from ..sandboxes import default_backend

    backend = backend or default_backend()
    images = build_task_images(task, backend=backend)
    limits = task.limits.apply(Limits()).with_(network=False)
    with backend.start(images.task.tag, limits=limits, role="check", run_id=f"statement-{os.getpid()}") as sb:
        run = run_hidden_tests(sb, task, prepare_hidden_tests(sb, task, facts_dir=backend.facts_dir))
    failing = sorted(t for t, status in (run.report.statuses if run.report else {}).items() if status in FAILING)
    return BaseFailure(failing, run.output[-FAILURE_CHARS:])


@dataclass
class Change:
    kind: str  # fix | feature
    api: dict[str, str]  # public definitions the gold adds -> signature
    tests: set[str]  # names the hidden tests use
    base_texts: dict[str, str]  # gold files at base


def _change(repo: GitRepo, cand: Candidate, gold_patch: str, test_patch: str) -> Change:
    """Fix or feature (statements.change_kind), from the subject and the public API the gold adds."""
    base_texts: dict[str, str] = {}
    after_texts: dict[str, str] = {}
    for path in cand.gold_files:
        for sha, texts in ((cand.parent, base_texts), (cand.commit.sha, after_texts)):
            blob = repo.read(sha, path)
            if blob is not None:
                texts[path] = blob.decode("utf-8", "replace")
    api = added_api(gold_patch, base_texts, after_texts)
    tests = names_tests_use(test_patch)
    for path in cand.test_files:  # the whole test files: a name they use anywhere is interface
        blob = repo.read(cand.commit.sha, path)
        if blob is not None:
            tests |= set(IDENTIFIER.findall(blob.decode("utf-8", "replace")))
    return Change(change_kind(commit_kind(cand.commit.subject), api, tests), api, tests, base_texts)


def ca_bundle() -> str | None:
    for candidate in (os.environ.get("WHOLELOOP_CA_BUNDLE"), os.environ.get("SSL_CERT_FILE"), *SYSTEM_CA_BUNDLES):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def _write(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data.encode() if isinstance(data, str) else data)
    os.replace(tmp, path)


def select(repo: GitRepo, parser: Parser, options: MineOptions, commits: list[str] | None) -> tuple[list[Judged], str]:
    """The commits in range (or `commits`), each judged (rules 1-4); `--only` and `--max` applied.
    Raises MineError when nothing is in range, or an `--only` commit is not in it."""
    since = parse_date(options.since) if options.since else None
    until = parse_date(options.until, end_of_day=True) if options.until else None
    if commits is not None:
        walk = [repo.commit(c) for c in commits]
        walk = sorted({c.sha: c for c in walk}.values(), key=lambda c: (c.committed_at, c.sha))
    else:
        walk = repo.commits(since, until, options.paths or None)
    where = "the given commits" if commits is not None else _range_text(options)
    if not walk:
        raise MineError(f"{repo.source}: no commits in {where}")
    judged = [judge(repo, c, parser, options) for c in walk]
    if options.only:
        picked = set()
        for wanted in options.only:
            sha = repo.commit(wanted).sha  # MineError naming it when it is no commit at all
            if not any(j.commit.sha == sha for j in judged):
                raise MineError(f"--only {wanted}: commit {sha[:10]} is not in {where}")
            picked.add(sha)
        for j in judged:
            if j.candidate and j.commit.sha not in picked:
                j.skipped, j.skip_key, j.candidate = "not picked (--only)", "not picked (--only)", None
    if options.kind != "all":
        for j in judged:
            cand = j.candidate
            if cand is None:
                continue
            gold = repo.diff(cand.parent, cand.commit.sha, cand.gold_files).decode("utf-8", "replace")
            tests = repo.diff(cand.parent, cand.commit.sha, cand.test_files).decode("utf-8", "replace")
            kind = _change(repo, cand, gold, tests).kind
            if kind != options.kind:
                j.skipped, j.skip_key, j.candidate = f"a {kind} (--kind {options.kind})", f"not a {options.kind}", None
    candidates = [j for j in judged if j.candidate]
    if options.max_candidates is not None and len(candidates) > options.max_candidates:
        for j in candidates[: len(candidates) - options.max_candidates]:
            j.skipped, j.candidate = (
                f"not mined: beyond --max {options.max_candidates} (the most recent are kept)",
                None,
            )
            j.skip_key = f"beyond --max {options.max_candidates}"
    if not any(j.candidate for j in judged):
        reasons = Counter(j.skip_key or j.skipped for j in judged)
        listed = "; ".join(f"{n} {r}" for r, n in reasons.most_common())
        raise MineError(f"{repo.source}: no candidate commit in {where} ({len(judged)} commit(s): {listed})")
    return judged, where


def _open(source: str | Path, options: MineOptions) -> tuple[GitRepo, RepoConfig, Parser]:
    repo = GitRepo.open(source)
    found = load_config(options.env_file, repo)  # --env-file, or one in or beside the repository
    parser_name = options.parser or found.parser
    if parser_name is None:  # from the repository's files (go.mod, Cargo.toml, package.json, ...)
        try:
            parser_name = detect(repo, repo.resolve("HEAD")).parser
        except UnsupportedRepository:
            if found.found_at:
                parser_name = "pytest"  # a wholeloop.yaml that says how to build, not which parser
            else:
                raise
    if parser_name not in PARSERS:
        raise MineError(f"unknown parser {parser_name!r}; known: {', '.join(PARSERS.names())}")
    return repo, found, get_parser(parser_name)


def list_candidates(source: str | Path, options: MineOptions, *, commits: list[str] | None = None) -> MineReport:
    """`mine --list`: the commits judged (candidates with their files and size), nothing built,
    scanned or written. Raises MineError as `mine` does."""
    repo, _found, parser = _open(source, options)
    judged, _ = select(repo, parser, options, commits)
    report = MineReport(repo.name, repo.resolve("HEAD"), Path(), judged, _parameters(options, parser.name))
    return report


def candidate_statements(source: str | Path, options: MineOptions) -> list[tuple[Judged, str, dict]]:
    """Each candidate of the range with the statement mining would give it and its origin fields
    (class included): nothing built, scanned or written (scripts/statement_classes.py). Raises
    MineError as `mine` does. A `--statement-model` is not asked: the statements are the repository's."""
    repo, _found, parser = _open(source, options)
    issues = load_issues(options.issues) if options.issues else {}
    judged, _ = select(repo, parser, options, None)
    plain = replace(options, statement_model=None)
    out = []
    for j in judged:
        if j.candidate is None:
            continue
        cand = j.candidate
        gold = repo.diff(cand.parent, cand.commit.sha, cand.gold_files).decode("utf-8", "replace")
        tests = repo.diff(cand.parent, cand.commit.sha, cand.test_files).decode("utf-8", "replace")
        statement, origin = _statement(repo, cand, issues, plain, gold, tests)
        out.append((j, statement, origin))
    return out


def mine(
    source: str | Path, out: Path, options: MineOptions, *, commits: list[str] | None = None, log: LogFn | None = None
) -> MineReport:
    """Mine `source` (or only `commits`, for `tasks from-commit`) into specs under `out`. Raises
    MineError for bad input before anything is written."""
    log = log or (lambda _: None)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise MineError(f"{out}: exists and is not a folder; pass a folder for the task specs")
    repo, found, parser = _open(source, options)
    if options.statement_model:  # refused before anything is sent, built or written
        egress_check(
            "--statement-model",
            options.statement_model,
            suite_setting=found.egress,
            suite_source=found.found_at or "wholeloop.yaml",
        )
    if options.setup_model:
        egress_check(
            SETUP_FEATURE,
            options.setup_model,
            suite_setting=found.egress,
            suite_source=found.found_at or "wholeloop.yaml",
        )
    config = found if found.found_at else None  # else each base commit's own (committed), if any
    issues = load_issues(options.issues) if options.issues else {}
    judged, _where = select(repo, parser, options, commits)
    candidates = [j for j in judged if j.candidate]
    scanner = SecretScanner(_baseline(repo, options, found), strict=options.strict_secrets)
    new: list[tuple[Judged, str, bytes, bytes, dict]] = []
    refresh: list[Judged] = []
    for j in candidates:
        cand = cast(Candidate, j.candidate)  # candidates: those with one
        spec_path = out / f"{cand.task_id}.yaml"
        if spec_path.exists():
            existing = load_task(spec_path)
            # mined before; mined again only when mining itself quarantined it before any check
            # (no test file, no environment): the rules or wholeloop.yaml may say otherwise now
            if not (
                existing.quarantined
                and read_verdict(spec_path) is None
                and not existing.quarantined.startswith(NOT_CHECKED_PREFIX)
            ):
                j.task, j.already = existing, True
                if options.refresh_env:
                    refresh.append(j)
                continue
        gold_patch = repo.diff(cand.parent, cand.commit.sha, cand.gold_files)
        test_patch = repo.diff(cand.parent, cand.commit.sha, cand.test_files)
        statement, origin = _statement(
            repo, cand, issues, options, gold_patch.decode("utf-8", "replace"), test_patch.decode("utf-8", "replace")
        )
        keep = tuple(config.env_files) if config else ()
        findings = scanner.scan_commit(repo, cand.parent, cand.commit.sha, statement, cand.gold_files, cand.test_files)
        findings += scanner.scan_tree(repo, cand.parent, keep)
        j.findings, j.warnings = scanner.refusing(findings), scanner.warnings(findings)
        if j.findings:
            blocking = [f for f in j.findings if not options.redact or f.where == "snapshot"]
            if blocking:
                j.refused = f"secret found: {blocking[0].label()}"
                if options.redact:
                    j.refused += " (in the repository at the base commit: cannot be redacted)"
                continue
            statement = redact(statement, j.findings)
            gold_patch = _redact_added(gold_patch, j.findings)
            test_patch = _redact_added(test_patch, j.findings)
        new.append((j, statement, gold_patch, test_patch, origin))
    # environments: inferred per base commit, resolved once per distinct input
    plans: dict[str, EnvPlan | MineError] = {}
    configs: dict[str, RepoConfig] = {}

    def infer_all(config: RepoConfig | None) -> None:
        for j in [n[0] for n in new] + refresh:
            cand = cast(Candidate, j.candidate)  # new and refreshed: candidates
            cfg = config or load_config(None, repo, cand.parent)
            configs[cand.task_id] = cfg
            try:
                cfg, detected = complete(cfg, repo, cand.parent, parser.name)  # Go, Rust, JavaScript
                configs[cand.task_id] = cfg
                plan = infer_environment(
                    repo,
                    cand.parent,
                    cand.commit.committed_at,
                    cfg,
                    runner=parser.name,
                    as_of=options.dependencies_as_of,
                )
                if detected:
                    plan.sources.insert(0, detected)
                plans[cand.task_id] = plan
            except EnvironmentNotInferred as exc:
                plans[cand.task_id] = exc

    infer_all(config)
    if (
        options.setup_model
        and config is None
        and new
        and all(isinstance(plans[cast(Candidate, n[0].candidate).task_id], EnvironmentNotInferred) for n in new)
    ):
        config = _proposed_config(repo, out, parser.name, options, log)
        infer_all(config)
    if new and all(isinstance(plans[cast(Candidate, n[0].candidate).task_id], MineError) for n in new):
        first = plans[cast(Candidate, new[0][0].candidate).task_id]
        assert isinstance(first, MineError)  # (all of them are)
        raise first  # its own kind (ToolchainMissing, ...), with its own hint
    ok_plans = [p for p in plans.values() if isinstance(p, EnvPlan)]
    distinct = len({p.resolution_key() for p in ok_plans if p.setup is None})
    if distinct:
        log(f"resolving {distinct} distinct environment(s) for {len(ok_plans)} candidate(s)")
    pins = resolve(ok_plans, ca_bundle=ca_bundle(), log=options.detail) if ok_plans else {}
    # write the specs (nothing was written before this point)
    pending: dict[str, _Pending] = {}
    for j, statement, gold_patch, test_patch, origin in new:
        cand = cast(Candidate, j.candidate)  # new: candidates
        if "_pending" in origin:
            pending[cand.task_id] = origin.pop("_pending")
        made = _environment(repo, cand, plans[cand.task_id], configs[cand.task_id], pins, parser, options)
        reason, detail = made.reason, made.detail
        task = Task(
            id=cand.task_id,
            quarantined=reason if not detail else f"{reason} ({detail.splitlines()[0][:200]})",
            repo=_location(repo, out),
            base_commit=cand.parent,
            problem_statement=statement if statement.strip() else cand.commit.subject or cand.commit.sha,
            environment=made.environment,
            test_command=made.visible_command,
            hidden_tests=HiddenTests(
                command=made.command, patch_file=f"{cand.task_id}/{TEST_NAME}", parser=parser.name
            ),
            fail_to_pass=[],
            pass_to_pass=[],
            gold_patch_file=f"{cand.task_id}/{GOLD_NAME}",
            timeouts=made.timeouts,
            checks=configs[cand.task_id].checks,  # the repository's own checks, when wholeloop.yaml names them
            allowed_paths=list(cand.protected_files),
            created_at=cand.commit.date_iso,
            origin=Origin(
                kind="commit",
                repository=str(repo.source),
                commit=cand.commit.sha,
                subject=cand.commit.subject,
                environment_from=made.sources,
                dependencies_as_of=made.as_of,
                **origin,
            ),
            metadata={
                "gold_files": cand.gold_files,
                "test_files": cand.test_files,
                "docs_files": cand.docs_files,
                "changed_lines": cand.lines,
                **({"secrets_redacted": [f.record() for f in j.findings]} if j.findings else {}),
            },
        )
        _write(out / cand.task_id / GOLD_NAME, gold_patch)
        _write(out / cand.task_id / TEST_NAME, test_patch)
        _write(out / f"{cand.task_id}.yaml", dump_task(task))  # last: a task exists once its spec does
        j.task = load_task(out / f"{cand.task_id}.yaml")
        if reason != NOT_CHECKED:
            j.quarantined, j.detail = reason, detail
    for j in refresh:
        _refresh(j, repo, plans, configs, pins, parser, options)
    for (
        j
    ) in judged:  # --statement-model: from the failure at base, before the check (the statement is in the spec's hash)
        if j.task is None or j.task.id not in pending or j.task.quarantined != NOT_CHECKED:
            continue
        why_not = _model_statement(j.task, pending[j.task.id], options)
        if why_not:
            log(f"{j.task.id}: --statement-model not asked: {why_not}; the statement stays the commit's")
        j.task = load_task(cast(Path, j.task.spec_path))
    report = MineReport(
        repo.name,
        repo.resolve("HEAD") if commits is None else judged[-1].commit.sha,
        out,
        judged,
        _parameters(options, parser.name),
    )
    # check: new specs, and earlier ones that have no current verdict
    to_check = [
        j
        for j in judged
        if j.task is not None and j.task.quarantined in (None, NOT_CHECKED) and not (j.already and up_to_date(j.task))
    ]
    if options.check and to_check:
        tasks = [j.task for j in to_check if j.task is not None]  # (all of them)
        check_findings = {
            t.id: [f.record() for f in j.findings + j.warnings[:MAX_LISTED_WARNINGS]]
            for j, t in zip(to_check, tasks)
            if j.findings or j.warnings
        }
        check_options = CheckOptions(
            repeats=options.repeats,
            discover=True,
            workers=options.workers,
            progress=options.progress,
            findings=check_findings,
        )
        if options.announce:
            options.announce(plan_checks(tasks, check_options).describe(options.repeats))
        results = check_tasks(tasks, check_options)
        report.checked = results
        for j, result in zip(to_check, results):
            j.task = result.task
            report.images_built += result.images_built
            if result.error:
                j.detail = f"not checked: {result.error}"
        report.environments = environment_builds(
            [(repo.name, r.verdict.image.get("env") if r.verdict else None, r.images_built) for r in results]
        )
    for j in judged:
        if j.task is None:
            continue
        verdict = read_verdict(j.task.spec_path) if j.task.spec_path else None  # (always: loaded from its spec)
        if verdict is not None and verdict.spec_hash == j.task.content_hash():
            j.kept, j.quarantined, j.detail = verdict.passed, verdict.quarantined, verdict.detail
            j.dropped_flaky = verdict.dropped_flaky
        elif j.task.quarantined and j.quarantined is None:
            j.quarantined = j.task.quarantined
    _write(out / REPORT_NAME, json.dumps(report.record(), indent=1, sort_keys=True) + "\n")
    return report


@dataclass
class _Made:
    """What a candidate's spec takes from its environment plan and wholeloop.yaml."""

    environment: Environment
    command: str  # the hidden test command
    visible_command: str
    timeouts: Timeouts
    sources: list[str]  # origin.environment_from
    as_of: str | None
    reason: str = NOT_CHECKED
    detail: str = ""


def _environment(
    repo: GitRepo,
    cand: Candidate,
    plan: EnvPlan | MineError,
    cfg: RepoConfig,
    pins: dict,
    parser: Parser,
    options: MineOptions,
) -> _Made:
    reason, detail = NOT_CHECKED, ""
    if isinstance(plan, MineError):
        reason, detail = "environment cannot be inferred", str(plan)
        environment = Environment()
    else:
        resolved = pins.get(plan.resolution_key()) if plan.setup is None else None
        if isinstance(resolved, ResolutionFailed):
            reason, detail = "environment build failed", str(resolved)
            resolved = None
        environment = Environment(
            image=plan.image,
            dockerfile=plan.dockerfile,
            setup=setup_commands(plan, resolved),
            install=plan.install,
            dependency_files=list(cfg.dependency_files or []),
            env=plan.env,
            env_files=list(cfg.env_files),
        )
    scope = options.test_scope or cfg.test_scope or "touched"
    runnable = sorted(p for p in cand.test_files if parser.is_test_module(p) and repo.exists(cand.commit.sha, p))
    if not runnable and scope == "touched" and reason == NOT_CHECKED:
        reason = "no test file to run"
    files = runnable if scope == "touched" else None
    if cfg.test_command:
        command = cfg.test_command.replace("{files}", " ".join(shlex.quote(f) for f in files or [])).strip()
    else:
        command = parser.test_command(files)
    sources = [] if isinstance(plan, MineError) else list(plan.sources)
    if cfg.found_at and cfg.found_at not in sources:
        sources.insert(0, cfg.found_at)  # the wholeloop.yaml used, first
    return _Made(
        environment=environment,
        command=command,
        visible_command=cfg.visible_test_command or parser.test_command(None),
        timeouts=Timeouts(tests_s=cfg.tests_timeout_s) if cfg.tests_timeout_s else Timeouts(),
        sources=sources,
        as_of=None if isinstance(plan, MineError) else plan.as_of,
        reason=reason,
        detail=detail,
    )


def _refresh(
    j: Judged,
    repo: GitRepo,
    plans: dict[str, EnvPlan | MineError],
    configs: dict[str, RepoConfig],
    pins: dict,
    parser: Parser,
    options: MineOptions,
) -> None:
    """--refresh-env: rewrite what a spec mined before takes from wholeloop.yaml (environment, test
    commands, timeout, origin.environment_from) when the file now says otherwise; the spec then
    needs a new check (its content hash changed)."""
    task, cand = cast(Task, j.task), cast(Candidate, j.candidate)
    made = _environment(repo, cand, plans[cand.task_id], configs[cand.task_id], pins, parser, options)
    origin = (
        task.origin.model_copy(update={"environment_from": made.sources, "dependencies_as_of": made.as_of})
        if task.origin
        else None
    )
    changes: dict[str, object] = {
        "environment": made.environment.model_dump(mode="json", exclude_defaults=True),
        "test_command": made.visible_command,
        "hidden_tests": task.hidden_tests.model_copy(update={"command": made.command}).model_dump(
            mode="json", exclude_defaults=True
        ),
        "timeouts": made.timeouts.model_dump(mode="json", exclude_defaults=True) or None,
        "origin": origin.model_dump(mode="json", exclude_defaults=True) if origin else None,
    }
    current = task.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    if all(current.get(key) == value for key, value in changes.items()):
        return
    quarantined = made.reason if not made.detail else f"{made.reason} ({made.detail.splitlines()[0][:200]})"
    changes["quarantined"] = quarantined  # not checked yet, or why the new environment cannot be had
    rewrite_spec(cast(Path, task.spec_path), changes)
    j.task, j.refreshed = load_task(cast(Path, task.spec_path)), True
    if made.reason != NOT_CHECKED:
        j.quarantined, j.detail = made.reason, made.detail


def _reason_key(reason: str) -> str:
    """A quarantine reason without the test ids or paths it names (the table counts by it)."""
    head, sep, rest = reason.partition(": ")
    if sep and ("::" in rest or "/" in rest or "," in rest):
        return head
    return reason.split(" (", 1)[0] if len(reason) > 90 else reason


def _redact_added(patch: bytes, findings: list[Finding]) -> bytes:
    text = patch.decode("utf-8", "surrogateescape")
    lines = [
        redact(line, findings) if line.startswith("+") and not line.startswith("+++") else line
        for line in text.splitlines(keepends=True)
    ]
    return "".join(lines).encode("utf-8", "surrogateescape")


def _baseline(repo: GitRepo, options: MineOptions, config: RepoConfig) -> Path | None:
    """--secrets-baseline, else wholeloop.yaml's secrets_baseline (relative to that file), else the
    repository's own .secrets.baseline (in its folder)."""
    if options.secrets_baseline:
        return Path(options.secrets_baseline)
    if config.secrets_baseline and config.found_at and Path(config.found_at).is_file():
        return Path(config.found_at).parent / config.secrets_baseline
    local = Path(repo.source).expanduser()
    candidate = local / ".secrets.baseline"
    return candidate if local.is_dir() and candidate.is_file() else None


def _range_text(options: MineOptions) -> str:
    parts = []
    if options.since:
        parts.append(f"since {options.since}")
    if options.until:
        parts.append(f"until {options.until}")
    if options.paths:
        parts.append(f"touching {', '.join(options.paths)}")
    return "the range " + " ".join(parts) if parts else "the history of HEAD"


def _parameters(options: MineOptions, parser: str) -> dict:
    return {
        "since": options.since,
        "until": options.until,
        "paths": options.paths,
        "max": options.max_candidates,
        "max_lines": options.max_lines,
        "repeats": options.repeats,
        "allow_config": options.allow_config,
        "parser": parser,
        "test_scope": options.test_scope or "touched",
        "dependencies_as_of": options.dependencies_as_of or "commit",
        "checked": options.check,
        "mined_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
