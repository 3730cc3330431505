"""The `wholeloop` command: parse arguments, call the library, print. Nothing else lives here.

One module per group of commands (run, reports, tasks, machine, history, gate); each registers its commands on
`main`. Heavy modules (docker, git, rich, model SDKs) are imported inside the commands that need
them, so `wholeloop --help` stays fast and a run without a model never imports a model SDK.
"""

from __future__ import annotations

import sys

import click

EXIT_USAGE = 2


def console():
    """A rich console; when output is not a terminal (CI logs, pipes) tables get room to breathe."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=150)


class _Group(click.Group):
    """Turns our typed errors into a message and a hint instead of a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except Exception as exc:
            if isinstance(exc, click.ClickException):
                raise
            # imported only now: sandbox pulls in the Docker SDK, which commands that read the
            # history or reports never need (their start-up time is measured)
            from sandbox.errors import SandboxError

            from ..tasks import TaskSpecError

            if not isinstance(exc, (SandboxError, TaskSpecError, FileNotFoundError, ValueError)):
                raise
            click.secho(f"error: {exc}", fg="red", err=True)
            hint = getattr(exc, "hint", "")
            if hint:
                click.echo(f"hint: {hint}", err=True)
            sys.exit(EXIT_USAGE)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="wholeloop")
def main() -> None:
    """Which coding agent actually works on your code: real repositories in Docker, patches
    graded by hidden tests in a fresh container, the whole loop measured."""


from . import gate, history, machine, reports, run, tasks  # noqa: E402,F401  (each registers its commands on main)

if __name__ == "__main__":
    main()
