"""Snapshots of a repository at one commit, with no trace of any other commit.

The agent must not be able to read the fix from history (`git log --all`, the reflog, packed or
dangling objects, remotes, stashes). So we never copy a `.git` directory: we write the base
commit's tree into a new folder and make a brand-new repository whose only commit holds that
tree. Author, committer and dates are fixed, so the same tree always gives the same commit id,
which keeps image tags stable.

Files that usually hold credentials (`.env` and the like: ENV_LIKE_FILES) are left out of every
snapshot, so they never enter an image, unless the caller names them in `keep`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

import git

from .errors import RepositoryError

SNAPSHOT_FORMAT = 1  # bump when the layout of a snapshot changes: it is part of image hashes
# Basenames (globs) of files that hold environment secrets by convention: never in a snapshot
# unless kept explicitly (a task's `environment.env_files`).
ENV_LIKE_FILES = (".env", ".env.*", "*.env", ".envrc", ".netrc", ".pypirc", ".git-credentials")
_IDENTITY = {
    "GIT_AUTHOR_NAME": "wholeloop",
    "GIT_AUTHOR_EMAIL": "snapshot@wholeloop.invalid",
    "GIT_COMMITTER_NAME": "wholeloop",
    "GIT_COMMITTER_EMAIL": "snapshot@wholeloop.invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
}


@dataclass(frozen=True)
class Snapshot:
    source: str  # where the repository came from, as the task names it
    source_commit: str  # full id of the base commit in the source repository
    tree: str  # id of the base tree (same in source and snapshot)
    commit: str  # id of the single commit in the snapshot repository
    path: Path  # the snapshot folder on the host (work tree + fresh .git)
    excluded: tuple[str, ...] = ()  # paths of the base tree left out (ENV_LIKE_FILES not kept)


def env_like(path: str, keep: tuple[str, ...] = ()) -> bool:
    """Is `path` (repository-relative) a file left out of snapshots: a basename matching
    ENV_LIKE_FILES and no glob of `keep` matching the whole path?"""
    name = PurePosixPath(path).name
    if not any(fnmatchcase(name, pattern) for pattern in ENV_LIKE_FILES):
        return False
    return not any(fnmatchcase(path, glob) or PurePosixPath(path).match(glob) for glob in keep)


def cache_dir() -> Path:
    """wholeloop's cache folder: $WHOLELOOP_CACHE, else $XDG_CACHE_HOME/wholeloop (~/.cache/wholeloop)."""
    root = os.environ.get("WHOLELOOP_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "wholeloop"
    )
    return Path(root)


def _configless(path: Path) -> bool:
    """A bare repository with no config file (HEAD, objects and refs alone, as some mirrors are):
    GitPython takes its parent for a work tree, so it is read through a mirror like a bundle."""
    return (path / "HEAD").is_file() and (path / "objects").is_dir() and not (path / "config").exists()


def open_repository(source: str, *, refresh: bool = False) -> git.Repo:
    """Open a local repository, or a cached bare mirror of a bundle or remote URL.

    The mirror is cloned once and fetched again only when `refresh` is asked for (a commit was
    not found), under a lock, so parallel workers never fetch into it at the same time.
    Raises RepositoryError when the source cannot be read.
    """
    path = Path(source)
    if path.is_dir() and not _configless(path):
        try:
            return git.Repo(path)
        except git.exc.GitError as exc:
            raise RepositoryError(f"{source} is not a git repository: {_git_message(exc)}") from exc
    if not path.exists() and "://" not in source and not source.startswith("git@"):
        raise RepositoryError(
            f"repository not found: {source}",
            hint="Repository paths in a task spec are relative to the spec file.",
        )
    origin = str(path.resolve()) if path.exists() else source
    key = hashlib.sha256(origin.encode()).hexdigest()[:16]
    mirror = cache_dir() / "repos" / key
    with _mirror_lock(mirror):
        try:
            if not mirror.exists():
                mirror.parent.mkdir(parents=True, exist_ok=True)
                tmp = Path(tempfile.mkdtemp(dir=mirror.parent, prefix=".tmp-"))
                git.Repo.clone_from(origin, tmp, mirror=True)
                os.replace(tmp, mirror)
            elif refresh:
                git.Repo(mirror).git.fetch(origin, "+refs/*:refs/*", "--prune")
            return git.Repo(mirror)
        except git.exc.GitError as exc:  # translate at the boundary
            raise RepositoryError(
                f"cannot read repository {source}: {_git_message(exc)}",
                hint="Make it reachable, or point the task's repo at a local clone or git bundle (for tasks "
                "imported from SWE-bench: repo_path in the --specs file; see docs/tasks.md).",
            ) from exc


_thread_locks: dict[str, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


@contextlib.contextmanager
def _mirror_lock(mirror: Path) -> Iterator[None]:
    """One writer per mirror: a lock across threads, an flock across processes."""
    with _thread_locks_guard:
        lock = _thread_locks.setdefault(str(mirror), threading.Lock())
    mirror.parent.mkdir(parents=True, exist_ok=True)
    with lock, open(str(mirror) + ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def find_commit(source: str, commit: str) -> tuple[git.Repo, git.Commit]:
    """The repository and the commit; a mirror is fetched again once if the commit is unknown."""
    repo = open_repository(source)
    try:
        return repo, resolve_commit(repo, commit, source)
    except RepositoryError:
        if Path(source).is_dir() and not _configless(Path(source)):
            raise
    repo = open_repository(source, refresh=True)
    return repo, resolve_commit(repo, commit, source)


def resolve_commit(repo: git.Repo, commit: str, source: str = "") -> git.Commit:
    """The commit object for an id or ref; RepositoryError when it does not exist."""
    try:
        obj = repo.commit(commit)
    except (git.exc.GitError, ValueError, IndexError) as exc:
        raise RepositoryError(
            f"commit {commit!r} not found in {source or repo.git_dir}",
            hint="Check base_commit in the task spec (a full or abbreviated id, or a ref).",
        ) from exc
    return obj


def make_snapshot(source: str, commit: str, dest: Path, *, keep: tuple[str, ...] = ()) -> Snapshot:
    """Write the tree of `commit` into `dest` (which must not exist) as a one-commit repository,
    leaving out .env-like files (ENV_LIKE_FILES) that no glob of `keep` names."""
    repo, base = find_commit(source, commit)
    dest = Path(dest)
    dest.mkdir(parents=True)
    index = Path(tempfile.mkdtemp()) / "index"
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        # A private index: the source repository's own index and HEAD stay untouched.
        # --work-tree makes this work for bare mirrors (bundles, URLs) as well as checkouts.
        git_in_dest = ["git", f"--git-dir={repo.git_dir}", f"--work-tree={dest}"]
        repo.git.execute([*git_in_dest, "read-tree", base.hexsha], env={**os.environ, **env})
        repo.git.execute([*git_in_dest, "checkout-index", "--all"], env={**os.environ, **env})
        listing = repo.git.execute(
            ["git", f"--git-dir={repo.git_dir}", "ls-tree", "-r", "-z", "--name-only", base.hexsha],
            strip_newline_in_stdout=False,
        )
        excluded = tuple(p for p in listing.split("\0") if p and env_like(p, keep))
        for path in excluded:
            (dest / path).unlink(missing_ok=True)
        fresh = git.Repo.init(dest, initial_branch="main")
        fresh.git.add("--all", "--force")  # every file came from the tree, even ignored ones
        fresh.git.commit("--no-verify", "--allow-empty", "-q", "-m", "base", env=_IDENTITY)
        new_commit = fresh.head.commit.hexsha
        shutil.rmtree(dest / ".git" / "logs", ignore_errors=True)
        for sample in (dest / ".git" / "hooks").glob("*"):
            sample.unlink()
    except git.exc.GitError as exc:
        raise RepositoryError(f"cannot snapshot {source} at {commit}: {_git_message(exc)}") from exc
    finally:
        shutil.rmtree(index.parent, ignore_errors=True)
    return Snapshot(source, base.hexsha, base.tree.hexsha, new_commit, dest, excluded)


def tar_directory(path: Path, arcname: str = ".") -> bytes:
    """A tar archive of `path` owned by root, for `put_archive` or a build context."""
    buf = io.BytesIO()

    def as_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(str(path), arcname=arcname, filter=as_root)
    return buf.getvalue()


def _git_message(exc: git.exc.GitError) -> str:
    """git's own last words (GitPython wraps stderr in "stderr: '...'"), never empty."""
    stderr = getattr(exc, "stderr", "") or ""
    lines = [line.strip().removeprefix("stderr: ").strip("'").strip() for line in stderr.splitlines()]
    lines = [line for line in lines if line]
    return lines[-1] if lines else (str(exc).strip().splitlines() or ["git failed and said nothing"])[0]


def cached_snapshot(source: str, commit: str, *, keep: tuple[str, ...] = ()) -> Snapshot:
    """The snapshot of `source` at `commit` (see `make_snapshot`), made once and kept in the cache
    folder.

    Concurrent callers are safe: each builds in its own temporary folder and the first rename wins.
    """
    repo, base = find_commit(source, commit)
    rule = json.dumps([ENV_LIKE_FILES, sorted(keep)])
    key = hashlib.sha256(f"{SNAPSHOT_FORMAT}:{source}:{rule}".encode()).hexdigest()[:12]
    final = cache_dir() / "snapshots" / f"{key}-{base.hexsha[:16]}"
    if not (final / ".git").is_dir():
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=".tmp-"))
        made = make_snapshot(source, base.hexsha, tmp / "repo", keep=keep)
        # what was left out, beside the snapshot (not inside it: the image must not list them)
        marker_tmp = tmp / "excluded"
        marker_tmp.write_text("".join(p + "\0" for p in made.excluded))
        os.replace(marker_tmp, final.parent / (final.name + ".excluded"))
        try:
            os.replace(made.path, final)
        except OSError:
            pass  # another worker won the race; its snapshot is identical
        shutil.rmtree(tmp, ignore_errors=True)
    fresh = git.Repo(final)
    marker = final.parent / (final.name + ".excluded")
    excluded = tuple(p for p in marker.read_text().split("\0") if p) if marker.exists() else ()
    return Snapshot(source, base.hexsha, base.tree.hexsha, fresh.head.commit.hexsha, final, excluded)
