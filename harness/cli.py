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
@click.option("--agent", "agent_name", default=None, help="gold | noop | default (the tool-calling agent; the default when --model is given)")
@click.option("--model", default=None, help="anthropic/<id>, openai/<id>, litellm/<provider>/<id> or replay:<recording>")
@click.option("--agent-config", type=click.Path(exists=True, dir_okay=False), help="agent config YAML (tools, prompts, limits)")
@click.option("--base-url", default=None, help="model API base URL (default: what the SDK reads, e.g. ANTHROPIC_BASE_URL)")
@click.option("--stream/--no-stream", default=False, help="use the provider's streaming API")
@click.option("--temperature", type=float, default=None)
@click.option("--max-tokens", type=int, default=None, help="output tokens per model call")
@click.option("--out", type=click.Path(path_type=Path), help="run folder (re-use one to resume it)")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 256))
@click.option("--repeats", default=1, show_default=True, type=click.IntRange(1, 1000), help="runs of each task")
@click.option("--config", "config_label", default="", help="label for this configuration in reports")
@click.option("--cpus", type=float, help="CPU limit per container (overrides tasks)")
@click.option("--memory", help="memory limit per container, e.g. 2g (overrides tasks)")
@click.option("--pids", type=int, help="process limit per container (overrides tasks)")
@click.option("--command-timeout", type=float, help="seconds one command may run (overrides tasks)")
@click.option("--output-bytes", type=int, help="bytes of output kept per command stream (overrides tasks)")
def run(suite, agent_name, model, agent_config, base_url, stream, temperature, max_tokens, out, workers, repeats,
        config_label, cpus, memory, pids, command_timeout, output_bytes):
    """Run an agent on every task in SUITE (spec files or folders of them)."""
    from .agents import get_agent
    from .records import slug
    from .report.terminal import print_report
    from .runner import RunOptions, Runner
    from .tasks import LimitsSpec, load_tasks

    console = _console()
    tasks = load_tasks(list(suite))
    if not tasks:
        raise click.UsageError("no task specs (*.yaml) found in " + ", ".join(map(str, suite)))
    agent_name = agent_name or ("default" if model or agent_config else "gold")
    agent = get_agent(agent_name, model=model, config_path=agent_config,
                      model_options={"base_url": base_url, "stream": stream} if model and not model.startswith("replay:") else {},
                      settings={"temperature": temperature, "max_tokens": max_tokens})
    limits = LimitsSpec(cpus=cpus, memory=memory, pids=pids, command_timeout_s=command_timeout, output_bytes=output_bytes)
    options = RunOptions(out=Path("."), workers=workers, repeats=repeats, limits=limits, config=config_label)
    label = options.label(agent)
    options.out = out or Path("runs") / f"{datetime.now():%Y%m%d-%H%M%S}-{slug(label)}"
    console.print(f"[bold]wholeloop[/] {len(tasks)} tasks x {repeats} repeat(s), agent [cyan]{label}[/], "
                  f"{workers} worker(s) -> {options.out}")
    with _Progress(console, len(tasks) * repeats) as progress:
        runner = Runner(tasks, agent, options, progress=progress.update)
        try:
            rows = runner.run()
        except KeyboardInterrupt:
            console.print(f"[yellow]interrupted[/]: finished attempts are saved; run the same command with "
                          f"--out {options.out} to resume")
            sys.exit(130)
    print_report(rows, console)
    console.print(f"run folder: {options.out}   (wholeloop report {options.out})")


class _Progress:
    """A rich progress bar plus one line per task that is in flight."""

    def __init__(self, console, total: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=console, transient=False,
        )
        self.bar = self.progress.add_task("tasks", total=total)
        self.console = console
        self.active: dict[str, str] = {}

    def __enter__(self) -> _Progress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)

    def update(self, event: str, task_id: str, text: str) -> None:
        if event == "plan":
            done = int(text.split(", ")[1].split()[0]) if "already done" in text else 0
            self.progress.update(self.bar, completed=done)
            if done:
                self.console.print(f"resuming: {text}")
        elif event == "done":
            self.active.pop(task_id, None)
            self.progress.advance(self.bar)
            self.console.print(f"  {task_id}: {text}")
        elif event == "interrupt":
            self.console.print(f"[yellow]{text}[/]")
        elif task_id:
            self.active[task_id] = text
        current = "; ".join(f"{k}: {v}" for k, v in list(self.active.items())[:3])
        self.progress.update(self.bar, description=current[:80] or "tasks")


# ---------------------------------------------------------------------------- reports


@main.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--tasks/--no-tasks", "per_task", default=True, help="show the per-task table")
def report(runs, per_task):
    """Reprint the summary of one or more run folders, from disk only (no Docker)."""
    from .records import latest_rows, load_run
    from .report.terminal import print_report

    rows = []
    for run_dir in runs:
        _, found = load_run(run_dir)
        rows += latest_rows(found)
    print_report(rows, _console(), per_task=per_task)


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
