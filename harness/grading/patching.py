"""The agent's patch as data: its files, what grading strips from it, and applying the rest safely.

Every path grading acts on comes from the patch text itself (never from `git status`, whose answer
a patch can shape with ignore rules). A file section is stripped -- left as the base has it -- when
any of its paths is under `.git/`, leaves the repository, is bytecode or a cache, installed-package
metadata (`*.dist-info/`, `*.egg-info/`), a start-up hook (`*.pth`, `sitecustomize`,
`usercustomize`), a symlink pointing out of the repository, a protected path of the task (tests,
runner configuration, hidden test files), or a new top-level module that would shadow one the
environment has (`pytest.py`, `pluggy/`). What is kept is written out again from the parsed
sections only (headers, hunks, binary data), so nothing else in the text reaches an applier.
Files parts of which are the tests' or pick what runs, which no path rule can protect (Rust's
`#[cfg(test)]` modules in source files, package.json's bin and scripts), are read before the patch
is applied (`read_guarded`) and have those parts put back after it (`restore_inline_tests`, by the
parsers), recorded in the grade like a stripped path.

Appliers: `git apply` (hooks off), then `git apply --3way`, then `patch --fuzz=5`, each in a fresh
grading container; the last one only for plain text changes of regular files none of whose folders
is a symlink. No applier can write under `.git/` or outside the repository: those paths never reach
them. Commands here run in containers grading started from the task image, never in the agent's.
"""

from __future__ import annotations

import codecs
import io
import posixpath
import re
import tarfile
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from sandbox import FileOpError, InfraError, Sandbox

from ..parsers import Parser, matches_any
from ..tasks import Task

WORK = "/tmp/wholeloop-grade"
GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"]
APPLIERS = ("git apply", "git apply --3way", "patch --fuzz=5")
_CACHE_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis", ".tox", ".nox"}
_STARTUP = {"sitecustomize", "usercustomize"}
TEST_DIR_NAMES = ("test", "tests", "testing")  # a folder so named above a hidden test file is protected whole
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_HEADERS = (
    "old mode ",
    "new mode ",
    "deleted file mode ",
    "new file mode ",
    "copy from ",
    "copy to ",
    "rename from ",
    "rename to ",
    "similarity index ",
    "dissimilarity index ",
    "index ",
)


@dataclass
class Section:
    """One file of a patch, as parsed: its paths before and after (None: created or deleted)."""

    old: str | None
    new: str | None
    header: list[str] = field(default_factory=list)  # the `diff --git` line and extended headers
    body: list[str] = field(default_factory=list)  # ---/+++ lines and hunks, or the binary patch
    binary: bool = False
    new_mode: str | None = None
    old_mode: str | None = None
    renamed: bool = False  # a rename or copy
    mentioned: list[str] = field(default_factory=list)  # every path its lines name (all are checked)

    @property
    def paths(self) -> list[str]:
        return [p for p in dict.fromkeys((self.old, self.new, *self.mentioned)) if p is not None]

    def text(self) -> str:
        """The section as grading applies it: every line naming a path written again from the parsed
        names (C-quoted when they hold anything but plain printable ASCII without whitespace; no
        timestamps), so an applier can only read the paths grading checked (never a name it ends at
        a space, a CR or a date where grading's reading went on). Other lines as they were."""
        header = list(self.header)
        a = self.old if self.old is not None else self.new
        b = self.new if self.new is not None else self.old
        if header and header[0].startswith("diff --git ") and a is not None and b is not None:
            header[0] = f"diff --git {_quote('a/' + a)} {_quote('b/' + b)}"
            for i, line in enumerate(header[1:], 1):
                for key, name in (
                    ("rename from ", self.old),
                    ("copy from ", self.old),
                    ("rename to ", self.new),
                    ("copy to ", self.new),
                ):
                    if line.startswith(key) and name is not None:
                        header[i] = key + _quote(name)
        body = list(self.body)
        if not self.binary and len(body) >= 2 and body[0].startswith("--- ") and body[1].startswith("+++ "):
            body[0] = "--- " + ("/dev/null" if self.old is None else _quote("a/" + self.old))
            body[1] = "+++ " + ("/dev/null" if self.new is None else _quote("b/" + self.new))
        return "".join(line + "\n" for line in header + body)

    def clean_names(self) -> bool:
        """Are all its paths plain printable ASCII without whitespace or quotes (what `patch` reads
        as grading does)?"""
        return all(_quote(p) == p for p in self.paths)

    def symlink_target(self) -> str | None:
        """The target of the symlink this section creates or changes (from its hunk), if any."""
        if self.new_mode != "120000" or self.binary:
            return None
        added = [line[1:] for line in self.body if line.startswith("+") and not line.startswith("+++")]
        return "\n".join(added)

    def plain(self) -> bool:
        """A text change of a regular file, its mode unchanged (what `patch` may apply)."""
        if self.binary or self.renamed or not {self.old_mode, self.new_mode} <= {None, "100644", "100755"}:
            return False
        if not self.clean_names():
            return False
        return self.old is None or self.new is None or self.old_mode == self.new_mode


@dataclass
class Stripped:
    path: str
    reason: str


@dataclass
class Decision:
    """What grading applies of a patch, and what it strips (with why)."""

    kept: list[Section]
    stripped: list[Stripped]
    reverted: list[str]  # protected paths left at base and shadowing modules (the older record)
    unparsed: int = 0  # lines outside any file section (dropped)

    def text(self) -> str:
        return "".join(s.text() for s in self.kept)


# ----------------------------------------------------------------------------------- reading


def parse_patch(patch: str) -> tuple[list[Section], int]:
    """The file sections of a unified or git patch, and how many lines belonged to none. Lines end
    at "\n" only: a CR, form feed or other line separator inside a line is content."""
    lines = patch.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    sections: list[Section] = []
    unparsed, i = 0, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            section, i = _git_section(lines, i)
            sections.append(section)
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            section = Section(_side(lines[i][4:]), _side(lines[i + 1][4:]))
            i = _hunks(lines, i, section)
            sections.append(section)
        else:
            unparsed += bool(line.strip())
            i += 1
    return sections, unparsed


def _git_section(lines: list[str], i: int) -> tuple[Section, int]:
    old, new = _git_names(lines[i][len("diff --git ") :])
    section = Section(old, new, header=[lines[i]], mentioned=[p for p in (old, new) if p is not None])
    i += 1
    while i < len(lines) and lines[i].startswith(_HEADERS):
        line = lines[i]
        section.header.append(line)
        if line.startswith("new file mode "):
            section.old, section.new_mode = None, line.split()[-1]
        elif line.startswith("deleted file mode "):
            section.new, section.old_mode = None, line.split()[-1]
        elif line.startswith("old mode "):
            section.old_mode = line.split()[-1]
        elif line.startswith("new mode "):
            section.new_mode = line.split()[-1]
        elif line.startswith(("rename from ", "copy from ")):
            section.old, section.renamed = _unquote(line.split(" ", 2)[2]), True
            section.mentioned.append(section.old)
        elif line.startswith(("rename to ", "copy to ")):
            section.new, section.renamed = _unquote(line.split(" ", 2)[2]), True
            section.mentioned.append(section.new)
        elif line.startswith("index ") and len(line.split()) == 3:
            section.old_mode = section.old_mode or line.split()[-1]
            section.new_mode = section.new_mode or line.split()[-1]
        i += 1
    if i < len(lines) and lines[i] == "GIT binary patch":
        section.binary = True
        start = i
        i += 1
        blocks = 0
        while i < len(lines) and blocks < 2:
            if lines[i].startswith(("literal ", "delta ")):
                blocks += 1
                i += 1
                while i < len(lines) and lines[i].strip():
                    i += 1
                if i < len(lines):
                    i += 1  # the blank line after a block
            else:
                break
        section.body = lines[start:i]
        return section, i
    if i < len(lines) and lines[i].startswith("Binary files "):
        section.binary = True
        section.body = [lines[i]]
        return section, i + 1
    if i + 1 < len(lines) and lines[i].startswith("--- ") and lines[i + 1].startswith("+++ "):
        return section, _hunks(lines, i, section)
    return section, i


def _hunks(lines: list[str], i: int, section: Section) -> int:
    """Append the ---/+++ lines at `i` and the hunks after them to `section`; the index after."""
    section.body += lines[i : i + 2]
    section.mentioned += [p for p in (_side(lines[i][4:]), _side(lines[i + 1][4:])) if p is not None]
    i += 2
    while i < len(lines):
        match = _HUNK.match(lines[i])
        if not match:
            break
        section.body.append(lines[i])
        old_left = int(match.group(2)) if match.group(2) is not None else 1
        new_left = int(match.group(4)) if match.group(4) is not None else 1
        i += 1
        while i < len(lines) and (old_left > 0 or new_left > 0 or lines[i].startswith("\\")):
            line = lines[i] if lines[i] else " "  # a context line whose space was lost
            kind = line[0]
            if kind == " ":
                old_left, new_left = old_left - 1, new_left - 1
            elif kind == "-":
                old_left -= 1
            elif kind == "+":
                new_left -= 1
            elif kind != "\\":
                break
            section.body.append(line)
            i += 1
    return i


# A timestamp after a name and one space, as `diff -u` and others write it (git apply drops it too):
# ISO ("2024-01-01 00:00:00.000000000 +0000") or ctime ("Mon Jan  1 00:00:00 2024").
_STAMP = re.compile(
    r" (\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d(\.\d+)?)?( ?[+-]\d{4}| ?[A-Z]{3,5})?"
    r"|[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}( ?[+-]\d{4})?)$"
)


def _side(spec: str) -> str | None:
    """A path from a ---/+++ line: the timestamp dropped (after a TAB, or after a space as git does),
    the first component stripped (-p1). Whatever else the name holds (a space, a CR) is part of it;
    `Section.text` writes it quoted, so the appliers read the same name."""
    name = spec.split("\t")[0]
    if name.startswith('"'):
        name = _unquote(name)
    else:
        name = _STAMP.sub("", name.rstrip(" \r"))
    if name == "/dev/null":
        return None
    return name.split("/", 1)[1] if "/" in name else name


def _git_names(rest: str) -> tuple[str | None, str | None]:
    if '"' in rest:
        quoted = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', rest)
        names = [_unquote(q) for q in quoted[:2]]
    else:
        half = (len(rest) - 1) // 2
        names = (
            [rest[:half], rest[half + 1 :]]
            if rest[half] == " " and rest[2:half] == rest[half + 3 :]
            else rest.split(" ", 1)
        )
    padded = [n.split("/", 1)[1] if "/" in n else n for n in names] + [None, None]
    return padded[0], padded[1]


def _unquote(name: str) -> str:
    name = name.strip()
    if len(name) >= 2 and name[0] == name[-1] == '"':
        raw = codecs.escape_decode(name[1:-1].encode("latin-1", "backslashreplace"))[0]
        return raw.decode("utf-8", "surrogateescape")
    return name


def _quote(name: str) -> str:
    """A path as git writes it in a patch: as it is when it is plain printable ASCII without
    whitespace or quotes, otherwise in double quotes with C escapes (octal for other bytes)."""
    raw = name.encode("utf-8", "surrogateescape")
    if all(0x21 <= c < 0x7F and c not in b'"\\' for c in raw):
        return name
    named = {0x07: "a", 0x08: "b", 0x09: "t", 0x0A: "n", 0x0B: "v", 0x0C: "f", 0x0D: "r", 0x22: '"', 0x5C: "\\"}
    out = "".join("\\" + named[c] if c in named else chr(c) if 0x20 <= c < 0x7F else f"\\{c:03o}" for c in raw)
    return f'"{out}"'


def touched_files(patch: str) -> list[str]:
    """Paths a patch creates, changes or deletes (binary ones included), from its sections."""
    sections, _ = parse_patch(patch)
    return list(dict.fromkeys(p for s in sections for p in s.paths))


# ----------------------------------------------------------------------------------- deciding


def decide(
    task: Task,
    sections: list[Section],
    unparsed: int = 0,
    shadowing: dict[str, str] | AbstractSet[str] = frozenset(),
    base_links: dict[str, str] | None = None,
) -> Decision:
    """Which sections grading applies; the others are stripped, each path with its reason.
    `shadowing`: paths that would shadow an installed module -> the shadowing entry (a set: the
    entry is the top-level module or package). `base_links`: the base tree's symlinks (path ->
    target), through which, with the patch's own, a new symlink's target is resolved. The task's
    `allowed_paths` (protected files its own fix changes, `wholeloop mine --allow-config`) are
    exempt from protection, unless the hidden tests themselves write them."""
    protected = [_glob(p) for p in task.protected()]
    hidden = set(touched_files(task.test_patch())) | set(task.hidden_tests.files)
    allowed = set(task.allowed_paths) - hidden
    # every folder named like a test folder above a hidden test file is protected whole (its data,
    # helpers and fixtures are the tests'): `testing/` in a repository that keeps its tests there
    test_dirs = {
        "/".join(p.split("/")[: i + 1]) + "/"
        for p in hidden
        for i, part in enumerate(p.split("/")[:-1])
        if part.lower() in TEST_DIR_NAMES
    }
    protected.append(re.compile("|".join(re.escape(d) + ".*" for d in sorted(test_dirs)) or r"(?!)"))
    if not isinstance(shadowing, dict):
        shadowing = {p: _shadow_name(p) for p in shadowing}
    links = dict(base_links or {})
    for section in sections:  # the tree's symlinks after the patch
        for path in (section.old, section.new):
            if path is not None:
                links.pop(path, None)
    links.update({s.new: t for s in sections if s.new is not None and (t := s.symlink_target()) is not None})
    kept, stripped, reverted = [], [], []
    for section in sections:
        reasons = [(p, why) for p in section.paths if (why := _refused(p, protected, hidden, shadowing, allowed))]
        target = section.symlink_target()
        if target is not None and section.new is not None and not any(p == section.new for p, _ in reasons):
            if _leaves(section.new, target, links):
                reasons.append((section.new, "a symlink leaving the repository"))
        if section.binary and section.new_mode == "120000" and section.new is not None:
            reasons.append((section.new, "a symlink whose target cannot be read"))
        if not reasons:
            kept.append(section)
            continue
        for path, why in reasons:
            stripped.append(Stripped(path, why))
            entry = shadowing.get(path, path) if why.startswith("shadows") else path
            if why in ("protected", "shadows an installed module") and entry not in reverted:
                reverted.append(entry)
    return Decision(kept, stripped, reverted, unparsed)


def _refused(
    path: str,
    protected: list[re.Pattern],
    hidden: set[str],
    shadowing: dict[str, str],
    allowed: AbstractSet[str] = frozenset(),
) -> str:
    parts = path.split("/")
    lower = [p.lower() for p in parts]
    if not path or path.startswith("/") or "\0" in path or any(p in ("", ".", "..") for p in parts):
        return "outside the repository"
    if ".git" in lower:
        return "under .git/"
    if any(p in _CACHE_DIRS or p.endswith((".pyc", ".pyo")) for p in lower):  # a folder so named too
        return "bytecode or a cache"
    if any(p.endswith((".dist-info", ".egg-info", ".egg-link")) or p == "egg-info" for p in lower):
        return "package metadata"
    if lower[-1].endswith(".pth") or any(p.split(".")[0] in _STARTUP for p in lower):
        return "a start-up hook"
    if path in hidden or (path not in allowed and any(g.fullmatch(path) for g in protected)):
        return "protected"
    if path in shadowing:
        return "shadows an installed module"
    return ""


def _leaves(link: str, target: str, links: dict[str, str] | None = None) -> bool:
    """Does a symlink at `link` with this target point outside the repository (or into .git), as
    the kernel resolves it through every symlink the tree has after the patch (`links`: path ->
    target, the base's and the patch's; `deep -> .` makes `../deep/deep/../../etc` leave, where a
    textual normpath says `etc`)? A loop, or more than 40 links on the way, counts as leaving."""
    if not target or target.startswith("/") or "\n" in target or "\0" in target:
        return True
    links = links or {}
    queue = list(posixpath.dirname(link).split("/") + target.split("/"))
    queue.reverse()  # a stack: the next component last
    resolved: list[str] = []
    hops = 0
    while queue:
        part = queue.pop()
        if part in ("", "."):
            continue
        if part == "..":
            if not resolved:
                return True  # above the repository
            resolved.pop()
            continue
        resolved.append(part)
        if part.lower() == ".git":
            return True
        through = links.get("/".join(resolved))
        if through is not None:
            hops += 1
            if hops > 40 or not through or through.startswith("/"):
                return True
            resolved.pop()
            queue.extend(reversed(through.split("/")))
    return False


def _glob(pattern: str) -> re.Pattern:
    """A protected-paths glob as git's `:(glob)` reads it: `**/` any folders, `*` within one name."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out, i = out + "(?:/.*)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[" and "]" in pattern[i + 1 :]:
            end = pattern.index("]", i + 1)
            body = pattern[i + 1 : end].replace("\\", "\\\\")
            out, i = out + "[" + ("^" + body[1:] if body.startswith("!") else body) + "]", end + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out)


def _shadow_name(path: str) -> str:
    """How the shadowing module is named in the record: `pytest.py`, or `pluggy/` for a package."""
    top = path.split("/")[0]
    return path if "/" not in path else top + "/"


# ----------------------------------------------------------------------------------- shadowing

# Run by the grading environment's Python in the repository, before the patch is applied. Reads
# the patch's new or changed paths (NUL-separated, each followed by "l" for a symlink or "f") and
# prints, for each that would make an installed module importable from the repository, its index
# and the path of the shadowing entry. Every component of every path is looked at: a component the
# base already has as such (a folder, a regular file) is the project's own; a new one is importable
# under a name when it is a module file (any suffix Python imports: .py, .pyc, .abi3.so, ...), a
# folder the patch gives an `__init__`, or a symlink (whatever it points to). It shadows when it
# sits on a sys.path entry inside the repository -- the repository itself (`python -m pytest` puts
# it first), PYTHONPATH, editable installs, and the roots the hidden command adds (argv[2],
# os.pathsep-separated: its PYTHONPATH assignments and `cd` folders) -- or, at ANY depth, when its
# name is one the test run imports before the tests (argv[1]: the runner and its plugins), and a
# module of that name is importable without the repository.
_SHADOW_PROBE = r"""
import importlib.machinery, importlib.util, os, sys
critical = set(filter(None, sys.argv[1].split(",")))
repo = os.path.realpath(os.getcwd())
inside = lambda p: p == repo or p.startswith(repo + os.sep)
extra = [os.path.realpath(os.path.join(repo, p)) for p in sys.argv[2].split(os.pathsep) if p]
roots = {repo} | {os.path.realpath(p) for p in sys.path if p and inside(os.path.realpath(p))}
roots |= {p for p in extra if inside(p)}
sys.path[:] = [p for p in sys.path if p and not inside(os.path.realpath(p))] + [p for p in extra if not inside(p)]
importlib.invalidate_caches()
suffixes = sorted(importlib.machinery.all_suffixes(), key=len, reverse=True)
data = sys.stdin.buffer.read().split(b"\0")
items = [(os.fsdecode(data[i]), data[i + 1] == b"l") for i in range(0, len(data) - 1, 2)]
init_dirs = {p.rpartition("/")[0] for p, _ in items if p.rpartition("/")[2].startswith("__init__.")}
init_seen = {}
def has_init(prefix):  # once per folder, however many paths it holds (a patch may have 100,000)
    if prefix not in init_seen:
        init_seen[prefix] = prefix in init_dirs or any(
            os.path.isfile(os.path.join(repo, prefix, "__init__" + s)) for s in suffixes)
    return init_seen[prefix]
cache = {}
def base_has(prefix, link, last):  # a folder (a regular file, for the last component) of the base, no symlink
    key = (prefix, link, last)
    if key not in cache:
        full = os.path.join(repo, prefix)
        cache[key] = not os.path.islink(full) and (
            os.path.isdir(full) if not last else os.path.isfile(full) and not link)
    return cache[key]
def real(path):
    if path not in cache:
        cache[path] = os.path.realpath(path)
    return cache[path]
def names(comp, folder, link):
    out = {comp} if (link or folder) and comp.isidentifier() else set()
    for s in suffixes:
        if comp.endswith(s) and comp[:-len(s)].isidentifier():
            out.add(comp[:-len(s)])
    return out - {"__init__", "__main__"}
def found(name):
    try:
        return importlib.util.find_spec(name) is not None
    except Exception:
        return True
for index, (path, link) in enumerate(items):
    parts = path.split("/")
    for depth, comp in enumerate(parts):
        prefix, last = "/".join(parts[:depth + 1]), depth == len(parts) - 1
        if base_has(prefix, last and link, last):
            continue  # the base has it already: the project's own
        folder = not last and has_init(prefix)
        parent = real(os.path.join(repo, *parts[:depth]))
        hit = [n for n in names(comp, folder, link and last) if (parent in roots or n in critical) and found(n)]
        if hit:
            sys.stdout.write("%d\t%s\n" % (index, prefix + ("" if last else "/")))
            break
"""
# What the test run imports before any test, whatever the parser says: Python's own start-up hooks
# are refused by name elsewhere; these are the test runners and their dependencies.
RUNNER_MODULES = (
    "pytest",
    "_pytest",
    "pluggy",
    "iniconfig",
    "packaging",
    "py",
    "exceptiongroup",
    "tomli",
    "colorama",
    "pytest_reportlog",
)


def command_roots(command: str) -> list[str]:
    """Folders the hidden command itself puts on sys.path or runs in: its `PYTHONPATH=` assignments
    (as a prefix, after `export` or `env`) and its `cd` targets, relative to the repository."""
    word = r"(\"[^\"]*\"|'[^']*'|[^\s;&|()]*)"
    roots: list[str] = []
    for value in re.findall(r"(?<![\w$])PYTHONPATH=" + word, command):
        value = re.sub(r"\$\{?PYTHONPATH\}?", "", value.strip("\"'"))
        roots += [p for p in value.split(":") if p]
    roots += [v.strip("\"'") for v in re.findall(r"(?<![\w-])(?:cd|pushd)\s+" + word, command) if v.strip("\"'")]
    return roots


def shadowing_modules(
    sb: Sandbox, sections: list[Section], command: str = "", critical: tuple[str, ...] = RUNNER_MODULES
) -> dict[str, str]:
    """New or changed paths of the patch that would shadow the test runner or the standard library
    -> the shadowing entry (`pytest.py`, `pluggy/`, `lib/pytest.py`, a symlink `pytest`), asked of
    the environment's Python before the patch is applied (so nothing of the patch runs), with the
    sys.path roots the hidden `command` adds, and `critical` (what the test run imports before the
    tests) refused at any depth.

    `python -m pytest` puts the repository first on sys.path, so a planted `pytest.py`, `pluggy/`,
    a symlink `pytest -> pkg/` or `inspect.py` would run instead of the real one, inside the test
    process. A fix has no reason to add a top-level module named like one the environment has.
    """
    paths = [(s.new, s.new_mode == "120000") for s in sections if s.new]
    if not paths:
        return {}
    stdin = b"".join(
        p.encode("utf-8", "surrogateescape") + b"\0" + (b"l" if link else b"f") + b"\0" for p, link in paths
    )
    probe = sb.exec(
        [
            "sh",
            "-c",
            'exec "$(command -v python || command -v python3)" -c "$1" "$2" "$3"',
            "sh",
            _SHADOW_PROBE,
            ",".join(critical),
            ":".join(command_roots(command)),
        ],
        timeout=sb.limits.step_timeout_s,
        stdin=stdin,
    )
    if probe.returncode in (126, 127):
        return {}  # no Python in this environment: nothing for a Python module to shadow
    if not probe.ok:
        raise InfraError(f"cannot check the patch for shadowing modules: {probe.stderr.strip()[-300:]}")
    out: dict[str, str] = {}
    for line in probe.stdout.splitlines():
        index, _, entry = line.partition("\t")
        if index.isdigit() and int(index) < len(paths):
            out[paths[int(index)][0]] = entry
    return out


# ----------------------------------------------------------------------------------- applying


def apply_patch(
    sb: Sandbox, patch: str, name: str, method: str = "git apply", sections: Sequence[Section] = ()
) -> bool:
    """Apply `patch` (text grading rendered from parsed sections) in the container's repository
    with one applier; True when it applied. `patch --fuzz=5` only for plain text changes of regular
    files whose folders are no symlinks (checked in this container)."""
    path = f"{WORK}/{name}"
    sb.write_file(path, patch if patch.endswith("\n") else patch + "\n")
    if method == "git apply":
        cmd = [*GIT, "apply", "--binary", "--whitespace=nowarn", path]
    elif method == "git apply --3way":
        cmd = [*GIT, "apply", "--binary", "--3way", "--whitespace=nowarn", path]
    elif method == "patch --fuzz=5":
        if not sections or not all(s.plain() for s in sections) or not _no_symlinks(sb, sections):
            return False
        cmd = [
            "patch",
            "--batch",
            "--forward",
            "--fuzz=5",
            "-p1",
            "--no-backup-if-mismatch",
            "--reject-file=-",
            "-i",
            path,
        ]
    else:
        raise ValueError(f"unknown applier {method!r}")
    return sb.exec(cmd, timeout=sb.limits.step_timeout_s).ok


def _no_symlinks(sb: Sandbox, sections: Sequence[Section]) -> bool:
    """Is every touched path, and every folder above it, free of symlinks in this container?"""
    paths = sorted({p for s in sections for p in s.paths})
    script = (
        'cd "$1" || exit 1; shift; for p in "$@"; do [ "$(realpath -m -- "$p")" = "$PWD/$p" ] || exit 1; '
        '[ -L "$p" ] && exit 1; done; exit 0'
    )
    return sb.exec(["sh", "-c", script, "sh", sb.workdir, *paths], timeout=sb.limits.step_timeout_s).ok


def base_symlinks(sb: Sandbox, sections: list[Section]) -> dict[str, str]:
    """The repository's symlinks (path -> target) in this container, before the patch: only when
    the patch has a symlink of its own to resolve through them ({} when `find` cannot list them)."""
    if not any(s.symlink_target() is not None for s in sections):
        return {}
    found = sb.exec(
        ["find", ".", "-path", "./.git", "-prune", "-o", "-type", "l", "-printf", "%P\\0%l\\0"],
        timeout=sb.limits.step_timeout_s,
    )
    if not found.ok:
        return {}
    items = found.stdout.split("\0")
    return {items[i]: items[i + 1] for i in range(0, len(items) - 1, 2)}


def clear_bytecode(sb: Sandbox) -> str:
    """Delete every __pycache__ folder and .pyc/.pyo file (or symlink) in the repository (the
    image's or a planted one's): the hidden tests import the sources, and write no bytecode
    themselves. Returns "" when done, else why not -- after the agent's patch, so the patch's failure
    (a grade that does not resolve), never an infrastructure error: whatever the tree holds, the
    deletion is one `rm -rf` per folder and `rm -f` per file or link, matched by type."""
    script = (
        "find . -path ./.git -prune -o \\( -type d -name __pycache__ -prune -exec rm -rf {} + \\) "
        "-o \\( \\( -type f -o -type l \\) -name '*.py[co]' -exec rm -f {} + \\)"
    )
    done = sb.exec(["sh", "-c", script], timeout=sb.limits.step_timeout_s)
    return "" if done.ok else f"the repository's bytecode could not be cleared: {done.stderr.strip()[-300:]}"


# ----------------------------------------------------------------------------------- inline tests

# Folders never read for them (find tests): git's, the installed dependencies, cargo's build output.
_NOT_SOURCES = (("-name", ".git"), ("-name", "node_modules"), ("-path", "./target"))
GUARDED_TAR = f"{WORK}/guarded.tar"


@dataclass
class Guarded:
    """The files parts of which the task's parsers put back (`Parser.inline_tests`: Rust source
    files, package.json), as the patch found them (the hidden tests already in)."""

    parsers: list[Parser]
    before: dict[str, bytes]


def read_guarded(sb: Sandbox, task: Task, kept: Sequence[Section]) -> Guarded | None:
    """Before the patch is applied: every file of the repository that a parser's `inline_tests`
    globs match, when the kept patch touches one (or makes a symlink, through which a module file
    can move); None otherwise (nothing to put back, nothing read)."""
    parsers = [p for p in task.hidden_tests.parsers() if p.inline_tests]
    if not parsers:
        return None
    globs = tuple(g for p in parsers for g in p.inline_tests)
    if not any(s.new_mode == "120000" or any(matches_any(globs, p) for p in s.paths) for s in kept):
        return None
    return Guarded(parsers, _read_matching(sb, globs))


def _read_matching(sb: Sandbox, globs: tuple[str, ...]) -> dict[str, bytes]:
    """Every regular file (or symlink to one, read through it) of the repository whose path
    matches `globs`, outside `_NOT_SOURCES`, in one archive: listed by `find` and packed by `tar`
    (the image's, in a grading container), read out through the engine's archive API. Where that
    `tar` cannot (busybox's has no --null), listed by `find` and read one by one."""
    find = _find_args(globs)
    script = 'out=$1; shift; rm -f "$out"; find . "$@" | tar -c -h --null -T - -f "$out"; [ -f "$out" ]'
    done = sb.exec(["sh", "-c", script, "sh", GUARDED_TAR, *find], timeout=sb.limits.step_timeout_s)
    if not done.ok:
        return _read_one_by_one(sb, globs)
    data = sb.read_file(GUARDED_TAR, max_bytes=500_000_000)
    sb.exec(["rm", "-f", GUARDED_TAR], timeout=sb.limits.step_timeout_s)
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar:
            path = member.name.removeprefix("./")
            extracted = tar.extractfile(member) if member.isfile() else None
            if extracted is not None and matches_any(globs, path):
                files[path] = extracted.read()
    return files


def _find_args(globs: tuple[str, ...]) -> list[str]:
    """`find .`'s arguments that list the files (and symlinks) named like `globs`' last components,
    outside `_NOT_SOURCES`, NUL-separated."""
    names: list[str] = []
    for name in sorted({g.rsplit("/", 1)[-1] for g in globs}):
        names += [*(["-o"] if names else []), "-name", name]
    pruned: list[str] = []
    for test, name in _NOT_SOURCES:
        pruned += [*(["-o"] if pruned else []), test, name]
    return ["(", *pruned, ")", "-prune", "-o", "(", "-type", "f", "-o", "-type", "l", ")", "(", *names, ")", "-print0"]


def _read_one_by_one(sb: Sandbox, globs: tuple[str, ...]) -> dict[str, bytes]:
    listed = sb.exec(["find", ".", *_find_args(globs)], timeout=sb.limits.step_timeout_s)
    if not listed.ok:
        raise InfraError(f"cannot list the files whose tests are put back: {listed.stderr.strip()[-300:]}")
    files: dict[str, bytes] = {}
    for path in (p.removeprefix("./") for p in listed.stdout.split("\0") if p):
        if not matches_any(globs, path):
            continue
        try:
            files[path] = sb.read_file(path)
        except FileOpError:  # a symlink: read through it
            shown = sb.exec(["cat", "--", path], timeout=sb.limits.step_timeout_s)
            if shown.ok:
                files[path] = shown.stdout.encode()
    return files


def restore_inline_tests(sb: Sandbox, guarded: Guarded | None) -> list[Stripped]:
    """After the patch is applied: put back what the parsers say is the tests' (or picks what
    runs) in the files `read_guarded` read before it -- Rust's `#[cfg(test)]` modules wherever the
    module tree now puts them, package.json's bin and scripts -- keeping the rest of the patch.
    Returns what was put back, one entry per file ("inline tests put back as at the base: <what>"),
    for the grade's `stripped` and `reverted`."""
    if guarded is None:
        return []
    globs = tuple(g for p in guarded.parsers for g in p.inline_tests)
    after = _read_matching(sb, globs)

    def read(path: str) -> bytes | None:
        try:
            return sb.read_file(path)
        except FileOpError:
            return None

    done: dict[str, list[str]] = {}
    for parser in guarded.parsers:
        mine = parser.inline_tests
        writes, what = parser.restore_inline_tests(
            {p: d for p, d in guarded.before.items() if matches_any(mine, p)},
            {p: d for p, d in after.items() if matches_any(mine, p)},
            read,
        )
        for path, data in writes.items():
            if data is None:
                sb.exec(["rm", "-f", "--", path], timeout=sb.limits.step_timeout_s)
                after.pop(path, None)
            else:
                sb.write_file(path, data)
                after[path] = data
        for path, said in what:
            done.setdefault(path, []).append(said)
    return [Stripped(path, "inline tests put back as at the base: " + ", ".join(said)) for path, said in done.items()]
