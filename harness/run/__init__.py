"""Running suites: a run's recipe (`spec`: RunSpec), one unit end to end (`unit`), many in parallel
and resumable (`runner`), the manifest's recipe (`manifest`), and where units run (`executors`:
threads here, or Ray). `harness.launch.start(spec)` starts a run from its recipe."""

from .runner import EngineDown, Runner
from .spec import RunSpec
from .unit import Prepared, RunOptions, UnitRunner

__all__ = ["EngineDown", "Prepared", "RunOptions", "RunSpec", "Runner", "UnitRunner"]
