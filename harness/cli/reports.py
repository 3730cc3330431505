"""Reading runs from disk: report, compare, show, export (no Docker)."""

from __future__ import annotations

from pathlib import Path

import click

from . import console, main


_SCORING_HELP = "YAML mapping outcomes to costs (e.g. regression: 3); default: every failure costs 1"


def _rows(runs):
    from ..records import open_run

    rows = []
    for run_dir in runs:
        rows += open_run(run_dir).latest()
    return rows


@main.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--tasks/--no-tasks", "per_task", default=True, help="show the per-task table")
@click.option("--scoring", type=click.Path(exists=True, dir_okay=False, path_type=Path), help=_SCORING_HELP)
@click.option("--compare/--no-compare", "with_compare", default=False, help="also the paired comparisons")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="write every figure as JSON")
@click.option("--html", "html_out", type=click.Path(dir_okay=False, path_type=Path), help="write the HTML report")
@click.option("--evidence", type=click.Path(file_okay=False, path_type=Path),
              help="folder for the evidence pack: figures.json, manifests, hardest failures, report.html")
@click.option("--cutoff", "cutoffs", multiple=True, metavar="MODEL=DATE",
              help="a model's training cutoff (YYYY-MM or a date) for contamination dating; repeatable")
@click.option("--cutoffs", "cutoff_table", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="a training-cutoff table (the format of harness/data/cutoffs.yaml) instead of the shipped one")
def report(runs, per_task, scoring, with_compare, json_out, html_out, evidence, cutoffs, cutoff_table):
    """Report one or more run folders from disk only (no Docker): numbers with intervals, pass@k,
    recovery, failure analysis and the recipe behind them."""
    from ..records import write_json
    from ..report.evidence import write_evidence
    from ..report.figures import compute_figures
    from ..report.terminal import print_figures

    from ..report.dating import parse_cutoff

    out = console()
    overrides = {}
    for item in cutoffs:
        model, sep, date = item.partition("=")
        if not sep or not model.strip():
            raise click.BadParameter(f"{item!r}: use MODEL=DATE, e.g. claude-sonnet-4-5=2025-07", param_hint="--cutoff")
        parse_cutoff(date)
        overrides[model.strip()] = date.strip()
    figures = compute_figures(list(runs), scoring, cutoffs=overrides, cutoff_table=cutoff_table)
    print_figures(figures, _rows(runs), out, per_task=per_task, comparisons=with_compare)
    if json_out:
        write_json(json_out, figures.model_dump(mode="json"))
        out.print(f"wrote {json_out}")
    if html_out:
        from ..report.html import write_html

        out.print(f"wrote {write_html(list(runs), html_out, figures=figures)}")
    if evidence:
        for line in write_evidence(figures, list(runs), evidence):
            out.print(line)


@main.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--scoring", type=click.Path(exists=True, dir_okay=False, path_type=Path), help=_SCORING_HELP)
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="write the comparison as JSON")
def compare(runs, scoring, json_out):
    """Compare configurations paired on their shared tasks: wins/losses/ties, exact McNemar, a paired
    bootstrap interval for the difference in resolve rate; no ranking when the data cannot separate them."""
    from ..records import write_json
    from ..report.figures import compute_figures
    from ..report.terminal import comparison_block, recipe_block, stats_table

    out = console()
    figures = compute_figures(list(runs), scoring, recovery=False)
    if len(figures.configs) < 2:
        raise click.UsageError(f"compare needs at least two configurations; found {len(figures.configs)} in "
                               + ", ".join(map(str, runs)))
    for run in figures.runs:
        out.print(recipe_block(run.recipe, run.run_dir, run.configs))
    out.print(stats_table(figures))
    for cmp in figures.comparisons:
        out.print(comparison_block(cmp))
    if json_out:
        write_json(json_out, {"comparisons": [c.model_dump(mode="json") for c in figures.comparisons],
                              "configs": [c.model_dump(mode="json") for c in figures.configs],
                              "scoring": figures.scoring.model_dump(mode="json"),
                              "bootstrap": figures.bootstrap.model_dump(mode="json"),
                              "recipes": [r.model_dump(mode="json") for r in figures.runs]})
        out.print(f"wrote {json_out}")


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("task_id")
@click.option("--config", default=None, help="only this configuration")
@click.option("--repeat", type=int, default=None, help="only this repeat")
@click.option("--full", is_flag=True, help="whole outputs instead of their last lines")
def show(run_dir, task_id, config, repeat, full):
    """Render an attempt's transcript: each step, what the agent ran and saw, the tests, the patch."""
    from ..report.show import show as render

    render(run_dir, task_id, config=config, repeat=repeat, full=full, console=console())


@main.command("export-predictions")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="predictions JSONL (default RUN_DIR/predictions.jsonl)")
@click.option("--model-name", help="model_name_or_path to write (default: the run's config label)")
@click.option("--repeat", default=0, show_default=True, help="which repeat to export")
@click.option("--config", "config_label", default=None, help="which configuration, when the run has several")
def export_predictions(run_dir, out, model_name, repeat, config_label):
    """Write SWE-bench predictions (instance_id, model_name_or_path, model_patch) for a run."""
    from ..tasks.swebench import export_predictions as export

    path = export(run_dir, out, model_name=model_name, repeat=repeat, config=config_label)
    click.echo(f"wrote {path}")
