"""What the agent is told after an attempt that was not accepted, before it tries again.

Modes: `none` (only that the patch was not accepted), `visible` (the output of the task's visible
test command, run in the agent's container), `hidden` (what the grader itself knows of the hidden
tests that failed: their ids, the type of what they raised and their failure messages from the
structured report, with every line that occurs in the hidden test files removed and each message
capped). The messages are written by the code under test, so they can still carry what that code
read (see docs/grading.md); lines of the hidden tests never pass through as they are.
"""

from __future__ import annotations

from typing import Literal

from sandbox import Sandbox

from ..parsers import MISSING, NOT_RUN, TestReport
from ..tasks import Task
from .outcome import Grade

FeedbackMode = Literal["none", "visible", "hidden"]
MODES = ("none", "visible", "hidden")
MAX_LINES = 80
MESSAGE_LINES = 3  # per failing test
MESSAGE_CHARS = 200  # per line
MIN_MATCH = 8  # a hidden line at least this long is removed wherever it occurs inside a message line

_HEAD = "Your patch was not accepted (outcome: {outcome}). Keep working on the issue and call submit again."


def scrub_messages(messages: dict[str, str], hidden_text: list[str]) -> dict[str, str]:
    """Failure messages without any line that occurs in the hidden test files (`hidden_text`, their
    contents), at most MESSAGE_LINES lines of MESSAGE_CHARS characters each."""
    lines = {line.strip() for text in hidden_text for line in text.splitlines() if line.strip()}
    long = [line for line in lines if len(line) >= MIN_MATCH]
    out: dict[str, str] = {}
    for test, message in messages.items():
        kept = []
        for line in message.splitlines():
            bare = line.strip()
            if not bare or bare in lines or any(h in bare for h in long):
                continue
            kept.append(bare[:MESSAGE_CHARS] + (" [...]" if len(bare) > MESSAGE_CHARS else ""))
            if len(kept) == MESSAGE_LINES:
                break
        out[test] = "\n".join(kept)
    return out


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
        kinds = report.exception_types if report is not None else {}
        statuses = report.statuses if report is not None else {}
        absent = " (not in the test output)"
        listed = [f"  {t}" + (f" ({kinds[t]})" if kinds.get(t) else "") + (absent if grade.tests.get(t) == MISSING else "")
                  for t in failing[:MAX_LINES]]
        if listed:
            text += "\n\nThese hidden tests failed:\n" + "\n".join(listed)
        not_run = [t for t in task.fail_to_pass if grade.tests.get(t) == NOT_RUN]  # never ran: not "failed"
        if not_run:
            text += ("\n\nNo hidden test ran (the patch is empty); these must pass:\n"
                     + "\n".join(f"  {t}" for t in not_run[:MAX_LINES]))
        details = [f"{statuses.get(t, 'FAILED')} {t} - " + messages[t].replace("\n", " | ")
                   for t in failing if messages.get(t)]
        if details:
            text += "\n\nTheir failure messages:\n" + "\n".join(details[:MAX_LINES])
    return text
