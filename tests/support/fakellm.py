"""The scripted provider (harness/agents/external/scripted_provider.py, shipped for `wholeloop
agents verify`) under the name tests have always imported it by, and its fixture."""

from __future__ import annotations

import pytest

from harness.agents.external.scripted_provider import (
    CHUNK,
    Call,
    Error,
    FakeLLM,
    Reply,
    Request,
    Tokens,
    echo_key_401,
)

__all__ = ["CHUNK", "Call", "Error", "FakeLLM", "Reply", "Request", "Tokens", "echo_key_401", "fake_llm"]


@pytest.fixture
def fake_llm():
    """A running FakeLLM, stopped after the test."""
    with FakeLLM() as server:
        yield server
