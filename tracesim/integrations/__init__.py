"""Integrations: other libraries' calls as spans in tracesim's traces.

Each integration is its own distribution, installed with the tracesim extra of the same name,
and builds on a maintained OpenTelemetry instrumentation. Its spans go through the provider
of tracesim's current configuration, so they nest under traced calls, pass the same redaction
and can be scored by rules. The three for LLM calls are the OpenTelemetry project's GenAI
instrumentations, on one shared library (``opentelemetry-util-genai``), so their spans carry
the same GenAI attributes (``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` /
``output_tokens``, and the messages as ``gen_ai.input.messages`` / ``gen_ai.output.messages``
when tracesim captures values):

- ``openai`` (``pip install 'tracesim[openai]'``, the ``tracesim-openai`` distribution):
  `instrument_openai`, on ``opentelemetry-instrumentation-genai-openai``: chat completions
  (sync, async, streaming, tool calls), embeddings, the Responses API.
- ``anthropic`` (``pip install 'tracesim[anthropic]'``, ``tracesim-anthropic``):
  `instrument_anthropic`, on ``opentelemetry-instrumentation-genai-anthropic``: Messages (sync,
  async, streaming, tool use). The anthropic 2.x client also emits a span of its own per API
  call (``anthropic.messages.create``, metadata only) through the global provider: it nests
  under the ``chat`` span; a client made with ``open_telemetry=False`` leaves it out.
- ``langchain`` (``pip install 'tracesim[langchain]'``, ``tracesim-langchain``):
  `instrument_langchain`, on ``opentelemetry-instrumentation-genai-langchain``: chains, chat
  models, agents, tools, retrievers. With ``openai`` on too, a ``ChatOpenAI`` call stays one
  span: the client's details are added to LangChain's span instead of a second one.

``configure(instrument=["openai", "anthropic", "langchain"])`` (or ``TRACESIM_INSTRUMENT=
openai,anthropic``) turns them on by name. tracesim finds each installed integration through
the ``tracesim.integrations`` entry points (see `tracesim.instrumentation`, the API they
build on).

Example:
    >>> import tracesim
    >>> tracesim.instrument_anthropic()  # doctest: +SKIP
    True
"""

from tracesim.instrumentation import MissingIntegrationError
from tracesim.integrations._registry import find, uninstrument

__all__ = [
    "MissingIntegrationError",
    "instrument_anthropic",
    "instrument_langchain",
    "instrument_openai",
    "uninstrument_anthropic",
    "uninstrument_langchain",
    "uninstrument_openai",
]


def instrument_openai(*, capture: bool | None = None) -> bool:
    """Trace every call of the ``openai`` client (sync, async, streaming, tools, embeddings, Responses).

    Call it once at start-up, before or after `tracesim.configure` (``configure(instrument=
    ["openai"])`` does it from a configuration file). Each call becomes a span under the
    current span, named like ``chat gpt-4o-mini``, with the model, token usage and, when
    tracesim captures values (``capture=True``, the default, unless ``capture=False`` here),
    the messages. Returns False when it was already on. Needs ``pip install 'tracesim[openai]'``.

    Raises:
        MissingIntegrationError: the integration or its instrumentation is not installed.

    Example:
        >>> import tracesim
        >>> tracesim.instrument_openai(capture=False)  # doctest: +SKIP
        True
    """
    return find("openai").instrument(capture)


def uninstrument_openai() -> None:
    """Stop tracing the ``openai`` client.

    Example:
        >>> import tracesim
        >>> tracesim.uninstrument_openai()  # nothing to do when it was not on
    """
    uninstrument("openai")


def instrument_anthropic(*, capture: bool | None = None) -> bool:
    """Trace every Messages call of the ``anthropic`` client (sync, async, streaming, tool use).

    Call it once at start-up, before or after `tracesim.configure` (``configure(instrument=
    ["anthropic"])`` does it from a configuration file). Each call becomes a span under the
    current span, named like ``chat claude-sonnet-4-5``, with the model, token usage and, when
    tracesim captures values (unless ``capture=False`` here), the messages and the system
    prompt. Returns False when it was already on. Needs ``pip install 'tracesim[anthropic]'``.

    Raises:
        MissingIntegrationError: the integration, the client or its instrumentation is not installed.

    Example:
        >>> import tracesim
        >>> tracesim.instrument_anthropic()  # doctest: +SKIP
        True
    """
    return find("anthropic").instrument(capture)


def uninstrument_anthropic() -> None:
    """Stop tracing the ``anthropic`` client.

    Example:
        >>> import tracesim
        >>> tracesim.uninstrument_anthropic()  # nothing to do when it was not on
    """
    uninstrument("anthropic")


def instrument_langchain(*, capture: bool | None = None) -> bool:
    """Trace LangChain chat models, agents, tools and retrievers as GenAI spans.

    Call it once at start-up, before or after `tracesim.configure` (``configure(instrument=
    ["langchain"])`` does it from a configuration file). A ``ChatOpenAI`` (or other chat
    model) call becomes a ``chat <model>`` span under the current span, with the model, token
    usage and, when tracesim captures values (unless ``capture=False`` here), the messages.
    Returns False when it was already on. Needs ``pip install 'tracesim[langchain]'``.

    Raises:
        MissingIntegrationError: the integration, langchain-core or the instrumentation is not installed.

    Example:
        >>> import tracesim
        >>> tracesim.instrument_langchain()  # doctest: +SKIP
        True
    """
    return find("langchain").instrument(capture)


def uninstrument_langchain() -> None:
    """Stop tracing LangChain.

    Example:
        >>> import tracesim
        >>> tracesim.uninstrument_langchain()  # nothing to do when it was not on
    """
    uninstrument("langchain")
