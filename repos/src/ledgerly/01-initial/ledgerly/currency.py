"""Currencies: ISO code, display symbol and number of minor-unit digits."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from .errors import UnknownCurrencyError


@dataclass(frozen=True)
class Currency:
    code: str  # ISO 4217, e.g. "USD"
    symbol: str  # written before the amount, e.g. "$" or "CHF "
    minor_units: int  # digits after the decimal point: 2 for USD, 0 for JPY

    @property
    def quantum(self) -> Decimal:
        """The smallest amount of this currency: ``Decimal("0.01")`` for USD."""
        return Decimal(1).scaleb(-self.minor_units)


CURRENCIES: dict[str, Currency] = {}


def register_currency(currency: Currency) -> None:
    """Make ``currency`` known by its code (replacing an earlier one with the same code)."""
    if currency.minor_units < 0:
        raise ValueError("minor_units must not be negative")
    CURRENCIES[currency.code] = currency


def get_currency(code: str | Currency) -> Currency:
    """The registered currency for ``code``; raises :class:`UnknownCurrencyError`."""
    if isinstance(code, Currency):
        return code
    try:
        return CURRENCIES[code.upper()]
    except KeyError:
        raise UnknownCurrencyError(f"unknown currency {code!r}") from None


for _currency in (
    Currency("USD", "$", 2),
    Currency("EUR", "\u20ac", 2),
    Currency("GBP", "\u00a3", 2),
    Currency("CHF", "CHF ", 2),
    Currency("JPY", "\u00a5", 0),
    Currency("KWD", "KD ", 3),
):
    register_currency(_currency)
