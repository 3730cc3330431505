"""Where units of work run. The runner hands an executor its units; the executor runs each one and
yields the unit's rows once they are in the run folder.

`LocalExecutor` is a bounded thread pool: attempts spend their time waiting on the model and on
Docker, not on this process's CPU, so threads are enough and share the image-build locks. Each
unit appends its rows itself, the moment each is known.

`harness.run.executors.ray.RayExecutor` runs units in other processes or machines: it runs each
(task, repeat) elsewhere, writes the unit's files into the run folder and appends its rows there
(exactly once, on this machine), then yields them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Protocol

from ...records import ResultRow

if TYPE_CHECKING:
    from ...tasks import Task
    from ..runner import Runner

Unit = tuple["Task", int]  # (task, repeat)


class Executor(Protocol):
    def run_units(self, runner: Runner, units: Iterable[Unit]) -> Iterator[list[ResultRow]]:
        """Run each unit of `runner`; yield its rows, already appended to the run folder, as units
        complete. Raises KeyboardInterrupt through; a unit's own failures are rows, not raises."""
        ...

    def shutdown(self, *, cancel: bool) -> None:
        """Stop: with `cancel`, units not started are dropped and running ones are asked to stop."""
        ...


class LocalExecutor:
    """Units as threads of this process, at most `workers` at once."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = max(1, workers)
        self._pool: ThreadPoolExecutor | None = None

    def run_units(self, runner: Runner, units: Iterable[Unit]) -> Iterator[list[ResultRow]]:
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="wholeloop")
        pending: set[Future] = {self._pool.submit(runner.run_unit, task, repeat) for task, repeat in units}
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()

    def shutdown(self, *, cancel: bool) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=cancel)
