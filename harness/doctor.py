"""`wholeloop doctor`: can this machine run tasks? Each problem comes with the command that fixes it."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from rich.console import Console

MIN_FREE_GB = 5.0


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    fatal: bool = True


def checks() -> list[Check]:
    from sandbox import SandboxError
    from sandbox.docker import API_VERSION, DEFAULT_BASE, engine_root, engine_version, image_exists

    found: list[Check] = []
    try:
        version = engine_version()
        api = version.get("ApiVersion", "?")
        found.append(Check("docker engine", True, f"Docker {version.get('Version')} (API {api}; we use {API_VERSION})"))
        too_old = tuple(int(x) for x in api.split(".")) < tuple(int(x) for x in API_VERSION.split("."))
        if too_old:
            found.append(
                Check("engine API", False, f"API {api} is older than {API_VERSION}", "upgrade Docker to 20.10 or newer")
            )
    except SandboxError as exc:
        found.append(Check("docker engine", False, str(exc), "bash scripts/setup.sh   (installs and starts dockerd)"))
        return found
    try:
        has_base = image_exists(DEFAULT_BASE)
    except SandboxError as exc:
        has_base = False
        found.append(Check("images", False, str(exc)))
    found.append(
        Check(
            "base image",
            has_base,
            DEFAULT_BASE + (" present" if has_base else " missing"),
            "wholeloop images bootstrap   (or pull an image and name it in your tasks)",
            fatal=False,
        )
    )
    if has_base:
        found.append(_disk_limit_check(DEFAULT_BASE))
    try:
        root = engine_root()
        free = shutil.disk_usage(root if os.path.exists(root) else "/").free / 1e9
        found.append(
            Check(
                "free disk",
                free >= MIN_FREE_GB,
                f"{free:.1f} GB free under {root}",
                "free space (wholeloop prune --images; docker system prune)",
            )
        )
    except (SandboxError, OSError) as exc:
        found.append(Check("free disk", False, str(exc), fatal=False))
    return found


def model_checks(model: str, *, allow_unknown_model: bool = False) -> list[Check]:
    """The model's credentials and price, as `wholeloop run` checks them before it starts."""
    from .models.preflight import check_model

    return [Check(c.name, c.ok, c.detail, c.fix) for c in check_model(model, allow_unknown=allow_unknown_model)]


def run_checks(console: Console | None = None, *, model: str | None = None, allow_unknown_model: bool = False) -> bool:
    console = console or Console()
    results = checks()
    if model:
        results += model_checks(model, allow_unknown_model=allow_unknown_model)
    for check in results:
        mark = "[green]ok[/]  " if check.ok else ("[red]FAIL[/]" if check.fatal else "[yellow]warn[/]")
        console.print(f"{mark} {check.name}: {check.detail}")
        if not check.ok and check.fix:
            console.print(f"      fix: {check.fix}")
    healthy = all(c.ok or not c.fatal for c in results)
    console.print("[green]this machine can run tasks[/]" if healthy else "[red]this machine cannot run tasks yet[/]")
    return healthy


def _disk_limit_check(image: str) -> Check:
    """Start one small container the way a run does (wholeloop's init, a disk limit) and say how
    its disk limit is enforced here."""
    from sandbox import Limits, SandboxError
    from sandbox.docker import DockerSandbox

    try:
        with DockerSandbox.start(image, limits=Limits(disk="32m"), role="doctor", workdir="/", fast_exec=False) as sb:
            how = sb.disk_enforcement
    except SandboxError as exc:
        return Check("containers", False, f"cannot start a container: {exc}", exc.hint or "")
    if how == "filesystem":
        return Check("disk limit", True, "enforced: each container's writable layer is a filesystem of its limit")
    return Check(
        "disk limit",
        False,
        f"{how}: the total a container writes is not bounded",
        "run wholeloop as root on the engine's host, with e2fsprogs and mount installed",
        fatal=False,
    )
