"""`wholeloop tasks ...`: check and import task specs."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.markup import escape
from rich.text import Text

from . import main
from .exit_codes import NEGATIVE
from .mining import ProgressLine, print_candidates, print_mine_report


@main.group()
def tasks():
    """Check and import task specs."""


@tasks.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def tasks_validate(paths):
    """Check task specs without running them: schema, files, repository and commit."""
    from sandbox import find_commit
    from sandbox.errors import SandboxError

    from ..tasks import TaskSpecError, load_task, spec_files
    from . import InputProblem
    from .exit_codes import NEGATIVE

    files = spec_files(list(paths))
    missing = [str(p) for p in paths if not Path(p).exists()]
    if missing:
        raise InputProblem(f"no such file or folder: {', '.join(missing)}", "give task spec files or folders of them")
    if not files:
        raise InputProblem(
            f"no task specs (*.yaml, *.yml) found in {', '.join(map(str, paths))}: nothing was checked",
            "give task spec files or folders that hold them",
        )
    bad = 0
    for file in files:
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
        click.secho(f"{bad} of {len(files)} spec(s) invalid", fg="red")
        sys.exit(NEGATIVE)
    click.echo(f"{len(files)} spec(s) valid")


@tasks.command("import-swebench")
@click.argument("jsonl", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(path_type=Path), help="folder for the task specs")
@click.option(
    "--specs",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="per-repository specs: where each repository is, how to install and test it (docs/tasks.md)",
)
@click.option("--redact", is_flag=True, help="replace secrets found in statements and patches instead of refusing")
@click.option(
    "--secrets-baseline",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="detect-secrets baseline of known false positives",
)
def tasks_import_swebench(jsonl, out, specs, redact, secrets_baseline):
    """Import SWE-bench instances (JSONL) as wholeloop task specs (format: docs/tasks.md)."""
    from ..authoring.swebench import import_swebench

    written = import_swebench(jsonl, out, specs_file=specs, redact=redact, secrets_baseline=secrets_baseline)
    click.echo(f"wrote {len(written)} task spec(s) to {out}; check them with `wholeloop tasks check {out}`")
    for message in written.warnings:
        click.secho(f"warning: {message}", fg="yellow", err=True)
    for message in written.skipped:
        click.secho(f"skipped {message}", fg="yellow", err=True)
    if written.skipped:
        sys.exit(1)


# ----------------------------------------------------------------------------- mining and checking


def _mine_options(f):
    """The options `mine` and `tasks from-commit` share."""
    options = [
        click.option("--out", type=click.Path(path_type=Path), help="folder for the task specs (required)"),
        click.option(
            "--allow-config",
            is_flag=True,
            help="keep commits whose fix changes test-runner or packaging config (exempt for that task)",
        ),
        click.option(
            "--max-lines",
            default=800,
            show_default=True,
            type=click.IntRange(1),
            help="skip commits whose gold + test parts change more lines",
        ),
        click.option(
            "--issues",
            type=click.Path(path_type=Path),
            help="issue export (GitHub/GitLab JSON, or CSV with id,title,body) for problem statements",
        ),
        click.option(
            "--statement-model",
            default=None,
            help="let this model write the problem statements (marked as such in the spec; never the default)",
        ),
        click.option("--statement-base-url", default=None, help="base URL for --statement-model"),
        click.option(
            "--setup-model",
            default=None,
            help="when no environment can be inferred, let this model propose OUT/wholeloop.yaml, tried in a "
            "container until the tests run healthy (the setup agent; never the default)",
        ),
        click.option("--setup-base-url", default=None, help="base URL for --setup-model"),
        click.option(
            "--redact", is_flag=True, help="replace secrets found in statements and patches instead of refusing"
        ),
        click.option(
            "--secrets-baseline",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help="detect-secrets baseline: known false positives and its scan filters (default: wholeloop.yaml's "
            "secrets_baseline, else the repository's .secrets.baseline)",
        ),
        click.option(
            "--strict-secrets",
            is_flag=True,
            help="refuse on every secret-scan finding, entropy and keyword guesses included (default: only on "
            "credentials with a verifiable structure; the guesses are listed as warnings)",
        ),
        click.option(
            "--refresh-env",
            is_flag=True,
            help="re-apply wholeloop.yaml to the specs mined before (their content hashes change: gate then pairs "
            "nothing across the old and new suite)",
        ),
        click.option(
            "--env-file",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help="wholeloop.yaml to use (default: one in or beside the repository, or committed)",
        ),
        click.option(
            "--deps-as-of", default=None, help="resolve dependencies as of: commit (the default), latest, or a date"
        ),
        click.option(
            "--test-scope",
            type=click.Choice(["touched", "all"]),
            default=None,
            help="hidden tests: the touched test files (default) or the whole suite",
        ),
        click.option("--parser", default=None, help="test-result parser (default pytest)"),
        click.option(
            "--check/--no-check", default=True, show_default=True, help="run `tasks check --discover` on the new specs"
        ),
        click.option(
            "--repeats",
            default=3,
            show_default=True,
            type=click.IntRange(1, 20),
            help="base and gold runs per task in the check",
        ),
        click.option(
            "--workers", default=1, show_default=True, type=click.IntRange(1, 64), help="tasks checked at once"
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _run_mine(repo, commits, since, until, paths, max_candidates, only=(), listing=False, kind="all", **kw):
    from ..authoring.mine import MineOptions, list_candidates, mine
    from . import console

    out_console = console()
    line = ProgressLine(out_console)
    options = MineOptions(
        since=since,
        until=until,
        paths=list(paths or ()),
        max_candidates=max_candidates,
        max_lines=kw["max_lines"],
        allow_config=kw["allow_config"],
        parser=kw["parser"],
        test_scope=kw["test_scope"],
        issues=kw["issues"],
        statement_model=kw["statement_model"],
        statement_model_url=kw["statement_base_url"],
        setup_model=kw["setup_model"],
        setup_model_url=kw["setup_base_url"],
        redact=kw["redact"],
        secrets_baseline=kw["secrets_baseline"],
        env_file=kw["env_file"],
        dependencies_as_of=kw["deps_as_of"],
        check=kw["check"],
        repeats=kw["repeats"],
        workers=kw["workers"],
        progress=line.task,
        announce=lambda text: line.say(Text(text, style="bold")),
        only=[c for given in only for c in given.replace(",", " ").split()],
        strict_secrets=kw["strict_secrets"],
        refresh_env=kw["refresh_env"],
        kind=kind,
        detail=line.detail,
        egress_notice=lambda text: out_console.print(f"[yellow]{escape(text)}[/]"),
    )
    if listing:
        print_candidates(list_candidates(repo, options, commits=commits), out_console)
        return None
    if kw["out"] is None:
        raise click.UsageError("Missing option '--out' (the folder for the task specs).")
    with line:
        report = mine(repo, kw["out"], options, commits=commits, log=lambda text: line.say(Text(text, style="dim")))
    print_mine_report(report, out_console)
    if not report.counts().get("kept") and not (report.counts().get("unchecked") and not options.check):
        sys.exit(NEGATIVE)  # nothing kept (with --no-check: no spec to check either)
    return report


def _check_progress(out_console):
    last: dict[str, str] = {}

    def progress(task_id: str, text: str) -> None:
        if text.startswith(("base run 1/", "gold run 1/", "images", "infrastructure")) and last.get(task_id) != text:
            out_console.print(f"  [dim]{task_id}: {text}[/]")
        last[task_id] = text

    return progress


@main.command("mine")
@click.argument("repo")
@click.option("--since", default=None, help="committer date, inclusive (YYYY-MM-DD or ISO time)")
@click.option("--until", default=None, help="committer date, inclusive (YYYY-MM-DD or ISO time)")
@click.option("--paths", multiple=True, help="only commits touching these globs (repeatable)")
@click.option(
    "--max", "max_candidates", type=click.IntRange(1), default=None, help="at most N (most recent) candidates"
)
@click.option(
    "--list",
    "listing",
    is_flag=True,
    help="only list the candidates (kind, size, touched files) and the skip reasons: nothing is built or written",
)
@click.option(
    "--only",
    multiple=True,
    metavar="COMMIT[,COMMIT...]",
    help="mine only these commits of the range (repeatable; prefixes as --list shows them)",
)
@click.option(
    "--kind",
    type=click.Choice(["fix", "feature", "all"]),
    default="all",
    show_default=True,
    help="only fixes, or only features (the gold adds public API its tests use, or the subject says feature)",
)
@_mine_options
def mine_command(repo, since, until, paths, max_candidates, listing, only, kind, **kw):
    """Turn REPO's history into tasks: fix commits that change source and tests together, split into
    gold patch and hidden tests, environments inferred, then checked in the sandbox (docs/tasks.md).
    Exits 1 when it keeps no task."""
    _run_mine(repo, None, since, until, paths, max_candidates, only=only, listing=listing, kind=kind, **kw)


@tasks.command("from-commit")
@click.argument("repo")
@click.argument("commits", nargs=-1, required=True)
@_mine_options
def tasks_from_commit(repo, commits, **kw):
    """Tasks from the given fix COMMITS of REPO (the same rules as `wholeloop mine`)."""
    _run_mine(repo, list(commits), None, None, (), None, **kw)


@tasks.command("check")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--repeats",
    default=3,
    show_default=True,
    type=click.IntRange(1, 20),
    help="base runs (one container) and gold runs (a fresh container each)",
)
@click.option("--discover", is_flag=True, help="compute FAIL_TO_PASS / PASS_TO_PASS and write them into the specs")
@click.option("--force", is_flag=True, help="check again even tasks with a current verdict")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64), help="tasks checked at once")
@click.option(
    "--strict",
    is_flag=True,
    help="exit 1 on any quarantined task too (a hand-written suite where every task must pass)",
)
def tasks_check(paths, repeats, discover, force, workers, strict):
    """Run every task in the sandbox, with the same images and grading as a run, and write the
    verdict beside each spec: quarantine what fails, drop flaky tests, fill expected xfails.
    Exits 1, as `mine` does, when no task is left to run or a task could not be checked; with
    --strict also when any task is quarantined."""
    from ..authoring.check import CheckOptions, check_tasks, plan_checks
    from ..authoring.statements import quality_of
    from ..tasks import load_tasks
    from . import console

    out_console = console()
    found = load_tasks(list(paths))
    if not found:
        raise click.UsageError("no task specs (*.yaml) found in " + ", ".join(map(str, paths)))
    options = CheckOptions(
        repeats=repeats, discover=discover, force=force, workers=workers, progress=_check_progress(out_console)
    )
    plan = plan_checks(found, options)
    out_console.print(f"[bold]{plan.describe(repeats)}[/]")
    results = check_tasks(plan.to_check, options)
    quarantined = not_checked = 0
    for result in results:
        v = result.verdict
        if v is None:
            not_checked += 1
            out_console.print(f"[bold red]ERROR[/] {result.task.id}: {result.error} (not checked; run again)")
        elif v.passed:
            extra = f", {len(v.dropped_flaky)} flaky dropped" if v.dropped_flaky else ""
            extra += f", {len(v.expected_xfail)} expected xfail" if v.expected_xfail else ""
            extra += f", {v.health.skipped} skipped at base" if v.health and v.health.skipped else ""
            out_console.print(
                f"[green]ok[/]          {result.task.id}: {len(v.fail_to_pass)} FAIL_TO_PASS, "
                f"{len(v.pass_to_pass)} PASS_TO_PASS{extra} ({v.seconds.get('total', 0):.0f} s), "
                f"statement: {quality_of(result.task)}"
            )
        else:
            quarantined += 1
            out_console.print(
                f"[yellow]quarantined[/] {result.task.id}: {v.quarantined}"
                + (f" [dim]({v.detail[:200]})[/]" if v.detail else "")
            )
        if v is not None and v.gold_not_accepted:
            out_console.print(
                f"  [bold yellow]control:[/] gold is not accepted by the default acceptance policy "
                f"({', '.join(v.gold_not_accepted)}): fix the task or the policy (docs/acceptance.md)"
            )
        for finding in v.findings if v else []:
            out_console.print(
                f"  secret {finding['file']}:{finding['line']} {finding['rule']} ({finding.get('where', '')})"
            )
    from ..authoring.environment import describe_builds, environment_builds

    checked = [(r.task.repo, r.verdict.image.get("env") if r.verdict else None, r.images_built) for r in results]
    for line in describe_builds(environment_builds(checked)):
        out_console.print(line)
    for task in plan.up_to_date:
        if task.quarantined:
            quarantined += 1
            out_console.print(f"[yellow]quarantined[/] {task.id}: {task.quarantined} [dim](up to date)[/]")
        else:
            out_console.print(f"[dim]up to date  {task.id}, statement: {quality_of(task)}[/]")
    # mine's rule (docs/tasks.md, Checking): a suite with tasks to run passes; quarantined tasks
    # are mining's sieve, listed here and skipped by `run`, unless --strict.
    runnable = len(found) - quarantined - not_checked
    if quarantined:
        out_console.print(f"{quarantined} task(s) quarantined; `wholeloop run` skips them")
    if not_checked:
        out_console.print(f"{not_checked} task(s) not checked (an infrastructure error): run the check again")
    if not runnable:
        out_console.print("no task left to run")
    if not_checked or not runnable or (strict and quarantined):
        sys.exit(NEGATIVE)


from .harbor import tasks_import_harbor  # noqa: E402  (Harbor's commands live in their own module)

tasks.add_command(tasks_import_harbor)
