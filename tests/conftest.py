"""Shared fixtures (their helpers live in tests/support). Tests marked `docker` use the real engine:
in CI (CI=true) a missing engine is a failure, elsewhere those tests are skipped with the command
that would make them run."""

from __future__ import annotations

import os
import subprocess
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support import ROOT, git, write


def _engine_ok() -> str | None:
    try:
        from sandbox.docker.engine import client
        from sandbox.docker.images import DEFAULT_BASE, image_exists

        client()
        if not image_exists(DEFAULT_BASE):
            return f"base image {DEFAULT_BASE} missing (run: bash scripts/setup.sh)"
    except Exception as exc:  # any reason the engine can't be used
        return f"Docker engine not usable: {exc} (run: bash scripts/setup.sh)"
    return None


def pytest_collection_modifyitems(config, items):
    if not any(item.get_closest_marker("docker") for item in items):
        return
    problem = _engine_ok()
    if problem is None:
        return
    if os.environ.get("CI"):
        raise pytest.UsageError(f"CI needs Docker for the tests marked docker: {problem}")
    for item in items:
        if item.get_closest_marker("docker"):
            item.add_marker(pytest.mark.skip(reason=problem))


@pytest.fixture
def tiny_task(tmp_path: Path):
    """A real git repository with a bug, its later fix (the future), and a task spec for it.

    Returns a dict with the spec path, the repo path, and the base and fix commit ids.
    """
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(
        repo,
        {
            "calc/__init__.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
            "tests/test_mul.py": "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
            "data.bin": "",
        },
    )
    (repo / "data.bin").write_bytes(bytes(range(256)))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "initial")
    base = git(repo, "rev-parse", "HEAD")
    write(
        repo,
        {
            "calc/__init__.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
            "tests/test_add.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        },
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "FIX-SECRET-MARKER: add must add")
    fix = git(repo, "rev-parse", "HEAD")
    git(repo, "tag", "v-fixed")
    gold = git(repo, "diff", base, fix, "--", "calc")
    test_patch = git(repo, "diff", base, fix, "--", "tests")
    git(repo, "checkout", "-q", "-b", "feature", base)  # a branch and a reflog with the future in it
    git(repo, "checkout", "-q", "main")
    spec_dir = tmp_path / "specs"
    spec_dir.mkdir()
    (spec_dir / "gold.diff").write_text(gold + "\n")
    (spec_dir / "test.diff").write_text(test_patch + "\n")
    (spec_dir / "tiny.yaml").write_text(
        textwrap.dedent(f"""\
        id: tiny-001
        repo: ../repo
        base_commit: {base}
        problem_statement: add() subtracts instead of adding.
        environment:
          setup: ["pip install -q pytest==8.3.4"]
        test_command: python -m pytest -q
        hidden_tests:
          command: python -m pytest -rA -p no:cacheprovider tests
          patch_file: test.diff
        FAIL_TO_PASS: [tests/test_add.py::test_add]
        PASS_TO_PASS: [tests/test_mul.py::test_mul]
        gold_patch_file: gold.diff
        limits: {{command_timeout_s: 60}}
        """)
    )
    return {"spec": spec_dir / "tiny.yaml", "dir": spec_dir, "repo": repo, "base": base, "fix": fix}


@pytest.fixture(scope="session")
def swebench_fixture() -> Path:
    """SWE-bench instances built from a real package (more-itertools, from PyPI) by
    scripts/make_swebench_fixture.py: a folder with instances.jsonl, specs.yaml and the repository.

    Built once into the wholeloop cache ($WHOLELOOP_CACHE or ~/.cache/wholeloop) and reused while
    its recipe is unchanged. Needs PyPI the first time: without it the test is skipped (failed in CI).
    """
    import sys

    cache = Path(
        os.environ.get("WHOLELOOP_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "wholeloop"
    )
    out = cache / "fixtures" / "swebench-more-itertools"
    script = ROOT / "scripts" / "make_swebench_fixture.py"
    proc = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True)
    if proc.returncode != 0:
        why = f"cannot build the SWE-bench fixture ({script.name}): {(proc.stderr or proc.stdout).strip()[-800:]}"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return out


@pytest.fixture(scope="session")
def env_repos() -> Path:
    """A real hatchling + hatch-vcs project (structlog, from PyPI) and a planted fix, by
    scripts/make_env_fixture.py: built once into the wholeloop cache (PyPI the first time)."""
    import sys

    cache = Path(
        os.environ.get("WHOLELOOP_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "wholeloop"
    )
    out = cache / "fixtures" / "environment"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_env_fixture.py"), str(out)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        why = f"cannot build the environment fixture: {(proc.stderr or proc.stdout).strip()[-800:]}"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return out


@pytest.fixture(scope="session")
def polyglot_images(tmp_path_factory) -> dict:
    """The Go, TypeScript and Rust demo tasks (tasks/polyglot) with their task images, built once
    per session (and once per machine: tags are content hashes; cold, the three environment images
    take 30-200 s each). {task id: (task, task image tag, snapshot base commit)}."""
    from harness.agents import get_agent
    from harness.run import Runner, RunOptions
    from harness.tasks import load_tasks

    tasks = load_tasks([ROOT / "tasks" / "polyglot"])
    runner = Runner(tasks, get_agent("noop"), RunOptions(out=tmp_path_factory.mktemp("polyglot-prepare")))
    # three at a time: cold, the three languages' images build side by side (apt's downloads and
    # unpacking overlap); two tasks of one language wait for their shared env image (a build lock)
    with ThreadPoolExecutor(3) as pool:
        prepared = dict(zip((t.id for t in tasks), pool.map(runner.prepare, tasks)))
    return {task.id: (task, prepared[task.id].image, prepared[task.id].base_commit) for task in tasks}


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server (tests/support/pgserver.py) for the session, torn down after. Without the
    `postgresql` package the tests that need it are skipped locally and fail in CI."""
    from support.pgserver import PostgresServer, find_bindir

    bindir = find_bindir()
    if bindir is None:
        why = "PostgreSQL is not installed (apt-get install postgresql; scripts/setup.sh does it)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    server = PostgresServer(bindir).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def no_leftovers():
    """After the test, no container of this process's hostile runs (`support.hostile.RUN_PREFIX`) or
    made by this process is left. The modules of hostile agents apply it to each of their tests."""
    from support.hostile import remove_leftovers

    yield
    left = remove_leftovers()  # clean up first, so one failure does not cascade into the next test
    assert not left, "containers left behind"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> dict:
    """The demo task inikit-001 as the red team attacks it (tests/support/redteam.py): the task, its
    image and snapshot base, and a clone at its base. Once per module (tags are hashes: one build,
    then lookups)."""
    from support.redteam import prepare_demo

    return prepare_demo(tmp_path_factory)


@pytest.fixture(scope="session")
def demo_replay(tmp_path_factory) -> tuple[Path, str]:
    """The README's first run (the demo replayed, on a terminal): (its run folder, what it drew).
    Once per session, for the modules that only read it (tests/support/demo_replay.py)."""
    from support.demo_replay import replay_demo

    return replay_demo(tmp_path_factory.mktemp("demo-replay"))
