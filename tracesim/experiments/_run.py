"""Running an experiment: the task on every case, each run a trace, scored as it finishes.

One event loop coordinates everything: ``max_concurrency`` workers take the runs in order. Sync
tasks run on a pool of as many threads with the run's span current (the context is copied into
the thread), async tasks run on the loop. A run's time limit starts when
the task starts, not while it waits for a thread. A sync task past its limit cannot be stopped
(Python has no way to), so its row says it timed out and its thread finishes in the background.

The evaluators score each output right after the task returns, here and not in the background
pipeline: the report needs the scores, and an experiment scores every case whatever an
evaluator's ``sample_rate``. The results are written on the run's span with the pipeline's
writer, so ``tracesim show`` and ``tracesim report`` read them like any online score.

Evaluators that score runs (``scores_runs = True``) get the case's run, not its output: the
spans under the run's span, kept by the configuration's run recorder from the moment the span
opens (`tracesim._runs.RunRecorder`), built into a `tracesim.runs.Run` when the task returns
(spans still running under it are waited for up to `RUN_WAIT_S`, then the run is marked cut
short). A run is made of spans: when tracesim records none (not configured, ``enabled=False``,
``scoring_mode="off"``), they score what the task returned, which may be a run itself (a
``tracesim.record_run`` block's, or a list of tool calls); when it is not, their error says
why there was no run and what to do. A failed or errored run evaluator keeps the run's first
steps in the row, for the report (`tracesim.experiments._run_steps`).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import INVALID_SPAN
from opentelemetry.util.types import AttributeValue

from tracesim import _runtime
from tracesim._errors import ConfigError
from tracesim._internal_errors import internal_error
from tracesim._scoring import build_evaluators, checked, failure, scores_runs, timeout, write
from tracesim._scoring._expect import expected_output, handed
from tracesim._semconv import (
    EXPERIMENT_CASE_ID,
    EXPERIMENT_DATASET,
    EXPERIMENT_METADATA,
    EXPERIMENT_NAME,
    EXPERIMENT_REPEAT,
    EXPERIMENT_RUN_ID,
)
from tracesim._tracing import Span, error_type, finish, start, static_attributes
from tracesim.experiments._case_results import CaseResult, EvaluatorInfo
from tracesim.experiments._experiment_report import ExperimentReport
from tracesim.experiments._run_steps import run_data
from tracesim.runs import Run

if TYPE_CHECKING:
    from tracesim._runtime import Runtime
    from tracesim.evaluators import EvalResult, Evaluator
    from tracesim.experiments._case import Case, Cases

__all__ = ["RUN_WAIT_S", "Experiment", "evaluate_sync"]

RUN_WAIT_S = 1.0
"""How long a case's run waits, once the task has returned, for spans still running under it."""

_DEFAULT_MODEL_CONCURRENCY = 8  # requests in flight per async evaluator that sets no max_concurrency

OnRow = Callable[[CaseResult], None]


def evaluate_sync(
    dataset: Cases,
    task: Callable[[Any], Any],
    evaluators: Sequence[Any],
    max_concurrency: int,
    repeat: int,
    name: str | None,
    timeout_s: float | None,
) -> ExperimentReport:
    """`Dataset.evaluate`: the experiment on an event loop of its own.

    Inside a running loop there is no way to wait for a new one, so it says what to do instead.

    Example:
        >>> import asyncio
        >>> from tracesim.experiments import Case, Dataset
        >>> async def main():
        ...     return Dataset([Case(1, expected=1)]).evaluate(lambda x: x)
        >>> asyncio.run(main())
        Traceback (most recent call last):
        ...
        RuntimeError: Dataset.evaluate() cannot run inside a running event loop ...
    """
    experiment = Experiment.build(dataset, task, evaluators, max_concurrency, repeat, name, timeout_s)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(experiment.run())
    raise RuntimeError(
        "Dataset.evaluate() cannot run inside a running event loop (a notebook cell, an async "
        "function or test); use `await dataset.aevaluate(task, ...)` there, with the same arguments"
    )


@dataclass(frozen=True)
class Experiment:
    """A validated experiment, ready to run."""

    dataset: Cases
    task: Callable[[Any], Any]
    evaluators: tuple[Evaluator, ...]
    max_concurrency: int
    repeat: int
    name: str
    timeout_s: float | None

    @classmethod
    def build(
        cls,
        dataset: Cases,
        task: Callable[[Any], Any],
        evaluators: Sequence[Any],
        max_concurrency: int,
        repeat: int,
        name: str | None,
        timeout_s: float | None,
    ) -> Experiment:
        """Check the arguments; raises `ConfigError` naming the bad one."""
        if not callable(task):
            raise ConfigError("task", task, "a function taking a case's input (sync or async)")
        for key, value in (("max_concurrency", max_concurrency), ("repeat", repeat)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(key, value, "an integer of 1 or more")
        if timeout_s is not None and (
            isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not timeout_s > 0
        ):
            raise ConfigError("timeout_s", timeout_s, "a number of seconds above 0, or None")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ConfigError("name", name, "non-empty text")
        built = build_evaluators(evaluators, "experiment") if evaluators else ()
        task_name = getattr(task, "__qualname__", None) or getattr(task, "__name__", None)
        if not isinstance(task_name, str) or task_name == "<lambda>":
            task_name = dataset.name
        return cls(dataset, task, built, max_concurrency, repeat, name or task_name, timeout_s)

    async def run(self, on_row: OnRow | None = None) -> ExperimentReport:
        """Run every case ``repeat`` times; ``on_row`` is called as each run finishes."""
        runtime = _runtime.current  # read directly: an unconfigured run is fine, not worth a warning
        runtime = runtime if runtime is not None and runtime.enabled else None
        runner = _Runner(self, runtime, on_row)
        started_at = datetime.now(timezone.utc).isoformat()
        started = time.perf_counter()
        try:
            rows = await runner.all([(case, index) for case in self.dataset for index in range(self.repeat)])
        except BaseException:  # interrupted: leave at once, whatever the threads are doing
            runner.pool.shutdown(wait=False, cancel_futures=True)
            raise
        # A thread still running a timed-out task cannot be stopped: do not wait for it.
        runner.pool.shutdown(wait=not runner.abandoned, cancel_futures=True)
        return ExperimentReport(
            name=self.name,
            dataset=self.dataset.name,
            rows=tuple(rows),
            evaluators=tuple(EvaluatorInfo.of(e) for e in self.evaluators),
            repeat=self.repeat,
            run_id=runner.run_id,
            started_at=started_at,
            duration_s=time.perf_counter() - started,
        )


def _is_async(task: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(task):
        return True
    return inspect.iscoroutinefunction(getattr(task, "__call__", None))  # noqa: B004 - an async __call__


class _Runner:
    """The state of one run of an experiment: pool, limits, the span settings."""

    def __init__(self, experiment: Experiment, runtime: Runtime | None, on_row: OnRow | None) -> None:
        self.experiment = experiment
        self.runtime = runtime
        self.on_row = on_row
        self.run_id = uuid.uuid4().hex
        self.is_async = _is_async(experiment.task)
        self.pool = ThreadPoolExecutor(experiment.max_concurrency, thread_name_prefix="tracesim-experiment")
        self.limits = {
            e.name: asyncio.Semaphore(e.max_concurrency or _DEFAULT_MODEL_CONCURRENCY)
            for e in experiment.evaluators
            if e.is_async
        }
        self.abandoned = False
        self.scores_runs = any(scores_runs(e) for e in experiment.evaluators)
        self.no_runs = _why_no_runs(runtime) if self.scores_runs else None
        self.span_name = f"experiment {experiment.name}"
        self.attributes = static_attributes(
            self.span_name,
            "chain",
            {
                EXPERIMENT_NAME: experiment.name,
                EXPERIMENT_RUN_ID: self.run_id,
                EXPERIMENT_DATASET: experiment.dataset.name,
            },
        )

    async def all(self, runs: list[tuple[Case, int]]) -> list[CaseResult]:
        """Every run, by ``max_concurrency`` workers taking the next one in turn (a task per worker,
        not per run, so a large dataset costs no more memory than a small one)."""
        rows: list[CaseResult | None] = [None] * len(runs)
        pending = iter(range(len(runs)))  # shared: on one thread, each worker takes the next index

        async def worker() -> None:
            for index in pending:
                rows[index] = await self.case(*runs[index])

        await asyncio.gather(*(worker() for _ in range(min(self.experiment.max_concurrency, len(runs)))))
        return [row for row in rows if row is not None]

    async def case(self, case: Case, repeat: int) -> CaseResult:
        # Each run is a trace of its own, whatever span the experiment was started in.
        token = otel_context.attach(otel_trace.set_span_in_context(INVALID_SPAN))
        try:
            row = await self._run(case, repeat)
        finally:
            otel_context.detach(token)
        if self.on_row is not None:
            self.on_row(row)
        return row

    async def _run(self, case: Case, repeat: int) -> CaseResult:
        handle = self._open(case, repeat)
        recorder = self.runtime.runs if self.runtime is not None and self.scores_runs else None
        if recorder is not None and handle is not None:
            recorder.watch(handle.otel_span)  # its spans are kept from now on, for its run
        kept = None
        try:
            output, error, duration_s = await self._call(case.input)
            end_ns = time.time_ns()
            scores = {}
            if error is None:
                run = await self._take_run(handle, output, end_ns) if recorder is not None else None
                scores = await self._score(case, output, run)
                failed = _failed_on_run(self.experiment.evaluators, scores) if run is not None else []
                if run is not None and failed:
                    kept = run_data(run, failed)
        except BaseException as exc:  # cancelled or interrupted: end the span, then let it go
            if handle is not None:
                finish(handle, exc)
            raise
        trace_id = span_id = None
        if handle is not None:
            if handle.is_recording():  # before the span ends: a not-sampled run has no trace to name
                trace_id, span_id = handle.trace_id, handle.span_id
            self._close(handle, case, output, error, scores, end_ns)
        return CaseResult(
            case_id=str(case.id),
            repeat=repeat,
            input=case.input,
            expected=case.expected,
            output=output,
            scores=scores,
            duration_s=duration_s,
            error=None if error is None else f"{type(error).__name__}: {_message(error)}",
            error_type=None if error is None else error_type(error),
            trace_id=trace_id,
            span_id=span_id,
            metadata=case.metadata,
            run=kept,
        )

    # -- the task ---------------------------------------------------------------------------

    async def _call(self, value: Any) -> tuple[Any, BaseException | None, float]:
        """The task's output, or the exception it raised, and how long it ran."""
        task = self.experiment.task
        started = time.perf_counter()
        times: list[float] = []  # a sync task's start and end, taken in its thread
        try:
            if self.is_async:
                output = await self._bounded(asyncio.ensure_future(task(value)))
            else:
                future, running, times = self._in_thread(task, value)
                await running.wait()
                started = times[0]  # the thread's, not the loop's: the task may have ended already
                output = await self._bounded(future)
                if inspect.isawaitable(output):  # a sync callable that hands back a coroutine
                    times = times[:1]  # it runs on until the coroutine ends
                    output = await self._bounded(asyncio.ensure_future(output))
        except Exception as exc:
            return None, exc, _ended(times) - started
        return output, None, _ended(times) - started

    def _in_thread(
        self, task: Callable[[Any], Any], value: Any
    ) -> tuple[asyncio.Future[Any], asyncio.Event, list[float]]:
        """The task on the pool, the event set when it starts, and its start and end times (the
        end appended when it returns or raises)."""
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()  # the run's span is current in the task's thread
        running = asyncio.Event()
        times: list[float] = []

        def call() -> Any:
            times.append(time.perf_counter())
            loop.call_soon_threadsafe(running.set)
            try:
                return context.run(task, value)
            finally:
                times.append(time.perf_counter())

        return loop.run_in_executor(self.pool, call), running, times

    async def _bounded(self, future: asyncio.Future[Any]) -> Any:
        limit = self.experiment.timeout_s
        if limit is None:
            return await future
        done, _ = await asyncio.wait({future}, timeout=limit)
        if not done:
            future.cancel()
            self.abandoned = self.abandoned or not self.is_async
            raise TimeoutError(f"the task gave no output within timeout_s={limit:g}")
        return future.result()

    # -- scoring ----------------------------------------------------------------------------

    async def _take_run(self, handle: Span | None, output: Any, end_ns: int) -> Run | None:
        """The case's run, built from the spans kept under its span (None without a span)."""
        recorder = self.runtime.runs if self.runtime is not None else None
        if handle is None or recorder is None:
            return None
        try:
            source = recorder.source(handle.otel_span, output, end_ns)
            if source is None:
                return None
            loop = asyncio.get_running_loop()
            try:
                # on the pool: waiting for spans still running under it must not hold up the loop
                return await loop.run_in_executor(self.pool, source.take, RUN_WAIT_S)
            except BaseException:  # cancelled: the recorder must not keep the trace for it
                source.release()
                raise
        except Exception:
            internal_error("experiment: build a case's run")
            return None

    async def _score(self, case: Case, output: Any, run: Run | None = None) -> dict[str, EvalResult]:
        evaluators = self.experiment.evaluators
        sync = [e for e in evaluators if not e.is_async]
        found: dict[str, EvalResult] = {}
        if sync:
            loop = asyncio.get_running_loop()
            # CPU metrics run on the pool, so a slow one does not hold up the loop's other runs.
            scored = await loop.run_in_executor(self.pool, _score_sync, sync, output, run, case, self.no_runs)
            for result in scored:
                found[result.name] = result
        for result in await asyncio.gather(
            *(self._ascore(e, _subject(e, output, run), case) for e in evaluators if e.is_async)
        ):
            found[result.name] = result
        return {e.name: found[e.name] for e in evaluators}

    async def _ascore(self, evaluator: Evaluator, subject: Any, case: Case) -> EvalResult:
        async with self.limits[evaluator.name]:
            try:
                result = await asyncio.wait_for(
                    evaluator.aevaluate(subject, handed(evaluator, case.expected), input=case.input),
                    evaluator.timeout_s,
                )
            except asyncio.TimeoutError:
                return timeout(evaluator)
            except Exception as exc:
                return failure(evaluator, exc, "aevaluate()")
        return _marked(evaluator, checked(evaluator, result), subject, self.no_runs)

    # -- the span ---------------------------------------------------------------------------

    def _open(self, case: Case, repeat: int) -> Span | None:
        runtime = self.runtime
        if runtime is None:
            return None
        try:
            attributes: dict[str, AttributeValue] = {
                **self.attributes,
                EXPERIMENT_CASE_ID: str(case.id),
                EXPERIMENT_REPEAT: repeat,
            }
            if case.metadata:
                attributes[EXPERIMENT_METADATA] = _metadata_text(case.metadata, runtime)
            return start(runtime, self.span_name, attributes, case.input)
        except Exception:
            internal_error("experiment: open a run's span")
            return None

    def _close(
        self,
        handle: Span,
        case: Case,
        output: Any,
        error: BaseException | None,
        scores: Mapping[str, EvalResult],
        end_ns: int,
    ) -> None:
        runtime = self.runtime
        try:
            if error is None:
                handle.set_output(output)
            if case.expected is not None:
                handle.set_expected(case.expected)
            if runtime is not None and handle.is_recording():
                evaluators = self.experiment.evaluators
                runs = {e.name for e in evaluators if scores_runs(e)}
                # who made each result (an LLM judge says "LLM"): on its event, and for the sinks
                kinds = {e.name: getattr(e, "annotator_kind", "CODE") for e in evaluators}
                for result in scores.values():
                    write(
                        handle.otel_span,
                        result,
                        runtime.capture,
                        end_ns,
                        run=result.name in runs,
                        annotator_kind=kinds.get(result.name),
                    )
                shown = expected_output(case.expected)  # an Expected's output; tool calls are on the span
                for evaluator in evaluators:
                    for sink in runtime.sinks:
                        sink.submit(
                            handle.span_context, scores[evaluator.name], kinds[evaluator.name], expected=shown
                        )
        except Exception:
            internal_error("experiment: record a run")
        finish(handle, error, end_ns)  # the span lasts as long as the task ran, scoring excluded


def _ended(times: list[float]) -> float:
    """When the task ended: its thread's time when it took one, else now (an async task, a sync
    task still running past its limit, or one whose coroutine was awaited here)."""
    return times[1] if len(times) > 1 else time.perf_counter()


def _score_sync(
    evaluators: Sequence[Evaluator], output: Any, run: Run | None, case: Case, no_runs: str | None
) -> list[EvalResult]:
    results = []
    for evaluator in evaluators:
        subject = _subject(evaluator, output, run)
        try:
            given = handed(evaluator, case.expected)
            result = checked(evaluator, evaluator.evaluate(subject, given, input=case.input))
            results.append(_marked(evaluator, result, subject, no_runs))
        except Exception as exc:  # evaluate() catches the metric's errors; this is a broken subclass
            results.append(failure(evaluator, exc, "evaluate()"))
    return results


def _subject(evaluator: Evaluator, output: Any, run: Run | None) -> Any:
    """What ``evaluator`` scores: the case's run for an evaluator that scores runs, else the output."""
    return run if run is not None and scores_runs(evaluator) else output


def _marked(evaluator: Evaluator, result: EvalResult, subject: Any, no_runs: str | None) -> EvalResult:
    """``result``, its details saying why when the run it scored was cut short, its error saying
    why there was no run (``no_runs``) when it could not score the task's output as one."""
    if not scores_runs(evaluator):
        return result
    if isinstance(subject, Run) and subject.truncated:
        details = {**(result.details or {}), "run_truncated": subject.truncated_reason or "cut short"}
        return result.model_copy(update={"details": details})
    if no_runs is not None and result.status == "error" and not isinstance(subject, Run):
        hint = (
            f"{result.error}; the case's run (its spans) was not recorded: {no_runs}; call "
            "tracesim.configure() before evaluating (in tests, inside tracesim.testing.capture_spans()), "
            "or return the run from the task (a tracesim.record_run block's, or its tool calls)"
        )
        return result.model_copy(update={"error": hint})
    return result


def _why_no_runs(runtime: Runtime | None) -> str | None:
    """Why a configuration records no runs for an experiment's run evaluators; None when it does."""
    if runtime is None or runtime.runs is None:
        return "tracesim is not configured (or configured with enabled=False)"
    return None


def _failed_on_run(evaluators: Sequence[Evaluator], scores: Mapping[str, EvalResult]) -> list[str]:
    """The evaluators that score runs and failed or errored (the row then keeps the run)."""
    return [
        e.name
        for e in evaluators
        if scores_runs(e)
        and e.name in scores
        and (scores[e.name].status == "error" or scores[e.name].passed is False)
    ]


def _metadata_text(metadata: Mapping[str, Any], runtime: Runtime) -> str:
    from tracesim._capture import capture_value

    return capture_value(dict(metadata), runtime.capture).text


def _message(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:  # a hostile __str__ in the user's exception
        return f"<{type(error).__name__}.__str__ raised>"
