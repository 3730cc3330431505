"""Reading configuration text and files into a :class:`~inikit.config.Config`."""

from __future__ import annotations

import os
from typing import Union

from .config import Config
from .parser import parse

PathLike = Union[str, "os.PathLike[str]"]


def loads(text: str) -> Config:
    """Parse INI text into a new :class:`Config`.

    Raises :class:`~inikit.errors.ParseError` when the text is malformed.
    """
    return Config(parse(text))


def load(*paths: PathLike, encoding: str = "utf-8-sig") -> Config:
    """Read INI files in order into one :class:`Config`.

    Options in later files override the same options of earlier files; a section can be
    spread over several files. Raises ``OSError`` (``FileNotFoundError``, ...) when a file
    cannot be read and :class:`~inikit.errors.ParseError` when one is malformed.
    """
    if not paths:
        raise TypeError("load() needs at least one path")
    config = Config()
    for path in paths:
        with open(path, encoding=encoding) as handle:
            text = handle.read()
        config.update(parse(text, os.fspath(path)))
    return config
