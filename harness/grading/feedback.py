"""What the agent is told after an attempt that was not accepted, before it tries again.

Modes: `none` (only that the patch was not accepted), `visible` (the output of the task's visible
test command, run in the agent's container), `hidden` (what the grader itself knows of the hidden
tests that failed: their ids, the type of what they raised and their failure messages from the
structured report, with every line that occurs in the hidden test files removed and each message
capped). The messages are written by the code under test, so they can still carry what that code
read (see docs/grading.md); lines of the hidden tests never pass through as they are.
"""

from __future__ import annotations

import re
from typing import Literal

from sandbox import Sandbox

from .. import pysyntax
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


MIN_LITERAL = 4  # a string or number literal of the hidden tests at least this long drops any message line holding it
# (a string of 2 or 3 characters does so when the line holds it quoted)
_LITERAL = re.compile(r"""[rRbBuUfF]{0,2}("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')|(?<![\w.])(\d[\d_.eExXa-fA-F+-]*)""")


def _normal(text: str) -> str:
    """Quotes made one: pytest writes a hidden test's `"a;b;c"` as `'a;b;c'` in its messages."""
    return text.replace('"', "'")


def hidden_literals(hidden_text: list[str]) -> set[str]:
    """The string and number literals of the hidden tests (MIN_LITERAL characters or more), as
    written and as Python reads them (their escapes decoded; a repr in a message may show either)."""
    out: set[str] = set()
    for text in hidden_text:
        for match in _LITERAL.finditer(text):
            quoted, number = match.group(1), match.group(2)
            forms = {number} if number else {quoted[1:-1]}
            if quoted:
                try:
                    value = pysyntax.literal_eval(quoted)
                    forms |= {str(value), repr(value)[1:-1]} if isinstance(value, str) else set()
                except (ValueError, SyntaxError):
                    pass
            out |= {_normal(f.strip()) for f in forms if f and len(f.strip()) >= MIN_LITERAL}
            # shorter strings (`"C#"`) only as a message quotes them: `'C#'`
            out |= {f"'{_normal(f)}'" for f in forms if quoted and 2 <= len(f) < MIN_LITERAL}
    return out


def scrub_messages(messages: dict[str, str], hidden_text: list[str]) -> dict[str, str]:
    """Failure messages without any line that occurs in the hidden test files (`hidden_text`, their
    contents) however quoted, nor any line holding one of their literals (pytest's assertion
    rewriting prints the compared values: the expected side is the hidden test's own data), at most
    MESSAGE_LINES lines of MESSAGE_CHARS characters each. The failing test's id and exception type
    are given apart (see feedback_text)."""
    lines = {_normal(line.strip()) for text in hidden_text for line in text.splitlines() if line.strip()}
    long = [line for line in lines if len(line) >= MIN_MATCH]
    literals = hidden_literals(hidden_text)
    out: dict[str, str] = {}
    for test, message in messages.items():
        kept = []
        for line in message.splitlines():
            bare = line.strip()
            if bare[:2] in ("E", "E "):  # pytest's marker of an error line: nothing of its own
                bare = bare[1:].strip()
            seen = _normal(bare)
            if not bare or seen in lines or any(h in seen for h in long) or any(lit in seen for lit in literals):
                continue
            kept.append(bare[:MESSAGE_CHARS] + (" [...]" if len(bare) > MESSAGE_CHARS else ""))
            if len(kept) == MESSAGE_LINES:
                break
        out[test] = "\n".join(kept)
    return out


def feedback_text(
    mode: FeedbackMode, task: Task, grade: Grade, report: TestReport | None, sandbox: Sandbox | None
) -> str:
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
        listed = [
            f"  {t}" + (f" ({kinds[t]})" if kinds.get(t) else "") + (absent if grade.tests.get(t) == MISSING else "")
            for t in failing[:MAX_LINES]
        ]
        if listed:
            text += "\n\nThese hidden tests failed:\n" + "\n".join(listed)
        not_run = [t for t in task.fail_to_pass if grade.tests.get(t) == NOT_RUN]  # never ran: not "failed"
        if not_run:
            text += "\n\nNo hidden test ran (the patch is empty); these must pass:\n" + "\n".join(
                f"  {t}" for t in not_run[:MAX_LINES]
            )
        details = [
            f"{statuses.get(t, 'FAILED')} {t} - " + messages[t].replace("\n", " | ") for t in failing if messages.get(t)
        ]
        if details:
            text += "\n\nTheir failure messages:\n" + "\n".join(details[:MAX_LINES])
    return text
