"""The realism corpus's builder (scripts/build_corpus.py) and manifest (scripts/corpus.toml)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_a_line_kept_twice_still_says_the_first_version():
    """Third release: the line kept at 1.0 in the second commit is compared with 1.0, not 1.1."""
    kept, dropped = build_corpus.drop_version_hunks('"version": "1.0",\n', '"version": "1.2",\n', ["1.0", "1.1"], "1.2")
    assert (kept, dropped) == ('"version": "1.0",\n', 1)


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


def test_the_go_probe_compiles_at_its_base(tmp_path):
    """The probe's fix changes a function that exists at base, so the package compiles there and
    only the probe's test fails: the other tests measure the environment's health."""
    (tmp_path / "uuid.go").write_text('package uuid\n\nfunc New() string { return "" }\n')
    build_corpus.plant_go_probe(tmp_path, build_corpus.PROBE_VALUE - 1)
    assert "return 22" in (tmp_path / "wholeloop_probe.go").read_text()
    assert not (tmp_path / "wholeloop_probe_test.go").exists()
    build_corpus.plant_go_probe(tmp_path, build_corpus.PROBE_VALUE)
    assert "return 23" in (tmp_path / "wholeloop_probe.go").read_text()
    assert (tmp_path / "wholeloop_probe_test.go").read_text().startswith("package uuid\n")


def test_the_rust_probe_replaces_its_function(tmp_path):
    (tmp_path / "Cargo.toml").write_text('[package]\nname = "my-crate"\nversion = "1.0.0"\n')
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "lib.rs").write_text("pub fn f() {}\n")
    build_corpus.plant_rust_probe(tmp_path, build_corpus.PROBE_VALUE - 1)
    build_corpus.plant_rust_probe(tmp_path, build_corpus.PROBE_VALUE)
    lib = (tmp_path / "src" / "lib.rs").read_text()
    assert lib.count("pub fn wholeloop_probe") == 1 and "    23\n" in lib
    assert "my_crate::wholeloop_probe()" in (tmp_path / "tests" / "wholeloop_probe.rs").read_text()


# ----------------------------------------------------------------------------- the CI mini-corpus

# a hatchling sdist and a Debian Go package mined and checked; the npm package (zod) is refused at
# detection (test_mini_corpus_npm_package_without_its_runner_is_refused_at_detection)
MINI_CORPUS = ("execnet", "golang-github-google-uuid-dev")


@pytest.mark.docker
@pytest.mark.slow  # minutes: 3 projects from pinned downloads, each mined (its newest candidate) and checked
@pytest.mark.parametrize("name", MINI_CORPUS)
def test_mini_corpus_end_to_end(name, tmp_path):
    import bench_reach

    (project,) = build_corpus.select(build_corpus.load_manifest(), [name])
    # the check already grades gold 3 times in fresh containers and sees every FAIL_TO_PASS test fail
    # at base 3 times; the bench's own gold/noop runs (controls) are left to the full corpus run
    row = bench_reach.measure(project, tmp_path, controls=False, max_candidates=1)
    assert "error" not in row, row.get("error")
    assert row["env_built"] == row["checked"] >= 1, row
    assert row["healthy"] >= 1, row["unhealthy"]
    assert row["refused"] == [], row["refused"]  # public releases: any refusal is a false one
    assert row["kept"], row["reasons"]
    for task in row["kept"]:
        verdict = json.loads((tmp_path / "tasks" / name / f"{task}.check.json").read_text())
        assert verdict["passed"] and verdict["repeats"] == 3
        assert all(runs.split()[1] == "PPP" for runs in verdict["runs"].values() if runs.split()[0] == "FFF")


@pytest.mark.slow  # a minute: the npm lock files of zod's releases are made from the registry
def test_mini_corpus_npm_package_without_its_runner_is_refused_at_detection(tmp_path):
    """zod's published package.json runs `pnpm vitest run` and lists no devDependencies (they live
    in its monorepo's root): refused before any image is built, naming what is missing (it was
    quarantined "no vitest JSON report" after two image builds)."""
    import bench_reach

    (project,) = build_corpus.select(build_corpus.load_manifest(), ["zod"])
    row = bench_reach.measure(project, tmp_path, controls=False, max_candidates=1)
    assert "runs vitest, but no dependency of package.json provides it" in row.get("error", ""), row
    assert not (tmp_path / "tasks" / "zod" / "mine-report.json").exists()


def test_bench_reach_counts_gold_only_when_every_repeat_resolved(tmp_path):
    import bench_reach

    rows = [
        {"task_id": "a", "repeat": 0, "outcome": "resolved", "final": True},
        {"task_id": "a", "repeat": 1, "outcome": "infra_error", "final": True},
        {"task_id": "a", "repeat": 1, "outcome": "resolved", "final": True},  # the redo stands
        {"task_id": "b", "repeat": 0, "outcome": "resolved", "final": True},
        {"task_id": "b", "repeat": 1, "outcome": "unresolved", "final": True},
    ]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"task_id": "cut')
    assert bench_reach.read_run(tmp_path) == {"a": ["resolved", "resolved"], "b": ["resolved", "unresolved"]}


def test_bench_reach_totals():
    import bench_reach

    base = {"refused": [], "files_scanned": 10, "images_built": 1, "image_seconds": 30.0, "env_built": 1}
    rows = [
        {"name": "p", **base, "candidates": 2, "checked": 2, "healthy": 2, "kept": ["p1"], "gold_all": ["p1"]},
        {"name": "q", **base, "candidates": 1, "checked": 1, "healthy": 0, "kept": [], "refused": ["secret found: x"]},
        {"name": "r", **base, "candidates": 0, "checked": 0, "healthy": 0, "kept": []},
        {"name": "u", **base, "candidates": 1, "checked": 0, "env_built": 0, "healthy": 0, "kept": []},
        {"name": "s", "error": "not built: boom"},
        {"name": "v", "error": "error: v: no candidate commit in the history of HEAD (2 commit(s): ...)"},
    ]
    total = bench_reach.report(rows, ["t"])
    # r had no candidate and q's only one was refused: not counted; u's environment did not
    # resolve (no verdict) and s's mining stopped: not healthy
    assert total["healthy_projects"] == "1/3 (33 %)"
    assert total["keeping_projects"] == "1/3 (33 %)"  # of the projects with a candidate
    assert total["gold_3_of_3"] == "1/1"
    assert total["false_refusals"] == 1 and total["files_scanned"] == 40
    assert total["errors"]["s"] == "not built: boom" and total["not_run"] == ["t"]
