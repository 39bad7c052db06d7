"""The scripted model server every test here talks to: one per module, reset before each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llm_server import LLMServer


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _fresh(server: LLMServer) -> None:
    server.reset()
