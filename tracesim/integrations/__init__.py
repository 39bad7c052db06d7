"""Integrations: other libraries' calls as spans in tracesim's traces.

Each builds on a maintained OpenTelemetry instrumentation, installed with a tracesim extra,
and sends its spans through the provider of tracesim's current configuration, so they nest
under traced calls, pass the same redaction and can be scored by rules.

- ``openai`` (``pip install 'tracesim[openai]'``): `instrument_openai`, on the OpenTelemetry
  project's ``opentelemetry-instrumentation-genai-openai``.

Example:
    >>> import tracesim
    >>> tracesim.instrument_openai()  # doctest: +SKIP
    True
"""

from tracesim.integrations._openai import MissingIntegrationError, instrument_openai, uninstrument_openai

__all__ = ["MissingIntegrationError", "instrument_openai", "uninstrument_openai"]
