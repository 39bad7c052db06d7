"""tracesim's OpenAI Agents SDK integration: agent runs as spans (and runs) in tracesim's traces.

Installed with ``pip install 'tracesim[openai_agents]'`` (or ``pip install
tracesim-openai-agents``) and turned on with ``tracesim.instrument_openai_agents()`` or
``configure(instrument=["openai_agents"])``, which find `integration` through the
``tracesim.integrations`` entry point. A run (``Runner.run``, ``run_sync``, ``run_streamed``)
becomes::

    invoke_workflow Agent workflow        (RunConfig.workflow_name)
      invoke_agent weather_agent          gen_ai.agent.name; the run's input and final answer
        chat gpt-4o-mini                  each model call: model, tokens, messages
        execute_tool get_weather          the tool's arguments and result
        chat gpt-4o-mini
        handoff billing_agent             a handoff to another agent (its spans follow)

nested under the current span (a function traced with ``@tracesim.trace(kind="agent")``), so
the run is one tracesim run: ``tracesim show`` prints it, rules select the agent span by its
name (``gen_ai.agent.name``) and run evaluators score its tool calls.

**What it builds on, and why.** The SDK reports its runs to trace processors of its own. Three
maintained processors turn them into OpenTelemetry spans; this one extends the OpenTelemetry
project's, ``opentelemetry-instrumentation-genai-openai-agents`` (``GenAITracingProcessor``):

- it is built on ``opentelemetry-util-genai``, as tracesim's OpenAI, Anthropic and LangChain
  integrations are (same span names, attributes, content path, tracer provider);
- it makes no spans for model calls: tracesim's ``openai`` integration, which this one turns on,
  traces each client call once, with its tokens. OpenInference's processor
  (``openinference-instrumentation-openai-agents``) makes an LLM span per call from the SDK's
  own record, and with the client traced too every call was counted twice; OpenLLMetry's
  (``opentelemetry-instrumentation-openai-agents``) keeps the SDK's exporter by default, reads
  content from an environment variable only and names spans outside the GenAI conventions.

What this integration adds to the OpenTelemetry processor (in ``_processor.py``): the agent
span's input and output (the SDK's agent span carries neither: they are read from its model
calls), a tool's arguments and result, handoff spans; content written only when tracesim
captures it, bounded like every captured value, whatever util-genai's environment variable
says. ``RunConfig(trace_include_sensitive_data=False)`` keeps the SDK from recording content
at all: then there is none to write either.

**The SDK's own exporter is replaced.** By default the SDK sends every run to OpenAI's tracing
service (``api.openai.com/v1/traces/ingest``) whenever ``OPENAI_API_KEY`` is set, unredacted.
Turning this integration on replaces the SDK's processors with tracesim's
(``agents.set_trace_processors``), so runs leave only through tracesim, redacted;
``uninstrument_openai_agents()`` puts the previous processors back. **A later
``agents.set_trace_processors([...])`` by the application removes tracesim's processor** (and
its runs are then not traced): add processors with ``agents.add_trace_processor`` instead, or
call ``tracesim.instrument_openai_agents()`` again after it, which adds tracesim's processor
to the application's. Never disable the SDK's tracing
(``set_tracing_disabled(True)``, ``OPENAI_AGENTS_DISABLE_TRACING``): that stops this processor
too.

**Model calls** are spans of tracesim's ``openai`` integration, which ``instrument_openai_agents``
turns on (with the same ``capture``) and, if it was the one to turn it on, off again (one the
application turned on itself keeps its own ``capture``): the SDK's
OpenAI models (``OpenAIResponsesModel``, the default, and ``OpenAIChatCompletionsModel``) call
the ``openai`` client. A model on another client (``LitellmModel``, any-llm) gets its call spans
from that client's integration (``tracesim.instrument_litellm()`` for LiteLLM); without one,
the run has its agent and tool spans but no model-call spans, so no tokens.

Example:
    >>> import tracesim
    >>> tracesim.instrument_openai_agents()  # doctest: +SKIP
    True
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from tracesim_openai import integration as openai_integration

import tracesim
from tracesim.instrumentation import GenAIIntegration

__all__ = ["OpenAIAgentsIntegration", "integration"]

_SCOPE = "tracesim_openai_agents"
# what the OpenTelemetry processor supports (its package's ``_instruments``)
_SUPPORTED = ("openai-agents >= 0.3.3, < 1",)


class _Installed:
    """The processor installed in the SDK, as an instrumentor `GenAIIntegration` can drive.

    `GenAIIntegration` hands it the tracer provider and tracesim's completion hook (which
    writes the messages util-genai gives it when tracesim captures); instead of the
    OpenTelemetry instrumentor, which adds its processor next to the SDK's exporter or replaces
    it with its own class, this installs `Processor` in place of every other processor.
    """

    def __init__(self, capture: Callable[[], bool | None]) -> None:
        self._capture = capture
        self._processor: Any = None
        self._previous: list[Any] = []

    def instrument(
        self,
        *,
        tracer_provider: Any,
        completion_hook: Any,
        raise_exception_on_conflict: bool = False,
        **options: Any,
    ) -> None:
        from opentelemetry.instrumentation.dependencies import (
            DependencyConflictError,
            get_dependency_conflicts,
        )

        conflict = get_dependency_conflicts(_SUPPORTED)
        if conflict is not None and raise_exception_on_conflict:
            raise DependencyConflictError(conflict)

        from agents.tracing import set_trace_processors
        from opentelemetry.util.genai.handler import TelemetryHandler

        from tracesim_openai_agents._processor import Processor

        handler = TelemetryHandler(
            tracer_provider=tracer_provider,
            completion_hook=completion_hook,
            instrumentation_scope_name=_SCOPE,
            instrumentation_scope_version=tracesim.__version__,
        )
        tracer = tracer_provider.get_tracer(_SCOPE, tracesim.__version__)
        self._processor = Processor(handler, "openai", self._capture, tracer)
        self._previous = _processors()
        set_trace_processors([self._processor])

    def reinstate(self) -> None:
        """Add the processor again if the application's ``set_trace_processors`` removed it.

        The application chose its processors then: those tracesim replaced (the SDK's exporter
        to OpenAI among them) are not put back when it is turned off.
        """
        from agents.tracing import add_trace_processor

        if self._processor is not None and self._processor not in _processors():
            self._previous = []
            add_trace_processor(self._processor)

    def uninstrument(self) -> None:
        from agents.tracing import set_trace_processors

        processor, self._processor = self._processor, None
        if processor is None:
            return
        current = _processors()
        others = [p for p in current if p is not processor]
        if current[:1] == [processor]:
            # still as installed: the previous processors back, and any added since
            set_trace_processors(self._previous + others)
        else:  # the application set processors of its own since: those stay, alone
            set_trace_processors(others)
        self._previous = []
        processor.shutdown()


def _processors() -> list[Any]:
    """The SDK's processors now. It offers no public way to read them; the OpenTelemetry
    instrumentor reads them the same way, to restore them."""
    from agents.tracing import get_trace_provider

    multi = getattr(get_trace_provider(), "_multi_processor", None)
    return list(getattr(multi, "_processors", ()))


class OpenAIAgentsIntegration:
    """The switch ``instrument_openai_agents()`` / ``uninstrument_openai_agents()`` turn.

    ``instrument(capture)`` installs the processor in the Agents SDK (replacing its exporter to
    OpenAI) and turns tracesim's ``openai`` integration on for the model calls, with the same
    ``capture``, unless the application has turned it on (then it keeps its own ``capture``);
    ``uninstrument()`` restores the SDK's previous processors (unless the application has set
    its own since) and turns ``openai`` off again if it was off before.

    Example:
        >>> switch = OpenAIAgentsIntegration()
        >>> switch.uninstrument()  # off already: nothing to do
        >>> switch.capture is None  # follows tracesim's capture setting
        True
    """

    def __init__(self) -> None:
        self._genai = GenAIIntegration("openai_agents", self._load)
        self._lock = threading.Lock()
        self._installed: _Installed | None = None
        self._turned_openai_on = False

    @property
    def capture(self) -> bool | None:
        """The ``capture`` override given to `instrument` (None: tracesim's ``capture`` setting)."""
        return self._genai.capture

    def _load(self) -> Callable[[], _Installed]:
        import agents  # noqa: F401  (ImportError: the SDK is not installed -> its extra is named)
        import opentelemetry.instrumentation.genai.openai_agents  # noqa: F401

        return self._install

    def _install(self) -> _Installed:
        self._installed = _Installed(lambda: self._genai.capture)
        return self._installed

    def instrument(self, capture: bool | None) -> bool:
        """Turn tracing of the Agents SDK on (False when it was on already); ``capture`` applies
        either way, to the runs' content and to their model calls. When it was on and the
        application has replaced the SDK's processors since, tracesim's is added to them again.

        Raises:
            MissingIntegrationError: the SDK, or the instrumentation this builds on, is not
                installed, or the SDK is at a version it does not support.
        """
        with self._lock:
            turned_on = self._genai.instrument(capture)
            if not turned_on and self._installed is not None:
                self._installed.reinstate()
            # The model calls: tracesim's openai integration, with this capture when this turns
            # it on; left as it is (its own capture) when the application turned it on.
            if self._turned_openai_on or not openai_integration.instrumented:
                self._turned_openai_on = tracesim.instrument_openai(capture=capture) or self._turned_openai_on
            return turned_on

    def uninstrument(self) -> None:
        """Turn it off: the SDK's previous processors back, its runs no longer traced."""
        with self._lock:
            self._genai.uninstrument()
            self._installed = None
            if self._turned_openai_on:
                self._turned_openai_on = False
                tracesim.uninstrument_openai()


integration = OpenAIAgentsIntegration()
"""The switch tracesim's ``instrument_openai_agents()`` / ``uninstrument_openai_agents()`` turn."""
