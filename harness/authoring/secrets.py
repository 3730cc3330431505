"""Secrets in tasks: every mined or imported task is scanned before anything runs.

The scanner is detect-secrets (Yelp's maintained library: its plugins and filters, not a list of
regular expressions of ours). Scanned: the problem statement; the files the gold patch and the
hidden tests change, as they are after the fix commit, counting only the lines the commit adds (a
patch holds only those); and every file of the snapshot the task's image is built from (the
repository at the base commit, less the .env-like files that never enter an image). Per-file
results are cached by blob id and whole-tree results by tree id (the cache folder's
secrets.sqlite), so mining again scans only what changed.

Two kinds of finding (`Finding.severity`):

- `secret` refuses the task: a credential with a structure a detector verifies (cloud keys, provider
  tokens, private keys, ...), and a JWT or a URL with credentials outside tests and docs (for a URL:
  whose host and password are not placeholders; `https://user:pass@example.com` in a test is not one);
- `warning` is listed (file, line, rule) and refuses nothing: the entropy and keyword detectors,
  public IP addresses, a placeholder credential (AWS's documented `...EXAMPLE` keys). A team that
  wants every finding to refuse opts in with `strict`.

Every file is read as text whatever its encoding: UTF-8, UTF-16/32 with or without a BOM, else
Latin-1 (so a key in a Windows-saved file is found); a file with NUL bytes that is not UTF-16/32
is binary and skipped. Lock files and `.pre-commit-config.yaml` are parsed (harness.authoring.
lockfiles): their checksums and pinned commits are blanked and the rest scanned, lock files included.

A detect-secrets baseline (`detect-secrets scan > .secrets.baseline`) is honoured as detect-secrets
honours it: its findings (file, rule, hashed secret) are known and not reported, and its
`plugins_used` and `filters_used` configure the scan (`--exclude-files`, `--exclude-lines`,
`--exclude-secrets`, plugin limits). With `--redact`, refusing findings in the statement and the
patches are replaced by `<redacted:RULE>` instead (findings in the base tree cannot be, and still
refuse).
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import json
import re
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Literal
from urllib.parse import urlsplit

from sandbox import cache_dir, env_like

from .gitrepo import GitRepo, MineError
from .lockfiles import blank, is_pin_file, pinned_values

SCAN_FORMAT = 3  # 2: severities, any encoding, lock files parsed, baseline filters; 3: JWTs in tests/docs warn
_lock = threading.Lock()  # the cache database
_scan_lock = threading.Lock()  # detect-secrets' settings are one global object

Severity = Literal["secret", "warning"]
# The detectors that guess (entropy, a keyword next to a value) or find what is no credential (a
# public IP): their findings are warnings. Every other plugin verifies a credential's structure.
GUESSING_PLUGINS = ("Base64HighEntropyString", "HexHighEntropyString", "KeywordDetector", "IPPublicDetector")
BASIC_AUTH = "Basic Auth Credentials"
JWT = "JSON Web Token"
# What tests and documentation show as examples: a URL with credentials, a JWT (a JWT library's docs
# and tests are full of them: itsdangerous' docs/jws.rst refused every commit). Elsewhere they refuse.
EXAMPLE_PRONE = (BASIC_AUTH, JWT)
# Hosts that are never real (RFC 2606 and 6761) and passwords that say they are not one.
PLACEHOLDER_HOSTS = re.compile(
    r"(^|\.)(example\.(com|org|net)|example|test|invalid|localhost|local)$|^(127\.|0\.0\.0\.0$|\[?::1\]?$)", re.I
)
PLACEHOLDER_PASSWORDS = re.compile(
    r"^(pass(word|wd)?|secret|pwd|changeme|xxx+|\*+|x+|test\w*|dummy\w*|example\w*|foo|bar|baz|qux|doe|"
    r"hunter2|letmein|tiger|p@?ssw0?rd|<[^>]*>|\$\{?\w+\}?|%\(?\w+\)?s?|\{+[^}]*\}+)$",
    re.I,
)
# Folders and names of tests, test data and documentation: a URL with credentials there is an
# example (the other structured credentials refuse anywhere: a real key is real wherever it sits).
_TEST_OR_DOCS_DIRS = {
    "test", "tests", "testing", "__tests__", "spec", "specs", "testdata", "test_data", "fixtures",
    "docs", "doc", "documentation", "examples", "example", "samples",
}  # fmt: skip
_TEST_OR_DOCS_NAME = re.compile(
    r"^(test_.*|.*_tests?\.\w+|.*\.(test|spec)\.\w+|conftest\.py|.*\.(md|rst|txt|adoc))$", re.I
)


@dataclass
class Finding:
    file: str  # repository path, "statement", or a patch file name
    line: int  # 1-based
    rule: str  # the detect-secrets type, e.g. "AWS Access Key"
    hashed_secret: str  # sha1 of the secret, as detect-secrets baselines hold it
    where: str = "snapshot"  # statement | gold | tests | snapshot | patch
    value: str | None = field(default=None, repr=False)  # in memory only, for --redact; never written
    severity: Severity = "secret"

    def label(self) -> str:
        return f"{self.file}:{self.line} {self.rule}"

    def refuses(self, strict: bool = False) -> bool:
        return strict or self.severity == "secret"

    def record(self) -> dict:
        return {
            "file": self.file,
            "line": self.line,
            "rule": self.rule,
            "where": self.where,
            "hashed_secret": self.hashed_secret,
            "severity": self.severity,
        }


class BaselineError(MineError):
    """A secrets baseline that cannot be used as one."""

    hint = (
        "Write the baseline with detect-secrets itself: `detect-secrets scan > .secrets.baseline` "
        "(or pass another with --secrets-baseline); docs/tasks.md, Secrets."
    )


def scanner_version() -> str:
    try:
        return metadata.version("detect-secrets")
    except metadata.PackageNotFoundError:
        raise MineError(
            "the secret scanner detect-secrets is not installed: pip install 'detect-secrets>=1.5'"
        ) from None


# ----------------------------------------------------------------------------- reading any text


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def decode(data: bytes) -> str | None:
    """A file's text whatever its encoding (see the module docstring); None for a binary file."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError:
                break
    sample = data[:8192]
    if b"\0" in sample:
        even, odd = sample[0::2], sample[1::2]
        # UTF-16 without a BOM: ASCII text has a NUL in every other byte, on one side only
        for encoding, nuls, chars in (("utf-16-le", odd, even), ("utf-16-be", even, odd)):
            if nuls.count(0) > 0.4 * len(nuls) and chars.count(0) < 0.05 * max(1, len(chars)):
                try:
                    return data[: len(data) // 2 * 2].decode(encoding)
                except UnicodeDecodeError:
                    return None
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")  # every byte is a character: what is ASCII in it stays so


# ----------------------------------------------------------------------------- how sure a finding is


def test_or_docs(path: str) -> bool:
    """A path of tests, test data or documentation (any language's usual names)."""
    parts = PurePosixPath(path).parts
    return any(p.lower() in _TEST_OR_DOCS_DIRS for p in parts[:-1]) or bool(_TEST_OR_DOCS_NAME.match(parts[-1]))


def _url_with(line: str, password: str) -> tuple[str, str] | None:
    """(host, user) of the URL on `line` whose password is `password`."""
    for match in re.finditer(r"[A-Za-z][\w+.-]*://[^\s'\"<>`]+", line):
        try:
            parts = urlsplit(match.group())
            if parts.password == password or (parts.password and password in parts.password):
                return parts.hostname or "", parts.username or ""
        except ValueError:
            continue
    return None


def severity(rule: str, path: str, where: str, value: str | None, line_text: str, guessing: set[str]) -> Severity:
    """`secret` (refuses) or `warning` for one finding (the rules of the module docstring)."""
    if rule in guessing:
        return "warning"
    if rule == JWT:
        return "warning" if where == "tests" or test_or_docs(path) else "secret"
    if rule == BASIC_AUTH:
        found = _url_with(line_text, value or "")
        placeholder = bool(value and PLACEHOLDER_PASSWORDS.match(value)) or bool(
            found and PLACEHOLDER_HOSTS.search(found[0])
        )
        return "warning" if placeholder or where == "tests" or test_or_docs(path) else "secret"
    if value and "EXAMPLE" in value:  # AWS's documented example keys (AKIAIOSFODNN7EXAMPLE, ...)
        return "warning"
    return "secret"


# ----------------------------------------------------------------------------- the scanner


class SecretScanner:
    """detect-secrets (configured by the baseline when there is one), a blob/tree cache, and the
    findings split into refusing secrets and warnings."""

    def __init__(self, baseline: Path | str | None = None, *, strict: bool = False) -> None:
        self.version = scanner_version()
        self.strict = strict
        loaded = load_baseline(baseline) if baseline else Baseline()
        self.baseline = loaded.known
        self.settings = loaded.settings
        self.baseline_path = str(baseline) if baseline else None
        config = hashlib.sha256(json.dumps(self.settings, sort_keys=True).encode()).hexdigest()[:12]
        self.key = f"{SCAN_FORMAT}:detect-secrets-{self.version}:{config}"
        self._db_path = cache_dir() / "secrets.sqlite"

    # ------------------------------------------------------------------ scanning

    @contextlib.contextmanager
    def _configured(self) -> Iterator[set[str]]:
        """detect-secrets set up as the baseline says (else every plugin, default filters), less
        its lock-file skip list (we parse lock files); yields the guessing detectors' types."""
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.settings import get_settings, transient_settings

        classes: dict[str, type] = dict(get_mapping_from_secret_type_to_class())
        config = dict(self.settings)
        config.setdefault("plugins_used", [{"name": cls.__name__} for cls in classes.values()])
        with _scan_lock, _quiet_logs(), contextlib.ExitStack() as stack:
            try:
                stack.enter_context(transient_settings(config))
            except (KeyError, OSError, ValueError, TypeError) as exc:
                raise BaselineError(
                    f"{self.baseline_path}: detect-secrets cannot use this baseline's plugins_used/filters_used "
                    f"({type(exc).__name__}: {exc})"
                ) from None
            get_settings().disable_filters("detect_secrets.filters.heuristic.is_lock_file")
            yield {t for t, cls in classes.items() if cls.__name__ in GUESSING_PLUGINS}

    def scan_files(self, files: dict[str, bytes]) -> dict[str, list[Finding]]:
        """Findings per path for in-memory file contents (values kept, for redaction)."""
        from detect_secrets.core.scan import scan_file
        from detect_secrets.filters.regex import should_exclude_file
        from detect_secrets.settings import get_settings

        out: dict[str, list[Finding]] = {path: [] for path in files}
        with tempfile.TemporaryDirectory(prefix="wholeloop-secrets-") as tmp, self._configured() as guessing:
            # the baseline's --exclude-files patterns match repository paths, as detect-secrets
            # matches them when it scans a checkout; our temporary copies have other paths
            filters = get_settings().filters
            excluding = "detect_secrets.filters.regex.should_exclude_file" in filters
            excluded = {p for p in files if excluding and should_exclude_file(p)}
            filters.pop("detect_secrets.filters.regex.should_exclude_file", None)
            for n, (path, data) in enumerate(files.items()):
                if path in excluded or PurePosixPath(path).name == ".secrets.baseline":
                    continue
                text = decode(data)
                if text is None:
                    continue  # binary
                pins = pinned_values(path, text)
                if pins:
                    text = blank(text, pins)
                # the name: detect-secrets' filters and transformers read it; but it skips `.lock`
                # and `.sum` files as if they were binary, and lock files are parsed here instead
                name = PurePosixPath(path).name + (".txt" if pins or is_pin_file(path) else "")
                dest = Path(tmp) / str(n) / name
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(text, encoding="utf-8", errors="surrogateescape")
                lines = text.splitlines()
                found: dict[tuple[int, str, str], str | None] = {}
                for secret in scan_file(str(dest)):
                    key = (secret.line_number, secret.type, secret.secret_hash)
                    found.setdefault(key, secret.secret_value)
                out[path] = [
                    Finding(
                        path,
                        line,
                        rule,
                        hashed,
                        value=value,
                        severity=severity(
                            rule, path, "", value, lines[line - 1] if 0 < line <= len(lines) else "", guessing
                        ),
                    )
                    for (line, rule, hashed), value in sorted(found.items())
                ]
        return out

    def scan_text(self, name: str, text: str, where: str = "statement") -> list[Finding]:
        found = self.scan_files({name: text.encode("utf-8", "surrogateescape")})[name]
        for f in found:
            f.where = where
        return self._known_out(found)

    def scan_commit(
        self, repo: GitRepo, parent: str, sha: str, statement: str, gold: list[str], tests: list[str]
    ) -> list[Finding]:
        """Statement, then the gold files, then the test files (each by path, then line, then
        rule): findings on lines the commit adds (anywhere in the statement)."""
        findings = self.scan_text("statement", statement)
        targets = [(p, "gold") for p in sorted(gold)] + [(p, "tests") for p in sorted(tests)]
        contents = {p: repo.read(sha, p) for p, _ in targets}
        scanned = self.scan_files({p: data for p, data in contents.items() if data is not None})
        for path, where in targets:
            if contents.get(path) is None:
                continue
            added = repo.added_lines(parent, sha, path)
            for f in scanned.get(path, []):
                if f.line in added:
                    f.where = where
                    if where == "tests" and f.rule in EXAMPLE_PRONE:
                        f.severity = "warning"  # a URL with credentials or a JWT in a test is an example
                    findings.append(f)
        return self._known_out(findings)

    def scan_tree(self, repo: GitRepo, sha: str, keep: tuple[str, ...] = ()) -> list[Finding]:
        """Every file of the tree at `sha` that a snapshot keeps, cached by tree and by blob."""
        tree = repo.tree(sha)
        tree_key = f"{self.key}:tree:{tree}:{json.dumps(sorted(keep))}"
        cached = self._get(tree_key)
        if cached is None:
            files = [(blob, path) for blob, path in repo.files(sha) if not env_like(path, keep)]
            # the path, not only the name: severities and the baseline's exclude-files read it
            blob_keys = {path: f"{self.key}:blob:{blob}:{path}" for blob, path in files}
            results: dict[str, list[dict]] = {}
            todo = []
            for blob, path in files:
                hit = self._get(blob_keys[path])
                if hit is None:
                    todo.append((blob, path))
                else:
                    results[path] = hit
            contents = repo.blobs([blob for blob, _ in todo])
            scanned = self.scan_files({path: contents.get(blob, b"") for blob, path in todo})
            for _blob, path in todo:
                rows = [_stored(f) for f in scanned.get(path, [])]
                self._put(blob_keys[path], rows)
                results[path] = rows
            cached = [dict(row, file=path) for path in sorted(results) for row in results[path]]
            self._put(tree_key, cached)
        findings = [
            Finding(r["file"], r["line"], r["rule"], r["hashed_secret"], "snapshot", severity=r["severity"])
            for r in cached
        ]
        return self._known_out(findings)

    def scan_patch(self, name: str, patch: str, where: str) -> list[Finding]:
        """A patch's added lines (for imported tasks, whose fix commit may not be at hand);
        lines are those of the patch file."""
        found = self.scan_text(name, patch, where)
        lines = patch.splitlines()
        found = [f for f in found if 0 < f.line <= len(lines) and lines[f.line - 1].startswith("+")]
        for f in found:
            if f.rule in EXAMPLE_PRONE and (where == "tests" or _patch_path(lines, f.line, test_or_docs)):
                f.severity = "warning"
        return found

    def refusing(self, findings: list[Finding]) -> list[Finding]:
        """The findings that refuse a task (all of them in strict mode)."""
        return [f for f in findings if f.refuses(self.strict)]

    def warnings(self, findings: list[Finding]) -> list[Finding]:
        return [f for f in findings if not f.refuses(self.strict)]

    # ------------------------------------------------------------------ baseline and redaction

    def _known_out(self, findings: list[Finding]) -> list[Finding]:
        return [
            f
            for f in findings
            if (f.file, f.rule, f.hashed_secret) not in self.baseline
            and ("*", f.rule, f.hashed_secret) not in self.baseline
        ]

    # ------------------------------------------------------------------ cache

    def _connect(self) -> sqlite3.Connection:
        self._db_path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self._db_path, timeout=30)
        db.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, findings TEXT NOT NULL)")
        return db

    def _get(self, key: str) -> list[dict] | None:
        with _lock, contextlib.closing(self._connect()) as db:
            row = db.execute("SELECT findings FROM results WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def _put(self, key: str, findings: list[dict]) -> None:
        with _lock, contextlib.closing(self._connect()) as db, db:
            db.execute("INSERT OR REPLACE INTO results (key, findings) VALUES (?, ?)", (key, json.dumps(findings)))


def _patch_path(lines: list[str], line: int, test: object) -> bool:
    """Whether line `line` (1-based) of a patch is in a file `test` says is tests or docs."""
    for text in reversed(lines[: line - 1]):
        if text.startswith("+++ "):
            path = text[4:].strip().removeprefix("b/")
            return bool(test(path)) if callable(test) else False
    return False


def _stored(f: Finding) -> dict:
    return {"line": f.line, "rule": f.rule, "hashed_secret": f.hashed_secret, "severity": f.severity}  # no value


def redact(text: str, findings: list[Finding]) -> str:
    """`text` with each finding's secret value replaced by <redacted:RULE>."""
    values = [(f.value, f.rule) for f in findings if f.value]
    for value, rule in sorted(values, key=lambda v: -len(v[0])):
        text = text.replace(value, f"<redacted:{rule.replace(' ', '-')}>")
    return text


@dataclass
class Baseline:
    known: set[tuple[str, str, str]] = field(default_factory=set)  # (file, rule, hashed secret)
    settings: dict = field(default_factory=dict)  # its plugins_used / filters_used


def load_baseline(path: Path | str) -> Baseline:
    """A detect-secrets baseline: its known findings ((file, rule, hashed secret); file "*"
    matches any file) and its scan settings. Raises BaselineError (one line) when it is not one."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read the secrets baseline: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
        raise BaselineError(f"{path}: the secrets baseline is not JSON ({why})") from None
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, dict):
        raise BaselineError(f"{path}: not a detect-secrets baseline ({_what_it_is(data)})")
    known = set()
    for file, entries in results.items():
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and "type" in entry and "hashed_secret" in entry:
                known.add((str(file), str(entry["type"]), str(entry["hashed_secret"])))
    settings = {}
    for key in ("plugins_used", "filters_used"):
        value = data.get(key)
        if value is not None:
            if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
                raise BaselineError(f"{path}: not a detect-secrets baseline ({key} is not a list of objects)")
            settings[key] = value
    return Baseline(known, settings)


def _what_it_is(data: object) -> str:
    """What a JSON document that is no detect-secrets baseline looks like, for the message."""
    first = data[0] if isinstance(data, list) and data else None
    if isinstance(first, dict) and "RuleID" in first:
        return "it is a gitleaks report"
    if isinstance(first, dict) and "DetectorName" in first or isinstance(data, dict) and "DetectorName" in data:
        return "it is a trufflehog report"
    if isinstance(data, list):
        return "a JSON list, where a baseline is an object with a 'results' mapping"
    return "no 'results' mapping of file to findings"


def hashed(secret: str) -> str:
    """What a baseline holds for a secret (detect-secrets hashes it with sha1)."""
    return hashlib.sha1(secret.encode()).hexdigest()


@contextlib.contextmanager
def _quiet_logs() -> Iterator[None]:
    """detect-secrets logs a warning per file it cannot decode; those are not findings."""
    import logging

    logger = logging.getLogger("detect-secrets")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
