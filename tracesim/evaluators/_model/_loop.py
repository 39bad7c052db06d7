"""The private event loop every model call runs on, and the marker that keeps it untraced."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from tracesim._own_model_calls import MODEL_CALL_KEY, in_model_call, untraced

__all__ = ["MODEL_CALL_KEY", "in_model_call", "run_sync", "submit", "untraced"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _reset_after_fork() -> None:
    global _loop, _lock
    _loop = None  # the thread that ran it does not exist in the child
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def model_loop() -> asyncio.AbstractEventLoop:
    """The loop, started on first use in a daemon thread."""
    global _loop
    with _lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="tracesim-models", daemon=True).start()
            _loop = loop
        return _loop


def submit(coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Run ``coroutine`` on the model loop; cancelling the future cancels it there."""
    return asyncio.run_coroutine_threadsafe(coroutine, model_loop())


async def on_model_loop(coroutine: Coroutine[Any, Any, T]) -> T:
    """Await ``coroutine`` on the model loop from any loop (directly when already on it)."""
    loop = model_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        return await coroutine
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, loop))


def run_sync(coroutine: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
    """Run ``coroutine`` on the model loop and wait for it (for synchronous callers)."""
    future = submit(coroutine)
    try:
        return future.result(timeout_s)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise TimeoutError(f"no answer within {timeout_s:g} s") from None
