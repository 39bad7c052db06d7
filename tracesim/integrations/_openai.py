"""`instrument_openai`: every ``openai`` client call a span, on OpenTelemetry's own instrumentation.

Built on ``opentelemetry-instrumentation-genai-openai`` (the OpenTelemetry project's, formerly
``opentelemetry-instrumentation-openai-v2``): chat completions sync and async, streaming (token
counts with ``stream_options={"include_usage": True}``), tool calls, embeddings and the
Responses API, with the GenAI semantic conventions (``gen_ai.request.model``,
``gen_ai.usage.input_tokens`` / ``output_tokens``, ``gen_ai.response.*``). tracesim adds:

- its spans go through tracesim's current configuration (nested under traced calls, redacted
  in the export path like every span), whatever provider is global;
- message content follows tracesim's ``capture`` setting, from code (no environment variable):
  ``gen_ai.input.messages``, ``gen_ai.output.messages`` and ``gen_ai.system_instructions`` as
  JSON, bounded like captured values;
- an evaluator's own model calls are never traced (the instrumentation ignores the standard
  suppression key; tracesim's provider honours it).
"""

from __future__ import annotations

from typing import Any

from tracesim.integrations._genai import GenAIIntegration

__all__ = ["instrument_openai", "uninstrument_openai"]


def _load() -> Any:
    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

    return OpenAIInstrumentor


OPENAI = GenAIIntegration("openai", _load)


def instrument_openai(*, capture: bool | None = None) -> bool:
    """Trace every call of the ``openai`` client (sync, async, streaming, tools, embeddings, Responses).

    Call it once at start-up, before or after `tracesim.configure` (``configure(instrument=
    ["openai"])`` does it from a configuration file). Each call becomes a span under the
    current span, named like ``chat gpt-4o-mini``, with the model, token usage and, when
    tracesim captures values (``capture=True``, the default, unless ``capture=False`` here),
    the messages. Returns False when it was already on. Needs ``pip install 'tracesim[openai]'``.

    Raises:
        MissingIntegrationError: the instrumentation package is not installed.

    Example:
        >>> import tracesim
        >>> tracesim.instrument_openai(capture=False)  # doctest: +SKIP
        True
    """
    return OPENAI.instrument(capture)


def uninstrument_openai() -> None:
    """Stop tracing the ``openai`` client.

    Example:
        >>> import tracesim
        >>> tracesim.uninstrument_openai()  # nothing to do when it was not on
    """
    OPENAI.uninstrument()
