"""The meter provider handed to instrumentations: it follows tracesim's current configuration.

An instrumentation makes its instruments once, when it is installed (``instrument(...,
meter_provider=...)``); tracesim's configuration, and whether it has metrics at all, may change
later. So each point resolves the meter provider of the configuration current at that moment,
making the real instrument there on first use; with metrics off (or tracesim not configured)
a point costs one attribute read and goes nowhere. Points made inside an evaluator's own model
call (an LLM judge) go nowhere either: that call is not the user's traffic, and is not traced.
Observable instruments are not forwarded (the GenAI instrumentations make none).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import metrics as otel_metrics
from opentelemetry.context import Context
from opentelemetry.metrics import NoOpCounter, NoOpHistogram, NoOpMeter, NoOpUpDownCounter
from opentelemetry.metrics import _NoOpGauge as NoOpGauge
from opentelemetry.util.types import Attributes

from tracesim import _runtime
from tracesim._own_model_calls import in_model_call

# OpenTelemetry's suppress_instrumentation() sets this key (a private name, read defensively).
_SUPPRESS = getattr(otel_context, "_SUPPRESS_INSTRUMENTATION_KEY", "suppress_instrumentation")

__all__ = ["CurrentMeterProvider"]


class CurrentMeterProvider(otel_metrics.MeterProvider):
    """Hands out meters whose points go to the current tracesim configuration's metrics.

    Example:
        >>> meter = CurrentMeterProvider().get_meter("some.instrumentation")
        >>> meter.create_histogram("gen_ai.client.operation.duration", unit="s").record(0.2)
    """

    def get_meter(
        self,
        name: str,
        version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes | None = None,
    ) -> otel_metrics.Meter:
        """A meter named like the instrumentation, resolved against tracesim's metrics per point."""
        return _CurrentMeter(name, version, schema_url, attributes)


class _CurrentMeter(NoOpMeter):
    def __init__(
        self, name: str, version: str | None, schema_url: str | None, attributes: Attributes
    ) -> None:
        super().__init__(name, version=version, schema_url=schema_url)
        self.identity = (name, version, schema_url, attributes)

    def create_counter(self, name: str, unit: str = "", description: str = "") -> otel_metrics.Counter:
        return _Counter(self, "create_counter", name, unit, description)

    def create_up_down_counter(
        self, name: str, unit: str = "", description: str = ""
    ) -> otel_metrics.UpDownCounter:
        return _UpDownCounter(self, "create_up_down_counter", name, unit, description)

    def create_gauge(self, name: str, unit: str = "", description: str = "") -> otel_metrics._Gauge:
        return _Gauge(self, "create_gauge", name, unit, description)

    def create_histogram(
        self,
        name: str,
        unit: str = "",
        description: str = "",
        *,
        explicit_bucket_boundaries_advisory: Sequence[float] | None = None,
    ) -> otel_metrics.Histogram:
        return _Histogram(self, name, unit, description, explicit_bucket_boundaries_advisory)


def _suppressed() -> bool:
    """Whether the point is made inside an evaluator's own model call (an LLM judge's: not the
    user's traffic, and not traced either) or where OpenTelemetry's instrumentation is suppressed."""
    return bool(otel_context.get_value(_SUPPRESS)) or in_model_call()


class _Target:
    """The real instrument of the current configuration, made there on first use."""

    def __init__(
        self, meter: _CurrentMeter, factory: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:
        self._meter = meter
        self._factory = factory
        self._args = args
        self._kwargs = kwargs
        self._cached: tuple[Any, Any] | None = None

    def get(self) -> Any:
        runtime = _runtime.current
        metrics = runtime.metrics if runtime is not None else None
        if metrics is None or _suppressed():
            return None
        provider = metrics.provider
        cached = self._cached
        if cached is None or cached[0] is not provider:
            meter = provider.get_meter(*self._meter.identity)
            cached = self._cached = (provider, getattr(meter, self._factory)(*self._args, **self._kwargs))
        return cached[1]


class _Forwarding:
    """The part a counter, an up-down counter and a gauge share: the `_Target` their points go to.

    Listed before the no-op instrument in a subclass's bases, which gets the name and text.
    """

    def __init__(self, meter: _CurrentMeter, factory: str, name: str, unit: str, description: str) -> None:
        super().__init__(name, unit=unit, description=description)  # type: ignore[call-arg]
        self._target = _Target(meter, factory, (name, unit, description), {})


class _Adding(_Forwarding):
    def add(self, amount: float, attributes: Attributes = None, context: Context | None = None) -> None:
        target = self._target.get()
        if target is not None:
            target.add(amount, attributes, context)


class _Counter(_Adding, NoOpCounter):
    pass


class _UpDownCounter(_Adding, NoOpUpDownCounter):
    pass


class _Gauge(_Forwarding, NoOpGauge):
    def set(self, amount: float, attributes: Attributes = None, context: Context | None = None) -> None:
        target = self._target.get()
        if target is not None:
            target.set(amount, attributes, context)


class _Histogram(NoOpHistogram):
    def __init__(
        self,
        meter: _CurrentMeter,
        name: str,
        unit: str,
        description: str,
        boundaries: Sequence[float] | None,
    ) -> None:
        super().__init__(
            name, unit=unit, description=description, explicit_bucket_boundaries_advisory=boundaries
        )
        self._target = _Target(
            meter,
            "create_histogram",
            (name, unit, description),
            {"explicit_bucket_boundaries_advisory": boundaries},
        )

    def record(self, amount: float, attributes: Attributes = None, context: Context | None = None) -> None:
        target = self._target.get()
        if target is not None:
            target.record(amount, attributes, context)
