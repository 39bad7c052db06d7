"""tracesim's LangChain integration: LangChain runs as spans, on OpenTelemetry's own instrumentation.

Installed with ``pip install 'tracesim[langchain]'`` (or ``pip install tracesim-langchain``) and
turned on with ``tracesim.instrument_langchain()`` or ``configure(instrument=["langchain"])``,
which find `integration` through the ``tracesim.integrations`` entry point.

Built on ``opentelemetry-instrumentation-genai-langchain`` (the OpenTelemetry project's, on the
same ``opentelemetry-util-genai`` as the OpenAI integration): a callback handler added to every
LangChain callback manager turns chat model calls into ``chat <model>`` spans (model, token
usage, finish reasons), a chain (``prompt | model | parser``) into an ``invoke_workflow
<name>`` span, agents into ``invoke_agent``, tools into ``execute_tool`` and retrievers into
``retrieval`` spans. Spans go through tracesim's current configuration and messages follow
tracesim's ``capture`` setting, as for OpenAI; so do a tool's arguments and result
(``gen_ai.tool.call.arguments`` / ``.result``, bounded like every captured value), which the
instrumentation itself writes only when its own environment variable asks for it.

With the OpenAI integration on as well, a ``ChatOpenAI`` call is still one span: util-genai
sees the client's call running inside LangChain's ``chat`` span and, instead of a second span,
adds what the client learnt (response id, token usage) to LangChain's.

Example:
    >>> import tracesim
    >>> tracesim.instrument_langchain()  # doctest: +SKIP
    True
"""

from __future__ import annotations

from typing import Any

from tracesim.instrumentation import GenAIIntegration

__all__ = ["integration"]


def _load() -> Any:
    from opentelemetry.instrumentation.genai.langchain import LangChainInstrumentor

    return LangChainInstrumentor


# The instrumentor declares a dependency on the ``langchain`` distribution, yet patches only
# ``langchain_core`` (and ``langgraph`` when present): its check would quietly turn it off for
# an application that installed langchain-core alone. Importing it proves langchain-core is there.
integration = GenAIIntegration("langchain", _load, {"skip_dep_check": True})
"""The switch tracesim's ``instrument_langchain()`` / ``uninstrument_langchain()`` turn."""
