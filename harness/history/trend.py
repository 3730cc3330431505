"""Trends over the history: one point per run of a configuration, with the report's intervals.

Each point is computed exactly as `wholeloop report` computes that run's figures
(`harness.report.stats`), from the index's per-task aggregates instead of the run folder:

- resolve rate: scored trials resolved, with a 95 % Wilson interval;
- cost per resolved task: the run's cost over its resolved trials, percentile bootstrap over tasks
  (unknown when a price was unknown; unbounded above when nothing was resolved);
- time per task: seconds per scored trial, percentile bootstrap over tasks.

A series is one (suite, configuration): the same agent setup measured again and again. A run that
was re-graded (`wholeloop regrade`) appears once, as its newest regrade, at the original's time.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from ..report.stats import BootstrapSettings, Interval, bootstrap_ratio, wilson
from .db import HistoryFilter, HistoryIndex, RunSummary, TaskAggregate, superseded


class TrendPoint(BaseModel):
    run_id: str
    uid: str
    path: str
    started_at: datetime | None
    finished: bool
    tasks: int
    scored: int
    resolved: int
    infra_errors: int
    resolve_rate: Interval = Field(default_factory=Interval)
    cost_per_resolved: Interval = Field(default_factory=Interval)
    time_per_task: Interval = Field(default_factory=Interval)
    # under the default policy, from the axes the index keeps (migration 0005); unknown (with a
    # note) when a resolved trial was not measured: graded before the axes, or indexed before 0005
    accept_rate: Interval = Field(default_factory=Interval)


class TrendSeries(BaseModel):
    suite: str
    config: str
    agent: str = ""
    model: str | None = None
    points: list[TrendPoint] = Field(default_factory=list)  # oldest first


def accept_rate_of(index: HistoryIndex, run: RunSummary, settings: BootstrapSettings) -> Interval:
    """The run's accept rate, as `wholeloop report` computes it (`config_acceptance`, default
    policy), from the rows and axes the index keeps."""
    from pathlib import Path

    from ..records import Manifest
    from ..report.acceptance import config_acceptance
    from ..report.stats import ConfigRows

    rows = index.rows_of(run.key, run.config)
    cfg = ConfigRows(run.config, run.config, Path(run.path), Manifest(), rows)
    return config_acceptance(cfg, settings=settings).accept_rate


def point_of(run: RunSummary, tasks: list[TaskAggregate], settings: BootstrapSettings) -> TrendPoint:
    rated = [t for t in tasks if t.scored]
    point = TrendPoint(
        run_id=run.run_id,
        uid=run.uid,
        path=run.path,
        started_at=run.started_at,
        finished=run.finished_at is not None,
        tasks=run.tasks,
        scored=run.scored,
        resolved=run.resolved,
        infra_errors=run.infra_errors,
    )
    point.resolve_rate = wilson(run.resolved, run.scored, settings.confidence_level)
    if any(t.cost_usd is None for t in rated):
        point.cost_per_resolved = Interval(unknown=True, n=len(rated), note="a price is unknown for some attempts")
    else:
        point.cost_per_resolved = bootstrap_ratio(
            [t.cost_usd for t in rated if t.cost_usd is not None],  # (all: every price is known)
            [t.resolved for t in rated],
            settings=settings,
        )
    point.time_per_task = bootstrap_ratio([t.time_s for t in rated], [t.scored for t in rated], settings=settings)
    return point


def trend(
    index: HistoryIndex, flt: HistoryFilter | None = None, *, last: int = 30, settings: BootstrapSettings | None = None
) -> list[TrendSeries]:
    """Series per (suite, configuration), each with its latest `last` runs (0: all), oldest first."""
    settings = settings or BootstrapSettings()
    found = index.list_runs(flt)  # newest first
    regraded = superseded(found)  # a run re-graded is shown once: as its regrade
    found = [r for r in found if r.uid not in regraded]
    series: dict[tuple[str, str], list[RunSummary]] = {}
    for run in found:
        kept = series.setdefault((run.suite, run.config), [])
        if not last or len(kept) < last:
            kept.append(run)
    aggregates = index.task_aggregates([(r.key, r.config) for kept in series.values() for r in kept])
    out = []
    for (suite, config), kept in sorted(series.items()):
        kept.reverse()
        out.append(
            TrendSeries(
                suite=suite,
                config=config,
                agent=kept[-1].agent,
                model=kept[-1].model,
                points=[
                    point_of(r, aggregates[(r.key, r.config)], settings).model_copy(
                        update={"accept_rate": accept_rate_of(index, r, settings)}
                    )
                    for r in kept
                ],
            )
        )
    return out


def trend_of_runs(
    index: HistoryIndex, run_dirs: list, *, last: int = 30, settings: BootstrapSettings | None = None
) -> list[TrendSeries]:
    """The series that the given run folders belong to (their suite and configuration), for the
    HTML report's "Over time" section; runs that are not indexed add nothing."""
    wanted = {(r.suite, r.config) for r in index.list_runs(HistoryFilter(paths=[str(d) for d in run_dirs]))}
    out = []
    for suite, config in sorted(wanted):
        out += [
            s
            for s in trend(index, HistoryFilter(suite=suite or None, config=config), last=last, settings=settings)
            if s.suite == suite
        ]
    return out
