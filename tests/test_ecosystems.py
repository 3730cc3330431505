"""Detection: a repository with go.mod, Cargo.toml or package.json and no wholeloop.yaml is mined
with its own parser and environment; an unrecognisable one is refused naming what was found, with a
template to write. The polyglot demo repositories (repos/*.bundle) are mined with no configuration."""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from support import ROOT, git, write

from harness.authoring.ecosystems import ToolchainTooOld, UnsupportedRepository, complete, detect
from harness.authoring.environment import RepoConfig
from harness.authoring.gitrepo import GitRepo
from harness.authoring.mine import MineOptions, list_candidates
from sandbox import ImageBuildError
from sandbox.docker import EnvSpec, env_image


def wholeloop(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, cwd=ROOT)


def make_repo(path: Path, *commits: dict[str, str]) -> GitRepo:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for n, files in enumerate(commits):
        write(path, files)
        git(path, "add", "-A")
        git(path, "commit", "-qm", f"commit {n}")
    return GitRepo.open(path)


@pytest.mark.parametrize(
    ("name", "parser", "install", "wants"),
    [
        ("verkit", "go", "go build ./...", {"CGO_ENABLED": "0", "GOTOOLCHAIN": "local", "GOPROXY": "off"}),
        ("timespan", "vitest", "npm ci", {"NPM_CONFIG_UPDATE_NOTIFIER": "false"}),
        ("linefold", "cargo", "cargo test --offline --locked --no-run", {"CARGO_NET_OFFLINE": "true"}),
    ],
)
def test_a_polyglot_demo_repository_is_mined_with_no_configuration(tmp_path, name, parser, install, wants):
    """Before detection, verkit's history gave "no candidate commit (7 no test change...)": its
    tests are *_test.go, which pytest's rules do not call tests."""
    repo = tmp_path / name
    subprocess.run(["git", "clone", "-q", str(ROOT / "repos" / f"{name}.bundle"), str(repo)], check=True)
    listed = list_candidates(repo, MineOptions())
    assert listed.parameters["parser"] == parser
    kept = [j for j in listed.judged if j.candidate]
    assert len(kept) >= 2, [j.skipped for j in listed.judged]
    git_repo = GitRepo.open(repo)
    for j in kept:  # what each candidate's environment gets (mining it end to end: test_polyglot_e2e.py)
        cfg, why = complete(RepoConfig(), git_repo, j.candidate.parent, parser)
        assert (
            why
            == f"{detect(git_repo, j.candidate.parent).marker} (detected: {'go' if parser == 'go' else 'rust' if parser == 'cargo' else 'javascript'})"
        )
        assert cfg.install and install in cfg.install[0]
        assert wants.items() <= cfg.env.items()


def test_the_cli_mines_a_go_module_without_parser_or_config(tmp_path):
    repo = tmp_path / "verkit"
    subprocess.run(["git", "clone", "-q", str(ROOT / "repos" / "verkit.bundle"), str(repo)], check=True)
    done = wholeloop("mine", str(repo), "--list")
    assert done.returncode == 0, done.stderr
    assert "verkit: 7 candidate(s) in 8 commit(s)" in done.stdout


def test_a_repository_with_nothing_recognisable_is_refused_with_a_template(tmp_path):
    make_repo(tmp_path / "notes", {"notes.txt": "a\n"}, {"notes.txt": "b\n", "more.md": "c\n"})
    out = tmp_path / "out"
    done = wholeloop("mine", str(tmp_path / "notes"), "--out", str(out), "--no-check")
    assert done.returncode == 2, done.stderr
    assert "no language recognised" in done.stderr and "found more.md, notes.txt" in done.stderr
    assert "test_command:" in done.stderr and "parser:" in done.stderr and "go, jest" in done.stderr
    assert not out.exists()


def test_a_package_json_without_a_known_runner_names_its_test_script(tmp_path):
    repo = make_repo(tmp_path / "js", {"package.json": '{"scripts": {"test": "node --test"}}', "a.test.js": "x\n"})
    with pytest.raises(UnsupportedRepository, match="'node --test'"):
        detect(repo, repo.resolve("HEAD"))


def test_a_test_script_runner_no_dependency_provides_is_refused_at_detection(tmp_path):
    # zod's npm tarball: `"test": "pnpm vitest run"`, no devDependencies (they live in the monorepo's
    # root): nothing would install Vitest, and the check could only quarantine "no vitest JSON report"
    pkg = '{"scripts": {"test": "pnpm vitest run"}, "dependencies": {}}'
    repo = make_repo(tmp_path / "js", {"package.json": pkg, "package-lock.json": "{}", "a.test.ts": "x\n"})
    head = repo.resolve("HEAD")
    assert detect(repo, head).parser == "vitest"
    with pytest.raises(
        UnsupportedRepository, match="runs vitest, but no dependency of package.json provides it"
    ) as exc:
        complete(RepoConfig(), repo, head, "vitest")
    assert "install:" in exc.value.hint
    given = complete(RepoConfig(setup=["npm install -g vitest@4"]), repo, head, "vitest")[0]
    assert given.install == ["npm ci"]
    peer = make_repo(
        tmp_path / "peer", {"package.json": '{"scripts": {"test": "vitest"}, "peerDependencies": {"vitest": "4"}}'}
    )
    assert complete(RepoConfig(), peer, peer.resolve("HEAD"), "vitest")[0].install == ["npm install"]


def test_go_sources_without_go_mod_are_refused_naming_it(tmp_path):
    # Debian's golang-github-pkg-errors-dev: a GOPATH-era package (no go.mod), said to have "no
    # language recognised" although its root is all .go files
    files = {"errors.go": "package errors\n", "errors_test.go": "package errors\n"}
    repo = make_repo(tmp_path / "errors", files)
    with pytest.raises(UnsupportedRepository, match=r"Go sources \(errors.go, errors_test.go\) but no go.mod") as exc:
        detect(repo, repo.resolve("HEAD"))
    assert "go mod init" in str(exc.value)


def test_python_packaging_wins_over_a_package_json(tmp_path):
    repo = make_repo(tmp_path / "py", {"pyproject.toml": "[project]\nname='p'\n", "package.json": "{}"})
    assert detect(repo, repo.resolve("HEAD")).parser == "pytest"


GO_MOD = "module example.com/m\n\ngo {version}\n"


def test_go_vendor_and_a_too_new_go_line(tmp_path):
    repo = make_repo(
        tmp_path / "m", {"go.mod": GO_MOD.format(version="1.18"), "vendor/modules.txt": "# x\n", "m.go": "package m\n"}
    )
    cfg, why = complete(RepoConfig(), repo, repo.resolve("HEAD"), "go")
    assert why == "go.mod (detected: go)"
    assert cfg.env["GOFLAGS"] == "-mod=vendor" and cfg.env["CGO_ENABLED"] == "0"
    assert cfg.setup and "golang-go" in cfg.setup[0]
    # vet findings are not test results (test_polyglot_e2e.py: Debian's pflag): no vet gate at install
    assert cfg.install == ["go build ./... && go test -vet=off -count=1 -run '^$' ./... >/dev/null"]
    assert cfg.visible_test_command == "go test -vet=off ./..."

    # newer than bookworm's 1.19: the oldest of bookworm-backports' Go that is new enough
    newer = make_repo(tmp_path / "b", {"go.mod": GO_MOD.format(version="1.22.3"), "b.go": "package b\n"})
    cfg, _ = complete(RepoConfig(), newer, newer.resolve("HEAD"), "go")
    assert cfg.setup is not None and "bookworm-backports" in cfg.setup[0] and "golang-1.22-go" in cfg.setup[0]
    assert "ln -sf /usr/lib/go-1.22/bin/go /usr/local/bin/go" in cfg.setup[0]
    new = make_repo(tmp_path / "n", {"go.mod": GO_MOD.format(version="1.24"), "n.go": "package n\n"})
    with pytest.raises(ToolchainTooOld, match="go.mod asks for Go 1.24; the newest Go of Debian bookworm.* is 1.23"):
        complete(RepoConfig(), new, new.resolve("HEAD"), "go")
    # a wholeloop.yaml that brings its own toolchain is trusted, its keys and env win
    own = RepoConfig(image="golang:1.22", setup=[], env={"GOPROXY": "direct"})
    cfg, _ = complete(own, new, new.resolve("HEAD"), "go")
    assert cfg.setup == [] and cfg.image == "golang:1.22" and cfg.env["GOPROXY"] == "direct"
    assert "CGO_ENABLED" not in cfg.env and "GOFLAGS" not in cfg.env


def test_a_parser_given_for_another_ecosystem_adds_nothing(tmp_path):
    repo = make_repo(tmp_path / "m", {"go.mod": GO_MOD.format(version="1.19"), "m.go": "package m\n"})
    cfg = RepoConfig()
    assert complete(cfg, repo, repo.resolve("HEAD"), "pytest") == (cfg, None)


VITEST = '"devDependencies": {"vitest": "2.1.9"}'


@pytest.mark.parametrize(
    ("files", "setup", "install"),
    [
        ({"package-lock.json": "{}"}, None, "npm ci"),
        ({}, None, "npm install"),
        (
            {"pnpm-lock.yaml": "lockfileVersion: '9.0'\n"},
            "npm install -g pnpm@latest",
            "pnpm install --frozen-lockfile",
        ),
        ({"yarn.lock": "# yarn lockfile v1\n"}, "npm install -g yarn@1", "yarn install --frozen-lockfile"),
        ({".nvmrc": "v22.11.0\n", "package-lock.json": "{}"}, "npm install -g node@22", "npm ci"),
        ({".nvmrc": "18\n", "package-lock.json": "{}"}, None, "npm ci"),
    ],
)
def test_the_javascript_package_manager_and_node_version_come_from_the_repository(tmp_path, files, setup, install):
    repo = make_repo(tmp_path / "js", {"package.json": "{" + VITEST + "}", "a.test.ts": "x\n", **files})
    cfg, _ = complete(RepoConfig(), repo, repo.resolve("HEAD"), "vitest")
    assert cfg.install == [install]
    assert cfg.setup is not None and "nodejs npm" in cfg.setup[0]
    assert cfg.setup[1:] == ([setup] if setup else [])


def test_package_manager_and_engines_in_package_json_win(tmp_path):
    pkg = '{"packageManager": "pnpm@10.4.1+sha512.abc", "engines": {"node": ">=20"}, ' + VITEST + "}"
    repo = make_repo(tmp_path / "js", {"package.json": pkg, "package-lock.json": "{}", ".nvmrc": "22\n"})
    cfg, _ = complete(RepoConfig(), repo, repo.resolve("HEAD"), "vitest")
    assert cfg.setup is not None and cfg.setup[1] == "npm install -g node@20 pnpm@10.4.1"
    assert cfg.install == ["pnpm install --frozen-lockfile"]


def test_yarn_berry_is_refused_naming_it_unless_install_is_given(tmp_path):
    pkg = '{"packageManager": "yarn@4.5.0", ' + VITEST + "}"
    repo = make_repo(tmp_path / "js", {"package.json": pkg, "yarn.lock": "__metadata:\n"})
    with pytest.raises(UnsupportedRepository, match="yarn berry"):
        complete(RepoConfig(), repo, repo.resolve("HEAD"), "vitest")
    cfg, _ = complete(RepoConfig(install=["corepack yarn install --immutable"]), repo, repo.resolve("HEAD"), "vitest")
    assert cfg.install == ["corepack yarn install --immutable"]


PNPM_LOCK_V9 = """lockfileVersion: '9.0'
packages:
  vitest@4.1.2:
    resolution: {integrity: sha512-xjR1}
    engines: {node: ^20.19.0 || >=22.12.0}
  cac@6.7.14:
    resolution: {integrity: sha512-b6Il}
    engines: {node: '>=8'}
"""
PNPM_LOCK_V5 = """lockfileVersion: 5.4
packages:
  /vitest/0.34.6:
    resolution: {integrity: sha512-+5Cm}
    engines:
      node: '>=v14.18.0'
    hasBin: true
"""
NPM_LOCK = """{"lockfileVersion": 3, "packages": {
  "node_modules/jest": {"version": "30.0.0", "engines": {
    "node": "^18.14.0 || ^20.0.0 || ^22.0.0 || >=24.0.0"}},
  "node_modules/vite": {"version": "7.0.0", "engines": {"node": "^20.19.0 || >=22.12.0"}}}}
"""


@pytest.mark.parametrize(
    ("files", "node"),
    [
        # unjs/defu at 3942bfbbca: no engines, no .nvmrc, but Vitest 4 in the lockfile needs Node 20
        ({"pnpm-lock.yaml": PNPM_LOCK_V9}, "node@20"),
        ({"pnpm-lock.yaml": PNPM_LOCK_V5}, None),
        ({"package-lock.json": NPM_LOCK}, "node@20"),
        ({"package-lock.json": NPM_LOCK, ".nvmrc": "22\n"}, "node@22"),
    ],
)
def test_the_node_major_is_the_lowest_every_locked_package_accepts(tmp_path, files, node):
    """Before, only engines/.nvmrc/.node-version counted: defu (Vitest 4) got Debian's Node 18, on
    which Vitest 4 does not start."""
    repo = make_repo(tmp_path / "js", {"package.json": "{" + VITEST + "}", "a.test.ts": "x\n", **files})
    cfg, _ = complete(RepoConfig(), repo, repo.resolve("HEAD"), "vitest")
    assert cfg.setup is not None
    installed = " ".join(cfg.setup[1:])
    assert (node in installed) if node else ("node@" not in installed), cfg.setup


@pytest.mark.parametrize(
    "pkg",
    [
        '{"volta": {"node": "20.11.1"}, ' + VITEST + "}",
        '{"devEngines": {"runtime": {"name": "node", "version": ">=20"}}, ' + VITEST + "}",
    ],
)
def test_volta_and_dev_engines_name_the_node_version(tmp_path, pkg):
    repo = make_repo(tmp_path / "js", {"package.json": pkg, "package-lock.json": "{}"})
    cfg, _ = complete(RepoConfig(), repo, repo.resolve("HEAD"), "vitest")
    assert cfg.setup is not None and cfg.setup[1:] == ["npm install -g node@20"]


@pytest.mark.parametrize(
    ("files", "pkg_extra", "shared"),
    [
        ({"pnpm-lock.yaml": PNPM_LOCK_V9}, "", ["package.json", "pnpm-lock.yaml"]),
        ({"pnpm-lock.yaml": PNPM_LOCK_V9, ".npmrc": "x=1\n"}, "", ["package.json", "pnpm-lock.yaml", ".npmrc"]),
        (
            {"pnpm-lock.yaml": PNPM_LOCK_V9, "pnpm-workspace.yaml": "onlyBuiltDependencies: [esbuild]\n"},
            "",
            ["package.json", "pnpm-lock.yaml", "pnpm-workspace.yaml"],
        ),
        ({"package-lock.json": NPM_LOCK}, "", ["package.json", "package-lock.json"]),
        ({"yarn.lock": "# yarn lockfile v1\n"}, "", ["package.json", "yarn.lock"]),
        # what an install of these files alone cannot do: workspaces, a pnpmfile, no lock file
        ({"pnpm-lock.yaml": PNPM_LOCK_V9, "pnpm-workspace.yaml": "packages: [pkgs/*]\n"}, "", None),
        ({"pnpm-lock.yaml": PNPM_LOCK_V9, ".pnpmfile.cjs": "module.exports = {}\n"}, "", None),
        ({"package-lock.json": NPM_LOCK}, '"workspaces": ["a"], ', None),
        ({}, "", None),
    ],
)
def test_a_locked_install_is_shared_by_the_tasks_of_one_lock_file(tmp_path, files, pkg_extra, shared):
    """Before, every task image of the pnpm repository ran `pnpm install` (332 of the check's 441 s)."""
    repo = make_repo(tmp_path / "js", {"package.json": "{" + pkg_extra + VITEST + "}", **files})
    cfg, _ = complete(RepoConfig(), repo, repo.resolve("HEAD"), "vitest")
    assert cfg.dependency_files == shared
    # an install of its own is run with the whole repository, as given
    cfg, _ = complete(RepoConfig(install=["pnpm i && pnpm build"]), repo, repo.resolve("HEAD"), "vitest")
    assert cfg.dependency_files is None


GO_MOD_REQUIRES = """module example.com/m

go 1.18

require github.com/google/uuid v1.6.0

require (
	golang.org/x/text v0.14.0 // indirect
	example.com/m/sub v0.0.0 // replaced below: a directory of this repository
)

replace example.com/m/sub => ./sub
"""


def test_a_go_module_needing_modules_no_proxy_serves_is_refused_naming_them_unless_vendored(tmp_path):
    """Before, it was mined and every task's install failed in the image (GOPROXY=off) with go's
    own message about a missing module, one task at a time."""
    repo = make_repo(tmp_path / "m", {"go.mod": GO_MOD_REQUIRES, "m.go": "package m\n"})
    with pytest.raises(UnsupportedRepository, match="github.com/google/uuid, golang.org/x/text") as caught:
        complete(RepoConfig(), repo, repo.resolve("HEAD"), "go")
    assert "example.com/m/sub" not in str(caught.value) and "vendor" in str(caught.value)
    # the hint says what to write for a Go module (a proxy in env), not the template for a repository
    # whose language was not recognised (found mining mattn/go-isatty: "setup: ... TOOLCHAIN", "PARSER")
    assert "GOPROXY" in caught.value.hint and "TOOLCHAIN" not in caught.value.hint
    vendored = make_repo(
        tmp_path / "v", {"go.mod": GO_MOD_REQUIRES, "m.go": "package m\n", "vendor/modules.txt": "# x\n"}
    )
    cfg, _ = complete(RepoConfig(), vendored, vendored.resolve("HEAD"), "go")
    assert cfg.env["GOFLAGS"] == "-mod=vendor"
    # a wholeloop.yaml that says how to get them (a proxy in env, its own setup) is trusted
    cfg, _ = complete(RepoConfig(env={"GOPROXY": "https://proxy.example"}), repo, repo.resolve("HEAD"), "go")
    assert cfg.env["GOPROXY"] == "https://proxy.example"


CARGO_LOCK = """version = 3

[[package]]
name = "itoa"
version = "1.0.11"
source = "registry+https://github.com/rust-lang/crates.io-index"

[[package]]
name = "mine"
version = "0.1.0"
dependencies = ["itoa", "serde"]

[[package]]
name = "serde"
version = "1.0.200"
source = "registry+https://github.com/rust-lang/crates.io-index"
"""


def test_a_crate_with_registry_dependencies_is_refused_naming_them_unless_vendored(tmp_path):
    """Before, it was mined and every task's install failed offline (`cargo test --offline`) with
    cargo's "no matching package" message, one task at a time."""
    crate = {"Cargo.toml": '[package]\nname = "mine"\nversion = "0.1.0"\n', "src/lib.rs": "\n"}
    repo = make_repo(tmp_path / "c", {**crate, "Cargo.lock": CARGO_LOCK})
    with pytest.raises(UnsupportedRepository, match=r"itoa 1\.0\.11, serde 1\.0\.200.*vendor"):
        complete(RepoConfig(), repo, repo.resolve("HEAD"), "cargo")
    vendored = make_repo(
        tmp_path / "v",
        {
            **crate,
            "Cargo.lock": CARGO_LOCK,
            ".cargo/config.toml": '[source.crates-io]\nreplace-with = "vendored-sources"\n\n'
            '[source.vendored-sources]\ndirectory = "vendor"\n',
            "vendor/itoa/Cargo.toml": "x\n",
        },
    )
    cfg, _ = complete(RepoConfig(), vendored, vendored.resolve("HEAD"), "cargo")
    assert cfg.install == ["cargo test --offline --locked --no-run"]
    # no dependency at all: nothing to vendor; Debian's newer cargo (cargo-web) builds it
    alone = make_repo(tmp_path / "a", crate)
    cfg, _ = complete(RepoConfig(), alone, alone.resolve("HEAD"), "cargo")
    assert cfg.setup is not None and "cargo-web" in cfg.setup[0]


def test_a_crate_without_a_lock_file_gets_debian_crates_for_what_cargo_toml_needs(tmp_path):
    """Debian's librust-semver-dev (no Cargo.lock, an optional serde) was refused "Cargo.toml needs
    serde from a registry or git": with no lock file to honour, the crates Cargo.toml names (optional
    ones and dev-dependencies under a target table too: cargo resolves them all) come from Debian's
    packaged crates, a directory source cargo reads offline. A path dependency needs nothing."""
    toml = (
        '[package]\nname = "itoa"\nversion = "1.0.18"\n\n[dependencies]\nno-panic = { version = "0.1", optional = true }\n'
        'local = { path = "local" }\nmy_serde = { package = "serde", version = "1" }\n\n'
        "[target.'cfg(not(miri))'.dev-dependencies]\ncriterion = { version = \"0.8\", default-features = false }\n"
    )
    repo = make_repo(tmp_path / "c", {"Cargo.toml": toml, "src/lib.rs": "\n"})
    cfg, _ = complete(RepoConfig(), repo, repo.resolve("HEAD"), "cargo")
    assert cfg.setup is not None and "rustc-web cargo-web" in cfg.setup[0]
    assert (
        "install -y --no-install-recommends librust-criterion-dev librust-no-panic-dev librust-serde-dev &&"
        in cfg.setup[1]
    )
    assert "replace-with = 'debian'" in cfg.setup[1] and "directory = '/usr/share/cargo/registry'" in cfg.setup[1]
    assert "local" not in cfg.setup[1]
    assert cfg.install == ["cargo test --offline --no-run"]


@pytest.mark.docker
def test_crates_debian_does_not_package_are_named_with_what_to_do(tmp_path, monkeypatch):
    """Debian's librust-hex-dev names dev-dependencies bookworm (and its backports) do not package,
    faster-hex and rustc-hex: its environment failed on apt's "Unable to locate package
    librust-rustc-hex-dev", one of them, saying nothing of what to do. The setup now names every
    crate it cannot get before installing any, and the way out."""
    monkeypatch.setenv("WHOLELOOP_CACHE", str(tmp_path / "cache"))
    odd = f"no_such_crate_{uuid.uuid4().hex[:8]}"  # a new image every time: nothing cached
    toml = (
        '[package]\nname = "hexish"\nversion = "0.1.0"\n\n[dev-dependencies]\nitoa = "1"\n'
        f'{odd} = "0.5"\nrustc-hex = "2.1"\n'
    )
    repo = make_repo(tmp_path / "c", {"Cargo.toml": toml, "src/lib.rs": "\n"})
    cfg, _ = complete(RepoConfig(), repo, repo.resolve("HEAD"), "cargo")
    assert cfg.setup is not None
    with pytest.raises(ImageBuildError) as caught:  # Debian's crates only: no toolchain to install
        env_image(EnvSpec(setup=(cfg.setup[1],), network=True))
    first = str(caught.value).splitlines()[0]
    missing = re.search(r"packages no crate named (.*?): vendor them \(cargo vendor\) or give", first)
    assert missing and missing.group(1) == f"{odd}, rustc-hex", first  # itoa is packaged
    assert "a setup that provides them" in first[:200], first  # what a quarantine keeps of it
