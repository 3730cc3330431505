from decimal import Decimal

import pytest

from ledgerly import Invoice, Money


def test_even_split():
    assert Money("100.00").allocate([1, 1]) == [Money("50.00"), Money("50.00")]


def test_proportional_split():
    assert Money("90").allocate([1, 2]) == [Money("30"), Money("60")]
    assert Money("100").allocate([Decimal("0.25"), Decimal("0.75")]) == [Money("25"), Money("75")]


def test_parts_keep_the_currency():
    parts = Money("3000", "JPY").allocate([1, 2])
    assert parts == [Money("1000", "JPY"), Money("2000", "JPY")]


def test_leftover_cents_go_to_the_first_parts():
    assert Money("100.00").allocate([1, 1, 1]) == [Money("33.34"), Money("33.33"), Money("33.33")]
    assert Money("0.05").allocate([1, 1]) == [Money("0.03"), Money("0.02")]
    assert Money("0.02").allocate([1, 1, 1]) == [Money("0.01"), Money("0.01"), Money("0")]


def test_leftover_cents_go_to_the_parts_that_lost_most():
    # exact shares 3.333... and 6.666...: the second part lost more to rounding down
    assert Money("10.00").allocate([1, 2]) == [Money("3.33"), Money("6.67")]


@pytest.mark.parametrize(
    "amount, currency, ratios",
    [
        ("100.00", "USD", [1, 1, 1]),
        ("0.05", "USD", [1, 1]),
        ("10.00", "USD", [1, 2]),
        ("99.99", "USD", [3, 3, 4]),
        ("0.01", "USD", [1, 1, 1]),
        ("1234.56", "EUR", [7, 11, 13, 17]),
        ("1000", "JPY", [1, 1, 1]),
        ("1.000", "KWD", [1, 1, 1]),
    ],
)
def test_parts_add_up_exactly(amount, currency, ratios):
    money = Money(amount, currency)
    parts = money.allocate(ratios)
    assert len(parts) == len(ratios)
    assert sum(parts, Money.zero(currency)) == money
    assert all(part == part.rounded() for part in parts)


def test_no_minor_units():
    assert Money("1000", "JPY").allocate([1, 1, 1]) == [Money("334", "JPY"), Money("333", "JPY"), Money("333", "JPY")]


def test_three_digit_currency():
    parts = Money("1", "KWD").allocate([1, 1, 1])
    assert [str(part.amount) for part in parts] == ["0.334", "0.333", "0.333"]


def test_zero_ratio_part_gets_no_leftover():
    assert Money("0.05").allocate([1, 0, 1, 1]) == [Money("0.02"), Money("0"), Money("0.02"), Money("0.01")]


def test_installments_add_up_to_the_total():
    invoice = Invoice("INV-012", tax_rate=20)
    invoice.add_line("Support", 1, "83.33")
    assert invoice.total == Money("100.00")
    payments = invoice.installments(3)
    assert payments == [Money("33.34"), Money("33.33"), Money("33.33")]
    assert sum(payments, Money.zero()) == invoice.total


def test_zero_ratio_gets_nothing():
    assert Money("10").allocate([1, 0, 1]) == [Money("5"), Money("0"), Money("5")]


@pytest.mark.parametrize("ratios", [[], [0, 0], [1, -1]])
def test_invalid_ratios(ratios):
    with pytest.raises(ValueError):
        Money("10").allocate(ratios)


def test_installments():
    invoice = Invoice("INV-010")
    invoice.add_line("Annual plan", 1, "300.00")
    assert invoice.installments(3) == [Money("100.00")] * 3
    assert invoice.installments(1) == [Money("300.00")]


@pytest.mark.parametrize("count", [0, -2, True, "3"])
def test_invalid_installment_count(count):
    with pytest.raises(ValueError):
        Invoice("INV-011").installments(count)
