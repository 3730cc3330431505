"""Tables that fit the terminal: words are wrapped at spaces and never cut, and when even that does
not fit, the lesser columns are left out (and the caption says which) instead of being cut off.

rich shrinks columns below their longest word when a table is too wide (cutting `attempts` into
`attemp`/`ts`) and drops what still does not fit at the right edge. Here each column's width is
decided first: at least its longest word (header included), at most its longest line, the spare
room shared out; a column is only dropped when the minimums alone do not fit. The widths then go
to rich as fixed widths, so it only wraps at spaces.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import JustifyMethod
from rich.table import Table
from rich.text import Text

PADDING = 2  # rich's default cell padding, one each side


@dataclass
class Col:
    header: str
    justify: JustifyMethod = "right"
    drop: int = 0  # 0: never left out; otherwise the higher, the sooner it is left out


def _text(cell: str | Text) -> Text:
    return cell if isinstance(cell, Text) else Text.from_markup(cell)


def _longest_word(text: Text) -> int:
    return max((Text(w).cell_len for line in text.plain.splitlines() for w in line.split()), default=0)


def _longest_line(text: Text) -> int:
    return max((Text(line).cell_len for line in text.plain.splitlines()), default=0)


def widths_for(cols: list[Col], rows: list[list[Text]], width: int) -> tuple[list[int], list[int]]:
    """(the columns kept, their content widths) for a table `width` cells wide."""
    header = [Text(c.header) for c in cols]
    mins = [max(_longest_word(header[i]), *(_longest_word(r[i]) for r in rows), 1) for i in range(len(cols))]
    maxs = [max(_longest_line(header[i]), *(_longest_line(r[i]) for r in rows), 1) for i in range(len(cols))]
    keep = list(range(len(cols)))

    def need(kept: list[int], sizes: list[int]) -> int:
        return sum(sizes[i] + PADDING for i in kept) + len(kept) + 1  # + the borders between and at the edges

    while need(keep, mins) > width:
        droppable = [i for i in keep if cols[i].drop]
        if not droppable:
            break
        keep.remove(max(droppable, key=lambda i: (cols[i].drop, i)))
    sizes = {i: mins[i] for i in keep}
    room = width - need(keep, mins)
    if room < 0:  # even the columns that stay do not fit by whole words: fold the widest (a long label)
        widest = max(keep, key=lambda i: mins[i])
        sizes[widest] = max(8, mins[widest] + room)
        room = 0
    while room > 0:  # share the spare room: the column furthest from its longest line first
        want = [i for i in keep if sizes[i] < maxs[i]]
        if not want:
            break
        i = max(want, key=lambda j: maxs[j] - sizes[j])
        step = min(room, maxs[i] - sizes[i], max(1, room // max(1, len(want))))
        sizes[i] += step
        room -= step
    return keep, [sizes[i] for i in keep]


def fit_table(
    title: str, cols: list[Col], rows: list[list[str | Text]], *, caption: str = "", width: int = 150
) -> Table:
    """A rich Table of `rows` that fits `width` cells (a console's width), lesser columns left out."""
    texts = [[_text(c) for c in row] for row in rows]
    keep, sizes = widths_for(cols, texts, width)
    table = Table(title=title, title_justify="left", caption_justify="left")
    for i, size in zip(keep, sizes):
        folds = size < max(_longest_word(Text(cols[i].header)), *(_longest_word(r[i]) for r in texts), 0)
        table.add_column(cols[i].header, justify=cols[i].justify, width=size, overflow="fold" if folds else "ellipsis")
    for row in texts:
        table.add_row(*[row[i] for i in keep])
    left_out = [cols[i].header for i in range(len(cols)) if i not in keep]
    note = (
        (
            f"not shown at {width} columns: {', '.join(left_out)} (a wider terminal or COLUMNS shows them; "
            f"--json and --csv have every figure)"
        )
        if left_out
        else ""
    )
    table.caption = "\n".join(x for x in (caption, note) if x) or None
    return table
