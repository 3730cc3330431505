"""The `wholeloop` command: parse arguments, call the library, print. Nothing else lives here.

Heavy modules (docker, git, rich, model SDKs) are imported inside the commands that need them,
so `wholeloop --help` stays fast and a run without a model never imports a model SDK.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import click

EXIT_USAGE = 2


def _console():
    """A rich console; when output is not a terminal (CI logs, pipes) tables get room to breathe."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=150)


class _Group(click.Group):
    """Turns our typed errors into a message and a hint instead of a traceback."""

    def invoke(self, ctx: click.Context):
        from sandbox.errors import SandboxError

        from .tasks import TaskSpecError

        try:
            return super().invoke(ctx)
        except (SandboxError, TaskSpecError, FileNotFoundError, ValueError) as exc:
            if isinstance(exc, click.ClickException):
                raise
            click.secho(f"error: {exc}", fg="red", err=True)
            hint = getattr(exc, "hint", "")
            if hint:
                click.echo(f"hint: {hint}", err=True)
            sys.exit(EXIT_USAGE)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="wholeloop")
def main() -> None:
    """Which coding agent actually works on your code: real repositories in Docker, patches
    graded by hidden tests in a fresh container, the whole loop measured."""


# ---------------------------------------------------------------------------- run


@main.command()
@click.argument("suite", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--agent", "agent_name", default=None,
              help="gold | noop | default (the tool-calling agent; implied by --model)")
@click.option("--model", default=None,
              help="anthropic/<id>, openai/<id>, litellm/<provider>/<id>, replay:<recordings or run folder>")
@click.option("--agent-config", type=click.Path(exists=True, dir_okay=False), help="agent config YAML (tools, prompts, limits)")
@click.option("--base-url", default=None, help="model API base URL (default: what the SDK reads, e.g. ANTHROPIC_BASE_URL)")
@click.option("--stream/--no-stream", default=False, help="use the provider's streaming API")
@click.option("--temperature", type=float, default=None)
@click.option("--max-tokens", type=int, default=None, help="output tokens per model call")
@click.option("--out", type=click.Path(path_type=Path), help="run folder (run again with the same --out to resume)")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 256), help="units run at once")
@click.option("--repeats", default=1, show_default=True, type=click.IntRange(1, 1000), help="runs of each task")
@click.option("--attempts", default=1, show_default=True, type=click.IntRange(1, 20),
              help="tries per task and repeat; a later try continues the conversation after feedback")
@click.option("--feedback", type=click.Choice(["none", "visible", "hidden"]), default="none", show_default=True,
              help="what the agent hears after a rejected attempt")
@click.option("--infra-retries", default=2, show_default=True, type=click.IntRange(0, 10),
              help="extra tries of a unit that failed for the machine's reasons")
@click.option("--config", "config_label", default="", help="label for this configuration in reports")
@click.option("--cpus", type=float, help="CPU limit per container (overrides tasks)")
@click.option("--memory", help="memory limit per container, e.g. 2g (overrides tasks)")
@click.option("--pids", type=int, help="process limit per container (overrides tasks)")
@click.option("--command-timeout", type=float, help="seconds one command may run (overrides tasks)")
@click.option("--output-bytes", type=int, help="bytes of output kept per command stream (overrides tasks)")
@click.option("--executor", "executor_name", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="where units run: threads on this machine, or Ray tasks on a cluster (each node with Docker)")
@click.option("--ray-address", default=None,
              help="with --executor ray: the cluster's HEAD:PORT (default: RAY_ADDRESS or the one started here)")
def run(suite, agent_name, model, agent_config, base_url, stream, temperature, max_tokens, out, workers, repeats,
        attempts, feedback, infra_retries, config_label, cpus, memory, pids, command_timeout, output_bytes,
        executor_name, ray_address):
    """Run an agent on every task in SUITE (spec files or folders of them)."""
    from .agents import get_agent
    from .progress import RunProgress
    from .records import slug
    from .report.terminal import print_report
    from .runner import RunOptions, Runner
    from .tasks import LimitsSpec, load_tasks

    console = _console()
    tasks = load_tasks(list(suite))
    if not tasks:
        raise click.UsageError("no task specs (*.yaml) found in " + ", ".join(map(str, suite)))
    agent_name = agent_name or ("default" if model or agent_config else "gold")
    model_options = {"base_url": base_url, "stream": stream} if model and not model.startswith("replay:") else {}
    agent = get_agent(agent_name, model=model, config_path=agent_config, model_options=model_options,
                      settings={"temperature": temperature, "max_tokens": max_tokens})
    limits = LimitsSpec(cpus=cpus, memory=memory, pids=pids, command_timeout_s=command_timeout, output_bytes=output_bytes)
    options = RunOptions(out=Path("."), workers=workers, repeats=repeats, attempts=attempts, feedback=feedback,
                         infra_retries=infra_retries, limits=limits, config=config_label)
    label = options.label(agent)
    options.out = out or Path("runs") / f"{datetime.now():%Y%m%d-%H%M%S}-{slug(label)}"
    executor, where = None, f"{workers} worker(s)"
    if executor_name == "ray":
        from click.core import ParameterSource

        from .executors_ray import RayExecutor

        # On a cluster the nodes' CPUs bound the units running; --workers, when given, caps them too.
        explicit = click.get_current_context().get_parameter_source("workers") is not ParameterSource.DEFAULT
        executor = RayExecutor(ray_address, max_in_flight=workers if explicit else None)
        where = f"Ray cluster {ray_address or 'auto'}"
    elif ray_address:
        raise click.UsageError("--ray-address needs --executor ray")
    console.print(f"[bold]wholeloop[/] {len(tasks)} tasks x {repeats} repeat(s), agent [cyan]{label}[/], "
                  f"{where} -> {options.out}")
    with RunProgress(console, len(tasks) * repeats) as progress:
        runner = Runner(tasks, agent, options, progress=progress.update, executor=executor)
        try:
            rows = runner.run()
        except KeyboardInterrupt:
            console.print(f"[yellow]interrupted[/]: finished attempts are saved; run the same command with "
                          f"--out {options.out} to resume")
            sys.exit(130)
    print_report(rows, console)
    console.print(f"run folder: {options.out}   (wholeloop report {options.out}; wholeloop show {options.out} TASK)")


# ---------------------------------------------------------------------------- reports


_SCORING_HELP = "YAML mapping outcomes to costs (e.g. regression: 3); default: every failure costs 1"


def _rows(runs):
    from .records import latest_rows, load_run

    rows = []
    for run_dir in runs:
        rows += latest_rows(load_run(run_dir)[1])
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
def report(runs, per_task, scoring, with_compare, json_out, html_out, evidence):
    """Report one or more run folders from disk only (no Docker): numbers with intervals, pass@k,
    recovery, failure analysis and the recipe behind them."""
    from .records import write_json
    from .report.figures import compute_figures, write_evidence
    from .report.terminal import print_figures

    console = _console()
    figures = compute_figures(list(runs), scoring)
    print_figures(figures, _rows(runs), console, per_task=per_task, comparisons=with_compare)
    if json_out:
        write_json(json_out, figures.model_dump(mode="json"))
        console.print(f"wrote {json_out}")
    if html_out:
        try:
            from .report.html import write_html
        except ImportError:
            console.print("[yellow]HTML not available[/]")
        else:
            console.print(f"wrote {write_html(list(runs), html_out, figures=figures)}")
    if evidence:
        for line in write_evidence(figures, list(runs), evidence):
            console.print(line)


@main.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--scoring", type=click.Path(exists=True, dir_okay=False, path_type=Path), help=_SCORING_HELP)
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="write the comparison as JSON")
def compare(runs, scoring, json_out):
    """Compare configurations paired on their shared tasks: wins/losses/ties, exact McNemar, a paired
    bootstrap interval for the difference in resolve rate; no ranking when the data cannot separate them."""
    from .records import write_json
    from .report.figures import compute_figures
    from .report.terminal import comparison_block, recipe_block, stats_table

    console = _console()
    figures = compute_figures(list(runs), scoring, recovery=False)
    if len(figures.configs) < 2:
        raise click.UsageError(f"compare needs at least two configurations; found {len(figures.configs)} in "
                               + ", ".join(map(str, runs)))
    for run in figures.runs:
        console.print(recipe_block(run.recipe, run.run_dir, run.configs))
    console.print(stats_table(figures))
    for cmp in figures.comparisons:
        console.print(comparison_block(cmp))
    if json_out:
        write_json(json_out, {"comparisons": [c.model_dump(mode="json") for c in figures.comparisons],
                              "configs": [c.model_dump(mode="json") for c in figures.configs],
                              "scoring": figures.scoring.model_dump(mode="json"),
                              "bootstrap": figures.bootstrap.model_dump(mode="json"),
                              "recipes": [r.model_dump(mode="json") for r in figures.runs]})
        console.print(f"wrote {json_out}")


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("task_id")
@click.option("--config", default=None, help="only this configuration")
@click.option("--repeat", type=int, default=None, help="only this repeat")
@click.option("--full", is_flag=True, help="whole outputs instead of their last lines")
def show(run_dir, task_id, config, repeat, full):
    """Render an attempt's transcript: each step, what the agent ran and saw, the tests, the patch."""
    from .report.show import show as render

    render(run_dir, task_id, config=config, repeat=repeat, full=full, console=_console())


@main.command("export-predictions")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="predictions JSONL (default RUN_DIR/predictions.jsonl)")
@click.option("--model-name", help="model_name_or_path to write (default: the run's config label)")
@click.option("--repeat", default=0, show_default=True, help="which repeat to export")
@click.option("--config", "config_label", default=None, help="which configuration, when the run has several")
def export_predictions(run_dir, out, model_name, repeat, config_label):
    """Write SWE-bench predictions (instance_id, model_name_or_path, model_patch) for a run."""
    from .swebench import export_predictions as export

    path = export(run_dir, out, model_name=model_name, repeat=repeat, config=config_label)
    click.echo(f"wrote {path}")


# ---------------------------------------------------------------------------- tasks


@main.group()
def tasks():
    """Check and import task specs."""


@tasks.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def tasks_validate(paths):
    """Check task specs without running them: schema, files, repository and commit."""
    from sandbox.errors import SandboxError
    from sandbox.snapshot import find_commit

    from .tasks import TaskSpecError, load_task, spec_files

    bad = 0
    for file in spec_files(list(paths)):
        try:
            task = load_task(file)
            task.gold(), task.test_patch()
            find_commit(task.repo_source(), task.base_commit)
        except (TaskSpecError, SandboxError) as exc:
            bad += 1
            click.secho(f"FAIL {exc}", fg="red")
            continue
        click.echo(f"ok   {file}  ({task.id})")
    if bad:
        click.secho(f"{bad} invalid spec(s)", fg="red")
        sys.exit(1)


@tasks.command("import-swebench")
@click.argument("jsonl", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(path_type=Path), help="folder for the task specs")
@click.option("--specs", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="per-repository specs: where each repository is, how to install and test it")
def tasks_import_swebench(jsonl, out, specs):
    """Import SWE-bench instances (JSONL) as wholeloop task specs."""
    from .swebench import import_swebench

    written = import_swebench(jsonl, out, specs_file=specs)
    click.echo(f"wrote {len(written)} task spec(s) to {out}")
    for message in getattr(written, "skipped", []):
        click.secho(f"skipped {message}", fg="yellow", err=True)
    if getattr(written, "skipped", []):
        sys.exit(1)


# ---------------------------------------------------------------------------- machine


@main.command()
def doctor():
    """Check that this machine can run tasks; each problem comes with the command that fixes it."""
    from .doctor import run_checks

    ok = run_checks()
    sys.exit(0 if ok else 1)


@main.group()
def images():
    """Base images and the image cache."""


@images.command("bootstrap")
@click.option("--tag", default=None, help="image tag (default wholeloop/base:bookworm)")
@click.option("--suite", default="bookworm", show_default=True)
@click.option("--mirror", default="http://deb.debian.org/debian", show_default=True)
@click.option("--force", is_flag=True, help="rebuild even when the image exists")
def images_bootstrap(tag, suite, mirror, force):
    """Build the base image with no registry (debootstrap + docker import; about a minute)."""
    from sandbox.images import DEFAULT_BASE, bootstrap_base_image, image_exists

    tag = tag or DEFAULT_BASE
    if image_exists(tag) and not force:
        click.echo(f"{tag} is already present (use --force to rebuild)")
        return
    click.echo(f"building {tag} from Debian {suite} with debootstrap ...")
    built = bootstrap_base_image(tag, suite=suite, mirror=mirror, log=click.echo)
    click.echo(f"built {tag} ({built.id[:19]})")


@images.command("list")
def images_list():
    """Images wholeloop made (base, env and task tiers)."""
    from sandbox.engine import client, translate

    with translate("listing images"):
        found = client().images.list(filters={"label": "wholeloop=1"})
    for img in sorted(found, key=lambda i: i.tags[0] if i.tags else ""):
        tier = img.labels.get("wholeloop.tier", "?")
        size = img.attrs.get("Size", 0) / 1e6
        click.echo(f"{tier:5} {', '.join(img.tags) or img.short_id:40} {size:8.0f} MB")


@main.command()
@click.option("--all", "all_owners", is_flag=True, help="also containers of runs that look alive")
@click.option("--images", "with_images", is_flag=True, help="also remove env and task images (they rebuild)")
def prune(all_owners, with_images):
    """Remove containers left behind by runs that are no longer alive (never a live run's)."""
    from sandbox.engine import client, prune_containers, translate

    report = prune_containers(all_owners=all_owners)
    click.echo(f"removed {len(report.removed)} container(s); kept {len(report.kept_live)} of live runs")
    if with_images:
        with translate("removing images"):
            for img in client().images.list(filters={"label": "wholeloop=1"}):
                if img.labels.get("wholeloop.tier") in ("env", "task"):
                    client().images.remove(img.id, force=True)
                    click.echo(f"removed image {', '.join(img.tags) or img.short_id}")


if __name__ == "__main__":
    main()
