"""ledgerly: money amounts and invoices with exact decimal arithmetic."""

from .currency import CURRENCIES, Currency, get_currency, register_currency
from .errors import CurrencyMismatchError, LedgerlyError, UnknownCurrencyError
from .invoice import Invoice, LineItem
from .money import Money

__version__ = "0.1.0"

__all__ = [
    "CURRENCIES",
    "Currency",
    "CurrencyMismatchError",
    "Invoice",
    "LedgerlyError",
    "LineItem",
    "Money",
    "UnknownCurrencyError",
    "get_currency",
    "register_currency",
]
