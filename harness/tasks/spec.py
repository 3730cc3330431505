"""Task specs: what to evaluate, validated strictly, with errors that name the file and the field.

A task is one YAML file (`tasks/**/*.yaml`). Relative paths inside it (repository, patch files,
Dockerfile) are relative to the spec file, so a folder of specs can be moved as a whole.
"""

from __future__ import annotations

import hashlib
import json
import os
import unicodedata
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from sandbox import DEFAULT_BASE, EnvSpec, Limits, parse_size

from ..errors import UserError
from ..parsers import PARSERS, Parser, get_parsers, protected_union

SYSTEM_CA_BUNDLES = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"]


class TaskSpecError(UserError):
    """A task spec is malformed; the message names the file and each bad field."""

    hint = "Fix the spec, then check it with `wholeloop tasks validate PATH`."


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Environment(_Strict):
    image: str = Field(DEFAULT_BASE, description="base image, pulled when missing (see pull)")
    pull: Literal["if-missing", "always", "never"] = "if-missing"
    dockerfile: str | None = Field(None, description="Dockerfile (relative to the spec) instead of image")
    setup: list[str] = Field(default_factory=list, description="commands run once per environment, no repository")
    install: list[str] = Field(default_factory=list, description="commands run in the repository (pip install -e .)")
    dependency_files: list[str] = Field(
        default_factory=list,
        description="files of the repository install needs alone (package.json, a lock file): install then runs "
        "on them before the rest of the repository arrives, once for every task whose files are the same",
    )
    env: dict[str, str] = Field(default_factory=dict)
    trust_ca_bundle: bool | str = Field(
        True,
        description="true: trust the host's CA bundle ($WHOLELOOP_CA_BUNDLE, $SSL_CERT_FILE or the system one) "
        "during setup; a path: that bundle; false: the image's own trust store only",
    )
    network: bool = Field(True, description="network during setup and install (agents never have it)")
    python_venv: bool = True
    env_files: list[str] = Field(
        default_factory=list,
        description="globs of .env-like files (see ENV_LIKE_FILES) that may enter the image; by default none does",
    )


class HiddenTests(_Strict):
    command: str = Field(..., description="runs the hidden tests in the grading container")
    patch: str | None = Field(None, description="unified diff adding/changing test files")
    patch_file: str | None = None
    files: dict[str, str] = Field(default_factory=dict, description="path in the repository -> content")
    parser: str | list[str] = Field(
        "pytest",
        description="how results are read: a name in harness.parsers.PARSERS, or a list of names when "
        "the command runs several frameworks (their reports are joined, their protected paths too)",
    )
    plugins: list[str] = Field(
        default_factory=list,
        description="test-runner plugins to load besides those the environment had when its image was built "
        "(for pytest: names given to -p; entry points are never autoloaded in grading)",
    )

    @field_validator("parser")
    @classmethod
    def _known_parser(cls, value: str | list[str]) -> str | list[str]:
        names = [value] if isinstance(value, str) else value
        if not names:
            raise ValueError("name at least one parser")
        for name in names:
            if name not in PARSERS:
                raise ValueError(f"unknown parser {name!r}; known: {', '.join(PARSERS.names())}")
        if len(set(names)) != len(names):
            raise ValueError(f"a parser is named twice: {names}")
        return value

    @model_validator(mode="after")
    def _one_patch(self) -> HiddenTests:
        if self.patch and self.patch_file:
            raise ValueError("give either patch or patch_file, not both")
        return self

    @model_validator(mode="after")
    def _writes_the_results_files(self) -> HiddenTests:
        for parser in self.parsers():
            if parser.results_file and parser.results_file not in self.command:
                raise ValueError(
                    f"the {parser.name} parser reads its results from {parser.results_file}: the command "
                    "must write them there (name that path in it)"
                )
        return self

    def parser_names(self) -> list[str]:
        return [self.parser] if isinstance(self.parser, str) else list(self.parser)

    def parsers(self) -> list[Parser]:
        return get_parsers(self.parser_names())


class LimitsSpec(_Strict):
    cpus: float | None = Field(None, gt=0)
    memory: str | None = None
    disk: str | None = Field(None, description="bytes the container may write in all, e.g. 50m, 4g; 0: no limit")
    pids: int | None = Field(None, gt=0)
    output_bytes: int | None = Field(None, gt=0)
    command_timeout_s: float | None = Field(None, gt=0)

    @field_validator("disk")
    @classmethod
    def _a_size(cls, value: str | None) -> str | None:
        if value is not None:
            parse_size(value)  # raises ValueError with the reason
        return value

    def apply(self, base: Limits) -> Limits:
        return base.with_(**self.model_dump())


# a test running this long fails (docs/grading.md, "One test that hangs"): far above any test's own time
# on a loaded machine (dunamai's Mercurial test: 73 s at a load of 7; with 120 s, flaky at a load of 10-13)
DEFAULT_TEST_S = 300.0


class Timeouts(_Strict):
    agent_s: float = Field(1800, gt=0, description="wall time for the agent phase")
    tests_s: float = Field(900, gt=0, description="wall time for the hidden test command")
    test_s: float | None = Field(
        None,
        gt=0,
        description=f"wall time for one test (pytest: each of its setup, call and teardown), past which it "
        f"fails and the run goes on; unset: {DEFAULT_TEST_S:g}",
    )

    def per_test_s(self) -> float:
        """The per-test time limit grading applies (pytest's only: the JS runners have their own)."""
        return self.test_s if self.test_s is not None else DEFAULT_TEST_S


class Origin(_Strict):
    """Where a mined or imported task came from (absent for a task written by hand)."""

    kind: Literal["commit", "swebench"] = "commit"
    repository: str | None = Field(None, description="the repository as the miner was given it")
    commit: str | None = Field(None, description="the fix commit: gold patch and hidden tests come from it")
    subject: str | None = Field(None, description="the fix commit's subject line")
    statement: Literal["commit_message", "issue", "model", "swebench"] = Field(
        "commit_message", description="what the problem statement was made from"
    )
    issue: str | None = Field(None, description="the issue the statement came from, as the commit names it")
    statement_model: str | None = Field(None, description="the model that wrote the statement (statement: model)")
    statement_prompt: str | None = Field(None, description="the prompt it was given, in full")
    statement_quality: Literal["issue", "commit_message", "thin", "leaks_fix"] | None = Field(
        None, description="the statement's class (harness.authoring.statements.classify); none: not classified"
    )
    statement_replaced_quality: Literal["issue", "commit_message", "thin", "leaks_fix"] | None = Field(
        None, description="statement: model: the class of the statement the model replaced"
    )
    statement_leaks: list[str] = Field(
        default_factory=list, description="the names of the fix the statement gives away (statement_quality: leaks_fix)"
    )
    statement_removed: list[str] = Field(
        default_factory=list, description="what cleaning removed from the statement (trailers, tool lines, ...)"
    )
    change: Literal["fix", "feature"] | None = Field(
        None, description="fix, or feature: the gold adds public API its tests use (or the subject says feature)"
    )
    egress: list[dict] = Field(
        default_factory=list,
        description="what was sent to a model for this task: feature, model, endpoint, what, chars, sha256",
    )
    statement_additions: list[str] = Field(
        default_factory=list,
        description="signatures of the added public API the tests use that the statement did not name, appended to it",
    )
    environment_from: list[str] = Field(default_factory=list, description="files the environment was inferred from")
    dependencies_as_of: str | None = Field(
        None, description="dependencies resolved as of this date (uv --exclude-newer)"
    )


# origin fields added after specs were written: unset, they leave a task's content hash as it was
_LATER_ORIGIN = (
    "statement_replaced_quality",
    "statement_quality",
    "statement_leaks",
    "statement_removed",
    "change",
    "statement_additions",
    "egress",
)


def _parse_date(value: str) -> datetime:
    """An ISO 8601 date or time; a bare date is that day at 00:00 UTC, a naive time is UTC."""
    when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def test_id_problem(test_id: str) -> str:
    """Why a test id cannot be one ("" when it can): it is empty (or only spaces), or it holds a
    control character or a line or paragraph separator. A parser reads ids from lines of a test
    report, so an id with a newline, CR or NUL could match a line forged by the code under test."""
    if not test_id.strip():
        return "is empty"
    for ch in test_id:
        if unicodedata.category(ch) == "Cc":
            return f"holds the control character U+{ord(ch):04X}; a test id is one line of printable text"
        if ch in "\u2028\u2029":
            return f"holds the {unicodedata.name(ch).lower()} U+{ord(ch):04X}; a test id is one line of printable text"
    return ""


class Task(_Strict):
    id: str = Field(..., pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    quarantined: str | None = Field(
        None, description="why the task is not runnable (written by `wholeloop tasks check`); runs skip it"
    )
    repo: str = Field(..., description="local path (relative to the spec), git bundle, or git URL")
    base_commit: str
    problem_statement: str
    environment: Environment = Field(default_factory=Environment)
    test_command: str | None = Field(None, description="the visible test command the agent may run")
    hidden_tests: HiddenTests
    fail_to_pass: list[str] = Field(..., alias="FAIL_TO_PASS")
    pass_to_pass: list[str] = Field(default_factory=list, alias="PASS_TO_PASS")
    expected_xfail: list[str] = Field(
        default_factory=list,
        description="tests expected to xfail: only for these does XFAIL count as passed (filled by `wholeloop tasks check` from the gold patch's runs)",
    )
    gold_patch: str | None = None
    gold_patch_file: str | None = None
    limits: LimitsSpec = Field(default_factory=LimitsSpec)
    timeouts: Timeouts = Field(default_factory=Timeouts)
    protected_paths: list[str] | None = Field(
        None, description="globs an agent must not change; default: the test parser's (its tests and runner config)"
    )
    allowed_paths: list[str] = Field(
        default_factory=list, description="protected files this task's fix changes, exempt from protection for it"
    )
    checks: list[str] | None = Field(
        None,
        description="the repository's own checks run on resolved patches (`ruff`, `mypy==1.11.2`, ...; "
        "none: inferred from the base's config; []: none; docs/acceptance.md)",
    )
    created_at: str | None = Field(None, description="when the task's fix was made (ISO 8601): contamination dating")
    origin: Origin | None = Field(None, description="where a mined or imported task came from")
    metadata: dict[str, Any] = Field(default_factory=dict)

    _spec_path: Path | None = PrivateAttr(None)
    _repos_root: Path | None = PrivateAttr(None)  # where the suite's repositories are now (moved suite)

    @field_validator("problem_statement", "base_commit", "repo")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("fail_to_pass", "pass_to_pass", "expected_xfail")
    @classmethod
    def _clean_ids(cls, value: list[str]) -> list[str]:
        for test_id in value:
            problem = test_id_problem(test_id)
            if problem:
                raise ValueError(f"test id {test_id!r}: {problem}")
        # each test counts once: one id listed 50 times beside another would make a fix of one test
        # in two read 50/51 FAIL_TO_PASS (a hostile task's trick, held-out red team 5)
        return list(dict.fromkeys(value))

    @field_validator("fail_to_pass")
    @classmethod
    def _some_failing(cls, value: list[str], info: ValidationInfo) -> list[str]:
        if not value and not info.data.get("quarantined"):
            raise ValueError(
                "is empty: a runnable task needs at least one test its fix makes pass "
                "(`wholeloop tasks check --discover` finds them)"
            )
        return value

    @field_validator("created_at")
    @classmethod
    def _iso_date(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                _parse_date(value)
            except ValueError:
                raise ValueError(f"not an ISO 8601 date or time: {value!r}") from None
        return value

    @model_validator(mode="after")
    def _one_gold(self) -> Task:
        if self.gold_patch and self.gold_patch_file:
            raise ValueError("give either gold_patch or gold_patch_file, not both")
        return self

    def created(self) -> datetime | None:
        """`created_at` as an aware datetime (None when the task is undated)."""
        return _parse_date(self.created_at) if self.created_at else None

    # ---------------------------------------------------------------- paths and content

    @property
    def spec_path(self) -> Path | None:
        return self._spec_path

    def protected(self) -> list[str]:
        """The globs grading protects: the spec's own list, else the test parsers' defaults (the
        union of them all when the task names several; `allowed_paths` are exempt from them: see
        `harness.grading.patching.decide`)."""
        if self.protected_paths is not None:
            return list(self.protected_paths)
        return protected_union(self.hidden_tests.parsers())

    def resolve_path(self, value: str) -> Path:
        """A path named in the spec: relative ones are relative to the spec file."""
        path = Path(os.path.expanduser(value))
        if not path.is_absolute() and self._spec_path is not None:
            path = self._spec_path.parent / path
        return path

    def repo_source(self) -> str:
        """The repository as git can open it: an absolute local path, or the URL unchanged.

        With a repositories root (`--repos-root`, WHOLELOOP_REPOS_ROOT), a local repository is the
        entry of that folder with the same name: a suite moved without its clone is re-pointed
        without rewriting its specs (which would change their content hashes)."""
        if "://" in self.repo or self.repo.startswith("git@"):
            return self.repo
        if self._repos_root is not None:
            moved = self._repos_root / Path(self.repo).name
            if not moved.exists():
                raise TaskSpecError(
                    f"{self._spec_path}: repo {self.repo!r}: no {Path(self.repo).name} in the repositories "
                    f"root {self._repos_root}; give the folder that holds it"
                )
            return str(moved.resolve())
        return str(self.resolve_path(self.repo).resolve())

    def _read(self, inline: str | None, file: str | None, what: str) -> str:
        if inline is not None:
            return inline
        if file is None:
            return ""
        path = self.resolve_path(file)
        try:
            with open(path, newline="") as fh:  # keep CRLF: patches to CRLF files must stay exact
                return fh.read()
        except OSError as exc:
            raise TaskSpecError(f"{self._spec_path}: {what}: cannot read {path}: {exc.strerror}") from exc

    def gold(self) -> str:
        return self._read(self.gold_patch, self.gold_patch_file, "gold_patch_file")

    def test_patch(self) -> str:
        return self._read(self.hidden_tests.patch, self.hidden_tests.patch_file, "hidden_tests.patch_file")

    def env_spec(self) -> EnvSpec:
        env = self.environment
        return EnvSpec(
            image=env.image,
            pull=env.pull,
            dockerfile=str(self.resolve_path(env.dockerfile)) if env.dockerfile else None,
            setup=tuple(env.setup),
            env=tuple(sorted(env.env.items())),
            ca_bundle=self.ca_bundle(),
            network=env.network,
            python_venv=env.python_venv,
        )

    def ca_bundle(self) -> str | None:
        choice = self.environment.trust_ca_bundle
        if choice is False:
            return None
        if isinstance(choice, str):
            return str(self.resolve_path(choice))
        for candidate in (os.environ.get("WHOLELOOP_CA_BUNDLE"), os.environ.get("SSL_CERT_FILE"), *SYSTEM_CA_BUNDLES):
            if candidate and Path(candidate).is_file():
                return candidate
        return None

    def content_hash(self) -> str:
        """Changes whenever anything that affects the task's outcome changes."""
        data = self.model_dump(mode="json", by_alias=True)
        # fields added later leave the hash of a task that does not use them as it was
        for key, holder in (
            ("expected_xfail", data),
            ("plugins", data["hidden_tests"]),
            ("quarantined", data),
            ("allowed_paths", data),
            ("created_at", data),
            *((key, data["origin"]) for key in _LATER_ORIGIN if data.get("origin") is not None),
            ("origin", data),
            ("env_files", data["environment"]),
            ("dependency_files", data["environment"]),
        ):
            if not holder.get(key):
                holder.pop(key, None)
        if data.get("checks") is None:  # unset (inferred): the hash of a task written before the field
            data.pop("checks", None)
        if data["timeouts"].get("test_s") is None:  # unset: the hash of a task written before the field existed
            data["timeouts"].pop("test_s", None)
        if data["limits"].get("disk") is None:  # unset: the hash of a task written before the field existed
            data["limits"].pop("disk", None)
        data["protected_paths"] = self.protected()
        data["_gold"] = self.gold()
        data["_test_patch"] = self.test_patch()
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


# -------------------------------------------------------------------------- loading


def _format_errors(path: Path, exc: ValidationError) -> str:
    lines = [f"{path}: invalid task spec"]
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = "unknown key (not part of the task format)" if err["type"] == "extra_forbidden" else err["msg"]
        lines.append(f"  {where}: {msg}")
    return "\n".join(lines)


#: A moved suite's repositories, for every command that loads tasks (see Task.repo_source).
REPOS_ROOT_ENV = "WHOLELOOP_REPOS_ROOT"


def load_task(path: Path, *, repos_root: str | Path | None = None) -> Task:
    """Read and validate one spec file. Raises TaskSpecError naming the file and fields.
    `repos_root` (default: $WHOLELOOP_REPOS_ROOT) re-points a moved suite's local repositories."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise TaskSpecError(f"{path}: cannot read: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise TaskSpecError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise TaskSpecError(f"{path}: a task spec must be a mapping of keys to values")
    try:
        task = Task.model_validate(data)
    except ValidationError as exc:
        raise TaskSpecError(_format_errors(path, exc)) from None
    task._spec_path = path.resolve()
    root = repos_root or os.environ.get(REPOS_ROOT_ENV)
    if root:
        task._repos_root = Path(os.path.expanduser(str(root))).resolve()
    return task


def spec_files(paths: str | Path | list[str | Path]) -> list[Path]:
    """Spec files named directly or found (recursively) in the named folders, sorted.

    One path may be given bare: a string is a path, never a sequence of one-letter paths."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            out += sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
        elif path.is_file():
            out.append(path)
        else:
            raise TaskSpecError(f"{path}: no such file or folder")
    return out


def load_tasks(paths: str | Path | list[str | Path], *, repos_root: str | Path | None = None) -> list[Task]:
    """All tasks under `paths`; raises TaskSpecError listing every bad file, or duplicate ids."""
    tasks: list[Task] = []
    problems: list[str] = []
    seen: dict[str, Path] = {}
    for file in spec_files(paths):
        try:
            task = load_task(file, repos_root=repos_root)
        except TaskSpecError as exc:
            problems.append(str(exc))
            continue
        if task.id in seen:
            problems.append(f"{file}: task id {task.id!r} is also used by {seen[task.id]}")
            continue
        seen[task.id] = file
        tasks.append(task)
    if problems:
        raise TaskSpecError("\n".join(problems))
    return tasks


def dump_task(task: Task) -> str:
    """YAML for a task, keys in the documented order, defaults left out (but for what the statement
    was made from: a reader should not have to know the default), long text as blocks."""
    data = task.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    if task.origin is not None:
        data.setdefault("origin", {})["statement"] = task.origin.statement
    return dump_yaml(data)


def dump_yaml(data: dict) -> str:
    """A spec's YAML in its house style: keys in the order given, multi-line text as blocks."""
    return yaml.dump(data, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=100)


class _BlockDumper(yaml.SafeDumper):
    pass


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str_representer)
