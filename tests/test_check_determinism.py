"""Deterministic checks and grading (issue 20, item 3; docs/grading.md "Hash seed and test order").

Grading fixes PYTHONHASHSEED and seeds the environment's test-order randomisers; `tasks check`
varies both across its runs on purpose and quarantines a task whose test ids change with them.
Planted cases on the real engine: parametrized ids built by iterating a set of strings, and a
repository whose environment has pytest-randomly. The parser's part (which options seed which
randomiser) needs no engine.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from support import git, write
from support.shout import shout_task

from harness.authoring.check import CheckOptions, check_task, read_verdict
from harness.grading import grade
from harness.grading.determinism import GRADING_SEED
from harness.parsers import get_parser
from harness.run.images import build_task_images
from harness.tasks import load_task
from sandbox import Limits

PYTEST = get_parser("pytest")

WORDS = '{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"}'
# ids like "3-gamma": which number goes with which word is the set's iteration order, the hash seed's
SET_IDS_TEST = f"""\
import pytest

from pkg import shout

WORDS = {WORDS}


@pytest.mark.parametrize(("n", "word"), list(enumerate(WORDS)))
def test_every_word(n, word):
    assert shout(word) == word.upper()


def test_plain():
    assert shout("a") == "A"
"""
PLAIN_TEST = """\
from pkg import shout


def test_plain():
    assert shout("a") == "A"


def test_empty():
    assert shout("") == ""
"""


def test_randomisers_are_seeded_only_when_loaded():
    facts = {"pytest": "8.3.4", "tools_path": True, "pytest11": [{"name": "randomly", "value": "pytest_randomly"}]}
    setup = PYTEST.run_setup(facts, "t")
    assert setup.env_for(7)["PYTEST_ADDOPTS"].endswith("--randomly-seed=7")
    assert "-p randomly" in setup.env_for(7)["PYTEST_ADDOPTS"]
    plain = PYTEST.run_setup({"pytest": "8.3.4", "tools_path": True, "pytest11": []}, "t")
    assert "seed" not in plain.env_for(7)["PYTEST_ADDOPTS"]  # an option of a plugin that is not there would fail
    blocked = PYTEST.run_setup(facts, "t", ("no:randomly",))  # the task blocks it: it takes no option
    assert "randomly-seed" not in blocked.env_for(7)["PYTEST_ADDOPTS"]
    order = PYTEST.run_setup({**facts, "pytest11": [{"name": "random_order", "value": "random_order.plugin"}]}, "t")
    assert order.env_for(0)["PYTEST_ADDOPTS"].endswith("--random-order-seed=0")


@pytest.mark.docker
def test_test_ids_that_depend_on_the_hash_seed_quarantine_the_task(tmp_path):
    spec = shout_task(tmp_path, "setids", SET_IDS_TEST, ["pip install pytest==8.3.4"])
    result = check_task(load_task(spec), CheckOptions(discover=True, repeats=2))
    verdict = read_verdict(spec)
    assert result.verdict is not None and verdict is not None
    assert not verdict.passed, verdict.model_dump_json(indent=1)
    assert verdict.quarantined and verdict.quarantined.startswith("test ids depend on the hash seed")
    assert "test_every_word[" in verdict.detail
    hash_seeds = [s.get("PYTHONHASHSEED") for s in verdict.seeds]
    assert hash_seeds[0] == str(GRADING_SEED) and len(set(hash_seeds)) > 1  # varied on purpose, grading's first
    assert "test ids depend on the hash seed" in (load_task(spec).quarantined or "")


@pytest.mark.docker
def test_grading_fixes_the_hash_seed_so_set_built_ids_are_the_same_every_time(tmp_path):
    spec = shout_task(tmp_path, "setids2", SET_IDS_TEST, ["pip install pytest==8.3.4"])
    task = load_task(spec)
    images = build_task_images(task)
    seen, grades = [], []
    for _ in range(2):
        result, _, report = grade(
            task, task.gold(), images.task.tag, base=images.snapshot.commit, limits=Limits(network=False)
        )
        assert report is not None
        seen.append(sorted(t for t in report.statuses if "test_every_word" in t))
        grades.append(result)
    assert seen[0] == seen[1] and len(seen[0]) == 10
    assert [g.seeds["PYTHONHASHSEED"] for g in grades] == [str(GRADING_SEED)] * 2  # recorded in grade.json


@pytest.mark.docker
def test_pytest_randomly_is_seeded_in_grading_and_varied_by_the_check(tmp_path):
    spec = shout_task(tmp_path, "randomly", PLAIN_TEST, ["pip install pytest==8.3.4 pytest-randomly"])
    task = load_task(spec)
    images = build_task_images(task)
    result, output, _ = grade(task, task.gold(), images.task.tag, base=images.snapshot.commit, limits=Limits())
    assert f"Using --randomly-seed={GRADING_SEED}" in output  # pytest-randomly's own header line
    assert result.seeds == {"PYTHONHASHSEED": "0", "PYTEST_ADDOPTS": f"--randomly-seed={GRADING_SEED}"}
    check_task(task, CheckOptions(discover=True, repeats=2))
    verdict = read_verdict(spec)
    assert verdict is not None and verdict.passed, verdict.model_dump_json(indent=1)
    assert verdict.fail_to_pass == ["tests/test_shout.py::test_plain"]
    assert [s["PYTEST_ADDOPTS"] for s in verdict.seeds] == [f"--randomly-seed={n}" for n in (0, 1)] * 2


def test_a_mined_environment_fixes_the_hash_seed_as_grading_does(tmp_path):
    from harness.authoring.environment import RepoConfig, infer_environment

    repo = tmp_path / "p"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, {"setup.py": "from setuptools import setup\nsetup(name='p')\n", "p.py": "x = 1\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "root")
    from harness.authoring.gitrepo import GitRepo

    head = git(repo, "rev-parse", "HEAD")
    plan = infer_environment(GitRepo.open(repo), head, datetime.now(UTC), RepoConfig())
    assert plan.env["PYTHONHASHSEED"] == str(GRADING_SEED)
