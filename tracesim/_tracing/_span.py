"""`Span`: tracesim's handle on one OpenTelemetry span, and the `span()` context manager."""

from __future__ import annotations

import contextvars
import sys
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import INVALID_SPAN, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from tracesim import _runtime
from tracesim import _semconv as sc
from tracesim._capture import CaptureOptions, capture_value, captured_attributes
from tracesim._errors import ConfigError
from tracesim._internal_errors import internal_error
from tracesim._scoring import (
    FROM_RUN,
    Job,
    Plan,
    build_evaluators,
    expected_attributes,
    release_expected,
    snapshot,
    take_expected,
)
from tracesim._scoring import NOT_SET as _NOT_SET
from tracesim.runs import NOT_GIVEN

if TYPE_CHECKING:
    from tracesim._runtime import Runtime

__all__ = ["Span", "current_span", "last_span", "span"]

_ACTIVE: contextvars.ContextVar[Span | None] = contextvars.ContextVar("tracesim_active_span", default=None)
_LAST: contextvars.ContextVar[Span | None] = contextvars.ContextVar("tracesim_last_span", default=None)
_OK = Status(StatusCode.OK)


class Span:
    """tracesim's handle on one span: record input, output, expected output and attributes.

    You get one from `tracesim.span()` or `tracesim.current_span()`. Every method is safe to
    call at any time: on a span that is not recording (tracesim not configured, or the span
    was not sampled) it does nothing, and it never raises into your code.

    Example:
        >>> import tracesim
        >>> with tracesim.span("retrieve", kind="retriever", input="Marie Curie") as s:
        ...     docs = ["Marie Curie was born in Warsaw."]
        ...     s.set_output(docs)
    """

    __slots__ = (
        "_active_token",
        "_context",
        "_context_token",
        "_expect_token",
        "_expected",
        "_input",
        "_otel",
        "_output",
        "_output_set",
        "_plan",
        "_runtime",
    )

    def __init__(self, otel_span: otel_trace.Span, runtime: Runtime | None) -> None:
        self._otel = otel_span
        self._runtime = runtime
        self._input: Any = _NOT_SET
        self._output: Any = _NOT_SET
        self._expected: Any = _NOT_SET
        self._output_set = False
        self._context: otel_context.Context | None = None
        self._context_token: object | None = None
        self._active_token: contextvars.Token[Span | None] | None = None
        self._expect_token: contextvars.Token[Any] | None = None
        self._plan: Plan | None = None

    # ------------------------------------------------------------ public

    @property
    def otel_span(self) -> otel_trace.Span:
        """The underlying OpenTelemetry span."""
        return self._otel

    @property
    def trace_id(self) -> str:
        """The trace id as 32 hex digits, as backends show it (all zeros when not recording)."""
        return format(self._otel.get_span_context().trace_id, "032x")

    @property
    def span_id(self) -> str:
        """The span id as 16 hex digits."""
        return format(self._otel.get_span_context().span_id, "016x")

    @property
    def span_context(self) -> otel_trace.SpanContext:
        """The span's trace and span ids, e.g. to pass to `tracesim.score` later."""
        return self._otel.get_span_context()

    def is_recording(self) -> bool:
        """Whether anything set on this span will be exported."""
        return self._runtime is not None and self._otel.is_recording()

    def set_input(self, value: Any) -> None:
        """Record ``value`` as the span's input (``input.value``)."""
        self._input = value
        self._record(sc.INPUT_VALUE, sc.INPUT_MIME_TYPE, sc.INPUT_ORIGINAL_CHARS, value)

    def set_output(self, value: Any) -> None:
        """Record ``value`` as the span's output; a traced function's return value no longer replaces it."""
        self._output = value
        self._output_set = True
        self._record(sc.OUTPUT_VALUE, sc.OUTPUT_MIME_TYPE, sc.OUTPUT_ORIGINAL_CHARS, value)

    def set_expected(self, value: Any) -> None:
        """Record the output this call should have produced; evaluators compare against it.

        ``value`` is the expected output, or a `tracesim.Expected` with an output and/or the
        tool calls the call should make: its output is recorded as ``tracesim.expected.value``
        and its tool calls as JSON in ``tracesim.expected.tool_calls``. String evaluators get
        the output (and skip when there is none); run evaluators get the `Expected`.
        """
        self._expected = value
        options = self.capture
        if options is None:
            return
        try:
            self._otel.set_attributes(expected_attributes(value, options))
        except Exception:
            internal_error("Span.capture")

    def set_attribute(self, key: str, value: Any) -> None:
        """Set an attribute; values OpenTelemetry cannot hold are recorded as JSON text.

        Text longer than ``max_value_chars`` is cut with a marker, like captured values.
        """
        if not self.is_recording():
            return
        try:
            options = self._runtime.capture if self._runtime is not None else _DEFAULT_CAPTURE
            self._otel.set_attribute(key, attribute_value(value, options))
        except Exception:
            internal_error("Span.set_attribute")

    def record_exception(self, exception: BaseException, *, mark_error: bool = True) -> None:
        """Record ``exception`` as an event; with ``mark_error`` also set the span's status to ERROR."""
        if not self.is_recording():
            return
        try:
            _record_error(self._otel, exception, mark_error=mark_error)
        except Exception:
            internal_error("Span.record_exception")

    # ------------------------------------------------------------ internal

    @property
    def capture(self) -> CaptureOptions | None:
        """Capture options when recording and capture is on, else None."""
        runtime = self._runtime
        if runtime is None or not runtime.capture.enabled or not self._otel.is_recording():
            return None
        return runtime.capture

    def _record(self, value_key: str, mime_key: str, length_key: str, value: Any) -> None:
        # Direct, not through a shared helper taking a function: set_output runs on every traced call
        options = self.capture
        if options is None:
            return
        try:
            self._otel.set_attributes(captured_attributes(value, value_key, mime_key, length_key, options))
        except Exception:
            internal_error("Span.capture")

    def _attach(self) -> None:
        # Built once: a generator attaches the same context at every step.
        if self._context is None:
            self._context = otel_trace.set_span_in_context(self._otel)
        self._context_token = otel_context.attach(self._context)
        self._active_token = _ACTIVE.set(self)

    def _detach(self) -> None:
        if self._expect_token is not None:
            release_expected(self._expect_token)
            self._expect_token = None
        if self._active_token is not None:
            _ACTIVE.reset(self._active_token)
            self._active_token = None
        if self._context_token is not None:
            otel_context.detach(self._context_token)  # type: ignore[arg-type]
            self._context_token = None


_DEFAULT_CAPTURE = CaptureOptions()  # for attributes given before any configuration (decoration time)


def attribute_value(value: Any, options: CaptureOptions) -> AttributeValue:
    """``value`` as an OpenTelemetry attribute value: numbers and booleans as they are,
    homogeneous lists of scalars as lists, anything else as captured text (bounded, cut with
    a marker past ``max_value_chars``)."""
    if isinstance(value, (bool, int, float)):
        return value
    if (
        isinstance(value, Sequence)
        and not isinstance(value, (str, bytes, bytearray))
        and len(value) <= options.max_value_chars
    ):
        items = list(value)
        if items and all(type(i) is str for i in items):
            return [capture_value(i, options).text for i in items]
        for kind in (bool, int, float):
            if items and all(type(i) is kind for i in items):
                return items
    return capture_value(value, options).text


def error_type(exception: BaseException) -> str:
    """The ``error.type`` of an exception: its qualified class name."""
    cls = type(exception)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _record_error(otel: otel_trace.Span, exception: BaseException, *, mark_error: bool = True) -> None:
    """The exception event, and with ``mark_error`` status ERROR and ``error.type``.

    User exceptions can be hostile (a ``__str__`` that raises): the event is then written
    from what can be read, and the status is set whatever happened to the event.
    """
    message = _message(exception)
    try:
        otel.record_exception(exception)
    except Exception:
        otel.add_event(
            "exception",
            {
                "exception.type": error_type(exception),
                "exception.message": message,
                "exception.stacktrace": "",
            },
        )
    if mark_error:
        otel.set_status(Status(StatusCode.ERROR, f"{type(exception).__name__}: {message}"))
        otel.set_attribute(sc.ERROR_TYPE, error_type(exception))


def _mark_ok(otel: otel_trace.Span) -> None:
    """Status OK for a call that returned, as OpenInference instrumentations set it.

    Only an unset status changes: an ERROR the user set on purpose (``record_exception``
    without raising) stays. Spans without a readable status (non-recording) are left alone.
    The SDK's own span, still open and written only by this thread, gets the field set
    directly: ``set_status`` (its lock, its checks) cost a twentieth of a traced call.
    """
    if type(otel) is _sdk_span():
        # as set_status would, minus its lock: not on a span already ended (by the user)
        if otel._end_time is None and otel._status.status_code is _UNSET:  # type: ignore[attr-defined]
            otel._status = _OK  # type: ignore[attr-defined]
        return
    status = getattr(otel, "status", None)
    if status is not None and status.status_code is _UNSET:
        otel.set_status(_OK)


_UNSET = StatusCode.UNSET
_SDK_SPAN: list[type] = []


def _sdk_span() -> type | None:
    """The class of the SDK's spans, once the SDK is loaded (`import tracesim` does not load it)."""
    if not _SDK_SPAN:
        module = sys.modules.get("opentelemetry.sdk.trace")
        if module is None:
            return None
        _SDK_SPAN.append(getattr(module, "_Span", module.Span))  # what its tracer creates
    return _SDK_SPAN[0]


def _message(exception: BaseException) -> str:
    try:
        return str(exception)
    except Exception:
        return f"<{type(exception).__name__}.__str__ raised>"


def start(
    runtime: Runtime, name: str, attributes: Mapping[str, AttributeValue], input_value: Any = _NOT_SET
) -> Span:
    """Open a span named ``name`` with its input captured, and make it current."""
    if input_value is not _NOT_SET and runtime.capture.enabled:
        # Given at start, the input joins the span's attributes in one step, not a second write.
        attributes = {
            **attributes,
            **captured_attributes(
                input_value, sc.INPUT_VALUE, sc.INPUT_MIME_TYPE, sc.INPUT_ORIGINAL_CHARS, runtime.capture
            ),
        }
    otel = runtime.tracer.start_span(name, attributes=attributes)
    handle = Span(otel, runtime)
    handle._input = input_value
    handle._attach()
    return handle


def adopt_plan(handle: Span, plan: Plan) -> None:
    """Mark ``handle`` as scored by ``plan``; it takes the value of an enclosing `expect` block."""
    handle._plan = plan
    if plan.runs:
        runs = handle._runtime.runs if handle._runtime is not None else None
        if runs is not None:
            runs.watch(handle._otel)  # from now on, the spans under it are kept for its run
    pending, token = take_expected()
    if token is not None:
        handle._expect_token = token
        handle.set_expected(pending)


def score(
    handle: Span, output: Any, end_ns: int, args: tuple[Any, ...], kwargs: dict[str, Any], binder: Any
) -> None:
    """Leave the span open and hand the finished call to the scoring pipeline. Never raises."""
    try:
        handle._detach()
    except Exception:
        internal_error("span: detach")
    _LAST.set(handle)
    runtime, plan = handle._runtime, handle._plan
    try:
        _mark_ok(handle._otel)  # the call returned: what scoring finds later is not the call's status

        if runtime is None or runtime.scoring is None or plan is None:
            raise RuntimeError("score() called for a span without a scoring plan")
        job = Job(
            handle,
            snapshot(output),  # scored as it was returned, whatever the caller does with it next
            end_ns,
            plan.evaluators,
            plan.sources,
            args,
            kwargs,
            binder,
            handle._input,
            handle._expected,
        )
        runs = runtime.runs
        if runs is not None:
            if runs.traces:
                runs.returned(handle._otel, end_ns)  # for the runs above it, this call has ended
            if plan.runs:
                given = NOT_GIVEN if job.output is FROM_RUN else job.output  # else read from the run
                job.run_source = runs.source(handle._otel, given, end_ns)
        runtime.scoring.submit(job, plan.always)
    except Exception:
        try:
            handle._otel.end(end_ns)
        finally:
            internal_error("scoring: submit")


def last_span() -> Span | None:
    """The span of the traced call or ``span()`` block that finished last in this thread or task.

    For feedback that arrives later: keep its ``span_context`` (or ``trace_id`` / ``span_id``)
    and pass it to `tracesim.score`. None before any traced call finished here.

    Example:
        >>> import tracesim
        >>> @tracesim.trace
        ... def answer(question: str) -> str:
        ...     return "Warsaw"
        >>> answer("Where was Marie Curie born?")  # doctest: +SKIP
        'Warsaw'
        >>> tracesim.score(tracesim.last_span(), name="thumbs_up", value=1.0)  # doctest: +SKIP
    """
    return _LAST.get()


def current_span() -> Span:
    """The span of the innermost traced call or ``with tracesim.span(...)`` block.

    Outside any span, returns a span that records nothing.

    Example:
        >>> import tracesim
        >>> @tracesim.trace
        ... def answer(question: str) -> str:
        ...     tracesim.current_span().set_attribute("retrieval.hits", 3)
        ...     return "Warsaw"
    """
    otel = otel_trace.get_current_span()
    active = _ACTIVE.get()
    if active is not None and active._otel is otel:
        return active
    return Span(otel, _runtime.current if otel is not INVALID_SPAN else None)


class span:
    """Open a span for a block of code: ``with tracesim.span("retrieve", kind="retriever") as s:``.

    The block's exception, if any, is recorded on the span and propagates unchanged.

    Args:
        name: The span name.
        kind: ``agent``, ``tool``, ``chain`` (default), ``llm``, ``retriever``, ``embedding``
            or ``evaluator``.
        input: Recorded as the span's input.
        expected: The expected output, for evaluators, or a `tracesim.Expected` (output
            and/or tool calls).
        evaluators: Evaluators scoring the output set with `Span.set_output`.
        attributes: Extra span attributes.

    Example:
        >>> import tracesim
        >>> with tracesim.span("lookup", kind="tool", input={"city": "Warsaw"}) as s:
        ...     s.set_output({"country": "Poland"})
    """

    __slots__ = ("_attributes", "_evaluators", "_expected", "_handle", "_input", "_kind", "_name")

    def __init__(
        self,
        name: str,
        *,
        kind: str = "chain",
        input: Any = _NOT_SET,
        expected: Any = _NOT_SET,
        evaluators: Sequence[Any] = (),
        attributes: Mapping[str, AttributeValue] | None = None,
    ) -> None:
        self._name = name
        self._kind = kind.lower() if isinstance(kind, str) else kind
        self._attributes = static_attributes(name, kind, attributes)
        self._input = input
        self._expected = expected
        self._evaluators = build_evaluators(evaluators, name) if evaluators else ()
        self._handle: Span | None = None

    def __enter__(self) -> Span:
        runtime = _runtime.active()
        if runtime is None:
            return Span(INVALID_SPAN, None)
        try:
            handle = start(runtime, self._name, self._attributes, self._input)
            plan = runtime.plan(self._name, self._kind, self._evaluators, self._expected, self._attributes)
            if plan is not None:
                adopt_plan(handle, plan)
            elif self._expected is not _NOT_SET and not callable(self._expected):
                handle.set_expected(self._expected)
        except Exception:
            internal_error("span.__enter__")
            return Span(INVALID_SPAN, None)
        self._handle = handle
        return handle

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        handle, self._handle = self._handle, None
        if handle is None:
            return
        plan = handle._plan
        if exc is None and plan is not None and (handle._output_set or plan.runs):
            # a block that set no output still has a run to score: its string evaluators skip
            output = handle._output if handle._output_set else FROM_RUN
            score(handle, output, time.time_ns(), (handle._input,), {}, BLOCK_BINDER)
        else:
            finish(handle, exc)

    async def __aenter__(self) -> Span:
        return self.__enter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)


class _BlockBinder:
    """The arguments of a ``span()`` block, for expected-output callables and datasets: its input."""

    def input(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return args[0] if args else None

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        value = self.input(args, kwargs)
        return dict(value) if isinstance(value, Mapping) else {"input": value}


BLOCK_BINDER = _BlockBinder()


def finish(handle: Span, exception: BaseException | None, end_time: int | None = None) -> None:
    """Detach ``handle``, record ``exception`` if any, and end the span. Never raises."""
    try:
        handle._detach()
    except Exception:
        internal_error("span: detach")
    _LAST.set(handle)  # in the caller's context: `last_span()` finds it
    try:
        if exception is None:
            _mark_ok(handle._otel)
        else:
            _record_error(handle._otel, exception)
    except Exception:
        internal_error("span: status")
    try:
        handle._otel.end(end_time)
    except Exception:
        internal_error("span: end")


def static_attributes(
    name: str, kind: str, attributes: Mapping[str, AttributeValue] | None
) -> dict[str, AttributeValue]:
    """The attributes a span gets at start, from ``kind=`` and ``attributes=``; validated."""
    if not isinstance(kind, str) or kind.lower() not in sc.SPAN_KINDS:
        raise ConfigError("kind", kind, ", ".join(sc.SPAN_KINDS))
    span_kind, operation, name_key = sc.SPAN_KINDS[kind.lower()]
    result: dict[str, AttributeValue] = {sc.SPAN_KIND: span_kind}
    if operation:
        result[sc.GEN_AI_OPERATION_NAME] = operation
    if name_key:
        result[name_key] = name
    for key, value in (attributes or {}).items():
        if not isinstance(key, str):
            raise ConfigError("attributes", key, "string attribute names")
        result[key] = attribute_value(value, _DEFAULT_CAPTURE)
    return result
