"""One estimator of a unit's time and cost, for `run --dry-run` and a sweep's plan.

For each (configuration, task) it looks, in order, at:

1. the same configuration's trials in the run history (its label: agent + model, or `--config`):
   the median of its trials of this task, else the median over its trials of the suite's tasks;
2. the same model's trials (any agent or settings), the same way;
3. tokens x price: the median tokens of a trial of this task by any model-driven agent in the
   history (else of any task of the suite), priced at this model's price (the price map, or
   prices given); a time is not estimated from tokens;
4. else "unknown", said as such (never 0). A control (gold, noop) calls no model: its cost is 0.

Only complete trials count (an infrastructure error's time and spend say nothing of a unit), and
only the history index is read (runs index themselves as they go; `wholeloop history --rebuild`
indexes older run folders). Another configuration's *time* is never used for this one: a gold
run's seconds say nothing of how long a model takes.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from ..history.db import HistoryError, HistoryIndex
from ..history.types import TrialFigure
from ..models.pricing import Price, PriceTable, cost_usd, lookup_price
from ..models.types import Usage

CONTROLS = ("gold", "noop")


class Source(StrEnum):
    """Where an estimate of one unit's time or cost comes from."""

    configuration = "configuration"  # this configuration's earlier trials
    model = "model"  # the same model's trials, another agent or settings
    tokens = "tokens x price"  # others' tokens on these tasks at this model's price
    no_model = "no model"  # a control: no model is called, nothing is spent
    unknown = "unknown"


@dataclass(frozen=True)
class Config:
    """What the estimator needs of one configuration."""

    label: str  # the configuration's name in results rows (RunOptions.label_for)
    agent: str
    model: str | None

    @property
    def control(self) -> bool:
        return self.agent in CONTROLS


@dataclass
class UnitEstimate:
    seconds: float | None
    cost_usd: float | None
    time_from: Source
    cost_from: Source


@dataclass
class Estimate:
    """The units of one configuration: serial seconds, cost, and where each figure came from."""

    units: int
    seconds: float | None  # sum over the units (None when a unit's time is unknown)
    cost_usd: float | None  # None when a unit's cost is unknown
    time_from: dict[Source, int] = field(default_factory=dict)  # units per source
    cost_from: dict[Source, int] = field(default_factory=dict)

    def wall_seconds(self, workers: int) -> float | None:
        """The seconds spread over `workers` (units at once)."""
        if self.seconds is None:
            return None
        return self.seconds / max(1, min(workers, self.units or 1))

    def says(self, what: str) -> str:
        """'3 from configuration, 1 from model' for `what` = time | cost."""
        counts = self.time_from if what == "time" else self.cost_from
        return ", ".join(
            f"{n} from {src.value}" if src != Source.unknown else f"{n} unknown" for src, n in counts.items()
        )


def price_of(model: str | None, prices: PriceTable | None = None) -> Price | None:
    """The price of a model named as a run names it (anthropic/x, openai/x, litellm/p/x); None
    for a replay model, a model the map does not know and no price given for."""
    if not model or model.startswith("replay:"):
        return None
    if prices and model in prices:
        return lookup_price(model, overrides=prices)
    name = model.removeprefix("litellm/")
    provider, _, mid = name.partition("/")
    return lookup_price(mid, provider, overrides=prices) if mid else lookup_price(name, overrides=prices)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


class Estimator:
    """Estimates from the trials it was given (`from_history` reads them from a run history)."""

    def __init__(self, trials: Iterable[TrialFigure], *, prices: PriceTable | None = None, note: str = "") -> None:
        self.prices = prices
        self.note = note  # why the history could not be read, when it could not
        self._config: dict[str, dict[str, list[TrialFigure]]] = {}
        self._model: dict[str, dict[str, list[TrialFigure]]] = {}
        self._tokens: dict[str, list[tuple[int, int]]] = {}
        self._all_tokens: list[tuple[int, int]] = []
        self.trials = 0
        for t in trials:
            self.trials += 1
            self._config.setdefault(t.config, {}).setdefault(t.task_id, []).append(t)
            if t.model and t.agent not in CONTROLS:
                self._model.setdefault(t.model, {}).setdefault(t.task_id, []).append(t)
            if t.agent not in CONTROLS and t.input_tokens + t.output_tokens > 0:
                self._tokens.setdefault(t.task_id, []).append((t.input_tokens, t.output_tokens))
                self._all_tokens.append((t.input_tokens, t.output_tokens))
        self._cache: dict[tuple[Config, str], UnitEstimate] = {}

    @classmethod
    def from_history(cls, url: str | None, task_ids: Iterable[str], *, prices: PriceTable | None = None) -> Estimator:
        """Read the trials of these tasks from the history at `url` (never created here); an index
        that does not exist or cannot be read gives an estimator with none, saying why."""
        if url is None:
            return cls([], prices=prices, note="no run history (--no-history)")
        try:
            with HistoryIndex.open(url, create=False) as index:
                return cls(index.trial_figures(task_ids), prices=prices)
        except FileNotFoundError:
            return cls([], prices=prices, note=f"no run history yet at {url.removeprefix('sqlite:///')}")
        except HistoryError as exc:
            return cls([], prices=prices, note=str(exc))

    @staticmethod
    def _from(groups: Mapping[str, list[TrialFigure]] | None, task_id: str, what: str) -> float | None:
        """The median over `groups[task_id]`, else over all of `groups` (the suite's other tasks)."""
        if not groups:
            return None
        own = groups.get(task_id)
        pool = own if own else [t for ts in groups.values() for t in ts]
        if what == "time":
            return _median([t.time_s for t in pool])
        costs = [t.cost_usd for t in pool if t.cost_usd is not None]
        return _median(costs) if len(costs) == len(pool) else None  # a price unknown: not a cost of 0

    def unit(self, config: Config, task_id: str) -> UnitEstimate:
        """One unit's time and cost, and where each comes from."""
        key = (config, task_id)
        if key in self._cache:
            return self._cache[key]
        seconds, time_from = self._from(self._config.get(config.label), task_id, "time"), Source.configuration
        if seconds is None and config.model and not config.control:
            seconds, time_from = self._from(self._model.get(config.model), task_id, "time"), Source.model
        if seconds is None:
            time_from = Source.unknown
        cost: float | None = 0.0
        if config.control:
            cost_from = Source.no_model
        else:
            cost, cost_from = self._from(self._config.get(config.label), task_id, "cost"), Source.configuration
            if cost is None and config.model:
                cost, cost_from = self._from(self._model.get(config.model), task_id, "cost"), Source.model
            if cost is None:
                cost, cost_from = self._by_tokens(config.model, task_id), Source.tokens
            if cost is None:
                cost_from = Source.unknown
        found = UnitEstimate(seconds, cost, time_from, cost_from)
        self._cache[key] = found
        return found

    def _by_tokens(self, model: str | None, task_id: str) -> float | None:
        price = price_of(model, self.prices)
        tokens = self._tokens.get(task_id) or self._all_tokens
        if price is None or not tokens:
            return None
        usage = Usage(
            input_tokens=int(statistics.median(i for i, _ in tokens)),
            output_tokens=int(statistics.median(o for _, o in tokens)),
        )
        return cost_usd(usage, price)

    def units(self, config: Config, task_ids: Iterable[str]) -> Estimate:
        """The estimate of these units (a task id once per unit) of one configuration."""
        seconds: float | None = 0.0
        cost: float | None = 0.0
        result = Estimate(0, None, None)
        for task_id in task_ids:
            e = self.unit(config, task_id)
            result.units += 1
            result.time_from[e.time_from] = result.time_from.get(e.time_from, 0) + 1
            result.cost_from[e.cost_from] = result.cost_from.get(e.cost_from, 0) + 1
            seconds = None if seconds is None or e.seconds is None else seconds + e.seconds
            cost = None if cost is None or e.cost_usd is None else cost + e.cost_usd
        result.seconds, result.cost_usd = seconds, cost
        return result


def history_url(out: Path, explicit: str | None, enabled: bool = True) -> str | None:
    """The history a run at `out` indexes into (None: none), as `harness.history.live` finds it."""
    if not enabled:
        return None
    from ..history.live import default_url

    return default_url(out, explicit)
