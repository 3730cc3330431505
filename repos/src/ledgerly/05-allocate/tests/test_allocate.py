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
