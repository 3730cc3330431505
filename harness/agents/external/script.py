"""The tool calls inside a code-mode script: what Codex's `exec` tool runs.

With a current model Codex works in "code mode": its one tool call is `exec`, whose input is
JavaScript that calls the real tools as `await tools.exec_command({cmd: "..."})`,
`tools.exec_command("...")` or `tools.apply_patch("*** Begin Patch ...")`. The script is not
run here; its source is read for those calls, and a call's argument is taken when it is a string
literal (quotes or a template without `${...}`) or an object literal whose key names the
argument ahead of any nested object. A command built at run time (a variable, a concatenation,
an interpolation) is not seen; the template's text is kept with its `${...}` as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CALL = re.compile(r"\btools\s*\.\s*([A-Za-z_$][\w$]*)\s*\(\s*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b", "f": "\f", "v": "\v"}


@dataclass
class NestedCall:
    tool: str
    argument: str | None  # the string given (the whole argument, or the named key of an object); None: not literal


def _literal(source: str, at: int) -> tuple[str, int] | None:
    """The string literal starting at `at` (its value, the index after it), or None."""
    if at >= len(source) or source[at] not in "\"'`":
        return None
    quote, out, i = source[at], [], at + 1
    while i < len(source):
        ch = source[i]
        if ch == "\\" and i + 1 < len(source):
            nxt = source[i + 1]
            if nxt == "\n":  # a line continuation
                i += 2
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        if ch == quote:
            return "".join(out), i + 1
        if ch == "\n" and quote != "`":
            return None
        out.append(ch)
        i += 1
    return None


def _object_key(source: str, at: int, key: str) -> str | None:
    """In the object literal starting at `at`, the string literal given for `key` (before any nested brace)."""
    found = re.compile(r"""\{(?:[^{}]*?[,\s])?["']?""" + re.escape(key) + r"""["']?\s*:\s*""").match(source, at)
    if found is None:
        return None
    value = _literal(source, found.end())
    return value[0] if value else None


def nested_calls(source: str, arguments: dict[str, str]) -> list[NestedCall]:
    """The `tools.NAME(...)` calls of a script, in order; `arguments` maps a tool to the key of its
    argument object that holds what the rules read (a shell tool's command)."""
    out = []
    for match in _CALL.finditer(source):
        tool, at = match.group(1), match.end()
        value: str | None = None
        if at < len(source) and source[at] == "{":
            value = _object_key(source, at, arguments[tool]) if tool in arguments else None
        else:
            literal = _literal(source, at)
            value = literal[0] if literal else None
        out.append(NestedCall(tool, value))
    return out
