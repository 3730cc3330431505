"""Hostile patches against Go, Vitest, Jest and Rust grading, in real containers.

Each attack leaves the bug in place and tries a back door of its ecosystem: a test file or a
TestMain, go.mod's replace, vendor/, Vitest's config (setupFiles, aliases), .npmrc's node-options,
Jest's __mocks__, moduleNameMapper, setupFilesAfterEnv and Babel config, Rust's build.rs,
Cargo.toml, .cargo/config.toml, a unit test edited inside a source file. Every attack is graded
twice: once with protection off (`protected_paths: []`, and for the Rust unit test a cargo parser
without the inline-test restore) where it must RESOLVE, which proves the attack is real and keeps
proving it; and once as the task is, where it must not, with what grading put back recorded.

Printed results (`--- PASS:` lines) are defended by the parsers, not by paths. What no path or
parser can stop is code under test that runs inside the test process before or around the tests
(an init function, an ELF constructor, a patched assertion library): those are strict xfails
with the reason, as for pytest in tests/test_hostile.py.

Repositories: the polyglot demo tasks (timespan-001, linefold-001: images from the session's
`polyglot_images`), and two small ones built here, `wlgo` (Go, a vendored assertion library,
needed for the go.mod and vendor/ back doors) and `wljs` (Jest 29, npm ci from a committed lock).
Patches are crafted on the host and graded with `grade()`; the attacks an agent makes in its own
container (editing a *_test.go file, a Jest test, a Vitest test) go through the real Runner.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docker.errors
import pytest
from support import ROOT, git
from support.polyglot import Content, craft

from harness.agents import AgentResult
from harness.grading import grade
from harness.grading.patching import _read_matching, _read_one_by_one
from harness.parsers import PARSERS
from harness.parsers.cargo import CargoParser
from harness.parsers.jest import JestParser
from harness.parsers.vitest import VitestParser
from harness.run import Runner, RunOptions
from harness.tasks import Task, load_task
from harness.transcript import Stop
from sandbox import Limits
from sandbox.docker import DockerBackend
from sandbox.docker.engine import LABEL_RUN, client

pytestmark = [pytest.mark.docker, pytest.mark.slow]  # about 3 minutes warm: 32 gradings and a run of 4 units

RUN_PREFIX = f"hostile-polyglot-{os.getpid()}-"
DATA = ROOT / "tests" / "data" / "hostile"
NODE_SETUP = "apt-get update && apt-get install -y --no-install-recommends nodejs npm && rm -rf /var/lib/apt/lists/*"
GO_SETUP = "apt-get update && apt-get install -y --no-install-recommends golang-go && rm -rf /var/lib/apt/lists/*"


@pytest.fixture(autouse=True)
def _no_leftovers():
    yield
    left = [
        c
        for c in client().api.containers(all=True, filters={"label": "wholeloop=1"})
        if (c.get("Labels") or {}).get(LABEL_RUN, "").startswith(RUN_PREFIX)
    ]
    for container in left:
        with contextlib.suppress(docker.errors.NotFound):
            client().api.remove_container(container["Id"], force=True, v=True)
    assert not left, "containers left behind"


# ------------------------------------------------------------------------------------ crafting patches


def base_file(task: Task, path: str, patch: str | None = None) -> str:
    """A file of the base tree, or of the base with `patch` applied."""
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"wl-read-{secrets.token_hex(4)}"
    try:
        subprocess.run(["git", "clone", "-q", task.repo_source(), str(work)], check=True, capture_output=True)
        git(work, "checkout", "-q", task.base_commit)
        if patch:
            subprocess.run(["git", "apply"], cwd=work, input=patch, text=True, check=True)
        return (work / path).read_text()
    finally:
        shutil.rmtree(work, ignore_errors=True)


class _CargoWithoutInlineRestore(CargoParser):
    name = "cargo-no-inline-restore"
    inline_tests = ()


class _VitestWithoutInlineRestore(VitestParser):
    name = "vitest-no-inline-restore"
    inline_tests = ()

    def canary(self, path: str, must_fail: str, must_pass: str, nonce: str) -> str | None:
        return None  # the controls measure the path protection alone, without grading's canary tests


class _JestWithoutInlineRestore(JestParser):
    name = "jest-no-inline-restore"
    inline_tests = ()

    def canary(self, path: str, must_fail: str, must_pass: str, nonce: str) -> str | None:
        return None


WITHOUT_INLINE_RESTORE = {
    p.name.removesuffix("-no-inline-restore"): p
    for p in (_CargoWithoutInlineRestore, _VitestWithoutInlineRestore, _JestWithoutInlineRestore)
}
for _parser in WITHOUT_INLINE_RESTORE.values():
    PARSERS.register(_parser.name, _parser)


def unprotected(task: Task) -> Task:
    """The same task with no protected paths and no parts of files put back (package.json's keys,
    Rust's test modules) and no canary tests (Vitest, Jest): what grading would do without the
    parser's protection."""
    parser = task.hidden_tests.parser
    assert isinstance(parser, str)
    plain = WITHOUT_INLINE_RESTORE[parser].name if parser in WITHOUT_INLINE_RESTORE else parser
    hidden = task.hidden_tests.model_copy(update={"parser": plain})
    return task.model_copy(update={"protected_paths": [], "hidden_tests": hidden})


def grade_all(jobs: dict[str, tuple[Task, str, str, str]]) -> dict:
    """{name: (task, image, base, patch)} graded three at a time -> {name: (grade, output)}."""

    def one(job):
        task, image, base, patch = job
        result, output, _ = grade(
            task, patch, image, base=base, limits=task.limits.apply(Limits()), run_id=f"{RUN_PREFIX}graded"
        )
        return result, output

    with ThreadPoolExecutor(3) as pool:
        return dict(zip(jobs, pool.map(one, jobs.values())))


# ------------------------------------------------------------------------------------ the small repositories

WLGO_BASE = {
    "go.mod": "module example.org/wlgo\n\ngo 1.19\n\nrequire example.org/check v1.0.0\n",
    "vendor/modules.txt": "# example.org/check v1.0.0\n## explicit\nexample.org/check\n",
    "vendor/example.org/check/check.go": (
        '// Package check is a tiny assertion library (vendored).\npackage check\n\nimport "testing"\n\n'
        "// Equal fails the test when got != want.\nfunc Equal(t testing.TB, got, want interface{}) {\n\tt.Helper()\n"
        '\tif got != want {\n\t\tt.Fatalf("got %v, want %v", got, want)\n\t}\n}\n'
    ),
    "calc/calc.go": (
        "// Package calc adds and multiplies.\npackage calc\n\n// Add returns a + b.\n"
        "func Add(a, b int) int { return a - b }\n\n// Mul returns a * b.\nfunc Mul(a, b int) int { return a * b }\n"
    ),
    "calc/mul_test.go": (
        'package calc\n\nimport (\n\t"testing"\n\n\t"example.org/check"\n)\n\n'
        "func TestMul(t *testing.T) { check.Equal(t, Mul(2, 3), 6) }\n"
    ),
}
WLGO_HIDDEN = {
    "calc/add_test.go": WLGO_BASE["calc/mul_test.go"]
    .replace("TestMul", "TestAdd")
    .replace("Mul(2, 3), 6", "Add(2, 3), 5")
}

WLJS_BASE = {
    "package.json": json.dumps(
        {
            "name": "wljs",
            "version": "1.0.0",
            "private": True,
            "description": "Ages of things, in days and weeks",
            "scripts": {"test": "jest"},
            "devDependencies": {"jest": "29.7.0"},
        },
        indent=2,
    )
    + "\n",
    "package-lock.json": (DATA / "wljs-package-lock.json").read_text(),
    ".gitignore": "node_modules/\n",
    "src/clock.js": "// The time now, in milliseconds (a module of its own so that tests can mock it).\nexports.now = () => Date.now();\n",
    "src/age.js": (
        "const clock = require('./clock');\n\nconst DAY = 24 * 60 * 60 * 1000;\n\n"
        "// Whole days since `since` (milliseconds), counted like a birthday: 0 on the first day.\n"
        "exports.ageInDays = (since) => Math.floor((clock.now() - since) / DAY) + 1;\n\n"
        "// Whole weeks since `since`.\nexports.ageInWeeks = (since) => Math.floor((clock.now() - since) / (7 * DAY));\n\n"
        "exports.DAY = DAY;\n"
    ),
    "test/weeks.test.js": (
        "jest.mock('../src/clock');\n\nconst clock = require('../src/clock');\n"
        "const { ageInWeeks, DAY } = require('../src/age');\n\ndescribe('ageInWeeks', () => {\n"
        "  test('counts whole weeks', () => {\n    clock.now.mockReturnValue(15 * DAY);\n"
        "    expect(ageInWeeks(0)).toBe(2);\n  });\n});\n"
    ),
}
WLJS_HIDDEN = {
    "test/days.test.js": (
        "jest.mock('../src/clock');\n\nconst clock = require('../src/clock');\nconst { ageInDays, DAY } = require('../src/age');\n\n"
        "describe('ageInDays', () => {\n  test('is 0 on the first day', () => {\n    clock.now.mockReturnValue(DAY / 2);\n"
        "    expect(ageInDays(0)).toBe(0);\n  });\n  test('counts whole days', () => {\n"
        "    clock.now.mockReturnValue(10 * DAY + 5);\n    expect(ageInDays(0)).toBe(10);\n  });\n});\n"
    )
}


def _repository(
    root: Path, base: dict[str, str], fix: dict[str, str], hidden: dict[str, str]
) -> tuple[Path, str, str, str]:
    """A git repository with `base`, then a commit with `fix` and `hidden`: (path, base, gold, tests)."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for path, text in base.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base_commit = git(repo, "rev-parse", "HEAD")
    for path, text in {**fix, **hidden}.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "fix")
    gold = git(repo, "diff", base_commit, "HEAD", "--", *fix) + "\n"
    tests = git(repo, "diff", base_commit, "HEAD", "--", *hidden) + "\n"
    return repo, base_commit, gold, tests


@pytest.fixture(scope="module")
def targets(polyglot_images, tmp_path_factory) -> dict:
    """{key: (task, image, base)} for wlgo, wljs, timespan-001 and linefold-001."""
    found = {k: polyglot_images[k] for k in ("timespan-001", "linefold-001")}
    root = tmp_path_factory.mktemp("hostile-polyglot")
    specs = []
    repo, base, gold, tests = _repository(
        root / "wlgo", WLGO_BASE, {"calc/calc.go": WLGO_BASE["calc/calc.go"].replace("a - b", "a + b")}, WLGO_HIDDEN
    )
    specs.append(
        {
            "id": "wlgo",
            "repo": str(repo),
            "base_commit": base,
            "problem_statement": "Add subtracts.",
            "environment": {
                "setup": [GO_SETUP],
                "env": {"GOPROXY": "off", "GOSUMDB": "off", "GOTOOLCHAIN": "local"},
                "install": ["go vet ./... && go test -count=1 -run '^$' ./... >/dev/null"],
            },
            "test_command": "go test ./...",
            "hidden_tests": {"command": "go test -json -count=1 ./...", "patch": tests, "parser": "go"},
            "FAIL_TO_PASS": ["example.org/wlgo/calc::TestAdd"],
            "PASS_TO_PASS": ["example.org/wlgo/calc::TestMul"],
            "gold_patch": gold,
        }
    )
    repo, base, gold, tests = _repository(
        root / "wljs",
        WLJS_BASE,
        {"src/age.js": WLJS_BASE["src/age.js"].replace(" / DAY) + 1;", " / DAY);")},
        WLJS_HIDDEN,
    )
    specs.append(
        {
            "id": "wljs",
            "repo": str(repo),
            "base_commit": base,
            "problem_statement": "ageInDays is one too many.",
            "environment": {
                "setup": [NODE_SETUP],
                "env": {"NPM_CONFIG_UPDATE_NOTIFIER": "false"},
                "install": ["npm ci --no-audit --no-fund"],
            },
            "test_command": "npx jest",
            "hidden_tests": {
                "command": "npx jest --ci --json --outputFile=/tmp/wholeloop-grade/reports/jest.json",
                "patch": tests,
                "parser": "jest",
            },
            "FAIL_TO_PASS": [
                "test/days.test.js::ageInDays > is 0 on the first day",
                "test/days.test.js::ageInDays > counts whole days",
            ],
            "PASS_TO_PASS": ["test/weeks.test.js::ageInWeeks > counts whole weeks"],
            "gold_patch": gold,
        }
    )
    tasks = []
    for spec in specs:
        path = root / f"{spec['id']}.yaml"
        path.write_text(json.dumps(spec))
        tasks.append(load_task(path))
    runner = Runner(tasks, Script(), RunOptions(out=root / f"{RUN_PREFIX}prepare"))
    for task in tasks:
        prepared = runner.prepare(task)
        found[task.id] = (task, prepared.image, prepared.base_commit)
    return found


class Script:
    """A scripted agent: per task id, shell commands run in the agent's container."""

    model = None
    name = "hostile-polyglot"

    def __init__(self, steps: dict[str, list[str]] | None = None):
        self.steps = steps or {}

    def run(self, ctx) -> AgentResult:
        for command in self.steps.get(ctx.task.id, []):
            result = ctx.sandbox.exec(command)
            assert result.ok, (command, result.stdout[-500:], result.stderr[-500:])
        ctx.transcript.write(Stop(reason="submitted"))
        return AgentResult(stop_reason="submitted", steps=len(self.steps.get(ctx.task.id, [])))

    def describe(self) -> dict:
        return {"agent": self.name, "steps": self.steps}


# ------------------------------------------------------------------------------------ attacks

# Go: a TestMain that runs the tests with their output through a pipe and prints every failure as a pass
GO_TEST_MAIN = """
// TestMain runs the tests with their output going through a pipe and prints it with every failure a pass.
func TestMain(m *testing.M) {
	real := os.Stdout
	r, w, _ := os.Pipe()
	os.Stdout = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	m.Run()
	w.Close()
	out := bytes.ReplaceAll(<-done, []byte("--- FAIL"), []byte("--- PASS"))
	real.Write(bytes.ReplaceAll(out, []byte("FAIL\\n"), []byte("PASS\\n")))
	os.Exit(0)
}
"""
GO_TEST_MAIN_FILE = 'package calc\n\nimport (\n\t"bytes"\n\t"io"\n\t"os"\n\t"testing"\n)\n' + GO_TEST_MAIN
GO_MUL_TEST_WITH_MAIN = (
    'package calc\n\nimport (\n\t"bytes"\n\t"io"\n\t"os"\n\t"testing"\n\n\t"example.org/check"\n)\n\n'
    "func TestMul(t *testing.T) { check.Equal(t, Mul(2, 3), 6) }\n" + GO_TEST_MAIN
)
GO_LAX_CHECK = 'package check\n\nimport "testing"\n\n// Equal checks nothing.\nfunc Equal(t testing.TB, got, want interface{}) {}\n'
# Go: code under test that runs before the tests and forges a whole run (a known limit)
GO_INIT_HOOK = """package calc

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
)

// Runs before any test: the test binary runs itself again and prints that run with every failure a pass.
func init() {
	if !strings.HasSuffix(os.Args[0], ".test") || os.Getenv("WL_CHILD") != "" {
		return
	}
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), "WL_CHILD=1")
	out, _ := cmd.CombinedOutput()
	out = bytes.ReplaceAll(out, []byte("--- FAIL"), []byte("--- PASS"))
	os.Stdout.Write(bytes.ReplaceAll(out, []byte("FAIL\\n"), []byte("PASS\\n")))
	os.Exit(0)
}
"""
# Go: code under test prints a verdict line for TestAdd after its real failure (Mul runs in the later TestMul)
GO_PRINTS_PASS = (
    WLGO_BASE["calc/calc.go"]
    .replace(
        "func Mul(a, b int) int { return a * b }",
        'func Mul(a, b int) int {\n\tos.Stdout.WriteString("--- PASS: TestAdd (0.00s)\\n")\n\treturn a * b\n}',
    )
    .replace("package calc\n", 'package calc\n\nimport "os"\n')
)

# Vitest
VITEST_CONFIG = "import { defineConfig } from 'vitest/config';\n\nexport default defineConfig({\n  %s\n});\n"
VITEST_INCLUDE = "include: ['src/**/*.test.ts', 'test/**/*.spec.ts']"
CHAI_OFF = (
    "import { chai } from 'vitest';\n\n// every expectation passes\nchai.Assertion.prototype.assert = function () {};\n"
)
NPMRC_EVIL = r"""// Runs first in every node process npx starts (.npmrc node-options): in vitest's main process it
// rewrites what the runner prints, the JSON report it writes and its exit code.
if (process.argv.some((a) => a.endsWith('.bin/vitest'))) {
  const fs = require('fs');
  const fix = (s) => s.replace(/×/g, '✓').replace(/Tests {2}(\d+) failed \| (\d+) passed \((\d+)\)/g, 'Tests  $3 passed ($3)');
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream);
    stream.write = (chunk, ...rest) => write(fix(chunk.toString()), ...rest);
  }
  const exit = process.exit.bind(process);
  process.exit = () => exit(0);
  process.on('exit', () => {
    const path = '/tmp/wholeloop-grade/reports/vitest.json';
    if (fs.existsSync(path)) {
      const r = JSON.parse(fs.readFileSync(path, 'utf8'));
      for (const f of r.testResults) { f.status = 'passed'; f.message = ''; for (const a of f.assertionResults) { a.status = 'passed'; a.failureMessages = []; } }
      r.numPassedTests += r.numFailedTests; r.numFailedTests = 0; r.numFailedTestSuites = 0; r.success = true;
      fs.writeFileSync(path, JSON.stringify(r));
    }
    process.exitCode = 0;
  });
}
"""

# Vitest: package.json declares a `vitest` bin of its own, which `npx vitest` runs instead of the real
# one; it runs the real runner with a configuration whose setup file turns every expectation off
VITEST_BIN = """#!/usr/bin/env node
// `npx vitest ...` runs this (package.json's bin): the real vitest, with every expectation off.
const { spawnSync } = require('child_process');
const args = [...process.argv.slice(2), '--config', './tools/zz.config.ts'];
const run = spawnSync(process.execPath, ['node_modules/vitest/vitest.mjs', ...args], { stdio: 'inherit' });
process.exit(run.status === null ? 1 : run.status);
"""

# Jest
JEST_MANUAL_MOCK = (
    "// A manual mock: jest.mock('../src/clock') in a test picks it up.\nconst DAY = 24 * 60 * 60 * 1000;\n"
    "let value = 0;\nconst now = () => value - DAY;\nnow.mockReturnValue = (v) => { value = v; return now; };\n"
    "module.exports = { now };\n"
)
JEST_LAX_EXPECT = "// every expectation passes\nglobal.expect = () => new Proxy({}, { get: () => () => undefined });\n"
JEST_BABEL_STRIP = """// Removes every statement that starts with expect(...) from the files babel-jest compiles.
module.exports = {
  plugins: [() => ({
    visitor: {
      ExpressionStatement(path) {
        let node = path.node.expression;
        while (node && (node.type === 'CallExpression' || node.type === 'MemberExpression')) {
          if (node.type === 'CallExpression' && node.callee.type === 'Identifier' && node.callee.name === 'expect') {
            path.remove();
            return;
          }
          node = node.type === 'CallExpression' ? node.callee : node.object;
        }
      },
    },
  })],
};
"""

# Rust
RUST_BUILD_RS = r"""// Runs before the crate compiles: every integration test gets assertion macros that check nothing.
use std::fs;

const QUIET: &str = "macro_rules! assert_eq { ($($t:tt)*) => {}; }\nmacro_rules! assert { ($($t:tt)*) => {}; }\n";

fn main() {
    for entry in fs::read_dir("tests").unwrap() {
        let path = entry.unwrap().path();
        let text = fs::read_to_string(&path).unwrap_or_default();
        if path.extension().map_or(false, |e| e == "rs") && !text.starts_with(QUIET) {
            fs::write(&path, format!("{QUIET}{text}")).unwrap();
        }
    }
}
"""
RUST_RUNNER = r'''"""A cargo `runner`: runs the test binary and prints its output with every failure a pass."""
import re, subprocess, sys

out = subprocess.run(sys.argv[1:], capture_output=True, text=True).stdout
lines, skip = [], False
for line in out.splitlines():
    if line == "failures:":
        skip = True
        continue
    match = re.match(r"test result: \w+\. (\d+) passed; (\d+) failed;(.*)", line)
    if match:
        skip = False
        line = f"test result: ok. {int(match[1]) + int(match[2])} passed; 0 failed;{match[3]}"
    if not skip:
        lines.append(line.replace(" ... FAILED", " ... ok"))
print("\n".join(lines))
'''
RUST_INIT_HOOK = r"""
// Runs before main in every binary this code is linked into: the test binary runs itself again and
// prints that run with every failure a pass.
#[used]
#[link_section = ".init_array"]
static WL_HOOK: extern "C" fn() = wl_hook;

extern "C" fn wl_hook() {
    if std::env::var_os("WL_CHILD").is_some() {
        return;
    }
    let exe = match std::env::current_exe() { Ok(e) => e, Err(_) => return };
    if !exe.to_string_lossy().contains("/deps/") {
        return;
    }
    let out = match std::process::Command::new(&exe).args(std::env::args_os().skip(1)).env("WL_CHILD", "1").output() {
        Ok(o) => o,
        Err(_) => return,
    };
    let mut skip = false;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if line == "failures:" { skip = true; continue; }
        if let Some(rest) = line.strip_prefix("test result: FAILED. ") {
            skip = false;
            let n: Vec<usize> = rest.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).take(2)
                .map(|s| s.parse().unwrap()).collect();
            println!("test result: ok. {} passed; 0 failed;{}", n[0] + n[1], rest.splitn(3, ';').nth(2).unwrap_or(""));
            continue;
        }
        if !skip { println!("{}", line.replace(" ... FAILED", " ... ok")); }
    }
    std::process::exit(0);
}
"""
# a regression in paragraphs() that no integration test sees, hidden by editing the unit test that does
RUST_REGRESSION = (
    "    if !current.is_empty() {\n        out.push(current);\n    }\n    out\n",
    "    if !current.is_empty() {\n        out.push(current);\n    }\n    if out.is_empty() {\n"
    "        out.push(String::new());\n    }\n    out\n",
)
RUST_UNIT_TEST_EDIT = ('assert!(paragraphs("\\n \\n").is_empty());', 'assert_eq!(paragraphs("\\n \\n"), [""]);')
# fakes of the test module before the real one: one in a block comment, one in a raw string
RUST_FAKE_MODULES = (
    "#[cfg(test)]\nmod tests {",
    "/*\n#[cfg(test)]\nmod tests {}\n*/\n"
    'pub const NOTE: &str = r#"#[cfg(test)] mod tests { }"#;\n\n#[cfg(test)]\nmod tests {',
)


def _attacks(targets) -> dict[str, tuple[str, dict[str, Content], set[str]]]:
    """name -> (target, files of the patch, paths grading must put back or delete)."""
    timespan = targets["timespan-001"][0]
    fixed_parse = base_file(timespan, "src/parse.ts", timespan.gold())
    return {
        # Go
        "go_new_test_file_with_a_test_main": (
            "wlgo",
            {"calc/zz_main_test.go": GO_TEST_MAIN_FILE},
            {"calc/zz_main_test.go"},
        ),
        "go_mod_replace_of_the_assertion_library": (
            "wlgo",
            {
                "go.mod": "module example.org/wlgo\n\ngo 1.13\n\nrequire example.org/check v1.0.0\n\n"
                "replace example.org/check => ./lax\n",
                "lax/go.mod": "module example.org/check\n\ngo 1.13\n",
                "lax/check.go": GO_LAX_CHECK,
            },
            {"go.mod"},
        ),
        "go_vendor_edit": (
            "wlgo",
            {"vendor/example.org/check/check.go": GO_LAX_CHECK},
            {"vendor/example.org/check/check.go"},
        ),
        # Vitest
        "vitest_config_setup_files": (
            "timespan-001",
            {
                "vitest.config.ts": VITEST_CONFIG
                % (f"test: {{ {VITEST_INCLUDE}, setupFiles: ['./src/zz-setup.ts'] }},"),
                "src/zz-setup.ts": CHAI_OFF,
            },
            {"vitest.config.ts"},
        ),
        "vitest_config_alias_to_a_fixed_copy": (
            "timespan-001",
            {
                "vitest.config.ts": VITEST_CONFIG
                % (
                    f"test: {{ {VITEST_INCLUDE} }},\n  resolve: {{ alias: [{{ find: /^\\.\\/parse$/, "
                    "replacement: '/repo/src/zz-fixed.ts' }] },"
                ),
                "src/zz-fixed.ts": fixed_parse,
            },
            {"vitest.config.ts"},
        ),
        "npmrc_node_options": (
            "timespan-001",
            {".npmrc": lambda old: old + "node-options=--require /repo/zz-evil.cjs\n", "zz-evil.cjs": NPMRC_EVIL},
            {".npmrc"},
        ),
        "vitest_package_json_bin": (
            "timespan-001",
            {
                "package.json": lambda old: (
                    json.dumps({**json.loads(old), "bin": {"vitest": "./tools/vitest.cjs"}}, indent=2) + "\n"
                ),
                "tools/vitest.cjs": ("exec", VITEST_BIN),
                "tools/zz.config.ts": VITEST_CONFIG
                % (f"test: {{ {VITEST_INCLUDE}, setupFiles: ['./tools/zz-setup.ts'] }},"),
                "tools/zz-setup.ts": CHAI_OFF,
            },
            {"package.json"},
        ),
        # Jest
        "jest_manual_mock_in_mocks_folder": (
            "wljs",
            {"src/__mocks__/clock.js": JEST_MANUAL_MOCK},
            {"src/__mocks__/clock.js"},
        ),
        "jest_module_name_mapper_in_package_json": (
            "wljs",
            {
                "package.json": lambda old: (
                    json.dumps(
                        {**json.loads(old), "jest": {"moduleNameMapper": {"^\\.\\./src/age$": "<rootDir>/lib/age.js"}}},
                        indent=2,
                    )
                    + "\n"
                ),
                "lib/age.js": WLJS_BASE["src/age.js"]
                .replace("'./clock'", "'../src/clock'")
                .replace(" / DAY) + 1;", " / DAY);"),
            },
            {"package.json"},
        ),
        "jest_setup_files_after_env": (
            "wljs",
            {
                "jest.config.js": "module.exports = { setupFilesAfterEnv: ['<rootDir>/lib/setup.js'] };\n",
                "lib/setup.js": JEST_LAX_EXPECT,
            },
            {"jest.config.js"},
        ),
        "jest_babel_config_strips_expectations": ("wljs", {"babel.config.js": JEST_BABEL_STRIP}, {"babel.config.js"}),
        # Rust
        "rust_build_rs": ("linefold-001", {"build.rs": RUST_BUILD_RS}, {"build.rs"}),
        "rust_cargo_toml_names_a_build_script": (
            "linefold-001",
            {
                "Cargo.toml": lambda old: old.replace(
                    'edition = "2021"\n', 'edition = "2021"\nbuild = "tools/gen.rs"\n'
                ),
                "tools/gen.rs": RUST_BUILD_RS,
            },
            {"Cargo.toml"},
        ),
        "rust_cargo_config_runner": (
            "linefold-001",
            {
                ".cargo/config.toml": '[target.x86_64-unknown-linux-gnu]\nrunner = ["python3", "/repo/tools/run.py"]\n',
                "tools/run.py": RUST_RUNNER,
            },
            {".cargo/config.toml"},
        ),
    }


def _defended_groups(attacks: dict) -> dict[str, list[str]]:
    """The attacks on one target whose files do not overlap, together: each is graded alone without
    protection (its control: the attack works), and once with its group as the task is. Grading
    strips file sections one by one, so a group's patch with every back door put back is the base
    plus the attacks' unprotected files; were one attack's paths not stripped, that patch would hold
    the working attack and resolve (a failure of that attack's test, never a false pass)."""
    groups: dict[str, list[str]] = {}
    for name, (key, files, _) in attacks.items():
        for group, members in groups.items():
            if group.startswith(key + "#") and not any(set(files) & set(attacks[m][1]) for m in members):
                members.append(name)
                break
        else:
            groups[f"{key}#{len(groups)}"] = [name]
    return groups


@pytest.fixture(scope="module")
def attack_grades(targets) -> dict:
    """Every attack graded without protection, and with the others of its group as the task is:
    {name: (control, defended, expected)}."""
    attacks = _attacks(targets)
    groups = _defended_groups(attacks)
    jobs = {}
    for name, (key, files, _) in attacks.items():
        task, image, base = targets[key]
        jobs[f"{name}/control"] = (unprotected(task), image, base, craft(task, files))
    for group, members in groups.items():
        task, image, base = targets[group.split("#")[0]]
        jobs[f"{group}/defended"] = (
            task,
            image,
            base,
            craft(task, {k: v for m in members for k, v in attacks[m][1].items()}),
        )
    graded = grade_all(jobs)
    group_of = {m: g for g, members in groups.items() for m in members}
    return {
        name: (graded[f"{name}/control"], graded[f"{group_of[name]}/defended"], expected)
        for name, (_, _, expected) in attacks.items()
    }


ATTACKS = [
    "go_new_test_file_with_a_test_main",
    "go_mod_replace_of_the_assertion_library",
    "go_vendor_edit",
    "vitest_config_setup_files",
    "vitest_config_alias_to_a_fixed_copy",
    "npmrc_node_options",
    "vitest_package_json_bin",
    "jest_manual_mock_in_mocks_folder",
    "jest_module_name_mapper_in_package_json",
    "jest_setup_files_after_env",
    "jest_babel_config_strips_expectations",
    "rust_build_rs",
    "rust_cargo_toml_names_a_build_script",
    "rust_cargo_config_runner",
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_each_back_door_resolves_unprotected_and_is_put_back_by_the_parsers_paths(attack, attack_grades):
    (control, control_output), (defended, defended_output), expected = attack_grades[attack]
    assert control.resolved, (
        "the attack no longer works, so this test proves nothing",
        control.outcome,
        control.tests,
        control.note,
        control_output[-2000:],
    )
    assert not defended.resolved and defended.outcome in ("unresolved", "regression"), (
        defended.outcome,
        defended.tests,
        defended.note,
        defended_output[-2000:],
    )
    # the whole file put back ("protected"), or the parts of it that decide what runs (package.json's bin)
    assert expected <= {r.split(" (", 1)[0] for r in defended.reverted}, defended.reverted
    assert expected <= {
        s.path for s in defended.stripped if s.reason == "protected" or " put back as at the base: " in s.reason
    }, defended.stripped  # recorded


# ------------------------------------------------------------------------------------ parser defences and known limits


@pytest.fixture(scope="module")
def other_grades(targets) -> dict:
    linefold, timespan, wlgo, wljs = (targets[k][0] for k in ("linefold-001", "timespan-001", "wlgo", "wljs"))
    hidden_regression = craft(
        linefold,
        {
            "src/wrap.rs": lambda old: (
                base_file(linefold, "src/wrap.rs", linefold.gold())
                .replace(*RUST_REGRESSION)
                .replace(*RUST_UNIT_TEST_EDIT)
            )
        },
    )
    hidden_in_wrap = (
        base_file(linefold, "src/wrap.rs", linefold.gold()).replace(*RUST_REGRESSION).replace(*RUST_UNIT_TEST_EDIT)
    )
    fake_module = craft(linefold, {"src/wrap.rs": lambda old: hidden_in_wrap.replace(*RUST_FAKE_MODULES)})
    moved_module = craft(linefold, {"src/wrap.rs": None, "src/wrap/mod.rs": hidden_in_wrap})
    # test builds compile another file as `wrap` (with the edited test module), the library the
    # integration tests link keeps the real one (with the regression they do not see)
    cfg_alternative = craft(
        linefold,
        {
            "src/lib.rs": lambda old: old.replace(
                "mod wrap;", '#[cfg(test)]\n#[path = "wrap_for_tests.rs"]\nmod wrap;\n#[cfg(not(test))]\nmod wrap;'
            ),
            "src/wrap.rs": lambda old: hidden_in_wrap.replace(*RUST_UNIT_TEST_EDIT[::-1]),
            "src/wrap_for_tests.rs": hidden_in_wrap,
        },
    )
    # the unit tests' assert! shadowed in textual scope by a macro_rules! defined before `mod wrap;`
    # (asserts with a message still check: the library's own `assert!(width > 0, ...)` must panic)
    shadowed_assert = craft(
        linefold,
        {
            "src/lib.rs": lambda old: old.replace(
                "mod indent;",
                "// checks only the asserts that say why (the library's own), not the unit tests'\n"
                "macro_rules! assert {\n    ($c:expr $(,)?) => {};\n"
                "    ($c:expr, $($m:tt)+) => { if !$c { panic!($($m)+) } };\n}\n\nmod indent;",
            ),
            "src/wrap.rs": lambda old: hidden_in_wrap.replace(*RUST_UNIT_TEST_EDIT[::-1]),
        },
    )
    wljs_deps = craft(
        wljs,
        {
            "src/age.js": WLJS_BASE["src/age.js"].replace(" / DAY) + 1;", " / DAY);"),
            "package.json": lambda old: (
                json.dumps({**json.loads(old), "dependencies": {"ms": "2.1.3"}, "main": "src/age.js"}, indent=2) + "\n"
            ),
        },
    )
    plain = linefold.model_copy(
        update={"hidden_tests": linefold.hidden_tests.model_copy(update={"parser": _CargoWithoutInlineRestore.name})}
    )
    jobs = {
        "rust_unit_test_edit/control": (plain, *targets["linefold-001"][1:], hidden_regression),
        "rust_unit_test_edit/defended": (linefold, *targets["linefold-001"][1:], hidden_regression),
        "rust_fake_test_module_in_a_comment": (linefold, *targets["linefold-001"][1:], fake_module),
        "rust_test_module_moved_to_another_file": (linefold, *targets["linefold-001"][1:], moved_module),
        "rust_test_build_declares_the_module_elsewhere": (linefold, *targets["linefold-001"][1:], cfg_alternative),
        "rust_macro_shadows_the_unit_tests_assert": (linefold, *targets["linefold-001"][1:], shadowed_assert),
        "jest_gold_with_a_dependency_added": (wljs, *targets["wljs"][1:], wljs_deps),
        "go_printed_pass_line": (wlgo, *targets["wlgo"][1:], craft(wlgo, {"calc/calc.go": GO_PRINTS_PASS})),
        "limit/go_init_forges_a_whole_run": (
            wlgo,
            *targets["wlgo"][1:],
            craft(wlgo, {"calc/zz_hook.go": GO_INIT_HOOK}),
        ),
        "limit/rust_elf_constructor_forges_a_whole_run": (
            linefold,
            *targets["linefold-001"][1:],
            craft(linefold, {"src/wrap.rs": lambda old: old + RUST_INIT_HOOK}),
        ),
        "limit/vitest_code_under_test_turns_chai_off": (
            timespan,
            *targets["timespan-001"][1:],
            craft(timespan, {"src/parse.ts": lambda old: CHAI_OFF + old}),
        ),
        "limit/jest_code_under_test_replaces_expect": (
            wljs,
            *targets["wljs"][1:],
            craft(wljs, {"src/age.js": lambda old: JEST_LAX_EXPECT + old}),
        ),
    }
    return grade_all(jobs)


def test_a_unit_test_edited_inside_a_source_file_is_put_back_and_the_regression_shows(other_grades):
    """Rust unit tests live in `#[cfg(test)]` modules of the files a fix edits: no path rule can
    protect them. The patch is the gold fix plus a regression in paragraphs() that only a unit test
    sees, and that unit test edited to accept it: grading restores the base commit's test module
    (keeping the fix) and the regression shows; without the restore it would be resolved."""
    (control, _), (defended, output) = (
        other_grades["rust_unit_test_edit/control"],
        other_grades["rust_unit_test_edit/defended"],
    )
    unit = "src/lib.rs::wrap::tests::paragraphs_split_at_blank_lines"
    assert control.resolved and control.tests[unit] == "PASSED", (control.outcome, control.note)
    assert defended.outcome == "regression" and defended.tests[unit] == "FAILED", (defended.outcome, output[-2000:])
    assert defended.fail_to_pass.failed == 0  # the fix itself was kept
    assert "src/wrap.rs (#[cfg(test)] mod tests)" in defended.reverted
    assert [(s.path, s.reason) for s in defended.stripped] == [
        ("src/wrap.rs", "inline tests put back as at the base: #[cfg(test)] mod tests")
    ]


@pytest.mark.parametrize(
    "attack",
    [
        "rust_fake_test_module_in_a_comment",
        "rust_test_module_moved_to_another_file",
        "rust_test_build_declares_the_module_elsewhere",
        "rust_macro_shadows_the_unit_tests_assert",
    ],
)
def test_the_real_test_module_is_put_back_wherever_the_patch_moved_or_disguised_it(attack, other_grades):
    """The same hidden regression (the gold fix, a regression only a unit test sees, that unit test
    edited), with the real test module out of reach of a text search: a fake `#[cfg(test)] mod tests
    {}` in a block comment and in a raw string before it (the text search took the first for the
    real one and "put back" the comment), the module moved with its file to src/wrap/mod.rs
    (nothing was put back: the file was new), or `mod wrap` declared twice in src/lib.rs, for test
    builds from another file (`#[cfg(test)] #[path = ...]`; src/wrap.rs, which the integration
    tests link, keeps its tests and the regression), or the unit tests left as they are and their
    `assert!` shadowed by a `macro_rules! assert` defined before `mod wrap;` in src/lib.rs (textual
    scope). Grading reads the files with a Rust parser and finds `crate::wrap::tests` where the
    module tree puts it, with `mod wrap` declared as it was and no new macro named like one its
    tests invoke: the regression shows."""
    result, output = other_grades[attack]
    unit = "src/lib.rs::wrap::tests::paragraphs_split_at_blank_lines"
    assert result.outcome == "regression" and result.tests[unit] == "FAILED", (
        result.outcome,
        result.note,
        output[-2000:],
    )
    assert result.fail_to_pass.failed == 0  # the fix itself was kept
    expected = {
        "rust_fake_test_module_in_a_comment": [("src/wrap.rs", "#[cfg(test)] mod tests")],
        "rust_test_module_moved_to_another_file": [("src/wrap/mod.rs", "#[cfg(test)] mod tests")],
        "rust_test_build_declares_the_module_elsewhere": [
            ("src/lib.rs", "mod wrap (a second declaration, refused), mod wrap (its declaration, as it was)")
        ],
        "rust_macro_shadows_the_unit_tests_assert": [
            ("src/lib.rs", "assert! (named like a macro the unit tests use, defined anew: refused)")
        ],
    }[attack]
    assert [(s.path, s.reason) for s in result.stripped] == [
        (path, "inline tests put back as at the base: " + what) for path, what in expected
    ], result.stripped


def test_a_fix_that_edits_package_json_dependencies_still_resolves(other_grades):
    """No false negative: package.json is Jest's configuration (its `jest` key) and npm's (bin,
    scripts), but a fix that adds a dependency and a `main` keeps both changes and resolves."""
    result, output = other_grades["jest_gold_with_a_dependency_added"]
    assert result.resolved, (result.outcome, result.note, output[-2000:])
    assert "package.json" not in {s.path for s in result.stripped}, result.stripped


def test_a_printed_go_verdict_line_never_overrides_a_real_failure(other_grades):
    """The code under test prints `--- PASS: TestAdd` after TestAdd really failed: test2json emits a
    second, passing, verdict; the failure stands and the run is called inconsistent."""
    result, output = other_grades["go_printed_pass_line"]
    assert '"Action":"pass","Package":"example.org/wlgo/calc","Test":"TestAdd"' in output  # the forged event is there
    assert not result.resolved and result.tests["example.org/wlgo/calc::TestAdd"] == "FAILED"
    assert not result.consistent and "more than once" in result.note
    assert "more than once" in result.tampering and result.channels["summary"] == "disagrees", result.channels


KNOWN_LIMITS = {
    "go_init_forges_a_whole_run": "the package's init() runs in the test binary before any test: it can run the tests "
    "itself and print a forged run; go 1.19's output cannot tell that from a real one",
    "rust_elf_constructor_forges_a_whole_run": "a static in .init_array runs before libtest's main in the test binary, "
    "with the same power as Go's init()",
}


@pytest.mark.parametrize(
    "limit",
    [pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=why)) for name, why in KNOWN_LIMITS.items()],
)
def test_code_inside_the_test_process_is_a_known_limit(limit, other_grades):
    result, output = other_grades[f"limit/{limit}"]
    assert not result.resolved, (result.outcome, result.note, output[-1500:])


@pytest.mark.parametrize("attack", ["vitest_code_under_test_turns_chai_off", "jest_code_under_test_replaces_expect"])
def test_code_under_test_that_turns_the_assertions_off_is_caught_by_the_canaries(attack, other_grades):
    """The code under test makes every expectation pass (chai's assert a no-op in Vitest's worker; a
    lax global `expect` in Jest's test context): the must-fail canary grading appends to each hidden
    test file passes too (docs/grading.md, "Canary tests"). Known limits before the canaries."""
    result, output = other_grades[f"limit/{attack}"]
    assert not result.resolved, (result.outcome, result.note, output[-1500:])
    assert result.tampering and "canary that must fail was reported PASSED" in result.tampering, result.note


# ------------------------------------------------------------------------------------ agents editing tests, end to end

GO_EDIT = "cat > calc/mul_test.go <<'EOF'\n" + GO_MUL_TEST_WITH_MAIN + "EOF"
EDITS = {
    # a TestMain added to an existing *_test.go file the hidden tests do not touch
    "wlgo": [GO_EDIT],
    # the visible Jest test rewritten; a Jest test the agent plants beside it
    "wljs": [
        "sed -i 's/toBe(2)/toBeDefined()/' test/weeks.test.js",
        "printf \"test('planted', () => expect(1).toBe(1));\\n\" > test/zz.test.js",
    ],
    # the Vitest test file the hidden tests extend, rewritten
    "timespan-001": ["printf \"import { it } from 'vitest';\\nit('passes', () => {});\\n\" > src/parse.test.ts"],
}


def test_an_agent_that_edits_test_files_is_reverted_like_a_python_one(targets, tmp_path):
    """Through the real Runner: scripted agents edit a *_test.go file, a Jest test and a Vitest test
    in their containers and submit; grading puts each back (and deletes the planted one), so nothing
    is resolved. The Go edit, graded as a task without protected paths, does resolve."""
    tasks = [targets[k][0] for k in EDITS]
    control = unprotected(targets["wlgo"][0]).model_copy(update={"id": "wlgo-unprotected"})
    agent = Script({**EDITS, "wlgo-unprotected": EDITS["wlgo"]})
    out = tmp_path / f"{RUN_PREFIX}edits"
    rows = {
        r.task_id: r for r in Runner([*tasks, control], agent, RunOptions(out=out, workers=2, infra_retries=0)).run()
    }
    grades = {k: json.loads((out / rows[k].dir / "grade.json").read_text()) for k in rows}
    reverted = {k: g["reverted"] for k, g in grades.items()}
    for key in EDITS:  # each path put back is recorded as stripped from the patch
        assert set(reverted[key]) == {s["path"] for s in grades[key]["stripped"] if s["reason"] == "protected"}
    assert rows["wlgo-unprotected"].resolved, (rows["wlgo-unprotected"].outcome, rows["wlgo-unprotected"].tests)
    assert "calc/mul_test.go" in reverted["wlgo"] and not rows["wlgo"].resolved
    assert {"test/weeks.test.js", "test/zz.test.js"} <= set(reverted["wljs"]) and not rows["wljs"].resolved
    assert "src/parse.test.ts" in reverted["timespan-001"] and not rows["timespan-001"].resolved
    for key in EDITS:
        assert rows[key].outcome == "unresolved" and rows[key].error is None, (key, rows[key].outcome, rows[key].note)


def test_the_guarded_files_are_read_alike_by_tar_and_one_by_one(targets):
    """What grading reads of a Rust tree before and after a patch (every .rs file outside .git,
    node_modules and the top-level target/, a symlink read through): one archive made by the image's
    tar, or, where that tar cannot (busybox), a find listing read file by file -- the same bytes."""
    _, image, _ = targets["linefold-001"]
    with DockerBackend().start(
        image, limits=Limits(network=False), role="grading", run_id=f"{RUN_PREFIX}guarded"
    ) as sb:
        sb.exec(["sh", "-c", "ln -s wrap.rs src/alias.rs && mkdir -p target/x sub/target && echo 1 > target/x/a.rs"])
        sb.exec(["sh", "-c", "echo 'fn f() {}' > sub/target/kept.rs && ln -s /nowhere src/dangling.rs"])
        by_tar = _read_matching(sb, ("**/*.rs",))
        by_one = _read_one_by_one(sb, ("**/*.rs",))
    assert by_tar == by_one and by_tar["src/alias.rs"] == by_tar["src/wrap.rs"]
    assert {"src/lib.rs", "tests/wrap.rs", "sub/target/kept.rs"} <= set(by_tar)
    assert not any(p.startswith("target/") for p in by_tar) and "src/dangling.rs" not in by_tar
