"""Control checks: whether a report's numbers can be trusted at all, said before any number.

The controls are agents whose result is known in advance: `gold` (the reference patch) must
resolve every task in every trial, `noop` (no change) none. A control that misses says the suite,
its environments or its grading are broken (a test id that changes with the hash seed, a missing
optional dependency, a flaky test), so every other configuration's numbers over the same tasks are
suspect: the report says so at its top (terminal, HTML, the evidence pack's markdown) and
`wholeloop run --agent gold` exits 1.

One mechanism: a check is a function of a configuration's figures returning a `ControlFailure` or
None, listed in `CHECKS`. A later check (say, "gold not accepted" by an acceptance policy) is one
more function in that tuple; every surface shows it without change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel, Field

from .acceptance import ConfigAcceptance
from .stats import ConfigStats, TaskRate


class ControlTask(BaseModel):
    """A task a control got wrong: how many of its trials came out as the control expects."""

    task_id: str
    expected: int  # trials that came out as the control must (gold: resolved; noop: not resolved)
    trials: int  # trials that count (infrastructure errors left out: they are the machine's)


class ControlFailure(BaseModel):
    """A control that did not do what it must, in one configuration of a report."""

    check: str  # which check: gold-resolves-all, noop-resolves-none, ...
    config: str
    run_dir: str
    tasks: list[ControlTask] = Field(default_factory=list)
    message: str  # one line, ready to print: "the control failed: ..."


CheckFn = Callable[[ConfigStats], ControlFailure | None]


def _shown(tasks: list[ControlTask], limit: int = 5) -> str:
    said = ", ".join(f"task {t.task_id}, {t.expected} of {t.trials}" for t in tasks[:limit])
    return said + (f" and {len(tasks) - limit} more task(s)" if len(tasks) > limit else "")


def _trials(cfg: ConfigStats, task: TaskRate) -> int:
    """A task's trials that count for a control: scored ones and task errors; infrastructure
    errors never (not even under --strict, which counts them in the rates): exit 3 says those."""
    return task.trials - (task.infra_errors if cfg.strict else 0) + task.task_errors


def gold_resolves_all(cfg: ConfigStats) -> ControlFailure | None:
    """`gold` must resolve every task in every trial (a task error counts as a miss: the task's
    hidden tests do not even apply)."""
    if cfg.agent != "gold":
        return None
    missed = [
        ControlTask(task_id=t.task_id, expected=t.resolved, trials=n)
        for t in cfg.per_task
        if t.resolved < (n := _trials(cfg, t))
    ]
    if not missed:
        return None
    return ControlFailure(
        check="gold-resolves-all",
        config=cfg.name,
        run_dir=cfg.run_dir,
        tasks=missed,
        message=(
            f"the control failed: gold ({cfg.name}) did not resolve every task: {_shown(missed)} resolved; "
            "do not trust its results (nor any other configuration's on these tasks) until the tasks are "
            "checked again (`wholeloop tasks check --force`)"
        ),
    )


def noop_resolves_none(cfg: ConfigStats) -> ControlFailure | None:
    """`noop` must resolve no task: a task it resolves has hidden tests that pass without a fix."""
    if cfg.agent != "noop":
        return None
    passed = [
        ControlTask(task_id=t.task_id, expected=_trials(cfg, t) - t.resolved, trials=_trials(cfg, t))
        for t in cfg.per_task
        if t.resolved
    ]
    if not passed:
        return None
    return ControlFailure(
        check="noop-resolves-none",
        config=cfg.name,
        run_dir=cfg.run_dir,
        tasks=passed,
        message=(
            f"the control failed: noop ({cfg.name}) resolved tasks it cannot: {_shown(passed)} unresolved; "
            "do not trust its results (nor any other configuration's on these tasks)"
        ),
    )


CHECKS: tuple[CheckFn, ...] = (gold_resolves_all, noop_resolves_none)


def gold_accepted(acc: ConfigAcceptance) -> ControlFailure | None:
    """`gold` must be accepted wherever it resolves, under the report's acceptance policy: a gold
    patch the policy refuses says the policy (or the task) is wrong, and every acceptance figure over
    that task is suspect (docs/acceptance.md)."""
    if acc.agent != "gold" or not acc.tasks_not_accepted:
        return None
    # of each task's resolved trials, those the policy accepted
    tasks = [
        ControlTask(task_id=t, expected=acc.task_counts[t][0], trials=acc.task_counts[t][1])
        for t in sorted(acc.tasks_not_accepted)
    ]
    why = "; ".join(f"{t}: {', '.join(r)}" for t, r in sorted(acc.tasks_not_accepted.items())[:5])
    return ControlFailure(
        check="gold-accepted",
        config=acc.config,
        run_dir=acc.run_dir,
        tasks=tasks,
        message=(
            f"the control failed: gold ({acc.config}) is not accepted by the acceptance policy on "
            f"{len(tasks)} task(s) ({why}); do not trust the accept rates on these tasks until the policy "
            "or the tasks are fixed"
        ),
    )


ACCEPTANCE_CHECKS: tuple[Callable[[ConfigAcceptance], ControlFailure | None], ...] = (gold_accepted,)


def control_checks(configs: Sequence[ConfigStats], acceptance: Sequence[ConfigAcceptance] = ()) -> list[ControlFailure]:
    """Every failed control check over a report's configurations (empty: the controls held, or
    there was no control in the report); `acceptance`: the configurations' acceptance figures,
    which the acceptance checks read."""
    found = [failure for cfg in configs for check in CHECKS if (failure := check(cfg)) is not None]
    return found + [f for acc in acceptance for check in ACCEPTANCE_CHECKS if (f := check(acc)) is not None]


def markdown(failures: Sequence[ControlFailure]) -> str:
    """The failures as the top of a markdown file ("" when none)."""
    if not failures:
        return ""
    return "".join(f"> **{f.message}**\n>\n" for f in failures).removesuffix(">\n") + "\n"
