"""Grading: apply the agent's patch safely, undo what it must not change, run the hidden tests,
decide the outcome; and what the agent hears between attempts."""

from .feedback import MODES as FEEDBACK_MODES
from .feedback import feedback_text
from .grade import HiddenRun, apply_hidden_tests, grade, run_hidden_tests
from .outcome import GRADE_SCHEMA, NOT_SCORED, Grade, Outcome, TestTally, classify
from .patching import apply_patch, touched_files

__all__ = ["FEEDBACK_MODES", "GRADE_SCHEMA", "Grade", "HiddenRun", "NOT_SCORED", "Outcome", "TestTally", "apply_hidden_tests", "apply_patch",
           "classify", "feedback_text", "grade", "run_hidden_tests", "touched_files"]
