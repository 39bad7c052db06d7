"""Integrations: other libraries' calls as spans in tracesim's traces.

Each builds on a maintained OpenTelemetry instrumentation, installed with a tracesim extra,
and sends its spans through the provider of tracesim's current configuration, so they nest
under traced calls, pass the same redaction and can be scored by rules. The three for LLM
calls are the OpenTelemetry project's GenAI instrumentations, on one shared library
(``opentelemetry-util-genai``), so their spans carry the same GenAI attributes
(``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` / ``output_tokens``, and the
messages as ``gen_ai.input.messages`` / ``gen_ai.output.messages`` when tracesim captures
values):

- ``openai`` (``pip install 'tracesim[openai]'``): `instrument_openai`, on
  ``opentelemetry-instrumentation-genai-openai``: chat completions (sync, async, streaming,
  tool calls), embeddings, the Responses API.
- ``anthropic`` (``pip install 'tracesim[anthropic]'``): `instrument_anthropic`, on
  ``opentelemetry-instrumentation-genai-anthropic``: Messages (sync, async, streaming, tool use).
  The anthropic 2.x client also emits a span of its own per API call (``anthropic.messages.
  create``, metadata only) through the global provider: it nests under the ``chat`` span; a
  client made with ``open_telemetry=False`` leaves it out.
- ``langchain`` (``pip install 'tracesim[langchain]'``): `instrument_langchain`, on
  ``opentelemetry-instrumentation-genai-langchain``: chains, chat models, agents, tools,
  retrievers. With ``openai`` on too, a ``ChatOpenAI`` call stays one span: the client's
  details are added to LangChain's span instead of a second one.

``configure(instrument=["openai", "anthropic", "langchain"])`` (or ``TRACESIM_INSTRUMENT=
openai,anthropic``) turns them on by name.

Example:
    >>> import tracesim
    >>> tracesim.instrument_anthropic()  # doctest: +SKIP
    True
"""

from tracesim.integrations._anthropic import instrument_anthropic, uninstrument_anthropic
from tracesim.integrations._genai import MissingIntegrationError
from tracesim.integrations._langchain import instrument_langchain, uninstrument_langchain
from tracesim.integrations._openai import instrument_openai, uninstrument_openai

__all__ = [
    "MissingIntegrationError",
    "instrument_anthropic",
    "instrument_langchain",
    "instrument_openai",
    "uninstrument_anthropic",
    "uninstrument_langchain",
    "uninstrument_openai",
]
