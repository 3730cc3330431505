"""Cost of a turn, from litellm's model price map, overridable by a price table.

The map is read straight from the JSON file litellm ships (model_prices_and_context_window_backup
.json) instead of importing litellm: the import takes seconds and, unless
LITELLM_LOCAL_MODEL_COST_MAP is set, fetches a newer map over the network, which would make costs
depend on the day a run happened. The bundled file is pinned by litellm's installed version,
which the manifest records. The figures are the same ones ``litellm.cost_per_token`` uses.

An unknown model costs ``None`` ("unknown"), never 0.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .types import Usage

PRICE_MAP_FILE = "model_prices_and_context_window_backup.json"


class Price(BaseModel):
    """USD per token. Cache prices are None when the provider publishes none: such tokens are
    then charged at ``input_cost_per_token``, as litellm does."""

    input_cost_per_token: float
    output_cost_per_token: float
    cache_read_input_token_cost: float | None = None
    cache_creation_input_token_cost: float | None = None
    cache_creation_input_token_cost_above_1hr: float | None = None  # a one-hour cache write (Anthropic)
    output_cost_per_reasoning_token: float | None = None
    #: Long-context tiers: {threshold in prompt tokens: fields that replace the ones above}. Past a
    #: threshold the whole request is billed at that tier, as providers and litellm do.
    tiers: dict[int, dict[str, float]] = {}

    def for_prompt(self, prompt_tokens: int) -> Price:
        above = [t for t in self.tiers if prompt_tokens > t]
        if not above:
            return self
        return self.model_copy(update={**self.tiers[max(above)], "tiers": {}})


#: A price table: model name -> Price or a dict with Price's fields.
PriceTable = Mapping[str, "Price | Mapping[str, Any]"]


@functools.lru_cache(maxsize=1)
def litellm_price_map() -> dict[str, dict[str, Any]]:
    """litellm's bundled price map, or {} when litellm is not installed (all prices unknown)."""
    spec = importlib.util.find_spec("litellm")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return {}
    for folder in spec.submodule_search_locations:
        path = Path(folder) / PRICE_MAP_FILE
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            data.pop("sample_spec", None)  # documentation entry, not a model
            return data
    return {}


def _as_price(entry: Price | Mapping[str, Any] | None) -> Price | None:
    if entry is None:
        return None
    if isinstance(entry, Price):
        return entry
    if entry.get("input_cost_per_token") is None or entry.get("output_cost_per_token") is None:
        return None  # e.g. an embedding or image model: no per-token chat price
    tiers: dict[int, dict[str, float]] = {}
    for key, value in entry.items():
        m = _TIER_KEY.match(key)
        if m and isinstance(value, (int, float)):
            tiers.setdefault(int(m.group(2)) * 1000, {})[m.group(1)] = float(value)
    fields = {k: entry.get(k) for k in Price.model_fields if k != "tiers"}
    return Price.model_validate({**fields, "tiers": tiers})


_TIER_KEY = re.compile(
    r"^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost"
    r"|cache_creation_input_token_cost)_above_(\d+)k_tokens$"
)


def _candidates(model: str, provider: str | None) -> list[str]:
    """Keys to try in order: the id as given, then with/without the provider prefix."""
    keys = [model]
    if provider and not model.startswith(provider + "/"):
        keys.append(f"{provider}/{model}")
    return keys


def lookup_price(model: str, provider: str | None = None, *, overrides: PriceTable | None = None) -> Price | None:
    """The price of ``model`` (a provider-side id such as "claude-sonnet-4-5", or a litellm id
    such as "anthropic/claude-sonnet-4-5"), or None when unknown. ``overrides`` wins over the map
    and may be keyed by either form, or by our full name ("anthropic/claude-sonnet-4-5")."""
    keys = _candidates(model, provider)
    tail = model.split("/", 1)[1] if "/" in model else None
    for key in keys + ([tail] if tail else []):
        if overrides and key in overrides:
            return _as_price(overrides[key])
    table = litellm_price_map()
    for key in keys:
        if key in table:
            return _as_price(table[key])
    # litellm ids carry the provider ("anthropic/claude-x") while the map keys first-party models
    # bare; accept the bare entry only if it belongs to that provider, since prices differ by host.
    if tail and tail in table and table[tail].get("litellm_provider") == model.split("/", 1)[0]:
        return _as_price(table[tail])
    return None


def cost_usd(usage: Usage, price: Price | None) -> float | None:
    """USD for ``usage`` at ``price``; None when the price is unknown."""
    if price is None:
        return None
    price = price.for_prompt(usage.input_tokens)
    cache_read = usage.cache_read_tokens
    cache_write = usage.cache_write_tokens
    plain_input = max(0, usage.input_tokens - cache_read - cache_write)
    read_price = price.cache_read_input_token_cost
    write_price = price.cache_creation_input_token_cost
    reasoning_price = price.output_cost_per_reasoning_token
    cost = plain_input * price.input_cost_per_token
    cost += cache_read * (price.input_cost_per_token if read_price is None else read_price)
    write_price = price.input_cost_per_token if write_price is None else write_price
    hour = min(usage.cache_write_1h_tokens, cache_write)
    hour_price = price.cache_creation_input_token_cost_above_1hr
    cost += (cache_write - hour) * write_price + hour * (write_price if hour_price is None else hour_price)
    if reasoning_price is not None:
        reasoning = min(usage.reasoning_tokens, usage.output_tokens)
        cost += reasoning * reasoning_price
        cost += (usage.output_tokens - reasoning) * price.output_cost_per_token
    else:
        cost += usage.output_tokens * price.output_cost_per_token
    return cost


def turn_cost(
    usage: Usage, model: str, provider: str | None = None, *, overrides: PriceTable | None = None
) -> float | None:
    return cost_usd(usage, lookup_price(model, provider, overrides=overrides))
