"""Regimes (docs/sweeps.md): a configuration's rate by gold patch size and by tokens per trial, with
Wilson intervals; the spread across prompt variants of one agent and model."""

from __future__ import annotations

import pytest
from support.history import row, write_run

from harness.records import RunFolder
from harness.report.figures import compute_figures
from harness.report.regimes import NOT_RECORDED, table_rows
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
