"""Guards: OpenTelemetry's suppression key silences the LiteLLM integration's spans.

util-genai does not check the key itself: tracesim's provider does (``CurrentProvider`` in
``tracesim/instrumentation.py``). This test fails when that check is removed. LiteLLM talks to
the scripted server (tests/llm_server.py); ``suppression`` and ``names_when_suppressed`` come
from integrations/conftest.py.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before LiteLLM is imported: offline

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from llm_server import LLMServer

import tracesim

litellm = pytest.importorskip("litellm", reason="the 'litellm' extra is not installed")

pytestmark = [  # LiteLLM's own warnings (see test_litellm.py)
    pytest.mark.filterwarnings("ignore:.*using the `ReadOnly` qualifier:UserWarning"),
    pytest.mark.filterwarnings(
        "ignore:Accessing the 'model_.*' attribute on the instance:DeprecationWarning"
    ),
]


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _reset(server: LLMServer) -> Iterator[None]:
    server.reset()
    server.judge = lambda request: "Warsaw."
    yield
    tracesim.uninstrument_litellm()


def test_a_litellm_call_under_suppression_is_no_span(
    server: LLMServer, suppression: Callable[[], Any], names_when_suppressed: Any
) -> None:
    tracesim.instrument_litellm()

    def call(question: str) -> str:
        reply = litellm.completion(
            model="openai/gpt-4o-mini",
            api_base=server.base_url,
            api_key="test",
            max_retries=0,
            messages=[{"role": "user", "content": question}],
        )
        return str(reply.choices[0].message.content)

    assert names_when_suppressed(server, suppression, call) == ["chat gpt-4o-mini"]
