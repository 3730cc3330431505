"""inikit: a small, strict INI configuration parser."""

from .config import Config
from .errors import InikitError, NoOptionError, NoSectionError, ParseError
from .parser import DEFAULT_SECTION, parse

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_SECTION",
    "Config",
    "InikitError",
    "NoOptionError",
    "NoSectionError",
    "ParseError",
    "parse",
]
