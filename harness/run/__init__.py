"""Running suites: one unit end to end (`unit`), many in parallel and resumable (`runner`), the
manifest's recipe (`manifest`), and where units run (`executors`: threads here, or Ray)."""

from .runner import EngineDown, Runner
from .unit import Prepared, RunOptions, UnitRunner

__all__ = ["EngineDown", "Prepared", "RunOptions", "Runner", "UnitRunner"]
