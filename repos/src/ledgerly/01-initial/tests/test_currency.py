from decimal import Decimal

import pytest

from ledgerly import Currency, UnknownCurrencyError, get_currency, register_currency


def test_known_currencies():
    assert get_currency("USD").minor_units == 2
    assert get_currency("jpy").minor_units == 0
    assert get_currency("KWD").quantum == Decimal("0.001")


def test_quantum():
    assert get_currency("USD").quantum == Decimal("0.01")
    assert get_currency("JPY").quantum == Decimal("1")


def test_unknown_currency():
    with pytest.raises(UnknownCurrencyError):
        get_currency("XXX")
    with pytest.raises(LookupError):
        get_currency("XXX")


def test_register_currency():
    register_currency(Currency("SEK", "kr ", 2))
    assert get_currency("SEK").symbol == "kr "
    with pytest.raises(ValueError):
        register_currency(Currency("BAD", "?", -1))
