from decimal import Decimal

import pytest

from ledgerly import Invoice, render_invoice
from ledgerly.report import WIDTH, number


@pytest.fixture
def invoice():
    invoice = Invoice("INV-001", tax_rate=20)
    invoice.add_line("Consulting (hours)", 10, "120.00")
    invoice.add_line("Travel", 1, "85.50")
    return invoice


def test_header_and_rows(invoice):
    lines = render_invoice(invoice).splitlines()
    assert lines[0] == "Invoice INV-001"
    assert lines[2].split() == ["Description", "Qty", "Unit", "price", "Amount"]
    assert lines[4].split() == ["Consulting", "(hours)", "10", "$120.00", "$1,200.00"]
    assert lines[5].split() == ["Travel", "1", "$85.50", "$85.50"]


def test_totals_are_right_aligned(invoice):
    lines = render_invoice(invoice).splitlines()
    assert lines[-3].split() == ["Subtotal", "$1,285.50"]
    assert lines[-2].split() == ["Tax", "(20%)", "$257.10"]
    assert lines[-1].split() == ["Total", "$1,542.60"]
    assert {len(line) for line in lines[-3:]} == {WIDTH}
    assert lines[4].endswith("$1,200.00") and len(lines[4]) == WIDTH


def test_long_descriptions_are_shortened():
    invoice = Invoice("INV-002")
    invoice.add_line("A description that is far too long for the column", 1, "1")
    row = render_invoice(invoice).splitlines()[4]
    assert row.startswith("A description that is far...")


def test_ends_with_newline(invoice):
    assert render_invoice(invoice).endswith("$1,542.60\n")


@pytest.mark.parametrize("value, text", [("10", "10"), ("1.50", "1.5"), ("7.25", "7.25"), ("100", "100"), ("0", "0")])
def test_number(value, text):
    assert number(Decimal(value)) == text
