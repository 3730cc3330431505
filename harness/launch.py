"""From a RunSpec to a running run: `harness.launch.start(spec)`, and the steps the command line shows.

A part of its own, above the runner and authoring: choosing a suite's tasks reads `tasks check`'s
verdicts and statement classes (authoring), which builds on the runner, so this cannot live in it.

`prepare(spec)` does everything before a container starts: loads the suite and keeps the tasks
asked for (statement classes, `tasks check` verdicts), builds the agent and the executor, checks
`--redo` names, runs the preflight (credentials, price, every task's repository and commit, the
run folder). It raises a UserError (one line and a hint) for anything wrong and starts nothing.
`Launch.run()` then runs the pending units into the run folder, indexing rows into the run history
when the spec says so. `start(spec)` is the two in one call.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .agents import Agent, AgentSpec, ContainerAgent, build_agent
from .errors import UserError
from .records import ResultRow, RunFolder, slug
from .run.executors import Executor, Unit
from .run.runner import Runner, check_redo, pending_units
from .run.spec import RunSpec
from .run.unit import ProgressFn, RunOptions
from .tasks import Task, load_tasks

Say = Callable[[str], None]  # a line for the person running it (rich markup)


class RunProblem(UserError):
    """The run cannot start as asked (no tasks, an unknown class, problems the preflight found)."""

    def __init__(self, message: str, hint: str = "", problems: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__(message, hint)
        #: every (what, fix) the preflight found, when there were several
        self.problems = list(problems)


@dataclass
class Launch:
    """A run ready to start: its tasks, agent, options and executor, all checked."""

    spec: RunSpec
    tasks: list[Task]
    agent: Agent
    options: RunOptions
    executor: Executor | None
    where: str  # "2 worker(s)", "Ray cluster auto"
    redo: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the preflight found in order

    @property
    def out(self) -> Path:
        return self.options.out

    @property
    def label(self) -> str:
        return self.options.label_for(self.agent)

    def pending(self) -> list[Unit]:
        """The units a start would run now (nothing is created)."""
        folder = RunFolder(self.out)
        done = folder.finished_units() if folder.is_run() else set()
        return pending_units(self.tasks, self.label, self.options.repeats, done, self.redo)

    def finished_rows(self) -> list[ResultRow]:
        """The rows of the units a resume keeps (finished, not redone)."""
        folder = RunFolder(self.out)
        if not folder.is_run():
            return []
        finished = folder.finished_units()
        return [r for r in folder.latest() if r.unit() in finished and r.task_id not in self.redo]

    def run(
        self,
        *,
        progress: ProgressFn | None = None,
        on_row: Callable[[ResultRow], None] | None = None,
        warn: Say | None = None,
        backend=None,
    ) -> list[ResultRow]:
        """Run every pending unit; returns the rows that count. Raises KeyboardInterrupt and
        EngineDown through (finished work is kept; the same spec resumes)."""
        runner = Runner(
            self.tasks,
            self.agent,
            self.options,
            progress=progress,
            executor=self.executor,
            backend=backend,
            redo=self.redo,
            spec=self.spec,
        )
        if on_row is not None:
            runner.folder.on_row(on_row)
        hook = None
        if self.spec.history.enabled:  # rows go into the run history through the run folder's one append point
            from .history.live import attach, default_url

            hook = attach(runner.folder, default_url(self.out, self.spec.history.url), warn=warn or (lambda _t: None))
        try:
            return runner.run()
        finally:
            if hook is not None:
                hook.finish()


def prepare(spec: RunSpec, *, redo: Iterable[str] = (), say: Say | None = None) -> Launch:
    """Everything before the first container, checked; raises RunProblem (or another UserError)."""
    say = say or (lambda _line: None)
    if spec.history.enabled:  # before anything is printed or written: the URL's password is a secret
        from .history.url import ENV, protect

        protect(spec.history.url or os.environ.get(ENV))
    suite = [Path(p) for p in spec.suite.paths]
    missing = [str(p) for p in suite if not p.exists()]
    if missing:
        raise RunProblem(f"{', '.join(missing)}: no such file or folder", "give spec files or folders that hold them")
    tasks = load_tasks(list[str | Path](suite))
    if not tasks:
        raise RunProblem(
            "no task specs (*.yaml) found in " + ", ".join(map(str, suite)), "give spec files or folders that hold them"
        )
    settings = spec.settings
    if spec.suite.statement_quality:
        tasks = _of_statement_quality(tasks, spec.suite.statement_quality, say)
    if settings.training_cutoff:
        from .report.dating import parse_cutoff
        from .report.errors import ReportInputError

        try:
            parse_cutoff(settings.training_cutoff)  # a bad value fails now, not in the report
        except ReportInputError as exc:
            raise RunProblem(
                f"--training-cutoff {settings.training_cutoff!r}: {exc}", "give YYYY-MM or YYYY-MM-DD"
            ) from None
    tasks, checks = _checked_tasks(tasks, suite, spec.suite.include_quarantined, say)
    agent = build_agent(spec.agent.model_copy(deep=True))
    options = RunOptions.from_spec(spec, out=Path("."), task_checks=checks)
    options.out = (
        Path(spec.out)
        if spec.out
        else Path("runs") / f"{datetime.now():%Y%m%d-%H%M%S}-{slug(options.label_for(agent))}"
    )
    executor: Executor | None = None
    where = f"{settings.workers} worker(s)"
    if spec.executor.kind == "ray":
        from .run.executors.ray import RayExecutor

        executor = RayExecutor(spec.executor.address, max_in_flight=spec.executor.max_in_flight)
        where = f"Ray cluster {spec.executor.address or 'auto'}"
    elif spec.executor.address:
        raise RunProblem("--ray-address needs --executor ray", "add --executor ray (executor.kind: ray)")
    redo_ids = [t.strip() for item in redo for t in item.split(",") if t.strip()]
    check_redo(tasks, redo_ids, suite)
    notes = _preflight(tasks, agent, spec, options.out)
    spec = spec.model_copy(update={"out": str(options.out)})  # the recipe names the folder it ran in
    return Launch(spec, tasks, agent, options, executor, where, redo_ids, notes)


def start(
    spec: RunSpec,
    *,
    redo: Iterable[str] = (),
    progress: ProgressFn | None = None,
    say: Say | None = None,
    backend=None,
) -> Path:
    """Run `spec` (or resume it: the same `out` keeps finished work); returns the run folder.
    `progress(event, unit, text)` hears each step. Raises a UserError when the run cannot start."""
    launch = prepare(spec, redo=redo, say=say)
    launch.run(progress=progress, warn=say, backend=backend)
    return launch.out


def verify_agent(spec: AgentSpec, *, allow_unknown_model: bool = False) -> list[tuple[str, str]]:
    """`wholeloop agents verify`: the checks `run` makes of an external agent and its model before
    any container starts (the wire the model's provider needs is one the CLI speaks; the CLI is
    handed the proxy's endpoint and the attempt's token on that wire; the provider's key is set
    here; the model has a price). Returns what was decided, (what, value) each; raises RunProblem
    naming every problem. Nothing is built, started or sent."""
    agent = build_agent(spec)
    if not isinstance(agent, ContainerAgent):
        raise RunProblem(
            f"{spec.name} is not an external agent: there is no CLI to verify",
            "give external:NAME or an --agent-config FILE of kind: external (the tool agent's model "
            "is checked by `wholeloop doctor --model M`)",
        )
    facts = agent.pairing()
    problems = agent.check(allow_unknown_price=allow_unknown_model)
    if len(problems) == 1:
        raise RunProblem(problems[0], "see docs/agents.md (wires, endpoint and key)")
    if problems:
        raise RunProblem(
            f"{len(problems)} problems with this agent and model (above); a run would start no container",
            "see docs/agents.md (wires, endpoint and key)",
            problems=[(p, "") for p in problems],
        )
    return facts


def _preflight(tasks: list[Task], agent: Agent, spec: RunSpec, out: Path) -> list[str]:
    from .run.preflight import Problem, preflight

    container_agent = isinstance(agent, ContainerAgent)  # an external CLI: it checks its own model and key
    allow = spec.settings.allow_unknown_model
    checked = preflight(
        tasks,
        model=agent.model if spec.agent.name not in ("gold", "noop") and not container_agent else None,
        out=out,
        base_url=spec.agent.model_options.get("base_url"),
        allow_unknown_model=allow,
    )
    if isinstance(agent, ContainerAgent):
        checked.problems += [Problem(p, "") for p in agent.check(allow_unknown_price=allow)]
    if not checked.ok:  # every problem is said, one line each; nothing was started
        if len(checked.problems) == 1:
            raise RunProblem(checked.problems[0].what, checked.problems[0].fix)
        raise RunProblem(
            f"{len(checked.problems)} problems found before the run (above); nothing was started",
            problems=[(p.what, p.fix) for p in checked.problems],
        )
    return checked.notes


def _of_statement_quality(tasks: list[Task], wanted: list[str], say: Say) -> list[Task]:
    """The tasks whose statement class (`origin.statement_quality`; `unclassified` without one) is
    among `wanted`; RunProblem for an unknown class or when none is left."""
    from .authoring.statements import QUALITIES, UNCLASSIFIED, quality_of

    classes = {c.strip() for item in wanted for c in item.split(",") if c.strip()}
    unknown = classes - {*QUALITIES, UNCLASSIFIED}
    if unknown:
        raise RunProblem(
            f"--statement-quality {', '.join(sorted(unknown))}: no such class",
            f"the classes: {', '.join((*QUALITIES, UNCLASSIFIED))}",
        )
    kept = [t for t in tasks if quality_of(t) in classes]
    if not kept:
        found = sorted({quality_of(t) for t in tasks})
        raise RunProblem(
            f"no task's statement is of class {', '.join(sorted(classes))}", f"the tasks' classes: {', '.join(found)}"
        )
    say(f"{len(kept)} of {len(tasks)} task(s) with a statement of class {', '.join(sorted(classes))}")
    return kept


def _checked_tasks(
    tasks: list[Task], suite: list[Path], include_quarantined: bool, say: Say
) -> tuple[list[Task], dict[str, str]]:
    """Say which tasks have no current `tasks check` verdict or are quarantined, and what to run;
    leave the quarantined out unless asked. Returns the tasks to run and each one's status."""
    from .authoring.check import check_status

    statuses = {t.id: check_status(t) for t in tasks}
    by_status: dict[str, list[str]] = {}
    for task_id, (status, _) in statuses.items():
        by_status.setdefault(status, []).append(task_id)
    where = " ".join(str(s) for s in suite)
    for status in ("unchecked", "stale"):
        ids = by_status.get(status, [])
        if ids:
            shown = ", ".join(ids[:8]) + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")
            say(
                f"[yellow]{len(ids)} task(s) {status}[/] ({shown}): their results are marked as such; "
                f"check them first with [bold]wholeloop tasks check {where}[/]"
            )
    quarantined = by_status.get("quarantined", [])
    if quarantined:
        action = "running them anyway (--include-quarantined)" if include_quarantined else "skipped"
        # A count, the ids and where the reasons are: a run is not the place to read every reason.
        shown = ", ".join(quarantined[:8]) + (f" and {len(quarantined) - 8} more" if len(quarantined) > 8 else "")
        say(
            f"[yellow]{len(quarantined)} task(s) quarantined[/], {action} ({shown}); "
            f"why: [bold]wholeloop tasks check {where}[/]"
        )
        if not include_quarantined:
            tasks = [t for t in tasks if statuses[t.id][0] != "quarantined"]
            if not tasks:
                raise RunProblem(
                    "every task is quarantined", "fix them (see `wholeloop tasks check`) or pass --include-quarantined"
                )
    return tasks, {task_id: status for task_id, (status, _) in statuses.items()}
