"""The decision record and the front at sweep scale: a generated sweep (cells x tasks x repeats, one
row per unit at a scripted quality and price), then
`wholeloop decide`'s pages: their size and the time to write them. No Docker. Usage:

    python scripts/bench_decide.py                    # 12 cells x 100 tasks x 5 repeats: 6,000 units
    python scripts/bench_decide.py --cells 4 --tasks 50 --repeats 5

The target (issue 29): the pages stay usable at sweep scale, 20 MB or less per 1,000 attempts.
Uses only public APIs of harness.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from harness.records import PhaseTimes, ResultRow, RunFolder
from harness.sweep.decide import write_decision


def generate(root: Path, cells: int, tasks: int, repeats: int) -> Path:
    """A sweep folder: sweep.json and one run folder per cell; cell i resolves a share of units
    rising with i and costs more with i."""
    listed = []
    for c in range(cells):
        label = f"cell-{c:02d}"
        folder = RunFolder(root / "cells" / label, create=True)
        folder.update_manifest(lambda m, label=label: m.update({"run_id": label, "command": ["wholeloop", "sweep"]}))
        quality, price = (c + 1) / (cells + 1), 0.01 * (1 + c)
        for t in range(tasks):
            for r in range(repeats):
                ok = ((t * 7 + r * 3 + c) % 100) / 100 < quality
                folder.append(
                    ResultRow(
                        run_id=label,
                        task_id=f"task-{t:04d}",
                        task_hash=f"h{t}",
                        config=label,
                        agent="default",
                        model=f"scripted/{label}",
                        repeat=r,
                        outcome="resolved" if ok else "unresolved",
                        resolved=ok,
                        cost_usd=price,
                        phases=PhaseTimes(total_s=10.0 + c),
                        stop_reason="submitted",
                    )
                )
        listed.append({"name": label, "label": label, "axes": {"cell": label}, "run": f"cells/{label}"})
    (root / "sweep.json").write_text(json.dumps({"schema_version": 1, "name": "bench", "sweep": {}, "cells": listed}))
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=12)
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        sweep = generate(Path(tmp) / "sweep", args.cells, args.tasks, args.repeats)
        made = time.perf_counter() - t0
        t0 = time.perf_counter()
        html, md, decision = write_decision(sweep)
        took = time.perf_counter() - t0
        units = args.cells * args.tasks * args.repeats
        size = html.stat().st_size
        print(
            json.dumps(
                {
                    "units": units,
                    "generate_s": round(made, 1),
                    "decide_s": round(took, 1),
                    "decision_html_bytes": size,
                    "decision_md_bytes": md.stat().st_size,
                    "bytes_per_1000_attempts": round(size * 1000 / units),
                    "target_bytes_per_1000": 20_000_000,
                    "recommended": decision.recommended,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
