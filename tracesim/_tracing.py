"""`@trace`: one span per call, for functions, methods, coroutines and generators.

Everything that can be decided once is decided at decoration time: the kind of callable, the
span name, the static attributes and how arguments become the input. A call then does the
least work possible: bind, capture, start, call, capture, end.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar, overload

from opentelemetry.util.types import AttributeValue

from tracesim import _runtime
from tracesim import _semconv as sc
from tracesim._guard import internal_error
from tracesim._span import _NOT_SET, Span, captured_attributes, finish, start, static_attributes

__all__ = ["trace"]

P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])

_PARAMETER_KINDS_SIMPLE = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class _Meta:
    """What a decorated function needs per call, computed once."""

    __slots__ = ("attributes", "bind", "capture_input", "capture_output", "evaluators", "name")

    def __init__(
        self,
        fn: Callable[..., Any],
        name: str | None,
        kind: str,
        capture_input: bool,
        capture_output: bool,
        attributes: Mapping[str, Any] | None,
        evaluators: Sequence[Any],
    ) -> None:
        self.name = name or span_name(fn)
        self.attributes = static_attributes(self.name, kind, attributes)
        self.bind = make_binder(fn)
        self.capture_input = capture_input
        self.capture_output = capture_output
        self.evaluators = tuple(evaluators)


def span_name(fn: Callable[..., Any]) -> str:
    """``Class.method`` for methods, the function's name otherwise (no ``<locals>`` noise)."""
    qualname: str = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return qualname.rsplit("<locals>.", 1)[-1]


def make_binder(fn: Callable[..., Any]) -> Callable[[tuple[Any, ...], dict[str, Any]], Any]:
    """A function turning call arguments into the span input.

    Arguments are bound to parameter names, defaults applied and ``self``/``cls`` dropped;
    one parameter is recorded as its value, several as a mapping of names to values.
    """
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return lambda args, kwargs: {"args": list(args), "kwargs": kwargs} if kwargs else list(args)
    params = list(signature.parameters.values())
    skip = (
        1 if params and params[0].name in ("self", "cls") and params[0].kind in _PARAMETER_KINDS_SIMPLE else 0
    )
    names = [p.name for p in params[skip:]]
    count = len(params)
    simple = all(p.kind in _PARAMETER_KINDS_SIMPLE for p in params)
    single = len(names) == 1 and params[-1].kind in _PARAMETER_KINDS_SIMPLE
    if not names:
        return lambda args, kwargs: _NOT_SET  # nothing to record

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if simple and not kwargs and len(args) == count:  # the common case, without inspect
            return args[skip] if single else dict(zip(names, args[skip:], strict=True))
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:  # the call itself will fail the same way; record what was passed
            return {"args": list(args[skip:]), "kwargs": kwargs}
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        if skip:
            arguments.pop(params[0].name, None)
        if single and names[0] in arguments:
            return arguments[names[0]]
        return arguments

    return bind


def _begin(runtime: _runtime.Runtime, meta: _Meta, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Span:
    value = _NOT_SET
    if meta.capture_input and runtime.capture.enabled:
        value = meta.bind(args, kwargs)
    handle = start(runtime, meta.name, meta.attributes, value)
    handle.evaluators = meta.evaluators
    return handle


def _succeed(handle: Span, meta: _Meta, output: Any) -> None:
    try:
        if meta.capture_output and not handle._output_set:
            handle.set_output(output)
            handle._output_set = False
    except Exception:
        internal_error("trace: output")
    finish(handle, None)


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
        _succeed(handle, meta, result)
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
        _succeed(handle, meta, result)
        return result

    return wrapper


class _Items:
    """Yielded items kept as a generator's output: at most ``limit`` of them."""

    __slots__ = ("count", "items", "limit")

    def __init__(self, limit: int) -> None:
        self.items: list[Any] = []
        self.count = 0
        self.limit = limit

    def add(self, item: Any) -> None:
        self.count += 1
        if len(self.items) < self.limit:
            self.items.append(item)

    def output(self) -> Any:
        if self.items and all(isinstance(i, str) for i in self.items):
            return "".join(self.items)
        return self.items


def _end_stream(
    handle: Span, meta: _Meta, items: _Items | None, exc: BaseException | None, closed: bool
) -> None:
    try:
        options = handle.capture
        if items is not None and options is not None:
            attributes: dict[str, AttributeValue] = {sc.OUTPUT_ITEMS: items.count}
            if closed:
                attributes[sc.GENERATOR_CLOSED_EARLY] = True
            if not handle._output_set:
                output = items.output()
                handle._output = output
                attributes.update(
                    captured_attributes(
                        output, sc.OUTPUT_VALUE, sc.OUTPUT_MIME_TYPE, sc.OUTPUT_ORIGINAL_CHARS, options
                    )
                )
            handle.otel_span.set_attributes(attributes)
    except Exception:
        internal_error("trace: generator output")
    finish(handle, exc)


def _stream_items(runtime: _runtime.Runtime, meta: _Meta) -> _Items | None:
    return _Items(runtime.settings.max_generator_items) if meta.capture_output else None


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
            handle._detach()  # the span is current only while a step runs
            items = _stream_items(runtime, meta)
        except Exception:
            internal_error("trace: start")
            return (yield from gen)
        step: Callable[[Any], Any] = gen.send
        arg: Any = None
        while True:
            handle._attach()
            try:
                item = step(arg)
            except StopIteration as stop:
                _end_stream(handle, meta, items, None, False)
                return stop.value
            except BaseException as exc:
                _end_stream(handle, meta, items, exc, False)
                raise
            handle._detach()
            if items is not None:
                items.add(item)
            try:
                arg = yield item
                step = gen.send
            except GeneratorExit:
                _close(gen, handle, meta, items)
                raise
            except BaseException as exc:
                step, arg = gen.throw, exc

    return wrapper


def _close(gen: Generator[Any, Any, Any], handle: Span, meta: _Meta, items: _Items | None) -> None:
    handle._attach()
    try:
        gen.close()
    except BaseException as exc:
        _end_stream(handle, meta, items, exc, True)
        raise
    _end_stream(handle, meta, items, None, True)


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
            items = _stream_items(runtime, meta)
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
                _end_stream(handle, meta, items, None, False)
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


def _decorate(
    fn: Any,
    name: str | None,
    kind: str,
    capture_input: bool,
    capture_output: bool,
    attributes: Mapping[str, Any] | None,
    evaluators: Sequence[Any],
) -> Any:
    if isinstance(fn, (classmethod, staticmethod)):
        inner = _decorate(fn.__func__, name, kind, capture_input, capture_output, attributes, evaluators)
        return type(fn)(inner)
    if not callable(fn):
        raise TypeError(f"@tracesim.trace needs a function or method, got {type(fn).__name__}")
    meta = _Meta(fn, name, kind, capture_input, capture_output, attributes, evaluators)
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
) -> Any:
    """Record every call of a function as a span, with its input and output.

    Works bare (``@trace``) or with arguments, on functions, methods, class and static
    methods, ``async def`` functions, generators and async generators. The wrapped function
    keeps its signature for type checkers. Exceptions are recorded and propagate unchanged.

    Args:
        name: Span name; default ``Class.method`` for methods, else the function's name.
        kind: ``agent``, ``tool``, ``chain`` (default), ``llm``, ``retriever``, ``embedding``
            or ``evaluator``; sets ``openinference.span.kind`` and the GenAI operation.
        capture_input: Record the arguments as ``input.value``.
        capture_output: Record the return value (or the yielded items) as ``output.value``.
        attributes: Static attributes added to every span of this function.
        evaluators: Evaluators that score every call's output.

    Raises:
        ConfigError: ``kind`` or ``attributes`` are invalid (at decoration time).

    Example:
        >>> import tracesim
        >>> @tracesim.trace(kind="agent")
        ... def answer(question: str) -> str:
        ...     return "Warsaw"
        >>> answer("Where was Marie Curie born?")
        'Warsaw'
    """
    if fn is not None:
        return _decorate(fn, name, kind, capture_input, capture_output, attributes, evaluators)

    def decorator(f: Any) -> Any:
        return _decorate(f, name, kind, capture_input, capture_output, attributes, evaluators)

    return decorator
