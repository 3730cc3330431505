"""Terminal summaries of runs (rich), computed from the run folders alone."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..records import ResultRow
from ..vocabulary import Outcome
from .by_statement import ORDER
from .divergence import FlipWhy, describe
from .fit import Col, fit_table
from .format import pct, seconds, tally, usd, visible

if TYPE_CHECKING:
    from .compare import Comparison
    from .figures import Figures, Recipe
    from .stats import Interval

OUTCOME_STYLE: dict[str, str] = {
    Outcome.resolved: "green",
    Outcome.unresolved: "yellow",
    Outcome.regression: "red",
    Outcome.empty_patch: "dim",
    Outcome.patch_apply_failed: "magenta",
    Outcome.test_timeout: "magenta",
    Outcome.environment_broken: "red",
    Outcome.infra_error: "bold red",
    Outcome.task_error: "bold magenta",
}


def _money(value: float | None, unknown: bool) -> str:
    return usd(None if unknown else value)


def _tally(counts: dict) -> str:
    """'3/5' passed of listed; 'not run' when no test ran (an empty patch); '-' when nothing is known."""
    return tally(counts)


def task_table(rows: list[ResultRow], width: int = 150, checks: dict[str, str] | None = None) -> Table:
    """One line per final attempt; with `checks` (task id -> check status at the run's start),
    tasks that were not checked (`wholeloop tasks check`) are marked."""
    checks = checks or {}
    cols = [
        Col("task", "left"),
        Col("config", "left", 2),
        Col("rep", drop=4),
        Col("outcome", "left"),
        Col("FAIL_TO_PASS", drop=5),
        Col("PASS_TO_PASS", drop=6),
        Col("stop", "left", 7),
        Col("agent", drop=8),
        Col("grading", drop=9),
        Col("cost", drop=3),
    ]
    cells: list[list[str | Text]] = []
    unchecked = 0
    for row in sorted(rows, key=lambda r: (r.task_id, r.config, r.repeat, r.attempt)):
        if not row.final:
            continue
        style = OUTCOME_STYLE.get(row.outcome, "")
        outcome = Text(row.outcome, style=style)
        if row.tampering:
            outcome.append(" (suspected tampering)", style="bold red")
        task = Text(row.task_id)
        status = checks.get(row.task_id)
        if status and status != "checked":
            task.append(f" ({status})", style="yellow")
            unchecked += 1
        f2p, p2p = (
            Text(_tally(t), style="dim" if t and t.get("ran") is False else "")
            for t in (row.fail_to_pass, row.pass_to_pass)
        )
        cells.append(
            [
                task,
                Text(row.config),
                str(row.repeat),
                outcome,
                f2p,
                p2p,
                Text(row.stop_reason),
                seconds(row.phases.agent_s),
                seconds(row.phases.grading_s),
                _money(row.cost_usd, row.cost_usd is None),
            ]
        )
    caption = (
        (
            "(unchecked), (stale), (quarantined): the task had no current verdict of `wholeloop tasks check` "
            "when the run started; its result is only as good as its spec"
        )
        if unchecked
        else ""
    )
    return fit_table("Per task", cols, cells, caption=caption, width=width)


def _print_tampering(rows: list[ResultRow], console: Console) -> None:
    flagged = [r for r in rows if r.tampering]
    for row in flagged[:10]:
        line = Text("suspected tampering ", style="bold red")
        line.append(f"{row.task_id} ({row.config} #{row.repeat} attempt {row.attempt}): {(row.tampering or '')[:300]}")
        console.print(line)
    if len(flagged) > 10:
        console.print(f"... and {len(flagged) - 10} more attempts with suspected tampering (see results.jsonl)")


def _print_infra_errors(rows: list[ResultRow], console: Console) -> None:
    errors = [r for r in rows if r.final and r.error]
    for row in errors[:10]:
        console.print(f"[bold red]infra_error[/] {row.task_id}: {escape((row.error or '').splitlines()[0][:800])}")
    if len(errors) > 10:
        console.print(f"... and {len(errors) - 10} more infra errors (see results.jsonl)")
    task_errors = [r for r in rows if r.final and r.outcome == Outcome.task_error]
    for row in task_errors[:10]:
        console.print(
            f"[bold magenta]task_error[/] {row.task_id}: {(row.note or row.error or '').splitlines()[0][:300]}"
            " (the task's to fix; not counted)"
        )
    if len(task_errors) > 10:
        console.print(f"... and {len(task_errors) - 10} more task errors (see results.jsonl)")


# ---------------------------------------------------------------------------- figures


def fmt_interval(iv: Interval, kind: str = "rate") -> str:
    """'71% [36%, 92%]', '$0.0612 [$0.0500, $0.0800]', 'unknown', '12.0s [9.1s, 15.2s]' (rich markup)."""
    if iv.unknown:
        return "[yellow]unknown[/]"
    if iv.value is None:
        return "n/a (none resolved)" if iv.unbounded else "n/a"
    f = {
        "rate": lambda v: f"{100 * v:.0f}",
        "usd": usd,
        "s": seconds,
        "pts": lambda v: f"{100 * v:+.1f}",
        "num": lambda v: f"{v:.2f}",
    }[kind]
    unit = "%" if kind == "rate" else ""
    value = f(iv.value) + unit
    if iv.low is None and not iv.unbounded:
        return value
    high = "unbounded" if iv.unbounded or iv.high is None else f(iv.high) + unit
    return f"{value} [dim]\\[{f(iv.low) + unit if iv.low is not None else '?'}, {high}][/]"


def recipe_block(recipe: Recipe, run_dir: str, configs: list[str]) -> Panel:
    """The recipe next to the numbers: what produced them, compactly."""
    s = recipe.sampling
    settings = (
        ", ".join(
            f"{k}={v}"
            for k, v in s.items()
            if v is not None and k in ("temperature", "top_p", "max_tokens", "thinking_budget")
        )
        or "provider defaults"
    )
    limits = ", ".join(f"{k}={v}" for k, v in recipe.limits.items() if v is not None)
    opts = recipe.options
    runs = ", ".join(f"{k}={opts[k]}" for k in ("repeats", "attempts", "feedback", "workers") if k in opts)
    lines = [
        f"[bold]{escape(str(run_dir))}[/]  configs: {escape(', '.join(configs)) or '-'}",
        f"wholeloop {recipe.wholeloop_version or '?'} @ {(recipe.git_commit or 'unknown commit')[:20]}"
        f"   python {recipe.python or '?'}   docker {recipe.docker_engine.get('version', '?')}",
        f"model(s): {', '.join(recipe.models) or '-'}"
        + (f"   base url: {', '.join(recipe.base_urls)}" if recipe.base_urls else ""),
        f"agent: {recipe.agent or '-'}   settings: {settings}" + (f"   limits: {limits}" if limits else ""),
        *([f"scaffold: {recipe.scaffold}"] if recipe.scaffold else []),
        f"agent config sha256 {(recipe.agent_config_sha256 or '-')[:16]}   prompts {(recipe.prompt_sha256 or '-')[:16]}"
        f"   tools {(recipe.tool_schema_sha256 or '-')[:16]}",
        f"{recipe.tasks} task(s)   {runs}   {recipe.started_at or '?'} -> {recipe.finished_at or 'not finished'}"
        + (f"   ({recipe.sessions} sessions)" if recipe.sessions > 1 else ""),
        f"[dim]$ {escape(recipe.command)}[/]",
    ]
    return Panel("\n".join(lines), title="recipe", title_align="left", expand=False)


def acceptance_block(figures: Figures) -> Text:
    """Resolution and acceptance side by side, per configuration: how many resolved patches the
    policy did not accept, and why (docs/acceptance.md). Evidence from patches is shown visibly."""
    lines = ["[bold]acceptance[/]"]
    if figures.metric == "accept":
        lines.append("metric: accept -- every rate and comparison above counts accepted patches, not resolved ones")
    for a in figures.acceptance:
        accept = fmt_interval(a.accept_rate) if a.accept_rate.value is not None else "not measured"
        line = f"  {escape(a.config)}: resolve {fmt_interval(a.resolve_rate)} · accept {accept}"
        if a.resolved_not_accepted:
            why = ", ".join(f"{r} {n}" for r, n in sorted(a.reasons.items(), key=lambda kv: -kv[1]))
            line += f" · {a.resolved_not_accepted} of {a.resolved} resolved not accepted: {why}"
            line += "".join(f"\n      {escape(visible(ex))}" for exs in a.examples.values() for ex in exs)
        if a.not_measured:
            line += (
                f" · {a.not_measured} resolved not measured (graded before grader 8; `wholeloop regrade` measures them)"
            )
        lines.append(line)
    if figures.acceptance:
        lines.append(f"  policy: {escape(figures.acceptance[0].policy)}")
    if figures.review:
        review = figures.review
        lines.append(f"  human verdicts: {review['verdicts']} · {escape(review['said'])}")
        for d in review["disagreements"][:10]:
            lines.append(
                escape(
                    visible(
                        f"      {d['task_id']} {d['config']} rep {d['repeat']} attempt {d['attempt']}: policy "
                        f"{d['policy']}, {d['reviewer']} {d['reviewer_verdict']}s"
                        + (f": {d['reason']}" if d["reason"] else "")
                    )
                )
            )
        if len(review["disagreements"]) > 10:
            lines.append(f"      ... and {len(review['disagreements']) - 10} more disagreements (--json lists them)")
    for m in figures.model_reviews:
        lines.append(
            f"  model review by {escape(m['model'])} "
            + (
                "(counted by the policy: its reject refuses a patch)"
                if m.get("counted")
                else "(never counted as acceptance)"
            )
            + f": {m['reviews']} reviewed, "
            f"{m['accept']} accept, {m['reject']} reject, {m['unsure']} unsure"
            + (f" ({m['unreadable']} unreadable)" if m["unreadable"] else "")
            + f" · {escape(m['humans']['said'])}"
        )
        for d in m["humans"]["disagreements"][:10]:
            lines.append(
                escape(
                    visible(
                        f"      {d['task_id']} {d['config']} rep {d['repeat']} attempt {d['attempt']}: model "
                        f"{d['model_verdict']}s, {d['reviewer']} {d['reviewer_verdict']}s"
                    )
                )
            )
    return Text.from_markup("\n".join(lines))


def stats_table(figures: Figures, width: int = 150) -> Table:
    cols = [
        Col("config", "left"),
        Col("tasks", drop=4),
        Col("trials", drop=5),
        Col("resolved", drop=2),
        Col("rate (Wilson)"),
        Col("infra / task errors", drop=6),
        Col("cost / trial", drop=3),
        Col("cost / resolved", drop=7),
        Col("time / trial", drop=8),
        Col("expected cost / task", drop=9),
    ]
    scores = {s.config: s for s in figures.scoring.configs}
    cells: list[list[str | Text]] = []
    for c in figures.configs:
        score = scores.get(c.name)
        cells.append(
            [
                Text(c.name),
                str(c.tasks),
                str(c.scored) + (f" x{c.repeats}" if c.repeats > 1 else ""),
                str(c.resolved),
                fmt_interval(c.resolve_rate),
                (f"{c.infra_errors} ({c.infra_share:.0%})" if c.infra_errors else "0") + f" / {c.task_errors}",
                fmt_interval(c.cost_per_trial, "usd"),
                fmt_interval(c.cost_per_resolved, "usd"),
                fmt_interval(c.time_per_trial, "s"),
                fmt_interval(score.expected_cost_per_task, "num") if score else "-",
            ]
        )
    b = figures.bootstrap
    repeats = any(c.repeats > 1 for c in figures.configs)
    strict = any(c.strict for c in figures.configs)
    caption = (
        "rate: Wilson score interval over "
        + (
            "all trials but task errors (--strict: infra errors counted as failures)"
            if strict
            else "scored trials (infra and task errors left out; infra: their count and share of the trials)"
        )
        + (
            "; it treats repeats of a task as independent, the task-resampled interval below does not"
            if repeats
            else ""
        )
        + f". money/time/cost: "
        f"{b.method} bootstrap over tasks, {b.n_resamples} resamples, seed {b.seed}. "
        f"scoring: {figures.scoring.scoring.source}"
    )
    return fit_table("Per configuration (95% intervals)", cols, cells, caption=caption, width=width)


def passk_table(figures: Figures, width: int = 150) -> Table | None:
    rows = [c for c in figures.configs if c.repeats > 1 and c.pass_at_k]
    if not rows:
        return None
    kmax = max(len(c.pass_at_k) for c in rows)

    # the middle values of k go first when room is short: k=1 and the largest k stay longest
    def drop(k: int) -> int:
        return 0 if k in (1, kmax) else 1 + min(k - 1, kmax - k)

    cols = [Col("config", "left"), Col("rate over tasks", drop=1)]
    cols += [Col(f"pass@{k}", drop=drop(k) * 2) for k in range(1, kmax + 1)]
    cols += [Col(f"pass^{k}", drop=drop(k) * 2 + 1 if drop(k) else 2) for k in range(1, kmax + 1)]
    cells: list[list[str | Text]] = []
    for c in rows:
        at = {v.k: pct(v.value) for v in c.pass_at_k}
        hat = {v.k: pct(v.value) for v in c.pass_hat_k}
        cells.append(
            [
                Text(c.name),
                fmt_interval(c.resolve_rate_tasks),
                *[at.get(k, "-") for k in range(1, kmax + 1)],
                *[hat.get(k, "-") for k in range(1, kmax + 1)],
            ]
        )
    return fit_table(
        "Repeats: pass@k (at least one of k) and pass^k (all k)",
        cols,
        cells,
        width=width,
        caption="unbiased estimators per task, averaged over tasks; rate over tasks: bootstrap interval "
        "(tasks resampled)",
    )


def task_rate_table(figures: Figures, width: int = 150) -> Table | None:
    """Task x configuration success rates, when some configuration has repeats."""
    if not any(c.repeats > 1 for c in figures.configs):
        return None
    cols = [Col("task", "left")] + [Col(escape(c.name), drop=1 + i) for i, c in enumerate(figures.configs)]
    tasks = sorted({t.task_id for c in figures.configs for t in c.per_task})
    rates = {(c.name, t.task_id): t for c in figures.configs for t in c.per_task}
    rows_: list[list[str | Text]] = []
    for tid in tasks:
        cells: list[str | Text] = []
        for c in figures.configs:
            t = rates.get((c.name, tid))
            if t is None:
                cells.append("-")
            else:
                style = "green" if t.rate == 1 else "red" if t.rate == 0 else "yellow"
                cells.append(
                    f"[{style}]{t.resolved}/{t.trials}[/]"
                    + (f" [red]+{t.infra_errors} infra[/]" if t.infra_errors else "")
                )
        rows_.append([Text(tid), *cells])
    return fit_table("Per task success rate", cols, rows_, width=width)


def recovery_table(figures: Figures, width: int = 150) -> Table:
    cols = [
        Col("config", "left"),
        Col("attempts", drop=4),
        Col("ran tests", drop=5),
        Col("green", drop=3),
        Col("red -> green", drop=2),
        Col("red runs before green", drop=9),
        Col("edits after red", drop=8),
        Col("tool errors recovered", drop=7),
        Col("steps / s to green", drop=6),
        Col("pass@att-1", drop=1),
        Col("pass@att-K", drop=1),
        Col("recovered later"),
    ]
    cells: list[list[str | Text]] = []
    for r in figures.recovery:
        i, a = r.inside, r.across
        steps = (
            "-"
            if i.median_steps_to_green is None
            else f"{i.median_steps_to_green:g} / {seconds(i.median_seconds_to_green)}"
        )
        later = "-" if a.recovery_rate is None else f"{a.resolved_later}/{a.failed_first} ({pct(a.recovery_rate)})"
        cells.append(
            [
                Text(r.config),
                f"{i.with_transcript}/{i.attempts}",
                str(i.with_tests),
                str(i.reached_green),
                f"{i.green_after_red}/{i.saw_red}",
                "-" if i.red_runs_before_green_mean is None else f"{i.red_runs_before_green_mean:.2f}",
                "-" if i.edits_after_red_mean is None else f"{i.edits_after_red_mean:.1f}",
                f"{i.tool_errors_recovered}/{i.tool_errors}",
                steps,
                pct(a.pass_at_attempt_1),
                pct(a.pass_at_attempt_k) + (f" (K={a.max_attempts})" if a.max_attempts > 1 else ""),
                later,
            ]
        )
    return fit_table(
        "Recovery",
        cols,
        cells,
        width=width,
        caption="inside an attempt from transcripts (visible test runs, edits, tool errors; medians to "
        "first green); across attempts from results: recovered later = resolved at attempt > 1 / "
        "failed attempt 1",
    )


def failures_block(figures: Figures, width: int = 150) -> Group:
    cells: list[list[str | Text]] = []
    for f in figures.failures.configs:
        outcomes = ", ".join(f"[{OUTCOME_STYLE.get(k) or 'default'}]{k}[/] {v}" for k, v in f.outcomes.items())
        cells.append([Text(f.config), outcomes, Text(", ".join(f"{k} {v}" for k, v in f.stop_reasons.items()))])
    table = fit_table(
        "Failure analysis (final attempt of each trial)",
        [Col("config", "left"), Col("outcomes", "left"), Col("stop reasons", "left", 1)],
        cells,
        width=width,
    )
    parts: list = [table]
    hardest = figures.failures.hardest
    if hardest:
        parts.append(
            Text(f"Hardest failures: {len(hardest)} task(s) no configuration resolved in any repeat", style="bold")
        )
        for h in hardest[:15]:
            outcomes = ", ".join(f"{k} x{v}" for k, v in h.outcomes.items())
            ref = h.transcripts[0]
            parts.append(
                Text.from_markup(
                    f"  [bold]{h.task_id}[/] ({outcomes}) - {ref.transcript_path}\n    [dim]$ {ref.show_command}[/]"
                )
            )
        if len(hardest) > 15:
            parts.append(Text(f"  ... and {len(hardest) - 15} more (--evidence writes them all)"))
    return Group(*parts)


def comparison_block(cmp: Comparison, width: int = 150) -> Group:
    table = Table(
        title=f"{escape(cmp.a)}  vs  {escape(cmp.b)}   ({cmp.shared_tasks} shared tasks)", title_justify="left"
    )
    table.add_column("")
    table.add_column(escape(cmp.a), justify="right")
    table.add_column(escape(cmp.b), justify="right")
    table.add_row("tasks won", str(cmp.wins_a), str(cmp.wins_b))
    table.add_row("ties", str(cmp.ties), str(cmp.ties))
    table.add_row("resolve rate (shared tasks)", pct(cmp.side_a.resolve_rate), pct(cmp.side_b.resolve_rate))
    table.add_row(
        "resolved trials",
        f"{cmp.side_a.resolved_trials}/{cmp.side_a.trials}",
        f"{cmp.side_b.resolved_trials}/{cmp.side_b.trials}",
    )
    table.add_row(
        "cost / resolved",
        fmt_interval(cmp.side_a.cost_per_resolved, "usd"),
        fmt_interval(cmp.side_b.cost_per_resolved, "usd"),
    )
    table.add_row(
        "time / resolved",
        fmt_interval(cmp.side_a.time_per_resolved, "s"),
        fmt_interval(cmp.side_b.time_per_resolved, "s"),
    )
    p = "n/a" if cmp.mcnemar_p is None else f"{cmp.mcnemar_p:.4g}"
    stats = (
        f"exact McNemar (first repeat per task): only {escape(cmp.a)} resolved {cmp.mcnemar_b}, only "
        f"{escape(cmp.b)} resolved {cmp.mcnemar_c}, two-sided p = {p}\n"
        f"difference in resolve rate ({escape(cmp.a)} - {escape(cmp.b)}), paired bootstrap over tasks (all repeats): "
        f"{fmt_interval(cmp.difference, 'pts')} points"
    )
    verdict = Text(cmp.verdict, style="bold yellow" if cmp.same_tier else "bold green")
    parts: list = [table, Text.from_markup(stats), verdict]
    if cmp.caution:
        parts.append(Text("caution: " + cmp.caution, style="yellow"))
    if cmp.infra_shares:
        parts.append(Text("caution: " + cmp.infra_shares, style="yellow"))
    for redo in cmp.redo:  # whole lines (a command is copied from them)
        where = f"  (in {redo.cwd})" if redo.cwd and redo.cwd != os.getcwd() else ""
        what = redo.command or f"the command that wrote {redo.run_dir}, with --out {redo.run_dir}"
        parts.append(
            Text(f"redo {redo.side}'s {len(redo.tasks)} task(s): {what}{where}", no_wrap=True, overflow="ignore")
        )
    parts += flipped_lines(cmp)
    if cmp.only_a or cmp.only_b:
        parts.append(
            Text(
                f"not paired: {len(cmp.only_a)} task(s) only in {cmp.a}, {len(cmp.only_b)} only in {cmp.b}", style="dim"
            )
        )
    return Group(*parts)


def dating_table(figures: Figures) -> Table | None:
    """Each configuration's resolve rate split by its model's training cutoff (contamination)."""
    splits = [d for d in figures.dating if d.model]
    if not splits:
        return None
    table = Table(
        title="Contamination dating: resolve rate by task date vs the model's training cutoff (95% Wilson)",
        title_justify="left",
    )
    for col in ("config", "cutoff", "after cutoff", "before cutoff", "undated"):
        table.add_column(col, justify="left" if col in ("config", "cutoff") else "right", overflow="fold")
    notes = []
    for d in splits:
        if not d.cutoff:
            table.add_row(d.config, "[yellow]unknown[/]", "-", "-", "-")
            notes.append(f"{d.config}: {d.note}")
            continue
        cells = [
            f"{fmt_interval(side.rate)} ({side.resolved}/{side.trials})" if side.trials else "-"
            for side in (d.after, d.before, d.undated)
        ]
        table.add_row(d.config, d.cutoff, *cells)
        notes.append(f"{d.config}: cutoff {d.cutoff} ({d.cutoff_source})")
    table.caption = "\n".join(
        notes + ["after: created after the cutoff, so not in the training data; undated: the task has no created_at"]
    )
    table.caption_justify = "left"
    return table


def statement_table(figures: Figures) -> Table | None:
    """Each configuration's resolve rate per class of the tasks' statements (when any is classified)."""
    splits = [s for s in figures.statements if s.classified()]
    if not splits:
        return None
    names = [n for n in ORDER if any(n in s.classes for s in splits)]
    table = Table(title="Resolve rate by problem statement class (95% Wilson)", title_justify="left")
    table.add_column("config", overflow="fold")
    for name in names:
        table.add_column(name, justify="right", overflow="fold")
    for split in splits:
        cells = [
            f"{fmt_interval(side.rate)} ({side.resolved}/{side.trials})" if (side := split.classes.get(n)) else "-"
            for n in names
        ]
        table.add_row(split.config, *cells)
    table.caption = "thin: a subject line only; leaks_fix: names what the fix adds or changes (docs/tasks.md)"
    table.caption_justify = "left"
    return table


def flipped_lines(cmp: Comparison) -> list[Text]:
    """The tasks one side resolved (more often) and the other did not, each way, with the
    transcripts to open on both sides."""
    out: list[Text] = []
    single = all(p.trials_a == 1 and p.trials_b == 1 for p in cmp.tasks)
    for side, name in (("a", cmp.a), ("b", cmp.b)):
        won = [p for p in cmp.tasks if p.result == side]
        if not won:
            continue
        head = f"only {name} resolved" if single else f"resolved more often by {name}"
        out.append(Text(f"{head} ({len(won)} task{'s' if len(won) > 1 else ''}):", style="bold"))
        for p in won:
            rates = "" if single else f"  {p.rate_a:.0%} vs {p.rate_b:.0%}"
            out.append(Text(f"  {p.task_id}{rates}"))
            if p.why is not None:
                out += why_lines(p.why)
            for label, paths in ((cmp.a, p.transcripts_a), (cmp.b, p.transcripts_b)):
                for path in paths[:3]:
                    out.append(Text(f"      {label}: {path}", style="dim", no_wrap=True, overflow="ignore"))
    return out


def why_lines(why: FlipWhy) -> list[Text]:
    """A flipped task: the cause on the failing side, and where the two attempts went apart."""
    causes, where = describe(why)
    return [
        Text.from_markup(f"      cause on {escape(why.failing)}: [bold]{escape(causes)}[/]"),
        Text(f"      diverged at {where}"),
    ]


def print_controls(figures: Figures, console: Console) -> None:
    """The failed control checks (`controls`), first and loud: the numbers after them are suspect."""
    for failure in figures.controls:
        console.print(Panel(Text(failure.message, style="bold red"), border_style="red", title="control failed"))


def print_figures(
    figures: Figures,
    rows: list[ResultRow],
    console: Console | None = None,
    *,
    per_task: bool = True,
    comparisons: bool = False,
) -> None:
    """The full report of `wholeloop report`: per-task table, recipe, numbers with intervals,
    pass@k, recovery, failure analysis (and the comparisons when asked)."""
    console = console or Console()
    width = console.width
    print_controls(figures, console)
    if per_task:
        checks = {tid: status for run in figures.runs for tid, status in run.recipe.task_checks.items()}
        console.print(task_table(rows, width, checks))
    for tbl in (task_rate_table(figures, width),):
        if tbl is not None:
            console.print(tbl)
    for run in figures.runs:
        console.print(recipe_block(run.recipe, run.run_dir, run.configs))
    console.print(stats_table(figures, width))
    console.print(acceptance_block(figures))
    if figures.front is not None:
        from .front_view import front_table

        console.print(front_table(figures.front, width))
    if any(c.gold_size or c.tokens for c in figures.regimes.configs):
        from .regimes import SIZE_REGIMES, regimes_table

        console.print(regimes_table(figures.regimes, width))
        console.print(regimes_table(figures.regimes, width, SIZE_REGIMES, caption=False))
    for c in figures.configs:
        retried = (
            (
                f", of which {usd(c.retried_cost_usd)} ({c.retried_tokens_in:,} in / {c.retried_tokens_out:,} out) on "
                f"{c.retried_tries} retried tr{'y' if c.retried_tries == 1 else 'ies'} (the machine failed them; "
                "on record in results.jsonl, in no rate)"
            )
            if c.retried_tries
            else ""
        )
        console.print(
            Text(
                f"  {c.name}: {c.tokens_in:,} tokens in / {c.tokens_out:,} out, "
                f"{usd(c.total_cost_usd)} in all over {c.attempts} attempt(s){retried}"
            )
        )
    tbl = passk_table(figures, width)
    if tbl is not None:
        console.print(tbl)
    for tbl in (dating_table(figures), statement_table(figures)):
        if tbl is not None:
            console.print(tbl)
    if figures.recovery:
        console.print(recovery_table(figures, width))
    console.print(failures_block(figures, width))
    if comparisons:
        for cmp in figures.comparisons:
            console.print(comparison_block(cmp, width))
    _print_tampering(rows, console)
    _print_infra_errors(rows, console)
