"""One way to write money, durations and rates, for the terminal, the HTML report and its charts.

Values and axis ticks follow the same rules; ticks only drop trailing zeros.
"""

from __future__ import annotations


def usd(value: float | None) -> str:
    """$0, $0.0712 (under a dollar: four decimals, a cent is too coarse for one attempt), $12.34;
    'unknown' when the price was unknown (never silently $0)."""
    if value is None:
        return "unknown"
    if value == 0:
        return "$0"
    return f"${value:.4f}" if abs(value) < 1 else f"${value:,.2f}"


def usd_tick(value: float) -> str:
    """An axis label: as `usd`, trailing zeros dropped ($0.05, $0.1, $1.5)."""
    text = usd(value)
    return text.rstrip("0").rstrip(".") if "." in text else text


def seconds(value: float | None) -> str:
    """3.5s, 12.3m (from two minutes), 2.1h (from two hours); '-' when there is none."""
    if value is None:
        return "-"
    if value < 120:
        return f"{value:.1f}s"
    if value < 7200:
        return f"{value / 60:.1f}m"
    return f"{value / 3600:.1f}h"


def seconds_tick(value: float) -> str:
    """An axis label: as `seconds`, a trailing .0 dropped (30s, 2m, 1.5h)."""
    return seconds(value).replace(".0", "")


def pct(value: float | None) -> str:
    """71% (a rate with a 95 % interval is never known to a tenth of a percent); 'n/a' for none."""
    return "n/a" if value is None else f"{100 * value:.0f}%"


def signed_pts(value: float | None) -> str:
    """+12.5 pts: a difference of two rates."""
    return "n/a" if value is None else f"{100 * value:+.1f} pts"


def si(value: float | None) -> str:
    """1234567 -> 1.2M: token counts in a line of text."""
    value = value or 0
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= div:
            return f"{value / div:.1f}{unit}"
    return f"{value:g}"


#: How a per-test status that is not a framework's own reads: an id absent from the results, or a
#: test that never ran (nothing to test). Never shown as a plain failure.
STATUS_LABELS = {"missing": "not in the test output", "not_run": "not run"}


def status_label(status: str | None) -> str:
    return STATUS_LABELS.get(status or "", status or "?")
