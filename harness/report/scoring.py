"""Failure costs: a scoring file maps outcomes to costs; reports show expected cost per task.

A scoring file is YAML, either a flat mapping or one under ``costs:``::

    # a broken PASS_TO_PASS test is worse than no patch at all
    regression: 3
    patch_apply_failed: 1.5
    empty_patch: 1
    default: 1        # any failure not named (default 1)
    resolved: 0       # (default 0)
    not_accepted: 2   # resolved, but not accepted under the acceptance policy (default: as resolved)

``infra_error`` is never scored: it is the machine's failure, so those trials are left out (a
scoring file that names it is refused, so nobody believes it counted).

Expected cost per task: each scored trial costs what its final outcome costs; a task's cost is
the mean over its trials; the expected cost is the mean over tasks, with a percentile bootstrap
interval that resamples tasks.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from pydantic import BaseModel, Field

from ..records import ResultRow
from ..vocabulary import NOT_SCORED, Acceptance, Outcome
from .acceptance import DEFAULT_POLICY, Policy, judge, model_reviews
from .errors import ReportInputError
from .stats import BootstrapSettings, ConfigRows, Interval, bootstrap_mean, by_task, trials_of

NOT_ACCEPTED = "not_accepted"  # the scoring file's key: a resolved patch the policy does not accept
NOT_ACCEPTED_KEY = "resolved_not_accepted"  # how its cost is told in by_outcome


class Scoring(BaseModel):
    costs: dict[str, float] = Field(default_factory=dict)  # outcome -> cost
    default: float = 1.0  # any failure not in costs
    resolved: float = 0.0
    not_accepted: float | None = None  # resolved but not accepted under the policy (None: costs as resolved)
    source: str = "default: every failure costs 1, resolved costs 0"

    def cost(self, outcome: str, resolved: bool) -> float:
        if outcome in self.costs:
            return self.costs[outcome]
        return self.resolved if resolved else self.default


class ConfigScore(BaseModel):
    config: str
    expected_cost_per_task: Interval = Field(default_factory=Interval)
    tasks: int = 0
    trials: int = 0
    by_outcome: dict[str, float] = Field(default_factory=dict)  # outcome -> total cost it contributed


class ScoringFigures(BaseModel):
    scoring: Scoring = Field(default_factory=Scoring)
    configs: list[ConfigScore] = Field(default_factory=list)


def load_scoring(path: Path | str | None) -> Scoring:
    """Read a scoring file. Raises ValueError with a readable message when it is malformed."""
    if path is None:
        return Scoring()
    path = Path(path)
    try:
        import yaml  # only a scoring file needs it (a report without one stays quick)

        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ReportInputError(f"{path}: not valid YAML: {exc}") from exc
    if isinstance(data, dict) and isinstance(data.get("costs"), dict):
        data = {**data["costs"], **{k: v for k, v in data.items() if k != "costs"}}
    if not isinstance(data, dict):
        raise ReportInputError(f"{path}: a scoring file maps outcomes to costs, e.g. 'regression: 3'")
    costs: dict[str, float] = {}
    default, resolved = 1.0, 0.0
    not_accepted: float | None = None
    for key, value in data.items():
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ReportInputError(f"{path}: the cost of {key!r} must be a number, not {value!r}") from None
        if key in NOT_SCORED:
            raise ReportInputError(f"{path}: {key} cannot be scored (those trials are left out of every figure)")
        if key == "default":
            default = value
        elif key == Outcome.resolved:
            resolved = value
        elif key == NOT_ACCEPTED:
            not_accepted = value
        else:
            costs[str(key)] = value
    return Scoring(costs=costs, default=default, resolved=resolved, not_accepted=not_accepted, source=str(path))


def config_score(
    cfg: ConfigRows, scoring: Scoring, settings: BootstrapSettings | None = None, policy: Policy = DEFAULT_POLICY
) -> ConfigScore:
    tasks = by_task([t for t in trials_of(cfg.rows) if t.scored])
    reviews = model_reviews(cfg.run_dir, cfg.rows, policy) if scoring.not_accepted is not None else {}
    out = ConfigScore(config=cfg.name, tasks=len(tasks), trials=sum(len(v) for v in tasks.values()))
    per_task = []
    for trials in tasks.values():
        finals = [cast(ResultRow, t.final) for t in trials]  # scored, so complete: a final row each
        outcomes = [
            NOT_ACCEPTED_KEY
            if scoring.not_accepted is not None
            and f.resolved
            and judge(f, policy, reviews).acceptance is Acceptance.not_accepted
            else f.outcome
            for f in finals
        ]
        costs = [
            cast(float, scoring.not_accepted) if o == NOT_ACCEPTED_KEY else scoring.cost(o, t.resolved)
            for o, t in zip(outcomes, trials)
        ]
        per_task.append(sum(costs) / len(costs))
        for o, c in zip(outcomes, costs):
            out.by_outcome[o] = out.by_outcome.get(o, 0.0) + c
    out.expected_cost_per_task = bootstrap_mean(per_task, settings=settings)
    return out


def score_configs(
    configs: list[ConfigRows],
    scoring: Scoring | None = None,
    settings: BootstrapSettings | None = None,
    policy: Policy = DEFAULT_POLICY,
) -> ScoringFigures:
    scoring = scoring or Scoring()
    return ScoringFigures(scoring=scoring, configs=[config_score(c, scoring, settings, policy) for c in configs])
