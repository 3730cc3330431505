"""Harbor task directories in and out (issue 28 item 1): `wholeloop tasks import-harbor` and
`wholeloop export harbor`. The Harbor task written here is shaped like SWE-bench Pro V2's (the
repository in the image at /app, a test script that runs the framework and writes the reward from
its output, FAIL_TO_PASS / PASS_TO_PASS in tests/config.json, solve.sh applying the fix from a
heredoc), built on wholeloop's base image: nothing is pulled."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support import ROOT, git
from support.cli import wl
from support.harbor import FIX, TEST_PATCH, harbor_task

from harness.authoring.harbor import HarborTaskRefused, spec_of
from harness.cli.exit_codes import OK, USAGE
from harness.parsers import get_parsers, protected_union
from harness.parsers.base import matches_any
from harness.records import RunFolder
from harness.tasks import load_tasks

# ------------------------------------------------------------------------- reading, no Docker


def test_the_harbor_task_reads_as_a_wholeloop_task(tmp_path):
    task, shape = spec_of(harbor_task(tmp_path))
    assert task.id == "calc-add"
    assert task.problem_statement.startswith("add() subtracts")
    assert (task.environment.image, task.environment.pull) == ("wholeloop/base:bookworm", "never")
    assert task.environment.python_venv and task.environment.env == {}
    assert task.environment.setup == ["pip install pytest==8.3.4"] and task.environment.install == []
    assert shape.workdir == "/app" and shape.repo_source == "repo"
    assert task.hidden_tests.command == "python -m pytest -rA -p no:cacheprovider tests"
    assert task.hidden_tests.parser == "pytest"
    assert task.test_patch() == TEST_PATCH
    assert task.fail_to_pass == ["tests/test_add.py::test_add"]
    assert task.pass_to_pass == ["tests/test_mul.py::test_mul"]
    assert (task.timeouts.agent_s, task.timeouts.tests_s) == (1200.0, 300.0)
    # grading rules hold as for any task: the parser's protected paths cover the hidden test files
    assert task.protected() == protected_union(get_parsers(["pytest"]))
    assert matches_any(task.protected(), "tests/test_add.py")


@pytest.mark.parametrize(
    ("line", "parser"),
    [
        ("npx vitest run --reporter=verbose", "vitest"),
        ("go test ./... -v 2>&1 | tee out.txt", "go"),
        ("cargo test --no-fail-fast", "cargo"),
    ],
)
def test_the_parser_is_chosen_from_the_test_script(tmp_path, line, parser):
    from harness.authoring.harbor import read_test_script

    script = tmp_path / "test.sh"
    script.write_text(f"#!/bin/bash\ncd /app\n{line}\necho 1 > /logs/verifier/reward.txt\n")
    read = read_test_script(script, "/app")
    assert read.parser == parser and "|" not in read.command and "tee" not in read.command


@pytest.mark.parametrize("runner", ["npx jest tests/sum.test.js", "npx vitest run tests/sum.test.js"])
def test_a_js_line_gets_the_report_its_parser_reads(tmp_path, runner):
    task = harbor_task(tmp_path)
    (task / "tests" / "test.sh").write_text(f"#!/bin/bash\ncd /app\n{runner} 2>&1 | tee /tmp/out.txt\n")
    read, _ = spec_of(task)  # the spec validates: its command writes the parser's results file
    [parser] = read.hidden_tests.parsers()
    assert read.hidden_tests.command.startswith(runner + " ") and parser.results_file in read.hidden_tests.command
    again = tmp_path / "again.sh"
    again.write_text(f"cd /app\n{read.hidden_tests.command}\n")
    from harness.authoring.harbor import read_test_script

    assert read_test_script(again, "/app").command == read.hidden_tests.command  # added once, not twice


def test_hidden_test_files_come_from_the_scripts_copies(tmp_path):
    task = harbor_task(tmp_path)
    (task / "tests" / "test_add.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    script = task / "tests" / "test.sh"
    script.write_text(
        script.read_text().replace(
            "git apply --verbose /tests/test.patch", "cp /tests/test_add.py /app/tests/test_add.py"
        )
    )
    read, _ = spec_of(task)
    assert read.hidden_tests.files == {"tests/test_add.py": (task / "tests" / "test_add.py").read_text()}
    assert read.hidden_tests.patch is None
    script.write_text(script.read_text().replace("/app/tests/test_add.py", "/etc/test_add.py"))
    with pytest.raises(HarborTaskRefused, match="outside the repository"):
        spec_of(task)


def test_a_terminal_bench_task_is_refused_with_the_reason(tmp_path):
    task = harbor_task(tmp_path)
    (task / "environment" / "Dockerfile").write_text("FROM wholeloop/base:bookworm\nWORKDIR /app\nRUN echo hi > x\n")
    with pytest.raises(HarborTaskRefused, match="grades the container's state in place"):
        spec_of(task)
    done = wl("tasks", "import-harbor", task, "--out", tmp_path / "out")
    assert done.returncode == USAGE and "Terminal-Bench" in done.stderr + done.stdout
    assert not (tmp_path / "out" / "calc-add.yaml").exists()


def test_a_reward_file_alone_is_refused_as_one_forgeable_channel(tmp_path):
    task = harbor_task(tmp_path)
    (task / "tests" / "test.sh").write_text(
        "#!/bin/bash\ncd /app\nif python -c 'import calc; assert calc.add(2, 3) == 5'; then echo 1; else echo 0; fi"
        " > /logs/verifier/reward.txt\n"
    )
    with pytest.raises(HarborTaskRefused, match="reward file alone, one channel that the code under test could forge"):
        spec_of(task)


def test_a_dockerfile_line_wholeloop_cannot_carry_is_named(tmp_path):
    task = harbor_task(tmp_path)
    dockerfile = task / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "USER nobody\n")
    with pytest.raises(HarborTaskRefused, match=r"Dockerfile:9: USER cannot be carried over"):
        spec_of(task)


@pytest.mark.parametrize(
    ("lines", "workdir"),
    [
        ("COPY --chown=app:app repo /app\nWORKDIR /app\n", "/app"),  # the owner is the sandbox's: ignored
        ("WORKDIR /app\nCOPY --chown=1000 repo .\n", "/app"),  # a relative DEST is relative to WORKDIR
        ("WORKDIR /srv\nWORKDIR app/\nCOPY repo ./\n", "/srv/app"),  # a relative WORKDIR to the one before
        ("WORKDIR /\nCOPY repo srv/app\nWORKDIR /srv/app\n", "/srv/app"),
    ],
)
def test_copy_chown_and_relative_workdirs_are_carried_over(tmp_path, lines, workdir):
    """Issue 28: `COPY --chown` and the WORKDIR forms SWE-bench-style Dockerfiles use were refused
    (`COPY --chown=...: wholeloop reads one COPY`, `copied to ., not to WORKDIR`)."""
    task = harbor_task(tmp_path)
    dockerfile = task / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text().replace("COPY repo /app\nWORKDIR /app\n", lines))
    found, shape = spec_of(task)
    assert shape.workdir == workdir and shape.repo_source == "repo"
    assert found.environment.setup == ["pip install pytest==8.3.4"] and found.environment.install == []
    assert found.fail_to_pass == ["tests/test_add.py::test_add"]


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        (
            "COPY --from=builder repo /app\nWORKDIR /app\n",
            r"Dockerfile:\d+: COPY --from=builder cannot be carried over",
        ),
        ("COPY --chmod=700 repo /app\nWORKDIR /app\n", r"Dockerfile:\d+: COPY --chmod=700 cannot be carried over"),
        ("WORKDIR /app\nCOPY repo sub\n", r"copied to /app/sub, not to WORKDIR \(/app\)"),
        ("WORKDIR $HOME/app\nCOPY repo .\n", r"Dockerfile:\d+: WORKDIR \$HOME/app: a variable"),
    ],
)
def test_copy_and_workdir_forms_that_cannot_be_carried_over_are_named(tmp_path, lines, said):
    task = harbor_task(tmp_path)
    dockerfile = task / "environment" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text().replace("COPY repo /app\nWORKDIR /app\n", lines))
    with pytest.raises(HarborTaskRefused, match=said):
        spec_of(task)


# ------------------------------------------------------------------------- export, no Docker


def test_the_demo_suite_exports_and_harbor_accepts_it(tmp_path):
    out = tmp_path / "harbor"
    done = wl("export", "harbor", ROOT / "tasks" / "demo", out)
    assert done.returncode == OK, done.stdout + done.stderr
    assert "wrote 7 Harbor task(s)" in done.stdout
    folder = out / "inikit-001"
    assert (folder / "environment" / "Dockerfile").read_text().startswith("FROM wholeloop/base:bookworm\n")
    repo = folder / "environment" / "repo"
    demo = load_tasks(ROOT / "tasks" / "demo" / "inikit-001.yaml")[0]
    assert git(repo, "rev-parse", "HEAD") == demo.base_commit
    fix = demo.metadata["fix_commit"]
    known = subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{fix}^{{commit}}"], capture_output=True)
    assert known.returncode != 0  # the fix is not in the exported history
    # every exported task reads back as the same task, without Docker
    for spec in sorted((ROOT / "tasks" / "demo").glob("*.yaml")):
        original = load_tasks(spec)[0]
        back, _ = spec_of(out / original.id)
        same = back.model_copy(update={"repo": original.repo, "gold_patch_file": original.gold_patch_file})
        same._spec_path = original.spec_path
        assert {**same.model_dump(), "hidden_tests": None} == {**original.model_dump(), "hidden_tests": None}
        assert back.hidden_tests.command == original.hidden_tests.command
        assert back.test_patch() == original.test_patch()


def test_harbor_models_judge_the_exported_directory(tmp_path):
    """Harbor's own models (the pinned wheel, in a subprocess) judge a written directory: the
    export's passes; a task.toml or a layout Harbor rejects is refused, with Harbor's reason."""
    from harness.report.harbor_models import validate

    good = tmp_path / "good"
    done = wl("export", "harbor", ROOT / "tasks" / "demo" / "inikit-002.yaml", good)
    assert done.returncode == OK, done.stdout + done.stderr
    bad = tmp_path / "bad"
    shutil.copytree(good / "inikit-002", bad)
    toml = bad / "task.toml"
    toml.write_text(toml.read_text().replace('network_mode = "no-network"', 'network_mode = "sometimes"'))
    verdicts = validate("task", [good / "inikit-002", bad])
    assert verdicts[str(good / "inikit-002")] == ""
    assert "network_mode" in verdicts[str(bad)]
    shutil.copy(good / "inikit-002" / "task.toml", toml)
    (bad / "solution" / "solve.sh").unlink()
    assert "solution/solve.sh: missing" in validate("task", [bad])[str(bad)]


def test_export_into_the_suite_itself_deletes_nothing(tmp_path):
    suite = tmp_path / "demo"
    shutil.copytree(ROOT / "tasks" / "demo", suite)
    done = wl("export", "harbor", suite / "inikit-001.yaml", suite, env={"WHOLELOOP_REPOS_ROOT": str(ROOT / "repos")})
    assert done.returncode == USAGE and "is not a Harbor task directory" in done.stderr + done.stdout
    assert (suite / "inikit-001" / "gold.diff").is_file() and (suite / "inikit-001" / "test.diff").is_file()


# ------------------------------------------------------------------------- the round trip, Docker


def _run(suite: Path, agent: str, out: Path) -> dict[str, str]:
    args = ("run", suite, "--agent", agent, "--out", out, "--no-history", "--workers", "2")
    done = wl(*args, timeout=1800, env={"COLUMNS": "200"})
    assert done.returncode == OK, done.stdout[-3000:] + done.stderr[-2000:]
    return {row.task_id: row.outcome for row in RunFolder(out).latest()}


def _controls(suite: Path, tmp_path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The gold and noop runs of `suite`, side by side (two processes: most of a unit is waiting on
    the engine; CI minutes)."""
    with ThreadPoolExecutor(2) as pool:
        gold = pool.submit(_run, suite, "gold", tmp_path / "gold")
        noop = pool.submit(_run, suite, "noop", tmp_path / "noop")
        return gold.result(), noop.result()


@pytest.mark.docker
@pytest.mark.slow
def test_a_harbor_task_round_trips(tmp_path):
    """import -> gold resolves, noop does not -> export -> Harbor's models accept it -> import
    again gives the same task (the same content hash)."""
    harbor = harbor_task(tmp_path / "harbor")
    first = tmp_path / "first"
    done = wl("tasks", "import-harbor", harbor, "--out", first, timeout=900)
    assert done.returncode == OK, done.stdout + done.stderr
    [task] = load_tasks(first)
    assert FIX.splitlines()[1] in task.gold() and "tests/" not in task.gold()
    gold, noop = _controls(first, tmp_path)
    assert gold == {"calc-add": "resolved"}
    assert list(noop) == ["calc-add"] and noop["calc-add"] != "resolved", noop
    exported = tmp_path / "exported"
    done = wl("export", "harbor", first, exported)
    assert done.returncode == OK, done.stdout + done.stderr
    second = tmp_path / "second"
    done = wl("tasks", "import-harbor", exported / "calc-add", "--out", second, timeout=900)
    assert done.returncode == OK, done.stdout + done.stderr
    [again] = load_tasks(second)
    assert again.content_hash() == task.content_hash()
    assert again.gold() == task.gold()
    # the same task again into the same folder: refused, the one there kept as it was
    done = wl("tasks", "import-harbor", exported / "calc-add", "--out", second)
    assert done.returncode == USAGE and "task calc-add is already in" in done.stderr
    assert load_tasks(second)[0].content_hash() == task.content_hash()
    # a solve.sh that fails in the task's container: refused, exit 2, nothing of the task kept
    broken = harbor_task(tmp_path / "broken", "calc-broken")
    (broken / "solution" / "solve.sh").write_text("#!/bin/bash\necho cannot solve >&2\nexit 3\n")
    done = wl("tasks", "import-harbor", broken, "--out", second, timeout=900)
    assert done.returncode == USAGE and "solve.sh failed in the task's container: cannot solve" in done.stderr
    assert sorted(p.name for p in second.iterdir()) == ["calc-add", "calc-add.yaml"]


def _harbor_trial(task: Path, tag: str, oracle: bool) -> str:
    """What Harbor does with a task directory, by hand with the real engine: the environment built
    from its Dockerfile, solution/ at /solution and solve.sh run (the oracle), tests/ at /tests and
    test.sh run; the reward file's text."""
    name = f"{tag.replace(':', '-')}-{'oracle' if oracle else 'nop'}"
    docker = ["docker"]
    subprocess.run([*docker, "run", "-d", "--name", name, "--network", "none", tag, "sleep", "600"], check=True)
    try:
        subprocess.run([*docker, "cp", str(task / "tests"), f"{name}:/tests"], check=True)
        if oracle:
            subprocess.run([*docker, "cp", str(task / "solution"), f"{name}:/solution"], check=True)
            solved = subprocess.run(
                [*docker, "exec", name, "bash", "/solution/solve.sh"], capture_output=True, text=True
            )
            assert solved.returncode == 0, solved.stdout + solved.stderr
        tested = subprocess.run([*docker, "exec", name, "bash", "/tests/test.sh"], capture_output=True, text=True)
        reward = subprocess.run(
            [*docker, "exec", name, "cat", "/logs/verifier/reward.txt"], capture_output=True, text=True
        )
        assert reward.returncode == 0, tested.stdout[-2000:] + tested.stderr[-2000:]
        return reward.stdout.strip()
    finally:
        subprocess.run([*docker, "rm", "-f", name], capture_output=True)


@pytest.mark.docker
@pytest.mark.slow
def test_an_exported_task_runs_as_harbor_runs_it(tmp_path):
    """The exported directory works under Harbor's own procedure, not only under its models: its
    Dockerfile builds with a plain `docker build` (no wholeloop image tiers), the oracle's
    solve.sh makes test.sh write reward 1, and without it the reward is 0."""
    out = tmp_path / "harbor"
    assert wl("export", "harbor", ROOT / "tasks" / "demo" / "inikit-001.yaml", out).returncode == OK
    task = out / "inikit-001"
    bundle = load_tasks(ROOT / "tasks" / "demo" / "inikit-001.yaml")[0].ca_bundle()
    if bundle:  # this machine's CA (TLS interception): what any Harbor user behind it adds to a build
        dockerfile = task / "environment" / "Dockerfile"
        shutil.copy(bundle, task / "environment" / "host-ca.crt")
        first, rest = dockerfile.read_text().split("\n", 1)
        trust = "COPY host-ca.crt /etc/host-ca.crt\nENV PIP_CERT=/etc/host-ca.crt SSL_CERT_FILE=/etc/host-ca.crt\n"
        dockerfile.write_text(f"{first}\n{trust}{rest}")
    tag = f"wholeloop-test-harbor:{uuid.uuid4().hex[:12]}"
    built = subprocess.run(
        ["docker", "build", "--force-rm", "-q", "-t", tag, str(task / "environment")], capture_output=True, text=True
    )
    try:
        assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
        assert _harbor_trial(task, tag, oracle=False) == "0"
        assert _harbor_trial(task, tag, oracle=True) == "1"
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)


@pytest.mark.docker
@pytest.mark.slow
def test_the_demo_suite_round_trips_through_harbor(tmp_path):
    """The demo exported to Harbor and imported back: gold 7/7, noop 0/7."""
    exported = tmp_path / "harbor"
    assert wl("export", "harbor", ROOT / "tasks" / "demo", exported).returncode == OK
    back = tmp_path / "back"
    done = wl("tasks", "import-harbor", *sorted(exported.iterdir()), "--out", back, timeout=1800)
    assert done.returncode == OK, done.stdout + done.stderr
    assert len(load_tasks(back)) == 7
    gold, noop = _controls(back, tmp_path)
    assert sorted(gold.values()) == ["resolved"] * 7, gold
    assert "resolved" not in noop.values() and len(noop) == 7, noop
