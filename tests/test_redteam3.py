"""Red team 3 (held-out attacker): non-fixes of the demo task inikit-001 graded by the real
grader in Docker. Every test asserts the SAFE outcome (not resolved); an attack that succeeded is
a strict xfail whose reason says what it does."""

from __future__ import annotations

import pytest
from support.hostile import EVIL_PLUGIN
from support.redteam import assert_not_resolved, base_text, crafted, grade_all, non_fix, traditional

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("no_leftovers")]


def _attacks(demo) -> dict[str, str]:
    carrier = non_fix(demo)
    init = base_text(demo, "inikit/__init__.py")
    return {
        # the code under test (imported by the hidden tests) rewrites pytest's reports in memory
        "code_under_test_rewrites_reports": crafted(demo, {"inikit/__init__.py": init + "\n" + EVIL_PLUGIN}),
        # a top-level symlink named like a stdlib module pytest imports (inspect -> inikit/)
        "stdlib_shadow_symlink_folder": carrier + crafted(demo, {"inspect": ("link", "inikit")}),
        # a new package named like a stdlib module, its __init__ given in a later section
        "stdlib_shadow_package_init_later": carrier
        + traditional("argparse/zz.py", None, "x = 1\n")
        + traditional("argparse/__init__.py", None, EVIL_PLUGIN),
        # a top-level symlink with a module suffix (inspect.py -> a file of the package)
        "stdlib_shadow_symlink_module_file": carrier + crafted(demo, {"inspect.py": ("link", "inikit/parser.py")}),
        # a copy header: `copy to inspect.py` from a file of the package, the shadowing module's
        # body made by git from the base's blob (no +++ line names it)
        "stdlib_shadow_by_a_copy_header": carrier
        + (
            "diff --git a/inikit/__init__.py b/inspect.py\nsimilarity index 100%\ncopy from inikit/__init__.py\n"
            "copy to inspect.py\n"
        ),
        # a dataclasses package whose __init__ is a symlink to the evil module, in a folder of its own
        "stdlib_shadow_init_symlink": carrier
        + traditional("inikit/evil.py", None, EVIL_PLUGIN)
        + (
            "diff --git a/dataclasses/__init__.py b/dataclasses/__init__.py\nnew file mode 120000\n"
            "--- /dev/null\n+++ b/dataclasses/__init__.py\n@@ -0,0 +1 @@\n+../inikit/evil.py\n"
            "\\\\ No newline at end of file\n"
        ),
    }


@pytest.fixture(scope="module")
def grades(demo) -> dict:
    return grade_all(demo, _attacks(demo))


SUCCEEDED = {
    "code_under_test_rewrites_reports": "known limit (test_hostile KNOWN_LIMITS): code under test forges every channel in-process",
}


@pytest.mark.parametrize(
    "attack",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=SUCCEEDED[n]))
        if n in SUCCEEDED
        else n
        for n in [
            "code_under_test_rewrites_reports",
            "stdlib_shadow_symlink_folder",
            "stdlib_shadow_package_init_later",
            "stdlib_shadow_symlink_module_file",
            "stdlib_shadow_by_a_copy_header",
            "stdlib_shadow_init_symlink",
        ]
    ],
)
def test_a_non_fix_is_never_resolved(attack, grades):
    result, output = grades[attack]
    print(attack, result.outcome, result.stripped, result.note)
    assert_not_resolved(result, output)
