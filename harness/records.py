"""The run folder on disk, the product's real interface, and `RunFolder`, its one owner.

    RUN/manifest.json        how to reproduce every number (written at start, completed at end)
    RUN/results.jsonl        one validated row per attempt, appended atomically
    RUN/attempts/<task>/<config>/rep-<r>/transcript.jsonl
    RUN/attempts/<task>/<config>/rep-<r>/transcript.unfinished-<n>.jsonl   earlier, unfinished tries
    RUN/attempts/<task>/<config>/rep-<r>/transcript.live.jsonl   a Ray unit's transcript so far, as streamed
    RUN/attempts/<task>/<config>/rep-<r>/attempt-<k>/{patch.diff,test_output.txt,grade.json}
    RUN/logs/images.log      image build output
    RUN/reviews.jsonl        human verdicts (`wholeloop review`), appended after the run, its own lock
    RUN/model_reviews.jsonl  model reviews (`wholeloop review --review-model`), apart from them, the same lock
    RUN/.writer.lock         held (flock) by the one run writing the folder, for its whole life

Everything a report shows is recomputed from these files, with no Docker. Every part of wholeloop
that reads or writes a run folder (the runner, the executors, reports, export, show, a history
index) goes through `RunFolder`: paths, appending rows (the one append point), the latest-row
rule, the one writer (`writer()`), manifest updates under one lock, moving an unfinished transcript aside, the image log.

A leaf: it imports neither `sandbox` nor the runner.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import socket
import sys
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import UserError
from .jsonl import append_line, complete_lines, drop_torn_tail, escape_surrogates, text_bytes
from .scrub import scrub
from .usage import Usage  # one token accounting for models, rows and reports (no model adapter import)
from .vocabulary import REDO_OUTCOMES, Outcome, ReviewVerdict

RESULT_SCHEMA = 1


class PhaseTimes(BaseModel):
    """Seconds per phase. Working time and waiting time are kept apart (retry_wait_s)."""

    image_s: float = 0.0  # building (or finding) the environment and task images
    image_cached: bool = True
    container_start_s: float = 0.0
    agent_s: float = 0.0  # the whole agent phase, wall clock
    model_s: float = 0.0  # time in model calls (without retry waits)
    tool_s: float = 0.0  # time running tools in the container
    retry_wait_s: float = 0.0  # waiting on rate limits / overloads: not the agent's time
    patch_s: float = 0.0
    grading_s: float = 0.0
    total_s: float = 0.0


class ResultRow(BaseModel):
    # validate_assignment: a field set after construction (`row.outcome = "resolved"`) is validated
    # (and typed) like one given to the constructor.
    model_config = ConfigDict(extra="allow", validate_assignment=True)

    schema_version: int = RESULT_SCHEMA
    run_id: str
    task_id: str
    task_hash: str
    config: str  # label of the configuration (agent + model + settings)
    agent: str
    model: str | None = None
    repeat: int = 0
    attempt: int = 1
    final: bool = True  # the last attempt of this (task, config, repeat)
    outcome: Outcome
    resolved: bool
    stop_reason: str = ""  # a StopReason; an agent of another package may report its own
    tests: dict[str, str] = Field(default_factory=dict)
    fail_to_pass: dict[str, int | bool] = Field(default_factory=dict)  # passed, failed, total; ran (False: no test ran)
    pass_to_pass: dict[str, int | bool] = Field(default_factory=dict)
    steps: int = 0
    model_calls: int = 0
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = 0.0  # None = the price is unknown (never silently 0)
    phases: PhaseTimes = Field(default_factory=PhaseTimes)
    patch_bytes: int = 0
    error: str | None = None
    note: str = ""
    tampering: str | None = None  # the channels of results contradicted each other (see grade.json)
    grader_version: int | None = None  # of the grader that decided `outcome` (None: before it was recorded)
    regraded_from: dict | None = None  # set by `wholeloop regrade`: the outcome and grader version before
    # the acceptance axes of the raw patch, as grade.json records them (None: not measured, a row
    # from before grader 8 or one never graded); a policy judges them at report time (issue 25)
    acceptance: dict | None = None
    # An abandoned try: the machine failed this try of the unit and it was tried again. Never
    # final; the latest-row rule drops its whole try (no rate sees it); its spend is on record and
    # counts in the configuration's cost (`retried_tries`).
    retried: bool = False
    failed_in: dict | None = None  # an infra_error's place: {phase, step, error_type} (docs/outcomes.md)
    instance_id: str | None = None
    dir: str = ""  # the attempt folder, relative to the run folder
    patch_path: str = ""
    transcript_path: str = ""
    started_at: str = ""
    finished_at: str = ""

    def key(self) -> tuple[str, str, int, int]:
        return (self.task_id, self.config, self.repeat, self.attempt)

    def unit(self) -> tuple[str, str, int]:
        """(task, configuration, repeat): the unit of work this row belongs to."""
        return (self.task_id, self.config, self.repeat)


REVIEW_SCHEMA = 1


class Review(BaseModel):
    """One reviewer's verdict on one attempt's patch: a line of RUN/reviews.jsonl. Keyed by the
    unit, the attempt and the patch's sha256, so it follows a regrade that keeps the patch and
    stops applying to a patch that changed."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = REVIEW_SCHEMA
    task_id: str
    config: str
    repeat: int = 0
    attempt: int = 1
    patch_sha256: str
    verdict: ReviewVerdict
    reason: str = ""
    reviewer: str
    at: str = ""  # ISO time, UTC

    def key(self) -> tuple[str, str, int, int]:
        return (self.task_id, self.config, self.repeat, self.attempt)


MODEL_REVIEW_SCHEMA = 1


class ModelReview(BaseModel):
    """One model's review of one attempt's patch (`wholeloop review --review-model`): a line of
    RUN/model_reviews.jsonl, apart from the human verdicts so that it is never counted as one.
    Keyed like a Review; recorded with the model, the rubric and the exact prompt sent."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = MODEL_REVIEW_SCHEMA
    task_id: str
    config: str
    repeat: int = 0
    attempt: int = 1
    patch_sha256: str
    verdict: ReviewVerdict
    reasoning: str = ""
    readable: bool = True  # False: the reply held no verdict in the asked form (then verdict unsure)
    model: str
    endpoint: str = ""
    rubric_version: int = 0
    prompt: str = ""  # every character sent
    prompt_sha256: str = ""
    reply: str = ""  # the model's whole answer
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None  # None: the price is unknown
    at: str = ""  # ISO time, UTC

    def key(self) -> tuple[str, str, int, int]:
        return (self.task_id, self.config, self.repeat, self.attempt)


def slug(text: str) -> str:
    """A folder-safe version of a label."""
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text).strip("_") or "x"


def _file_in_the_way(path: Path) -> Path | None:
    """The nearest existing ancestor of `path` when it is a file (so nothing can go under it)."""
    for parent in Path(path).absolute().parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def check_writable(path: Path | str, *, folder: bool) -> None:
    """Raise an OSError naming `path` (and what is in its way) unless a file (folder=False) or a
    folder (folder=True) could be written there. Creates nothing: used before work starts, so a
    wrong --out or --html fails at once, not after a run or a report."""
    path = Path(path)
    blocker = _file_in_the_way(path)
    if blocker is not None:
        raise NotADirectoryError(errno.ENOTDIR, f"{blocker} is a file, not a folder", str(path))
    if folder and path.exists() and not path.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "is a file, not a folder (give a folder path)", str(path))
    if not folder and path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a folder (give a file path)", str(path))
    # where a new entry would be made: the folder itself, else the nearest folder that exists
    target = path if folder and path.is_dir() else next(p for p in path.absolute().parents if p.exists())
    probe = target / f".wholeloop-probe-{os.getpid()}-{threading.get_ident()}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise PermissionError(exc.errno, f"cannot write here ({exc.strerror})", str(path)) from None


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write a whole file or nothing: a temporary file renamed over the target. Scrubbed of
    secrets (harness.scrub): every file wholeloop writes goes through here or append_line."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    blocker = _file_in_the_way(path)
    if blocker is not None:
        raise NotADirectoryError(errno.ENOTDIR, f"{blocker} is a file, not a folder", str(path))
    data = scrub(data)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(text_bytes(data) if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:  # name the file asked for, never the temporary one
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise PermissionError(exc.errno, f"cannot write here ({exc.strerror})", str(path)) from None


def write_json(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


def parse_rows(lines: Iterator[str]) -> list[ResultRow]:
    """Valid rows of results.jsonl lines; an invalid line is skipped, never fatal."""
    rows: list[ResultRow] = []
    for line in lines:
        try:
            rows.append(ResultRow.model_validate_json(line))
        except ValidationError:
            # pydantic's JSON parser refuses a lone surrogate escape (`\udcff`: a byte of a path
            # that is not UTF-8, or a model's odd text), which `append` writes on purpose; Python's
            # json reads it back as written. Only such lines take this slower path.
            try:
                rows.append(ResultRow.model_validate(json.loads(line)))
            except (ValueError, ValidationError):
                continue
    return rows


T = TypeVar("T")


def tries_of(
    items: Iterable[T],
    unit: Callable[[T], Hashable],
    attempt: Callable[[T], int],
    abandoned: Callable[[T], bool] | None = None,
) -> dict[Hashable, list[list[T]]]:
    """Every try of each unit, in the order written: one try appends its attempts in increasing
    order, so a row whose attempt is not above the previous row of its unit starts a new try (a
    resumed run redoing an unfinished unit from its first attempt, an infrastructure retry, a unit
    redone on purpose); a row `abandoned` says ended its try (the machine failed it and the unit
    was tried again) ends it too."""
    tries: dict[Hashable, list[list[T]]] = {}
    for item in items:
        key, number = unit(item), attempt(item)
        found = tries.setdefault(key, [])
        if not found or number <= attempt(found[-1][-1]) or (abandoned is not None and abandoned(found[-1][-1])):
            found.append([])
        found[-1].append(item)
    return tries


def latest_of(
    items: Iterable[T],
    unit: Callable[[T], Hashable],
    attempt: Callable[[T], int],
    abandoned: Callable[[T], bool] | None = None,
) -> list[T]:
    """The latest-row rule, for rows of any shape: the rows of the last try of each unit, one per
    attempt, in the order written (see `tries_of`).

    The new try supersedes *every* row of the earlier one, also attempts it never reaches (a redo
    may be resolved sooner than the killed try got). A try that ends in an `abandoned` row never
    counts, even as the last one (a run killed before the retry wrote anything): its unit has no
    rows that count until another try writes some. Superseded rows stay in results.jsonl: nothing
    is ever rewritten.
    """
    out: list[T] = []
    for found in tries_of(items, unit, attempt, abandoned).values():
        last = found[-1]
        if abandoned is None or not abandoned(last[-1]):
            out += last
    return out


def latest_rows(rows: list[ResultRow]) -> list[ResultRow]:
    """The rows that count of a run: `latest_of` over (task, config, repeat) units."""
    return latest_of(rows, ResultRow.unit, lambda row: row.attempt, lambda row: row.retried)


def retried_tries(rows: list[ResultRow]) -> list[list[ResultRow]]:
    """The tries the machine failed that were tried again, each with its rows (graded attempts
    and the row of the attempt it failed in): a try that ends in a `retried` row (the runner's
    retry), and an earlier try whose final row is an `infra_error` a resume redid. Their spend
    counts in the configuration's cost, once: each row is in one try. Tries superseded for other
    reasons (a killed run's unfinished try, `run --redo`) are not counted."""
    out: list[list[ResultRow]] = []
    for found in tries_of(rows, ResultRow.unit, lambda row: row.attempt, lambda row: row.retried).values():
        for i, one in enumerate(found):
            end = one[-1]
            if end.retried or (i < len(found) - 1 and end.final and end.outcome == Outcome.infra_error):
                out.append(one)
    return out


#: Final outcomes that do not finish a unit: a resume does it again, because what caused them
#: (the machine, a missing key, a task's inputs) may have been fixed since. The old rows stay in
#: results.jsonl, superseded by the new try (`latest_of`).


def redo_on_resume(row: ResultRow) -> bool:
    """Does a resumed run try this row's unit again? The one rule (the runner, executors and
    reports ask it): yes when its final outcome is not the agent's (see REDO_OUTCOMES)."""
    return row.final and row.outcome in REDO_OUTCOMES


RowListener = Callable[["ResultRow"], None]
_Reviewed = TypeVar("_Reviewed", Review, ModelReview)  # a human verdict or a model review
_Line = TypeVar("_Line", bound=BaseModel)


def _valid_lines(path: Path, model: type[_Line]) -> list[_Line]:
    """Every line of the JSONL at PATH that validates as MODEL, in the order written (a torn or
    invalid line is skipped)."""
    out: list[_Line] = []
    for line in complete_lines(path):
        try:
            out.append(model.model_validate_json(line))
        except ValidationError:
            continue
    return out


class RunFolderBusy(UserError):
    """Another process (or another RunFolder of this one) is writing this run folder."""

    hint = "wait for that run to end (or stop it), or give this run another --out"


#: manifest.json's schema: 2 stores the RunSpec it was started from (`recipe`); 1 (before) has none.
MANIFEST_SCHEMA = 2


class _Open(BaseModel):
    """A manifest part: typed where read, any other key kept as written (older and newer runs)."""

    model_config = ConfigDict(extra="allow")


class ManifestOptions(_Open):
    """How the run was run: the `RunOptions` it recorded (`RunOptions.record()` writes this)."""

    workers: int = 1
    repeats: int = 1
    attempts: int = 1
    feedback: str = "none"
    infra_retries: int = 2
    limits: dict[str, Any] = Field(default_factory=dict)
    config: str = ""
    training_cutoff: str | None = None


class ManifestTask(_Open):
    """A task as the run used it: its content hash and where its spec was."""

    content_hash: str = ""
    spec: str = ""
    repo: str = ""
    base_commit: str = ""
    created_at: str | None = None
    statement_quality: str | None = None
    check: str | None = None
    # its size, for the regimes (docs/sweeps.md); None: not recorded (an older run, an unreadable repository)
    repo_files: int | None = None  # files in the repository's tree at the base commit
    gold_files: int | None = None  # files the gold patch changes


class Manifest(_Open):
    """manifest.json, typed: read through this everywhere (`RunFolder.info()`). Version 1 (no
    `recipe`) and version 2 read alike; unknown keys are kept."""

    schema_version: int = 1
    run_id: str = ""
    run_uid: str | None = None
    command: list[str] = Field(default_factory=list)
    cwd: str | None = None
    wholeloop: dict[str, Any] = Field(default_factory=dict)
    agent: dict[str, Any] = Field(default_factory=dict)
    options: ManifestOptions = Field(default_factory=ManifestOptions)
    tasks: dict[str, ManifestTask] = Field(default_factory=dict)
    images: dict[str, dict[str, Any]] = Field(default_factory=dict)
    started_at: str | None = None
    finished_at: str | None = None
    sessions: list[dict[str, Any]] = Field(default_factory=list)
    executor: dict[str, Any] | None = None
    #: the RunSpec the run was started from, verbatim (`RunSpec.of(recipe)`); None before version 2
    recipe: dict[str, Any] | None = None
    grader_version: int | None = None
    regraded_from: dict[str, Any] | None = None
    #: the machine the run was on, as the run recorded it (for a report's recipe)
    python: str | None = None
    dependencies: dict[str, Any] = Field(default_factory=dict)
    docker_engine: dict[str, Any] = Field(default_factory=dict)
    host: dict[str, Any] = Field(default_factory=dict)

    def resume_command(self) -> str:
        """The command that started the run (`wholeloop ...`), to run again to resume it."""
        return resume_command(self.model_dump())


class RunFolder:
    """One run folder. Thread-safe; the manifest is also safe across processes (an flock)."""

    RESULTS = "results.jsonl"
    MANIFEST = "manifest.json"
    WRITER_LOCK = ".writer.lock"
    REVIEWS = "reviews.jsonl"
    MODEL_REVIEWS = "model_reviews.jsonl"

    def __init__(self, path: Path | str, *, create: bool = False) -> None:
        self.path = Path(path)
        if create:
            self.path.mkdir(parents=True, exist_ok=True)
        self._rows_lock = threading.Lock()
        self._manifest_lock = threading.Lock()
        self._log_lock = threading.Lock()
        self._reviews_lock = threading.Lock()
        self._listeners: list[RowListener] = []
        self._repaired = False

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    # ------------------------------------------------------------------ paths

    @property
    def results_path(self) -> Path:
        return self.path / self.RESULTS

    @property
    def manifest_path(self) -> Path:
        return self.path / self.MANIFEST

    @property
    def image_log_path(self) -> Path:
        return self.path / "logs" / "images.log"

    def is_run(self) -> bool:
        """Has this folder the records of a run (results or manifest)?"""
        return self.results_path.exists()

    def rep_dir(self, task_id: str, label: str, repeat: int) -> Path:
        return self.path / "attempts" / slug(task_id) / slug(label) / f"rep-{repeat}"

    def attempt_dir(self, task_id: str, label: str, repeat: int, attempt: int) -> Path:
        return self.rep_dir(task_id, label, repeat) / f"attempt-{attempt}"

    def transcript_path(self, task_id: str, label: str, repeat: int) -> Path:
        return self.rep_dir(task_id, label, repeat) / "transcript.jsonl"

    def relative(self, path: Path) -> Path:
        return Path(path).relative_to(self.path)

    # ------------------------------------------------------------------ one writer

    @contextlib.contextmanager
    def writer(self) -> Iterator[None]:
        """Hold the run folder for one writer (a run, for its whole life): an flock on
        RUN/.writer.lock, taken at once or not at all. A second writer -- another process, or another
        open of the folder in this one -- gets RunFolderBusy naming the holder. The kernel drops the
        lock when its holder dies, even by SIGKILL, so a killed run never blocks its resume."""
        self.path.mkdir(parents=True, exist_ok=True)
        path = self.path / self.WRITER_LOCK
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode(errors="replace")
            os.close(fd)
            try:
                who = json.loads(holder)
                what = f"pid {who['pid']} on {who['host']}, since {who['since']}: {' '.join(who['command'])[:200]}"
            except (ValueError, KeyError, TypeError):
                what = "its details are not written yet"
            raise RunFolderBusy(
                f"{self.path} is being written by another wholeloop run ({what}); a run folder has one writer at a time"
            ) from None
        try:
            me = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "command": sys.argv,
                "since": datetime.now(UTC).isoformat(timespec="seconds"),
            }
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(me).encode(), 0)
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    # ------------------------------------------------------------------ rows

    def on_row(self, listener: RowListener) -> None:
        """Call `listener(row)` after each row is appended (a history index hooks in here).
        A listener that raises does not lose the row: it is on disk first."""
        self._listeners.append(listener)

    def append(self, row: ResultRow) -> None:
        """The one append point of results.jsonl: one whole line, one write, fsynced."""
        line = (
            escape_surrogates(json.dumps(row.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))) + "\n"
        ).encode()
        with self._rows_lock:
            if not self._repaired:  # a crash mid-append leaves a torn last line: cut it first
                drop_torn_tail(self.results_path)
                self._repaired = True
            self.results_path.parent.mkdir(parents=True, exist_ok=True)
            append_line(self.results_path, line)
        for listener in self._listeners:
            listener(row)

    def rows(self) -> list[ResultRow]:
        """Every valid row, in the order written (superseded ones included)."""
        return parse_rows(complete_lines(self.results_path))

    def latest(self) -> list[ResultRow]:
        """The rows that count: see `latest_rows`."""
        return latest_rows(self.rows())

    def finished_units(self) -> set[tuple[str, str, int]]:
        """(task, configuration, repeat) units whose latest try has a final row that stands: a
        final row `redo_on_resume` says to try again does not finish its unit."""
        return {row.unit() for row in self.latest() if row.final and not redo_on_resume(row)}

    def units_to_redo(self) -> dict[tuple[str, str, int], ResultRow]:
        """Units whose latest final row a resume does again (see `redo_on_resume`), with that row."""
        return {row.unit(): row for row in self.latest() if row.final and redo_on_resume(row)}

    # ------------------------------------------------------------------ human verdicts

    @property
    def reviews_path(self) -> Path:
        return self.path / self.REVIEWS

    def patch_sha256(self, row: ResultRow) -> str:
        """The sha256 of an attempt's patch as recorded (of the empty patch when it has none)."""
        path = self.path / row.patch_path if row.patch_path else None
        data = path.read_bytes() if path is not None and path.is_file() else b""
        return hashlib.sha256(data).hexdigest()

    def review_key(self, row: ResultRow) -> dict[str, str | int]:
        """The fields that key a verdict (human or model) to one attempt's patch as it is now:
        the unit, the attempt and the patch's sha256."""
        return {
            "task_id": row.task_id,
            "config": row.config,
            "repeat": row.repeat,
            "attempt": row.attempt,
            "patch_sha256": self.patch_sha256(row),
        }

    def add_review(self, review: Review) -> None:
        """Append one verdict to reviews.jsonl: one whole line, under its own lock (a thread lock
        and an flock on RUN/.reviews.lock), since reviewers write after the run, beside any other
        reader or reviewer, never under the run's writer lock. Every verdict is kept."""
        self._append_review(self.reviews_path, review)

    def _append_review(self, path: Path, review: Review | ModelReview) -> None:
        if not review.at:
            review = review.model_copy(update={"at": datetime.now(UTC).isoformat(timespec="seconds")})
        line = (
            escape_surrogates(json.dumps(review.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")))
            + "\n"
        ).encode()
        self.path.mkdir(parents=True, exist_ok=True)
        with self._reviews_lock, open(self.path / ".reviews.lock", "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                drop_torn_tail(path)
                append_line(path, line)
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    @property
    def model_reviews_path(self) -> Path:
        return self.path / self.MODEL_REVIEWS

    def add_model_review(self, review: ModelReview) -> None:
        """Append one model review to model_reviews.jsonl (the review lock; every review kept)."""
        self._append_review(self.model_reviews_path, review)

    def model_reviews(self) -> list[ModelReview]:
        """Every valid model review, in the order written (a torn or invalid line is skipped)."""
        return _valid_lines(self.model_reviews_path, ModelReview)

    def current_model_reviews(
        self, rows: list[ResultRow] | None = None
    ) -> dict[tuple[str, str, int, int], dict[str, ModelReview]]:
        """The model reviews that count, per attempt key, per model: each model's latest review of
        the attempt's patch as it is now (as `current_reviews` does for human verdicts)."""
        return self._current(self.model_reviews(), rows, lambda review: review.model)

    def reviews(self) -> list[Review]:
        """Every valid verdict, in the order written (a torn or invalid line is skipped)."""
        return _valid_lines(self.reviews_path, Review)

    def current_reviews(
        self, rows: list[ResultRow] | None = None
    ) -> dict[tuple[str, str, int, int], dict[str, Review]]:
        """The verdicts that count, per attempt key, per reviewer: the latest verdict of each
        reviewer whose patch sha256 is that of the attempt's patch now (a regrade that keeps the
        patch keeps its verdicts; a verdict on another patch no longer applies)."""
        return self._current(self.reviews(), rows, lambda review: review.reviewer)

    def _current(
        self, reviews: list[_Reviewed], rows: list[ResultRow] | None, who: Callable[[_Reviewed], str]
    ) -> dict[tuple[str, str, int, int], dict[str, _Reviewed]]:
        """Per attempt key, per `who`: the latest of `reviews` made on the attempt's patch as it is now."""
        rows = self.latest() if rows is None else rows
        shas = {row.key(): self.patch_sha256(row) for row in rows}
        out: dict[tuple[str, str, int, int], dict[str, _Reviewed]] = {}
        for review in reviews:
            if shas.get(review.key()) == review.patch_sha256:
                out.setdefault(review.key(), {})[who(review)] = review
        return out

    # ------------------------------------------------------------------ manifest

    def manifest(self) -> dict:
        """The manifest as written, or {} when there is none yet (`info()` reads it typed)."""
        path = self.manifest_path
        return json.loads(path.read_text()) if path.exists() else {}

    def info(self) -> Manifest:
        """The manifest, typed (an empty one when there is none yet); any schema version."""
        return Manifest.model_validate(self.manifest())

    @contextlib.contextmanager
    def _manifest_locked(self) -> Iterator[None]:
        self.path.mkdir(parents=True, exist_ok=True)
        with self._manifest_lock, open(self.path / ".manifest.lock", "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def update_manifest(self, change: Callable[[dict], None]) -> dict:
        """Read, change in place with `change(manifest)`, write atomically: one writer at a time."""
        with self._manifest_locked():
            manifest = self.manifest()
            change(manifest)
            write_json(self.manifest_path, manifest)
            return manifest

    # ------------------------------------------------------------------ transcripts and logs

    def move_aside(self, transcript: Path) -> Path | None:
        """Keep an unfinished earlier try's transcript as transcript.unfinished-N.jsonl (the next
        free N); returns where it went, or None when there was none."""
        transcript = Path(transcript)
        if not transcript.exists():
            return None
        target = self.unfinished_slot(transcript)
        shutil.move(transcript, target)
        return target

    @staticmethod
    def unfinished_slot(transcript: Path) -> Path:
        """The next free transcript.unfinished-N.jsonl beside `transcript`."""
        n = 1
        while (target := transcript.with_name(f"transcript.unfinished-{n}.jsonl")).exists():
            n += 1
        return target

    def write_file(self, rel: str | Path, data: str | bytes) -> Path:
        """Write a file of an attempt (relative to the run folder) atomically; refuses paths that
        leave `attempts/`. An unfinished transcript never overwrites another: it takes a free slot."""
        rel = Path(rel)
        if rel.is_absolute() or not rel.parts or rel.parts[0] != "attempts" or ".." in rel.parts:
            raise ValueError(f"{rel}: not an attempt file of a run folder")
        target = self.path / rel
        if target.name.startswith("transcript.unfinished-") and target.exists():
            target = self.unfinished_slot(target)
        write_atomic(target, data)
        return target

    def log_image(self, text: str) -> None:
        """Append lines to logs/images.log (one writer at a time)."""
        path = self.image_log_path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._log_lock, open(path, "a") as fh:
            fh.write(scrub(text if text.endswith("\n") else text + "\n"))


class RunNotStarted(FileNotFoundError):
    """A run folder with a manifest but no finished attempt yet (stopped before its first row)."""


def resume_command(manifest: dict) -> str:
    """The command that started a run (`wholeloop ...`), to run again to resume it."""
    import shlex

    argv = manifest.get("command") or []
    if not isinstance(argv, list) or not argv:
        return ""
    return shlex.join(["wholeloop", *map(str, argv[1:])])


def open_run(path: Path | str) -> RunFolder:
    """An existing run folder; raises FileNotFoundError with a clear message when it is not one,
    RunNotStarted when it is one that has no finished attempt yet."""
    folder = RunFolder(path)
    if not folder.is_run():
        if folder.manifest_path.is_file():
            try:
                manifest = folder.manifest()
            except ValueError:
                manifest = {}
            planned = len(manifest.get("tasks") or {})
            state = "not finished" if not manifest.get("finished_at") else f"finished at {manifest['finished_at']}"
            again = resume_command(manifest)
            raise RunNotStarted(
                f"{folder.path}: a run folder with no finished attempt yet (started {manifest.get('started_at') or '?'}, "
                f"{planned} task(s) planned, {state}): nothing to report"
                + (f"; resume it with: {again}" if again else "")
            )
        raise FileNotFoundError(f"{folder.path} is not a wholeloop run folder (no results.jsonl)")
    return folder


def load_run(run_dir: Path | str) -> tuple[dict, list[ResultRow]]:
    """The manifest and every row of a run folder. Raises FileNotFoundError with a clear message."""
    folder = open_run(run_dir)
    return folder.manifest(), folder.rows()


def read_results(path: Path) -> list[ResultRow]:
    """Valid rows of a results file (a torn or invalid line is skipped, never fatal)."""
    return parse_rows(complete_lines(Path(path)))
