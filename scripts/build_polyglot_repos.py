#!/usr/bin/env python3
"""Build the Go, TypeScript and Rust demo repositories and their draft task specs (`tasks/polyglot/`).

The sources are kept as `scripts/build_demo_repos.py` keeps the Python ones (`repos/README.md`):
`repos/src/<name>/NN-slug/` overlays with `message.txt`, optional `deleted.txt` and `task.yaml`,
fixed names and dates in `repo.json`, so commit ids never change while the sources do not. A
repository belongs here when its `repo.json` says `"suite": "polyglot"` and names its `language`
(go, typescript or rust); the Python script skips those. Git, the overlay and the bundles are that
script's own functions; what differs is per language (the `LANGUAGES` table): which files are
tests, the environment, the commands, and how a framework's report becomes test ids.

The toolchains are not on the host: everything that runs tests runs in Docker, in images built by
wholeloop's own image tiers (`sandbox.docker`: env = base + CA bundle + setup with the network on,
task = env + snapshot + install), and the tests run in a container with the network off, as
grading does.

    python scripts/build_polyglot_repos.py             # (re)write bundles whose commits changed
    python scripts/build_polyglot_repos.py --tasks     # also regenerate tasks/polyglot (Docker)
    python scripts/build_polyglot_repos.py --check     # exit 1 if bundles or specs are out of date
    python scripts/build_polyglot_repos.py --verify    # every commit's tests pass; every task sound
    python scripts/build_polyglot_repos.py --fixtures  # raw reports into tests/data/parsers (Docker)
    python scripts/build_polyglot_repos.py --materialize verkit 04 /tmp/tree   # tree after 04-*

`--tasks` computes FAIL_TO_PASS and PASS_TO_PASS by running each task's hidden test command at
base + tests, then at base + tests + gold, each in a fresh offline container, and reading the ids
from the framework's own report (formats: the module docstring of `parse_go`, `parse_vitest` and
`parse_cargo`). It refuses a task whose gold patch leaves a test failing, breaks a test that
passed, or has no test that fails without it.
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from fixturelib import sync_files

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_demo_repos as demo  # noqa: E402  (the sibling script: git, overlays, bundles)

from harness.parsers import get_parser  # noqa: E402
from sandbox import REPO_DIR, FileOpError, Limits, make_snapshot  # noqa: E402
from sandbox.docker import BuiltImage, DockerSandbox, EnvSpec, env_image, task_image  # noqa: E402

ROOT = demo.ROOT
TASKS = ROOT / "tasks" / "polyglot"
FIXTURES = ROOT / "tests" / "data" / "parsers"
SUITE = "polyglot"
WORK = "/tmp/wholeloop-grade"  # where grading keeps its files in the grading container
REPORTS = f"{WORK}/reports"  # structured reports are written here, outside the repository
RUN_ID = "polyglot-build"
OUTPUT_BYTES = 20_000_000
BuildError = demo.BuildError
# The order in which harness.tasks.Task.ca_bundle() looks for a CA bundle to trust.
SYSTEM_CA_BUNDLES = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"]

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


def _apt(*packages: str) -> str:
    return f"apt-get update && apt-get install -y --no-install-recommends {' '.join(packages)} && rm -rf /var/lib/apt/lists/*"


# ------------------------------------------------------------------------------------ reports


def parse_go(stdout: str, stderr: str, report: str | None) -> dict[str, str]:
    """`go test -json` (test2json) events on stdout -> `<import path>::<Test>[/<subtest>...]`.

    The id is the event's Package, "::", and its Test exactly as go reports it (subtest names
    with spaces already turned into underscores by go). Parents and subtests are both ids (a
    parent fails when one of its subtests does). A package that does not build has no test
    events: its tests are simply absent (go 1.19 prints the compiler errors on stderr and a
    package-level `fail` event whose Output says `[build failed]`).
    """
    statuses: dict[str, str] = {}
    actions = {"pass": PASSED, "fail": FAILED, "skip": SKIPPED}
    for line in stdout.splitlines():
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("Test") and event.get("Action") in actions:
            statuses[f"{event['Package']}::{event['Test']}"] = actions[event["Action"]]
    return statuses


def parse_vitest(stdout: str, stderr: str, report: str | None) -> dict[str, str]:
    """Vitest's (and Jest's) JSON report -> `<file relative to the repository>::<titles joined by " > ">`.

    The file is `testResults[].name` (absolute) made relative to the repository root; the titles
    are `ancestorTitles` (the describe blocks) then `title`. A file that fails to load (syntax
    error, failing import) has no assertion results: its tests are absent.
    """
    if not report:
        return {}
    data = json.loads(report)
    statuses: dict[str, str] = {}
    for file in data.get("testResults", []):
        path = posixpath.relpath(file["name"], REPO_DIR)
        for result in file.get("assertionResults", []):
            test_id = f"{path}::{' > '.join([*result['ancestorTitles'], result['title']])}"
            statuses[test_id] = {"passed": PASSED, "failed": FAILED}.get(result["status"], SKIPPED)
    return statuses


_RUNNING = re.compile(r"^\s*Running (?:unittests )?(\S+) \(")
_DOCTESTS = re.compile(r"^\s*Doc-tests (\S+)\s*$")
_TEST_LINE = re.compile(r"^test (.+) \.\.\. (ok|FAILED|ignored)$")


def parse_cargo(stdout: str, stderr: str, report: str | None) -> dict[str, str]:
    """`cargo test` text (stderr merged into stdout) -> `<target>::<test path>`.

    The target is the source path of the test binary from cargo's `Running` line (`src/lib.rs`
    for unit tests, `tests/wrap.rs` for an integration test, `src/main.rs`...), or
    `doc:<crate>` after `Doc-tests <crate>`; the test path is libtest's name
    (`wrap::tests::words_split`, `src/lib.rs - (line 3)` for a doc test) without the
    ` - should panic` that libtest appends. `Running` lines go to stderr: the command must merge
    it into stdout (`2>&1`) or the tests cannot be attributed to a target.
    """
    statuses: dict[str, str] = {}
    target = ""
    for line in stdout.splitlines():
        if match := _RUNNING.match(line):
            target = match.group(1)
        elif match := _DOCTESTS.match(line):
            target = f"doc:{match.group(1)}"
        elif (match := _TEST_LINE.match(line)) and target:
            name = match.group(1).removesuffix(" - should panic")
            statuses[f"{target}::{name}"] = {"ok": PASSED, "FAILED": FAILED}.get(match.group(2), SKIPPED)
    return statuses


# ------------------------------------------------------------------------------------ languages


@dataclass(frozen=True)
class Language:
    name: str
    parser: str  # hidden_tests.parser in the spec (a name in harness.parsers.PARSERS)
    setup: tuple[str, ...]
    env: dict[str, str]
    install: tuple[str, ...]
    test_command: str  # the visible command the agent may run
    hidden_command: str  # machine-readable per-test report
    report_file: str | None  # where the hidden command writes its report (None: stdout)
    is_test_file: Callable[[str], bool]
    parse: Callable[[str, str, str | None], dict[str, str]]
    # Which reported ids may go into FAIL_TO_PASS / PASS_TO_PASS (all of them unless said)
    listed: Callable[[str], bool] = lambda test_id: True


def _go_test_file(path: str) -> bool:
    parts = path.split("/")
    return parts[-1].endswith("_test.go") or "testdata" in parts[:-1]


def _ts_test_file(path: str) -> bool:
    parts = path.split("/")
    return bool(re.search(r"\.(test|spec)\.[cm]?[jt]sx?$", parts[-1])) or "__tests__" in parts[:-1]


def _rust_test_file(path: str) -> bool:
    return path.startswith("tests/")


VITEST_REPORT = get_parser("vitest").results_file  # where the vitest parser reads the report

LANGUAGES: dict[str, Language] = {
    "go": Language(
        name="go",
        parser="go",
        setup=(_apt("golang-go"),),
        # No module proxy is reachable and none is needed (standard library only): fail fast
        # instead of trying the network. The build cache is $HOME/.cache/go-build (/root).
        env={"GOPROXY": "off", "GOSUMDB": "off", "GOTOOLCHAIN": "local"},
        # Compile every package and test binary (and vet them, as go test does) into the build
        # cache at image-build time, running no test: grading then only links and runs.
        install=("go build ./... && go vet ./... && go test -count=1 -run '^$' ./... >/dev/null",),
        test_command="go test ./...",
        hidden_command="go test -json -count=1 ./...",
        report_file=None,
        is_test_file=_go_test_file,
        parse=parse_go,
    ),
    "typescript": Language(
        name="typescript",
        parser="vitest",
        setup=(_apt("nodejs", "npm"),),
        # No update check against the registry (there is no network after install). Not CI=true:
        # Vitest's colour detection turns ANSI colours on when CI is set.
        env={"NPM_CONFIG_UPDATE_NOTIFIER": "false"},
        install=("npm ci",),
        test_command="npx vitest run",
        hidden_command=f"npx vitest run --reporter=verbose --reporter=json --outputFile.json={VITEST_REPORT}",
        report_file=VITEST_REPORT,
        is_test_file=_ts_test_file,
        parse=parse_vitest,
    ),
    "rust": Language(
        name="rust",
        parser="cargo",
        setup=(_apt("rustc", "cargo"),),
        env={"CARGO_NET_OFFLINE": "true", "CARGO_TERM_COLOR": "never"},
        # Build the library and every test binary into target/ (ignored by git, and listed in
        # .git/info/exclude by the task image) so grading recompiles only what a patch changes.
        install=("cargo test --offline --locked --no-run",),
        test_command="cargo test --offline",
        # --no-fail-fast: otherwise cargo stops at the first failing test binary and the tests of
        # the later ones are missing; 2>&1: the `Running <target>` lines are on stderr.
        hidden_command="cargo test --offline --no-fail-fast 2>&1",
        report_file=None,
        is_test_file=_rust_test_file,
        parse=parse_cargo,
        # A doc test's name holds its line number ("src/lib.rs - (line 3)"): any edit above it
        # renames it, so a correct patch would "lose" a PASS_TO_PASS test. They still run.
        listed=lambda test_id: not test_id.startswith("doc:"),
    ),
}


def language_of(repo: demo.RepoSource) -> Language:
    meta = json.loads((repo.path / "repo.json").read_text())
    if meta.get("language") not in LANGUAGES:
        raise BuildError(f"{repo.path}/repo.json: language must be one of {sorted(LANGUAGES)}")
    return LANGUAGES[meta["language"]]


def environment_of(lang: Language) -> dict:
    """The `environment` block of a spec for this language."""
    return {"setup": list(lang.setup), "env": dict(lang.env), "install": list(lang.install)}


def env_spec(lang: Language) -> EnvSpec:
    """What wholeloop's Task.env_spec() makes of environment_of(lang) (default base, trusted CA)."""
    candidates = [os.environ.get("WHOLELOOP_CA_BUNDLE"), os.environ.get("SSL_CERT_FILE"), *SYSTEM_CA_BUNDLES]
    ca = next((c for c in candidates if c and Path(c).is_file()), None)
    return EnvSpec(setup=tuple(lang.setup), env=tuple(sorted(lang.env.items())), ca_bundle=ca)


# ------------------------------------------------------------------------------------ docker


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    report: str | None
    seconds: float
    statuses: dict[str, str] = field(default_factory=dict)


class Images:
    """Env and task images through wholeloop's own tiers, built once per input, with timings."""

    def __init__(self, log: Callable[[str], None] = print) -> None:
        self.log = log
        self.timings: dict[str, float] = {}
        self._env: dict[str, BuiltImage] = {}

    def env(self, lang: Language) -> BuiltImage:
        if lang.name not in self._env:
            started = time.monotonic()
            image = env_image(env_spec(lang))
            seconds = time.monotonic() - started
            if not image.cached:
                self.timings[f"env image {lang.name}"] = round(seconds, 1)
            self.log(
                f"  env image {lang.name}: {image.tag} ({'cached' if image.cached else f'built in {seconds:.1f}s'})"
            )
            self._env[lang.name] = image
        return self._env[lang.name]

    def task(self, lang: Language, repo_dir: Path, commit: str, label: str) -> BuiltImage:
        env = self.env(lang)
        with tempfile.TemporaryDirectory(prefix="polyglot-snap-") as tmp:
            snapshot = make_snapshot(str(repo_dir), commit, Path(tmp) / "repo")
            started = time.monotonic()
            image = task_image(env, snapshot, tuple(lang.install), True)
            seconds = time.monotonic() - started
        if not image.cached:
            self.timings[f"task image {label}"] = round(seconds, 1)
        self.log(f"  task image {label}: {image.tag} ({'cached' if image.cached else f'built in {seconds:.1f}s'})")
        return image


def run_tests(
    image: BuiltImage,
    lang: Language,
    *,
    patches: list[str] = (),
    files: dict[str, str] | None = None,
    command: str | None = None,
    report_file: str | None = "default",
    env: dict[str, str] | None = None,
) -> Run:
    """Apply `patches` (git apply) and write `files` in a fresh offline container from `image`,
    run `command` (default: the hidden test command) and read its report file. Only the hidden
    command's output is parsed into `statuses`."""
    hidden = command is None and report_file == "default"
    command = command or lang.hidden_command
    report_file = lang.report_file if report_file == "default" else report_file
    with DockerSandbox.start(image.tag, limits=Limits(network=False), role="grading", run_id=RUN_ID) as sb:
        sb.exec(["mkdir", "-p", WORK, REPORTS], timeout=30)
        for index, patch in enumerate(patches):
            path = f"{WORK}/patch-{index}.diff"
            sb.write_file(path, patch)
            applied = sb.exec(["git", "apply", path], timeout=60)
            if applied.returncode != 0:
                raise BuildError(f"git apply failed in the container: {applied.stderr.strip()}")
        for path, content in (files or {}).items():
            sb.write_file(posixpath.join(REPO_DIR, path), content)
        started = time.monotonic()
        result = sb.exec(command, timeout=900, env=env, output_bytes=OUTPUT_BYTES)
        seconds = time.monotonic() - started
        report = None
        if report_file:
            try:
                report = sb.read_file(report_file).decode()
            except FileOpError:
                report = None
    run = Run(result.returncode, result.stdout, result.stderr, report, round(seconds, 2))
    if hidden:
        run.statuses = lang.parse(run.stdout, run.stderr, run.report)
    return run


# ------------------------------------------------------------------------------------ tasks


def split_fix(repo_dir: Path, commit: demo.CommitSource, lang: Language) -> tuple[str, str]:
    """(test diff, gold diff) of a fix commit against its parent, split by the language's test paths."""
    changed = demo.git(repo_dir, "diff", "--name-only", "--no-renames", commit.parent, commit.sha).split()
    tests = [p for p in changed if lang.is_test_file(p)]
    source = [p for p in changed if not lang.is_test_file(p)]
    if not tests or not source:
        raise BuildError(f"{commit.path}: a fix commit must change tests and source ({changed})")

    def diff(paths: list[str]) -> str:
        return demo.git(
            repo_dir, "diff", "--no-color", "--no-ext-diff", "--no-renames", commit.parent, commit.sha, "--", *paths
        )

    return diff(tests), diff(source)


def measure_task(
    images: Images, lang: Language, repo_dir: Path, commit: demo.CommitSource, test_diff: str, gold_diff: str
) -> tuple[list[str], list[str], dict]:
    """FAIL_TO_PASS and PASS_TO_PASS by running; raises BuildError when the task is unsound."""
    task_id = commit.task["id"]
    reachable = subprocess.run(
        ["git", "merge-base", "--is-ancestor", commit.sha, commit.parent],
        cwd=repo_dir,
        env=demo._git_env(),
        capture_output=True,
    ).returncode
    if reachable != 1:
        raise BuildError(f"{task_id}: the fix {commit.sha} must not be reachable from the base")
    image = images.task(lang, repo_dir, commit.parent, task_id)
    before = run_tests(image, lang, patches=[test_diff])
    after = run_tests(image, lang, patches=[test_diff, gold_diff])
    failing = sorted(t for t, s in after.statuses.items() if s == FAILED)
    if after.code != 0 or failing or not after.statuses:
        raise BuildError(
            f"{task_id}: with the gold patch the hidden tests must all pass (exit {after.code}): {failing}"
        )
    if before.code == 0:
        raise BuildError(f"{task_id}: the hidden test command exits 0 without the gold patch")
    broken = sorted(t for t, s in before.statuses.items() if s == PASSED and after.statuses.get(t) != PASSED)
    if broken:
        raise BuildError(f"{task_id}: the gold patch breaks {broken}")
    listed = {t: s for t, s in after.statuses.items() if lang.listed(t)}
    f2p = sorted(t for t, s in listed.items() if s == PASSED and before.statuses.get(t) != PASSED)
    p2p = sorted(t for t, s in listed.items() if s == PASSED and before.statuses.get(t) == PASSED)
    if not f2p:
        raise BuildError(f"{task_id}: no test fails before the gold patch")
    timing = {
        "tests_before_s": before.seconds,
        "tests_after_s": after.seconds,
        "exit_before": before.code,
        "exit_after": after.code,
    }
    return f2p, p2p, timing


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(
    str, lambda d, v: d.represent_scalar("tag:yaml.org,2002:str", v, style="|" if "\n" in v else None)
)


def render_spec(
    repo: demo.RepoSource, lang: Language, commit: demo.CommitSource, f2p: list[str], p2p: list[str]
) -> str:
    task = commit.task
    metadata = {
        "bug_kind": task["bug_kind"],
        "difficulty": task["difficulty"],
        "repo": repo.name,
        "language": lang.name,
        "fix_commit": commit.sha,
    }
    data = {
        "id": task["id"],
        "repo": f"../../repos/{repo.name}.bundle",
        "base_commit": commit.parent,
        "problem_statement": task["problem_statement"],
        "environment": environment_of(lang),
        "test_command": lang.test_command,
        "hidden_tests": {
            "command": lang.hidden_command,
            "patch_file": f"{task['id']}/test.diff",
            "parser": lang.parser,
        },
        "gold_patch_file": f"{task['id']}/gold.diff",
        "FAIL_TO_PASS": f2p,
        "PASS_TO_PASS": p2p,
        "metadata": metadata,
    }
    header = (
        f"# Generated by scripts/build_polyglot_repos.py --tasks from repos/src/{repo.name}/{commit.slug}/task.yaml;\n"
        "# edit that file (or the commit sources) and regenerate rather than editing this one.\n"
    )
    return header + yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


# ------------------------------------------------------------------------------------ fixtures


@dataclass
class Fixture:
    """One raw output for the parser authors: a task's base (+ tests, + gold), maybe with extra files."""

    name: str  # file stem under tests/data/parsers/<folder>/
    folder: str
    task: str
    patches: tuple[str, ...]  # "test", "gold"
    note: str
    command: str | None = None  # default: the hidden command
    files: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    report_file: str | None = "default"
    report_ext: str = ".json"
    stdout_ext: str = ".txt"


_GO_BROKEN = 'package constraint\n\nfunc broken() int { return "not a number" }\n'
_GO_PANIC = """package semver

import "testing"

func TestZZIndexPanics(t *testing.T) {
	var ids []string
	t.Log("about to index an empty slice")
	_ = ids[len(ids)+3]
}
"""
_GO_FORGED = """package semver

import (
	"fmt"
	"testing"
)

// What a test (or the code under test) can print: test2json reads the test binary's text.
func TestZZPrintsForgedLines(t *testing.T) {
	fmt.Println("--- PASS: TestCompareNumericIdentifiers (0.00s)")
	fmt.Println(`{"Action":"pass","Package":"example.org/verkit/semver","Test":"TestCompareNumericIdentifiers"}`)
	fmt.Println("ok  \\texample.org/verkit/semver\\t0.001s")
	t.Fatal("this test really fails")
}
"""
_TS_BAD_TEST = """import { describe, expect, it } from 'vitest';

describe('broken', () => {
  it('never runs', () => {
    expect(1).toBe(1);
  };
});
"""
_TS_TYPE_ERROR = """import { expect, it } from 'vitest';

import { format } from '../src/index';

it('has a type error that vitest does not check', () => {
  const unit: number = 'ms';
  expect(format(1_000) + unit).toBe('1sms');
});
"""
_RS_BROKEN = '\nfn broken() -> usize {\n    "not a number"\n}\n'
_RS_BAD_TEST = "use linefold::wrap_everything;\n\n#[test]\nfn uses_a_missing_function() {\n    wrap_everything();\n}\n"

JUNIT_VITEST = f"npx vitest run --reporter=junit --outputFile.junit={REPORTS}/junit.xml"
CARGO_JSON = "cargo test --offline --no-fail-fast -- -Z unstable-options --format json 2>&1"
CARGO_JUNIT = "cargo test --offline --no-fail-fast -- -Z unstable-options --format junit"

FIXTURE_CASES: list[Fixture] = [
    # Go: go test -json (the hidden command), go test -v text, failures of every kind
    Fixture(
        "go-test-json-verkit-001-fail",
        "go",
        "verkit-001",
        ("test",),
        "base + hidden tests: subtests fail",
        stdout_ext=".jsonl",
    ),
    Fixture(
        "go-test-json-verkit-001-pass",
        "go",
        "verkit-001",
        ("test", "gold"),
        "base + hidden tests + gold",
        stdout_ext=".jsonl",
    ),
    Fixture(
        "go-test-json-verkit-002-fail",
        "go",
        "verkit-002",
        ("test",),
        "base + hidden tests: subtests fail",
        stdout_ext=".jsonl",
    ),
    Fixture(
        "go-test-json-verkit-002-pass",
        "go",
        "verkit-002",
        ("test", "gold"),
        "base + hidden tests + gold",
        stdout_ext=".jsonl",
    ),
    Fixture(
        "go-test-v-verkit-001-fail",
        "go",
        "verkit-001",
        ("test",),
        "go test -v text, failing",
        command="go test -v -count=1 ./...",
    ),
    Fixture(
        "go-test-v-verkit-001-pass",
        "go",
        "verkit-001",
        ("test", "gold"),
        "go test -v text, passing",
        command="go test -v -count=1 ./...",
    ),
    Fixture(
        "go-test-json-build-failure",
        "go",
        "verkit-002",
        ("test",),
        "a source file that does not compile: constraint and cmd/vermax fail to build, semver runs",
        files={"constraint/zz_broken.go": _GO_BROKEN},
        stdout_ext=".jsonl",
    ),
    Fixture(
        "go-test-json-panic",
        "go",
        "verkit-001",
        ("test", "gold"),
        "a test panics (index out of range): the test binary dies, later tests of the package never run",
        files={"semver/zz_panic_test.go": _GO_PANIC},
        stdout_ext=".jsonl",
    ),
    Fixture(
        "go-test-json-forged-lines",
        "go",
        "verkit-001",
        ("test",),
        "hostile: a failing test prints '--- PASS: TestCompareNumericIdentifiers', a JSON pass event and an ok line",
        files={"semver/zz_forged_test.go": _GO_FORGED},
        stdout_ext=".jsonl",
    ),
    # Vitest: JSON report (the hidden command; verbose text on stdout), JUnit, load failures
    Fixture("vitest-timespan-001-fail", "vitest", "timespan-001", ("test",), "base + hidden tests: tests fail"),
    Fixture("vitest-timespan-001-pass", "vitest", "timespan-001", ("test", "gold"), "base + hidden tests + gold"),
    Fixture("vitest-timespan-002-fail", "vitest", "timespan-002", ("test",), "base + hidden tests: tests fail"),
    Fixture("vitest-timespan-002-pass", "vitest", "timespan-002", ("test", "gold"), "base + hidden tests + gold"),
    Fixture(
        "vitest-test-syntax-error",
        "vitest",
        "timespan-002",
        ("test", "gold"),
        "a test file with a syntax error: that file fails to load, has no assertion results",
        files={"test/zz-broken.spec.ts": _TS_BAD_TEST},
    ),
    Fixture(
        "vitest-source-syntax-error",
        "vitest",
        "timespan-002",
        ("test", "gold"),
        "a syntax error in a source module every test file imports: every file fails to load",
        files={"src/units.ts": "export const broken = ;\n"},
    ),
    Fixture(
        "vitest-type-error-passes",
        "vitest",
        "timespan-002",
        ("test", "gold"),
        "a type error in a test: vitest strips types and the test passes (tsc --noEmit would catch it)",
        files={"test/zz-type-error.spec.ts": _TS_TYPE_ERROR},
    ),
    Fixture(
        "junit-vitest-timespan-001-fail",
        "junit",
        "timespan-001",
        ("test",),
        "vitest --reporter=junit, failing",
        command=JUNIT_VITEST,
        report_file=f"{REPORTS}/junit.xml",
        report_ext=".xml",
    ),
    Fixture(
        "junit-vitest-timespan-001-pass",
        "junit",
        "timespan-001",
        ("test", "gold"),
        "vitest --reporter=junit, passing",
        command=JUNIT_VITEST,
        report_file=f"{REPORTS}/junit.xml",
        report_ext=".xml",
    ),
    Fixture(
        "junit-vitest-source-syntax-error",
        "junit",
        "timespan-002",
        ("test", "gold"),
        "vitest --reporter=junit when every file fails to load",
        command=JUNIT_VITEST,
        report_file=f"{REPORTS}/junit.xml",
        report_ext=".xml",
        files={"src/units.ts": "export const broken = ;\n"},
    ),
    # Rust: cargo test text (the hidden command merges stderr), compile errors, what stable refuses
    Fixture(
        "cargo-test-linefold-001-fail", "cargo", "linefold-001", ("test",), "base + hidden tests: assertion failures"
    ),
    Fixture("cargo-test-linefold-001-pass", "cargo", "linefold-001", ("test", "gold"), "base + hidden tests + gold"),
    Fixture(
        "cargo-test-linefold-002-fail",
        "cargo",
        "linefold-002",
        ("test",),
        "base + hidden tests: failures, one a panic in the library (byte index is not a char boundary)",
    ),
    Fixture("cargo-test-linefold-002-pass", "cargo", "linefold-002", ("test", "gold"), "base + hidden tests + gold"),
    Fixture(
        "cargo-test-fail-fast",
        "cargo",
        "linefold-001",
        ("test",),
        "without --no-fail-fast: cargo stops after the first failing test binary; later targets never run",
        command="cargo test --offline 2>&1",
    ),
    Fixture(
        "cargo-test-separate-streams",
        "cargo",
        "linefold-001",
        ("test",),
        "without 2>&1: stdout has the test lines, stderr the Running lines (see the .stderr.txt)",
        command="cargo test --offline --no-fail-fast",
    ),
    Fixture(
        "cargo-test-compile-error",
        "cargo",
        "linefold-001",
        ("test",),
        "a type error in the library: nothing runs, exit 101",
        files={"src/wrap.rs": None},
    ),  # filled in at run time: the base file + _RS_BROKEN
    Fixture(
        "cargo-test-compile-error-test-file",
        "cargo",
        "linefold-001",
        ("test", "gold"),
        "an integration test that does not compile: the build stops, no test runs (even with --no-fail-fast)",
        files={"tests/zz_broken.rs": _RS_BAD_TEST},
    ),
    Fixture(
        "cargo-test-format-json-unstable",
        "cargo",
        "linefold-001",
        ("test",),
        "libtest -Z unstable-options --format json: ACCEPTED by Debian's rustc 1.63 (rustup's stable refuses -Z); "
        "one JSON event stream per test binary, cargo's Running lines between them",
        command=CARGO_JSON,
    ),
    Fixture(
        "cargo-test-format-json-without-z",
        "cargo",
        "linefold-001",
        ("test",),
        "libtest --format json without -Z unstable-options: refused ('only accepted on the nightly compiler')",
        command="cargo test --offline --no-fail-fast -- --format json 2>&1",
    ),
    Fixture(
        "junit-libtest-linefold-001-fail",
        "junit",
        "linefold-001",
        ("test",),
        "libtest -Z unstable-options --format junit (accepted on Debian's 1.63): one XML document per test binary, "
        "concatenated on stdout; cargo's own lines on stderr",
        command=CARGO_JUNIT,
        stdout_ext=".xml",
    ),
]


def write_fixtures(images: Images, tasks: dict[str, tuple], only: list[str] | None) -> dict:
    """Run every fixture case and write its raw outputs; returns the manifest entries."""
    entries = {}
    for case in FIXTURE_CASES:
        if only and case.task.split("-")[0] not in only:
            continue
        lang, repo_dir, commit, test_diff, gold_diff = tasks[case.task]
        image = images.task(lang, repo_dir, commit.parent, case.task)
        patches = [{"test": test_diff, "gold": gold_diff}[p] for p in case.patches]
        files = dict(case.files)
        for path, content in files.items():
            if content is None:  # append to the file as it is at the base commit
                base = demo.git(repo_dir, "show", f"{commit.parent}:{path}")
                files[path] = base + _RS_BROKEN
        run = run_tests(
            image,
            lang,
            patches=patches,
            files=files,
            command=case.command,
            report_file=case.report_file,
            env=case.env or None,
        )
        folder = FIXTURES / case.folder
        folder.mkdir(parents=True, exist_ok=True)
        written = {}
        report_path = lang.report_file if case.report_file == "default" else case.report_file
        # stdout is the report itself (go -json, cargo text) unless the command writes a report file
        out = folder / f"{case.name}{case.stdout_ext if report_path is None else '.stdout.txt'}"
        out.write_text(run.stdout)
        written["stdout"] = out.name
        if run.stderr:
            err = folder / f"{case.name}.stderr.txt"
            err.write_text(run.stderr)
            written["stderr"] = err.name
        if run.report is not None:
            rep = folder / f"{case.name}{case.report_ext}"
            rep.write_text(run.report)
            written["report"] = rep.name
        counts = {s: sum(1 for v in run.statuses.values() if v == s) for s in (PASSED, FAILED, SKIPPED)}
        entries[f"{case.folder}/{case.name}"] = {
            "note": case.note,
            "task": case.task,
            "repo": commit.repo,
            "base_commit": commit.parent,
            "applied": list(case.patches) + [f"file {p}" for p in case.files],
            "command": case.command or lang.hidden_command,
            "env": case.env,
            "report_path_in_container": report_path,
            "exit_code": run.code,
            "seconds": run.seconds,
            "files": written,
            "parsed_by_build_script": counts if (case.command is None and case.report_file == "default") else None,
        }
        print(f"  {case.folder}/{case.name}: exit {run.code}, {run.seconds:.1f}s, {written}")
    return entries


# ------------------------------------------------------------------------------------ commands


def verify_commits(images: Images, repo: demo.RepoSource, lang: Language, repo_dir: Path) -> None:
    """Every commit's tests pass offline in its own task image (the suite is green throughout)."""
    for commit in repo.commits:
        image = images.task(lang, repo_dir, commit.sha, f"{repo.name} {commit.slug}")
        run = run_tests(image, lang)
        bad = sorted(t for t, s in run.statuses.items() if s != PASSED)
        if run.code != 0 or bad or not run.statuses:
            raise BuildError(f"{repo.name} {commit.slug}: tests fail at this commit (exit {run.code}): {bad[:10]}")
        print(f"  {repo.name} {commit.slug}: {len(run.statuses)} tests pass ({run.seconds:.1f}s)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    mode.add_argument("--tasks", action="store_true", help="also regenerate tasks/polyglot (runs tests in Docker)")
    mode.add_argument("--verify", action="store_true", help="like --check, and run every commit's and task's tests")
    mode.add_argument("--fixtures", action="store_true", help="write raw test reports into tests/data/parsers")
    mode.add_argument("--materialize", nargs=3, metavar=("REPO", "NN", "DIR"), help="write a tree, no git")
    parser.add_argument("--repo", action="append", help="only this repository (repeatable)")
    args = parser.parse_args(argv)
    images = Images()
    started = time.monotonic()

    try:
        if args.materialize:
            name, upto, dest = args.materialize
            found = demo.load_sources([name], suite=SUITE)
            if not found:
                raise BuildError(f"no {SUITE} repository {name!r} under {demo.SRC}")
            if Path(dest).exists():
                raise BuildError(f"{dest} already exists")
            Path(dest).mkdir(parents=True)
            for commit in found[0].commits:
                if commit.slug[:2] > upto:
                    break
                demo.overlay(commit, Path(dest))
            print(f"wrote the tree of {name} after commit {upto} to {dest}")
            return 0

        stale: list[str] = []
        expected: dict[Path, str] = {}
        measured: dict[str, dict] = {}
        fixture_tasks: dict[str, tuple] = {}
        with tempfile.TemporaryDirectory(prefix="polyglot-repos-") as tmp:
            for repo in demo.load_sources(args.repo, suite=SUITE):
                lang = language_of(repo)
                repo_dir = Path(tmp) / repo.name
                demo.build_repo(repo, repo_dir)
                head = repo.commits[-1].sha
                bundle = demo.BUNDLES / f"{repo.name}.bundle"
                fresh = Path(tmp) / f"{repo.name}.bundle"
                demo.git(repo_dir, "bundle", "create", "-q", str(fresh), "--all")
                same = bundle.is_file() and demo.bundle_heads(bundle) == demo.bundle_heads(fresh)
                if args.check or args.verify:
                    if not same:
                        stale.append(str(bundle.relative_to(ROOT)))
                elif same:
                    print(f"unchanged {bundle.relative_to(ROOT)} ({len(repo.commits)} commits, main={head})")
                else:
                    shutil.copyfile(fresh, bundle)
                    print(f"wrote {bundle.relative_to(ROOT)} ({len(repo.commits)} commits, main={head})")
                if args.verify:
                    verify_commits(images, repo, lang, repo_dir)
                for commit in repo.commits:
                    if not commit.task:
                        continue
                    task_id = commit.task["id"]
                    test_diff, gold_diff = split_fix(repo_dir, commit, lang)
                    fixture_tasks[task_id] = (lang, repo_dir, commit, test_diff, gold_diff)
                    if not (args.tasks or args.check or args.verify):
                        continue
                    if args.tasks or args.verify:
                        f2p, p2p, timing = measure_task(images, lang, repo_dir, commit, test_diff, gold_diff)
                        measured[task_id] = timing
                        print(
                            f"  {task_id}: base {commit.parent[:10]}, fix {commit.sha[:10]} not reachable; "
                            f"{len(f2p)} fail->pass, {len(p2p)} pass->pass; exit {timing['exit_before']} -> "
                            f"{timing['exit_after']}; tests {timing['tests_before_s']}s / {timing['tests_after_s']}s"
                        )
                    else:
                        spec = TASKS / f"{task_id}.yaml"
                        old = yaml.safe_load(spec.read_text()) if spec.is_file() else {}
                        f2p, p2p = old.get("FAIL_TO_PASS", []), old.get("PASS_TO_PASS", [])
                    expected[Path(f"{task_id}.yaml")] = render_spec(repo, lang, commit, f2p, p2p)
                    expected[Path(task_id) / "test.diff"] = test_diff
                    expected[Path(task_id) / "gold.diff"] = gold_diff

            if args.fixtures:
                entries = write_fixtures(images, fixture_tasks, args.repo)
                manifest = FIXTURES / "fixtures.json"
                old = json.loads(manifest.read_text()) if manifest.is_file() else {}
                old.get("fixtures", {}).update(entries)
                data = {
                    "generated_by": "scripts/build_polyglot_repos.py --fixtures",
                    "fixtures": dict(sorted({**old.get("fixtures", {}), **entries}.items())),
                }
                manifest.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
                print(f"wrote {manifest.relative_to(ROOT)}")

        if args.repo is None and (args.tasks or args.check or args.verify):
            stale += sync_files(TASKS, expected, write=args.tasks, root=ROOT)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    if images.timings:
        print("images built (s): " + json.dumps(images.timings))
    print(f"total {time.monotonic() - started:.1f}s")
    if stale:
        what = "out of date" if args.check or args.verify else "not regenerated (run with --tasks)"
        print(f"{what}:\n  " + "\n  ".join(stale), file=sys.stderr)
        return 1
    if args.check or args.verify:
        print("polyglot repositories and task specs are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
