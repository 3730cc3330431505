#!/usr/bin/env python3
"""Build git histories of two real packages, plus planted commits, to test commit mining against.

    python scripts/make_mining_fixture.py OUT_DIR [--force] [--sdist-dir DIR]

No GitHub here, so each repository is made from successive sdists of a real pure-Python package
that ships its pytest-runnable tests (nobody here wrote them): one commit per release, the sdist's
files as published minus build artefacts (the top-level PKG-INFO and every *.egg-info folder),
committed at the release's PyPI upload time with a fixed identity, so the same recipe always gives
the same commit ids. Every sdist's sha256 is pinned below and checked.

  cachetools 5.0.0 ... 5.5.0   (src layout, setuptools via setup.cfg; version in the package)
  pyflakes   3.0.0 ... 3.4.0   (flat layout, setup.py; tests in pyflakes/test/)

Both keep their version number in the package, not in setup.cfg/pyproject.toml, so release
commits do not all touch a protected file; both test suites need nothing but pytest and take
about a second. Which release commits are kept, skipped or quarantined by the mining rules is
decided by scripts/mine_reference.py, not written here (its output is tests/data/mining/).

PLANTED commits follow the real history, one per rule the miner must apply (`case` letters as in
the brief that asked for them; each commit's message says what it pretends to be):

  cachetools, on top of 5.5.0:
    a-docs       docs only (README.rst, docs/index.rst)           -> skipped "docs or packaging only"
    a-packaging  packaging metadata only (setup.cfg project_urls)  -> skipped "docs or packaging only"
    e-flaky      (on branch `side`) a real-looking fix (Cache rejects a getsizeof that is not
                 callable) with its test, plus a planted test that fails on the 1st, 3rd, ... run
                 in one environment: it toggles a state file under tempfile.gettempdir()
                                                                   -> kept; that test dropped as flaky
    d-passes     (on main) a no-op refactor of keys.typedkey plus a test of behaviour that already
                 works                                             -> quarantined, FAIL_TO_PASS empty
    g-merge      `side` merged into main with --no-ff              -> skipped "merge commit"
  pyflakes, on top of 3.4.0:
    tests-only   a test of existing behaviour, no source           -> skipped "no source change"
    b-protected  a fix (.pyi stubs are Python files) + its test + a new pytest.ini
                                                                   -> skipped "changes protected file pytest.ini"
    c-large      a generated 840-line table module + its test      -> skipped "diff too large (...)"
    f-secret     a fix (skip Emacs lock files) whose source also carries an AWS-access-key-shaped
                 string that detect-secrets flags                  -> refused "secret found: ..."

OUT_DIR gets one non-bare repository per package (OUT_DIR/cachetools, OUT_DIR/pyflakes, branch
main checked out, clean) and OUT_DIR/fixture.json, written last: the recipe hash, every commit
id, which release or planted case each commit is. When fixture.json is present and matches this
recipe, nothing is rebuilt.

Needs git, and network access to PyPI (`pip download --no-deps --no-binary :all:`) unless
--sdist-dir holds the sdists (named as on PyPI).
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixturelib import FixtureError, build_once, fixture_main  # noqa: E402

FIXTURE_FORMAT = 1  # bump when the layout of OUT_DIR or the meaning of the recipe changes
IDENTITY = ("wholeloop mining fixture", "mining-fixture@wholeloop.invalid")


@dataclass(frozen=True)
class Release:
    version: str
    sha256: str  # of the sdist, as PyPI lists it
    uploaded: str  # the sdist's PyPI upload time (UTC, to the second): the commit's date


@dataclass(frozen=True)
class Edit:
    path: str
    old: str | None = None  # None: `new` is the whole file (created or overwritten)
    new: str = ""  # with `old`: replaces it (which must occur exactly once)
    append: bool = False  # `new` is added at the end of the existing file


@dataclass(frozen=True)
class Planted:
    label: str  # the key in fixture.json
    case: str  # what the commit exercises, in words
    expect: str  # the outcome the mining rules should give it (checked by reading the reference)
    message: str
    date: str
    edits: tuple[Edit, ...] = ()
    branch: str = "main"  # the branch it is committed on (created from main when first used)
    merge: str | None = None  # a merge commit of this branch into `branch` (no edits)


@dataclass(frozen=True)
class Package:
    name: str
    sdist_prefix: str  # sdist file name before "-<version>.tar.gz"
    releases: tuple[Release, ...]
    planted: tuple[Planted, ...] = field(default=())

    def sdist(self, release: Release) -> str:
        return f"{self.sdist_prefix}-{release.version}.tar.gz"


# ----------------------------------------------------------------------------- planted content

_FLAKY_TEST = """

# PLANTED by scripts/make_mining_fixture.py: fails on the 1st, 3rd, 5th... run in one environment.
def test_planted_flaky_every_other_run():
    import os
    import tempfile

    state = os.path.join(tempfile.gettempdir(), "wholeloop-planted-flaky.state")
    if os.path.exists(state):
        os.remove(state)
    else:
        with open(state, "w") as fh:
            fh.write("ran once\\n")
        raise AssertionError("planted flaky test: fails on every other run")
"""

_GETSIZEOF_TEST = """

class CacheGetSizeOfTest(unittest.TestCase):
    def test_getsizeof_not_callable(self):
        with self.assertRaises(TypeError):
            cachetools.Cache(maxsize=10, getsizeof=42)

    def test_getsizeof_callable(self):
        cache = cachetools.Cache(maxsize=10, getsizeof=len)
        cache["a"] = "xyz"
        self.assertEqual(3, cache.currsize)
"""

_TYPEDKEY_TEST = """
    def test_typedkey_keyword_types(self, key=cachetools.keys.typedkey):
        self.assertEqual(key(x=1), key(x=1))
        self.assertNotEqual(key(x=1), key(x=1.0))
        self.assertNotEqual(key(1, x=1), key(1, x=True))
        self.assertEqual(hash(key(1, x="a")), hash(key(1, x="a")))
"""

_TESTS_ONLY_TEST = """

class TestPlantedUnusedVariableInNestedFunction(TestCase):
    def test_unused_variable_in_nested_function(self):
        self.flakes(\'\'\'
        def f():
            def g():
                x = 1
            return g
        \'\'\', m.UnusedVariable)
"""

_PYI_TEST = '''
    def test_stub_files(self):
        """
        Stub files (.pyi) are Python source files.
        """
        stub = os.path.join(self.tempdir, 'foo.pyi')
        with open(stub, 'w') as fh:
            fh.write('def f() -> int: ...\\n')
        self.assertEqual(list(iterSourceCode([self.tempdir])), [stub])
'''

_LOCKFILE_TEST = '''
    def test_emacs_lock_files(self):
        """
        Emacs lock files (.#name.py, dangling symlinks) are not source files.
        """
        lock = os.path.join(self.tempdir, '.#foo.py')
        os.symlink('user@host.1234:1700000000', lock)
        self.assertEqual(list(iterSourceCode([self.tempdir])), [])
'''

# An AWS-access-key-shaped string, put together here so that this script itself carries none.
_PLANTED_KEY = "AKIA" + "Q4WLM" + "FIXTURE" + "PLNT"


def _table_module(rows: int) -> str:
    lines = [
        '"""Column widths for the planted report table (PLANTED by scripts/make_mining_fixture.py)."""',
        "",
        "WIDTHS = (",
    ]
    lines += [f"    ({i}, {(i * 7919) % 97}, {(i * 104729) % 13})," for i in range(rows)]
    lines += [")", "", "", "def width(code):", "    return WIDTHS[code][1]", ""]
    return "\n".join(lines)


_TABLE_TEST = """from pyflakes import _planted_table
from pyflakes.test.harness import TestCase


class TestPlantedTable(TestCase):
    def test_width(self):
        self.assertEqual(_planted_table.width(1), 7919 % 97)
"""

CACHETOOLS_PLANTED = (
    Planted(
        label="a-docs",
        case="docs only",
        expect="skipped: docs or packaging only",
        message="Docs: say in the README where the changelog is\n",
        date="2024-08-20T09:00:00+00:00",
        edits=(
            Edit(
                "README.rst",
                old="\nProject Resources\n",
                new="\nSee CHANGELOG.rst for what changed in each release.\n\nProject Resources\n",
            ),
            Edit(
                "docs/index.rst",
                old="\n.. _@lru_cache",
                new="\n.. _changelog: https://github.com/tkem/cachetools/blob/master/CHANGELOG.rst\n.. _@lru_cache",
            ),
        ),
    ),
    Planted(
        label="a-packaging",
        case="packaging metadata only",
        expect="skipped: docs or packaging only",
        message="Packaging: add project URLs to the metadata\n",
        date="2024-08-21T09:00:00+00:00",
        edits=(
            Edit(
                "setup.cfg",
                old="url = https://github.com/tkem/cachetools/\n",
                new="url = https://github.com/tkem/cachetools/\nproject_urls =\n"
                "\tChangelog = https://github.com/tkem/cachetools/blob/master/CHANGELOG.rst\n"
                "\tDocumentation = https://cachetools.readthedocs.io/\n",
            ),
        ),
    ),
    Planted(
        label="e-flaky",
        case="fix + test, plus a planted test that fails on every other run (on branch side)",
        expect="kept: FAIL_TO_PASS = the getsizeof test; the planted test dropped as flaky",
        message="Cache: reject a getsizeof that is not callable when the cache is made\n\n"
        "Cache(10, getsizeof=42) was accepted, and failed only at the first insertion with\n"
        "\"'int' object is not callable\", far from the mistake. Now it raises TypeError at once.\n",
        date="2024-08-22T09:00:00+00:00",
        branch="side",
        edits=(
            Edit(
                "src/cachetools/__init__.py",
                old="    def __init__(self, maxsize, getsizeof=None):\n        if getsizeof:\n",
                new="    def __init__(self, maxsize, getsizeof=None):\n"
                "        if getsizeof is not None and not callable(getsizeof):\n"
                '            raise TypeError("getsizeof must be callable")\n'
                "        if getsizeof:\n",
            ),
            Edit(
                "tests/test_cache.py",
                old="    Cache = cachetools.Cache\n",
                new="    Cache = cachetools.Cache\n" + _GETSIZEOF_TEST + _FLAKY_TEST,
            ),
        ),
    ),
    Planted(
        label="d-passes",
        case="no-op refactor + a test of behaviour that already works",
        expect="quarantined: FAIL_TO_PASS is empty (already passes at base)",
        message="keys: build typed keys in one step\n\nAlso test that keyword argument types are part of a typed key.\n",
        date="2024-08-23T09:00:00+00:00",
        edits=(
            Edit(
                "src/cachetools/keys.py",
                old="    key = hashkey(*args, **kwargs)\n    key += tuple(type(v) for v in args)\n"
                "    key += tuple(type(v) for _, v in sorted(kwargs.items()))\n    return key\n",
                new="    types = tuple(type(v) for v in args)\n"
                "    types += tuple(type(v) for _, v in sorted(kwargs.items()))\n"
                "    return hashkey(*args, **kwargs) + types\n",
            ),
            Edit(
                "tests/test_keys.py",
                old="    def test_typedmethodkey(self, key=cachetools.keys.typedmethodkey):\n",
                new=_TYPEDKEY_TEST.lstrip("\n")
                + "\n    def test_typedmethodkey(self, key=cachetools.keys.typedmethodkey):\n",
            ),
        ),
    ),
    Planted(
        label="g-merge",
        case="merge commit",
        expect="skipped: merge commit",
        message="Merge branch 'side'\n",
        date="2024-08-24T09:00:00+00:00",
        merge="side",
    ),
)

PYFLAKES_PLANTED = (
    Planted(
        label="tests-only",
        case="tests only",
        expect="skipped: no source change",
        message="Test that unused variables in nested functions are reported\n",
        date="2025-06-21T09:00:00+00:00",
        edits=(Edit("pyflakes/test/test_other.py", new=_TESTS_ONLY_TEST, append=True),),
    ),
    Planted(
        label="b-protected",
        case="fix + test + a protected test-runner config file",
        expect="skipped: changes protected file pytest.ini",
        message="api: treat .pyi stub files as Python source files\n\n"
        "iterSourceCode() skipped stub files in directories; they are Python too.\n"
        "Also add a pytest.ini so that `pytest` alone finds the tests.\n",
        date="2025-06-22T09:00:00+00:00",
        edits=(
            Edit(
                "pyflakes/api.py",
                old="    if filename.endswith('.py'):\n",
                new="    if filename.endswith(('.py', '.pyi')):\n",
            ),
            Edit(
                "pyflakes/test/test_api.py",
                old="    def test_recurses(self):\n",
                new=_PYI_TEST.lstrip("\n") + "\n    def test_recurses(self):\n",
            ),
            Edit("pytest.ini", new="[pytest]\ntestpaths = pyflakes/test\n"),
        ),
    ),
    Planted(
        label="c-large",
        case="diff over the size limit",
        expect="skipped: diff too large",
        message="Add the column width table for the report\n",
        date="2025-06-23T09:00:00+00:00",
        edits=(
            Edit("pyflakes/_planted_table.py", new=_table_module(840)),
            Edit("pyflakes/test/test_planted_table.py", new=_TABLE_TEST),
        ),
    ),
    Planted(
        label="f-secret",
        case="fix + test whose source part carries a planted secret",
        expect="refused: secret found (AWS Access Key in pyflakes/api.py)",
        message="api: do not check Emacs lock files\n\n"
        "Emacs leaves dangling symlinks named .#name.py next to files being edited;\n"
        "iterSourceCode() yielded them and checkPath() then failed to open them.\n",
        date="2025-06-24T09:00:00+00:00",
        edits=(
            Edit(
                "pyflakes/api.py",
                old="    # Avoid obvious Emacs backup files\n",
                new="    # Emacs lock files: dangling symlinks named .#name\n"
                "    if os.path.basename(filename).startswith('.#'):\n"
                "        return False\n\n"
                "    # Avoid obvious Emacs backup files\n",
            ),
            Edit(
                "pyflakes/api.py",
                old="PYTHON_SHEBANG_REGEX = ",
                new=f'UPLOAD_KEY_ID = "{_PLANTED_KEY}"  # TODO: move to the CI settings\n\nPYTHON_SHEBANG_REGEX = ',
            ),
            Edit(
                "pyflakes/test/test_api.py",
                old="    def test_recurses(self):\n",
                new=_LOCKFILE_TEST.lstrip("\n") + "\n    def test_recurses(self):\n",
            ),
        ),
    ),
)

PACKAGES = (
    Package(
        name="cachetools",
        sdist_prefix="cachetools",
        releases=(
            Release(
                "5.0.0", "486471dfa8799eb7ec503a8059e263db000cdda20075ce5e48903087f79d5fd6", "2021-12-21T20:27:29+00:00"
            ),
            Release(
                "5.1.0", "8b3b8fa53f564762e5b221e9896798951e7f915513abf2ba072ce0f07f3f5a98", "2022-05-15T20:48:58+00:00"
            ),
            Release(
                "5.2.0", "6a94c6402995a99c3970cc7e4884bb60b4a8639938157eeed436098bf9831757", "2022-05-29T20:53:07+00:00"
            ),
            Release(
                "5.2.1", "5991bc0e08a1319bb618d3195ca5b6bc76646a49c21d55962977197b301cc1fe", "2023-01-08T20:36:43+00:00"
            ),
            Release(
                "5.3.0", "13dfddc7b8df938c21a940dfa6557ce6e94a2f1cdfa58eb90c805721d58f2c14", "2023-01-22T22:31:12+00:00"
            ),
            Release(
                "5.3.1", "dce83f2d9b4e1f732a8cd44af8e8fab2dbe46201467fc98b3ef8f269092bf62b", "2023-05-27T20:44:00+00:00"
            ),
            Release(
                "5.3.2", "086ee420196f7b2ab9ca2db2520aca326318b68fe5ba8bc4d49cca91add450f2", "2023-10-24T18:12:04+00:00"
            ),
            Release(
                "5.3.3", "ba29e2dfa0b8b556606f097407ed1aa62080ee108ab0dc5ec9d6a723a007d105", "2024-02-26T20:33:23+00:00"
            ),
            Release(
                "5.4.0", "b8adc2e7c07f105ced7bc56dbb6dfbe7c4a00acce20e2227b3f355be89bc6827", "2024-07-15T18:46:25+00:00"
            ),
            Release(
                "5.5.0", "2cc24fb4cbe39633fb7badd9db9ca6295d766d9c2995f245725a46715d050f2a", "2024-08-18T20:28:44+00:00"
            ),
        ),
        planted=CACHETOOLS_PLANTED,
    ),
    Package(
        name="pyflakes",
        sdist_prefix="pyflakes",
        releases=(
            Release(
                "3.0.0", "12da339341ba8b9071e185d4717bef732fdb4f4400b9f4a1d0d6bbc362bf7760", "2022-11-23T18:44:35+00:00"
            ),
            Release(
                "3.0.1", "ec8b276a6b60bd80defed25add7e439881c19e64850afd9b346283d4165fd0fd", "2022-11-24T16:53:43+00:00"
            ),
            Release(
                "3.1.0", "a0aae034c444db0071aa077972ba4768d40c830d9539fd45bf4cd3f8f6992efc", "2023-07-29T17:00:41+00:00"
            ),
            Release(
                "3.2.0", "1c61603ff154621fb2a9172037d84dca3500def8c8b630657d1701f026f8af3f", "2024-01-05T00:28:47+00:00"
            ),
            Release(
                "3.3.0", "1955be314ebe8e9bdd100d5877fe10f0fd47fb2497e4f365e981a1a87cc8d9d7", "2025-03-29T19:23:41+00:00"
            ),
            Release(
                "3.3.1", "8752eee11d4ef3a4be642d774863047864b47406cba906fabf8dd892cf98d5b3", "2025-03-30T21:57:45+00:00"
            ),
            Release(
                "3.3.2", "6dfd61d87b97fba5dcfaaf781171ac16be16453be6d816147989e7f6e6a9576b", "2025-03-31T13:21:20+00:00"
            ),
            Release(
                "3.4.0", "b24f96fafb7d2ab0ec5075b7350b3d2d2218eab42003821c06344973d3ea2f58", "2025-06-20T18:45:27+00:00"
            ),
        ),
        planted=PYFLAKES_PLANTED,
    ),
)


def recipe_hash() -> str:
    recipe = {
        "format": FIXTURE_FORMAT,
        "identity": IDENTITY,
        "packages": [asdict(p) for p in PACKAGES],
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def is_complete(out_dir: Path) -> bool:
    try:
        data = json.loads((out_dir / "fixture.json").read_text())
    except (OSError, ValueError):
        return False
    return data.get("recipe") == recipe_hash() and all((out_dir / p.name / ".git").is_dir() for p in PACKAGES)


# ----------------------------------------------------------------------------- git


def _git_env(date: str | None = None) -> dict[str, str]:
    env = dict(os.environ, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", LC_ALL="C", TZ="UTC")
    if date:
        env.update(
            GIT_AUTHOR_NAME=IDENTITY[0], GIT_AUTHOR_EMAIL=IDENTITY[1], GIT_AUTHOR_DATE=date,
            GIT_COMMITTER_NAME=IDENTITY[0], GIT_COMMITTER_EMAIL=IDENTITY[1], GIT_COMMITTER_DATE=date,
        )  # fmt: skip
    return env


def git(repo: Path, *args: str, date: str | None = None) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=_git_env(date))
    if proc.returncode != 0:
        raise FixtureError(f"git {' '.join(args)} failed in {repo}:\n{proc.stderr.strip()}")
    return proc.stdout


def commit_all(repo: Path, message: str, date: str) -> str:
    git(repo, "add", "--all")
    git(repo, "commit", "-q", "--no-verify", "--no-gpg-sign", "--allow-empty-message", "-m", message, date=date)
    return git(repo, "rev-parse", "HEAD").strip()


# ----------------------------------------------------------------------------- sdists


def fetch_sdists(dest: Path, sdist_dir: Path | None, log, packages: tuple[Package, ...] = PACKAGES) -> dict[str, Path]:
    """{sdist file name: path}, every file checked against its pinned sha256."""
    wanted = {pkg.sdist(r): (pkg, r) for pkg in packages for r in pkg.releases}
    found: dict[str, Path] = {}
    missing = []
    for name in wanted:
        if sdist_dir and (sdist_dir / name).is_file():
            found[name] = sdist_dir / name
        else:
            missing.append(name)

    def download(name: str) -> Path:
        pkg, release = wanted[name]
        target = dest / name.removesuffix(".tar.gz")
        cmd = [
            sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
            f"{pkg.name}=={release.version}", "--dest", str(target),
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not (target / name).is_file():
            raise FixtureError(f"pip download {pkg.name}=={release.version} failed:\n{proc.stderr.strip()[-2000:]}")
        return target / name

    if missing:
        log(f"downloading {len(missing)} sdists")
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            for name, path in zip(missing, pool.map(download, missing), strict=True):
                found[name] = path
    for name, path in found.items():
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != wanted[name][1].sha256:
            raise FixtureError(f"{path}: sha256 {digest} is not the pinned {wanted[name][1].sha256}")
    return found


def extract_release(sdist: Path, repo: Path) -> None:
    """Replace the work tree of `repo` with the sdist's files, less PKG-INFO and *.egg-info."""
    for child in repo.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(sdist) as tar:
        tar.extractall(tmp, filter="data")
        (top,) = Path(tmp).iterdir()
        (top / "PKG-INFO").unlink()
        for egg_info in sorted(top.rglob("*.egg-info"), reverse=True):
            shutil.rmtree(egg_info)
        for child in sorted(top.iterdir()):
            shutil.move(str(child), str(repo / child.name))


# ----------------------------------------------------------------------------- build


def _apply(repo: Path, planted: Planted) -> None:
    for edit in planted.edits:
        path = repo / edit.path
        if edit.append:
            path.write_text(path.read_text() + edit.new)
            continue
        if edit.old is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(edit.new)
            continue
        text = path.read_text()
        if text.count(edit.old) != 1:
            raise FixtureError(
                f"{planted.label}: the text to replace occurs {text.count(edit.old)} times in {edit.path}"
            )
        path.write_text(text.replace(edit.old, edit.new))


def build_package(pkg: Package, repo: Path, sdists: dict[str, Path], log) -> dict:
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "--template=", "-b", "main")
    releases = []
    for release in pkg.releases:
        extract_release(sdists[pkg.sdist(release)], repo)
        message = (
            f"{pkg.name} {release.version}\n\n"
            f"The files of the {pkg.name} {release.version} sdist as published on PyPI "
            f"(uploaded {release.uploaded[:19]}Z),\nless PKG-INFO and *.egg-info.\n"
        )
        commit = commit_all(repo, message, release.uploaded)
        releases.append({"version": release.version, "commit": commit, "sdist_sha256": release.sha256})
        log(f"{pkg.name}: {release.version} {commit[:10]}")
    planted = []
    branches = {"main"}
    for p in pkg.planted:
        if p.branch not in branches:
            git(repo, "branch", p.branch, "main")
            branches.add(p.branch)
        git(repo, "checkout", "-q", p.branch)
        if p.merge:
            git(repo, "merge", "-q", "--no-ff", "--no-edit", "-m", p.message, p.merge, date=p.date)
            commit = git(repo, "rev-parse", "HEAD").strip()
        else:
            _apply(repo, p)
            commit = commit_all(repo, p.message, p.date)
        planted.append({"label": p.label, "case": p.case, "expect": p.expect, "branch": p.branch, "commit": commit})
        log(f"{pkg.name}: planted {p.label} {commit[:10]}")
    git(repo, "checkout", "-q", "main")
    if git(repo, "status", "--porcelain").strip():
        raise FixtureError(f"{repo}: work tree not clean after the build")
    return {
        "path": pkg.name,
        "head": git(repo, "rev-parse", "HEAD").strip(),
        "releases": releases,
        "planted": planted,
    }


def build(out_dir: Path, *, sdist_dir: Path | None = None, force: bool = False, log=print) -> Path:
    """Build the fixture in `out_dir` (nothing done when already complete); returns fixture.json."""

    def fill(work: Path) -> None:
        scratch = work / ".sdists"
        scratch.mkdir()
        sdists = fetch_sdists(scratch, sdist_dir, log)
        marker = {"format": FIXTURE_FORMAT, "recipe": recipe_hash(), "packages": {}}
        for pkg in PACKAGES:
            marker["packages"][pkg.name] = build_package(pkg, work / pkg.name, sdists, log)
        shutil.rmtree(scratch)
        (work / "fixture.json").write_text(json.dumps(marker, indent=2) + "\n")  # last

    return build_once(
        out_dir, result="fixture.json", recipe=recipe_hash(), complete=is_complete, fill=fill, force=force, log=log
    )


def main(argv: list[str] | None = None) -> int:
    return fixture_main(
        __doc__,
        build,
        source="sdist_dir",
        source_help="take the sdists from this folder when they are there",
        argv=argv,
    )


if __name__ == "__main__":
    sys.exit(main())
