"""The front shown: a table that fits the terminal, an SVG chart per axis (cost, time), Markdown.

What each mark means is said where it is drawn: "front" (no configuration is at least as good on
both axes and better on one), "dominated" (on point estimates), "dominated, with intervals" (the
paired intervals show it); and beside each configuration, whether the data can separate it from
the best (Holm-corrected). Computed in front.py; drawn here, with no number of its own.
"""

from __future__ import annotations

from html import escape

from .format import axis_labels, bounds, pct, seconds, usd
from .front import Front, FrontPoint
from .svgplot import PALETTE, nice_ticks

FRONT, DOMINATED, CLEARLY = "front", "dominated", "dominated, with intervals"


def state(p: FrontPoint, spend: str = "cost") -> str:
    """front | dominated | dominated, with intervals (on `spend`: cost or time)."""
    if p.dominated_with_intervals_by(spend):
        return CLEARLY
    if p.dominated_by(spend):
        return DOMINATED
    return FRONT if p.on_front(spend) else "unknown"


def versus(front: Front, p: FrontPoint) -> str:
    """What the paired test says of p against the best."""
    if p.config == front.best:
        return "the best"
    vs = p.versus_best
    if vs is None:
        return "n/a"
    said = "separated" if vs.separable else "not separable"
    p_holm = "n/a" if vs.p_holm is None else f"{vs.p_holm:.3g}"
    return f"{said} (p = {p_holm} Holm, {vs.shared_tasks} tasks)"


def attempts_text(p: FrontPoint) -> str:
    """'+25 pts for $0.0750 (3.3 pts/$0.1)' per extra attempt; '' with one attempt."""
    parts = []
    for s in p.attempts[1:]:
        cost = usd(s.cost_added) if s.cost_added is not None else "unknown"
        per = f", {100 * s.rate_per_dollar:.1f} pts per $" if s.rate_per_dollar is not None else ""
        parts.append(f"#{s.attempt}: {100 * s.rate_gained:+.0f} pts for {cost}{per}")
    return "; ".join(parts)


def rows(front: Front) -> list[dict[str, str]]:
    """One dict per configuration, cheapest first: the columns every view shows."""
    points = sorted(
        front.points, key=lambda p: (p.cost_per_trial.value is None, p.cost_per_trial.value or 0.0, p.config)
    )
    out = []
    for p in points:
        rate, acc = p.resolve_rate, p.accept_rate
        out.append(
            {
                "configuration": p.config,
                "resolve rate": f"{pct(rate.value)} {bounds(rate.low, rate.high, 'pct')}".strip(),
                "accept rate": f"{pct(acc.value)} {bounds(acc.low, acc.high, 'pct')}".strip()
                if acc.value is not None
                else "not measured",
                "cost / trial": _money(p.cost_per_trial),
                "cost / resolved": _money(p.cost_per_resolved),
                "cost / accepted": _money(p.cost_per_accepted) if acc.value is not None else "-",
                "time / trial": f"{seconds(p.time_per_trial.value)} {bounds(p.time_per_trial.low, p.time_per_trial.high, 'secs')}".strip(),
                "cost x rate": state(p, "cost"),
                "time x rate": state(p, "time"),
                "against the best": versus(front, p),
                "extra attempts": attempts_text(p) or "-",
            }
        )
    return out


def _money(iv) -> str:
    if iv.unknown:
        return "unknown"
    if iv.value is None:
        return "n/a (none resolved)" if iv.unbounded else "n/a"
    return f"{usd(iv.value)} {bounds(iv.low, iv.high, 'usd')}".strip()


def caption(front: Front) -> str:
    lines = [
        f"front: nothing else is as good on both axes and better on one; dominated: on point estimates; "
        f"with intervals: the 95% paired intervals over shared tasks show it. Against the best ({front.best}): "
        f"{front.test}, {front.correction}, alpha = {front.alpha:g}.",
        *front.notes,
    ]
    return "\n".join(lines)


def front_table(front: Front, width: int = 150):
    """The front as a rich table fitting `width` (lesser columns left out first, and named)."""
    from rich.markup import escape as esc
    from rich.text import Text

    from .fit import Col, fit_table

    cols = [
        Col("configuration", "left"),
        Col("resolve rate"),
        Col("cost / trial"),
        Col("time / trial", drop=3),
        Col("cost x rate", "left"),
        Col("time x rate", "left", drop=4),
        Col("against the best", "left", drop=2),
        Col("accept rate", drop=5),
        Col("cost / resolved", drop=6),
        Col("cost / accepted", drop=7),
        Col("extra attempts", "left", drop=8),
    ]
    body: list[list[str | Text]] = [[esc(r[c.header]) for c in cols] for r in rows(front)]
    return fit_table(f"The front ({front.metric} rate)", cols, body, caption=esc(caption(front)), width=width)


def front_markdown(front: Front) -> str:
    heads = list(rows(front)[0]) if front.points else []
    lines = ["| " + " | ".join(heads) + " |", "|" + " --- |" * len(heads)]
    for r in rows(front):
        lines.append("| " + " | ".join(v.replace("|", "\\|") for v in r.values()) + " |")
    return "\n".join(lines) + "\n\n" + caption(front).replace("\n", "\n\n") + "\n"


def front_svg(front: Front, spend: str = "cost", *, width: int = 640, height: int = 400) -> str:
    """Rate (y, Wilson interval) against cost or time per trial (x, bootstrap interval): the front
    as filled dots joined by its staircase, dominated ones hollow, dominated with intervals crossed."""
    pts: list[tuple[FrontPoint, float, float, str]] = []  # (point, x, rate, colour)
    for i, p in enumerate(front.points):
        iv = p.cost_per_trial if spend == "cost" else p.time_per_trial
        if iv.value is None or iv.unknown or p.resolve_rate.value is None:
            continue
        pts.append((p, iv.value, p.resolve_rate.value, PALETTE[i % len(PALETTE)]))
    ml, mr, mt, mb = 58, 24, 26, 62
    pw, ph = width - ml - mr, height - mt - mb
    xmax = max([max(x, p.spend(spend).high or 0.0) for p, x, _, _ in pts] + [1e-9])
    xt = nice_ticks(0, xmax * 1.08)
    xhi = xt[-1]

    def sx(v: float) -> float:
        return ml + pw * v / xhi

    def sy(v: float) -> float:
        return mt + ph * (1 - v)

    what = "cost per trial (USD)" if spend == "cost" else "time per trial"
    out = [
        f'<svg class="chart front" data-axis="{spend}" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="the front: resolve rate against {what}" '
        'xmlns="http://www.w3.org/2000/svg">'
    ]
    for t in (0, 0.25, 0.5, 0.75, 1.0):
        out.append(f'<line class="grid" x1="{ml}" x2="{ml + pw}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" stroke="#e5e7eb"/>')
        out.append(
            f'<text class="tick" x="{ml - 8}" y="{sy(t) + 4:.1f}" text-anchor="end" font-size="11">{t * 100:.0f}%</text>'
        )
    for t, tick in zip(xt, axis_labels(xt, "usd" if spend == "cost" else "seconds"), strict=True):
        out.append(f'<line class="grid" y1="{mt}" y2="{mt + ph}" x1="{sx(t):.1f}" x2="{sx(t):.1f}" stroke="#e5e7eb"/>')
        out.append(
            f'<text class="tick" x="{sx(t):.1f}" y="{mt + ph + 16}" text-anchor="middle" font-size="11">{tick}</text>'
        )
    out.append(f'<line class="ax" x1="{ml}" x2="{ml + pw}" y1="{mt + ph}" y2="{mt + ph}" stroke="#111"/>')
    out.append(f'<line class="ax" x1="{ml}" x2="{ml}" y1="{mt}" y2="{mt + ph}" stroke="#111"/>')
    out.append(
        f'<text class="axlbl" x="{ml + pw / 2}" y="{mt + ph + 34}" text-anchor="middle" font-size="12">{what}, 95% interval</text>'
    )
    out.append(
        f'<text class="axlbl" transform="translate(14 {mt + ph / 2}) rotate(-90)" text-anchor="middle" font-size="12">'
        f"{front.metric} rate, 95% interval</text>"
    )
    legend = "● front   ○ dominated   ⊗ dominated, with intervals   — the front's staircase"
    out.append(f'<text x="{ml}" y="{height - 6}" font-size="11" fill="#374151">{legend}</text>')
    on = sorted((x, y) for p, x, y, _ in pts if state(p, spend) == FRONT)
    if on:
        path = [f"M{sx(on[0][0]):.1f},{sy(on[0][1]):.1f}"]
        for x1, y1 in on[1:]:
            path.append(f"H{sx(x1):.1f}V{sy(y1):.1f}")
        out.append(f'<path class="staircase" d="{"".join(path)}" fill="none" stroke="#111" stroke-dasharray="4 3"/>')
    placed: list[tuple[float, float]] = []
    for p, x, y, c in pts:
        rate, iv = p.resolve_rate, p.spend(spend)
        cx, cy, kind = sx(x), sy(y), state(p, spend)
        tip = escape(f"{p.config}: {pct(y)}, {usd(x) if spend == 'cost' else seconds(x)}; {kind}")
        out.append(f'<g class="pt" data-state="{escape(kind)}"><title>{tip}</title>')
        if rate.low is not None and rate.high is not None:
            out.append(
                f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{sy(rate.low):.1f}" y2="{sy(rate.high):.1f}" stroke="{c}"/>'
            )
        if iv.low is not None and iv.high is not None:
            out.append(f'<line x1="{sx(iv.low):.1f}" x2="{sx(iv.high):.1f}" y1="{cy:.1f}" y2="{cy:.1f}" stroke="{c}"/>')
        fill = c if kind == FRONT else "#fff"
        out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="6" fill="{fill}" stroke="{c}" stroke-width="2"/>')
        if kind == CLEARLY:
            out.append(
                f'<path d="M{cx - 4:.1f},{cy - 4:.1f}L{cx + 4:.1f},{cy + 4:.1f}M{cx - 4:.1f},{cy + 4:.1f}L{cx + 4:.1f},{cy - 4:.1f}" stroke="{c}" stroke-width="2"/>'
            )
        lx, ly = cx + 10, cy - 8
        while any(abs(ly - py) < 13 and abs(lx - px) < 160 for px, py in placed):
            ly += 13
        placed.append((lx, ly))
        anchor = "start"
        if lx > ml + pw - 170:
            lx, anchor = cx - 10, "end"
        label = p.config if len(p.config) <= 40 else p.config[:39] + "…"
        out.append(
            f'<text class="lbl" x="{lx:.1f}" y="{ly:.1f}" text-anchor="{anchor}" font-size="11">{escape(label)}</text></g>'
        )
    out.append("</svg>")
    return "".join(out)
