"""`wholeloop agents verify external:NAME[@VERSION]`: a release of an agent CLI, installed and run
against the scripted provider, before a team moves to it.

The version is installed as `run` installs it (its own folder, cached by a hash of the steps: the
config's pins with the CLI's own set to VERSION) and run as `run` runs it: in a `--network none`
container, on a small task written here (a repository whose `add()` subtracts, a hidden test, the
gold patch), every model call through the metering proxy to the scripted provider
(harness/agents/external/scripted_provider.py) started on this machine with a made-up key. The
provider answers in the CLI's own shell tool, read from the tools the CLI offers: a red test run,
the fix applied with `git apply`, a green test run, then the CLI's way of finishing (`verify.finish`
in the config, else a text reply). Then it checks, each a row of the verdict:

- installed: the install's `check` printed the version asked for;
- tool shapes: the CLI offers a tool the config's `tools.shell` names, every call it made was
  recovered from the traffic and classified as the plan's (test, edit, test, then the finish's
  shell), its test runs read red then green;
- tokens: what the proxy charged (every try's transcript) is what the provider reported, exactly;
- model ids: every model the CLI asked for (those the provider saw and those the proxy refused) is
  one the config knows (`model` or `--model`, `models:`), by the wire's model-id rule;
- run: the attempt ended submitted and its patch resolved the task (graded as any run's);
- self-report (configs with `self_report:`): what the CLI says it spent is what was charged.

A CLI whose edits are text in its replies (`tools.text_edits`, aider's SEARCH/REPLACE blocks) has no
shell tool to drive: the provider replies with the fix as edit blocks in that format instead, and
the tool-shapes check becomes the edit-format check: the blocks were recovered from its replies and
classified as edits, the CLI reported no failed edit, and the fix is in the attempt's patch.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import textwrap
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from pydantic import ValidationError

from .agents import Agent, AgentSpec
from .agents.external import ExternalAgent, wire_for
from .agents.external.config import ExternalConfig, ExternalConfigError, Provider, load_external_config, shipped_path
from .agents.external.install import InstallError
from .agents.external.scripted_provider import Call, Error, FakeLLM, Reply, Request, Tokens
from .agents.external.wire import get_wire
from .errors import UserError
from .records import ResultRow
from .run import Runner, RunOptions
from .tasks import Task, load_task
from .transcript import ExternalRun, ModelResponse, TestRun, ToolCallEvent, ToolResultEvent, read_transcript
from .usage import Usage
from .vocabulary import Outcome, StopReason

#: The verification's own limits: a CLI that misreads the plan stops soon, not after the config's.
MAX_STEPS = 20
MAX_WALL_S = 900.0
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+!_-]*$")


class VerifyError(UserError):
    """`agents verify` cannot verify what was asked (a version it cannot set, an agent that is not a CLI)."""

    hint = "See docs/agents.md (wholeloop agents verify)."


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class Verdict:
    agent: str  # what was verified, one line
    checks: list[Check]
    out: Path  # the verification's run folder

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)


# ---------------------------------------------------------------------------------------- the CLI


def split_version(agent: str) -> tuple[str, str | None]:
    """`external:NAME@VERSION` -> ("external:NAME", "VERSION"); without `@`, (agent, None)."""
    if not agent.startswith("external:") or "@" not in agent:
        return agent, None
    name, _, version = agent.rpartition("@")
    return name, version


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def versioned(config: ExternalConfig, version: str) -> ExternalConfig:
    """`config` with its CLI's own pin (the pip or npm package named `cli`) set to `version`.
    Raises VerifyError when no install step pins it, ExternalConfigError for a pin the config
    format refuses (npm wants x.y.z)."""
    if not _VERSION.match(version):
        raise VerifyError(f"{version!r} is not a version (write external:NAME@1.2.3)")
    steps, found = [], False
    for step in config.install:
        data = step.model_dump(exclude_none=True)
        if step.pip is not None:
            pins = []
            for req in step.pip:
                name = req.split("==", 1)[0]
                if _normal(name.split("[", 1)[0]) == _normal(config.cli):
                    req, found = f"{name}=={version}", True
                pins.append(req)
            data["pip"] = pins
        elif step.npm is not None:
            pins = []
            for pkg in step.npm:
                name = pkg.rsplit("@", 1)[0]
                if name == config.cli:
                    pkg, found = f"{name}@{version}", True
                pins.append(pkg)
            data["npm"] = pins
        steps.append(data)
    if not found:
        raise VerifyError(
            f"{config.name}: no pip or npm install step pins {config.cli!r}, so its version cannot be set",
            "copy the agent config, pin the version in its install steps and give it with --agent-config",
        )
    try:
        return ExternalConfig.model_validate({**config.model_dump(), "install": steps, "version": version})
    except ValidationError as exc:
        raise ExternalConfigError(
            f"{config.name}@{version}: " + "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        ) from None


def build_verified(
    agent: str | None, *, config_path: str | None, model: str | None
) -> tuple[ExternalAgent, ExternalConfig]:
    """The external agent to verify (AGENT: `external:NAME[@VERSION]`, or `--agent-config FILE`),
    paired with `model` (default: the config's `verify.model`, else its `model`), and the config it
    was built from."""
    version = None
    if agent:
        agent, version = split_version(agent)
        if not agent.startswith("external:"):
            raise VerifyError(
                f"{agent} is not an external agent: there is no CLI to install and run",
                "give external:NAME[@VERSION] or --agent-config FILE (kind: external); "
                "`wholeloop doctor --model M` checks a model for the tool agent",
            )
        path = str(shipped_path(agent.removeprefix("external:")))
    else:
        assert config_path is not None
        path = config_path
    config = load_external_config(path)
    if version is not None:
        config = versioned(config, version)
    chosen = model or config.verify.model or config.model
    return ExternalAgent(config.speaking(wire_for(config, chosen)), chosen, path), config


# ---------------------------------------------------------------------------------------- the task

_PROBLEM = "add() in calc/__init__.py subtracts: add(2, 3) gives -1. It should give 5."
_REPO_BEFORE = {
    "calc/__init__.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
    "tests/test_mul.py": "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
}
_FIX = {"calc/__init__.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"}
_HIDDEN = {"tests/test_add.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"}


def _git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "wholeloop",
        "GIT_AUTHOR_EMAIL": "verify@wholeloop.invalid",
        "GIT_COMMITTER_NAME": "wholeloop",
        "GIT_COMMITTER_EMAIL": "verify@wholeloop.invalid",
    }
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env=env, check=True)
    return done.stdout


def write_task(folder: Path) -> Task:
    """The verification's task, written into `folder`: a git repository with the bug, the gold
    patch, the hidden test patch and the spec."""
    repo, specs = folder / "repo", folder / "specs"
    for path, text in _REPO_BEFORE.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "calc: add and mul")
    base = _git(repo, "rev-parse", "HEAD").strip()
    specs.mkdir(parents=True)
    for name, files in (("gold.diff", _FIX), ("test.diff", _HIDDEN)):
        for path, text in files.items():
            (repo / path).write_text(text)
        _git(repo, "add", "-A")
        (specs / name).write_text(_git(repo, "diff", "--cached", base))
        _git(repo, "reset", "-q", "--hard", base)
    (specs / "verify-001.yaml").write_text(
        textwrap.dedent(f"""\
        id: verify-001
        repo: ../repo
        base_commit: {base}
        problem_statement: "{_PROBLEM}"
        environment:
          setup: ["pip install -q pytest==8.3.4"]
        test_command: python -m pytest -q
        hidden_tests:
          command: python -m pytest -rA -p no:cacheprovider tests
          patch_file: test.diff
        FAIL_TO_PASS: [tests/test_add.py::test_add]
        PASS_TO_PASS: [tests/test_mul.py::test_mul]
        gold_patch_file: gold.diff
        limits: {{command_timeout_s: 120}}
        """)
    )
    return load_task(specs / "verify-001.yaml")


# ---------------------------------------------------------------------------------------- the plan


def _offered(body: dict) -> dict[str, dict]:
    """The tools a request offers: name -> its input schema, whichever wire it came on."""
    found: dict[str, dict] = {}
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        inner = tool.get("function")
        function: dict = inner if isinstance(inner, dict) else tool
        name = function.get("name")
        schema = function.get("input_schema") or function.get("parameters") or {}
        if isinstance(name, str):
            found[name] = schema if isinstance(schema, dict) else {}
    return found


@dataclass
class ScriptedPlan:
    """The scripted provider's answers: the plan's commands in the CLI's own shell tool (the first of
    the config's `tools.shell` it offers, each required string argument filled), counted by the
    tool results the conversation already holds; then the finish."""

    task: Task
    shell: dict[str, str]  # the config's tools.shell: tool name -> the argument with the command
    finish: str | None
    refuse_status: int = 400  # the status the CLI treats as final (the config's refuse_status)
    offered: set[str] = field(default_factory=set)  # every tool name the CLI offered
    used: str = ""  # the shell tool the plan used
    lock: threading.Lock = field(default_factory=threading.Lock)

    def steps(self) -> list[str]:
        gold = base64.b64encode(self.task.gold().encode()).decode()
        test = self.task.test_command or "python -m pytest -q"
        return [
            f"{test} tests/test_wl_verify_missing.py",  # red: no such test file
            f"echo {gold} | base64 -d > /tmp/wl-fix.diff && git apply /tmp/wl-fix.diff",
            test,
            *([self.finish] if self.finish else []),
        ]

    def expected(self) -> list[str]:
        return ["test", "edit", "test", *(["shell"] if self.finish else [])]

    def __call__(self, request: Request) -> Reply | Error:
        body = request.body if isinstance(request.body, dict) else {}
        tools = _offered(body)
        if not tools:  # a side call (a title, a summary): answered, not part of the plan
            return Reply(text="ok", usage=Tokens(20, 2))
        with self.lock:
            self.offered |= set(tools)
        tool = next((t for t in self.shell if t in tools), None)
        if tool is None:
            # a status the CLI gives up on at once (it would retry a 400 until the time limit)
            return Error(
                self.refuse_status,
                f"agents verify: no tool named in the config's tools.shell is offered ({sorted(tools)})",
            )
        self.used = tool
        conversation = json.dumps(body.get("messages") or body.get("input") or [])
        done = len(re.findall(r'"(?:tool_call_id|tool_use_id|call_id)"', conversation))
        done -= len(re.findall(r'"type": "function_call"', conversation))  # Responses: a call item has call_id too
        usage = Tokens(
            input=900 + 50 * done, output=30 + done, cache_read=400 * done, cache_write=100 if done == 0 else 0
        )
        steps = self.steps()
        if done >= len(steps):
            return Reply(text="The fix is in and the tests pass.", usage=usage)
        schema = tools[tool]
        found = schema.get("properties")
        props: dict = found if isinstance(found, dict) else {}
        extra = {
            name: "a step of the plan"
            for name in schema.get("required") or []
            if name != self.shell[tool] and (props.get(name) or {}).get("type") == "string"
        }
        return Reply(
            text=f"Step {done + 1}.", calls=[Call(tool, {self.shell[tool]: steps[done], **extra})], usage=usage
        )


def _search_replace(files_before: dict[str, str], files_after: dict[str, str]) -> str:
    """The fix as SEARCH/REPLACE blocks (aider's `diff` edit format): per file, the lines that
    change, with one line of context before them."""
    blocks = []
    for path, after in files_after.items():
        old, new = files_before[path].splitlines(), after.splitlines()
        first = next(i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b)
        last = next(i for i, (a, b) in enumerate(zip(reversed(old), reversed(new), strict=False)) if a != b)
        start = max(first - 1, 0)
        search, replace = old[start : len(old) - last], new[start : len(new) - last]
        blocks.append(
            f"{path}\n```python\n<<<<<<< SEARCH\n"
            + "\n".join(search)
            + "\n=======\n"
            + "\n".join(replace)
            + "\n>>>>>>> REPLACE\n```\n"
        )
    return "\n".join(blocks)


@dataclass
class EditPlan:
    """The scripted provider's answers to a CLI whose edits are text (`tools.text_edits`): the fix as
    edit blocks in that format to every request until the CLI's conversation holds that reply (aider
    first asks to add the file a reply names, then sends the request again without the reply), then
    a text reply that ends it."""

    task: Task
    text_edits: str  # the config's tools.text_edits (search_replace)
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reply(self) -> str:
        return "The fix: add() adds.\n\n" + _search_replace(_REPO_BEFORE, _FIX)

    def __call__(self, request: Request) -> Reply | Error:
        body = request.body if isinstance(request.body, dict) else {}
        with self.lock:
            self.requests += 1
            n = self.requests
        # whole hundreds: aider prints its own count rounded to 0.1k above 1,000; no cache reads: its
        # report on the OpenAI wire counts none (measured: it said 0 of 3,000), which the self-report check compares
        usage = Tokens(input=1800 + 100 * n, output=100 + n)
        said = [m.get("content") for m in body.get("messages") or [] if isinstance(m, dict)]
        if any(isinstance(text, str) and self.reply() in text for text in said):
            return Reply(text="Done.", usage=usage)  # after the edit: a reply with no edit ends it
        return Reply(text=self.reply(), usage=usage)


# ---------------------------------------------------------------------------------------- the run


def verify_release(
    agent_name: str | None,
    *,
    config_path: str | None = None,
    model: str | None = None,
    allow_unknown_model: bool = False,
    out: Path | None = None,
    log: Callable[[str], None] = lambda _line: None,
) -> Verdict:
    """Install the CLI, run it against the scripted provider on the verification's task, and judge
    it (the module docstring). Raises VerifyError / ExternalConfigError / InstallError (the user's
    to fix: nothing was judged); a judged CLI that fails a check is a Verdict that is not ok."""
    agent, config = build_verified(agent_name, config_path=config_path, model=model)
    work = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="wl-verify-"))
    if work.exists() and any(work.iterdir()):
        raise VerifyError(f"{work} is not empty", "give --out a new folder")
    work.mkdir(parents=True, exist_ok=True)
    key_env = agent.config.provider.api_key_env
    saved = os.environ.get(key_env)
    os.environ[key_env] = "wl-verify-" + secrets.token_urlsafe(16)  # the scripted provider's made-up key
    try:
        task = write_task(work / "task")
        plan: ScriptedPlan | EditPlan
        if not agent.config.tools.shell and agent.config.tools.text_edits:
            plan = EditPlan(task, agent.config.tools.text_edits)
        else:
            plan = ScriptedPlan(task, agent.config.tools.shell, config.verify.finish, agent.config.refuse_status)
        with FakeLLM(responder=plan) as provider:
            limits = agent.config.limits.model_copy(
                update={"max_steps": min(agent.config.limits.max_steps, MAX_STEPS), "max_wall_s": MAX_WALL_S}
            )
            agent.config = agent.config.model_copy(
                update={"provider": Provider(base_url=provider.base_url, api_key_env=key_env), "limits": limits}
            )
            problems = agent.check(allow_unknown_price=allow_unknown_model)
            if problems:
                raise VerifyError(
                    "; ".join(problems), "the same checks `run` makes before any container starts (docs/agents.md)"
                )
            if not config.tools.shell and not config.tools.text_edits:  # after the pairing, as run says it
                raise VerifyError(
                    f"{config.name}: its config names no shell tool (tools.shell) and no edit format of its "
                    "replies (tools.text_edits), and agents verify drives a CLI through one of them",
                    "name the CLI's shell tool, or the format of the edits it writes in its replies (docs/agents.md)",
                )
            log(f"installing {config.cli} {config.version} ({'; '.join(s.describe() for s in config.install)})")
            try:
                agent.prepare(log=log)
            except InstallError as exc:
                raise VerifyError(
                    f"{config.cli} {config.version} cannot be installed as {config.name}'s config installs it: {exc}",
                    f"is {config.cli} {config.version} published? The installer's own output above says what it "
                    "found; a release that needs other install steps needs a copy of the config (--agent-config)",
                ) from None
            log(f"running it on a task of its own against the scripted provider ({agent.config.wire}, {agent.model})")
            runnable = cast(Agent, agent)
            # (the manifest's recipe names the agent without its version: the manifest's agent says it)
            name = split_version(agent_name)[0] if agent_name else config.name
            runnable.spec = AgentSpec(name=name, model=agent.model, config_path=config_path)
            rows = Runner([plan.task], runnable, RunOptions(out=work / "run", infra_retries=0)).run()
        checks = judge(agent, config, plan, provider, rows, work / "run")
    except BaseException:
        if out is None:  # nothing was judged: a temporary folder is not kept
            shutil.rmtree(work, ignore_errors=True)
        raise
    finally:
        if saved is None:
            os.environ.pop(key_env, None)
        else:
            os.environ[key_env] = saved
    what = (
        f"{config.name}: {config.cli} {config.version} ({'; '.join(s.describe() for s in config.install)}), "
        f"model {agent.model} over {agent.config.wire}"
    )
    verdict = Verdict(what, checks, work)
    if verdict.ok and out is None:
        shutil.rmtree(work, ignore_errors=True)
    return verdict


def judge(
    agent: ExternalAgent,
    config: ExternalConfig,
    plan: ScriptedPlan | EditPlan,
    provider: FakeLLM,
    rows: list[ResultRow],
    out: Path,
) -> list[Check]:
    """The verdict's checks (the module docstring), from the run folder and what the provider saw."""
    installed = agent.installed.version if agent.installed else ""
    checks = [
        Check(
            "installed",
            re.search(rf"(?<![\w.]){re.escape(config.version)}(?![\w.])", installed) is not None,
            f"its check printed {installed!r}" + ("" if config.version in installed else f", not {config.version}"),
        )
    ]
    row = next((r for r in rows if r.final), rows[-1] if rows else None)
    events = read_transcript(out / row.transcript_path) if row and row.transcript_path else []
    if isinstance(plan, EditPlan):
        patch = out / row.dir / "patch.diff" if row and row.dir else None
        checks.append(_edit_format(plan, events, patch.read_text() if patch and patch.is_file() else ""))
    else:
        checks.append(_tool_shapes(plan, events))
    checks.append(_tokens(agent, provider, out))
    checks.append(_model_ids(agent, config, provider, out))
    if row is None:
        checks.append(Check("run", False, "no result row was written"))
    else:
        ok = row.outcome == Outcome.resolved and row.stop_reason == StopReason.submitted
        detail = f"{row.stop_reason or 'no stop reason'}, {row.outcome}"
        checks.append(Check("run", ok, detail + ("" if ok or not row.error else f": {row.error[:300]}")))
    if config.self_report:
        checks.append(_self_report(row, events))
    return checks


def _tool_shapes(plan: ScriptedPlan, events: list) -> Check:
    if not plan.used:
        offered = ", ".join(sorted(plan.offered)) or "no tool at all"
        return Check(
            "tool shapes",
            False,
            f"the CLI offers no tool the config's tools.shell names ({', '.join(plan.shell)}); it offers: {offered}",
        )
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    kinds = [e.kind or "unclassified" for e in calls]
    greens = [e.green for e in events if isinstance(e, TestRun)]
    shape = f"{plan.used}({plan.shell[plan.used]}): {', '.join(kinds) or 'no call recovered'}"
    problems = []
    if kinds != plan.expected():
        problems.append(f"expected {', '.join(plan.expected())}")
    if greens != [False, True]:
        problems.append(f"test runs read {greens}, expected red then green")
    return Check("tool shapes", not problems, shape + ("; " + "; ".join(problems) if problems else "; red, then green"))


def _edit_format(plan: EditPlan, events: list, patch: str) -> Check:
    """The edit blocks the provider sent were recovered from the CLI's replies as edits, the CLI said
    no edit failed, and the fix is in the attempt's patch (the CLI applied them)."""
    calls = [e for e in events if isinstance(e, ToolCallEvent) and e.kind == "edit"]
    failed = [e for e in events if isinstance(e, ToolResultEvent) and e.kind == "edit" and e.is_error]
    fixed = _changed(patch) == _changed(plan.task.gold())  # the blocks' change, and nothing else
    shape = f"{plan.text_edits}: {len(calls)} edit(s) recovered from {plan.requests} repl(ies)"
    problems = []
    if not calls:
        problems.append(f"no edit recovered from its replies as tools.text_edits ({plan.text_edits}) reads them")
    if failed:
        problems.append("the CLI said an edit failed: " + " ".join(failed[0].output.split())[-300:])
    if not fixed:
        problems.append("the attempt's patch is not the edit blocks' change: the CLI did not apply them as written")
    return Check("edit format", not problems, shape + ("; " + "; ".join(problems) if problems else "; applied"))


def _changed(diff: str) -> list[str]:
    """The lines a diff removes and adds, in order (its file headers aside)."""
    return [line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++ ", "--- ")) and line]


def _transcripts(out: Path) -> list[Path]:
    return sorted(out.glob("attempts/*/*/rep-*/transcript*.jsonl"))


def _tokens(agent: ExternalAgent, provider: FakeLLM, out: Path) -> Check:
    anthropic = agent.config.wire == "anthropic"
    reported = provider.usage_totals()
    charged = Usage()
    for path in _transcripts(out):
        for event in read_transcript(path):
            if isinstance(event, ModelResponse):
                charged += Usage(**event.usage)
    want = {
        "input": reported.input + reported.cache_read + (reported.cache_write if anthropic else 0),
        "output": reported.output,
        "cache read": reported.cache_read,
        **({"cache write": reported.cache_write} if anthropic else {}),
    }
    got = {
        "input": charged.input_tokens,
        "output": charged.output_tokens,
        "cache read": charged.cache_read_tokens,
        **({"cache write": charged.cache_write_tokens} if anthropic else {}),
    }
    wrong = [f"{k} charged {got[k]:,}, the provider reported {want[k]:,}" for k in want if got[k] != want[k]]
    calls = len(provider.reported)
    if not calls:
        return Check("tokens", False, "the provider answered no model call, so nothing could be compared")
    said = ", ".join(f"{k} {v:,}" for k, v in got.items())
    return Check(
        "tokens", not wrong, "; ".join(wrong) if wrong else f"{said} over {calls} call(s): the provider's own count"
    )


def _model_ids(agent: ExternalAgent, config: ExternalConfig, provider: FakeLLM, out: Path) -> Check:
    wire = get_wire(agent.config.wire)
    known = {wire.model_id(m) for m in (agent.model, *config.models) if m}
    asked: dict[str, int] = {}
    for request in provider.requests:
        body = request.body if isinstance(request.body, dict) else {}
        name = str(body.get("model") or "(none)")
        asked[name] = asked.get(name, 0) + 1
    refused: dict[str, int] = {}
    for path in sorted(out.glob("attempts/*/*/rep-*/agent/attempt-*/proxy.jsonl")):
        for line in path.read_text().splitlines():
            entry = json.loads(line) if line.startswith("{") else {}
            if entry.get("event") == "refused" and entry.get("why") == "model":
                name = str(entry.get("model") or "(unnamed)")
                refused[name] = refused.get(name, 0) + 1
    unknown = sorted({m for m in (*asked, *refused) if wire.model_id(m) not in known})
    seen = ", ".join(f"{m} ({n} call(s))" for m, n in sorted(asked.items())) or "none"
    if unknown:
        return Check(
            "model ids",
            False,
            f"the CLI asked for {', '.join(unknown)}, which the config does not know (model: {agent.model}"
            + (f", models: {', '.join(config.models)}" if config.models else "")
            + "); add side models under `models:` with a price",
        )
    return Check("model ids", bool(asked), f"asked for {seen}, all known" if asked else "no model call was seen")


def _self_report(row: ResultRow | None, events: list) -> Check:
    said = next((e.self_report for e in events if isinstance(e, ExternalRun) and e.self_report), None)
    if row is None or said is None:
        return Check("self-report", False, "the CLI's own report of its spend could not be read from its logs")
    pairs = {
        "input": (said.get("input_tokens"), row.usage.input_tokens),
        "output": (said.get("output_tokens"), row.usage.output_tokens),
        "cache read": (said.get("cache_read_tokens"), row.usage.cache_read_tokens),
    }
    wrong = [f"{k}: it says {a}, charged {b}" for k, (a, b) in pairs.items() if a is not None and a != b]
    return Check("self-report", not wrong, "; ".join(wrong) if wrong else "what it says it spent is what was charged")
