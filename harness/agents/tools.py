"""The tools an agent can call, with their JSON schemas, implemented over a Sandbox.

Tools return a `ToolOutput`; problems the model can act on (a missing file, an `old_str` that
matches twice, a bad line number) are `ToolFailure`s with a message saying what to do next.
Sandbox errors are *not* handled here: the agent loop translates them, in exactly one place.
"""

from __future__ import annotations

import posixpath
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sandbox import FileOpError, Sandbox

from ..parsers import parse_run
from ..tasks import Task

#: Shell commands that run tests, besides the task's own test command: the built-in agent's `bash`
#: and an external CLI's shell tool (unless its config gives `test_commands`) record a test run
#: after each, read by the task's test parser, as `run_tests` does.
TEST_COMMANDS = (
    r"\bpytest\b",
    r"\bpython3?\s+-m\s+(pytest|unittest)\b",
    r"\b(npm|yarn|pnpm)\s+(run\s+)?test\b",
    r"\bgo\s+test\b",
    r"\bcargo\s+test\b",
    r"\bmvn\b.*\btest\b",
    r"\bgradle\w*\b.*\btest\b",
    r"\btox\b",
)
_TEST_COMMANDS = [re.compile(p) for p in TEST_COMMANDS]


def is_test_command(command: str, task_command: str = "") -> bool:
    """Does this shell command run tests (the task's test command, or one of TEST_COMMANDS)?"""
    return (bool(task_command.strip()) and task_command.strip() in command) or any(
        p.search(command) for p in _TEST_COMMANDS
    )


class ToolFailure(Exception):
    """A tool call the model got wrong; the message is shown to the model as a tool error."""


@dataclass
class TestSummary:
    command: str
    exit_code: int | None
    passed: int
    failed: int
    errors: int
    failing: list[str] = field(default_factory=list)

    @property
    def green(self) -> bool:
        return self.exit_code == 0 and not self.failing


@dataclass
class ToolOutput:
    content: str
    is_error: bool = False
    exit_code: int | None = None
    truncated: bool = False
    timed_out: bool = False
    duration_s: float = 0.0
    test: TestSummary | None = None
    stop: bool = False  # the agent asked to end the attempt


SCHEMAS: dict[str, dict[str, Any]] = {
    "bash": {
        "description": "Run a shell command (bash) in the repository root and get its exit code and output. "
        "There is no network. Each call is a fresh shell: cd and exports do not carry over. "
        "Long-running commands are killed after a timeout; output is truncated in the middle when long.",
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "the command to run"}},
            "required": ["command"],
        },
    },
    "edit": {
        "description": "View, create and edit files. `view` shows a file with line numbers (or a directory "
        "listing); `create` writes a whole file; `str_replace` replaces old_str, which must occur exactly once, "
        "with new_str; `insert` adds new_str after line insert_line (0 = at the top). Paths are relative to the "
        "repository root or absolute.",
        "input_schema": {
            "type": "object",
            "properties": {
                "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert"]},
                "path": {"type": "string"},
                "file_text": {"type": "string", "description": "create: the whole content"},
                "old_str": {"type": "string", "description": "str_replace: exact text to replace"},
                "new_str": {"type": "string", "description": "str_replace / insert: the new text"},
                "insert_line": {"type": "integer", "description": "insert: the line after which to insert"},
                "view_range": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "minItems": 2,
                    "maxItems": 2,
                    "description": "view: [first, last] line, 1-based, last -1 = end of file",
                },
            },
            "required": ["command", "path"],
        },
    },
    "run_tests": {
        "description": "Run the project's visible test command and get a short summary: how many passed and "
        "failed, the failing test ids and the end of the output.",
        "input_schema": {"type": "object", "properties": {}},
    },
    "submit": {
        "description": "Finish: your changes to the repository are the answer. Call this when you are done.",
        "input_schema": {"type": "object", "properties": {}},
    },
}


def tool_specs(names: list[str]) -> list[dict[str, Any]]:
    """Schemas of the named tools, in order ({name, description, input_schema})."""
    unknown = [n for n in names if n not in SCHEMAS]
    if unknown:
        raise ValueError(f"unknown tool(s) {unknown}; available: {sorted(SCHEMAS)}")
    return [{"name": n, **SCHEMAS[n]} for n in names]


class Toolbox:
    """The tool implementations for one attempt."""

    def __init__(self, sandbox: Sandbox, task: Task, *, output_chars: int = 12_000, enabled: list[str] | None = None):
        self.sb = sandbox
        self.task = task
        self.output_chars = output_chars
        self.enabled = enabled or list(SCHEMAS)

    def call(self, name: str, args: dict[str, Any]) -> ToolOutput:
        if name not in self.enabled:
            raise ToolFailure(f"there is no tool named {name!r}; the tools are: {', '.join(self.enabled)}")
        started = time.monotonic()
        handlers: dict[str, Callable[..., ToolOutput]] = {
            "bash": self._bash,
            "edit": self._edit,
            "run_tests": self._run_tests,
            "submit": self._submit,
        }
        out = handlers[name](**_check_args(name, args))
        out.duration_s = time.monotonic() - started
        return out

    # ------------------------------------------------------------------ tools

    def _bash(self, command: str) -> ToolOutput:
        result = self.sb.exec(command)
        body = self._clip(result.combined()) or "(no output)"
        note = " (timed out)" if result.timed_out else ""
        if result.returncode == 137 and not result.timed_out:  # SIGKILL from outside: usually the OOM killer
            note = f" (killed: SIGKILL, most often the container's memory limit of {self.sb.limits.memory})"
        return ToolOutput(
            f"exit code {result.returncode}{note}\n{body}",
            exit_code=result.returncode,
            truncated=result.truncated,
            timed_out=result.timed_out,
            # a test run as an external CLI's shell test command is one (recovery, causes: the same plan, the same figures)
            test=self._summary(command, result) if is_test_command(command, self.task.test_command or "") else None,
        )

    def _summary(self, command: str, result) -> TestSummary:
        def read(path: str) -> bytes | None:
            try:
                return self.sb.read_file(path)
            except FileOpError:
                return None

        parsed = parse_run(self.task.hidden_tests.parsers(), result.stdout + "\n" + result.stderr, read)
        failing = parsed.failing() + parsed.collection_errors
        return TestSummary(
            command, result.returncode, parsed.count("passed"), parsed.count("failed"), parsed.count("errors"), failing
        )

    def _run_tests(self) -> ToolOutput:
        command = self.task.test_command
        if not command:
            raise ToolFailure("this task has no visible test command; run tests yourself with bash")
        result = self.sb.exec(command)
        summary = self._summary(command, result)
        failing = summary.failing
        head = f"$ {command}\nexit code {result.returncode}: {summary.passed} passed, {summary.failed} failed, {summary.errors} errors"
        if failing:
            head += "\nfailing:\n" + "\n".join(f"  {t}" for t in failing[:30])
        tail = "\n".join(result.combined().splitlines()[-60:])
        return ToolOutput(
            f"{head}\n--- end of output ---\n{self._clip(tail)}",
            exit_code=result.returncode,
            truncated=result.truncated,
            timed_out=result.timed_out,
            test=summary,
        )

    def _submit(self) -> ToolOutput:
        return ToolOutput("submitted", stop=True)

    def _edit(
        self,
        command: str,
        path: str,
        file_text: str | None = None,
        old_str: str | None = None,
        new_str: str | None = None,
        insert_line: int | None = None,
        view_range: list[int] | None = None,
    ) -> ToolOutput:
        path = posixpath.normpath(posixpath.join(self.sb.workdir, path))
        if command == "view":
            return self._view(path, view_range)
        if command == "create":
            if file_text is None:
                raise ToolFailure("create needs file_text (the whole content of the file)")
            self.sb.write_file(path, _content(file_text))
            return ToolOutput(f"created {path} ({len(file_text.splitlines())} lines)")
        text = self._read_text(path)
        if command == "str_replace":
            if not old_str:
                raise ToolFailure("str_replace needs a non-empty old_str")
            count = text.count(old_str)
            if count == 0:
                raise ToolFailure(
                    f"old_str was not found in {path}; view the file and copy the text exactly, "
                    "including whitespace and indentation"
                )
            if count > 1:
                numbers = [text[:m].count("\n") + 1 for m in _find_all(text, old_str)]
                raise ToolFailure(
                    f"old_str occurs {count} times in {path} (lines {numbers}); "
                    "include more surrounding lines so it matches exactly once"
                )
            updated = text.replace(old_str, new_str or "", 1)
            self.sb.write_file(path, _content(updated))
            line = text[: text.index(old_str)].count("\n") + 1
            return ToolOutput(f"edited {path}\n" + _snippet(updated, line, (new_str or "").count("\n") + 1))
        if command == "insert":
            if insert_line is None or new_str is None:
                raise ToolFailure("insert needs insert_line and new_str")
            lines = text.splitlines(keepends=True)
            if not 0 <= insert_line <= len(lines):
                raise ToolFailure(f"insert_line must be between 0 and {len(lines)} for {path}")
            block = new_str if new_str.endswith("\n") else new_str + "\n"
            if insert_line and not lines[insert_line - 1].endswith("\n"):
                block = "\n" + block
            updated = "".join(lines[:insert_line]) + block + "".join(lines[insert_line:])
            self.sb.write_file(path, _content(updated))
            return ToolOutput(f"inserted into {path}\n" + _snippet(updated, insert_line + 1, block.count("\n")))
        raise ToolFailure(f"unknown edit command {command!r}; use view, create, str_replace or insert")

    def _view(self, path: str, view_range: list[int] | None) -> ToolOutput:
        kind = self.sb.exec(
            ["sh", "-c", 'if [ -d "$1" ]; then echo dir; elif [ -f "$1" ]; then echo file; fi', "_", path]
        )
        if kind.stdout.strip() == "dir":
            listing = self.sb.exec(
                ["find", path, "-maxdepth", "2", "-not", "-path", "*/.git*", "-not", "-name", "__pycache__"]
            )
            return ToolOutput(self._clip("\n".join(sorted(listing.stdout.splitlines()))))
        lines = self._read_text(path).splitlines()
        first, last = 1, len(lines)
        if view_range:
            first, last = view_range[0], (len(lines) if view_range[1] == -1 else view_range[1])
            if not (1 <= first <= max(len(lines), 1) and first <= last):
                raise ToolFailure(f"view_range {view_range} is outside {path}, which has {len(lines)} lines")
        numbered = "\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(first, min(last, len(lines)) + 1))
        return ToolOutput(self._clip(numbered) or "(empty file)")

    # ------------------------------------------------------------------ helpers

    def _read_text(self, path: str) -> str:
        exists = self.sb.exec(["test", "-f", path])
        if not exists.ok:
            raise ToolFailure(f"{path} does not exist or is not a file; use `edit` view on a folder to list it")
        data = self.sb.read_file(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolFailure(f"{path} is not UTF-8 text; inspect it with bash (e.g. xxd | head)") from None

    def _clip(self, text: str) -> str:
        if len(text) <= self.output_chars:
            return text
        half = self.output_chars // 2
        return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


def _check_args(name: str, args: dict[str, Any]) -> dict[str, Any]:
    schema = SCHEMAS[name]["input_schema"]
    allowed = set(schema.get("properties", {}))
    missing = [k for k in schema.get("required", []) if k not in args]
    extra = [k for k in args if k not in allowed]
    if missing or extra:
        parts = ([f"missing {missing}"] if missing else []) + ([f"unexpected {extra}"] if extra else [])
        raise ToolFailure(f"{name}: {'; '.join(parts)}; arguments are {sorted(allowed)}")
    wrong = [
        f"{key} must be {_JSON_NAMES[prop['type']]}, not {_json_type(args[key])}"
        for key, prop in schema.get("properties", {}).items()
        if key in args and args[key] is not None and not _is(args[key], prop)
    ]
    if wrong:  # a model's "insert_line": "1" is its mistake to hear about, not an exception of ours
        raise ToolFailure(f"{name}: {'; '.join(wrong)}")
    return args


_JSON_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "array": "an array",
    "boolean": "true or false",
    "object": "an object",
    "number": "a number",
}


def _is(value: Any, prop: dict[str, Any]) -> bool:
    """Is `value` of the JSON type the schema property says (an array's items too)?"""
    kind = prop.get("type")
    if kind == "array":
        return (
            isinstance(value, list) and all(_is(v, prop["items"]) for v in value)
            if "items" in prop
            else isinstance(value, list)
        )
    checks: dict[object, Callable[[Any], bool]] = {  # keyed by what the schema says, whatever it is
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "object": lambda v: isinstance(v, dict),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    }
    return checks.get(kind, lambda v: True)(value)


def _json_type(value: Any) -> str:
    for kind, name in (
        (bool, "true or false"),
        (str, "a string"),
        (int, "an integer"),
        (float, "a number"),
        (list, "an array"),
        (dict, "an object"),
    ):
        if isinstance(value, kind):
            return name
    return "null" if value is None else type(value).__name__


def _find_all(text: str, needle: str) -> list[int]:
    found, start = [], text.find(needle)
    while start != -1:
        found.append(start)
        start = text.find(needle, start + 1)
    return found


def _snippet(text: str, line: int, count: int, context: int = 3) -> str:
    lines = text.splitlines()
    first, last = max(1, line - context), min(len(lines), line + count + context - 1)
    return "\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(first, last + 1))


def _content(text: str) -> bytes:
    """A file's new content as bytes: UTF-8, a byte that is not UTF-8 sent as its surrogateescape
    character (U+DC80-U+DCFF) written as that byte; any other lone surrogate is not text: the
    model is told (a tool error), the attempt goes on."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start]
        raise ToolFailure(
            f"the text contains a lone surrogate (U+{ord(bad):04X}), which is not valid Unicode; "
            "send the text again without it"
        ) from None
