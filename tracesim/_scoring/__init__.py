"""Online scoring: evaluators run off the caller's path and their results land on the span.

- `_pipeline`: the bounded queue, worker threads, the asyncio loop for async evaluators.
- `_jobs`: a scored call (`Job`), its evaluator runs and the results made for them.
- `_watchdog`: one thread acting on deadlines (``timeout_s``, ``max_defer_s``).
- `_workqueue`: the FIFO producers use without waking a thread per call.
- `_selection`: which evaluators score a span (attached, configured rules) and sampling.
- `_expect`: where expected outputs come from (values, callables, `Golden`, ``expect()``).
- `_results`: how a result is written (span event, flat attributes, carrier span).
- `_sinks`: optional extra destinations for results (OTLP log records, Phoenix annotations).
- `_held_spans`: rules on spans other instrumentations made, each held until it is scored.

The pipeline knows spans only through OpenTelemetry's API and the `Job` it is given; its
tracer and its redaction (for the names in result attribute keys) are handed in by the runtime,
which this package never imports.

This module is the package's face: the rest of tracesim imports what it uses from here. Every
module it imports is loaded by ``import tracesim`` anyway; `ForeignScoring` (rules on other
instrumentations' spans) loads on first use, since only configured rules need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracesim._scoring._expect import (
    NOT_SET,
    Golden,
    expect,
    expected_attributes,
    release_expected,
    take_expected,
)
from tracesim._scoring._jobs import FROM_RUN, Job, ScoringStats, checked, failure, snapshot, timeout
from tracesim._scoring._pipeline import ScoringPipeline
from tracesim._scoring._results import emit_carrier, end_time_of, target_context, write
from tracesim._scoring._selection import (
    Plan,
    Rule,
    build_evaluators,
    compile_rules,
    evaluators_seen,
    plan,
    scores_runs,
    suggestion,
)
from tracesim._scoring._sinks import PhoenixSink, result_sinks

if TYPE_CHECKING:
    from tracesim._scoring._held_spans import ForeignScoring

__all__ = [
    "FROM_RUN",
    "NOT_SET",
    "ForeignScoring",
    "Golden",
    "Job",
    "PhoenixSink",
    "Plan",
    "Rule",
    "ScoringPipeline",
    "ScoringStats",
    "build_evaluators",
    "checked",
    "compile_rules",
    "emit_carrier",
    "end_time_of",
    "evaluators_seen",
    "expect",
    "expected_attributes",
    "failure",
    "plan",
    "release_expected",
    "result_sinks",
    "scores_runs",
    "snapshot",
    "suggestion",
    "take_expected",
    "target_context",
    "timeout",
    "write",
]


def __getattr__(name: str) -> Any:
    if name == "ForeignScoring":
        from tracesim._scoring._held_spans import ForeignScoring

        globals()[name] = ForeignScoring
        return ForeignScoring
    raise AttributeError(f"module 'tracesim._scoring' has no attribute {name!r}")
