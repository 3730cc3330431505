from decimal import Decimal

import pytest

from ledgerly import CurrencyMismatchError, Money


def test_construction():
    assert Money("12.50").amount == Decimal("12.50")
    assert Money(3, "EUR").currency.code == "EUR"
    assert Money(Decimal("1.5"), "usd") == Money("1.50")


@pytest.mark.parametrize("bad", [1.5, True])
def test_floats_and_bools_are_refused(bad):
    with pytest.raises(TypeError):
        Money(bad)


@pytest.mark.parametrize("bad", ["abc", "NaN", "Infinity", ""], ids=["text", "nan", "infinity", "empty"])
def test_invalid_amounts(bad):
    with pytest.raises(ValueError):
        Money(bad)


def test_arithmetic_keeps_precision():
    assert Money("0.10") + Money("0.20") == Money("0.30")
    assert Money("10") - Money("0.01") == Money("9.99")
    assert Money("19.99") * 3 == Money("59.97")
    assert 2 * Money("1.005") == Money("2.010")
    assert Money("10") / 4 == Money("2.5")
    assert -Money("5") == Money("-5")
    assert sum([Money("1"), Money("2")]) == Money("3")


def test_mixing_currencies_is_an_error():
    with pytest.raises(CurrencyMismatchError):
        Money("1", "USD") + Money("1", "EUR")
    with pytest.raises(CurrencyMismatchError):
        Money("1", "USD") < Money("1", "EUR")
    assert Money("1", "USD") != Money("1", "EUR")


def test_multiplying_by_float_is_refused():
    with pytest.raises(TypeError):
        Money("1") * 1.5


def test_comparison_and_hash():
    assert Money("1.00") < Money("1.01")
    assert Money("2") >= Money("2.00")
    assert len({Money("1.0"), Money("1.00")}) == 1


@pytest.mark.parametrize(
    "amount, currency, expected",
    [
        ("1.006", "USD", "1.01"),
        ("1.004", "USD", "1.00"),
        ("-2.349", "USD", "-2.35"),
        ("1500.4", "JPY", "1500"),
        ("1500.6", "JPY", "1501"),
        ("0.0004", "KWD", "0.000"),
    ],
)
def test_rounded(amount, currency, expected):
    rounded = Money(amount, currency).rounded()
    assert str(rounded.amount) == expected


@pytest.mark.parametrize(
    "amount, currency, expected",
    [
        ("0.125", "USD", "0.13"),
        ("0.135", "USD", "0.14"),
        ("2.675", "USD", "2.68"),
        ("-0.125", "USD", "-0.13"),
        ("-2.665", "USD", "-2.67"),
        ("0.5", "JPY", "1"),
        ("2.5", "JPY", "3"),
        ("-1.5", "JPY", "-2"),
        ("1.0005", "KWD", "1.001"),
    ],
)
def test_half_rounds_away_from_zero(amount, currency, expected):
    assert str(Money(amount, currency).rounded().amount) == expected


def test_rounding_does_not_depend_on_the_decimal_context():
    import decimal

    with decimal.localcontext() as ctx:
        ctx.rounding = decimal.ROUND_HALF_EVEN
        assert Money("0.125").rounded() == Money("0.13")


def test_format_rounds_halves_up():
    assert Money("1234.565").format() == "$1,234.57"
    assert Money("-0.005").format() == "-$0.01"


@pytest.mark.parametrize(
    "amount, currency, text",
    [
        ("1234.5", "USD", "$1,234.50"),
        ("-5", "USD", "-$5.00"),
        ("0", "EUR", "\u20ac0.00"),
        ("1500", "JPY", "\u00a51,500"),
        ("12.3456", "KWD", "KD 12.346"),
        ("1000000", "CHF", "CHF 1,000,000.00"),
    ],
    ids=["usd", "negative", "eur-zero", "jpy", "kwd", "chf"],
)
def test_format(amount, currency, text):
    assert Money(amount, currency).format() == text
    assert str(Money(amount, currency)) == text


def test_repr():
    assert repr(Money("1.50", "EUR")) == "Money('1.50', 'EUR')"


def test_zero():
    assert Money.zero("JPY").is_zero()
    assert not Money("0.01").is_zero()
