"""`wholeloop report RUN... --html FILE`: one self-contained HTML file a reviewer opens from disk.

Everything is inline (CSS, JS, SVG charts); nothing is fetched. The first render builds only the
summaries, charts and the task x configuration matrix. Each repeat's detail (transcript, patches,
test results) is a separate `<script type="application/json">` block, gzip-compressed and base64
encoded, that the page decodes only when its cell is opened - so a run of thousands of attempts
stays quick to open. Payloads are capped (long outputs keep their head and tail, with a note).

Numbers come from `figures.compute_figures` (given, or computed here); the matrix and the attempt
views are built here from the run folders (rows, transcripts, patches, test output).
"""

from __future__ import annotations

import base64
import gzip
import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

from ..records import Manifest, ResultRow, open_run, write_atomic
from ..scrub import scrub_bytes
from ..transcript import read_transcript
from . import format as fmt
from . import html_view
from .attempt import PASSING, fail_to_pass, failing_tests, failure_messages, problem_statement
from .errors import ReportInputError
from .svgplot import Point, Series, TrendLine, box_strip_svg, colour, cost_rate_svg, phase_bars_svg, trend_svg

TEMPLATES = Path(__file__).resolve().parent.parent / "data" / "report"
MAX_PAYLOAD = 250_000  # bytes of JSON per repeat before compression; caps shrink until it fits
MAX_EVENTS = 400  # events kept per transcript (head and tail)
MAX_TESTS = 500  # per-test statuses kept per attempt (failing ones first)
TEST_TAIL_LINES = 120


@dataclass
class Rep:
    """One (task, configuration, repeat) of one run: its attempts share a transcript."""

    index: int
    run_dir: Path
    run_id: str
    config: str  # unique name across the report's runs (as figures.load_configs names it)
    label: str  # the config label in results.jsonl
    rows: list[ResultRow] = field(default_factory=list)

    @property
    def final(self) -> ResultRow:
        finals = [r for r in self.rows if r.final]
        return finals[-1] if finals else self.rows[-1]


def _cap(text: str, limit: int) -> str:
    """Head and tail of a long string, with a note saying where the whole of it is kept."""
    if text is None or len(text) <= limit:
        return text
    head = limit // 3
    tail = limit - head
    cut = len(text) - head - tail
    return (
        text[:head]
        + f"\n[... {cut:,} characters left out of the HTML report; the run folder has all of it ...]\n"
        + text[-tail:]
    )


def _cap_value(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        return _cap(value, limit)
    if isinstance(value, dict):
        return {k: _cap_value(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_cap_value(v, limit) for v in value]
    return value


def _compact_event(event: Any, limit: int, shown: set[str]) -> dict | None:
    """What the attempt view needs of one transcript event (duplicates and hashes dropped).
    `shown` holds the prompt and feedback texts already in the view (a later attempt resends them)."""
    d = event.model_dump(mode="json")
    kind = d.get("type")
    for key in ("seq", "time"):
        d.pop(key, None)
    if kind == "feedback":
        shown.add(d.get("text", ""))
    if kind == "model_request":
        # Only what the agent did not say itself, once: system and user prompts, feedback.
        prompts = []
        for m in d.get("new_messages", []):
            text = str(m.get("content", ""))
            if m.get("role") in ("system", "user") and text not in shown:
                shown.add(text)
                prompts.append({"role": m.get("role"), "content": _cap(text, limit)})
        if not prompts:
            return None
        return {"type": kind, "step": d.get("step"), "elapsed_s": d.get("elapsed_s"), "prompts": prompts}
    if kind == "model_response":
        d.pop("tool_calls", None)  # each call follows as its own tool_call event
    if kind == "patch":
        d["diff"] = ""  # the patch tab shows patch.diff
    return _cap_value(d, limit)


def _tests(row: ResultRow, limit: int) -> list[list[str]]:
    """[name, status, kind] per hidden test, failing first. grading.classify writes the
    FAIL_TO_PASS tests first, then PASS_TO_PASS, so the first fail_to_pass.total are F2P."""
    n_f2p = int(row.fail_to_pass.get("total", 0)) if row.fail_to_pass else 0
    out = [[name, status, "F2P" if i < n_f2p else "P2P"] for i, (name, status) in enumerate(row.tests.items())]
    out.sort(key=lambda t: (t[1] in ("PASSED", "XFAIL"), t[2] != "F2P"))
    return out[:limit]


def _tail(path: Path, lines: int, limit: int) -> str:
    if not path.exists():
        return ""
    text = path.read_text(errors="replace").rstrip("\n").splitlines()
    kept = text[-lines:]
    prefix = f"[... {len(text) - lines:,} earlier lines in {path.name} ...]\n" if len(text) > lines else ""
    return _cap(prefix + "\n".join(kept), limit)


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def build_payload(rep: Rep, recovery: dict[tuple, dict] | None = None, manifest: Manifest | None = None) -> dict:
    """The detail of one repeat, capped so the JSON stays under MAX_PAYLOAD bytes."""
    manifest = manifest if manifest is not None else open_run(rep.run_dir).info()
    events: list = []
    transcript = rep.run_dir / rep.final.transcript_path if rep.final.transcript_path else None
    if transcript and transcript.is_file():
        events = read_transcript(transcript)
    first = min(rep.rows, key=lambda r: r.attempt)
    why = {
        "problem": problem_statement(rep.run_dir, first, events, manifest),
        "messages": {r.attempt: failure_messages(rep.run_dir, r, manifest) for r in rep.rows},
    }
    limit, payload = 8000, {}
    for _ in range(6):
        payload = _payload(rep, events, limit, recovery or {}, why)
        if len(json.dumps(payload, ensure_ascii=False)) <= MAX_PAYLOAD:
            break
        limit //= 2
    return payload


def _payload(rep: Rep, events: list, limit: int, recovery: dict[tuple, dict], why: dict) -> dict:
    shown: set[str] = set()
    compact = [e for e in (_compact_event(ev, limit, shown) for ev in events) if e is not None]
    notes = []
    if len(compact) > MAX_EVENTS:
        gap = len(compact) - MAX_EVENTS
        compact = (
            compact[: MAX_EVENTS // 4] + [{"type": "gap", "count": gap}] + compact[-(MAX_EVENTS - MAX_EVENTS // 4) :]
        )
        notes.append(f"{gap} events left out of the middle of the transcript")
    if limit < 8000:
        notes.append(f"long texts cut to {limit:,} characters to keep this report small")
    attempts = []
    for row in sorted(rep.rows, key=lambda r: r.attempt):
        adir = rep.run_dir / row.dir if row.dir else None
        patch = _read(rep.run_dir / row.patch_path) if row.patch_path else ""
        grade = json.loads(_read(adir / "grade.json") or "{}") if adir else {}
        messages = why["messages"].get(row.attempt, {})
        attempts.append(
            {
                "attempt": row.attempt,
                "outcome": row.outcome,
                "resolved": row.resolved,
                "stop_reason": row.stop_reason,
                "steps": row.steps,
                "model_calls": row.model_calls,
                "usage": row.usage.model_dump(),
                "cost_usd": row.cost_usd,
                "phases": row.phases.model_dump(),
                "error": _cap(row.error, limit) if row.error else None,
                "note": row.note,
                "patch": _cap(patch, max(limit * 8, 20_000)),
                "patch_bytes": row.patch_bytes,
                "tests": _tests(row, MAX_TESTS),
                "n_tests": len(row.tests),
                "f2p": row.fail_to_pass,
                "p2p": row.pass_to_pass,
                "test_output": _tail(adir / "test_output.txt", TEST_TAIL_LINES, limit * 2) if adir else "",
                "grade": {
                    k: grade.get(k)
                    for k in (
                        "apply_method",
                        "reverted",
                        "exit_code",
                        "consistent",
                        "note",
                        "stripped",
                        "channels",
                        "tampering",
                        "grader_version",
                    )
                },
                "failing": [[t, st, kind, _cap(messages.get(t, ""), limit)] for t, st, kind in failing_tests(row)][
                    :MAX_TESTS
                ],
                "f2p_passing": [t for t in fail_to_pass(row) if row.tests.get(t) in PASSING] if row.resolved else [],
                "dir": row.dir,
                "started_at": row.started_at,
                "finished_at": row.finished_at,
                "recovery": recovery.get((rep.config, row.task_id, row.repeat, row.attempt)),
            }
        )
    final = rep.final
    return {
        "task": final.task_id,
        "config": rep.config,
        "repeat": final.repeat,
        "run": rep.run_id,
        "problem": _cap(why["problem"], limit),
        "model": final.model,
        "agent": final.agent,
        "instance_id": final.instance_id,
        "transcript_path": final.transcript_path,
        "attempts": attempts,
        "events": compact,
        "notes": notes,
    }


def encode_payload(payload: dict) -> str:
    """gzip + base64: text that is safe inside a <script> element and ~5x smaller than JSON."""
    raw = scrub_bytes(
        json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
    )  # compressed: past write_atomic's scrub
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")


def collect(run_dirs: list[Path]) -> list[Rep]:
    """The repeats of every run. A configuration label found in two runs is named
    "label [run folder name]", as figures.load_configs names it, so their repeats stay apart."""
    loaded = []
    for run_dir in run_dirs:
        folder = open_run(run_dir)
        loaded.append((folder.path, folder.info().run_id or folder.path.name, folder.latest()))
    runs_of: dict[str, set[str]] = defaultdict(set)
    for run_dir, _, rows in loaded:
        for row in rows:
            runs_of[row.config].add(str(run_dir))
    reps: dict[tuple, Rep] = {}
    for run_dir, run_id, rows in loaded:
        for row in rows:
            name = row.config if len(runs_of[row.config]) == 1 else f"{row.config} [{run_dir.name}]"
            key = (str(run_dir), row.task_id, row.config, row.repeat)
            if key not in reps:
                reps[key] = Rep(index=len(reps), run_dir=run_dir, run_id=run_id, config=name, label=row.config)
            reps[key].rows.append(row)
    return list(reps.values())


def _figures_dict(run_dirs: list[Path], figures: Any) -> dict:
    if figures is None:
        from .figures import compute_figures

        figures = compute_figures(run_dirs)
    return dict(figures) if isinstance(figures, dict) else figures.model_dump(mode="json")


def _recovery_index(figs: dict) -> dict[tuple, dict]:
    out = {}
    for cfg in figs.get("recovery", []):
        for a in cfg.get("attempts", []):
            out[(cfg["config"], a["task_id"], a["repeat"], a["attempt"])] = a
    return out


def _charts(view: dict, reps: list[Rep]) -> dict:
    """The cost/resolve-rate plot (one point per configuration) and the time distributions."""
    points = []
    series: dict[str, list[Series]] = {k: [] for k in ("total_s", "agent_s", "model_s", "grading_s")}
    rows_of: dict[str, list[ResultRow]] = defaultdict(list)
    for rep in reps:
        rows_of[rep.config] += rep.rows
    for i, cfg in enumerate(view["configs"]):
        cfg["colour"] = c = colour(i)
        if cfg.get("mean_cost") is not None and cfg.get("rate") is not None:
            points.append(
                Point(
                    cfg["label"],
                    cfg["mean_cost"],
                    cfg["rate"],
                    cfg.get("rate_lo"),
                    cfg.get("rate_hi"),
                    cfg.get("cost_lo"),
                    cfg.get("cost_hi"),
                    c,
                )
            )
        for key in series:
            series[key].append(Series(cfg["label"], [r.phases.model_dump()[key] for r in rows_of[cfg["label"]]], c))
    phases = []
    for cfg in view["configs"]:
        rows = rows_of[cfg["label"]] or []
        n = max(len(rows), 1)

        def mean(f, rows=rows, n=n) -> float:
            return sum(f(r.phases) for r in rows) / n

        phases.append(
            (
                cfg["label"],
                {
                    "image": mean(lambda p: p.image_s),
                    "container start": mean(lambda p: p.container_start_s),
                    "agent working": mean(lambda p: max(p.agent_s - p.retry_wait_s, 0.0)),
                    "waiting on retries": mean(lambda p: p.retry_wait_s),
                    "patch": mean(lambda p: p.patch_s),
                    "grading": mean(lambda p: p.grading_s),
                },
            )
        )
    titles = {
        "total_s": "Total time per attempt",
        "agent_s": "Agent phase (wall clock)",
        "model_s": "Time in model calls",
        "grading_s": "Grading with the hidden tests",
    }
    return {
        "cost": cost_rate_svg(points) if points else "",
        "phases": phase_bars_svg(phases),
        "times": [box_strip_svg(series[k], title=t) for k, t in titles.items()],
    }


def trend_view(series: list[dict], *, what: str, source: str) -> dict:
    """The "Over time" section from trend series (`harness.history.trend.TrendSeries`, dumped to
    JSON-able dicts): three charts (resolve rate, cost per resolved task, time per task) and a
    table per series. Plain data in, so reports never depend on the index itself."""
    runs = sorted({(p.get("started_at") or "", p["uid"]) for s in series for p in s["points"]})
    position = {key: i for i, key in enumerate(runs)}
    x_labels = [started[:10] if started else "?" for started, _ in runs]
    charts, tables = [], []
    for title, key, kind in (
        ("Resolve rate", "resolve_rate", "rate"),
        ("Cost per resolved task", "cost_per_resolved", "usd"),
        ("Time per task", "time_per_task", "seconds"),
    ):
        lines = []
        for i, s in enumerate(series):
            label = f"{s['suite']} · {s['config']}" if len({x["suite"] for x in series}) > 1 else s["config"]
            pts = [
                (
                    position[(p.get("started_at") or "", p["uid"])],
                    p[key].get("value"),
                    p[key].get("low"),
                    p[key].get("high"),
                )
                for p in s["points"]
            ]
            lines.append(TrendLine(label, pts, colour(i)))
        charts.append(trend_svg(lines, x_labels, title=title, kind=kind))
    for s in series:
        rows = []
        for p in s["points"]:
            rate, cost, time_ = p["resolve_rate"], p["cost_per_resolved"], p["time_per_task"]
            rows.append(
                {
                    "started": (p.get("started_at") or "")[:16].replace("T", " "),
                    "run_id": p["run_id"],
                    "finished": p.get("finished", True),
                    "tasks": p["tasks"],
                    "rate": f"{p['resolved']}/{p['scored']} · {fmt.pct(rate.get('value'))}",
                    "rate_ci": f"[{fmt.pct(rate.get('low'))}, {fmt.pct(rate.get('high'))}]"
                    if rate.get("low") is not None
                    else "",
                    "cost": "unknown"
                    if cost.get("unknown")
                    else fmt.usd(cost.get("value"))
                    if cost.get("value") is not None
                    else "-",
                    "time": fmt.seconds(time_.get("value")),
                    "infra_errors": p["infra_errors"],
                }
            )
        tables.append({"suite": s["suite"], "config": s["config"], "points": rows})
    return {"what": what, "source": source, "charts": charts, "series": tables}


def _environment() -> Environment:
    # finalize: every value the template prints is made visible (no escape sequence of a run's text
    # reaches the page raw); report.js does the same to the data it decodes.
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=lambda v: fmt.visible(v) if isinstance(v, str) else v,
    )
    env.filters.update(
        pct=fmt.pct,
        signed_pct=fmt.signed_pts,
        usd=fmt.usd,
        usd_iv=fmt.usd_interval,
        secs=fmt.seconds,
        si=fmt.si,
        bounds=fmt.bounds,
    )
    return env


def write_trend_html(trend: dict, path: Path) -> Path:
    """A page of its own with the "Over time" section (`trend_view`): `wholeloop history trend --html`."""
    path = Path(path)
    page = (
        _environment()
        .get_template("trend.html.j2")
        .render(
            trend=trend,
            css=(TEMPLATES / "report.css").read_text(),
            generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        )
    )
    write_atomic(path, page)
    return path


def render_html(run_dirs: list[Path], *, figures: Any = None, trend: dict | None = None) -> str:
    """The whole report as one HTML string; `trend` (from `trend_view`) adds the "Over time"
    section. Raises FileNotFoundError, ValueError (no rows)."""
    run_dirs = [Path(d) for d in run_dirs]
    reps = collect(run_dirs)
    if not reps:
        raise ReportInputError("no results to report in " + ", ".join(str(d) for d in run_dirs))
    figs = _figures_dict(run_dirs, figures)
    view = html_view.build(reps, figs)
    charts = _charts(view, reps)
    recovery = _recovery_index(figs)
    manifests = {d: open_run(d).info() for d in {rep.run_dir for rep in reps}}
    payloads = [(rep.index, encode_payload(build_payload(rep, recovery, manifests[rep.run_dir]))) for rep in reps]
    env = _environment()
    index = [[r.final.task_id, r.config, r.final.repeat, r.final.outcome, len(r.rows)] for r in reps]
    from .cause_table import explorer
    from .stats import load_configs

    rep_of = {(str(r.run_dir.resolve()), r.final.task_id, r.label, r.final.repeat): r.index for r in reps}
    failures = explorer(load_configs(run_dirs), rep_of)
    tampering = [
        (row.task_id, rep.config, row.repeat, row.attempt, row.tampering)
        for rep in reps
        for row in rep.rows
        if row.tampering
    ]
    return env.get_template("report.html.j2").render(
        view=view,
        charts=charts,
        front=_front_section(figs),
        payloads=payloads,
        trend=trend,
        tampering=tampering,
        failures=failures,
        controls=figs.get("controls") or [],
        acceptance=figs.get("acceptance") or [],
        review=figs.get("review"),
        model_reviews=figs.get("model_reviews") or [],
        metric=figs.get("metric") or "resolve",
        index_json=json.dumps(index, separators=(",", ":")).replace("<", "\\u003c"),
        css=(TEMPLATES / "report.css").read_text(),
        js=(TEMPLATES / "report.js").read_text(),
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        n_attempts=sum(len(r.rows) for r in reps),
        n_reps=len(reps),
    )


def _front_section(figs: dict) -> dict | None:
    """The front's charts and table (front_view.py), with two configurations or more."""
    if not figs.get("front"):
        return None
    from .front import Front
    from .front_view import caption, front_svg, rows

    front = Front.model_validate(figs["front"])
    table = rows(front)
    return {
        "cost": front_svg(front, "cost"),
        "time": front_svg(front, "time"),
        "heads": list(table[0]) if table else [],
        "rows": table,
        "caption": caption(front),
    }


def write_html(run_dirs: list[Path], path: Path, *, figures: Any = None, trend: dict | None = None) -> Path:
    """Write the report for `run_dirs` to `path` (atomically) and return the path.

    `figures` is a `figures.Figures` (or its model_dump()); computed here when not given. `trend`:
    the "Over time" section, from `trend_view` (none when not given).
    Raises FileNotFoundError for a folder that is not a run, ValueError when there are no rows.
    """
    path = Path(path)
    write_atomic(path, render_html(list(run_dirs), figures=figures, trend=trend))
    return path
