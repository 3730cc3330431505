"""What the agent is told after an attempt that was not accepted, before it tries again.

Modes: `none` (only that the patch was not accepted), `visible` (the output of the task's visible
test command, run in the agent's container), `hidden` (names and failure messages of the hidden
tests that failed, as aider's benchmark does), taken from the parsed test report.
"""

from __future__ import annotations

from typing import Literal

from sandbox import Sandbox

from ..parsers import MISSING, TestReport
from ..tasks import Task
from .outcome import Grade

FeedbackMode = Literal["none", "visible", "hidden"]
MODES = ("none", "visible", "hidden")
MAX_LINES = 80

_HEAD = "Your patch was not accepted (outcome: {outcome}). Keep working on the issue and call submit again."


def feedback_text(mode: FeedbackMode, task: Task, grade: Grade, report: TestReport | None,
                  sandbox: Sandbox | None) -> str:
    text = _HEAD.format(outcome=grade.outcome.value)
    if mode == "visible" and task.test_command and sandbox is not None:
        result = sandbox.exec(task.test_command)
        lines = result.combined().splitlines()[-MAX_LINES:]
        text += f"\n\nOutput of `{task.test_command}` (exit code {result.returncode}):\n" + "\n".join(lines)
    elif mode == "hidden":
        failing = grade.failing()
        messages = report.messages if report is not None else {}
        statuses = report.statuses if report is not None else {}
        details = [f"{statuses.get(t, 'FAILED')} {t} - {messages[t]}" for t in failing if t in messages]
        absent = " (not in the test output)"
        text += "\n\nThese hidden tests failed:\n" + "\n".join(
            f"  {t}{absent if grade.tests.get(t) == MISSING else ''}" for t in failing[:MAX_LINES])
        if details:
            text += "\n\nTheir failure messages:\n" + "\n".join(details[:MAX_LINES])
    return text
