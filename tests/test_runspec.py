"""RunSpec, the one recipe of a run: its YAML form, `start(spec)` from Python, and the
command line building the same spec from its flags (the manifest stores it verbatim)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.errors import UserError
from harness.launch import prepare, start
from harness.records import RunFolder, read_results
from harness.run.spec import RunSpec, RunSpecError, SettingsSpec, SuiteSpec, agent_spec
from harness.tasks import LimitsSpec


def _spec(tiny_task, out, **settings) -> RunSpec:
    return RunSpec(
        suite=SuiteSpec(paths=[str(tiny_task["dir"])]),
        agent=agent_spec("gold"),
        settings=SettingsSpec(**settings),
        history={"enabled": False},
        out=str(out),
    )


def test_a_spec_round_trips_through_yaml_and_says_which_field_is_wrong(tmp_path):
    spec = RunSpec(
        suite=SuiteSpec(paths=["tasks/demo"], statement_quality=["issue"]),
        agent=agent_spec(model="anthropic/claude-sonnet-4-5", temperature=0.0, base_url="http://u:pw@proxy:8080"),
        settings=SettingsSpec(workers=3, attempts=2, feedback="hidden"),
        limits={"cpus": 2, "memory": "2g"},
        executor={"kind": "ray", "address": "head:6379"},
        history={"url": "postgresql://me:secret@db/runs"},
        out="runs/x",
    )
    spec.save(tmp_path / "spec.yaml")
    assert RunSpec.load(tmp_path / "spec.yaml") == spec
    assert spec.agent.name == "default"  # a model without --agent: the tool agent
    recipe = spec.recipe()  # what a manifest stores: no password
    assert "secret" not in json.dumps(recipe) and "pw@" not in json.dumps(recipe)
    assert RunSpec.of(recipe).settings == spec.settings
    (tmp_path / "bad.yaml").write_text("suite: {paths: [x]}\nagent: {name: gold}\nsettings: {workers: 0}\n")
    with pytest.raises(RunSpecError, match=r"settings\.workers"):
        RunSpec.load(tmp_path / "bad.yaml")
    with pytest.raises(RunSpecError, match="typo"):
        RunSpec.of({"suite": {"paths": ["x"]}, "agent": {"name": "gold"}, "typo": 1})


def test_redo_is_checked_and_planned_once_without_creating_the_folder(tiny_task, tmp_path):
    spec = _spec(tiny_task, tmp_path / "run")
    with pytest.raises(UserError, match="--redo names task.*nope") as caught:
        prepare(spec, redo=["nope"])
    assert "tiny-001" in caught.value.hint
    launch = prepare(spec, redo=["tiny-001"])
    assert [(t.id, rep) for t, rep in launch.pending()] == [("tiny-001", 0)]
    assert not (tmp_path / "run").exists()  # planning writes nothing


@pytest.mark.docker
def test_start_from_python_then_the_cli_resumes_the_same_run(tiny_task, tmp_path):
    out = tmp_path / "run"
    assert start(_spec(tiny_task, out)) == out
    assert [(r.outcome, r.final) for r in read_results(out / "results.jsonl")] == [("resolved", True)]
    info = RunFolder(out).info()  # the manifest stores the spec verbatim, and it round-trips
    assert info.schema_version == 2 and RunSpec.of(info.recipe) == _spec(tiny_task, out)
    # the command line with the same flags is the same recipe: it resumes, nothing is redone
    again = CliRunner().invoke(
        main, ["run", str(tiny_task["dir"]), "--agent", "gold", "--no-history", "--out", str(out)]
    )
    assert again.exit_code == 0 and "0 to run, 1 already done" in again.output, again.output
    # and --redo is planned by the runner, the same way from Python
    start(_spec(tiny_task, out), redo=["tiny-001"])
    assert len(read_results(out / "results.jsonl")) == 2


@pytest.mark.docker
def test_the_cli_builds_the_spec_python_would(tiny_task, tmp_path):
    out = tmp_path / "cli"
    flags = ["--agent", "gold", "--no-history", "--attempts", "2", "--memory", "1g", "--config", "mine"]
    done = CliRunner().invoke(main, ["run", str(tiny_task["dir"]), *flags, "--out", str(out)])
    assert done.exit_code == 0, done.output
    expected = _spec(tiny_task, out, attempts=2, label="mine").model_copy(update={"limits": LimitsSpec(memory="1g")})
    assert RunSpec.of(RunFolder(out).info().recipe) == expected


@pytest.mark.docker
def test_the_api_docs_snippet_starts_resumes_and_reads_a_run(tmp_path, monkeypatch, capsys):
    """docs/api.md's "Starting, resuming and reading" code, run as written (its run folder and YAML
    file moved under tmp_path); its own asserts check the recipe round trip."""
    from support import ROOT

    doc = (ROOT / "docs" / "api.md").read_text()
    section = doc.split("## Starting, resuming and reading a run from Python", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    out, yaml_file = tmp_path / "from-python", tmp_path / "from-python.yaml"
    code = code.replace('"runs/from-python"', repr(str(out))).replace('"from-python.yaml"', repr(str(yaml_file)))
    monkeypatch.chdir(ROOT)  # the snippet names the demo suite as from a checkout
    exec(compile(code, "docs/api.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["['inikit-001']", "resolved 1.0"]
    rows = read_results(out / "results.jsonl")
    assert [(r.task_id, r.outcome) for r in rows] == [("inikit-001", "resolved")]  # the second start redid nothing
    assert json.loads((out / "manifest.json").read_text())["recipe"]["out"] == str(out)


@pytest.mark.docker
def test_the_cli_python_and_a_ray_node_build_the_same_spec(tiny_task, tmp_path, monkeypatch):
    """The three ways of starting a run build one RunSpec: the command line's (the recipe its
    manifest stores), `prepare(spec)`'s from Python, and the one a Ray node rebuilds from what the
    driver shipped (the object store in memory here; tests/test_ray.py runs a real cluster)."""
    import sys
    import types

    from harness.run import Runner
    from harness.run.executors.ray import _Shipper, unit_payloads
    from harness.run.executors.ray_node import rebuild_runner, rebuild_spec

    out = tmp_path / "cli"
    flags = ["--agent", "gold", "--no-history", "--attempts", "2", "--memory", "1g", "--config", "mine"]
    done = CliRunner().invoke(main, ["run", str(tiny_task["dir"]), *flags, "--out", str(out)])
    assert done.exit_code == 0, done.output
    from_cli = RunSpec.of(RunFolder(out).info().recipe)
    python = _spec(tiny_task, out, attempts=2, label="mine").model_copy(update={"limits": LimitsSpec(memory="1g")})
    launch = prepare(python)
    assert launch.spec == from_cli
    store: dict = {}
    monkeypatch.setitem(
        sys.modules, "ray", types.SimpleNamespace(put=lambda d: store.setdefault(id(d), d), get=lambda r: r)
    )
    monkeypatch.setenv("WHOLELOOP_CACHE", str(tmp_path / "node-cache"))
    runner = Runner(launch.tasks, launch.agent, launch.options, spec=launch.spec)
    units = [(launch.tasks[0], 0)]
    [payload] = unit_payloads(runner.view, units, _Shipper(sys.modules["ray"], 2**20))
    assert rebuild_spec(payload) == from_cli
    _, on_node = rebuild_runner(payload, tmp_path / "node")
    assert on_node.options.attempts == 2 and on_node.options.limits == LimitsSpec(memory="1g")
    assert on_node.label == runner.label == "mine" and on_node.agent.spec == from_cli.agent
