"""Invoices: line items, subtotal, tax and total."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Union

from .currency import get_currency
from .errors import CurrencyMismatchError
from .money import Money

Quantity = Union[Decimal, int, str]


def _decimal(value: Quantity, what: str) -> Decimal:
    if isinstance(value, (float, bool)):
        raise TypeError(f"{what} must be Decimal, int or str, not {type(value).__name__}")
    try:
        result = Decimal(value)
    except InvalidOperation:
        raise ValueError(f"{what} is not a number: {value!r}") from None
    if not result.is_finite():
        raise ValueError(f"{what} is not a number: {value!r}")
    return result


@dataclass(frozen=True)
class LineItem:
    """One billed item: ``quantity`` units at ``unit_price`` each."""

    description: str
    quantity: Decimal
    unit_price: Money

    def __post_init__(self) -> None:
        object.__setattr__(self, "quantity", _decimal(self.quantity, "quantity"))
        if self.quantity <= 0:
            raise ValueError(f"quantity must be positive, got {self.quantity}")

    @property
    def amount(self) -> Money:
        """Quantity times unit price, rounded to the currency's minor unit."""
        return (self.unit_price * self.quantity).rounded()


def _percentage(value: Quantity, what: str) -> Decimal:
    result = _decimal(value, what)
    if not 0 <= result <= 100:
        raise ValueError(f"{what} is a percentage between 0 and 100, got {result}")
    return result


class Invoice:
    """An invoice in one currency with a flat tax rate and an optional discount.

    Both are percentages (``tax_rate=20`` is 20%). The discount comes off the subtotal
    before tax.
    """

    def __init__(
        self, number: str, currency: str = "USD", tax_rate: Quantity = 0, discount_percent: Quantity = 0
    ) -> None:
        self.number = number
        self.currency = get_currency(currency)
        self.tax_rate = _percentage(tax_rate, "tax_rate")
        self.discount_percent = _percentage(discount_percent, "discount_percent")
        self.lines: list[LineItem] = []

    def add_line(self, description: str, quantity: Quantity, unit_price: Money | Quantity) -> LineItem:
        """Append a line; a plain number as ``unit_price`` is taken in the invoice currency."""
        price = unit_price if isinstance(unit_price, Money) else Money(unit_price, self.currency)
        if price.currency != self.currency:
            raise CurrencyMismatchError(
                f"invoice {self.number} is in {self.currency.code}, the line is in {price.currency.code}"
            )
        line = LineItem(description, quantity, price)  # type: ignore[arg-type]
        self.lines.append(line)
        return line

    @property
    def subtotal(self) -> Money:
        """The sum of the line amounts."""
        return sum((line.amount for line in self.lines), Money.zero(self.currency))

    @property
    def discount(self) -> Money:
        """The discount on the subtotal, rounded to the minor unit (zero without one)."""
        return (self.subtotal * self.discount_percent / 100).rounded()

    @property
    def tax(self) -> Money:
        """Tax on the discounted subtotal, rounded to the minor unit."""
        return ((self.subtotal - self.discount) * self.tax_rate / 100).rounded()

    @property
    def total(self) -> Money:
        return self.subtotal - self.discount + self.tax

    def installments(self, count: int) -> list[Money]:
        """The total split into ``count`` equal payments."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"count must be a positive integer, got {count!r}")
        return self.total.allocate([1] * count)
