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

import dataclasses
import threading
from typing import Any

from tracesim import _runtime
from tracesim._capture import capture_value
from tracesim._errors import TracesimError
from tracesim.integrations._provider import CurrentProvider

__all__ = ["MissingIntegrationError", "instrument_openai", "uninstrument_openai"]

_lock = threading.Lock()
_instrumentor: Any = None
_capture: bool | None = None


class MissingIntegrationError(TracesimError, ImportError):
    """The integration's instrumentation is not installed; the message names the extra to install.

    Example:
        >>> str(MissingIntegrationError("openai"))
        "tracesim's openai integration needs its extra: pip install 'tracesim[openai]'"
    """

    def __init__(self, name: str) -> None:
        super().__init__(f"tracesim's {name} integration needs its extra: pip install 'tracesim[{name}]'")


class _Content:
    """The completion hook: writes the messages on the span when tracesim captures content."""

    def on_completion(
        self,
        *,
        inputs: list[Any],
        outputs: list[Any],
        system_instruction: list[Any],
        tool_definitions: list[Any] | None = None,
        span: Any = None,
        log_record: Any = None,
    ) -> None:
        runtime = _runtime.current
        if span is None or runtime is None or not span.is_recording():
            return
        if not runtime.capture.enabled or _capture is False:
            return
        options = runtime.capture
        for key, value in (
            ("gen_ai.input.messages", inputs),
            ("gen_ai.output.messages", outputs),
            ("gen_ai.system_instructions", system_instruction),
            ("gen_ai.tool.definitions", tool_definitions),
        ):
            if value:
                span.set_attribute(key, capture_value([_plain(item) for item in value], options).text)


def _plain(item: Any) -> Any:
    return dataclasses.asdict(item) if dataclasses.is_dataclass(item) and not isinstance(item, type) else item


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
    global _instrumentor, _capture
    with _lock:
        _capture = capture
        if _instrumentor is not None:
            return False
        try:
            from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor
        except ImportError:
            raise MissingIntegrationError("openai") from None
        instrumentor = OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=CurrentProvider(), completion_hook=_Content())
        _instrumentor = instrumentor
        return True


def uninstrument_openai() -> None:
    """Stop tracing the ``openai`` client.

    Example:
        >>> import tracesim.integrations
        >>> tracesim.integrations.uninstrument_openai()  # nothing to do when it was not on
    """
    global _instrumentor
    with _lock:
        if _instrumentor is not None:
            _instrumentor.uninstrument()
            _instrumentor = None
