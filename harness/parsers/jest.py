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

from typing import ClassVar

from .base import REPORTS_DIR, ParserBase, TestReport, shell_quote
from .jsreport import config_names, is_js_test_module, parse_js_report
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
    config_files: ClassVar[tuple[str, ...]] = config_names("jest.config", "babel.config") + (
        "package.json",
        ".babelrc",
        ".npmrc",
        ".yarnrc",
        ".yarnrc.yml",
        ".pnpmfile.cjs",
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
    )

    def read(self, output: str, results: bytes | None) -> TestReport:
        return parse_js_report("jest", output, results)

    def is_test_module(self, path: str) -> bool:
        return is_js_test_module(path)

    def test_command(self, files: list[str] | None) -> str:
        runnable = sorted(f for f in files or () if is_js_test_module(f))
        base = f"npx jest --ci --json --outputFile={RESULTS_FILE}"
        return base + (" --runTestsByPath " + shell_quote(runnable) if runnable else "")

    def test_file(self, test_id: str) -> str | None:
        return test_id.split("::", 1)[0] if "::" in test_id else None
