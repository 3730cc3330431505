#!/usr/bin/env python3
"""Build the own-checks fixture: a small Python repository whose config names its own linters and
type checker (pyproject's [tool.ruff] and [tool.mypy], package.json's eslint with an
eslint.config.mjs, all pinned by a .pre-commit-config.yaml), with two fix commits and their task
specs (docs/acceptance.md, "The repository's own checks").

    python scripts/make_checks_fixture.py OUT_DIR [--force]

OUT_DIR/repo is the git repository (fixed names and dates: commit ids never change while this
recipe does not), OUT_DIR/tasks/tidyco-00N.yaml the tasks. The base already has findings of both
tools in the files the fixes touch (an ambiguous name, an untyped function; web/slug.js a `let`
never reassigned), and each gold patch
moves them down a few lines: gold adds no finding, so it must be accepted; a patch that adds one
must not be.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixturelib import build_once  # noqa: E402

RECIPE = "2"
RUFF, MYPY, ESLINT = "0.6.9", "1.11.2", "9.12.0"
IDENTITY = ("Tidy Maintainer", "tidy@example.invalid")

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "tidyco"
version = "0.1.0"
requires-python = ">=3.9"

[tool.setuptools]
packages = ["tidyco"]

[tool.ruff]
line-length = 100

[tool.ruff.lint]
select = ["E", "F", "B"]

[tool.mypy]
disallow_untyped_defs = true
"""

PRE_COMMIT = f"""\
repos:
  - repo: https://github.com/astral-sh/ruff-pre-commit
    rev: v{RUFF}
    hooks:
      - id: ruff
  - repo: https://github.com/pre-commit/mirrors-mypy
    rev: v{MYPY}
    hooks:
      - id: mypy
  - repo: https://github.com/pre-commit/mirrors-eslint
    rev: v{ESLINT}
    hooks:
      - id: eslint
"""

PACKAGE_JSON = f"""\
{{
  "name": "tidyco-web",
  "private": true,
  "devDependencies": {{
    "eslint": "{ESLINT}"
  }}
}}
"""

ESLINT_CONFIG = """\
export default [
  {
    files: ["**/*.js"],
    languageOptions: { sourceType: "module" },
    rules: { "no-unused-vars": "error", "prefer-const": "error" },
  },
];
"""

SLUG_JS = """\
// The slug of a title, as the web page makes it (tidyco.text.slug in Python).
export function slug(title) {
  let words = title.split(/\\s+/);
  return words.join("-").toLowerCase();
}
"""

TEXT_BASE = '''\
"""Text helpers."""

import re


def slug(title: str) -> str:
    """A URL slug: the title's words, lower case, joined by '-'."""
    words = re.findall(r"[A-Za-z0-9]+", title)
    return "-".join(words)


def shout(text: str) -> str:
    return text.upper()


def legacy(value):
    l = value
    return l
'''

TEXT_FIXED = TEXT_BASE.replace(
    "import re\n\n",
    'import re\n\nSEPARATOR = "-"  # between the words of a slug\n\n',
).replace('return "-".join(words)', "return SEPARATOR.join(w.lower() for w in words)")

NUMBERS_BASE = '''\
"""Number helpers."""


def clamp(value: int, low: int, high: int) -> int:
    """`value` kept within [low, high]."""
    if value < low:
        return low
    if value > high:
        return value
    return value


def double(n):
    l = n * 2
    return l
'''

NUMBERS_FIXED = NUMBERS_BASE.replace(
    '"""Number helpers."""\n',
    '"""Number helpers."""\n\n# clamp() returns one of its three arguments.\n',
).replace("    if value > high:\n        return value", "    if value > high:\n        return high")

TESTS_TEXT = """\
from tidyco.text import shout, slug


def test_shout():
    assert shout("a") == "A"


def test_slug_joins_words():
    assert slug("a b") == "a-b"
"""

TESTS_TEXT_HIDDEN = (
    TESTS_TEXT
    + """

def test_slug_lower_cases():
    assert slug("Hello World") == "hello-world"
"""
)

TESTS_NUMBERS = """\
from tidyco.numbers import clamp


def test_clamp_low():
    assert clamp(-5, 0, 10) == 0
"""

TESTS_NUMBERS_HIDDEN = (
    TESTS_NUMBERS
    + """

def test_clamp_high():
    assert clamp(50, 0, 10) == 10
"""
)


def _git(repo: Path, *args: str, date: str = "2026-01-01T12:00:00+00:00") -> str:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        "GIT_AUTHOR_NAME": IDENTITY[0],
        "GIT_AUTHOR_EMAIL": IDENTITY[1],
        "GIT_COMMITTER_NAME": IDENTITY[0],
        "GIT_COMMITTER_EMAIL": IDENTITY[1],
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def _write(repo: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)


def _commit(repo: Path, message: str, hour: int) -> str:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", message, date=f"2026-01-01T{hour:02d}:00:00+00:00")
    return _git(repo, "rev-parse", "HEAD").strip()


def _diff(repo: Path, files: dict[str, str]) -> str:
    """The diff that `files` make to the work tree (left as it was)."""
    _write(repo, files)
    _git(repo, "add", "-A")
    text = _git(repo, "diff", "--cached", "HEAD")
    _git(repo, "reset", "-q", "--hard")
    return text


def _task(out: Path, task_id: str, base: str, statement: str, test_patch: str, gold: str, f2p: str, p2p: list[str]):
    spec = {
        "id": task_id,
        "repo": "../repo",
        "base_commit": base,
        "problem_statement": statement,
        "environment": {
            "setup": [
                "apt-get update && apt-get install -y --no-install-recommends nodejs npm && rm -rf /var/lib/apt/lists/*",
                "pip install pytest==8.3.4",
            ],
            "install": ["pip install -e ."],
        },
        "test_command": "python -m pytest -q tests",
        "hidden_tests": {"command": "python -m pytest -rA -p no:cacheprovider tests", "patch": test_patch},
        "gold_patch": gold,
        "FAIL_TO_PASS": [f2p],
        "PASS_TO_PASS": p2p,
    }
    (out / "tasks" / f"{task_id}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))


def fill(out: Path) -> None:
    repo = out / "repo"
    repo.mkdir(parents=True)
    (out / "tasks").mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _write(
        repo,
        {
            "pyproject.toml": PYPROJECT,
            ".pre-commit-config.yaml": PRE_COMMIT,
            ".gitignore": "__pycache__/\n*.egg-info/\n",
            "README.md": "# tidyco\n\nSmall text and number helpers.\n",
            "tidyco/__init__.py": '"""tidyco: small helpers."""\n',
            "tidyco/text.py": TEXT_BASE,
            "tidyco/numbers.py": NUMBERS_BASE,
            "tests/test_text.py": TESTS_TEXT,
            "tests/test_numbers.py": TESTS_NUMBERS,
            "package.json": PACKAGE_JSON,
            "eslint.config.mjs": ESLINT_CONFIG,
            "web/slug.js": SLUG_JS,
        },
    )
    base1 = _commit(repo, "tidyco: text and number helpers", 10)
    tests1 = _diff(repo, {"tests/test_text.py": TESTS_TEXT_HIDDEN})
    gold1 = _diff(repo, {"tidyco/text.py": TEXT_FIXED})
    _write(repo, {"tests/test_text.py": TESTS_TEXT_HIDDEN, "tidyco/text.py": TEXT_FIXED})
    base2 = _commit(repo, "slug: lower-case the words", 11)
    tests2 = _diff(repo, {"tests/test_numbers.py": TESTS_NUMBERS_HIDDEN})
    gold2 = _diff(repo, {"tidyco/numbers.py": NUMBERS_FIXED})
    _write(repo, {"tests/test_numbers.py": TESTS_NUMBERS_HIDDEN, "tidyco/numbers.py": NUMBERS_FIXED})
    _commit(repo, "clamp: a value above the range is the range's top", 12)
    _task(
        out,
        "tidyco-001",
        base1,
        'slug("Hello World") gives "Hello-World"; a slug should be lower case: "hello-world".',
        tests1,
        gold1,
        "tests/test_text.py::test_slug_lower_cases",
        [
            "tests/test_text.py::test_shout",
            "tests/test_text.py::test_slug_joins_words",
            "tests/test_numbers.py::test_clamp_low",
        ],
    )
    _task(
        out,
        "tidyco-002",
        base2,
        "clamp(50, 0, 10) returns 50; a value above the range should give the range's top (10).",
        tests2,
        gold2,
        "tests/test_numbers.py::test_clamp_high",
        [
            "tests/test_numbers.py::test_clamp_low",
            "tests/test_text.py::test_shout",
            "tests/test_text.py::test_slug_joins_words",
            "tests/test_text.py::test_slug_lower_cases",
        ],
    )
    (out / "RECIPE").write_text(RECIPE + "\n")


def build(out_dir: Path, *, force: bool = False) -> Path:
    """OUT_DIR/tasks (built unless OUT_DIR holds this recipe's build)."""

    def complete(folder: Path) -> bool:
        marker = folder / "RECIPE"
        return marker.is_file() and marker.read_text().strip() == RECIPE

    return build_once(out_dir, result="tasks", recipe=RECIPE, complete=complete, fill=fill, force=force)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--force", action="store_true", help="rebuild even when OUT_DIR is complete")
    args = parser.parse_args(argv)
    build(args.out_dir, force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
