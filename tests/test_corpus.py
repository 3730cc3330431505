"""The realism corpus's builder (scripts/build_corpus.py) and manifest (scripts/corpus.toml)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import build_corpus  # noqa: E402


def test_a_line_that_only_says_the_new_version_keeps_its_old_text():
    old = 'name = "demo"\nversion = "1.4.0"\ndeps = ["a>=1.4.0"]\n__version_tuple__ = (1, 4, 0)\n'
    new = 'name = "demo"\nversion = "1.5.0"\ndeps = ["a>=1.5.0", "b"]\n__version_tuple__ = (1, 5, 0)\n'
    kept, dropped = build_corpus.drop_version_hunks(old, new, "1.4.0", "1.5.0")
    # the version line and the tuple go back; the line with a real change too (b added) stays new
    assert kept == 'name = "demo"\nversion = "1.4.0"\ndeps = ["a>=1.5.0", "b"]\n__version_tuple__ = (1, 4, 0)\n'
    assert dropped == 2


def test_a_hunk_that_also_adds_lines_is_kept_whole():
    old = "a\nv = '2.0'\nc\n"
    new = "a\nv = '2.1'\nnew line\nc\n"
    assert build_corpus.drop_version_hunks(old, new, "2.0", "2.1") == (new, 0)


def test_a_release_commit_keeps_the_old_version_in_pyproject(tmp_path):
    """Two sdists in a row: the second commit has no version-only change to a protected file."""
    repo = tmp_path / "repo"
    repo.mkdir()
    build_corpus.git(repo, "init", "-q", "--template=", "-b", "main")
    (repo / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0.1"\n')
    (repo / "demo.py").write_text("def f():\n    return 1\n")
    build_corpus.commit_all(repo, "0.1", "2024-01-01T00:00:00Z")
    (repo / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0.2"\n')
    (repo / "demo.py").write_text("def f():\n    return 2\n")
    assert build_corpus.keep_old_versions(repo, "0.1", "0.2") == ["pyproject.toml"]
    build_corpus.commit_all(repo, "0.2", "2024-02-01T00:00:00Z")
    changed = subprocess.run(
        ["git", "-C", str(repo), "diff", "--name-only", "HEAD~1", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert changed == ["demo.py"]


def test_the_manifest_pins_every_artifact_and_covers_the_layouts():
    projects = build_corpus.load_manifest()
    assert len(projects) >= 30
    for p in projects:
        assert p["kind"] in {"pypi", "npm", "debian"}, p["name"]
        for release in p["release"]:
            assert re.fullmatch(r"[0-9a-f]{64}", release["sha256"]), (p["name"], release["version"])
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", release["date"]), (p["name"], release["version"])
        if p["kind"] != "debian":
            dates = [r["date"] for r in p["release"]]
            assert dates == sorted(dates), f"{p['name']}: releases out of date order"
    covers = " ".join(p["covers"] for p in projects)
    for backend in ("setuptools", "hatchling", "flit_core", "poetry.core", "pdm.backend", "maturin"):
        assert backend in covers, backend
    for layout in ("requirements files", "tox", "dependency groups", "setup.cfg"):
        assert layout in covers, layout
    languages = {p.get("language") for p in projects if p["kind"] == "debian"}
    assert languages == {"go", "rust"}
    assert any(p["kind"] == "npm" for p in projects)


def test_shards_split_the_manifest_without_overlap():
    projects = build_corpus.load_manifest()
    shards = [build_corpus.select(projects, shard=f"{i}/3") for i in range(3)]
    names = [p["name"] for shard in shards for p in shard]
    assert sorted(names) == sorted(p["name"] for p in projects)
