"""Models that need no provider: ``replay`` (a recorded run, turn by turn) and ``scripted``
(a Python list, for tests: fakes instead of mocks, as mini-swe-agent does).

Neither retries nor prices anything: a replayed Turn keeps the usage and cost it had when it was
recorded, so a replayed run reports what the original run spent; its latency and retry waits are
today's (none), so time limits and phase times stay true.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from .errors import ModelError, ReplayExhausted
from .types import Message, Settings, ToolCall, ToolSpec, Turn


def load_turns_jsonl(path: str | Path) -> list[Turn]:
    """The assistant turns in a JSONL file: either one Turn per line, or a wholeloop transcript
    (its `model_response` events are the turns; every other event is skipped)."""
    turns = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if "type" in data:  # a transcript event
                    if data["type"] != "model_response":
                        continue
                    data = {k: data[k] for k in _TURN_FIELDS if k in data}
                turns.append(Turn.model_validate(data))
            except ValueError as e:
                raise ModelError(f"{path}:{n}: not a recorded Turn or transcript event: {e}") from e
    return turns


_TURN_FIELDS = ("text", "tool_calls", "usage", "cost_usd", "latency_s", "retry_wait_s", "stop_reason", "model")


class ReplayModel:
    """Replays the assistant turns of a recording in order, whatever the messages say.

    The source is a recording file (Turn JSONL or a transcript), a folder of `<task-id>.jsonl`
    recordings, or a run folder (its transcripts); with a folder, the agent asks `for_task`.
    """

    provider = "replay"
    base_url: str | None = None

    def __init__(
        self,
        source: str | Path | Iterable[Turn | dict[str, Any]],
        *,
        loader: Callable[[str | Path], list[Turn]] = load_turns_jsonl,
        name: str | None = None,
    ) -> None:
        self.folder: Path | None = None
        self._loader = loader
        self.position = 0
        if isinstance(source, (str, Path)):
            self.name = f"replay:{source}"
            if Path(source).is_dir():
                self.folder, self.turns = Path(source), []
            elif not Path(source).is_file():
                raise ModelError(
                    f"no recording at {source}",
                    hint="give a Turn JSONL, a transcript, a folder of <task-id>.jsonl files or a run folder",
                )
            else:
                self.turns = list(loader(source))
        else:
            self.name = "replay:<memory>"
            self.turns = [t if isinstance(t, Turn) else Turn.model_validate(t) for t in source]
        if name is not None:  # how records name it (a Ray node names it as the driver does)
            self.name = name

    def for_task(self, task_id: str) -> ReplayModel:
        """A fresh replay of this task's recording (from a folder), or self for a single file."""
        if self.folder is None:
            return self
        candidates = [
            self.folder / f"{task_id}.jsonl",
            *sorted((self.folder / "attempts" / task_id).glob("*/rep-0/transcript.jsonl")),
        ]
        for path in candidates:
            if path.is_file():
                model = ReplayModel(path, loader=self._loader)
                model.name = self.name
                return model
        raise ReplayExhausted(
            f"{self.name}: no recording for task {task_id}",
            hint=f"expected {candidates[0]} or a run folder with that task's transcript",
        )

    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec | dict], settings: Settings | None = None
    ) -> Turn:
        if self.position >= len(self.turns):
            raise ReplayExhausted(
                f"{self.name}: the recording has {len(self.turns)} turns and turn {self.position + 1} was requested",
                hint="the run diverged from the recording (different prompt, tools or limits)",
            )
        turn = self.turns[self.position].model_copy(deep=True)
        self.position += 1
        # Tokens and cost are the recording's (what that run spent); time is today's: a replay
        # neither waits on a provider nor retries, and must not claim it did.
        turn.latency_s, turn.retry_wait_s, turn.retries = 0.0, 0.0, []
        return turn


#: A script step: a Turn; a str (a text-only turn); an exception to raise; or a callable
#: (messages, tools, settings) -> one of those, to answer depending on what the agent sent.
Step = Turn | str | BaseException | Callable[..., Any]


class ScriptedModel:
    """A model built from a Python list of steps, for tests. Records every call it received."""

    provider = "scripted"
    base_url: str | None = None

    def __init__(self, steps: Iterable[Step], *, name: str = "scripted") -> None:
        self.name = name
        self.steps = list(steps)
        self.calls: list[dict[str, Any]] = []

    def for_task(self, task_id: str) -> ScriptedModel:
        return self  # one script, whatever the task

    def complete(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec | dict], settings: Settings | None = None
    ) -> Turn:
        self.calls.append({"messages": [dict(m) for m in messages], "tools": list(tools), "settings": settings})
        if not self.steps:
            raise ReplayExhausted(
                f"{self.name}: the script ran out after {len(self.calls) - 1} turns",
                hint="add steps to the ScriptedModel",
            )
        step = self.steps.pop(0)
        if callable(step) and not isinstance(step, (Turn, BaseException)):
            step = step(list(messages), list(tools), settings)
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, str):
            return Turn(text=step, model=self.name)
        if isinstance(step, Turn):
            return step.model_copy(deep=True)
        raise TypeError(f"a script step must give a Turn, str or exception, not {type(step)}")


def tool_turn(name: str, arguments: dict[str, Any] | str, *, text: str = "", id: str | None = None) -> Turn:
    """A Turn making one tool call (a str ``arguments`` is raw, possibly malformed, JSON)."""
    call_id = id or f"call_{name}"
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Turn(text=text, tool_calls=[ToolCall.parse(call_id, name, raw)], stop_reason="tool_use", model="scripted")
