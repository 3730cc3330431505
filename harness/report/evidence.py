"""The evidence pack: everything a reviewer needs to check a report's numbers, in one folder."""

from __future__ import annotations

from pathlib import Path

from ..records import write_atomic, write_json
from .controls import markdown as controls_markdown
from .failures import hardest_failures_markdown
from .figures import Figures


def write_evidence(figures: Figures, run_dirs: list[Path | str], out_dir: Path | str) -> list[str]:
    """The evidence pack: figures.json, each run's manifest, hardest_failures.md and report.html.
    Returns one line per thing done (for the CLI)."""
    from . import html

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    done = []
    write_json(out / "figures.json", figures.model_dump(mode="json"))
    done.append(f"wrote {out / 'figures.json'}")
    names: set[str] = set()
    for run_dir in map(Path, run_dirs):
        name = run_dir.resolve().name
        while name in names:
            name += "_"
        names.add(name)
        src = run_dir / "manifest.json"
        if src.exists():
            target = out / "manifests" / f"{name}.json"
            write_atomic(target, src.read_bytes())
            done.append(f"copied {src} -> {target}")
        else:
            done.append(f"no manifest.json in {run_dir}")
    write_atomic(
        out / "hardest_failures.md",
        controls_markdown(figures.controls) + hardest_failures_markdown(figures.failures.hardest, len(figures.configs)),
    )
    done.append(f"wrote {out / 'hardest_failures.md'} ({len(figures.failures.hardest)} task(s))")
    path = html.write_html([Path(d) for d in run_dirs], out / "report.html", figures=figures)
    done.append(f"wrote {path}")
    return done
