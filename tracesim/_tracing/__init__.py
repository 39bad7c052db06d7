"""Tracing: one span per traced call or ``span()`` block, with its input, output and errors.

- `_decorator`: ``@trace``, branching once per kind of callable (function, coroutine, generator).
- `_calls`: what every traced call shares: binding arguments, per-function metadata, start and end.
- `_streams`: generators and async generators, one span over the whole iteration.
- `_span`: `Span`, the handle user code gets, and the ``span()`` context manager.
- `_context`: carrying the current span into threads.

Tracing sits above scoring: a finished call that has evaluators is handed to the runtime's
scoring pipeline as a job; scoring never imports tracing.

This module is the package's face: the public API and experiments import from here (every
module it loads is loaded by ``import tracesim`` anyway).
"""

from tracesim._tracing._context import ContextThreadPoolExecutor, propagate_context
from tracesim._tracing._decorator import trace
from tracesim._tracing._span import (
    Span,
    current_span,
    error_type,
    finish,
    last_span,
    span,
    start,
    static_attributes,
)

__all__ = [
    "ContextThreadPoolExecutor",
    "Span",
    "current_span",
    "error_type",
    "finish",
    "last_span",
    "propagate_context",
    "span",
    "start",
    "static_attributes",
    "trace",
]
