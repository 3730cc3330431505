"""Tasks: the spec format (`spec.py`, a leaf of the harness), SWE-bench import and export."""

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
