"""compare and gate on two runs that differ on known tasks (issue 26 item 4): exactly the tasks that
flipped get the failing side's cause and the step where the two attempts went apart."""

from __future__ import annotations

import json

from support.history import cli, row, write_run

from harness import transcript as ev
from harness.report.divergence import first_divergence
from harness.transcript import TranscriptWriter

EDIT_CORE = ("edit", {"command": "str_replace", "path": "pkg/core.py", "old_str": "-", "new_str": "+"}, None)
EDIT_README = ("edit", {"command": "create", "path": "README.md", "file_text": "x"}, None)
GREEN = ("run_tests", {}, [])
SUBMIT = ("submit", {}, None)


def red(*failing):
    return ("run_tests", {}, list(failing))


# (task, side) -> (resolved, plan); t1 both resolved, t4 both failed (the same way), t2 and t3 flipped
PLANS = {
    ("t1", "A"): (True, [red("x"), EDIT_CORE, GREEN, SUBMIT]),
    ("t1", "B"): (True, [red("x"), EDIT_CORE, GREEN, SUBMIT]),
    ("t2", "A"): (True, [red("x"), EDIT_CORE, GREEN, SUBMIT]),
    ("t2", "B"): (False, [EDIT_README, SUBMIT]),  # B never ran the tests and changed README.md
    ("t3", "A"): (False, [red("x"), EDIT_CORE, red("y"), SUBMIT]),  # A submitted red
    ("t3", "B"): (True, [red("x"), EDIT_CORE, GREEN, SUBMIT]),
    ("t4", "A"): (False, [EDIT_README, SUBMIT]),
    ("t4", "B"): (False, [EDIT_README, SUBMIT]),
}


def _write(folder, r, plan):
    with TranscriptWriter(folder.path / r.transcript_path, secrets=[], fsync=False) as tw:
        tw.write(ev.AttemptStart(task_id=r.task_id, attempt=1, config=r.config))
        for step, (name, args, failing) in enumerate(plan, 1):
            # the two models word every step differently: only what they did may count
            tw.write(ev.ModelResponse(step=step, text=f"{r.config} thinks aloud at step {step}"))
            tw.write(ev.ToolCallEvent(step=step, call_id=f"c{step}", name=name, arguments=args))
            tw.write(ev.ToolResultEvent(step=step, call_id=f"c{step}", name=name, output=f"{r.config} output"))
            if failing is not None:
                tw.write(
                    ev.TestRun(
                        step=step, command="pytest", exit_code=int(bool(failing)), failing=failing, green=not failing
                    )
                )
        tw.write(ev.Stop(reason="submitted"))


def make_runs(tmp_path):
    paths = {}
    for side in ("A", "B"):
        rows = [row(t, side, "resolved" if ok else "unresolved") for (t, s), (ok, _) in PLANS.items() if s == side]
        folder = write_run(tmp_path / "runs" / side, rows)
        for r in folder.rows():
            _write(folder, r, PLANS[r.task_id, side][1])
        paths[side] = folder.path
    return paths["A"], paths["B"]


def test_compare_gives_exactly_the_flipped_tasks_their_cause_and_divergence(tmp_path):
    a, b = make_runs(tmp_path)
    done = cli("compare", str(a), str(b), "--json", str(tmp_path / "cmp.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    tasks = {t["task_id"]: t for t in json.loads((tmp_path / "cmp.json").read_text())["comparisons"][0]["tasks"]}
    assert {t for t, x in tasks.items() if x["why"]} == {"t2", "t3"}
    t2, t3 = tasks["t2"]["why"], tasks["t3"]["why"]
    assert t2["failing"] == "B" and {c["cause"] for c in t2["causes"]} >= {"never_ran_tests"}
    # B's first step changed README.md where A's first change (step 2) was pkg/core.py; A ran the
    # tests at step 1 and B never did: the earlier, in the failing attempt, is the file
    d2 = t2["divergence"]
    assert (d2["kind"], d2["index"], d2["failing"]["what"], d2["failing"]["step"]) == (
        "file changed",
        1,
        "README.md",
        1,
    )
    assert (d2["resolved"]["what"], d2["resolved"]["step"]) == ("pkg/core.py", 2)
    assert t3["failing"] == "A" and [c["cause"] for c in t3["causes"]] == ["submitted_failing"]
    d3 = t3["divergence"]  # the same first run and the same edit: apart at the second test result
    assert (d3["kind"], d3["index"], d3["failing"]["step"], d3["resolved"]["what"]) == ("test result", 2, 3, "green")
    assert d3["failing"]["what"] == "red: y"
    assert done.stdout.count("cause on ") == 2 and "diverged at test result #2" in done.stdout


def test_gate_gives_the_lost_task_its_cause_and_divergence(tmp_path):
    a, b = make_runs(tmp_path)
    done = cli("gate", str(a), str(b), "--json", str(tmp_path / "gate.json"))
    result = json.loads((tmp_path / "gate.json").read_text())
    assert [f["task_id"] for f in result["lost"]] == ["t2"] and [f["task_id"] for f in result["won"]] == ["t3"]
    lost, won = result["lost"][0]["why"], result["won"][0]["why"]
    assert lost["failing"] == "candidate" and lost["divergence"]["failing"]["what"] == "README.md"
    assert won["failing"] == "baseline" and won["causes"][0]["cause"] == "submitted_failing"
    assert "cause on the candidate: never_ran_tests" in done.stdout
    assert "diverged at file changed #1: failing README.md (step 1" in done.stdout


def test_the_same_actions_in_other_words_do_not_diverge():
    def events(words):
        out = []
        for step, (name, args, failing) in enumerate([red("x"), EDIT_CORE, GREEN], 1):
            out.append(ev.ModelResponse(step=step, text=f"{words} {step}", seq=len(out)))
            out.append(ev.ToolCallEvent(step=step, call_id="c", name=name, arguments=args, seq=len(out)))
            out.append(ev.ToolResultEvent(step=step, call_id="c", name=name, output=words, seq=len(out)))
            if failing is not None:
                out.append(
                    ev.TestRun(
                        step=step, command="pytest", exit_code=1, failing=failing, green=not failing, seq=len(out)
                    )
                )
        return out

    assert first_divergence(events("one model"), events("another, verbose model")) is None


def test_the_html_report_shows_them_side_by_side(tmp_path):
    a, b = make_runs(tmp_path)
    done = cli("report", str(a), str(b), "--html", str(tmp_path / "r.html"))
    assert done.returncode == 0, done.stdout + done.stderr
    html = (tmp_path / "r.html").read_text()
    flips = html[html.index('<tr class="flips">') :]
    flips = flips[: flips.index("</table>")]
    assert flips.count("<tr><td>") == 2 and "<td>t2</td>" in flips and "<td>t3</td>" in flips
    assert "never_ran_tests" in flips and "README.md (step 1, event" in flips and "pkg/core.py (step 2, event" in flips
