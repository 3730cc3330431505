"""Exceptions raised by inikit. All of them derive from :class:`InikitError`."""


class InikitError(Exception):
    """Base class for every error inikit raises."""


class ParseError(InikitError):
    """The text is not valid INI."""


class NoSectionError(InikitError, LookupError):
    """A section was asked for that the configuration does not have."""


class NoOptionError(InikitError, LookupError):
    """An option was asked for that the section (and [DEFAULT]) does not have."""
