"""`wholeloop decide SWEEP`: the decision record, one self-contained HTML page and its Markdown twin.

From the sweep's record (sweep.json) and its cells' run folders alone (no Docker): the question,
the candidates with each one's full recipe, the front (front.py), the failure-cost weighting
(`--scoring`), what the data cannot separate from the best, the hardest failures with links to
their transcripts, the split by the models' training cutoffs (contamination), and the rule that
picks the recommendation, applied, so that a reviewer can check every step (docs/sweeps.md).

The rules (`--rule`):

- `cheapest` (default): of the configurations the data cannot separate from the best at alpha
  (Holm-corrected, front.py), the cheapest per trial; ties to the higher rate, then the quicker.
- `failure-cost`: of the same, the lowest expected failure cost per task under `--scoring`; ties
  to the cheaper.

A configuration whose cost is unknown is never the cheapest: it is named as left out.
"""

from __future__ import annotations

import json
import math
import os
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from ..errors import UserError
from ..records import write_atomic
from ..report.figures import Figures, compute_figures
from ..report.format import pct, usd
from ..report.front import ALPHA, Front
from ..report.front_view import caption, front_markdown, front_svg, rows
from ..report.regimes import TABLES, spread_lines, table_rows
from ..report.stats import BootstrapSettings

SWEEP_RECORD = "sweep.json"  # as harness/sweep/plan.py names it (the one writer: scheduler.py)
RULES = {
    "cheapest": "the cheapest configuration per trial that the data cannot separate from the best at alpha "
    "(Holm-corrected); ties go to the higher rate, then the quicker",
    "failure-cost": "the configuration with the lowest expected failure cost per task (--scoring) that the data "
    "cannot separate from the best at alpha (Holm-corrected); ties go to the cheaper",
}


class NotASweep(UserError):
    """A folder that is not a sweep's (no sweep.json), or whose cells have no results yet."""

    hint = "give the folder `wholeloop sweep` wrote (it holds sweep.json; default runs/sweeps/<name>)"


class Candidate(BaseModel):
    name: str
    run: str  # the cell's run folder
    axes: dict[str, str] = Field(default_factory=dict)
    recipe: dict[str, Any] = Field(default_factory=dict)  # the cell's RunSpec, as sweep.json keeps it
    status: str = ""
    expected_failure_cost: float | None = None


class Decision(BaseModel):
    question: str
    sweep: str
    rule: str
    rule_text: str
    alpha: float
    metric: str
    recommended: str | None = None
    because: str = ""
    considered: list[str] = Field(default_factory=list)  # not separable from the best
    left_out: list[str] = Field(default_factory=list)  # not separable, but their cost is unknown
    candidates: list[Candidate] = Field(default_factory=list)
    scoring: str = ""


def sweep_cells(sweep_dir: Path | str) -> tuple[dict, list[Path]]:
    """sweep.json and the run folders of its cells that hold results; NotASweep otherwise."""
    sweep_dir = Path(sweep_dir)
    try:
        record = json.loads((sweep_dir / SWEEP_RECORD).read_text())
    except FileNotFoundError:
        raise NotASweep(f"{sweep_dir}: no {SWEEP_RECORD} here: not a sweep's folder") from None
    except (OSError, ValueError) as exc:
        raise NotASweep(f"{sweep_dir / SWEEP_RECORD}: cannot be read: {exc}") from None
    folders = [sweep_dir / c["run"] for c in record.get("cells", [])]
    ran = [f for f in folders if (f / "results.jsonl").is_file() and (f / "results.jsonl").stat().st_size]
    if not ran:
        raise NotASweep(f"{sweep_dir}: none of its cells has a result yet", "run the sweep first (`wholeloop sweep`)")
    return record, ran


def decide(
    sweep_dir: Path | str,
    *,
    scoring: Path | str | None = None,
    policy: Path | str | None = None,
    alpha: float = ALPHA,
    metric: str = "resolve",
    rule: str = "cheapest",
    question: str | None = None,
    settings: BootstrapSettings | None = None,
) -> tuple[Figures, Decision]:
    """The figures of the sweep's cells and the decision the rule makes of them."""
    if rule not in RULES:
        raise UserError(f"rule {rule!r}: not a rule", f"one of {', '.join(RULES)}")
    if rule == "failure-cost" and scoring is None:
        raise UserError("the failure-cost rule needs a scoring file", "give --scoring FILE (docs/outcomes.md)")
    record, folders = sweep_cells(sweep_dir)
    figures = compute_figures(
        folders,
        scoring,
        policy=policy,
        metric=metric,
        alpha=alpha,
        settings=settings,
        recovery=False,
        comparisons=False,  # every pair of cells: the record compares each with the best (the front)
    )
    front = figures.front or Front(metric=metric, alpha=alpha)
    by_label = {c.get("label") or c["name"]: c for c in record.get("cells", [])}
    scores = {s.config: s.expected_cost_per_task.value for s in figures.scoring.configs}
    decision = Decision(
        question=question or record.get("sweep", {}).get("question") or _question(record),
        sweep=record.get("name", Path(sweep_dir).name),
        rule=rule,
        rule_text=RULES[rule],
        alpha=alpha,
        metric=metric,
        scoring=figures.scoring.scoring.source,
    )
    for cfg in figures.configs:
        cell = by_label.get(cfg.label, {})
        decision.candidates.append(
            Candidate(
                name=cfg.name,
                run=str(cfg.run_dir),
                axes=cell.get("axes", {}),
                recipe=cell.get("recipe", {}),
                status=cell.get("status", ""),
                expected_failure_cost=scores.get(cfg.name),
            )
        )
    _apply(decision, front, scores)
    return figures, decision


def _question(record: dict) -> str:
    axes = ", ".join(str(k) for k in (record.get("sweep", {}).get("matrix") or {})) or "the configurations"
    paths = ", ".join(record.get("sweep", {}).get("suite", {}).get("paths") or []) or "this suite"
    return f"Which configuration ({axes}) should we use on {paths}, and at what cost?"


def _apply(decision: Decision, front: Front, scores: dict[str, float | None]) -> None:
    if not front.points:
        decision.because = "one configuration only: nothing to choose between"
        if len(decision.candidates) == 1:
            decision.recommended = decision.candidates[0].name
        return
    pool = [front.point(c) for c in front.not_separable]
    decision.considered = [p.config for p in pool]

    def cost(p) -> float:
        iv = p.cost_per_trial
        return math.inf if iv.value is None or iv.unknown else iv.value

    priced = [p for p in pool if math.isfinite(cost(p))]
    decision.left_out = [p.config for p in pool if not math.isfinite(cost(p))]

    def key(p) -> tuple:
        if decision.rule == "failure-cost":
            return (round(scores[p.config] or 0.0, 9), round(cost(p), 9), p.config)
        return (round(cost(p), 9), -(p.resolve_rate.value or 0.0), p.time_per_trial.value or 0.0, p.config)

    if decision.rule == "failure-cost":
        priced = [p for p in pool if scores.get(p.config) is not None]
    if not priced:
        decision.because = "no configuration that cannot be separated from the best has a known cost"
        return
    chosen = min(priced, key=key)
    decision.recommended = chosen.config
    others = len(decision.considered) - 1
    said = (
        f"{chosen.config}: {pct(chosen.resolve_rate.value)} {front.metric} rate at {usd(cost(chosen))} a trial. "
        f"The best on rate is {front.best}; "
    )
    if chosen.config == front.best:
        said += "it is the best itself" + (
            f", and {others} other configuration(s) cannot be separated from it" if others else ""
        )
    else:
        vs = chosen.versus_best
        said += (
            f"the data cannot separate {chosen.config} from it (Holm-adjusted p = "
            f"{vs.p_holm:.3g} >= {front.alpha:g}, {vs.shared_tasks} paired tasks)"
            if vs is not None and vs.p_holm is not None
            else "it is not separable from it"
        )
    if decision.rule == "failure-cost":
        said += f"; its expected failure cost per task is {scores[chosen.config]:.3g} ({decision.scoring})"
    if front.min_p is not None and front.min_p >= front.alpha:
        said += (
            f". With these few tasks no configuration can be separated from the best (the smallest p the test "
            f"can reach is {front.min_p:.3g}), so the rule weighs every candidate: run more tasks before trusting it"
        )
    decision.because = said + "."


# ---------------------------------------------------------------------------- the pages


def write_decision(
    sweep_dir: Path | str, out_dir: Path | str | None = None, **options: Any
) -> tuple[Path, Path, Decision]:
    """decision.html and decision.md in `out_dir` (default: the sweep's folder)."""
    sweep_dir = Path(sweep_dir)
    out = Path(out_dir) if out_dir is not None else sweep_dir
    out.mkdir(parents=True, exist_ok=True)
    figures, decision = decide(sweep_dir, **options)
    html, md = out / "decision.html", out / "decision.md"
    write_atomic(html, render_html(figures, decision, out))
    write_atomic(md, render_markdown(figures, decision, out))
    return html, md, decision


def _link(target: str | Path, base: Path) -> str:
    return os.path.relpath(Path(target).resolve(), base.resolve())


def _failures(figures: Figures, decision: Decision, base: Path) -> list[dict]:
    """The hardest failures (no configuration resolved the task), then the recommended
    configuration's own failures, each with its transcripts."""
    out = []
    for hard in figures.failures.hardest[:10]:
        links = [
            (f"{t.config} #{t.repeat}", _link(Path(t.run_dir) / t.transcript_path, base))
            for t in hard.transcripts[:4]
            if t.transcript_path
        ]
        said = ", ".join(f"{k} x{v}" for k, v in hard.outcomes.items())
        out.append({"task": hard.task_id, "what": f"no configuration resolved it ({said})", "links": links})
    if decision.recommended:
        cells = [
            c
            for c in figures.cells
            if c.config == decision.recommended and c.final and not c.resolved and c.outcome not in ("infra_error",)
        ]
        for c in cells[:10]:
            link = _link(Path(c.run_dir) / c.transcript_path, base) if c.transcript_path else ""
            out.append(
                {
                    "task": c.task_id,
                    "what": f"the recommended configuration failed it: {c.outcome} (repeat {c.repeat})",
                    "links": [(f"{c.config} #{c.repeat}", link)] if link else [],
                }
            )
    return out


def _dating_rows(figures: Figures) -> list[list[str]]:
    return [
        [
            d.config,
            d.cutoff or "unknown",
            f"{pct(d.after.rate.value)} of {d.after.trials}",
            f"{pct(d.before.rate.value)} of {d.before.trials}",
            f"{pct(d.undated.rate.value)} of {d.undated.trials}",
        ]
        for d in figures.dating
    ]


CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;background:#f8fafc;color:#111827}
main{max-width:1180px;margin:0 auto;padding:24px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #e5e7eb;padding-bottom:4px}
.q{font-size:17px;background:#eef2ff;border-left:4px solid #4f46e5;padding:10px 14px;margin:12px 0}
.rec{font-size:16px;background:#ecfdf5;border-left:4px solid #059669;padding:10px 14px;margin:12px 0}
table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}
th,td{border:1px solid #e5e7eb;padding:4px 7px;text-align:left;vertical-align:top}
th{background:#f1f5f9}.charts{display:flex;flex-wrap:wrap;gap:16px}.charts>div{background:#fff;border:1px solid #e5e7eb}
pre{background:#fff;border:1px solid #e5e7eb;padding:8px;overflow:auto;font-size:12px}
.muted{color:#6b7280}tr.chosen td{background:#ecfdf5;font-weight:600}
"""


def render_html(figures: Figures, decision: Decision, base: Path) -> str:
    front = figures.front
    e = escape
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>Decision: {e(decision.sweep)}</title><style>{CSS}</style></head><body><main>",
        f"<h1>Decision record: {e(decision.sweep)}</h1>",
        f"<p class='muted'>written {datetime.now(UTC):%Y-%m-%d %H:%M UTC} by <code>wholeloop decide</code> from "
        f"the sweep's run folders alone; {len(decision.candidates)} candidates, {decision.metric} rate, alpha = "
        f"{decision.alpha:g}</p>",
        f"<div class='q' id='question'><b>Question.</b> {e(decision.question)}</div>",
        "<div class='rec' id='recommendation'><b>Recommendation.</b> "
        + (e(decision.recommended) if decision.recommended else "none")
        + f"<br><span>Rule: {e(decision.rule_text)}.</span><br><span>{e(decision.because)}</span>"
        + (f"<br><span>Left out (cost unknown): {e(', '.join(decision.left_out))}</span>" if decision.left_out else "")
        + "</div>",
    ]
    if front is not None and front.points:
        table = rows(front)
        parts += [
            "<h2 id='front'>The front</h2>",
            f"<div class='charts'><div>{front_svg(front, 'cost')}</div><div>{front_svg(front, 'time')}</div></div>",
            "<table id='front-table'><thead><tr>"
            + "".join(f"<th>{e(h)}</th>" for h in table[0])
            + "</tr></thead><tbody>",
        ]
        for r in table:
            chosen = " class='chosen'" if r["configuration"] == decision.recommended else ""
            parts.append(f"<tr{chosen}>" + "".join(f"<td>{e(v)}</td>" for v in r.values()) + "</tr>")
        parts.append("</tbody></table>")
        parts.append("".join(f"<p class='muted'>{e(line)}</p>" for line in caption(front).splitlines()))
        parts += [
            "<h2 id='separable'>What the data cannot separate</h2>",
            f"<p>From the best ({e(front.best or '-')}), at alpha = {front.alpha:g} with {e(front.correction)} "
            f"({e(front.test)}): {e(', '.join(c for c in front.not_separable if c != front.best) or 'none')}.</p>",
        ]
    parts.append("<h2 id='scoring'>Failure-cost weighting</h2>")
    parts.append(
        f"<p>{e(decision.scoring)}</p><table><thead><tr><th>configuration</th><th>expected failure cost per task</th></tr></thead><tbody>"
    )
    for c in decision.candidates:
        value = "n/a" if c.expected_failure_cost is None else f"{c.expected_failure_cost:.3g}"
        parts.append(f"<tr><td>{e(c.name)}</td><td>{value}</td></tr>")
    parts.append("</tbody></table>")
    parts.append("<h2 id='failures'>Hardest failures</h2>")
    failures = _failures(figures, decision, base)
    if not failures:
        parts.append(
            "<p class='muted'>none: every task was resolved by some configuration, and the recommended one failed none</p>"
        )
    else:
        parts.append("<table><thead><tr><th>task</th><th>what</th><th>transcripts</th></tr></thead><tbody>")
        for f in failures:
            links = " · ".join(f"<a href='{e(href)}'>{e(text)}</a>" for text, href in f["links"]) or "-"
            parts.append(f"<tr><td>{e(f['task'])}</td><td>{e(f['what'])}</td><td>{links}</td></tr>")
        parts.append("</tbody></table>")
    parts.append("<h2 id='contamination'>Contamination split (task date against the model's training cutoff)</h2>")
    parts.append(
        "<table><thead><tr><th>configuration</th><th>cutoff</th><th>after the cutoff</th><th>before</th><th>undated</th></tr></thead><tbody>"
    )
    for dated in _dating_rows(figures):
        parts.append("<tr>" + "".join(f"<td>{e(v)}</td>" for v in dated) + "</tr>")
    parts.append("</tbody></table>")
    parts.append(
        "<h2 id='regimes'>Regimes (rate by gold patch size, tokens per trial, repository size and files "
        "touched, 95% Wilson)</h2>"
    )
    for which in TABLES:
        heads, regime_rows = table_rows(figures.regimes, which)
        parts.append("<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in heads) + "</tr></thead><tbody>")
        for regime in regime_rows:
            parts.append("<tr>" + "".join(f"<td>{e(v)}</td>" for v in regime) + "</tr>")
        parts.append("</tbody></table>")
    spreads = spread_lines(figures.regimes) or ["no prompt variants of one agent and model to compare"]
    parts.append("".join(f"<p>{e(line)}</p>" for line in spreads))
    parts.append("<h2 id='candidates'>The candidates and their recipes</h2>")
    for c in decision.candidates:
        axes = ", ".join(f"{k} = {v}" for k, v in c.axes.items())
        parts.append(
            f"<details><summary><b>{e(c.name)}</b> <span class='muted'>{e(axes)} · {e(c.status)} · "
            f"<a href='{e(_link(c.run, base))}'>run folder</a></span></summary>"
            f"<pre>{e(yaml.safe_dump(c.recipe, sort_keys=False) if c.recipe else '(no recipe recorded)')}</pre></details>"
        )
    parts.append("</main></body></html>")
    return "".join(parts)


def render_markdown(figures: Figures, decision: Decision, base: Path) -> str:
    front = figures.front
    out = [
        f"# Decision record: {decision.sweep}",
        "",
        f"**Question.** {decision.question}",
        "",
        f"**Recommendation.** {decision.recommended or 'none'}",
        "",
        f"Rule: {decision.rule_text}. {decision.because}",
        "",
    ]
    if decision.left_out:
        out += [f"Left out (cost unknown): {', '.join(decision.left_out)}", ""]
    if front is not None and front.points:
        out += ["## The front", "", front_markdown(front), "## What the data cannot separate", ""]
        others = [c for c in front.not_separable if c != front.best]
        out += [f"From the best ({front.best}): {', '.join(others) or 'none'}.", ""]
    out += ["## Failure-cost weighting", "", decision.scoring, ""]
    out += [
        f"- {c.name}: {'n/a' if c.expected_failure_cost is None else f'{c.expected_failure_cost:.3g}'}"
        for c in decision.candidates
    ]
    out += ["", "## Hardest failures", ""]
    if not _failures(figures, decision, base):
        out.append("none: every task was resolved by some configuration, and the recommended one failed none")
    for f in _failures(figures, decision, base):
        links = ", ".join(f"[{text}]({href})" for text, href in f["links"])
        out.append(f"- {f['task']}: {f['what']} {links}".rstrip())
    out += [
        "",
        "## Contamination split",
        "",
        "| configuration | cutoff | after | before | undated |",
        "| --- | --- | --- | --- | --- |",
    ]
    out += ["| " + " | ".join(r) + " |" for r in _dating_rows(figures)]
    out += ["", "## Regimes"]
    for which in TABLES:
        heads, regime_rows = table_rows(figures.regimes, which)
        out += ["", "| " + " | ".join(heads) + " |", "|" + " --- |" * len(heads)]
        out += ["| " + " | ".join(r) + " |" for r in regime_rows]
    out += ["", *(spread_lines(figures.regimes) or ["no prompt variants of one agent and model to compare"])]
    out += ["", "## The candidates and their recipes", ""]
    for c in decision.candidates:
        out += [
            f"### {c.name}",
            "",
            f"run folder: {_link(c.run, base)}",
            "",
            "```yaml",
            yaml.safe_dump(c.recipe, sort_keys=False).rstrip() if c.recipe else "(no recipe recorded)",
            "```",
            "",
        ]
    return "\n".join(out)
