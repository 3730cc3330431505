"""wholeloop: which coding agent actually works on *your* code.

The Python API (docs/api.md) is loaded on first use, so importing `harness` stays cheap:

    import harness
    run = harness.load_run("runs/<run folder>")
    df = harness.attempts_df(["runs/a", "runs/b"])   # needs pandas
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["Attempt", "Run", "__version__", "attempts_df", "load_run"]


def __getattr__(name: str) -> Any:
    if name in ("Attempt", "Run", "attempts_df", "load_run"):
        from . import api

        return {"Attempt": api.Attempt, "Run": api.Run, "attempts_df": api.attempts_df, "load_run": api.load_run}[name]
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
