"""What the scripts that generate fixtures share: checked-in ones (build_demo_repos.py,
build_polyglot_repos.py) and the ones built from downloaded sdists into a cache folder
(make_env_fixture.py, make_mining_fixture.py, make_swebench_fixture.py)."""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path


class FixtureError(Exception):
    """A fixture could not be built (a download, a checksum, a planted bug that did not show)."""


def build_once(
    out_dir: Path,
    *,
    result: str,
    recipe: str,
    complete: Callable[[Path], bool],
    fill: Callable[[Path], None],
    force: bool = False,
    log: Callable[[str], None] = print,
) -> Path:
    """Build a fixture into `out_dir` unless it is already `complete`; returns `out_dir / result`.

    `fill` builds into a fresh folder beside `out_dir` that replaces it in one rename only when
    `fill` returned, so a killed build never leaves a folder that looks complete; concurrent
    builders (parallel test sessions) wait on a lock file and the second one finds the work done."""
    out_dir = Path(out_dir).resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(out_dir.parent / f".{out_dir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not force and complete(out_dir):
            log(f"{out_dir}: up to date (recipe {recipe})")
            return out_dir / result
        work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
        try:
            fill(work)
            if out_dir.exists():
                shutil.rmtree(out_dir)
            os.replace(work, out_dir)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    log(f"{out_dir}: built (recipe {recipe})")
    return out_dir / result


def fixture_main(
    doc: str | None, build: Callable[..., Path], *, source: str, source_help: str, argv: list[str] | None = None
) -> int:
    """The command line every sdist fixture script has: OUT_DIR, --force, and where the sources may
    already be (`source` is the option's name without dashes, passed to `build` as a keyword)."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--force", action="store_true", help="rebuild even when OUT_DIR is complete")
    parser.add_argument(f"--{source.replace('_', '-')}", dest=source, type=Path, help=source_help)
    args = parser.parse_args(argv)
    try:
        build(args.out_dir, force=args.force, **{source: getattr(args, source)})
    except FixtureError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def sync_files(
    folder: Path,
    expected: dict[Path, str],
    *,
    write: bool,
    root: Path,
    generated: Callable[[Path], bool] = lambda rel: True,
) -> list[str]:
    """Make `folder` hold exactly the `expected` files (relative path -> text) among those
    `generated` says are ours: with `write`, write what differs and remove what is no longer
    generated; without, change nothing and return what is out of date (paths relative to `root`)."""
    stale: list[str] = []
    on_disk = (
        {p.relative_to(folder) for p in folder.rglob("*") if p.is_file() and generated(p.relative_to(folder))}
        if folder.is_dir()
        else set()
    )
    for rel, text in sorted(expected.items()):
        path = folder / rel
        if path.is_file() and path.read_text() == text:
            continue
        if write:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path.relative_to(root)}")
        else:
            stale.append(str(path.relative_to(root)))
    for rel in sorted(on_disk - set(expected)):
        if write:
            (folder / rel).unlink()
            print(f"removed {(folder / rel).relative_to(root)}")
        else:
            stale.append(f"{(folder / rel).relative_to(root)} (no longer generated)")
    return stale
