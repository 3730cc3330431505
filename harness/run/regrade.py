"""`wholeloop regrade RUN --out NEW`: a run's patches graded again by the current grader.

Verdicts go stale when grading changes meaning (grade.json records the grader's version). A regrade
reads the rows that count of a run folder, grades each attempt's patch.diff again for its task (the
spec the manifest names, or the ones given), and writes a new run folder: the same rows (task,
configuration, repeat, attempt) with the new grades, each attempt's patch and transcript copied, and
a manifest that says what it came from and which graders gave the old verdicts. The old folder is
never changed. Rows that were never graded (an infrastructure error before grading) are copied as
they were.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sandbox import Backend, Limits

from ..errors import UserError
from ..grading import GRADER_VERSION, Outcome, grade
from ..records import MANIFEST_SCHEMA, Manifest, ResultRow, RunFolder, open_run, write_atomic, write_json
from ..tasks import LimitsSpec, Task, TaskSpecError, load_task
from .manifest import command_line, now
from .unit import Prepared, prepare_task

ProgressFn = Callable[[str], None]


class RegradeError(UserError):
    """A run cannot be re-graded as asked (no such tasks, a target folder that is already a run)."""

    hint = "Give the task specs with --tasks when the manifest's spec paths are gone or changed."


def regrade(
    run_dir: Path,
    out: Path,
    *,
    tasks: list[Task] | None = None,
    workers: int = 1,
    backend: Backend | None = None,
    progress: ProgressFn | None = None,
) -> list[ResultRow]:
    """Grade every attempt of `run_dir` that was graded again, into the new run folder `out`;
    returns the new rows. Raises RegradeError, FileNotFoundError (not a run folder)."""
    source = open_run(run_dir)
    target = RunFolder(out)
    if target.is_run():
        raise RegradeError(f"{out} is already a run folder; give a new --out")
    manifest = source.manifest()
    info = source.info()  # typed; any schema version (a version-1 run regrades the same way)
    rows = source.latest()
    by_id = _tasks(info, rows, tasks)
    target = RunFolder(out, create=True)
    say = progress or (lambda _line: None)
    limits_spec = LimitsSpec(**info.options.limits)
    prepared: dict[str, Prepared] = {}
    for task_id in sorted({r.task_id for r in rows if _graded(source, r)}):
        say(f"images for {task_id}")
        prepared[task_id] = prepare_task(by_id[task_id], backend=backend)
    old_versions: set[int | None] = set()

    def one(row: ResultRow) -> ResultRow:
        _copy_attempt(source, target, row)
        if not _graded(source, row):
            return row.model_copy(update={"run_id": target.path.name})
        old = json.loads((source.path / row.dir / "grade.json").read_text())
        old_versions.add(old.get("grader_version"))
        task, ready = by_id[row.task_id], prepared[row.task_id]
        limits = limits_spec.apply(task.limits.apply(Limits()))
        patch = read_patch(source.path / row.patch_path)
        new, output, _ = grade(
            task, patch, ready.image, base=ready.base_commit, limits=limits, backend=backend, run_id=target.path.name
        )
        adir = target.path / row.dir
        write_atomic(adir / "test_output.txt", output)
        write_json(adir / "grade.json", new.model_dump(mode="json"))
        say(f"{row.task_id} attempt {row.attempt}: {old.get('outcome')} -> {new.outcome.value}")
        phases = row.phases.model_copy(update={"grading_s": new.seconds})
        return row.model_copy(
            update={
                "run_id": target.path.name,
                "outcome": new.outcome,
                "resolved": new.resolved,
                "tests": new.tests,
                "fail_to_pass": new.fail_to_pass.model_dump(),
                "pass_to_pass": new.pass_to_pass.model_dump(),
                "note": new.note,
                "tampering": new.tampering,
                "grader_version": new.grader_version,
                "acceptance": new.acceptance.model_dump(mode="json") if new.acceptance else None,
                "phases": phases,
                "regraded_from": {"outcome": row.outcome.value, "grader_version": old.get("grader_version")},
            }
        )

    with ThreadPoolExecutor(max(1, workers)) as pool:
        new_rows = list(pool.map(one, rows))
    for row in new_rows:
        if row.outcome == Outcome.infra_error.value and row.grader_version == GRADER_VERSION:
            say(f"{row.task_id}: infra_error while re-grading ({row.note})")
        target.append(row)

    def record(m: dict) -> None:
        m.update({key: value for key, value in manifest.items() if key not in ("run_id", "images")})
        m["run_id"] = target.path.name
        m["schema_version"] = MANIFEST_SCHEMA  # written now; the recipe (None before version 2) as it was
        m["recipe"] = info.recipe
        m["images"] = {tid: p.images for tid, p in prepared.items()}
        m["grader_version"] = GRADER_VERSION
        m["regraded_from"] = {
            "run_dir": str(source.path.resolve()),
            "run_id": info.run_id,
            "grader_versions": sorted(old_versions, key=lambda v: (v is not None, v or 0)),
            "at": now(),
            "command": command_line(),
        }  # passwords hidden, as in every manifest
        m["finished_at"] = now()

    target.update_manifest(record)
    return target.latest()


def _graded(folder: RunFolder, row: ResultRow) -> bool:
    return bool(row.dir) and (folder.path / row.dir / "grade.json").exists() and (folder.path / row.patch_path).exists()


def _tasks(manifest: Manifest, rows: list[ResultRow], given: list[Task] | None) -> dict[str, Task]:
    """The task of every row: those given, else the specs the manifest names (their content must
    be what the run used: same content hash)."""
    if given is not None:
        found = {t.id: t for t in given}
    else:
        found, problems = {}, []
        for task_id, info in manifest.tasks.items():
            if not info.spec:
                problems.append(f"{task_id}: the manifest names no spec")
                continue
            try:
                task = load_task(Path(info.spec))
            except TaskSpecError as exc:
                problems.append(f"{task_id}: {exc}")
                continue
            if info.content_hash and task.content_hash() != info.content_hash:
                problems.append(f"{task_id}: {info.spec} changed since the run (content hash)")
                continue
            found[task_id] = task
        needed = {r.task_id for r in rows}
        if problems and needed - set(found):
            raise RegradeError("cannot load the run's tasks:\n" + "\n".join(problems))
    missing = sorted({r.task_id for r in rows} - set(found))
    if missing:
        raise RegradeError(f"no task spec for {', '.join(missing)}")
    return found


def _copy_attempt(source: RunFolder, target: RunFolder, row: ResultRow) -> None:
    """The attempt's patch and the transcript of its repeat, into the same places of the new folder."""
    for rel in (row.patch_path, row.transcript_path):
        if rel and (source.path / rel).exists() and not (target.path / rel).exists():
            (target.path / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source.path / rel, target.path / rel)


def read_patch(path: Path) -> str:
    """A saved patch.diff exactly as it was graded: bytes decoded, no newline translation (a CR in a
    CRLF file's lines is part of the patch; read_text() would make it LF and grade another patch)."""
    return Path(path).read_bytes().decode("utf-8", "surrogateescape")
