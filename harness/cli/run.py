"""`wholeloop run`: an agent on every task of a suite, resumable."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from click.core import ParameterSource

from ..vocabulary import Outcome
from . import console, main


@main.command()
@click.argument("suite", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--agent",
    "agent_name",
    default=None,
    help="gold | noop | default (the tool-calling agent; implied by --model) | external:NAME (a shipped "
    "agent CLI: mini-swe-agent, claude-code, codex, aider; see docs/agents.md)",
)
@click.option(
    "--model",
    default=None,
    help="anthropic/<id>, openai/<id>, litellm/<provider>/<id>, replay:<recordings or run folder>",
)
@click.option(
    "--agent-config",
    type=click.Path(exists=True, dir_okay=False),
    help="agent config YAML: the tool agent's tools, prompts and limits, or an external CLI (kind: external)",
)
@click.option(
    "--base-url", default=None, help="model API base URL (default: what the SDK reads, e.g. ANTHROPIC_BASE_URL)"
)
@click.option("--stream/--no-stream", default=False, help="use the provider's streaming API")
@click.option("--temperature", type=float, default=None)
@click.option("--max-tokens", type=int, default=None, help="output tokens per model call")
@click.option("--out", type=click.Path(path_type=Path), help="run folder (run again with the same --out to resume)")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 256), help="units run at once")
@click.option("--repeats", default=1, show_default=True, type=click.IntRange(1, 1000), help="runs of each task")
@click.option(
    "--attempts",
    default=1,
    show_default=True,
    type=click.IntRange(1, 20),
    help="tries per task and repeat; a later try continues the conversation after feedback",
)
@click.option(
    "--feedback",
    type=click.Choice(["none", "visible", "hidden"]),
    default="none",
    show_default=True,
    help="what the agent hears after a rejected attempt",
)
@click.option(
    "--infra-retries",
    default=2,
    show_default=True,
    type=click.IntRange(0, 10),
    help="extra tries of a unit that failed for the machine's reasons",
)
@click.option("--config", "config_label", default="", help="label for this configuration in reports")
@click.option("--cpus", type=float, help="CPU limit per container (overrides tasks)")
@click.option("--memory", help="memory limit per container, e.g. 2g (overrides tasks)")
@click.option("--pids", type=int, help="process limit per container (overrides tasks)")
@click.option(
    "--disk", help="bytes a container may write in all, e.g. 50m, 4g; 0 for no limit (overrides tasks; default 2g)"
)
@click.option("--command-timeout", type=float, help="seconds one command may run (overrides tasks)")
@click.option("--output-bytes", type=int, help="bytes of output kept per command stream (overrides tasks)")
@click.option(
    "--executor",
    "executor_name",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="where units run: threads on this machine, or Ray tasks on a cluster (each node with Docker)",
)
@click.option(
    "--ray-address",
    default=None,
    help="with --executor ray: the cluster's HEAD:PORT (default: RAY_ADDRESS or the one started here)",
)
@click.option(
    "--redo",
    "redo",
    multiple=True,
    metavar="TASK",
    help="do these tasks again although they are finished (repeatable, or comma-separated)",
)
@click.option(
    "--dry-run", is_flag=True, help="check everything, print the plan with a time and cost estimate, run nothing"
)
@click.option(
    "--allow-unknown-model",
    is_flag=True,
    help="run a model the price map does not know (too new for it); its cost is reported as unknown",
)
@click.option(
    "--allow-infra-errors", is_flag=True, help="exit 0 even when units ended in infrastructure errors (default: exit 3)"
)
@click.option("--include-quarantined", is_flag=True, help="also run tasks `tasks check` quarantined")
@click.option(
    "--statement-quality",
    "statement_quality",
    multiple=True,
    metavar="CLASS",
    help="only tasks whose statement is of these classes (repeatable, or comma-separated): issue, "
    "commit_message, thin, leaks_fix, unclassified (see docs/tasks.md)",
)
@click.option(
    "--training-cutoff",
    default=None,
    help="the model's training cutoff (YYYY-MM or a date) for contamination dating, instead of the table's",
)
@click.option(
    "--history-url",
    "history_url",
    default=None,
    help="index the rows into this run history as they are written (default: $WHOLELOOP_HISTORY_URL, "
    "else history.sqlite beside the run folder); prefer the variable for a URL with a password",
)
@click.option(
    "--history/--no-history",
    "use_history",
    default=True,
    show_default=True,
    help="index this run in the run history (never fails the run: a history that is down only warns)",
)
@click.option("--strict", is_flag=True, help="the figures printed at the end count infra errors as failures (for CI)")
def run(
    suite,
    agent_name,
    model,
    agent_config,
    base_url,
    stream,
    temperature,
    max_tokens,
    out,
    workers,
    repeats,
    attempts,
    feedback,
    infra_retries,
    config_label,
    cpus,
    memory,
    pids,
    disk,
    command_timeout,
    output_bytes,
    executor_name,
    ray_address,
    redo,
    dry_run,
    allow_unknown_model,
    allow_infra_errors,
    include_quarantined,
    statement_quality,
    training_cutoff,
    history_url,
    use_history,
    strict,
):
    """Run an agent on every task in SUITE (spec files or folders of them).

    Before any container starts, a preflight checks the model's credentials and price, every task's
    repository and commit, and the run folder. Running the same command with the same --out
    resumes: finished units are kept, units that ended in an infrastructure error are tried again.
    Tasks `wholeloop tasks check` quarantined are skipped (--include-quarantined runs them); the
    unchecked ones are named at the start and marked in the results.
    Exit 1 when a control failed (gold did not resolve every task, noop resolved one; before 3),
    exit 3 when units ended in infrastructure errors (see `wholeloop --help` for every code)."""
    from ..launch import RunProblem, prepare
    from ..run import EngineDown
    from ..run.spec import ExecutorSpec, HistorySpec, RunSpec, SettingsSpec, SuiteSpec, agent_spec
    from ..tasks import LimitsSpec
    from . import InputProblem
    from .exit_codes import INFRA, INTERRUPTED, NEGATIVE, run_exit
    from .progress import RunProgress

    # flags -> spec -> start: what the run is, in one typed recipe (RunSpec), as from Python
    explicit_workers = click.get_current_context().get_parameter_source("workers") is not ParameterSource.DEFAULT
    spec = RunSpec(
        suite=SuiteSpec(
            paths=[str(p) for p in suite],
            include_quarantined=include_quarantined,
            statement_quality=list(statement_quality),
        ),
        agent=agent_spec(
            agent_name,
            model=model,
            config_path=agent_config,
            base_url=base_url,
            stream=stream,
            temperature=temperature,
            max_tokens=max_tokens,
        ),
        settings=SettingsSpec(
            workers=workers,
            repeats=repeats,
            attempts=attempts,
            feedback=feedback,
            infra_retries=infra_retries,
            label=config_label,
            training_cutoff=training_cutoff,
            allow_unknown_model=allow_unknown_model,
        ),
        limits=LimitsSpec(
            cpus=cpus, memory=memory, pids=pids, disk=disk, command_timeout_s=command_timeout, output_bytes=output_bytes
        ),
        # On a cluster the nodes' CPUs bound the units running; --workers, when given, caps them too.
        executor=ExecutorSpec(
            kind=executor_name,
            address=ray_address,
            max_in_flight=workers if executor_name == "ray" and explicit_workers else None,
        ),
        history=HistorySpec(enabled=use_history, url=history_url),
        out=str(out) if out else None,
    )
    if ray_address and executor_name != "ray":
        raise click.UsageError("--ray-address needs --executor ray")
    out_console = console()
    try:
        launch = prepare(spec, redo=redo, say=lambda line: out_console.print(line))
    except RunProblem as exc:
        for what, fix in exc.problems:  # every problem is said, one line each; nothing was started
            click.secho(f"error: {what}" + (f"; {fix}" if fix else ""), fg="red", err=True)
        raise InputProblem(str(exc), exc.hint) from None
    options, tasks = launch.options, launch.tasks
    if dry_run:
        _print_plan(out_console, launch)
        return
    out_console.print(
        f"[bold]wholeloop[/] {len(tasks)} tasks x {repeats} repeat(s), agent [cyan]{launch.label}[/], "
        f"{launch.where} -> {options.out}"
    )
    with RunProgress(out_console, len(tasks) * repeats, workers=workers) as progress:
        progress.seed(launch.finished_rows())
        try:
            rows = launch.run(
                progress=progress.update,
                on_row=progress.row,
                warn=lambda text: out_console.print(f"[yellow]warning[/]: {text}", highlight=False),
            )
        except KeyboardInterrupt:
            out_console.print(
                f"[yellow]interrupted[/]: finished attempts are saved; run the same command with "
                f"--out {options.out} to resume"
            )
            sys.exit(INTERRUPTED)
        except EngineDown as exc:
            out_console.print(
                f"[bold red]engine down[/]: {exc} (--out {options.out}); `wholeloop doctor` checks "
                f"the engine: exit {INFRA}"
            )
            sys.exit(INFRA)
    from rich.markup import escape

    from ..report.figures import compute_figures
    from ..report.terminal import print_figures

    figures = compute_figures([options.out], strict=strict)
    print_figures(figures, rows, out_console)  # what `wholeloop report` prints
    out_console.print(
        f"run folder: {options.out}   (wholeloop report {options.out}; wholeloop show {options.out} TASK)"
    )
    infra = sum(r.final and r.outcome == Outcome.infra_error for r in rows)
    code = run_exit(controls_failed=bool(figures.controls), infra_errors=infra, allow_infra_errors=allow_infra_errors)
    for failure in figures.controls:  # a control that failed says more than infra errors do (1 before 3)
        out_console.print(f"[bold red]{escape(failure.message)}[/]: exit {NEGATIVE}", highlight=False)
    if infra and not allow_infra_errors:
        out_console.print(
            f"[bold red]{infra} unit(s) ended in infrastructure errors[/]: "
            + (f"exit {INFRA} " if code == INFRA else "")
            + "(fix the cause and run the same command again to redo them; --allow-infra-errors accepts them)"
        )
    sys.exit(code)


def _print_plan(out, launch) -> None:
    """What the run would do, with a time and cost estimate per unit from the one estimator
    (harness.sweep.estimate: this configuration's history, then its model's, then tokens x price)."""
    from ..report.format import seconds, usd
    from ..sweep.estimate import Config, Estimator, history_url

    tasks, agent, label, options, where, notes = (
        launch.tasks,
        launch.agent,
        launch.label,
        launch.options,
        launch.where,
        launch.notes,
    )
    units = launch.pending()
    history = launch.spec.history
    estimator = Estimator.from_history(history_url(options.out, history.url, history.enabled), [t.id for t in tasks])
    config = Config(label, agent.name, agent.model)
    est = estimator.units(config, [t.id for t, _ in units])
    out.print(
        f"[bold]dry run[/]: {len(tasks)} task(s) x {options.repeats} repeat(s) x up to {options.attempts} "
        f"attempt(s), agent [cyan]{label}[/], {where} -> {options.out}"
    )
    for note in notes:
        out.print(f"  ok  {note}")
    for task in tasks:
        e = estimator.unit(config, task.id)
        seen = f"~{seconds(e.seconds)} per trial" if e.seconds is not None else "time unknown"
        cost = f", ~{usd(e.cost_usd)} ({e.cost_from.value})" if e.cost_usd is not None else ", cost unknown"
        out.print(f"  {task.id:<24} {task.repo} @ {task.base_commit[:12]}   {seen}{cost}", soft_wrap=True)
    out.print(f"{len(units)} unit(s) to run, {len(tasks) * options.repeats - len(units)} already done")
    wall = est.wall_seconds(options.workers)
    when = (
        f"about {seconds(wall)} of wall time over {options.workers} worker(s)" if wall is not None else "time: unknown"
    )
    cost = f"about {usd(est.cost_usd)}" if est.cost_usd is not None else "cost: unknown"
    sources = f"time {est.says('time')}; cost {est.says('cost')}" if units else "nothing to run"
    out.print(f"estimate: {when}, {cost} ({sources})" + (f"; {estimator.note}" if estimator.note else ""))
    out.print("nothing was started (--dry-run)")


@main.group()
def agents():
    """Agent CLIs (external agents): check one before a run."""


@agents.command("verify")
@click.argument("agent_name", metavar="AGENT", required=False)
@click.option("--model", default=None, help="the model to pair it with (default: the config's own)")
@click.option(
    "--agent-config",
    type=click.Path(exists=True, dir_okay=False),
    help="an external agent config of your own (kind: external) instead of AGENT",
)
@click.option("--allow-unknown-model", is_flag=True, help="a model the price map does not know is not a problem")
@click.option(
    "--static",
    is_flag=True,
    help="only the checks `run` makes before any container starts: nothing installed, started or sent",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="keep the verification's task and run folder here (default: a temporary folder, kept only on failure)",
)
def agents_verify(agent_name, model, agent_config, allow_unknown_model, static, out):
    """Verify an external agent (external:NAME[@VERSION], or --agent-config FILE): install that
    version as `run` would, run it in a container on a small task against wholeloop's scripted
    provider, and check that its tool calls (or, aider, the edit blocks of its replies) are still
    read, the tokens charged are the provider's own count, and it asks for no model the config does
    not know. Exit 0 with a table
    when all hold, 1 naming each that does not, 2 when it cannot be verified as asked. --static: only
    the pre-run checks (the wire the model needs, the proxy's endpoint and token handed, the key,
    the price); nothing is installed, started or sent."""
    from . import InputProblem

    if not agent_name and not agent_config:
        raise click.UsageError("give AGENT (external:NAME[@VERSION]) or --agent-config FILE")
    if agent_name and agent_config:
        raise click.UsageError("give AGENT or --agent-config FILE, not both")
    if static:
        from ..launch import RunProblem, verify_agent
        from ..run.spec import agent_spec

        if agent_name and "@" in agent_name:
            raise click.UsageError("--static installs nothing, so it checks no version: drop @VERSION or --static")
        spec = agent_spec(agent_name, model=model, config_path=agent_config)
        try:
            facts = verify_agent(spec, allow_unknown_model=allow_unknown_model)
        except RunProblem as exc:
            for what, fix in exc.problems:
                click.secho(f"error: {what}" + (f"; {fix}" if fix else ""), fg="red", err=True)
            raise InputProblem(str(exc), exc.hint) from None
        width = max(len(what) for what, _ in facts)
        for what, value in facts:
            click.echo(f"{what:<{width}}  {value}")
        click.secho("ok: a run with this agent and model can start", fg="green")
        return
    from ..verify import verify_release
    from .exit_codes import NEGATIVE

    verdict = verify_release(
        agent_name,
        config_path=agent_config,
        model=model,
        allow_unknown_model=allow_unknown_model,
        out=out,
        log=lambda line: click.echo(line, err=True),
    )
    click.echo(verdict.agent)
    width = max(len(c.name) for c in verdict.checks)
    for check in verdict.checks:
        mark = click.style("ok  " if check.ok else "FAIL", fg="green" if check.ok else "red")
        click.echo(f"  {check.name:<{width}}  {mark}  {check.detail}")
    if verdict.ok:
        click.secho("ok: this CLI release works with wholeloop as configured", fg="green")
        return
    for check in verdict.checks:
        if not check.ok:
            click.secho(f"error: {check.name}: {check.detail}", fg="red", err=True)
    click.echo(f"the verification's run folder is kept: {verdict.out}", err=True)
    sys.exit(NEGATIVE)
