"""Small inline SVG charts for the HTML report: no plotting library, no scripts, no fonts to fetch.

Charts: cost against resolve rate (one point per configuration, interval whiskers on both axes
when known), time distributions (per configuration, a box plot over a strip of every attempt),
where an attempt's time goes, and trends over runs from the history (one line per configuration,
a whisker per point). Output is an SVG string styled by the report's CSS classes (`.ax`, `.grid`, `.lbl`...).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

from .format import axis_labels, pct, seconds, usd

PALETTE = ["#2563eb", "#d97706", "#059669", "#db2777", "#7c3aed", "#0891b2", "#65a30d", "#dc2626", "#475569", "#ca8a04"]


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values covering [lo, hi] (1, 2, 2.5, 5 x 10^k steps)."""
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks, v = [], start
    while v <= hi + step * 1e-9:
        ticks.append(round(v, 10))
        v += step
    if ticks[-1] < hi:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


@dataclass
class Point:
    label: str
    x: float  # mean cost per trial (USD)
    y: float  # resolve rate 0..1
    y_lo: float | None = None
    y_hi: float | None = None
    x_lo: float | None = None
    x_hi: float | None = None
    colour: str = PALETTE[0]


def cost_rate_svg(points: list[Point], *, width: int = 560, height: int = 360) -> str:
    """Resolve rate (y, with its 95% interval) against mean cost per trial (x)."""
    ml, mr, mt, mb = 58, 24, 26, 46
    pw, ph = width - ml - mr, height - mt - mb
    xmax = max([p.x_hi if p.x_hi is not None else p.x for p in points] + [1e-9])
    xt = nice_ticks(0, xmax * 1.08)
    xhi = xt[-1]
    yt = [0, 0.25, 0.5, 0.75, 1.0]

    def sx(v: float) -> float:
        return ml + pw * v / xhi

    def sy(v: float) -> float:
        return mt + ph * (1 - v)

    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="resolve rate against cost per trial" xmlns="http://www.w3.org/2000/svg">'
    ]
    for t in yt:
        out.append(f'<line class="grid" x1="{ml}" x2="{ml + pw}" y1="{sy(t):.1f}" y2="{sy(t):.1f}"/>')
        out.append(f'<text class="tick" x="{ml - 8}" y="{sy(t) + 4:.1f}" text-anchor="end">{t * 100:.0f}%</text>')
    for t, tick in zip(xt, axis_labels(xt, "usd"), strict=True):
        out.append(f'<line class="grid" y1="{mt}" y2="{mt + ph}" x1="{sx(t):.1f}" x2="{sx(t):.1f}"/>')
        out.append(f'<text class="tick" x="{sx(t):.1f}" y="{mt + ph + 16}" text-anchor="middle">{tick}</text>')
    out.append(f'<line class="ax" x1="{ml}" x2="{ml + pw}" y1="{mt + ph}" y2="{mt + ph}"/>')
    out.append(f'<line class="ax" x1="{ml}" x2="{ml}" y1="{mt}" y2="{mt + ph}"/>')
    out.append(
        f'<text class="axlbl" x="{ml + pw / 2}" y="{height - 8}" text-anchor="middle">mean cost per trial (USD)</text>'
    )
    out.append(
        f'<text class="axlbl" transform="translate(14 {mt + ph / 2}) rotate(-90)" text-anchor="middle">'
        f"resolve rate, 95% interval</text>"
    )
    placed: list[tuple[float, float]] = []
    for p in points:
        cx, cy, c = sx(p.x), sy(p.y), p.colour
        tip = escape(f"{p.label}: {pct(p.y)} resolved, {usd(p.x)} per trial")
        out.append(f'<g class="pt"><title>{tip}</title>')
        if p.y_lo is not None and p.y_hi is not None:
            out.append(_line(cx, sy(p.y_lo), cx, sy(p.y_hi), c))
            out += [_line(cx - 5, sy(v), cx + 5, sy(v), c) for v in (p.y_lo, p.y_hi)]
        if p.x_lo is not None and p.x_hi is not None:
            out.append(_line(sx(p.x_lo), cy, sx(p.x_hi), cy, c))
            out += [_line(sx(v), cy - 5, sx(v), cy + 5, c) for v in (p.x_lo, p.x_hi)]
        out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="{c}" stroke="#fff" stroke-width="1.5"/>')
        lx, ly = cx + 10, cy - 8
        while any(abs(ly - py) < 14 and abs(lx - px) < 140 for px, py in placed):
            ly += 14  # nudge overlapping labels down
        placed.append((lx, ly))
        anchor = "start"
        if lx > ml + pw - 150:
            lx, anchor = cx - 10, "end"
        out.append(
            f'<text class="lbl" x="{lx:.1f}" y="{ly:.1f}" text-anchor="{anchor}">{escape(_short(p.label))}</text></g>'
        )
    out.append("</svg>")
    return "".join(out)


@dataclass
class Series:
    label: str
    values: list[float] = field(default_factory=list)
    colour: str = PALETTE[0]


def _quantile(sorted_vals: list[float], q: float) -> float:
    if not sorted_vals:
        return 0.0
    pos = (len(sorted_vals) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def box_strip_svg(series: list[Series], *, title: str, width: int = 560, row_h: int = 34) -> str:
    """Horizontal box plots (quartiles, median, whiskers to min/max) over a strip of every value."""
    label_w = 170
    ml, mr, mt, mb = label_w, 16, 26, 30
    pw = width - ml - mr
    height = mt + mb + row_h * max(len(series), 1)
    vmax = max([max(s.values) for s in series if s.values] + [1e-9])
    xt = nice_ticks(0, vmax)
    xhi = xt[-1]

    def sx(v: float) -> float:
        return ml + pw * v / xhi

    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f'<text class="ctitle" x="0" y="14">{escape(title)}</text>',
    ]
    for t, tick in zip(xt, axis_labels(xt, "seconds"), strict=True):
        out.append(f'<line class="grid" x1="{sx(t):.1f}" x2="{sx(t):.1f}" y1="{mt}" y2="{height - mb}"/>')
        out.append(f'<text class="tick" x="{sx(t):.1f}" y="{height - mb + 16}" text-anchor="middle">{tick}</text>')
    for i, s in enumerate(series):
        y = mt + row_h * i + row_h / 2
        out.append(
            f'<text class="rowlbl" x="{label_w - 10}" y="{y + 4:.1f}" text-anchor="end"><title>{escape(s.label)}</title>'
            f"{escape(_short(s.label, 22))}</text>"
        )
        vals = sorted(s.values)
        if not vals:
            out.append(f'<text class="tick" x="{ml + 4}" y="{y + 4:.1f}">no data</text>')
            continue
        q1, med, q3 = (_quantile(vals, q) for q in (0.25, 0.5, 0.75))
        opacity = 0.55 if len(vals) < 60 else 0.3
        for j, v in enumerate(s.values):  # deterministic jitter: golden-ratio sequence
            jy = y + ((j * 0.618034) % 1 - 0.5) * (row_h * 0.55)
            out.append(f'<circle cx="{sx(v):.1f}" cy="{jy:.1f}" r="2.2" fill="{s.colour}" fill-opacity="{opacity}"/>')
        bh = row_h * 0.5
        out.append(_line(sx(vals[0]), y, sx(vals[-1]), y, "#334155"))
        out += [_line(sx(v), y - bh / 3, sx(v), y + bh / 3, "#334155") for v in (vals[0], vals[-1])]
        out.append(
            f'<rect x="{sx(q1):.1f}" y="{y - bh / 2:.1f}" width="{max(sx(q3) - sx(q1), 1):.1f}" height="{bh:.1f}" '
            f'fill="{s.colour}" fill-opacity="0.18" stroke="{s.colour}" stroke-width="1.2" rx="2"/>'
        )
        out.append(
            f'<line stroke="{s.colour}" stroke-width="2.5" x1="{sx(med):.1f}" x2="{sx(med):.1f}" '
            f'y1="{y - bh / 2:.1f}" y2="{y + bh / 2:.1f}"/>'
        )
        tip = f"{s.label}: n={len(vals)}, median {seconds(med)}, quartiles {seconds(q1)}-{seconds(q3)}, max {seconds(vals[-1])}"
        out.append(
            f'<rect x="{ml}" y="{y - row_h / 2:.1f}" width="{pw}" height="{row_h}" fill="transparent">'
            f"<title>{escape(tip)}</title></rect>"
        )
    out.append(f'<line class="ax" x1="{ml}" x2="{ml + pw}" y1="{height - mb}" y2="{height - mb}"/>')
    out.append("</svg>")
    return "".join(out)


PHASE_COLOURS = {
    "image": "#94a3b8",
    "container start": "#cbd5e1",
    "agent working": "#2563eb",
    "waiting on retries": "#f59e0b",
    "patch": "#a78bfa",
    "grading": "#059669",
}


def phase_bars_svg(rows: list[tuple[str, dict[str, float]]], *, width: int = 600, row_h: int = 30) -> str:
    """Mean seconds per attempt in each phase, stacked, one bar per configuration. The agent's
    waiting on rate limits is drawn apart from its working time."""
    label_w, ml, mr, mt, mb = 170, 170, 20, 44, 30
    pw = width - ml - mr
    height = mt + mb + row_h * max(len(rows), 1)
    vmax = max([sum(p.values()) for _, p in rows] + [1e-9])
    xt = nice_ticks(0, vmax)
    xhi = xt[-1]

    def sx(v: float) -> float:
        return ml + pw * v / xhi

    out = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="mean time per phase" xmlns="http://www.w3.org/2000/svg">',
        '<text class="ctitle" x="0" y="14">Where an attempt\'s time goes (mean seconds per phase)</text>',
    ]
    lx = 0.0
    for name, c in PHASE_COLOURS.items():
        out.append(
            f'<rect x="{lx:.0f}" y="24" width="10" height="10" rx="2" fill="{c}"/>'
            f'<text class="tick" x="{lx + 14:.0f}" y="33">{name}</text>'
        )
        lx += 24 + 6.2 * len(name)
    for t, tick in zip(xt, axis_labels(xt, "seconds"), strict=True):
        out.append(f'<line class="grid" x1="{sx(t):.1f}" x2="{sx(t):.1f}" y1="{mt}" y2="{height - mb}"/>')
        out.append(f'<text class="tick" x="{sx(t):.1f}" y="{height - mb + 16}" text-anchor="middle">{tick}</text>')
    for i, (label, phases) in enumerate(rows):
        y = mt + row_h * i + row_h * 0.2
        out.append(
            f'<text class="rowlbl" x="{label_w - 10}" y="{y + row_h * 0.3 + 4:.1f}" text-anchor="end">'
            f"<title>{escape(label)}</title>{escape(_short(label, 22))}</text>"
        )
        x = 0.0
        for name, c in PHASE_COLOURS.items():
            v = phases.get(name, 0.0)
            if v <= 0:
                continue
            out.append(
                f'<rect x="{sx(x):.1f}" y="{y:.1f}" width="{max(sx(x + v) - sx(x), 0.5):.1f}" height="{row_h * 0.6:.1f}" '
                f'fill="{c}"><title>{escape(label)}: {name} {v:.2f}s</title></rect>'
            )
            x += v
        out.append(f'<text class="tick" x="{sx(x) + 6:.1f}" y="{y + row_h * 0.3 + 4:.1f}">{seconds(x)}</text>')
    out.append(f'<line class="ax" x1="{ml}" x2="{ml + pw}" y1="{height - mb}" y2="{height - mb}"/>')
    out.append("</svg>")
    return "".join(out)


def _line(x1: float, y1: float, x2: float, y2: float, stroke: str) -> str:
    return f'<line class="whisk" stroke="{stroke}" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}"/>'


def _short(text: str, n: int = 30) -> str:
    """Cut in the middle, so both the start and the distinguishing end of a label stay."""
    if len(text) <= n:
        return text
    head = (n - 1) // 2
    return text[:head] + "…" + text[-(n - 1 - head) :]


@dataclass
class TrendLine:
    """One configuration over time: (run position, value, low, high) per run it has; a value of
    None is a run where the figure is unknown (drawn as a gap in the line)."""

    label: str
    points: list[tuple[int, float | None, float | None, float | None]] = field(default_factory=list)
    colour: str = PALETTE[0]


def trend_svg(
    lines: list[TrendLine], x_labels: list[str], *, title: str, kind: str = "rate", width: int = 560, height: int = 270
) -> str:
    """A figure over successive runs (x: every run of the chart in time order, labelled by
    `x_labels`), one line per configuration, each point with its interval as a whisker.
    kind: rate | usd | seconds."""
    ml, mr, mt, mb = 58, 16, 44, 40
    pw, ph = width - ml - mr, height - mt - mb
    n = max(len(x_labels), 1)
    values = [v for ln in lines for _, value, lo, hi in ln.points for v in (value, lo, hi) if v is not None]
    yt = [0, 0.25, 0.5, 0.75, 1.0] if kind == "rate" else nice_ticks(0, max(values + [1e-9]) * 1.05)
    yhi = yt[-1]
    ticks = [f"{v * 100:.0f}%" for v in yt] if kind == "rate" else axis_labels(yt, kind)
    fmt_value = {"rate": pct, "usd": usd, "seconds": seconds}[kind]

    def sx(i: int) -> float:
        return ml + pw * (i + 0.5) / n

    def sy(v: float) -> float:
        return mt + ph * (1 - min(v, yhi) / yhi)

    out = [
        f'<svg class="chart trend" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f'<text class="ctitle" x="0" y="14">{escape(title)}</text>',
    ]
    lx = 0.0
    for ln in lines:  # the legend, under the title
        name = _short(ln.label, 28)
        out.append(
            f'<rect x="{lx:.0f}" y="24" width="12" height="3" fill="{ln.colour}"/>'
            f'<text class="tick" x="{lx + 16:.0f}" y="29">{escape(name)}</text>'
        )
        lx += 28 + 6.2 * len(name)
    for t, tick in zip(yt, ticks, strict=True):
        out.append(f'<line class="grid" x1="{ml}" x2="{ml + pw}" y1="{sy(t):.1f}" y2="{sy(t):.1f}"/>')
        out.append(f'<text class="tick" x="{ml - 8}" y="{sy(t) + 4:.1f}" text-anchor="end">{tick}</text>')
    step = max(1, math.ceil(n / 6))
    for i, x_label in enumerate(x_labels):
        if i % step == 0 or i == n - 1:
            out.append(
                f'<text class="tick" x="{sx(i):.1f}" y="{mt + ph + 16}" text-anchor="middle">{escape(x_label)}</text>'
            )
    out.append(f'<line class="ax" x1="{ml}" x2="{ml + pw}" y1="{mt + ph}" y2="{mt + ph}"/>')
    out.append(f'<line class="ax" x1="{ml}" x2="{ml}" y1="{mt}" y2="{mt + ph}"/>')
    out.append(
        f'<text class="axlbl" x="{ml + pw / 2}" y="{height - 6}" text-anchor="middle">runs, oldest first '
        f"(whiskers: 95% interval)</text>"
    )
    for ln in lines:
        c = ln.colour
        segments: list[list[str]] = [[]]
        for i, value, _lo, _hi in ln.points:
            if value is None:
                segments.append([])
            else:
                segments[-1].append(f"{sx(i):.1f},{sy(value):.1f}")
        for seg in segments:
            if len(seg) > 1:
                out.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.8" points="{" ".join(seg)}"/>')
        for i, value, lo, hi in ln.points:
            if value is None:
                continue
            tip = f"{ln.label}, {x_labels[i] if i < len(x_labels) else i}: {fmt_value(value)}"
            if lo is not None:  # no upper bound (nothing to divide by in some resamples): to the top
                tip += f" ({fmt_value(lo)} to {fmt_value(hi) if hi is not None else 'no upper bound'})"
                out.append(_line(sx(i), sy(lo), sx(i), sy(hi if hi is not None else yhi), c))
            out.append(
                f'<circle cx="{sx(i):.1f}" cy="{sy(value):.1f}" r="3.5" fill="{c}"><title>{escape(tip)}</title></circle>'
            )
    out.append("</svg>")
    return "".join(out)
