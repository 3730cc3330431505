"""One way to write money, durations and rates, for the terminal, the HTML report and its charts,
and one way to show text from a run (escape sequences made visible, never executed).

Axis ticks take as few decimals as tell them apart, trailing zeros dropped (`axis_labels`).
"""

from __future__ import annotations

import re


def usd(value: float | None) -> str:
    """$0, $0.0712 (under a dollar: four decimals, a cent is too coarse for one attempt), $12.34;
    'unknown' when the price was unknown (never silently $0)."""
    if value is None:
        return "unknown"
    if value == 0:
        return "$0"
    return f"${value:.4f}" if abs(value) < 1 else f"${value:,.2f}"


def usd_interval(interval: dict | None) -> str:
    """An interval's value in dollars as the terminal says it: 'unknown' when a price was unknown,
    'n/a (none resolved)' for a cost per resolved task with nothing resolved, else `usd`."""
    iv = interval or {}
    if iv.get("unknown"):
        return "unknown"
    if iv.get("value") is None:
        return "n/a (none resolved)" if iv.get("unbounded") else "n/a"
    return usd(iv["value"])


def seconds(value: float | None) -> str:
    """3.5s, 12.3m (from two minutes), 2.1h (from two hours); '-' when there is none."""
    if value is None:
        return "-"
    if value < 120:
        return f"{value:.1f}s"
    if value < 7200:
        return f"{value / 60:.1f}m"
    return f"{value / 3600:.1f}h"


def axis_labels(ticks: list[float], kind: str) -> list[str]:
    """Labels for an axis's ticks, one per tick and no two alike: as few decimals as tell the ticks
    apart ($0.001 $0.002, 0.12s 0.14s), trailing zeros dropped, one unit along a duration axis.
    `kind` is "usd" or "seconds". (Labelled one by one, close ticks read "$0 $0 $0".)"""
    top = max((abs(t) for t in ticks), default=0.0)
    if kind == "usd":
        unit, scale = "$", 1.0
    elif kind == "seconds":
        unit, scale = ("s", 1.0) if top < 120 else ("m", 60.0) if top < 7200 else ("h", 3600.0)
    else:
        raise ValueError(f"axis kind {kind!r}: usd or seconds")
    for decimals in range(9):
        labels = [_trim(f"{t / scale:.{decimals}f}") for t in ticks]
        if len(set(labels)) == len(labels):
            break
    return [f"${label}" if unit == "$" else f"{label}{unit}" for label in labels]


def _trim(number: str) -> str:
    number = number.rstrip("0").rstrip(".") if "." in number else number
    return "0" if number in ("-0", "") else number


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


def bounds(low: float | None, high: float | None, kind: str = "num") -> str:
    """An interval's bounds as "[low, high]" in the format `kind` (usd, secs, pct, signed_pct, num);
    "?" for a bound that is not known (a bootstrap over one task has nothing to resample), and ""
    when neither is."""
    if low is None and high is None:
        return ""
    fmt = {"usd": usd, "secs": seconds, "pct": pct, "signed_pct": signed_pts}.get(kind, lambda v: f"{v:.2f}")
    return "[" + ", ".join("?" if v is None else fmt(v) for v in (low, high)) + "]"


# Characters a terminal or a browser acts on instead of showing: C0 controls but tab and newline,
# DEL, C1 controls (U+009B is a CSI to many terminals) and the bidirectional overrides that make
# text read in another order than it is stored.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _picture(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # the Unicode control pictures: ␛ for ESC, ␍ for CR, ␀ for NUL
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"<U+{code:04X}>"


def visible(text: str) -> str:
    """Text as a reviewer must see it: every escape sequence and control character made visible
    (ESC as ␛, CR as ␍, C1 and bidi controls as <U+XXXX>), none left for a terminal or a page to
    act on. CRLF line ends stay plain line ends. `show` and the HTML report pass everything they
    show from a run folder through this (report.js has the same rule for the page's data)."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(_picture, text.replace("\r\n", "\n"))


def visible_value(value):
    """`visible` applied to every string of a JSON-like value (dicts, lists, strings)."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {k: visible_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [visible_value(v) for v in value]
    return value


#: How a per-test status that is not a framework's own reads: an id absent from the results, or a
#: test that never ran (nothing to test). Never shown as a plain failure.
STATUS_LABELS = {"missing": "not in the test output", "not_run": "not run"}


def status_label(status: str | None) -> str:
    return STATUS_LABELS.get(status or "", status or "?")


def tally(counts: dict) -> str:
    """A FAIL_TO_PASS / PASS_TO_PASS tally: '3/5' passed of listed, 'not run' when no test ran (an
    empty patch: never 0/N passed), '-' when nothing is known."""
    if not counts:
        return "-"
    if "ran" in counts and not counts["ran"]:
        return "not run"
    return f"{counts.get('passed', 0)}/{counts.get('total', 0)}"
