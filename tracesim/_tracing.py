"""`@trace`: one span per call, for functions, methods, coroutines and generators.

Everything that can be decided once is decided at decoration time: the kind of callable, the
span name, the static attributes and how arguments become the input. A call then does the
least work possible: bind, capture, start, call, capture, end.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar, overload

from opentelemetry.util.types import AttributeValue

from tracesim import _runtime
from tracesim import _semconv as sc
from tracesim._expect import NOT_SET as _NOT_SET
from tracesim._guard import internal_error
from tracesim._selection import Plan, build_evaluators
from tracesim._span import (
    Span,
    adopt_plan,
    captured_attributes,
    finish,
    score,
    start,
    static_attributes,
)

__all__ = ["trace"]

P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])

_PARAMETER_KINDS_SIMPLE = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class Binder:
    """Turns call arguments into the span input, computed from the signature once.

    Arguments are bound to parameter names, defaults applied and ``self``/``cls`` dropped;
    one parameter is recorded as its value, several as a mapping of names to values.
    """

    __slots__ = ("count", "names", "signature", "simple", "single", "skip")

    def __init__(self, fn: Callable[..., Any]) -> None:
        try:
            self.signature: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            self.signature = None
        params = list(self.signature.parameters.values()) if self.signature else []
        first_is_self = bool(params) and params[0].name in ("self", "cls")
        self.skip = 1 if first_is_self and params[0].kind in _PARAMETER_KINDS_SIMPLE else 0
        self.names = [p.name for p in params[self.skip :]]
        self.count = len(params)
        self.simple = all(p.kind in _PARAMETER_KINDS_SIMPLE for p in params)
        self.single = len(self.names) == 1 and params[-1].kind in _PARAMETER_KINDS_SIMPLE

    def input(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The input to record: the one argument, or all of them by name; NOT_SET without parameters."""
        if self.signature is None:
            return {"args": list(args), "kwargs": kwargs} if kwargs else list(args)
        if not self.names:
            return _NOT_SET
        if self.simple and not kwargs and len(args) == self.count:  # the common case, without inspect
            skip = self.skip
            return args[skip] if self.single else dict(zip(self.names, args[skip:], strict=True))
        arguments = self.arguments(args, kwargs)
        if self.single and self.names[0] in arguments:
            return arguments[self.names[0]]
        return arguments

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Every argument by parameter name, defaults applied, ``self``/``cls`` dropped."""
        if self.signature is None:
            return {"args": list(args), "kwargs": kwargs}
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError:  # the call itself fails the same way; record what was passed
            return {"args": list(args[self.skip :]), "kwargs": kwargs}
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        if self.skip:
            arguments.pop(next(iter(self.signature.parameters)), None)
        return arguments


class _Meta:
    """What a decorated function needs per call, computed once."""

    __slots__ = (
        "attributes",
        "binder",
        "capture_input",
        "capture_output",
        "evaluators",
        "expected",
        "kind",
        "name",
        "plans",
    )

    def __init__(
        self,
        fn: Callable[..., Any],
        name: str | None,
        kind: str,
        capture_input: bool,
        capture_output: bool,
        attributes: Mapping[str, Any] | None,
        evaluators: Sequence[Any],
        expected: Any,
    ) -> None:
        self.name = name or span_name(fn)
        self.kind = kind.lower() if isinstance(kind, str) else kind
        self.attributes = static_attributes(self.name, kind, attributes)
        self.binder = Binder(fn)
        self.capture_input = capture_input
        self.capture_output = capture_output
        self.evaluators = build_evaluators(evaluators, self.name) if evaluators else ()
        self.expected = expected
        # (runtime, plan) for the runtime that computed it: rules come from configure()
        self.plans: tuple[Any, Plan | None] = (None, None)

    def plan(self, runtime: _runtime.Runtime) -> Plan | None:
        cached_runtime, plan = self.plans
        if cached_runtime is not runtime:
            plan = runtime.plan(self.name, self.kind, self.evaluators, self.expected)
            self.plans = (runtime, plan)
        return plan


def span_name(fn: Callable[..., Any]) -> str:
    """``Class.method`` for methods, the function's name otherwise (no ``<locals>`` noise)."""
    qualname: str = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return qualname.rsplit("<locals>.", 1)[-1]


def _begin(runtime: _runtime.Runtime, meta: _Meta, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Span:
    value = _NOT_SET
    if meta.capture_input and runtime.capture.enabled:
        value = meta.binder.input(args, kwargs)
    handle = start(runtime, meta.name, meta.attributes, value)
    plan = meta.plan(runtime)
    if plan is not None:
        adopt_plan(handle, plan)
    return handle


def _succeed(handle: Span, meta: _Meta, output: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    end_ns = time.time_ns()  # the call's end, whatever scoring takes afterwards
    try:
        if meta.capture_output and not handle._output_set:
            handle.set_output(output)
            handle._output_set = False
    except Exception:
        internal_error("trace: output")
    if handle._plan is None:
        finish(handle, None, end_ns)
        return
    if handle._output_set:
        output = handle._output  # what set_output() recorded is what gets scored
    score(handle, output, end_ns, args, kwargs, meta.binder)


# ---------------------------------------------------------------- wrappers, one per kind of callable


def _wrap_function(fn: Callable[P, R], meta: _Meta) -> Callable[P, R]:
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        runtime = _runtime.active()
        if runtime is None:
            return fn(*args, **kwargs)
        try:
            handle = _begin(runtime, meta, args, kwargs)
        except Exception:
            internal_error("trace: start")
            return fn(*args, **kwargs)
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            finish(handle, exc)
            raise
        _succeed(handle, meta, result, args, kwargs)
        return result

    return wrapper


def _wrap_coroutine(fn: Callable[P, Awaitable[R]], meta: _Meta) -> Callable[P, Awaitable[R]]:
    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        runtime = _runtime.active()
        if runtime is None:
            return await fn(*args, **kwargs)
        try:
            handle = _begin(runtime, meta, args, kwargs)
        except Exception:
            internal_error("trace: start")
            return await fn(*args, **kwargs)
        try:
            result = await fn(*args, **kwargs)
        except BaseException as exc:  # CancelledError included: the call did not complete
            finish(handle, exc)
            raise
        _succeed(handle, meta, result, args, kwargs)
        return result

    return wrapper


class _Items:
    """Yielded items kept as a generator's output.

    Text chunks (a streamed answer) are kept whole, up to `_TEXT_CAP` characters, so the
    output scored and recorded is the full answer; other items are kept up to ``limit``.
    """

    __slots__ = ("chars", "count", "items", "limit", "text")

    def __init__(self, limit: int) -> None:
        self.items: list[Any] = []
        self.count = 0
        self.chars = 0
        self.text = True
        self.limit = limit

    def add(self, item: Any) -> None:
        self.count += 1
        if self.text and isinstance(item, str):
            if self.chars < _TEXT_CAP:
                self.items.append(item)
                self.chars += len(item)
            return
        self.text = False
        if len(self.items) < self.limit:
            self.items.append(item)
        elif len(self.items) > self.limit:  # a text stream that turned out mixed
            del self.items[self.limit :]

    def output(self) -> Any:
        if self.items and self.text:
            return "".join(self.items)
        return self.items


_TEXT_CAP = 10_000_000


def _end_stream(
    handle: Span,
    meta: _Meta,
    items: _Items | None,
    exc: BaseException | None,
    closed: bool,
    call: tuple[tuple[Any, ...], dict[str, Any]] | None = None,
) -> None:
    end_ns = time.time_ns()
    output: Any = _NOT_SET
    try:
        if items is not None:
            output = handle._output if handle._output_set else items.output()
            options = handle.capture
            if options is not None:
                attributes: dict[str, AttributeValue] = {sc.OUTPUT_ITEMS: items.count}
                if closed:
                    attributes[sc.GENERATOR_CLOSED_EARLY] = True
                if meta.capture_output and not handle._output_set:
                    attributes.update(
                        captured_attributes(
                            output, sc.OUTPUT_VALUE, sc.OUTPUT_MIME_TYPE, sc.OUTPUT_ORIGINAL_CHARS, options
                        )
                    )
                handle.otel_span.set_attributes(attributes)
    except Exception:
        internal_error("trace: generator output")
    # Only a stream that ran to its end is scored: a partial answer would score unfairly.
    if (
        exc is None
        and not closed
        and call is not None
        and handle._plan is not None
        and output is not _NOT_SET
    ):
        score(handle, output, end_ns, call[0], call[1], meta.binder)
    else:
        finish(handle, exc, end_ns)


def _stream_items(runtime: _runtime.Runtime, meta: _Meta, handle: Span) -> _Items | None:
    if meta.capture_output or handle._plan is not None:
        return _Items(runtime.settings.max_generator_items)
    return None


def _wrap_generator(
    fn: Callable[P, Generator[Any, Any, Any]], meta: _Meta
) -> Callable[P, Generator[Any, Any, Any]]:
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> Generator[Any, Any, Any]:
        runtime = _runtime.active()
        gen = fn(*args, **kwargs)  # creating a generator runs none of its code
        if runtime is None:
            return (yield from gen)
        try:
            handle = _begin(runtime, meta, args, kwargs)
            handle._detach()
            items = _stream_items(runtime, meta, handle)
            # Every step runs in one private context where the span is current: nothing leaks
            # into the consumer between steps, and context changes made by the generator's
            # own code (a span around a yield) carry from one step to the next.
            context = handle._private_context()
        except Exception:
            internal_error("trace: start")
            return (yield from gen)
        step: Callable[[Any], Any] = gen.send
        arg: Any = None
        while True:
            try:
                item = context.run(step, arg)
            except StopIteration as stop:
                _end_stream(handle, meta, items, None, False, (args, kwargs))
                return stop.value
            except BaseException as exc:
                _end_stream(handle, meta, items, exc, False)
                raise
            if items is not None:
                items.add(item)
            try:
                arg = yield item
                step = gen.send
            except GeneratorExit:
                try:
                    context.run(gen.close)
                except BaseException as exc:
                    _end_stream(handle, meta, items, exc, True)
                    raise
                _end_stream(handle, meta, items, None, True)
                raise
            except BaseException as exc:
                step, arg = gen.throw, exc

    return wrapper


def _wrap_async_generator(
    fn: Callable[P, AsyncGenerator[Any, Any]], meta: _Meta
) -> Callable[P, AsyncGenerator[Any, Any]]:
    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> AsyncGenerator[Any, Any]:
        runtime = _runtime.active()
        agen = fn(*args, **kwargs)
        if runtime is None:
            async for item in _passthrough(agen):
                yield item
            return
        try:
            handle = _begin(runtime, meta, args, kwargs)
            handle._detach()
            items = _stream_items(runtime, meta, handle)
        except Exception:
            internal_error("trace: start")
            async for item in _passthrough(agen):
                yield item
            return
        step: Callable[[Any], Awaitable[Any]] = agen.asend
        arg: Any = None
        while True:
            handle._attach()
            try:
                item = await step(arg)
            except StopAsyncIteration:
                _end_stream(handle, meta, items, None, False, (args, kwargs))
                return
            except BaseException as exc:
                _end_stream(handle, meta, items, exc, False)
                raise
            handle._detach()
            if items is not None:
                items.add(item)
            try:
                arg = yield item
                step = agen.asend
            except GeneratorExit:
                await _aclose(agen, handle, meta, items)
                raise
            except BaseException as exc:
                step, arg = agen.athrow, exc

    return wrapper


async def _aclose(agen: AsyncGenerator[Any, Any], handle: Span, meta: _Meta, items: _Items | None) -> None:
    handle._attach()
    try:
        await agen.aclose()
    except BaseException as exc:
        _end_stream(handle, meta, items, exc, True)
        raise
    _end_stream(handle, meta, items, None, True)


async def _passthrough(agen: AsyncGenerator[Any, Any]) -> AsyncGenerator[Any, Any]:
    """Forward values, exceptions and close to ``agen`` (``yield from`` for async generators)."""
    step: Callable[[Any], Awaitable[Any]] = agen.asend
    arg: Any = None
    while True:
        try:
            item = await step(arg)
        except StopAsyncIteration:
            return
        try:
            arg = yield item
            step = agen.asend
        except GeneratorExit:
            await agen.aclose()
            raise
        except BaseException as exc:
            step, arg = agen.athrow, exc


# ---------------------------------------------------------------- the decorator


def _decorate(fn: Any, options: dict[str, Any]) -> Any:
    if isinstance(fn, (classmethod, staticmethod)):
        return type(fn)(_decorate(fn.__func__, options))
    if not callable(fn):
        raise TypeError(f"@tracesim.trace needs a function or method, got {type(fn).__name__}")
    meta = _Meta(fn, **options)
    if inspect.isasyncgenfunction(fn):
        return _wrap_async_generator(fn, meta)
    if inspect.isgeneratorfunction(fn):
        return _wrap_generator(fn, meta)
    if inspect.iscoroutinefunction(fn):
        return _wrap_coroutine(fn, meta)
    return _wrap_function(fn, meta)


@overload
def trace(fn: F, /) -> F: ...


@overload
def trace(
    *,
    name: str | None = None,
    kind: str = "chain",
    capture_input: bool = True,
    capture_output: bool = True,
    attributes: Mapping[str, Any] | None = None,
    evaluators: Sequence[Any] = (),
    expected: Any = _NOT_SET,
) -> Callable[[F], F]: ...


def trace(
    fn: Any = None,
    /,
    *,
    name: str | None = None,
    kind: str = "chain",
    capture_input: bool = True,
    capture_output: bool = True,
    attributes: Mapping[str, Any] | None = None,
    evaluators: Sequence[Any] = (),
    expected: Any = _NOT_SET,
) -> Any:
    """Record every call of a function as a span, with its input and output; score the output.

    Works bare (``@trace``) or with arguments, on functions, methods, class and static
    methods, ``async def`` functions, generators and async generators. The wrapped function
    keeps its signature for type checkers. Exceptions are recorded and propagate unchanged.

    With ``evaluators``, every call's output is scored against its expected output in the
    background (see `tracesim.configure`'s ``scoring_mode``); the caller does not wait, and
    the results land on the call's span.

    Args:
        name: Span name; default ``Class.method`` for methods, else the function's name.
        kind: ``agent``, ``tool``, ``chain`` (default), ``llm``, ``retriever``, ``embedding``
            or ``evaluator``; sets ``openinference.span.kind`` and the GenAI operation.
        capture_input: Record the arguments as ``input.value``.
        capture_output: Record the return value (or the yielded items) as ``output.value``.
        attributes: Static attributes added to every span of this function.
        evaluators: Evaluators (objects from `tracesim.evaluators`, config mappings such as
            ``{"type": "levenshtein", "threshold": 0.8}``, or ``"rouge:rouge_type=rougeL"``).
        expected: The expected output: a value, a callable taking the function's arguments,
            or a `tracesim.Golden` dataset. ``with tracesim.expect(...)`` and
            `Span.set_expected` override it per call.

    Raises:
        ConfigError: ``kind``, ``attributes`` or ``evaluators`` are invalid (at decoration time).

    Example:
        >>> import tracesim
        >>> from tracesim.evaluators import Levenshtein
        >>> @tracesim.trace(kind="agent", evaluators=[Levenshtein(threshold=0.8)], expected="Warsaw")
        ... def answer(question: str) -> str:
        ...     return "Warsaw"
        >>> answer("Where was Marie Curie born?")
        'Warsaw'
    """
    options = {
        "name": name,
        "kind": kind,
        "capture_input": capture_input,
        "capture_output": capture_output,
        "attributes": attributes,
        "evaluators": evaluators,
        "expected": expected,
    }
    if fn is not None:
        return _decorate(fn, options)

    def decorator(f: Any) -> Any:
        return _decorate(f, options)

    return decorator
