"""One redaction pass over every span before it leaves the process, whoever created it.

`RedactingExporter` wraps any ``SpanExporter``. It runs where export runs (the batch
processor's thread, not the thread that ended the span) and rewrites every string a span
carries: its name, attributes, event names and attributes (exception messages and stack
traces included), link attributes, the status message and the resource's attributes. Text
longer than the limit is cut first, never inside a token, so a secret can neither hide past
the cut nor leave a prefix of itself before it. Spans with nothing to change are passed on
as they are; the others are rebuilt through the public ``ReadableSpan`` constructor.

The same pass gives LLM spans the OpenInference usage attributes they lack (``llm.model_name``,
``llm.token_count.*`` and, when the model has a price, ``llm.cost.*``), so Phoenix and other
OpenInference backends show tokens and cost whichever convention the instrumentation wrote.
Spans without token counts pay three dictionary lookups for it.
"""

from __future__ import annotations

import inspect
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util import BoundedList
from opentelemetry.trace import Link, Status
from opentelemetry.util.types import AttributeValue

from tracesim._capture import cut
from tracesim._host_first import Slices
from tracesim._internal_errors import internal_error
from tracesim._pricing import INPUT_KEYS, Price, PriceTable, openinference_usage
from tracesim._redact import PATTERN_GROUPS, Redactor

__all__ = ["RedactingExporter", "Redaction"]

DEFAULT_LIMIT = 32 * 1024
_CACHE_CHARS = 64  # short strings (names, kinds, MIME types, models) repeat: remember them
_CACHE_SIZE = 4096
# Spans redacted for one exporter and kept for the others that share the `Redaction` (a trace
# file beside OTLP): at most this many, so an exporter far behind the others redacts for itself.
_SHARED_SPANS = 512
# Every convention reports input tokens whenever it reports usage at all (embeddings: only them).
_IN_GEN_AI, _IN_OPENINFERENCE, _IN_OPENLLMETRY = INPUT_KEYS
_SPAN_TYPES = (BoundedAttributes, BoundedList, Status)  # what `Probe.quiet` reads, by exact type


class Redaction:
    """Redact and bound the strings of spans, attribute maps and single values.

    Thread-safe; shared by every exporter and result sink of one configuration. ``prices``
    (model -> `~tracesim._pricing.Price`, merged over the shipped table) prices the LLM spans
    it passes; see the module docstring.

    Example:
        >>> redaction = Redaction()
        >>> redaction.text("mail marie@curie.org", "input.value")
        'mail [REDACTED:email]'
    """

    def __init__(
        self,
        redactor: Redactor | None = None,
        limit: int = DEFAULT_LIMIT,
        *,
        prices: Mapping[str, Price] | PriceTable | None = None,
    ) -> None:
        self.prices = prices if isinstance(prices, PriceTable) else PriceTable(prices)
        self._clean: dict[Any, str] = {}
        self._resources: dict[int, tuple[Resource, Resource]] = {}
        self._lock = threading.Lock()
        # How many exporters get every span (see `exported_span`): those built with ``shared=True``.
        self.shared_by = 0
        self._shared: dict[int, list[Any]] = {}  # id(span) -> [span, redacted, exporters still to come]
        self._redactor = redactor if redactor is not None else Redactor()
        self._limit = limit
        self._settle()

    @property
    def redactor(self) -> Redactor:
        """The patterns and hook every string passes through."""
        return self._redactor

    @redactor.setter
    def redactor(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._settle()

    @property
    def limit(self) -> int:
        """Longer text is cut (never inside a token) before it is redacted."""
        return self._limit

    @limit.setter
    def limit(self, limit: int) -> None:
        self._limit = limit
        self._settle()

    def _settle(self) -> None:
        """Derive what the passes read from `redactor` and `limit`, and forget results found
        under earlier ones (set either later, and the next span sees it)."""
        redactor, limit = self._redactor, self._limit
        self._hooked = redactor.hooked
        self._active = redactor.active
        # Where the compiled probe is built and no hook runs, it tells in one C call that a
        # span's attributes need no change (the common answer), without the loop below.
        probe = getattr(redactor, "_probe", None)
        quick = probe is not None and not self._hooked and type(limit) is int
        self._unchanged = probe.unchanged if probe is not None and quick else None
        self._quiet_span = probe.quiet if probe is not None and quick else None
        self._quick_limit = min(limit, sys.maxsize) if quick else 0  # what C takes: a Py_ssize_t
        with self._lock:
            self._clean.clear()
            self._resources.clear()
            self._shared.clear()

    def text(self, value: str, attribute: str) -> str:
        """``value`` cut to the limit and redacted. Never raises."""
        short = len(value) <= _CACHE_CHARS
        if short:
            # Without a hook the result does not depend on the attribute: one entry per string.
            key: Any = (value, attribute) if self._hooked else value
            known = self._clean.get(key)
            if known is not None:
                return known
        result = value if type(value) is str else str.__str__(value)
        if len(result) > self._limit:
            result = cut(result, self._limit, len(result))
        if self._active:
            result = self._redactor.redact(result, attribute)
        if short:
            if len(self._clean) >= _CACHE_SIZE:
                self._clean.clear()  # rare: a service with many distinct short strings
            self._clean[key] = result
        return result

    def attributes(self, attributes: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The redacted copy of ``attributes``, or None when nothing changes."""
        if not attributes:
            return None
        unchanged = self._unchanged
        if unchanged is not None:
            plain = attributes if type(attributes) is dict else getattr(attributes, "_dict", None)
            if type(plain) is dict and unchanged(plain, self._clean, _CACHE_CHARS, self._quick_limit):
                return None
        changed: dict[str, Any] | None = None
        items = _items(attributes)
        # Every attribute of every span passes here: the common cases are decided inline.
        clean, hooked, limit, active = self._clean, self._hooked, self._limit, self._active
        for key, value in items:
            kind = type(value)
            if kind is str:
                if len(value) <= _CACHE_CHARS:
                    new = clean.get((value, key) if hooked else value)
                    if new is None:
                        new = self.text(value, key)
                elif active or len(value) > limit:
                    new = self.text(value, key)
                else:
                    continue
            elif kind is int or kind is float or kind is bool:
                continue
            else:
                new = self.value(value, key)
            if new is not value and new != value:
                if changed is None:
                    changed = dict(items)
                changed[key] = new
        return changed

    def value(self, value: Any, attribute: str) -> Any:
        """One attribute value: strings and sequences of strings redacted, the rest unchanged."""
        if isinstance(value, str):
            return self.text(value, attribute)
        if isinstance(value, (tuple, list)) and any(isinstance(item, str) for item in value):
            return tuple(self.text(item, attribute) if isinstance(item, str) else item for item in value)
        return value

    def json(self, value: Any, attribute: str, _depth: int = 0) -> Any:
        """A JSON-like value (dicts, lists, scalars) with every string in it redacted."""
        if isinstance(value, str):
            return self.text(value, attribute)
        if _depth > 32:  # deeper parts are replaced, never sent as they are
            return value if value is None or isinstance(value, (bool, int, float)) else "[REDACTED:depth]"
        if isinstance(value, Mapping):
            return {
                self.text(str(k), attribute): self.json(v, attribute, _depth + 1) for k, v in value.items()
            }
        if isinstance(value, (list, tuple)):
            return [self.json(v, attribute, _depth + 1) for v in value]
        return value

    def span(self, span: ReadableSpan) -> ReadableSpan:
        """``span`` with every string redacted; the same object when nothing changed."""
        quiet = self._quiet_span
        if (
            quiet is not None
            and type(span) is ReadableSpan
            and quiet(
                span, self._clean, self._resources, _CACHE_CHARS, self._quick_limit, _SPAN_TYPES, INPUT_KEYS
            )
        ):
            return span
        # Every span of the process passes here: the common cases are read inline, without calls.
        name = span.name
        known = self._clean.get((name, "span.name") if self._hooked else name)
        name = known if known is not None else self.text(name, "span.name")
        original = _span_attributes(span)
        attributes = self.attributes(original)
        if original is not None:
            # The one cost LLM accounting adds to every span: three failed lookups in a plain dict.
            plain = getattr(original, "_dict", original)  # the SDK's mapping wraps a dict: read that
            if _IN_GEN_AI in plain or _IN_OPENINFERENCE in plain or _IN_OPENLLMETRY in plain:
                attributes = self._with_usage(plain, attributes)
        events = getattr(span, "_events", None)  # the SDK's own list, not the copy `events` makes
        events = self._events(span.events) if events is None or _filled(events) else None
        links = getattr(span, "_links", None)
        links = self._links(span.links) if links is None or _filled(links) else None
        status = span.status
        if status.description:
            description = self.text(status.description, "status.message")
            if description != status.description:
                status = Status(status.status_code, description)
        resource = span.resource
        cached = self._resources.get(id(resource))  # one resource per provider: redacted once
        resource = cached[1] if cached is not None and cached[0] is resource else self._resource(resource)
        if (
            name == span.name
            and attributes is None
            and events is None
            and links is None
            and status is span.status
            and resource is span.resource
        ):
            return span
        return copy_span(
            span,
            name=name,
            attributes=attributes if attributes is not None else span.attributes,
            events=events if events is not None else span.events,
            links=links if links is not None else span.links,
            status=status,
            resource=resource,
        )

    def _quiet(self, span: ReadableSpan) -> bool:
        """Whether an SDK span needs no change at all, told in one C call from its own fields
        (no property, no copy): its name maps to itself in the cache, its attributes pass
        `Probe.unchanged` and hold no usage to account for, it has no events, links or status
        text, and its resource is already redacted to itself. The common answer, and then the
        whole export pass. False when unsure (a field of another type), and `span` decides; only
        without a hook (like `_unchanged`)."""
        quiet = self._quiet_span  # the same test as the start of `span`, which inlines it
        return (
            quiet is not None
            and type(span) is ReadableSpan
            and bool(
                quiet(
                    span,
                    self._clean,
                    self._resources,
                    _CACHE_CHARS,
                    self._quick_limit,
                    _SPAN_TYPES,
                    INPUT_KEYS,
                )
            )
        )

    def exported_span(self, span: ReadableSpan) -> ReadableSpan:
        """`span` for one of the `shared_by` exporters that all get every span: each span is
        redacted once, by the first of them, and its result handed to the others."""
        others = self.shared_by - 1
        if others < 1:
            return self.span(span)
        key = id(span)  # the entry keeps the span alive: the id cannot be reused meanwhile
        with self._lock:
            found = self._take(key, span)
        if found is not None:
            return found
        redacted = self.span(span)
        with self._lock:
            if self._take(key, span) is None:  # not redacted meanwhile by another exporter
                if len(self._shared) >= _SHARED_SPANS:
                    del self._shared[next(iter(self._shared))]  # the oldest: an exporter dropped it
                self._shared[key] = [span, redacted, others]
        return redacted

    def _take(self, key: int, span: ReadableSpan) -> ReadableSpan | None:
        """The kept result for ``span``, counted as handed out; None if there is none. Locked."""
        entry = self._shared.get(key)
        if entry is None or entry[0] is not span:
            return None
        entry[2] -= 1
        if entry[2] <= 0:
            del self._shared[key]
        return entry[1]  # type: ignore[no-any-return]

    def _with_usage(
        self, original: Mapping[str, Any], redacted: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """``redacted`` (or a copy of ``original``) with the OpenInference usage it lacks."""
        extra = openinference_usage(original, self.prices)
        if not extra:
            return redacted
        result = redacted if redacted is not None else dict(original)  # one C call: a consistent copy
        for key, value in extra.items():
            result[key] = self.text(value, key) if isinstance(value, str) else value
        return result

    def _events(self, events: Sequence[Event]) -> list[Event] | None:
        result: list[Event] | None = None
        for index, event in enumerate(events):
            name = self.text(event.name, "event.name")
            attributes = self.attributes(event.attributes)
            if name != event.name or attributes is not None:
                if result is None:
                    result = list(events)
                new_attributes = attributes if attributes is not None else event.attributes
                result[index] = Event(name, _bounded_attributes(new_attributes, 0), event.timestamp)
        return result

    def _links(self, links: Sequence[Link]) -> list[Link] | None:
        result: list[Link] | None = None
        for index, link in enumerate(links):
            attributes = self.attributes(link.attributes)
            if attributes is not None:
                if result is None:
                    result = list(links)
                result[index] = Link(link.context, _bounded_attributes(attributes, 0))
        return result

    def _resource(self, resource: Resource) -> Resource:
        # One resource per provider: redacted once, then looked up (`span` looks up inline).
        cached = self._resources.get(id(resource))
        if cached is not None and cached[0] is resource:
            return cached[1]
        attributes = self.attributes(resource.attributes)
        redacted = resource if attributes is None else Resource(attributes, resource.schema_url)
        with self._lock:
            self._resources[id(resource)] = (resource, redacted)
        return redacted


def copy_span(
    span: ReadableSpan,
    *,
    name: str | None = None,
    attributes: Mapping[str, Any] | None = None,
    events: Sequence[Event] | None = None,
    links: Sequence[Link] | None = None,
    status: Status | None = None,
    resource: Resource | None = None,
) -> ReadableSpan:
    """A finished span with some parts replaced; ids, times, kind, scope and drop counts kept."""
    return ReadableSpan(
        name=span.name if name is None else name,
        context=span.context,
        parent=span.parent,
        resource=span.resource if resource is None else resource,
        attributes=_bounded_attributes(
            span.attributes if attributes is None else attributes, span.dropped_attributes
        ),
        events=_bounded(span.events if events is None else events, span.dropped_events),
        links=_bounded(span.links if links is None else links, span.dropped_links),
        kind=span.kind,
        status=span.status if status is None else status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def _items(attributes: Mapping[str, Any]) -> Any:
    """The items of an attribute mapping, iterated in C when it is (or wraps) a plain dict."""
    if type(attributes) is dict:
        return attributes.items()
    inner = getattr(attributes, "_dict", None)  # the SDK's BoundedAttributes keeps a plain dict
    if type(inner) is dict:
        return inner.copy().items()  # one C call, atomic: safe even if the span is still written
    return dict(attributes).items()  # any other mapping: its own methods, once


def _filled(items: Any) -> bool:
    """Whether the SDK's own list of a span's events or links holds any (the common answer: no)."""
    try:
        return len(items) > 0
    except TypeError:  # not the SDK's list: let the public property tell
        return True


def _span_attributes(span: ReadableSpan) -> Mapping[str, Any] | None:
    """A span's attributes; the SDK's mapping itself when it is one (read, never changed), not
    the read-only proxy around it, whose items are looked up one by one in Python."""
    raw = getattr(span, "_attributes", None)
    if isinstance(raw, BoundedAttributes):
        return raw
    return span.attributes


def _bounded_attributes(attributes: Mapping[str, Any] | None, dropped: int) -> BoundedAttributes:
    bounded = BoundedAttributes(attributes=dict(attributes or {}), immutable=True, max_value_len=None)
    bounded.dropped = dropped  # the SDK reports dropped counts from this public field
    return bounded


def _bounded(items: Sequence[Any], dropped: int) -> BoundedList[Any]:
    bounded: BoundedList[Any] = BoundedList.from_seq(None, items)
    bounded.dropped = dropped
    return bounded


class RedactingExporter(SpanExporter):
    """Redact every span, then hand the batch to ``inner``.

    tracesim puts one in front of every exporter it builds or is given, so nothing leaves the
    process unredacted: spans from other instrumentation (an OpenAI or HTTP instrumentor)
    included. It also works in a plain OpenTelemetry pipeline.

    Args:
        inner: The exporter that sends or writes the spans.
        patterns: Built-in pattern groups (``email``, ``api_key``, ``bearer``, ...); ``()`` for none.
        redact: Your hook ``(text, attribute) -> text``, run after the patterns.
        max_value_chars: Longer text is cut (never inside a token) before it is redacted.
        prices: Model prices (USD per 1M tokens) merged over the shipped table, for the
            ``llm.cost.*`` of LLM spans; with ``redaction``, give them to that `Redaction` instead.
        redaction: A `Redaction` to share with other exporters (then ``patterns``, ``redact``,
            ``max_value_chars`` and ``prices`` are not used).
        shared: This exporter gets every span the other ``shared`` exporters on ``redaction``
            get (as tracesim's own exporters do): each span is redacted once, by the first of
            them to export it, and the others reuse the result.

    Example:
        >>> from opentelemetry.sdk.trace.export import BatchSpanProcessor
        >>> from tracesim.exporters import JsonlExporter, RedactingExporter
        >>> processor = BatchSpanProcessor(RedactingExporter(JsonlExporter("traces.jsonl")))  # doctest: +SKIP
    """

    def __init__(
        self,
        inner: SpanExporter,
        *,
        patterns: Sequence[str] = PATTERN_GROUPS,
        redact: Any = None,
        max_value_chars: int = DEFAULT_LIMIT,
        redaction: Redaction | None = None,
        prices: Mapping[str, Price] | PriceTable | None = None,
        shared: bool = False,
    ) -> None:
        self._inner = inner
        self.redaction = redaction or Redaction(
            Redactor(tuple(patterns), redact), max_value_chars, prices=prices
        )
        self._redact = self.redaction.span
        if shared:
            self.redaction.shared_by += 1
            self._redact = self.redaction.exported_span

    @property
    def inner(self) -> SpanExporter:
        """The wrapped exporter."""
        return self._inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Redact the batch, then export it; a span that cannot be redacted is withheld."""
        # An exporter that shares its redaction with no other one redacts each span itself.
        redacted = redact_batch(self._redact if self.redaction.shared_by > 1 else self.redaction.span, spans)
        return self._inner.export(redacted) if redacted or not spans else SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Flush the wrapped exporter."""
        return self._inner.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float | None = None) -> None:
        """Shut the wrapped exporter down (passing the time left on, when it takes one)."""
        shut_down(self._inner, timeout_millis)


def redact_batch(redact: Any, spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    """``redact`` (a `Redaction`'s ``span``) applied to each of ``spans``; a span that cannot be
    redacted is withheld (never send what could not be checked), said as an internal error."""
    redacted: list[ReadableSpan] = []
    offer = Slices()  # a batch is milliseconds of redaction: the host's threads go first
    for span in spans:
        offer()
        try:
            redacted.append(redact(span))
        except Exception:
            internal_error("redaction")
    return redacted


def shut_down(exporter: Any, timeout_millis: float | None) -> None:
    """Shut ``exporter`` (of spans or log records) down, passing ``timeout_millis`` on when given
    and its ``shutdown`` takes it.

    ``SpanExporter.shutdown`` takes no timeout, but some exporters' do; a wrapper hands the
    time it was given to those and calls the others plainly.
    """
    if timeout_millis is not None and "timeout_millis" in inspect.signature(exporter.shutdown).parameters:
        exporter.shutdown(timeout_millis=timeout_millis)
    else:
        exporter.shutdown()


def redacted_attributes(
    redaction: Redaction, attributes: Mapping[str, AttributeValue]
) -> Mapping[str, AttributeValue]:
    """``attributes`` with every string redacted (for log records and other non-span outputs)."""
    changed = redaction.attributes(attributes)
    return attributes if changed is None else changed
