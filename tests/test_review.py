"""Human verdicts (issue 25 item 4): the review file RunFolder owns, and the agreement between
automatic acceptance and reviewers that reports show."""

from __future__ import annotations

import threading
from pathlib import Path

from support.fabricate import fabricate_run

from harness.records import Review, RunFolder
from harness.report.acceptance import KAPPA_MIN_N, agreement, cohen_kappa
from harness.vocabulary import Outcome

CLEAN = {"tests_deleted": [], "outside_scope": [], "size_ratio": 1.0, "own_checks": {"checks": [], "new": []}}


def _run(tmp_path: Path) -> RunFolder:
    fabricate_run(tmp_path / "run", tasks=10, configs=["a"], repeats=1)
    return RunFolder(tmp_path / "run")


def _review(folder: RunFolder, row, verdict: str, reviewer: str = "ana", reason: str = "", sha: str | None = None):
    folder.add_review(
        Review(
            task_id=row.task_id,
            config=row.config,
            repeat=row.repeat,
            attempt=row.attempt,
            patch_sha256=sha or folder.patch_sha256(row),
            verdict=verdict,
            reason=reason,
            reviewer=reviewer,
        )
    )


def test_every_verdict_is_kept_and_the_latest_per_reviewer_counts(tmp_path):
    folder = _run(tmp_path)
    row = folder.latest()[0]
    _review(folder, row, "accept", "ana", "fine")
    _review(folder, row, "reject", "bo", "too wide")
    _review(folder, row, "reject", "ana", "second look: breaks the API")
    assert [r.verdict for r in folder.reviews()] == ["accept", "reject", "reject"]
    current = folder.current_reviews()[row.key()]
    assert {name: r.reason for name, r in current.items()} == {"ana": "second look: breaks the API", "bo": "too wide"}
    assert all(r.at for r in folder.reviews())


def test_a_verdict_on_another_patch_does_not_apply(tmp_path):
    folder = _run(tmp_path)
    row = next(r for r in folder.latest() if r.patch_bytes)
    _review(folder, row, "accept")
    assert row.key() in folder.current_reviews()
    (folder.path / row.patch_path).write_text("a different patch\n")  # the patch changed under the verdict
    assert row.key() not in folder.current_reviews()


def test_a_verdict_follows_a_regrade_that_keeps_the_patch(tmp_path):
    folder = _run(tmp_path)
    row = next(r for r in folder.latest() if r.patch_bytes)
    _review(folder, row, "reject", reason="wrong fix")
    regraded = row.model_copy(update={"resolved": not row.resolved, "regraded_from": {"outcome": str(row.outcome)}})
    folder.append(regraded)
    assert next(r for r in folder.latest() if r.key() == row.key()).regraded_from  # the regraded row counts
    assert folder.current_reviews()[row.key()]["ana"].reason == "wrong fix"


def test_reviewers_writing_at_once_lose_no_line(tmp_path):
    _run(tmp_path)
    row = RunFolder(tmp_path / "run").latest()[0]

    def write(name: str) -> None:
        folder = RunFolder(tmp_path / "run")  # each its own open: only the flock keeps them apart
        for i in range(30):
            _review(folder, row, "accept", name, f"{i}")

    threads = [threading.Thread(target=write, args=(f"r{k}",)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    folder = RunFolder(tmp_path / "run")
    assert len(folder.reviews()) == 120
    assert len((folder.path / "reviews.jsonl").read_text().splitlines()) == 120


def test_a_torn_review_line_is_skipped_and_cut_before_the_next(tmp_path):
    folder = _run(tmp_path)
    row = folder.latest()[0]
    _review(folder, row, "accept")
    with open(folder.reviews_path, "a") as fh:
        fh.write('{"task_id": "half')
    assert len(folder.reviews()) == 1
    _review(folder, row, "reject", "bo")
    assert [r.reviewer for r in folder.reviews()] == ["ana", "bo"]


def test_kappa_against_a_hand_computed_table():
    # 20 pairs: 8 both accept, 7 both reject, 3 policy-only, 2 reviewer-only
    # po = 0.75, pe = 0.55*0.5 + 0.45*0.5 = 0.5 -> kappa 0.5
    kappa, (lo, hi) = cohen_kappa(8, 3, 2, 7)
    assert abs(kappa - 0.5) < 1e-9
    assert lo < 0.5 < hi and hi - lo > 0.3
    assert cohen_kappa(0, 0, 0, 0) is None
    assert cohen_kappa(5, 0, 0, 0) is None  # both always say yes: undefined


def test_agreement_counts_disagreements_and_says_n_below_20(tmp_path):
    folder = _run(tmp_path)
    rows = folder.latest()
    resolved = [r for r in rows if r.resolved]
    for r in rows:
        r.acceptance = dict(CLEAN)  # measured and clean: the default policy accepts a resolved row
    _review(folder, resolved[0], "reject", reason="fixes the symptom only")
    unresolved = [r for r in rows if not r.resolved]
    if unresolved:
        _review(folder, unresolved[0], "reject")
    _review(folder, rows[-1], "unsure", "bo")
    got = agreement(rows, folder.current_reviews(rows))
    assert got.policy_only == 1 and got.unsure == 1
    assert got.disagreements[0]["reason"] == "fixes the symptom only"
    assert got.kappa is None and f"n < {KAPPA_MIN_N}" in got.tell()


def test_agreement_tells_kappa_from_20_verdicts(tmp_path):
    fabricate_run(tmp_path / "run", tasks=12, configs=["a", "b"], repeats=1)
    folder = RunFolder(tmp_path / "run")
    rows = folder.latest()
    for r in rows:
        r.acceptance = dict(CLEAN)
    for i, r in enumerate(rows):
        accept = r.resolved if i % 5 else not r.resolved  # mostly agree
        _review(folder, r, "accept" if accept else "reject")
    got = agreement(rows, folder.current_reviews(rows))
    assert got.n >= KAPPA_MIN_N
    assert got.kappa is not None and "Cohen's kappa" in got.tell()
    assert len(got.disagreements) == got.policy_only + got.human_only > 0


def _measured_run(tmp_path: Path, tasks: int = 6) -> RunFolder:
    """A fabricated run whose rows carry acceptance axes (rewritten rows: the first three resolved,
    all clean except the first, which deleted a test), so the policy has a verdict to compare."""
    import json

    fabricate_run(tmp_path / "run", tasks=tasks, configs=["a"], repeats=1)
    folder = RunFolder(tmp_path / "run")
    rows = folder.rows()
    lines = []
    for i, r in enumerate(rows):
        r.acceptance = dict(CLEAN, tests_deleted=["tests/test_x.py"] if i == 0 else [])
        if i < 3:
            r.outcome, r.resolved = Outcome.resolved, True
        lines.append(json.dumps(r.model_dump(mode="json")) + "\n")
    folder.results_path.write_text("".join(lines))
    return folder


def _drive(argv: list[str], answers: list[str]) -> str:
    """Run a command in a real pseudo-terminal, answering each prompt in turn; the screen's text."""
    import os
    import pty
    import select
    import subprocess
    import sys

    primary, secondary = pty.openpty()
    env = dict(os.environ, COLUMNS="120", TERM="xterm")
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *argv], stdin=secondary, stdout=secondary, stderr=secondary, env=env
    )
    os.close(secondary)
    screen, pending, prompts = b"", list(answers), 0
    while True:
        ready, _, _ = select.select([primary], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError(f"no output for 60 s; screen so far:\n{screen.decode(errors='replace')[-2000:]}")
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        screen += chunk
        asked = screen.count(b"verdict: a(ccept)") + screen.count(b"reason:")
        while prompts < asked and pending:
            os.write(primary, (pending.pop(0) + "\r").encode())
            prompts += 1
    proc.wait(timeout=60)
    os.close(primary)
    assert proc.returncode == 0, screen.decode(errors="replace")[-3000:]
    return screen.decode(errors="replace")


def test_review_through_a_terminal_records_verdicts_that_survive_a_regrade(tmp_path):
    import json

    folder = _measured_run(tmp_path)
    resolved = [r for r in folder.latest() if r.resolved]
    assert len(resolved) >= 2
    # first attempt: "x" is no verdict and is asked again; then reject with a reason; the rest accept
    answers = ["x", "r", "fixes the symptom, not the parser"] + ["a", "looks right"] * (len(resolved) - 1)
    screen = _drive(["review", str(folder.path), "--reviewer", "ana"], answers)
    assert "problem statement" in screen and "acceptance" in screen
    got = folder.reviews()
    assert [(r.key(), r.verdict, r.reviewer) for r in got] == [
        (resolved[0].key(), "reject", "ana"),
        *[(r.key(), "accept", "ana") for r in resolved[1:]],
    ]
    assert got[0].reason == "fixes the symptom, not the parser"
    # a regrade that keeps the patch: the verdict still applies to the row that now counts
    folder.append(resolved[0].model_copy(update={"regraded_from": {"outcome": "resolved", "grader_version": 7}}))
    assert folder.current_reviews()[resolved[0].key()]["ana"].verdict == "reject"
    # nothing left for ana: a second pass asks nothing
    again = _drive(["review", str(folder.path), "--reviewer", "ana"], [])
    assert "0 verdict(s) recorded" in again and "verdict: a(ccept)" not in again
    # the report's agreement figure counts them: the policy refuses the first (a deleted test), as ana did
    report = _drive(["report", str(folder.path), "--json", str(folder.path / "f.json")], [])
    assert f"policy and reviewers agree on {len(resolved)}/{len(resolved)}" in report
    assert json.loads((folder.path / "f.json").read_text())["review"]["both_reject"] == 1


def test_the_report_shows_the_verdicts_and_the_agreement(tmp_path):
    import json
    import subprocess
    import sys

    folder = _measured_run(tmp_path)
    first, second, third = [r for r in folder.latest() if r.resolved][:3]
    _review(folder, first, "accept", reason="the deleted test was obsolete")  # the policy refuses it
    _review(folder, second, "accept")  # both accept
    _review(folder, third, "reject", reason="wrong module")  # the policy accepts it
    _review(folder, third, "unsure", "bo")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "report",
            str(folder.path),
            "--json",
            str(tmp_path / "f.json"),
            "--html",
            str(tmp_path / "r.html"),
        ],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "COLUMNS": "200"},
    )
    assert out.returncode == 0, out.stderr
    assert "policy and reviewers agree on 1/3" in out.stdout and "n < 20" in out.stdout
    assert "wrong module" in out.stdout
    review = json.loads((tmp_path / "f.json").read_text())["review"]
    assert (review["n"], review["unsure"], review["verdicts"]) == (3, 1, 4)
    assert review["kappa"] is None
    assert {d["reason"] for d in review["disagreements"]} == {"the deleted test was obsolete", "wrong module"}
    html = (tmp_path / "r.html").read_text()
    assert 'id="review"' in html and "the deleted test was obsolete" in html and "n &lt; 20" in html


def test_quitting_keeps_what_was_recorded_and_the_next_pass_continues(tmp_path):
    import io

    from rich.console import Console

    from harness.report.show import review

    folder = _measured_run(tmp_path)
    resolved = [r for r in folder.latest() if r.resolved]
    quiet = Console(file=io.StringIO())
    answers = iter(["u", "cannot tell without the issue thread", "q"])
    assert review(folder.path, [], "ana", lambda _: next(answers), console=quiet) == 1
    assert [(r.key(), r.verdict) for r in folder.reviews()] == [(resolved[0].key(), "unsure")]
    answers = iter(["a", ""] * len(resolved))
    assert review(folder.path, [resolved[1].task_id], "ana", lambda _: next(answers), console=quiet) == 1
    assert folder.reviews()[-1].key() == resolved[1].key()
