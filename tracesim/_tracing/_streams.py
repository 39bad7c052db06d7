"""Generators and async generators: one span over the whole iteration.

The span starts at the first step and ends on exhaustion, ``close()``, an error or garbage
collection. It is current only while a step runs: sync generators run every step inside one
private context (so context changes made by the generator's own code, such as a span around
a ``yield``, carry from step to step), async generators attach the span around each step.
Text chunks are kept whole as the output (a streamed answer is scored whole), other items up
to ``max_generator_items``; only a stream that ran to its end is scored.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from typing import Any, ParamSpec

from opentelemetry.util.types import AttributeValue

from tracesim import _runtime
from tracesim import _semconv as sc
from tracesim._capture import captured_attributes
from tracesim._internal_errors import internal_error
from tracesim._scoring import NOT_SET as _NOT_SET
from tracesim._tracing._calls import Meta, begin
from tracesim._tracing._span import Span, finish, score

__all__ = ["wrap_async_generator", "wrap_generator"]

P = ParamSpec("P")


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
                # A str subclass may override __len__ (even to raise): keep its plain text.
                text = item if type(item) is str else str.__str__(item)
                self.items.append(text)
                self.chars += len(text)
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


def _keep(items: _Items, item: Any) -> None:
    try:
        items.add(item)
    except Exception:
        internal_error("trace: generator item")


def _end_stream(
    handle: Span,
    meta: Meta,
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


def _stream_items(runtime: _runtime.Runtime, meta: Meta, handle: Span) -> _Items | None:
    if meta.capture_output or handle._plan is not None:
        return _Items(runtime.settings.max_generator_items)
    return None


def wrap_generator(
    fn: Callable[P, Generator[Any, Any, Any]], meta: Meta
) -> Callable[P, Generator[Any, Any, Any]]:
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> Generator[Any, Any, Any]:
        runtime = _runtime.active()
        gen = fn(*args, **kwargs)  # creating a generator runs none of its code
        if runtime is None:
            return (yield from gen)
        try:
            handle = begin(runtime, meta, args, kwargs)
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
                _keep(items, item)
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


def wrap_async_generator(
    fn: Callable[P, AsyncGenerator[Any, Any]], meta: Meta
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
            handle = begin(runtime, meta, args, kwargs)
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
                # A cancellation thrown in at a yield means the consumer went away (an abandoned
                # stream is closed that way at loop shutdown): closed early, not failed.
                abandoned = exc is arg and _cancelled(exc)
                _end_stream(handle, meta, items, None if abandoned else exc, abandoned)
                raise
            handle._detach()
            if items is not None:
                _keep(items, item)
            try:
                arg = yield item
                step = agen.asend
            except GeneratorExit:
                await _aclose(agen, handle, meta, items)
                raise
            except BaseException as exc:
                step, arg = agen.athrow, exc

    return wrapper


async def _aclose(agen: AsyncGenerator[Any, Any], handle: Span, meta: Meta, items: _Items | None) -> None:
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


def _cancelled(exc: BaseException) -> bool:
    """Whether ``exc`` is asyncio's cancellation; asyncio is not imported for it (import time):
    where asyncio was never imported, no asyncio task can have been cancelled."""
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(exc, asyncio.CancelledError)
