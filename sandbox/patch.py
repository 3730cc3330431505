"""The patch of a sandbox, taken from outside it with the host's git: nothing of the agent's runs.

After the agent phase the environment is stopped; the engine's change list (`Sandbox.changes`)
says which paths differ from the tree it started with (its image), `Sandbox.read_tree` reads them
out (files, symlinks, modes) from the stopped environment and from its image, and this module
diffs the two sides in a scratch repository of ours on the host. So the patch is exactly the
difference between the tree the agent was given and the tree it left: build artefacts of the image
(an `*.egg-info/` of `pip install -e .`) are never part of it, and nothing the agent could change in
its container -- its git, PATH, git config, hooks, attributes, filters, index, HEAD, commits,
`.gitignore` or `.git/info/exclude` -- takes part in making it.

Git here runs with no system or global configuration, hooks off, no attributes but ours, no
filters (blobs are written with `--no-filters`, the scratch repository has no work tree) and no
external diff or text conversion. Ignore rules are fixed by wholeloop (`BaseRules`): the base
commit's own `.gitignore` files, the image's `.git/info/exclude` (which wholeloop wrote at build:
install leftovers) and `CACHE_PATTERNS`; a path the base commit tracks is never ignored.

Files that are not UTF-8 come as binary patches (ASCII, exact); files larger than
`MAX_FILE_BYTES` are refused before their bytes are read; so is a patch larger than
`MAX_PATCH_BYTES`.

This module is part of the contract: it imports no Docker and works with any `Sandbox`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .errors import InfraError, PatchError

MAX_FILE_BYTES = 50_000_000  # one changed file; refused before it is read
MAX_PATCH_BYTES = 50_000_000  # the whole patch
MAX_READ_BYTES = 200_000_000  # everything read out of one environment for one patch
MAX_CHANGED_PATHS = 200_000  # entries of the engine's change list
# Caches that running code or tests leaves in the work tree: never part of anyone's patch.
CACHE_PATTERNS = (
    "__pycache__/",
    "*.py[co]",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".hypothesis/",
    ".tox/",
    ".nox/",
    "*.egg-info/",
)
IGNORED_SHOWN = 200  # ignored paths kept by name in a TakenPatch (all are counted)


@dataclass(frozen=True)
class Change:
    """One entry of an environment's change list: `kind` A (added), C (changed) or D (deleted), and
    the path relative to the workdir ("" is the workdir itself)."""

    kind: str
    path: str


@dataclass(frozen=True)
class TreeEntry:
    """A path as read out of an environment: a file (`data` its bytes, `mode` 0o644 or 0o755), a
    symlink (`data` its target) or a folder."""

    path: str
    kind: str  # file | symlink | dir
    data: bytes = b""
    mode: int = 0o644


@dataclass(frozen=True)
class BaseRules:
    """What the patch is taken against besides the tree itself: wholeloop's ignore rules and the
    paths the base commit tracks (never ignored). Never anything of the agent's."""

    tracked: frozenset[str] = frozenset()
    gitignores: tuple[tuple[str, bytes], ...] = ()  # (path of a .gitignore of the base commit, its bytes)
    exclude: tuple[str, ...] = CACHE_PATTERNS  # more patterns, as in .git/info/exclude
    image_exclude: bool = True  # also the image's own .git/info/exclude (wholeloop wrote it at build)

    @classmethod
    def from_repository(
        cls,
        path: Path | str,
        commit: str = "HEAD",
        *,
        exclude: Iterable[str] = CACHE_PATTERNS,
        image_exclude: bool = True,
    ) -> BaseRules:
        """The rules of `commit` in a repository of ours on the host (a snapshot): its tracked paths
        and its `.gitignore` files. Raises PatchError when the repository cannot be read."""
        with tempfile.TemporaryDirectory(prefix="wholeloop-rules-") as home:
            git = HostGit(Path(path) / ".git" if (Path(path) / ".git").is_dir() else Path(path), home)
            listed = git.run("ls-tree", "-r", "-z", "--full-tree", commit).stdout
            tracked, gitignores = [], []
            for record in listed.split(b"\0"):
                if not record:
                    continue
                meta, _, name = record.partition(b"\t")
                mode, kind, sha = meta.split()
                rel = name.decode("utf-8", "surrogateescape")
                tracked.append(rel)
                if kind == b"blob" and PurePosixPath(rel).name == ".gitignore" and mode != b"120000":
                    gitignores.append((rel, git.run("cat-file", "blob", sha.decode()).stdout))
        return cls(frozenset(tracked), tuple(gitignores), tuple(exclude), image_exclude)


@dataclass
class TakenPatch:
    """The patch, the paths it touches, and the changed paths the ignore rules left out."""

    text: str
    files: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # the first IGNORED_SHOWN of them
    ignored_count: int = 0


def take_patch(
    sb, rules: BaseRules = BaseRules(), *, max_file_bytes: int = MAX_FILE_BYTES, max_patch_bytes: int = MAX_PATCH_BYTES
) -> TakenPatch:
    """The binary-safe patch from the tree `sb` started with to the tree it has now, new, deleted
    and symlinked files and mode changes included, taken with the host's git (see the module
    docstring). `sb` should be stopped (`Sandbox.stop`) so nothing changes the tree meanwhile.
    Raises PatchError for a file over `max_file_bytes` (before it is read), a patch over
    `max_patch_bytes`, or too many changes; InfraError when the host has no git."""
    changes = [c for c in sb.changes() if not _in_git_dir(c.path) and (c.path or c.kind == "D")]
    if len(changes) > MAX_CHANGED_PATHS:
        raise PatchError(f"{len(changes)} changed paths; at most {MAX_CHANGED_PATHS} can make a patch")
    with tempfile.TemporaryDirectory(prefix="wholeloop-patch-") as tmp:
        scratch = Path(tmp)
        rules_dir = _rules_tree(sb, rules, scratch / "rules")
        ignore = _Ignorer(rules_dir, rules.tracked, scratch / "home")
        kinds = {c.path: c.kind for c in changes}
        parents = {str(p) for c in changes for p in PurePosixPath(c.path).parents if str(p) != "."}
        new_roots, base_roots = _roots(kinds, parents, ignore)
        budget = _Budget(MAX_READ_BYTES)
        new = _entries(sb.read_tree(sorted(new_roots), max_file_bytes=max_file_bytes), budget)
        base = _entries(sb.read_tree(sorted(base_roots), image=True, max_file_bytes=max_file_bytes), budget)
        ignored = ignore.ignored([p for p in {*new, *base} if p not in rules.tracked])
        ignored |= ignore.skipped
        new = {p: e for p, e in new.items() if p not in ignored}
        base = {p: e for p, e in base.items() if p not in ignored}
        text = _diff(base, new, scratch, max_patch_bytes)
    touched = sorted(p for p in {*new, *base} if new.get(p) != base.get(p))
    shown = sorted(ignored)
    return TakenPatch(text, touched, shown[:IGNORED_SHOWN], len(shown))


# ----------------------------------------------------------------------------------- the change list


def _in_git_dir(path: str) -> bool:
    """Under a `.git` folder (the workdir's, or a nested repository's): never part of a patch."""
    return any(part.lower() == ".git" for part in PurePosixPath(path).parts)


def _roots(kinds: dict[str, str], parents: set[str], ignore: _Ignorer) -> tuple[set[str], set[str]]:
    """The paths to read from the environment (new side) and from its image (base side).

    A folder the engine lists as added is read whole when nothing below it is ignored (one read);
    otherwise its entries are read one by one. A changed entry with nothing listed below it is a file
    (or a folder whose own metadata changed): read on both sides. A deleted entry is read from the
    image, all of it (the engine lists only the top of a deleted folder); what was created again at
    that path is listed as added below it and read from the environment.
    """
    # A name that is not UTF-8 comes with U+FFFD in the change list and cannot be read by it: its
    # nearest folder with a clean name is read whole on both sides (the archives keep the bytes).
    unreadable = {_clean_parent(p) for p in kinds if "\ufffd" in p}
    kinds = {p: k for p, k in kinds.items() if "\ufffd" not in p}
    check = [
        p
        for p in kinds
        if p and (p not in parents or kinds[p] == "D") and p not in ignore.tracked and not ignore.tracks_below(p)
    ]
    ignored = ignore.ignored(check)
    ignore.skipped |= ignored
    ignored_below = {a for p in ignored for a in _ancestors(p)}
    new: set[str] = set(unreadable)
    base: set[str] = set(unreadable)
    whole: set[str] = set(unreadable)  # folders read in one piece
    for path in sorted(kinds, key=lambda p: (p.count("/"), p)):  # parents first
        kind, up = kinds[path], [a for a in _ancestors(path) if a in kinds or a in whole]
        if path in whole or any(a in whole for a in up):
            continue  # read with the folder it is in
        if kind == "D":
            if not any(kinds[a] == "D" for a in up) and path not in ignored:
                base.add(path)
            continue
        if path in parents:  # a folder with changes listed below it
            if kind == "A" and not any(kinds[a] == "A" for a in up) and path not in ignored_below:
                new.add(path)
                whole.add(path)
            continue
        if path and path not in ignored:
            new.add(path)
            if kind == "C":
                base.add(path)
    return new, base


def _clean_parent(path: str) -> str:
    """The nearest folder above `path` whose name has no U+FFFD ("" for the workdir)."""
    while "\ufffd" in path:
        path = path.rsplit("/", 1)[0] if "/" in path else ""
    return path


def _ancestors(path: str) -> list[str]:
    """The proper ancestors of a relative path, nearest first, ending with "" (the workdir)."""
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(len(parts) - 1, -1, -1)] if path else []


class _Budget:
    def __init__(self, limit: int) -> None:
        self.left = limit

    def take(self, size: int) -> None:
        self.left -= size
        if self.left < 0:
            raise PatchError(f"the changes are larger than {MAX_READ_BYTES} bytes in all; no patch is taken")


def _entries(found: Iterable[TreeEntry], budget: _Budget) -> dict[str, TreeEntry]:
    out: dict[str, TreeEntry] = {}
    for entry in found:
        if entry.kind == "dir" or not entry.path or _in_git_dir(entry.path):
            continue
        budget.take(len(entry.data))
        out[entry.path] = entry
    return out


# ----------------------------------------------------------------------------------- ignore rules


def _rules_tree(sb, rules: BaseRules, where: Path) -> Path:
    """A work tree holding only the base's .gitignore files, with wholeloop's excludes."""
    where.mkdir(parents=True)
    for rel, data in rules.gitignores:
        target = where / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    lines = list(rules.exclude)
    if rules.image_exclude:
        found = [
            e for e in sb.read_tree([".git/info/exclude"], image=True, max_file_bytes=1_000_000) if e.kind == "file"
        ]
        if found:
            lines += found[0].data.decode("utf-8", "replace").splitlines()
    (where / ".wholeloop-exclude").write_text("\n".join(lines) + "\n")
    return where


class _Ignorer:
    """`git check-ignore` over a tree holding only the base's rules: which paths they ignore."""

    def __init__(self, rules_dir: Path, tracked: frozenset[str], home: Path) -> None:
        self.rules_dir, self.tracked = rules_dir, tracked
        self.skipped: set[str] = set()
        home.mkdir(parents=True, exist_ok=True)
        self.git = HostGit(rules_dir / ".git", home, work_tree=rules_dir)
        self.git.run("init", "-q", "--template=", str(rules_dir), git_dir=False)
        self._prefixes: set[str] | None = None

    def tracks_below(self, path: str) -> bool:
        if self._prefixes is None:
            self._prefixes = {str(p) for t in self.tracked for p in PurePosixPath(t).parents}
        return path in self._prefixes

    def ignored(self, paths: list[str]) -> set[str]:
        if not paths:
            return set()
        data = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
        result = self.git.run(
            "-c",
            f"core.excludesFile={self.rules_dir / '.wholeloop-exclude'}",
            "check-ignore",
            "--no-index",
            "-z",
            "--stdin",
            input=data,
            ok=(0, 1),
        )
        return {p.decode("utf-8", "surrogateescape") for p in result.stdout.split(b"\0") if p}


# ----------------------------------------------------------------------------------- the diff


def _diff(base: dict[str, TreeEntry], new: dict[str, TreeEntry], scratch: Path, max_patch_bytes: int) -> str:
    """The patch from the `base` entries to the `new` ones, by git in a bare repository of ours."""
    if base == new:
        return ""
    home = scratch / "home"
    git_dir = scratch / "diff.git"
    git = HostGit(git_dir, home)
    git.run("init", "-q", "--bare", "--template=", str(git_dir), git_dir=False)
    blobs = scratch / "blobs"
    blobs.mkdir()
    entries = [*base.values(), *new.values()]
    names = []
    for i, entry in enumerate(entries):
        name = blobs / str(i)
        name.write_bytes(entry.data)
        names.append(str(name))
    shas = git.run("hash-object", "-w", "--no-filters", "--stdin-paths", input="\n".join(names).encode() + b"\n")
    sha_list = shas.stdout.decode().split()
    if len(sha_list) != len(entries):
        raise InfraError("git hash-object did not hash every file")
    sha = {id(e): s for e, s in zip(entries, sha_list)}
    trees: list[str] = []
    for side in (base, new):
        index = scratch / f"index-{len(trees)}"
        records = b"".join(_index_record(e, sha[id(e)]) for e in side.values())
        git.run("update-index", "-z", "--index-info", input=records, env={"GIT_INDEX_FILE": str(index)})
        trees.append(git.run("write-tree", env={"GIT_INDEX_FILE": str(index)}).stdout.decode().strip())
        index.unlink(missing_ok=True)
    # text hunks of files that are not UTF-8 would reach the caller decoded with replacement:
    # they go as binary patches (exact), marked by our own attributes
    binary = sorted({p for side in (base, new) for p, e in side.items() if e.kind == "file" and not _utf8(e.data)})
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "attributes").write_text(
        "".join(_attr_line(p.encode("utf-8", "surrogateescape")) for p in binary)
    )
    out = git.run(
        "diff-tree",
        "-r",
        "-p",
        "--binary",
        "--full-index",
        "--no-renames",
        "--no-ext-diff",
        "--no-textconv",
        "--no-color",
        trees[0],
        trees[1],
        max_output=max_patch_bytes,
    )
    try:
        return out.stdout.decode("utf-8")
    except UnicodeDecodeError as exc:  # should not happen: paths are quoted, non-UTF-8 content is binary
        raise PatchError(f"the patch is not valid UTF-8: {exc}") from exc


def _index_record(entry: TreeEntry, sha: str) -> bytes:
    mode = "120000" if entry.kind == "symlink" else ("100755" if entry.mode & 0o111 else "100644")
    return f"{mode} {sha}\t".encode() + entry.path.encode("utf-8", "surrogateescape") + b"\0"


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _attr_line(path: bytes) -> str:
    """A gitattributes line marking exactly this path binary: glob characters escaped, then
    C-quoted (spaces, quotes and non-ASCII bytes included)."""
    globbed = re.sub(rb"([*?\[\\])", rb"\\\1", path)
    quoted = "".join(chr(b) if 32 <= b < 127 and b not in b'"\\' else f"\\{b:03o}" for b in globbed)
    return f'"/{quoted}" -diff\n'


# ----------------------------------------------------------------------------------- the host's git


class HostGit:
    """The host's git, isolated: no system or global config, no hooks, no attributes or excludes but
    those passed, no fsmonitor, no pager, no prompts, a private HOME."""

    SAFE = (
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.attributesFile=/dev/null",
        "-c",
        "core.excludesFile=/dev/null",
        "-c",
        "core.quotePath=true",
        "-c",
        "diff.noprefix=false",
        "-c",
        "diff.mnemonicPrefix=false",
        "-c",
        "core.autocrlf=false",
        "-c",
        "core.safecrlf=false",
        "-c",
        "core.bigFileThreshold=2g",
        "-c",
        "core.pager=cat",
        "-c",
        "gc.auto=0",
    )

    def __init__(self, git_dir: Path, home: Path | str, work_tree: Path | None = None) -> None:
        self.git_dir, self.work_tree = Path(git_dir), work_tree
        exe = shutil.which("git")
        if exe is None:
            raise InfraError("git is not installed on this host", hint="Install git (apt-get install git).")
        self.exe = exe
        home = str(home)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": home,
            "XDG_CONFIG_HOME": home,
            "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
        }

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        env: dict[str, str] | None = None,
        git_dir: bool = True,
        ok: tuple[int, ...] = (0,),
        max_output: int | None = None,
    ) -> subprocess.CompletedProcess:
        where = [f"--git-dir={self.git_dir}"] if git_dir else []
        if git_dir and self.work_tree is not None:
            where.append(f"--work-tree={self.work_tree}")
        cmd = [self.exe, *where, *self.SAFE, *args]
        proc = subprocess.run(
            cmd,
            input=input,
            capture_output=True,
            env={**self.env, **(env or {})},
            cwd=str(self.work_tree or self.git_dir.parent),
        )
        if proc.returncode not in ok:
            raise PatchError(f"git {args[0]} failed: {proc.stderr.decode(errors='replace').strip()[-500:]}")
        if max_output is not None and len(proc.stdout) > max_output:
            raise PatchError(f"the patch is {len(proc.stdout)} bytes, more than {max_output}")
        return proc
