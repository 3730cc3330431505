"""A run folder fabricated with the real writers (RunFolder, TranscriptWriter): configurations,
repeats, every outcome, realistic transcripts; for reports that need no real run."""

from __future__ import annotations

import random
from pathlib import Path

from harness import transcript as events  # events.TestRun: a name pytest would try to collect
from harness.records import PhaseTimes, ResultRow, RunFolder, Usage, write_json
from harness.transcript import (
    AttemptStart,
    GradeEvent,
    ModelRequest,
    ModelResponse,
    PatchEvent,
    PhaseEvent,
    Stop,
    ToolCallEvent,
    ToolResultEvent,
    TranscriptWriter,
)

WORDS = (
    "def return value self parse config section option default raise ValueError if else for in not None "
    "import from class assert tokens strip split join lower path open read write items keys"
).split()


OUTCOMES = ["resolved"] * 5 + [
    "unresolved",
    "regression",
    "empty_patch",
    "patch_apply_failed",
    "test_timeout",
    "infra_error",
]


def _diff(path: str, n: int) -> str:
    body = "".join(
        f"-    old_line_{i} = compute({i})\n+    new_line_{i} = compute({i}, strict=True)\n" for i in range(n)
    )
    return (
        f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -10,{n + 2} +10,{n + 2} @@ def handler(request):\n     context = load()\n{body}     return context\n"
    )


def _transcript(
    tw: TranscriptWriter, task: str, config: str, repeat: int, outcome: str, diff: str, rnd: random.Random, steps: int
) -> tuple[int, int]:
    tw.write(AttemptStart(task_id=task, attempt=1, repeat=repeat, config=config, image="wholeloop-task:abc123"))
    tw.write(PhaseEvent(name="image", seconds=0.02, detail="cached"))
    tw.write(PhaseEvent(name="container_start", seconds=0.2))
    tw.write(
        ModelRequest(
            step=1,
            messages_hash="h0",
            new_messages=[
                {
                    "role": "system",
                    "content": "You are a careful software engineer working in a git repository at /repo.",
                },
                {
                    "role": "user",
                    "content": f'Please resolve this issue:\n<issue>\n{task}: <b>drops</b> values & "quotes"\n</issue>',
                },
            ],
        )
    )
    tokens_in = tokens_out = 0
    for step in range(1, steps + 1):
        usage = {"input_tokens": 1500 + 300 * step, "output_tokens": 80 + rnd.randint(0, 120)}
        tokens_in, tokens_out = tokens_in + usage["input_tokens"], tokens_out + usage["output_tokens"]
        last = step == steps
        name = "submit" if last else ("run_tests" if step % 4 == 0 else ("edit" if step % 3 == 0 else "bash"))
        args = (
            {"command": f"grep -rn 'def parse' src/ | head -{step}"}
            if name == "bash"
            else (
                {
                    "command": "str_replace",
                    "path": "src/parse.py",
                    "old_str": "    return value\n",
                    "new_str": "    return v.strip()\n",
                }
                if name == "edit"
                else {}
            )
        )
        tw.write(
            ModelResponse(
                step=step,
                text=f"Step {step}: looking at the parser <script>alert(1)</script>.",
                usage=usage,
                cost_usd=0.003 * step,
                latency_s=1.2,
            )
        )
        tw.write(ToolCallEvent(step=step, call_id=f"c{step}", name=name, arguments=args))
        output = (
            "submitted"
            if last
            else "\n".join(  # varied text: compresses like real tool output
                f"src/{rnd.choice(WORDS)}_{rnd.randint(0, 99)}.py:{rnd.randint(1, 900)}: "
                + " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(4, 12)))
                for _ in range(rnd.randint(10, 60))
            )
        )
        failed = name == "run_tests" and step < steps - 2
        tw.write(
            ToolResultEvent(
                step=step,
                call_id=f"c{step}",
                name=name,
                output=output,
                exit_code=(1 if failed else 0) if name in ("bash", "run_tests") else None,
                duration_s=0.4,
            )
        )
        if name == "run_tests":
            tw.write(
                events.TestRun(
                    step=step,
                    command="pytest -q",
                    exit_code=1 if failed else 0,
                    passed=40,
                    failed=2 if failed else 0,
                    failing=["tests/test_parse.py::test_quotes"] if failed else [],
                    green=not failed,
                )
            )
    tw.write(Stop(reason="submitted"))
    tw.write(PatchEvent(attempt=1, bytes=len(diff), files=["src/parse.py"], diff=diff))
    tw.write(PhaseEvent(name="grading", seconds=3.0))
    tw.write(
        GradeEvent(
            attempt=1,
            outcome=outcome,
            resolved=outcome == "resolved",
            failing=[] if outcome == "resolved" else ["tests/test_parse.py::test_quotes"],
        )
    )
    return tokens_in, tokens_out


def fabricate_run(run_dir: Path, *, tasks: int, configs: list[str], repeats: int, seed: int = 7) -> int:
    """A run folder written with the real writers; returns the number of attempt rows."""
    rnd = random.Random(seed)
    run_dir.mkdir(parents=True, exist_ok=True)
    results = RunFolder(run_dir)
    manifest = {
        "schema_version": 1,
        "run_id": run_dir.name,
        "command": ["wholeloop", "run", "tasks/x", "--repeats", str(repeats)],
        "wholeloop": {"version": "0.1.0", "git_commit": "0123456789abcdef"},
        "python": "3.11.7",
        "agent": {
            "agent": "default",
            "model": "fake/model",
            "provider": "fake",
            "config": {
                "name": "default",
                "settings": {"temperature": 0.0, "max_tokens": 4096},
                "limits": {"max_steps": 40},
                "prompt_sha256": "ab" * 32,
                "tool_schema_sha256": "cd" * 32,
            },
        },
        "options": {"workers": 4, "repeats": repeats},
        "tasks": {},
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T01:00:00+00:00",
        "dependencies": {"pydantic": "2.14"},
    }
    n = 0
    for t in range(tasks):
        task = f"pkg-{t:03d}"
        manifest["tasks"][task] = {"content_hash": f"{t:016x}"}
        for ci, config in enumerate(configs):
            for r in range(repeats):
                outcome = rnd.choice(OUTCOMES) if (t + ci) % 7 else "unresolved"  # every 7th task: nobody solves it
                if t % 7 == 0:
                    outcome = rnd.choice(["unresolved", "regression"])
                resolved = outcome == "resolved"
                adir = results.attempt_dir(task, config, r, 1)
                adir.mkdir(parents=True, exist_ok=True)
                diff = "" if outcome == "empty_patch" else _diff("src/parse.py", rnd.randint(2, 12))
                (adir / "patch.diff").write_text(diff)
                tests = {
                    f"tests/test_parse.py::test_new_{i}": "PASSED" if resolved or i else "FAILED" for i in range(3)
                }
                tests.update(
                    {
                        f"tests/test_old.py::test_kept_{i}": "FAILED"
                        if outcome == "regression" and i == 0
                        else "PASSED"
                        for i in range(30)
                    }
                )
                (adir / "test_output.txt").write_text(
                    "".join(f"{s} {k}\n" for k, s in tests.items()) + "=== summary ===\n"
                )
                write_json(
                    adir / "grade.json",
                    {
                        "outcome": outcome,
                        "apply_method": "git apply",
                        "reverted": [],
                        "exit_code": 0 if resolved else 1,
                        "consistent": True,
                        "note": "",
                    },
                )
                tpath = results.rep_dir(task, config, r) / "transcript.jsonl"
                steps = rnd.randint(6, 10)
                with TranscriptWriter(tpath, secrets=[], fsync=False) as tw:
                    tin, tout = _transcript(tw, task, config, r, outcome, diff, rnd, steps)
                f2p_passed = sum(tests[f"tests/test_parse.py::test_new_{i}"] == "PASSED" for i in range(3))
                results.append(
                    ResultRow(
                        run_id=run_dir.name,
                        task_id=task,
                        task_hash="h",
                        config=config,
                        agent="default",
                        model=config,
                        repeat=r,
                        outcome=outcome,
                        resolved=resolved,
                        stop_reason="submitted" if outcome != "infra_error" else "",
                        tests=tests,
                        fail_to_pass={"passed": f2p_passed, "failed": 3 - f2p_passed, "total": 3},
                        pass_to_pass={
                            "passed": 30 - (outcome == "regression"),
                            "failed": int(outcome == "regression"),
                            "total": 30,
                        },
                        steps=steps,
                        model_calls=steps,
                        usage=Usage(input_tokens=tin, output_tokens=tout),
                        cost_usd=round(0.01 * steps * (1 + ci), 4) if ci < 2 else None,
                        phases=PhaseTimes(
                            agent_s=20 + rnd.random() * 60 * (ci + 1),
                            model_s=15 + rnd.random() * 40,
                            tool_s=3,
                            grading_s=2 + rnd.random() * 4,
                            total_s=30 + rnd.random() * 90 * (ci + 1),
                        ),
                        patch_bytes=len(diff),
                        error="docker daemon went away" if outcome == "infra_error" else None,
                        dir=str(adir.relative_to(run_dir)),
                        patch_path=str((adir / "patch.diff").relative_to(run_dir)),
                        transcript_path=str(tpath.relative_to(run_dir)),
                    )
                )
                n += 1
    write_json(run_dir / "manifest.json", manifest)
    return n
