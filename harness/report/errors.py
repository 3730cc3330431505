"""What a report cannot do with what it was given (a scoring file, a cutoff, a gate's settings)."""

from __future__ import annotations

from ..errors import UserError


class ReportInputError(UserError):
    """An input of a report, comparison or gate is wrong: the message names it."""
