"""`wholeloop run`: an agent on every task of a suite, resumable."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import click

from . import console, main


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
@click.option("--include-quarantined", is_flag=True, help="also run tasks `tasks check` quarantined")
@click.option("--training-cutoff", default=None,
              help="the model's training cutoff (YYYY-MM or a date) for contamination dating, instead of the table's")
def run(suite, agent_name, model, agent_config, base_url, stream, temperature, max_tokens, out, workers, repeats,
        attempts, feedback, infra_retries, config_label, cpus, memory, pids, command_timeout, output_bytes,
        executor_name, ray_address, include_quarantined, training_cutoff):
    """Run an agent on every task in SUITE (spec files or folders of them)."""
    from ..agents import get_agent
    from ..records import slug
    from ..report.figures import compute_figures
    from ..report.terminal import print_figures
    from ..run import RunOptions, Runner
    from ..tasks import LimitsSpec, load_tasks
    from .progress import RunProgress

    out_console = console()
    tasks = load_tasks(list(suite))
    if not tasks:
        raise click.UsageError("no task specs (*.yaml) found in " + ", ".join(map(str, suite)))
    if training_cutoff:
        from ..report.dating import parse_cutoff

        parse_cutoff(training_cutoff)  # a bad value fails now, not in the report
    tasks, checks = _checked_tasks(tasks, suite, include_quarantined, out_console)
    agent_name = agent_name or ("default" if model or agent_config else "gold")
    model_options = {"base_url": base_url, "stream": stream} if model and not model.startswith("replay:") else {}
    agent = get_agent(agent_name, model=model, config_path=agent_config, model_options=model_options,
                      settings={"temperature": temperature, "max_tokens": max_tokens})
    limits = LimitsSpec(cpus=cpus, memory=memory, pids=pids, command_timeout_s=command_timeout, output_bytes=output_bytes)
    options = RunOptions(out=Path("."), workers=workers, repeats=repeats, attempts=attempts, feedback=feedback,
                         infra_retries=infra_retries, limits=limits, label=config_label, task_checks=checks,
                         training_cutoff=training_cutoff)
    label = options.label_for(agent)
    options.out = out or Path("runs") / f"{datetime.now():%Y%m%d-%H%M%S}-{slug(label)}"
    executor, where = None, f"{workers} worker(s)"
    if executor_name == "ray":
        from click.core import ParameterSource

        from ..run.executors.ray import RayExecutor

        # On a cluster the nodes' CPUs bound the units running; --workers, when given, caps them too.
        explicit = click.get_current_context().get_parameter_source("workers") is not ParameterSource.DEFAULT
        executor = RayExecutor(ray_address, max_in_flight=workers if explicit else None)
        where = f"Ray cluster {ray_address or 'auto'}"
    elif ray_address:
        raise click.UsageError("--ray-address needs --executor ray")
    out_console.print(f"[bold]wholeloop[/] {len(tasks)} tasks x {repeats} repeat(s), agent [cyan]{label}[/], "
                  f"{where} -> {options.out}")
    with RunProgress(out_console, len(tasks) * repeats) as progress:
        runner = Runner(tasks, agent, options, progress=progress.update, executor=executor)
        try:
            rows = runner.run()
        except KeyboardInterrupt:
            out_console.print(f"[yellow]interrupted[/]: finished attempts are saved; run the same command with "
                          f"--out {options.out} to resume")
            sys.exit(130)
    print_figures(compute_figures([options.out]), rows, out_console)  # what `wholeloop report` prints
    out_console.print(f"run folder: {options.out}   (wholeloop report {options.out}; wholeloop show {options.out} TASK)")


def _checked_tasks(tasks, suite, include_quarantined, out_console):
    """Say which tasks have no current `tasks check` verdict or are quarantined, and what to run;
    leave the quarantined out unless asked. Returns the tasks to run and each one's status."""
    from ..tasks.check import check_status

    statuses = {t.id: check_status(t) for t in tasks}
    by_status: dict[str, list[str]] = {}
    for task_id, (status, _) in statuses.items():
        by_status.setdefault(status, []).append(task_id)
    where = " ".join(str(s) for s in suite)
    for status in ("unchecked", "stale"):
        ids = by_status.get(status, [])
        if ids:
            shown = ", ".join(ids[:8]) + (f" and {len(ids) - 8} more" if len(ids) > 8 else "")
            out_console.print(f"[yellow]{len(ids)} task(s) {status}[/] ({shown}): their results are marked as such; "
                              f"check them first with [bold]wholeloop tasks check {where}[/]")
    quarantined = by_status.get("quarantined", [])
    if quarantined:
        action = "running them anyway (--include-quarantined)" if include_quarantined else "skipped"
        out_console.print(f"[yellow]{len(quarantined)} task(s) quarantined[/], {action}:")
        for task_id in quarantined[:10]:
            out_console.print(f"  {task_id}: {statuses[task_id][1][:200]}")
        if not include_quarantined:
            tasks = [t for t in tasks if statuses[t.id][0] != "quarantined"]
            if not tasks:
                raise click.UsageError("every task is quarantined; fix them (see `wholeloop tasks check`) or pass "
                                       "--include-quarantined")
    return tasks, {task_id: status for task_id, (status, _) in statuses.items()}
