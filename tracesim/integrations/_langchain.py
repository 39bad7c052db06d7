"""`instrument_langchain`: LangChain runs as spans, on OpenTelemetry's own instrumentation.

Built on ``opentelemetry-instrumentation-genai-langchain`` (the OpenTelemetry project's, on the
same ``opentelemetry-util-genai`` as `instrument_openai`): a callback handler added to every
LangChain callback manager turns chat model calls into ``chat <model>`` spans (model, token
usage, finish reasons), a chain (``prompt | model | parser``) into an ``invoke_workflow
<name>`` span, agents into ``invoke_agent``, tools into ``execute_tool`` and retrievers into
``retrieval`` spans. Spans go through tracesim's current configuration and messages follow
tracesim's ``capture`` setting, as for OpenAI; a tool's arguments and result are not recorded
(the instrumentation writes them only when its own environment variable asks for it).

With `instrument_openai` on as well, a ``ChatOpenAI`` call is still one span: util-genai sees
the client's call running inside LangChain's ``chat`` span and, instead of a second span,
adds what the client learnt (response id, token usage) to LangChain's.
"""

from __future__ import annotations

from typing import Any

from tracesim.integrations._genai import GenAIIntegration

__all__ = ["instrument_langchain", "uninstrument_langchain"]


def _load() -> Any:
    from opentelemetry.instrumentation.genai.langchain import LangChainInstrumentor

    return LangChainInstrumentor


# The instrumentor declares a dependency on the ``langchain`` distribution, yet patches only
# ``langchain_core`` (and ``langgraph`` when present): its check would quietly turn it off for
# an application that installed langchain-core alone. Importing it proves langchain-core is there.
LANGCHAIN = GenAIIntegration("langchain", _load, {"skip_dep_check": True})


def instrument_langchain(*, capture: bool | None = None) -> bool:
    """Trace LangChain chat models, agents, tools and retrievers as GenAI spans.

    Call it once at start-up, before or after `tracesim.configure` (``configure(instrument=
    ["langchain"])`` does it from a configuration file). A ``ChatOpenAI`` (or other chat
    model) call becomes a ``chat <model>`` span under the current span, with the model, token
    usage and, when tracesim captures values (unless ``capture=False`` here), the messages.
    Returns False when it was already on. Needs ``pip install 'tracesim[langchain]'``.

    Raises:
        MissingIntegrationError: langchain-core or the instrumentation is not installed.

    Example:
        >>> import tracesim
        >>> tracesim.instrument_langchain()  # doctest: +SKIP
        True
    """
    return LANGCHAIN.instrument(capture)


def uninstrument_langchain() -> None:
    """Stop tracing LangChain.

    Example:
        >>> import tracesim
        >>> tracesim.uninstrument_langchain()  # nothing to do when it was not on
    """
    LANGCHAIN.uninstrument()
