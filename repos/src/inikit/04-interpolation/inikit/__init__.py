"""inikit: a small, strict INI configuration parser."""

from .config import Config
from .errors import (
    ConversionError,
    InikitError,
    InterpolationError,
    NoOptionError,
    NoSectionError,
    ParseError,
)
from .parser import DEFAULT_SECTION, parse

__version__ = "0.2.0"

__all__ = [
    "DEFAULT_SECTION",
    "Config",
    "ConversionError",
    "InikitError",
    "InterpolationError",
    "NoOptionError",
    "NoSectionError",
    "ParseError",
    "parse",
]
