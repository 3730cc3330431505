"""Secrets in tasks: every mined or imported task is scanned before anything runs.

The scanner is detect-secrets (Yelp's maintained library: its default plugins and filters, not a
list of regular expressions of ours). Scanned: the problem statement; the files the gold patch and
the hidden tests change, as they are after the fix commit, counting only the lines the commit
adds (a patch holds only those); and every file of the snapshot the task's image is built from
(the repository at the base commit, less the .env-like files that never enter an image).
Per-file results are cached by blob id and whole-tree results by tree id (the cache folder's
secrets.sqlite), so mining again scans only what changed.

Known false positives (test vectors, hashes) go in a baseline file in detect-secrets' own format
(`detect-secrets scan > .secrets.baseline`): a finding whose file, rule and hashed secret are in
it is not reported. A finding refuses the task, naming file, line and rule; with `--redact`, the
findings in the statement and the patches are replaced by `<redacted:RULE>` instead (findings in
the base tree cannot be, and still refuse).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import tempfile
import threading
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path, PurePosixPath

from sandbox import cache_dir, env_like

from .gitrepo import GitRepo, MineError

SCAN_FORMAT = 1
_lock = threading.Lock()


@dataclass
class Finding:
    file: str  # repository path, "statement", or a patch file name
    line: int  # 1-based
    rule: str  # the detect-secrets type, e.g. "AWS Access Key"
    hashed_secret: str  # sha1 of the secret, as detect-secrets baselines hold it
    where: str = "snapshot"  # statement | gold | tests | snapshot | patch
    value: str | None = field(default=None, repr=False)  # in memory only, for --redact; never written

    def label(self) -> str:
        return f"{self.file}:{self.line} {self.rule}"

    def record(self) -> dict:
        return {
            "file": self.file,
            "line": self.line,
            "rule": self.rule,
            "where": self.where,
            "hashed_secret": self.hashed_secret,
        }


def scanner_version() -> str:
    try:
        return metadata.version("detect-secrets")
    except metadata.PackageNotFoundError:
        raise MineError(
            "the secret scanner detect-secrets is not installed: pip install 'detect-secrets>=1.5'"
        ) from None


class SecretScanner:
    """detect-secrets with its defaults, a blob/tree cache, and an optional baseline."""

    def __init__(self, baseline: Path | str | None = None) -> None:
        self.version = scanner_version()
        self.key = f"{SCAN_FORMAT}:detect-secrets-{self.version}:default"
        self.baseline = load_baseline(baseline) if baseline else set()
        self.baseline_path = str(baseline) if baseline else None
        self._db_path = cache_dir() / "secrets.sqlite"

    # ------------------------------------------------------------------ scanning

    def _scan_files(self, files: dict[str, bytes]) -> dict[str, list[Finding]]:
        """Findings per path for in-memory file contents (values kept, for redaction)."""
        from detect_secrets.core.scan import scan_file
        from detect_secrets.settings import default_settings

        out: dict[str, list[Finding]] = {path: [] for path in files}
        with tempfile.TemporaryDirectory(prefix="wholeloop-secrets-") as tmp, _quiet_logs(), default_settings():
            for path, data in files.items():
                if b"\0" in data[:8192]:
                    continue  # binary
                dest = Path(tmp) / "f" / path
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(data)
                found: dict[tuple[int, str, str], str | None] = {}
                for secret in scan_file(str(dest)):
                    key = (secret.line_number, secret.type, secret.secret_hash)
                    found.setdefault(key, secret.secret_value)
                out[path] = [
                    Finding(path, line, rule, hashed, value=value)
                    for (line, rule, hashed), value in sorted(found.items())
                ]
        return out

    def scan_text(self, name: str, text: str, where: str = "statement") -> list[Finding]:
        found = self._scan_files({name: text.encode("utf-8", "surrogateescape")})[name]
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
        scanned = self._scan_files({p: data for p, data in contents.items() if data is not None})
        for path, where in targets:
            if contents.get(path) is None:
                continue
            added = repo.added_lines(parent, sha, path)
            for f in scanned.get(path, []):
                if f.line in added:
                    f.where = where
                    findings.append(f)
        return self._known_out(findings)

    def scan_tree(self, repo: GitRepo, sha: str, keep: tuple[str, ...] = ()) -> list[Finding]:
        """Every file of the tree at `sha` that a snapshot keeps, cached by tree and by blob."""
        tree = repo.tree(sha)
        tree_key = f"{self.key}:tree:{tree}:{json.dumps(sorted(keep))}"
        cached = self._get(tree_key)
        if cached is None:
            files = [(blob, path) for blob, path in repo.files(sha) if not env_like(path, keep)]
            blob_keys = {path: f"{self.key}:blob:{blob}:{PurePosixPath(path).name}" for blob, path in files}
            results: dict[str, list[dict]] = {}
            todo = []
            for blob, path in files:
                hit = self._get(blob_keys[path])
                if hit is None:
                    todo.append((blob, path))
                else:
                    results[path] = hit
            contents = repo.blobs([blob for blob, _ in todo])
            scanned = self._scan_files({path: contents.get(blob, b"") for blob, path in todo})
            for _blob, path in todo:
                rows = [_stored(f) for f in scanned.get(path, [])]
                self._put(blob_keys[path], rows)
                results[path] = rows
            cached = [dict(row, file=path) for path in sorted(results) for row in results[path]]
            self._put(tree_key, cached)
        findings = [Finding(r["file"], r["line"], r["rule"], r["hashed_secret"], "snapshot") for r in cached]
        return self._known_out(findings)

    def scan_patch(self, name: str, patch: str, where: str) -> list[Finding]:
        """A patch's added lines (for imported tasks, whose fix commit may not be at hand);
        lines are those of the patch file."""
        found = self.scan_text(name, patch, where)
        lines = patch.splitlines()
        return [f for f in found if 0 < f.line <= len(lines) and lines[f.line - 1].startswith("+")]

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


def _stored(f: Finding) -> dict:
    return {"line": f.line, "rule": f.rule, "hashed_secret": f.hashed_secret}  # never the value


def redact(text: str, findings: list[Finding]) -> str:
    """`text` with each finding's secret value replaced by <redacted:RULE>."""
    values = [(f.value, f.rule) for f in findings if f.value]
    for value, rule in sorted(values, key=lambda v: -len(v[0])):
        text = text.replace(value, f"<redacted:{rule.replace(' ', '-')}>")
    return text


def load_baseline(path: Path | str) -> set[tuple[str, str, str]]:
    """(file, rule, hashed secret) of a detect-secrets baseline; file "*" matches any file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise MineError(f"{path}: cannot read the secrets baseline: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise MineError(
            f"{path}: the secrets baseline is not JSON ({exc.msg}); write it with "
            "`detect-secrets scan > .secrets.baseline`"
        ) from None
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, dict):
        raise MineError(f"{path}: not a detect-secrets baseline (no 'results' mapping)")
    known = set()
    for file, entries in results.items():
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and "type" in entry and "hashed_secret" in entry:
                known.add((str(file), str(entry["type"]), str(entry["hashed_secret"])))
    return known


def hashed(secret: str) -> str:
    """What a baseline holds for a secret (detect-secrets hashes it with sha1)."""
    return hashlib.sha1(secret.encode()).hexdigest()


@contextlib.contextmanager
def _quiet_logs():
    """detect-secrets logs a warning per file it cannot decode; those are not findings."""
    import logging

    logger = logging.getLogger("detect-secrets")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)
