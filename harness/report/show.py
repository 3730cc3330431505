"""`wholeloop show RUN TASK`: one attempt's transcript, rendered for a reviewer.

Each step shows what the agent said, what it ran, what it saw (exit codes in colour, the end of
long outputs), where the tests went red or green, and at the end why it stopped, the patch and
what the hidden tests said.
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console, Group
from rich.panel import Panel
from rich.rule import Rule
from rich.syntax import Syntax
from rich.text import Text

from ..records import ResultRow, open_run
from ..transcript import read_transcript
from .format import STATUS_LABELS, seconds, status_label, usd

TAIL_LINES = 25


def find_rows(run_dir: Path, task_id: str, config: str | None, repeat: int | None) -> list[ResultRow]:
    folder = open_run(run_dir)
    rows = [r for r in folder.latest() if r.task_id == task_id]
    if config is not None:
        rows = [r for r in rows if r.config == config]
    if repeat is not None:
        rows = [r for r in rows if r.repeat == repeat]
    if not rows:
        every = folder.rows()
        known = sorted({r.task_id for r in every})
        raise FileNotFoundError(f"no attempt of task {task_id!r} in {run_dir}; tasks there: {', '.join(known) or 'none'}")
    return sorted(rows, key=lambda r: (r.config, r.repeat, r.attempt))


def _tail(text: str, full: bool) -> str:
    lines = text.rstrip("\n").splitlines()
    if full or len(lines) <= TAIL_LINES:
        return "\n".join(lines)
    return f"[... {len(lines) - TAIL_LINES} earlier lines; --full shows them ...]\n" + "\n".join(lines[-TAIL_LINES:])


def _call(event) -> Text | Syntax | Group:
    args = event.arguments or {}
    if event.arguments is None:
        return Text(f"{event.name}  (unparseable arguments) {event.raw_arguments[:300]}", style="red")
    if event.name == "bash":
        return Syntax("$ " + args.get("command", ""), "bash", theme="ansi_dark", word_wrap=True)
    if event.name == "edit":
        head = Text(f"edit {args.get('command', '?')} {args.get('path', '')}", style="bold")
        if args.get("command") == "str_replace":
            diff = "".join(f"-{line}\n" for line in str(args.get("old_str", "")).splitlines())
            diff += "".join(f"+{line}\n" for line in str(args.get("new_str", "")).splitlines())
            return Group(head, Syntax(diff.rstrip("\n"), "diff", theme="ansi_dark", word_wrap=True))
        if args.get("command") in ("create", "insert"):
            body = str(args.get("file_text") or args.get("new_str") or "")
            return Group(head, Text(_tail(body, False), style="green"))
        return head
    return Text(f"{event.name} {json.dumps(args)[:300] if args else ''}", style="bold")


def render_attempt(console: Console, run_dir: Path, row: ResultRow, *, full: bool = False) -> None:
    colour = "green" if row.resolved else ("bold red" if row.outcome == "infra_error" else "red")
    console.print(Rule(f"[bold]{row.task_id}[/]  {row.config}  repeat {row.repeat}  attempt {row.attempt}"))
    cost = usd(row.cost_usd)
    console.print(
        f"outcome [{colour}]{row.outcome}[/]   stopped: [bold]{row.stop_reason or '-'}[/]   steps {row.steps}   "
        f"tokens {row.usage.input_tokens:,} in / {row.usage.output_tokens:,} out   cost {cost}   "
        f"agent {seconds(row.phases.agent_s)} (model {seconds(row.phases.model_s)}, tools {seconds(row.phases.tool_s)}, "
        f"waiting {seconds(row.phases.retry_wait_s)})   grading {seconds(row.phases.grading_s)}"
    )
    if row.error:
        console.print(f"[bold red]error:[/] {row.error}")
    transcript = run_dir / row.transcript_path
    if not transcript.exists():
        console.print(f"[yellow]no transcript at {transcript}[/]")
        return
    for event in read_transcript(transcript):
        kind = event.type
        if kind == "model_response":
            console.print(Rule(f"step {event.step}", style="dim", align="left"))
            if event.text.strip():
                console.print(Panel(Text(_tail(event.text, full)), title="agent", title_align="left", border_style="cyan"))
        elif kind == "tool_call":
            console.print(_call(event))
        elif kind == "tool_result":
            style = "red" if event.is_error or (event.exit_code not in (None, 0)) else "dim"
            label = "error" if event.is_error else (f"exit {event.exit_code}" if event.exit_code is not None else "ok")
            flags = " timed out" if event.timed_out else ""
            flags += " truncated" if event.truncated else ""
            console.print(Panel(Text(_tail(event.output, full)), title=f"{label}{flags} · {event.duration_s:.2f}s",
                                title_align="left", border_style=style))
        elif kind == "test_run":
            mark = "[bold green]GREEN[/]" if event.green else "[bold red]RED[/]"
            failing = f"  failing: {', '.join(event.failing[:8])}" if event.failing else ""
            console.print(f"tests {mark}: {event.passed} passed, {event.failed} failed, {event.errors} errors{failing}")
        elif kind == "retry":
            console.print(f"[yellow]retry {event.attempt}[/] after {event.error_type} ({event.status_code}): "
                          f"waited {event.wait_s:.1f}s")
        elif kind == "limit":
            console.print(f"[bold yellow]limit reached:[/] {event.limit} ({event.value:g} of {event.maximum:g})")
        elif kind == "error":
            console.print(Panel(Text(event.message), title=f"error in {event.where}: {event.error_type}", border_style="red"))
        elif kind == "stop":
            console.print(Rule(f"stopped: {event.reason}", style="bold"))
            if event.detail:
                console.print(event.detail)
        elif kind == "feedback":
            console.print(Panel(Text(event.text), title=f"feedback before attempt {event.attempt}", border_style="yellow"))
        elif kind == "patch":
            if event.diff.strip():
                console.print(Panel(Syntax(_tail(event.diff, full) if not full else event.diff, "diff", theme="ansi_dark"),
                                    title=f"patch ({event.bytes} bytes, {len(event.files)} files)", title_align="left"))
            else:
                console.print("[dim]empty patch[/]")
        elif kind == "grade":
            colour = "green" if event.resolved else "red"
            statuses = row.tests if event.attempt == row.attempt else {}
            ran = not statuses or any(v != "not_run" for v in statuses.values())
            console.print(f"hidden tests: [{colour}]{event.outcome}[/]" + ("" if ran else " (tests not run)")
                          + (f" - {event.detail}" if event.detail else ""))
            for test in event.failing[:20]:
                status = statuses.get(test)
                label = f" [yellow]({status_label(status)})[/]" if status in STATUS_LABELS else ""
                console.print(f"  [red]✗[/] {test}{label}")
    grade_file = run_dir / row.dir / "test_output.txt"
    if not row.resolved and grade_file.exists() and grade_file.stat().st_size:
        console.print(Panel(Text(_tail(grade_file.read_text(errors="replace"), full)),
                            title="end of the hidden test output", title_align="left", border_style="red"))


def show(run_dir: Path, task_id: str, *, config: str | None = None, repeat: int | None = None,
         full: bool = False, console: Console | None = None) -> None:
    console = console or Console()
    for row in find_rows(Path(run_dir), task_id, config, repeat):
        render_attempt(console, Path(run_dir), row, full=full)
