"""The HTML report in a real browser: Debian's chromium, headless, driven over the DevTools
protocol (websocket-client), with the file opened from a file:// path and no network.

A run folder is fabricated with the real writers (RunFolder, TranscriptWriter): two
configurations, repeats, every outcome, realistic transcripts. The test checks the page loads
without JS errors, that one click on a matrix cell opens the attempt's transcript and a second one
its diff, and leaves a screenshot (tmp_path, and $WHOLELOOP_ARTIFACTS when set).

In CI (CI=true) a missing chromium is a failure; elsewhere the browser tests are skipped.
`python tests/test_html_report.py [N]` prints the size and first-render time of an N-attempt report.
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness import transcript as events  # events.TestRun: a name pytest would try to collect
from harness.records import PhaseTimes, ResultRow, RunFolder, Usage, write_json
from harness.report.figures import compute_figures
from harness.report.html import build_payload, collect, write_html
from harness.report.stats import BootstrapSettings
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

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
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

# ------------------------------------------------------------------------ a fabricated run folder


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


# ------------------------------------------------------------------------ headless chromium over CDP


class Browser:
    """One headless chromium with one page, spoken to over the DevTools protocol."""

    def __init__(self, profile: Path) -> None:
        import websocket  # websocket-client

        args = [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            "--window-size=1440,1000",
            "about:blank",
        ]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file, deadline = profile / "DevToolsActivePort", time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.05)
        port = port_file.read_text().split()[0]
        from urllib.request import urlopen

        targets = json.loads(urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30, suppress_origin=True)
        self._id, self.events = 0, []
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=1440, height=1000, deviceScaleFactor=1, mobile=False)

    def call(self, method: str, **params):
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method: str, timeout: float = 30):
        deadline = time.monotonic() + timeout
        for i, ev in enumerate(self.events):
            if ev.get("method") == method:
                return self.events.pop(i)
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            if msg.get("method") == method:
                return msg
            self.events.append(msg)
        raise TimeoutError(method)

    def js(self, expression: str):
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"{expression}: {res['exceptionDetails']}")
        return res["result"].get("value")

    def wait_js(self, expression: str, timeout: float = 15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.js(expression):
                return
            time.sleep(0.05)
        raise TimeoutError(expression)

    def open(self, path: Path) -> float:
        """Load a file:// URL; seconds until the load event."""
        t0 = time.monotonic()
        self.call("Page.navigate", url=path.resolve().as_uri())
        self.wait_event("Page.loadEventFired")
        return time.monotonic() - t0

    def errors(self) -> list[str]:
        out = []
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(json.dumps(p["exceptionDetails"])[:500])
            elif m == "Runtime.consoleAPICalled" and p.get("type") == "error":
                out.append(str(p.get("args"))[:500])
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append(p["entry"].get("text", "")[:500])
        return out

    def screenshot(self, path: Path, *, full: bool = False) -> Path:
        params = {"format": "png"}
        if full:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params.update(
                captureBeyondViewport=True,
                clip={"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
            )
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", **params)["data"]))
        return path

    def close(self) -> None:
        try:
            if getattr(self, "ws", None):
                self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture
def browser(tmp_path):
    if not CHROMIUM:
        if os.environ.get("CI"):
            pytest.fail("CI needs chromium for the HTML report test (bash scripts/setup.sh installs it)")
        pytest.skip("chromium not installed (apt-get install chromium, or bash scripts/setup.sh)")
    b = Browser(tmp_path / "profile")
    yield b
    b.close()


def _keep(png: Path) -> None:
    target = os.environ.get("WHOLELOOP_ARTIFACTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(png, Path(target) / png.name)


# ------------------------------------------------------------------------ tests


def _figures(runs: list[Path]):
    """The figures the CLI would pass, with fewer bootstrap resamples (the numbers are not under test)."""
    return compute_figures(runs, settings=BootstrapSettings(n_resamples=499))


def test_payloads_are_capped_and_lazy(tmp_path):
    run = tmp_path / "run"
    fabricate_run(run, tasks=3, configs=["cfg-a"], repeats=1)
    rows_file = run / "attempts" / "pkg-001" / "cfg-a" / "rep-0" / "transcript.jsonl"
    with TranscriptWriter(rows_file, secrets=[], fsync=False) as tw:  # one enormous output
        tw.write(ToolResultEvent(step=99, call_id="x", name="bash", output="y" * 19_000))
    reps = collect([run])
    payload = build_payload(next(r for r in reps if r.final.task_id == "pkg-001"))
    outputs = [e["output"] for e in payload["events"] if e["type"] == "tool_result"]
    assert max(len(o) for o in outputs) < 9000 and any("left out of the HTML report" in o for o in outputs)
    html = write_html([run], tmp_path / "r.html", figures=_figures([run])).read_text()
    assert html.count('type="application/x-wholeloop+gzip"') == len(reps)
    assert "<script>alert(1)</script>" not in html  # transcript text never lands in the markup as HTML
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "") and "https://" not in html


def test_report_opens_from_disk_and_two_clicks_reach_transcript_and_diff(tmp_path, browser):
    runs = [tmp_path / "run-a", tmp_path / "run-b"]
    fabricate_run(runs[0], tasks=12, configs=["claude-ish", "gpt-ish"], repeats=3, seed=1)
    fabricate_run(runs[1], tasks=12, configs=["cheap-model"], repeats=3, seed=2)
    report = write_html(runs, tmp_path / "report.html", figures=_figures(runs))

    browser.open(report)
    browser.wait_js("window.__wholeloop && window.__wholeloop.ready")
    assert browser.errors() == []
    assert browser.js("document.querySelectorAll('#mx .cell').length") == 12 * 3
    assert browser.js("document.querySelectorAll('svg.chart').length") == 6  # cost, phases, 4 distributions
    assert browser.js("document.getElementById('drawer').hidden") is True
    shot = browser.screenshot(tmp_path / "html-report-overview.png", full=True)

    # click 1: a matrix cell of a failed task opens its attempt with the transcript
    browser.js("document.querySelector('#mx tr[data-kind~=\"fail\"] .cell.st-none').click()")
    browser.wait_js("document.querySelector('#dr-body .ev-step') !== null")
    assert browser.js("document.getElementById('drawer').hidden") is False
    assert browser.js("document.querySelectorAll('#dr-body .say').length") >= 5
    assert "<script>" in browser.js("document.querySelector('#dr-body .say').textContent")  # shown as text
    assert browser.js("document.querySelector('#dr-body .stop').textContent").startswith("stopped: submitted")
    assert browser.js("document.querySelectorAll('#dr-reps .chip').length") == 3
    transcript_png = browser.screenshot(tmp_path / "html-report-transcript.png")

    # click 2: the Diff tab shows the patch with added and removed lines coloured
    browser.js("document.querySelector('#dr-tabs [data-tab=diff]').click()")
    browser.wait_js(
        "document.querySelector('#dr-body .diff tr.add') !== null || "
        "document.querySelector('#dr-body').textContent.includes('patch is empty')"
    )
    browser.js("document.querySelector('#dr-reps .chip:nth-child(2)').click()")  # another repeat keeps the tab
    browser.wait_js(
        "document.querySelector('#dr-reps .chip.on') === document.querySelector('#dr-reps .chip:nth-child(2)')"
    )
    browser.wait_js(
        "document.querySelector('#dr-body .diff tr.add') !== null || "
        "document.querySelector('#dr-body').textContent.includes('patch is empty')"
    )
    diff_png = browser.screenshot(tmp_path / "html-report-diff.png")

    browser.js("document.querySelector('#dr-tabs [data-tab=tests]').click()")
    browser.wait_js("document.querySelector('#dr-body table.tests') !== null")
    assert browser.js("document.querySelector('#dr-body .tally').textContent").count("FAIL_TO_PASS") == 1
    tests_png = browser.screenshot(tmp_path / "html-report-tests.png")

    # hardest failures link to their attempts; Esc closes
    browser.js("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'}))")
    assert browser.js("document.getElementById('drawer').hidden") is True
    assert browser.js("document.querySelectorAll('#failures .linkbtn').length") >= 1
    browser.js("document.querySelector('#failures .linkbtn').click()")
    browser.wait_js("document.querySelector('#dr-body .ev-step') !== null")
    assert browser.errors() == []
    for png in (shot, transcript_png, diff_png, tests_png):
        assert png.stat().st_size > 10_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        _keep(png)


@pytest.mark.parametrize(
    "shape", ["one-task", "one-task-unknown-price", "one-task-infra-error", "one-task-two-configs"]
)
def test_a_report_of_one_task_renders_and_opens(tmp_path, browser, shape):
    """One task gives bootstrap intervals without bounds (one task to resample): the report says
    so instead of failing (it raised TypeError), and the page opens without a JS error."""
    run = tmp_path / "run"
    configs = ["cheap", "dear"] if shape == "one-task-two-configs" else ["only"]
    fabricate_run(run, tasks=1, configs=configs, repeats=1, seed=3)
    if shape != "one-task":  # rewrite the rows: price unknown, or the only trial an infra error
        folder = RunFolder(run)
        rows = folder.rows()
        folder.results_path.unlink()
        for row in rows:
            if shape == "one-task-unknown-price":
                row.cost_usd = None
            elif shape == "one-task-infra-error":
                row.outcome, row.resolved, row.error = "infra_error", False, "docker daemon went away"
            folder.append(row)
    report = write_html([run], tmp_path / "one.html", figures=_figures([run]))
    browser.open(report)
    browser.wait_js("window.__wholeloop && window.__wholeloop.ready")
    assert browser.errors() == []
    assert browser.js("document.querySelectorAll('#mx .cell').length") == len(configs)
    browser.js("document.querySelector('#mx .cell').click()")
    browser.wait_js("document.querySelector('#dr-body .ev-step') !== null")
    assert browser.errors() == []


def measure(n_attempts: int = 500) -> dict:
    """Size and time to first render of a report over n_attempts fabricated attempts."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        repeats, configs = 5, ["model-a", "model-b"]
        fabricate_run(tmp / "run", tasks=n_attempts // (repeats * len(configs)), configs=configs, repeats=repeats)
        t0 = time.monotonic()
        report = write_html([tmp / "run"], tmp / "report.html")
        build_s = time.monotonic() - t0
        b = Browser(tmp / "profile")
        try:
            load_s = b.open(report)
            b.wait_js("window.__wholeloop && window.__wholeloop.ready")
            nav = b.js("JSON.stringify(performance.getEntriesByType('navigation')[0].toJSON())")
            paint = b.js(
                "JSON.stringify(performance.getEntriesByType('paint').map(p => [p.name, Math.round(p.startTime)]))"
            )
            ready_ms = b.js("window.__wholeloop.renderedMs")
            t1 = time.monotonic()
            b.js("document.querySelector('#mx .cell').click()")
            b.wait_js("document.querySelector('#dr-body .ev-step') !== null")
            open_s = time.monotonic() - t1
            errors = b.errors()
        finally:
            b.close()
        nav = json.loads(nav)
        return {
            "attempts": n_attempts,
            "bytes": report.stat().st_size,
            "build_s": round(build_s, 2),
            "load_event_s": round(load_s, 3),
            "dom_content_loaded_ms": round(nav["domContentLoadedEventEnd"]),
            "paint_ms": json.loads(paint),
            "script_done_ms": round(ready_ms),
            "open_cell_s": round(open_s, 3),
            "errors": errors,
        }


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 500), indent=2))


def _add_failure_messages_and_problem(run: Path) -> None:
    """What grading and the runner now record: failure messages per failing test in grade.json,
    the problem statement in the transcript's attempt_start event."""
    for row in RunFolder(run).latest():
        grade_file = run / row.dir / "grade.json"
        grade = json.loads(grade_file.read_text())
        grade["messages"] = {
            t: f"AssertionError: {t.split('::')[-1]} expected 'a' got 'b'"
            for t, s in row.tests.items()
            if s == "FAILED"
        }
        write_json(grade_file, grade)
        path = run / row.transcript_path
        events = [json.loads(line) for line in path.read_text().splitlines()]
        events[0]["problem_statement"] = f"{row.task_id}: values with quotes are dropped\n\nMore detail here."
        path.write_text("".join(json.dumps(e) + "\n" for e in events))


def test_tests_tab_leads_with_the_problem_and_each_failing_test_with_its_message(tmp_path, browser):
    run = tmp_path / "run"
    fabricate_run(run, tasks=8, configs=["cfg-a"], repeats=1, seed=3)
    _add_failure_messages_and_problem(run)
    report = write_html([run], tmp_path / "report.html", figures=_figures([run]))
    browser.open(report)
    browser.wait_js("window.__wholeloop && window.__wholeloop.ready")
    rows = RunFolder(run).latest()
    failed = next(r for r in rows if r.outcome in ("unresolved", "regression"))
    resolved = next(r for r in rows if r.resolved)
    for row in (failed, resolved):
        browser.js(f"document.querySelector('#mx tr[data-task=\"{row.task_id}\"] .cell').click()")
        browser.wait_js(
            f"document.getElementById('dr-task').textContent === '{row.task_id}' && "
            "document.querySelector('#dr-tabs [data-tab=tests]') !== null"
        )
        browser.js("document.querySelector('#dr-tabs [data-tab=tests]').click()")
        browser.wait_js("document.querySelector('#dr-body .why') !== null")
        why = browser.js("document.querySelector('#dr-body .why').innerText")
        assert why.index(f"{row.task_id}: values with quotes are dropped") < why.index(row.outcome), why
        if row is failed:
            failing = [t for t, s in row.tests.items() if s == "FAILED"]
            for t in failing:
                assert t in why and f"AssertionError: {t.split('::')[-1]} expected 'a' got 'b'" in why, why
            assert why.index(failing[0]) < why.index("AssertionError")
            assert "PASSED" not in why
        else:
            f2p = [t for t in row.tests if "test_new_" in t]
            assert "FAIL_TO_PASS now passing" in why and all(t in why for t in f2p), why
        png = browser.screenshot(tmp_path / f"html-tests-{row.outcome}.png")
        _keep(png)
        browser.js("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'}))")
    assert browser.errors() == []
