"""Every figure of a report in one JSON-able object: what terminal, HTML and evidence pack show.

    figures = compute_figures([Path("runs/a"), Path("runs/b")], scoring="costs.yaml")
    figures.model_dump(mode="json")      # plain dict, ready for json.dumps

Shape (stable; fields are only ever added):

    schema_version, generated_at, bootstrap (seed, resamples, method, confidence)
    runs[]:        run_dir, run_id, configs[], recipe (command, versions, commit, models, settings, ...)
    configs[]:     ConfigStats per configuration (stats.py): counts, Wilson rate, per-task rates,
                   pass@k / pass^k, bootstrap intervals for cost and time
    recovery[]:    ConfigRecovery (recovery.py): inside attempts (transcripts) and across attempts
    comparisons[]: Comparison per pair (compare.py): wins/losses/ties, McNemar, paired bootstrap, verdict
    scoring:       ScoringFigures (scoring.py): the scoring used and expected cost per task
    failures:      FailureFigures (failures.py): outcomes, stop reasons, hardest failures
    cells[]:       one per attempt row: task x configuration matrix with paths to open it
    dating[]:      DatingSplit per configuration (dating.py): resolve rate after / before the model's
                   training cutoff, and of undated tasks
    controls[]:    ControlFailure per failed control check (controls.py): gold that did not resolve
                   every task, noop that resolved one; shown first, before any number
    statements[]:  StatementSplit per configuration (by_statement.py): resolve rate per class of the
                   tasks' problem statements
    front:         Front (front.py), with two configurations or more: rates, cost and time per
                   configuration, the Pareto fronts on cost x rate and time x rate, who is dominated
                   (on point estimates, and with intervals), each extra attempt's value, and the
                   paired comparisons against the best with Holm's correction
    regimes:       Regimes (regimes.py): each configuration's rate by gold patch size and by tokens
                   per trial, with intervals; the spread across prompt variants of one agent and model

Pure functions over run folders: no Docker, no network.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

from ..records import Manifest, RunFolder
from .acceptance import (
    DEFAULT_POLICY,
    Agreement,
    ConfigAcceptance,
    Policy,
    accept_configs,
    acceptance_figures,
    agreement,
    load_policy,
    model_agreement,
    model_agreement_json,
    model_reviews,
)
from .by_statement import StatementSplit, statement_figures
from .compare import Comparison, compare_all
from .controls import ControlFailure, control_checks
from .dating import DatingSplit, dating_figures, load_table
from .failures import FailureFigures, failure_figures
from .front import ALPHA, Front, compute_front
from .recovery import ConfigRecovery, config_recovery
from .regimes import Regimes, regimes
from .scoring import Scoring, ScoringFigures, load_scoring, score_configs
from .stats import BootstrapSettings, ConfigRows, ConfigStats, config_stats, load_configs

FIGURES_SCHEMA = 1


class Recipe(BaseModel):
    """What produced a run's numbers, from its manifest.json (never keys)."""

    run_id: str = ""
    command: str = ""
    cwd: str = ""
    wholeloop_version: str | None = None
    git_commit: str | None = None
    python: str | None = None
    dependencies: dict[str, str | None] = Field(default_factory=dict)
    docker_engine: dict = Field(default_factory=dict)
    host: dict = Field(default_factory=dict)
    agent: str | None = None
    scaffold: str | None = None  # an external agent's CLI: name, version, wire format, install steps
    models: list[str] = Field(default_factory=list)
    provider: str | None = None
    base_urls: list[str] = Field(default_factory=list)
    sampling: dict = Field(default_factory=dict)  # temperature, top_p, max_tokens, ...
    limits: dict = Field(default_factory=dict)
    agent_config_sha256: str | None = None  # hash of the whole agent config (prompts, tools, limits, settings)
    prompt_sha256: str | None = None
    tool_schema_sha256: str | None = None
    options: dict = Field(default_factory=dict)  # workers, repeats, attempts, feedback, limits, label
    tasks: int = 0
    task_hashes: dict[str, str] = Field(default_factory=dict)
    task_checks: dict[str, str] = Field(default_factory=dict)  # task id -> check status when the run started
    started_at: str | None = None
    finished_at: str | None = None
    sessions: int = 0  # how many times the run was started (resumes)


class RunFigures(BaseModel):
    run_dir: str
    run_id: str = ""
    configs: list[str] = Field(default_factory=list)
    recipe: Recipe = Field(default_factory=Recipe)


class Cell(BaseModel):
    """One attempt: a cell of the task x configuration matrix, with the files that open it."""

    task_id: str
    config: str
    run_dir: str
    repeat: int
    attempt: int
    final: bool
    outcome: str
    resolved: bool
    stop_reason: str = ""
    cost_usd: float | None = None
    total_s: float = 0.0
    agent_s: float = 0.0
    steps: int = 0
    dir: str = ""  # all paths relative to run_dir
    transcript_path: str = ""
    patch_path: str = ""


class Figures(BaseModel):
    schema_version: int = FIGURES_SCHEMA
    generated_at: str = ""
    bootstrap: BootstrapSettings = Field(default_factory=BootstrapSettings)
    runs: list[RunFigures] = Field(default_factory=list)
    configs: list[ConfigStats] = Field(default_factory=list)
    recovery: list[ConfigRecovery] = Field(default_factory=list)
    comparisons: list[Comparison] = Field(default_factory=list)
    scoring: ScoringFigures = Field(default_factory=ScoringFigures)
    failures: FailureFigures = Field(default_factory=FailureFigures)
    cells: list[Cell] = Field(default_factory=list)
    dating: list[DatingSplit] = Field(default_factory=list)  # resolve rate split by the model's training cutoff
    controls: list[ControlFailure] = Field(default_factory=list)  # failed control checks: shown before any number
    statements: list[StatementSplit] = Field(default_factory=list)  # resolve rate split by statement class
    # what "resolved" means in every rate, interval and comparison above: `resolve` (the hidden
    # tests pass), or `accept` (resolved and accepted under the policy); docs/acceptance.md
    metric: str = "resolve"
    acceptance: list[ConfigAcceptance] = Field(default_factory=list)  # both rates side by side, and why not accepted
    # human verdicts (RUN/reviews.jsonl) against the policy: Agreement.as_json(); None when no verdict
    review: dict | None = None
    # model reviews (RUN/model_reviews.jsonl, `review --review-model`): per model its verdicts and
    # its agreement with the human verdicts (model_agreement_json); empty when there is none
    model_reviews: list[dict] = Field(default_factory=list)
    front: Front | None = None  # with two configurations or more (front.py)
    regimes: Regimes = Field(default_factory=Regimes)  # rate by gold patch size and tokens; prompt spread


def _sha(data) -> str | None:
    if not data:
        return None
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def _scaffold(external: dict) -> str | None:
    if not external:
        return None
    steps = "; ".join(external.get("install") or [])
    return (
        f"{external.get('cli')} {external.get('version')} ({external.get('wire')}; install: {steps}; "
        f"checked: {external.get('installed') or '?'})"
    )


def recipe_of(manifest: Manifest, rows_models: list[str | None] | None = None) -> Recipe:
    """The recipe block of one manifest, typed (any schema version; a part not written is empty)."""
    agent = manifest.agent
    external = agent.get("external") or {}
    config = agent.get("config") or external
    wl = manifest.wholeloop
    command = manifest.command
    models = [m for m in [agent.get("model")] if m] or sorted({m for m in rows_models or [] if m})
    base_urls = [u for u in [agent.get("base_url")] if u]
    return Recipe(
        run_id=manifest.run_id,
        command=shlex.join(command),
        cwd=manifest.cwd if "cwd" in manifest.model_fields_set else "",
        wholeloop_version=wl.get("version"),
        git_commit=wl.get("git_commit"),
        python=manifest.python,
        dependencies=manifest.dependencies,
        docker_engine=manifest.docker_engine,
        host=manifest.host,
        agent=agent.get("agent"),
        models=models,
        provider=agent.get("provider") or external.get("wire"),
        scaffold=_scaffold(external),
        base_urls=base_urls,
        sampling=config.get("settings") or {},
        limits=config.get("limits") or {},
        agent_config_sha256=_sha(config),
        prompt_sha256=config.get("prompt_sha256"),
        tool_schema_sha256=config.get("tool_schema_sha256"),
        options=manifest.options.model_dump(exclude_unset=True),  # as the run wrote them
        tasks=len(manifest.tasks),
        task_hashes={k: v.content_hash for k, v in manifest.tasks.items()},
        task_checks={k: v.check for k, v in manifest.tasks.items() if v.check},
        started_at=manifest.started_at,
        finished_at=manifest.finished_at,
        sessions=len(manifest.sessions),
    )


def _cells(cfg: ConfigRows) -> list[Cell]:
    return [
        Cell(
            task_id=r.task_id,
            config=cfg.name,
            run_dir=str(cfg.run_dir),
            repeat=r.repeat,
            attempt=r.attempt,
            final=r.final,
            outcome=r.outcome,
            resolved=r.resolved,
            stop_reason=r.stop_reason,
            cost_usd=r.cost_usd,
            total_s=r.phases.total_s,
            agent_s=r.phases.agent_s,
            steps=r.steps,
            dir=r.dir,
            transcript_path=r.transcript_path,
            patch_path=r.patch_path,
        )
        for r in sorted(cfg.rows, key=lambda r: (r.task_id, r.repeat, r.attempt))
    ]


def compute_figures(
    run_dirs: Sequence[Path | str],
    scoring: Scoring | Path | str | None = None,
    *,
    settings: BootstrapSettings | None = None,
    recovery: bool = True,
    cutoffs: dict[str, str] | None = None,
    cutoff_table: Path | str | None = None,
    strict: bool = False,
    policy: Policy | Path | str | None = None,
    metric: str = "resolve",
    alpha: float = ALPHA,
    comparisons: bool = True,
) -> Figures:
    """All figures for the given run folders. ``scoring``: a Scoring, a scoring file path, or None
    (every failure costs 1); ``cutoffs`` (model -> date) and ``cutoff_table`` override the shipped
    training-cutoff table; ``strict``: infra errors count as failures in each configuration's
    figures instead of being left out (for CI); ``policy``: the acceptance policy (a Policy, a file, or
    None: the default); ``metric``: `accept` makes every rate and comparison the acceptance rate's
    (raises NotMeasured when a resolved attempt has no axes); ``alpha``: the front's level for the
    comparisons against the best (Holm-corrected); ``comparisons``: False leaves out the comparison
    of every pair (quadratic in configurations). Raises FileNotFoundError for a folder
    that is not a run."""
    settings = settings or BootstrapSettings()
    if not isinstance(policy, Policy):
        policy = load_policy(policy) if policy is not None else DEFAULT_POLICY
    if not isinstance(scoring, Scoring):
        scoring = load_scoring(scoring)
    dirs = [Path(d) for d in run_dirs]
    configs = load_configs(dirs)
    figures = Figures(generated_at=datetime.now(UTC).isoformat(timespec="seconds"), bootstrap=settings)
    for run_dir in dirs:
        mine = [c for c in configs if c.run_dir == run_dir]
        manifest = mine[0].manifest if mine else _manifest(run_dir)
        models = [r.model for c in mine for r in c.rows]
        figures.runs.append(
            RunFigures(
                run_dir=str(run_dir),
                run_id=manifest.run_id if "run_id" in manifest.model_fields_set else run_dir.name,
                configs=[c.name for c in mine],
                recipe=recipe_of(manifest, models),
            )
        )
    figures.acceptance = acceptance_figures(configs, policy, settings)
    figures.review = review_figures(configs, policy)
    figures.model_reviews = model_review_figures(configs, policy)
    figures.metric = metric
    if metric == "accept":
        configs = accept_configs(configs, policy)
    figures.configs = [config_stats(c, settings, strict=strict) for c in configs]
    figures.controls = control_checks(figures.configs, figures.acceptance)
    if recovery:
        figures.recovery = [config_recovery(c) for c in configs]
    if comparisons:  # every pair: the decision record, which compares each with the best, goes without
        figures.comparisons = compare_all(configs, settings, strict=strict)
    figures.scoring = score_configs(configs, scoring, settings, policy)
    figures.failures = failure_figures(configs)
    figures.cells = [cell for c in configs for cell in _cells(c)]
    # a table given is read now (its mistakes said at once); the shipped one only if a dated task needs it
    figures.dating = dating_figures(
        configs, table=load_table(cutoff_table) if cutoff_table else None, overrides=cutoffs
    )
    figures.statements = statement_figures(configs)
    prompts = {name: run.recipe.prompt_sha256 for run in figures.runs for name in run.configs}
    figures.regimes = regimes(configs, figures.configs, prompts)
    if len(configs) >= 2:
        figures.front = compute_front(
            configs, figures.configs, figures.acceptance, settings=settings, alpha=alpha, metric=metric
        )
    return figures


def review_figures(configs: list[ConfigRows], policy: Policy) -> dict | None:
    """The current human verdicts of every run folder against the policy (None when there are none)."""
    together = Agreement()
    verdicts = 0
    for run_dir in dict.fromkeys(c.run_dir for c in configs):
        folder = RunFolder(run_dir)
        rows = [r for c in configs if c.run_dir == run_dir for r in c.rows]
        current = folder.current_reviews(rows)
        verdicts += sum(len(v) for v in current.values())
        agreement(rows, current, policy, into=together, models=model_reviews(run_dir, rows, policy))
    return dict(together.as_json(), verdicts=verdicts, said=together.tell()) if verdicts else None


def model_review_figures(configs: list[ConfigRows], policy: Policy = DEFAULT_POLICY) -> list[dict]:
    """Every run folder's current model reviews, per model, with their agreement with the current
    human verdicts (never with the policy: a model's verdict is not an acceptance verdict unless
    the policy counts that model, `counted` then true)."""
    together: dict = {}
    for run_dir in dict.fromkeys(c.run_dir for c in configs):
        folder = RunFolder(run_dir)
        if not folder.model_reviews_path.exists():
            continue
        rows = [r for c in configs if c.run_dir == run_dir for r in c.rows]
        model_agreement(rows, folder.current_reviews(rows), folder.current_model_reviews(rows), into=together)
    return [dict(m, counted=m["model"] == policy.model_review) for m in model_agreement_json(together)]


def _manifest(run_dir: Path) -> Manifest:
    return RunFolder(run_dir).info()
