"""tracesim's `InstrumentationSettings` for pydantic-ai: its provider, and content that follows capture.

Imported only once pydantic-ai is known to be installed (``integration.instrument``), as it
subclasses pydantic-ai's settings.
"""

from __future__ import annotations

from typing import Literal, Protocol

from opentelemetry.metrics import NoOpMeterProvider
from pydantic_ai.models.instrumented import InstrumentationSettings

from tracesim.instrumentation import CurrentProvider, captures

__all__ = ["VERSION", "TracesimSettings"]

VERSION: Literal[6] = 6
"""pydantic-ai's message format: tool results in ``role: "tool"`` messages (see the package's docstring)."""


class _Capture(Protocol):
    capture: bool | None


class TracesimSettings(InstrumentationSettings):
    """pydantic-ai's settings with ``include_content`` read from tracesim at each use.

    pydantic-ai reads ``include_content`` when a run starts and when it writes a span's content,
    never keeping it from the settings' creation: so a property that asks
    `tracesim.instrumentation.captures` makes ``configure(capture=False)`` (or the integration's
    own ``capture=False``) apply to the next run, with no re-instrumenting.

    Example:
        >>> class Switch:
        ...     capture = False
        >>> TracesimSettings(Switch()).include_content
        False
    """

    def __init__(self, switch: _Capture) -> None:
        self._switch = switch
        super().__init__(
            tracer_provider=CurrentProvider(),
            meter_provider=NoOpMeterProvider(),
            include_binary_content=False,
            include_content=False,  # ignored: the property below answers
            include_model_request_parameters=False,
            version=VERSION,
        )

    @property
    def include_content(self) -> bool:
        """Whether content is recorded right now: tracesim captures, and the override allows it."""
        return captures(self._switch.capture)

    @include_content.setter
    def include_content(self, value: bool) -> None:
        """Set by pydantic-ai's ``__init__``; tracesim's capture decides instead."""
