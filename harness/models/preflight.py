"""Before a run starts: can this model be called at all, and will its cost be known?

Two checks, both without a request to the provider (nothing is sent, nothing is spent):
- credentials: the variables the adapter's SDK reads are set (or a key was given);
- price: the model is in the price map, so every attempt's cost is known (a model too new for
  litellm's map is accepted with ``allow_unknown``; its cost is then "unknown", never $0).
A misspelt id gets the close names the map knows. `replay:` models need neither (a replay keeps
the recorded costs); their recording must exist.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path

from . import MODEL_ADAPTERS, SPEC_FORMS, get_model
from .base import HTTPModel
from .errors import ModelError
from .pricing import litellm_price_map, lookup_price


@dataclass
class ModelCheck:
    """One check of a model; `ok` False is a problem that stops the run."""

    name: str  # "model credentials" | "model price" | "model"
    ok: bool
    detail: str
    fix: str = ""


def credentials_check(model: HTTPModel) -> ModelCheck:
    missing = model.missing_credentials()
    if missing:
        names = " or ".join(missing)
        return ModelCheck(
            "model credentials",
            False,
            f"{model.name}: {names} is not set",
            f"export {missing[0]}=...  (keys are read from the environment, never stored)",
        )
    where = ", ".join(n for n in model.credential_env() if os.environ.get(n)) or "given"
    return ModelCheck("model credentials", True, f"{model.name}: {where} is set")


def close_names(model: str, provider: str, n: int = 4) -> list[str]:
    """Names in the price map near `model` (the provider's own entries first)."""
    table = litellm_price_map()
    if provider in ("anthropic", "openai"):
        pool = [k for k, v in table.items() if v.get("litellm_provider") == provider and "/" not in k]
    else:  # litellm ids: "<provider>/<model>"; that provider's entries first
        head = model.split("/", 1)[0] + "/"
        pool = [k for k in table if k.startswith(head)] or list(table)
    return difflib.get_close_matches(model, pool, n=n, cutoff=0.6)


def price_check(model: HTTPModel, *, allow_unknown: bool) -> ModelCheck:
    if lookup_price(model.model, model.provider) is not None:
        return ModelCheck("model price", True, f"{model.name} is in the price map")
    near = close_names(model.model, model.provider)
    detail = f"{model.name} is not in the price map" + (f"; did you mean {', '.join(near)}?" if near else "")
    if allow_unknown:
        return ModelCheck("model price", True, detail + " (allowed: its cost will be reported as unknown)")
    return ModelCheck(
        "model price",
        False,
        detail,
        "check the id, or pass --allow-unknown-model for a model too new for the price map "
        "(its cost is then reported as unknown)",
    )


def check_model(spec: str, *, base_url: str | None = None, allow_unknown: bool = False) -> list[ModelCheck]:
    """Every check of `spec` (``anthropic/<id>``, ``replay:<path>``, ...); none contacts the provider."""
    if spec.startswith("replay:"):
        source = Path(spec.removeprefix("replay:"))
        if not source.exists():
            return [
                ModelCheck(
                    "model",
                    False,
                    f"no recording at {source}",
                    "give a recordings folder, a Turn JSONL, a transcript or a run folder",
                )
            ]
        return [ModelCheck("model", True, f"replaying {source} (recorded costs; no credentials needed)")]
    prefix = spec.partition("/")[0]
    if prefix not in MODEL_ADAPTERS or "/" not in spec:
        return [ModelCheck("model", False, f"unknown model {spec!r}", "use one of: " + ", ".join(SPEC_FORMS))]
    try:
        model = get_model(spec, base_url=base_url)
    except ModelError as exc:
        return [ModelCheck("model", False, str(exc), exc.hint)]
    if not isinstance(model, HTTPModel):  # an adapter of a team's own: it checks itself when called
        return [ModelCheck("model", True, f"{spec}: no checks for this adapter")]
    return [credentials_check(model), price_check(model, allow_unknown=allow_unknown)]
