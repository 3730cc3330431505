"""Turn INI text into nested dictionaries.

The grammar is deliberately small; see the README for the rules. :func:`parse` returns
``{section: {option: value}}`` with option names lower-cased and values as plain strings.
"""

from __future__ import annotations

from typing import Dict

from .errors import ParseError

COMMENT_PREFIXES = ("#", ";")
DEFAULT_SECTION = "DEFAULT"

Sections = Dict[str, Dict[str, str]]


def parse(text: str) -> Sections:
    """Parse INI ``text``. Raises :class:`ParseError` on the first malformed line."""
    sections: Sections = {}
    current: dict[str, str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(COMMENT_PREFIXES):
            continue
        if line.startswith("["):
            current = sections.setdefault(_section_name(line), {})
            continue
        if current is None:
            raise ParseError(f"option outside of any section: {line!r}")
        key, value = _split_option(line)
        if key in current:
            raise ParseError(f"duplicate option {key!r}")
        current[key] = value
    return sections


def _section_name(line: str) -> str:
    if not line.endswith("]"):
        raise ParseError(f"unterminated section header: {line!r}")
    name = line[1:-1].strip()
    if not name:
        raise ParseError("empty section name")
    return name


def _split_option(line: str) -> tuple[str, str]:
    """Split ``key = value`` (or ``key: value``) at the first separator."""
    positions = [pos for pos in (line.find("="), line.find(":")) if pos != -1]
    if not positions:
        raise ParseError(f"expected 'key = value', got {line!r}")
    sep = min(positions)
    key = line[:sep].strip().lower()
    if not key:
        raise ParseError(f"missing option name: {line!r}")
    return key, _strip_inline_comment(line[sep + 1 :].strip())


def _strip_inline_comment(value: str) -> str:
    """Drop a trailing ``# comment`` or ``; comment`` from an option value."""
    for prefix in COMMENT_PREFIXES:
        index = value.find(prefix)
        if index != -1:
            value = value[:index]
    return value.rstrip()
