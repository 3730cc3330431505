"""Vitest's JSON report (Jest's shape, read by `jsreport`), cross-checked with its verbose output.

The hidden command writes the report outside the repository and prints the verbose reporter's
per-test lines and summary for the cross-check:

    npx vitest run --reporter=verbose --reporter=json --outputFile.json=/tmp/wholeloop-grade/reports/vitest.json

Vitest does not type-check (esbuild strips the types): a test with a type error passes. A task that
wants types graded adds `npx tsc --noEmit` to its hidden command, whose failure is then a failing
exit code with every test passing, which grading calls inconsistent (not resolved).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar

from .base import REPORTS_DIR, shell_quote
from .jsreport import JsParser, config_names, is_js_test_module, put_back_package_keys

RESULTS_FILE = f"{REPORTS_DIR}/vitest.json"
# Tests, their data, snapshots and the manual mocks a test's vi.mock() picks up by folder.
TEST_PATHS = (
    "**/*.test.*",
    "**/*.spec.*",
    "**/__tests__/**",
    "**/__mocks__/**",
    "**/__snapshots__/**",
    "**/__fixtures__/**",
    "**/test/**",
    "**/tests/**",
)
# The runner's configuration (setupFiles, globalSetup, aliases, reporters, include/exclude: each can
# run code before the tests or point them elsewhere), the files start-up code is conventionally in,
# and the package manager's files (.npmrc's node-options puts --require into every node process
# npx starts; the lock files cannot change what is installed at grading anyway). package.json is
# not protected whole (real fixes change its dependencies, exports, main), but the keys that pick
# the program `npx vitest` runs are put back after the patch: `bin` (npx runs the project's own
# bin of that name before node_modules/.bin's), `scripts` and the others of
# `jsreport.PACKAGE_KEYS` (`restore_inline_tests`).
CONFIG_PATHS = (
    "**/vitest.config.*",
    "**/vitest.workspace.*",
    "**/vitest.setup.*",
    "**/vite.config.*",
    "**/setupTests.*",
    "**/.npmrc",
    "**/.yarnrc",
    "**/.yarnrc.yml",
    "**/.pnpmfile.cjs",
    "**/package-lock.json",
    "**/npm-shrinkwrap.json",
    "**/yarn.lock",
    "**/pnpm-lock.yaml",
)


class VitestParser(JsParser):
    """vitest run with the JSON reporter writing RESULTS_FILE (and the verbose one on stdout)."""

    name: ClassVar[str] = "vitest"
    results_file: ClassVar[str | None] = RESULTS_FILE
    protected_paths: ClassVar[tuple[str, ...]] = TEST_PATHS + CONFIG_PATHS
    test_paths: ClassVar[tuple[str, ...]] = TEST_PATHS
    inline_tests: ClassVar[tuple[str, ...]] = ("**/package.json",)  # its bin, scripts, jest, ...: PACKAGE_KEYS
    config_files: ClassVar[tuple[str, ...]] = config_names("vitest.config", "vitest.workspace", "vite.config") + (
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
        base = f"npx vitest run --reporter=verbose --reporter=json --outputFile.json={RESULTS_FILE}"
        return base + (" " + shell_quote(runnable) if runnable else "")

    def restore_inline_tests(
        self, before: Mapping[str, bytes], after: Mapping[str, bytes], read: Callable[[str], bytes | None]
    ) -> tuple[dict[str, bytes | None], list[tuple[str, str]]]:
        return put_back_package_keys(dict(before), dict(after))
