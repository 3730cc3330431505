"""Sandbox backends by name, and the one place that decides the default.

A backend (`sandbox.base.Backend`) builds or finds the images a task's sandboxes start from, says
where their facts are, and starts the sandboxes. Grading, the runner, agent installs and `tasks
check` take one; when none is given they ask `default_backend()`. A new backend is one file (a
class keeping `sandbox.base.Backend`, checked by `sandbox.conformance`) plus one line in
`SANDBOX_BACKENDS`, or an entry point in the `wholeloop.sandboxes` group of its own package.
"""

from __future__ import annotations

from sandbox import Backend

from .registry import Registry

SANDBOX_BACKENDS = Registry(
    "wholeloop.sandboxes",
    "sandbox backend",
    {
        "docker": "sandbox.docker:DockerBackend",
    },
)
DEFAULT_BACKEND = "docker"


def backend(name: str = DEFAULT_BACKEND) -> Backend:
    """A new backend of the registered kind `name` (raises UnknownName, a UserError, listing the known)."""
    made: Backend = SANDBOX_BACKENDS.get(name)()
    return made


def default_backend() -> Backend:
    """The backend used when a caller names none."""
    return backend(DEFAULT_BACKEND)
