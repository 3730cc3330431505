"""Where units of work run. The runner hands an executor its units and a narrow view of the run
(`Units`: the recipe, a unit to run here, where a unit run elsewhere hands back its rows and
files); the executor runs each unit and yields the unit's rows once they are in the run folder.

`LocalExecutor` is a bounded thread pool: attempts spend their time waiting on the model and on
Docker, not on this process's CPU, so threads are enough and share the image-build locks. Each
unit appends its rows itself, the moment each is known.

`harness.run.executors.ray.RayExecutor` runs units in other processes or machines: it ships the
run's RunSpec as it is, runs each (task, repeat) elsewhere and hands the unit's rows and files to
`Units.receive`, which writes them into the run folder and appends the rows (exactly once, on this
machine); then yields them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ...records import ResultRow

if TYPE_CHECKING:
    from ...tasks import Task
    from ..spec import RunSpec

Unit = tuple["Task", int]  # (task, repeat)


@dataclass
class UnitResult:
    """What a unit run elsewhere hands back: its rows (as JSON), its files under the run folder
    (relative path -> bytes), the image build log, the images it used, and the node it ran on."""

    rows: list[dict]
    files: dict[str, bytes] = field(default_factory=dict)
    log: str = ""
    images: dict = field(default_factory=dict)
    node: str = ""


class Units(Protocol):
    """The side of a run an executor sees (never the whole Runner)."""

    @property
    def spec(self) -> RunSpec:
        """The run's recipe, as is: what another process rebuilds its unit runner from."""
        ...

    #: the configuration's resolved name, and the run's id
    label: str
    run_id: str

    def progress(self, event: str, unit: str, text: str) -> None:
        """Tell the person watching (the run's progress function)."""
        ...

    def run_unit(self, task: Task, repeat: int) -> list[ResultRow]:
        """Run the unit here, in this process; returns its rows, already appended."""
        ...

    def receive(self, task: Task, repeat: int, result: UnitResult) -> list[ResultRow]:
        """A unit run elsewhere: its files written into the run folder, its rows appended; returns them."""
        ...

    def lost(self, task: Task, repeat: int, exc: BaseException) -> list[ResultRow]:
        """A unit that could not be run elsewhere (its node died, our code failed there): an
        infra_error row, appended, with a transcript saying why."""
        ...

    def stream(self, task: Task, repeat: int, lines: list[str], *, fresh: bool) -> None:
        """New transcript lines of a unit running elsewhere, kept in its live copy (`fresh`: a new try's)."""
        ...

    def abandon(self, task: Task, repeat: int) -> None:
        """A live copy left by a try that stopped: recorded once as an abandoned try, with its spend."""
        ...

    def note_executor(self, record: dict) -> None:
        """Where the units ran, for the manifest."""
        ...


class Executor(Protocol):
    def run_units(self, run: Units, units: Iterable[Unit]) -> Iterator[list[ResultRow]]:
        """Run each unit of `run`; yield its rows, already appended to the run folder, as units
        complete. Raises KeyboardInterrupt through; a unit's own failures are rows, not raises."""
        ...

    def shutdown(self, *, cancel: bool) -> None:
        """Stop: with `cancel`, units not started are dropped and running ones are asked to stop."""
        ...

    def sibling(self) -> Executor:
        """Another executor of this kind on the same machines (and connection), with its own state:
        for a caller that hands it units from several threads at once (a sweep's workers)."""
        ...


class LocalExecutor:
    """Units as threads of this process, at most `workers` at once."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = max(1, workers)
        self._pool: ThreadPoolExecutor | None = None

    def run_units(self, run: Units, units: Iterable[Unit]) -> Iterator[list[ResultRow]]:
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="wholeloop")
        pending: set[Future] = {self._pool.submit(run.run_unit, task, repeat) for task, repeat in units}
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()

    def shutdown(self, *, cancel: bool) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=cancel)

    def sibling(self) -> LocalExecutor:
        return LocalExecutor(self.workers)
