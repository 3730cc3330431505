"""Before any container starts: can this run work at all, and what would it do?

`preflight` checks what fails a whole run the same way every time, so it fails in a second
instead of once per task after a container start each:
- the model: its credentials are set and it is in the price map (harness.models.preflight);
- every task: its repository opens and its base commit is in it, its patch files read;
- the run folder: it is (or can become) a folder we can write.

The time and cost estimate `--dry-run` prints comes from the one estimator,
`harness.sweep.estimate` (it reads the run history, which this part does not import).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sandbox import SandboxError, find_commit

from ..models.preflight import ModelCheck, check_model
from ..records import check_writable
from ..tasks import Task, TaskSpecError


@dataclass
class Problem:
    """Something that stops the run before it starts: one line, and what to do."""

    what: str
    fix: str = ""


@dataclass
class Preflight:
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # checks that passed, for --dry-run and doctor

    @property
    def ok(self) -> bool:
        return not self.problems


def check_task(task: Task) -> Problem | None:
    """The task's repository and commit resolve and its patches read (what a unit needs first)."""
    where = f"{task.spec_path}" if task.spec_path else task.id
    try:
        task.gold(), task.test_patch()
        find_commit(task.repo_source(), task.base_commit)
    except (SandboxError, TaskSpecError) as exc:
        return Problem(f"{where}: {str(exc).splitlines()[0]}", exc.hint or "")
    return None


def preflight(
    tasks: list[Task], *, model: str | None, out: Path, base_url: str | None = None, allow_unknown_model: bool = False
) -> Preflight:
    """Every check; none starts a container or sends a model request."""
    result = Preflight()
    if model:
        checks: list[ModelCheck] = check_model(model, base_url=base_url, allow_unknown=allow_unknown_model)
        for check in checks:
            if check.ok:
                result.notes.append(f"{check.name}: {check.detail}")
            else:
                result.problems.append(Problem(check.detail, check.fix))
    bad = [p for p in (check_task(t) for t in tasks) if p is not None]
    result.problems += bad
    result.notes.append(f"tasks: {len(tasks) - len(bad)} of {len(tasks)} resolve (repository, commit, patches)")
    try:
        check_writable(out, folder=True)
        result.notes.append(f"run folder: {out} is writable")
    except OSError as exc:
        result.problems.append(Problem(f"{exc.filename}: {exc.strerror}", "give --out a folder path you can write"))
    return result
