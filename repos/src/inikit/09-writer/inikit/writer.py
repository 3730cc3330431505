"""Writing a :class:`~inikit.config.Config` back as INI text."""

from __future__ import annotations

import os
import re
from typing import Union

from .config import Config
from .parser import DEFAULT_SECTION

# whitespace followed by a comment marker would start an inline comment when read back
_UNSAFE = re.compile(r"\s[#;]")


def dumps(config: Config) -> str:
    """INI text that reads back to the same raw values.

    ``[DEFAULT]`` comes first when it has options, then every section in order, options as
    ``key = value``. Raises ``ValueError`` for a value the parser would read back differently.
    """
    blocks = []
    for name, options in config.to_dict().items():
        if name == DEFAULT_SECTION and not options:
            continue
        lines = [f"[{name}]"]
        for key, value in options.items():
            _check(name, key, value)
            lines.append(f"{key} = {value}".rstrip())
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def dump(config: Config, path: Union[str, "os.PathLike[str]"], encoding: str = "utf-8") -> None:
    """Write :func:`dumps` of ``config`` to ``path``."""
    text = dumps(config)
    with open(path, "w", encoding=encoding) as handle:
        handle.write(text)


def _check(section: str, key: str, value: str) -> None:
    if value != value.strip() or "\n" in value or "\r" in value or _UNSAFE.search(value):
        raise ValueError(f"[{section}] {key} = {value!r} cannot be written as INI without changing it")
