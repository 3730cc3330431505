"""Python source parsed from several threads at once: CPython 3.11.7's AST constructor keeps its
recursion depth in interpreter-wide state (gh-106905), so a thread switch in the middle of one
parse (a finalizer run by the garbage collector is enough) breaks the other's count. Grading reads
the hidden tests' literals in a thread per unit; CI once failed eight red-team grades on it.

`_hammer(ast.literal_eval)` (no lock) raised the SystemError on this machine's 3.11.7 in the
first of a few tries; the lock is what this test holds to."""

from __future__ import annotations

import ast
import gc
import threading
import time

from harness import pysyntax

SOURCE = "[" + ",".join(["{'a': (1, 2, [3, 4])}"] * 20) + "]"


class _Finalized:
    """A cycle with a finalizer: the collector runs Python code (and may switch threads) in the
    middle of whatever allocation triggers it."""

    def __init__(self):
        self.me = self

    def __del__(self):
        time.sleep(0)


def _hammer(literal_eval) -> list[BaseException]:
    errors: list[BaseException] = []

    def work():
        for _ in range(600):
            _Finalized()
            try:
                literal_eval(SOURCE)
            except SystemError as exc:
                errors.append(exc)
                return

    threshold = gc.get_threshold()
    gc.set_threshold(50, 5, 5)
    try:
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        gc.set_threshold(*threshold)
    return errors


def test_parses_under_the_lock_never_break_each_other():
    assert _hammer(pysyntax.literal_eval) == []
    assert pysyntax.literal_eval("'x'") == "x"
    assert isinstance(pysyntax.parse("x = 1"), ast.Module)
