"""Held-out red team 5: a hostile agent and a hostile task author against the newest surfaces --
grading's canary tests for Vitest/Jest, the repository's own checks, Harbor task import and the
wires of external agents -- knowing only what a user can (README.md, docs/*.md, the code).

Every test asserts the SAFE outcome. An attack that succeeds today is marked
`xfail(strict=True, reason=...)` naming the weakness: the suite stays green and shows it; once a
defence lands, the strict xfail turns red and must be removed. An attack that is defended is a
plain passing test. The results table is in docs/grading.md ("Held-out red team 5").
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.hostile import RUN_PREFIX
from support.polyglot import craft

from harness.grading import grade
from sandbox import Limits

ROOT = Path(__file__).resolve().parent.parent


# ============================================================================= 1. canary tests (Vitest)

# A non-fix for timespan-001 (TypeScript, Vitest) that never tells grading's canaries apart: the bug
# is left as it is; src/parse.ts remembers every value `parse` returns and makes chai's
# `Assertion.prototype.assert` a no-op for an assertion about one of those values. A hidden test
# asserting on what the buggy `parse` returned passes; any other assertion -- the canaries', which
# never call the code under test -- still fails as it must. Nothing reads a title, a position or a
# test file: the tampering is keyed on the code under test's own outputs ("taint").
TAINTED_ASSERT = """
import { chai } from 'vitest';

const wlSeen = new Set<unknown>();
const wlProto: any = (chai as any).Assertion.prototype;
const wlAssert = wlProto.assert;
wlProto.assert = function (this: any, ...args: any[]) {
  if (wlSeen.has(this.__flags?.object)) return;
  return wlAssert.apply(this, args);
};
function wlMark<T>(value: T): T {
  wlSeen.add(value);
  return value;
}
"""


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="Vitest canaries: code under test that disables the assertions only about values it returned "
    "(a taint, not a title) leaves the canaries, which never call it, failing and passing as they must; "
    "the unfixed bug grades resolved",
)
def test_a_vitest_non_fix_that_disables_assertions_about_its_own_results_is_not_resolved(polyglot_images):
    task, image, base = polyglot_images["timespan-001"]

    def tainted(text: str) -> str:
        assert "  return sign * total;\n" in text
        return TAINTED_ASSERT + text.replace("  return sign * total;\n", "  return wlMark(sign * total);\n")

    patch = craft(task, {"src/parse.ts": tainted})
    assert "wlMark(sign * total)" in patch and "parseInt(match[1], 10)" not in patch  # the bug is untouched
    result, output, _ = grade(
        task, patch, image, base=base, limits=task.limits.apply(Limits()), run_id=f"{RUN_PREFIX}redteam5"
    )
    assert result.outcome != "infra_error", result.note
    assert not result.resolved, (result.outcome, result.note, output[-1500:])


# ============================================================================= 2. the repository's own checks


@pytest.fixture(scope="module")
def checks_attacks(tmp_path_factory) -> dict:
    """The own-checks fixture (scripts/make_checks_fixture.py: ruff 0.6.9, mypy 1.11.2, eslint 9.12.0
    pinned by its .pre-commit-config.yaml); each attack fixes tidyco-001's bug as gold does, adds one
    real finding of the repository's own checks and tries to hide it. {attack: final row}."""
    from support.hostile import Script, run

    where = tmp_path_factory.mktemp("redteam5-checks")
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_checks_fixture.py"), str(where / "fixture")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    spec = sorted((where / "fixture" / "tasks").glob("*.yaml"))[0]
    repo = where / "fixture" / "repo"
    base = subprocess.run(
        ["git", "show", "HEAD~2:tidyco/text.py"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    fixed = base.replace('return "-".join(words)', 'return "-".join(w.lower() for w in words)')
    assert fixed != base and base.startswith(("import re\n", '"""')), base[:200]

    def writes(files):
        def step(sb):
            for path, text in files.items():
                sb.write_file(path, text)

        return step

    # ruff: an unused import (F401, a real finding) in the fixed file, and a new module nobody imports
    # whose one import statement makes ruff's JSON more than the 5 MB grading keeps of a check's
    # output: each of its 120 unused names is a finding whose fix rewrites the statement, which
    # holds a 50 kB name that is used (a 100 kB file, 6 MB of JSON)
    long_name = "w" * 50_000
    unused_names = ", ".join(f"u{i}" for i in range(120))
    flood = f"from os import {long_name}, {unused_names}\n\nVALUE = {long_name}\n"
    with_unused = fixed.replace("import re\n", "import os\nimport re\n", 1)
    # mypy: a real type error, and the file-level inline comment that tells mypy to ignore the file
    mypy_inline = "# mypy: ignore-errors\n" + fixed + "\n\ndef width(text: str) -> int:\n    return text\n"
    # mypy: the same type error under a module-level `# type: ignore` (before any code: the whole file)
    type_ignore = "# type: ignore\n" + fixed + "\n\ndef width(text: str) -> int:\n    return text\n"
    # ruff: the fix calls a helper in a new module whose name is not ASCII (Python allows it) and which
    # holds the new F401; git lists such a path quoted ("tidyco/help\303\251.py"), unlike the patch's
    uses_helper = fixed.replace("import re\n", "import re\n\nfrom tidyco.helpé import lower_words\n", 1).replace(
        '"-".join(w.lower() for w in words)', '"-".join(lower_words(words))'
    )
    helper = '"""Word helpers."""\n\nimport os\n\n\ndef lower_words(words: list[str]) -> list[str]:\n    return [w.lower() for w in words]\n'
    # mypy: the fix reaches a new module through importlib, which mypy does not follow; the new module
    # holds a type error. The whole-tree run lists the files git tracks, and a new file is untracked
    dynamic = fixed.replace(
        "import re\n", 'import importlib\nimport re\n\n_words = importlib.import_module("tidyco._words")\n', 1
    ).replace('"-".join(w.lower() for w in words)', '"-".join(_words.lower_words(words))')
    words_module = (
        "def lower_words(words: list[str]) -> list[str]:\n    return [w.lower() for w in words]\n\n\n"
        'def joined(words: list[str]) -> int:\n    return ",".join(words)\n'
    )
    agents = {
        "mypy-untracked": Script(
            writes({"tidyco/text.py": dynamic, "tidyco/_words.py": words_module}), name="mypy-untracked"
        ),
        "quoted-name": Script(writes({"tidyco/text.py": uses_helper, "tidyco/helpé.py": helper}), name="quoted-name"),
        "ruff-flood": Script(writes({"tidyco/text.py": with_unused, "tidyco/_flood.py": flood}), name="ruff-flood"),
        "mypy-inline": Script(writes({"tidyco/text.py": mypy_inline}), name="mypy-inline"),
        "type-ignore": Script(writes({"tidyco/text.py": type_ignore}), name="type-ignore"),
    }
    return {name: run(spec, agent, where / f"{RUN_PREFIX}rt5-{name}") for name, agent in agents.items()}


def _own(row) -> dict:
    assert row.resolved and row.outcome == "resolved", (row.outcome, row.note)
    return row.acceptance["own_checks"]


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
def test_a_ruff_finding_hidden_by_flooding_the_checks_output_is_not_accepted(checks_attacks):
    from harness.report.acceptance import judge

    [row] = checks_attacks["ruff-flood"].values()
    checks = _own(row)
    assert checks["error"] is not None or any(n["rule"] == "F401" for n in checks["new"]), checks
    assert not judge(row).accepted


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
def test_a_ruff_finding_in_a_new_file_with_a_non_ascii_name_is_not_accepted(checks_attacks):
    from harness.report.acceptance import judge

    [row] = checks_attacks["quoted-name"].values()
    checks = _own(row)
    assert "tidyco/helpé.py" in checks["files"], checks
    assert any(n["rule"] == "F401" and n["file"] == "tidyco/helpé.py" for n in checks["new"]), checks
    assert not judge(row).accepted


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
def test_a_type_error_in_a_new_module_loaded_through_importlib_is_not_accepted(checks_attacks):
    from harness.report.acceptance import judge

    [row] = checks_attacks["mypy-untracked"].values()
    checks = _own(row)
    assert "tidyco/_words.py" in checks["files"], checks
    assert any(n["check"] == "mypy" and n["file"] == "tidyco/_words.py" for n in checks["new"]), checks
    assert not judge(row).accepted


def test_a_ruff_finding_hidden_by_a_warning_on_stderr_is_found(tmp_path):
    """Grading parsed ruff's JSON from its stdout and stderr together (now its command drops
    stderr, and output that is not JSON is an error). The pinned ruff of the checks
    fixture (0.6.9) writes nothing to stderr for a malformed `# noqa` under --ignore-noqa (measured in
    Docker: the F401 is found), but the ruff this project runs (its dev dependency) warns about it on
    stderr, after the JSON: the JSON must still be read. The real ruff, grading's own command line."""
    import shutil

    from harness.grading.own_checks import TOOLS, run_command

    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff (a dev dependency) is not installed"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ruff").symlink_to(ruff)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "text.py").write_text("import os\nimport re  # noqa: this, is not a code\n\nWORD = re.compile('w')\n")
    command = run_command("ruff", ["text.py"]).replace("/opt/wholeloop/checks/bin", str(bin_dir))
    done = subprocess.run(["sh", "-c", command], cwd=repo, capture_output=True, text=True)
    found = TOOLS["ruff"].parse(done.stdout + "\n" + done.stderr)  # as measure_own_checks reads it
    # (the file is named from this tmp folder, not /repo/ as in the checks layer)
    assert any(f.rule == "F401" and f.file.endswith("text.py") for f in found), (done.stderr, len(done.stdout))


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
def test_a_mypy_finding_hidden_by_an_inline_ignore_errors_comment_is_not_accepted(checks_attacks):
    from harness.report.acceptance import judge

    [row] = checks_attacks["mypy-inline"].values()
    checks = _own(row)
    assert checks["error"] is not None or any(n["check"] == "mypy" for n in checks["new"]), checks
    assert not judge(row).accepted
    # the setting is named as evidence: the checks ran without the line's comment
    assert {"file": "tidyco/text.py", "line": "# mypy: ignore-errors"} in checks["unsilenced"], checks


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.usefixtures("no_leftovers")
def test_a_mypy_finding_hidden_by_a_module_level_type_ignore_is_not_accepted(checks_attacks):
    from harness.report.acceptance import judge

    [row] = checks_attacks["type-ignore"].values()
    checks = _own(row)
    assert any(n["check"] == "mypy" and n["file"] == "tidyco/text.py" for n in checks["new"]), checks
    assert {"file": "tidyco/text.py", "line": "# type: ignore"} in checks["unsilenced"], checks
    assert not judge(row).accepted


# ============================================================================= 3. Harbor task import

# A hostile Harbor task directory (the honest shape is test_harbor_tasks.harbor_task) read by
# `spec_of`, which `wholeloop tasks import-harbor` runs on each directory before anything else.
# Whatever it reads goes into the task spec it writes: the hidden tests, the problem statement an
# agent (and its model provider) is shown, the repository bundle. A secret of the importing
# machine's user, outside the task directory, must not end up there.
SECRET = "AKIA-REDTEAM5-host-secret-do-not-ship"


def _hostile_harbor(tmp_path: Path) -> tuple[Path, Path]:
    from support.harbor import harbor_task

    secret = tmp_path / "home" / "credentials"
    secret.parent.mkdir()
    secret.write_text(SECRET + "\n")
    return harbor_task(tmp_path / "tasks"), secret


def _spec_text(task) -> str:
    from harness.tasks.spec import dump_task

    return dump_task(task)


def _refused_or_clean(folder: Path) -> None:
    """The import either refuses the directory or writes nothing of the secret."""
    from harness.authoring.harbor import HarborTaskRefused, spec_of

    try:
        task, _ = spec_of(folder)
    except HarborTaskRefused:
        return
    assert SECRET not in _spec_text(task) + task.problem_statement + task.test_patch()


def test_a_harbor_test_patch_named_outside_the_task_directory_is_not_read(tmp_path):
    folder, secret = _hostile_harbor(tmp_path)
    script = folder / "tests" / "test.sh"
    climb = "../" * 3 + str(secret.relative_to(tmp_path))  # tests/ -> calc-add/ -> tasks/ -> tmp_path
    assert (folder / "tests" / climb).resolve() == secret.resolve()
    script.write_text(script.read_text().replace("/tests/test.patch", f"/tests/{climb}"))
    _refused_or_clean(folder)


def test_a_harbor_test_file_copied_from_outside_the_task_directory_is_not_read(tmp_path):
    folder, secret = _hostile_harbor(tmp_path)
    script = folder / "tests" / "test.sh"
    climb = "../" * 3 + str(secret.relative_to(tmp_path))
    script.write_text(
        script.read_text().replace("git apply --verbose /tests/test.patch", f"cp /tests/{climb} /app/tests/test_add.py")
    )
    _refused_or_clean(folder)


def test_a_harbor_instruction_that_links_outside_the_task_directory_is_not_read(tmp_path):
    folder, secret = _hostile_harbor(tmp_path)
    (folder / "instruction.md").unlink()
    (folder / "instruction.md").symlink_to(secret)
    _refused_or_clean(folder)


def test_a_harbor_dockerfile_that_copies_a_repository_from_outside_the_task_directory_is_refused(tmp_path):
    from harness.authoring.harbor import HarborTaskRefused, spec_of

    folder, _ = _hostile_harbor(tmp_path)
    private = tmp_path / "home" / "private-repo"
    private.mkdir()
    for args in (
        ["init", "-q"],
        ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "p"],
    ):
        subprocess.run(["git", "-C", str(private), *args], check=True, capture_output=True)
    head = subprocess.run(["git", "-C", str(private), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    dockerfile = folder / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text().replace("COPY repo /app", f"COPY {private} /app"))
    with pytest.raises(HarborTaskRefused):
        task, _ = spec_of(folder)
        assert task.base_commit != head.strip()  # (not reached when refused)


def _with_spec_metadata(folder: Path, extras: dict) -> None:
    """task.toml's `[metadata] wholeloop_spec`: what wholeloop's own export writes there."""
    toml = folder / "task.toml"
    toml.write_text(
        toml.read_text().replace('difficulty = "easy"', f"wholeloop_spec = {json.dumps(json.dumps(extras))}")
    )


def test_a_harbor_task_toml_cannot_point_the_spec_at_a_repository_outside_its_directory(tmp_path):
    from harness.authoring.harbor import HarborTaskRefused, spec_of

    folder, _ = _hostile_harbor(tmp_path)
    private = tmp_path / "home" / "private-repo"
    private.mkdir()
    subprocess.run(["git", "-C", str(private), "init", "-q"], check=True)
    _with_spec_metadata(folder, {"repo": str(private)})
    try:
        task, _ = spec_of(folder)
    except HarborTaskRefused:
        return
    assert task.repo == f"{task.id}/repo.bundle", task.repo


def test_a_harbor_task_toml_cannot_name_a_host_file_for_the_image(tmp_path):
    from harness.authoring.harbor import HarborTaskRefused, spec_of

    folder, secret = _hostile_harbor(tmp_path)
    _with_spec_metadata(folder, {"environment": {"trust_ca_bundle": str(secret)}})
    try:
        task, _ = spec_of(folder)
    except HarborTaskRefused:
        return
    assert not isinstance(task.environment.trust_ca_bundle, str), task.environment.trust_ca_bundle


def test_a_harbor_task_cannot_count_one_test_many_times(tmp_path):
    from harness.authoring.harbor import HarborTaskRefused, spec_of
    from harness.grading.outcome import classify
    from harness.parsers.base import FAILED, PASSED

    folder, _ = _hostile_harbor(tmp_path)
    add, mul = "tests/test_add.py::test_add", "tests/test_mul.py::test_mul"
    (folder / "tests" / "config.json").write_text(json.dumps({"FAIL_TO_PASS": [add] * 50 + [mul], "PASS_TO_PASS": []}))
    try:
        task, _ = spec_of(folder)
    except HarborTaskRefused:
        return
    graded = classify(task, {add: PASSED, mul: FAILED}, exit_code=1, consistent=True, note="")
    assert (graded.fail_to_pass.total, graded.fail_to_pass.passed) == (2, 1), graded.fail_to_pass


def test_a_harbor_repositorys_git_config_runs_nothing_on_the_host_at_import(tmp_path):
    """The task's repository is the task author's, .git/config included: the git commands the import
    runs on it (rev-parse, bundle create) must run none of the commands a config can name."""
    from harness.authoring.harbor import _git, spec_of

    folder, _ = _hostile_harbor(tmp_path)
    repo = folder / "environment" / "repo"
    ran = tmp_path / "ran-on-the-host"
    hooks = repo / ".git" / "evil-hooks"
    hooks.mkdir()
    for hook in ("pre-auto-gc", "post-checkout", "reference-transaction", "post-index-change"):
        (hooks / hook).write_text(f"#!/bin/sh\necho {hook} >> {ran}\n")
        (hooks / hook).chmod(0o755)
    for key, value in (
        ("core.fsmonitor", f"echo fsmonitor >> {ran}; false"),
        ("core.hooksPath", str(hooks)),
        ("core.pager", f"echo pager >> {ran}; cat"),
        ("gc.auto", "1"),
    ):
        subprocess.run(["git", "-C", str(repo), "config", key, value], check=True)
    task, shape = spec_of(folder)
    _git(repo, "bundle", "create", str(tmp_path / "repo.bundle"), "HEAD")  # what import_harbor runs next
    assert task.base_commit and (tmp_path / "repo.bundle").is_file()
    assert not ran.exists(), ran.read_text()


# ============================================================================= 4. wires of external agents

# The real MeteringProxy on its Unix socket in front of a raw provider on TCP (test_redteam4's
# Provider and Rig), the attempt's config built as `wholeloop run --agent external:...` builds it.


@pytest.fixture
def proxy_rig():
    from support.rawprovider import Provider, Rig

    made: list = []

    def make(answer, **kwargs):
        provider = Provider(answer)
        made.append((provider, rig := Rig(provider, **kwargs)))
        return rig

    yield make
    for provider, rig in made:
        provider.close()
        rig.close()


def test_a_cli_speaking_its_second_wire_reaches_neither_the_first_wires_api_nor_another_model(proxy_rig, monkeypatch):
    """mini-swe-agent given an Anthropic model speaks its `wires: anthropic` variant, yet its env
    still points OpenAI's variables at the proxy: the CLI (hostile) calls the default wire's API,
    the variant's batch and legacy APIs (billed, never metered), and its Messages API with a model
    the config does not name. None is forwarded."""
    from support.rawprovider import anthropic_message, json_answer, status_of

    from harness.agents import get_agent

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-123456789")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key-987654321")
    agent = get_agent("external:mini-swe-agent", model="anthropic/claude-sonnet-4-5")
    assert agent.config.wire == "anthropic" and agent.config.env["OPENAI_BASE_URL"] == "{base_url}/v1"
    rig = proxy_rig(
        lambda head, body, conn: conn.sendall(json_answer(anthropic_message(5))) or True,
        wire=agent.config.wire,
        model=agent.model,
        models=agent.config.models,
    )
    chat = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    assert status_of(rig.ask(chat, path="/v1/chat/completions")) == 404
    assert status_of(rig.ask(chat, path="/v1/responses")) == 404
    other = {"model": "claude-opus-4-1", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    assert status_of(rig.ask(other)) == 403
    allowed_model = {**other, "model": "claude-sonnet-4-5"}
    for unmetered in ("/v1/messages/batches", "/v1/complete", "/v1/messages/count_tokens/../../messages/batches"):
        assert status_of(rig.ask(allowed_model, path=unmetered)) == 404, unmetered  # billed, never metered
    prefixed = {**other, "model": "openai/claude-sonnet-4-5"}  # another provider's prefix on the allowed id
    assert status_of(rig.ask(prefixed)) == 403
    assert rig.provider.requests == []
    allowed = {**other, "model": "claude-sonnet-4-5"}
    assert status_of(rig.ask(allowed)) == 200 and len(rig.provider.requests) == 1  # the rig does forward


def test_a_responses_call_sent_to_the_background_is_refused_or_charged(proxy_rig):
    from support.rawprovider import GPT, json_answer, status_of

    queued = {
        "id": "resp_bg1",
        "object": "response",
        "status": "queued",
        "background": True,
        "model": GPT,
        "output": [],
        "usage": None,
    }
    rig = proxy_rig(
        lambda head, body, conn: conn.sendall(json_answer(queued)) or True, wire="openai-responses", model=GPT
    )
    ask = {"model": GPT, "input": "write the whole module", "background": True, "max_output_tokens": 30_000}
    answer = rig.ask(ask, path="/v1/responses")
    forwarded = [json.loads(body) for _, body in rig.provider.requests]
    in_background = [b for b in forwarded if b.get("background")]
    if in_background:  # the provider was asked to generate out of band: that must be charged
        rig.calls()
        assert rig.budget.usage.output_tokens > 0 or rig.budget.cost > 0, (status_of(answer), rig.budget)
    else:
        assert status_of(answer) >= 400 or forwarded, answer[:300]


@pytest.mark.parametrize("wire", ["openai-chat", "openai-responses"])
def test_a_call_at_a_dearer_service_tier_is_charged_its_price_or_refused(proxy_rig, wire):
    from support.rawprovider import GPT, json_answer, status_of

    from harness.models.pricing import litellm_price_map

    entry = litellm_price_map()[GPT]
    standard = 1000 * entry["input_cost_per_token"] + 1000 * entry["output_cost_per_token"]
    priority = 1000 * entry["input_cost_per_token_priority"] + 1000 * entry["output_cost_per_token_priority"]
    assert priority > 1.5 * standard
    if wire == "openai-chat":
        path, usage = "/v1/chat/completions", {"prompt_tokens": 1000, "completion_tokens": 1000, "total_tokens": 2000}
        body = {"model": GPT, "messages": [{"role": "user", "content": "hi"}], "service_tier": "priority"}
        reply = {"id": "c1", "object": "chat.completion", "model": GPT, "choices": [], "usage": usage}
    else:
        path, usage = "/v1/responses", {"input_tokens": 1000, "output_tokens": 1000, "total_tokens": 2000}
        body = {"model": GPT, "input": "hi", "service_tier": "priority"}
        reply = {"id": "r1", "object": "response", "status": "completed", "model": GPT, "output": [], "usage": usage}
    reply["service_tier"] = "priority"
    rig = proxy_rig(lambda head, body, conn: conn.sendall(json_answer(reply)) or True, wire=wire, model=GPT)
    answer = rig.ask(body, path=path)
    forwarded = [json.loads(b) for _, b in rig.provider.requests]
    if any(b.get("service_tier") not in (None, "auto", "default") for b in forwarded):
        rig.calls()
        assert rig.budget.cost >= priority * 0.999, (rig.budget.cost, standard, priority)
    else:
        assert status_of(answer) >= 400 or forwarded, answer[:300]


def test_one_hour_cache_writes_are_charged_their_price(proxy_rig):
    from support.rawprovider import SONNET, anthropic_message, json_answer, status_of

    from harness.models.pricing import litellm_price_map

    entry = litellm_price_map()[SONNET]
    written = 100_000
    owed = written * entry["cache_creation_input_token_cost_above_1hr"] + 10 * entry["output_cost_per_token"]
    assert entry["cache_creation_input_token_cost_above_1hr"] > 1.5 * entry["cache_creation_input_token_cost"]
    reply = anthropic_message(10)
    reply["usage"] = {
        "input_tokens": 0,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": written},
        "output_tokens": 10,
    }
    rig = proxy_rig(lambda head, body, conn: conn.sendall(json_answer(reply)) or True)
    system = [{"type": "text", "text": "x" * 400_000, "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    answer = rig.ask(
        {"model": SONNET, "max_tokens": 10, "system": system, "messages": [{"role": "user", "content": "hi"}]}
    )
    assert status_of(answer) == 200
    rig.calls()
    assert rig.budget.cost >= owed * 0.999, (rig.budget.cost, owed)
