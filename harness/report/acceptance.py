"""Acceptance: a policy over the axes grading recorded, applied at report time (docs/acceptance.md).

Grading records facts (`acceptance` in grade.json and the row: scope, size, tests deleted or
weakened, top-level files, debug leftovers, binary files, each with its evidence); this module
decides, per row, whether a team's reviewers would accept the patch, and why not. Changing the
policy needs no regrade. A row without axes (graded before grader 9, or its own checks could not run) is **not measured**, never
"not accepted".

A policy is YAML: the keys below, at the top level or under ``acceptance:`` (so a repository's
wholeloop.yaml or a suite's config can carry it)::

    acceptance:
      tests_deleted: true      # a deleted test file refuses the patch (default true)
      tests_weakened: true     # assertions removed from a test file (default true)
      outside_scope: true      # files outside gold's footprint and modules (default true)
      top_level_added: true    # new files at the repository's top level (default true)
      binary_files: true       # binary files (default true)
      debug_leftovers: true    # print / console.log / dbg! / breakpoint added (default true)
      own_checks: true         # findings the repository's own linters/type checkers did not have at base
      max_size_ratio: 10       # more than 10x gold's changed lines (default: no limit)
      model_review: MODEL      # this model's reject (`review --review-model MODEL`) refuses the patch
                               # (default: none; a model's verdict is never counted)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..records import ModelReview, ResultRow, RunFolder
from ..vocabulary import NOT_SCORED, Acceptance
from .axes import AXES, MODEL_REJECTS, MODEL_REVIEW, NOT_RESOLVED, TOO_BIG, decide, new_findings
from .errors import ReportInputError
from .stats import BootstrapSettings, ConfigRows, Interval, trials_of, wilson


class Policy(BaseModel):
    """Which axes refuse a resolved patch (see the module docstring); `source` says where it came from."""

    model_config = ConfigDict(extra="forbid")

    tests_deleted: bool = True
    tests_weakened: bool = True
    outside_scope: bool = True
    top_level_added: bool = True
    binary_files: bool = True
    debug_leftovers: bool = True
    own_checks: bool = True
    max_size_ratio: float | None = Field(None, gt=0)
    # the model whose verdict counts (its reject refuses the patch); None: no model's verdict counts
    model_review: str | None = Field(None, min_length=1)
    source: str = "default"

    def describe(self) -> str:
        rules = self.model_dump()
        counted = [AXES[k] for k in AXES if rules[k]]
        size = f"; at most {self.max_size_ratio:g}x gold's changed lines" if self.max_size_ratio else ""
        model = f"; not rejected by {self.model_review}'s review" if self.model_review else ""
        return f"{self.source}: resolved, and no " + ", no ".join(counted) + size + model


DEFAULT_POLICY = Policy()


def load_policy(path: Path | str | None) -> Policy:
    """The policy of a YAML file (its `acceptance:` mapping, or the file itself); the default
    without one. Raises ReportInputError naming the file and the key when it is malformed."""
    if path is None:
        return DEFAULT_POLICY
    path = Path(path)
    import yaml

    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ReportInputError(f"{path}: cannot read an acceptance policy: {exc}") from exc
    if isinstance(data, dict) and "acceptance" in data:
        data = data["acceptance"] or {}
    if not isinstance(data, dict):
        raise ReportInputError(f"{path}: an acceptance policy maps axes to true/false, e.g. 'debug_leftovers: false'")
    try:
        return Policy(**{**data, "source": str(path)})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ReportInputError(f"{path}: invalid acceptance policy: {problems}") from None


@dataclass
class Verdict:
    """One row under a policy: accepted, not accepted (with the reasons), or not measured."""

    acceptance: Acceptance
    reasons: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)  # reason -> the axis's evidence

    @property
    def accepted(self) -> bool:
        return self.acceptance is Acceptance.accepted


# attempt key -> the counted model's current review of it (`model_reviews`)
ModelVerdicts = Mapping[tuple[str, str, int, int], ModelReview]


def model_reviews(run_dir: Path | str, rows: list[ResultRow], policy: Policy) -> dict:
    """The current reviews (`RunFolder.current_model_reviews`) of `rows` by the model `policy`
    counts, per attempt key; {} (and nothing read) when the policy counts none."""
    if not policy.model_review:
        return {}
    folder = RunFolder(Path(run_dir))
    if not folder.model_reviews_path.exists():
        return {}
    found = folder.current_model_reviews(rows)
    return {key: by[policy.model_review] for key, by in found.items() if policy.model_review in by}


def judge(row: ResultRow, policy: Policy = DEFAULT_POLICY, reviews: ModelVerdicts | None = None) -> Verdict:
    """The policy's verdict on one row: an unresolved row is not accepted ("not resolved"); a
    resolved row without axes is not measured; otherwise each counted axis with findings is a
    reason (`axes.decide`, the one place this is decided). `reviews`: the counted model's reviews
    (`model_reviews`), read only when the policy counts a model: a row it has not reviewed is then
    not measured."""
    axes = row.acceptance
    if policy.model_review and axes:
        review = (reviews or {}).get(row.key())
        axes = {
            **axes,
            MODEL_REVIEW: None
            if review is None
            else {
                "model": review.model,
                "verdict": str(review.verdict),
                "reasoning": review.reasoning,
                "readable": review.readable,
            },
        }
    acceptance, reasons, evidence = decide(bool(row.resolved), axes, policy.model_dump())
    return Verdict(acceptance, reasons, evidence)


def tell(verdict: Verdict) -> str:
    """One line for a reader: "accepted", "not measured", or "not accepted: deleted tests (tests/x.py)"."""
    if verdict.acceptance is not Acceptance.not_accepted:
        return verdict.acceptance.value.replace("_", " ")
    parts = []
    for reason in verdict.reasons:
        ev = verdict.evidence.get(reason)
        if isinstance(ev, list):
            shown = [_one(e) for e in ev[:3]]
            more = f" and {len(ev) - 3} more" if len(ev) > 3 else ""
            parts.append(f"{reason} ({'; '.join(shown)}{more})")
        elif ev:
            parts.append(f"{reason} ({ev})")
        else:
            parts.append(reason)
    return "not accepted: " + ", ".join(parts)


def _one(evidence: Any) -> str:
    """One piece of an axis's evidence: a path, a line of a file, or a check's finding."""
    if isinstance(evidence, dict) and "rule" in evidence:
        times = f" (x{evidence['count']})" if evidence.get("count", 1) > 1 else ""
        return f"{evidence.get('check')} {evidence['rule']} in {evidence.get('file')}: {evidence.get('message')}{times}"
    if isinstance(evidence, dict):
        return f"{evidence.get('path')}: {evidence.get('line')}"
    return str(evidence)


# ------------------------------------------------------------------------------------ figures


class ConfigAcceptance(BaseModel):
    """One configuration's acceptance beside its resolution (final attempts of scored trials)."""

    config: str
    agent: str = ""
    run_dir: str = ""
    policy: str = ""
    trials: int = 0
    resolved: int = 0
    accepted: int = 0
    not_measured: int = (
        0  # resolved trials whose grade has no axes (graded before grader 9, or its own checks could not run)
    )
    resolved_not_accepted: int = 0
    resolve_rate: Interval = Field(default_factory=Interval)
    accept_rate: Interval = Field(default_factory=Interval)  # null when a resolved trial is not measured
    reasons: dict[str, int] = Field(default_factory=dict)  # reason -> resolved trials it refused
    examples: dict[str, list[str]] = Field(default_factory=dict)  # reason -> a few "task (repeat r): evidence"
    tasks_not_accepted: dict[str, list[str]] = Field(default_factory=dict)  # task -> reasons (resolved trials)
    task_counts: dict[str, list[int]] = Field(default_factory=dict)  # task -> [accepted, resolved] trials


def config_acceptance(
    cfg: ConfigRows, policy: Policy = DEFAULT_POLICY, settings: BootstrapSettings | None = None
) -> ConfigAcceptance:
    settings = settings or BootstrapSettings()
    scored = [t for t in trials_of(cfg.rows) if t.scored]
    reviews = model_reviews(cfg.run_dir, cfg.rows, policy)
    agents = {r.agent for r in cfg.rows}
    out = ConfigAcceptance(
        config=cfg.name,
        agent=agents.pop() if len(agents) == 1 else "",
        run_dir=str(cfg.run_dir),
        policy=policy.describe(),
        trials=len(scored),
    )
    for trial in scored:
        final = trial.final
        if final is None or not final.resolved:
            continue
        out.resolved += 1
        verdict = judge(final, policy, reviews)
        counts = out.task_counts.setdefault(final.task_id, [0, 0])
        counts[0] += verdict.accepted
        counts[1] += 1
        if verdict.acceptance is Acceptance.not_measured:
            out.not_measured += 1
        elif verdict.accepted:
            out.accepted += 1
        else:
            out.resolved_not_accepted += 1
            said = out.tasks_not_accepted.setdefault(final.task_id, [])
            said += [r for r in verdict.reasons if r not in said]
            for reason in verdict.reasons:
                out.reasons[reason] = out.reasons.get(reason, 0) + 1
                examples = out.examples.setdefault(reason, [])
                if len(examples) < 3:
                    examples.append(
                        f"{final.task_id} (repeat {final.repeat}): {tell(Verdict(verdict.acceptance, [reason], verdict.evidence)).split(': ', 1)[1]}"
                    )
    out.resolve_rate = wilson(out.resolved, out.trials, settings.confidence_level)
    if out.not_measured:
        unreviewed = f", or not reviewed by {policy.model_review}" if policy.model_review else ""
        out.accept_rate = Interval(
            note=f"not measured: {out.not_measured} resolved trial(s) graded before grader 9, or its own checks could not run{unreviewed}"
        )
    else:
        out.accept_rate = wilson(out.accepted, out.trials, settings.confidence_level)
    return out


def acceptance_figures(
    configs: list[ConfigRows], policy: Policy = DEFAULT_POLICY, settings: BootstrapSettings | None = None
) -> list[ConfigAcceptance]:
    return [config_acceptance(c, policy, settings) for c in configs]


def as_accepted(
    rows: list[ResultRow], policy: Policy = DEFAULT_POLICY, *, where: str = "", run_dir: Path | str | None = None
) -> list[ResultRow]:
    """The rows with `resolved` meaning *accepted* under `policy` (their outcome kept): every rate,
    interval and paired statistic computed on them is the acceptance rate's (`--metric accept`).
    `run_dir`: the run folder whose model reviews a policy that counts a model reads.
    Raises ReportInputError when a resolved row was never measured (no axes: graded before grader 9,
    or its own checks could not run, or the counted model has not reviewed it)."""
    out, unmeasured = [], []
    reviews = model_reviews(run_dir, rows, policy) if run_dir else {}
    for row in rows:
        if row.outcome in NOT_SCORED or not row.resolved:
            out.append(row)
            continue
        verdict = judge(row, policy, reviews)
        if verdict.acceptance is Acceptance.not_measured:
            unmeasured.append(f"{row.task_id} (repeat {row.repeat})")
        out.append(row.model_copy(update={"resolved": verdict.accepted}))
    if unmeasured:
        raise NotMeasured(
            f"acceptance is not measured for {len(unmeasured)} resolved attempt(s){' of ' + where if where else ''}: "
            + ", ".join(unmeasured[:5])
            + (" ..." if len(unmeasured) > 5 else "")
            + (
                f" (no axes, or no readable review by {policy.model_review}, whose verdict the policy counts: "
                f"`wholeloop review RUN --review-model {policy.model_review}` reviews them)"
                if policy.model_review
                else ""
            )
        )
    return out


def accept_configs(configs: list[ConfigRows], policy: Policy = DEFAULT_POLICY) -> list[ConfigRows]:
    """`as_accepted` over each configuration's rows (for `--metric accept`)."""
    return [
        ConfigRows(
            c.name,
            c.label,
            c.run_dir,
            c.manifest,
            as_accepted(c.rows, policy, where=str(c.run_dir), run_dir=c.run_dir),
            c.retried,
        )
        for c in configs
    ]


class NotMeasured(ReportInputError):
    """`--metric accept` over rows graded before the acceptance axes existed."""

    hint = (
        "Regrade the run (`wholeloop regrade RUN --out NEW`) so its grades record the acceptance axes, "
        "or use --metric resolve."
    )


__all__ = [
    "AXES",
    "MODEL_REJECTS",
    "NOT_RESOLVED",
    "TOO_BIG",
    "new_findings",
    "DEFAULT_POLICY",
    "ConfigAcceptance",
    "NotMeasured",
    "Policy",
    "Verdict",
    "Agreement",
    "accept_configs",
    "agreement",
    "acceptance_figures",
    "as_accepted",
    "config_acceptance",
    "judge",
    "load_policy",
    "model_reviews",
    "tell",
]


# ---------------------------------------------------------------------- human verdicts

KAPPA_MIN_N = 20  # below this many verdicts, kappa is not told ("n < 20")


@dataclass
class Agreement:
    """Automatic acceptance against human verdicts (RUN/reviews.jsonl): one pair per reviewer's
    current verdict on a measured attempt; "unsure" verdicts and unmeasured rows are counted apart."""

    both_accept: int = 0
    both_reject: int = 0
    policy_only: int = 0  # the policy accepted, the reviewer rejected
    human_only: int = 0  # the reviewer accepted, the policy did not
    unsure: int = 0
    not_measured: int = 0
    kappa: float | None = None
    interval: tuple[float, float] | None = None  # 95 %, normal approximation; None below KAPPA_MIN_N
    disagreements: list[dict[str, Any]] = field(default_factory=list)

    @property
    def n(self) -> int:
        return self.both_accept + self.both_reject + self.policy_only + self.human_only

    def tell(self) -> str:
        """One line: the counts, and kappa with its interval or "n < 20"."""
        agree = self.both_accept + self.both_reject
        head = f"policy and reviewers agree on {agree}/{self.n}"
        extra = f" ({self.unsure} unsure, {self.not_measured} not measured)" if self.unsure or self.not_measured else ""
        if self.kappa is None or self.interval is None:
            return f"{head}{extra}; kappa: n < {KAPPA_MIN_N}"
        lo, hi = self.interval
        return f"{head}{extra}; Cohen's kappa {self.kappa:.2f} [{lo:.2f}, {hi:.2f}]"

    def as_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "both_accept": self.both_accept,
            "both_reject": self.both_reject,
            "policy_accepts_reviewer_rejects": self.policy_only,
            "reviewer_accepts_policy_rejects": self.human_only,
            "unsure": self.unsure,
            "not_measured": self.not_measured,
            "kappa": self.kappa,
            "kappa_interval": list(self.interval) if self.interval else None,
            "disagreements": self.disagreements,
        }


def cohen_kappa(a: int, b: int, c: int, d: int) -> tuple[float, tuple[float, float]] | None:
    """Cohen's kappa of a 2x2 table (a: both yes, d: both no, b and c: the two disagreements)
    with a 95 % interval from its large-sample standard error; None when n is 0 or kappa is
    undefined (both raters always say the same one thing)."""
    n = a + b + c + d
    if n == 0:
        return None
    po = (a + d) / n
    pe = ((a + b) / n) * ((a + c) / n) + ((c + d) / n) * ((b + d) / n)
    if pe >= 1:
        return None
    kappa = (po - pe) / (1 - pe)
    se = (po * (1 - po) / (n * (1 - pe) ** 2)) ** 0.5
    return kappa, (max(-1.0, kappa - 1.96 * se), min(1.0, kappa + 1.96 * se))


def agreement(
    rows: list[ResultRow],
    reviews: dict,
    policy: Policy = DEFAULT_POLICY,
    *,
    into: Agreement | None = None,
    models: ModelVerdicts | None = None,
) -> Agreement:
    """The agreement of `policy` with the current human verdicts (`RunFolder.current_reviews()`)
    over `rows` (the latest rows): counts, Cohen's kappa from KAPPA_MIN_N verdicts on, and each
    disagreement (task, configuration, repeat, attempt, reviewer, both verdicts, the reason).
    `into`: add to an earlier run folder's agreement (kappa is computed over all of them);
    `models`: the counted model's reviews when the policy counts one (`model_reviews`)."""
    out = into or Agreement()
    for row in rows:
        for reviewer, review in sorted(reviews.get(row.key(), {}).items()):
            if review.verdict == "unsure":
                out.unsure += 1
                continue
            auto = judge(row, policy, models)
            if auto.acceptance is Acceptance.not_measured:
                out.not_measured += 1
                continue
            human = review.verdict == "accept"
            if auto.accepted and human:
                out.both_accept += 1
            elif not auto.accepted and not human:
                out.both_reject += 1
            else:
                if auto.accepted:
                    out.policy_only += 1
                else:
                    out.human_only += 1
                out.disagreements.append(
                    {
                        "task_id": row.task_id,
                        "config": row.config,
                        "repeat": row.repeat,
                        "attempt": row.attempt,
                        "reviewer": reviewer,
                        "policy": tell(auto),
                        "reviewer_verdict": str(review.verdict),
                        "reason": review.reason,
                    }
                )
    out.kappa = out.interval = None
    if out.n >= KAPPA_MIN_N:
        found = cohen_kappa(out.both_accept, out.policy_only, out.human_only, out.both_reject)
        if found is not None:
            out.kappa, out.interval = found
    return out


# ---------------------------------------------------------------------- model reviews


def model_agreement(rows: list[ResultRow], humans: dict, models: dict, *, into: dict | None = None) -> dict:
    """Per reviewing model, its reviews (`RunFolder.current_model_reviews()`) of `rows` and how it
    agrees with the current human verdicts (`current_reviews()`) where both exist: one pair per
    human verdict on an attempt the model reviewed; "unsure" on either side counted apart; Cohen's
    kappa from KAPPA_MIN_N pairs on. A model's verdict is never an acceptance verdict.
    `into`: add to an earlier run folder's figures (recomputed over all)."""
    out = into if into is not None else {}
    for row in rows:
        for name, review in sorted(models.get(row.key(), {}).items()):
            m = out.setdefault(
                name,
                {
                    "model": name,
                    "reviews": 0,
                    "accept": 0,
                    "reject": 0,
                    "unsure": 0,
                    "unreadable": 0,
                    "cost_usd": 0.0,
                    "rubric_versions": [],
                    "pairs": Agreement(),
                },
            )
            m["reviews"] += 1
            m[str(review.verdict)] += 1
            m["unreadable"] += not review.readable
            m["cost_usd"] = (
                None if m["cost_usd"] is None or review.cost_usd is None else m["cost_usd"] + review.cost_usd
            )
            if review.rubric_version not in m["rubric_versions"]:
                m["rubric_versions"].append(review.rubric_version)
            pairs: Agreement = m["pairs"]
            for reviewer, human in sorted(humans.get(row.key(), {}).items()):
                if "unsure" in (human.verdict, review.verdict):
                    pairs.unsure += 1
                    continue
                said, judged = review.verdict == "accept", human.verdict == "accept"
                if said and judged:
                    pairs.both_accept += 1
                elif not said and not judged:
                    pairs.both_reject += 1
                else:
                    if said:
                        pairs.policy_only += 1
                    else:
                        pairs.human_only += 1
                    pairs.disagreements.append(
                        {
                            "task_id": row.task_id,
                            "config": row.config,
                            "repeat": row.repeat,
                            "attempt": row.attempt,
                            "reviewer": reviewer,
                            "model_verdict": str(review.verdict),
                            "model_reasoning": review.reasoning,
                            "reviewer_verdict": str(human.verdict),
                            "reason": human.reason,
                        }
                    )
    for m in out.values():
        pairs = m["pairs"]
        pairs.kappa = pairs.interval = None
        if pairs.n >= KAPPA_MIN_N:
            found = cohen_kappa(pairs.both_accept, pairs.policy_only, pairs.human_only, pairs.both_reject)
            if found is not None:
                pairs.kappa, pairs.interval = found
    return out


def model_agreement_json(found: dict) -> list[dict]:
    """`model_agreement`'s figures as JSON: per model its counts and `humans` (the agreement with
    human verdicts: `n`, `both_accept`, `both_reject`, `model_accepts_reviewer_rejects`,
    `reviewer_accepts_model_rejects`, `unsure`, `kappa`, `kappa_interval`, `disagreements`, `said`)."""
    out = []
    for _, m in sorted(found.items()):
        pairs: Agreement = m["pairs"]
        agree = pairs.both_accept + pairs.both_reject
        if not pairs.n:
            said = "no human verdict on the attempts it reviewed" + (
                f" ({pairs.unsure} unsure)" if pairs.unsure else ""
            )
        elif pairs.kappa is None or pairs.interval is None:
            said = f"agrees with reviewers on {agree}/{pairs.n}; kappa: n < {KAPPA_MIN_N}"
        else:
            lo, hi = pairs.interval
            said = f"agrees with reviewers on {agree}/{pairs.n}; Cohen's kappa {pairs.kappa:.2f} [{lo:.2f}, {hi:.2f}]"
        out.append(
            {
                **{k: v for k, v in m.items() if k != "pairs"},
                "humans": {
                    "n": pairs.n,
                    "both_accept": pairs.both_accept,
                    "both_reject": pairs.both_reject,
                    "model_accepts_reviewer_rejects": pairs.policy_only,
                    "reviewer_accepts_model_rejects": pairs.human_only,
                    "unsure": pairs.unsure,
                    "kappa": pairs.kappa,
                    "kappa_interval": list(pairs.interval) if pairs.interval else None,
                    "disagreements": pairs.disagreements,
                    "said": said,
                },
            }
        )
    return out
