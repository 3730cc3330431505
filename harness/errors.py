"""The root of every error that is the user's to fix. A leaf.

A `UserError` says what is wrong with something the user gave (a spec, a config, a flag, a path, a
run folder) and, in `hint`, what to do; the command line prints it as one line and exits 2
(USAGE). Anything else that escapes a command is a bug of ours (a log with the traceback, exit 70):
in particular a bare `ValueError` is never taken for the user's mistake.

Each part of the harness has its own subclasses (`TaskSpecError`, `AgentConfigError`,
`HistoryError`...), so a caller catches the family it can do something about.
"""

from __future__ import annotations


class UserError(Exception):
    """Something the user gave is wrong; the message names it and `hint` says what to do."""

    hint: str = ""

    def __init__(self, message: str = "", hint: str = "") -> None:
        super().__init__(message)
        if hint:
            self.hint = hint
