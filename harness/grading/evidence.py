"""Evidence that what grade.json says grading reverted and stripped holds in the graded tree.

`Grade.reverted` and `Grade.stripped` are grading's claims: these paths are as the base has them
(a reverted one), or as the base has them or absent (a stripped one). They follow from what
grading decided not to apply, not from looking at the tree the hidden tests run on. Here they are
checked by evidence of their own: content hashes of every claimed path, read with a fixed tool in
the grading container twice -- right before the agent's patch is applied (the base: the task
image's repository with the hidden tests put in, as the harness prepared it; nothing of the patch
is there yet) and right before the hidden tests run (the graded tree) -- and compared.

The tool: the task image's system interpreter by its absolute path (`/usr/bin/python3 -I -S`:
isolated, no site, so nothing on PATH, in the repository, in PYTHONPATH or in a `.pth` takes part),
never git; an image without it is read from outside through the engine's archive API instead
(the same way for both sides). One exec per side, for all paths at once, and none at all when
grading claims nothing. A path is hashed as the file system resolves it (symlinks in its folders
followed, a symlink at its end read as a link): a regular file as the sha256 of its bytes, a
symlink as `symlink:` + the sha256 of its target, a folder as `dir:` + a hash over its entries,
a missing one as `absent`. Paths are bytes as the file system holds them (str with
surrogateescape, written to JSON with the one escape, see `harness.jsonl`); a path holding NUL
names nothing a file system can hold, and paths outside the repository or under `.git/` are no
part of the graded tree (`NOT_IN_THE_TREE`): those are left out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from pydantic import BaseModel, Field

from sandbox import ExecError, PatchError, Sandbox, SandboxError

ABSENT = "absent"
PYTHON = "/usr/bin/python3"  # the task image's system interpreter (Debian's python3, outside the repository)

# Run as `PYTHON -I -S -c`, in the repository: reads NUL-terminated paths on stdin, prints
# "<index> <digest>" per path (indexes, so no path has to survive a text channel).
_PROBE = r"""
import errno, hashlib, os, stat, sys
def sha(data):
    return hashlib.sha256(data).hexdigest()
def digest(path, depth):
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "absent"
    except OSError as exc:
        return "unreadable:" + errno.errorcode.get(exc.errno, str(exc.errno))
    try:
        if stat.S_ISLNK(st.st_mode):
            return "symlink:" + sha(os.readlink(path))
        if stat.S_ISREG(st.st_mode):
            h = hashlib.sha256()
            with open(path, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            return h.hexdigest()
        if stat.S_ISDIR(st.st_mode):
            if depth > 64:
                return "unreadable:too deep"
            h = hashlib.sha256()
            for name in sorted(os.listdir(path)):
                h.update(name + b"\0" + digest(os.path.join(path, name), depth + 1).encode() + b"\0")
            return "dir:" + h.hexdigest()
        return "other:%o" % stat.S_IFMT(st.st_mode)
    except OSError as exc:
        return "unreadable:" + errno.errorcode.get(exc.errno, str(exc.errno))
paths = sys.stdin.buffer.read().split(b"\0")[:-1]
for i, p in enumerate(paths):
    sys.stdout.write("%d %s\n" % (i, digest(p, 0)))
"""


class PathEvidence(BaseModel):
    """One claimed path: what grading claims, the base's hash and the graded tree's."""

    path: str  # the file system's bytes (surrogateescape); a list item, not a key: pydantic's JSON keys lose them
    claim: str  # "reverted": as at the base; "stripped": as at the base, or absent
    expected: str  # the base's: a sha256, "symlink:<sha256>", "dir:<sha256>", "absent"
    found: str  # the graded tree's, in the same form
    holds: bool


class TreeEvidence(BaseModel):
    """Every revert and strip grading claims, checked in the graded tree."""

    verified: bool = Field(description="every claim holds")
    tool: str = Field(description="what read the hashes")
    paths: list[PathEvidence] = Field(default_factory=list)

    def broken(self) -> list[PathEvidence]:
        return [e for e in self.paths if not e.holds]

    def of(self, path: str) -> PathEvidence | None:
        return next((e for e in self.paths if e.path == path), None)


#: Stripped for a reason that names no file of the graded tree: left out of the evidence. A path
#: outside the repository never reaches an applier (and hashing one, `/proc/uptime`, would read
#: what changes by itself); under `.git/` is grading's own git's (`git apply --3way` writes the
#: index there), which no test reads.
NOT_IN_THE_TREE = ("outside the repository", "under .git/")


def claims(reverted: Iterable[str], stripped: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Claimed path -> "reverted" or "stripped" (a path claimed both ways is held to the stricter,
    "reverted"), from the grade's reverted paths and its stripped (path, reason) pairs; a shadowing
    entry's trailing "/" dropped; left out: paths holding NUL, and those of `NOT_IN_THE_TREE`."""
    out: dict[str, str] = {}
    for path, reason in stripped:
        if reason in NOT_IN_THE_TREE:
            continue
        out.setdefault(path.rstrip("/") or path, "stripped")
    for path in reverted:
        out[path.rstrip("/") or path] = "reverted"
    return {p: c for p, c in out.items() if p and "\0" not in p}


class Hasher:
    """Reads the hashes of claimed paths in one grading container, the same way for both sides."""

    def __init__(self, python: str = PYTHON):
        self.python = python
        self.archive = False  # the image has no `python`: read through the engine's archive API

    @property
    def tool(self) -> str:
        return "the engine's archive API" if self.archive else f"{self.python} -I -S"

    def hashes(self, sb: Sandbox, paths: list[str]) -> dict[str, str]:
        """path -> digest of every path, in one exec (or one archive read per path). Raises
        SandboxError when the engine or the container fails, or the tool cannot read the tree."""
        if not paths:
            return {}
        if not self.archive:
            stdin = b"".join(_raw(p) + b"\0" for p in paths)
            try:
                run = sb.exec([self.python, "-I", "-S", "-c", _PROBE], timeout=sb.limits.step_timeout_s, stdin=stdin)
            except ExecError:
                run = None
            if run is not None and run.returncode not in (126, 127):
                if not run.ok:
                    raise SandboxError(f"the tree's hashes could not be read: {run.stderr.strip()[-300:]}")
                said = dict(line.split(" ", 1) for line in run.stdout.splitlines() if " " in line)
                return {p: said.get(str(i), "unreadable:no answer") for i, p in enumerate(paths)}
            self.archive = True
        return {p: _from_archive(sb, p) for p in paths}


def judge(kinds: dict[str, str], base: dict[str, str], graded: dict[str, str], tool: str) -> TreeEvidence:
    """The evidence: a reverted path must be found as the base has it; a stripped one as the base
    has it or absent."""
    paths = []
    for path, claim in kinds.items():
        expected, found = base.get(path, "unreadable:not read"), graded.get(path, "unreadable:not read")
        holds = found == expected or (claim == "stripped" and found == ABSENT)
        paths.append(PathEvidence(path=path, claim=claim, expected=expected, found=found, holds=holds))
    return TreeEvidence(verified=all(e.holds for e in paths), tool=tool, paths=paths)


def _raw(path: str) -> bytes:
    try:
        return path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte: as Python's file system would
        return path.encode("utf-8", "surrogatepass")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _from_archive(sb: Sandbox, path: str) -> str:
    """A path's digest read from outside the container (the engine's archive API)."""
    try:
        entries = sb.read_tree([path])
    except PatchError:
        return "unreadable:too large"
    if not entries:
        return ABSENT
    by_path = {e.path: e for e in entries}
    top = by_path.get(path) or entries[0]
    if top.kind == "file":
        return _sha(top.data)
    if top.kind == "symlink":
        return "symlink:" + _sha(top.data)
    inner = sorted((e.path, e.kind, e.data) for e in entries if e is not top)
    return "dir:" + _sha(b"".join(_raw(p) + b"\0" + k.encode() + b"\0" + _sha(d).encode() + b"\0" for p, k, d in inner))
