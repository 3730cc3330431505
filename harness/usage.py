"""Token accounting: one `Usage` for models, result rows and reports.

A leaf (pydantic only): the run folder's records and every report import it without importing
the model adapters (`harness.models`), which a report never needs.
"""

from __future__ import annotations

from pydantic import BaseModel


class Usage(BaseModel):
    """Token counts of one or more turns; harness.models.types's docstring says what each one includes."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0  # of cache_write_tokens, those written for an hour (a dearer price)
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens
