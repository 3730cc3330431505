"""Contamination dating: each configuration's resolve rate split by whether a task's fix is newer
than the model's training cutoff (as SWE-rebench does). A task created after the cutoff cannot
have been in the training data; a rate that drops sharply after it suggests the earlier tasks were
remembered, not solved.

The cutoff of a configuration's model comes from, first to last: the report's `--cutoff
MODEL=DATE` / `--cutoffs FILE`, the run's `--training-cutoff` (in its manifest), the table shipped
in harness/data/cutoffs.yaml (every entry with the page it was read from). A task's date is its
spec's `created_at` (recorded in the run's manifest); tasks without one are "undated". From disk
only: no Docker.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, Field

from .errors import ReportInputError
from .stats import ConfigRows, Interval, trials_of, wilson

TABLE = "cutoffs.yaml"


class Cutoff(BaseModel):
    match: list[str]
    cutoff: str
    kind: str = ""
    source: str = ""


class Side(BaseModel):
    trials: int = 0
    resolved: int = 0
    tasks: int = 0
    rate: Interval = Field(default_factory=Interval)


class DatingSplit(BaseModel):
    config: str
    model: str | None = None
    cutoff: str | None = None  # as given (YYYY-MM or a date)
    cutoff_source: str = ""  # where it came from
    after: Side = Field(default_factory=Side)  # created after the cutoff: not in the training data
    before: Side = Field(default_factory=Side)  # created on or before it
    undated: Side = Field(default_factory=Side)
    note: str = ""


def parse_cutoff(text: str) -> datetime:
    """The last instant a cutoff covers: YYYY-MM is the end of that month, a date the end of that
    day, a time itself. Raises ValueError for anything else."""
    text = str(text).strip()
    if re.fullmatch(r"\d{4}-\d{2}", text):
        year, month = map(int, text.split("-"))
        return datetime(year, month, calendar.monthrange(year, month)[1], 23, 59, 59, tzinfo=UTC)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return datetime.fromisoformat(text + "T23:59:59+00:00")
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ReportInputError(f"not a training cutoff: {text!r} (use YYYY-MM, YYYY-MM-DD or an ISO time)") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def load_table(path: Path | str | None = None) -> list[Cutoff]:
    """The shipped cutoff table, or one in the same format."""
    if path is None:
        text = resources.files("harness.data").joinpath(TABLE).read_text()
        where = f"harness/data/{TABLE}"
    else:
        try:
            text, where = Path(path).read_text(), str(path)
        except OSError as exc:
            raise ReportInputError(f"{path}: cannot read the cutoff table: {exc.strerror}") from None
    import yaml  # here, not at import: what imports this module for its types parses no table

    try:
        from yaml import CSafeLoader as Loader  # libyaml's: ten times quicker
    except ImportError:
        from yaml import SafeLoader as Loader
    data = yaml.load(text, Loader=Loader) or {}
    entries = data.get("models") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ReportInputError(f"{where}: a cutoff table is `models: [{{match: [...], cutoff: YYYY-MM, source: ...}}]`")
    table = [Cutoff.model_validate(e) for e in entries]
    for entry in table:
        parse_cutoff(entry.cutoff)
    return table


def _bare(model: str) -> str:
    """The model id without adapter and provider prefixes (anthropic/x, litellm/openrouter/x)."""
    return model.rsplit("/", 1)[-1].removeprefix("replay:")


def find_cutoff(model: str | None, table: list[Cutoff], overrides: dict[str, str]) -> tuple[str | None, str]:
    """(cutoff, where it came from) for a model id."""
    if not model:
        return None, "no model"
    bare = _bare(model)
    for key, value in overrides.items():
        if key in (model, bare) or fnmatchcase(bare, key) or fnmatchcase(model, key):
            return value, "given for this report"
    for entry in table:
        if any(fnmatchcase(bare, pattern) for pattern in entry.match):
            return entry.cutoff, f"{entry.kind}: {entry.source}" if entry.kind else entry.source
    return None, f"no cutoff known for {bare} (pass --cutoff {bare}=YYYY-MM)"


def dating_split(
    cfg: ConfigRows, table: list[Cutoff] | Callable[[], list[Cutoff]], overrides: dict[str, str]
) -> DatingSplit:
    """`table`, or a function that loads it: the shipped table is parsed only when a dated task needs it."""
    rows = cfg.rows
    model = next((r.model for r in rows if r.model), None)
    out = DatingSplit(config=cfg.name, model=model)
    from_run = cfg.manifest.options.training_cutoff
    created = {tid: info.created_at for tid, info in cfg.manifest.tasks.items()}
    if from_run and not any(k in (model, _bare(model or "")) for k in overrides):
        out.cutoff, out.cutoff_source = str(from_run), "the run's --training-cutoff"
    elif not any(created.get(r.task_id) for r in rows):  # every trial would be undated: nothing to split by
        out.cutoff, out.cutoff_source = find_cutoff(model, [], overrides)
        if not out.cutoff:
            out.cutoff_source = "no task of the run has a date (created_at in its spec)"
    else:
        out.cutoff, out.cutoff_source = find_cutoff(model, table() if callable(table) else table, overrides)
    if not out.cutoff:
        out.note = f"not split: {out.cutoff_source}"
        return out
    limit = parse_cutoff(out.cutoff)
    sides: dict[str, tuple[Side, set]] = {
        "after": (out.after, set()),
        "before": (out.before, set()),
        "undated": (out.undated, set()),
    }
    for trial in trials_of(rows):
        if not trial.scored:
            continue
        when = created.get(trial.task_id)
        if not when:
            key = "undated"
        else:
            stamp = datetime.fromisoformat(str(when).replace("Z", "+00:00"))
            stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
            key = "after" if stamp > limit else "before"
        side, tasks = sides[key]
        side.trials += 1
        side.resolved += trial.resolved
        tasks.add(trial.task_id)
    for side, tasks in sides.values():
        side.tasks = len(tasks)
        side.rate = wilson(side.resolved, side.trials)
    return out


def dating_figures(
    configs: list[ConfigRows],
    *,
    table: list[Cutoff] | Callable[[], list[Cutoff]] | None = None,
    overrides: dict[str, str] | None = None,
) -> list[DatingSplit]:
    """`table`: a cutoff table, a function giving one, or None for the shipped table (parsed once,
    and only when some configuration has dated tasks to split)."""
    if table is None:
        loaded: list[list[Cutoff]] = []

        def table() -> list[Cutoff]:
            if not loaded:
                loaded.append(load_table())
            return loaded[0]

    return [dating_split(c, table, overrides or {}) for c in configs]
