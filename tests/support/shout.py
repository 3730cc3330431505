"""The checks' smallest real task: a repository whose `shout` returns its argument at base (an old
test passes throughout), a fix that upper-cases it, and a hidden test file of the caller's choosing.
Each check test varies only the hidden test (hanging, killed, seed-dependent ids, addresses in ids)."""

from __future__ import annotations

from pathlib import Path

import yaml

from harness.authoring.check import NOT_CHECKED
from support import git, write

PYTEST_SETUP = ("pip install pytest==8.3.4",)


def shout_task(
    tmp_path: Path, name: str, hidden_test: str, setup: tuple[str, ...] | list[str] = PYTEST_SETUP, **spec_keys
) -> Path:
    """The repository under tmp_path/NAME, the hidden test patch adding tests/test_shout.py with
    `hidden_test`, and a spec (not checked yet; extra keys such as `timeouts` as given) at
    tmp_path/NAME.yaml; returns the spec's path."""
    repo = tmp_path / name
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(
        repo,
        {"pkg/__init__.py": "def shout(text):\n    return text\n", "tests/test_old.py": "def test_old():\n    pass\n"},
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    write(repo, {"tests/test_shout.py": hidden_test})
    git(repo, "add", "-A")
    test_patch = git(repo, "diff", "--cached", "HEAD") + "\n"
    git(repo, "reset", "-q", "--hard")
    (repo / "tests" / "test_shout.py").unlink(missing_ok=True)
    write(repo, {"pkg/__init__.py": "def shout(text):\n    return text.upper()\n"})
    gold = git(repo, "diff", "HEAD") + "\n"
    git(repo, "checkout", "-q", ".")
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "id": name,
                "quarantined": NOT_CHECKED,
                "repo": str(repo),
                "base_commit": base,
                "problem_statement": "shout() should upper-case its text",
                "environment": {"setup": list(setup)},
                "hidden_tests": {"command": "python -m pytest -rA -p no:cacheprovider tests", "patch": test_patch},
                "gold_patch": gold,
                "FAIL_TO_PASS": [],
                "PASS_TO_PASS": [],
                **spec_keys,
            },
            sort_keys=False,
        )
    )
    return spec
