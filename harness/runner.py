"""One task end to end, and many tasks in parallel, resumable.

For each (task, repeat): find or build the images, start the agent's container (network off),
let the agent work, take the patch, remove the container, grade in a fresh one, write the files
and append one row to results.jsonl. A task that fails for infrastructure or input reasons gets
an `infra_error` row and the run goes on.
"""

from __future__ import annotations

import json
import sys
import threading
import traceback
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from sandbox import Limits, Sandbox, SandboxError
from sandbox.images import env_image, task_image
from sandbox.snapshot import cached_snapshot

from .agents import Agent, AgentContext, AgentResult
from .grading import Grade, Outcome, grade, touched_files
from .manifest import build_manifest, now
from .records import (
    Phases,
    ResultRow,
    ResultsFile,
    attempt_dir,
    latest_rows,
    read_results,
    rep_dir,
    write_atomic,
    write_json,
)
from .tasks import LimitsSpec, Task, TaskSpecError
from .transcript import AttemptStart, ErrorEvent, GradeEvent, PatchEvent, Phase, TranscriptWriter

ProgressFn = Callable[[str, str, str], None]  # (event, task_id, text)


@dataclass
class RunOptions:
    out: Path
    workers: int = 1
    repeats: int = 1
    limits: LimitsSpec = field(default_factory=LimitsSpec)  # run-level overrides, above the task's
    config: str = ""  # label; defaults to the agent's name (+ model)

    def label(self, agent: Agent) -> str:
        if self.config:
            return self.config
        return agent.name + (f"+{agent.model}" if agent.model else "")


@dataclass
class Prepared:
    image: str
    base_commit: str  # the snapshot's only commit, the base of the agent's diff
    seconds: float
    cached: bool
    images: dict


class Runner:
    def __init__(self, tasks: list[Task], agent: Agent, options: RunOptions, progress: ProgressFn | None = None):
        self.tasks = tasks
        self.agent = agent
        self.options = options
        self.config = options.label(agent)
        self.run_dir = Path(options.out)
        self.run_id = self.run_dir.name
        self.progress = progress or (lambda *_: None)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.results = ResultsFile(self.run_dir / "results.jsonl")
        self._manifest_lock = threading.Lock()
        self._build_log_lock = threading.Lock()

    # ------------------------------------------------------------------ the run

    def pending(self) -> list[tuple[Task, int]]:
        """(task, repeat) pairs without a final row yet: a re-run resumes, never redoes."""
        done = {(r.task_id, r.config, r.repeat) for r in read_results(self.results.path) if r.final}
        return [
            (t, rep) for rep in range(self.options.repeats) for t in self.tasks if (t.id, self.config, rep) not in done
        ]

    def run(self) -> list[ResultRow]:
        self._write_manifest()
        todo = self.pending()
        self.progress("plan", "", f"{len(todo)} to run, {len(self.tasks) * self.options.repeats - len(todo)} already done")
        pool = ThreadPoolExecutor(max_workers=max(1, self.options.workers), thread_name_prefix="wholeloop")
        try:
            futures = {pool.submit(self.run_one, task, rep): (task, rep) for task, rep in todo}
            for future in as_completed(futures):
                row = future.result()
                self.progress("done", row.task_id, row.outcome)
        except KeyboardInterrupt:
            self.progress("interrupt", "", "stopping: finishing attempts in progress, nothing new starts")
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        finally:
            pool.shutdown(wait=True)
            self._finish_manifest()
        return latest_rows(read_results(self.results.path))

    # ------------------------------------------------------------------ one attempt

    def run_one(self, task: Task, repeat: int, attempt: int = 1) -> ResultRow:
        """Everything for one (task, repeat); never raises for task or infrastructure problems."""
        started, started_at = time.monotonic(), now()
        phases = Phases()
        adir = attempt_dir(self.run_dir, task.id, self.config, repeat, attempt)
        adir.mkdir(parents=True, exist_ok=True)
        transcript = TranscriptWriter(rep_dir(self.run_dir, task.id, self.config, repeat) / "transcript.jsonl")
        result, grade_, patch, error = AgentResult(stop_reason="not_started"), None, "", None
        try:
            self.progress("start", task.id, "preparing images")
            prepared = self.prepare(task)
            phases.image_s, phases.image_cached = round(prepared.seconds, 3), prepared.cached
            transcript.write(AttemptStart(task_id=task.id, attempt=attempt, repeat=repeat, config=self.config, image=prepared.image))
            transcript.write(Phase(name="image", seconds=phases.image_s, detail="cached" if prepared.cached else "built"))
            limits = task.limits.apply(Limits())
            limits = self.options.limits.apply(limits)
            self.progress("agent", task.id, "agent working")
            result, patch, phases = self._agent_phase(task, prepared, limits, transcript, attempt, phases)
            (adir / "patch.diff").write_text(patch)
            transcript.write(PatchEvent(attempt=attempt, bytes=len(patch.encode()), files=touched_files(patch), diff=patch))
            if result.infra_error:
                error = result.infra_error
            else:
                self.progress("grade", task.id, "grading")
                grade_, output = grade(task, patch, prepared.image, base=prepared.base_commit, limits=limits, run_id=self.run_id)
                phases.grading_s = grade_.seconds
                transcript.write(Phase(name="grading", seconds=grade_.seconds))
                write_atomic(adir / "test_output.txt", output)
                write_json(adir / "grade.json", grade_.model_dump(mode="json"))
                transcript.write(
                    GradeEvent(attempt=attempt, outcome=grade_.outcome.value, resolved=grade_.resolved,
                               failing=grade_.failing(), detail=grade_.note)
                )
        except (SandboxError, TaskSpecError) as exc:
            error = f"{type(exc).__name__}: {exc}"
            hint = getattr(exc, "hint", "")
            transcript.write(ErrorEvent(where="runner", error_type=type(exc).__name__, message=f"{exc}\n{hint}".strip()))
        except Exception as exc:  # a bug of ours must not take the other tasks down with it
            error = f"internal error: {type(exc).__name__}: {exc}"
            transcript.write(ErrorEvent(where="runner", error_type=type(exc).__name__, message=traceback.format_exc()))
        finally:
            transcript.close()
        phases.total_s = round(time.monotonic() - started, 3)
        row = self._row(task, repeat, attempt, result, grade_, error, patch, phases, adir, started_at)
        self.results.append(row)
        return row

    def _agent_phase(self, task: Task, prepared: Prepared, limits: Limits, transcript: TranscriptWriter,
                     attempt: int, phases: Phases) -> tuple[AgentResult, str, Phases]:
        t0 = time.monotonic()
        with Sandbox.start(prepared.image, limits=limits, role="agent", run_id=self.run_id) as sb:
            phases.container_start_s = round(time.monotonic() - t0, 3)
            transcript.write(Phase(name="container_start", seconds=phases.container_start_s))
            t1 = time.monotonic()
            ctx = AgentContext(task=task, sandbox=sb, transcript=transcript, attempt=attempt, deadline_s=task.timeouts.agent_s)
            result = self.agent.run(ctx)
            phases.agent_s = round(time.monotonic() - t1, 3)
            phases.model_s, phases.tool_s = round(result.model_s, 3), round(result.tool_s, 3)
            phases.retry_wait_s = round(result.retry_wait_s, 3)
            t2 = time.monotonic()
            patch = sb.diff(prepared.base_commit)
            phases.patch_s = round(time.monotonic() - t2, 3)
        return result, patch, phases

    def prepare(self, task: Task) -> Prepared:
        """Environment and task images (built once per distinct input), and the snapshot."""
        t0 = time.monotonic()
        log = self._build_logger(task.id)
        env = env_image(task.env_spec(), log=log)
        snapshot = cached_snapshot(task.repo_source(), task.base_commit)
        install = tuple(task.environment.install)
        image = task_image(env, snapshot, install, task.environment.network, log=log)
        images = {"env": env.tag, "env_id": env.id, "task": image.tag, "task_id": image.id, "tree": snapshot.tree}
        with self._manifest_lock:
            path = self.run_dir / "manifest.json"
            manifest = json.loads(path.read_text())
            manifest["images"][task.id] = images
            write_json(path, manifest)
        return Prepared(image.tag, snapshot.commit, time.monotonic() - t0, env.cached and image.cached, images)

    def _build_logger(self, task_id: str) -> Callable[[str], None]:
        path = self.run_dir / "logs" / "images.log"
        path.parent.mkdir(exist_ok=True)

        def log(line: str) -> None:
            with self._build_log_lock, open(path, "a") as fh:
                fh.write(f"[{task_id}] {line}\n")
            self.progress("build", task_id, line[:120])

        return log

    # ------------------------------------------------------------------ records

    def _row(self, task: Task, repeat: int, attempt: int, result: AgentResult, grade_: Grade | None,
             error: str | None, patch: str, phases: Phases, adir: Path, started_at: str) -> ResultRow:
        outcome = grade_.outcome.value if grade_ else Outcome.infra_error.value
        rel = adir.relative_to(self.run_dir)
        return ResultRow(
            run_id=self.run_id,
            task_id=task.id,
            task_hash=task.content_hash(),
            config=self.config,
            agent=self.agent.name,
            model=self.agent.model,
            repeat=repeat,
            attempt=attempt,
            final=True,
            outcome=outcome,
            resolved=bool(grade_ and grade_.resolved),
            stop_reason=result.stop_reason,
            tests=grade_.tests if grade_ else {},
            fail_to_pass=grade_.fail_to_pass.model_dump() if grade_ else {},
            pass_to_pass=grade_.pass_to_pass.model_dump() if grade_ else {},
            steps=result.steps,
            model_calls=result.model_calls,
            usage=result.usage,
            cost_usd=result.cost_usd,
            phases=phases,
            patch_bytes=len(patch.encode()),
            error=error,
            note=grade_.note if grade_ else "",
            instance_id=task.metadata.get("instance_id"),
            dir=str(rel),
            patch_path=str(rel / "patch.diff"),
            transcript_path=str(rel.parent / "transcript.jsonl"),
            started_at=started_at,
            finished_at=now(),
        )

    def _write_manifest(self) -> None:
        path = self.run_dir / "manifest.json"
        options = {"workers": self.options.workers, "repeats": self.options.repeats,
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
