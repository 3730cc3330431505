"""The acceptance decision over recorded axes (plain dicts, as grading wrote them): the one place a
policy's rules turn axes into accepted, not accepted or not measured. No pydantic and no records:
`wholeloop history` judges its listing with it (its start-up time is measured);
`harness.report.acceptance.judge` is this decision over a row (docs/acceptance.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..vocabulary import Acceptance

NOT_RESOLVED = "not resolved"
# the axes a policy can count, in the order reasons are told, with how a reason reads
AXES = {
    "tests_deleted": "deleted tests",
    "tests_weakened": "weakened tests",
    "outside_scope": "files outside the fix's scope",
    "top_level_added": "new top-level files",
    "binary_files": "binary files",
    "debug_leftovers": "debugging left in",
    "own_checks": "new findings of the repository's own checks",
}
TOO_BIG = "larger than allowed against gold"
MODEL_REJECTS = "rejected by the model review"
# the default policy's rules: every axis counts, no size limit, no model's verdict counted
# (harness.report.acceptance.Policy())
DEFAULT_RULES: dict[str, Any] = {**dict.fromkeys(AXES, True), "max_size_ratio": None, "model_review": None}
# the key of the axes under which a report puts the counted model's review of the attempt's current
# patch ({model, verdict, reasoning, readable}; None: that model has not reviewed it). Never recorded
# by grading: the review is read from RUN/model_reviews.jsonl when the policy counts a model.
MODEL_REVIEW = "model_review"


def new_findings(axes: Mapping[str, Any]) -> list[dict]:
    """The new findings of the repository's own checks in recorded axes (none when not measured)."""
    checks = axes.get("own_checks")
    return list(checks.get("new") or []) if isinstance(checks, dict) else []


def decide(
    resolved: bool, axes: Mapping[str, Any] | None, rules: Mapping[str, Any] = DEFAULT_RULES
) -> tuple[Acceptance, list[str], dict[str, Any]]:
    """(the verdict, its reasons, reason -> evidence) of one attempt under `rules` (a policy's
    fields): an unresolved attempt is not accepted ("not resolved"); a resolved one without axes,
    or whose own checks were not measured when the rules count them, or that the counted model
    (`rules["model_review"]`) has not reviewed readably (`axes["model_review"]`), is not measured;
    otherwise each counted axis with findings is a reason, and the counted model's reject one."""
    if not resolved:
        return Acceptance.not_accepted, [NOT_RESOLVED], {}
    if not axes:
        return Acceptance.not_measured, [], {}
    checks = axes.get("own_checks")
    if rules.get("own_checks") and (not isinstance(checks, dict) or checks.get("error")):
        return Acceptance.not_measured, [], {}  # graded before grader 9, or the checks could not run
    model = rules.get("model_review")
    review = axes.get(MODEL_REVIEW) if model else None
    if model and (not isinstance(review, dict) or not review.get("readable", True)):
        return Acceptance.not_measured, [], {}  # the model has not reviewed this patch, or gave no verdict
    reasons: list[str] = []
    evidence: dict[str, Any] = {}
    found = {**axes, "own_checks": new_findings(axes)}
    for key, said in AXES.items():
        if rules.get(key) and found.get(key):
            reasons.append(said)
            evidence[said] = found[key]
    ratio = axes.get("size_ratio")
    limit = rules.get("max_size_ratio")
    if limit and ratio is not None and ratio > limit:
        reasons.append(TOO_BIG)
        evidence[TOO_BIG] = (
            f"{ratio:g}x gold's changed lines ({axes.get('lines_changed')} vs {axes.get('gold_lines_changed')})"
        )
    if model and isinstance(review, dict) and review.get("verdict") == "reject":
        reasons.append(MODEL_REJECTS)
        said = " ".join(str(review.get("reasoning") or "no reasoning given").split())
        evidence[MODEL_REJECTS] = f"{model}: {said[:300]}{'...' if len(said) > 300 else ''}"
    return (Acceptance.not_accepted if reasons else Acceptance.accepted), reasons, evidence
