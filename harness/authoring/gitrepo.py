"""Read-only git access for mining: commits in a range, a commit's diff split by path, file
contents at a commit. Plain `git` with the user's and the system's configuration ignored, so
diffs and dates come out the same on every machine.

A repository is a local checkout, a bare repository, a git bundle or a URL; the last two are read
through the cached mirror `sandbox.open_repository` keeps (the same one runs use).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from sandbox import SandboxError, open_repository

from ..errors import UserError

GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}


class MineError(UserError):
    """Bad input to mining (not a repository, unknown commit, nothing to mine): the message says
    what was wrong and what to pass instead. Raised before anything is written."""

    hint = "See docs/tasks.md (Getting tasks from your history)."


@dataclass
class CommitInfo:
    sha: str
    parents: list[str]
    committed_at: datetime  # committer date, UTC
    subject: str

    @property
    def date_iso(self) -> str:
        return self.committed_at.astimezone(UTC).isoformat()


@dataclass
class ChangedPath:
    path: str
    lines: int  # added + deleted (numstat); a binary file counts 0
    binary: bool = False


@dataclass
class GitRepo:
    source: str  # as the user gave it
    name: str  # the repository's folder name (task ids start with it)
    git_dir: str
    _commit_cache: dict[str, CommitInfo] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, source: str | Path) -> GitRepo:
        """Open a repository; MineError (saying what to pass) when `source` is not one."""
        text = str(source)
        path = Path(text).expanduser()
        if path.is_dir():
            proc = _run(["git", "-C", str(path), "rev-parse", "--absolute-git-dir"])
            if proc.returncode != 0:
                raise MineError(
                    f"{text}: not a git repository (git says: {_last_line(proc.stderr)}); pass the folder "
                    "of a git checkout, a bare repository or a git bundle"
                )
            git_dir = proc.stdout.decode().strip()
        elif path.is_file() or "://" in text or text.startswith("git@"):
            try:
                git_dir = str(open_repository(str(path.resolve()) if path.is_file() else text).git_dir)
            except SandboxError as exc:
                raise MineError(f"{text}: cannot read it as a git repository or bundle: {exc}") from None
        else:
            raise MineError(
                f"{text}: no such folder or file; pass the path of a git repository (or a bundle, or a URL)"
            )
        name = path.resolve().name if path.exists() else text.rstrip("/").rsplit("/", 1)[-1]
        for suffix in (".bundle", ".git"):
            name = name.removesuffix(suffix)
        name = re.sub(r"[^A-Za-z0-9_.\-]+", "-", name).strip("-.") or "repo"
        return cls(text, name, git_dir)

    # ------------------------------------------------------------------ plumbing

    def git(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        proc = _run(["git", f"--git-dir={self.git_dir}", *args], input=input)
        if check and proc.returncode != 0:
            raise MineError(f"git {' '.join(args[:3])}: {_last_line(proc.stderr)}")
        return proc.stdout

    def text(self, *args: str) -> str:
        return self.git(*args).decode("utf-8", errors="surrogateescape")

    # ------------------------------------------------------------------ commits

    def resolve(self, ref: str) -> str:
        """The full id of a commit (an id, abbreviated id or ref); MineError when unknown."""
        proc = _run(["git", f"--git-dir={self.git_dir}", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"])
        if proc.returncode != 0:
            raise MineError(f"commit {ref!r} not found in {self.source}")
        return proc.stdout.decode().strip()

    def commit(self, ref: str) -> CommitInfo:
        sha = self.resolve(ref)
        if sha not in self._commit_cache:
            line = self.text("log", "-1", "--format=%H%x00%P%x00%cI%x00%s", sha).rstrip("\n")
            self._commit_cache[sha] = _commit_info(line)
        return self._commit_cache[sha]

    def commits(
        self, since: datetime | None = None, until: datetime | None = None, paths: list[str] | None = None
    ) -> list[CommitInfo]:
        """Commits reachable from HEAD (every parent followed) with a committer date in
        [since, until], oldest first (ties by id); with `paths`, only those touching them."""
        args = ["log", "--format=%H%x00%P%x00%cI%x00%s", "HEAD"]
        if paths:
            args += ["--", *[f":(glob){p}" for p in paths]]
        proc = _run(["git", f"--git-dir={self.git_dir}", *args])
        if proc.returncode != 0:
            raise MineError(f"{self.source}: cannot list commits: {_last_line(proc.stderr)} (an empty repository?)")
        out = []
        for line in proc.stdout.decode("utf-8", errors="surrogateescape").splitlines():
            info = _commit_info(line)
            if (since and info.committed_at < since) or (until and info.committed_at > until):
                continue
            self._commit_cache[info.sha] = info
            out.append(info)
        out.sort(key=lambda c: (c.committed_at, c.sha))
        return out

    def message(self, sha: str) -> str:
        return self.text("log", "-1", "--format=%B", sha)

    # ------------------------------------------------------------------ diffs and files

    def changed(self, parent: str, sha: str) -> list[ChangedPath]:
        """Every path the commit changes against `parent` (a rename = a delete and an add)."""
        out = self.git("diff", "--no-renames", "--numstat", "-z", parent, sha).decode("utf-8", "surrogateescape")
        rows = []
        for entry in out.split("\0"):
            if not entry:
                continue
            added, deleted, path = entry.split("\t", 2)
            binary = added == "-"
            rows.append(ChangedPath(path, 0 if binary else int(added) + int(deleted), binary))
        return rows

    def diff(self, parent: str, sha: str, paths: list[str]) -> bytes:
        """The binary-safe patch of `paths` from `parent` to `sha` (b"" for no paths)."""
        if not paths:
            return b""
        return self.git(
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-renames",
            "--binary",
            parent,
            sha,
            "--",
            *[f":(literal){p}" for p in paths],
        )

    def added_lines(self, parent: str, sha: str, path: str) -> set[int]:
        """New-side line numbers the commit adds to `path`."""
        out = self.text(
            "diff", "--no-color", "--no-ext-diff", "--no-renames", "-U0", parent, sha, "--", f":(literal){path}"
        )
        lines: set[int] = set()
        for match in re.finditer(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", out, re.M):
            start, count = int(match.group(1)), int(match.group(2) or "1")
            lines.update(range(start, start + count))
        return lines

    def tree(self, sha: str) -> str:
        return self.text("rev-parse", f"{sha}^{{tree}}").strip()

    def files(self, sha: str) -> list[tuple[str, str]]:
        """(blob id, path) of every regular file and symlink at `sha`."""
        out = self.git("ls-tree", "-r", "-z", "--full-tree", sha).decode("utf-8", "surrogateescape")
        rows = []
        for entry in out.split("\0"):
            if not entry:
                continue
            meta, path = entry.split("\t", 1)
            mode, kind, blob = meta.split()
            if kind == "blob":
                rows.append((blob, path))
        return rows

    def exists(self, sha: str, path: str) -> bool:
        return bool(self.git("ls-tree", "--name-only", sha, "--", f":(literal){path}").strip())

    def read(self, sha: str, path: str) -> bytes | None:
        """A file's bytes at `sha`, None when it is not there."""
        proc = _run(["git", f"--git-dir={self.git_dir}", "cat-file", "blob", f"{sha}:{path}"])
        return proc.stdout if proc.returncode == 0 else None

    def blobs(self, ids: list[str]) -> dict[str, bytes]:
        """Contents of many blobs in one `git cat-file --batch`."""
        if not ids:
            return {}
        out = self.git("cat-file", "--batch", input=("\n".join(ids) + "\n").encode())
        found, pos = {}, 0
        for blob in ids:
            header_end = out.index(b"\n", pos)
            header = out[pos:header_end].split()
            if len(header) < 3 or header[1] == b"missing":
                pos = header_end + 1
                continue
            size = int(header[2])
            start = header_end + 1
            found[blob] = out[start : start + size]
            pos = start + size + 1
        return found


def parse_date(text: str, end_of_day: bool = False) -> datetime:
    """A bare date (that day at 00:00:00 UTC, or 23:59:59 with `end_of_day`) or an ISO time."""
    text = text.strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        text += "T23:59:59+00:00" if end_of_day else "T00:00:00+00:00"
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise MineError(f"{text!r} is not a date: use YYYY-MM-DD or an ISO 8601 time") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _commit_info(line: str) -> CommitInfo:
    sha, parents, date, subject = line.split("\x00", 3)
    return CommitInfo(sha, parents.split(), datetime.fromisoformat(date).astimezone(UTC), subject)


def _run(cmd: list[str], input: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, input=input, env={**os.environ, **GIT_ENV})


def _last_line(stderr: bytes) -> str:
    lines = stderr.decode(errors="replace").strip().splitlines()
    return lines[-1] if lines else "no message"
