"""A failed environment build says why in its first line: the real error (an exception, a tool's
`error:` line), not pip's framing ("hint: See above for details."), never a terminal escape code;
and it names the file that holds the whole build log.

Found on a real hatchling project (issue 20): every quarantine read `hint: See above for details. |
[0m (exit code 1)` while the cause, `ModuleNotFoundError: No module named 'editables'`, was on no
screen."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from sandbox import ImageBuildError
from sandbox.docker import EnvSpec, env_image
from sandbox.docker.images import build_failure

# The end of `docker build` output when pip's editable build of a hatchling project fails (as pip
# 24 prints it, colours included, since pip colours even into a pipe under docker build).
PIP_TAIL = [
    "Step 7/9 : RUN pip install --no-build-isolation --no-deps -e .",
    " ---> Running in 2f1c0d9a7b3e",
    "Obtaining file:///repo",
    "  Checking if build backend supports build_editable: started",
    "  Preparing editable metadata (pyproject.toml): finished with status 'error'",
    "  \x1b[1;31merror\x1b[0m: \x1b[1msubprocess-exited-with-error\x1b[0m",
    "  ",
    "  \x1b[31m×\x1b[0m \x1b[32mPreparing editable metadata\x1b[0m \x1b[1;32m(\x1b[0m\x1b[32mpyproject.toml\x1b[0m\x1b[1;32m)\x1b[0m did not run successfully.",
    "  \x1b[31m│\x1b[0m exit code: \x1b[1;36m1\x1b[0m",
    "  \x1b[31m╰─>\x1b[0m \x1b[31m[14 lines of output]\x1b[0m",
    "  \x1b[31m   \x1b[0m Traceback (most recent call last):",
    '  \x1b[31m   \x1b[0m   File "/opt/venv/lib/python3.11/site-packages/hatchling/build.py", line 83, in build_editable',
    "  \x1b[31m   \x1b[0m     whl_basename = build_hook(metadata_directory, config_settings)",
    "  \x1b[31m   \x1b[0m ModuleNotFoundError: No module named 'editables'",
    "  \x1b[31m   \x1b[0m \x1b[31m[end of output]\x1b[0m",
    "  ",
    "  \x1b[1;35mnote\x1b[0m: This error originates from a subprocess, and is likely not a problem with pip.",
    "\x1b[1;31merror\x1b[0m: \x1b[1mmetadata-generation-failed\x1b[0m",
    "",
    "\x1b[31m×\x1b[0m Encountered error while generating package metadata.",
    "\x1b[31m╰─>\x1b[0m See above for output.",
    "",
    "\x1b[1;35mnote\x1b[0m: This is an issue with the package mentioned above, not pip.",
    "\x1b[1;36mhint\x1b[0m: See above for details.",
    "The command '/bin/sh -c pip install --no-build-isolation --no-deps -e .' returned a non-zero code: 1",
]


def test_the_summary_is_the_real_error_not_pips_framing():
    first = str(build_failure("wholeloop-task:abc", PIP_TAIL)).splitlines()[0]
    assert "ModuleNotFoundError: No module named 'editables'" in first, first
    assert "See above" not in first and "\x1b" not in first and "(exit code 1)" in first


def test_a_tool_error_line_is_the_summary_when_there_is_no_exception():
    tail = [
        "Step 3/4 : RUN uv pip install -r /dev/stdin",
        "  × No solution found when resolving dependencies:",
        "  ╰─▶ Because there is no version of nosuchpkg==9.9 and you require nosuchpkg==9.9, we can conclude that your requirements are unsatisfiable.",
        "The command '/bin/sh -c uv pip install -r /dev/stdin' returned a non-zero code: 1",
    ]
    first = str(build_failure("wholeloop-env:abc", tail)).splitlines()[0]
    assert "no version of nosuchpkg==9.9" in first, first


@pytest.mark.docker
def test_a_failed_build_names_the_cause_and_keeps_the_whole_log(tmp_path, monkeypatch):
    monkeypatch.setenv("WHOLELOOP_CACHE", str(tmp_path / "cache"))
    script = (
        "import sys\n"
        "for i in range(80): print('noise line %d' % i)\n"
        "print('  \\x1b[31m   \\x1b[0m ModuleNotFoundError: No module named \\'editables\\'')\n"
        "print('\\x1b[1;31merror\\x1b[0m: subprocess-exited-with-error')\n"
        "print('\\x1b[1;36mhint\\x1b[0m: See above for details.')\n"
        "sys.exit(1)\n"
    )
    marker = uuid.uuid4().hex[:8]  # a new image every time: nothing cached
    spec = EnvSpec(setup=(f"echo {marker}", f'python3 -c "{script}"'), network=False)
    with pytest.raises(ImageBuildError) as caught:
        env_image(spec)
    message = str(caught.value)
    first = message.splitlines()[0]
    assert "ModuleNotFoundError: No module named 'editables'" in first and "See above" not in first, first
    assert "\x1b" not in message
    log_line = next(line for line in message.splitlines() if line.startswith("the whole build log: "))
    log = Path(log_line.removeprefix("the whole build log: "))
    assert log.parent == tmp_path / "cache" / "logs"
    text = log.read_text()
    assert "noise line 0" in text and "noise line 79" in text and "\x1b" not in text  # all of it, not the tail
