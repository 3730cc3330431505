"""Jest's JSON report (`--json --outputFile=F`, read by `jsreport`), cross-checked with the summary
line Jest prints on stderr (`Tests:       1 failed, 2 passed, 3 total`).

    npx jest --ci --json --outputFile=/tmp/wholeloop-grade/reports/jest.json

Jest reads its configuration from jest.config.* or from the "jest" key of package.json, so
package.json is protected here (unlike for Vitest): moduleNameMapper, setupFiles,
setupFilesAfterEnv, transform and testMatch can each make the tests test something else or run
code before them. A root `__mocks__/` folder mocks node_modules packages without any jest.mock()
call, and one beside a module replaces it wherever a test mocks it: protected as test files.
Babel's configuration is protected because babel-jest compiles the test files with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from .base import ParserBase, REPORTS_DIR, TestReport, shell_quote
from .jsreport import parse_js_report
from .vitest import CONFIG_PATHS as _JS_CONFIG
from .vitest import TEST_PATHS as _JS_TESTS

RESULTS_FILE = f"{REPORTS_DIR}/jest.json"
TEST_PATHS = _JS_TESTS
CONFIG_PATHS = tuple(p for p in _JS_CONFIG if "vite" not in p) + (
    "**/jest.config.*",
    "**/jest.setup.*",
    "**/jest.preset.*",
    "**/package.json",
    "**/babel.config.*",
    "**/.babelrc",
    "**/.babelrc.*",
)


class JestParser(ParserBase):
    """jest --json writing RESULTS_FILE."""

    name: ClassVar[str] = "jest"
    results_file: ClassVar[str | None] = RESULTS_FILE
    protected_paths: ClassVar[tuple[str, ...]] = TEST_PATHS + CONFIG_PATHS
    test_paths: ClassVar[tuple[str, ...]] = TEST_PATHS

    def parse(self, output: str, results: bytes | None = None) -> TestReport:
        return parse_js_report("jest", output, results)

    def hidden_command(self, test_files: Sequence[str]) -> str | None:
        runnable = sorted(f for f in test_files if ".test." in f.rsplit("/", 1)[-1] or ".spec." in f.rsplit("/", 1)[-1]
                          or "/__tests__/" in f"/{f}")
        base = f"npx jest --ci --json --outputFile={RESULTS_FILE}"
        return f"{base} --runTestsByPath {shell_quote(runnable)}" if runnable else base
