"""Reading runs from disk: report, compare, show, export (no Docker)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import console, main

_SCORING_HELP = (
    "YAML mapping outcomes to costs (e.g. regression: 3; not_accepted: 2 for a resolved patch the acceptance "
    "policy does not accept); default: every failure costs 1"
)
POLICY_HELP = (
    "the acceptance policy: a YAML file (e.g. wholeloop.yaml or a suite config) whose `acceptance:` names the axes "
    "that refuse a resolved patch; default: docs/acceptance.md"
)
_METRIC_HELP = "what rates and comparisons count: resolved patches, or resolved and accepted ones (--policy)"


def with_sweeps(runs) -> tuple[Path, ...]:
    """Run folders, a sweep's folder (it holds sweep.json and no manifest) standing for its cells'."""
    out: list[Path] = []
    for path in runs:
        if (Path(path) / "sweep.json").is_file() and not (Path(path) / "manifest.json").exists():
            from ..sweep.decide import sweep_cells

            out += sweep_cells(path)[1]
        else:
            out.append(Path(path))
    return tuple(out)


def _rows(runs):
    from ..records import open_run

    rows = []
    for run_dir in runs:
        rows += open_run(run_dir).latest()
    return rows


def _trend(runs, out) -> dict | None:
    """The HTML report's "Over time" section: the history of the reported runs' suites and
    configurations, from the index they were written into (none when there is none)."""
    from ..history.db import HistoryError, HistoryIndex
    from ..history.live import default_url
    from ..history.trend import trend_of_runs
    from ..report.html import trend_view

    series, sources = [], set()
    for url in sorted({default_url(run_dir) for run_dir in runs}):
        try:
            with HistoryIndex.open(url, create=False) as index:
                series += trend_of_runs(index, list(runs))
                sources.add(index.shown)
        except FileNotFoundError:
            continue
        except HistoryError as exc:
            out.print(f'[yellow]warning[/]: no "Over time" section: {exc}', highlight=False)
    if not any(len(s.points) > 1 for s in series):
        return None  # one run is not a trend
    what = ", ".join(sorted({f"{s.suite or '(no suite)'} · {s.config}" for s in series}))
    return trend_view([s.model_dump(mode="json") for s in series], what=what, source=", ".join(sorted(sources)))


def _check_outputs(files=(), folders=()) -> None:
    """Every output path can be written, before any work (a wrong --html fails at once)."""
    from ..records import check_writable

    for path in files:
        if path is not None:
            check_writable(path, folder=False)
    for path in folders:
        if path is not None:
            check_writable(path, folder=True)


@main.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--tasks/--no-tasks", "per_task", default=True, help="show the per-task table")
@click.option("--scoring", type=click.Path(exists=True, dir_okay=False, path_type=Path), help=_SCORING_HELP)
@click.option("--compare/--no-compare", "with_compare", default=False, help="also the paired comparisons")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="write every figure as JSON")
@click.option(
    "--csv",
    "csv_out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="write one line per attempt as CSV (columns: docs/records.md)",
)
@click.option("--html", "html_out", type=click.Path(dir_okay=False, path_type=Path), help="write the HTML report")
@click.option(
    "--evidence",
    type=click.Path(file_okay=False, path_type=Path),
    help="folder for the evidence pack: figures.json, manifests, hardest failures, report.html",
)
@click.option(
    "--cutoff",
    "cutoffs",
    multiple=True,
    metavar="MODEL=DATE",
    help="a model's training cutoff (YYYY-MM or a date) for contamination dating; repeatable",
)
@click.option(
    "--cutoffs",
    "cutoff_table",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="a training-cutoff table (the format of harness/data/cutoffs.yaml) instead of the shipped one",
)
@click.option(
    "--strict", is_flag=True, help="count infra errors as failures in the rates (for CI) instead of leaving them out"
)
@click.option("--policy", type=click.Path(exists=True, dir_okay=False, path_type=Path), help=POLICY_HELP)
@click.option(
    "--metric", type=click.Choice(["resolve", "accept"]), default="resolve", show_default=True, help=_METRIC_HELP
)
def report(
    runs,
    per_task,
    scoring,
    with_compare,
    json_out,
    csv_out,
    html_out,
    evidence,
    cutoffs,
    cutoff_table,
    strict,
    policy,
    metric,
):
    """Report one or more run folders from disk only (no Docker): numbers with intervals, pass@k,
    recovery, failure analysis and the recipe behind them; with two configurations or more, the
    front. A sweep's folder stands for its cells' run folders. Tables fit the terminal (COLUMNS is
    honoured); what does not fit is named, and --json / --csv have everything."""
    from ..records import open_run, write_json
    from ..report.dating import parse_cutoff
    from ..report.errors import ReportInputError
    from ..report.figures import compute_figures
    from ..report.terminal import print_figures

    _check_outputs(files=(json_out, csv_out, html_out), folders=(evidence,))
    runs = with_sweeps(runs)
    for run_dir in runs:
        open_run(run_dir)  # a folder that is not a run (or has no row yet) says so before any work
    out = console()
    overrides = {}
    for item in cutoffs:
        model, sep, date = item.partition("=")
        if not sep or not model.strip():
            raise click.BadParameter(f"{item!r}: use MODEL=DATE, e.g. claude-sonnet-4-5=2025-07", param_hint="--cutoff")
        try:
            parse_cutoff(date)
        except ReportInputError as exc:
            raise click.BadParameter(f"{item!r}: {exc}", param_hint="--cutoff") from None
        overrides[model.strip()] = date.strip()
    figures = compute_figures(
        list(runs),
        scoring,
        cutoffs=overrides,
        cutoff_table=cutoff_table,
        strict=strict,
        policy=policy,
        metric=metric,
        # every pair is quadratic in configurations: only where they are shown (--compare, --json, --html)
        comparisons=bool(with_compare or json_out or html_out),
    )
    print_figures(figures, _rows(runs), out, per_task=per_task, comparisons=with_compare)
    if json_out:
        write_json(json_out, figures.model_dump(mode="json"))
        out.print(f"wrote {json_out}")
    if csv_out:
        from ..report.table import write_csv

        out.print(f"wrote {write_csv(list(runs), csv_out)}")
    if html_out:
        from ..report.html import write_html

        out.print(f"wrote {write_html(list(runs), html_out, figures=figures, trend=_trend(runs, out))}")
    if evidence:
        from ..report.evidence import write_evidence

        for line in write_evidence(figures, list(runs), evidence):
            out.print(line)


@main.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--scoring", type=click.Path(exists=True, dir_okay=False, path_type=Path), help=_SCORING_HELP)
@click.option(
    "--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="write the comparison as JSON"
)
@click.option(
    "--strict",
    is_flag=True,
    help="count infra errors, and tasks one side has not finished, as failures; without it, they are not enough "
    "evidence (exit 4), as changed specs always are",
)
@click.option("--policy", type=click.Path(exists=True, dir_okay=False, path_type=Path), help=POLICY_HELP)
@click.option(
    "--metric", type=click.Choice(["resolve", "accept"]), default="resolve", show_default=True, help=_METRIC_HELP
)
def compare(runs, scoring, json_out, strict, policy, metric):
    """Compare configurations paired on their shared tasks: wins/losses/ties, exact McNemar, a paired
    bootstrap interval for the difference in resolve rate; no ranking when the data cannot separate them.
    Exit 4 (not enough evidence) when a configuration has infra errors on tasks both ran, or has not
    finished a task the other ran (missing, or an abandoned try): the comparison names them and the
    `run --out` that redoes them (--strict counts them as failures); and when a task's spec (content
    hash) differs between them, --strict or not."""
    from ..records import write_json
    from ..report.compare import JSON_SCHEMA_VERSION
    from ..report.figures import compute_figures
    from ..report.terminal import acceptance_block, comparison_block, recipe_block, stats_table

    _check_outputs(files=(json_out,))
    out = console()
    figures = compute_figures(list(runs), scoring, recovery=False, strict=strict, policy=policy, metric=metric)
    if len(figures.configs) < 2:
        raise click.UsageError(
            f"compare needs at least two configurations; found {len(figures.configs)} in " + ", ".join(map(str, runs))
        )
    for run in figures.runs:
        out.print(recipe_block(run.recipe, run.run_dir, run.configs))
    out.print(stats_table(figures, out.width))
    out.print(acceptance_block(figures))
    for cmp in figures.comparisons:
        out.print(comparison_block(cmp, out.width))
    if json_out:
        write_json(
            json_out,
            {
                "schema_version": JSON_SCHEMA_VERSION,
                "comparisons": [c.model_dump(mode="json") for c in figures.comparisons],
                "configs": [c.model_dump(mode="json") for c in figures.configs],
                "scoring": figures.scoring.model_dump(mode="json"),
                "metric": figures.metric,
                "acceptance": [a.model_dump(mode="json") for a in figures.acceptance],
                "bootstrap": figures.bootstrap.model_dump(mode="json"),
                "recipes": [r.model_dump(mode="json") for r in figures.runs],
            },
        )
        out.print(f"wrote {json_out}")
    if any(c.infra_tasks or c.unfinished or c.changed for c in figures.comparisons):
        from .exit_codes import UNDECIDED

        sys.exit(UNDECIDED)


def _indexes(runs, out, what: str = "causes"):
    """The history index of each run folder that has one, with the run's key in it."""
    if not runs:
        return []  # (the database layer is long to import)
    from ..history.db import HistoryError, HistoryIndex
    from ..history.live import default_url

    found = []
    for run_dir in runs:
        try:
            index = HistoryIndex.open(default_url(run_dir), create=False)
        except FileNotFoundError:
            continue
        except HistoryError as exc:
            out.print(f"[yellow]warning[/]: {what} not kept in the history: {exc}", highlight=False)
            continue
        key = index.run_key(run_dir)
        if key is None:
            index.close()
            continue
        found.append((Path(run_dir), index, key))
    return found


@main.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--cause", "causes", multiple=True, help="only this cause (repeatable; docs/failures.md lists them)")
@click.option("--task", "tasks", multiple=True, help="only this task (repeatable)")
@click.option("--config", "configs", multiple=True, help="only this configuration (repeatable)")
@click.option(
    "--json", "as_json", is_flag=True, help="the table and every failed attempt's causes with evidence, as JSON"
)
def failures(runs, causes, tasks, configs, as_json):
    """Why attempts failed, across runs: causes x configurations with counts, shares and 95 %
    intervals, and the tasks behind each cell (docs/failures.md). Causes are computed from the run
    folders (run folders of any age) and kept in the history index beside them."""
    from ..history.causes import index_url, read_sqlite
    from ..records import open_run
    from ..report.cause_table import cause_block, cause_table
    from ..report.causes import RULES_VERSION
    from ..report.stats import load_configs
    from ..vocabulary import Cause

    unknown = [c for c in causes if c not in {x.value for x in Cause}]
    if unknown:
        raise click.BadParameter(
            f"{', '.join(unknown)}: not a cause (one of {', '.join(c.value for c in Cause)})", param_hint="--cause"
        )
    for run_dir in runs:
        open_run(run_dir)
    out = console()
    loaded = load_configs(list(runs))
    names = {c.name for c in loaded} | {c.label for c in loaded}
    missing = [c for c in configs if c not in names]
    if missing:
        raise click.BadParameter(f"{', '.join(missing)}: no such configuration in these runs", param_hint="--config")
    known = {}
    for run_dir in runs:  # a SQLite index answers without the database layer (it takes long to import)
        kept = read_sqlite(index_url(run_dir), run_dir, RULES_VERSION)
        if kept is not None:
            known[Path(run_dir)] = kept
    indexes = _indexes([r for r in runs if Path(r) not in known], out)
    try:
        for path, index, key in indexes:
            known[path] = index.stored_causes(key, RULES_VERSION)
        table, fresh = cause_table(
            loaded, known=known, causes=list(causes), tasks=list(tasks), only_configs=list(configs)
        )
        opened = {path for path, _, _ in indexes}
        indexes += _indexes([path for path, found in fresh.items() if found and path not in opened], out)
        for path, index, key in indexes:
            index.store_causes(key, fresh.get(path, {}), RULES_VERSION)
    finally:
        for _, index, _ in indexes:
            index.close()
    if as_json:
        click.echo(table.model_dump_json(indent=2))
        return
    out.print(cause_block(table, out.width))


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("task_id")
@click.option("--config", default=None, help="only this configuration")
@click.option("--repeat", type=int, default=None, help="only this repeat")
@click.option("--full", is_flag=True, help="whole outputs instead of their last lines")
@click.option("--json", "as_json", is_flag=True, help="the attempt(s) as JSON on stdout (schema: docs/records.md)")
@click.option("--policy", type=click.Path(exists=True, dir_okay=False, path_type=Path), help=POLICY_HELP)
def show(run_dir, task_id, config, repeat, full, as_json, policy):
    """An attempt for a reviewer: the problem, the outcome (and, when resolved, whether the acceptance
    policy accepts it and why not) and each failing test with its message first; then each step
    (what the agent ran and saw), the patch, and the tests it made pass."""
    from ..report.acceptance import load_policy

    rules = load_policy(policy)
    if as_json:
        import json

        from ..report.show import show_json

        found = show_json(run_dir, task_id, config=config, repeat=repeat, policy=rules)
        click.echo(json.dumps(_one_or_many(found), indent=2))
        return
    from ..report.show import show as render

    render(run_dir, task_id, config=config, repeat=repeat, full=full, console=console(), policy=rules)


def _one_or_many(found: list[dict]) -> dict:
    """One (configuration, repeat) as an object; several as {"units": [...]}."""
    return found[0] if len(found) == 1 else {"units": found}


@main.group()
def export():
    """Hand a run to other tools: Inspect AI eval logs, ATIF trajectories, SWE-bench predictions."""


@export.command("inspect")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="the eval log to write (.eval or .json; default RUN_DIR/inspect/<run>.eval)",
)
def export_inspect(run_dir, out):
    """Write an Inspect AI eval log of the run (`inspect view` shows it; read_eval_log reads it):
    one sample per task, repeats as epochs, every attempt's messages and tool calls in order, the
    score and the token usage. Needs the inspect extra: pip install 'wholeloop[inspect]'."""
    from ..report.inspect_export import export_inspect as write

    target = out or Path(run_dir) / "inspect" / f"{Path(run_dir).name}.eval"
    _check_outputs(files=(target,))
    click.echo(f"wrote {write(run_dir, target)}")


@export.command("atif")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="folder for the trajectories (default RUN_DIR/atif)",
)
def export_atif(run_dir, out):
    """Write each attempt's trajectory in ATIF, Harbor's trajectory format (one JSON file per
    attempt: steps, tool calls, observations, tokens and cost, the patch), each validated against
    Harbor's own model (its pinned wheel, downloaded once into the cache; docs/records.md, "ATIF")."""
    from ..report.atif_export import export_atif as write

    target = out or Path(run_dir) / "atif"
    _check_outputs(folders=(target,))
    written = write(run_dir, target)
    click.echo(f"wrote {len(written)} trajectories to {target} (validated against Harbor's ATIF model)")


@main.group("import")
def import_():
    """Bring trajectories of agents run elsewhere into a run folder: ATIF."""


@import_.command("atif")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="the run folder to write")
def import_atif(files, out):
    """Make a run folder of ATIF trajectories (one attempt each, each checked against Harbor's own
    model first), so `show` and `report` read them. Their rows are `ungraded` (in no
    rate); a patch a trajectory carries is kept as the attempt's patch.diff, not graded."""
    from ..report.atif_import import import_atif as read

    _check_outputs(folders=(out,))
    rows = read(list(files), out)
    click.echo(f"imported {len(rows)} trajectories into {out} (outcome ungraded: in no rate)")


@export.command("predictions")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="predictions JSONL (default RUN_DIR/predictions.jsonl)")
@click.option("--model-name", help="model_name_or_path to write (default: the run's config label)")
@click.option("--repeat", default=0, show_default=True, help="which repeat to export")
@click.option("--config", "config_label", default=None, help="which configuration, when the run has several")
def export_predictions(run_dir, out, model_name, repeat, config_label):
    """Write SWE-bench predictions (instance_id, model_name_or_path, model_patch) for a run, and
    the acceptance axes of those attempts beside them in <predictions>.acceptance.jsonl (also
    `wholeloop export-predictions`, its older name)."""
    from ..authoring.swebench import export_predictions as export_

    if out is not None:
        _check_outputs(files=(out,))
    click.echo(f"wrote {export_(run_dir, out, model_name=model_name, repeat=repeat, config=config_label)}")


main.add_command(export_predictions, "export-predictions")  # the same command under the name it had first


@main.command("review")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("task_ids", nargs=-1)
@click.option("--reviewer", default=None, help="your name, recorded with each verdict (default: the login name)")
@click.option("--policy", type=click.Path(exists=True, dir_okay=False, path_type=Path), help=POLICY_HELP)
@click.option(
    "--review-model",
    "review_model",
    metavar="MODEL",
    help="instead of you, this model reviews each resolved attempt it has not reviewed (sends the problem "
    "and the patch; kept apart in RUN/model_reviews.jsonl, never counted as acceptance unless a --policy "
    "names the model: model_review: MODEL)",
)
@click.option("--base-url", default=None, help="--review-model: the model's endpoint (default: its provider's)")
def review_cmd(run_dir, task_ids, reviewer, policy, review_model, base_url):
    """Record human verdicts: for each resolved attempt you have not reviewed, show it (the problem,
    outcome and acceptance, the steps, the patch, the agent's final message) and read accept /
    reject / unsure and a reason, kept in RUN/reviews.jsonl (docs/records.md). With --review-model,
    a model reviews them against a rubric instead (docs/acceptance.md, "Model review")."""
    import getpass

    from ..report.acceptance import load_policy
    from ..report.show import review

    if review_model:
        from ..model_review import model_review

        out = console()
        done = model_review(
            run_dir, list(task_ids), review_model, base_url=base_url, say=lambda t: out.print(t, highlight=False)
        )
        click.echo(f"{done} model review(s) recorded in {run_dir / 'model_reviews.jsonl'}")
        return

    name = reviewer or getpass.getuser()
    try:
        done = review(
            run_dir,
            list(task_ids),
            name,
            lambda text: click.prompt(text, default="", show_default=False),
            console=console(),
            policy=load_policy(policy),
        )
    finally:
        _tell_history_reviews(run_dir, console())
    click.echo(f"{done} verdict(s) recorded in {run_dir / 'reviews.jsonl'}")


def _tell_history_reviews(run_dir: Path, out) -> None:
    """The history index of the run (when it has one) told the verdicts that count now; a database
    that is down only warns (the review file has them: `history --add RUN` tells it later)."""
    if not (run_dir / "reviews.jsonl").exists():
        return
    from ..history.db import HistoryError, reviews_json
    from ..records import RunFolder

    for _, index, key in _indexes([run_dir], out, "human verdicts"):
        try:
            folder = RunFolder(run_dir)
            index.store_reviews(key, reviews_json(folder, folder.latest()))
        except HistoryError as exc:
            out.print(f"[yellow]warning[/]: human verdicts not kept in the history: {exc}", highlight=False)
        finally:
            index.close()


from .harbor import export_harbor  # noqa: E402  (Harbor's commands live in their own module)

export.add_command(export_harbor)
