"""Shared installs (issue 23, item 5): tasks whose dependency files (a lock file and the parts of
package.json an install reads) are the same share one dependencies image, so the package manager
installs once per distinct lock file, not once per task."""

from __future__ import annotations

import json
import subprocess
import uuid

import pytest
from support import git, write

from harness.run.images import dependency_inputs
from sandbox import cached_snapshot
from sandbox.docker import EnvSpec, env_image, task_image
from sandbox.docker.images import deps_image_tag


def test_package_json_keeps_only_what_an_install_reads(tmp_path):
    """A release commit bumps `version` and edits `scripts`: the install's input must not change."""
    (tmp_path / "package.json").write_text(
        json.dumps({"name": "x", "version": "1.0.1", "scripts": {"prepare": "unbuild"}, "devDependencies": {"a": "1"}})
    )
    (tmp_path / "pnpm-lock.yaml").write_text("lockfileVersion: '9.0'\n")
    got = dict(dependency_inputs(tmp_path, ["package.json", "pnpm-lock.yaml", ".npmrc"]))
    assert json.loads(got["package.json"]) == {"devDependencies": {"a": "1"}}
    assert got["pnpm-lock.yaml"] == b"lockfileVersion: '9.0'\n"
    assert ".npmrc" not in got  # a file the commit does not have is left out


@pytest.mark.docker
def test_tasks_with_the_same_lock_file_install_once(tmp_path, monkeypatch):
    monkeypatch.setenv("WHOLELOOP_CACHE", str(tmp_path / "cache"))
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commits = []
    for n, lock in enumerate(["a==1\n", "a==1\n", "a==2\n"]):  # two fixes on one lock file, then an upgrade
        write(repo, {"src.txt": f"version {n}\n", "deps.lock": lock})
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"c{n}")
        commits.append(git(repo, "rev-parse", "HEAD").strip())
    marker = uuid.uuid4().hex[:8]  # a new environment every time: nothing cached from an earlier run
    env = env_image(EnvSpec(setup=(f"echo {marker}",), network=False))
    install = (f"echo INSTALLING-{marker} && cp deps.lock installed.txt",)
    lines: list[str] = []
    tags = []
    for commit in commits:
        snapshot = cached_snapshot(str(repo), commit)
        deps = dependency_inputs(snapshot.path, ["deps.lock"])
        built = task_image(env, snapshot, install, False, log=lines.append, deps=deps)
        tags += [built.tag, deps_image_tag(env, deps, install, False)]
        shown = subprocess.run(
            ["docker", "run", "--rm", built.id, "cat", "src.txt", "installed.txt"], capture_output=True, text=True
        )
        assert shown.stdout == f"version {commits.index(commit)}\n" + ("a==2\n" if commit == commits[2] else "a==1\n")
    installs = [line for line in lines if line.strip() == f"INSTALLING-{marker}"]
    assert len(installs) == 2, lines  # once for a==1 (two tasks), once for a==2
    subprocess.run(["docker", "rmi", *set(tags)], capture_output=True)
    subprocess.run(["docker", "rmi", env.tag], capture_output=True)


def test_the_check_says_how_many_installs_ran():
    """unjs/defu's 5 tasks on 3 lock files: 3 installs, not 5 (the check's closing line says so)."""
    from harness.authoring.environment import describe_builds, environment_builds

    checked = [
        ("defu", "wholeloop-env:a", ["wholeloop-env:a", "wholeloop-deps:1", "wholeloop-task:1"]),
        ("defu", "wholeloop-env:a", ["wholeloop-task:2"]),
        ("defu", "wholeloop-env:b", ["wholeloop-deps:2", "wholeloop-task:3"]),
        ("defu", "wholeloop-env:b", ["wholeloop-deps:3", "wholeloop-task:4"]),
        ("defu", "wholeloop-env:b", ["wholeloop-task:5"]),
    ]
    assert describe_builds(environment_builds(checked)) == [
        "defu: 5 task(s) checked on 2 environment image(s) (1 built now, 1 existed); "
        "3 dependency install(s) run, each shared by the tasks of one lock file"
    ]
