"""Terminal summaries of runs (rich), computed from the run folders alone."""

from __future__ import annotations

from collections import Counter, defaultdict

from rich.console import Console
from rich.table import Table

from ..records import ResultRow

OUTCOME_STYLE = {
    "resolved": "green",
    "unresolved": "yellow",
    "regression": "red",
    "empty_patch": "dim",
    "patch_apply_failed": "magenta",
    "test_timeout": "magenta",
    "infra_error": "bold red",
}


def _money(value: float | None, unknown: bool) -> str:
    if unknown:
        return "unknown"
    return f"${value:.4f}" if value else "$0"


def _secs(value: float) -> str:
    return f"{value:.1f}s" if value < 120 else f"{value / 60:.1f}m"


def summary_table(rows: list[ResultRow], title: str = "Summary") -> Table:
    """One line per configuration: resolve rate (infra errors left out of the denominator)."""
    table = Table(title=title, title_justify="left")
    for col in ("config", "attempts", "resolved", "rate", "outcomes", "tokens in/out", "cost", "mean time"):
        table.add_column(col, justify="right" if col not in ("config", "outcomes") else "left")
    by_config: dict[str, list[ResultRow]] = defaultdict(list)
    for row in rows:
        if row.final:
            by_config[row.config].append(row)
    for config, group in by_config.items():
        scored = [r for r in group if r.outcome != "infra_error"]
        resolved = sum(r.resolved for r in scored)
        rate = f"{100 * resolved / len(scored):.0f}%" if scored else "n/a"
        counts = Counter(r.outcome for r in group)
        outcomes = ", ".join(f"[{OUTCOME_STYLE.get(k, '')}]{k}[/] {v}" for k, v in counts.most_common())
        tokens = f"{sum(r.usage.input_tokens for r in group):,}/{sum(r.usage.output_tokens for r in group):,}"
        unknown = any(r.cost_usd is None for r in group)
        cost = _money(sum(r.cost_usd or 0 for r in group), unknown)
        mean = _secs(sum(r.phases.total_s for r in group) / len(group))
        table.add_row(config, str(len(group)), str(resolved), rate, outcomes, tokens, cost, mean)
    return table


def task_table(rows: list[ResultRow]) -> Table:
    table = Table(title="Per task", title_justify="left")
    for col in ("task", "config", "rep", "outcome", "FAIL_TO_PASS", "PASS_TO_PASS", "stop", "agent", "grading", "cost"):
        table.add_column(col, justify="left" if col in ("task", "config", "outcome", "stop") else "right")
    for row in sorted(rows, key=lambda r: (r.task_id, r.config, r.repeat, r.attempt)):
        if not row.final:
            continue
        style = OUTCOME_STYLE.get(row.outcome, "")
        f2p = f"{row.fail_to_pass.get('passed', 0)}/{row.fail_to_pass.get('total', 0)}" if row.fail_to_pass else "-"
        p2p = f"{row.pass_to_pass.get('passed', 0)}/{row.pass_to_pass.get('total', 0)}" if row.pass_to_pass else "-"
        table.add_row(
            row.task_id, row.config, str(row.repeat), f"[{style}]{row.outcome}[/]", f2p, p2p, row.stop_reason,
            _secs(row.phases.agent_s), _secs(row.phases.grading_s), _money(row.cost_usd, row.cost_usd is None),
        )
    return table


def print_report(rows: list[ResultRow], console: Console | None = None, *, per_task: bool = True) -> None:
    console = console or Console()
    if per_task:
        console.print(task_table(rows))
    console.print(summary_table(rows))
    errors = [r for r in rows if r.final and r.error]
    for row in errors[:10]:
        console.print(f"[bold red]infra_error[/] {row.task_id}: {row.error.splitlines()[0][:300]}")
    if len(errors) > 10:
        console.print(f"... and {len(errors) - 10} more infra errors (see results.jsonl)")
