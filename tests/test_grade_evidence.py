"""Every revert and strip grade.json claims is checked in the graded tree (issue 10, rule 3).

Grading records what of a patch it did not apply (`stripped`) and what it left at the base
(`reverted`); `grade.json` -> `evidence` holds, for each such path, the base's content hash and the
graded tree's, read in the grading container by a fixed tool (harness/grading/evidence.py), and a
grade whose claims do not hold is never resolved. Here on the demo task (inikit-001, its image
shared with tests/test_redteam.py): an honest patch with stripped paths records evidence that
holds, computed independently on the host; a patch whose kept symlink makes a stripped path exist
in the graded tree (it was absent at the base) was resolved before the check and is not now.
"""

from __future__ import annotations

import hashlib
import json
import subprocess

import pytest
from support import git
from support.hostile import RUN_PREFIX
from support.redteam import crafted

from harness.grading import Grade, grade
from harness.grading.evidence import ABSENT, PYTHON, Hasher, claims, judge
from sandbox import Limits
from sandbox.docker import DockerBackend

HIDDEN = "tests/test_parser.py"  # the file the hidden test patch changes (protected)


def _grade(demo, patch: str):
    task = demo["task"]
    return grade(
        task,
        patch,
        demo["image"],
        base=demo["base"],
        limits=task.limits.apply(Limits()),
        run_id=f"{RUN_PREFIX}evidence",
    )


def _symlink(path: str, target: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 120000\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n"
        f"+{target}\n\\ No newline at end of file\n"
    )


def _new_file(path: str, text: str) -> str:
    lines = text.splitlines()
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{body}"
    )


@pytest.fixture(scope="module")
def graded_hidden_sha(demo) -> str:
    """The sha256 of the hidden test file as the graded tree must have it: the base's, with the
    hidden test patch applied (on the host, in the demo clone)."""
    clone = demo["clone"]
    subprocess.run(["git", "apply", "-"], cwd=clone, input=demo["task"].test_patch(), text=True, check=True)
    try:
        return hashlib.sha256((clone / HIDDEN).read_bytes()).hexdigest()
    finally:
        git(clone, "checkout", "-q", "--", HIDDEN)


@pytest.mark.docker
@pytest.mark.usefixtures("no_leftovers")
def test_an_honest_patchs_stripped_paths_are_recorded_with_evidence_that_holds(demo, graded_hidden_sha):
    """The gold fix plus a change to the hidden test file and a new root conftest.py (both
    protected, so stripped and reverted): resolved, and the evidence shows both as at the base."""
    extra = crafted(demo, {HIDDEN: "def test_nothing():\n    pass\n", "conftest.py": "planted = True\n"})
    result, output, _ = _grade(demo, demo["task"].gold() + extra)
    assert result.resolved, (result.outcome, result.note, output[-1500:])
    assert {s.path for s in result.stripped} == {HIDDEN, "conftest.py"}
    evidence = result.evidence
    assert evidence is not None and evidence.verified and evidence.tool == f"{PYTHON} -I -S"
    assert {e.path for e in evidence.paths} == {HIDDEN, "conftest.py"}
    hidden, planted = evidence.of(HIDDEN), evidence.of("conftest.py")
    assert hidden.claim == "reverted" and hidden.expected == hidden.found == graded_hidden_sha and hidden.holds
    assert planted.expected == planted.found == ABSENT and planted.holds
    assert not result.tampering


@pytest.mark.docker
@pytest.mark.usefixtures("no_leftovers")
def test_a_gold_patch_claims_nothing_and_reads_no_hashes(demo):
    result, _, _ = _grade(demo, demo["task"].gold())
    assert result.resolved and result.evidence is None and not result.stripped


@pytest.mark.docker
@pytest.mark.usefixtures("no_leftovers")
def test_a_kept_symlink_that_makes_a_stripped_path_exist_is_never_resolved(demo, graded_hidden_sha):
    """The attack, written first: the patch adds `alias/test_parser.py` (protected: stripped and reverted,
    claimed absent as at the base) and a symlink `alias -> tests` (inside the repository, named
    like no module: kept). In the graded tree `alias/test_parser.py` is the hidden test file, so
    the claim is false; the hidden command runs `tests` only, and before the check the grade was
    `resolved` with the false claim in it. Now: unresolved, tampering noted, the evidence says why."""
    patch = demo["task"].gold() + _symlink("alias", "tests") + _new_file("alias/test_parser.py", "x = 1\n")
    result, output, _ = _grade(demo, patch)
    assert [s.path for s in result.stripped] == ["alias/test_parser.py"]
    assert result.outcome == "unresolved" and not result.resolved, (result.outcome, result.note, output[-1500:])
    assert result.tests and all(result.tests[t] == "PASSED" for t in demo["task"].fail_to_pass)  # the fix works
    assert result.tampering and "alias/test_parser.py" in result.tampering and "alias/test_parser.py" in result.note
    evidence = result.evidence
    assert evidence is not None and not evidence.verified
    assert [e.path for e in evidence.broken()] == ["alias/test_parser.py"]
    claim = evidence.of("alias/test_parser.py")
    assert (claim.claim, claim.expected, claim.found) == ("reverted", ABSENT, graded_hidden_sha)  # protected


@pytest.mark.docker
@pytest.mark.usefixtures("no_leftovers")
def test_both_tools_read_the_same_hashes_in_one_container(demo, graded_hidden_sha):
    """The archive API (for an image without the interpreter) and the interpreter agree on files,
    symlinks and missing paths; a folder is compared only with itself (read the same way both sides)."""
    paths = ["pyproject.toml", "inikit/parser.py", "missing.txt", "inikit/missing/x.py", "inikit", "lnk"]
    with DockerBackend().start(
        demo["image"], limits=Limits(network=False), role="grading", run_id=f"{RUN_PREFIX}evidence"
    ) as sb:
        sb.exec(["ln", "-s", "inikit/parser.py", "lnk"])
        python, archive = Hasher(), Hasher(python="/nonexistent/python3")
        by_python, by_archive = python.hashes(sb, paths), archive.hashes(sb, paths)
        assert not python.archive and archive.archive and archive.tool == "the engine's archive API"
        source = sb.read_file("inikit/parser.py")
    sha = hashlib.sha256(source).hexdigest()
    link = "symlink:" + hashlib.sha256(b"inikit/parser.py").hexdigest()
    for got in (by_python, by_archive):
        assert got["inikit/parser.py"] == sha and got["lnk"] == link
        assert got["missing.txt"] == got["inikit/missing/x.py"] == ABSENT
        assert got["inikit"].startswith("dir:")
    assert by_python["pyproject.toml"] == by_archive["pyproject.toml"] != ABSENT


@pytest.mark.parametrize(
    "claim, base, found, holds",
    [
        ("reverted", "aa", "aa", True),
        ("reverted", "aa", ABSENT, False),  # a reverted file must be there as at the base
        ("reverted", ABSENT, "aa", False),
        ("stripped", "aa", ABSENT, True),  # a stripped path may be gone (bytecode grading cleared)
        ("stripped", ABSENT, "aa", False),
        ("stripped", "aa", "bb", False),
    ],
)
def test_a_claim_holds_only_as_its_kind_says(claim, base, found, holds):
    evidence = judge({"p": claim}, {"p": base}, {"p": found}, "t")
    assert evidence.of("p").holds is holds and evidence.verified is holds


def test_claims_take_the_stricter_kind_and_drop_what_names_no_file_of_the_tree():
    got = claims(
        ["pluggy/", "tests/a.py"],
        [
            ("tests/a.py", "protected"),
            ("pluggy/__init__.py", "shadows"),
            ("x\0y", "outside the repository"),
            ("b\0c.py", "protected"),
            ("b.pyc", "bytecode or a cache"),
            ("/proc/uptime", "outside the repository"),
            (".git/index", "under .git/"),
        ],
    )
    assert got == {
        "tests/a.py": "reverted",
        "pluggy": "reverted",
        "pluggy/__init__.py": "stripped",
        "b.pyc": "stripped",
    }


def test_a_path_that_is_not_utf8_is_recorded_as_its_bytes():
    """grade.json is written with json.dumps of the grade's JSON dump: the path keeps its byte as
    the one escape (a dict key would lose it to U+FFFD in pydantic's dump)."""
    path = "tests/n\udcffame.py"  # b"tests/n\xffame.py" read with surrogateescape
    result = Grade(
        task_id="t",
        outcome="unresolved",
        resolved=False,
        evidence=judge({path: "reverted"}, {path: ABSENT}, {path: ABSENT}, "t"),
    )
    text = json.dumps(result.model_dump(mode="json"))
    assert "n\\udcffame.py" in text
    back = Grade.model_validate(json.loads(text)).evidence.paths[0].path
    assert back == path and back.encode("utf-8", "surrogateescape") == b"tests/n\xffame.py"
