"""The repository's own checks: the linters, formatters and type checkers it already uses, run on a
resolved attempt's patched files, diff-aware (docs/acceptance.md, "The repository's own checks").

- **Inference** (`infer`) reads the repository's config at the task's base, from the task image:
  `.pre-commit-config.yaml` (names tools and their versions; hook repositories are never fetched,
  the tools are installed from PyPI or npm), pyproject's `[tool.ruff]`, `[tool.mypy]`,
  `[tool.black]`, `[tool.isort]`, `ruff.toml`, `setup.cfg` / `.flake8` / `tox.ini`'s `[flake8]`,
  `mypy.ini`, package.json's devDependencies (eslint), and go.mod (gofmt, go vet) when the image
  has Go. A task's `checks:` (from the
  repository's wholeloop.yaml) replaces the inference; `checks: []` switches it off.
- **The checks layer** (`Backend.checks_image`): the task image + the tools (installed with the
  network on, into their own folder) + one run of every check on the whole base tree with the
  network off, whose output is kept in the layer (`BASE_DIR`) beside the type checkers' caches.
  Built once per task image and tool set, so neither the task image nor a verdict goes stale.
- **Diff-aware**: a finding is keyed by (file, rule, normalised message), never by line; the new
  findings of an attempt are its counts minus the base's, per key. The config files the checks read
  are put back to the base's before the checks run (a patch that edits them silences nothing).

One parser per output format: ruff's JSON, mypy's line format, flake8's default format, black's and
isort's check lines, eslint's JSON, gofmt's file list, go vet's line format.
"""

from __future__ import annotations

import json
import re
import shlex
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, Field

from sandbox import Backend, BuiltImage, FileOpError, Limits, Sandbox, SandboxError

from .patching import parse_patch

CHECKS_DIR = "/opt/wholeloop/checks"  # in the checks layer: the tools, the caches, the base findings
BASE_DIR = f"{CHECKS_DIR}/base"  # in the layer: <check name>.out, each check's output on the whole base tree
KEY_SEP = " | "
DIFF = "/tmp/wholeloop-own-checks.diff"
EVIDENCE_FINDINGS = 20  # new findings kept per attempt as evidence (the total is whole)
PY = (".py", ".pyi")
JS = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx")
PRETTIER = (*JS, ".css", ".scss", ".less", ".html", ".vue", ".md", ".yaml", ".yml")


@dataclass(frozen=True)
class Tool:
    """How wholeloop installs, runs and reads one checking tool."""

    kind: str  # "linter", "formatter", "type checker"
    installer: str  # "pip" or "npm"; "image": the toolchain the task image has (Go's), nothing installed
    package: str
    command: str  # {bin}: the tools' folder; {files}: the files, quoted; run in the repository
    extensions: tuple[str, ...]
    parse: Callable[[str], list[Finding]]
    packages: bool = False  # {files} are the files' packages (`./dir`; `./...` for the whole tree)
    # a whole-program checker: what it says of one file depends on which files it is given (mypy
    # given more.py alone reads recipes.pyi, the stub, where the whole tree gives it recipes.py), so
    # an attempt is checked with the base's own invocation, the whole tree, its warm cache making
    # that incremental; and the findings of every file count (a changed signature breaks callers)
    whole: bool = False
    # a JSON report on standard output (its standard error dropped by the command: a warning there
    # would break the document): output that is not one is an error, never "no findings"
    json: bool = False
    # run once at install, network on, after the packages are in (pyright's Python wrapper fetches
    # its Node program on first use: fetched then, into the tools' folder, never at check time)
    warm: str = ""


class Finding(BaseModel):
    """One finding of a check; `key` is what diff-awareness matches (no line number)."""

    file: str
    rule: str
    message: str

    @property
    def key(self) -> str:
        return KEY_SEP.join((self.file, self.rule, normalise(self.message)))


class NewFinding(BaseModel):
    check: str
    file: str
    rule: str
    message: str
    count: int = 1  # how many more times than at base


class SilencedLine(BaseModel):
    """A line the patch adds whose inline check setting the checks were run without."""

    file: str
    line: str


class OwnChecks(BaseModel):
    """The `own_checks` axis of one attempt: which checks ran and the findings its patch added."""

    checks: list[str] = Field(default_factory=list, description="each check as installed (name==version)")
    files: list[str] = Field(default_factory=list, description="the patched files the checks ran on")
    new: list[NewFinding] = Field(default_factory=list, description="findings the base does not have (evidence)")
    new_total: int = 0
    base_total: int = 0  # findings of the base on the same files (a whole-program checker's: the whole tree)
    seconds: float = 0.0
    error: str | None = Field(None, description="why the checks could not run: the axis is then not measured")
    unsilenced: list[SilencedLine] = Field(
        default_factory=list,
        description="lines the patch adds with an inline setting no flag turns off (`# type: ignore`, "
        "`# mypy: ignore-errors`, `// @ts-nocheck`, `#[allow(...)]` ...): the checks ran without it",
    )


def normalise(message: str) -> str:
    """A message without what moves when lines move: line and column numbers, spacing."""
    text = re.sub(r"\b(line|col(umn)?)s?\s+\d+", r"\1 N", message.strip(), flags=re.I)
    text = re.sub(r":\d+(:\d+)?\b", ":N", text)
    return re.sub(r"\s+", " ", text)


# ------------------------------------------------------------------------------------ parsers


def _rel(path: str) -> str:
    path = path.strip()
    for prefix in ("/repo/", "./"):
        path = path.removeprefix(prefix)
    return path


def parse_ruff_json(text: str) -> list[Finding]:
    data = _json_array(text)
    return [
        Finding(
            file=_rel(d.get("filename", "")), rule=str(d.get("code") or "syntax"), message=str(d.get("message", ""))
        )
        for d in data
        if isinstance(d, dict)
    ]


_MYPY = re.compile(
    r"^(?P<file>[^:\n]+?):\d+(?::\d+)?: (?P<sev>error|warning): (?P<msg>.*?)(?:\s+\[(?P<code>[\w-]+)\])?$"
)


def parse_mypy_lines(text: str) -> list[Finding]:
    out = []
    for line in text.splitlines():
        m = _MYPY.match(line.strip())
        if m:
            out.append(Finding(file=_rel(m["file"]), rule=m["code"] or m["sev"], message=m["msg"]))
    return out


_FLAKE8 = re.compile(r"^(?P<file>[^:\n]+?):\d+:\d+: (?P<code>[A-Z]+\d+) (?P<msg>.*)$")


def parse_flake8(text: str) -> list[Finding]:
    out = []
    for line in text.splitlines():
        m = _FLAKE8.match(line.strip())
        if m:
            out.append(Finding(file=_rel(m["file"]), rule=m["code"], message=m["msg"]))
    return out


def parse_black(text: str) -> list[Finding]:
    return [
        Finding(file=_rel(line.strip().removeprefix("would reformat ")), rule="black", message="would reformat")
        for line in text.splitlines()
        if line.strip().startswith("would reformat ")
    ]


_ISORT = re.compile(r"^ERROR: (?P<file>.+?) Imports are incorrectly sorted")


def parse_isort(text: str) -> list[Finding]:
    out = []
    for line in text.splitlines():
        m = _ISORT.match(line.strip())
        if m:
            out.append(Finding(file=_rel(m["file"]), rule="isort", message="imports are incorrectly sorted"))
    return out


def parse_eslint_json(text: str) -> list[Finding]:
    out = []
    for result in _json_array(text):
        if not isinstance(result, dict):
            continue
        for msg in result.get("messages") or []:
            out.append(
                Finding(
                    file=_rel(str(result.get("filePath", ""))),
                    rule=str(msg.get("ruleId") or "syntax"),
                    message=str(msg.get("message", "")),
                )
            )
    return out


def parse_gofmt(text: str) -> list[Finding]:
    """`gofmt -l`: the files whose formatting differs, one a line."""
    return [
        Finding(file=_rel(line), rule="gofmt", message="not gofmt-formatted")
        for line in text.splitlines()
        if line.strip().endswith(".go") and ":" not in line
    ]


_GO_VET = re.compile(r"^(?:vet: )?(?P<file>[^:\s]+\.go):\d+(?::\d+)?: (?P<msg>.*)$")


def parse_go_vet(text: str) -> list[Finding]:
    """`go vet`: `file.go:line:col: message` lines (package headers `# pkg` and the rest left out)."""
    out = []
    for line in text.splitlines():
        m = _GO_VET.match(line.strip())
        if m:
            out.append(Finding(file=_rel(m["file"]), rule="vet", message=m["msg"]))
    return out


def parse_pyright_json(text: str) -> list[Finding]:
    """`pyright --outputjson`: `generalDiagnostics[]` with `file`, `rule` (absent for some), `message`."""
    start = text.find("{")
    try:
        data = json.loads(text[start:]) if start >= 0 else {}
    except ValueError:
        return []
    out = []
    for d in data.get("generalDiagnostics") or [] if isinstance(data, dict) else []:
        if isinstance(d, dict) and d.get("severity") in ("error", "warning"):
            message = str(d.get("message", "")).split("\n", 1)[0]
            out.append(
                Finding(file=_rel(str(d.get("file", ""))), rule=str(d.get("rule") or d["severity"]), message=message)
            )
    return out


_TSC = re.compile(r"^(?P<file>[^()\n]+)\(\d+,\d+\): (?:error|warning) (?P<code>TS\d+): (?P<msg>.*)$")


def parse_tsc(text: str) -> list[Finding]:
    """`tsc --pretty false`: `file(line,col): error TS2322: message` lines (continuation lines left out)."""
    out = []
    for line in text.splitlines():
        m = _TSC.match(line.strip())
        if m:
            out.append(Finding(file=_rel(m["file"]), rule=m["code"], message=m["msg"]))
    return out


def parse_file_list(rule: str, message: str, extensions: tuple[str, ...]) -> Callable[[str], list[Finding]]:
    """A formatter that lists the files it would change, one a line (prettier --list-different,
    cargo fmt --check --message-format short)."""

    def parse(text: str) -> list[Finding]:
        return [
            Finding(file=_rel(line), rule=rule, message=message)
            for line in text.splitlines()
            if line.strip().endswith(extensions) and " " not in line.strip()
        ]

    return parse


def parse_clippy_json(text: str) -> list[Finding]:
    """`cargo clippy --message-format json`: one JSON object a line; each `compiler-message`'s
    message, its file the primary span's (a message without a span, or without a code, such as
    "N warnings emitted", is left out)."""
    out = []
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        msg = data.get("message") if isinstance(data, dict) and data.get("reason") == "compiler-message" else None
        if not isinstance(msg, dict) or not msg.get("code") or msg.get("level") not in ("warning", "error"):
            continue
        span = next((sp for sp in msg.get("spans") or [] if sp.get("is_primary")), None)
        if span is None:
            continue
        out.append(
            Finding(
                file=_rel(str(span.get("file_name", ""))),
                rule=str(msg["code"].get("code")),
                message=str(msg.get("message", "")),
            )
        )
    return out


def _is_json(text: str) -> bool:
    """`text` holds one JSON document (a report), from its first bracket or brace to its end."""
    starts = [i for i in (text.find("["), text.find("{")) if i >= 0]
    if not starts:
        return False
    try:
        json.loads(text[min(starts) :])
    except ValueError:
        return False
    return True


def _json_array(text: str) -> list:
    start = text.find("[")
    if start < 0:
        return []
    try:
        data = json.loads(text[start:])
    except ValueError:
        return []
    return data if isinstance(data, list) else []


TOOLS: dict[str, Tool] = {
    "gofmt": Tool("formatter", "image", "gofmt", "gofmt -l {files} 2>&1; true", (".go",), parse_gofmt),
    "go-vet": Tool("linter", "image", "go", "go vet {files} 2>&1; true", (".go",), parse_go_vet, packages=True),
    "ruff": Tool(
        "linter",
        "pip",
        "ruff",
        "{bin}/ruff check --no-cache --ignore-noqa --output-format json --exit-zero {files} 2>/dev/null",
        PY,
        parse_ruff_json,
        json=True,
    ),
    "flake8": Tool("linter", "pip", "flake8", "{bin}/flake8 --exit-zero --disable-noqa {files}", PY, parse_flake8),
    "black": Tool("formatter", "pip", "black", "{bin}/black --check {files} 2>&1; true", PY, parse_black),
    "isort": Tool("formatter", "pip", "isort", "{bin}/isort --check-only {files} 2>&1; true", PY, parse_isort),
    "mypy": Tool(
        "type checker",
        "pip",
        "mypy",
        '{bin}/mypy --python-executable "$(command -v python3)" --cache-dir '
        + f"{CHECKS_DIR}/cache/mypy"
        + " --show-error-codes --no-error-summary --no-pretty --hide-error-context {files}; true",
        PY,
        parse_mypy_lines,
        whole=True,
    ),
    "eslint": Tool(
        "linter",
        "npm",
        "eslint",
        "{bin}/../node_modules/.bin/eslint -f json --no-inline-config {files} 2>/dev/null; true",
        JS,
        parse_eslint_json,
        json=True,
    ),
    "pyright": Tool(
        "type checker",
        "pip",
        "pyright",
        f"PYRIGHT_PYTHON_CACHE_DIR={CHECKS_DIR}/cache/pyright "
        + '{bin}/pyright --pythonpath "$(command -v python3)" --outputjson {files} 2>/dev/null; true',
        PY,
        parse_pyright_json,
        whole=True,
        json=True,
        warm=f"PYRIGHT_PYTHON_CACHE_DIR={CHECKS_DIR}/cache/pyright {CHECKS_DIR}/bin/pyright --version",
    ),
    "tsc": Tool(
        "type checker",
        "npm",
        "typescript",
        "{bin}/../node_modules/.bin/tsc --pretty false --noEmit -p . ; true",
        (".ts", ".tsx", ".mts", ".cts"),
        parse_tsc,
        whole=True,
    ),
    "prettier": Tool(
        "formatter",
        "npm",
        "prettier",
        "{bin}/../node_modules/.bin/prettier --list-different {files} 2>/dev/null; true",
        PRETTIER,
        parse_file_list("prettier", "would reformat", PRETTIER),
    ),
    "rustfmt": Tool(
        "formatter",
        "image",
        "rustfmt",
        "cargo fmt --check --message-format short 2>/dev/null; true",
        (".rs",),
        parse_file_list("rustfmt", "not rustfmt-formatted", (".rs",)),
        whole=True,
    ),
    "clippy": Tool(
        "linter",
        "image",
        "clippy",
        f"CARGO_TARGET_DIR={CHECKS_DIR}/cache/cargo cargo clippy --offline --quiet --message-format json "
        "2>/dev/null; true",
        (".rs",),
        parse_clippy_json,
        whole=True,
    ),
}

# the files the checks read their configuration from: put back to the base's before they run
CONFIG_FILES = (
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
    ".flake8",
    "mypy.ini",
    ".mypy.ini",
    "ruff.toml",
    ".ruff.toml",
    ".isort.cfg",
    ".pre-commit-config.yaml",
    "package.json",
    ".eslintrc",
    ".eslintrc.js",
    ".eslintrc.cjs",
    ".eslintrc.json",
    ".eslintrc.yml",
    ".eslintrc.yaml",
    "eslint.config.js",
    "eslint.config.mjs",
    "eslint.config.cjs",
    ".eslintignore",
    "tsconfig.json",
)
_CONFIG_NAMES = frozenset(CONFIG_FILES)


def is_config(path: str) -> bool:
    """A file (anywhere in the tree: tools read per-folder configs) the checks take settings from."""
    return path.rsplit("/", 1)[-1] in _CONFIG_NAMES or path.rsplit("/", 1)[-1].startswith(".eslintrc")


# ------------------------------------------------------------------------------------ inline settings

# Inline comments that switch a check off for a line or a whole file and that no command-line flag
# makes the tool ignore (ruff's and flake8's noqa comments and eslint's `eslint-disable` are turned off
# by their commands: --ignore-noqa, --disable-noqa, --no-inline-config). The lines a patch ADDS with
# one are applied without it in the checks layer (`unsilence`), so what it hid is found.
_SILENCERS: dict[tuple[str, ...], re.Pattern[str]] = {
    PY: re.compile(
        r"#\s*(?:type\s*:\s*ignore\b|mypy\s*:|pyright\s*:|fmt\s*:\s*(?:off|skip)\b|isort\s*:\s*(?:skip|off))"
    ),
    JS: re.compile(r"(?://|/\*)\s*(?:@ts-(?:nocheck|ignore|expect-error)\b|prettier-ignore\b)"),
    (".rs",): re.compile(r"#!?\[\s*(?:allow|expect|rustfmt::skip)\b[^\]]*\]"),
}
NEUTRAL = "inline check setting removed by wholeloop"  # what stands where a whole-line setting was


def _silencer(path: str) -> re.Pattern[str] | None:
    return next((rx for exts, rx in _SILENCERS.items() if path.endswith(exts)), None)


def _in_string(code: str) -> bool:
    """Is the end of `code` (a line up to a match) inside a one-line string literal? (a quote
    opened and not closed, a comment's text left out)"""
    quote, i = "", 0
    while i < len(code):
        c = code[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "\"'`":
            quote = c
        elif c == "#" or code.startswith(("//", "/*"), i):
            return False  # a comment: what follows is no string
        i += 1
    return bool(quote)


def _setting(path: str, line: str) -> re.Match[str] | None:
    """The inline check setting on `line` of `path`, if it holds one (outside a string literal)."""
    rx = _silencer(path)
    if rx is None:
        return None
    for match in rx.finditer(line):
        if not _in_string(line[: match.start()]):
            return match
    return None


def _directive(path: str, line: str, match: re.Match[str]) -> str:
    """The setting itself: a comment's text to the end of the line, a Rust attribute."""
    return match.group(0) if path.endswith(".rs") else line[match.start() :].strip()


def _without(path: str, line: str, match: re.Match[str]) -> str:
    """`line` with its inline setting taken out: a trailing comment cut off (with what follows it
    on the line), a Rust attribute removed; a line that held nothing else becomes a plain comment
    (so no blank line appears for a formatter to flag)."""
    is_comment = not path.endswith(".rs")
    rest = line[: match.start()] + ("" if is_comment else line[match.end() :].lstrip(" \t"))
    if rest.strip():
        return rest.rstrip()
    indent = line[: len(line) - len(line.lstrip())]
    return indent + ("# " if path.endswith(PY) else "// ") + NEUTRAL


def _has_hunks(body: list[str]) -> bool:
    return len(body) > 2 and body[0].startswith("--- ") and body[1].startswith("+++ ")


def unsilence(patch: str, gold: str = "") -> tuple[str, list[SilencedLine]]:
    """`patch` with the inline check settings of the lines it adds taken out, and those lines.
    Kept: a line gold adds too, and a setting the patch also removes in that file (a line rewritten
    with the setting it had at base). The patch's line counts are unchanged."""
    gold_lines = {
        line[1:].strip()
        for s in parse_patch(gold)[0]
        if not s.binary and _has_hunks(s.body)
        for line in s.body[2:]
        if line.startswith("+")
    }
    sections, _ = parse_patch(patch)
    found: list[SilencedLine] = []
    for section in sections:
        path = section.new
        if path is None or section.binary or _silencer(path) is None or not _has_hunks(section.body):
            continue
        removed: Counter[str] = Counter()
        for line in section.body[2:]:
            if line.startswith("-") and (m := _setting(path, line[1:])):
                removed[_directive(path, line[1:], m)] += 1
        for i, line in enumerate(section.body):
            if i < 2 or not line.startswith("+"):
                continue
            m = _setting(path, line[1:])
            if m is None or line[1:].strip() in gold_lines:
                continue
            if removed[_directive(path, line[1:], m)] > 0:
                removed[_directive(path, line[1:], m)] -= 1
                continue
            section.body[i] = "+" + _without(path, line[1:], m)
            found.append(SilencedLine(file=path, line=line[1:].strip()[:300]))
    if not found:
        return patch, []
    return "".join(s.text() for s in sections), found


# ------------------------------------------------------------------------------------ inference

# pre-commit hook repositories -> the tool they run
_PRE_COMMIT = {
    "astral-sh/ruff-pre-commit": "ruff",
    "charliermarsh/ruff-pre-commit": "ruff",
    "pre-commit/mirrors-mypy": "mypy",
    "psf/black": "black",
    "psf/black-pre-commit-mirror": "black",
    "pycqa/flake8": "flake8",
    "pycqa/isort": "isort",
    "pre-commit/mirrors-eslint": "eslint",
    "robertcraigie/pyright-python": "pyright",
    "pre-commit/mirrors-prettier": "prettier",
}
# a pre-commit hook repository whose hooks name the tool (by hook id)
_PRE_COMMIT_HOOKS = {"doublify/pre-commit-rust": {"fmt": "rustfmt", "clippy": "clippy"}}
PRETTIER_CONFIGS = (
    ".prettierrc",
    ".prettierrc.json",
    ".prettierrc.yaml",
    ".prettierrc.yml",
    ".prettierrc.js",
    "prettier.config.js",
)
# the commands a CI workflow step's `run:` names -> the tool (a word match on each line)
_WORKFLOW = (
    (r"\bruff\b", "ruff"),
    (r"\bflake8\b", "flake8"),
    (r"\bblack\b", "black"),
    (r"\bisort\b", "isort"),
    (r"\bmypy\b", "mypy"),
    (r"\bpyright\b", "pyright"),
    (r"\beslint\b", "eslint"),
    (r"\bprettier\b", "prettier"),
    (r"\btsc\b", "tsc"),
    (r"\bgofmt\b", "gofmt"),
    (r"\bgo vet\b", "go-vet"),
    (r"\bcargo fmt\b|\brustfmt\b", "rustfmt"),
    (r"\bcargo clippy\b", "clippy"),
)
# a tool the task image must have (nothing is installed for it) -> the commands it needs
_NEEDS = {"gofmt": {"go"}, "go-vet": {"go"}, "rustfmt": {"cargo", "rustfmt"}, "clippy": {"cargo", "cargo-clippy"}}
TOOLCHAIN_COMMANDS = "go gofmt cargo rustfmt cargo-clippy"
WORKFLOWS = ".github/workflows"
INFERRED_FROM = (
    "go.mod",
    "pyproject.toml",
    ".pre-commit-config.yaml",
    "setup.cfg",
    ".flake8",
    "tox.ini",
    "mypy.ini",
    ".mypy.ini",
    "ruff.toml",
    ".ruff.toml",
    "package.json",
    "pyrightconfig.json",
    "tsconfig.json",
    "Cargo.toml",
    *PRETTIER_CONFIGS,
)


def workflow_runs(text: str) -> list[str]:
    """The `run:` scripts of a GitHub Actions workflow's steps (every job's)."""
    import yaml

    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return []
    jobs = data.get("jobs") if isinstance(data, dict) else None
    out = []
    for job in jobs.values() if isinstance(jobs, dict) else []:
        for step in job.get("steps") or [] if isinstance(job, dict) else []:
            if isinstance(step, dict) and isinstance(step.get("run"), str):
                out.append(step["run"])
    return out


def infer(
    read: Callable[[str], str | None], toolchains: frozenset[str] = frozenset(), workflows: tuple[str, ...] = ()
) -> list[str]:
    """The checks the repository's config names, as `name` or `name==version`, in TOOLS' order;
    `read(path)` gives a base file's text (None when there is none); `toolchains`: the commands the
    image has (`go`: a Go module gets gofmt and go vet; `cargo` with `rustfmt` / `cargo-clippy`: a
    Cargo crate gets them); `workflows`: the texts of its CI workflows, whose steps' `run:` lines
    name tools too. A tool the image must bring is named only when the image has it."""
    import tomllib

    import yaml

    found: dict[str, str | None] = {}

    def add(name: str, version: str | None = None) -> None:
        if name in _NEEDS and not _NEEDS[name] <= toolchains:
            return
        if name in TOOLS and (name not in found or (version and not found[name])):
            found[name] = version

    pre = read(".pre-commit-config.yaml")
    if pre:
        try:
            data = yaml.safe_load(pre) or {}
        except yaml.YAMLError:
            data = {}
        for repo in data.get("repos") or [] if isinstance(data, dict) else []:
            url = str(repo.get("repo", "")).lower().removesuffix(".git").rstrip("/") if isinstance(repo, dict) else ""
            hooks = next((h for r, h in _PRE_COMMIT_HOOKS.items() if url.endswith("/" + r)), {})
            for hook in repo.get("hooks") or [] if hooks else []:
                if isinstance(hook, dict) and hook.get("id") in hooks:
                    add(hooks[hook["id"]])
            tool = next((t for r, t in _PRE_COMMIT.items() if url.endswith("/" + r)), None)
            if tool:
                rev = str(repo.get("rev", "")).lstrip("v")
                add(tool, rev if re.fullmatch(r"\d+(\.\d+)*", rev) else None)
    pyproject = read("pyproject.toml")
    if pyproject:
        try:
            tool_table = tomllib.loads(pyproject).get("tool", {})
        except tomllib.TOMLDecodeError:
            tool_table = {}
        for name in ("ruff", "mypy", "black", "isort", "pyright"):
            if name in tool_table:
                add(name)
    if read("pyrightconfig.json") is not None:
        add("pyright")
    if any(read(name) is not None for name in PRETTIER_CONFIGS):
        add("prettier")
    if read("ruff.toml") is not None or read(".ruff.toml") is not None:
        add("ruff")
    if read("mypy.ini") is not None or read(".mypy.ini") is not None:
        add("mypy")
    if read(".flake8") is not None:
        add("flake8")
    for cfg in ("setup.cfg", "tox.ini"):
        text = read(cfg) or ""
        if re.search(r"^\[flake8\]", text, re.M):
            add("flake8")
        if re.search(r"^\[mypy\]", text, re.M):
            add("mypy")
        if re.search(r"^\[isort\]", text, re.M):
            add("isort")
    package = read("package.json")
    if package:
        try:
            pkg = json.loads(package)
        except ValueError:
            pkg = {}
        deps = (
            {**(pkg.get("devDependencies") or {}), **(pkg.get("dependencies") or {})} if isinstance(pkg, dict) else {}
        )
        for dep, name in (("eslint", "eslint"), ("prettier", "prettier"), ("typescript", "tsc")):
            if dep in deps and (name != "tsc" or read("tsconfig.json") is not None):
                version = str(deps[dep]).lstrip("^~=v")
                add(name, version if re.fullmatch(r"\d+(\.\d+)*", version) else None)
    if read("go.mod") is not None:
        add("gofmt")
        add("go-vet")
    if read("Cargo.toml") is not None:
        add("rustfmt")
        add("clippy")
    for text in workflows:
        for script in workflow_runs(text):
            for line in script.splitlines():
                for pattern, name in _WORKFLOW:
                    if re.search(pattern, line):
                        add(name)
    return [f"{n}=={v}" if v else n for n in TOOLS if n in found for v in [found[n]]]


def split(check: str) -> tuple[str, str | None]:
    """'ruff==0.6.9' -> ('ruff', '0.6.9'); 'mypy' -> ('mypy', None)."""
    name, _, version = check.partition("==")
    return name.strip(), version.strip() or None


def unknown(checks: list[str]) -> list[str]:
    return [c for c in checks if split(c)[0] not in TOOLS]


# ------------------------------------------------------------------------------------ the layer

_inferred: dict[str, list[str]] = {}  # image id -> the checks inferred from its base
_layers: dict[tuple[str, tuple[str, ...]], BuiltImage] = {}  # (task image, checks) -> its layer
_inferred_lock = threading.Lock()


def install_commands(checks: list[str]) -> tuple[str, ...]:
    """The layer's install step: the Python tools in their own venv (never the project's), npm ones
    in its folder."""
    pip = [
        shlex.quote(f"{TOOLS[n].package}=={v}" if v else TOOLS[n].package)
        for n, v in map(split, checks)
        if TOOLS[n].installer == "pip"
    ]
    npm = [
        shlex.quote(f"{TOOLS[n].package}@{v}" if v else TOOLS[n].package)
        for n, v in map(split, checks)
        if TOOLS[n].installer == "npm"
    ]
    cmds = [f"mkdir -p {CHECKS_DIR}/cache {CHECKS_DIR}/bin"]
    if pip:
        cmds.append(f"python3 -m venv {CHECKS_DIR}/venv && {CHECKS_DIR}/venv/bin/pip install -q {' '.join(pip)}")
        for n, _ in map(split, checks):
            if TOOLS[n].installer == "pip":
                cmds.append(f"ln -sf {CHECKS_DIR}/venv/bin/{n} {CHECKS_DIR}/bin/{n}")
    if npm:
        cmds.append(f"cd {CHECKS_DIR} && npm install --no-save --no-audit --no-fund {' '.join(npm)}")
    cmds += [TOOLS[n].warm for n, _ in map(split, checks) if TOOLS[n].warm]
    return ("\n".join(cmds),)


def run_command(check: str, files: list[str] | None) -> str:
    """The shell command that runs `check` on `files` (None: every file of its kinds in the tree).
    The base step keeps each check's raw output in the layer; grading parses it."""
    tool = TOOLS[split(check)[0]]
    if tool.packages:
        dirs = sorted({f.rsplit("/", 1)[0] if "/" in f else "." for f in files or []})
        listed = "./..." if files is None else " ".join(shlex.quote(d if d == "." else f"./{d}") for d in dirs)
    elif files is None:
        globs = " ".join(shlex.quote(f"*{e}") for e in tool.extensions)
        listed = f"$(git -c core.quotePath=false ls-files --cached --others --exclude-standard -- {globs})"
    else:
        listed = " ".join(shlex.quote(f) for f in files)
    return tool.command.format(bin=f"{CHECKS_DIR}/bin", files=listed)


def base_command(checks: list[str]) -> str:
    """The layer's base step: every check on the whole base tree, its output kept in BASE_DIR
    (parsed by whoever reads it: grading, `tasks check`)."""
    parts = [f"mkdir -p {BASE_DIR}"]
    for check in checks:
        name = split(check)[0]
        parts.append(f"( {run_command(check, None)} ) > {BASE_DIR}/{name}.out 2>&1 || true")
    return "\n".join(parts)


def layer(backend: Backend, task_image: str, checks: list[str], log: Callable[[str], None] | None = None) -> BuiltImage:
    """The checks layer of `task_image` with `checks` (built once, then found by its tag; found
    once per process: a task image's tag names its content)."""
    key = (task_image, tuple(checks))
    with _inferred_lock:
        if key in _layers:
            return _layers[key]
    # the tools go in CHECKS_DIR alone: installed once per environment, copied into each task's layer
    built = backend.checks_image(
        task_image, install_commands(checks), (base_command(checks),), log, tools_dir=CHECKS_DIR
    )
    with _inferred_lock:
        _layers[key] = BuiltImage(built.tag, built.id, cached=True)
    return built


# ------------------------------------------------------------------------------------ counting


def counts(findings: list[Finding]) -> Counter[str]:
    return Counter(f.key for f in findings)


def new_findings(check: str, base: Counter[str], now: list[Finding]) -> list[NewFinding]:
    """The findings of `now` beyond the base's count of their key (none moved by a line shift)."""
    first = {f.key: f for f in reversed(now)}
    out = []
    for key, n in counts(now).items():
        extra = n - base.get(key, 0)
        if extra > 0:
            f = first[key]
            out.append(NewFinding(check=split(check)[0], file=f.file, rule=f.rule, message=f.message, count=extra))
    return out


# ------------------------------------------------------------------------------------ measuring


def checks_of(task_checks: list[str] | None, backend: Backend, image: str, limits: Limits) -> list[str]:
    """The task's checks: its `checks:` when given, else inferred from the base in `image` (once
    per image id in this process)."""
    if task_checks is not None:
        return list(task_checks)
    try:
        key = backend.image_id(image)
    except SandboxError:
        key = image
    with _inferred_lock:
        if key in _inferred:
            return list(_inferred[key])
    with backend.start(image, limits=limits.with_(network=False), role="grading") as sb:
        texts: dict[str, str | None] = {}
        for path in INFERRED_FROM:
            try:
                texts[path] = sb.read_file(path, max_bytes=2_000_000).decode("utf-8", "replace")
            except FileOpError:
                texts[path] = None
        listed = sb.exec(
            ["sh", "-c", f"ls {WORKFLOWS}/*.yml {WORKFLOWS}/*.yaml 2>/dev/null; true"], timeout=limits.setup_timeout_s
        )
        workflows = []
        for path in listed.stdout.split()[:20]:
            try:
                workflows.append(sb.read_file(path, max_bytes=1_000_000).decode("utf-8", "replace"))
            except FileOpError:
                continue
        # the toolchains an image must bring (nothing is installed for Go's or Rust's checks)
        # (one name a `command -v`: dash's stops at the first it does not find)
        has = sb.exec(
            ["sh", "-c", f'for c in {TOOLCHAIN_COMMANDS}; do command -v "$c"; done; true'],
            timeout=limits.setup_timeout_s,
        )
        toolchains = frozenset(line.rsplit("/", 1)[-1] for line in has.stdout.split())
    found = infer(texts.get, toolchains, tuple(workflows))
    with _inferred_lock:
        _inferred[key] = found
    return list(found)


BASE_KEYS = 2000  # base findings kept per check in the check's record (the totals are whole)


class BaseChecks(BaseModel):
    """What `tasks check` records of the repository's own checks at the task's base: the checks,
    the layer that holds their run on the base tree (and the type checkers' caches), and the base's
    findings counted by key (file | rule | normalised message), per check."""

    checks: list[str] = Field(default_factory=list)
    image: str = ""  # the checks layer's tag
    totals: dict[str, int] = Field(default_factory=dict)
    findings: dict[str, dict[str, int]] = Field(default_factory=dict)
    seconds: float = 0.0  # building the layer (its tools, their run on the base), or finding it
    error: str | None = None


def base_checks(task_checks: list[str] | None, image: str, backend: Backend, limits: Limits) -> BaseChecks:
    """Infer the checks and make the checks layer of `image` (at check time, so grading finds it
    built and the type checkers' caches warm); the base's findings, read back from it. Never raises."""
    import time

    started = time.monotonic()
    record = BaseChecks()
    try:
        record.checks = checks_of(task_checks, backend, image, limits)
        if not record.checks:
            return record
        built = layer(backend, image, record.checks)
        record.image = built.tag
        with backend.start(built.tag, limits=limits.with_(network=False), role="check") as sb:
            for check in record.checks:
                name = split(check)[0]
                found = counts(TOOLS[name].parse(_read_text(sb, f"{BASE_DIR}/{name}.out")))
                record.totals[name] = sum(found.values())
                record.findings[name] = dict(sorted(found.items())[:BASE_KEYS])
    except SandboxError as exc:
        record.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    finally:
        record.seconds = round(time.monotonic() - started, 3)
    return record


def measure_own_checks(
    checks: list[str],
    patch: str,
    files: list[str],
    image: str,
    backend: Backend,
    limits: Limits,
    run_id: str = "",
    gold: str = "",
) -> OwnChecks:
    """Run `checks` on `files` (the patched files) with `patch` applied in a container of the checks
    layer of `image`, network off, the config files put back to the base's and the inline check
    settings the patch adds (`unsilence`; those `gold` adds too kept) taken out; the findings beyond
    the base's. Never raises: a failure is recorded as `error` (the axis is then not measured)."""
    import time

    started = time.monotonic()
    result = OwnChecks(checks=list(checks))
    patch, unsilenced = unsilence(patch, gold)
    result.unsilenced = unsilenced[:EVIDENCE_FINDINGS]
    try:
        built = layer(backend, image, checks)
        with backend.start(built.tag, limits=limits.with_(network=False), role="grading", run_id=run_id) as sb:
            configs = [f for f in files if is_config(f)]
            sb.write_file(DIFF, patch)
            prepared = sb.exec(_prepare_script(configs, files), timeout=limits.step_timeout_s)
            if prepared.returncode == 3 or not prepared.ok:
                result.error = "the graded patch does not apply in the checks layer: " + prepared.combined()[-300:]
                return result
            live = set(prepared.stdout.split("\n"))
            for check in checks:
                tool = TOOLS[split(check)[0]]
                mine = [f for f in files if f in live and f.endswith(tool.extensions) and not is_config(f)]
                result.files = sorted(set(result.files) | set(mine))
                if not mine:
                    continue
                ran = sb.exec(
                    run_command(check, None if tool.whole else mine),
                    timeout=limits.command_timeout_s,
                    output_bytes=5_000_000,
                )
                if ran.timed_out:
                    result.error = f"{check} did not finish within {limits.command_timeout_s:g}s"
                    return result
                if ran.truncated:  # a cut report loses findings: not measured, never "none found"
                    result.error = f"{check} wrote {ran.output_bytes:,} bytes, more than grading reads"
                    return result
                if tool.json and not _is_json(ran.stdout):
                    result.error = f"{check} gave no JSON report: {ran.combined().strip()[-200:]}"
                    return result
                now = tool.parse(ran.stdout + "\n" + ran.stderr)
                base_out = _read_text(sb, f"{BASE_DIR}/{split(check)[0]}.out")
                # a tool run on packages reports on every file of them: the base's counts of all files
                base = Counter(
                    {
                        k: n
                        for k, n in counts(tool.parse(base_out)).items()
                        if tool.packages or tool.whole or k.split(KEY_SEP)[0] in mine
                    }
                )
                result.base_total += sum(base.values())
                result.new += new_findings(check, base, now)
    except SandboxError as exc:
        result.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return result
    finally:
        result.seconds = round(time.monotonic() - started, 3)
    result.new_total = sum(n.count for n in result.new)
    result.new = result.new[:EVIDENCE_FINDINGS]
    return result


def _prepare_script(configs: list[str], files: list[str]) -> str:
    """One command: apply the patch with the appliers grading tries, in its order (exit 3 when none
    does), put the config files back to the base's (a new one removed), list which files exist."""
    quoted = " ".join(shlex.quote(f) for f in files)
    lines = [
        f"{{ git apply --whitespace=nowarn {DIFF} || git apply --3way --whitespace=nowarn {DIFF} "
        f"|| patch -p1 --fuzz=5 --batch -i {DIFF}; }} > {DIFF}.log 2>&1 || {{ cat {DIFF}.log; exit 3; }}",
    ]
    for path in configs:  # the checks read their settings from the base, never from the patch
        q = shlex.quote(path)
        lines.append(f"git checkout -q HEAD -- {q} 2>/dev/null || rm -f -- {q}")
    lines.append(f"git -c core.quotePath=false ls-files --cached --others -- {quoted}")
    return "\n".join(lines)


def _read_text(sb: Sandbox, path: str) -> str:
    try:
        return sb.read_file(path, max_bytes=50_000_000).decode("utf-8", "replace")
    except FileOpError:
        return ""
