"""Test-result parsers: one `TestReport` for every framework, and the registry of parsers.

Adding a framework is one module beside `pytest.py` (copy it) and one line in `PARSERS`; a team's
own package can add one through the "wholeloop.parsers" entry-point group instead.
"""

from __future__ import annotations

from ..registry import Registry
from .base import (ERROR, FAILED, MISSING, NOT_RUN, PASSED, SKIPPED, STATUSES, XFAIL, XPASS, Parser, ParserBase, RunSetup,
                   TestReport)

PARSERS = Registry("wholeloop.parsers", "test parser", {
    "pytest": "harness.parsers.pytest:PytestParser",
})


def get_parser(name: str) -> Parser:
    """An instance of the parser registered as `name`; raises registry.UnknownName."""
    return PARSERS.get(name)()


__all__ = ["ERROR", "FAILED", "MISSING", "NOT_RUN", "PARSERS", "PASSED", "Parser", "ParserBase", "RunSetup", "SKIPPED",
           "STATUSES", "TestReport", "XFAIL", "XPASS", "get_parser"]
