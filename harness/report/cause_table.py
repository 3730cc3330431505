"""Causes across runs (`wholeloop failures`): causes x configurations, with counts, shares and
Wilson intervals, and the tasks behind each cell.

The unit is the failed attempt: every attempt row that counts (the latest-row rule), is scored
(not `infra_error` / `task_error`), did not resolve and is not a control's. A cell's share is the
configuration's failed attempts with that cause over all its failed attempts (an attempt can have
several causes, so a column's shares can add up to more than 100 %). Causes already found by the
same rules (`RULES_VERSION`) can be handed in (`known`, from the history index); the others are
computed from the run folder and handed back to be kept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, TypeAdapter

from ..vocabulary import NOT_SCORED, Cause
from .causes import CONTROL_STOPS, RULES_VERSION, AttemptCauses, Finding, attempt_causes
from .stats import ConfigRows, Interval, wilson

Key = tuple[str, str, int, int]  # (task, config label, repeat, attempt): a current row of a run
_findings: TypeAdapter[list[Finding]] = TypeAdapter(list[Finding])


class CauseCell(BaseModel):
    cause: str
    config: str
    count: int
    failed: int  # the configuration's failed attempts (the share's denominator)
    share: Interval
    tasks: list[str] = Field(default_factory=list)


class CauseTable(BaseModel):
    rules_version: int = RULES_VERSION
    configs: list[str] = Field(default_factory=list)
    failed: dict[str, int] = Field(default_factory=dict)  # config -> failed attempts
    without_cause: dict[str, int] = Field(default_factory=dict)  # config -> failed attempts no rule explains
    cells: list[CauseCell] = Field(default_factory=list)
    attempts: list[AttemptCauses] = Field(default_factory=list)  # the failed attempts shown, with evidence


def encode(findings: list[Finding]) -> str:
    return json.dumps([f.model_dump(mode="json", exclude_defaults=True) for f in findings], separators=(",", ":"))


def decode(text: str) -> list[Finding]:
    return _findings.validate_json(text)


def failed(row) -> bool:
    return not row.resolved and row.outcome not in NOT_SCORED and row.stop_reason not in CONTROL_STOPS


def cause_table(
    configs: list[ConfigRows],
    *,
    known: dict[Path, dict[Key, str]] | None = None,
    causes: list[str] | None = None,
    tasks: list[str] | None = None,
    only_configs: list[str] | None = None,
) -> tuple[CauseTable, dict[Path, dict[Key, str]]]:
    """The table, and the causes computed here (by run folder and row key, encoded) to be kept."""
    known = known or {}
    fresh: dict[Path, dict[Key, str]] = {}
    table = CauseTable()
    cache: dict = {}
    wanted = set(causes or [])
    for cfg in configs:
        if only_configs and cfg.name not in only_configs and cfg.label not in only_configs:
            continue
        table.configs.append(cfg.name)
        stored = known.get(Path(cfg.run_dir), {})
        found: list[AttemptCauses] = []
        for row in sorted(cfg.rows, key=lambda r: (r.task_id, r.repeat, r.attempt)):
            if not failed(row) or (tasks and row.task_id not in tasks):
                continue
            key = (row.task_id, row.config, row.repeat, row.attempt)
            if key in stored:
                one = AttemptCauses(
                    task_id=row.task_id,
                    config=cfg.name,
                    repeat=row.repeat,
                    attempt=row.attempt,
                    outcome=row.outcome,
                    stop_reason=row.stop_reason,
                    transcript_path=row.transcript_path,
                    causes=decode(stored[key]),
                )
            else:
                one = attempt_causes(Path(cfg.run_dir), row, cfg.name, cfg.manifest, cache)
                if one.found:  # a missing transcript may turn up (a run still writing): not kept
                    fresh.setdefault(Path(cfg.run_dir), {})[key] = encode(one.causes)
            found.append(one)
        table.failed[cfg.name] = len(found)
        table.without_cause[cfg.name] = sum(not a.causes for a in found)
        for cause in Cause:
            if wanted and cause.value not in wanted:
                continue
            having = [a for a in found if cause in {f.cause for f in a.causes}]
            if having:
                table.cells.append(
                    CauseCell(
                        cause=cause.value,
                        config=cfg.name,
                        count=len(having),
                        failed=len(found),
                        share=wilson(len(having), len(found)),
                        tasks=sorted({a.task_id for a in having}),
                    )
                )
        table.attempts += [a for a in found if not wanted or wanted & set(a.names())]
    return table, fresh


def _share(cell: CauseCell) -> str:
    iv = cell.share
    low, high = iv.low or 0.0, iv.high or 0.0
    return f"{cell.count}/{cell.failed} {100 * (iv.value or 0):.0f}% [dim]\\[{100 * low:.0f}, {100 * high:.0f}][/]"


def cause_block(table: CauseTable, width: int = 150):
    """The table for a terminal: a row per cause, a column per configuration, then the tasks
    behind each cell (rich renderables)."""
    from rich.console import Group
    from rich.text import Text

    from .fit import Col, fit_table

    by = {(c.cause, c.config): c for c in table.cells}
    causes = [c.value for c in Cause if any(k[0] == c.value for k in by)]
    rows: list[list[str | Text]] = [
        [Text(cause), *[_share(by[cause, cfg]) if (cause, cfg) in by else "-" for cfg in table.configs]]
        for cause in causes
    ]
    rows.append([Text("(no cause found)"), *[str(table.without_cause.get(cfg, 0)) for cfg in table.configs]])
    cols = [Col("cause", "left"), *[Col(cfg, "left", 1 + i) for i, cfg in enumerate(table.configs)]]
    grid = fit_table(
        f"Failure causes (rules v{table.rules_version}): failed attempts with the cause / failed attempts, "
        "share [95% Wilson]",
        cols,
        rows,
        caption="failed: " + ", ".join(f"{cfg} {table.failed.get(cfg, 0)}" for cfg in table.configs),
        width=width,
    )
    parts: list = [grid]
    for cell in table.cells:
        parts.append(
            Text.from_markup(f"  [bold]{cell.cause}[/] · {cell.config}: ", end="").append(", ".join(cell.tasks))
        )
    return Group(*parts)


def explorer(configs: list[ConfigRows], rep_of: dict[tuple[str, str, str, int], int]) -> dict:
    """The HTML report's failure explorer: a chip per cause (with its count) and every failed
    attempt with its causes and evidence; `rep_of` maps (run folder, task, config label, repeat) to
    the report's attempt index, which the page opens (at the evidence's step)."""
    table, _ = cause_table(configs)
    by_name = {c.name: c for c in configs}
    rows: list[dict[str, Any]] = []
    for a in table.attempts:
        cfg = by_name[a.config]
        rows.append(
            {
                "rep": rep_of.get((str(Path(cfg.run_dir).resolve()), a.task_id, cfg.label, a.repeat)),
                "task": a.task_id,
                "config": a.config,
                "attempt": a.attempt,
                "outcome": a.outcome,
                "causes": [
                    {
                        "cause": f.cause.value,
                        "summary": f.summary,
                        "evidence": [e.model_dump(exclude_defaults=True) for e in f.evidence],
                    }
                    for f in a.causes
                ],
            }
        )
    counts = {c.value: sum(c.value in [x["cause"] for x in r["causes"]] for r in rows) for c in Cause}
    return {
        "rules_version": table.rules_version,
        "chips": [(k, v) for k, v in counts.items() if v],
        "without": sum(not r["causes"] for r in rows),
        "rows": rows,
    }
