"""Tracing: one span per traced call or ``span()`` block, with its input, output and errors.

- `_decorator`: ``@trace``, branching once per kind of callable (function, coroutine, generator).
- `_calls`: what every traced call shares: binding arguments, per-function metadata, start and end.
- `_streams`: generators and async generators, one span over the whole iteration.
- `_span`: `Span`, the handle user code gets, and the ``span()`` context manager.
- `_context`: carrying the current span into threads.

Tracing sits above scoring: a finished call that has evaluators is handed to the runtime's
scoring pipeline as a job; scoring never imports tracing.
"""
