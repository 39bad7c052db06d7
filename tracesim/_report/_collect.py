"""Read spans into flat samples: one per span, one per evaluation result, one per skipped sample.

This is the only module of the report that knows how results are written (DESIGN §4): events
named ``gen_ai.evaluation.result`` on the evaluated span, or on a carrier span
(``openinference.span.kind=EVALUATOR``) with one link to the evaluated span; evaluators left
out by sampling listed in ``tracesim.evaluation.not_sampled``; a span whose scoring was dropped
(queue full) marked ``tracesim.evaluation.dropped``, one ended with evaluators still running
(``max_defer_s``) listing them in ``tracesim.evaluation.deferred``. The flattened
``tracesim.eval.<name>.*`` attributes repeat the events and are not read, so nothing counts twice.
LLM calls are the spans that report token counts (`~tracesim._pricing.read_usage`). Spans
named ``tracesim.export.dropped`` are not the application's: each holds how many spans an
export queue dropped before they reached the file (``tracesim.export.dropped_spans``), and
they are summed into ``export_dropped`` instead of being counted as spans.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from tracesim import _semconv as sc
from tracesim._foreign_spans import span_kinds
from tracesim._pricing import Usage, has_usage, read_usage
from tracesim._report._redacted import Texts
from tracesim.tracefile import SpanRecord
from tracesim.tracefile._trees import export_drops

__all__ = [
    "NONE_GROUP",
    "UNNAMED",
    "CallSample",
    "Collected",
    "Grouper",
    "Judged",
    "ResultSample",
    "SpanSample",
    "collect",
    "evaluator_name",
    "is_agent",
]

NONE_GROUP = "(none)"
"""The group of spans that lack the ``--group-by`` attribute."""
UNNAMED = "(unnamed)"
"""The evaluator name of a result event without ``gen_ai.evaluation.name``."""

Status = Literal["ok", "skipped", "error"]
_STATUSES: dict[str, Status] = {"ok": "ok", "skipped": "skipped", "error": "error"}
_EVALUATOR_KIND = sc.SPAN_KINDS["evaluator"][0]


@dataclass(frozen=True, slots=True)
class SpanSample:
    """One non-evaluator span: where it is counted, what it measured, and how its scoring went.

    ``status`` is the span's status code (``OK``, ``UNSET`` or ``ERROR``); only ``ERROR`` is an
    error. ``dropped``, ``deferred`` and ``not_sampled`` read the scoring markers (DESIGN §4).
    """

    group: str | None
    name: str
    kind: str | None
    duration_s: float
    error: bool
    start_ns: int
    status: str
    dropped: bool
    deferred: bool
    not_sampled: bool


@dataclass(frozen=True, slots=True)
class ResultSample:
    """One evaluation result, attributed to the span it evaluates."""

    evaluator: str
    group: str | None
    span: str | None
    status: Status
    score: float | None
    passed: bool | None
    threshold: float | None
    label: str | None
    from_carrier: bool
    start_ns: int  # when the evaluated span started (the carrier's start if it is not in the files)


@dataclass(frozen=True, slots=True)
class CallSample:
    """One LLM call: the span that reports token usage, and the usage."""

    trace_id: str
    span_id: str
    name: str
    usage: Usage


@dataclass(frozen=True)
class Judged:
    """A result as the report reads it: its event's attributes and the span it judged."""

    attributes: Mapping[str, Any]
    target: SpanRecord | None
    carrier: SpanRecord


@dataclass
class Collected:
    """Everything the statistics need, in one pass over the spans."""

    spans: list[SpanSample] = field(default_factory=list)
    results: list[ResultSample] = field(default_factory=list)
    not_sampled: list[tuple[str | None, str, str]] = field(default_factory=list)
    trace_ids: set[str] = field(default_factory=set)
    evaluator_spans: int = 0
    duplicate_spans: int = 0
    unresolved_links: int = 0
    start_ns: int | None = None
    end_ns: int | None = None
    calls: list[CallSample] = field(default_factory=list)
    call_results: dict[tuple[str, str], list[ResultSample]] = field(default_factory=dict)
    roots: dict[str, tuple[int, str]] = field(default_factory=dict)  # trace id -> first root's (start, name)
    judged: list[Judged] = field(default_factory=list)  # every result with its span: the drill-down
    failed: list[SpanRecord] = field(default_factory=list)  # spans with status ERROR
    # (group, evaluator, span name, trace id, span id) of each evaluator a span ended without
    deferred: list[tuple[str | None, str, str, str, str]] = field(default_factory=list)
    export_dropped: int = 0  # spans the export queues dropped, from the record spans
    agents: list[tuple[SpanRecord, str | None]] = field(default_factory=list)  # agent spans, their group
    agent_traces: dict[str, list[SpanRecord]] = field(default_factory=dict)  # the traces holding them
    # The texts above are taken through it (redacted when the report redacts); judged and failed
    # hold the spans as read: the drill-down takes what it shows through it too.
    text: Texts = field(default_factory=lambda: Texts(redact=False))


class Grouper:
    """The ``--group-by`` value of a span, ``None`` when not grouping.

    The value is the span's own attribute, else its nearest ancestor's (within the files), else
    the resource's, else ``"(none)"``.

    Looking up the ancestors puts a ``retrieve`` span under the ``user.id`` that was set on the
    agent span above it. Non-string values are written as JSON (``true``, ``3``).

    Example:
        >>> from tracesim.tracefile import SpanRecord
        >>> root = SpanRecord("t", "r", None, "answer", "INTERNAL", 0, 2, {"user.id": "ann"})
        >>> bot = {"service.name": "bot"}
        >>> child = SpanRecord("t", "c", "r", "retrieve", "INTERNAL", 0, 1, {}, resource=bot)
        >>> index = {("t", "r"): root, ("t", "c"): child}
        >>> [Grouper(attribute, index)(child) for attribute in ("user.id", "service.name", "x")]
        ['ann', 'bot', '(none)']
    """

    def __init__(self, attribute: str | None, index: Mapping[tuple[str, str], SpanRecord]) -> None:
        self.attribute = attribute
        self._index = index
        self._lineage: dict[tuple[str, str], Any] = {}  # value found on the span or an ancestor, or None

    def __call__(self, span: SpanRecord) -> str | None:
        if self.attribute is None:
            return None
        value = self._from_lineage(span)
        if value is None:
            value = span.resource.get(self.attribute)
        if value is None:
            return NONE_GROUP
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)

    def _from_lineage(self, span: SpanRecord) -> Any:
        assert self.attribute is not None
        chain: list[tuple[str, str]] = []
        current: SpanRecord | None = span
        value: Any = None
        while current is not None:
            key = (current.trace_id, current.span_id)
            if key in self._lineage:
                value = self._lineage[key]
                break
            if key in chain:  # a parent cycle in a damaged file
                break
            chain.append(key)
            value = current.attributes.get(self.attribute)
            if value is not None:
                break
            parent = current.parent_span_id
            current = self._index.get((current.trace_id, parent)) if parent else None
        for key in chain:
            self._lineage[key] = value
        return value


def collect(spans: Iterable[SpanRecord], group_by: str | None = None, text: Texts | None = None) -> Collected:
    """Turn spans into samples; spans read twice (same trace and span id) count once.

    Every text a sample holds (names, kinds, groups, evaluator names, labels, models) is taken
    through ``text`` (`Texts`): redacted, when the report redacts, before anything is grouped.
    """
    unique: dict[tuple[str, str], SpanRecord] = {}
    out = Collected(text=text) if text is not None else Collected()
    for span in spans:
        key = (span.trace_id, span.span_id)
        if key in unique:
            out.duplicate_spans += 1
        else:
            unique[key] = span
    grouper = Grouper(group_by, unique)
    for span in unique.values():
        _add_span(out, span, unique, grouper)
    if out.agents:  # their runs are built from their traces' spans only (tracesim._report._agents)
        wanted = {span.trace_id for span, _ in out.agents}
        for span in unique.values():
            if span.trace_id in wanted:
                out.agent_traces.setdefault(span.trace_id, []).append(span)
    return out


def _add_span(
    out: Collected, span: SpanRecord, index: Mapping[tuple[str, str], SpanRecord], grouper: Grouper
) -> None:
    if span.name == sc.EXPORT_DROPPED:
        dropped = export_drops(span)
        if dropped is not None:
            out.export_dropped += dropped
            return
    out.trace_ids.add(span.trace_id)
    text = out.text
    start, end = span.start_time_unix_nano, span.end_time_unix_nano
    out.start_ns = start if out.start_ns is None else min(out.start_ns, start)
    out.end_ns = end if out.end_ns is None else max(out.end_ns, end)
    kind = span.attributes.get(sc.SPAN_KIND)
    kind = kind if isinstance(kind, str) else None
    target: SpanRecord | None = span
    carrier = kind == _EVALUATOR_KIND
    if carrier:
        out.evaluator_spans += 1
        target = _link_target(span, index)
        if target is None:
            out.unresolved_links += 1
        # A carrier whose target is missing keeps its own group (usually the same service).
        group = grouper(target if target is not None else span)
    else:
        group = grouper(span)
    if group is not None:
        group = text(group)
    if not carrier:
        _add_sample(out, span, text(kind) if kind is not None else None, group)
        if is_agent(span.attributes):
            out.agents.append((span, group))
    name = text(target.name) if target is not None else None
    when = target.start_time_unix_nano if target is not None else start
    before = len(out.results)
    for event in span.events:
        if event.name == sc.EVALUATION_EVENT:
            out.results.append(
                _result(event.attributes, group, name, from_carrier=carrier, start_ns=when, text=text)
            )
            out.judged.append(Judged(event.attributes, target, span))
    if len(out.results) > before and target is not None and has_usage(target.attributes):
        out.call_results.setdefault((target.trace_id, target.span_id), []).extend(out.results[before:])


def is_agent(attributes: Mapping[str, Any]) -> bool:
    """Whether a span with these attributes is an agent's: OpenInference ``AGENT`` (tracesim's
    ``kind="agent"``), the GenAI ``invoke_agent`` operation, or OpenLLMetry's ``agent``.

    Example:
        >>> is_agent({"gen_ai.operation.name": "invoke_agent"}), is_agent({"openinference.span.kind": "TOOL"})
        (True, False)
    """
    kind, _ = span_kinds(attributes)
    if kind is not None:
        return kind == "agent"
    traceloop = attributes.get("traceloop.span.kind")
    return isinstance(traceloop, str) and traceloop.lower() == "agent"


def _add_sample(out: Collected, span: SpanRecord, kind: str | None, group: str | None) -> None:
    """Count a span that is not a carrier: its sample, its failure, its scoring markers."""
    attributes = span.attributes
    text = out.text
    name = text(span.name)
    error = span.status_code == "ERROR"
    if error:
        out.failed.append(span)
    # most spans carry neither list: test before building anything (100,000 spans, every report)
    skipped = attributes.get(sc.EVALUATION_NOT_SAMPLED)
    skipped = skipped if isinstance(skipped, list) else None
    if skipped:
        out.not_sampled.extend((group, text(str(evaluator)), name) for evaluator in skipped)
    deferred = attributes.get(sc.EVALUATION_DEFERRED)
    deferred = deferred if isinstance(deferred, list) else None
    if deferred:
        out.deferred.extend((group, text(str(e)), name, span.trace_id, span.span_id) for e in deferred)
    out.spans.append(
        SpanSample(
            group,
            name,
            kind,
            span.duration_s,
            error,
            start_ns=span.start_time_unix_nano,
            status=span.status_code,
            dropped=attributes.get(sc.EVALUATION_DROPPED) is True,
            deferred=bool(deferred),
            not_sampled=bool(skipped),
        )
    )
    if span.parent_span_id is None:
        _add_root(out, span, name)
    if has_usage(attributes):
        _add_call(out, span, name)


def _add_root(out: Collected, span: SpanRecord, name: str) -> None:
    first = out.roots.get(span.trace_id)
    if first is None or span.start_time_unix_nano < first[0]:
        out.roots[span.trace_id] = (span.start_time_unix_nano, name)


def _add_call(out: Collected, span: SpanRecord, name: str) -> None:
    usage = read_usage(span.attributes)
    if usage is not None:
        if usage.model is not None and out.text.redact:
            usage = replace(usage, model=out.text(usage.model))
        out.calls.append(CallSample(span.trace_id, span.span_id, name, usage))


def _link_target(span: SpanRecord, index: Mapping[tuple[str, str], SpanRecord]) -> SpanRecord | None:
    """The span a carrier evaluates; an ``EVALUATOR`` span without exactly one link evaluates itself."""
    if len(span.links) != 1:
        return span
    link = span.links[0]
    return index.get((link.trace_id, link.span_id))


def _result(
    attrs: Mapping[str, Any],
    group: str | None,
    span: str | None,
    *,
    from_carrier: bool,
    start_ns: int,
    text: Texts,
) -> ResultSample:
    status = _status(attrs)
    passed = attrs.get(sc.EVALUATION_PASSED)
    label = attrs.get(sc.EVALUATION_SCORE_LABEL)
    return ResultSample(
        evaluator=evaluator_name(attrs, text),
        group=group,
        span=span,
        status=status,
        score=_finite(attrs.get(sc.EVALUATION_SCORE_VALUE)),
        passed=passed if isinstance(passed, bool) else None,
        threshold=_finite(attrs.get(sc.EVALUATION_THRESHOLD)),
        label=text(label) if isinstance(label, str) and label else None,
        from_carrier=from_carrier,
        start_ns=start_ns,
    )


def evaluator_name(attrs: Mapping[str, Any], text: Texts) -> str:
    """The evaluator of a result event (taken through ``text``), `UNNAMED` without one."""
    name = attrs.get(sc.EVALUATION_NAME)
    return text(name) if isinstance(name, str) and name else UNNAMED


def _status(attrs: Mapping[str, Any]) -> Status:
    status = attrs.get(sc.EVALUATION_STATUS)
    known = _STATUSES.get(status) if isinstance(status, str) else None
    if known is not None:
        return known
    # Writers that predate the status attribute: an error type marks a failed evaluation.
    return "error" if sc.ERROR_TYPE in attrs else "ok"


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:  # an intValue with hundreds of digits
        return None
    return value if math.isfinite(value) else None
