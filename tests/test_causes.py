"""Failure causes (issue 26): each rule on synthetic transcripts, a case that has the cause and a
near miss that has not, and the evidence (event ids and quoted lines) it gives."""

from __future__ import annotations

import pytest

from harness import transcript as ev  # ev.TestRun: a name pytest would try to collect
from harness.records import ResultRow
from harness.report.causes import TaskFacts, causes_of, normalise
from harness.vocabulary import Cause, Outcome, StopReason


class Script:
    """A transcript written by hand: each helper adds one step's events, numbered as a writer would."""

    def __init__(self) -> None:
        self.events: list = []
        self.step = 0

    def add(self, event):
        event.seq = len(self.events)
        self.events.append(event)
        return event

    def call(self, name, args=None, output="", *, is_error=False, exit_code=None, kind="", command=""):
        self.step += 1
        cid = f"call_{self.step}"
        call = self.add(
            ev.ToolCallEvent(step=self.step, call_id=cid, name=name, arguments=args, kind=kind, command=command)
        )
        self.add(
            ev.ToolResultEvent(
                step=self.step, call_id=cid, name=name, output=output, is_error=is_error, exit_code=exit_code, kind=kind
            )
        )
        return call

    def bash(self, command, output="", code=0):
        return self.call("bash", {"command": command}, f"exit code {code}\n{output}", exit_code=code)

    def edit(self, path="pkg/core.py", old="a - b", new="a + b", *, refused=False):
        args = {"command": "str_replace", "path": path, "old_str": old, "new_str": new}
        if refused:
            return self.call("edit", args, f"error: {old!r} not found in {path}", is_error=True)
        return self.call("edit", args, "edited")

    def tests(self, *, green, failing=(), passed=3):
        call = self.call("run_tests", {}, f"exit code {0 if green else 1}", exit_code=0 if green else 1)
        self.add(
            ev.TestRun(
                step=self.step,
                command="python -m pytest -q",
                exit_code=0 if green else 1,
                passed=passed,
                failed=len(failing),
                failing=list(failing),
                green=green,
            )
        )
        return call

    def patch(self, *files):
        return self.add(ev.PatchEvent(attempt=1, bytes=10 * len(files), files=list(files)))

    def stop(self, reason=StopReason.submitted):
        if reason == StopReason.submitted:
            self.call("submit", {}, "submitted")
        return self.add(ev.Stop(reason=reason))


def row(outcome=Outcome.unresolved, stop=StopReason.submitted, f2p=(0, 2), **kw) -> ResultRow:
    passed, total = f2p
    tests = {f"tests/test_core.py::test_{i}": "PASSED" if i < passed else "FAILED" for i in range(total)}
    return ResultRow(
        run_id="r",
        task_id="t",
        task_hash="h",
        config="c",
        agent="a",
        outcome=outcome,
        resolved=outcome == Outcome.resolved,
        stop_reason=stop,
        tests=tests,
        fail_to_pass={"passed": passed, "failed": total - passed, "total": total, "ran": True},
        **kw,
    )


GOLD = TaskFacts(gold_files={"pkg/core.py"}, fail_to_pass=["tests/test_core.py::test_0", "tests/test_core.py::test_1"])


def found(script: Script, r: ResultRow | None = None, facts=GOLD, **kw) -> dict:
    return {f.cause: f for f in causes_of(script.events, r or row(), facts, **kw)}


def worked(script: Script) -> Script:
    """A fair attempt: looks, runs the tests, edits the right file, checks, submits."""
    script.bash("grep -n 'a - b' pkg/core.py", "3:    return a - b")
    script.tests(green=False, failing=["tests/test_core.py::test_0"])
    script.edit()
    script.tests(green=True)
    script.patch("pkg/core.py")
    script.stop()
    return script


def test_a_fair_attempt_has_no_cause_and_a_resolved_or_unscored_one_never_has():
    assert found(worked(Script())) == {}
    bad = Script()
    bad.stop()  # gave up at once: causes, unless the attempt is resolved or not the agent's to score
    assert found(bad)
    for outcome in (Outcome.resolved, Outcome.infra_error, Outcome.task_error):
        assert found(bad, row(outcome)) == {}
    assert found(bad, row(Outcome.empty_patch, stop=StopReason.noop)) == {}  # a control is no agent


def test_causes_never_repeat_an_outcome_or_a_stop_reason():
    assert not {c.value for c in Cause} & ({o.value for o in Outcome} | {s.value for s in StopReason})


def test_never_ran_the_tests():
    s = Script()
    s.bash("cat pkg/core.py")
    s.edit()
    s.patch("pkg/core.py")
    stop = s.stop()
    f = found(s)[Cause.never_ran_tests]
    assert [e.seq for e in f.evidence] == [stop.seq] and f.evidence[0].quote == "stop: submitted"
    # running them through bash counts (any ecosystem's test command), as does run_tests
    s = Script()
    s.edit()
    s.bash("cd /repo && python -m pytest -q tests/test_core.py", "1 failed", code=1)
    s.stop()
    assert Cause.never_ran_tests not in found(s)


def test_submitted_while_the_tests_failed():
    s = Script()
    s.edit()
    s.tests(green=False, failing=["tests/test_core.py::test_1"])
    s.stop()
    f = found(s)[Cause.submitted_failing]
    run = next(e for e in s.events if e.type == "test_run")
    assert f.evidence[0].seq == run.seq and "failing tests/test_core.py::test_1" in f.evidence[0].quote
    # the same red run, then a fix that went green: no
    s.events.pop()
    s.events.pop()
    s.events.pop()
    s.edit(old="x", new="y")
    s.tests(green=True)
    s.stop()
    assert Cause.submitted_failing not in found(s)
    # red, but the step limit stopped it (that is its stop reason's to say): no
    s = Script()
    s.tests(green=False, failing=["x"])
    s.add(ev.Stop(reason=StopReason.step_limit))
    assert Cause.submitted_failing not in found(s, row(stop=StopReason.step_limit))
    # a red bash pytest (no test_run event) counts too
    s = Script()
    s.edit()
    s.bash("pytest -q", "FAILED tests/test_core.py::test_1", code=1)
    s.stop()
    assert "(exit 1)" in found(s)[Cause.submitted_failing].evidence[0].quote


def test_a_syntax_or_import_error_introduced():
    s = Script()
    s.bash("python -c 'import pkg.core'", "")
    s.edit(new="a +")
    broken = s.bash("python -m pytest -q", '  File "pkg/core.py", line 3\nSyntaxError: invalid syntax', code=2)
    s.patch("pkg/core.py")
    s.stop()
    f = found(s)[Cause.broke_syntax_or_import]
    result = s.events[broken.seq + 1]
    assert f.evidence[0].seq == result.seq and f.evidence[0].quote == "SyntaxError: invalid syntax"
    # grading's own output says so too
    out = (
        "collected 0 items / 1 error\nE     File '/repo/pkg/core.py', line 3\nE   IndentationError: unexpected indent\n"
    )
    s2 = Script()
    s2.edit()
    s2.patch("pkg/core.py")
    s2.stop()
    g = found(s2, grading_output=out)[Cause.broke_syntax_or_import]
    assert (g.evidence[0].source, g.evidence[0].line) == ("test_output.txt", 3)
    # an error that was there before any edit was not introduced
    s3 = Script()
    s3.bash("python -m pytest -q", "SyntaxError: invalid syntax", code=2)
    s3.edit()
    s3.bash("python -m pytest -q", "SyntaxError: invalid syntax", code=2)
    s3.stop()
    assert Cause.broke_syntax_or_import not in found(s3)
    # a module of its own patch that no longer imports: introduced; a third-party one: environment
    s4 = Script()
    s4.edit(path="pkg/helpers.py")
    s4.bash("pytest", "ModuleNotFoundError: No module named 'pkg.helpers'", code=1)
    s4.patch("pkg/helpers.py")
    s4.stop()
    assert Cause.broke_syntax_or_import in found(s4) and Cause.environment_confusion not in found(s4)


def test_edited_where_the_fix_is_not():
    s = Script()
    s.edit(path="README.md")
    patch = s.patch("README.md", "tests/test_core.py")
    s.stop()
    f = found(s)[Cause.edited_elsewhere]
    assert f.evidence[0].seq == patch.seq and f.evidence[0].quote == "patch: README.md, tests/test_core.py"
    assert "pkg/core.py" in f.summary
    s2 = Script()
    s2.patch("README.md", "pkg/core.py")  # one file inside gold's footprint: no
    s2.stop()
    assert Cause.edited_elsewhere not in found(s2)
    assert Cause.edited_elsewhere not in found(s, facts=TaskFacts())  # gold unknown (spec gone): no
    # no patch event (an older run folder): the patch.diff is read
    s3 = Script()
    s3.stop()
    diff = "diff --git a/docs/x.md b/docs/x.md\n--- a/docs/x.md\n+++ b/docs/x.md\n"
    assert found(s3, diff=diff)[Cause.edited_elsewhere].evidence[0].source == "patch.diff"


def test_partial_fix():
    s = worked(Script())
    f = found(s, row(f2p=(1, 2)))[Cause.partial_fix]
    assert f.summary == "1 of 2 FAIL_TO_PASS tests pass"
    assert f.evidence[0].source == "grade.json" and "failing tests/test_core.py::test_1" in f.evidence[0].quote
    assert Cause.partial_fix not in found(s, row(f2p=(0, 2)))
    assert Cause.partial_fix not in found(s, row(Outcome.regression, f2p=(2, 2)))  # a regression stays an outcome


def test_looped_on_the_same_normalised_command():
    s = Script()
    calls = [
        s.bash("cd /repo && grep -n add pkg/core.py"),
        s.bash("grep  -n add pkg/core.py 2>&1 | head -20"),
        s.bash("cd /repo; grep -n add pkg/core.py | tail -n 5"),
    ]
    s.stop()
    f = found(s)[Cause.looped]
    assert [e.seq for e in f.evidence] == [c.seq for c in calls] and f.evidence[0].quote == "$ grep -n add pkg/core.py"
    # an edit between repeats: checking a change, not a loop
    s2 = Script()
    s2.tests(green=False, failing=["x"])
    s2.tests(green=False, failing=["x"])
    s2.edit()
    s2.tests(green=True)
    s2.stop()
    assert Cause.looped not in found(s2)
    # the same edit again and again (refused each time)
    s3 = Script()
    for _ in range(3):
        s3.edit(old="nope", refused=True)
    s3.stop()
    assert found(s3)[Cause.looped].summary == "the same edit 3 times"
    assert normalise("cd /a && cd b && ls  -la 2>&1 | head -n 3") == "ls -la"


def test_gave_up_early():
    s = Script()
    s.bash("ls")
    stop = s.stop()
    f = found(s, row(Outcome.empty_patch))[Cause.gave_up_early]
    assert f.evidence[0].seq == stop.seq and "with no change" in f.summary
    s2 = Script()
    s2.add(ev.Stop(reason=StopReason.step_limit))
    assert Cause.gave_up_early not in found(s2, row(Outcome.empty_patch, stop=StopReason.step_limit))
    s3 = worked(Script())
    assert Cause.gave_up_early not in found(s3)


def test_environment_confusion():
    s = Script()
    install = s.bash("pip install -q requests", "ERROR: Could not find a version", code=1)
    missing = s.bash("python -m pytest", "E   ModuleNotFoundError: No module named 'yaml'", code=1)
    s.stop()
    f = found(s)[Cause.environment_confusion]
    assert [e.seq for e in f.evidence] == [install.seq, missing.seq + 1]
    assert f.evidence[1].quote == "E ModuleNotFoundError: No module named 'yaml'"
    assert Cause.environment_confusion not in found(worked(Script()))


def test_tool_misuse_is_refused_calls_that_recur():
    s = Script()
    s.edit(old="one", refused=True)
    s.edit(old="two", refused=True)
    s.call("edit", {"command": "view"}, "error: missing ['path']", is_error=True)
    s.stop()
    f = found(s)[Cause.tool_misuse]
    assert len(f.evidence) == 3 and f.evidence[2].quote == "error: missing ['path']"
    # two refusals, or commands that ran and exited non-zero, are not misuse
    s2 = Script()
    s2.edit(old="one", refused=True)
    s2.edit(old="two", refused=True)
    for word in ("a", "b", "c"):
        s2.bash(f"grep {word} nothing.txt", code=1)
    s2.stop()
    assert Cause.tool_misuse not in found(s2)


@pytest.mark.parametrize("cause", list(Cause))
def test_every_cause_has_a_rule_test(cause):
    import inspect
    import sys

    source = inspect.getsource(sys.modules[__name__])
    assert f"Cause.{cause.name}" in source


# ---------------------------------------------------------------- through the built-in agent


AGENT_GOLD = TaskFacts(gold_files={"calc.py"}, fail_to_pass=["test_calc.py::test_add", "test_calc.py::test_sub"])


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n")
    (root / "test_calc.py").write_text(
        "from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 1) == 3\n\n\n"
        "def test_sub():\n    assert sub(2, 1) == 1\n"
    )
    return root


FIX = {
    "command": "str_replace",
    "path": "calc.py",
    "old_str": "    return a - b\n\n\ndef sub",
    "new_str": "    return a + b\n\n\ndef sub",
}


def _turn(name, args):
    from harness.models import tool_turn

    return tool_turn(name, args)  # its call id is the tool's name: ids repeat, as in many recordings


PLANS = {
    Cause.never_ran_tests: [("edit", FIX), ("submit", {})],
    Cause.submitted_failing: [("run_tests", {}), ("submit", {})],
    Cause.broke_syntax_or_import: [
        (
            "edit",
            {
                "command": "str_replace",
                "path": "calc.py",
                "old_str": "return a - b\n\n\ndef sub",
                "new_str": "return (a +\n\n\ndef sub",
            },
        ),
        ("run_tests", {}),
        ("submit", {}),
    ],
    Cause.edited_elsewhere: [
        ("edit", {"command": "create", "path": "NOTES.md", "file_text": "add is wrong\n"}),
        ("run_tests", {}),
        ("submit", {}),
    ],
    Cause.partial_fix: [
        ("run_tests", {}),
        ("edit", FIX),
        ("run_tests", {}),
        ("bash", {"command": "cat calc.py"}),
        ("submit", {}),
    ],
    Cause.looped: [
        ("bash", {"command": "cat calc.py"}),
        ("bash", {"command": "cd . && cat calc.py"}),
        ("bash", {"command": "cat  calc.py | head -50"}),
        ("edit", FIX),
        ("run_tests", {}),
        ("submit", {}),
    ],
    Cause.gave_up_early: [("submit", {})],
    Cause.environment_confusion: [
        ("bash", {"command": "python3 -c 'import wholeloop_missing_module_x'"}),
        ("edit", FIX),
        ("run_tests", {}),
        ("submit", {}),
    ],
    Cause.tool_misuse: [
        ("edit", {"command": "str_replace", "path": "calc.py", "old_str": "nope", "new_str": "x"}),
        ("edit", {"command": "view"}),
        ("edit", {"command": "str_replace", "path": "calc.py", "old_str": "return a - b", "new_str": "x"}),
        ("edit", FIX),
        ("run_tests", {}),
        ("submit", {}),
    ],
}
CORRECT = [
    ("run_tests", {}),
    ("edit", FIX),
    (
        "edit",
        {
            "command": "str_replace",
            "path": "calc.py",
            "old_str": "def sub(a, b):\n    return a - b",
            "new_str": "def sub(a, b):\n    return a - b  # right",
        },
    ),
    ("run_tests", {}),
    ("submit", {}),
]


def run_plan(plan, repo, tmp_path):
    """The built-in agent (ToolAgent) driven by a scripted model in a sandbox over a local folder;
    the patch event is what the runner would write from the sandbox's changes."""
    import sys

    from support.fakesandbox import LocalSandbox

    from harness.agents import AgentContext
    from harness.agents.config import load_agent_config
    from harness.agents.loop import ToolAgent
    from harness.models import ScriptedModel
    from harness.tasks import Task
    from harness.transcript import PatchEvent, TranscriptWriter, read_transcript

    task = Task.model_validate(
        {
            "id": "t",
            "repo": "r",
            "base_commit": "c",
            "problem_statement": "add() subtracts",
            "test_command": f"{sys.executable} -m pytest -q -p no:cacheprovider test_calc.py",
            "hidden_tests": {"command": "pytest"},
            "FAIL_TO_PASS": AGENT_GOLD.fail_to_pass,
        }
    )
    path = tmp_path / "transcript.jsonl"
    with LocalSandbox(repo) as box, TranscriptWriter(path, secrets=[], fsync=False) as tw:
        result = ToolAgent(ScriptedModel([_turn(n, a) for n, a in plan]), load_agent_config()).run(
            AgentContext(task=task, sandbox=box, transcript=tw)
        )
        tw.write(PatchEvent(attempt=1, bytes=1, files=sorted(c.path for c in box.changes())))
    return result, read_transcript(path)


@pytest.mark.parametrize("cause", list(PLANS), ids=[c.value for c in PLANS])
def test_a_scripted_model_that_shows_a_cause_gets_it_through_the_built_in_agent(cause, repo, tmp_path):
    result, events = run_plan(PLANS[cause], repo, tmp_path)
    f2p = (1, 2) if cause == Cause.partial_fix else (0, 2)
    outcome = Outcome.empty_patch if cause == Cause.gave_up_early else Outcome.unresolved
    findings = {f.cause: f for f in causes_of(events, row(outcome, stop=result.stop_reason, f2p=f2p), AGENT_GOLD)}
    assert cause in findings, findings
    by_seq = {e.seq: e for e in events}
    for evidence in findings[cause].evidence:  # every quoted event is in the transcript
        if evidence.source == "transcript":
            assert evidence.seq in by_seq and evidence.quote


def test_a_correct_solution_through_the_built_in_agent_gets_none(repo, tmp_path):
    result, events = run_plan(CORRECT, repo, tmp_path)
    assert [e.green for e in events if e.type == "test_run"] == [False, True]
    assert causes_of(events, row(Outcome.resolved, stop=result.stop_reason, f2p=(2, 2)), AGENT_GOLD) == []
    # nothing in how it worked is a cause, whatever the grade said
    assert causes_of(events, row(Outcome.unresolved, stop=result.stop_reason, f2p=(0, 2)), AGENT_GOLD) == []


# ---------------------------------------------------------------- external CLIs' transcript shapes


def cli_call(s: Script, step, cid, name, args, *, kind="", command=""):
    """A call as the external CLIs' recorder writes it: kind and command by the config's rules,
    several calls per step (parallel tool calls), results after all the step's calls."""
    return s.add(ev.ToolCallEvent(step=step, call_id=cid, name=name, arguments=args, kind=kind, command=command))


def cli_result(s: Script, step, cid, name, *, kind="", output="", exit_code=None, is_error=False):
    return s.add(
        ev.ToolResultEvent(
            step=step, call_id=cid, name=name, output=output, kind=kind, exit_code=exit_code, is_error=is_error
        )
    )


def test_claude_code_shaped_transcripts_get_the_same_causes():
    s = Script()
    # step 1: two Bash calls in parallel, a test run and an install attempt
    cli_call(s, 1, "toolu_1", "Bash", {"command": "pytest -q"}, kind="test", command="pytest -q")
    cli_call(s, 1, "toolu_2", "Bash", {"command": "pip install attrs"}, kind="shell", command="pip install attrs")
    cli_result(s, 1, "toolu_1", "Bash", kind="test", output="1 failed", exit_code=1)
    red = s.add(ev.TestRun(step=1, command="pytest -q", exit_code=1, failed=1, failing=["t::a"], green=False))
    cli_result(s, 1, "toolu_2", "Bash", kind="shell", output="ERROR: No matching distribution", exit_code=1)
    # step 2..4: the Edit tool refused three times (its old_string is not in the file)
    for step in (2, 3, 4):
        args = {"file_path": "/repo/pkg/core.py", "old_string": f"x{step}", "new_string": "y"}
        cli_call(s, step, f"toolu_e{step}", "Edit", args, kind="edit")
        cli_result(s, step, f"toolu_e{step}", "Edit", kind="edit", output="String to replace not found", is_error=True)
    s.add(ev.Stop(reason=StopReason.submitted))  # the CLI exited 0
    f = found(s)
    assert {Cause.submitted_failing, Cause.environment_confusion, Cause.tool_misuse} <= set(f)
    assert f[Cause.submitted_failing].evidence[0].seq == red.seq
    assert Cause.never_ran_tests not in f


def test_a_test_run_belongs_to_its_own_call_when_a_step_has_several():
    s = Script()
    cli_call(s, 1, "a", "Bash", {}, kind="test", command="pytest tests/test_a.py")
    cli_call(s, 1, "b", "Bash", {}, kind="test", command="pytest tests/test_b.py")
    cli_result(s, 1, "a", "Bash", kind="test", exit_code=0)
    s.add(ev.TestRun(step=1, command="pytest tests/test_a.py", exit_code=0, passed=1, green=True))
    cli_result(s, 1, "b", "Bash", kind="test", exit_code=1)
    last = s.add(ev.TestRun(step=1, command="pytest tests/test_b.py", exit_code=1, failed=1, failing=["b"]))
    s.add(ev.Stop(reason=StopReason.submitted))
    f = found(s)[Cause.submitted_failing]
    assert f.evidence[0].seq == last.seq and "test_b.py" in f.evidence[0].quote
    # and the divergence aligns test results call by call
    from harness.report.divergence import first_divergence

    other = Script()
    cli_call(other, 1, "a", "Bash", {}, kind="test", command="pytest tests/test_a.py")
    cli_call(other, 1, "b", "Bash", {}, kind="test", command="pytest tests/test_b.py")
    cli_result(other, 1, "a", "Bash", kind="test", exit_code=0)
    other.add(ev.TestRun(step=1, command="pytest tests/test_a.py", exit_code=0, passed=1, green=True))
    cli_result(other, 1, "b", "Bash", kind="test", exit_code=0)
    other.add(ev.TestRun(step=1, command="pytest tests/test_b.py", exit_code=0, passed=1, green=True))
    d = first_divergence(s.events, other.events)
    assert (d.kind, d.index, d.failing.what, d.resolved.what) == ("test result", 2, "red: b", "green")


def test_the_built_in_agents_bash_test_commands_and_git_apply_count_as_an_external_clis_do(repo, tmp_path):
    """The same plan of shell commands gives the built-in agent the recovery figures an external
    CLI's recorder gives (tests/test_external_causes.py checks it end to end): a test command run
    with bash is a test run (red is no tool error), `git apply` is a file change."""
    import sys

    from harness.report.recovery import AttemptRecovery, analyse_attempt

    diff = "--- a/calc.py\n+++ b/calc.py\n@@ -1,5 +1,5 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n \n \n def sub(a, b):\n"
    (tmp_path / "fix.diff").write_text(diff)
    tests = f"{sys.executable} -m pytest -q -p no:cacheprovider test_calc.py"
    plan = [
        ("bash", {"command": tests}),
        ("bash", {"command": "git apply ../fix.diff"}),  # (a path under pytest's tmp folder reads as a test run)
        ("bash", {"command": tests}),
        ("submit", {}),
    ]
    result, events = run_plan(plan, repo, tmp_path)
    assert [e.green for e in events if e.type == "test_run"] == [False, True]
    got = analyse_attempt(events, AttemptRecovery(task_id="t", config="c", repeat=0, attempt=1))
    assert (got.test_runs, got.red_runs, got.edits, got.edits_after_red, got.tool_errors) == (2, 1, 1, 1, 0)
    assert got.green_after_red and got.steps_to_green == 3
    graded = row(Outcome.resolved, stop=result.stop_reason, f2p=(2, 2))
    assert causes_of(events, graded.model_copy(update={"outcome": Outcome.unresolved, "resolved": False})) == []


def test_the_turn_that_finishes_with_a_text_reply_is_a_step_as_a_submit_is():
    """Claude Code finishes with a text reply, the built-in agent with `submit`, mini with a command:
    the same plan is the same number of steps (RULES_VERSION 2), so gave_up_early agrees."""
    built_in = Script()
    built_in.tests(green=False, failing=["t"])
    built_in.edit()
    built_in.tests(green=True)
    built_in.stop()
    claude = Script()
    claude.tests(green=False, failing=["t"])
    claude.edit()
    claude.tests(green=True)
    claude.add(ev.ModelResponse(step=4, text="The fix is in and the tests pass."))
    claude.add(ev.Stop(reason=StopReason.submitted))
    for s in (built_in, claude):
        assert Cause.gave_up_early not in found(s), s
    early = Script()
    early.edit()
    early.add(ev.ModelResponse(step=2, text="Done."))
    early.add(ev.Stop(reason=StopReason.submitted))
    assert Cause.gave_up_early in found(early)
