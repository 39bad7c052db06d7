"""A scored call's data: the job queued for scoring, its runs, and the results made for it."""

from __future__ import annotations

import copy
import datetime
import decimal
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from opentelemetry import trace as otel_trace

from tracesim._capture import is_small
from tracesim._internal_errors import warn_once
from tracesim._scoring._expect import NOT_SET

if TYPE_CHECKING:
    from tracesim.evaluators import EvalResult, Evaluator

__all__ = [
    "FROM_RUN",
    "Binder",
    "Job",
    "Run",
    "ScoringStats",
    "Subject",
    "checked",
    "failure",
    "no_output",
    "snapshot",
    "timeout",
    "unresponsive",
]

FROM_RUN: Any = type(
    "_FromRun",
    (),
    {
        "__repr__": lambda self: "FROM_RUN",
        "__copy__": lambda self: self,
        "__deepcopy__": lambda self, memo: self,  # a job's output is snapshotted: it stays itself
    },
)()
"""A job's output when its span recorded none and it is read from its run (an agent span of
another instrumentation: the run's final answer)."""

_IMMUTABLE = frozenset(
    {str, bytes, int, float, bool, complex, type(None), decimal.Decimal, uuid.UUID, range}
    | {datetime.datetime, datetime.date, datetime.time, datetime.timedelta}
)
_SNAPSHOT_NODES = 4096


def snapshot(value: Any) -> Any:
    """``value`` as it is now, for scoring later: immutable values as they are, small mutable
    ones deep-copied.

    A large value (more than a few thousand elements) or one that cannot be copied is used as
    it is, since copying it would make the caller wait; that is logged once.

    Example:
        >>> answer = ["Warsaw"]
        >>> kept = snapshot(answer)
        >>> answer.append("Paris")
        >>> kept
        ['Warsaw']
    """
    kind = type(value)
    if kind in _IMMUTABLE or (kind is tuple and all(type(v) in _IMMUTABLE for v in value)):
        return value
    if is_small(value, 1 << 20, _SNAPSHOT_NODES):
        try:
            return copy.deepcopy(value)
        except Exception:
            pass
    warn_once(
        "snapshot",
        "tracesim: a scored output of type %s is too large or cannot be copied; it is scored as it is "
        "when the evaluator runs (a later change by your code would be seen)",
        kind.__qualname__,
    )
    return value


@dataclass
class ScoringStats:
    """Counters of the scoring pipeline since `configure()`.

    Example:
        >>> import tracesim
        >>> tracesim.scoring_stats().dropped
        0
    """

    submitted: int = 0
    """Calls queued for scoring."""
    completed: int = 0
    """Calls whose evaluators have all reported."""
    dropped: int = 0
    """Calls left unscored because the queue was full (or tracesim was shutting down)."""
    not_sampled: int = 0
    """Evaluator runs skipped by sampling."""
    results: int = 0
    """Results recorded, on the span or on a carrier span."""
    errors: int = 0
    """Results with status ``error`` (time-outs included)."""
    timeouts: int = 0
    """Evaluator runs stopped by their ``timeout_s``."""
    late: int = 0
    """Results that arrived after the span ended and went on a carrier span."""
    pending: int = 0
    """Calls queued or being scored right now."""
    runs_truncated: int = 0
    """Runs scored cut short: children still running, or more steps or spans than kept."""
    runs_spans_left_out: int = 0
    """Spans of scored traces the run recorder counted but did not keep (its memory bounds)."""
    runs_traces_evicted: int = 0
    """Traces the run recorder let go of early to keep at most 1,000 at once."""
    written_by_workers: int = 0
    """Calls whose span the worker process that scored them wrote (``scoring_export: workers``)."""
    log_records_dropped: int = 0
    """Results' log records (``evaluation_log_events``) lost because their queue was full, or
    still held them when it shut down past its deadline; the span events keep those results."""
    results_not_sent: int = 0
    """Results the Phoenix annotation or MLflow assessment senders could not deliver: dropped
    (their queue was full, the values unusable) or given up (refused, the backend unreachable,
    the span never appeared); the spans keep those results."""


class Binder(Protocol):
    """Turns a call's arguments into what evaluators and expected-output sources see."""

    def input(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The input as recorded on the span."""

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Every argument by name."""


class Subject(Protocol):
    """The span of a scored call, as the pipeline sees it (tracing's `Span` is one)."""

    @property
    def otel_span(self) -> otel_trace.Span:
        """The OpenTelemetry span the results are written on."""

    @property
    def span_context(self) -> otel_trace.SpanContext:
        """The span's ids, for carrier spans and result sinks."""

    def set_expected(self, value: Any) -> None:
        """Record a resolved expected output on the span."""


class Job:
    """One scored call: what to evaluate, and where the results go.

    ``input`` and ``expected`` are what the call recorded (`NOT_SET` when nothing was);
    ``output`` is the value the call returned, as it was when it returned.
    """

    __slots__ = (
        "args",
        "binder",
        "deadline",
        "done",
        "end_ns",
        "ended",
        "evaluators",
        "expected",
        "finished",
        "handed",
        "handle",
        "id",
        "input",
        "kwargs",
        "lock",
        "output",
        "pending",
        "run",
        "run_source",
        "sources",
    )

    def __init__(
        self,
        handle: Subject,
        output: Any,
        end_ns: int,
        evaluators: Sequence[Evaluator],
        sources: Sequence[Any],
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        binder: Binder,
        input: Any = NOT_SET,
        expected: Any = NOT_SET,
    ) -> None:
        self.handle = handle
        self.input = input
        self.expected = expected
        self.output = output
        self.end_ns = end_ns
        self.evaluators = tuple(evaluators)
        self.sources = tuple(sources)
        self.args = args
        self.kwargs = kwargs
        self.binder = binder
        self.pending = len(self.evaluators)
        self.done: set[str] = set()
        self.ended = False
        self.finished: threading.Event | None = None  # only inline callers wait on a job
        self.lock = threading.Lock()
        self.id = 0
        self.deadline = 0.0  # monotonic time past which the span ends without waiting
        self.run_source: Any = None  # the span's run, for run evaluators (a `tracesim._runs.RunSource`)
        self.run: Any = None  # that run once taken (a `tracesim.runs.Run`), scored instead of ``output``
        self.handed: str | None = None  # a worker finishes it (`tracesim._scoring._handoff` states)

    def inputs(self) -> tuple[Any, Mapping[str, Any]]:
        """The call's input as evaluators see it, and the arguments by name (for datasets)."""
        value = self.input
        if value is NOT_SET:
            value = self.binder.input(self.args, dict(self.kwargs))
        arguments = self.binder.arguments(self.args, dict(self.kwargs))
        return (None if value is NOT_SET else value), arguments


class Run:
    """A CPU evaluator running in a worker thread, watched for its time limit.

    ``stuck``: it ran past its time and its thread was replaced; ``abandoned``: its time-out
    result was recorded, so its own result, if it ever comes, is dropped.
    """

    __slots__ = ("abandoned", "evaluator", "finished", "job", "stuck", "thread")

    def __init__(self, job: Job, evaluator: Evaluator) -> None:
        self.job = job
        self.evaluator = evaluator
        self.thread = threading.current_thread()
        self.finished = False
        self.stuck = False
        self.abandoned = False


def checked(evaluator: Evaluator, result: Any) -> EvalResult:
    from tracesim.evaluators import EvalResult

    if not isinstance(result, EvalResult):
        return failure(
            evaluator, TypeError(f"returned {type(result).__name__}, not an EvalResult"), "evaluate()"
        )
    if result.name != evaluator.name:
        return result.model_copy(update={"name": evaluator.name})
    return result


def failure(evaluator: Evaluator, exc: BaseException, where: str) -> EvalResult:
    from tracesim.evaluators import EvalResult

    return EvalResult(
        name=evaluator.name,
        threshold=evaluator.threshold,
        status="error",
        error=f"{where}: {type(exc).__name__}: {exc}",
        error_type=type(exc).__name__,
    )


NO_OUTPUT = "the span carries no output: its instrumentation recorded none (content capture off?)"


def no_output(evaluator: Evaluator, why: str = NO_OUTPUT) -> EvalResult:
    """The result of a string evaluator on a span with no output to score."""
    from tracesim.evaluators import EvalResult

    return EvalResult(name=evaluator.name, threshold=evaluator.threshold, status="skipped", explanation=why)


def unresponsive(evaluator: Evaluator, stuck: int) -> EvalResult:
    """The result of a run skipped because the evaluator's earlier runs are stuck."""
    from tracesim.evaluators import EvalResult

    return EvalResult(
        name=evaluator.name,
        threshold=evaluator.threshold,
        status="error",
        error=f"not run: {stuck} earlier runs of this evaluator are still going past their time limit",
        error_type="unresponsive",
    )


def timeout(evaluator: Evaluator, limit_s: float | None = None) -> EvalResult:
    """The result of a run stopped at its time limit; the message names the limit that applied.

    ``limit_s``: the limit the caller used for an evaluator without ``timeout_s`` of its own.
    """
    from tracesim.evaluators import EvalResult
    from tracesim.evaluators._model_evaluator import describe_timeout

    return EvalResult(
        name=evaluator.name,
        threshold=evaluator.threshold,
        status="error",
        error=describe_timeout(evaluator, limit_s),
        error_type="timeout",
        duration_s=evaluator.timeout_s or limit_s,
    )
