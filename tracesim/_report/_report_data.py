"""The typed result of ``tracesim report``: frozen dataclasses that turn into plain JSON.

`Report.to_dict` is the documented ``--json`` shape (see ``docs/report.md``). Keys come out in
the order the fields are declared here, and every key is always present (``null`` when there
is no value), so scripts can rely on the shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tracesim._report._drill import Case, ErrorType

__all__ = [
    "SCHEMA",
    "AgentStats",
    "CallScore",
    "EvaluatorStats",
    "Histogram",
    "LLMCall",
    "LLMUsage",
    "LatencyStats",
    "Report",
    "RunCase",
    "RunStep",
    "ScoringCounts",
    "SpanStats",
    "StatusCounts",
    "Timeline",
    "TimelineEvaluator",
    "TimelineSpan",
    "ToolStats",
    "Totals",
    "TraceUsage",
    "UsageStats",
]

SCHEMA = "tracesim.report/1"
"""Version tag written as ``"schema"``; it changes only when the JSON shape changes incompatibly."""


@dataclass(frozen=True)
class LatencyStats:
    """Span durations in seconds; percentiles interpolate linearly (see `percentile`)."""

    min: float
    mean: float
    p50: float
    p95: float
    p99: float
    max: float


@dataclass(frozen=True)
class Histogram:
    """Score counts: ``counts[i]`` scores fell in ``[edges[i], edges[i + 1])``, the last bin closed.

    ``passed[i]`` and ``failed[i]`` split ``counts[i]`` by each result's own pass/fail decision
    (a bin can straddle the threshold); the rest of the bin had no decision.
    """

    edges: tuple[float, ...]
    counts: tuple[int, ...]
    passed: tuple[int, ...] = ()
    failed: tuple[int, ...] = ()


@dataclass(frozen=True)
class StatusCounts:
    """Spans by status code. ``OK`` and ``UNSET`` both mean "not an error"; only ``ERROR`` is one."""

    ok: int
    unset: int
    error: int


@dataclass(frozen=True)
class ScoringCounts:
    """Spans whose online scoring did not go as planned, read from the markers the pipeline writes.

    ``dropped``: never scored, the scoring queue was full (``tracesim.evaluation.dropped``).
    ``deferred``: ended at ``max_defer_s`` with evaluators still running, whose results come
    later on carrier spans (``tracesim.evaluation.deferred``). ``not_sampled``: at least one
    evaluator was left out by sampling (``tracesim.evaluation.not_sampled``).
    """

    dropped: int
    deferred: int
    not_sampled: int


@dataclass(frozen=True)
class SpanStats:
    """Count, errors and latency of the spans sharing one name (within one group).

    ``errors`` counts spans with status ``ERROR``; ``error_rate`` is ``errors / count``.
    ``kinds`` lists the ``openinference.span.kind`` values seen, sorted. ``status`` splits
    ``count`` by status code; ``scoring`` counts the spans whose scoring was dropped, deferred
    or partly not sampled.
    """

    group: str | None
    name: str
    kinds: tuple[str, ...]
    count: int
    errors: int
    error_rate: float
    latency_s: LatencyStats
    status: StatusCounts
    scoring: ScoringCounts


@dataclass(frozen=True)
class EvaluatorStats:
    """What one evaluator said about the spans named ``span`` (within one group).

    ``results`` counts every ``gen_ai.evaluation.result`` event, ``results == ok + skipped +
    errors``. ``mean_score`` averages the finite scores of ``ok`` results (``scored`` of them).
    ``passed``/``failed`` count ``ok`` results carrying ``tracesim.evaluation.passed``, and
    ``pass_rate = passed / (passed + failed)``, ``None`` when no result had a decision.
    ``not_sampled`` counts spans that listed the evaluator in ``tracesim.evaluation.not_sampled``
    (they are not results). ``from_carriers`` counts results read from carrier spans.
    ``deferred`` counts spans that ended with the evaluator still running (``max_defer_s``);
    ``deferred_missing`` of them have no result of it in the files (lost, or in a file not read).
    ``span`` is ``None`` in the per-evaluator totals and for carrier results whose target span
    is not in the files.
    """

    group: str | None
    name: str
    span: str | None
    results: int
    ok: int
    skipped: int
    errors: int
    not_sampled: int
    from_carriers: int
    scored: int
    mean_score: float | None
    passed: int
    failed: int
    pass_rate: float | None
    thresholds: tuple[float, ...]
    labels: dict[str, int]
    histogram: Histogram
    deferred: int
    deferred_missing: int


@dataclass(frozen=True)
class Totals:
    """File-wide counts.

    ``spans`` excludes ``evaluator_spans`` (spans of kind ``EVALUATOR``, such as carriers of
    late results). ``duplicate_spans`` were read more than once (same trace and span id) and
    counted once. ``unresolved_links`` are carrier spans whose target is not in the files.
    ``export_dropped`` are spans an export queue dropped before they reached the files (its
    ``export_queue_size`` was full), summed from the ``tracesim.export.dropped`` spans, which
    are not counted in ``spans``.
    ``start``/``end`` are the earliest span start and latest span end, ISO 8601 UTC.
    ``status`` and ``scoring`` add up the rows of the span table.
    """

    files: int
    spans: int
    traces: int
    errors: int
    evaluator_spans: int
    results: int
    duplicate_spans: int
    unresolved_links: int
    export_dropped: int
    start: str | None
    end: str | None
    status: StatusCounts
    scoring: ScoringCounts


@dataclass(frozen=True)
class UsageStats:
    """Calls, tokens and cost of the LLM calls sharing one model or span name (or all of them).

    ``input_tokens`` include the ``cached_input_tokens``. ``cost_usd`` sums the cost of the
    ``priced_calls`` (the span's own ``llm.cost.total``, else the price table); it is ``None``
    when no call has a price, never a made-up zero.
    """

    name: str
    calls: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    priced_calls: int
    cost_usd: float | None


@dataclass(frozen=True)
class TraceUsage:
    """The `UsageStats` of one trace; ``root`` names its first root span (``None`` if not in the files)."""

    trace_id: str
    root: str | None
    calls: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    priced_calls: int
    cost_usd: float | None


@dataclass(frozen=True)
class CallScore:
    """One evaluation result of an LLM call (on its span or on a carrier linked to it)."""

    evaluator: str
    status: str
    score: float | None
    passed: bool | None
    label: str | None


@dataclass(frozen=True)
class LLMCall:
    """One LLM call: its span, model, tokens, cost (``None`` without a price) and scores."""

    trace_id: str
    span_id: str
    name: str
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    cached_input_tokens: int
    cost_usd: float | None
    scores: tuple[CallScore, ...]


@dataclass(frozen=True)
class LLMUsage:
    """Token usage and cost of the LLM calls: spans reporting token counts, in any convention.

    ``models`` and ``spans`` are sorted by cost, then tokens (most first); ``traces`` and
    ``calls`` keep the ``top`` most expensive of ``trace_count`` traces and ``totals.calls`` calls.
    ``unpriced_models`` lists the models of calls without a cost (``(unknown model)`` when a
    span names none). Not split by ``--group-by``.
    """

    totals: UsageStats
    models: tuple[UsageStats, ...]
    spans: tuple[UsageStats, ...]
    trace_count: int
    traces: tuple[TraceUsage, ...]
    calls: tuple[LLMCall, ...]
    unpriced_models: tuple[str, ...]


@dataclass(frozen=True)
class TimelineSpan:
    """One span name over time: per bucket, the spans that started in it and their latency.

    ``p50``/``p95`` are ``None`` in a bucket without spans of this name.
    """

    name: str
    count: tuple[int, ...]
    errors: tuple[int, ...]
    p50: tuple[float | None, ...]
    p95: tuple[float | None, ...]


@dataclass(frozen=True)
class TimelineEvaluator:
    """One evaluator over time, per bucket of the evaluated spans' start: as in `EvaluatorStats`."""

    name: str
    results: tuple[int, ...]
    scored: tuple[int, ...]
    mean_score: tuple[float | None, ...]
    passed: tuple[int, ...]
    failed: tuple[int, ...]
    pass_rate: tuple[float | None, ...]


@dataclass(frozen=True)
class Timeline:
    """Scores and latency over time, in ``bucket_s``-second buckets starting at ``starts`` (UTC).

    Every series has one value per bucket. Buckets are aligned to multiples of ``bucket_s``
    (10:05, 10:10, ...). ``entry_span`` is the name most traces start with (the text table's
    row); ``spans`` are sorted by count, most first, ``evaluators`` by name. Not split by group.
    """

    bucket_s: int
    starts: tuple[str, ...]
    entry_span: str | None
    spans: tuple[TimelineSpan, ...]
    evaluators: tuple[TimelineEvaluator, ...]


@dataclass(frozen=True)
class RunStep:
    """One step of an agent's run as the report lists it (see `tracesim.runs.Step`).

    ``arguments`` is a tool call's arguments as JSON (or their text when they are not a JSON
    object), cut to 300 characters; ``requested`` names the tools an LLM step asked for.
    ``depth`` is 1 for a step directly under the agent, 2 under a nested agent or chain...
    """

    kind: str
    name: str
    depth: int
    arguments: str | None
    requested: tuple[str, ...]
    model: str | None
    error: str | None
    duration_s: float | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None


@dataclass(frozen=True)
class RunCase:
    """One of an agent's worst runs, with its first steps.

    ``evaluator``, ``score``, ``passed`` and ``explanation`` (which calls were missing, extra or
    mismatched, cut to 300 characters) are those of its lowest-scored run evaluator result
    (``None`` when no run evaluator scored it). ``steps`` holds the first steps in start
    order; ``more_steps`` counts those left out. ``truncated`` says the run itself was cut
    short when it was rebuilt (a step limit, or steps that had not ended).
    """

    agent: str
    trace_id: str
    span_id: str
    evaluator: str | None
    score: float | None
    passed: bool | None
    explanation: str | None
    error: str | None
    duration_s: float
    tool_calls: int
    llm_calls: int
    tokens: int
    cost_usd: float | None
    truncated: bool
    steps: tuple[RunStep, ...]
    more_steps: int


@dataclass(frozen=True)
class ToolStats:
    """One tool, over an agent's runs: its calls, how many failed, and its p95 duration.

    ``calls`` counts the tool calls of the runs (`tracesim.runs.Run.tool_calls`: a call the model
    requested and the tool span that executed it count once); ``errors`` the calls that failed;
    ``p95_s`` is over the executed calls' durations (``None`` when none was timed).
    """

    name: str
    calls: int
    errors: int
    error_rate: float
    p95_s: float | None


@dataclass(frozen=True)
class AgentStats:
    """An agent's runs: the subtrees under its spans (``openinference.span.kind=AGENT``,
    ``gen_ai.operation.name=invoke_agent``), rebuilt as `tracesim.runs.Run`.

    ``name`` is the span's ``gen_ai.agent.name``, else its name. ``errors`` counts runs whose
    agent span has status ``ERROR``. Per run: ``tool_calls_mean``/``tool_calls_p95``,
    ``llm_calls_mean``, ``tokens_mean`` (input + output over the LLM calls with usage) and
    ``cost_usd_mean`` (over the ``priced_runs`` whose cost is known; ``None`` when none is).
    ``truncated`` counts runs cut short (a step limit, or steps that had not ended). ``tools``
    is sorted by calls, most first; ``worst_runs`` holds up to three runs: those a run
    evaluator failed (lowest score first), then runs with errors, then the lowest scored, then
    the slowest.
    """

    group: str | None
    name: str
    runs: int
    errors: int
    error_rate: float
    duration_p50_s: float
    duration_p95_s: float
    tool_calls: int
    tool_calls_mean: float
    tool_calls_p95: float
    llm_calls_mean: float
    tokens_mean: float
    priced_runs: int
    cost_usd_mean: float | None
    truncated: int
    tools: tuple[ToolStats, ...]
    worst_runs: tuple[RunCase, ...]


@dataclass(frozen=True)
class Report:
    """Summary of trace files: per-span-name latency and errors, per-evaluator scores.

    ``spans`` and ``evaluators`` have one row per group (``group`` is ``None`` unless
    ``group_by`` is set), sorted by group then name. ``evaluator_totals`` has one row per
    evaluator over all groups and spans; ``--fail-under`` and the score charts use it.
    ``warnings`` holds the messages of trace-file lines that were skipped. ``llm_usage`` is
    ``None`` when no span reports token usage. ``worst_cases`` holds the worst scored results
    of each evaluator with the call they judged, ``error_types`` the failed spans by exception
    type (see `~tracesim._report._drill`). ``timeline`` is ``None`` when the spans started
    within less than `~tracesim._report._timeline.MIN_WINDOW_S` of each other. ``agents`` holds
    each agent's runs (`AgentStats`), sorted by group then name.

    Example:
        >>> from tracesim._report import summarize
        >>> report = summarize([])
        >>> report.to_dict()["totals"]["spans"]
        0
    """

    files: tuple[str, ...]
    group_by: str | None
    totals: Totals
    spans: tuple[SpanStats, ...]
    evaluators: tuple[EvaluatorStats, ...]
    evaluator_totals: tuple[EvaluatorStats, ...]
    warnings: tuple[str, ...] = field(default=())
    llm_usage: LLMUsage | None = None
    worst_cases: tuple[Case, ...] = field(default=())
    error_types: tuple[ErrorType, ...] = field(default=())
    timeline: Timeline | None = None
    agents: tuple[AgentStats, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` document: plain dicts, lists, strings, numbers, booleans and nulls."""
        return {
            "schema": SCHEMA,
            "files": list(self.files),
            "group_by": self.group_by,
            "totals": _plain(self.totals),
            "spans": [_plain(s) for s in self.spans],
            "evaluators": [_plain(e) for e in self.evaluators],
            "evaluator_totals": [_plain(e) for e in self.evaluator_totals],
            "warnings": list(self.warnings),
            "llm_usage": _plain(self.llm_usage),
            "worst_cases": [_plain(c) for c in self.worst_cases],
            "error_types": [_plain(e) for e in self.error_types],
            "timeline": _plain(self.timeline),
            "agents": [_plain(a) for a in self.agents],
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        """`to_dict` as strict JSON text (no NaN or infinities)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, ensure_ascii=False)

    def evaluator(self, name: str) -> EvaluatorStats | None:
        """The totals row of evaluator ``name``, or ``None`` when it is not in the files."""
        return next((e for e in self.evaluator_totals if e.name == name), None)


def _plain(value: Any) -> Any:
    # dataclasses.asdict would deep-copy and keep tuples; JSON wants lists, in field order.
    if hasattr(value, "__dataclass_fields__"):
        return {name: _plain(getattr(value, name)) for name in value.__dataclass_fields__}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
