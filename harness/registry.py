"""Named plug-ins, loaded on first use: test parsers, agent kinds, model adapters.

Each registry maps a name to "module:attribute". Built-in entries are one line each in the module
that owns the registry; a team adds its own from its own package, without forking, through a
Python entry point in the registry's group, e.g. in that package's pyproject.toml:

    [project.entry-points."wholeloop.parsers"]
    mytest = "mypkg.wholeloop_parser:MyParser"

Nothing is imported until a name is asked for, so `wholeloop --help` stays fast. A leaf module.
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import UserError


class UnknownName(UserError):
    """No plug-in of that name is registered (built in or through an entry point)."""


class Registry:
    def __init__(self, group: str, kind: str, builtins: dict[str, str]) -> None:
        self.group, self.kind = group, kind  # kind: what one entry is, for messages ("test parser")
        self._targets = dict(builtins)
        self._loaded: dict[str, Any] = {}
        self._scanned = False

    def _scan(self) -> None:
        if self._scanned:
            return
        self._scanned = True
        from importlib import metadata  # on first use: reading entry points costs tens of ms

        for entry in metadata.entry_points(group=self.group):
            self._targets.setdefault(entry.name, entry.value)  # a built-in name is never replaced

    def register(self, name: str, target: str | Any) -> None:
        """Add an entry at run time: "module:attribute", or the object itself."""
        if isinstance(target, str):
            self._targets[name] = target
        else:
            self._loaded[name] = target
            self._targets[name] = f"{getattr(target, '__module__', '?')}:{getattr(target, '__qualname__', name)}"

    def names(self) -> list[str]:
        self._scan()
        return sorted(self._targets)

    def __contains__(self, name: str) -> bool:
        return name in self.names()

    def get(self, name: str) -> Any:
        """The registered object; raises UnknownName listing what exists."""
        if name in self._loaded:
            return self._loaded[name]
        self._scan()
        target = self._targets.get(name)
        if target is None:
            raise UnknownName(
                f"unknown {self.kind} {name!r}; known: {', '.join(self.names())} "
                f"(more can be added through the {self.group!r} entry-point group)"
            )
        module, _, attr = target.partition(":")
        obj = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
        self._loaded[name] = obj
        return obj
