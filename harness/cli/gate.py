"""`wholeloop gate BASELINE CANDIDATE`: fail a CI job when the candidate is worse than the baseline."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from . import console, main
from .exit_codes import NEGATIVE, OK, UNDECIDED, USAGE
from .history import URL_HELP
from .reports import POLICY_HELP

# The gate's verdicts on the one table of exit codes (harness/cli/exit_codes.py).
EXIT_NO_REGRESSION, EXIT_REGRESSION, EXIT_NOT_ENOUGH_EVIDENCE = OK, NEGATIVE, UNDECIDED

SIDE_HELP = """BASELINE and CANDIDATE are run folders or history queries:
latest (the newest finished run of the candidate's suite and configuration), latest:SUITE,
latest:SUITE:CONFIG, run:RUN_ID[:CONFIG] (a pinned run; RUN_ID is its folder name or a uid prefix)."""


def _folder_side(path: Path, name: str):
    from ..records import open_run
    from ..report.gate import SideRows

    folder = open_run(path)
    rows = folder.latest()
    configs = sorted({r.config for r in rows})
    if len(configs) > 1:
        raise click.UsageError(
            f"{name} {path} holds several configurations ({', '.join(configs)}); the gate compares "
            "one on each side: index the run and name one as run:RUN_ID:CONFIG"
        )
    if not configs:
        raise click.UsageError(f"{name} {path} has no results yet")
    return SideRows(name=str(path), config=configs[0], rows=rows, run_dir=str(path))


def _suite_of(path: Path) -> str | None:
    from ..history.db import suite_of
    from ..records import RunFolder

    return suite_of(RunFolder(path).info())[0] or None


@main.command(epilog=SIDE_HELP)
@click.argument("baseline")
@click.argument("candidate")
@click.option(
    "--margin",
    default=0.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="how much worse is allowed: points of resolve rate, or percent more cost / time",
)
@click.option(
    "--alpha",
    default=0.05,
    show_default=True,
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    help="significance level of the one-sided test",
)
@click.option(
    "--metric",
    type=click.Choice(["resolve", "accept", "cost", "time"]),
    default="resolve",
    show_default=True,
    help="resolve rate, accept rate (resolved and accepted under --policy; docs/acceptance.md), cost per trial "
    "or time per trial, paired per task",
)
@click.option("--policy", type=click.Path(exists=True, dir_okay=False, path_type=Path), help=POLICY_HELP)
@click.option("--history-url", "history_url", default=None, help=URL_HELP)
@click.option(
    "--runs-root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("runs"),
    show_default=True,
    help="the runs folder whose history.sqlite answers the queries (without --history-url)",
)
@click.option(
    "--json",
    "json_out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="write the decision as JSON (its schema_version says which fields it has)",
)
@click.option(
    "--strict",
    is_flag=True,
    help="count infra errors (and, for --metric resolve, the baseline's tasks the candidate has not finished) as "
    "failures; without it, they are not enough evidence (exit 4), as changed specs always are",
)
def gate(baseline, candidate, margin, alpha, metric, policy, history_url, runs_root, json_out, strict):
    """Is CANDIDATE worse than BASELINE? Paired on the tasks both ran with the same task content
    hash; a one-sided paired sign-flip test. Exit 1: worse by more than --margin at --alpha;
    4: not enough evidence to decide (says how many tasks or repeats would be; or names the shared
    tasks with infra errors, or the baseline's tasks the candidate has not finished, and the
    `run --out` that redoes them; or the tasks whose spec changed); 0: no regression."""
    from ..history.query import QueryError, parse, resolve
    from ..report.gate import SideRows
    from ..report.gate import gate as decide

    queries = {"baseline": parse(baseline), "candidate": parse(candidate)}
    sides: dict[str, SideRows] = {}
    for name, spec in (("candidate", candidate), ("baseline", baseline)):
        if queries[name] is None:
            path = Path(spec)
            if not path.is_dir():
                raise click.UsageError(
                    f"{name} {spec!r} is neither a run folder nor a history query "
                    "(latest, latest:SUITE[:CONFIG], run:RUN_ID[:CONFIG])"
                )
            sides[name] = _folder_side(path, name)
    index = None
    cand_suite = _suite_of(Path(sides["candidate"].run_dir)) if "candidate" in sides else None
    cand_uid = None
    try:
        for name in ("candidate", "baseline"):
            query = queries[name]
            if query is None:
                continue
            if name == "candidate" and query.kind == "latest":
                raise click.UsageError("the candidate cannot be `latest`: give its run folder or run:RUN_ID")
            if index is None:
                from .history import open_index

                index = open_index(history_url, runs_root)
            cand = sides.get("candidate")
            try:
                run, rows = resolve(
                    index,
                    query,
                    suite=cand_suite,
                    config=cand.config if cand else None,
                    exclude_paths=[cand.run_dir] if cand else [],
                    exclude_uid=cand_uid,
                )
            except QueryError as exc:
                click.secho(f"error: {exc}", fg="red", err=True)
                sys.exit(USAGE)
            if name == "candidate":
                cand_suite, cand_uid = run.suite or None, run.uid
            sides[name] = SideRows(
                name=f"{query} = {run.run_id} ({run.path})", config=run.config, rows=rows, run_dir=run.path
            )
    finally:
        if index is not None:
            index.close()
    from ..report.acceptance import load_policy

    result = decide(
        sides["baseline"],
        sides["candidate"],
        metric=metric,
        margin=margin / 100,
        alpha=alpha,
        strict=strict,
        policy=load_policy(policy),
    )
    print_gate(result, console())
    if json_out:
        from ..records import write_json

        write_json(json_out, result.model_dump(mode="json"))
    sys.exit(
        {"regression": EXIT_REGRESSION, "not_enough_evidence": EXIT_NOT_ENOUGH_EVIDENCE}.get(
            result.verdict, EXIT_NO_REGRESSION
        )
    )


def print_gate(r, out) -> None:
    from ..report.format import pct, seconds, usd

    def say(text: str) -> None:  # whole lines, never folded: CI logs are searched for them
        out.print(text, soft_wrap=True, highlight=False)

    unit = {"resolve": "points", "accept": "points", "cost": "% more cost per trial", "time": "% more time per trial"}[
        r.metric
    ]
    margin = f"{100 * r.margin:g} {unit}"
    say(f"[bold]gate[/]: {r.metric} · margin {margin} · alpha {r.alpha:g} (one-sided)")
    for label, side in (("baseline ", r.baseline), ("candidate", r.candidate)):
        share = "n/a" if side.infra_share is None else f"{100 * side.infra_share:.1f}%"
        say(
            f"  {label} {side.name} [dim](config {side.config})[/]: {side.tasks} tasks, {side.trials} trials, "
            f"{side.resolved}/{side.scored} resolved; infrastructure errors {side.infra_errors}/{side.trials} "
            f"({share})"
        )
        if side.tampering:
            say(
                f"    suspected tampering on {len(side.tampering)} task(s): {', '.join(side.tampering[:8])}"
                + (", ..." if len(side.tampering) > 8 else "")
                + " (see `wholeloop show`)"
            )
    notes = []
    for what, tasks in (
        ("changed content hash, not compared", r.changed),
        ("only in the baseline", r.only_baseline),
        ("not finished by the candidate", r.unfinished),
        ("only in the candidate", r.only_candidate),
        ("infra errors only on one side", r.unscored),
        ("unknown cost", r.cost_unknown),
    ):
        if tasks:
            notes.append(f"{len(tasks)} {what}" + (f" ({', '.join(tasks[:8])}{', ...' if len(tasks) > 8 else ''})"))
    say(f"  paired on {len(r.shared)} task(s) with the same content hash" + (f"; {'; '.join(notes)}" if notes else ""))
    if r.strict and (r.baseline.infra_errors or r.candidate.infra_errors):
        say("  infra errors counted as failures (--strict)")
    if r.strict and r.unfinished and r.metric in ("resolve", "accept"):
        say("  tasks the candidate has not finished counted as failures (--strict)")
    if r.infra_shares:
        say(f"  [yellow]caution: {r.infra_shares}[/]")
    if r.baseline_value is not None:
        fmt = {"resolve": pct, "accept": pct, "cost": usd, "time": seconds}[r.metric]
        diff = (
            f"{100 * r.difference:+.1f} points"
            if r.metric in ("resolve", "accept")
            else "n/a"
            if r.difference is None
            else f"{100 * r.difference:+.1f}%"
        )
        say(
            f"  {r.metric}: baseline {fmt(r.baseline_value)} -> candidate {fmt(r.candidate_value)} ({diff}); "
            f"{r.test}: p = {r.p_value:.4g}"
        )
    for title, flips, colour in (("lost", r.lost, "red"), ("won", r.won, "green")):
        verb = "resolved less often by the candidate" if title == "lost" else "resolved more often by the candidate"
        say(f"  [{colour}]{title} {len(flips)}[/] ({verb})" + (":" if flips else ""))
        for f in flips:
            say(f"    {f.task_id}  baseline {f.baseline} -> candidate {f.candidate}")
            say(f"      baseline:  {f.baseline_transcript or '-'}")
            say(f"      candidate: {f.candidate_transcript or '-'}")
            if f.why is not None:
                from rich.markup import escape

                from ..report.divergence import describe

                causes, where = describe(f.why)
                say(f"      cause on the {f.why.failing}: [bold]{escape(causes)}[/]")
                say(f"      diverged at {escape(where)}")
    if r.verdict == "regression":
        say(f"[bold red]REGRESSION[/]: {r.reason} -> exit {EXIT_REGRESSION}")
    elif r.verdict == "not_enough_evidence":
        need = [f"at least {r.tasks_needed} shared tasks"] if r.tasks_needed else []
        if r.repeats_needed:
            need.append(f"{r.repeats_needed} repeats of each of the {len(r.shared)} tasks on each side")
        say(f"[bold yellow]NOT ENOUGH EVIDENCE[/]: {r.reason}.")
        for redo in r.redo:
            where = f"  (in {redo.cwd})" if redo.cwd and redo.cwd != os.getcwd() else ""
            what = redo.command or f"the command that wrote {redo.run_dir}, with --out {redo.run_dir}"
            say(f"  redo the {redo.side}'s {len(redo.tasks)} task(s): {what}{where}")
        if need:
            say(
                f"  needed for {100 * r.power:.0f}% power at alpha {r.alpha:g}: {' or '.join(need)}"
                + (f" ({r.repeats_note})" if r.repeats_note else "")
            )
        elif r.repeats_note:
            say(f"  {r.repeats_note}")
        say(f"  -> exit {EXIT_NOT_ENOUGH_EVIDENCE}")
    else:
        say(f"[bold green]NO REGRESSION[/]: {r.reason} -> exit {EXIT_NO_REGRESSION}")
