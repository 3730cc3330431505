"""`wholeloop sweep`: one suite under a matrix of configurations, planned, budgeted, resumable."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import console, main


@main.command()
@click.argument("sweep_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--dry-run", is_flag=True, help="check every cell, print the plan with estimates, run nothing")
@click.option(
    "--max-cost", type=click.FloatRange(min=0, min_open=True), help="USD for the whole sweep (over budget.max_cost)"
)
@click.option(
    "--cell-max-cost", type=click.FloatRange(min=0, min_open=True), help="USD for each cell (over budget.per_cell)"
)
@click.option("--out", type=click.Path(path_type=Path), help="the sweep's folder (the same one again resumes)")
@click.option(
    "--executor",
    "executor_name",
    type=click.Choice(["local", "ray"]),
    default=None,
    help="where units run: threads here, or Ray tasks on a cluster (over the sweep file's base.executor)",
)
@click.option(
    "--ray-address",
    default=None,
    help="with --executor ray: the cluster's HEAD:PORT (default: RAY_ADDRESS or the one started here)",
)
def sweep(sweep_file, dry_run, max_cost, cell_max_cost, out, executor_name, ray_address):
    """Run the cells of SWEEP_FILE (a suite x a matrix over RunSpec fields; docs/sweeps.md).

    Each cell is a run with its own folder under the sweep's (cells/<cell>/) and the sweep's record
    is sweep.json. Units are interleaved round-robin across the cells through one pool of
    workers; running the same command again resumes. Under a budget (--max-cost, --cell-max-cost)
    new units stop when the spend plus the estimates of units in flight would pass it, and the
    overshoot is reported. Exit 3 when units ended in infrastructure errors, 130 when interrupted."""
    from ..run import EngineDown
    from ..sweep.launch import load_sweep, prepare_sweep, run_sweep
    from .exit_codes import INFRA, INTERRUPTED

    out_console = console()
    if ray_address and executor_name != "ray":
        raise click.UsageError("--ray-address needs --executor ray")
    spec = load_sweep(sweep_file, out=out, max_cost=max_cost, cell_max_cost=cell_max_cost)
    if executor_name is not None:
        spec.base["executor"] = {**spec.base.get("executor", {}), "kind": executor_name, "address": ray_address}
    planned, launches = prepare_sweep(spec, say=lambda line: out_console.print(line))
    print_plan(out_console, planned)
    if dry_run:
        out_console.print("nothing was started (--dry-run)")
        return
    try:
        result = run_sweep(
            planned,
            launches,
            say=lambda line: out_console.print(line, highlight=False),
            warn=lambda text: out_console.print(f"[yellow]warning[/]: {text}", highlight=False),
        )
    except KeyboardInterrupt:
        out_console.print("[yellow]interrupted[/]: finished units are kept; run the same command to resume")
        sys.exit(INTERRUPTED)
    except EngineDown as exc:
        out_console.print(f"[bold red]engine down[/]: {exc}; `wholeloop doctor` checks the engine: exit {INFRA}")
        sys.exit(INFRA)
    from ..report.format import usd

    out_console.print(f"sweep {result.status}: spent {usd(result.spent_usd)}", highlight=False)
    if result.overshoot_usd > 0:
        out_console.print(f"[yellow]overshoot[/]: {usd(result.overshoot_usd)} past the budget (units in flight)")
    for cell in result.cells:
        if cell.stopped:
            out_console.print(f"  {cell.plan.name}: stopped ({cell.stopped}), {usd(cell.spent)} spent")
    out_console.print(f"sweep folder: {planned.out} (sweep.json; each cell's run under cells/)")
    out_console.print(
        f"the front: wholeloop report {planned.out}; the decision record: wholeloop decide {planned.out}",
        highlight=False,
        soft_wrap=True,
    )
    infra = sum(r.final and r.outcome == "infra_error" for c in result.cells for r in c.run.folder.latest())
    sys.exit(INFRA if infra else 0)


def print_plan(out, planned) -> None:
    """The plan: each cell's units to do and its estimate, the exclusions, the totals."""
    from rich.markup import escape

    from ..report.format import seconds, usd

    sweep = planned.sweep
    out.print(
        f"[bold]sweep[/] {escape(sweep.name)}: {len(planned.cells)} cell(s), {planned.units} unit(s) to run, "
        f"{sweep.workers} worker(s) -> {planned.out}"
    )
    for cell in planned.cells:
        e = cell.estimate
        cost = usd(e.cost_usd) if e.cost_usd is not None else "cost unknown"
        time = seconds(e.seconds) if e.seconds is not None else "time unknown"
        out.print(
            f"  {escape(cell.name):<40} {len(cell.todo):>5} to run, {cell.done} done   {time}, {cost}   "
            f"[dim](time {e.says('time') or '-'}; cost {e.says('cost') or '-'})[/]",
            soft_wrap=True,
            highlight=False,
        )
    for name, cells in planned.excluded.items():
        out.print(f"  excluded by {escape(name)}: {escape(', '.join(cells))}", highlight=False)
    for override in sweep.overrides:
        hit = [c for c in planned.cells if override.name in c.cell.overrides]
        fields = ", ".join(override.set)
        counts = ", ".join(sorted({f"{c.total // max(1, c.cell.spec.settings.repeats)} task(s)" for c in hit}))
        out.print(
            f"  override {escape(override.name)} on {escape(', '.join(c.name for c in hit))}: {escape(fields)}"
            + (f" ({counts})" if "suite.paths" in override.set else ""),
            highlight=False,
            soft_wrap=True,
        )
    wall = planned.wall_seconds()
    total_cost = planned.cost_usd
    out.print(
        "total: "
        + (f"about {seconds(wall)} of wall time" if wall is not None else "time unknown")
        + ", "
        + (f"about {usd(total_cost)}" if total_cost is not None else "cost unknown")
        + (f"; {planned.estimator.note}" if planned.estimator.note else ""),
        highlight=False,
    )
    budget = planned.budget
    if budget.max_cost is not None or budget.per_cell is not None:
        parts = [f"sweep {usd(budget.max_cost)}" if budget.max_cost is not None else ""]
        parts.append(f"each cell {usd(budget.per_cell)}" if budget.per_cell is not None else "")
        out.print("budget: " + ", ".join(p for p in parts if p), highlight=False)


@main.command()
@click.argument("sweep_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="where to write (default: SWEEP_DIR)")
@click.option(
    "--scoring",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="a failure-cost file (outcome -> cost): shown per configuration, and the failure-cost rule's measure",
)
@click.option("--policy", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="an acceptance policy")
@click.option("--metric", type=click.Choice(["resolve", "accept"]), default="resolve", show_default=True)
@click.option(
    "--rule",
    type=click.Choice(["cheapest", "failure-cost"]),
    default="cheapest",
    show_default=True,
    help="cheapest: the cheapest configuration the data cannot separate from the best; failure-cost: the lowest "
    "expected failure cost (--scoring) among them",
)
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05, show_default=True)
@click.option("--question", help="the question the record answers (default: the sweep file's `question:`)")
def decide(sweep_dir, out, scoring, policy, metric, rule, alpha, question):
    """Write the decision record of a sweep: decision.html (one self-contained page) and decision.md.

    The question, the candidates and each one's recipe, the front (cost x rate, time x rate), the
    failure-cost weighting, what the data cannot separate from the best (Holm-corrected paired
    tests), the hardest failures with links to their transcripts, the split by the models' training
    cutoffs, and the recommendation rule applied (docs/sweeps.md). From disk only: no Docker."""
    from ..sweep.decide import write_decision

    out_console = console()
    html, md, decision = write_decision(
        sweep_dir, out, scoring=scoring, policy=policy, metric=metric, rule=rule, alpha=alpha, question=question
    )
    out_console.print(f"recommendation: {decision.recommended or 'none'}", highlight=False)
    out_console.print(f"  {decision.because}", highlight=False, soft_wrap=True)
    out_console.print(f"wrote {html}\nwrote {md}", highlight=False)
