from decimal import Decimal

import pytest

from ledgerly import CurrencyMismatchError, Invoice, LineItem, Money


@pytest.fixture
def invoice():
    invoice = Invoice("INV-001", tax_rate=20)
    invoice.add_line("Consulting (hours)", 10, "120.00")
    invoice.add_line("Travel", 1, "85.50")
    return invoice


def test_totals(invoice):
    assert invoice.subtotal == Money("1285.50")
    assert invoice.tax == Money("257.10")
    assert invoice.total == Money("1542.60")


def test_line_amount_is_rounded():
    line = LineItem("Widgets", Decimal("3"), Money("0.333"))
    assert line.amount == Money("1.00")
    assert str(line.amount.amount) == "1.00"


def test_fractional_quantities():
    invoice = Invoice("INV-002")
    invoice.add_line("Hosting (months)", "1.5", "40")
    assert invoice.total == Money("60.00")


def test_empty_invoice():
    invoice = Invoice("INV-003", currency="EUR", tax_rate="7.5")
    assert invoice.total == Money("0", "EUR")


def test_tax_is_rounded_once():
    invoice = Invoice("INV-004", tax_rate=17)
    for _ in range(3):
        invoice.add_line("Item", 1, "0.10")
    # 17% of 0.30 is 0.051; rounding the tax of each line (0.017) would give 0.06
    assert invoice.tax == Money("0.05")


def test_other_currency_line_is_refused(invoice):
    with pytest.raises(CurrencyMismatchError):
        invoice.add_line("Other", 1, Money("1", "EUR"))


@pytest.mark.parametrize("quantity", [0, -1, "abc"])
def test_invalid_quantity(invoice, quantity):
    with pytest.raises(ValueError):
        invoice.add_line("Bad", quantity, "1.00")


@pytest.mark.parametrize("rate", [-1, 101])
def test_invalid_tax_rate(rate):
    with pytest.raises(ValueError):
        Invoice("INV-005", tax_rate=rate)


def test_float_quantity_is_refused(invoice):
    with pytest.raises(TypeError):
        invoice.add_line("Bad", 1.5, "1.00")


def test_tax_exactly_half_a_cent_rounds_up():
    invoice = Invoice("INV-006", tax_rate=5)
    invoice.add_line("Sticker", 1, "2.50")
    # 5% of 2.50 is 0.125
    assert invoice.tax == Money("0.13")
    assert invoice.total == Money("2.63")


def test_line_amount_exactly_half_a_cent_rounds_up():
    invoice = Invoice("INV-007")
    invoice.add_line("Screws", 5, "0.0450")
    # 5 x 0.045 = 0.225
    assert invoice.lines[0].amount == Money("0.23")
    assert invoice.subtotal == Money("0.23")
