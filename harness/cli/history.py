"""`wholeloop history`: every run, from the run history index; `history trend`: figures over time."""

from __future__ import annotations

import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from . import console, main
from .exit_codes import USAGE

URL_HELP = (
    "the run history: sqlite:///FILE or postgresql://USER:PASSWORD@HOST:PORT/DB "
    "(default: $WHOLELOOP_HISTORY_URL, else RUNS_ROOT/history.sqlite)"
)


def parse_since(text: str | None) -> datetime | None:
    """2026-01-31, an ISO date and time (UTC unless it says), or a span back from now: 7d, 12h, 2w."""
    if not text:
        return None
    span = re.fullmatch(r"(\d+)\s*([hdw])", text.strip())
    if span:
        hours = int(span[1]) * {"h": 1, "d": 24, "w": 168}[span[2]]
        return datetime.now(UTC) - timedelta(hours=hours)
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise click.BadParameter(
            f"{text!r}: give a date (2026-01-31), a date and time, or a span (7d, 12h, 2w)", param_hint="--since"
        ) from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


def open_index(url: str | None, runs_root: Path, *, create: bool = False):
    """The index, or a one-line error (exit 2) naming it without its password."""
    from ..history.db import HistoryError, HistoryIndex
    from ..history.url import resolve

    try:
        return HistoryIndex.open(resolve(url, runs_root), create=create)
    except (HistoryError, FileNotFoundError) as exc:
        click.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(USAGE)


def _filter_options(fn):
    for option in reversed(
        [
            click.option("--suite", help="only runs of this suite (its folder name, e.g. demo, or its path)"),
            click.option("--model", help="only this model (as rows record it, e.g. anthropic/claude-...)"),
            click.option("--agent", help="only this agent (gold, noop, default, ...)"),
            click.option("--config", "config_label", help="only this configuration label"),
            click.option("--since", help="only runs started since: a date, a date and time (UTC), or 7d / 12h / 2w"),
        ]
    ):
        fn = option(fn)
    return fn


def _index_options(fn):
    fn = click.option("--history-url", "history_url", default=None, help=URL_HELP)(fn)
    fn = click.option(
        "--runs-root",
        type=click.Path(file_okay=False, path_type=Path),
        default=Path("runs"),
        show_default=True,
        help="the folder holding the run folders (and history.sqlite)",
    )(fn)
    return fn


def _listed_without_sqlalchemy(history_url, runs_root, flt, limit):
    """The listing as SQLAlchemy compiled it last time, run on a SQLite index with sqlite3 alone
    (harness.history.listing): importing SQLAlchemy takes longer than the whole listing may.
    (None, url) when it cannot answer: then the index is opened the usual way."""
    from ..history import listing
    from ..history.url import resolve, sqlite_path

    url = resolve(history_url, runs_root)
    return listing.list_runs(sqlite_path(url), flt, limit=limit), url


def _shown(url: str) -> str:
    from ..history.url import shown

    return shown(url)


def _filter(suite, model, agent, config_label, since, parent: dict | None = None):
    from ..history.types import HistoryFilter

    parent = parent or {}
    return HistoryFilter(
        suite=suite or parent.get("suite"),
        model=model or parent.get("model"),
        agent=agent or parent.get("agent"),
        config=config_label or parent.get("config_label"),
        since=parse_since(since or parent.get("since")),
    )


def _when(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if value else "?"


@main.group(invoke_without_command=True)
@_index_options
@_filter_options
@click.option("--limit", default=50, show_default=True, type=click.IntRange(0), help="lines shown (0: all)")
@click.option(
    "--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="also write the lines as JSON"
)
@click.option(
    "--rebuild", is_flag=True, help="recreate the index from the run folders under --runs-root (drops what it held)"
)
@click.option(
    "--add",
    "add",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="(re)index this run folder (repeatable), e.g. one a run could not index",
)
@click.pass_context
def history(ctx, history_url, runs_root, suite, model, agent, config_label, since, limit, json_out, rebuild, add):
    """Every indexed run, newest first: one line per configuration with its resolve rate, its accept
    rate (default acceptance policy; n/m: not measured), infra errors, cost and time. Runs index themselves as they write their rows (SQLite beside the run
    folders, or --history-url / $WHOLELOOP_HISTORY_URL); the index is a cache of the run folders:
    --rebuild recreates it from them."""
    ctx.obj = {
        "history_url": history_url,
        "runs_root": runs_root,
        "suite": suite,
        "model": model,
        "agent": agent,
        "config_label": config_label,
        "since": since,
    }
    if ctx.invoked_subcommand:
        return
    if rebuild or add:
        out = console()
        index = open_index(history_url, runs_root, create=True)
        with index:
            if rebuild:
                if not runs_root.is_dir():
                    raise click.UsageError(f"--rebuild: {runs_root} is not a folder of run folders (give --runs-root)")
                n_runs, n_rows = index.rebuild([runs_root])
                out.print(f"rebuilt {index.shown}: {n_runs} runs, {n_rows} rows from {runs_root}")
            for run_dir in add:
                from ..records import open_run

                live = index.sync_run(open_run(run_dir))
                out.print(f"indexed {run_dir}: {live.seq} rows into {index.shown}")
        return
    flt = _filter(suite, model, agent, config_label, since)
    found_total, url = _listed_without_sqlalchemy(history_url, runs_root, flt, limit or None)
    if found_total:
        (found, total), shown = found_total, _shown(url)
    else:
        with open_index(history_url, runs_root) as index:
            found = index.list_runs(flt, limit=limit or None)
            total = index.count_runs(flt) if limit and len(found) == limit else len(found)
            shown = index.shown
    if json_out:
        from ..records import write_json

        write_json(json_out, [_summary_json(r) for r in found])
    if not found:
        click.echo(f"no indexed runs match in {shown}")
        return
    click.echo(_runs_table(found))
    more = f"; {total - len(found)} more (--limit 0 shows all)" if total > len(found) else ""
    click.echo(f"{len(found)} of {total} line(s) from {shown}{more}")


def _summary_json(r) -> dict:
    from dataclasses import asdict

    data = asdict(r)
    data["started_at"] = r.started_at.isoformat() if r.started_at else None
    data["finished_at"] = r.finished_at.isoformat() if r.finished_at else None
    data["resolve_rate"] = r.rate
    data["accept_rate"] = r.accept_rate  # default policy; null when a resolved trial was not measured
    return data


def _notes(r) -> str:
    notes = [] if r.finished_at else ["unfinished"]
    if r.regraded_from:
        notes.append(f"regrade of {r.regraded_from[:12]}")
    if r.tampering:
        notes.append(f"{r.tampering} suspected tampering")
    return ", ".join(notes)


def _runs_table(found) -> str:
    """Plain aligned columns (no rich: this command's start-up time is measured, and it pipes well)."""
    from ..report.format import pct, seconds, usd

    header = [
        "started (UTC)",
        "run",
        "suite",
        "config",
        "tasks",
        "resolved",
        "rate",
        "accepted",
        "accept rate",
        "infra",
        "cost",
        "time/trial",
        "",
    ]
    right = {"tasks", "resolved", "rate", "accepted", "accept rate", "infra", "cost", "time/trial"}
    lines = [
        [
            _when(r.started_at),
            r.run_id,
            r.suite or "-",
            r.config,
            str(r.tasks),
            f"{r.resolved}/{r.scored}",
            pct(r.rate),
            f"{r.accepted}/{r.scored}",
            "n/m" if r.not_measured else pct(r.accept_rate),
            str(r.infra_errors) if r.infra_errors else "",
            usd(r.cost_usd),
            seconds(r.time_s / r.scored) if r.scored else "-",
            _notes(r),
        ]
        for r in found
    ]
    widths = [max(len(x[i]) for x in [header, *lines]) for i in range(len(header))]

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if h in right else c.ljust(w) for c, w, h in zip(cells, widths, header)).rstrip()

    unmeasured = sum(r.not_measured for r in found)
    said = (
        [
            f"accept rate n/m: not measured, {unmeasured} resolved trial(s) without acceptance axes (graded "
            "before them: wholeloop regrade RUN; or indexed before the index kept them: history --add RUN)"
        ]
        if unmeasured
        else []
    )
    return "\n".join([fmt(header), *map(fmt, lines), *said])


@history.command("trend")
@_filter_options
@click.option(
    "--last", default=30, show_default=True, type=click.IntRange(0), help="runs per series, the latest ones (0: all)"
)
@click.option("--html", "html_out", type=click.Path(dir_okay=False, path_type=Path), help="write the charts as a page")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="write the series as JSON")
@click.pass_obj
def history_trend(obj, suite, model, agent, config_label, since, last, html_out, json_out):
    """Resolve and accept rates (95% Wilson intervals), cost per resolved task and time per task
    (bootstrap intervals over tasks) run after run, one series per suite and configuration."""
    from ..history.trend import trend

    out = console()
    flt = _filter(suite, model, agent, config_label, since, obj)
    with open_index(obj["history_url"], obj["runs_root"]) as index:
        series = trend(index, flt, last=last)
        shown = index.shown
    if not series:
        out.print(f"no indexed runs match in {shown}")
        return
    for s in series:
        out.print(_trend_table(s))
    if json_out:
        from ..records import write_json

        write_json(json_out, [s.model_dump(mode="json") for s in series])
        out.print(f"wrote {json_out}")
    if html_out:
        from ..report.html import trend_view, write_trend_html

        what = ", ".join(sorted({f"{s.suite or '(no suite)'} · {s.config}" for s in series}))
        view = trend_view([s.model_dump(mode="json") for s in series], what=what, source=shown)
        out.print(f"wrote {write_trend_html(view, html_out)}")


def _interval(iv, fmt) -> str:
    if iv.unknown:
        return "unknown"
    if iv.value is None:
        return "-"
    text = fmt(iv.value)
    if iv.low is not None:
        text += f" [{fmt(iv.low)}, {fmt(iv.high) if iv.high is not None else 'inf'}]"
    elif iv.unbounded:
        text += " [unbounded]"
    return text


SPARK = "▁▂▃▄▅▆▇█"


def _trend_table(series):
    from rich.table import Table

    from ..report.format import pct, seconds, usd

    rates = [p.resolve_rate.value for p in series.points]
    spark = "".join(" " if v is None else SPARK[min(int(v * len(SPARK)), len(SPARK) - 1)] for v in rates)
    title = f"{series.suite or '(no suite)'} · {series.config}   resolve rate {spark}"
    table = Table(title=title, title_justify="left", box=None, pad_edge=False, header_style="bold")
    for name in (
        "started (UTC)",
        "run",
        "tasks",
        "resolved",
        "resolve rate [95% CI]",
        "accept rate [95% CI]",
        "cost/resolved [95% CI]",
        "time/task [95% CI]",
        "infra",
    ):
        table.add_column(name, justify="left" if name in ("started (UTC)", "run") else "right")
    for p in series.points:
        table.add_row(
            _when(p.started_at),
            p.run_id + ("" if p.finished else " (unfinished)"),
            str(p.tasks),
            f"{p.resolved}/{p.scored}",
            _interval(p.resolve_rate, pct),
            _interval(p.accept_rate, pct),
            _interval(p.cost_per_resolved, usd),
            _interval(p.time_per_task, seconds),
            str(p.infra_errors) if p.infra_errors else "",
        )
    return table
