"""The words a result is told in: outcomes (grading) and stop reasons (the agent). A leaf.

Four layers describe one attempt, each with its own vocabulary and type (docs/outcomes.md); a
word of one layer is never used to mean something in another (the one spelling two layers share,
`infra_error`, names the same event in both: the machine failed under the agent):

- **outcome** -- what grading decided about the patch (`Outcome`); the only layer rates count.
- **stop reason** -- why the agent's turn ended (`StopReason`); says nothing about the patch.
- **acceptance** -- whether a reviewer's policy accepts a resolved patch: a policy applied at
  report time over facts recorded at grading (not a value stored in a row).
- **cause** -- why an attempt that did not resolve failed: analysis that refines an outcome and a
  stop reason, never repeats them.

Records store the values as plain strings (`results.jsonl` is read by other tools), so both are
`StrEnum`s: a member *is* its value (`Outcome.resolved == "resolved"`, `f"{Outcome.resolved}"` is
"resolved").
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    """What grading decided about one attempt's patch (docs/outcomes.md, "Outcomes")."""

    resolved = "resolved"
    unresolved = "unresolved"
    regression = "regression"  # a PASS_TO_PASS test broke
    empty_patch = "empty_patch"
    patch_apply_failed = "patch_apply_failed"
    test_timeout = "test_timeout"
    environment_broken = "environment_broken"  # the patch made one of grading's own steps fail (it passes on the base)
    infra_error = "infra_error"  # the machine failed: never counted as the agent's failure, retried
    task_error = "task_error"  # the task's own inputs are wrong (its gold or test patch does not apply):
    #                            never counted as the agent's failure, never retried; the task author's to fix
    ungraded = "ungraded"  # an imported trajectory (`wholeloop import atif`) with no patch graded: in no rate


#: Outcomes that say nothing about the agent: left out of every rate.
NOT_SCORED: frozenset[Outcome] = frozenset({Outcome.infra_error, Outcome.task_error, Outcome.ungraded})
#: Final outcomes a resume tries again (the machine's failures; a task's own error would fail again).
REDO_OUTCOMES: frozenset[Outcome] = frozenset({Outcome.infra_error})


class StopReason(StrEnum):
    """Why an agent's turn ended (docs/outcomes.md, "Stop reasons").

    Records keep the reason as a string: an agent registered from another package may end with a
    reason of its own, which reports show as it is.
    """

    submitted = "submitted"  # the agent said it is done (submit tool, a CLI that exited 0, gold)
    no_tool_call = "no_tool_call"  # the model answered without calling a tool
    step_limit = "step_limit"
    time_limit = "time_limit"
    token_limit = "token_limit"
    cost_limit = "cost_limit"
    context_length = "context_length"  # the conversation outgrew the model's context
    disk_limit = "disk_limit"  # the agent's processes filled the container's disk limit
    memory_limit = "memory_limit"  # ...or its memory: the kernel's OOM killer stopped the container
    container_broken = "container_broken"  # the agent left its container unusable
    agent_error = "agent_error"  # an external CLI failed
    model_error = "model_error"  # the provider refused or kept failing
    infra_error = "infra_error"  # the container or engine failed under the agent
    error = "error"  # the unit failed before the agent's turn could be graded
    interrupted = "interrupted"  # the run was stopped (Ctrl-C): no row, redone on resume
    no_gold_patch = "no_gold_patch"  # the gold control on a task without a gold patch
    gold_patch_failed = "gold_patch_failed"  # the gold control's patch did not apply
    noop = "noop"  # the noop control


class Acceptance(StrEnum):
    """Whether a resolved patch is accepted under a policy (harness.report.acceptance), decided at
    report time from the axes grading recorded; never stored in a row."""

    accepted = "accepted"  # resolved, and no axis the policy counts has a finding
    not_accepted = "not_accepted"  # not resolved, or an axis the policy counts has a finding
    not_measured = "not_measured"  # resolved, graded before the axes were recorded (grader < 8): never false


class ReviewVerdict(StrEnum):
    """What a human reviewer decided about one attempt's patch (`wholeloop review`), recorded in
    RUN/reviews.jsonl; compared with `Acceptance` in reports, never mixed into it."""

    accept = "accept"
    reject = "reject"
    unsure = "unsure"


#: The budget's limits, as stop reasons.
LIMITS: frozenset[StopReason] = frozenset(
    {StopReason.step_limit, StopReason.time_limit, StopReason.token_limit, StopReason.cost_limit}
)


class Cause(StrEnum):
    """Why an attempt that did not resolve failed (docs/failures.md): analysis of what was
    recorded, refining an outcome and a stop reason, never repeating them. Each has its rule in
    `harness.report.causes` (versioned by its RULES_VERSION)."""

    never_ran_tests = "never_ran_tests"  # no test run at all in the attempt
    submitted_failing = "submitted_failing"  # ran the tests, submitted while the last run was red
    broke_syntax_or_import = "broke_syntax_or_import"  # a syntax or import error appeared after an edit
    edited_elsewhere = "edited_elsewhere"  # the patch touches files outside gold's footprint, none inside
    partial_fix = "partial_fix"  # k of n FAIL_TO_PASS tests pass, 0 < k < n
    looped = "looped"  # the same normalised command or edit, repeated
    gave_up_early = "gave_up_early"  # submitted with no change, or after few steps
    environment_confusion = "environment_confusion"  # tried to install, or hit missing modules
    tool_misuse = "tool_misuse"  # tool calls refused again and again
