"""The :class:`Money` value type."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import total_ordering
from typing import Sequence, Union

from .currency import Currency, get_currency
from .errors import CurrencyMismatchError

Number = Union[Decimal, int]


@total_ordering
class Money:
    """An immutable amount of one currency.

    Arithmetic keeps full precision; :meth:`rounded` rounds to the currency's minor unit.
    """

    __slots__ = ("_amount", "_currency")

    def __init__(self, amount: Decimal | int | str, currency: str | Currency = "USD") -> None:
        if isinstance(amount, (float, bool)):
            raise TypeError(f"amounts are Decimal, int or str, not {type(amount).__name__}")
        try:
            value = Decimal(amount)
        except InvalidOperation:
            raise ValueError(f"not an amount: {amount!r}") from None
        if not value.is_finite():
            raise ValueError(f"not an amount: {amount!r}")
        self._amount = value
        self._currency = get_currency(currency)

    @classmethod
    def zero(cls, currency: str | Currency = "USD") -> Money:
        return cls(0, currency)

    @property
    def amount(self) -> Decimal:
        return self._amount

    @property
    def currency(self) -> Currency:
        return self._currency

    def is_zero(self) -> bool:
        return self._amount == 0

    def rounded(self) -> Money:
        """This amount rounded to the currency's minor unit (commercial rounding).

        A half rounds away from zero: 0.125 -> 0.13 and -0.125 -> -0.13.
        """
        return Money(self._amount.quantize(self._currency.quantum, rounding=ROUND_HALF_UP), self._currency)

    def allocate(self, ratios: Sequence[Number]) -> list[Money]:
        """Split this amount into parts proportional to ``ratios`` that add up to it exactly.

        The (rounded) amount is split in minor units: each part is rounded down, then the
        units left over go one each to the parts that lost most to rounding, earlier parts
        first on a tie. ``Money("100").allocate([1, 1, 1])`` gives 33.34, 33.33, 33.33.
        Ratios must be non-negative and not all zero.
        """
        weights = [Decimal(ratio) for ratio in ratios]
        if not weights or any(weight < 0 for weight in weights) or sum(weights) == 0:
            raise ValueError("ratios must be non-negative and not all zero")
        total = sum(weights)
        quantum = self._currency.quantum
        units = int(self.rounded()._amount / quantum)
        sign, units = (-1 if units < 0 else 1), abs(units)
        exact = [units * weight / total for weight in weights]
        parts = [int(share) for share in exact]  # rounded down: shares are not negative
        by_loss = sorted(range(len(parts)), key=lambda i: (parts[i] - exact[i], i))
        for i in by_loss[: units - sum(parts)]:
            parts[i] += 1
        return [Money(sign * part * quantum, self._currency) for part in parts]

    def format(self) -> str:
        """The rounded amount for people: ``$1,234.50``, ``-$5.00``, ``\u00a51,500``."""
        value = self.rounded().amount
        sign = "-" if value < 0 else ""
        return f"{sign}{self._currency.symbol}{abs(value):,.{self._currency.minor_units}f}"

    # ------------------------------------------------------------------ arithmetic

    def _same_currency(self, other: Money) -> None:
        if other._currency != self._currency:
            raise CurrencyMismatchError(f"cannot combine {self._currency.code} and {other._currency.code}")

    def __add__(self, other: object) -> Money:
        if not isinstance(other, Money):
            return NotImplemented
        self._same_currency(other)
        return Money(self._amount + other._amount, self._currency)

    def __radd__(self, other: object) -> Money:
        if isinstance(other, int) and other == 0:  # lets sum() start from 0
            return self
        return NotImplemented

    def __sub__(self, other: object) -> Money:
        if not isinstance(other, Money):
            return NotImplemented
        self._same_currency(other)
        return Money(self._amount - other._amount, self._currency)

    def __neg__(self) -> Money:
        return Money(-self._amount, self._currency)

    def __mul__(self, factor: object) -> Money:
        if isinstance(factor, bool) or not isinstance(factor, (Decimal, int)):
            return NotImplemented
        return Money(self._amount * factor, self._currency)

    __rmul__ = __mul__

    def __truediv__(self, divisor: object) -> Money:
        if isinstance(divisor, bool) or not isinstance(divisor, (Decimal, int)):
            return NotImplemented
        return Money(self._amount / divisor, self._currency)

    # ------------------------------------------------------------------ comparison

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Money):
            return NotImplemented
        return self._currency == other._currency and self._amount == other._amount

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Money):
            return NotImplemented
        self._same_currency(other)
        return self._amount < other._amount

    def __hash__(self) -> int:
        return hash((self._amount, self._currency.code))

    def __repr__(self) -> str:
        return f"Money({str(self._amount)!r}, {self._currency.code!r})"

    def __str__(self) -> str:
        return self.format()
