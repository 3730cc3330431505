#!/usr/bin/env python3
"""Build the realism corpus: git histories of real projects made from their registry releases.

    python scripts/build_corpus.py OUT_DIR [--only NAME,...] [--shard I/N] [--force]

The projects and every artifact's sha256 are pinned in scripts/corpus.toml. Each project becomes
OUT_DIR/<name>/ (a git repository, branch main) and OUT_DIR/<name>.json (what was built: the
commits, the files each release dropped), written last: a project whose .json matches the
manifest entry is not built again, so an interrupted build continues where it stopped, and
`--shard I/N` builds every N-th project only (several machines or processes at once).

How a release becomes a commit (the same for every kind):

- **PyPI** (`kind = "pypi"`): the sdist's files as published, less the top-level `PKG-INFO` and
  every `*.egg-info` folder (build artefacts nobody edits); then, against the previous release's
  commit, **version-only hunks are dropped**: a changed line that is the previous release's line
  with the old version string replaced by the new one (`1.4.0` -> `1.5.0`, also as a tuple
  `(1, 4, 0)` -> `(1, 5, 0)`) keeps its old text. A release otherwise touches `pyproject.toml`,
  `setup.cfg` or a generated `_version.py` in every commit only to say its number, and mining
  skips a commit that changes a protected file. Committed at the sdist's PyPI upload time with a
  fixed identity, so the same manifest always gives the same commit ids. Only sdists that ship
  their tests are in the manifest.
- **npm** (`kind = "npm"`): the package tarball's files (`package/`), plus a lockfile the
  registry's metadata never has, made by `npm install --package-lock-only --ignore-scripts
  --before <release date>` (the dependency versions that existed at the release; when the registry
  dates none of a dependency's versions before it, as of the project's latest release, then with
  `--legacy-peer-deps`: `npm_lockfile`) and labelled so in the commit message; version-only hunks dropped as for PyPI (`package.json`'s `version`).
- **Debian** (`kind = "debian"`): a `golang-*-dev` or `librust-*-dev` binary package carries one
  version of the sources (`/usr/share/gocode/src/<import path>`, `/usr/share/cargo/registry/<crate>`):
  one commit of them, then two PLANTED probe commits (labelled so in their messages): a new
  exported function (source only), then a change of its value with a new test of it. Mining has
  one candidate whose check measures the environment's health on the whole test suite (the
  package compiles at its base, so the other tests pass there). Environment health only: Debian
  carries one version, no history.

Downloads are cached in the wholeloop cache (corpus/), checked against the pinned sha256.
"""

from __future__ import annotations

import argparse
import difflib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from make_mining_fixture import FixtureError, commit_all, git  # noqa: E402

from sandbox import cache_dir  # noqa: E402

MANIFEST = Path(__file__).resolve().parent / "corpus.toml"
BUILD_FORMAT = 2  # bump when what a project's build produces changes
PROBE_FORMAT = 2  # bump when the planted probe commits of Debian projects change
NPM_FORMAT = 4  # bump when how an npm release's commit is made changes
DEBIAN_MIRROR = "https://deb.debian.org/debian/"


class CorpusError(FixtureError):
    pass


def load_manifest(path: Path = MANIFEST) -> list[dict]:
    projects = tomllib.loads(path.read_text())["project"]
    names = [p["name"] for p in projects]
    if len(set(names)) != len(names):
        raise CorpusError(f"{path}: a project name appears twice")
    return projects


def select(projects: list[dict], only: list[str] | None = None, shard: str | None = None) -> list[dict]:
    if only:
        unknown = sorted(set(only) - {p["name"] for p in projects})
        if unknown:
            raise CorpusError(f"not in the manifest: {', '.join(unknown)}")
        projects = [p for p in projects if p["name"] in only]
    if shard:
        i, n = (int(x) for x in shard.split("/"))
        if not 0 <= i < n:
            raise CorpusError(f"--shard {shard}: I must be in 0..N-1")
        projects = [p for k, p in enumerate(projects) if k % n == i]
    return projects


def entry_hash(project: dict) -> str:
    recipe: dict = {"format": BUILD_FORMAT, "project": project}
    if project["kind"] == "debian":
        recipe["probe"] = PROBE_FORMAT
    if project["kind"] == "npm":
        recipe["npm"] = NPM_FORMAT
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------- downloads


def _download(url: str, dest: Path, sha256: str) -> Path:
    if dest.is_file() and hashlib.sha256(dest.read_bytes()).hexdigest() == sha256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(dest.suffix + ".part")
    with urllib.request.urlopen(url, timeout=120) as resp, open(tmp, "wb") as fh:
        shutil.copyfileobj(resp, fh)
    digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
    if digest != sha256:
        tmp.unlink()
        raise CorpusError(f"{url}: sha256 {digest} is not the pinned {sha256}")
    os.replace(tmp, dest)
    return dest


def artifact(project: dict, release: dict) -> Path:
    store = cache_dir() / "corpus" / project["kind"]
    if project["kind"] in ("pypi", "npm"):
        return _download(release["url"], store / release["file"], release["sha256"])
    return _download(DEBIAN_MIRROR + release["file"], store / Path(release["file"]).name, release["sha256"])


# ----------------------------------------------------------------------------- a release's tree


def _clear(repo: Path) -> None:
    for child in repo.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()


def _move_in(top: Path, repo: Path) -> None:
    for child in sorted(top.iterdir()):
        shutil.move(str(child), str(repo / child.name))


def extract_sdist(path: Path, repo: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(path) as tar:
        tar.extractall(tmp, filter="data")
        (top,) = Path(tmp).iterdir()
        (top / "PKG-INFO").unlink(missing_ok=True)
        for egg_info in sorted(top.rglob("*.egg-info"), reverse=True):
            shutil.rmtree(egg_info)
        _move_in(top, repo)


def extract_npm(path: Path, repo: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(path) as tar:
        tar.extractall(tmp, filter="data")
        (top,) = Path(tmp).iterdir()
        _move_in(top, repo)


def extract_deb(path: Path, repo: Path, inner: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["dpkg-deb", "-x", str(path), tmp], check=True, capture_output=True)
        top = Path(tmp) / inner
        if not top.is_dir():
            raise CorpusError(f"{path.name}: no {inner} in the package")
        for link in [p for p in top.rglob("*") if p.is_symlink()]:  # Debian links shared files in
            target = link.resolve()
            link.unlink()
            if target.is_file():
                shutil.copyfile(target, link)
        _move_in(top, repo)


def _version_forms(version: str) -> list[str]:
    forms = [version]
    parts = re.findall(r"\d+", version)
    if len(parts) >= 2:
        forms.append("(" + ", ".join(parts) + ")")
    return forms


def drop_version_hunks(old_text: str, new_text: str, old_version: str | list[str], new_version: str) -> tuple[str, int]:
    """`new_text` with every changed line that only says the new version (the old line with each
    form of an old version replaced by the new one) given back its old text; and how many such
    lines there were. `old_version` may list every earlier release: a line kept before still says
    the version of the release that last really changed it."""
    olds = [old_version] if isinstance(old_version, str) else old_version
    pairs = [list(zip(_version_forms(v), _version_forms(new_version), strict=False)) for v in olds if v != new_version]
    old, new = old_text.splitlines(keepends=True), new_text.splitlines(keepends=True)
    out: list[str] = []
    dropped = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:
            for o, n in zip(old[i1:i2], new[j1:j2], strict=True):
                if o != n and any(_bump(o, forms) == n for forms in pairs):
                    out.append(o)
                    dropped += 1
                else:
                    out.append(n)
        else:
            out.extend(new[j1:j2])
    return "".join(out), dropped


def _bump(line: str, forms: list[tuple[str, str]]) -> str:
    for a, b in forms:
        line = line.replace(a, b)
    return line


def keep_old_versions(repo: Path, old_version: str | list[str], new_version: str) -> list[str]:
    """Apply drop_version_hunks to every text file of the work tree that the last commit had;
    the paths where lines were given back."""
    touched = []
    for rel in git(repo, "ls-files").splitlines():
        path = repo / rel
        if not path.is_file() or path.is_symlink():
            continue
        try:
            new_text = path.read_text(encoding="utf-8")
            old_text = git(repo, "show", f"HEAD:{rel}")
        except (UnicodeDecodeError, FixtureError):
            continue
        if new_text == old_text or not any(form in new_text for form in _version_forms(new_version)):
            continue
        kept, dropped = drop_version_hunks(old_text, new_text, old_version, new_version)
        if dropped:
            path.write_text(kept, encoding="utf-8")
            touched.append(rel)
    return touched


# ----------------------------------------------------------------------------- npm lockfiles


def npm_lockfile(repo: Path, before: str, latest: str) -> tuple[str, str]:
    """Write package-lock.json as of `before`; (the npm version that made it, the options used).

    The registry's publication times of older packages are not always earlier than the releases
    that depend on them (ts-dedent 2.2.0, dated 2024-02-23, needs @types/jest, none of whose
    versions is dated before it: "No versions available"). A release that cannot resolve as of its
    own date resolves as of the project's latest release date (`latest`), and then, when npm's peer
    check refuses a devDependency set that predates it (fastest-levenshtein's eslint 7 and
    eslint-plugin-import), with `--legacy-peer-deps` (npm 6's resolution); the commit message names
    the options used."""
    env = dict(os.environ, npm_config_update_notifier="false", npm_config_fund="false", npm_config_audit="false")
    cmd = ["npm", "install", "--package-lock-only", "--ignore-scripts", "--no-audit", "--no-fund"]
    errors = []
    for options in ([f"--before={before}"], [f"--before={latest}"], [f"--before={latest}", "--legacy-peer-deps"]):
        proc = subprocess.run([*cmd, *options], cwd=repo, capture_output=True, text=True, env=env)
        if proc.returncode == 0:
            version = subprocess.run(["npm", "--version"], capture_output=True, text=True).stdout.strip()
            return version, " ".join(options)
        errors.append(f"{' '.join(options)}: {proc.stderr.strip()[-600:]}")
        (repo / "package-lock.json").unlink(missing_ok=True)
    raise CorpusError(f"npm install --package-lock-only in {repo} failed:\n" + "\n".join(errors))


# ----------------------------------------------------------------------------- probes (Debian)

_GO_PACKAGE = re.compile(r"^package\s+(\w+)", re.M)
PROBE_VALUE = 23


def _go_package(repo: Path) -> str:
    names = sorted(
        m.group(1)
        for f in repo.glob("*.go")
        if not f.name.endswith("_test.go") and (m := _GO_PACKAGE.search(f.read_text(errors="replace")))
    )
    if not names:
        raise CorpusError(f"{repo}: no Go package at the root to plant the probe in")
    return names[0]


def plant_go_probe(repo: Path, value: int) -> str:
    """The probe function returning `value`; with value 23, its test too."""
    pkg = _go_package(repo)
    (repo / "wholeloop_probe.go").write_text(
        f"package {pkg}\n\n// WholeloopProbe is PLANTED by the corpus builder.\nfunc WholeloopProbe() int {{ return {value} }}\n"
    )
    if value == PROBE_VALUE:
        (repo / "wholeloop_probe_test.go").write_text(
            f'package {pkg}\n\nimport "testing"\n\nfunc TestWholeloopProbe(t *testing.T) {{\n'
            f'\tif WholeloopProbe() != {PROBE_VALUE} {{\n\t\tt.Fatal("probe")\n\t}}\n}}\n'
        )
    return "wholeloop_probe.go"


def plant_rust_probe(repo: Path, value: int) -> str:
    cargo = tomllib.loads((repo / "Cargo.toml").read_text())
    crate = cargo.get("lib", {}).get("name") or cargo["package"]["name"].replace("-", "_")
    lib = repo / cargo.get("lib", {}).get("path", "src/lib.rs")
    text = lib.read_text()
    marker = "\n/// PLANTED by the corpus builder.\n"
    text = text.split(marker)[0] + marker + f"pub fn wholeloop_probe() -> i32 {{\n    {value}\n}}\n"
    lib.write_text(text)
    if value == PROBE_VALUE:
        test = repo / "tests" / "wholeloop_probe.rs"
        test.parent.mkdir(exist_ok=True)
        test.write_text(
            f"#[test]\nfn wholeloop_probe() {{\n    assert_eq!({crate}::wholeloop_probe(), {PROBE_VALUE});\n}}\n"
        )
    return str(lib.relative_to(repo))


# ----------------------------------------------------------------------------- build


def build_project(project: dict, repo: Path, log=print) -> dict:
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "--template=", "-b", "main")
    kind, name = project["kind"], project["name"]
    commits = []
    previous: str | None = None
    earlier: list[str] = []
    for release in project["release"]:
        path = artifact(project, release)
        _clear(repo)
        if kind == "pypi":
            extract_sdist(path, repo)
            source = (
                f"the files of the {name} {release['version']} sdist as published on PyPI, less PKG-INFO and *.egg-info"
            )
        elif kind == "npm":
            extract_npm(path, repo)
            source = f"the files of the {name} {release['version']} npm tarball as published"
        else:
            extract_deb(path, repo, project["inner"])
            source = f"the sources in Debian's {Path(release['file']).name} ({project['inner']})"
        lock_note = ""
        if kind == "npm" and project.get("lockfile", "npm") == "npm":
            latest = max(r["date"] for r in project["release"])
            npm_version, options = npm_lockfile(repo, release["date"], latest)
            when = (
                "as of the release's date"
                if options == f"--before={release['date']}"
                else "not as of the release's date: the registry dates none of some dependency's versions before it"
            )
            lock_note = (
                f"\npackage-lock.json is NOT the project's: made by wholeloop's corpus builder with npm "
                f"{npm_version}\n(`npm install --package-lock-only {options}`), {when}.\n"
            )
        kept_old: list[str] = []
        if previous is not None:  # after the lockfile, which repeats the version
            kept_old = keep_old_versions(repo, earlier, release["version"])
        message = f"{name} {release['version']}\n\nThe release as committed by wholeloop's corpus builder: {source}.\n"
        if kept_old:
            message += f"Version-only lines left as they were: {', '.join(kept_old)}.\n"
        commit = commit_all(repo, message + lock_note, release["date"])
        commits.append({"version": release["version"], "commit": commit, "version_only_kept": kept_old})
        log(f"{name}: {release['version']} {commit[:10]}")
        previous = release["version"]
        earlier.append(previous)
    if kind == "debian":
        # two PLANTED commits: the probe function (source only: no candidate), then a fix of its
        # value with its test, so that the package still compiles at the fix's base and the whole
        # suite's health is read there (the other tests pass at base, the probe's test fails)
        plant = plant_go_probe if project["language"] == "go" else plant_rust_probe
        date = project["release"][-1]["date"]
        planted = plant(repo, PROBE_VALUE - 1)
        message = f"Add a probe function to {planted}\n\nPLANTED by wholeloop's corpus builder.\n"
        commits.append({"planted": "probe-source", "commit": commit_all(repo, message, date)})
        plant(repo, PROBE_VALUE)
        message = (
            f"Fix the probe function's value\n\nPLANTED by wholeloop's corpus builder: the probe returned "
            f"{PROBE_VALUE - 1}, not {PROBE_VALUE};\nits test is new. Mining has one candidate whose check "
            "reads the whole test suite's health.\n"
        )
        commits.append({"planted": "probe", "commit": commit_all(repo, message, date)})
    if git(repo, "status", "--porcelain").strip():
        raise CorpusError(f"{repo}: work tree not clean after the build")
    return {"name": name, "head": git(repo, "rev-parse", "HEAD").strip(), "commits": commits}


def is_built(out_dir: Path, project: dict) -> bool:
    try:
        data = json.loads((out_dir / f"{project['name']}.json").read_text())
    except (OSError, ValueError):
        return False
    return data.get("recipe") == entry_hash(project) and (out_dir / project["name"] / ".git").is_dir()


def build(out_dir: Path, project: dict, *, force: bool = False, log=print) -> Path:
    """OUT_DIR/<name> and OUT_DIR/<name>.json (written last); nothing done when already built."""
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    name = project["name"]
    with open(out_dir / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not force and is_built(out_dir, project):
            return out_dir / name
        work = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=out_dir))
        try:
            built = build_project(project, work / name, log)
            built["recipe"] = entry_hash(project)
            built["kind"] = project["kind"]
            (out_dir / f"{name}.json").unlink(missing_ok=True)
            if (out_dir / name).exists():
                shutil.rmtree(out_dir / name)
            os.replace(work / name, out_dir / name)
            (out_dir / f"{name}.json").write_text(json.dumps(built, indent=2) + "\n")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    log(f"{name}: built")
    return out_dir / name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--only", action="append", help="NAME[,NAME...]: only these projects")
    parser.add_argument("--shard", help="I/N: only every N-th project, starting at the I-th (0-based)")
    parser.add_argument("--force", action="store_true", help="rebuild projects already built")
    args = parser.parse_args(argv)
    only = [n for chunk in args.only or [] for n in chunk.split(",") if n]
    failed = 0
    try:
        projects = select(load_manifest(), only or None, args.shard)
    except CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for project in projects:
        try:
            build(args.out_dir, project, force=args.force)
        except (FixtureError, OSError, subprocess.CalledProcessError) as exc:
            print(f"{project['name']}: not built: {exc}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
