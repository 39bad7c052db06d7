"""``@evaluator``: turn a plain function into an Evaluator."""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, overload

from tracesim.evaluators._base import DEFAULT, Evaluator, MeasureValue, _Default
from tracesim.evaluators._result import EvalResult

__all__ = ["AsyncFunctionEvaluator", "FunctionEvaluator", "evaluator"]

MetricFn = Callable[..., MeasureValue]
AsyncMetricFn = Callable[..., Awaitable[MeasureValue]]


class FunctionEvaluator(Evaluator):
    """An evaluator whose metric is a plain function ``f(output, expected, *, input=None)``.

    Built by :func:`evaluator`; the function may return a float, a bool, a
    :class:`Measurement` or an :class:`EvalResult`.

    Example:
        >>> shorter = FunctionEvaluator(lambda output, expected: len(output) <= len(expected), name="shorter")
        >>> shorter.evaluate("hi", "hello").passed
        True
    """

    type_name = "function"

    def __init__(
        self,
        fn: MetricFn,
        *,
        requires_expected: bool = True,
        accepts_input: bool | None = None,
        **shared: Any,
    ) -> None:
        self._fn = fn
        self._accepts_input = _accepts_input(fn) if accepts_input is None else accepts_input
        self.requires_expected = requires_expected  # type: ignore[misc]
        super().__init__(**shared)
        functools.update_wrapper(self, fn, updated=())  # type: ignore[arg-type]

    def _default_name(self) -> str:
        return str(getattr(self._fn, "__name__", self.type_name))

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> MeasureValue:
        if self._accepts_input:
            return self._fn(output, expected, input=input)
        return self._fn(output, expected)

    def __repr__(self) -> str:
        return f"<evaluator {self.name!r} threshold={self.threshold!r} wrapping {self._fn!r}>"


class AsyncFunctionEvaluator(FunctionEvaluator):
    """A :class:`FunctionEvaluator` around an ``async def`` metric (``is_async`` is True).

    Example:
        >>> async def same_length(output, expected):
        ...     return len(output) == len(expected)
        >>> checker = AsyncFunctionEvaluator(same_length)
        >>> checker.is_async, checker.evaluate("abc", "xyz").score
        (True, 1.0)
    """

    _afn: AsyncMetricFn

    def __init__(self, fn: AsyncMetricFn, **options: Any) -> None:
        super().__init__(fn, **options)  # type: ignore[arg-type]
        self._afn = fn

    async def aevaluate(self, output: Any, expected: Any, *, input: Any = None) -> EvalResult:
        if expected is None and self.requires_expected:
            return self._skipped()
        start = time.perf_counter()
        try:
            if self._accepts_input:
                value = await self._afn(output, expected, input=input)
            else:
                value = await self._afn(output, expected)
        except Exception as exc:
            return self._error(exc, time.perf_counter() - start)
        return self._finish(value, time.perf_counter() - start)

    def evaluate(self, output: Any, expected: Any, *, input: Any = None) -> EvalResult:
        """Run the async metric to completion (outside a running event loop only)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.aevaluate(output, expected, input=input))
        problem = RuntimeError(f"evaluator {self.name!r} is async: await aevaluate() inside an event loop")
        return self._error(problem, 0.0)


def _accepts_input(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True
    return "input" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


@overload
def evaluator(fn: MetricFn, /) -> FunctionEvaluator: ...


@overload
def evaluator(
    *,
    name: str | None = None,
    threshold: float | _Default | None = DEFAULT,
    requires_expected: bool = True,
    sample_rate: float = 1.0,
    timeout_s: float | None = None,
    max_concurrency: int | None = None,
) -> Callable[[MetricFn], FunctionEvaluator]: ...


def evaluator(
    fn: MetricFn | None = None,
    /,
    *,
    name: str | None = None,
    threshold: float | _Default | None = DEFAULT,
    requires_expected: bool = True,
    sample_rate: float = 1.0,
    timeout_s: float | None = None,
    max_concurrency: int | None = None,
) -> FunctionEvaluator | Callable[[MetricFn], FunctionEvaluator]:
    """Make an evaluator of a function ``f(output, expected, *, input=None)``.

    The function returns a float (compared with ``threshold``), a bool (the verdict
    itself; score 1.0 or 0.0), a :class:`Measurement` or an :class:`EvalResult`. The
    evaluator's name defaults to the function's name; the ``input`` keyword is optional.
    ``async def`` functions give an async evaluator (``is_async`` is True). Works bare
    (``@evaluator``) and with arguments.

    Example:
        >>> @evaluator(threshold=0.5)
        ... def mentions_paris(output, expected):
        ...     return float("paris" in output.lower())
        >>> mentions_paris.evaluate("It is Paris.", "Paris").label
        'pass'
    """
    options: dict[str, Any] = {
        "name": name,
        "threshold": threshold,
        "requires_expected": requires_expected,
        "sample_rate": sample_rate,
        "timeout_s": timeout_s,
        "max_concurrency": max_concurrency,
    }

    def wrap(function: MetricFn) -> FunctionEvaluator:
        if inspect.iscoroutinefunction(function):
            return AsyncFunctionEvaluator(function, **options)
        return FunctionEvaluator(function, **options)

    if fn is not None:
        return wrap(fn)
    return wrap
