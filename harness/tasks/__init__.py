"""The task model: the spec format (`spec.py`, a leaf of the harness) that grading, agents and runs read.

The pipelines that write specs (mining, checking, environments, secrets, statements, SWE-bench import)
are `harness.authoring`."""

from .spec import (
    SYSTEM_CA_BUNDLES,
    Environment,
    HiddenTests,
    LimitsSpec,
    Task,
    TaskSpecError,
    Timeouts,
    dump_task,
    load_task,
    load_tasks,
    spec_files,
)

__all__ = [
    "Environment",
    "HiddenTests",
    "LimitsSpec",
    "SYSTEM_CA_BUNDLES",
    "Task",
    "TaskSpecError",
    "Timeouts",
    "dump_task",
    "load_task",
    "load_tasks",
    "spec_files",
]
