"""The secret scan of mined tasks: it refuses only credentials with a verifiable structure, finds
them wherever they sit (lock files, UTF-16 files), lists the guesses as warnings, and honours a
detect-secrets baseline's filters. Every secret here is put together at run time, so no file of
ours holds one. The realism set (real files from the registries) is measured by
scripts/bench_secrets.py; a part of it runs here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from support import git, write

from harness.authoring.gitrepo import GitRepo
from harness.authoring.lockfiles import blank, pinned_values
from harness.authoring.secrets import BaselineError, SecretScanner, decode, load_baseline

ROOT = Path(__file__).resolve().parent.parent
AWS = "AKIA" + "J7QW3RZ2XK5TN4HV"
GITHUB = "ghp" + "_" + "N8fQ2xLm4KpR7sT1vW3yZ6bC9dE0gH5jA2kM"
INTEGRITY = "sha512-" + "q" * 40 + "Zm9vYmFy" + "Q" * 38 + "=="


def wholeloop(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, cwd=cwd, env=env
    )


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WHOLELOOP_CACHE", str(tmp_path / "cache"))


def _repo(tmp_path: Path, files: dict[str, bytes]) -> tuple[Path, str, str]:
    """A repository whose second commit is a fix with its test, on top of a base holding `files`."""
    repo = tmp_path / "pkg"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, {"pkg/__init__.py": "X = 1\n", "tests/test_x.py": "def test_x():\n    pass\n"})
    for name, data in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    write(repo, {"pkg/__init__.py": "X = 2\n", "tests/test_x.py": "def test_x():\n    assert 1\n"})
    git(repo, "commit", "-qam", "fix X")
    return repo, base, git(repo, "rev-parse", "HEAD")


# ----------------------------------------------------------------------------- misses (issue 21's attacks)


def test_a_token_in_a_lock_file_is_found_and_refuses_the_task(tmp_path):
    """Attack: a GitHub token in Pipfile.lock passed (detect-secrets skips lock files by name and
    `.lock` files as binary). Every lock format is read now; its checksums are dropped, the rest scanned."""
    pipfile = {
        "_meta": {"hash": {"sha256": "5" * 64}, "sources": [{"url": "https://pypi.org/simple", "name": "pypi"}]},
        "default": {"corp-lib": {"git": f"https://{GITHUB}@github.com/corp/lib.git", "ref": "a1b2c3d" * 5 + "a1b2c"}},
    }
    repo, base, fix = _repo(tmp_path, {"Pipfile.lock": json.dumps(pipfile, indent=4).encode()})
    found = SecretScanner().scan_tree(GitRepo.open(repo), base)
    assert [(f.file, f.line, f.rule, f.severity) for f in found] == [("Pipfile.lock", 15, "GitHub Token", "secret")]
    out = tmp_path / "out"
    result = wholeloop("tasks", "from-commit", str(repo), fix, "--out", str(out), "--no-check")
    assert "refused: secret found: Pipfile.lock:15 GitHub Token" in result.stdout, result.stdout + result.stderr
    assert not list(out.glob("*.yaml"))


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_aws_keys_in_a_utf16_file_are_found(tmp_path, encoding):
    """Attack: AWS keys in a UTF-16 file passed (a NUL byte made it "binary"). With or without a BOM."""
    text = f"[default]\r\naws_access_key_id = {AWS}\r\n"
    repo, base, _ = _repo(tmp_path, {"deploy/credentials.ini": text.encode(encoding)})
    found = SecretScanner().scan_tree(GitRepo.open(repo), base)
    assert [(f.file, f.line, f.rule, f.severity) for f in found] == [
        ("deploy/credentials.ini", 2, "AWS Access Key", "secret")
    ]


def test_text_in_any_encoding_is_read_and_binary_is_not():
    assert decode("é\n".encode("latin-1")) == "é\n"
    assert decode("x = 1\n".encode("utf-16-le")) == "x = 1\n"
    assert decode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00") is None


# ----------------------------------------------------------------------------- false refusals


def test_a_lock_file_full_of_integrity_hashes_and_pinned_commits_is_not_refused():
    sha = "0123456789abcdef0123456789abcdef01234567"
    pnpm = "lockfileVersion: '9.0'\npackages:\n" + "".join(
        f"  pkg{i}@1.0.{i}:\n    resolution: {{integrity: sha512-{INTEGRITY[7:-4]}{i:04d}==}}\n" for i in range(50)
    )
    pnpm += f"  corp@1.0.0:\n    resolution: {{commit: {sha}, repo: https://github.com/corp/x, type: git}}\n"
    yarn = f'a@^1:\n  version "1.0.0"\n  resolved "https://registry.yarnpkg.com/a/-/a-1.0.0.tgz#{sha}"\n  integrity {INTEGRITY}\n'
    pre_commit = (
        f"repos:\n- repo: https://github.com/psf/black\n  rev: {sha}  # frozen: 24.1.0\n  hooks:\n  - id: black\n"
    )
    go_sum = "github.com/google/uuid v1.3.0 h1:t6JiXgmwXMjEs8VusXIJk2BXHsn+wx8BZdTaoZ5fu7I=\n"
    files = {
        "web/pnpm-lock.yaml": pnpm.encode(),
        "web/yarn.lock": yarn.encode(),
        ".pre-commit-config.yaml": pre_commit.encode(),
        "go.sum": go_sum.encode(),
    }
    found = SecretScanner().scan_files(files)
    assert found == {path: [] for path in files}  # not even a warning: checksums and pins are dropped
    assert pinned_values("go.sum", go_sum) == {"h1:t6JiXgmwXMjEs8VusXIJk2BXHsn+wx8BZdTaoZ5fu7I="}
    assert blank(yarn, pinned_values("yarn.lock", yarn)).count("\n") == yarn.count("\n")  # lines stay


def test_uuids_test_urls_and_keyword_guesses_are_warnings_never_refusals(tmp_path):
    ids = "\n".join(f"    ('{uuid.uuid4()}', '{uuid.uuid4().hex}')," for _ in range(30))
    files = {
        "tests/test_ids.py": f"CASES = [\n{ids}\n]\n".encode(),
        "tests/test_urls.py": b'URL = "https://john:doe@example.com/path"\n',
        "docs/usage.md": b'password = "Tr0ub4dor3x"  # your database password\n',
        "tests/test_cli.py": b'HELP = "--password TEXT  the password to use"\nassert run(["--password", "hunter22"])\n',
    }
    scanner = SecretScanner()
    found = scanner.scan_files(files)
    assert not scanner.refusing([f for fs in found.values() for f in fs])
    warned = {(f.file, f.line, f.rule) for fs in found.values() for f in fs}
    assert ("tests/test_urls.py", 1, "Basic Auth Credentials") in warned
    assert ("docs/usage.md", 1, "Secret Keyword") in warned
    # a team that opts in to strict mode refuses on every finding
    strict = SecretScanner(strict=True)
    assert {f.label() for f in strict.refusing([f for fs in strict.scan_files(files).values() for f in fs])} == {
        f"{file}:{line} {rule}" for file, line, rule in warned
    }


def test_a_jwt_refuses_in_source_and_is_an_example_in_docs():
    """Found mining pallets/itsdangerous as a user would: its docs/jws.rst shows a JWT, and that
    refused every candidate."""
    import base64

    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
    body = base64.urlsafe_b64encode(b'{"sub":"bot"}').rstrip(b"=").decode()
    token = f"{header}.{body}.{'x9' * 21}X"
    found = SecretScanner().scan_files(
        {"docs/jws.rst": f"    >>> s.loads('{token}')\n".encode(), "app/auth.py": f"T = '{token}'\n".encode()}
    )
    assert [(f.rule, f.severity) for f in found["docs/jws.rst"]] == [("JSON Web Token", "warning")]
    assert [(f.rule, f.severity) for f in found["app/auth.py"]] == [("JSON Web Token", "secret")]


def test_a_url_with_real_looking_credentials_outside_tests_refuses():
    scanner = SecretScanner()
    found = scanner.scan_files(
        {
            "app/settings.py": b'DB = "postgres://app:Zk3Lp9QwX7vB@db.corp.internal:5432/app"\n',
            "app/example.py": b'DB = "postgres://app:Zk3Lp9QwX7vB@db.example.com/app"\n',
            "app/local.py": b'DB = "postgres://app:changeme@db.corp.internal/app"\n',
        }
    )
    assert [(f.rule, f.severity) for f in found["app/settings.py"]] == [("Basic Auth Credentials", "secret")]
    assert [f.severity for f in found["app/example.py"] + found["app/local.py"]] == ["warning", "warning"]


def test_the_realism_set_has_no_false_refusal_and_the_planted_set_no_miss(tmp_path):
    """Real lock files (npm, uv, poetry, pdm, Pipfile, go.sum), UUID libraries' tests and pre-commit
    configs from the registries (sha256-pinned; downloaded once into the cache), and the planted
    credentials of scripts/bench_secrets.py."""
    out = tmp_path / "figures.json"
    only = "pydata-sphinx-theme,mcp,uuid6,shortuuid,poetry,pdm,pipfile-requirements,golang-github-prometheus-client-golang-dev"
    cache = Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "wholeloop"
    env = {**os.environ, "WHOLELOOP_CACHE": str(cache)}  # the downloads are kept between runs
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_secrets.py"), "--only", only, "--json", str(out), "--quiet"],
        capture_output=True,
        text=True,
        env=env,
    )
    if not out.exists() and "urlopen" in proc.stderr + proc.stdout and not os.environ.get("CI"):
        pytest.skip(f"the realism set cannot be downloaded here: {proc.stderr.strip()[-300:]}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = json.loads(out.read_text())
    assert figures["planted"]["found"] == figures["planted"]["cases"] >= 20
    realism = figures["realism"]
    assert realism["refusals"] == 0 and realism["lock_files"] >= 15 and realism["files"] >= 60, realism


# ----------------------------------------------------------------------------- the baseline


def test_a_baselines_exclude_files_and_exclude_lines_are_honoured(tmp_path):
    baseline = tmp_path / ".secrets.baseline"
    baseline.write_text(
        json.dumps(
            {
                "version": "1.5.0",
                "plugins_used": [{"name": "AWSKeyDetector"}, {"name": "GitHubTokenDetector"}],
                "filters_used": [
                    {"path": "detect_secrets.filters.regex.should_exclude_file", "pattern": ["^vendor/"]},
                    {"path": "detect_secrets.filters.regex.should_exclude_line", "pattern": ["pragma: test-vector"]},
                ],
                "results": {},
            }
        )
    )
    files = {
        "vendor/lib/keys.py": f"K = '{AWS}'\n".encode(),
        "app/keys.py": f"K = '{AWS}'  # pragma: test-vector\nT = '{GITHUB}'\n".encode(),
    }
    found = SecretScanner(baseline).scan_files(files)
    assert found["vendor/lib/keys.py"] == []
    assert [(f.line, f.rule) for f in found["app/keys.py"]] == [(2, "GitHub Token")]
    default = SecretScanner().scan_files(files)["app/keys.py"]  # without the baseline: both
    assert [(f.line, f.rule) for f in default if f.severity == "secret"] == [(1, "AWS Access Key"), (2, "GitHub Token")]


def test_a_baseline_that_is_not_detect_secrets_format_gets_one_line_saying_what_to_do(tmp_path):
    gitleaks = tmp_path / "gitleaks.json"
    gitleaks.write_text(json.dumps([{"RuleID": "aws-access-token", "File": "a.py", "StartLine": 1}]))
    with pytest.raises(BaselineError, match="it is a gitleaks report") as caught:
        load_baseline(gitleaks)
    assert "detect-secrets scan > .secrets.baseline" in caught.value.hint
    repo, _, fix = _repo(tmp_path, {})
    result = wholeloop(
        "tasks", "from-commit", str(repo), fix, "--out", str(tmp_path / "out"), "--no-check",
        "--secrets-baseline", str(gitleaks),
    )  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a detect-secrets baseline (it is a gitleaks report)" in lines[0]
    assert "detect-secrets scan > .secrets.baseline" in lines[0]
