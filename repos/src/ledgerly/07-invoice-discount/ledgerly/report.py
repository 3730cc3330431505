"""Plain-text rendering of invoices."""

from __future__ import annotations

from decimal import Decimal

from .invoice import Invoice
from .money import Money

# (heading, width, alignment) of each column
COLUMNS = (("Description", 28, "<"), ("Qty", 6, ">"), ("Unit price", 12, ">"), ("Amount", 14, ">"))
WIDTH = sum(width for _, width, _ in COLUMNS) + len(COLUMNS) - 1
LABEL_WIDTH = WIDTH - COLUMNS[-1][1] - 1  # totals: label under the first three columns


def render_invoice(invoice: Invoice) -> str:
    """The invoice as a fixed-width text table, ending with a newline."""
    rule = "-" * WIDTH
    rows = [f"Invoice {invoice.number}", "", _row(heading for heading, _, _ in COLUMNS), rule]
    for line in invoice.lines:
        description = _shorten(line.description, COLUMNS[0][1])
        rows.append(_row((description, number(line.quantity), line.unit_price.format(), line.amount.format())))
    rows.append(rule)
    rows.append(_total("Subtotal", invoice.subtotal))
    if invoice.discount_percent:
        rows.append(_total(f"Discount ({number(invoice.discount_percent)}%)", -invoice.discount))
    rows.append(_total(f"Tax ({number(invoice.tax_rate)}%)", invoice.tax))
    rows.append(_total("Total", invoice.total))
    return "\n".join(rows) + "\n"


def number(value: Decimal) -> str:
    """A quantity or percentage without trailing zeros: ``10``, ``1.5``, ``7.25``."""
    return format(value.normalize(), "f")


def _row(cells) -> str:
    return " ".join(f"{cell:{align}{width}}" for cell, (_, width, align) in zip(cells, COLUMNS)).rstrip()


def _total(label: str, amount: Money) -> str:
    return f"{label:>{LABEL_WIDTH}} {amount.format():>{COLUMNS[-1][1]}}"


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
