"""`wholeloop show RUN TASK`: one attempt's transcript, rendered for a reviewer.

It opens with why: the problem statement (folded), the outcome, and each failing hidden test with
its failure message. Then each step: what the agent said, what it ran, what it saw (exit codes in
colour, the end of long outputs), where the tests went red or green; then why it stopped, the
patch, and for a resolved attempt the FAIL_TO_PASS tests that now pass. `--json` gives the same
attempt as data (`attempt.attempt_data`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.rule import Rule
from rich.syntax import Syntax
from rich.text import Text

from ..records import Manifest, ResultRow, Review, open_run
from ..transcript import read_transcript
from ..vocabulary import Outcome, ReviewVerdict
from .acceptance import DEFAULT_POLICY, ModelVerdicts, Policy, judge, model_reviews, tell
from .attempt import PASSING, attempt_data, fail_to_pass, failing_tests, failure_messages, problem_statement
from .format import seconds, status_label, tally, usd, visible, visible_value

TAIL_LINES = 25


def find_rows(run_dir: Path, task_id: str, config: str | None, repeat: int | None) -> list[ResultRow]:
    """The rows that count of a task (optionally one configuration and repeat). Raises
    FileNotFoundError saying what there is when nothing matches."""
    folder = open_run(run_dir)
    latest = folder.latest()
    of_task = [r for r in latest if r.task_id == task_id]
    if not of_task:
        known = sorted({r.task_id for r in latest})
        raise FileNotFoundError(
            f"task {task_id!r} has no attempt in {run_dir}; tasks there: {', '.join(known) or 'none'}"
        )
    rows = of_task
    if config is not None:
        rows = [r for r in rows if r.config == config]
        if not rows:
            configs = sorted({r.config for r in of_task})
            raise FileNotFoundError(
                f"task {task_id!r} has no configuration {config!r} in {run_dir}; "
                f"its configurations: {', '.join(configs)}"
            )
    if repeat is not None:
        kept = [r for r in rows if r.repeat == repeat]
        if not kept:
            repeats = ", ".join(str(n) for n in sorted({r.repeat for r in rows}))
            raise FileNotFoundError(
                f"task {task_id!r} has no repeat {repeat} in {run_dir}"
                + (f" (configuration {config!r})" if config else "")
                + f"; its repeats {repeats}"
            )
        rows = kept
    return sorted(rows, key=lambda r: (r.config, r.repeat, r.attempt))


def _tail(text: str, full: bool) -> str:
    lines = text.rstrip("\n").splitlines()
    if full or len(lines) <= TAIL_LINES:
        return "\n".join(lines)
    return f"[... {len(lines) - TAIL_LINES} earlier lines; --full shows them ...]\n" + "\n".join(lines[-TAIL_LINES:])


def _call(event) -> Text | Syntax | Group:
    args = event.arguments or {}
    if event.arguments is None:
        return Text(
            f"{event.name}  (unparseable arguments) {event.raw_arguments[:300]}", style="red"
        )  # made visible by the caller
    if event.name == "bash" or (event.kind in ("shell", "test", "edit") and event.command):
        command = event.command or args.get("command", "")
        head = f"{event.name}: " if event.name != "bash" else ""
        return Syntax(f"{head}$ {command}", "bash", theme="ansi_dark", word_wrap=True)
    if event.name == "edit":
        title = Text(f"edit {args.get('command', '?')} {args.get('path', '')}", style="bold")
        if args.get("command") == "str_replace":
            diff = "".join(f"-{line}\n" for line in str(args.get("old_str", "")).splitlines())
            diff += "".join(f"+{line}\n" for line in str(args.get("new_str", "")).splitlines())
            return Group(title, Syntax(diff.rstrip("\n"), "diff", theme="ansi_dark", word_wrap=True))
        if args.get("command") in ("create", "insert"):
            body = str(args.get("file_text") or args.get("new_str") or "")
            return Group(title, Text(_tail(body, False), style="green"))
        return title
    return Text(f"{event.name} {json.dumps(args)[:300] if args else ''}", style="bold")


PROBLEM_LINES = 12  # of the problem statement shown before --full


def _fold(text: str, lines: int, full: bool) -> str:
    kept = text.strip("\n").splitlines()
    if full or len(kept) <= lines:
        return "\n".join(kept)
    return "\n".join(kept[:lines]) + f"\n[... {len(kept) - lines} more lines; --full shows them ...]"


def render_problem(console: Console, problem: str, full: bool) -> None:
    if problem.strip():
        console.print(
            Panel(
                Text(_fold(problem, PROBLEM_LINES, full)),
                title="problem statement",
                title_align="left",
                border_style="blue",
            )
        )


def render_outcome(
    console: Console, row: ResultRow, policy: Policy = DEFAULT_POLICY, reviews: ModelVerdicts | None = None
) -> None:
    colour = "green" if row.resolved else ("bold red" if row.outcome == Outcome.infra_error else "red")
    cost = usd(row.cost_usd)
    f2p = row.fail_to_pass or {}
    p2p = row.pass_to_pass or {}
    tests = f"   FAIL_TO_PASS {tally(f2p)}, PASS_TO_PASS {tally(p2p)}" if f2p or p2p else ""
    console.print(
        f"outcome [{colour}]{escape(row.outcome)}[/]{tests}   stopped: [bold]{escape(row.stop_reason or '-')}[/]   "
        f"steps {row.steps}   tokens {row.usage.input_tokens:,} in / {row.usage.output_tokens:,} out   "
        f"cost {cost}   agent {seconds(row.phases.agent_s)} (model {seconds(row.phases.model_s)}, "
        f"tools {seconds(row.phases.tool_s)}, waiting {seconds(row.phases.retry_wait_s)})   "
        f"grading {seconds(row.phases.grading_s)}"
    )
    if row.error:
        console.print(Text("error: ", style="bold red") + Text(row.error))
    if row.resolved:
        verdict = judge(row, policy, reviews)
        style = {"accepted": "green", "not_accepted": "bold yellow"}.get(verdict.acceptance.value, "dim")
        console.print(Text("acceptance: ", style="bold") + Text(visible(tell(verdict)), style=style))
    if row.note:
        console.print(Text(f"grading note: {row.note}", style="dim"))


def render_failing(console: Console, run_dir: Path, row: ResultRow, full: bool, manifest: Manifest | None) -> None:
    """Each failing hidden test, with its failure message (the lines that explain it)."""
    failing = failing_tests(row)
    if not failing:
        return
    messages = failure_messages(run_dir, row, manifest)
    console.print(Text(f"failing hidden tests ({len(failing)}):", style="bold red"))
    for test, status, kind in failing[: None if full else 20]:
        console.print(
            Text.assemble(("  ✗ ", "red"), (visible(test), "bold"), (f"  {status_label(status)} · {kind}", "dim"))
        )
        if messages.get(test):
            console.print(
                Panel(Text(_fold(visible(messages[test]), TAIL_LINES, full)), border_style="red", padding=(0, 1))
            )
    if len(failing) > 20 and not full:
        console.print(f"  ... and {len(failing) - 20} more (--full lists them)")


def render_now_passing(console: Console, row: ResultRow) -> None:
    """For a resolved attempt: the FAIL_TO_PASS tests that now pass."""
    passing = [t for t in fail_to_pass(row) if row.tests.get(t) in PASSING]
    if row.resolved and passing:
        console.print(Text(f"FAIL_TO_PASS now passing ({len(passing)}):", style="bold green"))
        for test in passing:
            console.print(Text.assemble(("  ✓ ", "green"), visible(test)))


def render_event(console: Console, event, full: bool) -> None:
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
        console.print(
            Panel(
                Text(_tail(event.output, full)),
                title=f"{label}{flags} · {event.duration_s:.2f}s",
                title_align="left",
                border_style=style,
            )
        )
    elif kind == "test_run":
        mark = "[bold green]GREEN[/]" if event.green else "[bold red]RED[/]"
        failing = f"  failing: {escape(', '.join(event.failing[:8]))}" if event.failing else ""
        console.print(f"tests {mark}: {event.passed} passed, {event.failed} failed, {event.errors} errors{failing}")
    elif kind == "retry":
        console.print(
            f"[yellow]retry {event.attempt}[/] after {escape(event.error_type)} ({event.status_code}): "
            f"waited {event.wait_s:.1f}s"
        )
    elif kind == "limit":
        amount = (
            f"{event.value / 2**20:.1f} MB of {event.maximum / 2**20:.0f} MB"
            if event.limit == "disk_limit"
            else f"{event.value:g} of {event.maximum:g}"
        )
        console.print(f"[bold yellow]limit reached:[/] {escape(event.limit)} ({amount})")
    elif kind == "error":
        console.print(
            Panel(Text(event.message), title=Text(f"error in {event.where}: {event.error_type}"), border_style="red")
        )
    elif kind == "stop":
        console.print(Rule(f"stopped: {escape(event.reason)}", style="bold"))
        if event.detail:
            console.print(Text(event.detail))
    elif kind == "external_run":
        said = event.self_report
        report = (
            f"   it reports {said['input_tokens']:,} in / {said['output_tokens']:,} out, cost {usd(said['cost_usd'])}"
            if said
            else ""
        )
        stopped = f"   stopped by wholeloop: {event.stopped_by}" if event.stopped_by else ""
        console.print(
            Text(
                f"{event.cli} {event.version} exited {event.exit_code} after {seconds(event.seconds)}"
                f"{' (timed out)' if event.timed_out else ''}{stopped}{report}",
                style="bold",
            )
        )
        if event.logs:
            console.print(Text("its logs: " + ", ".join(event.logs[:12]), style="dim"))
        if event.exit_code not in (0, None) and event.stderr_tail.strip():
            console.print(Panel(Text(_tail(event.stderr_tail, full)), title="end of its stderr", border_style="red"))
    elif kind == "feedback":
        console.print(Panel(Text(event.text), title=f"feedback before attempt {event.attempt}", border_style="yellow"))
    elif kind == "patch":
        if event.diff.strip():
            console.print(
                Panel(
                    Syntax(_tail(event.diff, full) if not full else event.diff, "diff", theme="ansi_dark"),
                    title=f"patch ({event.bytes} bytes, {len(event.files)} files)",
                    title_align="left",
                )
            )
        else:
            console.print("[dim]empty patch[/]")
    elif kind == "grade":
        colour = "green" if event.resolved else "red"
        console.print(
            f"hidden tests: [{colour}]{escape(event.outcome)}[/]"
            + (f" - {escape(event.detail)}" if event.detail else "")
        )


def _events_of_attempt(events: list, attempt: int) -> list:
    """The events of one attempt (a transcript holds every attempt of its repeat)."""
    out, current = [], 1
    for event in events:
        if event.type == "attempt_start":
            current = event.attempt
        if current == attempt:
            out.append(event)
    return out


def _visible_row(row: ResultRow) -> ResultRow:
    # The outcome is a word of ours (an Outcome), never text to make visible.
    fields = row.model_dump(exclude={"outcome"})
    return row.model_copy(update={k: visible(v) for k, v in fields.items() if isinstance(v, str)})


def render_attempt(
    console: Console,
    run_dir: Path,
    row: ResultRow,
    *,
    full: bool = False,
    manifest: Manifest | None = None,
    policy: Policy = DEFAULT_POLICY,
) -> None:
    """Every string from the run folder is made `visible` first (the agent's escape sequences are
    shown, never executed) and printed as text, never as rich markup."""
    reviews = model_reviews(run_dir, [row], policy)  # read only when the policy counts a model
    row = _visible_row(row)
    console.print(
        Rule(f"[bold]{escape(row.task_id)}[/]  {escape(row.config)}  repeat {row.repeat}  attempt {row.attempt}")
    )
    transcript = run_dir / row.transcript_path
    events = read_transcript(transcript) if row.transcript_path and transcript.is_file() else []
    events = [event.model_copy(update=visible_value(event.model_dump())) for event in events]
    if row.attempt == 1:
        render_problem(console, visible(problem_statement(run_dir, row, events, manifest)), full)
    render_outcome(console, row, policy, reviews)
    _grading_record(console, run_dir, row)
    render_failing(console, run_dir, row, full, manifest)
    if not events:
        console.print(f"[yellow]no transcript at {escape(str(transcript))}[/]")
        return
    for event in _events_of_attempt(events, row.attempt):
        render_event(console, event, full)
    render_now_passing(console, row)
    output = run_dir / row.dir / "test_output.txt"
    if not row.resolved and row.dir and output.is_file() and output.stat().st_size:
        if full:
            console.print(
                Panel(
                    Text(visible(output.read_text(errors="replace"))),
                    title="the hidden test output",
                    title_align="left",
                    border_style="red",
                )
            )
        else:
            console.print(f"[dim]the whole hidden test output: {escape(str(output))} (--full prints it)[/]")


def _grading_record(console: Console, run_dir: Path, row: ResultRow) -> None:
    """What grade.json says beyond the outcome: suspected tampering, what was not applied, the channels."""
    path = run_dir / row.dir / "grade.json" if row.dir else None
    grade = json.loads(path.read_text()) if path and path.is_file() else {}
    if row.tampering or grade.get("tampering"):
        console.print(
            Text("suspected tampering: ", style="bold red") + Text(visible(str(row.tampering or grade["tampering"])))
        )
    stripped = grade.get("stripped") or []
    if stripped:
        shown = visible(", ".join(f"{s.get('path')} ({s.get('reason')})" for s in stripped[:12]))
        more = f" and {len(stripped) - 12} more" if len(stripped) > 12 else ""
        console.print(Text(f"not applied from the patch: {shown}{more}", style="yellow"))
    if grade.get("channels"):
        console.print(
            Text("result channels: " + " · ".join(f"{k}: {v}" for k, v in grade["channels"].items()), style="dim")
        )
    if grade and grade.get("grader_version") is None:
        console.print(
            Text("graded before the grader's version was recorded (wholeloop regrade re-grades it)", style="dim")
        )


def show(
    run_dir: Path,
    task_id: str,
    *,
    config: str | None = None,
    repeat: int | None = None,
    full: bool = False,
    console: Console | None = None,
    policy: Policy = DEFAULT_POLICY,
) -> None:
    console = console or Console()
    run_dir = Path(run_dir)
    rows = find_rows(run_dir, task_id, config, repeat)
    manifest = open_run(run_dir).info()
    for row in rows:
        render_attempt(console, run_dir, row, full=full, manifest=manifest, policy=policy)


def show_json(
    run_dir: Path,
    task_id: str,
    *,
    config: str | None = None,
    repeat: int | None = None,
    policy: Policy = DEFAULT_POLICY,
) -> list[dict]:
    """Each (configuration, repeat) of the task as data, attempts in order (see attempt.attempt_data)."""
    run_dir = Path(run_dir)
    rows = find_rows(run_dir, task_id, config, repeat)
    manifest = open_run(run_dir).info()
    groups: dict[tuple, list[ResultRow]] = {}
    for row in rows:
        groups.setdefault((row.config, row.repeat), []).append(row)
    return [attempt_data(run_dir, group, manifest, policy) for group in groups.values()]


REVIEW_KEYS = {"a": ReviewVerdict.accept, "r": ReviewVerdict.reject, "u": ReviewVerdict.unsure}


def review(
    run_dir: Path,
    task_ids: list[str],
    reviewer: str,
    ask: Callable[[str], str],
    *,
    console: Console | None = None,
    policy: Policy = DEFAULT_POLICY,
) -> int:
    """A reviewer's pass over a run: each resolved attempt (of `task_ids`, or all) this reviewer
    has no current verdict on is shown as `show` shows it (the problem, outcome and acceptance, the
    steps, the patch, the agent's final message, the tests it made pass); `ask` reads a/r/u (q
    stops) and a reason; each verdict is recorded at once in RUN/reviews.jsonl. Returns how many."""
    console = console or Console()
    folder = open_run(run_dir)
    manifest = folder.info()
    rows = [r for r in folder.latest() if r.resolved and (not task_ids or r.task_id in task_ids)]
    current = folder.current_reviews(rows)
    todo = [r for r in rows if reviewer not in current.get(r.key(), {})]
    console.print(f"{len(todo)} resolved attempt(s) to review as {escape(reviewer)} ({len(rows) - len(todo)} done)")
    done = 0
    for i, row in enumerate(todo, 1):
        render_attempt(console, folder.path, row, manifest=manifest, policy=policy)
        answer = ""
        while answer not in REVIEW_KEYS:
            answer = ask(f"[{i}/{len(todo)}] verdict: a(ccept) / r(eject) / u(nsure) / q(uit)").strip().lower()[:1]
            if answer == "q":
                return done
        reason = ask("reason").strip()
        folder.add_review(
            Review(
                **folder.review_key(row),
                verdict=REVIEW_KEYS[answer],
                reason=reason,
                reviewer=reviewer,
            )
        )
        done += 1
    return done
