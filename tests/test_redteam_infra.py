"""Held-out red team of issue 10: agent behaviours that end a unit as `infra_error` (left out of
every rate, and retried) or `task_error` (left out), on real containers and real wholeloop code.

Every test asserts the attempt's OWN outcome (graded; or a counted outcome such as
`environment_broken`; a stop reason that says whose it is), per docs/outcomes.md. An attack that
still succeeds is a strict xfail whose reason says how; once the defence lands the xfail turns
XPASS and the mark comes off (notes: /work/notes/issue-10-redteam2.md). The tiny task's image is
shared with tests/test_attribution.py (tags are hashes: one build, then lookups).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.runs import run_folder, run_rows

from harness.agents import AgentResult
from harness.tasks import load_task

pytestmark = pytest.mark.docker

FIXED = "sed -i 's/a - b/a + b/' calc/__init__.py"


class Agent:
    """A scripted agent (any kind: a CLI, a script): writes `files` (path -> text) and runs
    `commands` in its container, every attempt."""

    model = None

    def __init__(self, *commands: str, files: dict[str, str] | None = None, name: str = "redteam2") -> None:
        self.commands, self.files, self.name = commands, files or {}, name

    def run(self, ctx):
        for path, text in self.files.items():
            ctx.sandbox.write_file(path, text)
        for cmd in self.commands:
            ctx.sandbox.exec(cmd)
        return AgentResult(stop_reason="submitted", steps=len(self.commands) + len(self.files))

    def describe(self):
        return {"agent": self.name}


def _no_infra(rows):
    """No row of the unit is an infrastructure or task error, and it was never retried."""
    assert all(r.outcome not in ("infra_error", "task_error") and r.error is None for r in rows), [
        (r.attempt, r.outcome, r.stop_reason, r.error) for r in rows
    ]


def _grade(tmp_path, row) -> dict:
    return json.loads((run_folder(tmp_path) / row.dir / "grade.json").read_text())


# ---------------------------------------------------------------- between attempts


@pytest.mark.parametrize(
    "blocker",
    [
        pytest.param("mv /.wholeloop /.wl-moved && touch /.wholeloop", id="init-mountpoint"),
        pytest.param("cp -a /repo /repo.kept && rm -rf /repo && touch /repo", id="workdir-a-file"),
    ],
)
def test_an_agent_that_keeps_its_container_from_starting_again_is_the_agents_doing_on_the_next_attempt(
    tiny_task, tmp_path, blocker
):
    """Root in its container, the agent moves the folder holding wholeloop's init aside (a folder
    with a mount below it can be renamed when it is in the container's own layer) and puts a file
    there, or makes the working folder a file: the container cannot be started for attempt 2 ("not
    a directory", a 400 or a 500 from the engine). The engine answers and a fresh container of the
    same image starts: the agent's doing. Attempt 2 is graded on the tree as it is, stop reason
    `container_broken`; never an infra_error row, never a retry. (Moving /etc, whose files are bind
    mounts of the lower layer, is refused: held.)"""
    rows = run_rows(load_task(tiny_task["spec"]), Agent(blocker), tmp_path, attempts=2, infra_retries=1)
    _no_infra(rows)
    assert not list(run_folder(tmp_path).rglob("transcript.unfinished-*.jsonl"))  # never retried
    assert [(r.attempt, r.final) for r in rows] == [(1, False), (2, True)]
    assert rows[0].outcome == rows[1].outcome != "resolved"
    assert rows[1].stop_reason == "container_broken" and "start" in rows[1].note


# ---------------------------------------------------------------- grading: the results reader

REWRITE_REPORT = """
import atexit as _atexit, os as _os, re as _re


def _rewrite(_line={line!r}):
    found = _re.search(r"--report-log=(\\S+)", _os.environ.get("PYTEST_ADDOPTS", ""))
    if found:
        with open(found.group(1), "w") as out:
            out.write(_line + "\\n")


_atexit.register(_rewrite)
"""


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(
            '{"$report_type": "TestReport", "nodeid": "tests/test_add.py::test_add", "when": "call", '
            '"outcome": "failed", "longrepr": {"reprcrash": "boom"}}',
            id="reprcrash-not-an-object",
        ),
        pytest.param(
            '{"$report_type": "TestReport", "nodeid": "t", "when": "call", "outcome": "failed", '
            '"longrepr": {"reprtraceback": {"reprentries": [{"data": [1]}]}}}',
            id="entry-data-a-list",
        ),
        pytest.param("[" * 100_000 + "]" * 100_000, id="nested-too-deep"),
        pytest.param(
            '{"$report_type": "TestReport", "nodeid": "tests/test_add.py::test_add\\udc80", "when": "call", '
            '"outcome": "passed"}\n{"$report_type": "SessionFinish", "exitstatus": 0}',
            id="a-lone-surrogate-in-a-node-id",
        ),
    ],
)
def test_code_under_test_that_writes_a_malformed_structured_report_is_suspected_tampering(tiny_task, tmp_path, line):
    """The code under test (imported by the hidden tests) finds grading's report-log path in
    PYTEST_ADDOPTS and, at exit, rewrites it with JSON of the wrong shape. The reader must call
    that what it is (a structured report it cannot read: suspected tampering, never resolved),
    not raise out of grading into an infra_error row."""
    code = REWRITE_REPORT.format(line=line)
    agent = Agent(FIXED, "cat /tmp/rewrite.py >> calc/__init__.py", files={"/tmp/rewrite.py": code})
    rows = run_rows(load_task(tiny_task["spec"]), agent, tmp_path)
    _no_infra(rows)
    assert [(r.outcome in ("unresolved", "regression"), r.resolved) for r in rows] == [(True, False)]
    assert rows[0].tampering and "structured report" in rows[0].tampering


# ---------------------------------------------------------------- taking the patch

DEEP = (
    'cd /repo && n=$(printf "d%.0s" $(seq 200)); '
    'for i in $(seq 21); do mkdir "$n" && cd "$n" || exit 1; done; echo deep > f; pwd | wc -c'
)


def test_an_agent_that_nests_folders_past_path_max_gets_its_own_outcome_not_a_retry(tiny_task, tmp_path):
    """The agent fixes the bug and nests folders (each step a relative `mkdir` + `cd`) until the
    path is over 4096 bytes as the engine sees it: `docker diff` answers 500 ("lstat ...: file
    name too long"), an InfraError by type, so the unit was retried and then left out. A fresh
    container of the same image lists its changes fine: what the agent's tree holds is its own
    doing (no patch can be taken: `empty_patch`, counted)."""
    rows = run_rows(load_task(tiny_task["spec"]), Agent(FIXED, DEEP), tmp_path, infra_retries=1)
    _no_infra(rows)
    assert not list(run_folder(tmp_path).rglob("transcript.unfinished-*.jsonl"))  # never retried
    assert [(r.outcome, r.attempt) for r in rows] == [("empty_patch", 1)]
    assert "no patch could be taken" in rows[0].note and "changes" in rows[0].note


# ---------------------------------------------------------------- grading: its own probes


def test_a_patch_with_many_new_files_does_not_time_out_the_shadowing_probe(tiny_task, tmp_path):
    """The shadowing probe (run before the patch is applied, on the patch's paths) looked at every
    new path once per folder of every path: quadratic. 10,000 new files two folders deep took 50 s
    of the grading container's Python, 20,000 more than the 120 s step timeout (an agent that
    leaves an unignored `node_modules/` does that): `InfraError` -> retried, then `infra_error`.
    Here 4,000 files against a 4 s step timeout, the same path at a tenth of the cost."""
    from harness.grading import grade
    from harness.run.unit import prepare_task
    from sandbox import Limits

    task = load_task(tiny_task["spec"])
    prepared = prepare_task(task)
    fix = (Path(tiny_task["dir"]) / "gold.diff").read_text()
    many = "".join(
        f"diff --git a/vendor/pkg/f{i}.txt b/vendor/pkg/f{i}.txt\nnew file mode 100644\n"
        f"index 0000000..257cc56\n--- /dev/null\n+++ b/vendor/pkg/f{i}.txt\n@@ -0,0 +1 @@\n+foo\n"
        for i in range(4000)
    )
    graded, _, _ = grade(
        task,
        fix + many,
        prepared.image,
        base=prepared.base_commit,
        limits=Limits(command_timeout_s=60, step_timeout_s=4),
        run_id=run_folder(tmp_path).name,
    )
    assert (graded.outcome.value, graded.resolved) == ("resolved", True), graded.note


# ---------------------------------------------------------------- an external CLI

CLI_97 = """\
    kind: external
    name: exits-97
    cli: exits-97-cli
    version: "1.0.0"
    wire: openai-chat
    model: openai/gpt-6.1-sol
    provider: {api_key_env: OPENAI_API_KEY, base_url_env: OPENAI_BASE_URL}
    install:
      - shell: |
          mkdir -p bin
          cat > bin/the-cli <<'PY'
          #!/usr/bin/env python3
          import json, subprocess, sys, urllib.request
          body = {"model": "gpt-6.1-sol", "messages": [{"role": "user", "content": "fix it"}]}
          request = urllib.request.Request(sys.argv[1] + "/v1/chat/completions", data=json.dumps(body).encode(),
                                           headers={"Authorization": "Bearer " + sys.argv[2],
                                                    "Content-Type": "application/json"})
          urllib.request.urlopen(request, timeout=30).read()
          subprocess.run(["sed", "-i", "s/a - b/a + b/", "calc/__init__.py"], check=True)
          if len(sys.argv) > 4:  # a second call, for a model of the CLI's own choosing
              body["model"] = sys.argv[4]
              request.data = json.dumps(body).encode()
              try:
                  urllib.request.urlopen(request, timeout=30).read()
              except OSError:
                  pass
          sys.exit(int(sys.argv[3]))
          PY
          chmod +x bin/the-cli
    check: ["/bin/sh", "-c", "test -x /opt/wl-agent/bin/the-cli && echo exits-97-cli 1.0.0"]
    command: ["/opt/wl-agent/bin/the-cli", "{base_url}", "{token}", "97"]
    """


def test_an_external_cli_that_exits_97_is_graded_not_an_infra_error(tiny_task, tmp_path, monkeypatch):
    """Exit code 97 was the runner's word for "the loopback forwarder could not start" -- but the
    CLI's own exit code comes through the same `exec`, so a CLI that calls the model, fixes the bug
    and exits 97 had its unit recorded as `infra_error` (left out). Whatever the CLI exits with
    after the forwarder started is the agent's: graded, `agent_error`."""
    import textwrap

    from support.fakellm import FakeLLM, Reply

    from harness.agents import get_agent

    path = tmp_path / "exits-97.yaml"
    path.write_text(textwrap.dedent(CLI_97))
    with FakeLLM() as fake:
        fake.script(Reply(text="done"))
        monkeypatch.setenv("OPENAI_API_KEY", "sk-redteam2-key-123456789")
        monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_url)
        agent = get_agent("exits-97", config_path=str(path))
        rows = run_rows(load_task(tiny_task["spec"]), agent, tmp_path, infra_retries=0)
        assert len(fake.requests) == 1
    _no_infra(rows)
    assert [(r.outcome, r.stop_reason, r.model_calls) for r in rows] == [("resolved", "agent_error", 1)]


# ---------------------------------------------------------------- what the model says


UNUSABLE = [  # (tool, arguments): the right names, the wrong JSON types or an impossible path
    ("bash", {"command": 5}),
    ("bash", {"command": ["ls", "-la"]}),
    ("edit", {"command": "insert", "path": "calc/__init__.py", "insert_line": "1", "new_str": "# x"}),  # found
    ("edit", {"command": "view", "path": 5}),  # found
    ("edit", {"command": "view", "path": "calc/__init__.py", "view_range": "1-3"}),  # found
    ("edit", {"command": "str_replace", "path": "calc/__init__.py", "old_str": ["a"], "new_str": "b"}),  # found
    ("edit", {"command": "view", "path": "calc/\x00x"}),
    ("edit", {"command": "create", "path": "calc/n\x00ul.py", "file_text": "x"}),
    ("edit", {"command": "create", "path": "/proc/1/comm", "file_text": "x"}),
    ("edit", {"command": "create", "path": "/.wholeloop/init", "file_text": "x"}),
    ("edit", {"command": "create", "path": "/", "file_text": "x"}),
    ("edit", {"command": "view", "path": "/dev/zero"}),
    ("edit", {"command": "view", "path": "/proc/self/fd"}),
    ("edit", {"command": "create", "path": "calc/" + "x" * 300 + ".py", "file_text": "x"}),
]


@pytest.mark.parametrize("fast_exec", [True, False], ids=["helper", "engine-api"])
def test_tool_calls_with_unusable_arguments_are_tool_errors_the_model_sees(tiny_task, tmp_path, monkeypatch, fast_exec):
    """Models do send `"insert_line": "1"`: arguments that parse as JSON, with the right names and
    the wrong types (four of these raised TypeError out of the agent: an infra_error row), or paths
    no file can have. Each is a tool error the model reads; the attempt goes on to the fix. On both
    exec paths (the in-container helper, and one Engine API call per operation)."""
    from support.runs import FIX

    from harness.agents.config import load_agent_config
    from harness.agents.loop import ToolAgent
    from harness.models import ScriptedModel, tool_turn

    monkeypatch.setenv("WHOLELOOP_FAST_EXEC", "1" if fast_exec else "0")
    model = ScriptedModel([tool_turn(t, a) for t, a in UNUSABLE] + [tool_turn("edit", FIX), tool_turn("submit", {})])
    rows = run_rows(load_task(tiny_task["spec"]), ToolAgent(model, load_agent_config()), tmp_path)
    _no_infra(rows)
    assert [(r.outcome, r.stop_reason) for r in rows] == [("resolved", "submitted")]
    from harness.transcript import read_transcript

    results = [e for e in read_transcript(run_folder(tmp_path) / rows[0].transcript_path) if e.type == "tool_result"]
    assert all(e.is_error for e in results[:6]), [e.output[:80] for e in results[:6]]  # the wrong types: said so


ODD_NAMES = (
    "cd calc && printf x > \"$(printf 'new\\nline')\" && printf x > \"$(printf 'tab\\there')\" && "
    "printf x > \"$(printf 'cr\\rhere')\" && printf x > 'back\\slash' && printf x > '\"quoted\"' && "
    "printf x > ' lead' && printf x > \"$(printf 'x%.0s' $(seq 250))\" && mkfifo fifo && "
    "python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"sock\")' && "
    "mknod chr c 1 3 && mkdir closed && printf x > closed/f && chmod 000 closed closed/f && "
    "printf x > mode000 && chmod 000 mode000"
)


def test_odd_names_and_special_files_in_the_tree_are_taken_and_graded(tiny_task, tmp_path):
    """Names with a newline, a TAB, a CR, a backslash, quotes, a leading space, 250 bytes; a FIFO, a
    socket, a device node, a folder and a file of mode 000: the patch is taken and graded (held)."""
    rows = run_rows(load_task(tiny_task["spec"]), Agent(FIXED, ODD_NAMES), tmp_path)
    _no_infra(rows)
    assert [(r.outcome, r.attempt) for r in rows] == [("resolved", 1)]
    patch = (run_folder(tmp_path) / rows[0].patch_path).read_text()
    assert '"a/calc/new\\nline"' in patch and "calc/mode000" in patch and "calc/closed/f" in patch
    assert "calc/fifo" not in patch and "calc/sock" not in patch and "calc/chr" not in patch


CLI_QUICK = """\
    kind: external
    name: quick-crash
    cli: quick-crash-cli
    version: "1.0.0"
    wire: openai-chat
    model: openai/gpt-6.1-sol
    provider: {api_key_env: OPENAI_API_KEY, base_url_env: OPENAI_BASE_URL}
    install:
      - shell: |
          mkdir -p bin
          printf '#!/bin/sh\\nsed -i "s/a - b/a + b/" calc/__init__.py\\necho "Traceback: KeyError" >&2\\nexit 1\\n' > bin/the-cli
          chmod +x bin/the-cli
    check: ["/bin/sh", "-c", "test -x /opt/wl-agent/bin/the-cli && echo quick-crash-cli 1.0.0"]
    command: ["/opt/wl-agent/bin/the-cli"]
    exclude: [".quick-crash/"]
    """


def test_an_external_cli_that_worked_on_the_repository_and_crashed_at_once_is_graded(tiny_task, tmp_path, monkeypatch):
    """ "Exited at once without calling the model" stands for "could not start" (a wrong flag, a
    missing binary: the setup's). A CLI that changed the repository did start: its crash on this
    task is its own, graded (`agent_error`), not left out of the rate. (One that changed nothing
    still says "exited at once": tests/test_external_config.py.)"""
    import textwrap

    from harness.agents import get_agent

    path = tmp_path / "quick-crash.yaml"
    path.write_text(textwrap.dedent(CLI_QUICK))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-redteam2-key-123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never called
    rows = run_rows(
        load_task(tiny_task["spec"]), get_agent("quick-crash", config_path=str(path)), tmp_path, infra_retries=0
    )
    _no_infra(rows)
    assert [(r.outcome, r.stop_reason, r.model_calls) for r in rows] == [("resolved", "agent_error", 0)]


CLI_LOGS = """\
    kind: external
    name: fills-logs
    cli: fills-logs-cli
    version: "1.0.0"
    wire: openai-chat
    model: openai/gpt-6.1-sol
    provider: {api_key_env: OPENAI_API_KEY, base_url_env: OPENAI_BASE_URL}
    install:
      - shell: |
          mkdir -p bin
          printf '#!/bin/sh\\nfor i in 1 2 3 4; do head -c 15000000 /dev/zero > "$1/fill-$i" || break; done\\n' > bin/the-cli
          chmod +x bin/the-cli
    check: ["/bin/sh", "-c", "test -x /opt/wl-agent/bin/the-cli && echo fills-logs-cli 1.0.0"]
    command: ["/opt/wl-agent/bin/the-cli", "{logs}"]
    """


def test_an_external_cli_cannot_write_past_its_disk_limit_through_its_logs_folder(tiny_task, tmp_path, monkeypatch):
    """The task's disk limit is 20 MB; the CLI writes 60 MB into its logs folder (`{logs}`), which
    is the host's folder beside the transcript. 60 MB here; the same loop writes until the host's
    disk is full. What the CLI can write anywhere must be bounded by its disk limit."""
    import textwrap

    from harness.agents import get_agent

    spec = tiny_task["spec"]
    spec.write_text(
        spec.read_text().replace("limits: {command_timeout_s: 60}", "limits: {command_timeout_s: 60, disk: 20m}")
    )
    path = tmp_path / "fills-logs.yaml"
    path.write_text(textwrap.dedent(CLI_LOGS))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-redteam2-key-123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never called
    rows = run_rows(load_task(spec), get_agent("fills-logs", config_path=str(path)), tmp_path, infra_retries=0)
    written = sum(p.stat().st_size for p in run_folder(tmp_path).rglob("fill-*"))
    assert written <= 20 * 2**20, f"{written / 2**20:.0f} MB written on the host through the logs mount"
    assert rows[0].outcome != "infra_error"


def test_an_external_cli_refused_for_a_model_it_chose_itself_is_graded(tiny_task, tmp_path, monkeypatch):
    """The CLI makes its model call (the configured model), fixes the bug, then asks for a model
    that is not the configured one and exits 1. Since issue 21 the metering proxy refuses that call
    before it leaves (only the configured model may be called), so the provider sees one request. A
    refusal of the configured model is the setup's (no retry helps); of one the CLI named itself,
    the CLI's: graded."""
    import textwrap

    from support.fakellm import Error, FakeLLM, Reply

    from harness.agents import get_agent

    def provider(request):
        if request.body.get("model") != "gpt-6.1-sol":
            return Error(404, f"The model {request.body.get('model')} does not exist", code="model_not_found")
        return Reply(text="done")

    path = tmp_path / "exits-1.yaml"
    path.write_text(textwrap.dedent(CLI_97).replace('"97"]', '"1", "gpt-no-such-model"]'))
    with FakeLLM(responder=provider) as fake:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-redteam2-key-123456789")
        monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_url)
        rows = run_rows(
            load_task(tiny_task["spec"]), get_agent("exits-97", config_path=str(path)), tmp_path, infra_retries=0
        )
        assert [r.body.get("model") for r in fake.requests] == ["gpt-6.1-sol"]  # the other never left
    _no_infra(rows)
    # the refused call reached no model: one model call
    assert [(r.outcome, r.model_calls) for r in rows] == [("resolved", 1)]


@pytest.mark.parametrize("framework", ["vitest", "jest"])
@pytest.mark.parametrize(
    "report",
    [
        b'{"testResults": [{"name": "a.test.js", "assertionResults": 5}]}',
        b'{"testResults": [{"name": "a.test.js", "assertionResults": [{"status": "passed", "ancestorTitles": 5}]}]}',
        b'{"testResults": [], "numPendingTests": 1, "numTodoTests": "x"}',
        b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=["results-a-number", "titles-a-number", "todo-a-string", "nested-too-deep"],
)
def test_a_js_report_of_the_wrong_shape_is_unreadable_never_an_exception(framework, report):
    """The JSON report's path is fixed (/tmp/wholeloop-grade/reports/), and the code under test runs
    as root in the grading container: it can write any bytes there, as it can pytest's report-log
    (test_code_under_test_that_writes_a_malformed_structured_report_is_suspected_tampering runs that
    path end to end; a JS task's image costs minutes, so this one reads with the real parser)."""
    from harness.parsers import get_parser

    read = get_parser(framework).parse("", report, exit_code=0)
    assert not read.consistent and "not a report" in read.why
