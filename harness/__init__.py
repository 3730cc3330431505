"""wholeloop: which coding agent actually works on *your* code."""

__version__ = "0.1.0"
