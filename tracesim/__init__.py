"""tracesim: trace LLM agent functions with OpenTelemetry and score their outputs online.

Example:
    >>> import tracesim
    >>> tracesim.configure(service_name="support-bot")  # doctest: +SKIP
    >>> @tracesim.trace(kind="agent")
    ... def answer(question: str) -> str:
    ...     return "Warsaw"
"""

from typing import TYPE_CHECKING

from tracesim._api import configure, export_stats, force_flush, score, scoring_stats, shutdown
from tracesim._attributes import attributes
from tracesim._errors import ConfigError, TracesimError
from tracesim._outputs import install_log_redaction
from tracesim._runtime import NotConfiguredWarning
from tracesim._scoring import Golden, ScoringStats, expect
from tracesim._tracing import (
    ContextThreadPoolExecutor,
    Span,
    current_span,
    last_span,
    propagate_context,
    span,
    trace,
)
from tracesim._version import __version__

install_log_redaction()  # tracesim's own log lines are redacted like everything it writes

if TYPE_CHECKING:  # imported when first used: a traced call needs neither (import time)
    from tracesim._export_queue import ExportStats
    from tracesim._runs._recording import RecordedRun, record_run
    from tracesim.experiments import Case, Dataset
    from tracesim.integrations import (
        instrument_anthropic,
        instrument_langchain,
        instrument_litellm,
        instrument_mcp,
        instrument_openai,
        instrument_openai_agents,
        instrument_pydantic_ai,
        uninstrument_anthropic,
        uninstrument_langchain,
        uninstrument_litellm,
        uninstrument_mcp,
        uninstrument_openai,
        uninstrument_openai_agents,
        uninstrument_pydantic_ai,
    )
    from tracesim.runs import Expected

_LAZY = {
    "Case": "tracesim.experiments",
    "Dataset": "tracesim.experiments",
    "Expected": "tracesim.runs",
    "ExportStats": "tracesim._export_queue",
    "RecordedRun": "tracesim._runs._recording",
    "record_run": "tracesim._runs._recording",
    "instrument_anthropic": "tracesim.integrations",
    "instrument_langchain": "tracesim.integrations",
    "instrument_openai": "tracesim.integrations",
    "uninstrument_anthropic": "tracesim.integrations",
    "uninstrument_langchain": "tracesim.integrations",
    "uninstrument_openai": "tracesim.integrations",
    "instrument_litellm": "tracesim.integrations",
    "instrument_mcp": "tracesim.integrations",
    "instrument_openai_agents": "tracesim.integrations",
    "instrument_pydantic_ai": "tracesim.integrations",
    "uninstrument_litellm": "tracesim.integrations",
    "uninstrument_mcp": "tracesim.integrations",
    "uninstrument_openai_agents": "tracesim.integrations",
    "uninstrument_pydantic_ai": "tracesim.integrations",
}


# Subpackages, as attributes of the package even before they are imported by name.
_SUBPACKAGES = frozenset({"batch", "evaluators", "experiments", "exporters", "integrations", "testing"})


def __getattr__(name: str) -> object:
    import importlib

    if name in _SUBPACKAGES:
        return importlib.import_module(f"tracesim.{name}")  # which also sets it here
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tracesim' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "Case",
    "ConfigError",
    "ContextThreadPoolExecutor",
    "Dataset",
    "Expected",
    "ExportStats",
    "Golden",
    "NotConfiguredWarning",
    "RecordedRun",
    "ScoringStats",
    "Span",
    "TracesimError",
    "__version__",
    "attributes",
    "configure",
    "current_span",
    "expect",
    "export_stats",
    "force_flush",
    "instrument_anthropic",
    "instrument_langchain",
    "instrument_litellm",
    "instrument_mcp",
    "instrument_openai",
    "instrument_openai_agents",
    "instrument_pydantic_ai",
    "last_span",
    "propagate_context",
    "record_run",
    "score",
    "scoring_stats",
    "shutdown",
    "span",
    "trace",
    "uninstrument_anthropic",
    "uninstrument_langchain",
    "uninstrument_litellm",
    "uninstrument_mcp",
    "uninstrument_openai",
    "uninstrument_openai_agents",
    "uninstrument_pydantic_ai",
]
