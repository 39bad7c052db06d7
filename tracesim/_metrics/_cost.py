"""``tracesim.llm.cost``: the cost of LLM calls, counted on the export path.

`CostCounting` sits between the redacting exporter and one of the configuration's exporters
(the first): it sees each exported span once, already redacted and with the ``llm.cost.*``
attributes the redaction pass adds from the configured prices, and adds a call's cost to the
counter before handing the batch on. A call two spans describe (an LLM call inside another
instrumentation's, ``tracesim.llm.counted_in_parent``; two instrumentations side by side,
``tracesim.llm.twin_of``) is counted once, by the rules `tracesim report` sums cost with.
A call whose model has no price adds nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from tracesim._internal_errors import internal_error
from tracesim._pricing import read_usage
from tracesim.exporters._redacting import shut_down

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["MODELS", "PROVIDER_KEY", "REQUEST_MODEL_KEY", "UNKNOWN", "CostCounting", "priced"]

PROVIDER_KEY = "gen_ai.provider.name"
REQUEST_MODEL_KEY = "gen_ai.request.model"
UNKNOWN = "_unknown"
MODELS = 200
"""Distinct (provider, model) pairs counted; later ones go under ``_other``."""
_PROVIDER_KEYS = (PROVIDER_KEY, "gen_ai.system", "llm.provider")


def priced(attributes: Any) -> tuple[str, str, float] | None:
    """The provider, model and cost of the LLM call a span's attributes describe (None: no cost).

    Example:
        >>> priced({"gen_ai.provider.name": "openai", "llm.cost.total": 0.25}) is None  # no usage
        True
    """
    usage = read_usage(attributes)
    if usage is None or usage.cost is None or usage.cost <= 0:
        return None
    provider = next((str(attributes[k]) for k in _PROVIDER_KEYS if attributes.get(k)), UNKNOWN)
    return provider, usage.request_model or UNKNOWN, usage.cost


class CostCounting(SpanExporter):
    """Count the cost of the LLM spans of each batch, then export the batch with ``inner``.

    Example:
        >>> from opentelemetry.sdk.metrics import MeterProvider
        >>> from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        >>> from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        >>> reader = InMemoryMetricReader()
        >>> counter = MeterProvider([reader]).get_meter("t").create_counter("tracesim.llm.cost")
        >>> exporter = CostCounting(InMemorySpanExporter(), counter)
        >>> exporter.export([]).name
        'SUCCESS'
    """

    def __init__(self, inner: SpanExporter, counter: Counter) -> None:
        self._inner = inner
        self._counter = counter
        self._lock = threading.Lock()
        self._attributes: dict[tuple[str, str], dict[str, str]] = {}

    @property
    def inner(self) -> SpanExporter:
        """The exporter the batches go to."""
        return self._inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Count, then export the batch."""
        try:
            for span in spans:
                attributes = span.attributes
                if attributes:
                    self._count(attributes)
        except Exception:  # never in the way of the spans
            internal_error("metrics: LLM cost")
        return self._inner.export(spans)

    def _count(self, attributes: Any) -> None:
        found = priced(attributes)
        if found is not None:
            self.add(*found)

    def add(self, provider: str, model: str, cost: float) -> None:
        """Add the cost of one call (what `priced` found on its span, maybe in another process)."""
        key = (provider, model)
        labels = self._attributes.get(key)
        if labels is None:
            with self._lock:
                if len(self._attributes) >= MODELS:
                    key = ("_other", "_other")
                labels = self._attributes.setdefault(key, {PROVIDER_KEY: key[0], REQUEST_MODEL_KEY: key[1]})
        self._counter.add(cost, labels)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Flush the wrapped exporter."""
        return self._inner.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float | None = None) -> None:
        """Shut the wrapped exporter down (passing the time left on, when it takes one)."""
        shut_down(self._inner, timeout_millis)
