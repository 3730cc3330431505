"""Exceptions raised by ledgerly. All of them derive from :class:`LedgerlyError`."""


class LedgerlyError(Exception):
    """Base class for every error ledgerly raises."""


class UnknownCurrencyError(LedgerlyError, LookupError):
    """A currency code that is not registered."""


class CurrencyMismatchError(LedgerlyError, ValueError):
    """An operation mixed amounts of different currencies."""
