"""`tracesim.record_run`: the run of a block of code, for tests, experiments and notebooks.

Online, a run evaluator gets its run from the scoring pipeline. A test or an experiment wants
the run in hand: to assert on its tool calls, or to score it with any evaluator. The block runs
under an ``agent`` span (or the span it is given a name for) whose subtree the active
configuration's recorder keeps, exactly as for a scored span; when the block ends, the run is
built from what it kept (children still running are waited for up to ``wait_s``, then marked).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tracesim import _runtime
from tracesim._errors import TracesimError
from tracesim._tracing import span
from tracesim.runs import Run

__all__ = ["RecordedRun", "record_run"]


class RecordedRun:
    """What `record_run` yields: the block's span while it runs, its `Run` once it has ended."""

    def __init__(self, handle: Any) -> None:
        self.span = handle
        """The block's `tracesim.Span` (set its output with ``set_output`` to give the run one)."""
        self.run: Run = Run()
        """The block's run, set when the block ends (empty until then)."""


@contextmanager
def record_run(name: str = "run", *, kind: str = "agent", wait_s: float = 1.0) -> Iterator[RecordedRun]:
    """Run a block under a span and get the run under it: steps, tool calls, tokens, cost.

    Args:
        name: The block's span name.
        kind: The block's span kind (``agent`` by default; any kind `tracesim.span` takes).
        wait_s: How long to wait, when the block ends, for spans still running under it; the
            run is then built with what ended and marked truncated.

    Raises:
        TracesimError: tracesim is not configured, or configured with ``enabled=False``:
            no spans are recorded then.

    Example:
        >>> import tracesim
        >>> from tracesim.testing import capture_spans
        >>> @tracesim.trace(kind="tool")
        ... def lookup(city: str) -> str:
        ...     return "12 C"
        >>> with capture_spans(), tracesim.record_run() as recorded:
        ...     recorded.span.set_output(lookup("Warsaw"))
        >>> [(call.name, call.output) for call in recorded.run.tool_calls], recorded.run.output
        ([('lookup', '12 C')], '12 C')
    """
    runtime = _runtime.current
    recorder = runtime.runs if runtime is not None else None
    if runtime is None or recorder is None:
        why = "tracesim is not configured" if runtime is None else "this configuration records no spans"
        raise TracesimError(
            f"tracesim.record_run: {why}; call tracesim.configure() first (in tests, inside "
            "tracesim.testing.capture_spans()), with tracing enabled"
        )
    source = None
    recorded: RecordedRun | None = None
    try:
        with span(name, kind=kind) as handle:
            recorded = RecordedRun(handle)
            otel = handle.otel_span
            recorder.watch(otel)
            try:
                yield recorded
            finally:
                output = handle._output if handle._output_set else None
                source = recorder.source(otel, output, time.time_ns())
    finally:  # also when the block raised: the run up to the error is there to look at
        if source is not None and recorded is not None:
            recorded.run = source.take(wait_s)
