"""The spans of runs being scored, kept in the process until their run evaluators read them.

A span scored by a run evaluator needs its subtree, and every span of that subtree has
already gone to the exporters by the time the scored call returns. So the span pipeline
shows each started and ended span to a `RunRecorder` first, which keeps those of the traces
it was asked to watch:

* a span tracesim starts with a run evaluator in its plan is *watched* from its start
  (`RunRecorder.watch`), so its trace's spans are kept from then on;
* rules that score runs, or agents, may select spans of other instrumentations, known only
  when they end (after their children): then every trace is kept (``record_all``), and dropped
  when its local root ends with nothing left to score; a trace half full drops the spans of
  each run once it is scored.

The scoring worker takes a `RunSource`'s run: it waits, up to a bound, for the spans still
running under the scored span, then builds the `tracesim.runs.Run` from what is there
(marked truncated when children had not ended). The caller never waits.

Everything is bounded: spans kept per trace (``max_spans``) and in all (``max_kept``; the rest
are counted and the run is marked), traces kept at once (``max_traces``; the oldest unwatched
one goes first, counted in ``evicted``).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from tracesim._runs._build import DEFAULT_MAX_STEPS, DEFAULT_MAX_VALUE_CHARS, build_run
from tracesim.runs import Run

__all__ = ["RunRecorder", "RunSource"]

DEFAULT_MAX_SPANS = 4 * DEFAULT_MAX_STEPS
"""Ended spans kept per trace: a run's steps and their siblings outside the scored subtree."""
DEFAULT_MAX_TRACES = 1000
"""Traces kept at once; a busier process evicts the oldest trace no scored span waits for."""
DEFAULT_MAX_KEPT = 20_000
"""Ended spans kept in all traces together; past it, spans are counted, not kept."""


class _Trace:
    __slots__ = ("ended", "evicted_before", "left_out", "open", "returned", "root_ended", "roots")

    def __init__(self, evicted_before: bool = False) -> None:
        self.ended: list[ReadableSpan] = []
        self.open: dict[int, ReadableSpan] = {}  # span id -> started, not ended
        self.roots: dict[int, int] = {}  # scored span id -> scoring jobs that will take its run (0: none yet)
        self.returned: set[int] = set()  # spans kept as their call returned, ahead of their end
        self.left_out = 0  # ended spans over max_spans or max_kept
        self.root_ended = False  # the trace's local root (no parent in this process) has ended
        self.evicted_before = evicted_before  # an earlier part of this trace was evicted


class RunRecorder:
    """Keeps the spans of watched traces (or of every trace, with ``record_all``). Thread-safe."""

    def __init__(
        self,
        *,
        record_all: bool = False,
        max_spans: int = DEFAULT_MAX_SPANS,
        max_traces: int = DEFAULT_MAX_TRACES,
        max_kept: int = DEFAULT_MAX_KEPT,
        max_steps: int = DEFAULT_MAX_STEPS,
        max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
    ) -> None:
        self.record_all = record_all
        self.max_spans = max_spans
        self.max_traces = max_traces
        self.max_kept = max_kept
        self.kept = 0
        """Ended spans kept now, in all traces."""
        self.max_steps = max_steps
        self.max_value_chars = max_value_chars
        self.traces: dict[int, _Trace] = {}
        """Trace id -> what is kept of it. Empty (and ``record_all`` off): the pipeline skips the recorder."""
        self.evicted = 0
        """Traces dropped to stay within ``max_traces``; their runs are scored with what was kept."""
        self._evicted_ids: dict[int, None] = {}  # the last evicted trace ids, to mark their runs
        self.on_active: Callable[[bool], None] | None = None
        """Told when the recorder starts or stops keeping traces: the span pipeline shows it
        spans only meanwhile."""
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._waiting = 0

    @property
    def active(self) -> bool:
        """Whether the span pipeline must show this recorder every span (it keeps some trace)."""
        return self.record_all or bool(self.traces)

    # ------------------------------------------------------------ the span pipeline's side

    def watch(self, span: Any) -> None:
        """Keep the spans of ``span``'s trace from now on: it is scored by a run evaluator."""
        context = span.get_span_context()
        if not context.is_valid or not span.is_recording():
            return  # a span not sampled never ends in the pipeline: nothing to keep for it
        with self._lock:
            trace = self.traces.get(context.trace_id)
            if trace is None:
                trace = self._new(context.trace_id)
            trace.roots.setdefault(context.span_id, 0)

    def started(self, span: Any) -> None:
        """A span started (every span of the process while the recorder is active)."""
        context = span.context
        trace = self.traces.get(context.trace_id)
        if trace is None:
            if not self.record_all:
                return
            with self._lock:
                trace = self.traces.get(context.trace_id) or self._new(context.trace_id)
        trace.open[context.span_id] = span

    def returned(self, span: Any, end_ns: int) -> None:
        """A traced call returned and its span stays open while it is scored: for the runs of
        the spans above it, it is a step that ended at ``end_ns`` (not one still running)."""
        context = span.get_span_context()
        trace = self.traces.get(context.trace_id)
        if trace is None or context.span_id not in trace.open:
            return
        snapshot = getattr(span, "_readable_span", None)
        if snapshot is None:
            return
        copy = snapshot()
        copy._end_time = end_ns  # the SDK's own field: the copy is this call's span as it returned
        with self._lock:
            if self.traces.get(context.trace_id) is not trace:
                return
            trace.open.pop(context.span_id, None)
            trace.returned.add(context.span_id)
            self._keep(trace, copy)
            if self._waiting:
                self._changed.notify_all()

    def ended(self, span: ReadableSpan) -> None:
        """A span ended (after rules had their look at it)."""
        context = span.context
        if context is None:
            return
        trace = self.traces.get(context.trace_id)
        if trace is None:
            return
        span_id = context.span_id
        parent = span.parent
        local_root = parent is None or parent.is_remote
        with self._lock:
            if self.traces.get(context.trace_id) is not trace:
                return  # let go of meanwhile
            trace.open.pop(span_id, None)
            if span_id in trace.returned:
                trace.returned.discard(span_id)  # kept when its call returned
            else:
                self._keep(trace, span)
            if trace.roots.get(span_id) == 0:
                del trace.roots[span_id]  # ended unscored (it raised): nothing will take it
            if local_root:
                trace.root_ended = True
            self._settle(context.trace_id, trace)
            if self._waiting:
                self._changed.notify_all()

    # ------------------------------------------------------------ the scoring side

    def source(self, span: Any, output: Any, end_ns: int | None) -> RunSource | None:
        """The run of ``span`` for a scoring job: claimed, its spans kept until the job takes it."""
        context = span.get_span_context()
        with self._lock:
            trace = self.traces.get(context.trace_id)
            if trace is None:
                if not self.record_all and context.trace_id not in self._evicted_ids:
                    return None
                trace = self._new(context.trace_id)
            trace.roots[context.span_id] = trace.roots.get(context.span_id, 0) + 1
        return RunSource(self, span, output, end_ns)

    def release(self, span: Any) -> None:
        """``span``'s run will not be taken by one of its jobs (dropped, or sampled out)."""
        context = span.get_span_context()
        with self._lock:
            trace = self.traces.get(context.trace_id)
            if trace is not None:
                self._unclaim(trace, context.span_id)
                self._settle(context.trace_id, trace)

    def take(self, span: Any, output: Any, end_ns: int | None, wait_s: float) -> Run:
        """``span``'s run: waits up to ``wait_s`` for the spans still running under it."""
        return self.take_counted(span, output, end_ns, wait_s)[0]

    def take_counted(self, span: Any, output: Any, end_ns: int | None, wait_s: float) -> tuple[Run, int]:
        """`take`, and how many spans of the trace were counted but not kept."""
        context = span.get_span_context()
        deadline = time.monotonic() + wait_s
        with self._lock:
            self._waiting += 1  # before looking: an end that comes meanwhile wakes this wait
            try:
                trace = self.traces.get(context.trace_id)
                running: list[ReadableSpan] = []
                while trace is not None:
                    running = _running_under(trace, context.span_id)
                    remaining = deadline - time.monotonic()
                    if not running or remaining <= 0:
                        break
                    self._changed.wait(remaining)
                    trace = self.traces.get(context.trace_id)
            finally:
                self._waiting -= 1
            spans = list(trace.ended) if trace is not None else []
            left_out = trace.left_out if trace is not None else 0
            evicted = context.trace_id in self._evicted_ids or (trace is not None and trace.evicted_before)
            if trace is not None:
                self._unclaim(trace, context.span_id)
                if self.record_all and not trace.roots and len(trace.ended) * 2 >= self.max_spans:
                    self._prune(trace, context.span_id)  # a long-lived root must not fill the trace
                self._settle(context.trace_id, trace)
        run = build_run(
            span,
            spans,
            running=running,
            max_steps=self.max_steps,
            max_value_chars=self.max_value_chars,
            now_ns=end_ns,
            output=output,
            left_out=left_out,
        )
        if evicted:
            why = f"the recorder let go of part of this trace (more than {self.max_traces} traces at once)"
            reason = f"{run.truncated_reason}; {why}" if run.truncated_reason else why
            run = dataclasses.replace(run, truncated=True, truncated_reason=reason)
        return run, left_out

    # ------------------------------------------------------------ bookkeeping (under the lock)

    def _keep(self, trace: _Trace, span: ReadableSpan) -> None:
        if len(trace.ended) < self.max_spans and self.kept < self.max_kept:
            trace.ended.append(span)
            self.kept += 1
        else:
            trace.left_out += 1

    def _unclaim(self, trace: _Trace, span_id: int) -> None:
        claims = trace.roots.get(span_id)
        if claims is not None:
            if claims <= 1:
                del trace.roots[span_id]
            else:
                trace.roots[span_id] = claims - 1

    def _prune(self, trace: _Trace, root_id: int) -> None:
        """Forget the spans under ``root_id``, whose run was taken, when the trace is half full: a
        long-lived local root (a batch job's span) would otherwise fill it with runs scored long
        ago. A run above them, selected later by a rule, is then marked as missing them."""
        parents = _parents(trace)
        kept = []
        for span in trace.ended:
            ancestor = span.parent.span_id if span.parent is not None else None
            seen = 0
            while ancestor is not None and ancestor != root_id and seen < 10_000:
                ancestor = parents.get(ancestor)
                seen += 1
            if ancestor != root_id:
                kept.append(span)
        self.kept -= len(trace.ended) - len(kept)
        trace.left_out += len(trace.ended) - len(kept)
        trace.ended = kept

    def _new(self, trace_id: int) -> _Trace:
        if len(self.traces) >= self.max_traces:
            oldest = next((key for key, kept in self.traces.items() if not kept.roots), None)
            if oldest is None:
                oldest = next(iter(self.traces))
            self.kept -= len(self.traces.pop(oldest).ended)
            self.evicted += 1
            self._evicted_ids[oldest] = None
            if len(self._evicted_ids) > self.max_traces:
                del self._evicted_ids[next(iter(self._evicted_ids))]
        trace = self.traces[trace_id] = _Trace(evicted_before=trace_id in self._evicted_ids)
        if len(self.traces) == 1 and not self.record_all:
            self._switch(True)
        return trace

    def _settle(self, trace_id: int, trace: _Trace) -> None:
        """Forget a trace no scored span needs any more."""
        if trace.roots:
            return
        if (not self.record_all or trace.root_ended) and self.traces.pop(trace_id, None) is not None:
            self.kept -= len(trace.ended)
            if not self.traces and not self.record_all:
                self._switch(False)

    def _switch(self, active: bool) -> None:
        if self.on_active is not None:
            self.on_active(active)


def _parents(trace: _Trace) -> dict[int, int | None]:
    parents: dict[int, int | None] = {}
    for span in (*trace.ended, *trace.open.values()):
        context, parent = span.context, span.parent
        if context is not None:
            parents[context.span_id] = parent.span_id if parent is not None else None
    return parents


def _running_under(trace: _Trace, root_id: int) -> list[ReadableSpan]:
    """The spans of ``trace`` started under ``root_id`` that have not ended."""
    if not trace.open:
        return []
    parents = _parents(trace)
    under: list[ReadableSpan] = []
    for span_id, span in list(trace.open.items()):
        if span_id == root_id:
            continue
        seen = 0
        ancestor = parents.get(span_id)
        while ancestor is not None and ancestor != root_id and seen < 10_000:
            ancestor = parents.get(ancestor)
            seen += 1
        if ancestor == root_id:
            under.append(span)
    return under


class RunSource:
    """One scoring job's run, taken once by the worker (`take`), or given up (`release`)."""

    __slots__ = ("_done", "_end_ns", "_output", "_recorder", "_span", "left_out")

    def __init__(self, recorder: RunRecorder, span: Any, output: Any, end_ns: int | None) -> None:
        self._recorder = recorder
        self._span = span
        self._output = output
        self._end_ns = end_ns
        self._done = False
        self.left_out = 0
        """Spans of the trace counted but not kept, once the run is taken."""

    def take(self, wait_s: float) -> Run:
        """The run (built once; a second call builds it again from what is left)."""
        self._done = True
        run, self.left_out = self._recorder.take_counted(self._span, self._output, self._end_ns, wait_s)
        return run

    def release(self) -> None:
        """Give the run up, unless it was taken already. Idempotent."""
        if not self._done:
            self._done = True
            self._recorder.release(self._span)
