"""Environment inference for the projects people have, no container needed: the build backend
(hatchling + hatch-vcs, the version a snapshot with no tags gets, a backend that needs a missing
toolchain), test dependencies from tox (factor-specific ones included), hatch, poetry, pdm and uv,
and a malformed wholeloop.yaml. The real project is structlog 24.4.0 from its PyPI sdist
(scripts/make_env_fixture.py, the `env_repos` fixture); tests/test_environment_e2e.py mines and checks it in Docker."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support import ROOT, git, write

from harness.authoring.backends import read_backend, requirement_name
from harness.authoring.environment import (
    ConfigError,
    RepoConfig,
    ToolchainMissing,
    infer_environment,
    load_config,
    setup_commands,
)
from harness.authoring.gitrepo import GitRepo
from harness.authoring.testdeps import expand_braces, is_test_env, poetry_requirement, read_tool_deps

WHEN = datetime(2024, 7, 20, tzinfo=UTC)


def names(requirements: list[str]) -> set[str]:
    return {requirement_name(r) for r in requirements}


def test_tox_factor_dependencies_are_test_dependencies(env_repos):
    """structlog installs rich, colorama and better-exceptions only in tox's -rich, -colorama and
    -be environments (`rich: rich`), and skips the tests that need them elsewhere ("Needs Rich.").
    The union of the test environments' deps has them; docs, typing and lint environments' do not."""
    repo = GitRepo.open(env_repos / "structlog")
    plan = infer_environment(repo, repo.resolve("24.4.0"), WHEN, RepoConfig())
    got = names(plan.requirements)
    assert {"rich", "colorama", "better-exceptions", "coverage"} <= got
    assert "twisted" not in got  # `py312: twisted`: for another interpreter than the image's (3.11)
    assert {"freezegun", "pretend", "pytest-asyncio", "simplejson"} <= got  # the `tests` extra (tox: extras = tests)
    assert not got & {"sphinx", "furo", "mypy", "pre-commit", "cogapp", "pyright", "doc2dash", "watchfiles"}
    assert "tox.ini" in plan.sources


def test_a_hatch_vcs_project_is_installed_with_the_version_of_its_last_tag(env_repos):
    repo = GitRepo.open(env_repos / "structlog")
    head = repo.resolve("HEAD")
    plan = infer_environment(repo, head, WHEN, RepoConfig())
    assert plan.install == ["SETUPTOOLS_SCM_PRETEND_VERSION=24.4.0 pip install --no-build-isolation --no-deps -e ."]
    assert plan.probe is not None and plan.probe.backend.backend == "hatchling.build"
    assert plan.probe.backend.scm == "hatch-vcs"
    assert plan.probe.env == {"SETUPTOOLS_SCM_PRETEND_VERSION": "24.4.0"}  # while the backend's hook runs too


def test_with_no_tag_at_all_the_version_is_still_given(env_repos, tmp_path):
    clone = tmp_path / "structlog"
    subprocess.run(["git", "clone", "-q", str(env_repos / "structlog"), str(clone)], check=True)
    git(clone, "tag", "-d", "24.4.0")
    repo = GitRepo.open(clone)
    plan = infer_environment(repo, repo.resolve("HEAD"), WHEN, RepoConfig())
    assert plan.install[0].startswith("SETUPTOOLS_SCM_PRETEND_VERSION=0.0.0 pip install")


def test_a_given_install_or_setup_is_not_second_guessed(env_repos):
    repo = GitRepo.open(env_repos / "structlog")
    plan = infer_environment(repo, repo.resolve("HEAD"), WHEN, RepoConfig(install=["pip install -e ."]))
    assert plan.install == ["pip install -e ."] and plan.probe is None
    plan = infer_environment(repo, repo.resolve("HEAD"), WHEN, RepoConfig(setup=["pip install x"]))
    assert plan.probe is None


def _project(tmp_path: Path, files: dict[str, str]) -> tuple[GitRepo, str]:
    repo = tmp_path / "proj"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "initial")
    opened = GitRepo.open(repo)
    return opened, opened.resolve("HEAD")


MATURIN = """[build-system]
requires = ["maturin>=1.0,<2.0"]
build-backend = "maturin"

[project]
name = "fastthing"
dynamic = ["version"]
"""


def test_a_backend_needing_a_missing_toolchain_is_refused_in_one_line(tmp_path):
    repo, head = _project(tmp_path, {"pyproject.toml": MATURIN, "src/lib.rs": "", "tests/test_x.py": ""})
    with pytest.raises(ToolchainMissing) as err:
        infer_environment(repo, head, WHEN, RepoConfig())
    message = str(err.value)
    assert "\n" not in message and "maturin" in message and "Rust toolchain (cargo)" in message
    assert "image:" in err.value.hint
    # an image of the team's own is trusted to have it
    plan = infer_environment(repo, head, WHEN, RepoConfig(image="rust-python:latest"))
    assert plan.install and plan.image == "rust-python:latest"


def test_mine_says_in_one_line_what_to_do_with_such_a_repository(tmp_path):
    repo, _ = _project(tmp_path, {"pyproject.toml": MATURIN, "src/fastthing/__init__.py": "X = 1\n"})
    write(
        tmp_path / "proj",
        {"src/fastthing/__init__.py": "X = 2\n", "tests/test_x.py": "def test_x():\n    assert True\n"},
    )
    git(tmp_path / "proj", "add", "-A")
    git(tmp_path / "proj", "commit", "-qm", "fix: X is 2")
    result = subprocess.run(
        [sys.executable, "-m", "harness.cli", "mine", str(tmp_path / "proj"), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "maturin" in lines[0] and "image:" in lines[0], result.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").glob("*.yaml"))


def test_a_malformed_wholeloop_yaml_is_named_with_its_field_in_one_line(tmp_path):
    repo, _ = _project(tmp_path, {"setup.py": "from setuptools import setup\nsetup()\n"})
    bad = tmp_path / "wholeloop.yaml"
    bad.write_text("test_requirments: [pytest]\ntests_timeout_s: soon\n")
    with pytest.raises(ConfigError) as err:
        load_config(bad, repo)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{bad}: invalid wholeloop.yaml")
    assert "test_requirments: unknown key (known: image, " in message and "test_requirements" in message
    assert "tests_timeout_s: Input should be a valid number" in message and "'soon'" in message
    bad.write_text("install: [pip install -e .\ntest_scope: all\n")
    with pytest.raises(ConfigError) as err:
        load_config(bad, repo)
    assert "\n" not in str(err.value) and f"{bad}: not valid YAML at line" in str(err.value)


def test_backends_are_read_from_build_system():
    assert read_backend(None, build_fallback=["setuptools"]).backend == "setuptools.build_meta:__legacy__"
    flit = read_backend(
        {"build-system": {"requires": ["flit_core >=3.2,<4"], "build-backend": "flit_core.buildapi"}},
        build_fallback=[],
    )
    assert flit.name == "flit_core" and flit.scm is None and flit.version_env("1.0") == {}
    scm = read_backend({"build-system": {"requires": ["setuptools>=64", "setuptools_scm[toml]>=8"]}}, build_fallback=[])
    assert scm.scm == "setuptools-scm" and scm.version_env("2.1") == {"SETUPTOOLS_SCM_PRETEND_VERSION": "2.1"}
    pdm = read_backend(
        {
            "build-system": {"requires": ["pdm-backend"], "build-backend": "pdm.backend"},
            "tool": {"pdm": {"version": {"source": "scm"}}},
        },
        build_fallback=[],
    )
    assert pdm.version_env("3.0") == {"PDM_BUILD_SCM_VERSION": "3.0"}
    for req, needs in (("scikit-build-core>=0.5", "CMake"), ("meson-python", "Meson"), ("setuptools-rust", "Rust")):
        found = read_backend({"build-system": {"requires": [req]}}, build_fallback=[]).toolchain_needed()
        assert found is not None and needs in found[1]


def test_tox_names_and_conditions():
    assert expand_braces("py3{8,12}-tests{,-rich}") == [
        "py38-tests",
        "py38-tests-rich",
        "py312-tests",
        "py312-tests-rich",
    ]
    assert is_test_env("py3{8,12}-tests{,-colorama}") and is_test_env("rich")
    assert not is_test_env("docs-sponsors") and not is_test_env("mypy-pkg") and not is_test_env("coverage-report")
    assert is_test_env("py38-tests") and is_test_env("py311", this_python=True) and is_test_env("py3", this_python=True)
    assert not is_test_env("py38", this_python=True) and not is_test_env("pypy27", this_python=True)


def test_test_dependencies_of_other_tools():
    tox_toml = (
        '[env_run_base]\ndeps = ["pytest>=8"]\nextras = ["testing"]\ndependency_groups = ["test"]\n'
        '[env.docs]\ndeps = ["sphinx"]\ndependency_groups = ["docs"]\n'
    )
    poetry = {
        "tool": {
            "poetry": {
                "group": {
                    "test": {"dependencies": {"pytest": "^7.4", "hypothesis": {"version": "~6.8", "extras": ["cli"]}}},
                    "docs": {"dependencies": {"sphinx": "*"}},
                }
            },
            "pdm": {"dev-dependencies": {"dev": ["coverage>=7", "-e file:///${PROJECT_ROOT}/sub"]}},
            "hatch": {"envs": {"default": {"dependencies": ["pytest-cov"]}, "lint": {"dependencies": ["ruff"]}}},
            "uv": {"dev-dependencies": ["pytest-xdist"]},
        },
        "project": {"name": "demo"},
    }
    uv_lock = (
        '[[package]]\nname = "demo"\nversion = "1.0"\n'
        '[package.metadata.requires-dev]\ntest = [{ name = "freezegun", specifier = ">=1.2" }]\n'
    )
    files = {"tox.toml": tox_toml, "uv.lock": uv_lock}
    got = read_tool_deps(set(files), files.get, poetry)
    assert got.requirements == [
        "pytest>=8",
        "pytest-cov",
        "pytest>=7.4,<8",
        "hypothesis[cli]>=6.8,<6.9",
        "coverage>=7",
        "pytest-xdist",
        "freezegun>=1.2",
    ]
    assert got.extras == ["testing"] and got.groups == ["test"]
    assert got.sources == [
        "tox.toml",
        "pyproject.toml [tool.hatch.envs]",
        "pyproject.toml [tool.poetry]",
        "pyproject.toml [tool.pdm.dev-dependencies]",
        "pyproject.toml [tool.uv]",
        "uv.lock",
    ]
    assert poetry_requirement("python", "^3.9") is None and poetry_requirement("x", {"path": "../x"}) is None
    assert (
        poetry_requirement("attrs", "^0.3.1") == "attrs>=0.3.1,<0.4"
        and poetry_requirement("six", "1.16") == "six==1.16"
    )


def test_dependency_groups_that_tox_installs_are_expanded(tmp_path):
    pyproject = (
        '[project]\nname = "demo"\nversion = "1.0"\n'
        '[dependency-groups]\nci = ["hypothesis>=6", {include-group = "base"}]\nbase = ["pytest-mock"]\n'
        'lint = ["ruff"]\n'
    )
    # as tox-dev/filelock's tox.toml has it: a `dev` environment of every group, a `coverage` one that combines
    tox_toml = (
        '[env_run_base]\ndependency_groups = ["ci"]\ncommands = [["pytest", "tests"]]\n'
        '[env.lint]\ndependency_groups = ["lint"]\n'
        '[env.dev]\ndependency_groups = ["lint"]\ncommands = [["uv", "pip", "tree"]]\n'
        '[env.nightly]\ndependency_groups = ["lint"]\ncommands = [["coverage", "combine"]]\n'
        '[env."3.12"]\ndeps = ["pytest-xdist"]\n'
    )
    repo, head = _project(tmp_path, {"pyproject.toml": pyproject, "tox.toml": tox_toml, "demo.py": ""})
    plan = infer_environment(repo, head, WHEN, RepoConfig())
    assert {"hypothesis", "pytest-mock", "pytest", "pytest-xdist"} <= names(plan.requirements)
    assert "ruff" not in names(plan.requirements) and "tox.toml" in plan.sources


@pytest.mark.parametrize(
    ("path", "text"),
    [
        # as parse 1.22's sdist has it: pytest-cov named nowhere but in addopts
        (
            "pyproject.toml",
            '[project]\nname = "demo"\nversion = "1.0"\n[tool.pytest.ini_options]\n'
            'addopts = "--cov=demo --cov-report=term-missing --doctest-modules --timeout 30 -n auto"\n',
        ),
        (
            "setup.cfg",
            "[metadata]\nname = demo\n[options]\npy_modules = demo\n[tool:pytest]\naddopts =\n  --cov demo\n  --timeout=30 --numprocesses=2\n",
        ),
        ("pytest.ini", "[pytest]\naddopts = --cov=demo --timeout=30 -nauto\n"),
    ],
)
def test_plugins_the_pytest_config_options_need_are_test_dependencies(tmp_path, path, text):
    files = {path: text, "demo.py": "", "tests/test_demo.py": "def test_x():\n    assert True\n"}
    if path == "pytest.ini":
        files["setup.py"] = "from setuptools import setup\nsetup(name='demo', py_modules=['demo'])\n"
    repo, head = _project(tmp_path, files)
    plan = infer_environment(repo, head, WHEN, RepoConfig())
    assert {"pytest-cov", "pytest-timeout", "pytest-xdist"} <= names(plan.requirements)
    assert any("addopts" in note for note in plan.notes)


def test_a_plugin_already_required_or_options_of_pytest_itself_add_nothing(tmp_path):
    pyproject = (
        '[project]\nname = "demo"\nversion = "1.0"\n[project.optional-dependencies]\ntest = ["pytest-cov>=4"]\n'
        '[tool.pytest.ini_options]\naddopts = "--cov demo -ra --strict-markers --doctest-glob=*.rst -p no:cacheprovider"\n'
    )
    repo, head = _project(tmp_path, {"pyproject.toml": pyproject, "demo.py": ""})
    plan = infer_environment(repo, head, WHEN, RepoConfig())
    assert [r for r in plan.requirements if requirement_name(r) == "pytest-cov"] == ["pytest-cov>=4"]
    assert names(plan.requirements) - {"setuptools", "wheel"} == {"pytest-cov", "pytest"}


def test_pins_of_different_requirements_files_that_disagree_are_left_to_the_resolver(tmp_path):
    # as wcwidth 0.9.3's sdist has it: each tool's requirements file compiled on its own day
    files = {
        "setup.py": "from setuptools import setup\nsetup(name='demo', py_modules=['demo'])\n",
        "demo.py": "",
        "requirements-tests39.txt": "packaging==25.0\npytest==8.4.2\ncoverage==7.10.7\n",
        "requirements-update.txt": "certifi==2026.5.20\nrequests==2.34.2\n",
        "requirements-wheels.txt": "certifi==2026.7.22\npackaging==26.3\nbuild==1.6.1\n",
        "requirements-lint.txt": "coverage>=7.11\n",
    }
    repo, head = _project(tmp_path, files)
    plan = infer_environment(repo, head, WHEN, RepoConfig())
    by_name: dict[str, list[str]] = {}
    for req in plan.requirements:
        by_name.setdefault(requirement_name(req), []).append(req)
    assert by_name["certifi"] == ["certifi"] and by_name["packaging"] == ["packaging"]
    assert by_name["coverage"] == ["coverage>=7.11"]  # the pin it excludes goes, the range stays
    assert by_name["pytest"] == ["pytest==8.4.2"] and by_name["requests"] == ["requests==2.34.2"]
    assert any("certifi" in note and "disagree" in note for note in plan.notes)


EXT_SETUP = """from setuptools import Extension, setup
setup(name="fast", ext_modules=[Extension("fast._speed", ["fast/_speed.c"])])
"""


def test_a_project_that_builds_c_extensions_gets_a_c_compiler_in_its_environment(tmp_path):
    # as wcwidth 0.9.3: its setup.py builds an optional C extension and its conftest requires it;
    # the base image has no compiler, so every test errored "C extension not loaded"
    repo, head = _project(
        tmp_path, {"setup.py": EXT_SETUP, "fast/__init__.py": "", "fast/_speed.c": "", "tests/test_x.py": ""}
    )
    plan = infer_environment(repo, head, WHEN, RepoConfig())
    first = setup_commands(plan, ["setuptools==80.0"])[0]
    assert "apt-get install" in first and "build-essential" in first and "python3-dev" in first
    assert any("C" in note and "build-essential" in note for note in plan.notes)
    # a pure-Python project's image stays as small as the base
    (tmp_path / "pure").mkdir()
    pure, pure_head = _project(tmp_path / "pure", {"setup.py": "from setuptools import setup\nsetup(name='p')\n"})
    assert not any("apt-get" in c for c in setup_commands(infer_environment(pure, pure_head, WHEN, RepoConfig()), []))
    # a setup of the team's own is not second-guessed
    assert setup_commands(infer_environment(repo, head, WHEN, RepoConfig(setup=["true"])), []) == ["true"]


DUNAMAI_LIKE_TESTS = """import shutil
import pytest


@pytest.mark.skipif(shutil.which("hg") is None, reason="Requires Mercurial")
def test_hg():
    pass


@pytest.mark.skipif(shutil.which('darcs') is None, reason="Requires Darcs")
def test_darcs():
    pass


@pytest.mark.skipif(shutil.which("pijul") is None or shutil.which("git") is None, reason="Requires Pijul")
def test_pijul():
    pass


@pytest.mark.skipif(shutil.which("not-a-program-anyone-ships") is None, reason="Requires it")
def test_other():
    pass
"""


def test_programs_the_tests_look_up_are_installed_from_debian(tmp_path):
    # as dunamai: its tests skip "Requires Mercurial" (shutil.which("hg") is None); 6 of 27 skipped,
    # so its environment was read unhealthy, and the hint asked for them as Python packages
    repo, head = _project(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "demo"\nversion = "1"\n',
            "demo.py": "",
            "tests/test_vcs.py": DUNAMAI_LIKE_TESTS,
        },
    )
    plan = infer_environment(repo, head, WHEN, RepoConfig())
    assert plan.system == ["darcs", "mercurial"]  # pijul: no Debian package; git: in the base image; unknown: nothing
    first = setup_commands(plan, [])[0]
    assert "apt-get install" in first and "mercurial" in first and "darcs" in first
    assert any("hg" in note and "mercurial" in note for note in plan.notes)
    # what the config's system_packages names is added; a setup of the team's own is used as given
    added = infer_environment(repo, head, WHEN, RepoConfig(system_packages=["fossil"]))
    assert added.system == ["darcs", "fossil", "mercurial"]
    assert setup_commands(infer_environment(repo, head, WHEN, RepoConfig(setup=["true"])), []) == ["true"]
