"""Generators and async generators: one span over the whole iteration.

The span starts at the first step and ends on exhaustion, ``close()``, an error or garbage
collection. It is current only while a step runs: every step runs inside one private context
(a copy of the caller's, made at the first step, where the span is current), so nothing leaks
into the consumer between steps, and context changes made by the generator's own code (a
span around a ``yield``) carry from step to step. Text chunks are kept whole as the output
(a streamed answer is scored whole), other items up to ``max_generator_items``; only a
stream that ran to its end is scored.

Per yielded item the wrappers do the least they can: one ``Context.run`` of the step (each
resumption of an async step runs there) and, when the output is kept, one ``list.append`` of
a text chunk (`_Items` counts them in batches; other items go through `_Items.add`).
"""

from __future__ import annotations

import contextvars
import functools
import sys
import time
import types
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Generator
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
    Never raises: it runs on the consumer's thread for every item.

    The wrappers append exact ``str`` chunks themselves, with the list's own ``append`` (a
    method call per item here cost more than the rest of the wrapper's step): `settle` counts
    them, every `SETTLE_EVERY` chunks and before `add` reads the items, and drops those past
    the cap, so the kept text is the same as if each chunk had been checked. At the end,
    `output` and `total` read the chunks not settled yet without a pass over them.
    """

    __slots__ = ("chars", "count", "items", "limit", "settled", "text")

    def __init__(self, limit: int) -> None:
        self.items: list[Any] = []
        self.count = 0
        self.chars = 0
        self.settled = 0  # items[settled:] were appended by a wrapper and are not counted yet
        self.text = True
        self.limit = limit

    def sink(self) -> Callable[[str], None] | None:
        """Where a wrapper appends the next exact ``str`` chunk; None when `add` must see it."""
        return self.items.append if self.text and self.chars < _TEXT_CAP else None

    def settle(self) -> Callable[[str], None] | None:
        """Count the chunks appended since the last call; keep none after the one that reached the cap."""
        items, start = self.items, self.settled
        if len(items) > start:
            self.count += len(items) - start
            chars = self.chars + sum(map(len, items[start:]))
            if chars >= _TEXT_CAP:  # as checking each chunk would: the one that reached it stays
                chars = self.chars
                for index in range(start, len(items)):
                    if chars >= _TEXT_CAP:
                        del items[index:]
                        break
                    chars += len(items[index])
            self.chars = chars
            self.settled = len(items)
        return self.sink()

    def add(self, item: Any) -> Callable[[str], None] | None:
        """Keep ``item`` (anything a wrapper does not append itself); returns `sink`."""
        try:
            self.settle()
            self.count += 1
            if self.text and isinstance(item, str):
                if self.chars < _TEXT_CAP:
                    # A str subclass may override __len__ (even to raise): keep its plain text.
                    text = item if type(item) is str else str.__str__(item)
                    self.items.append(text)
                    self.chars += len(text)
            else:
                self.text = False
                if len(self.items) < self.limit:
                    self.items.append(item)
                elif len(self.items) > self.limit:  # a text stream that turned out mixed
                    del self.items[self.limit :]
            self.settled = len(self.items)
            return self.sink()
        except Exception:
            internal_error("trace: generator item")
            return None

    def total(self) -> int:
        """How many items were yielded: those counted, and the chunks appended since."""
        return self.count + len(self.items) - self.settled

    def output(self) -> Any:
        """The joined text of a text stream, else the kept items."""
        if self.items and self.text:
            text = "".join(self.items)
            if len(text) < _TEXT_CAP:  # no chunk started at or past the cap: none to drop
                return text
            self.settle()
            return "".join(self.items)
        return self.items


SETTLE_EVERY = 64
_TEXT_CAP = 10_000_000


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
                attributes: dict[str, AttributeValue] = {sc.OUTPUT_ITEMS: items.total()}
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
        finish(handle, exc)


def _begin(
    runtime: _runtime.Runtime, meta: Meta, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[Span, contextvars.Context, _Items | None]:
    """Start the stream's span inside a private copy of the caller's context, where it stays current.

    The caller's context is never touched (no attach and detach there), and an enclosing
    `expect` block's value is taken in the private context: hidden from the calls the
    generator makes, as from those of a traced function.
    """
    context = contextvars.copy_context()
    handle = context.run(begin, runtime, meta, args, kwargs)
    # The tokens belong to that context, which is dropped with the span: never reset them.
    handle._context_token = handle._active_token = handle._expect_token = None
    items = _Items(runtime.settings.max_generator_items) if meta.capture_output or handle._plan else None
    return handle, context, items


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
            handle, context, items = _begin(runtime, meta, args, kwargs)
        except Exception:
            internal_error("trace: start")
            return (yield from gen)
        run, send = context.run, gen.send
        keep = items.sink() if items is not None else None
        unsettled = SETTLE_EVERY
        step: Callable[[Any], Any] = send
        arg: Any = None
        while True:
            try:
                item = run(step, arg)
            except StopIteration as stop:
                _end_stream(handle, meta, items, None, False, (args, kwargs))
                return stop.value
            except BaseException as exc:
                _end_stream(handle, meta, items, exc, False)
                raise
            if items is not None:
                if keep is not None and type(item) is str:
                    keep(item)
                    unsettled -= 1
                    if not unsettled:
                        keep, unsettled = items.settle(), SETTLE_EVERY
                else:
                    keep = items.add(item)
            try:
                arg = yield item
                step = send
            except GeneratorExit:
                try:
                    run(gen.close)
                except BaseException as exc:
                    _end_stream(handle, meta, items, exc, True)
                    raise
                _end_stream(handle, meta, items, None, True)
                raise
            except BaseException as exc:
                step, arg = gen.throw, exc

    return wrapper


def _awaited(run: Callable[..., Any], awaitable: Any) -> Awaitable[Any]:
    """Await ``awaitable`` with each of its resumptions run by ``run`` (a ``Context.run``)."""

    async def drive() -> Any:
        try:
            signal = run(awaitable.send, None)
        except StopIteration as stop:
            return stop.value
        return await _rest(run, awaitable, signal)

    return drive()


@types.coroutine
def _rest(run: Callable[..., Any], awaitable: Any, signal: Any) -> Generator[Any, Any, Any]:
    """The rest of an awaitable that suspended at ``signal``, each resumption run by ``run``.

    What it yields to the event loop (futures) passes through, and what the loop sends or
    throws in (results, a cancellation) reaches it, as ``yield from`` would.
    """
    while True:
        try:
            value = yield signal
            step = awaitable.send
        except GeneratorExit:
            run(awaitable.close)
            raise
        except BaseException as exc:
            step, value = awaitable.throw, exc
        try:
            signal = run(step, value)
        except StopIteration as stop:
            return stop.value


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
            handle, context, items = _begin(runtime, meta, args, kwargs)
        except Exception:
            internal_error("trace: start")
            async for item in _passthrough(agen):
                yield item
            return
        run, asend = context.run, agen.asend
        keep = items.sink() if items is not None else None
        unsettled = SETTLE_EVERY
        step: Callable[[Any], Coroutine[Any, Any, Any]] = asend
        arg: Any = None
        while True:
            try:
                # A step runs in the private context: its first resumption here, where most
                # steps end (an item ready without waiting), the rest in `_rest`.
                awaitable = step(arg)
                try:
                    signal = run(awaitable.send, None)
                except StopIteration as stop:
                    item = stop.value
                else:
                    item = await _rest(run, awaitable, signal)
            except StopAsyncIteration:
                _end_stream(handle, meta, items, None, False, (args, kwargs))
                return
            except BaseException as exc:
                # A cancellation thrown in at a yield means the consumer went away (an abandoned
                # stream is closed that way at loop shutdown): closed early, not failed.
                abandoned = exc is arg and _cancelled(exc)
                _end_stream(handle, meta, items, None if abandoned else exc, abandoned)
                raise
            if items is not None:
                if keep is not None and type(item) is str:
                    keep(item)
                    unsettled -= 1
                    if not unsettled:
                        keep, unsettled = items.settle(), SETTLE_EVERY
                else:
                    keep = items.add(item)
            try:
                arg = yield item
                step = asend
            except GeneratorExit:
                await _aclose(agen, run, handle, meta, items)
                raise
            except BaseException as exc:
                step, arg = agen.athrow, exc

    return wrapper


async def _aclose(
    agen: AsyncGenerator[Any, Any], run: Callable[..., Any], handle: Span, meta: Meta, items: _Items | None
) -> None:
    try:
        await _awaited(run, agen.aclose())
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
