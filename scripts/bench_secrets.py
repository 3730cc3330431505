"""Measure the secret scan of mined tasks: misses on a planted set, false refusals on real files.

Two sets, scanned with `harness.authoring.secrets.SecretScanner` exactly as mining scans a
repository's files:

- **planted**: credentials with a verifiable structure placed where real leaks hide (lock files of
  every format, UTF-16/32 files with and without a BOM, Latin-1 and CRLF files, a private key in
  tests, a pre-commit config whose revs are commit SHAs); built here at run time, so no file of
  ours holds one. Every one must be found, and refuse.
- **realism**: real files from the registries (tests/data/secrets/realism.json: PyPI sdists and
  Debian packages, each sha256-pinned): lock files full of integrity hashes (npm, pnpm, yarn,
  Cargo, go.sum, poetry, uv, pdm, Pipfile), UUID libraries' tests, pre-commit configs, a CLI
  library's help-text tests, documentation with `password=` and URLs with credentials. A refusal
  there is a false refusal; the target is none. Warnings are counted, not refused.

Downloads go to the wholeloop cache (fixtures/secrets) once, checked against their sha256; a
second run downloads nothing. Usage:

    python scripts/bench_secrets.py                # both sets, a table
    python scripts/bench_secrets.py --planted-only # no download
    python scripts/bench_secrets.py --only uuid6,mcp  # some artifacts of the realism set
    python scripts/bench_secrets.py --json out.json

Uses only public APIs of harness and sandbox.
"""

from __future__ import annotations

import argparse
import base64
import codecs
import fnmatch
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.authoring.secrets import SecretScanner  # noqa: E402
from sandbox import cache_dir  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "secrets" / "realism.json"


# ----------------------------------------------------------------------------- planted


def _alnum(seed: str, n: int, alphabet: str = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789") -> str:
    """n characters that look random (and are the same on every run)."""
    digest = b""
    counter = 0
    while len(digest) < n:
        digest += hashlib.sha256(f"{seed}:{counter}".encode()).digest()
        counter += 1
    return "".join(alphabet[b % len(alphabet)] for b in digest[:n])


def planted() -> list[tuple[str, bytes, str]]:
    """(path, content, the rule that must find it): each a credential with a verifiable structure."""
    aws = "AKIA" + _alnum("aws", 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
    github = "ghp" + "_" + _alnum("gh", 36)
    gitlab = "glpat" + "-" + _alnum("gl", 20)
    npm = "npm" + "_" + _alnum("npm", 36)
    slack = "xoxb" + "-" + "1234567890123-1234567890123-" + _alnum("slack", 24)
    stripe = "sk" + "_live_" + _alnum("stripe", 24)
    openai = "sk-" + _alnum("oa1", 20) + "T3Blbk" + "FJ" + _alnum("oa2", 20)
    pypi = "pypi" + "-AgEIcHlwaS5vcmc" + _alnum("pypi", 80)
    sendgrid = "SG" + "." + _alnum("sg1", 22) + "." + _alnum("sg2", 43)
    password = _alnum("pw", 14)
    url = f"postgres://app:{password}@db.corp.internal:5432/app"
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').rstrip(b"=").decode()
    body = base64.urlsafe_b64encode(b'{"sub":"deploy-bot","iat":1700000000}').rstrip(b"=").decode()
    jwt = f"{header}.{body}.{_alnum('jwt', 43)}"
    key_body = "\n".join(base64.b64encode(hashlib.sha512(f"k{i}".encode()).digest()).decode()[:64] for i in range(12))
    private_key = "-----BEGIN RSA " + f"PRIVATE KEY-----\n{key_body}\n-----END RSA " + "PRIVATE KEY-----\n"
    sha = hashlib.sha1(b"pin").hexdigest()
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(b"x").digest()).decode()
    aws_lines = f"[default]\naws_access_key_id = {aws}\nregion = eu-west-1\n"
    pipfile = {
        "_meta": {
            "hash": {"sha256": hashlib.sha256(b"p").hexdigest()},
            "sources": [{"name": "corp", "url": "https://pypi.corp.internal/simple", "verify_ssl": True}],
        },
        "default": {
            "corp-lib": {"git": f"https://{github}@github.com/corp/lib.git", "ref": sha},
            "requests": {"hashes": ["sha256:" + hashlib.sha256(b"r").hexdigest()], "version": "==2.31.0"},
        },
    }
    return [
        ("Pipfile.lock", json.dumps(pipfile, indent=4).encode(), "GitHub Token"),
        (
            "poetry.lock",
            f'[[package]]\nname = "corp-lib"\nversion = "1.0"\n\n[package.source]\ntype = "legacy"\n'
            f'url = "https://deploy:{password}@pypi.corp.internal/simple"\nreference = "corp"\n'.encode(),
            "Basic Auth Credentials",
        ),
        (
            "uv.lock",
            f'[[package]]\nname = "corp-lib"\nversion = "1.0"\nsource = {{ registry = "https://__token__:{pypi}'
            f'@upload.pypi.org/simple" }}\nsdist = {{ url = "https://x/corp-lib-1.0.tar.gz", hash = "sha256:'
            f'{hashlib.sha256(b"u").hexdigest()}" }}\n'.encode(),
            "PyPI Token",
        ),
        (
            "web/package-lock.json",
            json.dumps(
                {
                    "lockfileVersion": 3,
                    "packages": {
                        "node_modules/corp-ui": {
                            "version": "1.0.0",
                            "resolved": f"https://ci:{password}@npm.corp.internal/corp-ui/-/corp-ui-1.0.0.tgz",
                            "integrity": integrity,
                        }
                    },
                },
                indent=2,
            ).encode(),
            "Basic Auth Credentials",
        ),
        (
            "web/pnpm-lock.yaml",
            f"lockfileVersion: '9.0'\npackages:\n  corp-ui@1.0.0:\n    resolution: {{tarball: https://x-access-token:"
            f"{github}@codeload.github.com/corp/ui/tar.gz/{sha}}}\n  left-pad@1.3.0:\n    resolution: "
            f"{{integrity: {integrity}}}\n".encode(),
            "GitHub Token",
        ),
        (
            "web/yarn.lock",
            f'# yarn lockfile v1\n\n\ncorp-ui@^1.0.0:\n  version "1.0.0"\n  resolved "https://ci:{password}@npm.corp.'
            f'internal/corp-ui/-/corp-ui-1.0.0.tgz#{sha}"\n  integrity {integrity}\n'.encode(),
            "Basic Auth Credentials",
        ),
        (
            "Cargo.lock",
            f'version = 3\n\n[[package]]\nname = "corp-core"\nversion = "0.1.0"\nsource = "git+https://oauth2:{gitlab}'
            f'@gitlab.corp.internal/corp/core.git#{sha}"\n'.encode(),
            "GitLab Token",
        ),
        (".npmrc", f"//registry.npmjs.org/:_authToken={npm}\n".encode(), "NPM tokens"),
        ("deploy/aws-utf16le-bom.ini", aws_lines.encode("utf-16"), "AWS Access Key"),
        ("deploy/aws-utf16be-bom.ini", codecs.BOM_UTF16_BE + aws_lines.encode("utf-16-be"), "AWS Access Key"),
        ("deploy/aws-utf16le.ini", aws_lines.encode("utf-16-le"), "AWS Access Key"),
        ("deploy/aws-utf16be.ini", aws_lines.encode("utf-16-be"), "AWS Access Key"),
        ("deploy/aws-utf32.ini", aws_lines.encode("utf-32"), "AWS Access Key"),
        ("src/notify_latin1.py", f"# Équipe données\nSLACK = '{slack}'\n".encode("latin-1"), "Slack Token"),
        ("src/billing.py", codecs.BOM_UTF8 + f"STRIPE_KEY = '{stripe}'\r\n".encode(), "Stripe Access Key"),
        ("tests/fixtures/id_rsa", private_key.encode(), "Private Key"),
        ("src/app/auth.py", f'SERVICE_TOKEN = "{jwt}"\n'.encode(), "JSON Web Token"),
        ("src/app/settings.py", f'DATABASE_URL = "{url}"\n'.encode(), "Basic Auth Credentials"),
        (".github/workflows/nightly.yml", f"env:\n  OPENAI_API_KEY: {openai}\n".encode(), "OpenAI Token"),
        ("scripts/mail.sh", f"export SENDGRID_API_KEY={sendgrid}\r\n".encode(), "SendGrid API Key"),
        (
            ".pre-commit-config.yaml",
            f"repos:\n- repo: https://github.com/corp/hooks\n  rev: {sha}  # frozen: v1.2.0\n  hooks:\n"
            f"  - id: publish\n    args: [--token={github}]\n".encode(),
            "GitHub Token",
        ),
    ]


def run_planted(scanner: SecretScanner) -> dict:
    cases = planted()
    found = scanner.scan_files({path: data for path, data, _ in cases})
    missed = []
    for path, _data, rule in cases:
        refusing = [f for f in scanner.refusing(found[path]) if f.rule == rule]
        if not refusing:
            missed.append(f"{path}: {rule} (found: {[(f.rule, f.severity) for f in found[path]]})")
    return {"cases": len(cases), "found": len(cases) - len(missed), "missed": missed}


# ----------------------------------------------------------------------------- realism


def fetch(entry: dict, folder: Path) -> Path:
    """The pinned artifact, downloaded once into `folder`."""
    path = folder / entry["file"]
    if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".part")
        with urllib.request.urlopen(entry["url"], timeout=120) as response, open(tmp, "wb") as out:
            out.write(response.read())
        digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
        if digest != entry["sha256"]:
            tmp.unlink()
            raise SystemExit(f"{entry['url']}: sha256 {digest} is not the pinned {entry['sha256']}")
        tmp.replace(path)
    return path


def members(path: Path) -> dict[str, bytes]:
    """Every regular file of an sdist (less its top folder) or a .deb's data (less /usr/share/gocode/src/)."""
    out: dict[str, bytes] = {}
    if path.name.endswith(".deb"):
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["dpkg-deb", "-x", str(path), tmp], check=True)
            for file in Path(tmp).rglob("*"):
                if file.is_file() and not file.is_symlink():
                    rel = file.relative_to(tmp).as_posix().removeprefix("usr/share/gocode/src/")
                    out[rel] = file.read_bytes()
        return out
    if path.name.endswith(".zip"):
        with zipfile.ZipFile(path) as archive:
            for name in archive.namelist():
                if not name.endswith("/"):
                    out[name.split("/", 1)[1]] = archive.read(name)
        return out
    with tarfile.open(path) as archive:
        for info in archive.getmembers():
            if info.isfile() and "/" in info.name:
                handle = archive.extractfile(info)
                if handle is not None:
                    out[info.name.split("/", 1)[1]] = handle.read()
    return out


def chosen(files: dict[str, bytes], patterns: list[str]) -> dict[str, bytes]:
    if "*" in patterns:
        return files
    return {p: d for p, d in files.items() if any(fnmatch.fnmatch(p, pat) for pat in patterns)}


def run_realism(scanner: SecretScanner, log, only: set[str] | None = None) -> dict:
    folder = cache_dir() / "fixtures" / "secrets"
    entries = [e for e in json.loads(CORPUS.read_text()) if only is None or e["name"] in only]
    per_entry = []
    totals: Counter = Counter()
    refusals: list[str] = []
    rules: Counter = Counter()
    for entry in entries:
        artifact = fetch(entry, folder)
        files = chosen(members(artifact), entry["files"])
        started = time.monotonic()
        found = scanner.scan_files(files)
        seconds = time.monotonic() - started
        refused = [f for fs in found.values() for f in scanner.refusing(fs)]
        warned = [f for fs in found.values() for f in scanner.warnings(fs)]
        lock_like = sum(1 for p in files if Path(p).name.endswith((".lock", "go.sum", "-lock.yaml", "lock.json")))
        rules.update(f.rule for f in warned)
        refusals += [f"{entry['file']}: {f.label()}" for f in refused]
        row = {
            "artifact": entry["file"],
            "files": len(files),
            "bytes": sum(len(d) for d in files.values()),
            "lock_files": lock_like,
            "refusals": len(refused),
            "warnings": len(warned),
            "seconds": round(seconds, 2),
        }
        totals.update({k: v for k, v in row.items() if isinstance(v, int)})
        per_entry.append(row)
        log(f"  {entry['file']}: {row['files']} files, {row['refusals']} refusals, {row['warnings']} warnings")
    return {
        "artifacts": len(entries),
        "files": totals["files"],
        "bytes": totals["bytes"],
        "lock_files": totals["lock_files"],
        "refusals": totals["refusals"],
        "warnings": totals["warnings"],
        "warning_rules": dict(rules.most_common()),
        "false_refusals": refusals,
        "per_artifact": per_entry,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--planted-only", action="store_true", help="only the planted set (no download)")
    parser.add_argument("--only", help="realism artifacts to scan, by name (comma-separated; default all)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    log = (lambda _: None) if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    os.environ.setdefault("WHOLELOOP_CACHE", str(cache_dir()))
    scanner = SecretScanner()
    figures: dict = {"scanner": f"detect-secrets {scanner.version}", "planted": run_planted(scanner)}
    if not args.planted_only:
        log("realism set:")
        only = set(args.only.split(",")) if args.only else None
        figures["realism"] = run_realism(scanner, log, only)
    p = figures["planted"]
    print(f"planted: {p['found']} of {p['cases']} found and refused")
    for line in p["missed"]:
        print(f"  MISSED {line}")
    if "realism" in figures:
        r = figures["realism"]
        print(
            f"realism: {r['files']} files ({r['bytes'] / 1e6:.1f} MB, {r['lock_files']} lock files) from "
            f"{r['artifacts']} pinned artifacts: {r['refusals']} refusals (false), {r['warnings']} warnings "
            f"({', '.join(f'{n} {k}' for k, n in r['warning_rules'].items())})"
        )
        for line in r["false_refusals"]:
            print(f"  FALSE REFUSAL {line}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    ok = not p["missed"] and not figures.get("realism", {}).get("refusals")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
