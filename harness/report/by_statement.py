"""Each configuration's resolve rate split by the class of the tasks' problem statements (`issue`,
`commit_message`, `thin`, `leaks_fix`; `unclassified` for a task whose spec has none, or a run
written before the classes): a score on thin or leaking statements measures the statement as much
as the agent (docs/tasks.md). The class is read from the run's manifest, as the run saw the spec.
Pure: no Docker.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from .dating import Side
from .stats import ConfigRows, trials_of, wilson

UNCLASSIFIED = "unclassified"
ORDER = ("issue", "commit_message", "thin", "leaks_fix", UNCLASSIFIED)


class StatementSplit(BaseModel):
    config: str
    classes: dict[str, Side] = Field(default_factory=dict)  # in ORDER, only the classes the run has

    def classified(self) -> bool:
        """Whether any task of the run has a class (else there is nothing to split)."""
        return any(name != UNCLASSIFIED for name in self.classes)


def statement_split(cfg: ConfigRows) -> StatementSplit:
    quality = {tid: info.statement_quality or UNCLASSIFIED for tid, info in cfg.manifest.tasks.items()}
    sides: dict[str, tuple[Side, set[str]]] = {}
    for trial in trials_of(cfg.rows):
        if not trial.scored:
            continue
        side, tasks = sides.setdefault(quality.get(trial.task_id, UNCLASSIFIED), (Side(), set()))
        side.trials += 1
        side.resolved += trial.resolved
        tasks.add(trial.task_id)
    out = StatementSplit(config=cfg.name)
    for name in sorted(sides, key=lambda n: ORDER.index(n) if n in ORDER else len(ORDER)):
        side, tasks = sides[name]
        side.tasks = len(tasks)
        side.rate = wilson(side.resolved, side.trials)
        out.classes[name] = side
    return out


def statement_figures(configs: list[ConfigRows]) -> list[StatementSplit]:
    return [statement_split(c) for c in configs]
