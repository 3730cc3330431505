"""A real hatchling + hatch-vcs project mined with no configuration at all, on the real engine.

structlog 24.4.0 (its PyPI sdist, scripts/make_env_fixture.py) plus a planted fix whose test is
skipped unless Rich is installed; Rich is a tox factor dependency (`rich: rich`). Before this,
the editable install failed for every hatchling project ("No module named 'editables'": the
backend's own editable requirement was never asked for), and the new test would have been skipped
(Rich missing). Now the backend's PEP 660 hook names `editables` in the resolver container, the
snapshot (which has no tags) is installed as the version of the last tag, and the task is kept
with the Rich test as FAIL_TO_PASS. A second fix an hour later resolves to the same pins and
shares the first one's environment image; the mine output counts the images per repository.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.authoring.check import verdict_path
from harness.tasks import load_tasks

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_a_hatchling_project_with_no_config_is_kept(env_repos, tmp_path):
    out = tmp_path / "mined"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "mine",
            str(env_repos / "structlog"),
            "--out",
            str(out),
            "--workers",
            "2",
            "--repeats",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads((out / "mine-report.json").read_text())
    kept = {c["subject"].split(":")[0]: c["kept"] for c in report["commits"] if "kept" in c}
    assert kept["dev"]["FAIL_TO_PASS"] == ["tests/test_dev.py::TestRichTracebackFormatter::test_width_zero_is_rejected"]
    assert kept["processors"]["FAIL_TO_PASS"] == [
        "tests/processors/test_renderers.py::TestKeyValueRenderer::test_key_order_string_is_rejected"
    ]
    # two commits an hour apart resolve (each as of its own date) to the same pins: one environment image
    tasks = load_tasks([out])
    verdicts = [json.loads(verdict_path(t.spec_path).read_text()) for t in tasks if t.spec_path]
    assert len({v["image"]["env"] for v in verdicts}) == 1 and len({v["image"]["task"] for v in verdicts}) == 2
    assert report["environments"]["structlog"]["tasks"] == 2
    assert report["environments"]["structlog"]["environments"] == 1
    assert "structlog: 2 task(s) checked on 1 environment image(s)" in result.stdout
    task = next(t for t in tasks if t.origin is not None and t.origin.subject.startswith("dev:"))
    assert task.environment.install == [
        "SETUPTOOLS_SCM_PRETEND_VERSION=24.4.0 pip install --no-build-isolation --no-deps -e ."
    ]
    pins = task.environment.setup[-1]
    assert "\neditables==" in pins and "\nrich==" in pins  # from the backend's hook; from a tox factor
    assert task.origin is not None and task.origin.environment_from == ["pyproject.toml", "tox.ini"]
