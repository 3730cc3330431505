"""A bare repository as a task's source (what `fetch`-style mirrors give: HEAD, objects, refs and no
config file) is read like any other: its commits are found and snapshotted."""

from __future__ import annotations

import subprocess

from support import git, write

from sandbox import cached_snapshot


def test_a_bare_mirror_without_a_config_file_is_snapshotted(tmp_path, monkeypatch):
    """Before, GitPython took the mirror's parent for its work tree and every task of a repository
    mined from such a mirror was quarantined: "commit '...' not found in <mirror>"."""
    monkeypatch.setenv("WHOLELOOP_CACHE", str(tmp_path / "cache"))
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    write(work, {"a.txt": "one\n"})
    git(work, "add", "-A")
    git(work, "commit", "-qm", "c0")
    head = git(work, "rev-parse", "HEAD").strip()
    bare = tmp_path / "mirror" / "repo"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    (bare / "config").unlink()
    snapshot = cached_snapshot(str(bare), head)
    assert (snapshot.path / "a.txt").read_text() == "one\n"
    assert snapshot.source_commit == head
