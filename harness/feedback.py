"""What the agent is told after an attempt that was not accepted, before it tries again.

Modes: `none` (only that the patch was not accepted), `visible` (the output of the task's visible
test command, run in the agent's container), `hidden` (names and failure messages of the hidden
tests that failed, as aider's benchmark does).
"""

from __future__ import annotations

from typing import Literal

from sandbox import Sandbox

from .grading import Grade
from .tasks import Task

FeedbackMode = Literal["none", "visible", "hidden"]
MODES = ("none", "visible", "hidden")
MAX_LINES = 80

_HEAD = "Your patch was not accepted (outcome: {outcome}). Keep working on the issue and call submit again."


def feedback_text(mode: FeedbackMode, task: Task, grade: Grade, test_output: str, sandbox: Sandbox | None) -> str:
    text = _HEAD.format(outcome=grade.outcome.value)
    if mode == "visible" and task.test_command and sandbox is not None:
        result = sandbox.exec(task.test_command)
        lines = result.combined().splitlines()[-MAX_LINES:]
        text += f"\n\nOutput of `{task.test_command}` (exit code {result.returncode}):\n" + "\n".join(lines)
    elif mode == "hidden":
        failing = grade.failing()
        details = [line for line in test_output.splitlines()
                   if line.startswith(("FAILED ", "ERROR ")) and any(t in line for t in failing)]
        text += "\n\nThese hidden tests failed:\n" + "\n".join(f"  {t}" for t in failing[:MAX_LINES])
        if details:
            text += "\n\nTheir failure messages:\n" + "\n".join(details[:MAX_LINES])
    return text
