"""Harbor task directories in and out (`wholeloop tasks import-harbor`, `wholeloop export harbor`).

A Harbor task is a folder: `task.toml`, `instruction.md`, `environment/` (a Dockerfile and its
build context), `tests/` (`test.sh`, run by Harbor's verifier, and its files) and `solution/`
(`solve.sh`, run by Harbor's oracle). wholeloop grades a *patch* in a fresh container, so only
repository-shaped tasks import: the environment copies a git repository into the image and the
tests run a test framework in it. See docs/tasks.md ("Harbor tasks") for the whole mapping.

Import, field by field:

- `instruction.md` -> `problem_statement` (as written).
- `environment/Dockerfile` -> `environment`. The Dockerfile is read, not run as is: `FROM` is the
  image (it must exist on this machine: `pull: never`), the two lines of a venv first on PATH
  (VENV_RUN, VENV_ENV) `python_venv`, `ENV` the environment variables, `RUN`
  lines before the repository arrives `setup`, those after it `install` (they run again in
  wholeloop's own copy of the repository at /repo). The repository is the one folder the
  Dockerfile `COPY`s to its `WORKDIR`; it must be a git work tree, whose HEAD is the base commit,
  and is kept beside the spec as a git bundle. Any other instruction is refused, naming the line.
  A Dockerfile that copies no git repository is a Terminal-Bench-style task (its verifier grades
  the container's state in place) and is refused with that reason.
- `tests/test.sh` -> `hidden_tests`: the one line that runs a test framework is the command (cut at
  the first `|`, `>`, `;`, `&&` or `||`) and names the parser (pytest, vitest, jest, go, cargo); a
  `git apply` of a file of `tests/` is the hidden test patch; a `cp /tests/F DEST` puts file F at
  DEST. A script that runs no framework and only writes the reward file is refused: a reward file
  is one channel, written by a process the code under test shares, so a patch could forge it;
  wholeloop reads at least two channels that must agree (the framework's report, its summary, the
  exit code). A jest or vitest line gets the reporter flags its parser reads (REPORT_FLAGS) when it
  lacks them.
- `tests/config.json` -> `FAIL_TO_PASS`, `PASS_TO_PASS` (SWE-bench's keys, either case).
- `solution/` -> the gold patch: `solve.sh` runs in the task's own image (its files at /solution,
  the Dockerfile's WORKDIR a link to /repo), and the patch is taken from outside the container the
  same way an agent's is.
- `task.toml` -> timeouts (`agent.timeout_sec`, `verifier.timeout_sec`); `[metadata]`
  `wholeloop_spec`, written by the export, carries what Harbor has no field for (the visible test
  command, expected xfails, protected and allowed paths, limits, metadata).

Export writes the same shapes back, so a task exported and imported again is the same task (the
same content hash). Protected paths and every other grading rule apply to imported tasks as to any.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from sandbox import BaseRules, Limits, take_patch

from ..errors import UserError
from ..parsers import jest, vitest
from ..run.images import build_task_images
from ..sandboxes import default_backend
from ..tasks import Task
from ..tasks.spec import dump_task, load_task, load_tasks

REPO_DIR = "/repo"
HARBOR_WORKDIR = "/app"  # where an exported task's repository lives in its image
REWARD_FILE = "/logs/verifier/reward.txt"
SPEC_KEY = "wholeloop_spec"  # task.toml [metadata] key: the fields Harbor has no place for
#: a Python venv first on PATH (Debian's pip refuses to install system-wide, PEP 668): these two
#: lines of a Dockerfile are `environment.python_venv`, which makes wholeloop's image do the same
VENV_RUN = "python3 -m venv /opt/venv"
VENV_ENV = "VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH"

#: the test frameworks a test script can run, as (parser, pattern), first match wins
FRAMEWORKS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("vitest", re.compile(r"\bvitest\b")),
    ("jest", re.compile(r"\bjest\b")),
    ("pytest", re.compile(r"\bpytest\b")),
    ("cargo", re.compile(r"\bcargo\s+(?:test|nextest)\b")),
    ("go", re.compile(r"\bgo\s+test\b")),
)


#: what a framework's line needs for its parser's structured channel (its report file, outside the
#: repository), added when a test script's line lacks it
REPORT_FLAGS = {
    "jest": f"--ci --json --outputFile={jest.RESULTS_FILE}",
    "vitest": f"--reporter=verbose --reporter=json --outputFile.json={vitest.RESULTS_FILE}",
}


class HarborTaskRefused(UserError):
    """A Harbor task directory wholeloop cannot grade (the message says why)."""

    hint = "see docs/tasks.md (Harbor tasks) for the shape wholeloop imports"


class HarborExportRefused(UserError):
    """A wholeloop task Harbor's format cannot carry (the message says why)."""

    hint = "see docs/tasks.md (Harbor tasks) for what the export writes"


# ------------------------------------------------------------------------------ reading a task dir


@dataclass
class DockerfileShape:
    image: str
    env: dict[str, str] = field(default_factory=dict)
    setup: list[str] = field(default_factory=list)
    install: list[str] = field(default_factory=list)
    workdir: str = ""
    repo_source: str = ""  # the folder of environment/ the Dockerfile copies to WORKDIR
    python_venv: bool = False  # VENV_RUN and VENV_ENV, before the repository arrives


def _instructions(text: str) -> list[tuple[int, str, str]]:
    """(line number, INSTRUCTION, argument) with continuation lines joined and comments dropped."""
    out: list[tuple[int, str, str]] = []
    pending, start = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if not pending:
            start = n
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        whole = (pending + line).strip()
        pending = ""
        word, _, arg = whole.partition(" ")
        out.append((start, word.upper(), arg.strip()))
    if pending:
        word, _, arg = pending.strip().partition(" ")
        out.append((start, word.upper(), arg.strip()))
    return out


def read_dockerfile(path: Path) -> DockerfileShape:
    """The environment a Harbor Dockerfile describes (see the module docstring); raises
    HarborTaskRefused naming the line it cannot carry over."""
    shape: DockerfileShape | None = None
    copied: tuple[str, str] | None = None
    for n, word, arg in _instructions(path.read_text()):
        where = f"{path}:{n}"
        if word == "FROM":
            if shape is not None:
                raise HarborTaskRefused(f"{where}: a multi-stage Dockerfile cannot be carried over")
            shape = DockerfileShape(image=arg.split()[0])
            continue
        if shape is None:
            raise HarborTaskRefused(f"{where}: {word} before FROM")
        if not copied and (word, arg) in (("RUN", VENV_RUN), ("ENV", VENV_ENV)):
            shape.python_venv = True
        elif word == "ENV":
            for key, value in _env_pairs(arg, where):
                shape.env[key] = value
        elif word == "RUN":
            if arg.startswith("["):
                raise HarborTaskRefused(f"{where}: RUN in exec form; write it as a shell command")
            (shape.install if copied else shape.setup).append(arg)
        elif word == "WORKDIR":
            if "$" in arg:
                raise HarborTaskRefused(f"{where}: WORKDIR {arg}: a variable in WORKDIR is not expanded here")
            # a relative WORKDIR is relative to the one before (Docker's rule)
            shape.workdir = posixpath.normpath(posixpath.join(shape.workdir or "/", arg.strip()))
        elif word == "COPY":
            parts = shlex.split(arg)
            flags = [p for p in parts if p.startswith("--")]
            # --chown is ignored: the repository's files belong to the sandbox's user in wholeloop
            other = next((f for f in flags if not f.startswith("--chown=")), None)
            if other is not None:
                raise HarborTaskRefused(
                    f"{where}: COPY {other} cannot be carried over (wholeloop reads COPY [--chown=...] SRC DEST)"
                )
            parts = [p for p in parts if not p.startswith("--")]
            if len(parts) != 2 or copied:
                raise HarborTaskRefused(
                    f"{where}: COPY {arg}: wholeloop reads one COPY, of the repository's folder to WORKDIR"
                )
            # a relative DEST is relative to the WORKDIR of that point
            dest = posixpath.normpath(posixpath.join(shape.workdir or "/", parts[1]))
            copied = (parts[0].rstrip("/"), dest)
            shape.repo_source = copied[0]
        else:
            raise HarborTaskRefused(f"{where}: {word} cannot be carried over into a wholeloop environment")
    if shape is None:
        raise HarborTaskRefused(f"{path}: no FROM line")
    repo = path.parent / shape.repo_source if copied else None
    if copied is None or repo is None or not (repo / ".git").exists():
        raise HarborTaskRefused(
            f"{path.parent.parent}: the environment copies in no git repository: its verifier grades the "
            "container's state in place (a Terminal-Bench-style task); wholeloop grades a patch to a "
            "repository in a fresh container"
        )
    if not shape.workdir or copied[1] != shape.workdir:
        raise HarborTaskRefused(f"{path}: the repository is copied to {copied[1]}, not to WORKDIR ({shape.workdir})")
    return shape


def _env_pairs(arg: str, where: str) -> list[tuple[str, str]]:
    parts = shlex.split(arg)
    if len(parts) == 2 and "=" not in parts[0]:  # ENV KEY value
        return [(parts[0], parts[1])]
    pairs = []
    for part in parts:
        key, eq, value = part.partition("=")
        if not eq:
            raise HarborTaskRefused(f"{where}: ENV {arg}: not KEY=value")
        pairs.append((key, value))
    return pairs


@dataclass
class TestScript:
    command: str
    parser: str
    patch_file: str | None = None  # a file of tests/ applied with git apply
    files: dict[str, str] = field(default_factory=dict)  # tests/ file -> path in the repository


_CUT = re.compile(r"\s(?:\||>|2>|;|&&|\|\|)")


def read_test_script(path: Path, workdir: str) -> TestScript:
    """What a Harbor test.sh runs (see the module docstring); raises HarborTaskRefused."""
    command = parser = None
    patch_file: str | None = None
    files: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        apply = re.match(r"git\s+apply\b.*?\s/tests/(\S+)", line)
        if apply:
            patch_file = apply.group(1)
            continue
        copy = re.match(r"cp\s+(?:-\w+\s+)*/tests/(\S+)\s+(\S+)$", line)
        if copy:
            files[copy.group(1)] = _in_repo(copy.group(2), workdir, path)
            continue
        for name, pattern in FRAMEWORKS:
            if command is None and pattern.search(line):
                command, parser = _CUT.split(" " + line, maxsplit=1)[0].strip(), name
                break
    if command is None or parser is None:
        writes_reward = "reward" in path.read_text()
        raise HarborTaskRefused(
            f"{path}: runs no test framework wholeloop reads (pytest, vitest, jest, go test, cargo test)"
            + (
                "; its verdict is the reward file alone, one channel that the code under test could "
                "forge: wholeloop needs the framework's own report to cross-check it"
                if writes_reward
                else ""
            )
        )
    flags = REPORT_FLAGS.get(parser)
    if flags and flags.rsplit("=", 1)[1] not in command:
        command = f"{command} {flags}"
    return TestScript(command, parser, patch_file, files)


def _in_repo(dest: str, workdir: str, where: Path) -> str:
    rel = PurePosixPath(dest)
    if rel.is_absolute():
        try:
            rel = rel.relative_to(workdir)
        except ValueError:
            raise HarborTaskRefused(
                f"{where}: copies a test file to {dest}, outside the repository ({workdir})"
            ) from None
    return str(rel)


def _fail_pass(path: Path) -> tuple[list[str], list[str]]:
    if not path.is_file():
        raise HarborTaskRefused(
            f"{path}: missing: wholeloop needs the tests the solution makes pass (FAIL_TO_PASS) and those "
            "that must keep passing (PASS_TO_PASS), as SWE-bench-shaped Harbor tasks carry them"
        )
    data = json.loads(path.read_text())
    lists = []
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        value = data.get(key, data.get(key.lower(), []))
        if isinstance(value, str):  # SWE-bench's JSON-encoded lists
            value = json.loads(value)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise HarborTaskRefused(f"{path}: {key} is not a list of test ids")
        lists.append(list(value))
    return lists[0], lists[1]


def _task_id(toml: dict[str, Any], folder: Path) -> str:
    name = (toml.get("task") or {}).get("name") or folder.name
    return re.sub(r"[^A-Za-z0-9_.\-]", "-", name.rsplit("/", 1)[-1]).lstrip("-_.") or "task"


def spec_of(folder: Path) -> tuple[Task, DockerfileShape]:
    """The task a Harbor directory describes, without its gold (that needs a container) and with
    `repo` naming `<id>/repo.bundle`. Raises HarborTaskRefused."""
    for need in ("task.toml", "instruction.md", "tests/test.sh", "solution/solve.sh", "environment/Dockerfile"):
        if not (folder / need).is_file():
            if need == "environment/Dockerfile" and (folder / "task.toml").is_file():
                raise HarborTaskRefused(
                    f"{folder}: no environment/Dockerfile: a prebuilt docker_image cannot be pulled here and "
                    "holds no repository wholeloop can snapshot"
                )
            raise HarborTaskRefused(f"{folder}: not a Harbor task directory: no {need}")
    for need in ("task.toml", "instruction.md", "tests/test.sh", "solution", "environment/Dockerfile"):
        _inside(folder, folder / need)
    toml = tomllib.loads((folder / "task.toml").read_text())
    if toml.get("steps"):
        raise HarborTaskRefused(f"{folder}: a multi-step task: wholeloop grades one patch per task")
    shape = read_dockerfile(folder / "environment" / "Dockerfile")
    script = read_test_script(folder / "tests" / "test.sh", shape.workdir)
    fail, keep = _fail_pass(_inside(folder, folder / "tests" / "config.json"))
    extras = _spec_extras(folder, toml)
    task_id = extras.pop("id", None) or _task_id(toml, folder)
    base = _git(_inside(folder, folder / "environment" / shape.repo_source), "rev-parse", "HEAD").strip()
    hidden: dict[str, Any] = {"command": script.command, "parser": script.parser}
    if script.patch_file:
        hidden["patch"] = _read_text(_inside(folder, folder / "tests" / script.patch_file))
    if script.files:
        hidden["files"] = {
            dest: _read_text(_inside(folder, folder / "tests" / src)) for src, dest in sorted(script.files.items())
        }
    environment: dict[str, Any] = {"image": shape.image, "pull": "never", "setup": shape.setup}
    environment["python_venv"] = shape.python_venv
    environment.update(install=shape.install, env=shape.env, **extras.pop("environment", {}))
    timeouts = {}
    if (toml.get("agent") or {}).get("timeout_sec"):
        timeouts["agent_s"] = toml["agent"]["timeout_sec"]
    if (toml.get("verifier") or {}).get("timeout_sec"):
        timeouts["tests_s"] = toml["verifier"]["timeout_sec"]
    data = {
        "id": task_id,
        "repo": f"{task_id}/repo.bundle",
        "base_commit": base,
        "problem_statement": (folder / "instruction.md").read_text(),
        "environment": environment,
        "hidden_tests": hidden,
        "FAIL_TO_PASS": fail,
        "PASS_TO_PASS": keep,
        "timeouts": timeouts,
        **extras,
    }
    try:
        task = Task.model_validate(data)
    except ValueError as exc:
        raise HarborTaskRefused(f"{folder}: does not make a valid wholeloop task: {exc}") from None
    return task, shape


def _inside(folder: Path, path: Path) -> Path:
    """`path`, when it (through every symlink and `..`) stays inside the task directory `folder`;
    the import reads nothing else of the importing machine (a hostile task could make a host file
    its problem statement, hidden tests or repository)."""
    if not path.resolve().is_relative_to(folder.resolve()):
        raise HarborTaskRefused(f"{path}: points outside the task directory {folder}: the import reads nothing else")
    return path


# what task.toml's `wholeloop_spec` may set: the fields the export writes there, none naming a path
# of the importing machine (`repo`, a Dockerfile, a CA bundle file are the import's own)
SPEC_KEYS: tuple[str, ...] = ("test_command", "expected_xfail", "protected_paths", "allowed_paths", "limits")
SPEC_KEYS += ("metadata", "created_at", "origin", "environment", "id")
SPEC_ENV_REFUSED = ("dockerfile", "image", "setup", "install", "env", "python_venv")


def _spec_extras(folder: Path, toml: dict[str, Any]) -> dict[str, Any]:
    extras = json.loads(((toml.get("metadata") or {}).get(SPEC_KEY)) or "{}")
    if not isinstance(extras, dict):
        raise HarborTaskRefused(f"{folder}/task.toml: [metadata] {SPEC_KEY} is not a JSON object")
    unknown = sorted(set(extras) - set(SPEC_KEYS))
    env = extras.get("environment") or {}
    unknown += [f"environment.{k}" for k in sorted(env) if k in SPEC_ENV_REFUSED]
    if isinstance(env.get("trust_ca_bundle"), str):
        unknown.append("environment.trust_ca_bundle (a path)")
    if unknown:
        raise HarborTaskRefused(
            f"{folder}/task.toml: [metadata] {SPEC_KEY} sets {', '.join(unknown)}, which wholeloop's export never "
            "writes there (the import derives them from the task directory)"
        )
    return extras


def _read_text(path: Path) -> str:
    try:
        with open(path, newline="") as fh:
            return fh.read()
    except OSError as exc:
        raise HarborTaskRefused(f"{path}: cannot read: {exc.strerror}") from None


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if done.returncode:
        raise HarborTaskRefused(f"{repo}: git {' '.join(args)} failed: {done.stderr.strip()[-400:]}")
    return done.stdout


# ------------------------------------------------------------------------------------------ import


ProgressFn = Callable[[str], None]


def import_harbor(folders: list[Path], out: Path, *, progress: ProgressFn | None = None) -> list[Path]:
    """Each Harbor task directory as a task spec `OUT/<id>.yaml` (with `OUT/<id>/repo.bundle`
    and `gold.diff`); the gold is taken by running solve.sh in the task's image. Raises
    HarborTaskRefused for the first directory that cannot be imported (nothing of it is written)."""
    say = progress or (lambda _line: None)
    planned = [(folder, *spec_of(folder)) for folder in folders]
    seen: set[str] = set()
    for folder, task, _ in planned:
        if task.id in seen:
            raise HarborTaskRefused(f"{folder}: task id {task.id!r} is imported twice")
        seen.add(task.id)
        if (out / f"{task.id}.yaml").exists() or (out / task.id).exists():
            raise HarborTaskRefused(
                f"{folder}: task {task.id} is already in {out}; remove {task.id}.yaml and {task.id}/ there to "
                "import it again, or give another --out"
            )
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for folder, task, shape in planned:
        say(f"{task.id}: bundling the repository")
        spec = out / f"{task.id}.yaml"
        (out / task.id).mkdir(parents=True, exist_ok=True)
        bundle = out / task.id / "repo.bundle"
        _git(folder / "environment" / shape.repo_source, "bundle", "create", str(bundle.resolve()), "HEAD")
        spec.write_text(dump_task(task))
        say(f"{task.id}: running solution/solve.sh")
        try:
            gold = take_gold(load_task(spec), folder / "solution", shape.workdir)
        except BaseException:
            spec.unlink(missing_ok=True)
            shutil.rmtree(out / task.id, ignore_errors=True)
            raise
        (out / task.id / "gold.diff").write_text(gold)
        spec.write_text(dump_task(task.model_copy(update={"gold_patch_file": f"{task.id}/gold.diff"})))
        written.append(spec)
    return written


def take_gold(task: Task, solution: Path, workdir: str) -> str:
    """The patch solve.sh makes to the task's repository, taken from outside its container."""
    backend = default_backend()
    images = build_task_images(task, backend=backend)
    rules = BaseRules.from_repository(images.snapshot.path, images.snapshot.commit)
    limits = task.limits.apply(Limits()).with_(network=False)
    with backend.start(images.task.tag, limits=limits, role="check", run_id="harbor-import") as sb:
        for path in sorted(p for p in solution.rglob("*") if p.is_file()):
            _inside(solution, path)  # a link out of solution/ would carry a host file into the container
            rel = path.relative_to(solution).as_posix()
            sb.write_file(f"/solution/{rel}", path.read_bytes(), mode=0o755 if path.suffix == ".sh" else 0o644)
        link = f"ln -sfn {REPO_DIR} {shlex.quote(workdir)} && " if workdir.rstrip("/") != REPO_DIR else ""
        done = sb.exec(f"{link}bash /solution/solve.sh", cwd=REPO_DIR, timeout=task.timeouts.tests_s)
        if done.returncode:
            tail = (done.combined().strip().splitlines() or [f"exit {done.returncode}"])[-1]
            raise HarborTaskRefused(f"{solution}/solve.sh failed in the task's container: {tail}")
        sb.exec(f"rm -f {shlex.quote(workdir)}" if link else "true", cwd="/")
        sb.stop()
        patch = take_patch(sb, rules).text
    if not patch.strip():
        raise HarborTaskRefused(f"{solution}/solve.sh changed nothing in the repository: no gold patch")
    return patch


# ------------------------------------------------------------------------------------------ export


def _toml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def _extras(task: Task) -> dict[str, Any]:
    """What Harbor's format has no field for, to be read back by the import."""
    data = task.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    keep: dict[str, Any] = {
        k: data[k] for k in ("test_command", "expected_xfail", "protected_paths", "allowed_paths") if k in data
    }
    for key in ("limits", "metadata", "created_at", "origin"):
        if key in data:
            keep[key] = data[key]
    env = {
        k: v
        for k, v in data.get("environment", {}).items()
        if k not in ("image", "setup", "install", "env", "python_venv")
    }
    keep["environment"] = {**env, "pull": task.environment.pull}
    keep["id"] = task.id
    return keep


def export_task(task: Task, out: Path) -> Path:
    """One task as a Harbor task directory `OUT/<id>/`; raises HarborExportRefused."""
    where = f"task {task.id}"
    if task.environment.dockerfile:
        raise HarborExportRefused(f"{where}: its environment is a Dockerfile of its own; the export writes one")
    command = task.hidden_tests.command.strip()
    if "\n" in command or _CUT.search(" " + command):
        raise HarborExportRefused(f"{where}: its hidden test command is not one simple command line: {command!r}")
    detected = [name for name, pattern in FRAMEWORKS if pattern.search(command)][:1]
    if detected != task.hidden_tests.parser_names():
        raise HarborExportRefused(
            f"{where}: its parser {task.hidden_tests.parser} would not be read back from its command {command!r}"
        )
    gold = task.gold()
    if not gold.strip():
        raise HarborExportRefused(f"{where}: no gold patch to write as solution/solve.sh")
    folder = out / task.id
    if folder.exists() and not (folder / "task.toml").is_file():
        raise HarborExportRefused(f"{where}: {folder} exists and is not a Harbor task directory; give another OUT")
    if folder.exists():
        shutil.rmtree(folder)
    for sub in ("environment", "tests", "solution"):
        (folder / sub).mkdir(parents=True)
    (folder / "instruction.md").write_text(task.problem_statement)
    toml = [
        "[metadata]",
        f"{SPEC_KEY} = {_toml_str(json.dumps(_extras(task), sort_keys=True))}",
        "",
        "[agent]",
        f"timeout_sec = {float(task.timeouts.agent_s)}",
        "",
        "[verifier]",
        f"timeout_sec = {float(task.timeouts.tests_s)}",
        "",
        "[environment]",
        f"workdir = {_toml_str(HARBOR_WORKDIR)}",
        'network_mode = "no-network"',
        "",
    ]
    (folder / "task.toml").write_text("\n".join(toml))
    _write_repository(task, folder / "environment" / "repo")
    lines = [f"FROM {task.environment.image}"]
    lines += [f"ENV {key}={json.dumps(value)}" for key, value in sorted(task.environment.env.items())]
    if task.environment.python_venv:
        lines += [f"RUN {VENV_RUN}", f"ENV {VENV_ENV}"]
    lines += [f"RUN {cmd}" for cmd in task.environment.setup]
    lines += [f"COPY repo {HARBOR_WORKDIR}", f"WORKDIR {HARBOR_WORKDIR}"]
    lines += [f"RUN {cmd}" for cmd in task.environment.install]
    for cmd in [*task.environment.setup, *task.environment.install]:
        if "\n" in cmd:
            raise HarborExportRefused(f"{where}: an environment command spans lines: {cmd!r}")
    (folder / "environment" / "Dockerfile").write_text("\n".join(lines) + "\n")
    script = ["#!/bin/bash", f"cd {HARBOR_WORKDIR}"]
    test_patch = task.test_patch()
    if test_patch:
        (folder / "tests" / "test.patch").write_text(test_patch)
        script.append("git apply --whitespace=nowarn /tests/test.patch")
    for n, (dest, content) in enumerate(sorted(task.hidden_tests.files.items())):
        name = f"file-{n}-{PurePosixPath(dest).name}"
        (folder / "tests" / name).write_text(content)
        script += [f"mkdir -p {shlex.quote(str(PurePosixPath(dest).parent))}", f"cp /tests/{name} {dest}"]
    script += [
        command,
        "status=$?",
        f"mkdir -p {PurePosixPath(REWARD_FILE).parent}",
        f'if [ "$status" -eq 0 ]; then echo 1 > {REWARD_FILE}; else echo 0 > {REWARD_FILE}; fi',
        "",
    ]
    (folder / "tests" / "test.sh").write_text("\n".join(script))
    config = {"FAIL_TO_PASS": task.fail_to_pass, "PASS_TO_PASS": task.pass_to_pass}
    (folder / "tests" / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    (folder / "solution" / "gold.patch").write_text(gold if gold.endswith("\n") else gold + "\n")
    solve = ["#!/bin/bash", "set -e", f"cd {HARBOR_WORKDIR}", "git apply --whitespace=nowarn /solution/gold.patch", ""]
    (folder / "solution" / "solve.sh").write_text("\n".join(solve))
    for script_path in (folder / "tests" / "test.sh", folder / "solution" / "solve.sh"):
        script_path.chmod(0o755)
    return folder


def _write_repository(task: Task, dest: Path) -> None:
    """The task's repository with the history up to its base commit only (no later commit, so
    not the fix), checked out at the base commit."""
    with tempfile.TemporaryDirectory(prefix="wholeloop-harbor-") as tmp:
        full = Path(tmp) / "full"
        _run(["git", "clone", "--quiet", "--no-checkout", task.repo_source(), str(full)], task)
        _run(["git", "-C", str(full), "branch", "--force", "wholeloop-base", task.base_commit], task)
        _run(
            [
                "git",
                "clone",
                "--quiet",
                "--no-local",
                "--single-branch",
                "--branch",
                "wholeloop-base",
                str(full),
                str(dest),
            ],
            task,
        )
    _run(["git", "-C", str(dest), "checkout", "--quiet", "--detach", task.base_commit], task)
    _run(["git", "-C", str(dest), "remote", "remove", "origin"], task)


def _run(cmd: list[str], task: Task) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise HarborExportRefused(f"task {task.id}: {' '.join(cmd[:4])} failed: {done.stderr.strip()[-400:]}")


def export_harbor(suite: Path, out: Path) -> list[Path]:
    """Every task of `suite` (quarantined ones left out) as Harbor task directories under `out`."""
    tasks = [t for t in load_tasks(suite) if not t.quarantined]
    out.mkdir(parents=True, exist_ok=True)
    return [export_task(task, out) for task in tasks]
