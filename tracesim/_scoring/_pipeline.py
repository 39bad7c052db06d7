"""Online scoring: evaluators run off the caller's path; results land on the evaluated span.

When a scored call returns, its end time is recorded and the caller gets its result; a job
(output, expected-output sources, input, evaluators) goes on a bounded queue and the span
stays open. Worker threads run CPU evaluators; evaluators with a real ``aevaluate`` run on
one asyncio loop thread under a per-evaluator concurrency limit. When every result is in,
the span ends **with the recorded end time**, so its duration is the call's. A watchdog
turns an evaluator past its ``timeout_s`` into a ``timeout`` error result, and ends a span
whose evaluators take longer than ``max_defer_s``; results that arrive after that go on a
carrier span. Nothing here raises into user code, and no span is lost: a full queue ends the
span unscored and says so on it.

With ``scoring_processes`` the runs of CPU evaluators a process can rebuild go to worker
processes instead (`tracesim._scoring._processes`); the threads still resolve each job's
expected output and run the rest. ``auto`` starts one worker once the evaluators' CPU time on
the threads passes `AUTO_SHARE` of a core over `AUTO_WINDOW_S`; until it is ready (2-3 s of
imports) the threads keep scoring.

With ``scoring_export`` (``auto``, the default, or ``workers``) and a configuration a worker can
write spans for, a call whose evaluators a worker can all rebuild is handed over whole instead
(`tracesim._scoring._handoff`): its span ends when the call returns, diverted from the span
processors, and the worker scores it, writes its results and exports it; the host counts the
results from one acknowledgement per call. Whatever a worker cannot finish comes back to the
path above, its ended span held until scored.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import trace as otel_trace

from tracesim import _semconv as sc
from tracesim._capture import CaptureOptions
from tracesim._host_first import Slices
from tracesim._internal_errors import WarnOnce, internal_error
from tracesim._scoring._expect import NOT_SET, combined, complete, handed, resolve_expected
from tracesim._scoring._handoff import EXPORTED, HANDED, HANDING, RETURNED, HeldHandle, ProcessJob
from tracesim._scoring._jobs import (
    FROM_RUN,
    Job,
    Run,
    ScoringStats,
    checked,
    failure,
    no_output,
    timeout,
    unresponsive,
)
from tracesim._scoring._processes import HELD, ProcessPool, ProcessRun, _result
from tracesim._scoring._results import emit_carrier, write
from tracesim._scoring._selection import sample_unit, scores_runs
from tracesim._scoring._sinks import LogEventSink
from tracesim._scoring._watchdog import Watchdog
from tracesim._scoring._workqueue import WorkQueue
from tracesim.runs import NOT_GIVEN, Expected

if TYPE_CHECKING:
    import asyncio

    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import SpanContext

    from tracesim._metrics import ResultCounts
    from tracesim.evaluators import EvalResult, Evaluator
    from tracesim.exporters import Redaction

__all__ = ["Job", "ScoringPipeline", "ScoringStats"]

_DEFAULT_ASYNC_CONCURRENCY = 8
_MAX_STUCK_RUNS = 2
"""Runs of one evaluator that may be stuck past their time before its new runs are skipped."""
AUTO_SHARE = 0.05
"""``scoring_processes: auto`` starts a worker process once evaluators on the threads use more
than this share of a core..."""
AUTO_WINDOW_S = 2.0
"""... measured over this long (their runs' durations summed)."""
_AUTO_MAX = 2
"""Workers ``auto`` grows to when runs keep waiting (one on a one-core machine)."""
_CLOSE_RESERVE_S = 1.0
"""Of a shutdown's deadline, the most kept for stopping worker processes."""


class ScoringPipeline:
    """The bounded queue, its workers and the watchdog. One per configuration."""

    def __init__(
        self,
        *,
        tracer: otel_trace.Tracer,
        capture: CaptureOptions,
        mode: str,
        sample_rate: float,
        max_defer_s: float,
        queue_size: int,
        workers: int,
        sinks: Sequence[Any] = (),
        redaction: Redaction | None = None,
        metrics: ResultCounts | None = None,
        processes: int | str = 0,
        forward: Callable[[ReadableSpan], None] | None = None,
        export_setup: bytes | None = None,
        cost: Callable[[str, str, float], None] | None = None,
    ) -> None:
        self.tracer = tracer
        self.metrics = metrics
        """Where results are counted by outcome for the metrics (None: metrics are off)."""
        self.redaction = redaction
        """The configuration's redaction, for the names in result attribute keys (see `key_name`)."""
        self.capture = capture
        self.inline = mode == "inline"
        self.sample_rate = sample_rate
        self.max_defer_s = max_defer_s
        self.queue_size = queue_size
        self.worker_count = workers
        self.processes = processes
        """Worker processes for CPU evaluators: a count (0: none) or ``"auto"``."""
        self.sinks = tuple(sinks)
        # A worker writes the results' log records itself; these take a handed call's results here.
        self._handed_sinks = tuple(sink for sink in self.sinks if not isinstance(sink, LogEventSink))
        self.forward = forward
        """Sends an ended span to the configuration's span processors (a call taken back from a worker)."""
        self.export_setup = export_setup if processes != 0 else None
        """With ``scoring_export: workers``, what workers finish handed calls with (None: the host does)."""
        self.cost = cost
        """Counts the cost of an LLM call a worker wrote (the metrics' `CostCounting.add`)."""
        # A run with no timeout_s of its own counts as stuck (not failed) after this long.
        self.stuck_after_s = max_defer_s if max_defer_s > 0 else 30.0
        self._ids = itertools.count(1)
        self._reset()
        pipeline = weakref.ref(self)

        def after_fork() -> None:
            alive = pipeline()
            if alive is not None:
                if alive._pool is not None:
                    alive._pool.forsake()  # the parent's workers and pipes are not the child's
                alive._reset()

        os.register_at_fork(after_in_child=after_fork)

    def _reset(self) -> None:
        # Also the after-fork hook: the child starts with no threads and no inherited jobs.
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._queue: WorkQueue[Job | ProcessJob | tuple[Job, Evaluator, Any, Any] | None] = WorkQueue()
        self._inflight: dict[int, Job] = {}
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._semaphores: dict[int, asyncio.Semaphore] = {}
        # Span deadlines are checked every tick: a quarter of max_defer_s, between 10 ms and 1 s.
        tick_s = min(1.0, max(0.01, self.max_defer_s / 4))
        self._watchdog: Watchdog[Run] = Watchdog(tick_s, self._expire_due, self._time_out)
        self._warnings = WarnOnce()  # once per configuration (and per forked child)
        self._stuck: dict[str, int] = {}  # evaluator name -> runs still going past their time
        self._stuck_threads: set[threading.Thread] = set()
        self.stats = ScoringStats()  # a forked child counts its own calls only
        self._pool: ProcessPool | None = None
        self._auto = self.processes == "auto"
        self._cpu_s = 0.0  # evaluator time on the threads since _window_start (auto)
        self._window_start = time.monotonic()
        self._backlogged = 0
        self._span_type: type | None = None  # the SDK's span class, once a call could be handed
        if not self.inline and self.processes != 0:
            size = 1 if self._auto else int(self.processes)
            grow_to = max(1, min(_AUTO_MAX, os.cpu_count() or 1)) if self._auto else size
            self._pool = ProcessPool(
                size,
                complete=self._complete,
                on_thread=self._to_thread,
                stuck_after_s=self.stuck_after_s,
                warnings=self._warnings,
                grow_to=grow_to,
                done=self._written,
                records_dropped=self._records_dropped,
                setup=self.export_setup,
            )
            if self.export_setup is not None:
                from opentelemetry.sdk.trace import Span as SdkSpan

                self._span_type = SdkSpan

    # ------------------------------------------------------------ the caller's side

    def submit(self, job: Job, always: bool = False) -> None:
        """Queue a finished call for scoring (or score it now, inline). Never raises.

        ``always`` says every evaluator has ``sample_rate`` 1, so sampling can be skipped.
        """
        otel = job.handle.otel_span
        chosen = self._sample(otel, job.evaluators, always)
        if not chosen:
            _release_run(job)
            otel.end(job.end_ns)
            return
        if len(chosen) < len(job.evaluators):
            job.evaluators = tuple(chosen)
            job.pending = len(chosen)
            if not any(scores_runs(e) for e in chosen):
                _release_run(job)
        if self.inline:
            self._run_inline(job)
            return
        job.deadline = time.monotonic() + self.max_defer_s  # set before the watchdog can see it
        handing = self._span_type is not None and self._hands(job)
        if handing:  # before the job is in _inflight: the watchdog never expires a handed job
            job.handed = HANDED
            job.ended = True  # the worker keeps its deadlines (see _handoff)
        with self._lock:
            full = self._closed or len(self._inflight) >= self.queue_size
            if not full:
                job.id = next(self._ids)
                self._inflight[job.id] = job
                self.stats.submitted += 1
                self.stats.pending = len(self._inflight)
        if full:
            job.handed, job.ended = None, False
            self._drop(job)
            return
        if not self._threads:
            self._start()
            pool = self._pool
            if pool is not None and not self._auto:
                pool.start()  # workers start now, in the background: their runs wait for them
        if handing:
            self._hand(job)
        elif self.max_defer_s <= 0:
            self._expire(job)  # never wait: every result goes on a carrier span
        else:
            self._watchdog.start()
        self._queue.put(job)

    def _hands(self, job: Job) -> bool:
        """Whether ``job`` goes to a worker whole (``scoring_export``): a call of tracesim's own,
        its output returned by the call (not read from its run), while the pool works (under
        ``scoring_processes: auto``, once its worker is up: until then the threads score)."""
        pool = self._pool
        return (
            job.run_source is None
            and job.output is not FROM_RUN
            and isinstance(job.handle.otel_span, self._span_type)  # type: ignore[arg-type]
            and pool is not None
            and pool.finishes
            and (pool.ready or not self._auto)
            and all(pool.takes(evaluator) for evaluator in job.evaluators)
        )

    def _hand(self, job: Job) -> None:
        """End ``job``'s span now, without sending it to the exporters: a worker will."""
        otel: Any = job.handle.otel_span
        span_id = otel.context.span_id
        HANDING.add(span_id)
        try:
            otel.end(job.end_ns)
        finally:
            HANDING.discard(span_id)

    def _take_back(self, job: Job) -> bool:
        """A handed call the host finishes after all: its ended span is held until scored. False
        when the worker wrote it already (or it was taken back before)."""
        assert self.forward is not None
        with job.lock:  # with the handle swapped before the watchdog can see the job open
            if job.handed != HANDED:
                return False
            job.handed = RETURNED
            job.handle = HeldHandle(job.handle, self.forward, self.capture)
            job.ended = False
        return True

    def _written(self, unit: ProcessJob, kind: int, payload: Any) -> None:
        """A worker scored ``unit`` and wrote its span (`DONE`), or scored it and sends its span to
        the OTLP backend (`SCORED`; the pool holds what is left of it until `WRITTEN`): count
        the results, hand them to the result sinks, and the call is done."""
        job = unit.job
        if job is None:
            return  # scored again after its worker died before sending its span: counted once
        with job.lock:
            if job.handed != HANDED:
                return  # taken back (shutdown): the host wrote it too
            job.handed = EXPORTED
        try:
            self._count_written(unit, payload)
        except Exception:
            internal_error("scoring: counting a worker's results")
        self._finish(job)

    def _records_dropped(self, count: int) -> None:
        """A worker's queue of the results' log records dropped ``count`` of them."""
        with self._lock:
            self.stats.log_records_dropped += count

    def _unsent(self, unit: ProcessJob) -> None:
        """A call scored in a worker that died before sending its span, which no worker can send
        now (a shutdown, or it took down two workers): this process sends it, as a call past
        ``max_defer_s`` (its results went to the metrics; the span lists them as deferred)."""
        from tracesim._scoring._handoff import plain_span

        assert self.forward is not None
        try:
            span = plain_span(unit.data(), getattr(self.tracer, "resource", None), unit.evaluators)
        except Exception:
            internal_error("scoring: sending a span a worker could not send")
            span = None
        if self._pool is not None:
            self._pool.sent_elsewhere(unit)
        if span is not None:
            self.forward(span)

    def _count_written(self, unit: ProcessJob, payload: Any) -> None:
        job = unit.job
        assert job is not None
        outcomes, cost, full = payload
        stats = self.stats
        metrics = self.metrics
        span_name = _span_name(job.handle.otel_span)
        for name, what, score, error_type, late in outcomes:
            stats.results += 1
            if what == "error":
                stats.errors += 1
                if error_type == "timeout":
                    stats.timeouts += 1
            if late:
                stats.late += 1
            if metrics is not None:
                metrics.record(name, span_name, what, score)
        stats.written_by_workers += 1
        if cost is not None and self.cost is not None:
            self.cost(*cost)
        if full:  # for the sinks that take results in this process (a worker sent the log records)
            target = job.handle.span_context
            expected = _for_sinks(unit.expected)
            for annotator_kind, values, fields_set in full:
                result = _result(values, fields_set)
                for sink in self._handed_sinks:
                    sink.submit(target, result, annotator_kind, expected=expected)

    def _give_back(self, unit: ProcessJob) -> None:
        """A handed call no worker can finish: the host scores what is left and writes it (on a
        scoring thread: the pool may give it back holding its lock)."""
        job = unit.job
        if job is None:  # scored already; only its span is left to send
            self._unsent(unit)
            return
        if not self._take_back(job):
            return
        if unit.write_expected:
            job.handle.set_expected(unit.expected)
        for index, evaluator in enumerate(unit.evaluators):
            result = unit.presets.get(index)
            if result is not None:
                self._complete(job, evaluator, result)
            else:
                self._queue.put((job, evaluator, unit.expected, unit.value))

    def _sample(
        self, otel: otel_trace.Span, evaluators: Sequence[Evaluator], always: bool
    ) -> Sequence[Evaluator]:
        if always and self.sample_rate >= 1.0:
            return evaluators
        unit = sample_unit(otel.get_span_context().trace_id)
        chosen = [e for e in evaluators if unit < self.sample_rate * e.sample_rate]
        if len(chosen) < len(evaluators):
            skipped = [e.name for e in evaluators if e not in chosen]
            otel.set_attribute(sc.EVALUATION_NOT_SAMPLED, skipped)
            self.stats.not_sampled += len(skipped)
            metrics = self.metrics
            if metrics is not None:
                metrics.count(skipped, _span_name(otel), "not_sampled")
        return chosen

    def _drop(self, job: Job) -> None:
        _release_run(job)
        self.stats.dropped += 1
        otel = job.handle.otel_span
        metrics = self.metrics
        if metrics is not None:  # one per evaluator the call would have been scored by
            metrics.count([e.name for e in job.evaluators], _span_name(otel), "dropped")
        otel.set_attribute(sc.EVALUATION_DROPPED, True)
        otel.end(job.end_ns)
        self._warnings.warn(
            "full",
            "tracesim: the scoring queue is full (%d calls pending); calls end unscored, marked "
            "tracesim.evaluation.dropped. Raise scoring_queue_size or scoring_workers, or lower "
            "evaluation_sample_rate.",
            self.queue_size,
        )

    def _run_inline(self, job: Job) -> None:
        self.stats.submitted += 1
        job.finished = threading.Event()
        self._process(job)
        if not job.finished.wait(self.max_defer_s if self.max_defer_s > 0 else None):
            self._expire(job)

    # ------------------------------------------------------------ workers

    def _start(self) -> None:
        with self._lock:
            while len(self._threads) < self.worker_count:
                self._spawn()

    def _spawn(self) -> None:
        thread = threading.Thread(target=self._work, name="tracesim-scoring", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _work(self) -> None:
        offer = Slices()  # the host's threads first: between jobs, every 200 µs of them
        while True:
            item = self._queue.get()
            if item is None:
                return
            offer()
            try:
                if isinstance(item, Job):
                    self._process(item)
                elif isinstance(item, ProcessJob):
                    self._give_back(item)
                else:
                    self._run_cpu(*item)
            except Exception:
                internal_error("scoring: worker")
            if self._surplus():
                return

    def _surplus(self) -> bool:
        """A worker replaced while stuck in an evaluator retires once it comes back.

        Threads still stuck do not count: the pool keeps ``worker_count`` threads that can work.
        """
        if len(self._threads) - len(self._stuck_threads) <= self.worker_count:
            return False  # the common case, without the lock
        with self._lock:
            working = [t for t in self._threads if t.is_alive() and t not in self._stuck_threads]
            current = threading.current_thread()
            if len(working) > self.worker_count and current in working:
                self._threads.remove(current)
                return True
        return False

    def _process(self, job: Job) -> None:
        keys = None
        if job.handed == HANDED:
            keys = self._keys(job)
            if keys is None:  # an evaluator stays on the threads: the host finishes the call
                self._take_back(job)
        from_source = job.expected is NOT_SET
        try:
            value, arguments = job.inputs()
            expected, problem = self._expected(job, arguments, record=keys is None)
        except Exception as exc:  # the user's expected-output callable or dataset failed
            expected, problem, value = None, exc, None
        if keys is not None:
            pool = self._pool
            if problem is None and pool is not None:
                # as the host would: recorded when capture is on, on a span not yet past max_defer_s
                write = (
                    from_source
                    and expected is not None
                    and self.capture.enabled
                    and time.monotonic() <= job.deadline
                )
                pool.put(ProcessJob(job, keys, expected, value, write_expected=write))
                return
            self._take_back(job)  # the failure goes on the held span, as on the threads
        if job.run_source is not None:
            self._take_run(job)
        cpu: list[Evaluator] = []
        waiting: list[concurrent.futures.Future[None]] = []
        for evaluator in job.evaluators:
            if problem is not None:
                self._complete(job, evaluator, failure(evaluator, problem, "resolving the expected output"))
            elif job.output is FROM_RUN and not scores_runs(evaluator):
                self._complete(job, evaluator, no_output(evaluator))
            elif evaluator.is_async:
                waiting.append(self._dispatch_async(job, evaluator, expected, value))
            else:
                cpu.append(evaluator)
        if self.inline:
            for evaluator in cpu:
                self._run_cpu(job, evaluator, expected, value)
            for future in waiting:  # inline means scored before the call returns: async ones too
                future.result()  # bounded: each run has its time limit (timeout_s or stuck_after_s)
            return
        pool = self._pool
        if pool is not None and cpu:
            cpu = self._to_processes(pool, job, cpu, expected, value)
        elif cpu:
            for evaluator in cpu:
                if evaluator.runs_in == "process":
                    self._warnings.warn(
                        f"no-process:{evaluator.name}",
                        "tracesim: evaluator %r has runs_in='process' but scoring_processes is 0; it runs "
                        "on the scoring threads. Set scoring_processes (1 or auto) for worker processes.",
                        evaluator.name,
                    )
        # One queue item per evaluator: when one hangs past its timeout_s, the replacement
        # worker takes the others instead of leaving them behind the stuck one.
        for evaluator in cpu[1:]:
            self._queue.put((job, evaluator, expected, value))
        if cpu:
            self._run_cpu(job, cpu[0], expected, value)

    def _keys(self, job: Job) -> list[int] | None:
        """The pool's keys for every evaluator of a handed call, or None when one stays on threads."""
        pool = self._pool
        if pool is None or pool.broken:
            return None
        keys = []
        for evaluator in job.evaluators:
            key = pool.key_for(evaluator)
            if key is None:
                return None
            keys.append(key)
        return keys

    def _to_processes(
        self, pool: ProcessPool, job: Job, cpu: list[Evaluator], expected: Any, value: Any
    ) -> list[Evaluator]:
        """Give the pool the runs it takes; the evaluators left are for the threads."""
        left = []
        for evaluator in cpu:
            key = self._route(pool, evaluator)
            if key is None:
                left.append(evaluator)
            else:
                subject = _subject(job, evaluator)
                pool.put(
                    ProcessRun(job, evaluator, key, subject, expected, handed(evaluator, expected), value)
                )
        return left

    def _route(self, pool: ProcessPool, evaluator: Evaluator) -> int | None:
        """The pool's key for ``evaluator``, or None when the threads run it now."""
        if pool.broken:
            return None
        if self._auto and evaluator.runs_in != "process":
            if not pool.started or not pool.ready:
                return None  # threads score until auto's worker is up
        elif not pool.started:
            pool.start()
        return pool.key_for(evaluator)

    def _to_thread(self, run: ProcessRun | ProcessJob) -> None:
        """A run the pool gives back (evaluator not rebuilt, data not pickled, pool broken)."""
        if type(run) is ProcessJob:
            self._queue.put(run)  # `_give_back`, on a scoring thread
            self._queue.wake()
            return
        assert isinstance(run, ProcessRun)
        self._queue.put((run.job, run.evaluator, run.given, run.value))

    def _take_run(self, job: Job) -> None:
        """Replace the job's output, for run evaluators, by the run under its span.

        The worker waits for children still running under the span, up to half the time left
        before ``max_defer_s`` (none inline: the caller is the one waiting), so evaluators keep
        the other half; a run with children still running is scored as it is, marked truncated.
        """
        source, job.run_source = job.run_source, None
        try:
            wait_s = 0.0 if self.inline else max(0.0, (job.deadline - time.monotonic()) / 2)
            job.run = run = source.take(wait_s)
        except Exception:
            internal_error("scoring: building the run")
            return
        if run.truncated:
            self.stats.runs_truncated += 1
            self.stats.runs_spans_left_out += source.left_out
        if job.output is FROM_RUN and run.output is not None:  # an agent span without output
            job.output = run.output

    def _expected(
        self, job: Job, arguments: Mapping[str, Any], *, record: bool = True
    ) -> tuple[Any, BaseException | None]:
        """The call's expected value (a plain output or an `Expected`; None when there is none),
        or the error its source raised. Each evaluator is handed its part by `handed`.

        ``record``: a value found in a source is recorded on the span (a handed call's worker
        records it instead)."""
        expected = job.expected
        if expected is NOT_SET:
            # Several sources (the code's, then each rule's that selects the span): each part
            # (output, tool calls) from the first that gives it.
            for source in job.sources:
                try:
                    found = resolve_expected(source, job.args, job.kwargs, arguments)
                except Exception as exc:
                    if expected is NOT_SET:
                        return None, exc
                    break  # what the sources before it gave stands
                if found is not NOT_SET:
                    expected = found if expected is NOT_SET else combined(expected, found)
                    if complete(expected):
                        break
            if expected is not NOT_SET:
                if expected is not None and record:
                    job.handle.set_expected(expected)
                job.expected = expected  # what the results were measured against, for the sinks
        return (None if expected is NOT_SET else expected), None

    def _run_cpu(self, job: Job, evaluator: Evaluator, expected: Any, value: Any) -> None:
        stuck = self._stuck.get(evaluator.name, 0)
        if stuck >= _MAX_STUCK_RUNS:
            # Do not feed a hung evaluator more threads: the other evaluators keep their workers.
            self._complete(job, evaluator, unresponsive(evaluator, stuck))
            return
        run = Run(job, evaluator)
        if not self.inline:
            self._watchdog.watch(run, evaluator.timeout_s or self.stuck_after_s)
        started = time.perf_counter()
        try:
            result = evaluator.evaluate(_subject(job, evaluator), handed(evaluator, expected), input=value)
        except Exception as exc:  # evaluate() handles data errors; this is a broken evaluator
            result = failure(evaluator, exc, "evaluate() raised")
        pool = self._pool
        if self._auto and pool is not None and not pool.started and pool.takes(evaluator):
            # unlocked: an estimate, of the time a worker could take (not runs_in='thread' ones)
            self._cpu_s += time.perf_counter() - started
        with self._lock:
            run.finished = True
            if run.stuck:
                self._stuck[evaluator.name] -= 1
                self._stuck_threads.discard(run.thread)
        if run.abandoned:
            return  # its time-out result was recorded already
        self._complete(job, evaluator, result)

    # ------------------------------------------------------------ async evaluators

    def _dispatch_async(
        self, job: Job, evaluator: Evaluator, expected: Any, value: Any
    ) -> concurrent.futures.Future[None]:
        import asyncio  # here: only async evaluators need it (import tracesim stays quick)

        loop = self._ensure_loop()
        return asyncio.run_coroutine_threadsafe(self._run_async(job, evaluator, expected, value), loop)

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                import asyncio

                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=_serve, args=(loop,), name="tracesim-scoring-async", daemon=True
                )
                thread.start()
                self._loop = loop
            return self._loop

    async def _run_async(self, job: Job, evaluator: Evaluator, expected: Any, value: Any) -> None:
        import asyncio

        semaphore = self._semaphores.get(id(evaluator))
        if semaphore is None:
            semaphore = asyncio.Semaphore(evaluator.max_concurrency or _DEFAULT_ASYNC_CONCURRENCY)
            self._semaphores[id(evaluator)] = semaphore
        async with semaphore:
            try:
                # Without a timeout_s of its own, a hung call would hold its slot forever.
                limit = evaluator.timeout_s or self.stuck_after_s
                given = handed(evaluator, expected)
                subject = _subject(job, evaluator)
                result = await asyncio.wait_for(evaluator.aevaluate(subject, given, input=value), limit)
            except asyncio.TimeoutError:
                result = timeout(evaluator, limit)
            except Exception as exc:
                result = failure(evaluator, exc, "aevaluate() raised")
        self._complete(job, evaluator, result)

    # ------------------------------------------------------------ results

    def _complete(self, job: Job, evaluator: Evaluator, result: Any) -> None:
        try:
            result = checked(evaluator, result)
            run = job.run
            if run is not None and run.truncated and scores_runs(evaluator):
                # scored with what there was: the result says the run was cut short, and why
                details = {**(result.details or {}), "run_truncated": run.truncated_reason}
                result = result.model_copy(update={"details": details})
            kind = getattr(evaluator, "annotator_kind", "CODE")  # an LLM judge says "LLM"
            with job.lock:
                if evaluator.name in job.done:
                    return
                job.done.add(evaluator.name)
                late = job.ended
                if not late:
                    write(
                        job.handle.otel_span,
                        result,
                        self.capture,
                        job.end_ns,
                        redaction=self.redaction,
                        run=scores_runs(evaluator),
                        annotator_kind=kind,
                    )
                job.pending -= 1
                last = job.pending == 0
                end_now = last and not job.ended
                if end_now:
                    job.ended = True
            self._count(result, late)
            metrics = self.metrics
            if metrics is not None:
                metrics.result(evaluator.name, _span_name(job.handle.otel_span), result)
            if late:
                emit_carrier(
                    self.tracer,
                    job.handle.span_context,
                    result,
                    self.capture,
                    at_ns=job.end_ns,
                    redaction=self.redaction,
                    run=scores_runs(evaluator),
                    annotator_kind=kind,
                )
            for sink in self.sinks:
                sink.submit(job.handle.span_context, result, kind, expected=_for_sinks(job.expected))
            if end_now:
                job.handle.otel_span.end(job.end_ns)
            if last:
                self._finish(job)
        except Exception:
            internal_error("scoring: recording a result")

    def note(self, target: SpanContext, span_name: str, evaluator: Evaluator, result: EvalResult) -> None:
        """Count and send on a result written without a job: another instrumentation's span
        that has nothing to score (a held span's "no output" results). Never raises."""
        try:
            self._count(result, late=False)
            metrics = self.metrics
            if metrics is not None:
                metrics.result(evaluator.name, span_name, result)
            kind = getattr(evaluator, "annotator_kind", "CODE")
            for sink in self.sinks:
                sink.submit(target, result, kind)
        except Exception:
            internal_error("scoring: recording a result")

    def _count(self, result: EvalResult, late: bool) -> None:
        stats = self.stats
        stats.results += 1
        if result.status == "error":
            stats.errors += 1
            if result.error_type == "timeout":
                stats.timeouts += 1
        if late:
            stats.late += 1

    def _finish(self, job: Job) -> None:
        _release_run(job)
        if job.finished is not None:
            job.finished.set()
        with self._lock:
            self.stats.completed += 1
            if self._inflight.pop(job.id, None) is not None:
                self.stats.pending = len(self._inflight)
                if not self._inflight:
                    self._idle.notify_all()

    def _expire(self, job: Job) -> None:
        """End the span now; results still running will go on carrier spans."""
        with job.lock:
            if job.ended:
                return
            job.ended = True
            waiting = [e.name for e in job.evaluators if e.name not in job.done]
        otel = job.handle.otel_span
        otel.set_attribute(sc.EVALUATION_DEFERRED, waiting)
        otel.end(job.end_ns)

    # ------------------------------------------------------------ deadlines

    def _expire_due(self, now: float) -> None:
        """End the spans whose evaluators have run past ``max_defer_s``.

        Jobs sit in ``_inflight`` in submit order, so in deadline order: the scan stops at the
        first one not yet due.
        """
        if self._auto:
            self._auto_check(now)
        due: list[Job] = []
        with self._lock:
            for job in self._inflight.values():
                if job.deadline > now:
                    break
                if not job.ended:
                    due.append(job)
        for job in due:
            self._expire(job)

    def _auto_check(self, now: float) -> None:
        """``auto``: start the worker once the threads' evaluators use `AUTO_SHARE` of a core;
        add one while runs keep waiting for it."""
        pool = self._pool
        window = now - self._window_start
        if pool is None or window < AUTO_WINDOW_S:
            return
        share = self._cpu_s / window
        self._cpu_s = 0.0
        self._window_start = now
        if not pool.started:
            if share > AUTO_SHARE:
                pool.start()
            return
        self._backlogged = self._backlogged + 1 if pool.backlog() > 2 * HELD else 0
        if self._backlogged >= 2:
            pool.grow()
            self._backlogged = 0

    def _time_out(self, run: Run) -> None:
        """A run passed its time: record a time-out (when it has ``timeout_s``), count it as stuck,
        and give the pool a new worker in place of the stuck thread.

        Python cannot stop a thread, so the stuck run goes on; at most `_MAX_STUCK_RUNS` per
        evaluator, after which its new runs get an ``unresponsive`` error at once, until one
        of the stuck runs returns. Threads are thus bounded, and other evaluators keep scoring.
        """
        evaluator = run.evaluator
        with self._lock:
            if run.finished:
                return
            run.stuck = True
            self._stuck_threads.add(run.thread)
            stuck = self._stuck[evaluator.name] = self._stuck.get(evaluator.name, 0) + 1
            run.abandoned = evaluator.timeout_s is not None
            if run.thread in self._threads:
                self._spawn()  # the stuck thread keeps running; keep the pool's capacity
        if run.abandoned:
            self._complete(run.job, evaluator, timeout(evaluator))
        if stuck >= _MAX_STUCK_RUNS:
            self._warnings.warn(
                f"stuck:{evaluator.name}",
                "tracesim: evaluator %r has %d runs still going past %s s; its new runs are skipped "
                "(error.type 'unresponsive') until one returns. Other evaluators are not affected.",
                evaluator.name,
                stuck,
                evaluator.timeout_s or self.stuck_after_s,
            )

    # ------------------------------------------------------------ flush, shutdown

    def force_flush(self, timeout_s: float, *, log_records: bool = True) -> bool:
        """Wait until every queued call is scored, and its span sent where a worker sends it, with
        its results' log records unless ``log_records`` is False (or ``timeout_s`` passes)."""
        self._queue.wake()
        pool = self._pool
        deadline = time.monotonic() + timeout_s
        with self._idle:
            while self._inflight:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._idle.wait(remaining)
        if pool is not None:
            return pool.wait_written(deadline, log_records=log_records)  # what workers send
        return True

    def log_records_out(self, timeout_s: float) -> bool:
        """Wait until the results' log records workers send are out (or ``timeout_s`` passes)."""
        pool = self._pool
        return pool.wait_written(time.monotonic() + timeout_s) if pool is not None else True

    def shutdown(self, timeout_s: float) -> bool:
        """Score what is queued within ``timeout_s``, end every span still open, stop the threads
        and the worker processes (killed when they do not end within the deadline)."""
        deadline = time.monotonic() + timeout_s
        pool = self._pool
        reserve = min(_CLOSE_RESERVE_S, timeout_s / 4) if pool is not None and pool.started else 0.0
        with self._lock:
            self._closed = True
        # The log records still queued in a worker are its close's business, within the deadline.
        drained = self.force_flush(timeout_s - reserve, log_records=False)
        with self._lock:
            left = list(self._inflight.values())
        handed_left = []
        for job in left:
            if job.handed == HANDED:
                handed_left.append(job)  # taken back once the workers are stopped
                continue
            self._expire(job)
            _release_run(job)
        for _ in self._threads:
            self._queue.put(None)
        self._queue.wake()
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._watchdog.stop()  # every job has ended: no deadline is left to act on
        if pool is not None:
            pool.close(deadline - time.monotonic())
            for unit in pool.unwritten():  # scored, and their worker was stopped before sending them
                self._unsent(unit)
        for job in handed_left:  # not written by a worker: the host sends them on, unscored
            self._take_back(job)
            if job.handed != EXPORTED:
                self._expire(job)
        return drained


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    """Run the async evaluators' loop until `ScoringPipeline.shutdown` stops it, then close it:
    runs still going (past their time) are cancelled and given a second to end."""
    import asyncio

    loop.run_forever()
    try:
        left = asyncio.all_tasks(loop)
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.wait(left, timeout=1.0))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


def _span_name(span: otel_trace.Span) -> str:
    """The name of a scored span (an SDK span has one; another kind of span counts as unnamed)."""
    name = getattr(span, "name", None)
    return name if isinstance(name, str) else "_unknown"


def _subject(job: Job, evaluator: Evaluator) -> Any:
    """What ``evaluator`` scores: the job's run for a run evaluator (when it has one), else the output."""
    if job.run is not None and scores_runs(evaluator):
        return job.run
    return job.output


def _release_run(job: Job) -> None:
    source = job.run_source
    if source is not None:
        job.run_source = None
        try:
            source.release()
        except Exception:
            internal_error("scoring: releasing a run")


def _for_sinks(expected: Any) -> Any:
    """What result sinks show as the expected output: an `Expected`'s output (NOT_SET when only
    tool calls are expected), else the value as it is."""
    if isinstance(expected, Expected):
        return NOT_SET if expected.output is NOT_GIVEN else expected.output
    return expected
