"""`wholeloop regrade`: a run's patches graded again by the current grader, into a new folder."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from . import console, main


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="the new run folder (default: RUN_DIR-regraded-vN)")
@click.option(
    "--tasks",
    "task_paths",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="task specs (files or folders) to grade with instead of those the manifest names",
)
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64), help="gradings at once")
@click.option(
    "--history-url",
    "history_url",
    default=None,
    help="index the new run folder into this run history (default: $WHOLELOOP_HISTORY_URL, else "
    "history.sqlite beside it)",
)
@click.option(
    "--history/--no-history",
    "use_history",
    default=True,
    show_default=True,
    help="index the regrade in the run history (a history that is down only warns)",
)
def regrade(run_dir, out, task_paths, workers, history_url, use_history):
    """Grade every attempt of RUN_DIR again with the current grader, into a new run folder: the same
    rows with new grades, a manifest saying what they came from. RUN_DIR is never changed."""
    from ..grading import GRADER_VERSION
    from ..run.regrade import regrade as run_regrade
    from ..tasks import load_tasks

    if use_history:  # the URL's password is a secret of the scrub boundary before anything is printed
        import os

        from ..history.url import ENV, protect

        protect(history_url or os.environ.get(ENV))
    out_console = console()
    out = out or run_dir.with_name(f"{run_dir.name}-regraded-v{GRADER_VERSION}")
    tasks = load_tasks(list(task_paths)) if task_paths else None
    rows = run_regrade(run_dir, out, tasks=tasks, workers=workers, progress=lambda line: out_console.print(line))
    changed = [r for r in rows if r.regraded_from and r.regraded_from.get("outcome") != r.outcome]
    counts = ", ".join(f"{n} {outcome}" for outcome, n in sorted(Counter(r.outcome for r in rows).items()))
    out_console.print(
        f"re-graded {len(rows)} row(s) of {run_dir} with grader v{GRADER_VERSION}: {counts}; "
        f"{len(changed)} changed outcome"
    )
    for row in changed:
        out_console.print(
            f"  {row.task_id} #{row.repeat} attempt {row.attempt}: {(row.regraded_from or {})['outcome']} -> "
            f"{row.outcome}" + (f"  [suspected tampering: {row.tampering}]" if row.tampering else "")
        )
    if use_history:  # a run of its own in the history, standing in for RUN_DIR in trends and `gate latest`
        from ..history.live import default_url, index_folder
        from ..records import RunFolder

        index_folder(
            RunFolder(out),
            default_url(out, history_url),
            warn=lambda text: out_console.print(f"[yellow]warning[/]: {text}", highlight=False),
        )
    out_console.print(f"run folder: {out}   (wholeloop report {out})")
