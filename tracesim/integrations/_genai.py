"""What every integration shares: turning an OpenTelemetry GenAI instrumentation on and off.

The OpenTelemetry project's GenAI instrumentations (OpenAI, Anthropic, LangChain) are built on
one library, ``opentelemetry-util-genai``, which takes a tracer provider and a *completion
hook*. tracesim hands every one of them the same two things: `CurrentProvider`, so spans
follow tracesim's current configuration, and `_Content`, a hook that writes the messages on
the span when tracesim captures values. Content is set from code, never through the
instrumentation's environment variable, so ``capture`` means the same thing everywhere.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from typing import Any

from tracesim import _runtime
from tracesim._capture import capture_value
from tracesim._errors import TracesimError
from tracesim._guard import internal_error
from tracesim.integrations._provider import CurrentProvider

__all__ = ["GenAIIntegration", "MissingIntegrationError"]

# What the completion hook receives -> the GenAI attribute it is written to.
_CONTENT_ATTRIBUTES = (
    ("inputs", "gen_ai.input.messages"),
    ("outputs", "gen_ai.output.messages"),
    ("system_instruction", "gen_ai.system_instructions"),
    ("tool_definitions", "gen_ai.tool.definitions"),
)


class MissingIntegrationError(TracesimError, ImportError):
    """The integration's instrumentation is not installed; the message names the extra to install.

    Example:
        >>> str(MissingIntegrationError("openai"))
        "tracesim's openai integration needs its extra: pip install 'tracesim[openai]'"
    """

    def __init__(self, name: str) -> None:
        super().__init__(f"tracesim's {name} integration needs its extra: pip install 'tracesim[{name}]'")


class GenAIIntegration:
    """One instrumentation, turned on at most once, with its own ``capture`` override.

    ``load`` imports and returns the instrumentor class; an ImportError from it means the
    extra is missing. ``options`` go to the instrumentor's ``instrument()`` as they are.

    Example:
        >>> def load() -> type:
        ...     raise ImportError("not installed")
        >>> GenAIIntegration("example", load).uninstrument()  # off already: nothing to do
    """

    def __init__(self, name: str, load: Callable[[], Any], options: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.capture: bool | None = None  # None: follow tracesim's capture setting
        self._load = load
        self._options = dict(options or {})
        self._lock = threading.Lock()
        self._instrumentor: Any = None

    def instrument(self, capture: bool | None) -> bool:
        """Turn the instrumentation on (False if it already was); ``capture`` applies either way."""
        with self._lock:
            self.capture = capture
            if self._instrumentor is not None:
                return False
            try:
                instrumentor = self._load()()
            except ImportError:
                raise MissingIntegrationError(self.name) from None
            hook = _Content(self)
            instrumentor.instrument(tracer_provider=CurrentProvider(), completion_hook=hook, **self._options)
            self._instrumentor = instrumentor
            return True

    def uninstrument(self) -> None:
        """Turn the instrumentation off; calls made afterwards are not traced."""
        with self._lock:
            if self._instrumentor is not None:
                self._instrumentor.uninstrument()
                self._instrumentor = None


class _Content:
    """The completion hook: writes the messages on the span when tracesim captures content."""

    def __init__(self, integration: GenAIIntegration) -> None:
        self._integration = integration

    def on_completion(self, *, span: Any = None, **content: Any) -> None:
        try:
            self._write(span, content)
        except Exception:  # the instrumentation would only log it on its own logger, every call
            internal_error(f"{self._integration.name} integration content")

    def _write(self, span: Any, content: Mapping[str, Any]) -> None:
        runtime = _runtime.current
        if span is None or runtime is None or not span.is_recording():
            return
        if not runtime.capture.enabled or self._integration.capture is False:
            return
        for key, attribute in _CONTENT_ATTRIBUTES:
            value = content.get(key)
            if value:
                text = capture_value([_plain(item) for item in value], runtime.capture).text
                span.set_attribute(attribute, text)


def _plain(item: Any) -> Any:
    return dataclasses.asdict(item) if dataclasses.is_dataclass(item) and not isinstance(item, type) else item
