"""What the scripts that generate checked-in fixtures share (build_demo_repos.py, build_polyglot_repos.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


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
