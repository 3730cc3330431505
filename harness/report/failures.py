"""Failure analysis: outcomes and stop reasons per configuration, and the hardest failures.

A *hardest failure* is a task that no configuration resolved in any repeat: every scored trial of
it, in every configuration that ran it, failed (infra errors are not failures and are left out; a
task with only infra errors is not listed). Each comes with the transcripts to read and the
``wholeloop show`` command that renders them.
"""

from __future__ import annotations

import shlex
from collections import Counter

from pydantic import BaseModel, Field

from .stats import ConfigRows, trials_of


class ConfigFailures(BaseModel):
    config: str
    outcomes: dict[str, int] = Field(default_factory=dict)  # final outcome of each trial
    stop_reasons: dict[str, int] = Field(default_factory=dict)  # why each trial's agent stopped (final attempt)
    attempt_outcomes: dict[str, int] = Field(default_factory=dict)  # every attempt row


class TranscriptRef(BaseModel):
    config: str
    run_dir: str
    repeat: int
    attempt: int
    outcome: str
    stop_reason: str = ""
    transcript_path: str = ""  # relative to run_dir
    patch_path: str = ""
    show_command: str = ""


class HardFailure(BaseModel):
    task_id: str
    configs: list[str] = Field(default_factory=list)
    trials: int = 0
    outcomes: dict[str, int] = Field(default_factory=dict)
    transcripts: list[TranscriptRef] = Field(default_factory=list)


class FailureFigures(BaseModel):
    configs: list[ConfigFailures] = Field(default_factory=list)
    hardest: list[HardFailure] = Field(default_factory=list)


def show_command(run_dir: str, task_id: str, config: str | None = None, repeat: int | None = None) -> str:
    cmd = ["wholeloop", "show", run_dir, task_id]
    if config is not None:
        cmd += ["--config", config]
    if repeat is not None:
        cmd += ["--repeat", str(repeat)]
    return shlex.join(cmd)


def config_failures(cfg: ConfigRows) -> ConfigFailures:
    finals = [t.final for t in trials_of(cfg.rows) if t.final is not None]  # the complete trials
    return ConfigFailures(
        config=cfg.name,
        outcomes=dict(Counter(r.outcome for r in finals).most_common()),
        stop_reasons=dict(Counter(r.stop_reason or "(none)" for r in finals).most_common()),
        attempt_outcomes=dict(Counter(r.outcome for r in cfg.rows).most_common()),
    )


def hardest_failures(configs: list[ConfigRows]) -> list[HardFailure]:
    seen: dict[str, HardFailure] = {}
    solved: set[str] = set()
    for cfg in configs:
        for trial in trials_of(cfg.rows):
            if not trial.scored or trial.final is None:  # (scored: it has a final row)
                continue
            if trial.resolved:
                solved.add(trial.task_id)
                continue
            hard = seen.setdefault(trial.task_id, HardFailure(task_id=trial.task_id))
            if cfg.name not in hard.configs:
                hard.configs.append(cfg.name)
            hard.trials += 1
            hard.outcomes[trial.final.outcome] = hard.outcomes.get(trial.final.outcome, 0) + 1
            for row in trial.attempts:
                hard.transcripts.append(
                    TranscriptRef(
                        config=cfg.label,
                        run_dir=str(cfg.run_dir),
                        repeat=row.repeat,
                        attempt=row.attempt,
                        outcome=row.outcome,
                        stop_reason=row.stop_reason,
                        transcript_path=row.transcript_path,
                        patch_path=row.patch_path,
                        show_command=show_command(str(cfg.run_dir), row.task_id, cfg.label, row.repeat),
                    )
                )
    return [h for tid, h in sorted(seen.items()) if tid not in solved]


def failure_figures(configs: list[ConfigRows]) -> FailureFigures:
    return FailureFigures(configs=[config_failures(c) for c in configs], hardest=hardest_failures(configs))


def hardest_failures_markdown(hardest: list[HardFailure], n_configs: int) -> str:
    """hardest_failures.md for the evidence pack: each task, its outcomes, where to read why."""
    lines = [
        "# Hardest failures",
        "",
        f"Tasks that no configuration resolved in any repeat ({len(hardest)} task(s), "
        f"{n_configs} configuration(s)). Transcript paths are relative to their run folder.",
        "",
    ]
    if not hardest:
        lines.append("None: every task was resolved at least once.")
    for h in hardest:
        outcomes = ", ".join(f"{k} x{v}" for k, v in h.outcomes.items())
        lines += [
            f"## {h.task_id}",
            "",
            f"- failed {h.trials} trial(s) in: {', '.join(h.configs)}",
            f"- outcomes: {outcomes}",
            "",
        ]
        for ref in h.transcripts:
            lines.append(
                f"- `{ref.config}` repeat {ref.repeat} attempt {ref.attempt}: {ref.outcome} "
                f"(stop: {ref.stop_reason or '-'}) — run `{ref.run_dir}`, transcript "
                f"`{ref.transcript_path}`, patch `{ref.patch_path}`  "
            )
            lines.append(f"  `{ref.show_command}`")
        lines.append("")
    return "\n".join(lines)
