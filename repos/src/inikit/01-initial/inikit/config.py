"""The :class:`Config` object: parsed sections with [DEFAULT] fallbacks."""

from __future__ import annotations

from typing import Iterator, Mapping

from .errors import NoOptionError, NoSectionError
from .parser import DEFAULT_SECTION, parse

_MISSING = object()


class Config:
    """Sections of string options. Options of ``[DEFAULT]`` are visible from every section.

    Option names are case-insensitive; section names are not.
    """

    def __init__(self, sections: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self._defaults: dict[str, str] = {}
        self._sections: dict[str, dict[str, str]] = {}
        for name, options in (sections or {}).items():
            if name != DEFAULT_SECTION:
                self._sections.setdefault(name, {})
            for key, value in options.items():
                self.set(name, key, value)

    @classmethod
    def from_string(cls, text: str) -> Config:
        """Parse INI text into a new :class:`Config`."""
        return cls(parse(text))

    # ------------------------------------------------------------------ queries

    def sections(self) -> list[str]:
        """Section names in the order they first appeared, without ``DEFAULT``."""
        return list(self._sections)

    def has_section(self, name: str) -> bool:
        return name in self._sections

    def options(self, section: str) -> list[str]:
        """Option names visible from ``section``: its own first, then inherited defaults."""
        own = self._section(section)
        return list(own) + [key for key in self._defaults if key not in own]

    def has_option(self, section: str, key: str) -> bool:
        if section == DEFAULT_SECTION:
            return key.lower() in self._defaults
        return section in self._sections and key.lower() in self.options(section)

    def get(self, section: str, key: str, fallback: object = _MISSING) -> str:
        """The value of ``key`` in ``section``, falling back to ``[DEFAULT]``.

        When the section or option does not exist, return ``fallback`` if one was given,
        else raise :class:`NoSectionError` or :class:`NoOptionError`.
        """
        try:
            own = self._section(section)
        except NoSectionError:
            if fallback is not _MISSING:
                return fallback  # type: ignore[return-value]
            raise
        key = key.lower()
        if key in own:
            return own[key]
        if key in self._defaults:
            return self._defaults[key]
        if fallback is not _MISSING:
            return fallback  # type: ignore[return-value]
        raise NoOptionError(f"no option {key!r} in section [{section}]")

    def items(self, section: str) -> list[tuple[str, str]]:
        """``(option, value)`` pairs visible from ``section``."""
        return [(key, self.get(section, key)) for key in self.options(section)]

    def __contains__(self, section: object) -> bool:
        return section in self._sections

    def __iter__(self) -> Iterator[str]:
        return iter(self._sections)

    # ------------------------------------------------------------------ changes

    def set(self, section: str, key: str, value: str) -> None:
        """Set an option, creating the section when needed."""
        if not isinstance(value, str):
            raise TypeError(f"option values are strings, got {type(value).__name__}")
        target = self._defaults if section == DEFAULT_SECTION else self._sections.setdefault(section, {})
        target[key.lower()] = value

    def _section(self, name: str) -> dict[str, str]:
        if name == DEFAULT_SECTION:
            return self._defaults
        try:
            return self._sections[name]
        except KeyError:
            raise NoSectionError(f"no section [{name}]") from None
