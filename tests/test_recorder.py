"""What the recorder makes of model traffic, request by request (no sockets, no CLI)."""

from __future__ import annotations

import orjson

from harness.agents.external.config import ToolRules
from harness.agents.external.recorder import Recorder
from harness.agents.external.relay import Exchange
from harness.agents.external.wire import Call, Reply, get_wire
from harness.models.types import Usage
from harness.report.recovery import AttemptRecovery, analyse_attempt
from harness.transcript import TranscriptWriter, read_transcript


def record(tmp_path, wire: str, rules: ToolRules, exchanges: list[tuple[dict, Reply]]):
    writer = TranscriptWriter(tmp_path / "t.jsonl", secrets=[], fsync=False)
    recorder = Recorder(writer, get_wire(wire), rules, test_command="python -m pytest -q tests")
    for step, (body, reply) in enumerate(exchanges, 1):
        recorder(Exchange(step=step, raw=orjson.dumps(body), model=body.get("model", ""), reply=reply))
    writer.close()
    return read_transcript(tmp_path / "t.jsonl")


def test_claude_moving_cache_marks_is_still_append_only(tmp_path):
    first = [{"role": "user", "content": [{"type": "text", "text": "fix it", "cache_control": {"type": "ephemeral"}}]}]
    second = [
        {"role": "user", "content": [{"type": "text", "text": "fix it"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "sed -i s/a/b/ x.py"}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": "Exit code 2\nno",
                    "is_error": True,
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        },
    ]
    rules = ToolRules(shell={"Bash": "command"}, exit_code=r"(?m)^Exit code (\d+)")
    events = record(
        tmp_path,
        "anthropic",
        rules,
        [
            (
                {"model": "claude-sonnet-5-5", "max_tokens": 100, "system": "be brief", "messages": first},
                Reply(calls=[Call("t1", "Bash", {"command": "sed -i s/a/b/ x.py"})], usage=Usage(input_tokens=10)),
            ),
            (
                {"model": "claude-sonnet-5-5", "max_tokens": 100, "system": "be brief", "messages": second},
                Reply(text="done", usage=Usage(input_tokens=20)),
            ),
        ],
    )
    requests = [e for e in events if e.type == "model_request"]
    assert requests[0].new_messages[0] == {"role": "system", "content": "be brief"}
    assert requests[1].from_index == 1 and len(requests[1].new_messages) == 2  # the system prompt is not repeated
    assert "cache_control" not in orjson.dumps(requests[1].new_messages).decode()
    call = next(e for e in events if e.type == "tool_call")
    result = next(e for e in events if e.type == "tool_result")
    assert call.kind == "shell" and result.exit_code == 2 and result.name == "Bash"
    summary = analyse_attempt(events, AttemptRecovery(task_id="t", config="c", repeat=0, attempt=1))
    assert summary.tool_errors == 1 and summary.edits == 0  # a failed edit changed nothing


def test_a_rewritten_conversation_records_from_the_first_difference(tmp_path):
    base = [{"role": "system", "content": "files: a.py v1"}, {"role": "user", "content": "fix"}]
    rewritten = [
        {"role": "system", "content": "files: a.py v2"},
        {"role": "user", "content": "fix"},
        {"role": "assistant", "content": "edited"},
        {"role": "user", "content": "tests pass?"},
    ]
    events = record(
        tmp_path,
        "openai-chat",
        ToolRules(),
        [
            ({"model": "gpt-6.1-sol", "messages": base}, Reply(text="edited")),
            ({"model": "gpt-6.1-sol", "messages": rewritten}, Reply(text="yes")),
        ],
    )
    requests = [e for e in events if e.type == "model_request"]
    assert [r.from_index for r in requests] == [0, 0]  # aider rebuilds its first message: all of it is new
    assert len(requests[1].new_messages) == 4
    assert requests[0].messages_hash != requests[1].messages_hash


def test_mini_results_and_test_runs(tmp_path):
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "bash", "arguments": '{"command": "python -m pytest -q tests"}'},
    }
    output = orjson.dumps({"returncode": 1, "output": "F.\n=== 1 failed, 1 passed in 0.1s ===\n"}).decode()
    rules = ToolRules(shell={"bash": "command"}, result_json={"output": "output", "exit_code": "returncode"})
    events = record(
        tmp_path,
        "openai-chat",
        rules,
        [
            (
                {"model": "gpt-6.1-sol", "messages": [{"role": "user", "content": "go"}]},
                Reply(calls=[Call("c1", "bash", {"command": "python -m pytest -q tests"})]),
            ),
            (
                {
                    "model": "gpt-6.1-sol",
                    "messages": [
                        {"role": "user", "content": "go"},
                        {"role": "assistant", "content": None, "tool_calls": [call]},
                        {"role": "tool", "tool_call_id": "c1", "content": output},
                    ],
                },
                Reply(text="red"),
            ),
        ],
    )
    result = next(e for e in events if e.type == "tool_result")
    run = next(e for e in events if e.type == "test_run")
    assert result.output.startswith("F.") and result.exit_code == 1 and result.kind == "test"
    assert not run.green and run.failed == 1 and run.passed == 1


def test_aider_edit_blocks_are_edits_and_its_next_message_says_if_they_applied(tmp_path):
    reply = (
        "Change it:\n\ncalc.py\n```python\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n"
        ">>>>>>> REPLACE\n```\n"
    )
    events = record(
        tmp_path,
        "openai-chat",
        ToolRules(text_edits="search_replace"),
        [
            ({"model": "gpt-6.1-sol", "messages": [{"role": "user", "content": "fix add"}]}, Reply(text=reply)),
            (
                {
                    "model": "gpt-6.1-sol",
                    "messages": [
                        {"role": "user", "content": "fix add"},
                        {"role": "assistant", "content": reply},
                        {"role": "user", "content": "SearchReplaceNoExactMatch: calc.py"},
                    ],
                },
                Reply(text="retry"),
            ),
        ],
    )
    call = next(e for e in events if e.type == "tool_call")
    result = next(e for e in events if e.type == "tool_result")
    assert call.name == "search_replace" and call.kind == "edit" and call.arguments["path"] == "calc.py"
    assert call.arguments["replace"] == "    return a + b"
    assert result.is_error and result.call_id == call.call_id


def test_responses_function_and_custom_tool_calls(tmp_path):
    reply = get_wire("openai-responses").reply(
        {
            "output": [
                {"type": "function_call", "call_id": "f1", "name": "exec_command", "arguments": '{"cmd": "ls"}'},
                {
                    "type": "custom_tool_call",
                    "call_id": "x1",
                    "name": "exec",
                    "input": "await tools.exec_command({cmd: 'ls'})",
                },
            ],
            "usage": {"input_tokens": 30, "input_tokens_details": {"cached_tokens": 10}, "output_tokens": 4},
        }
    )
    assert [c.name for c in reply.calls] == ["exec_command", "exec"]
    assert reply.usage == Usage(input_tokens=30, output_tokens=4, cache_read_tokens=10)
    events = record(
        tmp_path,
        "openai-responses",
        ToolRules(shell={"exec_command": "cmd"}),
        [
            ({"model": "gpt-6.1-sol", "input": "list files"}, reply),
            (
                {
                    "model": "gpt-6.1-sol",
                    "input": [
                        {"role": "user", "content": "list files"},
                        {
                            "type": "function_call_output",
                            "call_id": "f1",
                            "output": "Process exited with code 0\nOutput:\na.py",
                        },
                    ],
                },
                Reply(text="ok"),
            ),
        ],
    )
    calls = [e for e in events if e.type == "tool_call"]
    assert [(c.name, c.kind, c.command) for c in calls] == [("exec_command", "shell", "ls"), ("exec", "", "")]
    assert next(e for e in events if e.type == "tool_result").output.endswith("a.py")


def test_a_calls_events_are_flushed_as_written_and_fsynced_at_most_every_sync_interval(tmp_path, monkeypatch):
    """The recorder's CPU per call (docs/performance.md): events are in the file (the kernel's) as
    each is written, so a killed run keeps its spend; fsyncs are batched, never skipped at close."""
    from harness import transcript as module
    from harness.agents.external.recorder import SYNC_EVERY_S
    from harness.transcript import ModelResponse

    synced: list[int] = []
    monkeypatch.setattr(module, "_sync", synced.append)
    writer = TranscriptWriter(tmp_path / "t.jsonl", secrets=[])
    writer.write(ModelResponse(step=0))  # outside a batch: at once, as before
    assert len(synced) == 1
    with writer.batch():
        writer.write(ModelResponse(step=1))
        writer.write(ModelResponse(step=2))
        assert [e.step for e in read_transcript(tmp_path / "t.jsonl")] == [0, 1, 2]  # flushed, not synced yet
        assert len(synced) == 1
    assert len(synced) == 2  # one for the batch
    with writer.batch(SYNC_EVERY_S), writer.batch(SYNC_EVERY_S):  # the last fsync is younger than that
        writer.write(ModelResponse(step=3))
    assert len(synced) == 2 and [e.step for e in read_transcript(tmp_path / "t.jsonl")][-1] == 3
    monkeypatch.setattr(module.time, "monotonic", lambda: writer._synced + SYNC_EVERY_S)
    with writer.batch(SYNC_EVERY_S):
        writer.write(ModelResponse(step=4))
    assert len(synced) == 3
    with writer.batch(SYNC_EVERY_S):
        writer.write(ModelResponse(step=5))
    writer.close()  # what is not synced yet is synced at close
    assert len(synced) == 4


def test_the_transcripts_fast_path_scrubs_and_caps_as_the_full_walk_does(tmp_path):
    """A line written without walking the event (no secret form in it, short) must be the line the
    walk writes; one with a secret in any form, or a long string, takes the walk."""
    from harness.scrub import REDACTED
    from harness.transcript import MAX_TEXT, ModelResponse, scrub

    secret = 'sk-quote"and\\slash-0123456789abcdef'
    writer = TranscriptWriter(tmp_path / "t.jsonl", secrets=[secret], fsync=False)
    texts = [
        "plain text",
        f"the key {secret} as is",
        "escaped once " + orjson.dumps(secret).decode()[1:-1],  # the key's JSON escape, as a string's content
        "hex " + secret.encode().hex(),
        "x" * (MAX_TEXT + 10),
    ]
    for i, text in enumerate(texts):
        writer.write(ModelResponse(step=i, text=text))
    writer.close()
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    got = [orjson.loads(line)["text"] for line in lines]
    for text, written in zip(texts, got):
        assert written == scrub(text, [secret])
    assert got[0] == "plain text" and all(REDACTED in g for g in got[1:4]) and "characters not kept" in got[4]
    assert all(secret not in line and secret.encode().hex() not in line for line in lines)


def _code_mode_session(tmp_path, rules: ToolRules):
    """Codex in code mode: every call is `exec` with a JavaScript script calling the real tools."""
    scripts = [
        'const r = await tools.exec_command({cmd: "python -m pytest -q tests", yield_time_ms: 1000});\ntext(r);',
        "await tools.exec_command('pip install requests');",
        "await tools.apply_patch(`*** Begin Patch\n*** Update File: a.py\n@@\n-a\n+b\n*** End Patch`);",
        'await tools.exec_command({"cmd": "cat a.py | head -5"});\nawait tools.exec_command(`ls ${dir}`);',
    ]
    outputs = [
        "Process exited with code 1\nOutput:\nF.\n=== 1 failed, 1 passed in 0.1s ===",
        "Process exited with code 1\nOutput:\nERROR: Could not find a version that satisfies requests",
        "Success. Updated the following files:\nM a.py",
        "Process exited with code 0\nOutput:\nb",
    ]
    exchanges, items = [], [{"role": "user", "content": "fix a.py"}]
    for n, source in enumerate(scripts):
        call_id = f"x{n}"
        exchanges.append(
            ({"model": "gpt-6.1-sol", "input": list(items)}, Reply(calls=[Call(call_id, "exec", {"input": source})]))
        )
        items += [
            {"type": "custom_tool_call", "call_id": call_id, "name": "exec", "input": source},
            {"type": "custom_tool_call_output", "call_id": call_id, "output": outputs[n]},
        ]
    exchanges.append(({"model": "gpt-6.1-sol", "input": list(items)}, Reply(text="Done.")))
    return record(tmp_path, "openai-responses", rules, exchanges)


def test_codex_code_mode_scripts_are_read_for_the_commands_they_run(tmp_path):
    from harness.agents.external.config import load_external_config, shipped_path
    from harness.records import ResultRow
    from harness.report.causes import causes_of
    from harness.vocabulary import Cause, Outcome, StopReason

    rules = load_external_config(shipped_path("codex")).tools
    events = _code_mode_session(tmp_path, rules)
    calls = [e for e in events if e.type == "tool_call"]
    assert [(c.name, c.kind, c.command) for c in calls] == [
        ("exec", "test", "python -m pytest -q tests"),
        ("exec", "shell", "pip install requests"),
        ("exec", "edit", ""),
        ("exec", "shell", "cat a.py | head -5 ; ls ${dir}"),
    ]
    [run] = [e for e in events if e.type == "test_run"]
    assert not run.green and run.failed == 1 and run.exit_code == 1
    recovery = analyse_attempt(events, AttemptRecovery(task_id="t", config="c", repeat=0, attempt=1))
    assert (recovery.test_runs, recovery.red_runs, recovery.edits, recovery.edits_after_red) == (1, 1, 1, 1)
    assert recovery.tool_errors == 1  # pip install exited 1 (a test run going red is not a tool error)
    row = ResultRow(
        run_id="r",
        task_id="t",
        task_hash="h",
        config="c",
        agent="external:codex",
        resolved=False,
        outcome=Outcome.unresolved,
        stop_reason=StopReason.submitted,
    )
    found = {f.cause for f in causes_of(events, row)}
    # the tests did run (inside a script), red, before it submitted; it tried to install
    assert Cause.never_ran_tests not in found
    assert {Cause.submitted_failing, Cause.environment_confusion} <= found


def test_a_code_mode_scripts_calls_are_read_from_literals_only():
    from harness.agents.external.script import nested_calls

    source = (
        '// @exec: {"yield_time_ms": 10000}\n'
        'const a = await tools.exec_command({yield_time_ms: 500, "cmd": "echo \\"a b\\"\\n"});\n'
        "await tools.exec_command('it\\'s');\n"
        "await tools.exec_command({cmd: base + ' -q'});\n"  # built at run time: not seen
        "await tools.exec_command(command);\n"
        "await tools . apply_patch(`*** Begin Patch\n*** End Patch`);\n"
        "await tools.exec_command({justification: {x: 1}, cmd: 'ls'});\n"  # after a nested object: not seen
    )
    got = [(c.tool, c.argument) for c in nested_calls(source, {"exec_command": "cmd"})]
    assert got == [
        ("exec_command", 'echo "a b"\n'),
        ("exec_command", "it's"),
        ("exec_command", None),
        ("exec_command", None),
        ("apply_patch", "*** Begin Patch\n*** End Patch"),
        ("exec_command", None),
    ]
