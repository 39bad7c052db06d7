"""tracesim's Anthropic integration: every ``anthropic`` Messages call a span in tracesim's traces.

Installed with ``pip install 'tracesim[anthropic]'`` (or ``pip install tracesim-anthropic``) and
turned on with ``tracesim.instrument_anthropic()`` or ``configure(instrument=["anthropic"])``,
which find `integration` through the ``tracesim.integrations`` entry point.

Built on ``opentelemetry-instrumentation-genai-anthropic`` (the OpenTelemetry project's, on the
same ``opentelemetry-util-genai`` as the OpenAI integration, so both write the same GenAI
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

Example:
    >>> import tracesim
    >>> tracesim.instrument_anthropic()  # doctest: +SKIP
    True
"""

from __future__ import annotations

import importlib
from typing import Any

from tracesim.instrumentation import GenAIIntegration

__all__ = ["integration"]


def _load() -> Any:
    from opentelemetry.instrumentation.genai.anthropic import AnthropicInstrumentor

    # Without the client the instrumentor would quietly do nothing; looked for second, as the
    # instrumentor's absence is found without the client's slower import.
    importlib.import_module("anthropic")
    return AnthropicInstrumentor


integration = GenAIIntegration("anthropic", _load)
"""The switch tracesim's ``instrument_anthropic()`` / ``uninstrument_anthropic()`` turn."""
