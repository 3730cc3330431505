"""SWE-bench interoperability: import SWE-bench instances as task specs, export predictions.

Import (`wholeloop tasks import-swebench FILE.jsonl --out DIR [--specs FILE]`)
-------------------------------------------------------------------------------
`import_swebench` reads SWE-bench instances (JSON Lines, one object a line; a JSON array file is
accepted too) with SWE-bench's field names:

    instance_id, repo ("owner/name"), base_commit, patch (gold), test_patch, problem_statement,
    FAIL_TO_PASS, PASS_TO_PASS   -- JSON-encoded lists of test ids (as on the Hugging Face hub)
                                    or real lists
    version, created_at, hints_text, environment_setup_commit   -- optional

and writes one task per instance: `DIR/<task id>/task.yaml` with `gold.diff` and `test.diff` next to
it. The task id is the instance id (characters a task id cannot hold become `-`); the instance id,
repo, version and creation date are kept in the task's `metadata`, so predictions can be mapped back.

SWE-bench instances do not say where the repository is or how to install and test it (SWE-bench
keeps that in code, per repository and version). Here it comes from a small **specs file** (YAML or
JSON), keyed by repository and then by version, where `"*"` holds the defaults for every version
and a version's own entry overrides them key by key:

    more-itertools/more-itertools:
      "*":
        repo_path: repos/more-itertools        # a local repository, relative to the specs file
        setup: ["pip install pytest==8.3.5"]   # environment.setup (no repository yet)
        test_files_command: python -m pytest -rA {files}
      "10.5":
        install: ["pip install -e ."]          # environment.install (in the repository)

Keys of an entry (all optional):

    repo_path            local repository or git bundle, relative to the specs file
    repo_url             git URL (default when neither is given: https://github.com/<repo>.git)
    image | dockerfile   base image, or a Dockerfile (relative to the specs file)
    setup, install       lists of shell commands (environment.setup / environment.install)
    env                  environment variables for the image
    test_command         the hidden test command, used as is
    test_files_command   template for the hidden test command; `{files}` becomes the test files the
                         instance's test_patch touches (default: python -m pytest -rA {files})
    visible_test_command the test command the agent is told about (task.test_command)

An instance may also carry its own `repo_path` (relative to the JSONL file), `install_command`
(a string or a list) and `test_command` (the hidden test command); these override the specs file.

Unless a test_command is given, the hidden test command runs every test file the grade depends
on: those the test_patch's `+++ b/<path>` headers name (deleted files, conftest.py and data files
left out), then those the FAIL_TO_PASS and PASS_TO_PASS ids name (`tests/test_x.py::test_y` ->
`tests/test_x.py`), so no listed test is missing from the output. A bad instance (missing field,
a FAIL_TO_PASS that is not a list, no specs for its repo) is skipped with a message naming the
line and the field; the others still import.

Every imported task is scanned for secrets (harness.authoring.secrets): the problem statement, the
added lines of both patches and, when the repository is a local path, its files at the base
commit. A finding skips the instance, naming file, line and rule, unless `redact` (then the
statement and patches carry `<redacted:RULE>` instead). A repository given only as `owner/name`
with neither repo_path nor repo_url defaults to https://github.com/<owner/name>.git; when that
cannot be reached, the import says so and what to pass (a specs file with repo_path).

Export (`wholeloop export-predictions RUN_DIR [--out FILE]`)
--------------------------------------------------------------
`export_predictions` turns a run's `results.jsonl` into SWE-bench predictions JSONL
(`instance_id`, `model_name_or_path`, `model_patch`), one line per task, from its final attempt.
The predictions keep SWE-bench's fixed schema; the acceptance axes grading recorded for those
attempts go to a sidecar beside them, `<predictions>.acceptance.jsonl` (`instance_id`, `task_id`,
`resolved`, `acceptance`: the axes, null when not measured; docs/acceptance.md).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError

from ..errors import UserError
from ..parsers import get_parser
from ..records import latest_of
from ..scrub import scrub_text
from ..tasks.spec import Environment, HiddenTests, Origin, Task, TaskSpecError, dump_task, load_task
from .gitrepo import GitRepo, MineError
from .secrets import Finding, SecretScanner
from .secrets import redact as redact_findings
from .statements import imported_quality

REQUIRED_FIELDS = (
    "instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement", "FAIL_TO_PASS", "PASS_TO_PASS",
)  # fmt: skip
OPTIONAL_TEXT_FIELDS = ("version", "created_at", "hints_text", "environment_setup_commit")
DEFAULT_TEST_FILES_COMMAND = "python -m pytest -rA {files}"
SPEC_NAME = "task.yaml"
GOLD_NAME = "gold.diff"
TEST_PATCH_NAME = "test.diff"
# Files a test patch may touch that are data, not tests to run.
_NON_TEST_SUFFIXES = (
    ".json", ".txt", ".md", ".rst", ".csv", ".yml", ".yaml", ".toml", ".cfg", ".ini",
    ".png", ".jpg", ".jpeg", ".gif", ".svg", ".pkl", ".npy", ".html", ".xml",
)  # fmt: skip
_TASK_ID_BAD = re.compile(r"[^A-Za-z0-9_.\-]+")


class SWEBenchError(UserError):
    """SWE-bench data cannot be read or written; the message names the file, line and field."""

    hint = "Check the file against SWE-bench's field names (see `harness/swebench.py`)."


class ImportedTasks(list):
    """The spec files written (a list of Path), plus `.skipped`: one message per bad instance, and
    `.warnings`: what was imported but needs attention (an unreachable repository)."""

    def __init__(self, paths: list[Path] | None = None, skipped: list[str] | None = None):
        super().__init__(paths or [])
        self.skipped: list[str] = list(skipped or [])
        self.warnings: list[str] = []


# ------------------------------------------------------------------------------ specs file


class RepoSpec(BaseModel):
    """How to get, install and test one repository at one version (an entry of the specs file)."""

    model_config = ConfigDict(extra="forbid")

    repo_path: str | None = None
    repo_url: str | None = None
    image: str | None = None
    dockerfile: str | None = None
    setup: list[str] | None = None
    install: list[str] | None = None
    env: dict[str, str] | None = None
    test_command: str | None = None
    test_files_command: str | None = None
    visible_test_command: str | None = None
    # Where the specs file lives: repo_path and dockerfile are relative to it.
    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)


def load_specs(path: str | Path) -> dict[str, dict[str, RepoSpec]]:
    """Read a specs file (YAML or JSON). Raises SWEBenchError naming the file and the bad entry."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise SWEBenchError(f"{path}: cannot read specs file: {exc.strerror}") from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        kind = "JSON" if path.suffix == ".json" else "YAML"
        raise SWEBenchError(f"{path}: specs file is not valid {kind}: {exc}") from None
    if not isinstance(data, dict):
        raise SWEBenchError(f"{path}: a specs file maps 'owner/repo' to {{version or '*': settings}}")
    out: dict[str, dict[str, RepoSpec]] = {}
    problems = []
    for repo, versions in data.items():
        if not isinstance(versions, dict):
            problems.append(f"  {repo}: must map versions (or '*') to settings")
            continue
        for version, entry in versions.items():
            where = f"{repo} > {version}"
            if not isinstance(entry, dict):
                problems.append(f"  {where}: settings must be a mapping")
                continue
            if entry.get("repo_path") and entry.get("repo_url"):
                problems.append(f"  {where}: give repo_path or repo_url, not both")
            template = entry.get("test_files_command")
            if isinstance(template, str) and "{files}" not in template:
                problems.append(f"  {where} > test_files_command: must contain {{files}}")
            try:
                spec = RepoSpec.model_validate(entry)
            except ValidationError as exc:
                for err in exc.errors():
                    key = ".".join(str(p) for p in err["loc"])
                    msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
                    problems.append(f"  {where} > {key}: {msg}")
                continue
            spec._base_dir = path.resolve().parent
            out.setdefault(str(repo), {})[str(version)] = spec
    if problems:
        raise SWEBenchError(f"{path}: invalid specs file\n" + "\n".join(problems))
    return out


def _repo_spec(specs: dict[str, dict[str, RepoSpec]], repo: str, version: str | None) -> RepoSpec | None:
    """The '*' entry of `repo` overlaid with its `version` entry, or None when neither exists."""
    versions = specs.get(repo)
    if not versions:
        return None
    default, own = versions.get("*"), versions.get(str(version)) if version is not None else None
    source = own or default  # the location's base: both come from the same specs file
    if source is None:
        return None
    merged = default.model_dump(exclude_none=True) if default else {}
    if own:
        merged.update(own.model_dump(exclude_none=True))
        if own.repo_path or own.repo_url:  # a version's own location replaces the default one
            merged.pop("repo_url" if own.repo_path else "repo_path", None)
    spec = RepoSpec.model_validate(merged)
    spec._base_dir = source._base_dir
    return spec


# ------------------------------------------------------------------------------ reading instances


def _read_instances(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, decoded object or a SWEBenchError) for each instance in a JSONL or JSON file."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise SWEBenchError(f"{path}: cannot read: {exc.strerror}") from exc
    if text.lstrip().startswith("["):  # a JSON array of instances (what many exports write)
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SWEBenchError(f"{path}: not valid JSON: {exc}") from exc
        yield from ((n, item) for n, item in enumerate(items, 1))
        return
    for number, line in enumerate(text.split("\n"), 1):  # not splitlines(): JSON may hold U+2028
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, SWEBenchError(f"{path}:{number}: not valid JSON: {exc.msg} (column {exc.colno})")


def _test_list(value: Any, field: str) -> list[str]:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as exc:
            raise ValueError(f"field {field!r}: not a JSON-encoded list: {exc.msg}") from None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"field {field!r}: must be a list of test ids (strings), got {type(value).__name__}")
    return value


def _commands(value: Any, field: str) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    raise ValueError(f"field {field!r}: must be a command or a list of commands")


def hidden_test_files(test_patch: str) -> list[str]:
    """Test files a test patch adds or changes, from its `+++ b/<path>` headers, in order.

    Deleted files (`+++ /dev/null`), conftest.py and data files (json, txt, ...) are left out.
    """
    files: list[str] = []
    for line in test_patch.splitlines():
        if not line.startswith("+++ "):
            continue
        target = line[4:].split("\t")[0].strip()
        if target == "/dev/null" or not target.startswith("b/"):
            continue
        target = target[2:]
        name = target.rsplit("/", 1)[-1]
        if name == "conftest.py" or target.lower().endswith(_NON_TEST_SUFFIXES) or target in files:
            continue
        files.append(target)
    return files


def task_id_for(instance_id: str) -> str:
    """A valid task id for an instance id (unchanged when it already is one)."""
    cleaned = _TASK_ID_BAD.sub("-", instance_id).strip("-.")
    if not cleaned or not cleaned[0].isalnum():
        cleaned = "i" + cleaned
    return cleaned


def _location(path: Path, spec_dir: Path) -> str:
    """`path` as the task spec should name it: relative to the spec when they share a root."""
    path, spec_dir = path.resolve(), spec_dir.resolve()
    if os.path.commonpath([path, spec_dir]) == path.anchor:
        return str(path)
    return os.path.relpath(path, spec_dir)


def _build_task(
    inst: dict[str, Any], jsonl_dir: Path, spec_dir: Path, specs: dict[str, dict[str, RepoSpec]]
) -> tuple[Task, str, str]:
    """A Task for one instance (not yet written), its gold patch and its test patch.

    Raises ValueError whose message names the field at fault.
    """
    for field in REQUIRED_FIELDS:
        if field not in inst or inst[field] is None:
            raise ValueError(f"missing field {field!r}")
    for field in ("instance_id", "repo", "base_commit", "patch", "test_patch", "problem_statement"):
        if not isinstance(inst[field], str):
            raise ValueError(f"field {field!r}: must be a string, got {type(inst[field]).__name__}")
        if field != "patch" and not inst[field].strip():
            raise ValueError(f"field {field!r}: must not be empty")
    if not inst["patch"].strip():
        raise ValueError("field 'patch': the gold patch is empty")
    fail_to_pass = _test_list(inst["FAIL_TO_PASS"], "FAIL_TO_PASS")
    pass_to_pass = _test_list(inst["PASS_TO_PASS"], "PASS_TO_PASS")
    if not fail_to_pass:
        raise ValueError("field 'FAIL_TO_PASS': is empty (a task needs at least one failing test)")
    extra = {k: inst.get(k) for k in OPTIONAL_TEXT_FIELDS}
    version = None if extra["version"] is None else str(extra["version"])
    repo = inst["repo"]

    spec = _repo_spec(specs, repo, version) if specs else None
    if specs and spec is None and not inst.get("repo_path"):
        raise ValueError(f"field 'repo': no entry for {repo!r} (version {version!r} or '*') in the specs file")
    spec = spec or RepoSpec()

    # Where the repository is: the instance's own repo_path, then the specs file, then GitHub.
    if inst.get("repo_path"):
        location = _location(jsonl_dir / str(inst["repo_path"]), spec_dir)
    elif spec.repo_path:
        location = _location(spec._base_dir / spec.repo_path, spec_dir)
    else:
        location = spec.repo_url or f"https://github.com/{repo}.git"

    # The hidden test command: the instance's own, the spec's, or the test files of test_patch.
    command = inst.get("test_command") or spec.test_command
    if command is not None and not isinstance(command, str):
        raise ValueError("field 'test_command': must be a string")
    if not command:
        files = hidden_test_files(inst["test_patch"])
        parser = get_parser("pytest")
        for test_id in fail_to_pass + pass_to_pass:
            path = parser.test_file(test_id)
            if path and path not in files:
                files.append(path)
        if not files:
            raise ValueError("field 'test_patch': names no test file to run (and no test_command is given)")
        template = spec.test_files_command or DEFAULT_TEST_FILES_COMMAND
        command = template.replace("{files}", " ".join(shlex.quote(f) for f in files))

    env_args: dict[str, Any] = {}
    if spec.image:
        env_args["image"] = spec.image
    if spec.dockerfile:
        env_args["dockerfile"] = _location(spec._base_dir / spec.dockerfile, spec_dir)
    if spec.setup is not None:
        env_args["setup"] = spec.setup
    if spec.env is not None:
        env_args["env"] = spec.env
    install = spec.install
    if inst.get("install_command") is not None:
        install = _commands(inst["install_command"], "install_command")
    if install is not None:
        env_args["install"] = install

    metadata = {"source": "swebench", "instance_id": inst["instance_id"], "repo": repo, "version": version}
    for key in ("created_at", "environment_setup_commit", "hints_text"):
        if extra[key]:
            metadata[key] = extra[key]
    created_at = _iso(extra["created_at"])
    quality, leaks = imported_quality(inst["problem_statement"], inst["patch"], inst["test_patch"])
    try:
        task = Task(
            id=task_id_for(inst["instance_id"]),
            repo=location,
            base_commit=inst["base_commit"],
            problem_statement=inst["problem_statement"],
            environment=Environment(**env_args),
            test_command=spec.visible_test_command,
            hidden_tests=HiddenTests(command=command, patch_file=TEST_PATCH_NAME),
            fail_to_pass=fail_to_pass,
            pass_to_pass=pass_to_pass,
            gold_patch_file=GOLD_NAME,
            created_at=created_at,
            origin=Origin(
                kind="swebench",
                repository=repo,
                statement="swebench",
                statement_quality=quality,
                statement_leaks=leaks,
            ),
            metadata=metadata,
        )
    except ValidationError as exc:
        parts = [f"{'.'.join(str(p) for p in e['loc']) or 'task'}: {e['msg']}" for e in exc.errors()]
        raise ValueError("cannot make a task: " + "; ".join(parts)) from None
    return task, inst["patch"], inst["test_patch"]


def _iso(value: Any) -> str | None:
    """SWE-bench's created_at ("2023-05-12T17:10:45Z", or with a space) as ISO 8601, else None."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().replace(" ", "T", 1)
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).isoformat()


def _reachable(url: str, cache: dict[str, str | None]) -> str | None:
    """None when git can list `url`, else why not (git's last line); asked once per URL."""
    if url not in cache:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
        try:
            proc = subprocess.run(
                ["git", "ls-remote", "--exit-code", url, "HEAD"], capture_output=True, text=True, timeout=30, env=env
            )
            lines = proc.stderr.strip().splitlines()
            cache[url] = None if proc.returncode == 0 else (lines[-1] if lines else f"git exit {proc.returncode}")
        except subprocess.TimeoutExpired:
            cache[url] = "no answer within 30 s"
    return cache[url]


def _secrets(scanner: SecretScanner, task: Task, gold: str, test_patch: str, spec_dir: Path) -> list[Finding]:
    findings = scanner.scan_text("problem_statement", task.problem_statement)
    findings += scanner.scan_patch(GOLD_NAME, gold, "gold") + scanner.scan_patch(TEST_PATCH_NAME, test_patch, "tests")
    location = Path(task.repo) if Path(task.repo).is_absolute() else spec_dir / task.repo
    if "://" not in task.repo and location.exists():
        try:
            repo = GitRepo.open(location)
            findings += scanner.scan_tree(repo, repo.resolve(task.base_commit), tuple(task.environment.env_files))
        except MineError:
            pass  # the base commit is checked when the task runs; here there is nothing to scan
    return findings


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="") as fh:  # patches keep their bytes: no newline translation
        fh.write(scrub_text(text))  # the one scrubbing boundary (harness.scrub)
    os.replace(tmp, path)


def import_swebench(
    jsonl_path: str | Path,
    out_dir: str | Path,
    *,
    specs_file: str | Path | None = None,
    redact: bool = False,
    secrets_baseline: str | Path | None = None,
    check_urls: bool = True,
) -> ImportedTasks:
    """Write one task spec per SWE-bench instance in `jsonl_path` into `out_dir`.

    Each instance becomes `out_dir/<task id>/task.yaml` with `gold.diff` and `test.diff` beside it
    (existing files for the same instance are replaced). `specs_file` says, per repository and
    version, where the repository is and how to install and test it (format: module docstring).

    Returns the spec paths written, in file order, as a list whose `.skipped` attribute holds one
    message per instance that could not be imported ("FILE:LINE: instance ID: field 'X': why").
    Raises SWEBenchError when the file or the specs file cannot be read, or when no instance at all
    could be imported (the message then lists why each one was skipped).
    """
    jsonl_path, out_dir = Path(jsonl_path), Path(out_dir)
    specs = load_specs(specs_file) if specs_file else {}
    result = ImportedTasks()
    seen: dict[str, int] = {}
    try:
        scanner = SecretScanner(secrets_baseline)
    except MineError as exc:
        raise SWEBenchError(str(exc), exc.hint) from None
    urls: dict[str, str | None] = {}
    warned: set[str] = set()
    for number, inst in _read_instances(jsonl_path):
        where = f"{jsonl_path}:{number}"
        if isinstance(inst, SWEBenchError):
            result.skipped.append(str(inst))
            continue
        if not isinstance(inst, dict):
            result.skipped.append(f"{where}: an instance must be a JSON object, got {type(inst).__name__}")
            continue
        label = f"{where}: instance {inst['instance_id']!r}" if isinstance(inst.get("instance_id"), str) else where
        task_id = task_id_for(inst["instance_id"]) if isinstance(inst.get("instance_id"), str) else None
        if task_id in seen:
            result.skipped.append(f"{label}: field 'instance_id': same task id as line {seen[task_id]}")
            continue
        spec_dir = out_dir / (task_id or "_")
        try:
            task, gold, test_patch = _build_task(inst, jsonl_path.resolve().parent, spec_dir, specs)
        except ValueError as exc:
            result.skipped.append(f"{label}: {exc}")
            continue
        found = _secrets(scanner, task, gold, test_patch, spec_dir)
        findings = scanner.refusing(found)  # entropy and keyword guesses are warnings (secrets module)
        if len(found) > len(findings):
            result.warnings.append(
                f"{label}: {len(found) - len(findings)} secret-scan warning(s), refusing nothing: "
                + ", ".join(f.label() for f in scanner.warnings(found)[:3])
            )
        if findings and not redact:
            result.skipped.append(
                f"{label}: refused: secret found: {findings[0].label()}"
                + (f" (and {len(findings) - 1} more)" if len(findings) > 1 else "")
                + "; --redact replaces them, a baseline file lists known false positives"
            )
            continue
        if findings:
            snapshot = [f for f in findings if f.where == "snapshot"]
            if snapshot:
                result.skipped.append(
                    f"{label}: refused: secret found: {snapshot[0].label()} (in the repository "
                    "at the base commit: cannot be redacted)"
                )
                continue
            gold, test_patch = redact_findings(gold, findings), redact_findings(test_patch, findings)
            task = task.model_copy(
                update={
                    "problem_statement": redact_findings(task.problem_statement, findings),
                    "metadata": {**task.metadata, "secrets_redacted": [f.record() for f in findings]},
                }
            )
        if check_urls and "://" in task.repo and task.repo == f"https://github.com/{inst['repo']}.git":
            why = _reachable(task.repo, urls)
            if why and inst["repo"] not in warned:
                warned.add(inst["repo"])
                result.warnings.append(
                    f"repository {inst['repo']}: no repo_path or repo_url for it, and {task.repo} cannot be reached "
                    f"({why}); its tasks point at that URL. Pass --specs FILE with\n"
                    f'    {inst["repo"]}:\n      "*": {{repo_path: path/to/a/clone/or.bundle}}'
                )
        seen[task.id] = number
        spec_dir.mkdir(parents=True, exist_ok=True)
        _write(spec_dir / GOLD_NAME, gold)
        _write(spec_dir / TEST_PATCH_NAME, test_patch)
        _write(spec_dir / SPEC_NAME, dump_task(task))
        try:
            load_task(spec_dir / SPEC_NAME)  # what we wrote must load back
        except TaskSpecError as exc:  # pragma: no cover - would be a bug in this module
            raise SWEBenchError(f"{where}: the spec written does not load back:\n{exc}") from exc
        result.append(spec_dir / SPEC_NAME)
    if not result:
        why = "\n".join(f"  {line}" for line in result.skipped) or "  (the file holds no instances)"
        raise SWEBenchError(f"{jsonl_path}: no instance could be imported:\n{why}")
    return result


# ------------------------------------------------------------------------------ predictions


def _read_results(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise SWEBenchError(f"{path}: cannot read: {exc.strerror}") from exc
    lines = text.split("\n")
    rows = []
    for number, line in enumerate(lines[:-1], 1):  # the last piece is "" or a torn (unfinished) line
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SWEBenchError(f"{path}:{number}: not valid JSON: {exc.msg}") from exc
        if not isinstance(row, dict) or not isinstance(row.get("task_id"), str):
            raise SWEBenchError(f"{path}:{number}: a results row must be an object with a 'task_id'")
        rows.append(row)
    return rows


def _instance_id(row: dict[str, Any]) -> str:
    for holder in (row, row.get("metadata"), row.get("task_metadata")):
        if isinstance(holder, dict) and isinstance(holder.get("instance_id"), str) and holder["instance_id"]:
            return holder["instance_id"]
    return row["task_id"]


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _config(row: dict[str, Any]) -> str:
    return str(row.get("config") or row.get("agent") or "")


def export_predictions(
    run_dir: str | Path,
    out_path: str | Path | None = None,
    model_name: str | None = None,
    *,
    repeat: int = 0,
    config: str | None = None,
) -> Path:
    """Write SWE-bench predictions JSONL for a run folder; returns the file written.

    Reads `run_dir/results.jsonl` (extra fields are ignored; a torn last line is skipped) and
    writes one line per task, `{"instance_id", "model_name_or_path", "model_patch"}`, sorted by
    instance id, to `out_path` (default `run_dir/predictions.jsonl`).

    - Attempt: for each task, the row written last for repeat `repeat` (a row without `repeat`
      counts as repeat 0): the last try's last attempt, since a resumed run's redo supersedes a
      killed try.
    - instance_id: the row's `instance_id` (the runner copies it from the task's metadata), or its
      `metadata.instance_id`, else the task id.
    - model_patch: the file at the row's `patch_path` (relative to `run_dir`); empty when the
      attempt left no patch, so the instance still counts (as unresolved) in SWE-bench's totals.
    - model_name_or_path: `model_name`, else the row's `config` label, else `model`, else `agent`.

    A run folder holding several configurations (agent + model + settings) needs `config` (a
    config label or agent name) to pick one. Raises SWEBenchError when results.jsonl is missing or
    malformed, when the choice of configuration is ambiguous, or when nothing matches.
    """
    run_dir = Path(run_dir)
    rows = _read_results(run_dir / "results.jsonl")
    configs = sorted({_config(r) for r in rows})
    if config is not None:
        rows = [r for r in rows if config in (_config(r), str(r.get("agent")))]
        if not rows:
            raise SWEBenchError(f"{run_dir}: nothing ran as {config!r} (this run has: {', '.join(configs)})")
    elif len(configs) > 1:
        raise SWEBenchError(f"{run_dir}: the run holds several configurations ({', '.join(configs)}); choose one")
    repeats = sorted({_int(r.get("repeat"), 0) for r in rows})
    rows = [r for r in rows if _int(r.get("repeat"), 0) == repeat]
    if not rows:
        raise SWEBenchError(f"{run_dir}: no attempt of repeat {repeat} (repeats in this run: {repeats})")

    final: dict[str, dict[str, Any]] = {}
    # the run folder's latest-row rule (a redo supersedes a killed try); then the last attempt
    for row in latest_of(
        rows,
        lambda r: (r["task_id"], _config(r)),
        lambda r: _int(r.get("attempt"), 1),
        lambda r: r.get("retried") is True,
    ):
        final[row["task_id"]] = row

    predictions: dict[str, dict[str, str]] = {}
    axes: dict[str, dict[str, Any]] = {}  # the sidecar: SWE-bench's schema has no room for them
    owner: dict[str, str] = {}
    for task_id, row in final.items():
        instance_id = _instance_id(row)
        if instance_id in predictions:
            first = owner[instance_id]
            raise SWEBenchError(f"{run_dir}: tasks {first!r} and {task_id!r} are both instance {instance_id!r}")
        owner[instance_id] = task_id
        patch = ""
        if isinstance(row.get("patch_path"), str) and row["patch_path"]:
            patch_file = run_dir / row["patch_path"]
            if patch_file.is_file():
                with open(patch_file, newline="") as fh:  # keep CRLF patches byte for byte
                    patch = fh.read()
        name = model_name or row.get("config") or row.get("model") or row.get("agent") or "wholeloop"
        predictions[instance_id] = {"instance_id": instance_id, "model_name_or_path": str(name), "model_patch": patch}
        axes[instance_id] = {
            "instance_id": instance_id,
            "task_id": task_id,
            "resolved": row.get("resolved") is True,
            "acceptance": row.get("acceptance") if isinstance(row.get("acceptance"), dict) else None,
        }

    out = Path(out_path) if out_path is not None else run_dir / "predictions.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    _write(out, "".join(json.dumps(predictions[key]) + "\n" for key in sorted(predictions)))
    _write(acceptance_sidecar(out), "".join(json.dumps(axes[key]) + "\n" for key in sorted(axes)))
    return out


def acceptance_sidecar(predictions: Path) -> Path:
    """Where the acceptance axes of a predictions file go: `<name>.acceptance.jsonl` beside it."""
    return predictions.with_name(predictions.name.removesuffix(".jsonl") + ".acceptance.jsonl")
