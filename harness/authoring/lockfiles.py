"""Checksums and pinned commits in the files that pin dependencies: what the secret scan drops.

A lock file is mostly integrity hashes (`sha512-...`, `sha256:...`, `h1:...`, bare hex) and commit
SHAs of git dependencies; a `.pre-commit-config.yaml` pins hooks by `rev:`. To an entropy detector
each of them looks like a secret, so one lock file could refuse a whole repository; yet a lock file
also holds what a real leak looks like (a registry URL with a token in it). So each file is read
with its own format's parser, the values its structure says are checksums or pinned revisions are
collected, and the secret scan blanks exactly those values (in place, so line numbers stay) and
scans the rest.

`pinned_values(path, text)` gives those values for a file this module knows (by its name), else an
empty set. One parser per format, one line in PARSERS each.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable, Iterator
from pathlib import PurePosixPath

import yaml

# Keys whose values are checksums or pinned revisions, in any of the formats below.
HASH_KEYS = frozenset(
    {
        "integrity",  # npm, pnpm, yarn v1
        "checksum",  # yarn berry, Cargo.lock
        "hash",  # poetry.lock files, uv.lock
        "hashes",  # Pipfile.lock
        "content-hash",  # poetry.lock metadata
        "contentHash",  # NuGet packages.lock.json
        "shasum",  # composer.lock dist
        "sha256",  # Pipfile.lock _meta
        "resolved_reference",  # poetry.lock git sources
        "reference",  # composer.lock git sources
        "revision",  # SwiftPM Package.resolved
        "commit",  # pnpm git resolutions
        "ref",  # Pipfile.lock git refs
        "rev",  # pre-commit hooks
    }
)
# A URL or spec that pins a git commit in its fragment: `git+https://host/x.git#<sha>`, a tarball
# URL `...tgz#<sha1>` (yarn v1), `?rev=v1#<sha>` (uv, Cargo).
_FRAGMENT = re.compile(r"#([0-9a-fA-F]{7,64})\b")
# One whitespace-free token of a line: what blanking looks at.
_TOKEN = re.compile(r"[A-Za-z0-9+/=_.:\-~]{7,}")


def _walk(node: object, key: str = "") -> Iterator[tuple[str, str]]:
    """(key it sits under, string) for every string of a parsed document."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, str(k))
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item, key)
    elif isinstance(node, str):
        yield key, node


def _from_structure(data: object) -> set[str]:
    out: set[str] = set()
    for key, value in _walk(data):
        if key in HASH_KEYS:
            out.update(value.split())  # "sha512-a sha1-b" (npm keeps two algorithms in one field)
        out.update(m.group(1) for m in _FRAGMENT.finditer(value))
    return out


def _json(text: str) -> set[str]:
    try:
        return _from_structure(json.loads(text))
    except ValueError:
        return set()


def _toml(text: str) -> set[str]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return set()
    out = _from_structure(data)
    # Cargo.lock format 1 kept checksums as [metadata] keys: "checksum NAME VER (SOURCE)" = "<hex>"
    for key, value in (data.get("metadata") or {}).items():
        if str(key).startswith("checksum ") and isinstance(value, str):
            out.add(value)
    return out


def _yaml(text: str) -> set[str]:
    try:
        return _from_structure(yaml.safe_load(text))
    except yaml.YAMLError:
        return set()


def _yarn_lock(text: str) -> set[str]:
    """yarn.lock: berry's is YAML; v1's is its own format of `key value` lines."""
    if "__metadata:" in text:
        return _yaml(text)
    out: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        value = value.strip().strip('"')
        if key in HASH_KEYS:
            out.update(value.split())
        out.update(m.group(1) for m in _FRAGMENT.finditer(value))
    return out


def _go_sum(text: str) -> set[str]:
    """go.sum: `module version hash` per line; the third field is the checksum."""
    out = set()
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 3:
            out.add(fields[2])
    return out


def _pre_commit(text: str) -> set[str]:
    """.pre-commit-config.yaml: each repo's `rev:` (a tag, or a commit SHA: both public pins)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return set()
    repos = data.get("repos") if isinstance(data, dict) else None
    return {str(r["rev"]) for r in repos or [] if isinstance(r, dict) and "rev" in r}


PARSERS: dict[str, Callable[[str], set[str]]] = {
    "package-lock.json": _json,
    "npm-shrinkwrap.json": _json,
    "pnpm-lock.yaml": _yaml,
    "yarn.lock": _yarn_lock,
    "Cargo.lock": _toml,
    "go.sum": _go_sum,
    "go.work.sum": _go_sum,
    "poetry.lock": _toml,
    "uv.lock": _toml,
    "pdm.lock": _toml,
    "Pipfile.lock": _json,
    "composer.lock": _json,
    "packages.lock.json": _json,
    "Package.resolved": _json,
    ".pre-commit-config.yaml": _pre_commit,
    ".pre-commit-config.yml": _pre_commit,
}


def is_pin_file(path: str) -> bool:
    return PurePosixPath(path).name in PARSERS


def pinned_values(path: str, text: str) -> set[str]:
    """The checksums and pinned revisions of `text`, read as the file `path` names (empty when
    this module does not know the format, or the file does not parse)."""
    parse = PARSERS.get(PurePosixPath(path).name)
    return {v for v in parse(text) if len(v) >= 7} if parse else set()


def blank(text: str, values: set[str]) -> str:
    """`text` with every token that is one of `values` (or ends in one, as in `...tgz#<sha1>`
    after its `#`) removed; lines stay where they were."""
    if not values:
        return text

    def drop(match: re.Match[str]) -> str:
        token = match.group()
        return "" if token in values or token.strip("=") in values else token

    return _TOKEN.sub(drop, text)
