"""Python source parsed safely from threads.

CPython 3.11 (before 3.11.9) and 3.12 (before 3.12.3) keep the AST constructor's recursion depth
in interpreter-wide state, so two threads building AST objects at once can raise `SystemError: AST
constructor recursion depth mismatch` (CPython gh-106905). Grading runs in a thread per unit and
reads the hidden tests' literals, mining reads setup.py files: every parse of ours goes through
this one lock. Parsing is microseconds; the lock costs nothing measurable.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with _LOCK:
        return ast.parse(source, filename=filename)


def literal_eval(source: str) -> object:
    """`ast.literal_eval` of a source text (raises ValueError or SyntaxError as it does)."""
    with _LOCK:
        return ast.literal_eval(source)
