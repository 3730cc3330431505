"""The exit codes of every `wholeloop` command: one table, used by every command.

A CI job reads the code, not the text, so each code means one thing across commands. The table
is printed by `wholeloop --help` and is in the README; a new command picks from it (and a new
meaning gets a row here, in both places).
"""

from __future__ import annotations

#: Success; for `gate`: no regression.
OK = 0
#: A negative verdict: `gate` found a regression; `tasks validate` / `tasks check` found invalid
#: tasks; `mine`: no task kept; `doctor`: this machine cannot run tasks; `run`: a control failed (gold
#: did not resolve every task, noop resolved one), which takes precedence over INFRA; `agents verify`:
#: the CLI failed a check.
NEGATIVE = 1
#: A usage or input error: a wrong option, a path that is not what it should be, a task spec that
#: does not load, a model without credentials, nothing to check. Nothing was run.
USAGE = 2
#: A run in which units ended in infrastructure errors (`--allow-infra-errors` accepts them).
INFRA = 3
#: Not enough evidence to decide (`gate`, `compare`): too few shared tasks, or infrastructure
#: errors on shared tasks (without `--strict`); also unfinished or changed tasks.
UNDECIDED = 4
#: An internal error: a bug of wholeloop's; the traceback is in the log whose path is printed.
INTERNAL = 70
#: Interrupted (Ctrl-C); finished work is kept.
INTERRUPTED = 130

TABLE: tuple[tuple[int, str], ...] = (
    (OK, "success (gate: no regression)"),
    (
        NEGATIVE,
        "a negative verdict (gate: a regression; tasks validate/check: invalid tasks; "
        "mine: no task kept; doctor: this machine cannot run tasks; agents verify: a check failed; "
        "run: a control failed, gold not resolving "
        "every task or noop resolving one, which takes precedence over 3)",
    ),
    (USAGE, "usage or input error (nothing was run)"),
    (INFRA, "a run in which units ended in infrastructure errors (--allow-infra-errors accepts them)"),
    (
        UNDECIDED,
        "not enough evidence to decide (gate, compare: too few shared tasks, or infrastructure errors "
        "on shared tasks, which --strict counts as failures; gate: also the baseline's tasks the candidate "
        "has not finished, compare: a task one side has not finished, which --strict counts as failures, "
        "or tasks whose spec changed)",
    ),
    (INTERNAL, "internal error, a bug: the traceback is in the log whose path is printed"),
    (INTERRUPTED, "interrupted (Ctrl-C); finished work is kept"),
)


def run_exit(*, controls_failed: bool, infra_errors: int, allow_infra_errors: bool) -> int:
    """`wholeloop run`'s code: a failed control (1) before infrastructure errors (3) before success."""
    if controls_failed:
        return NEGATIVE
    if infra_errors and not allow_infra_errors:
        return INFRA
    return OK


def help_text() -> str:
    """The table as the `--help` epilog shows it (click keeps \\b paragraphs as written)."""
    return "\b\nExit codes:\n" + "\n".join(f"  {code:>3}  {meaning}" for code, meaning in TABLE)


def markdown() -> str:
    """The table as the README has it."""
    return "| code | meaning |\n| ---: | --- |\n" + "\n".join(f"| {code} | {meaning} |" for code, meaning in TABLE)
