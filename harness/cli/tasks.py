"""`wholeloop tasks ...`: check and import task specs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import main


@main.group()
def tasks():
    """Check and import task specs."""


@tasks.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def tasks_validate(paths):
    """Check task specs without running them: schema, files, repository and commit."""
    from sandbox.errors import SandboxError
    from sandbox import find_commit

    from ..tasks import TaskSpecError, load_task, spec_files

    from . import InputProblem
    from .exit_codes import NEGATIVE

    files = spec_files(list(paths))
    missing = [str(p) for p in paths if not Path(p).exists()]
    if missing:
        raise InputProblem(f"no such file or folder: {', '.join(missing)}", "give task spec files or folders of them")
    if not files:
        raise InputProblem(f"no task specs (*.yaml, *.yml) found in {', '.join(map(str, paths))}: nothing was checked",
                           "give task spec files or folders that hold them")
    bad = 0
    for file in files:
        try:
            task = load_task(file)
            task.gold(), task.test_patch()
            find_commit(task.repo_source(), task.base_commit)
        except (TaskSpecError, SandboxError) as exc:
            bad += 1
            click.secho(f"FAIL {exc}", fg="red")
            continue
        click.echo(f"ok   {file}  ({task.id})")
    if bad:
        click.secho(f"{bad} of {len(files)} spec(s) invalid", fg="red")
        sys.exit(NEGATIVE)
    click.echo(f"{len(files)} spec(s) valid")


@tasks.command("import-swebench")
@click.argument("jsonl", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(path_type=Path), help="folder for the task specs")
@click.option("--specs", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="per-repository specs: where each repository is, how to install and test it")
def tasks_import_swebench(jsonl, out, specs):
    """Import SWE-bench instances (JSONL) as wholeloop task specs."""
    from ..tasks.swebench import import_swebench

    written = import_swebench(jsonl, out, specs_file=specs)
    click.echo(f"wrote {len(written)} task spec(s) to {out}")
    for message in written.skipped:
        click.secho(f"skipped {message}", fg="yellow", err=True)
    if written.skipped:
        sys.exit(1)
