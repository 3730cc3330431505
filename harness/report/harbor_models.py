"""Harbor's own pydantic models, as a validator run in a subprocess: what Harbor would accept.

Harbor (https://github.com/laude-institute/harbor) needs Python >= 3.12 to install, but the models
in its wheel (`harbor.models.trajectories`, ATIF; `harbor.models.task.config`) import on 3.11 with
pydantic alone. So the pinned wheel is downloaded once (`pip download`, its sha256 checked) and
unpacked into wholeloop's cache folder, and a short script is run by this interpreter with
PYTHONPATH pointing at it. Harbor is never imported into wholeloop's own process.

`WHOLELOOP_HARBOR_WHEEL` names a wheel file already on disk (no network); it must be the pinned one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ..errors import UserError
from ..paths import cache_dir

HARBOR_VERSION = "0.26.0"
HARBOR_WHEEL = f"harbor-{HARBOR_VERSION}-py3-none-any.whl"
HARBOR_WHEEL_SHA256 = "b7c752c5b51ae2ee1fc2ea30621493c7dc0b5a3d0157295bed4552115027baee"


class HarborModelsMissing(UserError):
    """Harbor's pinned wheel could not be had (no network, a different file)."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _download(into: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", f"harbor=={HARBOR_VERSION}", "--no-deps"]
    cmd += ["--python-version", "3.12", "--only-binary=:all:", "--quiet", "-d", str(into)]
    reason = ""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        failed = done.returncode != 0
        if failed:
            reason = ((done.stderr or done.stdout).strip().splitlines() or [f"exit {done.returncode}"])[-1]
    except (OSError, subprocess.TimeoutExpired) as exc:
        failed, reason = True, str(exc)
    wheel = into / HARBOR_WHEEL
    if failed or not wheel.is_file():
        raise HarborModelsMissing(
            f"could not download Harbor {HARBOR_VERSION}'s wheel to validate against: {reason}",
            hint=f"check the network, or download {HARBOR_WHEEL} elsewhere and set WHOLELOOP_HARBOR_WHEEL to its path",
        )
    return wheel


def models_path() -> Path:
    """The folder holding Harbor's unpacked pinned wheel (downloaded and checked on first use)."""
    root = cache_dir() / "harbor" / HARBOR_VERSION
    if (root / ".complete").is_file():
        return root
    with tempfile.TemporaryDirectory(prefix="wholeloop-harbor-") as tmp:
        given = os.environ.get("WHOLELOOP_HARBOR_WHEEL")
        wheel = Path(given) if given else _download(Path(tmp))
        if not wheel.is_file():
            raise HarborModelsMissing(
                f"WHOLELOOP_HARBOR_WHEEL names {wheel}, which is not a file", hint=f"point it at {HARBOR_WHEEL}"
            )
        got = _sha256(wheel)
        if got != HARBOR_WHEEL_SHA256:
            raise HarborModelsMissing(
                f"{wheel.name} has sha256 {got}, not the pinned Harbor {HARBOR_VERSION} wheel's {HARBOR_WHEEL_SHA256}",
                hint=f"use harbor=={HARBOR_VERSION}'s wheel from PyPI",
            )
        staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=_parent(root)))
        with zipfile.ZipFile(wheel) as z:
            z.extractall(staging)
        (staging / ".complete").write_text(f"harbor {HARBOR_VERSION} sha256 {got}\n")
        try:
            staging.rename(root)
        except OSError:  # another process unpacked it first
            shutil.rmtree(staging, ignore_errors=True)
            if not (root / ".complete").is_file():
                raise
    return root


def _parent(root: Path) -> Path:
    root.parent.mkdir(parents=True, exist_ok=True)
    return root.parent


_VALIDATE = """
import json, sys, types
kind = sys.argv[1]
if kind == "task":
    # config.py imports `toml` only to write TOML (TaskConfig.model_dump_toml): never called here
    sys.modules.setdefault("toml", types.ModuleType("toml"))
    from pathlib import Path
    from harbor.models.task.config import TaskConfig
    from harbor.models.task.paths import TaskPaths
import harbor.models.trajectories as m
out = {}
for path in sys.argv[2:]:
    try:
        if kind == "atif":
            m.Trajectory.model_validate(json.load(open(path, encoding="utf-8")))
        elif kind == "task":
            # harbor.models.task.task.Task needs Python 3.12 (typing.override): its checks, as it makes them
            paths = TaskPaths(path)
            config = TaskConfig.model_validate_toml(paths.config_path.read_text())
            if not config.environment.docker_image and not (paths.environment_dir / "Dockerfile").is_file():
                raise ValueError("environment/Dockerfile: missing, and task.toml names no docker_image")
            paths.validate_input_tree(paths.tests_dir)
            paths.validate_input_tree(paths.solution_dir)
            for what, found in (("instruction.md", paths.instruction_path.is_file()),
                                ("tests/test.sh", paths.discovered_test_path is not None),
                                ("solution/solve.sh", paths.discovered_solve_path is not None)):
                if not found:
                    raise ValueError(what + ": missing")
        else:
            raise SystemExit("unknown kind " + kind)
        out[path] = ""
    except Exception as exc:
        out[path] = str(exc)[:4000]
print(json.dumps(out))
"""


def validate(kind: str, paths: list[Path]) -> dict[str, str]:
    """Each file against Harbor's model of `kind` ("atif": a trajectory file; "task": a task
    directory, its task.toml by `TaskConfig` and its layout by `TaskPaths`): path -> "" when
    accepted, else why not."""
    if not paths:
        return {}
    env = {**os.environ, "PYTHONPATH": str(models_path())}
    done = subprocess.run(
        [sys.executable, "-c", _VALIDATE, kind, *map(str, paths)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if done.returncode:
        raise HarborModelsMissing(
            f"Harbor {HARBOR_VERSION}'s models did not load: {done.stderr.strip()[-1500:]}",
            hint=f"remove {models_path()} to download the wheel again",
        )
    result: dict[str, str] = json.loads(done.stdout)
    return result
