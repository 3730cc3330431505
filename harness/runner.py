"""One task end to end, and many tasks in parallel, resumable.

The unit of work is a (task, repeat): find or build the images, start the agent's container
(network off), then for each attempt let the agent work, take the patch and grade it in a fresh
container; a later attempt continues the same conversation in the same container, after feedback.
One row per attempt goes to results.jsonl the moment it is known.

Failures are sorted by whose they are: the agent's end up as outcomes; the machine's (engine
gone, container died, image build failed, provider down) are retried a bounded number of times
and otherwise recorded as `infra_error`; the task author's (missing repository, unknown commit)
are recorded as `infra_error` at once. Nothing of that stops the other tasks.
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sandbox import InfraError, Limits, PatchError, Sandbox, SandboxError
from sandbox.engine import pause, prune_containers, unpause
from sandbox.images import env_image, task_image
from sandbox.snapshot import cached_snapshot

from .agents import Agent, AgentContext, AgentResult
from .executors import Executor, LocalExecutor
from .feedback import feedback_text
from .grading import Grade, Outcome, grade, touched_files
from .manifest import build_manifest, now
from .records import Phases, ResultRow, ResultsFile, attempt_dir, latest_rows, read_results, rep_dir, write_atomic, write_json
from .tasks import LimitsSpec, Task, TaskSpecError
from .transcript import AttemptStart, ErrorEvent, Feedback, GradeEvent, PatchEvent, Phase, TranscriptWriter

ProgressFn = Callable[[str, str, str], None]  # (event, unit label, text)


@dataclass
class RunOptions:
    out: Path
    workers: int = 1
    repeats: int = 1
    attempts: int = 1  # tries per (task, repeat); a later one continues the conversation
    feedback: str = "none"  # none | visible | hidden: what the agent hears between attempts
    infra_retries: int = 2  # extra tries of a unit that failed for the machine's reasons
    limits: LimitsSpec = field(default_factory=LimitsSpec)  # run-level overrides, above the task's
    config: str = ""  # label; defaults to the agent's name (+ model)

    def label(self, agent: Agent) -> str:
        if self.config:
            return self.config
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


class _Retry(Exception):
    """The machine failed this unit; it may succeed on another try."""


class _Fatal(Exception):
    """Not the agent's failure, and another try would not help (a bad API key, a wrong model)."""


class _Interrupted(Exception):
    """The run is stopping; the unit is left unfinished, to be redone on resume."""


class Runner:
    def __init__(self, tasks: list[Task], agent: Agent, options: RunOptions, progress: ProgressFn | None = None,
                 executor: Executor | None = None):
        self.tasks, self.agent, self.options = tasks, agent, options
        self.config = options.label(agent)
        self.run_dir = Path(options.out)
        self.run_id = self.run_dir.name
        self.progress = progress or (lambda *_: None)
        self.executor = executor or LocalExecutor(options.workers)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.results = ResultsFile(self.run_dir / "results.jsonl")
        self.cancel = threading.Event()
        self._manifest_lock = threading.Lock()
        self._log_lock = threading.Lock()

    # ------------------------------------------------------------------ the run

    def pending(self) -> list[tuple[Task, int]]:
        """(task, repeat) units without a final row yet: a re-run resumes, never redoes."""
        done = {(r.task_id, r.config, r.repeat) for r in read_results(self.results.path) if r.final}
        return [(t, rep) for rep in range(self.options.repeats) for t in self.tasks if (t.id, self.config, rep) not in done]

    def run(self) -> list[ResultRow]:
        """Run every pending unit. On KeyboardInterrupt, running agents stop at their next step,
        unfinished units are left for a resume, and the interrupt is re-raised."""
        self._clean_leftovers()
        self._write_manifest()
        todo = self.pending()
        total = len(self.tasks) * self.options.repeats
        self.progress("plan", "", f"{len(todo)} to run, {total - len(todo)} already done")
        # A remote executor runs units elsewhere and hands back their rows: they are appended here.
        remote = getattr(self.executor, "remote", False)
        try:
            work = self.executor.run_units(self, todo) if remote else self.executor.map(lambda unit: self.run_unit(*unit), todo)
            for rows in work:
                for row in rows:
                    if remote:
                        self.results.append(row)
                    if row.final:
                        self.progress("done", self._unit(row.task_id, row.repeat), row.outcome)
        except KeyboardInterrupt:
            self.cancel.set()
            self.progress("interrupt", "", "stopping: running agents stop at their next step; unfinished work is redone on resume")
            self.executor.shutdown(cancel=True)
            raise
        finally:
            self.executor.shutdown(cancel=False)
            self._finish_manifest()
        return latest_rows(read_results(self.results.path))

    def _unit(self, task_id: str, repeat: int) -> str:
        return task_id if self.options.repeats == 1 else f"{task_id}#{repeat}"

    def _clean_leftovers(self) -> None:
        """Containers of runs whose process is gone (a SIGKILL leaves them) are removed first."""
        try:
            removed = prune_containers().removed
        except SandboxError:
            return  # no engine: every unit will say so in its own row
        if removed:
            self.progress("note", "", f"removed {len(removed)} container(s) left by runs that are no longer alive")

    # ------------------------------------------------------------------ one unit

    def run_unit(self, task: Task, repeat: int) -> list[ResultRow]:
        """All attempts of one (task, repeat), with bounded retries of machine failures.
        Never raises for task or infrastructure problems; returns the rows it appended."""
        for try_no in range(self.options.infra_retries + 1):
            try:
                return self._try_unit(task, repeat, last_try=try_no == self.options.infra_retries)
            except _Retry:
                self.progress("retry", self._unit(task.id, repeat), f"infrastructure failure, retry {try_no + 1}")
                time.sleep(min(2 ** try_no, 30))
            except _Interrupted:
                return []
        return []

    def _try_unit(self, task: Task, repeat: int, *, last_try: bool) -> list[ResultRow]:
        unit = self._unit(task.id, repeat)
        transcript_path = rep_dir(self.run_dir, task.id, self.config, repeat) / "transcript.jsonl"
        _move_aside(transcript_path)  # an unfinished earlier try keeps its story, apart
        transcript = TranscriptWriter(transcript_path)
        rows: list[ResultRow] = []
        phases, started, started_at = Phases(), time.monotonic(), now()
        try:
            self.progress("start", unit, "preparing images")
            prepared = self.prepare(task)
            phases.image_s, phases.image_cached = round(prepared.seconds, 3), prepared.cached
            transcript.write(Phase(name="image", seconds=phases.image_s, detail="cached" if prepared.cached else "built"))
            limits = self.options.limits.apply(task.limits.apply(Limits()))
            t0 = time.monotonic()
            sb = Sandbox.start(prepared.image, limits=limits, role="agent", run_id=self.run_id)
            try:
                phases.container_start_s = round(time.monotonic() - t0, 3)
                transcript.write(Phase(name="container_start", seconds=phases.container_start_s))
                rows = self._attempts(task, repeat, prepared, sb, limits, transcript, phases, started, started_at)
            finally:
                sb.close()
        except (_Interrupted, _Retry):
            raise
        except InfraError as exc:
            if not last_try:
                transcript.write(ErrorEvent(where="runner", error_type=type(exc).__name__, message=str(exc)))
                raise _Retry() from exc
            rows.append(self._error_row(task, repeat, len(rows) + 1, exc, transcript, phases, started, started_at))
        except (SandboxError, TaskSpecError, _Fatal) as exc:  # the task's inputs or the setup: no retry
            rows.append(self._error_row(task, repeat, len(rows) + 1, exc, transcript, phases, started, started_at))
        except Exception as exc:  # a bug of ours must not take the other tasks down with it
            transcript.write(ErrorEvent(where="runner", error_type=type(exc).__name__, message=traceback.format_exc()))
            rows.append(self._error_row(task, repeat, len(rows) + 1, exc, transcript, phases, started, started_at))
        finally:
            transcript.close()
        return rows

    def _attempts(self, task: Task, repeat: int, prepared: Prepared, sb: Sandbox, limits: Limits,
                  transcript: TranscriptWriter, phases: Phases, started: float, started_at: str) -> list[ResultRow]:
        rows: list[ResultRow] = []
        messages: list = []
        feedback: str | None = None
        for attempt in range(1, self.options.attempts + 1):
            last = attempt == self.options.attempts
            unit = self._unit(task.id, repeat)
            transcript.write(AttemptStart(task_id=task.id, attempt=attempt, repeat=repeat, config=self.config, image=prepared.image))
            if feedback:
                transcript.write(Feedback(attempt=attempt, mode=self.options.feedback, text=feedback))
            self.progress("agent", unit, f"agent working (attempt {attempt})")
            t1 = time.monotonic()
            ctx = AgentContext(task=task, sandbox=sb, transcript=transcript, attempt=attempt, feedback=feedback,
                               deadline_s=task.timeouts.agent_s, messages=messages, cancel=self.cancel)
            result = self.agent.run(ctx)
            phases.agent_s = round(time.monotonic() - t1, 3)
            phases.model_s, phases.tool_s = round(result.model_s, 3), round(result.tool_s, 3)
            phases.retry_wait_s = round(result.retry_wait_s, 3)
            if result.stop_reason == "interrupted":
                raise _Interrupted()
            if result.infra_error:
                raise (InfraError if result.infra_retryable else _Fatal)(result.infra_error)
            adir = attempt_dir(self.run_dir, task.id, self.config, repeat, attempt)
            adir.mkdir(parents=True, exist_ok=True)
            t2 = time.monotonic()
            try:
                sb.stop_processes()  # nothing the agent left running can change the tree any more
                patch, note = sb.diff(prepared.base_commit), ""
            except PatchError as exc:  # the agent broke the repository or wrote a huge patch
                patch, note = "", f"no patch could be taken: {exc}"
            phases.patch_s = round(time.monotonic() - t2, 3)
            (adir / "patch.diff").write_text(patch)
            transcript.write(PatchEvent(attempt=attempt, bytes=len(patch.encode()), files=touched_files(patch), diff=patch))
            if last:
                sb.close()  # the agent's container is gone before the final grading
            else:
                pause(sb.id)  # frozen while grading: nothing it runs can act meanwhile
            self.progress("grade", unit, f"grading attempt {attempt}")
            grade_, output = grade(task, patch, prepared.image, base=prepared.base_commit, limits=limits, run_id=self.run_id)
            if grade_.outcome is Outcome.infra_error:
                raise InfraError(grade_.note)
            grade_.note = "; ".join(x for x in (note, grade_.note) if x)
            phases.grading_s = grade_.seconds
            transcript.write(Phase(name="grading", seconds=grade_.seconds))
            write_atomic(adir / "test_output.txt", output)
            write_json(adir / "grade.json", grade_.model_dump(mode="json"))
            transcript.write(GradeEvent(attempt=attempt, outcome=grade_.outcome.value, resolved=grade_.resolved,
                                        failing=grade_.failing(), detail=grade_.note))
            phases.total_s = round(time.monotonic() - started, 3)
            final = grade_.resolved or last
            row = self._row(task, repeat, attempt, final, result, grade_, None, patch, phases, adir, started_at)
            self.results.append(row)
            rows.append(row)
            if final:
                break
            unpause(sb.id)
            feedback = feedback_text(self.options.feedback, task, grade_, output, sb)
            phases, started, started_at = Phases(image_cached=True), time.monotonic(), now()
        return rows

    def prepare(self, task: Task) -> Prepared:
        """Environment and task images (built once per distinct input), and the snapshot."""
        t0 = time.monotonic()
        log = self._build_logger(task.id)
        env = env_image(task.env_spec(), log=log)
        snapshot = cached_snapshot(task.repo_source(), task.base_commit)
        image = task_image(env, snapshot, tuple(task.environment.install), task.environment.network, log=log)
        images = {"env": env.tag, "env_id": env.id, "task": image.tag, "task_id": image.id, "tree": snapshot.tree}
        with self._manifest_lock:
            path = self.run_dir / "manifest.json"
            manifest = json.loads(path.read_text()) if path.exists() else {"images": {}}
            manifest.setdefault("images", {})[task.id] = images
            write_json(path, manifest)
        return Prepared(image.tag, snapshot.commit, time.monotonic() - t0, env.cached and image.cached)

    def _build_logger(self, task_id: str) -> Callable[[str], None]:
        path = self.run_dir / "logs" / "images.log"
        path.parent.mkdir(exist_ok=True)

        def log(line: str) -> None:
            with self._log_lock, open(path, "a") as fh:
                fh.write(f"[{task_id}] {line}\n")
            self.progress("build", task_id, line[:120])

        return log

    # ------------------------------------------------------------------ records

    def _error_row(self, task: Task, repeat: int, attempt: int, exc: BaseException, transcript: TranscriptWriter,
                   phases: Phases, started: float, started_at: str) -> ResultRow:
        message = str(exc) if isinstance(exc, _Fatal) else f"{type(exc).__name__}: {exc}"
        hint = getattr(exc, "hint", "")
        transcript.write(ErrorEvent(where="runner", error_type=type(exc).__name__, message=f"{exc}\n{hint}".strip()))
        phases.total_s = round(time.monotonic() - started, 3)
        adir = attempt_dir(self.run_dir, task.id, self.config, repeat, attempt)
        row = self._row(task, repeat, attempt, True, AgentResult(stop_reason="error"), None, message, "", phases, adir, started_at)
        self.results.append(row)
        return row

    def _row(self, task: Task, repeat: int, attempt: int, final: bool, result: AgentResult, grade_: Grade | None,
             error: str | None, patch: str, phases: Phases, adir: Path, started_at: str) -> ResultRow:
        rel = adir.relative_to(self.run_dir)
        return ResultRow(
            run_id=self.run_id, task_id=task.id, task_hash=task.content_hash(), config=self.config,
            agent=self.agent.name, model=self.agent.model, repeat=repeat, attempt=attempt, final=final,
            outcome=grade_.outcome.value if grade_ else Outcome.infra_error.value,
            resolved=bool(grade_ and grade_.resolved), stop_reason=result.stop_reason,
            tests=grade_.tests if grade_ else {},
            fail_to_pass=grade_.fail_to_pass.model_dump() if grade_ else {},
            pass_to_pass=grade_.pass_to_pass.model_dump() if grade_ else {},
            steps=result.steps, model_calls=result.model_calls, usage=result.usage, cost_usd=result.cost_usd,
            phases=phases.model_copy(), patch_bytes=len(patch.encode()), error=error,
            note=grade_.note if grade_ else "", instance_id=task.metadata.get("instance_id"),
            dir=str(rel), patch_path=str(rel / "patch.diff"), transcript_path=str(rel.parent / "transcript.jsonl"),
            started_at=started_at, finished_at=now(),
        )

    def _write_manifest(self) -> None:
        path = self.run_dir / "manifest.json"
        options = {"workers": self.options.workers, "repeats": self.options.repeats, "attempts": self.options.attempts,
                   "feedback": self.options.feedback, "infra_retries": self.options.infra_retries,
                   "limits": self.options.limits.model_dump(exclude_none=True), "config": self.config}
        if path.exists():  # resuming: keep the original recipe, note this session
            manifest = json.loads(path.read_text())
            manifest.setdefault("sessions", []).append({"started_at": now(), "command": sys.argv})
            manifest["finished_at"] = None
        else:
            manifest = build_manifest(run_id=self.run_id, agent=self.agent.describe(), tasks=self.tasks, options=options)
        write_json(path, manifest)

    def _finish_manifest(self) -> None:
        path = self.run_dir / "manifest.json"
        with self._manifest_lock:
            manifest = json.loads(path.read_text())
            manifest["finished_at"] = now()
            write_json(path, manifest)


def _move_aside(path: Path) -> None:
    """Keep the transcript of an unfinished earlier try as transcript.unfinished-N.jsonl."""
    if not path.exists():
        return
    n = 1
    while (target := path.with_name(f"transcript.unfinished-{n}.jsonl")).exists():
        n += 1
    shutil.move(path, target)

