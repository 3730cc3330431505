"""Where units of work run. The runner hands an executor a function and the units; the executor
yields each unit's result as it completes.

`LocalExecutor` is a bounded thread pool: attempts spend their time waiting on the model and on
Docker, not on this process's CPU, so threads are enough and share the image-build locks.

An executor whose units run in other processes or machines (`remote = True`, e.g.
`harness.executors_ray.RayExecutor`) cannot take the runner's closure. It offers
`run_units(runner, units)` instead: it runs each (task, repeat) elsewhere, writes the unit's files
into the run folder and yields the unit's rows, which the runner then appends to results.jsonl
(exactly once, on this machine). Local units append their rows themselves, the moment each is known.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Protocol


class Executor(Protocol):
    def map(self, fn: Callable[[Any], Any], units: Iterable[Any]) -> Iterator[Any]: ...

    def shutdown(self, *, cancel: bool) -> None: ...


class LocalExecutor:
    remote = False

    def __init__(self, workers: int = 1) -> None:
        self.workers = max(1, workers)
        self._pool: ThreadPoolExecutor | None = None

    def map(self, fn: Callable[[Any], Any], units: Iterable[Any]) -> Iterator[Any]:
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="wholeloop")
        pending: set[Future] = {self._pool.submit(fn, unit) for unit in units}
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()

    def shutdown(self, *, cancel: bool) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=cancel)
