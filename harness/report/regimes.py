"""Regimes: each configuration's resolve rate split by the kind of task and attempt, with intervals,
and the spread across prompt variants of one model (docs/sweeps.md, "Regimes").

From run folders alone. A trial falls in one bin of each regime, by what its rows recorded:

- **gold patch size**: the lines gold changes (`gold_lines_changed` of the final attempt's acceptance
  axes); bins up to 10 lines, 11 to 50, over 50. A trial graded before the axes were recorded is
  "not recorded", never guessed;
- **tokens used** (the context regime): input + output tokens of every attempt of the trial; bins up
  to 32k, 32k to 128k, over 128k;
- **repository size**: the files of the task's repository at its base commit, as the run's manifest
  recorded them (`repo_files`); bins up to 100 files, 101 to 1,000, over 1,000;
- **files touched**: the files the task's gold patch changes, from the manifest (`gold_files`); bins
  1 file, 2 to 5, over 5. A run whose manifest predates these two facts, or a task whose repository
  could not be read when the run started, is "not recorded", never guessed;
- the task's age against the model's training cutoff is the dating split (dating.py), shown beside.

Each bin's rate has its 95 % Wilson interval over its trials (repeats of a task are not independent:
read a narrow bin with care). Bins hold few trials on small suites; they are shown, not tested.

**Prompt sensitivity**: configurations of one agent and model whose prompts differ (the manifest's
prompt hash) are prompt variants; their spread is the highest rate minus the lowest. A "one point
better" claim between two configurations is to be read against that swing.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..records import ResultRow
from .stats import ConfigRows, ConfigStats, Interval, trials_of, wilson

NOT_RECORDED = "gold size not recorded"
NOT_RECORDED_REPO = "repo size not recorded"  # a run that did not record it (docs/sweeps.md)
NOT_RECORDED_TOUCHED = "files touched not recorded"
GOLD_BINS = ((10, "gold <= 10 lines"), (50, "gold 11-50 lines"), (None, "gold > 50 lines"))
TOKEN_BINS = ((32_000, "<= 32k tokens"), (128_000, "32k-128k tokens"), (None, "> 128k tokens"))
REPO_BINS = ((100, "repo <= 100 files"), (1_000, "repo 101-1,000 files"), (None, "repo > 1,000 files"))
TOUCHED_BINS = ((1, "gold touches 1 file"), (5, "gold touches 2-5 files"), (None, "gold touches > 5 files"))


class Bin(BaseModel):
    name: str
    trials: int = 0
    resolved: int = 0
    rate: Interval = Field(default_factory=Interval)


class ConfigRegimes(BaseModel):
    config: str
    gold_size: list[Bin] = Field(default_factory=list)
    tokens: list[Bin] = Field(default_factory=list)
    repo_size: list[Bin] = Field(default_factory=list)
    files_touched: list[Bin] = Field(default_factory=list)


class PromptSpread(BaseModel):
    agent: str
    model: str | None = None
    variants: dict[str, float | None] = Field(default_factory=dict)  # configuration -> resolve rate
    spread: float | None = None  # highest - lowest rate


class Regimes(BaseModel):
    configs: list[ConfigRegimes] = Field(default_factory=list)
    prompts: list[PromptSpread] = Field(default_factory=list)


def _bin(value: int | None, bins, unknown: str = NOT_RECORDED) -> str:
    if value is None:
        return unknown
    return next(name for top, name in bins if top is None or value <= top)


def _gold_lines(row: ResultRow) -> int | None:
    axes = row.acceptance
    if not isinstance(axes, dict) or "gold_lines_changed" not in axes:
        return None
    return int(axes["gold_lines_changed"])


def _split(groups: dict[str, list[bool]], bins, unknown: str = NOT_RECORDED) -> list[Bin]:
    order = [name for _, name in bins] + [unknown]
    out = []
    for name in order:
        if name in groups:
            outcomes = groups[name]
            out.append(
                Bin(name=name, trials=len(outcomes), resolved=sum(outcomes), rate=wilson(sum(outcomes), len(outcomes)))
            )
    return out


def config_regimes(cfg: ConfigRows) -> ConfigRegimes:
    gold: dict[str, list[bool]] = {}
    tokens: dict[str, list[bool]] = {}
    repo: dict[str, list[bool]] = {}
    touched: dict[str, list[bool]] = {}
    tasks = cfg.manifest.tasks if cfg.manifest is not None else {}
    for trial in trials_of(cfg.rows):
        if not trial.scored or trial.final is None:
            continue
        gold.setdefault(_bin(_gold_lines(trial.final), GOLD_BINS), []).append(trial.resolved)
        used = sum(r.usage.input_tokens + r.usage.output_tokens for r in trial.attempts)
        tokens.setdefault(_bin(used, TOKEN_BINS), []).append(trial.resolved)
        info = tasks.get(trial.final.task_id)
        repo_files = info.repo_files if info is not None else None
        gold_files = info.gold_files if info is not None else None
        repo.setdefault(_bin(repo_files, REPO_BINS, NOT_RECORDED_REPO), []).append(trial.resolved)
        touched.setdefault(_bin(gold_files, TOUCHED_BINS, NOT_RECORDED_TOUCHED), []).append(trial.resolved)
    return ConfigRegimes(
        config=cfg.name,
        gold_size=_split(gold, GOLD_BINS),
        tokens=_split(tokens, TOKEN_BINS),
        repo_size=_split(repo, REPO_BINS, NOT_RECORDED_REPO),
        files_touched=_split(touched, TOUCHED_BINS, NOT_RECORDED_TOUCHED),
    )


def prompt_spreads(stats: list[ConfigStats], prompts: dict[str, str | None]) -> list[PromptSpread]:
    """For each agent and model with configurations of two prompts or more (`prompts`: configuration
    -> its prompt hash), the spread of their resolve rates."""
    groups: dict[tuple[str, str | None], list[ConfigStats]] = {}
    for st in stats:
        groups.setdefault((st.agent, st.model), []).append(st)
    out = []
    for (agent, model), group in groups.items():
        if len({prompts.get(st.name) for st in group}) < 2:
            continue
        rates = {st.name: st.resolve_rate.value for st in group}
        known = [r for r in rates.values() if r is not None]
        out.append(
            PromptSpread(
                agent=agent, model=model, variants=rates, spread=max(known) - min(known) if len(known) > 1 else None
            )
        )
    return out


def regimes(configs: list[ConfigRows], stats: list[ConfigStats], prompts: dict[str, str | None]) -> Regimes:
    return Regimes(configs=[config_regimes(c) for c in configs], prompts=prompt_spreads(stats, prompts))


# ---------------------------------------------------------------------------- shown


def bin_text(b: Bin) -> str:
    rate = b.rate
    if rate.value is None:
        return f"n/a of {b.trials}"
    return f"{100 * rate.value:.0f}% [{100 * (rate.low or 0):.0f}%, {100 * (rate.high or 0):.0f}%] of {b.trials}"


#: the regimes shown together in one table: (title, the ConfigRegimes fields, the bins' order)
TASK_REGIMES = (
    "Resolve rate by regime (gold patch size; tokens per trial)",
    ("gold_size", "tokens"),
    [name for _, name in GOLD_BINS] + [NOT_RECORDED] + [name for _, name in TOKEN_BINS],
)
SIZE_REGIMES = (
    "Resolve rate by repository size and files touched (gold's files)",
    ("repo_size", "files_touched"),
    [name for _, name in REPO_BINS] + [NOT_RECORDED_REPO] + [name for _, name in TOUCHED_BINS] + [NOT_RECORDED_TOUCHED],
)
TABLES = (TASK_REGIMES, SIZE_REGIMES)


def _bins(c: ConfigRegimes, fields: tuple[str, ...]) -> list[Bin]:
    kinds = {"gold_size": c.gold_size, "tokens": c.tokens, "repo_size": c.repo_size, "files_touched": c.files_touched}
    return [b for f in fields for b in kinds[f]]


def table_rows(
    figures_regimes: Regimes, which: tuple[str, tuple[str, ...], list[str]] = TASK_REGIMES
) -> tuple[list[str], list[list[str]]]:
    """(headers, rows) of one table of `which` regimes: a row per configuration, a column per bin
    seen in any."""
    _, fields, order = which
    seen = {b.name for c in figures_regimes.configs for b in _bins(c, fields)}
    named = [name for name in order if name in seen]
    rows = []
    for c in figures_regimes.configs:
        found = {b.name: bin_text(b) for b in _bins(c, fields)}
        rows.append([c.config, *(found.get(h, "-") for h in named)])
    return ["configuration", *named], rows


def spread_lines(figures_regimes: Regimes) -> list[str]:
    out = []
    for s in figures_regimes.prompts:
        rates = ", ".join(f"{k} {'n/a' if v is None else f'{100 * v:.0f}%'}" for k, v in s.variants.items())
        swing = "n/a" if s.spread is None else f"{100 * s.spread:.0f} points"
        out.append(f"{s.agent} on {s.model or '-'}: prompt variants swing the resolve rate by {swing} ({rates})")
    return out


def regimes_table(figures_regimes: Regimes, width: int = 150, which=TASK_REGIMES, caption: bool = True):
    """One table of `which` regimes as a rich table fitting `width`; the prompt spreads as the
    caption when `caption`."""
    from rich.markup import escape
    from rich.text import Text

    from .fit import Col, fit_table

    heads, rows = table_rows(figures_regimes, which)
    cols = [Col(heads[0], "left"), *(Col(h, drop=i + 1) for i, h in enumerate(heads[1:]))]
    body: list[list[str | Text]] = [[escape(v) for v in r] for r in rows]
    text = "\n".join(spread_lines(figures_regimes)) or "no prompt variants of one agent and model to compare"
    return fit_table(which[0], cols, body, caption=escape(text) if caption else "", width=width)
