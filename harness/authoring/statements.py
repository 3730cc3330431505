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
(the commit message describes the fix, the issue the problem); otherwise the commit message.

Either is cleaned first (`clean_message`, `clean_issue`): trailers (`Co-authored-by`,
`Signed-off-by`, any `*-by:`, `Change-Id`, ...), "Generated with ..." lines, pre-commit.ci's autofix
lines, `[skip ci]` markers, the squashed-commit list GitHub writes into a squash merge's body, a
trailing pull-request number in the subject, and an issue template's HTML comments are removed;
what was removed is named.

Then the statement is classified (`classify`), one class of `QUALITIES`:

- `leaks_fix`: it names an identifier the gold patch adds (absent from the changed files at base) or
  changes (a definition the patch edits or assigns), other than those the hidden tests use (those
  are the interface a user must be told); a name counts when it is written as code: backticked,
  called (`name(`), or shaped like code (an underscore inside or in front, or a capital after a
  small letter); dunders never count. The names the tests use are those of the hidden test files
  after the fix. The names are recorded.
- `thin`: a subject line only, nothing else once cleaned.
- `issue`: made from an issue export's issue (or written by `--statement-model` as an issue report;
  `origin.statement_replaced_quality` keeps the class of what it replaced).
- `commit_message`: the commit message, more than a subject.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from ..tasks.spec import Task
from .gitrepo import MineError

_REF = re.compile(r"(?<![\w/])(?:#(\d+)|GH-(\d+)|([A-Z][A-Z0-9]{1,9}-\d+))\b", re.I)
_CLOSING = re.compile(
    r"\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?)\b[:\s]+(?:issue\s+)?"
    r"(#\d+|GH-\d+|[A-Z][A-Z0-9]{1,9}-\d+)\b",
    re.I,
)
FAILURE_CHARS = 12000  # of the hidden tests' output at base, in the prompt (its end: the summary)
STATEMENT_PROMPT = """\
You write the issue a user would file about a bug (or a missing behaviour) in a repository.

Below is the output of tests that fail on the repository as it is, and, when there is one, the issue
that was filed about it. Write a problem statement for a developer who must make those tests pass:
describe the symptom and the expected behaviour, with a small example if the output suggests one.
Do not mention the tests themselves, their file names or that they exist. Do not guess at a fix.
Plain text or Markdown, at most 300 words.

{issue}Failing tests: {failing}

Their output (the end of it):
{output}
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


@dataclass
class BaseFailure:
    """What the hidden tests say at the base commit: the tests that fail and the end of the output."""

    failing: list[str]  # test ids that fail (failed, error, or not reported)
    output: str  # the run's output, its last FAILURE_CHARS characters


def statement_prompt(failure: BaseFailure, issue: str | None) -> str:
    """The prompt of `--statement-model`: the failure at base and the linked issue, never the gold
    patch nor the commit message (which describes the fix)."""
    issue_part = f"The issue:\n{issue.strip()}\n\n" if issue and issue.strip() else ""
    return STATEMENT_PROMPT.format(
        issue=issue_part,
        failing=", ".join(failure.failing) or "(none reported: the test command itself fails)",
        output=failure.output[-FAILURE_CHARS:].strip(),
    )


def model_statement(model_spec: str, prompt: str, *, base_url: str | None = None) -> str:
    """The statement a model writes from `prompt` (statement_prompt); raises the model's errors."""
    from ..models import Settings, UserMessage, get_model

    model = get_model(model_spec, base_url=base_url)
    turn = model.complete([UserMessage(role="user", content=prompt)], [], Settings(max_tokens=1200))
    text = (turn.text or "").strip()
    if not text:
        raise MineError(f"{model_spec} returned an empty statement")
    return text + "\n"


# ----------------------------------------------------------------------------- cleaning

StatementQuality = Literal["issue", "commit_message", "thin", "leaks_fix"]
QUALITIES: tuple[str, ...] = get_args(StatementQuality)
UNCLASSIFIED = "unclassified"  # a task whose spec has no class (written by hand, or mined before classes)

# git trailers and their kin: any `Something-by:`, and the tokens tools add
_TRAILER = re.compile(
    r"^\s*(?:[\w-]+-by|change-id|reviewed-on|git-svn-id|piperorigin-revid|cc|x-[\w-]+)\s*:\s*\S", re.I
)
_GENERATED = re.compile(r"^\s*(?:\W{0,3}\s*)?(?:\[?generated (?:with|by)\b|co-authored with\b)", re.I)
_PRECOMMIT = re.compile(
    r"^\s*(?:[*-]\s*)?(?:\[pre-commit\.ci\].*|for more information, see https?://pre-commit\.ci\S*)\s*$", re.I
)
_SKIP_CI = re.compile(r"\s*\[(?:skip ci|ci skip|no ci|skip actions)\]", re.I)
_SEPARATOR = re.compile(r"^\s*-{3,}\s*$")
_PR_NUMBER = re.compile(r"\s*\((?:#|GH-)\d+\)\s*$", re.I)
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)


def quality_of(task: Task) -> str:
    """A task's statement class as recorded, `unclassified` when it has none."""
    return (task.origin.statement_quality if task.origin else None) or UNCLASSIFIED


@dataclass
class Cleaned:
    text: str
    removed: list[str]  # what kinds of lines were removed, in order of first removal


def _paragraphs(lines: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            out[-1].append(line)
        elif out[-1]:
            out.append([])
    return [p for p in out if p]


def _squash_list(body: list[list[str]]) -> bool:
    """GitHub's squash merge body: the squashed commits' subjects, each `* subject` in a paragraph of
    its own (a hand-written list has its items on consecutive lines)."""
    return len(body) >= 2 and all(len(p) == 1 and p[0].lstrip().startswith("* ") for p in body)


def clean_message(message: str) -> Cleaned:
    """A commit message without trailers, tool lines and squash noise (see the module docstring)."""
    removed: list[str] = []

    def note(kind: str) -> None:
        if kind not in removed:
            removed.append(kind)

    kept: list[str] = []
    for line in message.replace("\r\n", "\n").split("\n"):
        if _TRAILER.match(line):
            note(line.split(":", 1)[0].strip().lower())
        elif _GENERATED.match(line):
            note("generated-with")
        elif _PRECOMMIT.match(line):
            note("pre-commit.ci")
        else:
            if _SKIP_CI.search(line):
                note("skip-ci")
                line = _SKIP_CI.sub("", line)
            kept.append(line.rstrip())
    paragraphs = _paragraphs(kept)
    while paragraphs and all(_SEPARATOR.match(line) for line in paragraphs[-1]):
        paragraphs.pop()
        note("separator")
    if paragraphs and _squash_list(paragraphs[1:]):
        paragraphs = paragraphs[:1]
        note("squashed commits")
    if len(paragraphs) > 1 and len(paragraphs[1]) == 1:
        # a squash of one commit: its subject again as `* subject`, before its body
        bullet = paragraphs[1][0].strip()
        if bullet.startswith("* ") and bullet[2:].strip() == _PR_NUMBER.sub("", paragraphs[0][0]).strip():
            del paragraphs[1]
            note("squashed commits")
    if paragraphs:
        subject = _PR_NUMBER.sub("", paragraphs[0][0])
        if subject != paragraphs[0][0] and subject.strip():
            paragraphs[0][0] = subject
            note("pull request number")
    text = "\n\n".join("\n".join(p) for p in paragraphs).strip()
    return Cleaned(text + "\n" if text else "", removed)


def clean_issue(text: str) -> Cleaned:
    """An issue's text without its template's HTML comments (and trailers, as a message)."""
    bare = _HTML_COMMENT.sub("", text)
    cleaned = clean_message(bare)
    if bare != text:
        cleaned.removed.insert(0, "html comments")
    return cleaned


# ----------------------------------------------------------------------------- classifying

IDENTIFIER = _IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEF = re.compile(
    r"^(\s*)(?:export\s+)?(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?"
    r"(?:def|class|func|function|fn|struct|interface|type|enum|trait)\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)"
)
_ASSIGNED = re.compile(r"^\s*(?:(?:export\s+)?(?:const|let|var|static)\s+)?([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$")
# words of the languages mining reads, never a name a statement leaks
_KEYWORDS = frozenset(
    "and as assert async await break case catch class const continue def default defer del elif else enum "
    "except export extends false final finally fn for from func function go if impl import in interface is "
    "lambda let match mod mut new nil nonlocal none not null or package pass pub raise range return self "
    "static struct super switch this throw trait true try type typeof use var void while with yield "
    "True False None".split()
)


@dataclass
class FixNames:
    """Identifiers a gold patch adds (absent from its files at base) and changes (definitions it
    edits or assigns)."""

    added: set[str]
    changed: set[str]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _enclosing(lines: list[str], index: int, indent: int) -> str | None:
    """The definition enclosing line `index` of `lines` (0-based): the nearest one above it that is
    indented less."""
    for line in reversed(lines[:index]):
        match = _DEF.match(line)
        if match and len(match.group(1)) < indent:
            return match.group(2)
    return None


def fix_names(gold_patch: str, base_texts: dict[str, str] | None = None) -> FixNames:
    """What the gold patch adds and changes. `base_texts` (path -> the file at base) makes "added"
    exact and finds the definitions a change sits in; without them the diff's context stands in."""
    base_texts = base_texts or {}
    added_idents: set[str] = set()
    known: set[str] = set()  # on removed and context lines, and in the base files
    changed: set[str] = set()
    path: str | None = None
    old_no = 0
    hunk: list[str] = []  # the hunk's old-side lines so far (context and removed)
    for line in gold_patch.splitlines():
        if line.startswith("diff --git "):
            path, hunk = None, []
            continue
        if line.startswith("--- "):
            continue
        if line.startswith("+++ "):
            target = line[4:].strip()
            path = target[2:] if target.startswith("b/") else target
            known.update(_IDENT.findall(base_texts.get(path, "")))
            continue
        match = _HUNK.match(line)
        if match:
            old_no, hunk = int(match.group(1)), []
            header_def = _DEF.match(match.group(2))
            if header_def:
                hunk.append(match.group(2))
            continue
        if not line or line[0] not in " +-":
            continue
        body = line[1:]
        if line[0] in "+-":
            for pattern in (_DEF, _ASSIGNED):
                defined = pattern.match(body)
                if defined:
                    changed.add(defined.group(defined.lastindex or 1))
            base = (base_texts.get(path or "") or "").splitlines()
            where = _enclosing(base, old_no - 1, _indent(body)) if base else _enclosing(hunk, len(hunk), _indent(body))
            if where:
                changed.add(where)
        if line[0] == "+":
            added_idents.update(_IDENT.findall(_code_part(body)))
        else:
            known.update(_IDENT.findall(body))
            hunk.append(body)
            old_no += 1
    return FixNames(added=added_idents - known - _KEYWORDS, changed=changed - _KEYWORDS)


def _code_part(line: str) -> str:
    """A line without its string literals and comments (a name in a message is not code)."""
    if line.lstrip().startswith(("#", "//", "/*", "*", "--")):
        return ""
    line = re.sub(r"(['\"`]).*?(?<!\\)\1", " ", line)
    return re.split(r"\s(?:#|//)", line, maxsplit=1)[0]


def names_tests_use(test_patch: str) -> set[str]:
    """Every identifier on the hidden tests' added and context lines: the interface they use."""
    names: set[str] = set()
    for line in test_patch.splitlines():
        if line.startswith(("+++", "---")) or not line or line[0] not in " +":
            continue
        names.update(_IDENT.findall(line[1:]))
    return names


def _code_shaped(name: str) -> bool:
    return ("_" in name.strip("_") and len(name) >= 3) or name.startswith("_") or bool(re.search(r"[a-z][A-Z]", name))


def leaked_names(statement: str, names: FixNames, tests: set[str]) -> list[str]:
    """The names of the fix (added or changed, not used by the hidden tests) the statement writes as
    code, in the order it names them."""
    secret = {n for n in (names.added | names.changed) - tests if not (n.startswith("__") and n.endswith("__"))}
    if not secret:
        return []
    quoted: set[str] = set()
    interface: set[str] = set()  # named in a code span that shows what the tests use (`load(*paths)`)
    for span in re.findall(r"`([^`\n]+)`", statement):
        idents = set(_IDENT.findall(span))
        (interface if idents & tests else quoted).update(idents)
    secret -= interface
    called = set(re.findall(r"([A-Za-z_]\w*)\(", statement))
    found: list[str] = []
    for name in _IDENT.findall(statement):
        if name in secret and name not in found and (name in quoted or name in called or _code_shaped(name)):
            found.append(name)
    return found


def classify(statement: str, made_from: str, leaked: list[str]) -> StatementQuality:
    """The statement's class (see the module docstring): leaks_fix, then thin, then its source."""
    if leaked:
        return "leaks_fix"
    if len(_paragraphs(statement.strip().splitlines())) <= 1 and len(statement.strip().splitlines()) <= 1:
        return "thin"
    # a model writes an issue report (origin.statement: model says who wrote it)
    return "issue" if made_from in ("issue", "model") else "commit_message"


# ----------------------------------------------------------------------------- fix or feature

ChangeKind = Literal["fix", "feature"]
KINDS: tuple[str, ...] = get_args(ChangeKind)
# a public definition on an added line, per language: Go (exported), TypeScript/JavaScript (export),
# Rust (pub); Python is read with ast
_PUBLIC_LINE = (
    re.compile(r"^func\s+(?:\([^)]*\)\s*)?([A-Z]\w*)\s*(\([^{]*)"),
    re.compile(
        r"^export\s+(?:default\s+)?(?:async\s+)?(?:function\*?|class|const|let|interface|type)\s+(\w+)(.*?)\s*[{=]?\s*$"
    ),
    re.compile(r"^\s*pub\s+(?:async\s+)?(?:fn|struct|enum|trait|type)\s+(\w+)(.*?)\s*[{;]?\s*$"),
)
ADDITIONS_HEADER = (
    "The hidden tests use this interface, which the change adds (listed by wholeloop from the "
    "reference solution's signatures; the bodies are yours to write):"
)


def _python_api(source: str) -> dict[str, str]:
    """Public names of a Python module -> their signature line: functions, classes and the public
    methods of its public classes (`Class.method`). {} when it does not parse."""
    import ast

    from ..pysyntax import parse

    try:
        tree = parse(source)
    except (SyntaxError, ValueError):
        return {}

    def signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
        returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
        prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
        return f"{prefix} {node.name}({ast.unparse(node.args)}){returns}"

    api: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
            api[node.name] = signature(node)
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            bases = ", ".join(ast.unparse(b) for b in node.bases)
            api[node.name] = f"class {node.name}({bases})" if bases else f"class {node.name}"
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    not item.name.startswith("_") or item.name == "__init__"
                ):
                    api[f"{node.name}.{item.name}"] = f"{node.name}: {signature(item)}"
    return api


def added_api(gold_patch: str, base_texts: dict[str, str], after_texts: dict[str, str]) -> dict[str, str]:
    """Public definitions the gold patch adds -> their signature (no body): Python files compared
    by ast before and after, other languages read from the added lines."""
    added: dict[str, str] = {}
    for path, after in after_texts.items():
        if path.endswith(".py"):
            before = _python_api(base_texts.get(path, ""))
            added.update({k: v for k, v in _python_api(after).items() if k not in before})
    path = ""
    lines = gold_patch.splitlines()
    for n, line in enumerate(lines):
        if line.startswith("+++ "):
            path = line[4:].strip().removeprefix("b/")
            continue
        if path.endswith(".py") or not line.startswith("+") or line.startswith("+++"):
            continue
        for pattern in _PUBLIC_LINE:
            match = pattern.match(line[1:])
            if match and match.group(1) not in base_texts.get(path, ""):
                added[match.group(1)] = _signature(lines[n:])
    return added


_SIGNATURE_LINES = 12  # a signature is read over at most this many added lines


def _signature(lines: list[str]) -> str:
    """The declaration that starts at lines[0] (added lines of a diff), up to where its body or
    value starts: continued over the next added lines while a bracket is open (a TypeScript
    generic over several lines), cut at the `{` that opens the body (not `interface{}` or
    `struct{}`) or the `=` that gives a value, at bracket depth 0; `=>` and `->` are no brackets."""
    text = ""
    for line in lines[:_SIGNATURE_LINES]:
        if not line.startswith("+") or line.startswith("+++"):
            break
        text = f"{text} {line[1:].strip()}".strip()
        cut, closed = _body_start(text)
        if cut is not None:
            return text[:cut].strip()
        if closed:
            break
    return text.rstrip(";").strip()


def _body_start(text: str) -> tuple[int | None, bool]:
    """(where the body or value starts, or None; whether every bracket is closed at the end)."""
    depth = 0
    for i, ch in enumerate(text):
        prev, nxt = text[i - 1] if i else "", text[i + 1] if i + 1 < len(text) else ""
        if ch in "([" or (ch == "<" and prev != "<"):
            depth += 1
        elif ch in ")]" or (ch == ">" and prev not in "=-"):
            depth = max(0, depth - 1)
        elif depth == 0 and ch == "{" and not text[:i].rstrip().endswith(("interface", "struct")):
            return i, True
        elif depth == 0 and ch == "=" and nxt not in "=>" and prev not in "=!<>":
            return i, True
    return None, depth == 0


def change_kind(subject_kind: str, api: dict[str, str], tests: set[str]) -> ChangeKind:
    """A feature when the gold adds public API the hidden tests use, or the subject says it is one
    (`feat`, `feature`, adds/supports/implements... words) and the gold adds public API; else a fix."""
    used = {name for name in api if name.split(".")[-1] in tests}
    if used or (api and subject_kind in ("feat", "feature")):
        return "feature"
    return "fix"


def interface_additions(statement: str, api: dict[str, str], tests: set[str]) -> list[str]:
    """The signatures of added public names the tests use that the statement never names."""
    named = set(_IDENT.findall(statement))
    out, classes = [], set()
    for name, sig in api.items():
        owner, _, leaf = name.rpartition(".")
        if leaf == "__init__":
            wanted = owner in classes  # a class listed: how to make one
        else:
            wanted = leaf in tests and (leaf not in named or owner in classes)
        if wanted:
            out.append(sig)
            if not owner and sig.startswith("class "):
                classes.add(name)
    return out


def with_additions(statement: str, additions: list[str]) -> str:
    if not additions:
        return statement
    listed = "\n".join(f"    {sig}" for sig in additions)
    return f"{statement.rstrip()}\n\n{ADDITIONS_HEADER}\n\n{listed}\n"


def imported_quality(statement: str, gold_patch: str, test_patch: str) -> tuple[StatementQuality, list[str]]:
    """The class of an imported instance's statement (SWE-bench's are issues), from its patches
    alone (no base files: the diff's context stands in for them; no whole test files either, so of
    the definitions the fix changes only the private ones count: an issue names the public call
    that misbehaves)."""
    names = fix_names(gold_patch)
    names.changed = {n for n in names.changed if n.startswith("_")}
    leaked = leaked_names(statement, names, names_tests_use(test_patch))
    return classify(statement, "issue", leaked), leaked
