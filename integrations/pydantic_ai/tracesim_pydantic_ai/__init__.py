"""tracesim's pydantic-ai integration: agent runs as spans, on pydantic-ai's own OpenTelemetry output.

Installed with ``pip install 'tracesim[pydantic_ai]'`` (or ``pip install tracesim-pydantic-ai``;
Python 3.11 or later, as pydantic-ai) and turned on with ``tracesim.instrument_pydantic_ai()``
or ``configure(instrument=["pydantic_ai"])``, which find `integration` through the
``tracesim.integrations`` entry point.

Built on what pydantic-ai emits itself, turned on for every agent with ``Agent.instrument_all``:
an ``invoke_agent <name>`` span per run (``gen_ai.agent.name``, the final output as
``final_result``, the whole conversation as ``pydantic_ai.all_messages``, the run's tokens as
``gen_ai.aggregated_usage.*``, which are never added to the calls'), a ``chat <model>`` span
per model request (model, ``gen_ai.usage.*`` tokens, ``gen_ai.input.messages`` /
``gen_ai.output.messages``) and an ``execute_tool <tool>`` span per tool call
(``gen_ai.tool.call.arguments`` / ``.result``). tracesim reads all of these as they are: a run
is built from them, a rule selects the agent span by its agent's name, ``tracesim show`` prints
them. The candidates weighed:

- pydantic-ai's own output (chosen): the framework's maintainers keep it in step with the
  framework (streaming, retries, output tools, durable execution), it follows the OpenTelemetry
  GenAI conventions, and it takes a tracer provider and a content switch from code.
- OpenInference's ``openinference-instrumentation-pydantic-ai``: a span processor that renames
  these same spans' attributes into OpenInference's; it needs the output above to exist and adds
  nothing tracesim does not already read.
- Logfire's ``instrument_pydantic_ai()``: the same output, sent through Logfire's own SDK and
  exporter, where tracesim's redaction never sees it.

What the integration chooses for pydantic-ai (`InstrumentationSettings`, built once):

- the tracer provider is tracesim's `~tracesim.instrumentation.CurrentProvider`: spans nest under
  the current span and follow ``configure()`` / ``shutdown()``, honouring suppression;
- content (prompts, answers, tool arguments and results, the final output) follows tracesim's
  ``capture`` at the moment each run starts, never the value it had when instrumented:
  ``include_content`` is read by pydantic-ai for every run, and here it asks
  `tracesim.instrumentation.captures` (with ``instrument_pydantic_ai(capture=False)`` as an
  override). Whatever is recorded passes tracesim's redaction and length bound on export;
- message format ``version=6``: a tool's result goes in a ``role: "tool"`` message, the role the
  GenAI conventions pair with its ``tool_call_response`` part, instead of version 5's (the
  default) ``role: "user"``, which shows a tool's output as something the user said, to tracesim
  and to any backend reading the role;
- no metrics: pydantic-ai records token and cost histograms on a meter provider, the global one
  unless given another; tracesim keeps traces only, so the integration hands it a no-op one and
  nothing goes to a meter provider the application set up for something else;
- binary content (images, audio given to or made by a model) is left out: the media type is
  recorded, the bytes are not (base64 text, useless once cut to tracesim's bound), and so is the
  ``model_request_parameters`` attribute, which repeats ``gen_ai.tool.definitions`` at length.

pydantic-ai has one default for all its agents: instrumenting replaces the one set before (with
``Agent.instrument_all(...)`` or ``logfire.instrument_pydantic_ai()``), and uninstrumenting puts
that one back. An agent given its own instrumentation (``agent.instrument = ...``, or an
``Instrumentation`` capability) keeps it.

With the OpenAI integration on as well, a model request is pydantic-ai's ``chat`` span with the
``openai`` client's ``chat`` span inside it: tracesim counts its tokens once, on the outer span.

Example:
    >>> import tracesim
    >>> tracesim.instrument_pydantic_ai()  # doctest: +SKIP
    True
"""

from __future__ import annotations

import threading
from typing import Any

from tracesim.instrumentation import MissingIntegrationError

__all__ = ["PydanticAIIntegration", "integration"]


class PydanticAIIntegration:
    """The `~tracesim.instrumentation.Integration` that turns pydantic-ai's own tracing on and off.

    ``instrument`` makes tracesim's settings every agent's default (``Agent.instrument_all``),
    remembering the default it replaces; ``uninstrument`` puts that back. ``capture`` (None:
    follow tracesim's ``capture``; False: never record content) is read at each run.

    Example:
        >>> switch = PydanticAIIntegration()
        >>> switch.uninstrument()  # off already: nothing to do
        >>> switch.capture is None
        True
    """

    def __init__(self) -> None:
        self.capture: bool | None = None  # None: follow tracesim's capture setting
        self._lock = threading.Lock()
        self._settings: Any = None  # tracesim's InstrumentationSettings, made on first use
        self._replaced: Any = False  # the default it replaced (pydantic-ai's own is False)

    def instrument(self, capture: bool | None) -> bool:
        """Make tracesim's settings every agent's default; False when they already were.

        ``capture`` applies either way. Instrumenting again after the default was set to
        something else (``Agent.instrument_all(...)`` after tracesim's) installs tracesim's
        again, and uninstrumenting then restores that other one.

        Raises:
            MissingIntegrationError: pydantic-ai is not installed.
        """
        try:
            from pydantic_ai import Agent

            from tracesim_pydantic_ai._settings import TracesimSettings
        except ImportError:
            raise MissingIntegrationError("pydantic_ai") from None
        with self._lock:
            self.capture = capture
            current = _default(Agent)
            if self._settings is not None and current is self._settings:
                return False
            if self._settings is None:
                self._settings = TracesimSettings(self)
            self._replaced = current
            Agent.instrument_all(self._settings)
            return True

    def uninstrument(self) -> None:
        """Put back the default tracesim's replaced; agents run afterwards are not traced by it.

        When something else has since become the default, it is left alone.
        """
        with self._lock:
            if self._settings is None:
                return
            from pydantic_ai import Agent  # imported when instrumented

            if _default(Agent) is self._settings:
                Agent.instrument_all(self._replaced)
            self._replaced = False


def _default(agent_class: Any) -> Any:
    """Every agent's instrumentation default (``Agent.instrument_all`` sets it; no getter exists)."""
    return getattr(agent_class, "_instrument_default", False)


integration = PydanticAIIntegration()
"""The switch tracesim's ``instrument_pydantic_ai()`` / ``uninstrument_pydantic_ai()`` turn."""
