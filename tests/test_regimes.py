"""Regimes (docs/sweeps.md): a configuration's rate by gold patch size and by tokens per trial, with
Wilson intervals; the spread across prompt variants of one agent and model."""

from __future__ import annotations

import pytest
from support.history import row, write_run

from harness.records import RunFolder
from harness.report.figures import compute_figures
from harness.report.regimes import NOT_RECORDED, NOT_RECORDED_REPO, NOT_RECORDED_TOUCHED, SIZE_REGIMES, table_rows
from harness.report.stats import BootstrapSettings
from harness.usage import Usage

FEW = BootstrapSettings(n_resamples=199)


def _rows(label: str, resolved_small: int, resolved_large: int):
    """Eight tasks: four with a 5-line gold (small), four with a 200-line gold (large); the small
    ones use 10k tokens, the large 200k; the last one has no axes (graded before they were recorded)."""
    out = []
    for i in range(8):
        small = i < 4
        ok = (i < resolved_small) if small else (i - 4 < resolved_large)
        r = row(f"t{i}", label, "resolved" if ok else "unresolved")
        r.usage = Usage(input_tokens=9_000 if small else 190_000, output_tokens=1_000 if small else 10_000)
        r.acceptance = None if i == 7 else {"gold_lines_changed": 5 if small else 200}
        out.append(r)
    return out


def _run(path, rows, prompt: str):
    folder = write_run(path, rows)
    agent = {"agent": "default", "model": "m/1", "config": {"prompt_sha256": prompt}}
    folder.update_manifest(lambda m: m.update({"agent": agent}))
    return path


def test_each_configuration_is_split_by_gold_size_and_tokens_and_prompt_variants_show_their_swing(tmp_path):
    a = _run(tmp_path / "a", _rows("terse", 4, 1), "p1")
    b = _run(tmp_path / "b", _rows("verbose", 2, 0), "p2")
    figures = compute_figures([a, b], settings=FEW)
    terse = next(c for c in figures.regimes.configs if c.config == "terse")
    gold = {x.name: (x.resolved, x.trials) for x in terse.gold_size}
    assert gold == {"gold <= 10 lines": (4, 4), "gold > 50 lines": (1, 3), NOT_RECORDED: (0, 1)}
    tokens = {x.name: (x.resolved, x.trials) for x in terse.tokens}
    assert tokens == {"<= 32k tokens": (4, 4), "> 128k tokens": (1, 4)}
    small = next(x for x in terse.gold_size if x.name == "gold <= 10 lines")
    assert small.rate.value == 1.0 and small.rate.low == pytest.approx(0.5101, abs=1e-4)  # Wilson, 4 of 4
    (spread,) = figures.regimes.prompts
    assert spread.variants == {"terse": 5 / 8, "verbose": 2 / 8} and spread.spread == pytest.approx(3 / 8)
    heads, rows = table_rows(figures.regimes)
    assert heads[:2] == ["configuration", "gold <= 10 lines"] and rows[0][0] == "terse"


def test_one_prompt_has_no_spread_to_show(tmp_path):
    a = _run(tmp_path / "a", _rows("x", 4, 1), "same")
    b = _run(tmp_path / "b", _rows("y", 2, 0), "same")
    assert compute_figures([a, b], settings=FEW).regimes.prompts == []
    assert RunFolder(a).info().agent["config"]["prompt_sha256"] == "same"


def _sized(path, rows, sizes: dict[str, tuple[int | None, int | None]]):
    """A run whose manifest records each task's (repository files, gold files), as a run records them."""
    folder = write_run(path, rows)

    def put(m):
        for tid, (repo_files, gold_files) in sizes.items():
            m["tasks"][tid].update({"repo_files": repo_files, "gold_files": gold_files})

    folder.update_manifest(put)
    return path


def test_repository_size_and_files_touched_split_each_configuration_and_an_old_run_is_unknown(tmp_path):
    rows = [row(f"t{i}", "x", "resolved" if i in (0, 1, 4) else "unresolved") for i in range(6)]
    sizes = {"t0": (40, 1), "t1": (40, 1), "t2": (5_000, 1), "t3": (5_000, 3), "t4": (400, 6), "t5": (None, None)}
    a = _sized(tmp_path / "a", rows, sizes)
    old = write_run(tmp_path / "old", [row(f"t{i}", "old") for i in range(2)]).path  # no sizes recorded
    figures = compute_figures([a, old], settings=FEW)
    x = next(c for c in figures.regimes.configs if c.config == "x")
    repo = {b.name: (b.resolved, b.trials) for b in x.repo_size}
    assert repo == {
        "repo <= 100 files": (2, 2),
        "repo 101-1,000 files": (1, 1),
        "repo > 1,000 files": (0, 2),
        NOT_RECORDED_REPO: (0, 1),
    }
    files = {b.name: (b.resolved, b.trials) for b in x.files_touched}
    assert files == {
        "gold touches 1 file": (2, 3),
        "gold touches 2-5 files": (0, 1),
        "gold touches > 5 files": (1, 1),
        NOT_RECORDED_TOUCHED: (0, 1),
    }
    unknown = next(c for c in figures.regimes.configs if c.config == "old")
    assert [(b.name, b.trials) for b in unknown.repo_size] == [(NOT_RECORDED_REPO, 2)]  # never guessed
    assert [(b.name, b.trials) for b in unknown.files_touched] == [(NOT_RECORDED_TOUCHED, 2)]
    heads, table = table_rows(figures.regimes, SIZE_REGIMES)
    assert heads[1:4] == ["repo <= 100 files", "repo 101-1,000 files", "repo > 1,000 files"]
    assert table[1][heads.index(NOT_RECORDED_REPO)] == "100% [34%, 100%] of 2"  # the old run's 2 trials: unknown


def test_a_run_records_each_tasks_repository_size_and_gold_footprint_once_and_never_guesses(tmp_path):
    """The manifest's tasks carry `repo_files` (the base commit's tree) and `gold_files` (the gold
    patch's files), counted here independently with git and the diff headers; a task whose
    repository cannot be read gets None, and the manifest is still written."""
    import subprocess

    from support.cli import DEMO

    from harness.run.manifest import build_manifest
    from harness.tasks import load_tasks

    tasks = [t for t in load_tasks(DEMO) if t.id in ("inikit-001", "inikit-003")]
    bare = tmp_path / "inikit.git"
    subprocess.run(["git", "clone", "-q", "--bare", tasks[0].repo_source(), str(bare)], check=True)
    lost = tasks[1].model_copy(update={"id": "lost", "repo": str(tmp_path / "gone")})
    manifest = build_manifest(run_id="r", agent={"agent": "gold"}, tasks=[*tasks, lost], options={})
    for task in tasks:
        listed = subprocess.run(
            ["git", f"--git-dir={bare}", "ls-tree", "-r", "--name-only", task.base_commit],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        gold = (task.gold() or "").splitlines()
        entry = manifest["tasks"][task.id]
        assert entry["repo_files"] == len(listed) > 0
        assert entry["gold_files"] == sum(line.startswith("diff --git ") for line in gold) > 0
    assert manifest["tasks"]["lost"]["repo_files"] is None
    assert manifest["tasks"]["lost"]["gold_files"] == manifest["tasks"]["inikit-003"]["gold_files"]
