"""A task's environment, inferred from the repository at its base commit, overridable per repository.

Inference reads, at the base commit: `pyproject.toml` (build-system requires, project dependencies,
the `test`/`tests`/`testing` optional dependencies and dependency groups), `setup.cfg` (install_requires,
the same extras, tests_require), `setup.py` (the same keywords when they are literals), `requirements*.txt`
(and `requirements/*.txt`; names with test or dev in them are test requirements), `tox.ini` ([testenv]
deps) and `noxfile.py` (what test sessions `session.install`). The test runner of the task's parser
(pytest) is added when nothing names it.

Dependencies resolve as of a date (uv's `--exclude-newer`): by default the fix commit's date, so
an old commit does not get this year's releases. The resolution runs once per distinct input in
a small resolver container (uv from PyPI, network on) and gives exact pins; the environment
image installs those pins. So commits whose bases need the same environment get the same image
(built once), and a commit that needs another gets its own. The repository itself is installed
in the task image, editable, from the pinned build backend (`pip install --no-build-isolation -e .`).

`wholeloop.yaml` overrides any of it (see `RepoConfig` and docs/tasks.md): found at `--env-file`,
else in the repository's folder (committed or not), else beside it as `<name>.wholeloop.yaml`,
else committed at the base commit.
"""

from __future__ import annotations

import ast
import configparser
import hashlib
import io
import json
import re
import shlex
import tarfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Literal, cast

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, ValidationInfo, field_validator

from sandbox import DEFAULT_BASE, EnvSpec, Limits, cache_dir, env_like
from sandbox import Backend as SandboxBackend

from .. import pysyntax
from ..parsers import get_parser
from ..sandboxes import default_backend
from .backends import HOOK_SCRIPT, Backend, read_backend, scm_version
from .gitrepo import GitRepo, MineError, parse_date
from .testdeps import TEST_SCAN_BYTES, addopts_plugins, programs_looked_up, pytest_config_addopts, read_tool_deps

UV_PIN = "uv==0.9.5"  # the resolver and installer, from PyPI inside the image build
HOOKS_PIN = "pyproject_hooks==1.2.0"  # how the resolver asks a build backend (as pip and build do)
CONFIG_NAME = "wholeloop.yaml"
TEST_EXTRAS = ("test", "tests", "testing")
RESOLUTION_FORMAT = 2  # 2: the build backend's editable requirements join the resolution
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


class RepoConfig(BaseModel):
    """wholeloop.yaml: how to build and test one repository. Every key is optional; a key given
    here replaces what would be inferred."""

    model_config = ConfigDict(extra="forbid")

    image: str | None = Field(None, description="base image (default wholeloop/base:bookworm)")
    dockerfile: str | None = Field(None, description="a Dockerfile instead of image (relative to this file)")
    setup: list[str] | None = Field(None, description="environment setup commands, used as given (no resolution)")
    test_requirements: list[str] | None = Field(None, description="replace the inferred test requirements")
    requirements: list[str] | None = Field(None, description="replace the inferred runtime requirements")
    extra_requirements: list[str] = Field(default_factory=list, description="added to whatever is resolved")
    system_packages: list[str] = Field(
        default_factory=list,
        description="Debian packages installed first (programs the tests run: mercurial, subversion), added to "
        "those inferred; not with setup, image or dockerfile (their own)",
    )
    install: list[str] | None = Field(None, description="commands run in the repository (default: editable install)")
    dependency_files: list[str] | None = Field(
        None, description="files install needs alone (package.json, a lock file): one install per distinct set"
    )
    dependencies_as_of: str | None = Field(
        None, description="'commit' (the fix commit's date, default), 'latest', or a date/time: uv --exclude-newer"
    )
    # test_scope comes before test_command: fields are validated in order, and test_command's check reads it
    test_scope: Literal["touched", "all"] | None = Field(None, description="run the touched test files or all")
    test_command: str | None = Field(None, description="hidden test command; {files} becomes the test files")
    visible_test_command: str | None = Field(None, description="the test command the agent is told about")
    parser: str | None = Field(None, description="test-result parser (default pytest)")
    env: dict[str, str] = Field(default_factory=dict, description="environment variables baked into the image")
    env_files: list[str] = Field(default_factory=list, description=".env-like files that may enter the image")
    tests_timeout_s: float | None = Field(None, gt=0, description="wall time for one hidden test run")
    secrets_baseline: str | None = Field(None, description="detect-secrets baseline of known false positives")
    egress: Literal["allow", "forbid"] | None = Field(
        None, description="forbid: no feature may send this repository's content to a model (docs/privacy.md)"
    )
    checks: list[str] | None = Field(
        None,
        description="the repository's own linters and type checkers for acceptance (ruff, mypy==1.11.2, "
        "flake8, black, isort, eslint; default: inferred from its config; []: none)",
    )
    acceptance: dict | None = Field(
        None,
        description="the acceptance policy reports apply to this repository's runs (`--policy`; docs/acceptance.md); "
        "not read by mining",
    )

    _path: str | None = PrivateAttr(None)

    @property
    def found_at(self) -> str | None:
        """Where this configuration was read from (None: no wholeloop.yaml, the defaults)."""
        return self._path

    @field_validator("dependencies_as_of")
    @classmethod
    def _as_of(cls, value: str | None) -> str | None:
        if value not in (None, "commit", "latest"):
            parse_date(value)
        return value

    @field_validator("test_command")
    @classmethod
    def _files(cls, value: str | None, info: ValidationInfo) -> str | None:
        # touched tests are run by naming them; the whole suite (test_scope: all, validated first) needs no {files}
        if value is not None and "{files}" not in value and info.data.get("test_scope") != "all":
            raise ValueError(
                "must contain {files} (the test files to run; empty for the whole suite), or give test_scope: all"
            )
        return value


class ConfigError(MineError):
    """A wholeloop.yaml that cannot be used: the message names the file and the field."""

    hint = "Fix that field of the file (every key is listed in docs/tasks.md, wholeloop.yaml), or remove the file."


def load_config(path: Path | None, repo: GitRepo, base: str | None = None) -> RepoConfig:
    """The repository's wholeloop.yaml (see the module docstring for where it is looked for), or
    the defaults. Raises MineError naming the file and the bad key."""
    text, where = None, None
    if path is not None:
        try:
            text, where = Path(path).read_text(), str(path)
        except OSError as exc:
            raise MineError(f"{path}: cannot read the environment file: {exc.strerror}") from None
    else:
        local = Path(repo.source).expanduser()
        for candidate in ([local / CONFIG_NAME] if local.is_dir() else []) + [
            local.parent / f"{repo.name}.{CONFIG_NAME}"
        ]:
            if candidate.is_file():
                text, where = candidate.read_text(), str(candidate)
                break
        if text is None and base is not None:
            blob = repo.read(base, CONFIG_NAME)
            if blob is not None:
                text, where = blob.decode("utf-8", "replace"), f"{CONFIG_NAME} at {base[:10]}"
    if text is None:
        return RepoConfig()
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        marked = isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None
        mark = exc.problem_mark if isinstance(exc, yaml.MarkedYAMLError) else None
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if marked and mark is not None else ""
        problem = (exc.problem if isinstance(exc, yaml.MarkedYAMLError) else None) or str(exc).splitlines()[0]
        raise ConfigError(f"{where}: not valid YAML{at}: {problem}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: wholeloop.yaml maps keys (install, test_requirements, ...) to values")
    try:
        config = RepoConfig.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"]) or "(top level)"
            if err["type"] == "extra_forbidden":
                problems.append(f"{key}: unknown key (known: {', '.join(RepoConfig.model_fields)})")
            else:
                problems.append(f"{key}: {err['msg']} (got {err.get('input')!r})")
        raise ConfigError(f"{where}: invalid wholeloop.yaml: " + "; ".join(problems)) from None
    config._path = where
    return config


# ----------------------------------------------------------------------------- inference


class EnvironmentNotInferred(MineError):
    hint = (
        "Write wholeloop.yaml beside the repository (or commit it) with at least `install:` and "
        "`test_requirements:`; see docs/tasks.md (wholeloop.yaml)."
    )


class ToolchainMissing(EnvironmentNotInferred):
    """The build backend compiles code with a toolchain the default image does not have."""

    hint = (
        "Give wholeloop.yaml an `image:` or `dockerfile:` that has the toolchain (or `setup:` commands "
        "that install it); see docs/tasks.md (wholeloop.yaml)."
    )


@dataclass
class BackendProbe:
    """What the resolver needs to ask the build backend for its editable requirements."""

    backend: Backend
    build_files: str  # sha256 of the files the backend's answer depends on (part of the resolution key)
    env: dict[str, str]  # the version to pretend (VCS-versioned projects), while the hook runs
    archive: Callable[[], bytes] = field(repr=False, compare=False)  # the tree at the base commit, as a tar


@dataclass
class EnvPlan:
    """What a base commit needs, before resolution."""

    requirements: list[str]  # build + runtime + test, to resolve together
    install: list[str]
    sources: list[str]  # files read
    as_of: str | None  # uv --exclude-newer (ISO time), None = latest
    setup: list[str] | None = None  # given verbatim by wholeloop.yaml: no resolution
    image: str = DEFAULT_BASE
    dockerfile: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    probe: BackendProbe | None = None  # ask the build backend what an editable install needs
    system: list[str] = field(default_factory=list)  # Debian packages the setup installs first (a C compiler)

    def resolution_key(self) -> str:
        data: dict[str, object] = {
            "format": RESOLUTION_FORMAT,
            "uv": UV_PIN,
            "image": self.image,
            "dockerfile": self.dockerfile,
            "requirements": sorted(set(self.requirements)),
            "as_of": self.as_of,
        }
        if self.probe is not None:
            data["probe"] = {
                "hooks": HOOKS_PIN,
                "backend": self.probe.backend.backend,
                "backend_path": self.probe.backend.backend_path,
                "requires": list(self.probe.backend.requires),
                "build_files": self.probe.build_files,
                "env": self.probe.env,
            }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def _req_name(req: str) -> str:
    match = _REQ_NAME.match(req)
    return re.sub(r"[-_.]+", "-", match.group(1)).lower() if match else ""


def _requirement_lines(text: str, read: Callable[[str], str | None], here: str, seen: set[str]) -> list[str]:
    """Requirement strings of a requirements file, following -r includes (read relative to `here`)."""
    out = []
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("-r ", "--requirement ", "-r")) and not line.startswith("-r-"):
            target = line.split(None, 1)[1] if " " in line else line[2:]
            path = str(Path(here).parent / target) if here else target
            path = path.removeprefix("./")
            if path not in seen:
                seen.add(path)
                included = read(path)
                if included is not None:
                    out += _requirement_lines(included, read, path, seen)
            continue
        if line.startswith(("-", ".", "/", "file:", "git+")) or "{" in line:
            continue  # options, the project itself, local paths, VCS URLs, tox substitutions
        out.append(line)
    return out


def _called(node: ast.AST) -> str | None:
    """The name a call calls: `setup(...)` and `setuptools.setup(...)` both give "setup"."""
    if not isinstance(node, ast.Call):
        return None
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _literal(node: ast.AST) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None


#: what a project that compiles C extensions gets (the base image has no compiler, nor Python's headers)
C_TOOLCHAIN = ("build-essential", "python3-dev")
_EXTENSION = re.compile(r"\b(?:ext_modules|Extension\s*\(|cythonize\s*\()")


def builds_c(read: Callable[[str], str | None]) -> str | None:
    """Why the project compiles C code when installed ("setup.py builds C extensions"), or None:
    setup.py declaring extension modules (setuptools' Extension, ext_modules, cythonize) or
    pyproject.toml's [tool.setuptools] ext-modules."""
    if _EXTENSION.search(read("setup.py") or ""):
        return "setup.py builds C extensions"
    if re.search(r"^\s*ext-modules\s*=", read("pyproject.toml") or "", re.MULTILINE):
        return "pyproject.toml's [tool.setuptools] ext-modules builds C extensions"
    return None


def _programs_of_tests(names: set[str], read: Callable[[str], str | None]) -> dict[str, str]:
    """The programs the Python test files look up that Debian ships (testdeps.programs_looked_up)."""
    parser = get_parser("pytest")
    texts = []
    for path in sorted(names):
        if path.endswith(".py") and parser.is_test_path(path):
            text = read(path)
            if text and len(text) <= TEST_SCAN_BYTES and "which(" in text:
                texts.append(text)
    return programs_looked_up(texts)


def _setup_py(text: str) -> tuple[list[str] | None, list[str], list[str]]:
    """(install_requires or None when not a literal, tests_require + test extras, setup_requires)."""
    try:
        tree = pysyntax.parse(text)
    except SyntaxError:
        return None, [], []
    runtime: list[str] | None = []
    tests: list[str] = []
    build: list[str] = []
    for node in ast.walk(tree):
        if _called(node) == "setup" and isinstance(node, ast.Call):
            for kw in node.keywords:
                value = _literal(kw.value)
                if kw.arg == "install_requires":
                    runtime = list(value) if isinstance(value, (list, tuple)) else None
                elif kw.arg == "tests_require" and isinstance(value, (list, tuple)):
                    tests += list(value)
                elif kw.arg == "setup_requires" and isinstance(value, (list, tuple)):
                    build += list(value)
                elif kw.arg == "extras_require" and isinstance(value, dict):
                    for extra in TEST_EXTRAS:
                        tests += list(value.get(extra) or [])
                elif kw.arg is None:  # **kwargs: install_requires might hide in there
                    runtime = runtime if runtime else None
    return runtime, [str(t) for t in tests], [str(b) for b in build]


def _noxfile(text: str) -> list[str]:
    try:
        tree = pysyntax.parse(text)
    except SyntaxError:
        return []
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef) or "test" not in fn.name:
            continue
        for node in ast.walk(fn):
            if _called(node) == "install" and isinstance(node, ast.Call):
                args = [_literal(a) for a in node.args]
                skip = False
                for arg in args:
                    if skip:
                        skip = False
                        continue
                    if not isinstance(arg, str):
                        continue
                    if arg in ("-r", "-c", "-e"):
                        skip = True
                        continue
                    if not arg.startswith(("-", ".")):
                        out.append(arg)
    return out


def infer_environment(
    repo: GitRepo,
    base: str,
    created_at: datetime,
    config: RepoConfig,
    *,
    runner: str = "pytest",
    as_of: str | None = None,
) -> EnvPlan:
    """The environment of `repo` at `base` (see the module docstring); `as_of` overrides the
    config's dependencies_as_of. Raises EnvironmentNotInferred saying which file to write."""

    def read(path: str) -> str | None:
        blob = repo.read(base, path)
        return None if blob is None else blob.decode("utf-8", "replace")

    names = {path for _, path in repo.files(base)}
    sources: list[str] = []
    build: list[str] = []
    runtime: list[str] | None = []
    tests: list[str] = []
    notes: list[str] = []
    project_name = ""
    data: dict = {}
    known_extras: dict[str, Callable[[], list[str]]] = {}  # the project's extras, by name
    known_groups: dict[str, Callable[[], list[str]]] = {}  # its dependency groups (PEP 735), by name

    pyproject = read("pyproject.toml") if "pyproject.toml" in names else None
    if pyproject is not None:
        sources.append("pyproject.toml")
        try:
            data = tomllib.loads(pyproject)
        except tomllib.TOMLDecodeError as exc:
            notes.append(f"pyproject.toml is not valid TOML ({exc}); ignored")
            data = {}
        build += list((data.get("build-system") or {}).get("requires") or [])
        project = data.get("project") or {}
        project_name = _req_name(str(project.get("name", "")))
        if "dependencies" in (project.get("dynamic") or []):
            runtime = None
        elif runtime is not None:
            runtime += list(project.get("dependencies") or [])
        extras = project.get("optional-dependencies") or {}
        groups = data.get("dependency-groups") or {}

        def expand(items: list, depth: int = 0) -> list[str]:
            out = []
            for item in items:
                if isinstance(item, dict) and "include-group" in item and depth < 5:
                    out += expand(groups.get(item["include-group"]) or [], depth + 1)
                elif isinstance(item, str):
                    name, _, rest = item.partition("[")
                    if project_name and _req_name(name) == project_name and rest and depth < 5:
                        for extra in rest.rstrip("]").split(","):
                            out += expand(extras.get(extra.strip()) or [], depth + 1)
                    elif not (project_name and _req_name(name) == project_name):
                        out.append(item)
            return out

        for name, items in extras.items():
            known_extras[str(name)] = partial(expand, items)
        for name, items in groups.items():
            known_groups[str(name)] = partial(expand, items)
        for extra in [e for e in TEST_EXTRAS if e in extras] or (["dev"] if "dev" in extras else []):
            tests += expand(extras.get(extra) or [])
        chosen = [g for g in TEST_EXTRAS if g in groups] or (["dev"] if "dev" in groups else [])
        for group in chosen:
            tests += expand(groups[group])
        if (data.get("tool") or {}).get("poetry"):
            runtime = None
            notes.append("poetry project: runtime dependencies are installed with the project (not pinned)")
    if "setup.cfg" in names:
        text = read("setup.cfg") or ""
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(text)
        except configparser.Error as exc:
            notes.append(f"setup.cfg cannot be parsed ({exc}); ignored")
        else:
            if parser.has_section("options") or parser.has_section("options.extras_require"):
                sources.append("setup.cfg")
            if parser.has_option("options", "install_requires") and runtime is not None:
                runtime += _lines(parser.get("options", "install_requires"))
            if parser.has_option("options", "tests_require"):
                tests += _lines(parser.get("options", "tests_require"))
            if parser.has_option("options", "setup_requires"):
                build += _lines(parser.get("options", "setup_requires"))
            if parser.has_section("options.extras_require"):
                for name in parser.options("options.extras_require"):
                    value = parser.get("options.extras_require", name)
                    known_extras.setdefault(name, partial(_lines, value))
            for extra in TEST_EXTRAS:
                if parser.has_option("options.extras_require", extra):
                    tests += _lines(parser.get("options.extras_require", extra))
    if "setup.py" in names:
        sources.append("setup.py")
        setup_runtime, setup_tests, setup_build = _setup_py(read("setup.py") or "")
        tests += setup_tests
        build += setup_build
        if setup_runtime is None:
            runtime = None
            notes.append("setup.py computes install_requires: runtime dependencies are installed with the project")
        elif runtime is not None:
            runtime += setup_runtime
    backend = read_backend(data or None, build_fallback=["setuptools", "wheel"])
    if not build and any(s in sources for s in ("pyproject.toml", "setup.cfg", "setup.py")):
        build += ["setuptools", "wheel"]  # no [build-system]: setuptools, as PEP 517 says
    requirement_files = sorted(
        p
        for p in names
        if re.fullmatch(
            r"(requirements[^/]*|[^/]*-requirements|[^/]*_requirements)\.(txt|in)|requirements/[^/]+\.(txt|in)", p
        )
    )
    seen: set[str] = set(requirement_files)
    for path in requirement_files:
        if path.endswith(".in") and path[:-3] + ".txt" in names:
            continue  # pip-tools input beside its compiled file: the compiled one wins
        sources.append(path)
        lines = _requirement_lines(read(path) or "", read, path, seen)
        if re.search(r"test|dev|ci", path.rsplit("/", 1)[-1]):
            tests += lines
        elif runtime is not None:
            runtime += lines
        else:
            tests += lines  # runtime is installed with the project; these still help
    tools = read_tool_deps(names, read, data)
    sources += tools.sources
    tests += _requirement_lines("\n".join(tools.requirements), read, "", seen)
    for extra in _dedupe(tools.extras):  # the project's own extras, installed by tox or hatch
        tests += known_extras.get(extra, list)()
    for group in _dedupe(tools.groups):  # the project's dependency groups, installed by tox (dependency_groups)
        tests += known_groups.get(group, list)()
    if "noxfile.py" in names:
        installed = _noxfile(read("noxfile.py") or "")
        if installed:
            sources.append("noxfile.py")
            tests += installed

    if not any(s in sources for s in ("pyproject.toml", "setup.cfg", "setup.py")) and config.install is None:
        if not sources and config.setup is None:
            raise EnvironmentNotInferred(
                f"cannot infer how to install {repo.source} at {base[:10]}: it has none of pyproject.toml, "
                "setup.cfg, setup.py, requirements*.txt, tox.ini, noxfile.py"
            )
    config_file, addopts = pytest_config_addopts(names, read, data)
    if runner == "pytest":
        present = {_req_name(t) for t in tests + (runtime or [])}
        plugins = [p for p in addopts_plugins(addopts) if p not in present]
        if plugins:
            tests += plugins
            notes.append(f"{config_file}'s pytest addopts need {', '.join(plugins)}: installed with the tests")
    if config.test_requirements is not None:
        tests = list(config.test_requirements)
        sources.append(f"{config._path}: test_requirements")
    if config.requirements is not None:
        runtime = list(config.requirements)
        sources.append(f"{config._path}: requirements")
    if not any(_req_name(t) == runner for t in tests + (runtime or [])):
        tests.append(runner)
    packaged = any(s in sources for s in ("pyproject.toml", "setup.cfg", "setup.py"))
    own_image = config.image is not None or config.dockerfile is not None or config.setup is not None
    needed = backend.toolchain_needed() if packaged and not own_image else None
    if needed is not None:
        raise ToolchainMissing(
            f"{repo.source} at {base[:10]}: its build backend needs {needed[0]}, which needs {needed[1]}; "
            f"the default image {DEFAULT_BASE} has none"
        )
    system: list[str] = []
    if packaged and not own_image and (why := builds_c(read)):
        system = list(C_TOOLCHAIN)
        notes.append(f"{why}: Debian's {' and '.join(C_TOOLCHAIN)} are installed")
    if not own_image:
        programs = _programs_of_tests(names, read)
        if programs:
            system += [p for p in programs.values() if p not in system]
            notes.append(
                "the tests look up "
                + ", ".join(f"`{name}` ({package})" for name, package in programs.items())
                + ": Debian's packages are installed"
            )
        system = sorted(set(system + list(config.system_packages)))
    probe = None
    if config.install is not None:
        install = list(config.install)
    elif packaged:
        version_env = backend.version_env(scm_version(repo, base)) if backend.scm else {}
        prefix = "".join(f"{k}={shlex.quote(v)} " for k, v in version_env.items())
        install = [
            prefix + "pip install --no-build-isolation " + ("--no-deps " if runtime is not None else "") + "-e ."
        ]
        if version_env:
            notes.append(
                f"versioned by {backend.scm} from git tags: installed as version {next(iter(version_env.values()))}"
            )
        if config.setup is None:
            build_files = hashlib.sha256()
            for path in ("pyproject.toml", "setup.py", "setup.cfg"):
                if path in names:
                    build_files.update(path.encode() + b"\0" + (repo.read(base, path) or b"") + b"\0")
            probe = BackendProbe(
                backend=backend,
                build_files=build_files.hexdigest(),
                env=version_env,
                archive=lambda: _tree_archive(repo, base),
            )
    else:
        install = []
    requirements = (
        _dedupe(build + (runtime or []) + tests + list(config.extra_requirements))
        if packaged
        else _dedupe((runtime or []) + tests + list(config.extra_requirements))
    )
    relaxed: list[str] = []
    if config.test_requirements is None and config.requirements is None:  # given ones are not second-guessed
        requirements, relaxed = _relax_disagreeing_pins(requirements)
    if relaxed:
        notes.append(f"pins that disagree between requirement files left to the resolver: {', '.join(relaxed)}")
    choice = as_of or config.dependencies_as_of or "commit"
    if choice == "latest":
        when = None
    elif choice == "commit":
        when = created_at.astimezone(UTC).isoformat().replace("+00:00", "Z")
    else:
        when = parse_date(choice, end_of_day=True).astimezone(UTC).isoformat().replace("+00:00", "Z")
    return EnvPlan(
        requirements=requirements,
        install=install,
        sources=sources,
        as_of=when,
        setup=list(config.setup) if config.setup is not None else None,
        image=config.image or DEFAULT_BASE,
        dockerfile=config.dockerfile,
        env={"PYTHONHASHSEED": "0", **config.env},  # as grading's (grading.determinism): the agent's runs agree
        notes=notes,
        probe=probe,
        system=system,
    )


def _tree_archive(repo: GitRepo, base: str) -> bytes:
    """The tree at `base` as a tar, without the files snapshots leave out (.env and the like)."""
    raw = tarfile.open(fileobj=io.BytesIO(repo.git("archive", "--format=tar", base)))
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for member in raw.getmembers():
            if env_like(member.name):
                continue
            tar.addfile(member, raw.extractfile(member) if member.isfile() else None)
    return out.getvalue()


def _lines(value: str) -> list[str]:
    return [
        line.split(" #", 1)[0].strip()
        for line in value.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def _relax_disagreeing_pins(requirements: list[str]) -> tuple[list[str], list[str]]:
    """Drop the exact pins (`name==v`) of a distribution that the requirements pin to different
    versions, or that another of its requirements excludes: pins gathered from several files (a
    requirements file compiled per tool, each on its own day: wcwidth's) were never meant to
    be installed together, and uv refuses the union ("you require certifi==2026.5.20 and
    certifi==2026.7.22"). The resolver then picks that distribution as of the date, within the
    ranges that remain; a name left with nothing is kept bare. Returns (requirements, names)."""
    parsed: dict[int, Requirement] = {}
    for i, text in enumerate(requirements):
        try:
            parsed[i] = Requirement(text)
        except InvalidRequirement:
            continue
    by_name: dict[str, list[int]] = {}
    for i, one in parsed.items():
        by_name.setdefault(canonicalize_name(one.name), []).append(i)

    def pin(req: Requirement) -> str | None:
        specs = list(req.specifier)
        return specs[0].version if len(specs) == 1 and specs[0].operator in ("==", "===") else None

    drop: set[int] = set()
    relaxed: list[str] = []
    for name, indices in by_name.items():
        pins = {i: v for i in indices if (v := pin(parsed[i])) is not None and "*" not in v}
        if not pins:
            continue
        others = [parsed[i].specifier for i in indices if i not in pins]
        excluded = any(not spec.contains(v, prereleases=True) for v in pins.values() for spec in others)
        if len(set(pins.values())) > 1 or excluded:
            drop.update(pins)
            relaxed.append(name)
            if len(pins) == len(indices):  # nothing else names it: keep the name itself
                requirements = list(requirements)
                first = min(pins)
                requirements[first] = parsed[first].name
                drop.discard(first)
    return [r for i, r in enumerate(requirements) if i not in drop], relaxed


def _dedupe(items: list[str]) -> list[str]:
    seen, out = set(), []
    for item in (str(i).strip() for i in items):
        if item and item not in seen:
            seen.add(item)
            out.append(item)
    return out


# ----------------------------------------------------------------------------- resolution


class ResolutionFailed(MineError):
    hint = "Pin or replace the requirements in wholeloop.yaml (test_requirements / requirements / setup)."


def resolver_spec(image: str, ca_bundle: str | None) -> EnvSpec:
    return EnvSpec(image=image, setup=(f"pip install -q {UV_PIN} {HOOKS_PIN}",), ca_bundle=ca_bundle, network=True)


def _cache_path(key: str) -> Path:
    return cache_dir() / "resolutions" / f"{key}.json"


def resolve(
    plans: list[EnvPlan],
    *,
    ca_bundle: str | None,
    log: Callable[[str], None] | None = None,
    timeout_s: float = 600,
    backend: SandboxBackend | None = None,
) -> dict[str, list[str] | ResolutionFailed]:
    """Exact pins for each distinct plan (by `resolution_key`), resolved with uv as of each plan's
    date in one resolver container of `backend` (default: `harness.sandboxes.default_backend()`);
    cached on the host. A plan uv cannot resolve maps to its ResolutionFailed."""
    out: dict[str, list[str] | ResolutionFailed] = {}
    todo: dict[str, EnvPlan] = {}
    for plan in plans:
        if plan.setup is not None:
            continue
        key = plan.resolution_key()
        cached = _cache_path(key)
        if cached.is_file():
            out[key] = json.loads(cached.read_text())["pins"]
        elif key not in todo:
            todo[key] = plan
    if not todo:
        return out
    by_image: dict[str, list[tuple[str, EnvPlan]]] = {}
    for key, plan in todo.items():
        by_image.setdefault(plan.image, []).append((key, plan))
    for image, group in by_image.items():
        backend = backend or default_backend()
        resolver = backend.env_image(resolver_spec(image, ca_bundle), log=log)
        limits = Limits(network=True, command_timeout_s=timeout_s)
        with backend.start(resolver.tag, limits=limits, role="resolve", workdir="/tmp") as sb:
            for key, plan in group:
                editable: list[str] = []
                if plan.probe is not None:
                    asked = _ask_backend(sb, key, plan, timeout_s)
                    if isinstance(asked, ResolutionFailed):
                        out[key] = asked
                        continue
                    editable = asked
                    if log and editable:
                        log(f"{plan.probe.backend.name} needs {', '.join(editable)} for an editable install")
                requirements = _dedupe(plan.requirements + editable)
                cmd = [
                    "uv",
                    "pip",
                    "compile",
                    "--quiet",
                    "--no-header",
                    "--no-annotate",
                    "--python",
                    "/opt/venv/bin/python",
                ]
                if plan.as_of:
                    cmd += ["--exclude-newer", plan.as_of]
                cmd.append("-")
                if log:
                    log(f"resolving {len(requirements)} requirement(s) as of {plan.as_of or 'now'}")
                result = sb.exec(cmd, stdin="\n".join(requirements).encode() + b"\n", timeout=timeout_s)
                if not result.ok:
                    tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-8:])
                    out[key] = ResolutionFailed(
                        f"uv cannot resolve {', '.join(requirements)} as of {plan.as_of or 'now'}:\n{tail}"
                    )
                    continue
                pins = [
                    line.strip()
                    for line in result.stdout.splitlines()
                    if line.strip() and not line.lstrip().startswith(("#", "-"))
                ]
                path = _cache_path(key)
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                tmp.write_text(
                    json.dumps(
                        {
                            "requirements": plan.requirements,
                            "editable_requirements": editable,
                            "as_of": plan.as_of,
                            "uv": UV_PIN,
                            "pins": pins,
                            "resolved_at": datetime.now(UTC).isoformat(),
                        }
                    )
                )
                tmp.replace(path)
                out[key] = pins
    return out


def _ask_backend(sb, key: str, plan: EnvPlan, timeout_s: float) -> list[str] | ResolutionFailed:
    """The build backend's own requirements for an editable install (its PEP 660 hook, or the
    wheel hook when it has none), asked in the resolver container `sb`: the build requirements go
    into a fresh venv (as of the plan's date), the tree at the base commit beside it."""
    probe = cast(BackendProbe, plan.probe)
    work = f"/tmp/wl-{key}"
    venv_python = f"{work}/venv/bin/python"
    install = ["uv", "pip", "install", "--quiet", "--python", venv_python]
    if plan.as_of:
        install += ["--exclude-newer", plan.as_of]
    steps: list[tuple[list[str], bytes | None]] = [
        (["uv", "venv", "--quiet", "--python", "/opt/venv/bin/python", f"{work}/venv"], None),
        ([*install, "-r", "/dev/stdin"], "\n".join(probe.backend.requires).encode() + b"\n"),
        (["mkdir", "-p", f"{work}/src"], None),
    ]
    for cmd, stdin in steps:
        result = sb.exec(cmd, stdin=stdin, timeout=timeout_s)
        if not result.ok:
            tail = _tail(result.stderr or result.stdout)
            return ResolutionFailed(
                f"cannot install the build requirements {', '.join(probe.backend.requires)} "
                f"as of {plan.as_of or 'now'}:\n{tail}"
            )
    sb.put_archive(f"{work}/src", probe.archive())
    path = json.dumps(list(probe.backend.backend_path) if probe.backend.backend_path is not None else None)
    result = sb.exec(
        ["/opt/venv/bin/python", "-c", HOOK_SCRIPT, f"{work}/src", probe.backend.backend, path, venv_python],
        env=probe.env or None,
        timeout=timeout_s,
    )
    answer = None
    if result.ok:
        try:
            answer = json.loads(result.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            answer = None
    if not isinstance(answer, dict) or not isinstance(answer.get("requires"), list):
        return ResolutionFailed(
            f"the build backend {probe.backend.backend} cannot say what an editable install needs:\n"
            + _tail(result.stderr or result.stdout)
        )
    return [str(r) for r in answer["requires"]]


def _tail(text: str, lines: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def setup_commands(plan: EnvPlan, pins: list[str] | None) -> list[str]:
    """The environment's setup: uv from PyPI, then the exact pins (or the commands given)."""
    if plan.setup is not None:
        return list(plan.setup)
    body = "\n".join(pins or [])
    apt = (
        [
            f"apt-get update && apt-get install -y --no-install-recommends {' '.join(plan.system)} && rm -rf /var/lib/apt/lists/*"
        ]
        if plan.system
        else []
    )
    return apt + [f"pip install -q {UV_PIN}", f"uv pip install --quiet --no-cache -r /dev/stdin <<'PINS'\n{body}\nPINS"]


def environment_builds(checked: list[tuple[str, str | None, list[str]]]) -> dict[str, dict[str, int]]:
    """Per repository, from (repository, env image tag used or None, tags built) of each checked
    task: how many tasks were checked, on how many distinct environment images (tasks whose
    resolved pins are the same share one), and how many of those this check had to build."""
    out: dict[str, dict[str, int]] = {}
    envs: dict[str, set[str]] = {}
    built: dict[str, set[str]] = {}
    installs: dict[str, set[str]] = {}  # deps images built: one dependency install each
    for repository, env, tags in checked:
        row = out.setdefault(repository, {"tasks": 0, "environments": 0, "built": 0, "installs": 0})
        row["tasks"] += 1
        if env:
            envs.setdefault(repository, set()).add(env)
        built.setdefault(repository, set()).update(t for t in tags if t.startswith("wholeloop-env:"))
        installs.setdefault(repository, set()).update(t for t in tags if t.startswith("wholeloop-deps:"))
    for repository, row in out.items():
        row["environments"] = len(envs.get(repository, set()))
        row["built"] = len(built.get(repository, set()))
        row["installs"] = len(installs.get(repository, set()))
    return out


def describe_builds(builds: dict[str, dict[str, int]]) -> list[str]:
    """One line a repository: "structlog: 3 task(s) on 1 environment image (1 built now, 0 existed)"."""
    return [
        f"{repository}: {row['tasks']} task(s) checked on {row['environments']} environment image(s) "
        f"({row['built']} built now, {row['environments'] - row['built']} existed)"
        + (
            f"; {row['installs']} dependency install(s) run, each shared by the tasks of one lock file"
            if row.get("installs")
            else ""
        )
        for repository, row in sorted(builds.items())
    ]
