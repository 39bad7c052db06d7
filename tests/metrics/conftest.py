"""Instrumentations these tests turn on (``configure(instrument=[...])``) stay on in the process
after ``tracesim.shutdown()``: each test turns them off again, so later tests start clean."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import tracesim


@pytest.fixture(autouse=True)
def _uninstrumented() -> Iterator[None]:
    yield
    tracesim.uninstrument_openai()
    tracesim.uninstrument_langchain()
    tracesim.uninstrument_openai_agents()
