"""Grading: apply the agent's patch safely, undo what it must not change, run the hidden tests,
decide the outcome; and what the agent hears between attempts."""

from .feedback import MODES as FEEDBACK_MODES
from .feedback import feedback_text
from .grade import HiddenRun, HiddenTests, TestPatchError, grade, prepare_hidden_tests, run_hidden_tests
from .outcome import GRADE_SCHEMA, GRADER_VERSION, NOT_SCORED, Grade, Outcome, Stripped, TestTally, classify
from .patching import touched_files

__all__ = [
    "FEEDBACK_MODES",
    "GRADER_VERSION",
    "GRADE_SCHEMA",
    "Grade",
    "HiddenRun",
    "HiddenTests",
    "NOT_SCORED",
    "Outcome",
    "Stripped",
    "TestPatchError",
    "TestTally",
    "classify",
    "feedback_text",
    "grade",
    "prepare_hidden_tests",
    "run_hidden_tests",
    "touched_files",
]
