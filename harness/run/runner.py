"""Many units in parallel, resumable: the plan of a run, its executor, its manifest.

A run is every (task, repeat) of a suite for one configuration, in one run folder. What is left
to do is decided from the folder itself (the units without a final row), so running the same
command with the same folder resumes and never redoes finished work. Units run on an executor
(threads here, or Ray tasks on a cluster); see `harness.run.unit` for one unit.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sandbox import Backend, DiskSpaceError, Limits, SandboxError

from ..agents import Agent, prepare_agent
from ..errors import UserError
from ..records import ResultRow, RunFolder
from ..tasks import Task
from ..transcript import ErrorEvent, TranscriptWriter
from ..vocabulary import Outcome
from .executors import Executor, LocalExecutor, UnitResult
from .manifest import build_manifest, command_line, now
from .spec import RunSpec
from .unit import Prepared, ProgressFn, RunOptions, UnitRunner

#: Units in a row (as they finish) whose final row is an infra_error because the Docker engine
#: could not be reached: then the engine is down, and the run stops instead of burning every unit.
ENGINE_DOWN_AFTER = 3


def pending_units(
    tasks: list[Task], label: str, repeats: int, done: set[tuple[str, str, int]], redo: Iterable[str] = ()
) -> list[tuple[Task, int]]:
    """The (task, repeat) units of a run still to do, given its finished units: each one without a
    final row that stands, and every repeat of the `redo` tasks."""
    again = set(redo)
    return [(t, rep) for rep in range(repeats) for t in tasks if (t.id, label, rep) not in done or t.id in again]


def check_redo(tasks: list[Task], redo: Iterable[str], suite: Iterable[object] = ()) -> None:
    """UserError when `--redo` names a task the run does not have."""
    unknown = set(redo) - {t.id for t in tasks}
    if unknown:
        where = ", ".join(map(str, suite)) or "this suite"
        raise UserError(
            f"--redo names task(s) not in {where}: {', '.join(sorted(unknown))}",
            f"its tasks: {', '.join(sorted(t.id for t in tasks))}",
        )


class EngineDown(Exception):
    """The run stopped: several units in a row failed because the engine did not answer. Finished
    work is kept; the units not run (and those infra errors) are redone by a resume."""


class RunUnits:
    """The side of a run its executor sees (`executors.Units`): the recipe to ship, a unit to run
    here, and where a unit run elsewhere lands: its files in the run folder, its rows appended."""

    def __init__(self, units: UnitRunner, spec: RunSpec | None, tasks: list[Task]) -> None:
        self._units, self._spec, self._tasks = units, spec, tasks
        self.label, self.run_id = units.label, units.run_id

    @property
    def spec(self) -> RunSpec:
        """The run's RunSpec as given; for a run assembled in code from tasks, an agent and
        options, the one they come from (made when an executor asks: only then must the agent
        have a spec to be built again from)."""
        if self._spec is None:
            self._spec = self._units.options.to_spec(self._units.agent.spec, [str(t.spec_path) for t in self._tasks])
        return self._spec

    def progress(self, event: str, unit: str, text: str) -> None:
        self._units.progress(event, unit, text)

    def run_unit(self, task: Task, repeat: int) -> list[ResultRow]:
        return self._units.run_unit(task, repeat)

    def receive(self, task: Task, repeat: int, result: UnitResult) -> list[ResultRow]:
        folder = self._units.folder
        self._live_path(task.id, repeat).unlink(missing_ok=True)  # its rows have it all
        folder.move_aside(folder.transcript_path(task.id, self.label, repeat))  # an unfinished earlier try
        for rel, data in sorted(result.files.items()):
            try:
                folder.write_file(rel, data)
            except ValueError:
                continue  # only a unit's own attempt files are written
        if result.log:
            folder.log_image(result.log)
        if result.images:
            images = {**result.images, "node": result.node}
            folder.update_manifest(lambda manifest: manifest.setdefault("images", {}).__setitem__(task.id, images))
        task_hash = task.content_hash()  # this machine's, as a local run's rows have it
        rows = [ResultRow.model_validate({**row, "task_hash": task_hash, "node": result.node}) for row in result.rows]
        for row in rows:
            folder.append(row)
        return rows

    def lost(self, task: Task, repeat: int, exc: BaseException) -> list[ResultRow]:
        self.abandon(task, repeat)
        folder = self._units.folder
        path = folder.transcript_path(task.id, self.label, repeat)
        folder.move_aside(path)
        message = f"ray: {type(exc).__name__}: {str(exc).strip()[-2000:]}"
        with TranscriptWriter(path) as transcript:
            transcript.write(ErrorEvent(where="ray", error_type=type(exc).__name__, message=message))
        row = self._units.failure_row(task, repeat, 1, message)
        folder.append(row)
        return [row]

    def _live_path(self, task_id: str, repeat: int) -> Path:
        """The live copy of a try running elsewhere (what its node wrote so far)."""
        return self._units.folder.transcript_path(task_id, self.label, repeat).with_name("transcript.live.jsonl")

    def stream(self, task: Task, repeat: int, lines: list[str], *, fresh: bool) -> None:
        path = self._live_path(task.id, repeat)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w" if fresh else "a") as fh:
            fh.writelines(line + "\n" for line in lines)

    def abandon(self, task: Task, repeat: int) -> None:
        moved = self._units.folder.move_aside(self._live_path(task.id, repeat))
        if moved is not None:
            self._units.record_abandoned(task, repeat, moved)

    def note_executor(self, record: dict) -> None:
        self._units.folder.update_manifest(lambda manifest: manifest.__setitem__("executor", record))


class Runner:
    """A run: its plan, its executor, its manifest; each unit is run by the UnitRunner it holds."""

    def __init__(
        self,
        tasks: list[Task],
        agent: Agent,
        options: RunOptions,
        progress: ProgressFn | None = None,
        executor: Executor | None = None,
        backend: Backend | None = None,
        redo: Iterable[str] = (),
        spec: RunSpec | None = None,
    ):
        self.units = UnitRunner(agent, options, RunFolder(options.out, create=True), progress=progress, backend=backend)
        self.tasks, self.agent, self.options = tasks, agent, options
        self.folder = self.units.folder
        self.label, self.run_id = self.units.label, self.units.run_id
        self.run_dir = self.folder.path
        self.executor = executor or LocalExecutor(options.workers)
        #: tasks to do again although they are finished (`--redo`): every repeat, from attempt 1
        self.redo = set(redo)
        check_redo(tasks, self.redo)
        #: the manifest's recipe: the RunSpec the run was started from (`RunSpec.recipe()`); None for
        #: a run assembled in code from tasks, an agent and options
        self.recipe: dict | None = spec.recipe() if spec is not None else None
        #: the side of the run its executor sees (it ships the RunSpec, given or made from the options)
        self.view = RunUnits(self.units, spec, tasks)

    def progress(self, event: str, unit: str, text: str) -> None:
        self.units.progress(event, unit, text)

    def prepare(self, task: Task) -> Prepared:
        """A task's images and snapshot, as a unit of this run prepares them."""
        return self.units.prepare(task)

    def pending(self) -> list[tuple[Task, int]]:
        """(task, repeat) units to run: those without a final row that stands (a re-run resumes and
        never redoes finished work; an infrastructure error is tried again), and the --redo tasks."""
        return pending_units(self.tasks, self.label, self.options.repeats, self.folder.finished_units(), self.redo)

    def plan_text(self, todo: list[tuple[Task, int]]) -> str:
        """'3 to run, 4 already done' and what the 3 are when they are not new."""
        total = len(self.tasks) * self.options.repeats
        text = f"{len(todo)} to run, {total - len(todo)} already done"
        again = self.folder.units_to_redo()
        errors = sum((t.id, self.label, rep) in again and t.id not in self.redo for t, rep in todo)
        redone = sum(t.id in self.redo for t, _ in todo)
        if errors:
            text += f"; {errors} infrastructure error{'s' if errors > 1 else ''} redone"
        if redone:
            text += f"; {redone} redone on request (--redo)"
        return text

    def run(self) -> list[ResultRow]:
        """Run every pending unit. On KeyboardInterrupt, running agents stop at their next step,
        unfinished units are left for a resume, and the interrupt is re-raised. Raises
        RunFolderBusy at once when another run writes the same folder (the lock is held until the
        end, by the driver whatever the executor)."""
        with self.folder.writer():
            return self._run()

    def _run(self) -> list[ResultRow]:
        self._check_disk_room()
        self._clean_leftovers()
        # Before any container: an external agent builds (or finds) its install and checks it.
        prepare_agent(self.agent, lambda line: self.progress("note", "", line), self.units.backend)
        self.write_manifest()
        todo = self.pending()
        self.progress("plan", "", self.plan_text(todo))
        streak = 0  # units in a row that failed on an engine that does not answer
        try:
            for rows in self.executor.run_units(self.view, todo):
                for row in rows:
                    if row.final:
                        self.progress("done", self.units.unit_name(row.task_id, row.repeat), row.outcome)
                        engine = row.outcome == Outcome.infra_error and "EngineUnavailable" in (row.error or "")
                        streak = streak + 1 if engine else 0
                if streak >= ENGINE_DOWN_AFTER:
                    self.units.cancel.set()
                    why = (
                        f"{streak} units in a row failed because the Docker engine does not answer; the run "
                        f"stopped: finished work is kept, a resume (the same command) redoes the rest"
                    )
                    self.progress("interrupt", "", why)
                    self.executor.shutdown(cancel=True)
                    raise EngineDown(why)
        except KeyboardInterrupt:
            self.units.cancel.set()
            self.progress(
                "interrupt", "", "stopping: running agents stop at their next step; unfinished work is redone on resume"
            )
            self.executor.shutdown(cancel=True)
            raise
        finally:
            self.executor.shutdown(cancel=False)
            self.folder.update_manifest(lambda manifest: manifest.__setitem__("finished_at", now()))
        return self.folder.latest()

    def _check_disk_room(self) -> None:
        """Refuse (DiskSpaceError) a run whose containers at once could write more than the engine's
        disk has free: workers x the largest disk limit, twice when an agent's container waits
        (paused) while an earlier attempt is graded. Checked here for units run on this machine."""
        if not isinstance(self.executor, LocalExecutor):
            return  # other machines' disks: each node's containers have their limits all the same
        limits = [self.options.limits.apply(task.limits.apply(Limits())).disk_bytes or 0 for task in self.tasks]
        at_once = min(self.options.workers, len(self.tasks) * self.options.repeats) * (
            2 if self.options.attempts > 1 else 1
        )
        try:
            self.units.backend.check_room(max(limits, default=0), at_once)
        except DiskSpaceError:
            raise
        except SandboxError:
            pass  # the engine could not be asked: every unit will say so in its own row

    def _clean_leftovers(self) -> None:
        """Containers of runs whose process is gone (a SIGKILL leaves them) are removed first."""
        try:
            removed = self.units.backend.prune()
        except SandboxError:
            return  # no engine: every unit will say so in its own row
        if removed:
            self.progress("note", "", f"removed {len(removed)} container(s) left by runs that are no longer alive")

    def write_manifest(self) -> None:
        """The recipe at the start of the run; a resumed run keeps the original and notes a session."""

        def start(manifest: dict) -> None:
            if manifest:  # resuming: keep the original recipe, note this session
                manifest.setdefault("sessions", []).append({"started_at": now(), "command": command_line()})
                manifest["finished_at"] = None
            else:
                manifest.update(
                    build_manifest(
                        run_id=self.run_id,
                        agent=self.agent.describe(),
                        tasks=self.tasks,
                        options=self.options.record(self.label),
                        checks=self.options.task_checks,
                        recipe=self.recipe,
                        backend=self.units.backend,
                    )
                )

        self.folder.update_manifest(start)
