"""Jest's JSON report (`--json --outputFile=F`, read by `jsreport`), cross-checked with the summary
line Jest prints on stderr (`Tests:       1 failed, 2 passed, 3 total`).

    npx jest --ci --json --outputFile=/tmp/wholeloop-grade/reports/jest.json

Jest reads its configuration from jest.config.* or from the "jest" key of package.json:
moduleNameMapper, setupFiles, setupFilesAfterEnv, transform and testMatch can each make the tests
test something else or run code before them. So package.json's `jest` key is put back as it was
after the patch is applied, with `babel`, `bin`, `scripts` and the other keys that pick what runs
(`jsreport.PACKAGE_KEYS`, `restore_inline_tests`); the rest of a fix's change to it (a dependency,
`main`) is kept. A root `__mocks__/` folder mocks node_modules packages without any jest.mock()
call, and one beside a module replaces it wherever a test mocks it: protected as test files.
Babel's configuration is protected because babel-jest compiles the test files with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

from .base import REPORTS_DIR, shell_quote
from .jsreport import JsParser, config_names, is_js_test_module, put_back_package_keys
from .vitest import CONFIG_PATHS as _JS_CONFIG
from .vitest import TEST_PATHS as _JS_TESTS

RESULTS_FILE = f"{REPORTS_DIR}/jest.json"
TEST_PATHS = _JS_TESTS
CONFIG_PATHS = tuple(p for p in _JS_CONFIG if "vite" not in p) + (
    "**/jest.config.*",
    "**/jest.setup.*",
    "**/jest.preset.*",
    "**/babel.config.*",
    "**/.babelrc",
    "**/.babelrc.*",
)


class JestParser(JsParser):
    """jest --json writing RESULTS_FILE."""

    name: ClassVar[str] = "jest"
    results_file: ClassVar[str | None] = RESULTS_FILE
    protected_paths: ClassVar[tuple[str, ...]] = TEST_PATHS + CONFIG_PATHS
    test_paths: ClassVar[tuple[str, ...]] = TEST_PATHS
    inline_tests: ClassVar[tuple[str, ...]] = ("**/package.json",)  # its bin, scripts, jest, ...: PACKAGE_KEYS
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

    def test_command(self, files: list[str] | None) -> str:
        runnable = sorted(f for f in files or () if is_js_test_module(f))
        base = f"npx jest --ci --json --outputFile={RESULTS_FILE}"
        return base + (" --runTestsByPath " + shell_quote(runnable) if runnable else "")

    def restore_inline_tests(
        self, before: Mapping[str, bytes], after: Mapping[str, bytes], read: Callable[[str], bytes | None]
    ) -> tuple[dict[str, bytes | None], list[tuple[str, str]]]:
        return put_back_package_keys(dict(before), dict(after))
