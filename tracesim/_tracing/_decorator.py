"""`@trace`: one span per call, for functions, methods, coroutines and generators.

The decorator branches once, at decoration time, on the kind of callable; generators are
wrapped in `_streams`, the rest here. Wrappers keep the function's metadata and signature.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar, overload

from tracesim import _runtime
from tracesim._internal_errors import internal_error
from tracesim._scoring import NOT_SET as _NOT_SET
from tracesim._tracing._calls import Meta, begin, succeed
from tracesim._tracing._span import finish
from tracesim._tracing._streams import wrap_async_generator, wrap_generator

__all__ = ["trace"]

P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])


# ---------------------------------------------------------------- wrappers, one per kind of callable


def _wrap_function(fn: Callable[P, R], meta: Meta) -> Callable[P, R]:
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        runtime = _runtime.active()
        if runtime is None:
            return fn(*args, **kwargs)
        try:
            handle = begin(runtime, meta, args, kwargs)
        except Exception:
            internal_error("trace: start")
            return fn(*args, **kwargs)
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            finish(handle, exc)
            raise
        succeed(handle, meta, result, args, kwargs)
        return result

    return wrapper


def _wrap_coroutine(fn: Callable[P, Awaitable[R]], meta: Meta) -> Callable[P, Awaitable[R]]:
    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        runtime = _runtime.active()
        if runtime is None:
            return await fn(*args, **kwargs)
        try:
            handle = begin(runtime, meta, args, kwargs)
        except Exception:
            internal_error("trace: start")
            return await fn(*args, **kwargs)
        try:
            result = await fn(*args, **kwargs)
        except BaseException as exc:  # CancelledError included: the call did not complete
            finish(handle, exc)
            raise
        succeed(handle, meta, result, args, kwargs)
        return result

    return wrapper


# ---------------------------------------------------------------- the decorator


def _decorate(fn: Any, options: dict[str, Any]) -> Any:
    if isinstance(fn, (classmethod, staticmethod)):
        return type(fn)(_decorate(fn.__func__, options))
    if not callable(fn):
        raise TypeError(f"@tracesim.trace needs a function or method, got {type(fn).__name__}")
    meta = Meta(fn, **options)
    if inspect.isasyncgenfunction(fn):
        return wrap_async_generator(fn, meta)
    if inspect.isgeneratorfunction(fn):
        return wrap_generator(fn, meta)
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
            `Span.set_expected` override it per call. Any of them may give a
            `tracesim.Expected` (an output and/or the tool calls the call should make): string
            evaluators are given its output, evaluators that score runs the whole of it.

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
