"""One unit of work end to end: a (task, repeat), its attempts, and bounded retries.

Find or build the images, start the agent's container (network off), then for each attempt let
the agent work, take the patch and grade it in a fresh container; a later attempt continues the
same conversation in the same container, after feedback. One row per attempt goes into the run
folder the moment it is known.

Failures are sorted by whose they are, on evidence, never by an exception's type alone
(docs/outcomes.md): the agent's end up as outcomes -- a container its processes got OOM-killed
(`memory_limit`) or left unusable (`container_broken`) is graded like any other attempt; the
machine's (engine gone, container removed or stopped from outside, image build failed, provider
down) are retried a bounded number of times and otherwise recorded as `infra_error`; the task
author's (missing repository, unknown commit) are recorded as `infra_error` at once. Nothing of
that stops the other units.

How the agent's doing is told from the machine's: `harness.run.attribution`.
"""

from __future__ import annotations

import json
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

from sandbox import (
    Backend,
    BaseRules,
    ContainerBroken,
    ImageBuildError,
    InfraError,
    Limits,
    PatchError,
    Sandbox,
    SandboxError,
    take_patch,
)

from ..agents import Agent, AgentContext, AgentResult, AgentSpec, Workspace, agent_workspace
from ..grading import GRADER_VERSION, Grade, Outcome, grade
from ..grading.feedback import FeedbackMode
from ..models.types import Usage
from ..records import ManifestOptions, PhaseTimes, ResultRow, RunFolder
from ..sandboxes import default_backend
from ..tasks import LimitsSpec, Task, TaskSpecError
from ..transcript import (
    AttemptStart,
    ErrorEvent,
    Event,
    Feedback,
    GradeEvent,
    ModelResponse,
    PatchEvent,
    PhaseEvent,
    Stop,
    TranscriptWriter,
    read_transcript,
)
from ..vocabulary import StopReason
from .attribution import next_feedback, recurring_place, run_agent
from .images import build_task_images
from .manifest import now

if TYPE_CHECKING:
    from .spec import RunSpec

ProgressFn = Callable[[str, str, str], None]  # (event, unit label, text)


@dataclass
class RunOptions:
    out: Path
    workers: int = 1
    repeats: int = 1
    attempts: int = 1  # tries per (task, repeat); a later one continues the conversation
    feedback: FeedbackMode = "none"  # none | visible | hidden: what the agent hears between attempts
    infra_retries: int = 2  # extra tries of a unit that failed for the machine's reasons
    limits: LimitsSpec = field(default_factory=LimitsSpec)  # run-level overrides, above the task's
    label: str = ""  # the configuration's name in reports; defaults to the agent's name (+ model)
    task_checks: dict[str, str] = field(default_factory=dict)  # task id -> `tasks check` status at the start
    training_cutoff: str | None = None  # the model's, for contamination dating (else the report's table)

    @classmethod
    def from_spec(
        cls, spec: RunSpec, *, out: Path | None = None, task_checks: dict[str, str] | None = None
    ) -> RunOptions:
        """The options of a run from its spec (the one way they are made from a recipe)."""
        s = spec.settings
        return cls(
            out=out if out is not None else Path(spec.out or "."),
            workers=s.workers,
            repeats=s.repeats,
            attempts=s.attempts,
            feedback=s.feedback,
            infra_retries=s.infra_retries,
            limits=spec.limits.model_copy(),
            label=s.label,
            task_checks=dict(task_checks or {}),
            training_cutoff=s.training_cutoff,
        )

    def to_spec(self, agent: AgentSpec, suite: Sequence[str]) -> RunSpec:
        """A RunSpec these options come from (`from_spec` of it gives them back, but for
        `task_checks`): the recipe of a run assembled in code from tasks, an agent and options,
        which an executor ships to another process as it would a started run's."""
        from .spec import RunSpec, SettingsSpec, SuiteSpec

        settings = SettingsSpec(
            workers=self.workers,
            repeats=self.repeats,
            attempts=self.attempts,
            feedback=self.feedback,
            infra_retries=self.infra_retries,
            label=self.label,
            training_cutoff=self.training_cutoff,
        )
        return RunSpec(
            suite=SuiteSpec(paths=list(suite)),
            agent=agent.model_copy(deep=True),
            settings=settings,
            limits=self.limits.model_copy(),
            history={"enabled": False},
            out=str(self.out),
        )

    def record(self, label: str) -> dict:
        """These options as the manifest records them and the Ray executor ships them (the one
        serialised form; `from_record` reads it back). `label`: the configuration's resolved name."""
        record: dict = {
            "workers": self.workers,
            "repeats": self.repeats,
            "attempts": self.attempts,
            "feedback": self.feedback,
            "infra_retries": self.infra_retries,
            "limits": self.limits.model_dump(exclude_none=True),
            "config": label,
        }
        if self.training_cutoff:
            record["training_cutoff"] = self.training_cutoff
        return record

    @classmethod
    def from_record(cls, record: dict | ManifestOptions, out: Path) -> RunOptions:
        """The options `record()` wrote (a manifest's `options`, a Ray payload's), for a run in `out`."""
        rec = ManifestOptions.model_validate(record) if isinstance(record, dict) else record
        return cls(
            out=out,
            workers=rec.workers,
            repeats=rec.repeats,
            attempts=rec.attempts,
            feedback=cast(FeedbackMode, rec.feedback),
            infra_retries=rec.infra_retries,
            limits=LimitsSpec(**rec.limits),
            label=rec.config,
            training_cutoff=rec.training_cutoff,
        )

    def label_for(self, agent: Agent) -> str:
        if self.label:
            return self.label
        model = agent.model or ""
        if model.startswith("replay:"):  # the folder's name says enough; the manifest has the path
            model = "replay:" + Path(model.removeprefix("replay:")).name
        return agent.name + (f"+{model}" if model else "")


@dataclass
class Prepared:
    image: str
    base_commit: str  # the snapshot's only commit, the base of the agent's diff
    seconds: float
    cached: bool
    images: dict  # what the manifest records: env and task tags and ids, the tree
    rules: BaseRules  # what the patch is taken against besides the image's tree: the base's ignore rules


def prepare_task(task: Task, log: Callable[[str], None] | None = None, backend: Backend | None = None) -> Prepared:
    """A task's environment and task images (built once per distinct input, the same way as for
    `tasks check`: see `harness.run.images`) and its snapshot. The task image ends with the test
    parser's image setup (facts recorded for grading)."""
    t0 = time.monotonic()
    built = build_task_images(task, log=log, backend=backend)
    return Prepared(
        built.task.tag,
        built.snapshot.commit,
        time.monotonic() - t0,
        built.cached,
        built.record(),
        BaseRules.from_repository(built.snapshot.path, built.snapshot.commit),
    )


class RetryUnit(Exception):
    """The machine failed this unit; it may succeed on another try. `failed_in` says where (the
    abandoned try's row has it too), `transcript` where that try's transcript was moved."""

    def __init__(self, failed_in: dict, transcript: str) -> None:
        super().__init__(failed_in)
        self.failed_in, self.transcript = failed_in, transcript


@dataclass
class TryState:
    """Where one try of a unit is and what it spent that no row records yet: the attempt it is in
    (the next one once an attempt's row is written), that attempt's agent result and phases, and
    the phase (and grading step) running now, for the row an infrastructure failure leaves."""

    started: float = field(default_factory=time.monotonic)
    started_at: str = field(default_factory=now)
    phases: PhaseTimes = field(default_factory=PhaseTimes)
    attempt: int = 1
    result: AgentResult | None = None
    phase: str = "image"  # image, container_start, agent, patch, grading, feedback
    step: str = ""

    def next_attempt(self) -> None:
        self.attempt, self.result, self.phase, self.step = self.attempt + 1, None, "feedback", ""

    def new_phases(self) -> None:
        self.phases, self.started, self.started_at = PhaseTimes(image_cached=True), time.monotonic(), now()

    def failed_in(self, exc: BaseException) -> dict:
        return {"phase": self.phase, "step": self.step, "error_type": type(exc).__name__}


@dataclass
class Phase:
    """What the body of a phase may say about it: `seconds` when the work measured itself (an
    image found in a cache, grading's own clock), the transcript event's `detail`."""

    seconds: float | None = None
    detail: str = ""


#: the phases a unit walks: the PhaseTimes field each fills, the progress event that tells its
#: start (if any), and whether a `phase` transcript event records it (the agent's turn and the
#: patch have events of their own: stop, patch)
PHASES: dict[str, tuple[str, str, bool]] = {
    "image": ("image_s", "start", True),
    "container_start": ("container_start_s", "", True),
    "agent": ("agent_s", "agent", False),
    "patch": ("patch_s", "", False),
    "grading": ("grading_s", "grade", True),
}


class NotRetryable(Exception):
    """Not the agent's failure, and another try would not help (a bad API key, a wrong model)."""


class Interrupted(Exception):
    """The run is stopping; the unit is left unfinished, to be redone on resume."""


class UnitRunner:
    """Runs units of one configuration (agent + options) into one run folder."""

    def __init__(
        self,
        agent: Agent,
        options: RunOptions,
        folder: RunFolder,
        *,
        progress: ProgressFn | None = None,
        backend: Backend | None = None,
    ) -> None:
        self.agent, self.options, self.folder = agent, options, folder
        self.label = options.label_for(agent)
        self.run_id = folder.path.name
        self.progress = progress or (lambda *_: None)
        self.backend = backend or default_backend()
        self.cancel = threading.Event()

    def unit_name(self, task_id: str, repeat: int) -> str:
        return task_id if self.options.repeats == 1 else f"{task_id}#{repeat}"

    @contextmanager
    def phase(self, at: TryState, transcript: TranscriptWriter, unit: str, name: str, say: str = "") -> Iterator[Phase]:
        """One phase of a try, the one mechanism for its narration and timing: the try is marked as
        in it (where an infrastructure failure happened), `say` is told to the person watching, and
        when the body ends normally its seconds go on the attempt's PhaseTimes and, for the phases
        that have one, into a `phase` transcript event. A body that raises records neither."""
        slot, event, recorded = PHASES[name]
        at.phase = name
        if say:
            self.progress(event, unit, say)
        t0 = time.monotonic()
        ph = Phase()
        yield ph
        seconds = round(ph.seconds if ph.seconds is not None else time.monotonic() - t0, 3)
        setattr(at.phases, slot, seconds)
        if recorded:
            transcript.write(PhaseEvent(name=name, seconds=seconds, detail=ph.detail))

    def run_unit(self, task: Task, repeat: int) -> list[ResultRow]:
        """All attempts of one (task, repeat), with bounded retries of machine failures.
        Never raises for task or infrastructure problems; returns the rows it appended."""
        failed: list[RetryUnit] = []  # the tries the machine failed, each left a row of its own
        try:
            for try_no in range(self.options.infra_retries):
                try:
                    return self._try_unit(task, repeat, last_try=False, failed=failed)
                except RetryUnit as retry:
                    failed.append(retry)
                    self.progress(
                        "retry", self.unit_name(task.id, repeat), f"infrastructure failure, retry {try_no + 1}"
                    )
                    time.sleep(min(2**try_no, 30))
            return self._try_unit(task, repeat, last_try=True, failed=failed)  # records the error instead of retrying
        except Interrupted:
            return []

    def _try_unit(self, task: Task, repeat: int, *, last_try: bool, failed: list[RetryUnit]) -> list[ResultRow]:
        unit = self.unit_name(task.id, repeat)
        transcript_path = self.folder.transcript_path(task.id, self.label, repeat)
        moved = self.folder.move_aside(transcript_path)  # an unfinished earlier try keeps its story, apart
        if moved is not None:
            self.record_abandoned(task, repeat, moved)
        transcript = TranscriptWriter(transcript_path)
        rows: list[ResultRow] = []
        at = TryState()
        try:
            with self.phase(at, transcript, unit, "image", "preparing images") as ph:
                at.phases.image_cached = False  # until the images are found or built
                prepared = self.prepare(task)
                at.phases.image_cached, ph.seconds = prepared.cached, prepared.seconds
                ph.detail = "cached" if prepared.cached else "built"
            limits = self.options.limits.apply(task.limits.apply(Limits()))
            with ExitStack() as container:
                with self.phase(at, transcript, unit, "container_start"):
                    # What the agent arranges for its container (an external CLI: its install, the proxy's socket).
                    workspace = container.enter_context(
                        agent_workspace(self.agent, task, transcript_path.parent, self.backend)
                    )
                    sb = self.backend.start(
                        prepared.image, limits=limits, role="agent", run_id=self.run_id, mounts=workspace.mounts
                    )
                    container.callback(sb.close)
                rows = self._attempts(task, repeat, prepared, sb, limits, transcript, at, workspace)
        except (Interrupted, RetryUnit):
            raise
        except InfraError as exc:
            if not last_try:  # the try is abandoned: its row keeps its spend and where it failed
                transcript.write(ErrorEvent(where="runner", error_type=type(exc).__name__, message=str(exc)))
                transcript.close()
                moved = self.folder.move_aside(transcript_path)
                kept = str(self.folder.relative(moved)) if moved else ""
                self._error_row(task, repeat, exc, transcript, at, retried_to=kept)
                raise RetryUnit(at.failed_in(exc), kept) from exc
            rows.append(self._error_row(task, repeat, exc, transcript, at, failed=failed))
        except (SandboxError, TaskSpecError, NotRetryable) as exc:  # the task's inputs or the setup: no retry
            rows.append(self._error_row(task, repeat, exc, transcript, at))
        except Exception as exc:  # a bug of ours must not take the other tasks down with it
            transcript.write(ErrorEvent(where="runner", error_type=type(exc).__name__, message=traceback.format_exc()))
            rows.append(self._error_row(task, repeat, exc, transcript, at))
        finally:
            transcript.close()
        return rows

    def _attempts(
        self,
        task: Task,
        repeat: int,
        prepared: Prepared,
        sb: Sandbox,
        limits: Limits,
        transcript: TranscriptWriter,
        at: TryState,
        workspace: Workspace,
    ) -> list[ResultRow]:
        """The attempts of one try, each the same sequence: the agent's turn, the patch, the grade,
        the row; then (not resolved, attempts left) the same container again, with feedback."""
        rows: list[ResultRow] = []
        messages: list = []
        feedback: str | None = None
        rules = replace(prepared.rules, exclude=prepared.rules.exclude + workspace.own_files)
        broken = ""  # why the container cannot start again (ContainerBroken): no more turns, the tree is graded
        unit = self.unit_name(task.id, repeat)
        for attempt in range(1, self.options.attempts + 1):
            last = attempt == self.options.attempts
            transcript.write(
                AttemptStart(
                    task_id=task.id,
                    attempt=attempt,
                    repeat=repeat,
                    config=self.label,
                    image=prepared.image,
                    problem_statement=task.problem_statement if attempt == 1 else "",
                )
            )
            if feedback:
                transcript.write(Feedback(attempt=attempt, mode=self.options.feedback, text=feedback))
            with self.phase(at, transcript, unit, "agent", f"agent working (attempt {attempt})"):
                ctx = AgentContext(
                    task=task,
                    sandbox=sb,
                    transcript=transcript,
                    attempt=attempt,
                    feedback=feedback,
                    deadline_s=task.timeouts.agent_s,
                    messages=messages,
                    cancel=self.cancel,
                    on_step=lambda step: self.progress("step", unit, str(step)),
                    workspace=workspace,
                )
                result = self._turn(ctx, sb, limits, broken, transcript)
            at.result = result
            at.phases.model_s, at.phases.tool_s = round(result.model_s, 3), round(result.tool_s, 3)
            at.phases.retry_wait_s = round(result.retry_wait_s, 3)
            if result.stop_reason == StopReason.interrupted:
                raise Interrupted()
            if result.infra_error:
                raise (InfraError if result.infra_retryable else NotRetryable)(result.infra_error)
            adir = self.folder.attempt_dir(task.id, self.label, repeat, attempt)
            adir.mkdir(parents=True, exist_ok=True)
            with self.phase(at, transcript, unit, "patch"):
                patch, note = self._patch(sb, rules, attempt, adir, transcript)
            if last:
                sb.close()  # the agent's container is gone before the final grading
            with self.phase(at, transcript, unit, "grading", f"grading attempt {attempt}") as ph:
                grade_, output, report = self._grade(task, result, patch, prepared, limits, at)
                ph.seconds = grade_.seconds
            row = self._record(
                task, repeat, attempt, last, result, grade_, output, note, patch, adir, limits, at, transcript
            )
            rows.append(row)
            if row.final:
                break
            at.next_attempt()  # this attempt's spend is on its row; a failure from here on is the next one's
            try:
                sb.restart()  # the next attempt continues in the same container
                feedback = next_feedback(self.options.feedback, task, grade_, report, sb, transcript)
            except ContainerBroken as exc:  # its files keep it from starting again: no more turns, the tree is graded
                broken = str(exc)
                feedback = next_feedback(self.options.feedback, task, grade_, report, None, transcript)
            at.new_phases()
        return rows

    def _turn(
        self, ctx: AgentContext, sb: Sandbox, limits: Limits, broken: str, transcript: TranscriptWriter
    ) -> AgentResult:
        """The agent's turn (none when its container is broken: the agent's doing)."""
        if broken:  # its container's files keep it from starting
            transcript.write(Stop(reason=StopReason.container_broken, detail=broken))
            return AgentResult(stop_reason=StopReason.container_broken, detail=broken)
        return run_agent(self.agent, ctx, sb, limits)

    def _patch(
        self, sb: Sandbox, rules: BaseRules, attempt: int, adir: Path, transcript: TranscriptWriter
    ) -> tuple[str, str]:
        """(the patch, a note when none could be taken), written beside the attempt and told."""
        # Every process of the agent ends, and its container stays stopped while the patch is
        # taken from outside it (the engine's change list, its tree read out, diffed on the host)
        # and graded: nothing of the agent's runs meanwhile.
        sb.stop()
        files: list[str] = []
        try:
            taken = take_patch(sb, rules)
            patch, note, files = taken.text, "", taken.files
        except PatchError as exc:  # a huge file or patch
            patch, note = "", f"no patch could be taken: {exc}"
        self.folder.write_file(self.folder.relative(adir / "patch.diff"), patch)
        transcript.write(PatchEvent(attempt=attempt, bytes=len(patch.encode()), files=files, diff=patch))
        return patch, note

    def _grade(
        self, task: Task, result: AgentResult, patch: str, prepared: Prepared, limits: Limits, at: TryState
    ) -> tuple[Grade, str, object]:
        """The attempt's grade, test output and test report; InfraError when the machine failed it."""
        if result.task_error:  # the task's inputs are wrong: nothing of the agent's to grade, no retry
            task_error = Grade(
                task_id=task.id,
                grader_version=GRADER_VERSION,
                outcome=Outcome.task_error,
                resolved=False,
                note=result.task_error,
            )
            return task_error, "", None
        grade_, output, report = grade(
            task,
            patch,
            prepared.image,
            base=prepared.base_commit,
            limits=limits,
            backend=self.backend,
            run_id=self.run_id,
        )
        if grade_.outcome is Outcome.infra_error:
            at.step = grade_.failed_step.step if grade_.failed_step else ""
            raise InfraError(grade_.note)
        return grade_, output, report

    def _record(
        self,
        task: Task,
        repeat: int,
        attempt: int,
        last: bool,
        result: AgentResult,
        grade_: Grade,
        output: str,
        note: str,
        patch: str,
        adir: Path,
        limits: Limits,
        at: TryState,
        transcript: TranscriptWriter,
    ) -> ResultRow:
        """The attempt's grade and test output beside it, its grade told, its row appended."""
        said = {
            StopReason.disk_limit: f"the container's disk limit ({limits.disk}) was reached",
            StopReason.memory_limit: f"the agent's processes exhausted the container's memory ({limits.memory}): {result.detail}",
            StopReason.container_broken: f"the agent left its container unusable: {result.detail}",
        }
        note = "; ".join(x for x in (said.get(result.stop_reason, ""), note) if x)
        grade_.note = "; ".join(x for x in (note, grade_.note) if x)
        self.folder.write_file(self.folder.relative(adir / "test_output.txt"), output)
        self.folder.write_file(
            self.folder.relative(adir / "grade.json"), json.dumps(grade_.model_dump(mode="json"), indent=2) + "\n"
        )
        transcript.write(
            GradeEvent(
                attempt=attempt,
                outcome=grade_.outcome.value,
                resolved=grade_.resolved,
                failing=grade_.failing(),
                detail=grade_.note,
            )
        )
        at.phases.total_s = round(time.monotonic() - at.started, 3)
        final = grade_.resolved or last or grade_.outcome is Outcome.task_error
        row = self.row(task, repeat, attempt, final, result, grade_, None, patch, at.phases, adir, at.started_at)
        self.folder.append(row)
        return row

    def prepare(self, task: Task) -> Prepared:
        """Environment and task images (built once per distinct input), and the snapshot; the
        images are recorded in the manifest."""
        prepared = prepare_task(task, self._build_logger(task.id), self.backend)
        self.folder.update_manifest(
            lambda manifest: manifest.setdefault("images", {}).__setitem__(task.id, prepared.images)
        )
        return prepared

    def _build_logger(self, task_id: str) -> Callable[[str], None]:
        def log(line: str) -> None:
            self.folder.log_image(f"[{task_id}] {line}")
            self.progress("build", task_id, line[:120])

        return log

    # ------------------------------------------------------------------ rows

    def _error_row(
        self,
        task: Task,
        repeat: int,
        exc: BaseException,
        transcript: TranscriptWriter,
        at: TryState,
        *,
        failed: Sequence[RetryUnit] = (),
        retried_to: str = "",
    ) -> ResultRow:
        """The row of a try that ended in an error before its attempt could be graded, with what
        the attempt had spent (`at.result`) and where it failed (appended). `retried_to`: the try
        is abandoned, to be tried again, and its transcript was moved there. `failed`: the earlier
        tries the machine failed; when each failed the same way as this one, the summary says so."""
        message = str(exc) if isinstance(exc, NotRetryable) else f"{type(exc).__name__}: {exc}"
        hint = exc.hint if isinstance(exc, (SandboxError, TaskSpecError)) else ""
        if isinstance(exc, ImageBuildError):  # the summary line says why, where the log is, what to do
            first, _, rest = message.partition("\n")
            message = f"{first} — build log: {self.folder.image_log_path}" + (f"; hint: {hint}" if hint else "")
            message += f"\n{rest}" if rest else ""
        where = at.failed_in(exc) if isinstance(exc, InfraError) else None
        if where and failed and all(f.failed_in == where for f in failed):
            first, _, rest = message.partition("\n")
            logs = [f.transcript for f in failed if f.transcript] + [str(self.folder.relative(transcript.path))]
            if at.phase == "image":
                logs = [str(self.folder.image_log_path)]
            message = (
                f"{first} — the same failure {len(failed) + 1} times in {recurring_place(where)}: probably not "
                f"transient — see {', '.join(logs)}"
            ) + (f"\n{rest}" if rest else "")
        if not retried_to:
            transcript.write(
                ErrorEvent(where="runner", error_type=type(exc).__name__, message=f"{exc}\n{hint}".strip())
            )
        at.phases.total_s = round(time.monotonic() - at.started, 3)
        row = self.failure_row(
            task,
            repeat,
            at.attempt,
            message,
            phases=at.phases,
            started_at=at.started_at,
            result=at.result,
            failed_in=where,
            retried=bool(retried_to),
        )
        if retried_to:
            row.transcript_path = retried_to
        self.folder.append(row)
        return row

    def record_abandoned(self, task: Task, repeat: int, moved: Path) -> None:
        """A try killed mid-attempt (kill -9, a lost node, Ctrl-C) wrote no row for the attempt it
        was in; its model calls are in its transcript, written as they happened. Before the unit is
        redone, that attempt is recorded once, as an abandoned try's row (`retried`, never final)
        with its spend: the report's cost counts it. Its transcript, moved aside, is never read
        again for this (the next try moves only transcript.jsonl)."""
        try:
            events = read_transcript(moved)
        except (OSError, ValueError):
            return
        found = abandoned_attempt(events)
        if found is None:
            return
        attempt, spent = found
        row = self.failure_row(
            task,
            repeat,
            attempt,
            "abandoned: the run stopped (killed, or its node lost) during this attempt; its model calls, "
            "read from its transcript, are counted in the cost",
            result=spent,
            failed_in={"phase": "agent", "step": spent.steps, "error_type": "Abandoned"},
            retried=True,
        )
        row.transcript_path = str(self.folder.relative(moved))
        self.folder.append(row)

    def failure_row(
        self,
        task: Task,
        repeat: int,
        attempt: int,
        message: str,
        *,
        phases: PhaseTimes | None = None,
        started_at: str = "",
        result: AgentResult | None = None,
        failed_in: dict | None = None,
        retried: bool = False,
    ) -> ResultRow:
        """The row of a unit that ended in an error before it could be graded (not appended); with
        `result`, what its agent had spent; `retried`: the row of an abandoned try (never final)."""
        adir = self.folder.attempt_dir(task.id, self.label, repeat, attempt)
        spent = replace(result, stop_reason=StopReason.error) if result else AgentResult(stop_reason=StopReason.error)
        row = self.row(
            task,
            repeat,
            attempt,
            not retried,
            spent,
            None,
            message,
            "",
            phases or PhaseTimes(),
            adir,
            started_at or now(),
        )
        row.retried, row.failed_in = retried, failed_in
        return row

    def row(
        self,
        task: Task,
        repeat: int,
        attempt: int,
        final: bool,
        result: AgentResult,
        grade_: Grade | None,
        error: str | None,
        patch: str,
        phases: PhaseTimes,
        adir: Path,
        started_at: str,
    ) -> ResultRow:
        rel = self.folder.relative(adir)
        return ResultRow(
            run_id=self.run_id,
            task_id=task.id,
            task_hash=task.content_hash(),
            config=self.label,
            agent=self.agent.name,
            model=self.agent.model,
            repeat=repeat,
            attempt=attempt,
            final=final,
            outcome=grade_.outcome.value if grade_ else Outcome.infra_error.value,
            resolved=bool(grade_ and grade_.resolved),
            stop_reason=result.stop_reason,
            tests=grade_.tests if grade_ else {},
            fail_to_pass=grade_.fail_to_pass.model_dump() if grade_ else {},
            pass_to_pass=grade_.pass_to_pass.model_dump() if grade_ else {},
            steps=result.steps,
            model_calls=result.model_calls,
            usage=result.usage,
            cost_usd=result.cost_usd,
            phases=phases.model_copy(),
            patch_bytes=len(patch.encode()),
            error=error,
            note=grade_.note if grade_ else "",
            instance_id=task.metadata.get("instance_id"),
            tampering=grade_.tampering if grade_ else None,
            grader_version=grade_.grader_version if grade_ else None,
            acceptance=grade_.acceptance.model_dump(mode="json") if grade_ and grade_.acceptance else None,
            dir=str(rel),
            patch_path=str(rel / "patch.diff"),
            transcript_path=str(rel.parent / "transcript.jsonl"),
            started_at=started_at,
            finished_at=now(),
        )


def abandoned_attempt(events: list[Event]) -> tuple[int, AgentResult] | None:
    """(attempt, what it spent) of the attempt a transcript's try was in when it stopped without a
    row: its last `attempt_start` with no grade and no runner error after it, and at least one
    model response; None otherwise (every attempt ended in a row, or the last spent nothing)."""
    start = max((i for i, e in enumerate(events) if isinstance(e, AttemptStart)), default=None)
    if start is None:
        return None
    tail = events[start:]
    if any(isinstance(e, GradeEvent) or (isinstance(e, ErrorEvent) and e.where == "runner") for e in tail):
        return None
    responses = [e for e in tail if isinstance(e, ModelResponse)]
    if not responses:
        return None
    usage = Usage()
    for e in responses:
        usage += Usage(**{k: v for k, v in e.usage.items() if k in Usage.model_fields})
    costs = [e.cost_usd for e in responses]
    start_event = events[start]
    assert isinstance(start_event, AttemptStart)
    return start_event.attempt, AgentResult(
        stop_reason=StopReason.interrupted,
        steps=len(responses),
        model_calls=len(responses),
        usage=usage,
        cost_usd=None if any(c is None for c in costs) else float(sum(c for c in costs if c is not None)),
        model_s=sum(e.latency_s for e in responses),
    )
