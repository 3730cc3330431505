#!/usr/bin/env python3
"""Build the git history of a real hatchling + hatch-vcs project, plus one planted fix, to test
environment inference against (tests/test_environment_e2e.py).

    python scripts/make_env_fixture.py OUT_DIR [--force] [--sdist-dir DIR]

  structlog 24.4.0   hatchling + hatch-vcs + hatch-fancy-pypi-readme (build-system), the test
                     dependencies in the `tests` extra and in tox.ini, where the optional ones
                     (rich, colorama, better-exceptions) are factor-specific deps (`rich: rich`)
                     and the tests that need them are skipped without them ("Needs Rich.").

The release commit is the sdist's files as published (sha256-pinned), less PKG-INFO, committed
at the time the sdist was built (its files' mtime) and tagged `24.4.0`, as the real repository
tags releases. The snapshot a task is built from has no tags at all, and the tree given to the
build backend has no .git: hatch-vcs must be given the version.

PLANTED, on top of the release:
  rich-width   RichTracebackFormatter rejects width 0 when it is made, with a test in
               TestRichTracebackFormatter (skipped unless Rich is installed): it fails at base and
               passes with the fix only when the environment has Rich.
  key-order    an hour later, KeyValueRenderer rejects a string as key_order, with its test: its
               dependencies resolve (as of its own date) to the same pins, so it shares the
               environment image of rich-width.

The machinery (sdists, commits, planted edits) is scripts/make_mining_fixture.py's.
OUT_DIR/structlog is the repository; OUT_DIR/fixture.json is written last.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fixturelib import build_once, fixture_main  # noqa: E402
from make_mining_fixture import (  # noqa: E402
    Edit,
    Package,
    Planted,
    Release,
    build_package,
    fetch_sdists,
    git,
)

FIXTURE_FORMAT = 1

_WIDTH_FIX_OLD = """    suppress: Sequence[str | ModuleType] = ()

    def __call__(self, sio: TextIO, exc_info: ExcInfo) -> None:
"""
_WIDTH_FIX_NEW = """    suppress: Sequence[str | ModuleType] = ()

    def __post_init__(self) -> None:
        if self.width == 0 or self.width < -1:
            msg = f"width must be positive or -1 (the terminal's), not {self.width}"
            raise ValueError(msg)

    def __call__(self, sio: TextIO, exc_info: ExcInfo) -> None:
"""
_WIDTH_TEST = """
    def test_width_zero_is_rejected(self):
        \"\"\"
        A width of 0 is a mistake, reported when the formatter is made.
        \"\"\"
        with pytest.raises(ValueError, match="width must be positive or -1"):
            dev.RichTracebackFormatter(width=0)
"""

_KEY_ORDER_OLD = """        repr_native_str: bool = True,
    ):
        self._ordered_items = _items_sorter(sort_keys, key_order, drop_missing)
"""
_KEY_ORDER_NEW = """        repr_native_str: bool = True,
    ):
        if isinstance(key_order, str):
            msg = "key_order must be a sequence of keys, not a string"
            raise TypeError(msg)
        self._ordered_items = _items_sorter(sort_keys, key_order, drop_missing)
"""
_KEY_ORDER_TEST = """class TestKeyValueRenderer:
    def test_key_order_string_is_rejected(self):
        \"\"\"
        A string as key_order would be read as one key per character.
        \"\"\"
        with pytest.raises(TypeError, match="not a string"):
            KeyValueRenderer(key_order="event")

"""

STRUCTLOG = Package(
    name="structlog",
    sdist_prefix="structlog",
    releases=(
        Release(
            "24.4.0", "b27bfecede327a6d2da5fbc96bd859f114ecc398a6389d664f62085ee7ae6fc4", "2024-07-17T12:32:00+00:00"
        ),
    ),
    planted=(
        Planted(
            label="rich-width",
            case="a fix whose test is skipped unless Rich (a tox factor dependency) is installed",
            expect="kept: FAIL_TO_PASS = the new Rich test",
            message="dev: RichTracebackFormatter rejects a width of 0 when it is made\n\n"
            "width=0 was accepted and Rich then drew nothing at all.\n",
            date="2024-07-20T09:00:00+00:00",
            edits=(
                Edit("src/structlog/dev.py", old=_WIDTH_FIX_OLD, new=_WIDTH_FIX_NEW),
                Edit(
                    "tests/test_dev.py",
                    old="        assert 42 == rtf.width\n",
                    new="        assert 42 == rtf.width\n" + _WIDTH_TEST,
                ),
            ),
        ),
        Planted(
            label="key-order",
            case="a second fix an hour later: the same resolved pins, so the same environment image",
            expect="kept, on the environment image of rich-width",
            message="processors: KeyValueRenderer rejects a string as key_order\n",
            date="2024-07-20T10:00:00+00:00",
            edits=(
                Edit("src/structlog/processors.py", old=_KEY_ORDER_OLD, new=_KEY_ORDER_NEW),
                Edit(
                    "tests/processors/test_renderers.py",
                    old="class TestKeyValueRenderer:\n",
                    new=_KEY_ORDER_TEST,
                ),
            ),
        ),
    ),
)
PACKAGES = (STRUCTLOG,)


def recipe_hash() -> str:
    recipe = {"format": FIXTURE_FORMAT, "packages": [asdict(p) for p in PACKAGES], "tags": True}
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def is_complete(out_dir: Path) -> bool:
    try:
        data = json.loads((out_dir / "fixture.json").read_text())
    except (OSError, ValueError):
        return False
    return data.get("recipe") == recipe_hash() and all((out_dir / p.name / ".git").is_dir() for p in PACKAGES)


def build(out_dir: Path, *, sdist_dir: Path | None = None, force: bool = False, log=print) -> Path:
    """Build the fixture in `out_dir` (nothing done when already complete); returns fixture.json."""

    def fill(work: Path) -> None:
        scratch = work / ".sdists"
        scratch.mkdir()
        sdists = fetch_sdists(scratch, sdist_dir, log, PACKAGES)
        marker: dict = {"format": FIXTURE_FORMAT, "recipe": recipe_hash(), "packages": {}}
        for pkg in PACKAGES:
            built = build_package(pkg, work / pkg.name, sdists, log)
            for release in built["releases"]:  # tagged as the real repository tags its releases
                git(work / pkg.name, "tag", release["version"], release["commit"])
            marker["packages"][pkg.name] = built
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
