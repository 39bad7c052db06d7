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

The agent frameworks, each its own distribution too:

- ``pydantic_ai`` (``tracesim-pydantic-ai``): `instrument_pydantic_ai`, on pydantic-ai's own
  OpenTelemetry output (agent runs, model requests, tool calls), its content following
  tracesim's ``capture``.
- ``openai_agents`` (``tracesim-openai-agents``): `instrument_openai_agents`, the OpenAI Agents
  SDK's runs as spans in the current trace, on the OpenTelemetry project's processor; the SDK's
  own exporter (to OpenAI's servers) is replaced, so nothing leaves unredacted.
- ``litellm`` (``tracesim-litellm``): `instrument_litellm`, LiteLLM's ``completion`` /
  ``acompletion`` (streaming and tools included) as ``chat`` spans.
- ``mcp`` (``tracesim-mcp``): `instrument_mcp`, an MCP client's tool calls as ``execute_tool``
  spans with their arguments and result.

LangGraph goes through ``langchain``: a graph is an ``invoke_workflow`` span, its agents
``invoke_agent`` and its tools ``execute_tool`` spans.

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
    "instrument_litellm",
    "instrument_mcp",
    "instrument_openai",
    "instrument_openai_agents",
    "instrument_pydantic_ai",
    "uninstrument_anthropic",
    "uninstrument_langchain",
    "uninstrument_litellm",
    "uninstrument_mcp",
    "uninstrument_openai",
    "uninstrument_openai_agents",
    "uninstrument_pydantic_ai",
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


def instrument_pydantic_ai(*, capture: bool | None = None) -> bool:
    """Trace pydantic-ai agents: each run, model request and tool call a span under the current span.

    Built on pydantic-ai's own OpenTelemetry output (``invoke_agent <name>``, ``chat <model>``,
    ``execute_tool <name>``), sent through tracesim's configuration; prompts, answers and tool
    arguments and results are recorded when tracesim captures values (unless ``capture=False``
    here). Returns False when it was already on. Needs ``pip install 'tracesim[pydantic_ai]'``
    (Python 3.11 or later, as pydantic-ai).

    Raises:
        MissingIntegrationError: the integration or pydantic-ai is not installed.

    Example:
        >>> import tracesim
        >>> tracesim.instrument_pydantic_ai()  # doctest: +SKIP
        True
    """
    return find("pydantic_ai").instrument(capture)


def uninstrument_pydantic_ai() -> None:
    """Stop tracing pydantic-ai agents.

    Example:
        >>> import tracesim
        >>> tracesim.uninstrument_pydantic_ai()  # nothing to do when it was not on
    """
    uninstrument("pydantic_ai")


def instrument_openai_agents(*, capture: bool | None = None) -> bool:
    """Trace the OpenAI Agents SDK: workflows, agents and tools as spans in the current trace.

    Replaces the SDK's trace processors with one that turns its spans into OpenTelemetry spans
    (``invoke_workflow``, ``invoke_agent <name>``, ``execute_tool <name>``) under the current
    span; the SDK's own exporter to OpenAI's servers gets nothing. Model calls are traced by the
    OpenAI integration, which this turns on too. Content follows tracesim's ``capture`` (or
    ``capture`` here). Returns False when it was already on. Needs ``pip install
    'tracesim[openai_agents]'``.

    Raises:
        MissingIntegrationError: the integration or the Agents SDK is not installed.

    Example:
        >>> import tracesim
        >>> tracesim.instrument_openai_agents()  # doctest: +SKIP
        True
    """
    return find("openai_agents").instrument(capture)


def uninstrument_openai_agents() -> None:
    """Stop tracing the OpenAI Agents SDK (its previous trace processors are put back).

    Example:
        >>> import tracesim
        >>> tracesim.uninstrument_openai_agents()  # nothing to do when it was not on
    """
    uninstrument("openai_agents")


def instrument_litellm(*, capture: bool | None = None) -> bool:
    """Trace LiteLLM calls (``completion``, ``acompletion``, streaming and tools) as ``chat`` spans.

    Each call becomes a span under the current span with the provider, model, token usage and,
    when tracesim captures values (unless ``capture=False`` here), the messages. Returns False
    when it was already on. Needs ``pip install 'tracesim[litellm]'``.

    Raises:
        MissingIntegrationError: the integration or LiteLLM is not installed.

    Example:
        >>> import tracesim
        >>> tracesim.instrument_litellm()  # doctest: +SKIP
        True
    """
    return find("litellm").instrument(capture)


def uninstrument_litellm() -> None:
    """Stop tracing LiteLLM.

    Example:
        >>> import tracesim
        >>> tracesim.uninstrument_litellm()  # nothing to do when it was not on
    """
    uninstrument("litellm")


def instrument_mcp(*, capture: bool | None = None) -> bool:
    """Trace an MCP client's tool calls as ``execute_tool <name>`` spans.

    Every ``ClientSession.call_tool`` (directly, or through a framework's MCP tools) becomes a
    tool span under the current span, with the tool's arguments and result when tracesim
    captures values (unless ``capture=False`` here); a framework's own span for the same call
    gets the MCP attributes instead of a second span. Returns False when it was already on.
    Needs ``pip install 'tracesim[mcp]'``.

    Raises:
        MissingIntegrationError: the integration or the ``mcp`` SDK is not installed.

    Example:
        >>> import tracesim
        >>> tracesim.instrument_mcp()  # doctest: +SKIP
        True
    """
    return find("mcp").instrument(capture)


def uninstrument_mcp() -> None:
    """Stop tracing MCP tool calls.

    Example:
        >>> import tracesim
        >>> tracesim.uninstrument_mcp()  # nothing to do when it was not on
    """
    uninstrument("mcp")
