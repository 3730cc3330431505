"""`wholeloop regrade`: a run's patches graded again by the current grader, into a new folder."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from . import console, main


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="the new run folder (default: RUN_DIR-regraded-vN)")
@click.option("--tasks", "task_paths", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="task specs (files or folders) to grade with instead of those the manifest names")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64), help="gradings at once")
def regrade(run_dir, out, task_paths, workers):
    """Grade every attempt of RUN_DIR again with the current grader, into a new run folder: the same
    rows with new grades, a manifest saying what they came from. RUN_DIR is never changed."""
    from ..grading import GRADER_VERSION
    from ..run.regrade import regrade as run_regrade
    from ..tasks import load_tasks

    out_console = console()
    out = out or run_dir.with_name(f"{run_dir.name}-regraded-v{GRADER_VERSION}")
    tasks = load_tasks(list(task_paths)) if task_paths else None
    rows = run_regrade(run_dir, out, tasks=tasks, workers=workers, progress=lambda line: out_console.print(line))
    changed = [r for r in rows if r.regraded_from and r.regraded_from.get("outcome") != r.outcome]
    counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(Counter(r.outcome for r in rows).items()))
    out_console.print(f"re-graded {len(rows)} row(s) of {run_dir} with grader v{GRADER_VERSION}: {counts}; "
                      f"{len(changed)} changed outcome")
    for row in changed:
        out_console.print(f"  {row.task_id} #{row.repeat} attempt {row.attempt}: {row.regraded_from['outcome']} -> "
                          f"{row.outcome}" + (f"  [suspected tampering: {row.tampering}]" if row.tampering else ""))
    out_console.print(f"run folder: {out}   (wholeloop report {out})")
