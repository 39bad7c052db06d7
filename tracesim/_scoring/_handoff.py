"""Workers that export: a call scored in a worker process is finished there, not in the host.

With ``scoring_export`` (``auto``, the default, or ``workers``), a scored call whose evaluators
a worker process can all rebuild is not held open in the host while it is scored. Its span
ends when the call returns, as an unscored one would, but it does not go to the host's
exporters: it is diverted (its id is in `HANDING` while it ends) and handed, with its job, to a
worker process as one `ProcessJob`. The worker scores it, writes the results (and an expected
output resolved from a source) on the span's data as the host would have, redacts it with the
configuration's redaction, appends it to the trace file and sends it to the OTLP backend itself,
with the results' log records (`Finisher`). The host then reads one acknowledgement per call:
the outcomes, for `scoring_stats` and the metrics, the cost of the call when it is an LLM span,
and the results themselves when Phoenix or MLflow sinks take them in the host.
So for a scored call the host's threads do what they do for an
unscored one, plus a pickle of its span's data in a batch; its export is the worker's.

Why: every piece of Python a host thread runs in the background is a moment a request thread
may wait for the interpreter, and on a machine whose idle CPUs wake slowly each such wait costs
milliseconds. Recording and exporting a scored span took the host's threads about 300 µs (three
evaluators; 110 µs of background work per call remain when the worker writes); a p99 within
1.15x of the unscored call needs less than about 15 µs (see ``docs/performance.md``).

Nothing is lost: the host keeps each handed call (its ended span and its job) until the worker
says it is written (over OTLP: delivered, or in the spool; the worker says first that it is
scored, so that it holds no place in the worker meanwhile), so the calls of a killed worker go
to the next one (a call may then be written twice, never lost; its results are counted once).
What a worker cannot finish goes back to the host's path, where
the ended span is held (`HeldSpan`) and scored as another instrumentation's span would be: an
evaluator a worker cannot rebuild (said once, as for runs), an expected output whose source
raised, data that does not pickle, a pool that cannot start, a shutdown that comes first. A
worker that cannot write spans at all (its writer fails, or it crashes twice while building
evaluators or writing) leaves that call and every later one to the host, said once.

A configuration workers cannot finish keeps the host's path for every call (`setup_for`; said
once at `configure()` with ``workers``, silently with ``auto``): exporters other than the trace
file and OTLP (the console, an exporter object), a tracer provider of the application's that
tracesim joined (its own processors expect finished spans), a redaction hook that does not
pickle or is defined in the script.
"""

from __future__ import annotations

import logging
import os
import pickle
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from tracesim import _semconv as sc

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan, SpanLimits

    from tracesim._config import Settings
    from tracesim._scoring._jobs import Job
    from tracesim.evaluators import EvalResult

__all__ = [
    "EXPORTED",
    "HANDED",
    "HANDING",
    "RETURNED",
    "Finisher",
    "ProcessJob",
    "setup_for",
    "span_data",
]

_logger = logging.getLogger("tracesim")

HANDING: set[int] = set()
"""Ids of the spans ending right now because they are handed to a worker: the runtime's
forwarding processor does not pass them on (their export is the worker's)."""

HANDED = "handed"
"""A job's state while a worker has it (`Job.handed`)."""
EXPORTED = "exported"
"""The worker wrote its span."""
RETURNED = "returned"
"""The host took it back: its span is held and finished on the host's path."""


# ---------------------------------------------------------------- the host's side


def setup_for(
    settings: Settings,
    resource: Resource,
    *,
    joined: bool,
    sinks: Sequence[Any],
    limits: SpanLimits | None = None,
) -> tuple[bytes | None, str | None]:
    """What workers finish calls with (pickled), or None and why the host finishes them.

    ``limits``: the span limits of the host's tracer provider, which the workers apply to what
    they add to a span as the host's spans do (the SDK's defaults, read from the environment,
    when not given).

    Nothing and no reason when ``scoring_export`` is ``host``. With ``workers`` a reason is logged
    once here; ``auto`` keeps the host's path without a word.
    """
    if settings.scoring_export == "host":
        return None, None
    why = None
    if settings.scoring_mode != "background":
        why = f"scoring_mode is {settings.scoring_mode!r} (workers finish calls scored in the background)"
    elif settings.scoring_processes == 0:
        why = "scoring_processes is 0: there is no worker process"
    elif joined:
        why = (
            "tracesim joined your application's tracer provider, whose own span processors expect "
            "each scored span with its results"
        )
    else:
        others = [item for item in settings.exporters if item not in ("jsonl", "otlp")]
        if others:
            shown = ", ".join(item if isinstance(item, str) else type(item).__name__ for item in others)
            why = f"workers export to the trace file (jsonl) and OTLP only, and spans also go to {shown}"
    data = None
    hook = settings.redact
    if why is None and getattr(hook, "__module__", None) in ("__main__", "__mp_main__"):
        why = (
            "the redact hook is defined in the script (__main__), which a worker process does not "
            "import; define it in a module"
        )
    if why is None:
        from opentelemetry.sdk.trace import SpanLimits

        from tracesim._capture import make_options
        from tracesim._scoring._sinks import LogEventSink

        setup = {
            "capture": make_options(settings.capture, settings.max_value_chars),
            "redaction": (
                settings.redact_patterns,
                settings.redact,
                settings.max_value_chars,
                settings.prices,
            ),
            "jsonl": (
                (os.path.abspath(settings.jsonl_path), settings.jsonl_max_bytes, settings.jsonl_backups)
                if "jsonl" in settings.exporters
                else None  # no exporter: the spans go nowhere, as in the host
            ),
            "otlp": _otlp_options(settings) if "otlp" in settings.exporters else None,
            # the results' log records are the worker's; other sinks take each result in the host
            "logs": _log_settings(settings) if any(isinstance(s, LogEventSink) for s in sinks) else None,
            "results": any(not isinstance(sink, LogEventSink) for sink in sinks),
            "resource": (dict(resource.attributes), resource.schema_url),
            "limits": limits if limits is not None else SpanLimits(),
        }
        try:
            data = pickle.dumps(setup, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            why = (
                f"the redaction settings do not pickle ({type(exc).__name__}: {exc}); a redact hook "
                "defined at the top level of a module (not the script) does"
            )
    if why is not None:
        if settings.scoring_export != "workers":
            return None, why
        _logger.warning("tracesim: scoring_export is 'workers', but the host finishes scored calls: %s.", why)
        return None, why
    return data, None


def _otlp_options(settings: Settings) -> tuple[Any, ...]:
    """What a worker builds the configuration's OTLP exporter from, as the host builds its own
    (`tracesim._runtime._exporter`); the rest comes from the ``OTEL_EXPORTER_OTLP_*`` variables,
    which a worker inherits."""
    from tracesim.exporters._otlp import settings_headers

    return (
        settings.otlp_protocol,
        settings.otlp_endpoint,
        settings_headers(settings.otlp_headers, settings.mlflow_experiment_id),
        os.path.abspath(settings.spool_dir) if settings.spool_dir else None,
        settings.spool_max_bytes,
        settings.evaluation_span_events,
    )


def _log_settings(settings: Settings) -> Settings:
    """The settings a worker builds the results' log records' sink from (`LogEventSink`): those
    that say where records go, without what a worker has no use for (rules, exporter objects)."""
    import dataclasses

    return dataclasses.replace(
        settings,
        evaluators=(),
        redact=None,
        exporters=tuple(item for item in settings.exporters if isinstance(item, str)),
    )


def span_data(span: ReadableSpan) -> tuple[Any, ...]:
    """An ended span as plain data a worker rebuilds it from (`Finisher.rebuilt`)."""
    scope = span.instrumentation_scope
    status = span.status
    return (
        span.name,
        span.context,
        span.parent,
        span.kind.value,
        span.start_time,
        span.end_time,
        _plain(span.attributes),
        [(event.name, _plain(event.attributes), event.timestamp) for event in span.events],
        [(link.context, _plain(link.attributes)) for link in span.links],
        (status.status_code.value, status.description),
        None if scope is None else (scope.name, scope.version, scope.schema_url),
        (span.dropped_attributes, span.dropped_events, span.dropped_links),
    )


def plain_span(data: tuple[Any, ...], resource: Resource | None, evaluators: Sequence[Any]) -> ReadableSpan:
    """The span `span_data` describes, without results: each evaluator listed as deferred (its
    results were counted, but the worker that had them written on the span is gone)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event

    attributes = {**data[6], sc.EVALUATION_DEFERRED: [evaluator.name for evaluator in evaluators]}
    events = [Event(name, values, at) for name, values, at in data[7]]
    return rebuilt_span(data, resource if resource is not None else Resource.get_empty(), attributes, events)


def rebuilt_span(data: tuple[Any, ...], resource: Resource, attributes: Any, events: Any) -> ReadableSpan:
    """The span `span_data` describes, with ``resource`` and these attributes and events."""
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import Link, SpanKind, Status, StatusCode

    from tracesim.exporters._redacting import _bounded

    name, context, parent, kind, start, end, _, _, links, status, scope, dropped = data
    return ReadableSpan(
        name=name,
        context=context,
        parent=parent,
        resource=resource,
        attributes=attributes,
        events=events,
        links=_bounded([Link(c, a) for c, a in links], dropped[2]),
        kind=SpanKind(kind),
        status=Status(StatusCode(status[0]), status[1]),
        start_time=start,
        end_time=end,
        instrumentation_scope=None if scope is None else InstrumentationScope(*scope),
    )


def _plain(attributes: Any) -> dict[str, Any]:
    """A plain dict of ``attributes``: the SDK's mappings copy their dict in C (``copy``), where
    ``dict()`` would go through their Python ``__iter__`` and ``__getitem__``, key by key."""
    if not attributes:
        return {}
    copy = getattr(attributes, "copy", None)
    found = copy() if copy is not None else None
    return found if type(found) is dict else dict(attributes)


class ProcessJob:
    """A whole scored call for a worker: it scores every evaluator, writes and exports the span.

    Takes one pool token per evaluator (``token`` is the first) and one more while the worker
    writes its span (`finishing`), so the pool's monitor knows which evaluator a worker is
    running and its time limit, and a crash is charged to what caused it. ``presets`` are
    results the host decided already (a run that hung or took down workers): the worker writes
    them as they are. ``kinds``: who made each result (``annotator_kind``), as the host's
    evaluators say.
    """

    __slots__ = (
        "blob",
        "deaths",
        "evaluators",
        "expected",
        "job",
        "keys",
        "kinds",
        "presets",
        "solo",
        "span",
        "token",
        "value",
        "write_expected",
    )

    def __init__(
        self, job: Job, keys: Sequence[int], expected: Any, value: Any, *, write_expected: bool
    ) -> None:
        self.job: Job | None = job  # None once scored (`scored`): the pickled item is what is left
        self.span: ReadableSpan | None = job.handle.otel_span  # type: ignore[assignment]  # the SDK's, ended
        self.blob: bytes | None = None  # the item as last sent
        self.evaluators = job.evaluators
        self.keys = tuple(keys)
        self.kinds = tuple(getattr(evaluator, "annotator_kind", "CODE") for evaluator in self.evaluators)
        self.expected = expected
        self.value = value
        self.write_expected = write_expected
        self.presets: dict[int, EvalResult] = {}
        self.token = 0
        self.deaths = 0
        self.solo = False

    @property
    def width(self) -> int:
        """Pool tokens this job takes: one per evaluator, one for writing its span."""
        return len(self.keys) + 1

    @property
    def finishing(self) -> int:
        """The token a worker's slot holds while it writes this call's span."""
        return self.token + len(self.keys)

    def index(self, token: int) -> int | None:
        """The evaluator a worker runs under ``token`` (None: it is writing the span)."""
        index = token - self.token
        return index if 0 <= index < len(self.keys) else None

    @property
    def name(self) -> str:
        """Its evaluators' names, for what is said about it."""
        return ", ".join(evaluator.name for evaluator in self.evaluators)

    def limit(self, token: int, stuck_after_s: float) -> float:
        """How long the run under ``token`` may take (writing the span: ``stuck_after_s``)."""
        index = self.index(token)
        return stuck_after_s if index is None else self.evaluators[index].timeout_s or stuck_after_s

    def item(self) -> bytes:
        """What the worker is sent, pickled: the evaluators' keys first (a tuple: a job, not a run).

        Kept as it is sent, so that once the call is scored the host holds only these bytes
        (`scored`) until its span is kept."""
        job = self.job
        if job is None:  # scored already: sent again because its worker died before sending it
            assert self.blob is not None
            if not self.presets:
                return self.blob
            fields = list(pickle.loads(self.blob))
            fields[5] = self.presets  # decided since (a run that hung again)
        else:
            assert self.span is not None
            fields = [
                self.keys,
                job.output,
                self.expected,
                self.value,
                span_data(self.span),
                self.presets,
                job.deadline,
                self.write_expected,
                self.kinds,
            ]
        self.blob = pickle.dumps(tuple(fields), pickle.HIGHEST_PROTOCOL)
        return self.blob

    def scored(self) -> None:
        """Let go of the call's objects once it is scored: until the worker says its span is
        kept, only the bytes last sent are held (a handful of objects for the host's garbage
        collector, where the call's span, job and values are dozens per call)."""
        if self.blob is not None:
            self.job = None
            self.span = self.expected = self.value = None

    def data(self) -> tuple[Any, ...]:
        """The span's data (`span_data`) as last sent."""
        assert self.blob is not None
        found: tuple[Any, ...] = pickle.loads(self.blob)[4]
        return found


class HeldHandle:
    """A handed call taken back by the host: its ended span held (`HeldSpan`) until scored."""

    __slots__ = ("_capture", "_handle", "otel_span")

    def __init__(self, handle: Any, forward: Callable[[ReadableSpan], None], capture: Any) -> None:
        from tracesim._scoring._held_spans import HeldSpan

        self._handle = handle
        self._capture = capture
        self.otel_span: Any = HeldSpan(handle.otel_span, forward)

    @property
    def span_context(self) -> Any:
        return self._handle.span_context

    def set_expected(self, value: Any) -> None:
        if not self._capture.enabled:  # as `tracesim.Span.set_expected`: nothing captured
            return
        from tracesim._scoring._expect import expected_attributes

        self.otel_span.set_attributes(expected_attributes(value, self._capture))


# ---------------------------------------------------------------- the worker's side


class Finisher:
    """In a worker: writes a handed call's results on its span and exports it.

    The trace file is written at once (`export`, on the worker's loop: a file append). Spans
    for an OTLP backend go to a `_Sender` thread, which says through ``send`` which calls'
    spans are kept (delivered, or in the spool directory) once they are.
    """

    def __init__(self, setup: bytes, send: Callable[[list[int], bool], None] | None = None) -> None:
        from opentelemetry.sdk.resources import Resource

        from tracesim._redact import Redactor
        from tracesim.exporters import JsonlExporter, Redaction

        values = pickle.loads(setup)
        self.capture = values["capture"]
        patterns, redact, limit, prices = values["redaction"]
        self.redaction = Redaction(Redactor(patterns, redact), limit, prices=prices)
        self.file: Any = None
        if values["jsonl"] is not None:
            path, max_bytes, backups = values["jsonl"]
            self.file = JsonlExporter(path, max_bytes=max_bytes, backups=backups)
        attributes, schema_url = values["resource"]
        self.resource = Resource(attributes, schema_url)
        self.logs: Any = None  # the results' log records (`LogEventSink`), as the host would send
        self._lost_told = 0  # of the records `logs` dropped, those the host was told of
        if values["logs"] is not None:
            from tracesim._scoring._sinks import LogEventSink

            self.logs = LogEventSink(values["logs"], self.resource, self.capture, self.redaction)
        self.remote: _Sender | None = None
        if values["otlp"] is not None:
            exporter, spool = _remote_exporter(values["otlp"])
            self.remote = _Sender(exporter, spool, send or (lambda tokens, settled: None), self.logs)
        self.results: bool = values["results"]  # the host's other result sinks take each result
        self.limits: SpanLimits = values["limits"]
        self._carriers: list[ReadableSpan] = []
        self._tracer: Any = None

    def finish(
        self,
        data: tuple[Any, ...],
        results: Sequence[tuple[str, EvalResult]],
        expected: Any,
        cut: int,
    ) -> list[ReadableSpan]:
        """The span with its results, each with its annotator kind. Those from ``cut`` on came
        past ``max_defer_s``: the span lists them as deferred and they go on carrier spans, as
        in the host (`ScoringPipeline._expire`, `emit_carrier`)."""
        from tracesim._scoring._expect import NOT_SET, expected_attributes
        from tracesim._scoring._results import emit_carrier, write

        recorder: Any = _Recorder(data, self.limits)
        if expected is not NOT_SET and expected is not None:
            recorder.set_attributes(expected_attributes(expected, self.capture))
        end_ns = data[5]
        redaction = self.redaction
        for kind, result in results[:cut]:
            write(recorder, result, self.capture, end_ns, redaction=redaction, annotator_kind=kind)
        if cut < len(results):
            recorder.set_attributes({sc.EVALUATION_DEFERRED: [result.name for _, result in results[cut:]]})
        spans = [self.rebuilt(data, recorder)]
        logs = self.logs
        if logs is not None:
            target = data[1]
            for kind, result in results:
                logs.submit(target, result, kind)
        if cut < len(results):
            tracer = self._carrier_tracer()
            for kind, result in results[cut:]:
                emit_carrier(
                    tracer,
                    data[1],
                    result,
                    self.capture,
                    at_ns=end_ns,
                    redaction=redaction,
                    annotator_kind=kind,
                )
            spans.extend(self._carriers)
            self._carriers.clear()
        return spans

    def rebuilt(self, data: tuple[Any, ...], recorder: _Recorder) -> ReadableSpan:
        """The span `span_data` describes, with this configuration's resource and the attributes
        and events ``recorder`` holds."""
        return rebuilt_span(data, self.resource, recorder.attributes, recorder.events)

    def _carrier_tracer(self) -> Any:
        if self._tracer is None:
            from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

            from tracesim._version import __version__

            carriers = self._carriers

            class Collect(SpanProcessor):
                def on_end(self, span: ReadableSpan) -> None:
                    carriers.append(span)

            provider = TracerProvider(resource=self.resource, span_limits=self.limits, shutdown_on_exit=False)
            provider.add_span_processor(Collect())
            self._tracer = provider.get_tracer("tracesim", __version__)
        return self._tracer

    def export(
        self, spans: Sequence[ReadableSpan]
    ) -> tuple[dict[int, tuple[str, str, float]], list[Any] | None]:
        """Redact ``spans`` and write them to the trace file; the cost of each priced LLM span
        among them (by span id), and the redacted spans for the OTLP backend (None: there is
        none, the calls are written), for `send` once the host is told they are scored."""
        from tracesim._metrics._cost import priced
        from tracesim.exporters._redacting import redact_batch

        costs: dict[int, tuple[str, str, float]] = {}
        if not spans or (self.file is None and self.remote is None):
            return costs, None
        redacted = redact_batch(self.redaction.span, spans)
        for span in redacted:
            attributes = span.attributes
            if attributes and span.context is not None:
                cost = priced(attributes)
                if cost is not None:
                    costs[span.context.span_id] = cost
        if self.file is not None and redacted:
            self.file.export(redacted)
        if self.remote is None:
            if self.logs is not None:  # the results' records in the file before the calls are done
                self.logs.force_flush(_SETTLE_S)
            return costs, None
        return costs, redacted

    def log_records_lost(self) -> int:
        """The results' log records this worker's queue dropped since the last call (for the host's
        `ScoringStats.log_records_dropped`)."""
        if self.logs is None:
            return 0
        dropped: int = self.logs.log_records_dropped
        lost, self._lost_told = dropped - self._lost_told, dropped
        return lost

    def send(self, redacted: Sequence[ReadableSpan], tokens: Sequence[int]) -> None:
        """Hand ``redacted``, the spans of the calls under ``tokens``, to the sender, which says
        `WRITTEN` for those calls once they are kept. Call it after the host has been told they
        are scored: a `WRITTEN` that came first would find nothing to clear."""
        assert self.remote is not None
        self.remote.put(redacted, tokens)

    def close(self, timeout_s: float = 5.0) -> None:
        """Send what is left, then close the exporters (the remote ones first: they may be slow),
        within ``timeout_s``: a spool keeps the spans not yet sent."""
        deadline = time.monotonic() + timeout_s
        try:
            if self.remote is not None:
                self.remote.close(timeout_s / 2)
            if self.logs is not None:
                self.logs.shutdown(max(0.0, deadline - time.monotonic()))
        finally:
            if self.file is not None:
                self.file.shutdown()


def _remote_exporter(options: tuple[Any, ...]) -> tuple[Any, Any]:
    """The OTLP exporter the host's configuration builds (`tracesim._runtime._exporter`), without
    the results' span events when ``evaluation_span_events`` is off; and its spool (the
    `SpoolingExporter` inside, None without a spool)."""
    from tracesim.exporters import otlp_exporter
    from tracesim.exporters._spool import SpoolingExporter

    protocol, endpoint, headers, spool, spool_max_bytes, span_events = options
    exporter = otlp_exporter(protocol, endpoint, headers, spool_dir=spool, spool_max_bytes=spool_max_bytes)
    spooling = exporter if isinstance(exporter, SpoolingExporter) else None
    if span_events:
        return exporter, spooling
    from tracesim.exporters._without_events import WithoutEvaluationEvents

    return WithoutEvaluationEvents(exporter), spooling


_SEND_AFTER_S = 0.5
"""How long a worker's sender gathers spans for the OTLP backend (`_SEND_AT` spans go at once).
The host keeps each call until its span is sent, so this bounds the calls it holds too."""
_SEND_AT = 512
"""Spans in one request: OpenTelemetry's batch processor's default."""
_SETTLE_S = 2.0
"""With a spool: how long the sender waits for the backend to take a batch before it writes the
batch to disk (and so keeps it) instead."""


class _Sender:
    """In a worker: sends redacted spans to the OTLP backend on a thread of its own, then tells
    the host which calls are kept: delivered, or in the spool directory (`SpoolingExporter.settle`).

    The worker's loop only appends; a backend that is slow or down holds this thread, never
    the scoring. The host holds each call until it hears (a worker killed before then loses
    nothing: its calls go to another one). Without a spool a batch the backend does not take
    is lost after the exporter's retries, as on the host's own path.
    """

    def __init__(
        self,
        exporter: Any,
        spool: Any,
        send: Callable[[list[int], bool], None],
        logs: Any = None,
    ) -> None:
        self._exporter = exporter
        self._logs = logs  # the results' log records: sent before the calls are said to be kept
        self._spool = spool  # the `SpoolingExporter` in ``exporter`` (None: no spool)
        self._send = send
        self._spans: list[ReadableSpan] = []
        self._tokens: list[int] = []
        self._since = 0.0
        self._hurried_until = 0.0  # a flush is waiting: send at once until then
        self._logs_behind = False  # the last flush of the log records did not empty their queue
        self._closing = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="tracesim-worker-export", daemon=True)
        self._thread.start()

    def put(self, spans: Sequence[ReadableSpan], tokens: Sequence[int]) -> None:
        with self._changed:
            first = not self._tokens
            if first:
                self._since = time.monotonic()
            self._spans.extend(spans)
            self._tokens.extend(tokens)
            if first or len(self._spans) >= _SEND_AT:  # first: the sender waits with no time limit
                self._changed.notify()

    def hurry(self) -> None:
        """Send what comes at once for the next `_SEND_AFTER_S` (the host's flush waits for it)."""
        with self._changed:
            self._hurried_until = time.monotonic() + _SEND_AFTER_S
            self._changed.notify()

    def _run(self) -> None:
        from tracesim._internal_errors import internal_error

        changed = self._changed
        while True:
            with changed:
                while not self._closing:
                    if self._tokens:
                        now = time.monotonic()
                        left = self._since + _SEND_AFTER_S - now
                        if left <= 0 or len(self._spans) >= _SEND_AT or now < self._hurried_until:
                            break
                    elif self._logs_behind and time.monotonic() < self._hurried_until:
                        break  # a flush waits for the log records still queued: try them again
                    else:
                        left = None
                    changed.wait(left)
                if not self._tokens and self._closing:
                    return
                spans, self._spans = self._spans, []
                tokens, self._tokens = self._tokens, []
            settled = True  # the log records' queue is empty (delivered, or given up by the exporter)
            try:
                for at in range(0, len(spans), _SEND_AT):
                    self._exporter.export(spans[at : at + _SEND_AT])
                if self._spool is not None and spans:  # every batch delivered or on disk
                    self._spool.settle(_SETTLE_S)
                if self._logs is not None:
                    settled = self._logs.force_flush(_SETTLE_S)
            except Exception:  # the exporters return failures; this is a bug of ours
                internal_error("scoring worker: sending spans")
            self._logs_behind = not settled
            try:
                self._send(tokens, settled)
            except OSError:  # the host is gone: nobody to tell
                return

    def close(self, timeout_s: float) -> None:
        """Send what is waiting, then shut the exporter down (a spool keeps what is unsent), the
        wait for the sender within ``timeout_s``."""
        ends = time.monotonic() + timeout_s
        with self._changed:
            self._closing = True
            self._changed.notify()
        self._thread.join(timeout_s)
        if self._spool is not None:  # what it could not send goes to disk by then
            self._spool.set_shutdown_deadline(ends)
        self._exporter.shutdown()


class _Recorder:
    """What `tracesim._scoring._results.write` writes on: a handed span's attributes and events,
    bounded by the host's span limits as its SDK span bounds them: an attribute past the count
    limit is dropped, a long text cut, the oldest event dropped for a new one past the event
    limit, and the drops counted for the exporters. While nothing comes near a limit (the
    common case) they are a plain dict and list, which is what the SDK's classes would hold;
    from the first write that could be cut, the SDK's own classes hold them."""

    __slots__ = ("attributes", "events", "limits")

    def __init__(self, data: tuple[Any, ...], limits: SpanLimits) -> None:
        from opentelemetry.sdk.trace import Event

        self.limits = limits
        self.attributes: Any = data[6]  # within the limits already: the host's span held it
        self.events: Any = [e if isinstance(e, Event) else Event(e[0], e[1], e[2]) for e in data[7]]
        dropped = data[11]
        if dropped[0]:
            self._bound_attributes()
            self.attributes.dropped = dropped[0]  # the SDK reports dropped counts from this field
        if dropped[1]:
            self._bound_events()
            self.events.dropped = dropped[1]  # type: ignore[attr-defined]  # a BoundedList now

    def _bound_attributes(self) -> None:
        from opentelemetry.attributes import BoundedAttributes

        if type(self.attributes) is dict:
            limits = self.limits
            self.attributes = BoundedAttributes(
                limits.max_span_attributes,
                self.attributes,
                immutable=False,
                max_value_len=limits.max_span_attribute_length,
            )

    def _bound_events(self) -> None:
        from opentelemetry.sdk.util import BoundedList

        if type(self.events) is list:
            events: BoundedList[Any] = BoundedList(self.limits.max_events)
            events.extend(self.events)
            self.events = events

    def set_attributes(self, attributes: dict[str, Any]) -> None:
        held = self.attributes
        if type(held) is dict:
            limits = self.limits
            room = limits.max_span_attributes
            if limits.max_span_attribute_length is None and (
                room is None or len(held) + len(attributes) <= room
            ):
                held.update(attributes)
                return
            self._bound_attributes()
            held = self.attributes
        for key, value in attributes.items():
            held[key] = value

    def add_event(self, name: str, attributes: Any = None, timestamp: int | None = None) -> None:
        from opentelemetry.attributes import BoundedAttributes
        from opentelemetry.sdk.trace import Event

        limits = self.limits
        room = limits.max_events
        if type(self.events) is list and room is not None and len(self.events) >= room:
            self._bound_events()
        count = limits.max_event_attributes
        if limits.max_attribute_length is None and (
            not attributes or count is None or len(attributes) <= count
        ):
            self.events.append(Event(name, dict(attributes or {}), timestamp))
            return
        bounded = BoundedAttributes(count, attributes, max_value_len=limits.max_attribute_length)
        self.events.append(Event(name, bounded, timestamp))
