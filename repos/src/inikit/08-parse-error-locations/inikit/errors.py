"""Exceptions raised by inikit. All of them derive from :class:`InikitError`."""

from __future__ import annotations


class InikitError(Exception):
    """Base class for every error inikit raises."""


class ParseError(InikitError):
    """The text is not valid INI.

    ``filename`` is the path given to :func:`~inikit.load` (``"<string>"`` for text) and
    ``lineno`` the 1-based line of the error; ``str()`` reads ``"app.ini:12: message"``.
    """

    def __init__(self, message: str, filename: str = "<string>", lineno: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.filename = filename
        self.lineno = lineno

    def __str__(self) -> str:
        where = self.filename if self.lineno is None else f"{self.filename}:{self.lineno}"
        return f"{where}: {self.message}"


class NoSectionError(InikitError, LookupError):
    """A section was asked for that the configuration does not have."""


class NoOptionError(InikitError, LookupError):
    """An option was asked for that the section (and [DEFAULT]) does not have."""


class ConversionError(InikitError, ValueError):
    """An option's value cannot be converted to the type asked for."""


class InterpolationError(InikitError):
    """A ``${...}`` reference in a value cannot be expanded."""
