"""tracesim's OpenAI integration: every ``openai`` client call a span in tracesim's traces.

Installed with ``pip install 'tracesim[openai]'`` (or ``pip install tracesim-openai``) and turned
on with ``tracesim.instrument_openai()`` or ``configure(instrument=["openai"])``, which find
`integration` through the ``tracesim.integrations`` entry point.

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

Example:
    >>> import tracesim
    >>> tracesim.instrument_openai(capture=False)  # doctest: +SKIP
    True
"""

from __future__ import annotations

from typing import Any

from tracesim.instrumentation import GenAIIntegration

__all__ = ["integration"]


def _load() -> Any:
    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

    return OpenAIInstrumentor


integration = GenAIIntegration("openai", _load)
"""The switch tracesim's ``instrument_openai()`` / ``uninstrument_openai()`` turn."""
