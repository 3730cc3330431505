"""One exception hierarchy for everything the sandbox layer can raise.

Docker SDK and git errors are translated at this boundary; callers never see
``docker.errors`` or ``git.exc`` types. Families are grouped by *why* a caller
catches them: infrastructure problems are not the agent's fault and end an
attempt as ``infra_error``; input problems are the task author's to fix.
"""

from __future__ import annotations


class SandboxError(Exception):
    """Root of every error raised by the sandbox layer."""

    #: What the user can do about it; shown under the message by the CLI.
    hint: str = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint


# --- infrastructure: the machine, not the agent or the task -------------------------------


class InfraError(SandboxError):
    """The machine could not do what was asked; never the agent's failure."""


class EngineUnavailable(InfraError):
    """The Docker engine cannot be reached or answered with a server error."""

    hint = "Start the engine (scripts/setup.sh does it) and check `wholeloop doctor`."


class ImageNotFound(InfraError):
    """An image is neither present locally nor pullable."""

    hint = "Build the offline base image with `wholeloop images bootstrap`, or pull it."


class ImageBuildError(InfraError):
    """Building an environment or task image failed; the log tail is in the message."""


class ContainerGone(InfraError):
    """The container stopped or vanished while it was being used."""


# --- inside the container: things a tool call can hit -----------------------------------


class ExecError(SandboxError):
    """A command could not be run at all inside the container (not: it exited non-zero)."""


class ContainerBroken(SandboxError):
    """The container cannot be started again because of what its files hold (a file where a bind
    mount or the working folder must be), while a fresh container of the same image starts: the
    doing of whatever ran in it (the agent), not the machine's."""


class FileOpError(SandboxError):
    """Reading or writing a file in the container failed (missing, a directory, too large)."""


class DiskLimitReached(SandboxError):
    """A command (or a file write) filled the container's disk limit: the attempt ends with stop
    reason `disk_limit`. Not an infrastructure error: the agent wrote it. `result` is the
    ExecResult of the command that filled it (None for a file write)."""

    stop_reason = "disk_limit"

    def __init__(self, message: str, *, result=None, used: float = 0.0, limit: float = 0.0) -> None:
        super().__init__(message)
        self.result, self.used, self.limit = result, used, limit  # bytes written, bytes allowed


class DiskSpaceError(SandboxError):
    """A run would need more disk than the engine has free (workers x the disk limit)."""

    hint = "lower --workers or --disk, or free space on the engine's disk"


# --- inputs: the task author's to fix ---------------------------------------------------


class InputError(SandboxError):
    """A task's inputs are wrong: missing repository, unknown commit, bad patch."""


class RepositoryError(InputError):
    """The repository or commit named by a task cannot be read."""


class PatchError(InputError):
    """A patch is not a valid patch or does not apply."""
