"""The setup agent: a model proposes `wholeloop.yaml` when inference cannot build an environment
(`wholeloop env propose REPO`, `mine --setup-model MODEL`; docs/tasks.md, "The setup agent").

Never the default. Under the egress rule (harness.egress, docs/privacy.md): refused before any
request when the machine or the suite forbids egress; each request is announced (what is sent, to
which endpoint) before it is sent; what was sent is recorded in the transcript.

Each round:

1. the model is sent the repository's file list and a few build and readme files at the commit,
   the keys wholeloop.yaml takes, and every earlier proposal with what went wrong with it;
2. it answers with one YAML document (in a ```yaml fence);
3. the proposal is validated as wholeloop.yaml, its environment built as mining builds one (its
   `setup` and `install` commands run with the network, since they install), and the whole test
   suite run once at the commit in a container of its own, with the network (role `setup`: not an
   evaluated agent's, not a task's; `wholeloop prune` removes it if it is left behind);
4. the run is judged with the check's health verdict (harness.authoring.check.environment_health):
   tests were reported, some passed, and no test file failed to collect nor did too many tests
   error or skip for a missing module. Healthy: done. Else the next round gets the failure.

The result is a file the user reads and commits: a comment header says a model wrote it (which
model, when, at which commit, what the tests did), and the transcript (every prompt, reply,
proposal and its outcome, and the egress record) is written beside it as `<file>.transcript.jsonl`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import yaml

from ..egress import Egress, endpoint_of
from ..egress import check as egress_check
from ..errors import UserError
from ..parsers import get_parser
from ..tasks.spec import Environment, HiddenTests, Task
from .check import Health, environment_health
from .environment import (
    CONFIG_NAME,
    MineError,
    RepoConfig,
    ResolutionFailed,
    infer_environment,
    load_config,
    resolve,
    setup_commands,
)
from .gitrepo import GitRepo

FEATURE = "the setup agent"
DEFAULT_ROUNDS = 4
OUTPUT_CHARS = 6000  # of a failed build's or test run's output, fed back to the model
FILE_CHARS = 4000  # of each file shown to the model
MAX_LISTED = 400  # paths of the file list shown
SHOWN_FILES = re.compile(
    r"^(readme[^/]*|contributing[^/]*|makefile|tox\.ini|noxfile\.py|setup\.(py|cfg)|pyproject\.toml|"
    r"requirements[^/]*\.(txt|in)|pytest\.ini|conftest\.py|package\.json|go\.mod|cargo\.toml|"
    r"\.github/workflows/[^/]+\.ya?ml)$",
    re.I,
)
PROMPT = """\
You set up a repository so that its test suite runs in a Docker container, by writing the
repository's `wholeloop.yaml`. The container starts from the image `{image}` (Debian bookworm with
python3 and pip; no other toolchain unless you install it in `setup`). Commands in `setup` run as
root with the network, before the repository is copied in; commands in `install` run in the
repository (at /repo) with the network. `env` sets environment variables in the image. The test
command runs the whole suite; give it as `test_command` with `{{files}}` where the test files go
(empty: the whole suite). The test-result parser is `{parser}`.

The keys wholeloop.yaml takes:
{keys}

Answer with exactly one YAML document in a ```yaml fence and nothing else of substance.

The repository at commit {commit} has these files:
{files}

{shown}{history}"""


class SetupFailed(UserError):
    """The setup agent found no healthy environment within its rounds."""

    hint = "Read the transcript beside the output, write wholeloop.yaml by hand from the closest proposal, or give more --rounds"


class OutputExists(UserError):
    """The file the setup agent would write is already there."""

    hint = "Pass --out with another file name, or remove the existing one"


@dataclass
class Attempt:
    """One proposal and what became of it."""

    proposal: str  # the YAML the model wrote
    healthy: bool = False
    problem: str = ""  # why not: invalid, the build failed, unhealthy (with the output's end)
    health: Health | None = None


@dataclass
class Proposed:
    """What `propose` made: the file, its transcript, and the rounds."""

    path: Path
    transcript: Path
    attempts: list[Attempt] = field(default_factory=list)
    egress: dict = field(default_factory=dict)

    @property
    def health(self) -> Health | None:
        return self.attempts[-1].health if self.attempts else None


Try = Callable[[RepoConfig], Attempt]


def propose(
    repo: GitRepo,
    commit: str,
    model: str,
    out: Path,
    *,
    base_url: str | None = None,
    parser: str = "pytest",
    rounds: int = DEFAULT_ROUNDS,
    notice: Callable[[str], None] | None = None,
    progress: Callable[[str], None] | None = None,
    suite: RepoConfig | None = None,
    try_config: Try | None = None,
) -> Proposed:
    """Ask `model` for a wholeloop.yaml until one makes the tests at `commit` run healthy; write it
    to `out` (and the transcript beside it). Raises EgressForbidden before any request,
    OutputExists before anything, SetupFailed after `rounds` unhealthy proposals (the transcript is
    written all the same)."""
    from ..models import Settings, UserMessage, get_model

    suite = suite if suite is not None else load_config(None, repo, commit)
    egress_check(FEATURE, model, suite_setting=suite.egress, suite_source=suite.found_at or CONFIG_NAME)
    if out.exists():
        raise OutputExists(f"{out}: exists; the setup agent writes a new file and overwrites none")
    tell = progress or (lambda _: None)
    sha = repo.resolve(commit)
    listing, shown = _context(repo, sha)
    sending = Egress(FEATURE, model, endpoint_of(model, base_url))
    client = get_model(model, base_url=base_url)
    attempts: list[Attempt] = []
    log: list[dict] = []
    trial = try_config or (lambda cfg: try_config_at(repo, sha, cfg, parser, tell))
    for n in range(1, rounds + 1):
        prompt = PROMPT.format(
            image=_default_image(),
            parser=parser,
            keys=_keys(),
            commit=sha[:10],
            files=listing,
            shown=shown,
            history=_history(attempts),
        )
        what = f"round {n}: the file list and {shown.count('--- ')} file(s) of {repo.name} at {sha[:10]}"
        if attempts:
            what += f", and {len(attempts)} earlier proposal(s) with their test or build output"
        before = len(sending.sent)
        sending.add(what, prompt)
        if notice:
            notice(f"{FEATURE}: sending to {model} at {sending.endpoint}: {sending.sent[before]}")
        turn = client.complete([UserMessage(role="user", content=prompt)], [], Settings(max_tokens=2000))
        reply = turn.text or ""
        proposal = _yaml_block(reply)
        attempt = _judge(proposal, trial, tell, n)
        attempts.append(attempt)
        log.append(
            {
                "round": n,
                "prompt": prompt,
                "reply": reply,
                "proposal": proposal,
                "healthy": attempt.healthy,
                "problem": attempt.problem,
                "health": attempt.health.model_dump() if attempt.health else None,
            }
        )
        if attempt.healthy:
            break
    transcript = out.with_name(out.name + ".transcript.jsonl")
    head = {
        "feature": FEATURE,
        "model": model,
        "repository": str(repo.source),
        "commit": sha,
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "egress": sending.record(),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    _write(transcript, "".join(json.dumps(r) + "\n" for r in [head, *log]))
    result = Proposed(out, transcript, attempts, sending.record())
    last = attempts[-1] if attempts else None
    if last is None or not last.healthy:
        why = last.problem.splitlines()[0] if last and last.problem else "no proposal"
        raise SetupFailed(
            f"{model} proposed no healthy environment in {rounds} round(s) (last: {why}); transcript: {transcript}"
        )
    health = last.health or Health()
    header = (
        f"# Written by a model: {model}, the setup agent of wholeloop (`wholeloop env propose`), "
        f"{head['written_at']}.\n"
        f"# With it the tests of {repo.name} at {sha[:10]} ran healthy: {health.collected} collected, "
        f"{health.passed} passed, {health.failed} failed, {health.errored} errors, {health.skipped} skipped.\n"
        f"# Read it before you commit it. Every prompt, reply and proposal: {transcript.name}\n"
    )
    _write(out, header + last.proposal.rstrip() + "\n")
    return result


def _judge(proposal: str, trial: Try, tell: Callable[[str], None], n: int) -> Attempt:
    if not proposal.strip():
        return Attempt(proposal, problem="the reply held no ```yaml block")
    try:
        data = yaml.safe_load(proposal)
        config = RepoConfig.model_validate(data if isinstance(data, dict) else {"": data})
    except Exception as exc:  # YAML or validation: fed back as it is
        return Attempt(proposal, problem=f"not a valid wholeloop.yaml: {exc}")
    config._path = CONFIG_NAME
    tell(f"setup agent: round {n}: trying the proposal")
    attempt = trial(config)
    attempt.proposal = proposal
    return attempt


def try_config_at(
    repo: GitRepo, sha: str, config: RepoConfig, parser_name: str, tell: Callable[[str], None]
) -> Attempt:
    """Build the environment `config` says at `sha` (as mining would), run the whole suite once in
    a `setup` container with the network, and judge its health."""
    from sandbox import Limits, SandboxError

    from ..grading import TestPatchError, prepare_hidden_tests, run_hidden_tests
    from ..run.images import build_task_images
    from ..sandboxes import default_backend

    parser = get_parser(config.parser or parser_name)
    try:
        task = _task(repo, sha, config, parser.name)
        backend = default_backend()
        images = build_task_images(task, log=lambda line: tell(line[:100]), backend=backend)
    except (MineError, SandboxError) as exc:
        return Attempt("", problem=f"the environment did not build: {_end(str(exc))}")
    limits = task.limits.apply(Limits()).with_(network=True)
    try:
        with backend.start(images.task.tag, limits=limits, role="setup", run_id=f"setup-{os.getpid()}") as sb:
            run = run_hidden_tests(sb, task, prepare_hidden_tests(sb, task, facts_dir=backend.facts_dir))
    except (SandboxError, TestPatchError) as exc:
        return Attempt("", problem=f"the tests could not start: {_end(str(exc))}")
    if run.report is None or not run.report.found_summary:
        return Attempt("", problem=f"no test results in the output (exit {run.exit_code}):\n{_end(run.output)}")
    health = environment_health(run.report, run.report)
    if health.healthy and health.passed > 0:
        return Attempt("", healthy=True, health=health)
    why = health.summary or f"no test passed ({health.failed} failed, {health.errored} errors)"
    return Attempt("", problem=f"unhealthy: {why}\n{_end(run.output)}", health=health)


def _task(repo: GitRepo, sha: str, config: RepoConfig, parser: str) -> Task:
    """A task whose hidden tests are the whole suite at `sha`, in the environment `config` says."""
    info = repo.commit(sha)
    plan = infer_environment(repo, sha, info.committed_at, config, runner=parser)
    resolved: list[str] | None = None
    if plan.setup is None:
        from .mine import ca_bundle  # (mine imports this module)

        pins = resolve([plan], ca_bundle=ca_bundle()).get(plan.resolution_key())
        if isinstance(pins, ResolutionFailed):
            raise MineError(f"dependency resolution failed: {pins}")
        resolved = pins
    command = (
        config.test_command.replace("{files}", "").strip()
        if config.test_command
        else get_parser(parser).test_command(None)
    )
    return Task(
        id=f"setup-{sha[:10]}",
        quarantined="not a task: the setup agent's trial of an environment",
        repo=str(Path(repo.source).expanduser().resolve()) if Path(repo.source).expanduser().exists() else repo.source,
        base_commit=sha,
        problem_statement="(the setup agent's trial: the whole suite at the commit)",
        environment=Environment(
            image=plan.image,
            setup=setup_commands(plan, resolved),
            install=plan.install,
            env=plan.env,
            env_files=list(config.env_files),
        ),
        hidden_tests=HiddenTests(command=command, parser=parser),
        fail_to_pass=[],
        **({"timeouts": {"tests_s": config.tests_timeout_s}} if config.tests_timeout_s else {}),
    )


def _context(repo: GitRepo, sha: str) -> tuple[str, str]:
    paths = [path for _, path in repo.files(sha)]
    listing = "\n".join(paths[:MAX_LISTED]) + (
        f"\n... and {len(paths) - MAX_LISTED} more" if len(paths) > MAX_LISTED else ""
    )
    shown = ""
    for path in paths:
        if SHOWN_FILES.match(path) or (path.count("/") == 0 and SHOWN_FILES.match(path.lower())):
            blob = repo.read(sha, path)
            if blob is not None:
                shown += f"--- {path}\n{blob.decode('utf-8', 'replace')[:FILE_CHARS]}\n"
    return listing, shown


def _history(attempts: list[Attempt]) -> str:
    if not attempts:
        return ""
    parts = ["Your earlier proposals, and what went wrong with each:"]
    for n, a in enumerate(attempts, 1):
        parts.append(f"Proposal {n}:\n```yaml\n{a.proposal.strip()}\n```\nWhat happened: {a.problem}")
    return "\n\n".join(parts) + "\n"


def _keys() -> str:
    return "\n".join(
        f"- {name}: {f.description}"
        for name, f in RepoConfig.model_fields.items()
        if name not in ("secrets_baseline", "egress")
    )


def _default_image() -> str:
    from sandbox import DEFAULT_BASE

    return DEFAULT_BASE


def _yaml_block(reply: str) -> str:
    match = re.search(r"```(?:ya?ml)?\s*\n(.*?)```", reply, re.S)
    return match.group(1) if match else ""


def _end(text: str) -> str:
    return text.strip()[-OUTPUT_CHARS:]


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
