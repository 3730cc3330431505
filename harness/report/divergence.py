"""What changed on a task that flipped (resolved on one side only): the cause on the failing side,
and the first *meaningful* divergence of the two attempts (docs/failures.md).

Two models differ at their first step in wording; what matters is what they did. The attempts are
aligned on two sequences: the files each changed, in the order it first changed them, and the
results of its test runs (green, or red with the set of failing tests; the exit code of a shell
test command when there is no test_run event). The divergence is the first position where a
sequence differs (or one side has an item the other has not), whichever comes first in the
failing attempt; it names the step and event of each side.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from ..errors import UserError
from ..records import Manifest, ResultRow, open_run
from ..transcript import ToolCallEvent, ToolResultEvent, read_transcript
from .causes import Finding, attempt_causes, command_of, is_test_call, runs_by_call
from .recovery import attempt_events, is_edit


class Point(BaseModel):
    """One side's item at the divergence."""

    seq: int | None = None  # the transcript event
    step: int | None = None
    what: str = ""


class Divergence(BaseModel):
    kind: str  # "file changed" | "test result"
    index: int  # 1-based position in that sequence
    failing: Point | None = None  # None: the failing attempt has no such item
    resolved: Point | None = None


class FlipWhy(BaseModel):
    failing: str  # the configuration (compare) or side (gate) that did not resolve
    transcript: str = ""  # the failing attempt's, relative to its run folder
    causes: list[Finding] = Field(default_factory=list)
    divergence: Divergence | None = None
    note: str = ""  # why something could not be said (a transcript missing)


def _path(args: dict | None) -> str:
    args = args or {}
    for key in ("path", "file_path", "filename", "file"):
        if isinstance(args.get(key), str):
            return args[key].removeprefix("./")
    return ""


def trace(events: list) -> tuple[list[tuple[str, Point]], list[tuple[str, Point]]]:
    """(files changed in the order first changed, test results), each as (value compared, point)."""
    files: list[tuple[str, Point]] = []
    tests: list[tuple[str, Point]] = []
    waiting: dict[str, ToolCallEvent] = {}
    runs = runs_by_call(events)
    for e in events:
        if isinstance(e, ToolCallEvent):
            waiting[e.call_id] = e
            continue
        if not isinstance(e, ToolResultEvent) or e.call_id not in waiting:
            continue
        call = waiting.pop(e.call_id)
        ok = not e.is_error and e.exit_code in (None, 0)
        if is_edit(call) and ok:
            path = _path(call.arguments) or command_of(call)
            if path and path not in {f for f, _ in files}:
                files.append((path, Point(seq=call.seq, step=call.step, what=path)))
        elif is_test_call(call):
            run = runs.get(call.seq)
            if run is not None:
                value = "green" if run.green else "red: " + ", ".join(sorted(run.failing))
                tests.append((value, Point(seq=run.seq, step=run.step, what=value)))
            else:
                value = f"exit {e.exit_code}"
                tests.append((value, Point(seq=e.seq, step=e.step, what=f"$ {command_of(call)}: {value}")))
    return files, tests


def _first(kind: str, fail: list[tuple[str, Point]], ok: list[tuple[str, Point]]) -> Divergence | None:
    for i in range(max(len(fail), len(ok))):
        a = fail[i] if i < len(fail) else None
        b = ok[i] if i < len(ok) else None
        if a is None or b is None or a[0] != b[0]:
            return Divergence(kind=kind, index=i + 1, failing=a and a[1], resolved=b and b[1])
    return None


def first_divergence(failing: list, resolved: list) -> Divergence | None:
    fail_files, fail_tests = trace(failing)
    ok_files, ok_tests = trace(resolved)
    found = [
        d for d in (_first("file changed", fail_files, ok_files), _first("test result", fail_tests, ok_tests)) if d
    ]

    def when(d: Divergence) -> float:
        point = d.failing or d.resolved
        return point.step if point and point.step is not None else float("inf")

    return min(found, key=when) if found else None


def _events(run_dir: str | Path, row: ResultRow, cache: dict) -> list | None:
    path = Path(run_dir) / row.transcript_path if run_dir and row.transcript_path else None
    if path is None or not path.is_file():
        return None
    if path not in cache:
        cache[path] = read_transcript(path)
    return attempt_events(cache[path], row.attempt)


def _manifest(run_dir: str | Path) -> Manifest:
    try:
        return open_run(run_dir).info() if run_dir else Manifest()
    except (OSError, ValueError, UserError):  # a folder that is gone or not a run: no facts of its tasks
        return Manifest()


def why_flipped(
    failing: str, fail_dir: str | Path, fail_row: ResultRow, ok_dir: str | Path, ok_row: ResultRow
) -> FlipWhy:
    """The failing attempt's causes and where it went apart from the resolved one."""
    out = FlipWhy(failing=failing, transcript=fail_row.transcript_path)
    cache: dict = {}  # each transcript read once
    a, b = _events(fail_dir, fail_row, cache), _events(ok_dir, ok_row, cache)
    if fail_dir:
        out.causes = attempt_causes(Path(fail_dir), fail_row, failing, _manifest(fail_dir), cache).causes
    if a is None or b is None:
        out.note = "no divergence: a transcript is not in its run folder"
    else:
        out.divergence = first_divergence(a, b)
    return out


def describe(why: FlipWhy) -> tuple[str, str]:
    """(causes, divergence) in one line each, for a terminal."""
    causes = ", ".join(f.cause.value for f in why.causes) or "no cause found"
    d = why.divergence
    if d is None:
        return causes, why.note or "no divergence in files changed or test results"

    def side(p: Point | None) -> str:
        return f"{p.what} (step {p.step}, event {p.seq})" if p else "(none)"

    return causes, f"{d.kind} #{d.index}: failing {side(d.failing)} | resolved {side(d.resolved)}"
