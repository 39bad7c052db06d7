"""The one piece of global state: the active configuration and its pipeline.

`configure()` builds a complete `Runtime` first (so a bad setting raises before anything
changes), then swaps it in and drains the old one. Spans reach the exporters through one
delegating `SpanProcessor`, added once to whichever `TracerProvider` tracesim uses: its own,
or the application's when one was already installed. Swapping the runtime swaps what that
processor forwards to; tracesim never removes or patches anyone else's processors.
"""

from __future__ import annotations

import atexit
import contextvars
import logging
import os
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace

from tracesim import _internal_errors, _redaction_in_force
from tracesim._attributes import CONTEXT_KEY as _ATTRIBUTES_KEY
from tracesim._capture import CaptureOptions, make_options
from tracesim._config import Settings, resolve
from tracesim._errors import ConfigError
from tracesim._foreign_spans import KIND_OF_OPERATION
from tracesim._llm_twins import MODEL_CALL_OPERATIONS, LLMTwins, is_model_call
from tracesim._own_model_calls import MODEL_CALL_KEY
from tracesim._redact import Redactor
from tracesim._scoring import (
    Plan,
    Rule,
    ScoringPipeline,
    compile_rules,
    evaluators_seen,
    plan,
    result_sinks,
    scores_runs,
    suggestion,
)
from tracesim._scoring._handoff import HANDING
from tracesim._semconv import LLM_COUNTED_IN_PARENT, SPAN_KINDS
from tracesim._version import __version__

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

    from tracesim._metrics import Metrics
    from tracesim._runs._recorder import RunRecorder
    from tracesim._scoring import ForeignScoring
    from tracesim.exporters import Redaction

__all__ = [
    "NotConfiguredWarning",
    "Runtime",
    "active",
    "build",
    "configure",
    "force_flush",
    "install",
    "shutdown",
]

_logger = logging.getLogger("tracesim")
# OpenTelemetry's suppress_instrumentation() sets this key (a private name, read defensively).
_SUPPRESS = getattr(otel_context, "_SUPPRESS_INSTRUMENTATION_KEY", "suppress_instrumentation")
# The current context, read for that key on every traced call: straight from the context
# variable of OpenTelemetry's default runtime context (two C calls), else through its API.
_context_var = getattr(getattr(otel_context, "_RUNTIME_CONTEXT", None), "_current_context", None)
_current_context = (
    _context_var.get if isinstance(_context_var, contextvars.ContextVar) else otel_context.get_current
)


class NotConfiguredWarning(UserWarning):
    """Traced code ran before `tracesim.configure()`; it ran untraced."""


class Runtime:
    """One configuration's live objects: tracer, capture options, processors."""

    def __init__(
        self,
        settings: Settings,
        tracer: otel_trace.Tracer,
        processors: Sequence[SpanProcessor],
        capture: CaptureOptions,
        scoring: ScoringPipeline | None = None,
        rules: Sequence[Rule] = (),
        sinks: Sequence[Any] = (),
        exporters: Sequence[SpanExporter] = (),
    ) -> None:
        self.settings = settings
        self.tracer = tracer
        self.processors = tuple(processors)
        self.capture = capture
        self.enabled = settings.enabled
        self.scoring = scoring
        self.rules = tuple(rules)
        self.sinks = tuple(sinks)
        self.exporters = tuple(exporters)
        # The provider spans of this configuration go through (integrations start their spans
        # there); None for a disabled configuration.
        self.provider: TracerProvider | None = None
        # What everything this configuration sends goes through (None when disabled); a
        # backfill in the same process sends through it too.
        self.redaction: Redaction | None = None
        # Rules also score spans other instrumentations make (held from export until scored).
        self.foreign: ForeignScoring | None = None
        # The configuration's OpenTelemetry metrics (None when they go nowhere); instrumentations
        # record through it (tracesim._metrics._current), the scoring pipeline counts into it.
        self.metrics: Metrics | None = None
        # The spans of runs being scored (see tracesim._runs._recorder); only with scoring on.
        # With tracing on, also without scoring: `record_run` and experiments take runs from it.
        self.runs: RunRecorder | None = None
        if self.enabled:
            from tracesim._runs._recorder import RunRecorder

            # A rule scoring runs, or scoring agents (whose output may be their last LLM answer),
            # may select another instrumentation's span, known only at its end: every trace is
            # then kept until its local root ends.
            record_all = scoring is not None and any(
                rule.kind == "agent" or any(scores_runs(e) for e in rule.evaluators) for rule in self.rules
            )
            self.runs = RunRecorder(record_all=record_all, max_value_chars=capture.max_value_chars)
        if scoring and self.rules:
            from tracesim._scoring import ForeignScoring

            self.foreign = ForeignScoring(self.rules, scoring, capture, self.runs)

    def plan(
        self,
        name: str,
        kind: str,
        evaluators: tuple[Any, ...],
        expected: Any,
        attributes: Mapping[str, Any] | None = None,
    ) -> Plan | None:
        """How a span named ``name`` of kind ``kind`` (with ``attributes`` at its start) is scored."""
        if self.scoring is None:
            return None
        foreign = self.foreign
        kinds = (kind, _OPERATION_OF_KIND.get(kind))
        matched = None
        if foreign is not None:
            matched = foreign.matched
            foreign.note(name, kinds)
        return plan(evaluators, expected, self.rules, name, kinds, attributes, matched)

    def offer(self, span: ReadableSpan) -> bool:
        """Hold ``span`` (another instrumentation's) for the rules that score it; False if none do."""
        foreign = self.foreign
        if foreign is None:
            return False
        try:
            return foreign.offer(span, self._forward)
        except Exception:
            _internal_errors.internal_error("scoring: a span of another instrumentation")
            return False

    def _forward(self, span: ReadableSpan) -> None:
        for processor in self.processors:
            processor.on_end(span)

    def _report_unmatched(self) -> None:
        foreign = self.foreign
        if foreign is None:
            return
        for rule in foreign.unmatched_rules():
            seen = ", ".join(f"{name!r} ({kind})" for name, kind in foreign.seen) or "none"
            hint = suggestion(rule, list(foreign.seen))
            _logger.warning(
                "tracesim: the evaluator rule %s selected no span before shutdown; spans seen: %s. %s",
                rule.describe(),
                seen,
                f"Did you mean {hint}?" if hint else "Check its match, kind and attributes.",
            )

    def force_flush(self, timeout_s: float) -> bool:
        """Score what is queued, then export everything finished, within ``timeout_s``."""
        deadline = _Deadline(timeout_s)
        scoring = self.scoring
        ok = scoring.force_flush(deadline.seconds(), log_records=False) if scoring is not None else True
        ok = self._flush_processors(deadline.seconds(), sinks=False) and ok
        for exporter in self.exporters:
            ok = _flush_exporter(exporter, deadline.millis()) and ok
        # Then the results sent beside the spans: MLflow and Phoenix take a result only once
        # they have its span, so the spans go first; so do the log records workers send.
        for sink in self.sinks:
            ok = sink.force_flush(deadline.seconds()) and ok
        if scoring is not None:
            ok = scoring.log_records_out(deadline.seconds()) and ok
        if self.metrics is not None:  # last: the cost of the spans just exported is in
            ok = self.metrics.force_flush(deadline.seconds()) and ok
        return ok

    def _flush_processors(self, timeout_s: float, *, sinks: bool = True) -> bool:
        """Hand every finished span to the exporters, then (``sinks``) flush the result sinks."""
        deadline = _Deadline(timeout_s)
        ok = True
        for processor in self.processors:
            ok = processor.force_flush(deadline.millis()) and ok
        if sinks:
            for sink in self.sinks:
                ok = sink.force_flush(deadline.seconds()) and ok
        return ok

    def shutdown(self, timeout_s: float, *, drained: Callable[[], object] | None = None) -> bool:
        """Drain scoring, flush, then stop the exporters; ``drained`` runs between the two (the
        runtime is uninstalled there). The runtime must not be used afterwards.

        The spans already queued start for their exporters at once, while scoring drains; the
        drain leaves `_CLOSE_SHARE` of the deadline to the close, so a slow evaluator cannot use
        it all and leave the spans it ends behind.
        """
        timeout_s = max(0.0, timeout_s)
        deadline = _Deadline(timeout_s)
        self._flush_processors(0, sinks=False)  # started on their own threads, not waited for
        # Installed while it drains: the spans it ends go out.
        ok = self.drain(max(0.0, deadline.seconds() - _CLOSE_SHARE * timeout_s))
        if drained is not None:
            drained()
        return self.close(deadline.seconds()) and ok

    def drain(self, timeout_s: float) -> bool:
        """Finish scoring: every span still open ends. Run it while this runtime is installed,
        so those spans still reach its exporters."""
        self._report_unmatched()
        return self.scoring.shutdown(timeout_s) if self.scoring is not None else True

    def close(self, timeout_s: float) -> bool:
        """Flush and stop the result sinks and the exporters, within ``timeout_s`` in all.

        The processors and sinks stop in parallel threads that are waited for only until the
        deadline: a backend that hangs cannot hold the host past it. A spooling exporter
        writes what it could not send to disk before the deadline.
        """
        deadline = _Deadline(timeout_s)
        # Hand every finished span to the exporters; delivery itself is each exporter's
        # shutdown's business (a spooling exporter writes what is unsent to disk first).
        ok = self._flush_processors(deadline.seconds() / 2)
        for exporter in self.exporters:
            _set_shutdown_deadline(exporter, deadline.end)
        stoppers: list[tuple[str | Callable[[], str], Callable[[], object]]] = [
            (f"result sink {type(s).__name__}", _sink_stopper(s, deadline)) for s in self.sinks
        ]
        stoppers += [(_processor_label(p), p.shutdown) for p in self.processors]
        if self.metrics is not None:
            stoppers.append(("metrics", _sink_stopper(self.metrics, deadline)))
        return _run_until(stoppers, deadline) and ok


_CLOSE_SHARE = 0.3
"""The part of a shutdown's deadline the drain of scoring leaves to flushing and closing."""


class _Deadline:
    def __init__(self, timeout_s: float) -> None:
        self.end = time.monotonic() + max(0.0, timeout_s)

    def seconds(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def millis(self) -> int:
        return int(self.seconds() * 1000)


def _sink_stopper(sink: Any, deadline: _Deadline) -> Callable[[], object]:
    return lambda: sink.shutdown(deadline.seconds())


def _processor_label(processor: SpanProcessor) -> Callable[[], str]:
    """A span processor's name in the shutdown's words, with the spans it still had to send then."""

    def label() -> str:
        unsent = getattr(processor, "unsent", None)
        count = unsent() if callable(unsent) else 0
        more = f" ({count} spans still to send)" if count else ""
        return f"span processor {type(processor).__name__}{more}"

    return label


def _run_until(
    stoppers: Sequence[tuple[str | Callable[[], str], Callable[[], object]]], deadline: _Deadline
) -> bool:
    """Run each stopper in its own daemon thread; wait for all of them until the deadline. A
    stopper's name may be a function, asked at the deadline when the stopper is still going."""
    failed: list[str] = []

    def run(what: str | Callable[[], str], stop: Callable[[], object]) -> None:
        try:
            if stop() is False:
                failed.append(_said(what))
        except Exception:
            failed.append(_said(what))
            _logger.exception("tracesim: %s failed to shut down", _said(what))

    threads = [
        threading.Thread(target=run, args=item, name="tracesim-shutdown", daemon=True) for item in stoppers
    ]
    started = []
    for thread, item in zip(threads, stoppers, strict=True):
        try:
            thread.start()
            started.append(thread)
        except RuntimeError:  # no new threads at interpreter exit (Python 3.12.0-3.12.1): in turn
            run(*item)
    for thread in started:
        thread.join(deadline.seconds())
    late = [_said(what) for (what, _), thread in zip(stoppers, threads, strict=True) if thread.is_alive()]
    if late:
        _logger.warning(
            "tracesim: shutdown deadline reached; still stopping in the background: %s", ", ".join(late)
        )
    return not late and not failed


def _said(what: str | Callable[[], str]) -> str:
    return what() if callable(what) else what


def _set_shutdown_deadline(exporter: object, end: float) -> None:
    """Tell a spooling exporter when its shutdown must be over."""
    setter = getattr(exporter, "set_shutdown_deadline", None)
    if callable(setter):
        setter(end)


class _Forwarding:
    """Forwards to the active runtime's processors; added once to each provider tracesim uses.

    Made a `SpanProcessor` by `_pipeline` when first needed, so that `import tracesim` does not
    load the SDK (about 165 ms with its resource detectors): `configure()` does.
    """

    processors: tuple[SpanProcessor, ...] = ()
    runs: RunRecorder | None = None
    """The active runtime's run recorder while it keeps some trace (or every trace): it sees
    every span then; None otherwise, so a span pays one attribute read for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._model_calls: set[int] = set()  # spans started inside an evaluator's model call
        self._twins = LLMTwins()

    def _on_ending(self, span: Any) -> None:
        """A span with token counts that repeats another instrumentation's span of the same call
        (two instrumentations of one framework, side by side) is marked: counted once."""
        try:
            self._twins.ending(span)
        except Exception:  # never into the code that ends the span
            _internal_errors.internal_error("model calls seen twice")

    def on_start(self, span: Any, parent_context: otel_context.Context | None = None) -> None:
        # Every span of the process passes here: the current context is read once, and the
        # keys looked up in it (or in the parent's) directly, by the rules of `in_model_call`
        # and of `tracesim.attributes` (the parent's context first, then the current one).
        current = otel_context.get_current()
        context = current if parent_context is None else parent_context
        if context.get(MODEL_CALL_KEY) or (context is not current and current.get(MODEL_CALL_KEY)):
            # An evaluator's own model call, traced by some instrumentation anyway: not the
            # user's traffic, so it is not exported.
            with self._lock:
                self._model_calls.add(span.context.span_id)
            return
        extra = context.get(_ATTRIBUTES_KEY)
        if extra is None and context is not current:
            extra = current.get(_ATTRIBUTES_KEY)
        if extra:  # `tracesim.attributes` blocks: on every span, whoever starts it
            span.set_attributes(extra)
        _genai_conventions(span, context)
        runs = self.runs  # set only while the recorder keeps some trace (see RunRecorder.on_active)
        if runs is not None:
            runs.started(span)
        for processor in self.processors:
            processor.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if self._model_calls and span.context is not None and span.context.span_id in self._model_calls:
            with self._lock:
                self._model_calls.discard(span.context.span_id)
            return
        runtime = current
        held = runtime is not None and runtime.foreign is not None and runtime.offer(span)
        runs = self.runs
        if runs is not None:
            runs.ended(span)  # after the rules: a run they score is claimed before its trace could go
        if held:
            return  # held until scored, then sent on to that runtime's processors
        if HANDING and span.context is not None and span.context.span_id in HANDING:
            return  # handed to a scoring worker process, which exports it (scoring_export: workers)
        for processor in self.processors:
            processor.on_end(span)

    def shutdown(self) -> None:
        """The runtime owns the processors and shuts them down; the provider's call is a no-op."""

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        deadline = _Deadline(timeout_millis / 1000)  # one deadline for all, and every one asked
        ok = True
        for processor in self.processors:
            ok = processor.force_flush(deadline.millis()) is not False and ok
        return ok


_OPERATION_OF_KIND = {kind: operation for kind, (_, operation, _) in SPAN_KINDS.items() if operation}


def _genai_conventions(span: Any, parent_context: otel_context.Context) -> None:
    """For a span a GenAI instrumentation started: the OpenInference kind of its operation (what
    Phoenix reads), and a mark when it is an LLM call directly inside another one, whichever
    convention the outer one follows (GenAI, OpenInference, OpenLLMetry).

    The anthropic client traces its own calls, so under `instrument_anthropic` one request is a
    ``chat`` span with the client's span inside, both with the tokens: counted once, scored once.
    """
    attributes = getattr(getattr(span, "_attributes", None), "_dict", None)  # the SDK's own dict
    if type(attributes) is not dict:
        attributes = getattr(span, "attributes", None)
        if not attributes:
            return
    operation = attributes.get("gen_ai.operation.name")
    if operation is None:
        return
    if "openinference.span.kind" not in attributes:
        kind = KIND_OF_OPERATION.get(operation)
        if kind is not None:
            span.set_attribute("openinference.span.kind", kind)
    if operation in MODEL_CALL_OPERATIONS:
        outer = otel_trace.get_current_span(parent_context)
        parent = getattr(outer, "attributes", None)
        scope = getattr(outer, "instrumentation_scope", None)
        own = scope is not None and scope.name == "tracesim"  # your @trace(kind="llm") is not the call
        if parent and not own and is_model_call(parent):  # GenAI, OpenInference or OpenLLMetry
            span.set_attribute(LLM_COUNTED_IN_PARENT, True)


_PIPELINE: Any = None  # the one _Forwarding SpanProcessor, made by _pipeline()


def _pipeline() -> Any:
    """The delegating processor, created on first use."""
    global _PIPELINE
    with _lock:
        if _PIPELINE is None:
            from opentelemetry.sdk.trace import SpanProcessor

            # The SDK's base class supplies what tracesim does not override.
            _PIPELINE = type("_Pipeline", (_Forwarding, SpanProcessor), {})()
        return _PIPELINE


_lock = threading.RLock()
_providers_with_pipeline: weakref.WeakSet[TracerProvider] = weakref.WeakSet()
_own_providers: weakref.WeakSet[TracerProvider] = weakref.WeakSet()
_warned_unconfigured = False
_atexit_registered = False
_was_configured = False

current: Runtime | None = None
"""The active runtime, read on every traced call; None before `configure()` and after `shutdown()`."""


def active() -> Runtime | None:
    """The runtime traced code should use, or None to run untraced (warning once if never configured)."""
    runtime = current
    if runtime is None:
        if not _was_configured:
            _warn_unconfigured()
        return None
    if not runtime.enabled or _current_context().get(_SUPPRESS):
        return None  # OpenTelemetry's suppress_instrumentation(): nothing is traced in the block
    return runtime


def _warn_unconfigured() -> None:
    global _warned_unconfigured
    if not _warned_unconfigured:
        _warned_unconfigured = True
        warnings.warn(
            "tracesim is not configured, so traced code runs untraced; call tracesim.configure() at start-up",
            NotConfiguredWarning,
            stacklevel=4,
        )


# ---------------------------------------------------------------- building


def build(settings: Settings) -> Runtime:
    """Create every object of a configuration without installing it. Raises `ConfigError`."""
    from tracesim._metrics import build_metrics
    from tracesim.exporters import Redaction

    capture = make_options(settings.capture, settings.max_value_chars)
    if not settings.enabled:
        return Runtime(settings, otel_trace.NoOpTracer(), (), capture)
    rules = compile_rules(settings.evaluators)
    # One redaction pass for everything this configuration exports, whoever made the span.
    redaction = Redaction(
        Redactor(settings.redact_patterns, settings.redact), settings.max_value_chars, prices=settings.prices
    )
    exporters = [_exporter(item, settings) for item in settings.exporters]
    existing, resource = _chosen_resource(settings)
    metrics = build_metrics(settings, resource, redaction)  # may start a scrape endpoint: stopped on failure
    try:
        runtime = _build(settings, capture, rules, redaction, exporters, existing, resource, metrics)
    except BaseException:
        if metrics is not None:
            metrics.shutdown(0.0)
        raise
    return runtime


def _build(
    settings: Settings,
    capture: CaptureOptions,
    rules: Sequence[Rule],
    redaction: Redaction,
    exporters: Sequence[SpanExporter],
    existing: TracerProvider | None,
    resource: Resource,
    metrics: Metrics | None,
) -> Runtime:
    from tracesim.exporters import RedactingExporter

    scored = bool(rules) or evaluators_seen()
    # Each exporter gets every span: with `shared`, a span is redacted once for all of them.
    # The first one also counts the cost of LLM calls into the metrics, once per span.
    counted = [
        metrics.cost_counting(e) if metrics is not None and i == 0 else e for i, e in enumerate(exporters)
    ]
    shared = [
        RedactingExporter(_events_as_set(e, item, settings), redaction=redaction, shared=True)
        for e, item in zip(counted, settings.exporters, strict=True)
    ]
    # Each exporter's queue counts what it drops; a full queue is logged once per configuration.
    warnings = _internal_errors.WarnOnce()
    processors = [
        _processor(exporter, settings, scored, warnings, type(raw).__name__)
        for exporter, raw in zip(shared, exporters, strict=True)
    ]
    provider = _provider(settings, existing, resource)
    tracer = provider.get_tracer("tracesim", __version__)
    sinks = result_sinks(settings, provider, capture, redaction)
    scoring = None
    if settings.scoring_mode != "off":
        from tracesim._scoring._handoff import setup_for

        setup, _ = setup_for(
            settings,
            resource,
            joined=existing is not None,
            sinks=sinks,
            limits=getattr(provider, "_span_limits", None),  # the SDK's: what its spans apply
        )
        first = counted[0] if counted else None
        scoring = ScoringPipeline(
            tracer=tracer,
            capture=capture,
            mode=settings.scoring_mode,
            sample_rate=settings.evaluation_sample_rate,
            max_defer_s=settings.max_defer_s,
            queue_size=settings.scoring_queue_size,
            workers=settings.scoring_workers,
            processes=settings.scoring_processes,
            sinks=sinks,
            redaction=redaction,
            metrics=metrics.counts if metrics is not None else None,
            export_setup=setup,
            cost=getattr(first, "add", None) if metrics is not None else None,
        )
    runtime = Runtime(settings, tracer, processors, capture, scoring, rules, sinks, exporters)
    if scoring is not None:
        scoring.forward = runtime._forward  # a handed call the host finishes after all goes there
    runtime.provider = provider
    runtime.redaction = redaction
    runtime.metrics = metrics
    return runtime


def _events_as_set(exporter: SpanExporter, item: Any, settings: Settings) -> SpanExporter:
    """``exporter`` as ``evaluation_span_events`` has it: without the results' span events for
    the backends (OTLP, an exporter object); the trace file and the console, which tracesim's
    own readers read, keep them."""
    if settings.evaluation_span_events or item in ("jsonl", "console"):
        return exporter
    from tracesim.exporters._without_events import WithoutEvaluationEvents

    return WithoutEvaluationEvents(exporter)


def _exporter(item: Any, settings: Settings) -> SpanExporter:
    from opentelemetry.sdk.trace.export import SpanExporter

    if isinstance(item, SpanExporter):
        return item
    if item == "jsonl":
        from tracesim.exporters import JsonlExporter
        from tracesim.exporters._jsonl import require_writable

        require_writable(Path(settings.jsonl_path).absolute(), settings, "a file path tracesim can append to")
        return JsonlExporter(
            Path(settings.jsonl_path).absolute(),
            max_bytes=settings.jsonl_max_bytes,
            backups=settings.jsonl_backups,
        )
    if item == "console":
        from tracesim.exporters import ConsoleExporter

        return ConsoleExporter()
    from tracesim.exporters import otlp_exporter
    from tracesim.exporters._otlp import settings_headers

    spool = str(Path(settings.spool_dir).absolute()) if settings.spool_dir else None
    return otlp_exporter(
        settings.otlp_protocol,
        settings.otlp_endpoint,
        settings_headers(settings.otlp_headers, settings.mlflow_experiment_id),
        spool_dir=spool,
        spool_max_bytes=settings.spool_max_bytes,
    )


def _processor(
    exporter: SpanExporter, settings: Settings, scored: bool, warnings: _internal_errors.WarnOnce, name: str
) -> SpanProcessor:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from tracesim._export_queue import ExportQueue, queue_size

    if not settings.batch_export:
        return SimpleSpanProcessor(exporter)
    size = queue_size(settings, scored)
    try:
        return ExportQueue(
            exporter,
            queue_size=size,
            on_full=settings.export_on_full,
            wait_s=settings.export_wait_s,
            name=name,
            warnings=warnings,
        )
    except ValueError as exc:  # OTEL_BSP_MAX_EXPORT_BATCH_SIZE larger than the queue
        raise ConfigError("export_queue_size", size, f"a size the batch processor accepts ({exc})") from None


def _flush_exporter(exporter: SpanExporter, timeout_millis: int) -> bool:
    """Flush an exporter itself: span processors never ask it to.

    A spooling exporter makes one delivery attempt now and waits for it within the deadline;
    what it cannot deliver stays safe on disk and is retried in the background.
    """
    return exporter.force_flush(timeout_millis) is not False  # an exporter of yours may return None


def _chosen_resource(settings: Settings) -> tuple[TracerProvider | None, Resource]:
    """The application's tracer provider when it set one up first (None otherwise), and the
    resource this configuration's telemetry carries: that provider's, else tracesim's own."""
    from opentelemetry.sdk.trace import TracerProvider

    existing = otel_trace.get_tracer_provider()
    if isinstance(existing, TracerProvider) and existing not in _own_providers:
        return existing, existing.resource
    return None, _resource(settings)


def _provider(settings: Settings, existing: TracerProvider | None, resource: Resource) -> TracerProvider:
    from opentelemetry.sdk.trace import TracerProvider

    if existing is not None:
        # The application set up OpenTelemetry first: join its pipeline, keep its resource.
        _add_pipeline(existing)
        return existing
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    _own_providers.add(provider)
    _add_pipeline(provider)
    global_provider = otel_trace.get_tracer_provider()
    if settings.set_global_tracer_provider and isinstance(global_provider, otel_trace.ProxyTracerProvider):
        # Other OpenTelemetry instrumentation (HTTP clients, databases) then joins the same
        # traces. OpenTelemetry allows this once per process; later configure() calls keep
        # the first global provider, which still forwards to the active runtime.
        otel_trace.set_tracer_provider(provider)
    return provider


def _add_pipeline(provider: TracerProvider) -> None:
    if provider not in _providers_with_pipeline:
        provider.add_span_processor(_pipeline())
        _providers_with_pipeline.add(provider)


def _resource(settings: Settings) -> Resource:
    from opentelemetry.sdk.resources import Resource

    attributes: dict[str, Any] = {
        "telemetry.distro.name": "tracesim",
        "telemetry.distro.version": __version__,
    }
    attributes.update(settings.resource_attributes)
    if settings.service_name:
        attributes["service.name"] = settings.service_name
    resource = Resource.create(attributes)
    service = resource.attributes.get("service.name")
    if settings.service_name and "openinference.project.name" not in resource.attributes:
        # Phoenix files spans under this project; without it everything lands in "default".
        resource = resource.merge(Resource({"openinference.project.name": str(service)}))
    return resource


# ---------------------------------------------------------------- installing


def install(runtime: Runtime | None) -> Runtime | None:
    """Make ``runtime`` the active one and return the previous one (not shut down)."""
    global current, _was_configured, _atexit_registered
    with _lock:
        previous, current = current, runtime
        _redaction_in_force.set_current(runtime.redaction if runtime is not None else None)
        forwarding = _pipeline()
        forwarding.processors = runtime.processors if runtime is not None else ()
        forwarding.runs = None
        recorder = runtime.runs if runtime is not None else None
        if recorder is not None:
            # Every span passes the recorder only while it keeps some trace: it says when.
            def switch(active: bool, runtime: Runtime = runtime) -> None:  # type: ignore[assignment]
                if current is runtime:
                    forwarding.runs = runtime.runs if active else None

            recorder.on_active = switch
            switch(recorder.active)
        _internal_errors.set_raise(runtime is not None and runtime.settings.internal_errors == "raise")
        if runtime is not None and runtime.metrics is not None:
            runtime.metrics.activate()  # the scrape endpoint serves this configuration's metrics
        if runtime is not None:
            _was_configured = True
            if not _atexit_registered:
                atexit.register(_at_exit)
                _atexit_registered = True
    return previous


def configure(
    arguments: dict[str, Any],
    config_file: str | os.PathLike[str] | None = None,
    instrument: Callable[[Sequence[str]], None] | None = None,
) -> Runtime:
    """Resolve settings, build and install a runtime, drain the previous one.

    ``instrument`` turns on the integrations the settings name (it lives with the API, which
    may import the integrations; the runtime does not).
    """
    runtime = build(resolve(arguments, config_file=config_file))
    if instrument is not None:
        instrument(runtime.settings.instrument)  # before install: if it raises, nothing changed
    previous = install(runtime)
    if previous is not None:
        previous.shutdown(previous.settings.shutdown_timeout_s)
    return runtime


def force_flush(timeout_s: float) -> bool:
    """Flush the active runtime; True when tracesim is not configured."""
    runtime = current
    return True if runtime is None else runtime.force_flush(timeout_s)


def shutdown(timeout_s: float | None) -> bool:
    """Drain and stop the active runtime; traced code runs untraced afterwards."""
    runtime = current
    if runtime is None:
        return True
    return runtime.shutdown(
        runtime.settings.shutdown_timeout_s if timeout_s is None else timeout_s,
        drained=lambda: install(None),
    )


def _at_exit() -> None:
    try:
        shutdown(None)
    except Exception:
        _logger.exception("tracesim: shutdown at exit failed")
