"""Running suites: one unit end to end (`unit`), many in parallel and resumable (`runner`), the
manifest's recipe (`manifest`), and where units run (`executors`: threads here, or Ray)."""

from .runner import Runner
from .unit import Prepared, RunOptions, UnitRunner

__all__ = ["Prepared", "RunOptions", "Runner", "UnitRunner"]
