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

LangGraph runs LangChain's callbacks, so the same switch traces it. An agent made by
``langchain.agents.create_agent(..., name="weather_agent")`` is an ``invoke_agent
weather_agent`` span (``gen_ai.agent.name``; input the last user message, output its last
answer) with a ``chat`` span per model call and an ``execute_tool`` span per tool call inside:
a run with LLM and tool steps for ``tracesim.record_run()`` and run evaluators. A compiled
``StateGraph`` is one ``invoke_workflow <name>`` span (``gen_ai.workflow.name``: ``LangGraph``,
or the ``compile(name=...)``); its nodes are not spans, the calls they make are. Rules select
both by that name (``match: weather_agent``, ``match: LangGraph``). A graph's output is its last
message: a state without ``messages`` records its input (its fields as JSON) but no output, as
the instrumentation reads outputs from messages only; score such a graph through a traced
function that returns the answer. Streams (``stream``/``astream``) keep their token usage when
the model reports it: ``ChatOpenAI`` asks for it by default from OpenAI's endpoint only
(``stream_usage=True`` for others).

Why this instrumentation: it follows the GenAI semantic conventions tracesim reads everywhere
(``gen_ai.*``: operation, model, usage, agent and workflow names), it is built on the same
util-genai as the OpenAI integration (so a model call traced by both is one span), and it
costs an agent run no more CPU than OpenInference's LangChain instrumentation
(``benchmarks/bench_framework_langgraph.py``), which writes the LangChain objects it sees
serialized as JSON and no ``gen_ai.*`` attributes. Running OpenInference's alongside traces
every run twice, in two separate span trees: each agent's run is still right, but the trace
counts each model call twice.

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
