"""Harbor task directories: `tasks import-harbor` and `export harbor` (harness.authoring.harbor). The
commands are added to their groups by harness.cli.tasks and harness.cli.reports, so loading one group
does not load the other (the CLI imports a command's module lazily)."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from ..errors import UserError


class HarborExportInvalid(UserError):
    """Harbor's own models refused a task directory the export wrote."""

    hint = "this is a bug of the export: report it with the directory named"


@click.command("import-harbor")
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="folder for the task specs"
)
def tasks_import_harbor(dirs, out):
    """Import repository-shaped Harbor task directories (task.toml, instruction.md, environment/,
    tests/, solution/) as wholeloop tasks; the gold is solution/solve.sh's diff, taken in a
    container. Terminal-Bench-style tasks and reward-file-only verifiers are refused (docs/tasks.md)."""
    from ..authoring.harbor import import_harbor

    written = import_harbor(list(dirs), out, progress=lambda line: click.echo(line, err=True))
    click.echo(f"wrote {len(written)} task spec(s) to {out}; check them with `wholeloop tasks check {out}`")


@click.command("harbor")
@click.argument("suite", type=click.Path(exists=True, path_type=Path))
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
def export_harbor(suite, out):
    """Write a suite's tasks as Harbor task directories under OUT, each checked against Harbor's
    own task models (its pinned wheel, in a subprocess); when Harbor refuses one, nothing is kept
    and the command exits 2 naming it (docs/tasks.md)."""
    from ..authoring.harbor import export_harbor as write
    from ..report.harbor_models import HARBOR_VERSION, validate

    folders = write(suite, out)
    refused = {path: why for path, why in validate("task", folders).items() if why}
    if refused:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
        path, why = next(iter(refused.items()))
        raise HarborExportInvalid(f"{path}: Harbor {HARBOR_VERSION} refuses it: {why.splitlines()[0]}")
    click.echo(
        f"wrote {len(folders)} Harbor task(s) to {out} (validated against Harbor {HARBOR_VERSION}'s task models)"
    )
