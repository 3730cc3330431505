"""Test dependencies from wherever a project keeps them besides its own metadata: tox, hatch,
poetry, pdm and uv configuration (environment.py reads extras, dependency groups, requirements
files and setup.py itself, and calls `read_tool_deps` for the rest).

Each file is read with the parser its format has (tomllib, configparser, packaging for names);
tox's own configuration loader is not used: tox is not a dependency of ours, a repository's tox
may be any version, and we do not select environments the way `tox -e` does. We want the *union*
of every test environment's dependencies, factor-specific ones included (`rich: rich` is installed
by tox only in the `-rich` environments, and the tests that need Rich are skipped everywhere
else): that is what this reader gives. Environments and factor conditions about something else
(docs, lint, typing, packaging, coverage reports) are left out.
"""

from __future__ import annotations

import configparser
import json
import re
import shlex
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field

from .backends import requirement_name

# Names that, as a tox factor or a hatch/poetry/pdm environment or group, are not about running tests.
NOT_TEST = frozenset(
    "docs doc lint linters linting pre-commit precommit mypy typing type types typecheck pyright pytype "
    "report docset build release publish upload fmt format style flake8 pylint ruff black isort spell "
    "spelling linkcheck clean bandit safety pkg package readme changelog bump codespell manifest "
    "sponsors watch serve bench benchmark benchmarks profile dev develop venv fix pkg_meta pkg-meta meta "
    "coverage upgrade update lock tools".split()
)
# What a test environment's `commands` run (an environment with commands of its own that run none
# of these is not a test environment: `coverage combine`, `pre-commit run`, `uv pip tree`).
_RUNNER = re.compile(r"\b(pytest|py\.test|unittest|nose2?|trial|stestr|green|ward)\b")
TEST_GROUPS = ("test", "tests", "testing")
# The Python of the default image (Debian bookworm's): a tox factor naming another interpreter
# (py38: backports.zoneinfo) is about that interpreter, and its pins often do not install on this one.
IMAGE_PYTHON = (3, 11)
_PY_FACTOR = re.compile(r"^(?:py|pypy|python)(\d)\.?(\d*)$")


@dataclass
class ToolDeps:
    requirements: list[str] = field(default_factory=list)  # PEP 508 strings
    extras: list[str] = field(default_factory=list)  # the project's own extras these tools install
    groups: list[str] = field(default_factory=list)  # the project's dependency groups (PEP 735) they install
    sources: list[str] = field(default_factory=list)  # "tox.ini", "pyproject.toml [tool.poetry]", ...


def read_tool_deps(names: set[str], read: Callable[[str], str | None], pyproject: dict) -> ToolDeps:
    """Test requirements from tox (tox.ini, tox.toml, [tool.tox]), hatch (hatch.toml,
    [tool.hatch.envs]), poetry groups, pdm dev-dependencies and uv (dev-dependencies, uv.lock)."""
    out = ToolDeps()
    tool = pyproject.get("tool") or {}
    tox_ini = read("tox.ini") if "tox.ini" in names else None
    legacy = (tool.get("tox") or {}).get("legacy_tox_ini")
    for text, where in ((tox_ini, "tox.ini"), (legacy, "pyproject.toml [tool.tox]")):
        if isinstance(text, str) and _tox_ini(text, out):
            out.sources.append(where)
    tox_toml = read("tox.toml") if "tox.toml" in names else None
    if tox_toml is not None and _tox_toml(_toml(tox_toml), out):
        out.sources.append("tox.toml")
    hatch_envs = ((tool.get("hatch") or {}).get("envs")) or {}
    if _hatch(hatch_envs, out):
        out.sources.append("pyproject.toml [tool.hatch.envs]")
    if "hatch.toml" in names and _hatch(_toml(read("hatch.toml") or "").get("envs") or {}, out):
        out.sources.append("hatch.toml")
    if _poetry(tool.get("poetry") or {}, out):
        out.sources.append("pyproject.toml [tool.poetry]")
    pdm = (tool.get("pdm") or {}).get("dev-dependencies") or {}
    if _groups(pdm, out):
        out.sources.append("pyproject.toml [tool.pdm.dev-dependencies]")
    uv_dev = (tool.get("uv") or {}).get("dev-dependencies")
    if isinstance(uv_dev, list) and uv_dev:
        out.requirements += [str(r) for r in uv_dev if not str(r).startswith("-")]
        out.sources.append("pyproject.toml [tool.uv]")
    if "uv.lock" in names:
        project = requirement_name(str((pyproject.get("project") or {}).get("name", "")))
        if project and _uv_lock(_toml(read("uv.lock") or ""), project, out):
            out.sources.append("uv.lock")
    return out


# ----------------------------------------------------------------------------- pytest's addopts

# Options of pytest plugins, as a repository's pytest configuration passes them in `addopts`, and
# the distribution that gives each: pytest exits "unrecognized arguments: --cov=parse" before
# running a test when the plugin is missing, so a project that names the plugin only there (parse
# 1.22) is tested with it installed, as its author runs it.
PLUGIN_OPTIONS: tuple[tuple[str, str], ...] = (
    ("--cov", "pytest-cov"),
    ("--no-cov", "pytest-cov"),
    ("--numprocesses", "pytest-xdist"),
    ("--dist", "pytest-xdist"),
    ("--maxprocesses", "pytest-xdist"),
    ("--timeout", "pytest-timeout"),
    ("--benchmark-", "pytest-benchmark"),
    ("--reruns", "pytest-rerunfailures"),
    ("--doctest-plus", "pytest-doctestplus"),
    ("--doctest-rst", "pytest-doctestplus"),
    ("--mypy", "pytest-mypy"),
    ("--randomly-", "pytest-randomly"),
    ("--hypothesis-", "hypothesis"),
    ("--asyncio-mode", "pytest-asyncio"),
    ("--mpl", "pytest-mpl"),
    ("--flake8", "pytest-flake8"),
    ("--snapshot-update", "syrupy"),
)
# Short options: `-n auto`, `-n2`, `-nauto` (pytest-xdist).
_SHORT_PLUGIN_OPTIONS = (("-n", "pytest-xdist"),)


def pytest_config_addopts(names: set[str], read: Callable[[str], str | None], pyproject: dict) -> tuple[str, str]:
    """(file, addopts) of the configuration pytest reads, in pytest's order (pytest.ini,
    .pytest.ini, pyproject.toml, tox.ini, setup.cfg: the first holding a pytest section wins)."""
    for path, section in (("pytest.ini", "pytest"), (".pytest.ini", "pytest")):
        if path in names:
            return path, _ini_option(read(path) or "", section, "addopts")
    tool = (pyproject.get("tool") or {}).get("pytest")
    if isinstance(tool, dict):
        opts = (tool.get("ini_options") or {}).get("addopts", tool.get("addopts", ""))
        return "pyproject.toml", " ".join(opts) if isinstance(opts, list) else str(opts or "")
    for path, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        if path in names:
            text = read(path) or ""
            if re.search(rf"^\[{re.escape(section)}\]", text, re.M):
                return path, _ini_option(text, section, "addopts")
    return "", ""


def _ini_option(text: str, section: str, option: str) -> str:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return ""
    return parser.get(section, option, fallback="")


def addopts_plugins(addopts: str) -> list[str]:
    """The plugin distributions the options in `addopts` need (`--cov=x` -> pytest-cov)."""
    try:
        words = shlex.split(addopts)
    except ValueError:
        words = addopts.split()
    out: list[str] = []
    for word in words:
        for option, dist in PLUGIN_OPTIONS:
            if word == option or word.startswith(option + "=") or (option.endswith("-") and word.startswith(option)):
                out.append(dist)
        for option, dist in _SHORT_PLUGIN_OPTIONS:
            if word.startswith(option) and not word.startswith("--"):
                out.append(dist)
    return list(dict.fromkeys(out))


def _toml(text: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


# ----------------------------------------------------------------------------- tox


def expand_braces(text: str) -> list[str]:
    """tox's generative names: "py3{8,9}-tests{,-rich}" -> py38-tests, py38-tests-rich, ..."""
    match = re.search(r"\{([^{}]*)\}", text)
    if not match:
        return [text]
    head, tail = text[: match.start()], text[match.end() :]
    return [name for option in match.group(1).split(",") for name in expand_braces(head + option.strip() + tail)]


def _factors(env: str) -> set[str]:
    """An environment's factors, and the names of two factors joined (pre-commit, coverage-report)."""
    parts = [f for f in env.split("-") if f]
    return set(parts) | {f"{a}-{b}" for a, b in zip(parts, parts[1:], strict=False)}


def _other_python(factor: str) -> bool:
    match = _PY_FACTOR.match(factor)
    if not match:
        return False
    major, minor = int(match.group(1)), match.group(2)
    return major != IMAGE_PYTHON[0] or (minor != "" and int(minor) != IMAGE_PYTHON[1])


def is_test_env(name: str, *, this_python: bool = False) -> bool:
    """A tox/hatch environment (or a factor condition) that runs tests: one of its names has no
    factor about something else (docs-sponsors, mypy-pkg and coverage-report do not). With
    `this_python` (a condition on one line of deps), it must also name no other interpreter than
    the image's (`py38: x` does not; `py311: x` and `py3: x` do). An environment's name may
    (py3{8,12}-tests-rich: its deps are what the tests need on any interpreter)."""
    return any(
        not (_factors(n.lstrip("!")) & NOT_TEST)
        and not (this_python and any(_other_python(f) for f in _factors(n.lstrip("!"))))
        for n in expand_braces(name)
    )


def _conditional(line: str) -> str | None:
    """The value of one tox setting line when the union of test environments has it: `dep`,
    `rich: dep`, `py3{8,12}: dep` and `!mypy: dep` do; `docs: sphinx` and `mypy: mypy` do not."""
    match = re.match(r"^\s*([!\w.{},-]+):\s+(.*)$", line)
    if not match or "://" in line[: match.end(1) + 3]:
        return line.strip()
    condition, value = match.groups()
    alternatives = [a for a in condition.split(",") if a]
    if any(a.startswith("!") for a in alternatives) or any(is_test_env(a, this_python=True) for a in alternatives):
        return value.strip()
    return None


def _tox_ini(text: str, out: ToolDeps) -> bool:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return False
    found = False
    for section in parser.sections():
        if section == "testenv":
            env = "testenv"
        elif section.startswith("testenv:"):
            env = section.split(":", 1)[1]
            commands = parser.get(section, "commands", fallback=None)
            if not is_test_env(env) or (commands is not None and not _RUNNER.search(commands)):
                continue
        else:
            continue
        for key, target in (("deps", out.requirements), ("extras", out.extras), ("dependency_groups", out.groups)):
            if not parser.has_option(section, key):
                continue
            for raw in parser.get(section, key).splitlines():
                line = raw.split(" #", 1)[0].strip()
                if not line or line.startswith("#"):
                    continue
                value = _conditional(line)
                if value and "{" not in value and not value.startswith((".", "/")):
                    if key != "deps":
                        target += [e.strip() for e in value.split(",") if e.strip()]
                    else:
                        target.append(value)
                    found = True
    return found


def _tox_toml(data: dict, out: ToolDeps) -> bool:
    envs = [("testenv", data.get("env_run_base") or {})]
    envs += [(name, env) for name, env in (data.get("env") or {}).items() if isinstance(env, dict)]
    found = False
    for name, env in envs:
        commands = env.get("commands")
        if name != "testenv" and (
            not is_test_env(name) or (commands is not None and not _RUNNER.search(json.dumps(commands)))
        ):
            continue
        for dep in env.get("deps") or []:
            if isinstance(dep, str) and not dep.startswith(("-", ".", "/")) and "{" not in dep:
                out.requirements.append(dep)
                found = True
        for key, target in (("extras", out.extras), ("dependency_groups", out.groups)):
            for name in env.get(key) or []:
                if isinstance(name, str):
                    target.append(name)
                    found = True
    return found


# ----------------------------------------------------------------------------- hatch, poetry, pdm, uv


def _hatch(envs: dict, out: ToolDeps) -> bool:
    """hatch environments that run tests: default, hatch-test and any named like a test env
    (their `dependencies`, `extra-dependencies` and `features`)."""
    found = False
    for name, env in envs.items():
        if not isinstance(env, dict) or not (name in ("default", "hatch-test") or name in TEST_GROUPS):
            continue
        for key in ("dependencies", "extra-dependencies"):
            for dep in env.get(key) or []:
                if isinstance(dep, str) and "{" not in dep:
                    out.requirements.append(dep)
                    found = True
        for feature in env.get("features") or []:
            out.extras.append(str(feature))
            found = True
    return found


def _groups(groups: dict, out: ToolDeps) -> bool:
    """pdm-style groups ({name: [PEP 508, ...]}): the test-named ones, else dev."""
    chosen = [g for g in TEST_GROUPS if g in groups] or (["dev"] if "dev" in groups else [])
    found = False
    for group in chosen:
        for dep in groups.get(group) or []:
            if isinstance(dep, str) and not dep.startswith("-") and "${" not in dep:
                out.requirements.append(dep)
                found = True
    return found


def poetry_requirement(name: str, spec: object) -> str | None:
    """A poetry dependency as PEP 508 ("^1.2" is >=1.2,<2.0; "~1.2" is >=1.2,<1.3); None for
    python itself and for path, git and url dependencies."""
    if name.lower() == "python":
        return None
    extras: list[str] = []
    marker = ""
    if isinstance(spec, dict):
        if any(k in spec for k in ("path", "git", "url")):
            return None
        extras = [str(e) for e in spec.get("extras") or []]
        if spec.get("markers"):
            marker = str(spec["markers"])
        spec = spec.get("version", "*")
    if isinstance(spec, list):  # several constraints by marker: any of them will do for a union
        return poetry_requirement(name, spec[0]) if spec else None
    constraint = ",".join(p for p in (_poetry_constraint(c) for c in str(spec).split(",")) if p)
    req = name + (f"[{','.join(extras)}]" if extras else "") + constraint
    return req + (f"; {marker}" if marker else "")


def _poetry_constraint(text: str) -> str:
    text = text.strip()
    if text in ("", "*"):
        return ""
    if text[0] in "^~" and not text.startswith("~="):
        parts = [int(p) if p.isdigit() else 0 for p in re.findall(r"[0-9]+", text[1:])[:3]] or [0]
        if text[0] == "^":
            idx = next((i for i, p in enumerate(parts) if p != 0), len(parts) - 1)
        else:
            idx = 1 if len(parts) > 1 else 0
        upper = parts[: idx + 1]
        upper[-1] += 1
        return f">={text[1:].strip()},<{'.'.join(map(str, upper))}"
    if text[0].isdigit():
        return f"=={text}"
    return text.replace(" ", "")


def _poetry(poetry: dict, out: ToolDeps) -> bool:
    groups = {name: (g or {}).get("dependencies") or {} for name, g in (poetry.get("group") or {}).items()}
    if poetry.get("dev-dependencies"):
        groups.setdefault("dev", poetry["dev-dependencies"])
    chosen = [g for g in TEST_GROUPS if g in groups] or (["dev"] if "dev" in groups else [])
    found = False
    for group in chosen:
        for name, spec in groups[group].items():
            req = poetry_requirement(str(name), spec)
            if req:
                out.requirements.append(req)
                found = True
    return found


def _uv_lock(lock: dict, project: str, out: ToolDeps) -> bool:
    """The project's development groups as uv.lock records them (package.metadata.requires-dev)."""
    for package in lock.get("package") or []:
        if requirement_name(str(package.get("name", ""))) != project:
            continue
        groups = {
            name: [_uv_requirement(d) for d in deps if isinstance(d, dict)]
            for name, deps in ((package.get("metadata") or {}).get("requires-dev") or {}).items()
        }
        return _groups({k: [r for r in v if r] for k, v in groups.items()}, out)
    return False


def _uv_requirement(dep: dict) -> str | None:
    name = dep.get("name")
    if not name or dep.get("editable") or dep.get("path") or dep.get("git"):
        return None
    extras = dep.get("extra") or dep.get("extras") or []
    req = str(name) + (f"[{','.join(extras)}]" if extras else "") + str(dep.get("specifier") or "")
    return req + (f"; {dep['marker']}" if dep.get("marker") else "")


#: the files whose requirement strings `marker_excluded` reads
DECLARING = ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini")
_QUOTED = re.compile(r"""(?:"([^"\n]+)"|'([^'\n]+)')""")


def _declarations(text: str) -> list[str]:
    """Candidate requirement strings in a file: its quoted strings and its lines (a string that is
    no requirement is dropped by the caller's parse)."""
    quoted = [a or b for a, b in _QUOTED.findall(text)]
    lines = [line.split(" #", 1)[0].strip() for line in text.splitlines()]
    return quoted + [line for line in lines if line and not line.startswith(("#", "-", "["))]


def marker_excluded(texts: dict[str, str], python: tuple[int, ...]) -> set[str]:
    """The distributions (normalised names: lower case, `_` for `-` and `.`) that the project asks
    for only under environment markers, none of which holds on this Python: `exceptiongroup;
    python_version<"3.11"` on 3.11. A test that skips because such a module is missing skips in the
    project's own CI on this interpreter too. `texts`: file name -> text (DECLARING and
    requirements files)."""
    from packaging.markers import InvalidMarker, UndefinedEnvironmentName
    from packaging.requirements import InvalidRequirement, Requirement

    version = ".".join(map(str, python[:2]))
    full = ".".join(map(str, (list(python) + [0, 0])[:3]))
    holds: dict[str, bool] = {}  # name -> some declaration of it applies here
    for text in texts.values():
        for candidate in _declarations(text):
            try:
                req = Requirement(candidate)
            except InvalidRequirement:
                continue
            name = re.sub(r"[-.]+", "_", req.name).lower()
            if req.marker is None or "extra" in str(req.marker):  # an extra's: asked for when it is
                holds[name] = True
                continue
            try:
                here = req.marker.evaluate({"python_version": version, "python_full_version": full, "extra": ""})
            except (InvalidMarker, UndefinedEnvironmentName):
                here = True  # not understood: counted as asked for
            holds[name] = holds.get(name, False) or here
    return {name for name, applies in holds.items() if not applies}


# Programs a project's tests look up (`shutil.which("hg")`) or name in a skip reason ("Requires
# Mercurial"), by the name they use, and the Debian (bookworm) package that ships each; None: Debian
# ships none. Programs, not Python packages: the environment gets them from apt (EnvPlan.system),
# never from pip. Only these: a name outside the table is not guessed at.
PROGRAM_PACKAGES: dict[str, str | None] = {
    "hg": "mercurial",
    "mercurial": "mercurial",
    "darcs": "darcs",
    "svn": "subversion",
    "subversion": "subversion",
    "fossil": "fossil",
    "bzr": "brz",
    "brz": "brz",
    "bazaar": "brz",
    "pijul": None,
    "git": "git",
}
IN_BASE_IMAGE = frozenset({"git"})  # wholeloop/base:bookworm has these already: nothing to install
_WHICH = re.compile(r"""\bwhich\(\s*["']([\w.+-]+)["']""")
TEST_SCAN_BYTES = 400_000  # test files larger than this are not read for programs


def programs_looked_up(texts: list[str]) -> dict[str, str]:
    """The programs these test sources look up with `shutil.which("NAME")` that Debian ships, as
    {name: Debian package}."""
    found: dict[str, str] = {}
    for text in texts:
        for name in _WHICH.findall(text):
            package = PROGRAM_PACKAGES.get(name.lower())
            if package and package not in IN_BASE_IMAGE:
                found[name] = package
    return dict(sorted(found.items()))
