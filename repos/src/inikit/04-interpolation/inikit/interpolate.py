"""``${...}`` references between option values.

``${key}`` names an option as seen from the section being read; ``${section:key}`` names an
option of another section; ``$$`` is a literal dollar sign, and a ``$`` followed by anything
else is kept as it is. Values are expanded when they are read, recursively, so a referenced
value may itself contain references.
"""

from __future__ import annotations

import re
from typing import Callable, Optional

from .errors import InterpolationError

# resolve(section, key) -> the raw value of that option, or None when there is none
Resolver = Callable[[str, str], Optional[str]]

_REFERENCE = re.compile(r"\$(?:(\$)|\{([^{}]*)\})")


def expand(value: str, section: str, resolve: Resolver) -> str:
    """Expand the references in ``value``, an option read from ``section``.

    Raises :class:`InterpolationError` for a malformed reference or one to a missing option.
    """

    def replace(match: re.Match) -> str:
        if match.group(1):
            return "$"
        target_section, key = _target(match.group(2), section)
        raw = resolve(target_section, key)
        if raw is None:
            raise InterpolationError(f"{match.group(0)} in section [{section}] refers to a missing option")
        return expand(raw, target_section, resolve)

    return _REFERENCE.sub(replace, value)


def _target(reference: str, section: str) -> tuple[str, str]:
    """``(section, key)`` named by the text between the braces."""
    if ":" in reference:
        target_section, _, key = reference.partition(":")
        target_section = target_section.strip()
    else:
        target_section, key = section, reference
    key = key.strip().lower()
    if not key or not target_section:
        raise InterpolationError(f"malformed reference ${{{reference}}} in section [{section}]")
    return target_section, key
