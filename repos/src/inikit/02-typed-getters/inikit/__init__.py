"""inikit: a small, strict INI configuration parser."""

from .config import Config
from .errors import ConversionError, InikitError, NoOptionError, NoSectionError, ParseError
from .parser import DEFAULT_SECTION, parse

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_SECTION",
    "Config",
    "ConversionError",
    "InikitError",
    "NoOptionError",
    "NoSectionError",
    "ParseError",
    "parse",
]
