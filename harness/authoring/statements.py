"""Problem statements for mined tasks: the commit message, the issue it names, or (only when asked)
a model's rewrite.

An issue export (`--issues FILE`) is one of:

- GitHub JSON: a list of issues with `number`, `title`, `body` (the REST API's shape, or
  `gh issue list --state all --json number,title,body`);
- GitLab JSON: a list with `iid`, `title`, `description`;
- CSV with a header row: `id`, `title`, `body` (a Jira export's `Issue key`, `Summary`,
  `Description` are read too); ids such as `123`, `#123` or `PROJ-123`.

A commit names an issue with `#123`, `GH-123`, `gh-123` or a Jira-style key `PROJ-123`; a closing
keyword (`fixes #123`, `closes PROJ-7`, `resolves GH-9`) wins over a plain mention, else the
first mention counts. When the issue is in the export, the statement is its title and body
(the commit message describes the fix, the issue the problem); otherwise the whole commit message.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

from .gitrepo import MineError

_REF = re.compile(r"(?<![\w/])(?:#(\d+)|GH-(\d+)|([A-Z][A-Z0-9]{1,9}-\d+))\b", re.I)
_CLOSING = re.compile(
    r"\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?)\b[:\s]+(?:issue\s+)?"
    r"(#\d+|GH-\d+|[A-Z][A-Z0-9]{1,9}-\d+)\b",
    re.I,
)
STATEMENT_PROMPT = """\
You turn a fix commit into the issue a user would have filed before the fix existed.

Write a problem statement for a developer who must fix this bug (or add this behaviour) in the
repository as it was before the commit. Describe the symptom and the expected behaviour, with a
small example if the commit's tests suggest one. Do not describe the fix, do not name the changed
lines, do not mention the commit or its tests. Plain text or Markdown, at most 300 words.

Commit message:
{message}

The change (for your understanding only; do not reveal it):
{diff}
"""


@dataclass
class Issue:
    key: str  # normalised: "123" for GitHub/GitLab numbers, "PROJ-123" for keys
    title: str
    body: str

    def statement(self) -> str:
        return f"{self.title.strip()}\n\n{self.body.strip()}".strip() + "\n"


def _norm(ref: str) -> str:
    ref = ref.strip()
    match = re.fullmatch(r"(?:#|GH-)?(\d+)", ref, re.I)
    return match.group(1) if match else ref.upper()


def load_issues(path: Path | str) -> dict[str, Issue]:
    """Issues by normalised key; MineError saying what the file should hold when it cannot be read."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else f"not UTF-8 text ({exc.reason})"
        raise MineError(f"{path}: cannot read the issue export: {why}") from None
    issues: dict[str, Issue] = {}
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise MineError(
                f"{path}: not valid JSON ({exc.msg}, line {exc.lineno}); an issue export is a JSON list "
                "of GitHub issues (number, title, body) or GitLab issues (iid, title, description), "
                "or a CSV with id, title, body"
            ) from None
        if isinstance(data, dict):
            data = data.get("issues") or data.get("items") or [data]
        if not isinstance(data, list):
            raise MineError(f"{path}: expected a JSON list of issues")
        for n, item in enumerate(data, 1):
            if not isinstance(item, dict):
                raise MineError(f"{path}: item {n} is not an object")
            number = item.get("number", item.get("iid", item.get("id")))
            title = item.get("title")
            if number is None or not isinstance(title, str):
                raise MineError(
                    f"{path}: item {n} has no number/iid and title (GitHub: number, title, body; "
                    "GitLab: iid, title, description)"
                )
            body = item.get("body") if "body" in item else item.get("description")
            issues[_norm(str(number))] = Issue(_norm(str(number)), title, body or "")
        return issues
    reader = csv.DictReader(io.StringIO(text))
    fields = {name.strip().lower(): name for name in reader.fieldnames or []}
    pick = lambda *names: next((fields[n] for n in names if n in fields), None)  # noqa: E731
    id_col, title_col = pick("id", "key", "issue key", "number"), pick("title", "summary")
    body_col = pick("body", "description")
    if not id_col or not title_col:
        raise MineError(
            f"{path}: not an issue export: a CSV needs a header with id, title and body columns "
            f"(found: {', '.join(reader.fieldnames or []) or 'no header'}); JSON exports of GitHub or "
            "GitLab issues work too"
        )
    for row in reader:
        key = _norm(row.get(id_col) or "")
        if key:
            issues[key] = Issue(key, row.get(title_col) or "", (row.get(body_col) or "") if body_col else "")
    return issues


def referenced_issue(message: str) -> str | None:
    """The issue a commit message names (normalised key), closing keywords first."""
    closing = _CLOSING.search(message)
    if closing:
        return _norm(closing.group(1))
    match = _REF.search(message)
    if not match:
        return None
    return match.group(1) or match.group(2) or match.group(3).upper()


def model_statement(model_spec: str, message: str, diff: str, *, base_url: str | None = None) -> tuple[str, str]:
    """(statement, prompt) written by a model; raises the model's errors."""
    from ..models import Settings, UserMessage, get_model

    prompt = STATEMENT_PROMPT.format(message=message.strip(), diff=diff[:20000])
    model = get_model(model_spec, base_url=base_url)
    turn = model.complete([UserMessage(role="user", content=prompt)], [], Settings(max_tokens=1200))
    text = (turn.text or "").strip()
    if not text:
        raise MineError(f"{model_spec} returned an empty statement")
    return text + "\n", prompt
