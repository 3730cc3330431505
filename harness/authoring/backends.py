"""A Python project's build backend, read from its `[build-system]` (PEP 517/518), and what
installing the project editable needs besides it.

- Which backend: `build-backend` and `backend-path` as written; no `[build-system]` means
  setuptools' legacy backend (PEP 517's default).
- The backend's own editable requirements are asked of the backend itself, through its PEP 660
  hook `get_requires_for_build_editable` (via `pyproject_hooks`, the library pip and build call it
  with), in the resolver container, never guessed: hatchling answers `editables`, setuptools its
  `setup_requires`, and so on. `HOOK_SCRIPT` is what runs there.
- A version for snapshots: a snapshot has one commit and no tags, and the source tree given to the
  hook has no `.git` at all, so setuptools-scm (and hatch-vcs, which uses it) would invent a
  version or fail. When the project versions from its VCS, the version is the last tag reachable
  from the base commit in the real repository (`git describe`), else 0.0.0, given through
  SETUPTOOLS_SCM_PRETEND_VERSION (and PDM_BUILD_SCM_VERSION for pdm-backend).
- A backend that needs a toolchain the default image lacks (it has Python and git, no compiler)
  is refused with that reason, before anything is built.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from .gitrepo import GitRepo

LEGACY_BACKEND = "setuptools.build_meta:__legacy__"
# Build requirements that compile code with a toolchain the default image does not have.
TOOLCHAINS = {
    "maturin": "a Rust toolchain (cargo)",
    "setuptools-rust": "a Rust toolchain (cargo)",
    "scikit-build": "CMake and a C/C++ compiler",
    "scikit-build-core": "CMake and a C/C++ compiler",
    "meson-python": "Meson, Ninja and a C compiler",
}
# Build requirements (canonical names) that take the version from git tags.
SCM_PLUGINS = ("setuptools-scm", "hatch-vcs")
NO_TAG_VERSION = "0.0.0"

# Run with the resolver's own Python (which has pyproject_hooks) as:
#   python -c HOOK_SCRIPT <source dir> <backend> <backend-path as JSON or null> <build venv python>
# prints {"hook": ..., "requires": [...]}; the backend runs in the build venv, in the source dir.
HOOK_SCRIPT = r"""
import json, subprocess, sys
from pyproject_hooks import BuildBackendHookCaller, HookMissing, quiet_subprocess_runner
src, backend, path, python = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
caller = BuildBackendHookCaller(src, backend, backend_path=path, python_executable=python,
                                runner=quiet_subprocess_runner)
try:
    try:
        hook, requires = "get_requires_for_build_editable", caller.get_requires_for_build_editable()
    except HookMissing:
        hook, requires = "get_requires_for_build_wheel", caller.get_requires_for_build_wheel()
except subprocess.CalledProcessError as exc:
    sys.stderr.write((exc.output or b"").decode("utf-8", "replace"))
    sys.exit(1)
print(json.dumps({"hook": hook, "requires": list(requires)}))
"""


@dataclass(frozen=True)
class Backend:
    """What `[build-system]` says (or PEP 517's default when there is none)."""

    backend: str
    backend_path: tuple[str, ...] | None
    requires: tuple[str, ...]
    scm: str | None  # the VCS-version plugin in use ("setuptools-scm", "hatch-vcs", "pdm-backend"), or None

    @property
    def name(self) -> str:
        """The backend's distribution as people say it: hatchling, setuptools, flit_core, ..."""
        return self.backend.split(":")[0].split(".")[0]

    def toolchain_needed(self) -> tuple[str, str] | None:
        """(build requirement, what it needs) when one needs a toolchain the default image lacks."""
        for req in self.requires:
            name = requirement_name(req)
            if name in TOOLCHAINS:
                return name, TOOLCHAINS[name]
        return None

    def version_env(self, version: str) -> dict[str, str]:
        """Environment variables that give the project `version` without tags."""
        if self.scm == "pdm-backend":
            return {"PDM_BUILD_SCM_VERSION": version}
        if self.scm:
            return {"SETUPTOOLS_SCM_PRETEND_VERSION": version}
        return {}


def requirement_name(req: str) -> str:
    """The canonical distribution name of a PEP 508 requirement ("" when it is not one)."""
    try:
        return canonicalize_name(Requirement(req).name)
    except InvalidRequirement:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
        return canonicalize_name(match.group(1)) if match else ""


def read_backend(pyproject: dict | None, *, build_fallback: list[str]) -> Backend:
    """The backend of a project whose parsed pyproject.toml is `pyproject` (None: there is none);
    `build_fallback` are the build requirements when `[build-system]` lists none."""
    system = (pyproject or {}).get("build-system") or {}
    requires = [str(r) for r in system.get("requires") or []] or list(build_fallback)
    backend = str(system.get("build-backend") or LEGACY_BACKEND)
    path = system.get("backend-path")
    names = {requirement_name(r) for r in requires}
    tool = (pyproject or {}).get("tool") or {}
    scm = next((p for p in SCM_PLUGINS if p in names), None)
    if scm is None and "setuptools_scm" in tool:
        scm = "setuptools-scm"
    pdm_version = ((tool.get("pdm") or {}).get("version") or {}).get("source")
    if backend.startswith("pdm.backend") and pdm_version == "scm":
        scm = "pdm-backend"
    return Backend(
        backend=backend,
        backend_path=tuple(str(p) for p in path) if isinstance(path, list) else None,
        requires=tuple(requires),
        scm=scm,
    )


def scm_version(repo: GitRepo, base: str) -> str:
    """The version a VCS-versioned project has at `base`: the last tag reachable from it that
    reads as a version (a leading "v" or "name-" dropped), else NO_TAG_VERSION."""
    proc = repo.git("describe", "--tags", "--abbrev=0", base, check=False).decode("utf-8", "replace").strip()
    for candidate in (proc, *re.findall(r"\d+(?:\.\d+)*(?:[._-]?(?:a|b|rc|post|dev)\d*)?", proc)):
        try:
            return str(Version(candidate))
        except InvalidVersion:
            continue
    return NO_TAG_VERSION
