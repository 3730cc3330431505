"""`wholeloop env propose` (the setup agent), and what `wholeloop mine` shows: the candidates before anything is built (`--list`), one progress
line while it works (never the build output itself), and at the end the tasks it made and what
became of every commit, counted per reason (the per-commit detail is in mine-report.json).

Commit subjects are shown verbatim (rich Text, never markup: `[pre-commit.ci]` stays), and every
table fits the terminal: long cells are cut with an ellipsis, not wrapped.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from pathlib import Path

import click
from rich.console import Console
from rich.status import Status
from rich.table import Table
from rich.text import Text

from . import main

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r")
# check progress lines kept in a log when there is no terminal for the progress line
_PHASES = ("base run 1/", "gold run 1/", "infrastructure")


class ProgressLine:
    """One transient line saying what is under way (rich's status, on a terminal). Lines that
    must stay (`say`) are printed above it. Off a terminal (CI logs) there is no such line: only
    `say` lines and the start of each task's base and gold runs are printed."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._status: Status | None = None
        self._lock = threading.Lock()  # check progress comes from every worker thread
        self._tasks: dict[str, str] = {}

    def __enter__(self) -> ProgressLine:
        if self.console.is_terminal:
            self._status = self.console.status("", spinner="dots")
            self._status.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.__exit__(None, None, None)
            self._status = None

    def say(self, text: Text | str) -> None:
        self.console.print(text)

    def detail(self, text: str) -> None:
        """Build and resolver output: the progress line only, never a line of its own."""
        if self._status is not None:
            self._status.update(Text(_ANSI.sub("", text).strip()[:120], style="dim"))

    def task(self, task_id: str, text: str) -> None:
        """A check's progress (harness.authoring.check): `task id: phase` on the progress line."""
        with self._lock:
            before = self._tasks.get(task_id)
            self._tasks[task_id] = text
            if self._status is not None:
                line = Text(f"checking {task_id}: ", style="bold")
                line.append(_ANSI.sub("", text).strip()[:100], style="dim")
                self._status.update(line)
            elif text.startswith(_PHASES) and before != text:
                self.console.print(Text(f"  {task_id}: {text}", style="dim"))


def print_candidates(report, console: Console) -> None:
    """`mine --list`: each candidate with its kind, size and touched files; the rest counted."""
    from ..authoring.mine import commit_kind

    candidates = [j for j in report.judged if j.candidate is not None]
    table = Table(
        title=Text(f"{report.repository}: {len(candidates)} candidate(s) in {len(report.judged)} commit(s)"),
        title_justify="left",
    )
    # the short columns keep their width; subject and files share what is left (cut with an ellipsis)
    table.add_column("commit", no_wrap=True, min_width=10)
    table.add_column("date", no_wrap=True, min_width=10)
    table.add_column("kind", no_wrap=True, min_width=6)
    table.add_column("lines", justify="right", no_wrap=True, min_width=5)
    left = max(24, console.width - (10 + 10 + 6 + 5) - 19)  # 19: the borders and padding of 6 columns
    table.add_column("subject", no_wrap=True, overflow="ellipsis", max_width=left * 2 // 5)
    table.add_column("touched files (source; tests)", no_wrap=True, overflow="ellipsis", max_width=left * 3 // 5)
    for j in candidates:
        cand = j.candidate
        files = Text(", ".join(cand.gold_files))
        files.append("; ", style="dim")
        files.append(", ".join(cand.test_files), style="cyan")
        table.add_row(
            cand.commit.sha[:10],
            cand.commit.date_iso[:10],
            commit_kind(cand.commit.subject),
            str(cand.lines),
            Text(cand.commit.subject),
            files,
        )
    console.print(table)
    _print_counts(report, console, only_skipped=True)
    if candidates:
        console.print(
            Text(
                "nothing was built or written; mine some with `wholeloop mine REPO --only COMMIT,COMMIT --out DIR`",
                style="dim",
            )
        )


def print_mine_report(report, console: Console) -> None:
    """The tasks made (one row per candidate), then every commit counted by what became of it."""
    made = [j for j in report.judged if j.task is not None or j.refused]
    table = Table(
        title=Text(f"{report.repository}: {len(made)} task(s) from {len(report.judged)} commit(s)"),
        title_justify="left",
    )
    left = max(30, console.width - 10 - 10)  # 10: the borders and padding of 3 columns
    table.add_column("commit", no_wrap=True, min_width=10)
    table.add_column("subject", no_wrap=True, overflow="ellipsis", max_width=left * 2 // 5)
    table.add_column("result", overflow="fold", max_width=left * 3 // 5)
    for j in made:
        table.add_row(j.commit.sha[:10], Text(j.commit.subject), _result(j))
    if made:
        console.print(table)
    _print_counts(report, console)
    warned = [j for j in report.judged if j.warnings]
    if warned:
        total = sum(len(j.warnings) for j in warned)
        rules = Counter(f.rule for j in warned for f in j.warnings)
        console.print(
            Text(
                f"secret scan: {total} warning(s) in {len(warned)} candidate(s) "
                f"({', '.join(f'{n} {r}' for r, n in rules.most_common(4))}): entropy and keyword guesses and "
                "examples in tests and docs, refusing nothing; "
                f"each with its file and line in {report.out / 'mine-report.json'} (--strict-secrets refuses them)",
                style="yellow",
            )
        )
    refreshed = [j for j in report.judged if j.refreshed]
    if refreshed:
        console.print(
            Text(
                f"--refresh-env re-made {len(refreshed)} spec(s) from wholeloop.yaml: their content hashes changed, "
                "so `gate` and `compare` pair nothing between runs of the old specs and runs of these "
                "(run the baseline again on the new suite)",
                style="yellow",
            )
        )
    from ..authoring.environment import describe_builds

    for line in describe_builds(report.environments):
        console.print(Text(line))
    counts = report.counts()
    console.print(Text(f"{counts.get('kept', 0)} kept -> {report.out}", style="bold"))
    if counts.get("unchecked"):
        console.print(Text(f"not checked: run `wholeloop tasks check --discover {report.out}`"))


def _result(j) -> Text:
    if j.kept:
        text = Text("kept ", style="green")
        text.append(
            f"{j.task.id}: {len(j.task.fail_to_pass)} FAIL_TO_PASS, {len(j.task.pass_to_pass)} PASS_TO_PASS"
            + (f", {len(j.dropped_flaky)} flaky dropped" if j.dropped_flaky else "")
        )
        return text
    if j.refused:
        return Text(f"refused: {j.refused}", style="red")
    reason = j.quarantined or j.task.quarantined or ""
    if reason.startswith("not checked yet"):
        return Text("not checked yet", style="dim")
    text = Text(f"quarantined: {reason}", style="yellow")
    if j.detail:
        lines = _ANSI.sub("", j.detail).strip().splitlines() or [""]
        text.append(f" ({lines[0][:200]})", style="dim")
        log = next((line for line in lines[1:3] if line.startswith("the whole build log: ")), None)
        if log:  # the real error is in there, not on screen: name the file
            text.append(f" {log}", style="dim")
    return text


def _print_counts(report, console: Console, *, only_skipped: bool = False) -> None:
    counts = Counter(j.reason() for j in report.judged if not only_skipped or j.skipped)
    if not counts:
        return
    order = {"kept": 0, "quarantined": 1, "refused": 2, "not checked yet": 3, "skipped": 4}
    table = Table(
        title=Text("skipped commits, by reason" if only_skipped else "what became of each commit, by reason"),
        title_justify="left",
    )
    table.add_column("commits", justify="right", no_wrap=True)
    table.add_column("reason", overflow="fold")
    for reason, n in sorted(counts.items(), key=lambda kv: (order.get(kv[0].split(":")[0], 5), -kv[1], kv[0])):
        table.add_row(str(n), Text(reason))
    console.print(table)


@main.group("env")
def env_group():
    """A repository's environment (wholeloop.yaml)."""


@env_group.command("propose")
@click.argument("repo")
@click.option("--commit", default="HEAD", show_default=True, help="the commit whose tests must run")
@click.option("--model", "model", required=True, help="the model that proposes wholeloop.yaml (never a default)")
@click.option("--base-url", default=None, help="base URL for --model")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="the file to write (default: wholeloop.yaml in REPO; never overwritten)",
)
@click.option("--parser", default="pytest", show_default=True, help="test-result parser")
@click.option("--rounds", default=4, show_default=True, type=click.IntRange(1, 20), help="proposals at most")
def env_propose(repo, commit, model, base_url, out, parser, rounds):
    """Let a model propose REPO's wholeloop.yaml, trying each proposal in a container with the
    network until the tests at --commit run healthy. It sends repository content to the model: it
    says what before each request and is refused when egress is forbidden (docs/privacy.md)."""
    from ..authoring.gitrepo import GitRepo
    from ..authoring.setup_agent import propose
    from . import console

    out_console = console()
    git = GitRepo.open(repo)
    local = Path(repo).expanduser()
    target = out or (local / "wholeloop.yaml" if local.is_dir() else Path(f"{git.name}.wholeloop.yaml"))
    line = ProgressLine(out_console)
    with line:
        made = propose(
            git,
            commit,
            model,
            target,
            base_url=base_url,
            parser=parser,
            rounds=rounds,
            notice=lambda text: line.say(Text(text, style="yellow")),
            progress=line.detail,
        )
    health = made.health
    out_console.print(
        Text(
            f"{made.path}: written by {model} in {len(made.attempts)} round(s)"
            + (f"; the tests ran healthy ({health.passed} passed of {health.collected})" if health else ""),
            style="bold",
        )
    )
    out_console.print(Text(f"transcript: {made.transcript}; read the file before you commit it", style="dim"))
