"""`instrument_anthropic`: every ``anthropic`` Messages call a span, on OpenTelemetry's own instrumentation.

Built on ``opentelemetry-instrumentation-genai-anthropic`` (the OpenTelemetry project's, on the
same ``opentelemetry-util-genai`` as `instrument_openai`, so both write the same GenAI
attributes): ``messages.create`` sync and async, ``messages.stream`` and ``stream=True``, tool
use, the beta Messages API, with ``gen_ai.provider.name=anthropic``, ``gen_ai.request.model``,
``gen_ai.usage.input_tokens`` / ``output_tokens`` and ``gen_ai.response.finish_reasons``.
Spans go through tracesim's current configuration and content follows tracesim's ``capture``
setting, as for OpenAI.

The anthropic 2.x client also traces itself: one ``anthropic.messages.create`` CLIENT span
per API call (model, tokens, HTTP details, no content unless asked), made with the global
tracer provider (tracesim's, by default). With the instrumentation on, that span nests
under its ``chat <model>`` span, like an HTTP client's span would; a client made with
``open_telemetry=False`` (or ``ANTHROPIC_OPEN_TELEMETRY=false``) leaves it out.
"""

from __future__ import annotations

import importlib
from typing import Any

from tracesim.integrations._genai import GenAIIntegration

__all__ = ["instrument_anthropic", "uninstrument_anthropic"]


def _load() -> Any:
    from opentelemetry.instrumentation.genai.anthropic import AnthropicInstrumentor

    # Without the client the instrumentor would quietly do nothing; looked for second, as the
    # instrumentor's absence is found without the client's slower import.
    importlib.import_module("anthropic")
    return AnthropicInstrumentor


ANTHROPIC = GenAIIntegration("anthropic", _load)


def instrument_anthropic(*, capture: bool | None = None) -> bool:
    """Trace every Messages call of the ``anthropic`` client (sync, async, streaming, tool use).

    Call it once at start-up, before or after `tracesim.configure` (``configure(instrument=
    ["anthropic"])`` does it from a configuration file). Each call becomes a span under the
    current span, named like ``chat claude-sonnet-4-5``, with the model, token usage and, when
    tracesim captures values (unless ``capture=False`` here), the messages and the system
    prompt. Returns False when it was already on. Needs ``pip install 'tracesim[anthropic]'``.

    Raises:
        MissingIntegrationError: the client or its instrumentation is not installed.

    Example:
        >>> import tracesim
        >>> tracesim.instrument_anthropic()  # doctest: +SKIP
        True
    """
    return ANTHROPIC.instrument(capture)


def uninstrument_anthropic() -> None:
    """Stop tracing the ``anthropic`` client.

    Example:
        >>> import tracesim
        >>> tracesim.uninstrument_anthropic()  # nothing to do when it was not on
    """
    ANTHROPIC.uninstrument()
