"""The `wholeloop` command: parse arguments, call the library, print. Nothing else lives here.

One module per group of commands (run, reports, tasks, machine, history, gate); each registers its commands on
`main`, and is imported only when one of its commands is looked up (COMMANDS). Heavy modules (docker, git, rich, model SDKs, scipy) are imported inside the commands that
need them, so `wholeloop --help` and `wholeloop report` stay fast and a run without a model never
imports a model SDK.

Errors: a mistake of the user's (a path that is a file, a spec that does not load, a model without
credentials) ends in one line saying what is wrong with which path and what to do, exit 2; anything
else is a bug of ours: its traceback goes to a log whose path is printed, exit 70 (see exit_codes).
"""

from __future__ import annotations

import errno
import importlib
import os
import sys
import traceback
from datetime import datetime
from pathlib import Path

import click

from . import exit_codes
from .exit_codes import INTERNAL, INTERRUPTED, USAGE

EXIT_USAGE = USAGE  # the name older modules use


def console():
    """A rich console. It honours COLUMNS (a terminal's width otherwise); piped with no COLUMNS
    (CI logs), tables get 150 columns to breathe."""
    from rich.console import Console

    if sys.stdout.isatty() or os.environ.get("COLUMNS", "").strip().isdigit():
        return Console()
    return Console(width=150)


class InputProblem(click.ClickException):
    """A mistake of the user's: one line naming what is wrong (and a hint saying what to do)."""

    exit_code = USAGE

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint

    def show(self, file=None) -> None:  # noqa: ARG002 - click's signature
        # One line: what is wrong with which path, and what to do.
        click.secho(f"error: {self.message}" + (f"; {self.hint}" if self.hint else ""), fg="red", err=True)


_OS_HINTS = {
    errno.ENOTDIR: "a part of this path is a file, not a folder: choose a path under a folder",
    errno.EISDIR: "this is a folder: give a file path",
    errno.EEXIST: "something is already there: choose another path or remove it",
    errno.EACCES: "no permission to write here: choose a writable location",
    errno.EPERM: "not permitted here: choose a writable location",
    errno.EROFS: "this file system is read-only: choose a writable location",
    errno.ENOSPC: "the disk is full: free space or choose another location",
    errno.ENOENT: "it does not exist: check the path",
}


def os_error_problem(exc: OSError) -> InputProblem:
    """One line for an OSError on a path: which path, what is wrong, what to do."""
    path = exc.filename if exc.filename is not None else ""
    what = exc.strerror or str(exc)
    if not path:
        return InputProblem(str(exc))
    code = errno.EACCES if isinstance(exc, PermissionError) else (exc.errno or 0)
    return InputProblem(f"{path}: {what}", _OS_HINTS.get(code, ""))


def _user_error(exc: BaseException) -> InputProblem | None:
    """The one-line message for an error that is the user's to fix, or None (a bug of ours)."""
    if isinstance(exc, OSError) and not isinstance(exc, (ConnectionError, TimeoutError)):
        return os_error_problem(exc)
    # Every typed input error of ours is a UserError (TaskSpecError, UnknownAgent, UnknownName,
    # ModelConfigError, RunFolderBusy...); a bare ValueError is a bug of ours, not the user's mistake.
    from ..errors import UserError

    ours: tuple[type[BaseException], ...] = (UserError,)
    if "sandbox.errors" in sys.modules:  # a SandboxError can only come from a loaded sandbox
        from sandbox.errors import SandboxError

        ours += (SandboxError,)
    if isinstance(exc, ours):
        return InputProblem(str(exc).strip() or type(exc).__name__, getattr(exc, "hint", "") or "")
    return None


def crash_log_dir() -> Path:
    from ..paths import cache_dir

    return cache_dir() / "logs"


def write_crash_log(exc: BaseException) -> Path | None:
    """The traceback of a bug, with the command line and versions, in a log of its own."""
    from .. import __version__
    from ..redact import hide_url_passwords

    text = hide_url_passwords(
        f"wholeloop {__version__}, python {sys.version.split()[0]}\n$ {' '.join(sys.argv)}\n"
        f"cwd: {os.getcwd()}\n\n" + "".join(traceback.format_exception(exc))
    )
    name = f"crash-{datetime.now():%Y%m%d-%H%M%S}-{os.getpid()}.log"
    import tempfile

    from ..scrub import scrub_text

    for folder in (crash_log_dir(), Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / name
            path.write_text(scrub_text(text))  # a traceback's locals and messages may hold a key
            return path
        except OSError:
            continue
    return None


#: Each command's module, imported only when that command is looked up: `wholeloop failures` does not
#: pay for the run, mining or task commands' imports. tests/test_failures_cli.py checks it is complete.
COMMANDS = {
    "run": "run",
    "agents": "run",
    "sweep": "sweep",
    "decide": "sweep",
    "regrade": "regrade",
    "gate": "gate",
    "history": "history",
    "doctor": "machine",
    "images": "machine",
    "prune": "machine",
    "env": "mining",
    "tasks": "tasks",
    "mine": "tasks",
    **dict.fromkeys(
        ("report", "compare", "failures", "show", "export", "import", "export-predictions", "review"), "reports"
    ),
}


class _Group(click.Group):
    """Turns errors into one line (the user's) or a log of the traceback (ours), never a traceback.
    Its commands' modules are imported when a command is looked up (COMMANDS)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(f"{__package__}.{COMMANDS[cmd_name]}")  # it registers its commands on main
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context):
        from ..scrub import scrub_console

        scrub_console()  # every line printed from here on (errors, progress, tracebacks) is scrubbed of secrets
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except KeyboardInterrupt:
            click.secho("interrupted", fg="yellow", err=True)
            sys.exit(INTERRUPTED)
        except Exception as exc:  # noqa: BLE001 - this is the one place that sorts them
            problem = _user_error(exc)
            if problem is not None:
                raise problem from None
            log = write_crash_log(exc)
            click.secho(f"internal error (a bug in wholeloop): {type(exc).__name__}: {exc}", fg="red", err=True)
            click.echo(
                f"the traceback is in {log}; please report it with that file" if log else traceback.format_exc(),
                err=True,
            )
            sys.exit(INTERNAL)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]}, epilog=exit_codes.help_text())
@click.version_option(package_name="wholeloop")
@click.option(
    "--repos-root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="a moved suite's repositories are in this folder (by name), not where its specs' `repo:` points; "
    "also WHOLELOOP_REPOS_ROOT",
)
def main(repos_root: Path | None) -> None:
    """Which coding agent actually works on your code: real repositories in Docker, patches
    graded by hidden tests in a fresh container, the whole loop measured."""
    if repos_root is not None:
        if not repos_root.is_dir():
            raise InputProblem(
                f"--repos-root {repos_root}: no such folder", "give the folder that holds the repositories"
            )
        from ..tasks.spec import REPOS_ROOT_ENV

        # Every command loads tasks through harness.tasks, which reads this (and so do its workers).
        os.environ[REPOS_ROOT_ENV] = str(repos_root.resolve())


if __name__ == "__main__":
    main()
