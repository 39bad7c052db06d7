"""Carrying the current span into threads.

Spans live in `contextvars`, which asyncio tasks inherit but threads do not: a function
submitted to a plain ``ThreadPoolExecutor`` starts with an empty context, so its spans become
new traces. These helpers copy the caller's context, explicitly, instead of patching the
standard library.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

__all__ = ["ContextThreadPoolExecutor", "propagate_context"]

P = ParamSpec("P")
R = TypeVar("R")


def propagate_context(fn: Callable[P, R]) -> Callable[P, R]:
    """Bind ``fn`` to a copy of the current context, for running it in another thread.

    Example:
        >>> import threading, tracesim
        >>> @tracesim.trace
        ... def fetch(url: str) -> str:
        ...     return "ok"
        >>> with tracesim.span("crawl"):
        ...     t = threading.Thread(target=tracesim.propagate_context(fetch), args=("https://a",))
        ...     t.start(); t.join()   # fetch's span is a child of "crawl"
    """
    context = contextvars.copy_context()

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return context.run(fn, *args, **kwargs)

    return run


class ContextThreadPoolExecutor(ThreadPoolExecutor):
    """A ``ThreadPoolExecutor`` whose tasks run in a copy of the submitter's context.

    Spans opened by submitted functions become children of the span that submitted them.

    Example:
        >>> import tracesim
        >>> @tracesim.trace(kind="tool")
        ... def lookup(city: str) -> str:
        ...     return city.upper()
        >>> with tracesim.ContextThreadPoolExecutor(max_workers=4) as pool:
        ...     results = list(pool.map(lookup, ["Warsaw", "Paris"]))
    """

    def submit(self, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> Future[R]:
        """Schedule ``fn(*args, **kwargs)`` in a copy of the current context."""
        context = contextvars.copy_context()
        return super().submit(functools.partial(context.run, fn, *args, **kwargs))
