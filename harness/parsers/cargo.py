"""Per-test results from `cargo test`'s text output, ids `<target>::<test path>`.

    cargo test --offline --no-fail-fast 2>&1

The target is the source path cargo names in its `Running` line (`src/lib.rs` for the unit tests,
`tests/wrap.rs` for an integration test), or `doc:<crate>` after `Doc-tests <crate>`; the test path
is libtest's (`wrap::tests::words_split`; for a doc test `src/lib.rs - (line 3)`), without the
` - should panic` libtest appends. `Running` lines go to stderr and test lines to stdout, so the
command merges them (`2>&1`); `--no-fail-fast`, or the targets after the first failing one never
run. A compile error stops everything: no test line, exit code 101.

One channel. libtest has no stable structured report: `--format json` / `junit` need
`-Z unstable-options`, which upstream stable toolchains refuse (Debian's 1.63 happens to accept
it). So a cargo grade rests on this text alone, checked against cargo's exit code (0, or 101 with
a failure) and against libtest's own totals for each test binary (`running N tests` and the
`test result:` line must match the test lines listed), and says so (`channels`: `structured` is
"unavailable: ...", and the grade's note).

Trust. The code under test is the test binary; what it writes to stdout itself (not through
print!, which libtest captures) lands among libtest's lines. So a `FAILED` line, or a name in the
binary's final `failures:` list, wins over any `ok` line; a test listed twice, or totals that do
not match the lines, make the run inconsistent.

Unit tests inside source files (`#[cfg(test)] mod tests` in `src/*.rs`) cannot be protected by
path, because a fix edits the same file. Grading handles them with `restore_inline_tests`: every
`#[cfg(test)]` module the tree had before the patch is put back as it was, where the module tree
after the patch puts its module path, and the rest of the patch's changes are kept (`rustmod`,
which reads the files with tree-sitter-rust).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from .base import FAILED, PASSED, SKIPPED, ParserBase, TestReport, strip_ansi
from .rustmod import put_back_tests

TEST_PATHS = (
    "**/tests/**",  # integration tests, their helper modules and data
    "**/tests.rs",  # `#[cfg(test)] mod tests;`: unit tests in a file of their own
)
# Cargo.toml: [patch] and path dependencies replace crates, [[test]] harness = false swaps libtest
# for the target's own main, build = "..." names a build script; build.rs runs before the crate
# compiles and can rewrite or generate any file; .cargo/config.toml can set a `runner` that wraps
# every test binary, rustflags and env; rust-toolchain files pick the compiler (under rustup).
CONFIG_PATHS = (
    "**/Cargo.toml",
    "**/Cargo.lock",
    "**/build.rs",
    "**/.cargo/**",
    "**/rust-toolchain",
    "**/rust-toolchain.toml",
)

_RUNNING = re.compile(r"^\s*Running (?:unittests )?(\S+) \(")
_DOCTESTS = re.compile(r"^\s*Doc-tests (\S+)\s*$")
_RUNNING_N = re.compile(r"^running (\d+) tests?$")
_TEST_LINE = re.compile(r"^test (?P<name>.+?) \.\.\. (?P<verdict>ok|FAILED|ignored(?:, .*)?)$")
_RESULT = re.compile(r"^test result: (ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored; (\d+) measured;")
_NO_COMPILE = re.compile(r"^error: could not compile `([^`]+)`")
_PANIC = re.compile(r"^thread '(?P<name>[^']*)' panicked at (?P<what>.*)$")


@dataclass
class _Block:
    target: str
    expected: int | None = None
    lines: list[tuple[str, str]] = field(default_factory=list)  # (name, verdict) as listed
    failures: list[str] = field(default_factory=list)  # the final `failures:` list
    result: tuple[int, int, int] | None = None  # passed, failed, ignored (the last result line)


def _blocks(lines: list[str]) -> tuple[list[_Block], list[str], dict[str, str]]:
    blocks: list[_Block] = []
    errors: list[str] = []
    panics: dict[str, str] = {}
    block: _Block | None = None
    in_failures = False
    for line in lines:
        if match := _RUNNING.match(line):
            block = _Block(match.group(1))
            blocks.append(block)
            in_failures = False
            continue
        if match := _DOCTESTS.match(line):
            block = _Block(f"doc:{match.group(1)}")
            blocks.append(block)
            in_failures = False
            continue
        if match := _NO_COMPILE.match(line):
            name = f"could not compile {match.group(1)}"
            if name not in errors:
                errors.append(name)
            continue
        if block is None:
            continue
        if match := _RUNNING_N.match(line):
            block.expected = int(match.group(1))
        elif match := _TEST_LINE.match(line):
            block.lines.append((match.group("name").removesuffix(" - should panic"), match.group("verdict")))
            in_failures = False
        elif match := _RESULT.match(line):
            block.result = (int(match.group(2)), int(match.group(3)), int(match.group(4)))
            in_failures = False
        elif line == "failures:":
            in_failures = True
            block.failures = []  # the last list is libtest's own (the first header opens the output sections)
        elif in_failures and line.startswith("    ") and line.strip() and not line.startswith("     "):
            block.failures.append(line.strip().removesuffix(" - should panic"))
        elif in_failures and line.startswith("---- "):
            block.failures = []
        elif match := _PANIC.match(line):
            panics.setdefault(f"{block.target}::{match.group('name')}", match.group("what")[:300])
    return blocks, errors, panics


def parse_cargo(output: str) -> TestReport:
    report = TestReport(
        missing_hint="no cargo test results in the output (does the command merge stderr, 2>&1, and list tests "
        "with libtest's default format, not -q?)",
        failed_exit_codes=(101,),
        strict_exit=True,
    )
    lines = [strip_ansi(line).rstrip("\r") for line in output.splitlines()]
    blocks, errors, panics = _blocks(lines)
    report.collection_errors += errors
    report.found_summary = bool(errors) or any(b.lines or b.result or b.expected is not None for b in blocks)
    first_block = next((i for i, line in enumerate(lines) if _RUNNING.match(line) or _DOCTESTS.match(line)), len(lines))
    if any(_TEST_LINE.match(line) for line in lines[:first_block]):
        report.missing_hint = (
            "test lines come before any `Running` line: cargo prints those on stderr, so the "
            "hidden command must merge it into stdout (2>&1)"
        )
        report.found_summary = False
    seen: dict[str, list[str]] = {}
    for block in blocks:
        for name, verdict in block.lines:
            seen.setdefault(f"{block.target}::{name}", []).append(verdict)
        for name in block.failures:
            seen.setdefault(f"{block.target}::{name}", []).append("FAILED (failures list)")
        if block.result is None:
            if block.lines or block.expected:
                report.collection_errors.append(f"{block.target} (the test binary ended before its results)")
            continue
        passed, failed, ignored = block.result
        listed = {"ok": 0, "FAILED": 0, "ignored": 0}
        for _, verdict in block.lines:
            listed["ignored" if verdict.startswith("ignored") else verdict] += 1
        if (listed["ok"], listed["FAILED"], listed["ignored"]) != (passed, failed, ignored) or (
            block.expected is not None and block.expected != passed + failed + ignored
        ):
            report.problems.append(
                f"{block.target}: libtest's totals ({passed} passed, {failed} failed, {ignored} ignored of "
                f"{block.expected}) do not match the test lines ({listed['ok']} ok, {listed['FAILED']} FAILED, "
                f"{listed['ignored']} ignored): the test binary printed test lines of its own"
            )
        report.counts["passed"] = report.counts.get("passed", 0) + passed
        report.counts["failed"] = report.counts.get("failed", 0) + failed
        report.counts["skipped"] = report.counts.get("skipped", 0) + ignored
    twice = []
    for test_id, verdicts in seen.items():
        failed = any(v.startswith("FAILED") for v in verdicts)
        status = FAILED if failed else (SKIPPED if verdicts[0].startswith("ignored") else PASSED)
        if len([v for v in verdicts if not v.endswith("(failures list)")]) > 1:
            twice.append(test_id)
            status = FAILED
        report.statuses[test_id] = status
        if status == FAILED and test_id in panics:
            report.messages[test_id] = f"panicked at {panics[test_id]}"
    # ok lines of the binaries that reported their totals (a binary that died has none to check against)
    report.listed_passed = sum(1 for block in blocks if block.result for _, v in block.lines if v == "ok")
    if twice:
        report.problems.append(f"libtest listed {len(twice)} test(s) more than once ({', '.join(sorted(twice)[:5])})")
    return report


class CargoParser(ParserBase):
    """cargo test's libtest text output (stderr merged), one channel."""

    name: ClassVar[str] = "cargo"
    results_file: ClassVar[str | None] = None
    protected_paths: ClassVar[tuple[str, ...]] = TEST_PATHS + CONFIG_PATHS
    test_paths: ClassVar[tuple[str, ...]] = TEST_PATHS
    config_files: ClassVar[tuple[str, ...]] = (
        "Cargo.toml",
        "Cargo.lock",
        "build.rs",
        "rust-toolchain",
        "rust-toolchain.toml",
    )
    inline_tests: ClassVar[tuple[str, ...]] = ("**/*.rs",)
    no_report: ClassVar[str] = (
        "cargo test writes no structured report on stable Rust: its text output is the one "
        "channel, checked against the exit code"
    )

    def parse_output(self, output: str) -> TestReport:
        return parse_cargo(output)

    def is_test_module(self, path: str) -> bool:
        """An integration test target: a .rs file directly in a tests/ folder (not a helper module)."""
        parts = path.split("/")
        return path.endswith(".rs") and len(parts) >= 2 and parts[-2] == "tests"

    def test_command(self, files: list[str] | None) -> str:
        """`--test NAME` per integration test of the top-level crate; everything when a file is
        anywhere else (a helper module, another crate of a workspace) or for None."""
        rust = [f for f in files or () if f.endswith(".rs")]
        picks = ""
        if rust and all(f.startswith("tests/") and f.count("/") == 1 for f in rust):
            picks = "".join(f" --test {f[len('tests/') : -len('.rs')]}" for f in sorted(rust))
        return f"cargo test --offline --no-fail-fast{picks} 2>&1"

    def test_file(self, test_id: str) -> str | None:
        target = test_id.split("::", 1)[0]
        return target if "::" in test_id and target.endswith(".rs") and not target.startswith("doc:") else None

    def restore_inline_tests(
        self, before: Mapping[str, bytes], after: Mapping[str, bytes], read: Callable[[str], bytes | None]
    ) -> tuple[dict[str, bytes | None], list[tuple[str, str]]]:
        writes, done = put_back_tests(before, after, read)
        return dict(writes), done
