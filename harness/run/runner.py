"""Many units in parallel, resumable: the plan of a run, its executor, its manifest.

A run is every (task, repeat) of a suite for one configuration, in one run folder. What is left
to do is decided from the folder itself (the units without a final row), so running the same
command with the same folder resumes and never redoes finished work. Units run on an executor
(threads here, or Ray tasks on a cluster); see `harness.run.unit` for one unit.
"""

from __future__ import annotations

import sys

from sandbox import Backend, SandboxError
from sandbox.docker import prune_containers

from ..agents import Agent
from ..records import ResultRow, RunFolder
from ..tasks import Task
from .executors import Executor, LocalExecutor
from .manifest import build_manifest, now
from .unit import ProgressFn, RunOptions, UnitRunner


class Runner(UnitRunner):
    def __init__(self, tasks: list[Task], agent: Agent, options: RunOptions, progress: ProgressFn | None = None,
                 executor: Executor | None = None, backend: Backend | None = None):
        super().__init__(agent, options, RunFolder(options.out, create=True), progress=progress, backend=backend)
        self.tasks = tasks
        self.run_dir = self.folder.path
        self.executor = executor or LocalExecutor(options.workers)

    def pending(self) -> list[tuple[Task, int]]:
        """(task, repeat) units without a final row yet: a re-run resumes, never redoes."""
        done = self.folder.finished_units()
        return [(t, rep) for rep in range(self.options.repeats) for t in self.tasks if (t.id, self.label, rep) not in done]

    def run(self) -> list[ResultRow]:
        """Run every pending unit. On KeyboardInterrupt, running agents stop at their next step,
        unfinished units are left for a resume, and the interrupt is re-raised."""
        self._clean_leftovers()
        self.write_manifest()
        todo = self.pending()
        total = len(self.tasks) * self.options.repeats
        self.progress("plan", "", f"{len(todo)} to run, {total - len(todo)} already done")
        try:
            for rows in self.executor.run_units(self, todo):
                for row in rows:
                    if row.final:
                        self.progress("done", self.unit_name(row.task_id, row.repeat), row.outcome)
        except KeyboardInterrupt:
            self.cancel.set()
            self.progress("interrupt", "", "stopping: running agents stop at their next step; unfinished work is redone on resume")
            self.executor.shutdown(cancel=True)
            raise
        finally:
            self.executor.shutdown(cancel=False)
            self.folder.update_manifest(lambda manifest: manifest.__setitem__("finished_at", now()))
        return self.folder.latest()

    def _clean_leftovers(self) -> None:
        """Containers of runs whose process is gone (a SIGKILL leaves them) are removed first."""
        try:
            removed = prune_containers().removed
        except SandboxError:
            return  # no engine: every unit will say so in its own row
        if removed:
            self.progress("note", "", f"removed {len(removed)} container(s) left by runs that are no longer alive")

    def write_manifest(self) -> None:
        """The recipe at the start of the run; a resumed run keeps the original and notes a session."""
        options = {"workers": self.options.workers, "repeats": self.options.repeats, "attempts": self.options.attempts,
                   "feedback": self.options.feedback, "infra_retries": self.options.infra_retries,
                   "limits": self.options.limits.model_dump(exclude_none=True), "config": self.label}
        if self.options.training_cutoff:
            options["training_cutoff"] = self.options.training_cutoff

        def start(manifest: dict) -> None:
            if manifest:  # resuming: keep the original recipe, note this session
                manifest.setdefault("sessions", []).append({"started_at": now(), "command": sys.argv})
                manifest["finished_at"] = None
            else:
                manifest.update(build_manifest(run_id=self.run_id, agent=self.agent.describe(), tasks=self.tasks,
                                               options=options, checks=self.options.task_checks))

        self.folder.update_manifest(start)
