"""The :class:`Config` object: parsed sections with [DEFAULT] fallbacks."""

from __future__ import annotations

from typing import Callable, Iterator, Mapping, TypeVar

from .errors import ConversionError, NoOptionError, NoSectionError
from .interpolate import expand
from .parser import DEFAULT_SECTION, parse

_MISSING = object()
_T = TypeVar("_T")

BOOLEAN_STATES = {
    "1": True, "yes": True, "true": True, "on": True,
    "0": False, "no": False, "false": False, "off": False,
}


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

    def get(self, section: str, key: str, fallback: object = _MISSING, *, raw: bool = False) -> str:
        """The value of ``key`` in ``section``, falling back to ``[DEFAULT]``.

        ``${...}`` references are expanded unless ``raw`` is true. When the section or option
        does not exist, return ``fallback`` if one was given, else raise
        :class:`NoSectionError` or :class:`NoOptionError`.
        """
        try:
            value = self._raw(section, key)
        except (NoSectionError, NoOptionError):
            if fallback is _MISSING:
                raise
            return fallback  # type: ignore[return-value]
        return value if raw else expand(value, section, self._reference)

    def get_int(self, section: str, key: str, fallback: object = _MISSING) -> int:
        """The option as an ``int`` (``"42"``, ``"-7"``)."""
        return self._typed(section, key, fallback, int, "integer")

    def get_float(self, section: str, key: str, fallback: object = _MISSING) -> float:
        """The option as a ``float`` (``"0.5"``, ``"1e3"``)."""
        return self._typed(section, key, fallback, float, "number")

    def get_bool(self, section: str, key: str, fallback: object = _MISSING) -> bool:
        """The option as a ``bool``: 1/yes/true/on or 0/no/false/off, in any case."""
        return self._typed(section, key, fallback, _to_bool, "boolean")

    def get_list(self, section: str, key: str, fallback: object = _MISSING, *, sep: str = ",") -> list[str]:
        """The option split at ``sep``, items stripped, empty items dropped."""
        return self._typed(section, key, fallback, lambda raw: _to_list(raw, sep), "list")

    def _typed(self, section: str, key: str, fallback: object, convert: Callable[[str], _T], kind: str) -> _T:
        if fallback is not _MISSING and not self.has_option(section, key):
            return fallback  # type: ignore[return-value]
        raw = self.get(section, key)
        try:
            return convert(raw)
        except ValueError:
            raise ConversionError(f"[{section}] {key.lower()} = {raw!r} is not a valid {kind}") from None

    def items(self, section: str, *, raw: bool = False) -> list[tuple[str, str]]:
        """``(option, value)`` pairs visible from ``section``."""
        return [(key, self.get(section, key, raw=raw)) for key in self.options(section)]

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

    def _raw(self, section: str, key: str) -> str:
        own = self._section(section)
        key = key.lower()
        if key in own:
            return own[key]
        if key in self._defaults:
            return self._defaults[key]
        raise NoOptionError(f"no option {key!r} in section [{section}]")

    def _reference(self, section: str, key: str) -> str | None:
        """The raw value a ``${...}`` reference names, as seen from ``section``, or None."""
        if section != DEFAULT_SECTION and section not in self._sections:
            return None
        scope = {**self._defaults, **self._sections.get(section, {})}
        return scope.get(key)

    def _section(self, name: str) -> dict[str, str]:
        if name == DEFAULT_SECTION:
            return self._defaults
        try:
            return self._sections[name]
        except KeyError:
            raise NoSectionError(f"no section [{name}]") from None


def _to_bool(raw: str) -> bool:
    try:
        return BOOLEAN_STATES[raw.strip().lower()]
    except KeyError:
        raise ValueError(raw) from None


def _to_list(raw: str, sep: str) -> list[str]:
    return [item.strip() for item in raw.split(sep) if item.strip()]
