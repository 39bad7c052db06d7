"""How an evaluation result is written: a span event plus flat attributes, or a carrier span.

Each result becomes a ``gen_ai.evaluation.result`` event (OpenTelemetry GenAI conventions,
with tracesim's extras) and flat ``tracesim.eval.<name>.*`` attributes that backends can
query. ``evaluation_span_events=false`` leaves the event out of what goes to backends
(`tracesim.exporters._without_events`): the local trace file keeps it for tracesim's readers.

When the evaluated span has already ended, the same event and attributes go on a short
carrier span: ``openinference.span.kind=EVALUATOR``, child of the target and linked to
it, as the OpenInference annotation conventions ask for post-hoc feedback.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import trace as otel_trace
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext
from opentelemetry.util.types import AttributeValue

from tracesim import _redaction_in_force
from tracesim import _semconv as sc
from tracesim._capture import CaptureOptions, capture_value
from tracesim._redact import Redactor

if TYPE_CHECKING:
    from tracesim.evaluators import EvalResult
    from tracesim.exporters import Redaction

__all__ = ["add_result_event", "emit_carrier", "end_time_of", "key_name", "render"]

_BUILT_IN = Redactor()  # the names' redaction when no configuration runs


def render(
    result: EvalResult, capture: CaptureOptions, *, redaction: Redaction | None = None
) -> tuple[dict[str, AttributeValue], dict[str, AttributeValue]]:
    """The event attributes and the flat span attributes for one result (``redaction``: see `key_name`)."""
    event: dict[str, AttributeValue] = {sc.EVALUATION_NAME: result.name, sc.EVALUATION_STATUS: result.status}
    flat: dict[str, AttributeValue] = {}
    name = key_name(result.name, redaction)
    if result.score is not None:
        event[sc.EVALUATION_SCORE_VALUE] = float(result.score)
        flat[sc.eval_score(name)] = float(result.score)
    if result.label is not None:
        event[sc.EVALUATION_SCORE_LABEL] = result.label
        flat[sc.eval_label(name)] = result.label
    if result.passed is not None:
        event[sc.EVALUATION_PASSED] = result.passed
        flat[sc.eval_passed(name)] = result.passed
    if result.threshold is not None:
        event[sc.EVALUATION_THRESHOLD] = float(result.threshold)
    explanation = result.explanation
    if result.status == "error":
        event[sc.ERROR_TYPE] = result.error_type or "_OTHER"
        explanation = result.error or explanation
    if explanation:
        # Bounded like captured values (redaction happens in the export path, as for every attribute).
        event[sc.EVALUATION_EXPLANATION] = capture_value(explanation, capture).text
    if result.details:
        event[sc.EVALUATION_DETAILS] = capture_value(result.details, capture).text
    if result.duration_s is not None:
        event[sc.EVALUATION_DURATION] = float(result.duration_s)
    if result.status != "ok":
        flat[sc.eval_status(name)] = result.status
    return event, flat


def key_name(name: str, redaction: Redaction | None = None) -> str:
    """``name`` as it may stand in the attribute keys ``tracesim.eval.<name>.*``: redacted like
    the ``gen_ai.evaluation.name`` value beside it (the export pass redacts values, not keys,
    and a score's name is free text: ``tracesim.score(span, name=...)``).

    With ``redaction``, the one the caller's configuration exports through (the scoring pipeline
    and the sinks hand theirs in); when none is handed in, the running configuration's (its hook
    included, found in `tracesim._redaction_in_force`); before `configure`, or after `shutdown`,
    with every built-in pattern.

    Example:
        >>> key_name("user_rating"), key_name("marie@curie.org")
        ('user_rating', '[REDACTED:email]')
    """
    if redaction is None:
        redaction = _redaction_in_force.current
    if redaction is not None:
        return redaction.text(name, sc.EVALUATION_NAME)
    return _BUILT_IN.redact(name, sc.EVALUATION_NAME)


def write(
    span: otel_trace.Span,
    result: EvalResult,
    capture: CaptureOptions,
    timestamp: int | None,
    *,
    redaction: Redaction | None = None,
    run: bool = False,
    annotator_kind: str | None = None,
) -> None:
    """Record ``result`` on a span that is still open (``redaction``: see `key_name`); ``run``
    marks the result of an evaluator that scored the span's run (``tracesim.evaluation.run``);
    ``annotator_kind`` (``CODE``, ``LLM``, ``HUMAN``) says who made it, on the event, for a
    replay to send it to Phoenix and MLflow as the online sinks did."""
    event, flat = render(result, capture, redaction=redaction)
    if run:
        event[sc.EVALUATION_RUN] = True
    if annotator_kind is not None:
        event[sc.EVALUATION_ANNOTATOR_KIND] = annotator_kind
    add_result_event(span, event, timestamp)
    span.set_attributes(flat)


def add_result_event(
    span: otel_trace.Span, attributes: dict[str, AttributeValue], timestamp: int | None
) -> None:
    """Add the ``gen_ai.evaluation.result`` event, its attributes kept as the plain dict `render` made.

    OpenTelemetry's ``Span.add_event`` checks each attribute again and wraps them in a
    ``BoundedAttributes`` with a lock of its own: with the ``Event``, four objects per result
    that the garbage collector tracks, and that live as long as the span waits for export
    (0.4 s at 1,250 spans/s). A dict of strings, numbers and booleans is not tracked at all.
    Measured at 1,250 scored calls/s with three evaluators: full collections every 5 s instead
    of every 3 s, and a p99 of 4-8 ms instead of 8-14 ms. The values are `render`'s (strings,
    floats, booleans), which those checks let through unchanged; a span of another SDK, or an
    SDK span whose limits would cut these attributes (``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``, an
    event attribute count below theirs), gets the public ``add_event``.

    Example:
        >>> from opentelemetry.sdk.trace import TracerProvider
        >>> span = TracerProvider().get_tracer("t").start_span("answer")
        >>> add_result_event(span, {"gen_ai.evaluation.name": "rouge"}, None)
        >>> type(span.events[0].attributes).__name__
        'dict'
    """
    add = getattr(span, "_add_event", None)
    limits = getattr(span, "_limits", None)
    limit = getattr(limits, "max_event_attributes", None)
    if (
        add is None
        or limits is None
        or getattr(limits, "max_attribute_length", 0) is not None
        or (limit is not None and len(attributes) > limit)
    ):
        span.add_event(sc.EVALUATION_EVENT, attributes, timestamp=timestamp)
        return
    # Imported here, where the span is the SDK's and so the SDK is loaded: `import tracesim` stays light.
    from opentelemetry.sdk.trace import Event

    add(Event(sc.EVALUATION_EVENT, attributes, timestamp))


def emit_carrier(
    tracer: otel_trace.Tracer,
    target: SpanContext,
    result: EvalResult,
    capture: CaptureOptions,
    attributes: Mapping[str, AttributeValue] | None = None,
    at_ns: int | None = None,
    *,
    redaction: Redaction | None = None,
    run: bool = False,
    annotator_kind: str | None = None,
) -> SpanContext:
    """Record ``result`` on a new carrier span linked to (and parented by) ``target``.

    The carrier is a zero-length span placed at ``at_ns``, the target's end when it is known,
    else now. Backends such as Phoenix take a trace's latency from the earliest start to the
    latest end of all its spans, so a carrier placed at the moment feedback arrives would
    stretch a 200 ms trace to minutes; inside the target's time it changes nothing. The
    result's event keeps the real time it was recorded. ``redaction``, ``run`` and
    ``annotator_kind``: see `write`.
    """
    now = time.time_ns()
    placed = at_ns if at_ns is not None and 0 < at_ns <= now else now
    parent = otel_trace.set_span_in_context(NonRecordingSpan(target))
    span_attributes: dict[str, AttributeValue] = {sc.SPAN_KIND: "EVALUATOR", **(attributes or {})}
    span = tracer.start_span(
        f"evaluation {result.name}",
        context=parent,
        links=[Link(target)],
        attributes=span_attributes,
        start_time=placed,
    )
    write(span, result, capture, now, redaction=redaction, run=run, annotator_kind=annotator_kind)
    span.end(end_time=placed)
    return span.get_span_context()


def end_time_of(target: Any) -> int | None:
    """When ``target`` ended (ns since the epoch), if it is a span that has ended; else None.

    A `tracesim.Span` or an SDK span knows it; a bare ``SpanContext`` does not.
    """
    otel = getattr(target, "otel_span", target)  # tracesim.Span wraps the OpenTelemetry span
    end = getattr(otel, "end_time", None)
    return end if isinstance(end, int) and end > 0 else None


def target_context(target: Any) -> SpanContext:
    """A span context from a tracesim `Span`, an OpenTelemetry span or a `SpanContext`."""
    if isinstance(target, SpanContext):
        return target
    context = getattr(target, "span_context", None)  # tracesim.Span
    if isinstance(context, SpanContext):
        return context
    get = getattr(target, "get_span_context", None)  # opentelemetry Span
    if callable(get):
        found = get()
        if isinstance(found, SpanContext):
            return found
    raise TypeError(
        f"cannot score {type(target).__name__}: pass a tracesim Span, an OpenTelemetry span or SpanContext"
    )
