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
from .loader import load, loads
from .parser import DEFAULT_SECTION, parse
from .writer import dump, dumps

__version__ = "0.3.0"

__all__ = [
    "DEFAULT_SECTION",
    "Config",
    "ConversionError",
    "InikitError",
    "InterpolationError",
    "NoOptionError",
    "NoSectionError",
    "ParseError",
    "dump",
    "dumps",
    "load",
    "loads",
    "parse",
]
