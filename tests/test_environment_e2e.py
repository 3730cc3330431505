"""A real hatchling + hatch-vcs project mined with no configuration at all, on the real engine.

structlog 24.4.0 (its PyPI sdist, scripts/make_env_fixture.py) plus a planted fix whose test is
skipped unless Rich is installed; Rich is a tox factor dependency (`rich: rich`). Before this,
the editable install failed for every hatchling project ("No module named 'editables'": the
backend's own editable requirement was never asked for), and the new test would have been skipped
(Rich missing). Now the backend's PEP 660 hook names `editables` in the resolver container, the
snapshot (which has no tags) is installed as the version of the last tag, and the task is kept
with the Rich test as FAIL_TO_PASS.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.tasks import load_tasks

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_a_hatchling_project_with_no_config_is_kept(env_repos, tmp_path):
    out = tmp_path / "mined"
    result = subprocess.run(
        [sys.executable, "-m", "harness.cli", "mine", str(env_repos / "structlog"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads((out / "mine-report.json").read_text())
    (commit,) = [c for c in report["commits"] if "kept" in c]
    assert commit["kept"]["FAIL_TO_PASS"] == [
        "tests/test_dev.py::TestRichTracebackFormatter::test_width_zero_is_rejected"
    ]
    (task,) = load_tasks([out])
    assert task.environment.install == [
        "SETUPTOOLS_SCM_PRETEND_VERSION=24.4.0 pip install --no-build-isolation --no-deps -e ."
    ]
    pins = task.environment.setup[-1]
    assert "\neditables==" in pins and "\nrich==" in pins  # from the backend's hook; from a tox factor
    assert task.origin is not None and task.origin.environment_from == ["pyproject.toml", "tox.ini"]
