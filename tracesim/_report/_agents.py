"""Agents are runs: each agent span's subtree rebuilt as a `tracesim.runs.Run`, summed per agent.

An agent span is one of kind ``agent`` in any convention the runs read: OpenInference's
``openinference.span.kind=AGENT`` (tracesim's ``kind="agent"`` writes it), the GenAI
``gen_ai.operation.name=invoke_agent``, OpenLLMetry's ``traceloop.span.kind=agent``. Its run is
built from the spans of its own trace by `tracesim._runs.build_run`, as ``tracesim eval`` builds
it, so tool calls are counted as the run evaluators count them (a call the model requested and
the tool span that executed it are one call).

Cost: the spans of the traces that hold an agent are grouped once (by `collect`); each such
trace gets its `tracesim._runs.RunIndex`, which turns its spans into SDK spans once for all the
agents in it and is let go when they are built, so memory holds one trace's SDK spans at a time
(one index over a 100,000-span file would hold them all: 130 MB more, and nearly twice the CPU
time, measured). A file without agents costs nothing more; a run costs about 0.15 ms,
nearly all of it `tracesim._runs.build_run`.

What the report shows of a run (names, models, arguments, errors) is taken through the report's
`Texts`, whole (as the run holds it, each value within `tracesim._runs` bounds), before it is
cut to 300 characters; the inputs and outputs of the steps are never shown, so never scanned.

A result is a run evaluator's when its evaluator's name is one of `RUN_EVALUATORS` (the result
event names its evaluator, not its type: an evaluator renamed in the configuration is not
recognised).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracesim import _semconv as sc
from tracesim._pricing import PriceTable
from tracesim._report._collect import Judged, _finite, _status, is_agent
from tracesim._report._format import format_duration
from tracesim._report._math import percentile
from tracesim._report._redacted import Texts
from tracesim._report._report_data import AgentStats, RunCase, RunStep, ToolStats
from tracesim._runs import RunIndex
from tracesim._terminal import visible
from tracesim.runs import Run, Step, plain
from tracesim.tracefile import SpanRecord

__all__ = [
    "RUN_EVALUATORS",
    "RUN_STEPS",
    "WORST_RUNS",
    "agent_name",
    "agent_stats",
    "is_agent",
    "is_run_result",
    "one_line",
    "run_steps",
    "step_text",
]

RUN_EVALUATORS = frozenset(
    {
        "trajectory_match",
        "tool_correctness",
        "tool_call_accuracy",
        "tool_call_f1",
        "tool_names",
        "trajectory",
        "tool_arguments",
        "run_budget",
        "trajectory_judge",
    }
)
"""The evaluators that score runs, by the name their results carry (their type's name)."""

WORST_RUNS = 3
"""Worst runs kept per agent."""
RUN_STEPS = 20
"""Steps listed per worst run; the rest are counted."""
_TEXT = 300  # characters of a step's arguments or error kept


def agent_name(span: SpanRecord) -> str:
    """The agent's name: ``gen_ai.agent.name``, else the span's name."""
    name = span.attributes.get(sc.GEN_AI_AGENT_NAME)
    return name if isinstance(name, str) and name else span.name


def is_run_result(attributes: Mapping[str, Any]) -> bool:
    """Whether a result event's evaluator scored a run: the event says so
    (``tracesim.evaluation.run``, whatever the evaluator was named), or, in files written before
    it did, its name is one of `RUN_EVALUATORS`.

    Example:
        >>> is_run_result({"gen_ai.evaluation.name": "tool_names"}), is_run_result({})
        (True, False)
        >>> is_run_result({"gen_ai.evaluation.name": "route_check", "tracesim.evaluation.run": True})
        True
    """
    return attributes.get(sc.EVALUATION_RUN) is True or attributes.get(sc.EVALUATION_NAME) in RUN_EVALUATORS


def run_steps(
    run: Run, limit: int = RUN_STEPS, *, text: Texts | None = None
) -> tuple[tuple[RunStep, ...], int]:
    """The first ``limit`` steps of ``run`` as the report lists them, and how many are left out.

    Names, models, arguments and errors are taken through ``text`` (`Texts`) whole, then cut.

    Example:
        >>> from tracesim.runs import Run, Step, ToolCall
        >>> run = Run(steps=(Step("tool", "lookup", tool_call=ToolCall("lookup", {"city": "Warsaw"})),) * 3)
        >>> steps, more = run_steps(run, 2)
        >>> steps[0].arguments, more
        ('{"city": "Warsaw"}', 1)
    """
    text = text if text is not None else Texts(redact=False)
    shown = tuple(_run_step(step, text) for step in run.steps[: max(limit, 0)])
    return shown, len(run.steps) - len(shown)


def _run_step(step: Step, text: Texts) -> RunStep:
    arguments = None
    if step.tool_call is not None:
        raw = step.tool_call.arguments
        arguments = _cut(text.once(raw if isinstance(raw, str) else _json(raw)))
    return RunStep(
        kind=step.kind,
        name=text(step.name),
        depth=step.depth,
        arguments=arguments,
        requested=tuple(text(call.name) for call in step.requested),
        model=text(step.model) if step.model else None,
        error=_cut(text.once(step.error)) if step.error else None,
        duration_s=step.duration_s,
        input_tokens=step.input_tokens,
        output_tokens=step.output_tokens,
        cost_usd=step.cost_usd,
    )


def _json(value: Any) -> str:
    try:
        return json.dumps(plain(value), ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _cut(value: str) -> str:
    return value if len(value) <= _TEXT else value[: _TEXT - 1] + "…"


def step_text(step: RunStep, number: int, *, width: int = 100, cost: str | None = None) -> str:
    """One line for a step: number, kind, name, arguments, error, duration, tokens and cost.

    Nested steps are indented by their depth; the arguments and the error are cut to ``width``.
    ``cost`` is the cost as shown (`format_usd`), left out when None.

    Example:
        >>> step = RunStep("tool", "lookup", 1, '{"city": "Warsaw"}', (), None, None, 0.0012,
        ...                None, None, None)
        >>> step_text(step, 1)
        '1. tool lookup {"city": "Warsaw"}  1.2 ms'
    """
    parts = [f"{'   ' * (max(step.depth, 1) - 1)}{number}. {step.kind} {visible(step.name)}"]
    if step.arguments is not None:
        parts[0] += " " + one_line(visible(step.arguments), width)
    if step.requested:
        parts.append("requested " + one_line(visible(", ".join(step.requested)), width))
    if step.error:
        parts.append("ERROR " + one_line(visible(step.error), width))
    if step.duration_s is not None:
        parts.append(format_duration(step.duration_s))
    usage = []
    if step.model:
        usage.append(visible(step.model))
    if step.input_tokens is not None or step.output_tokens is not None:
        shown = [f"{n:,}" if n is not None else "?" for n in (step.input_tokens, step.output_tokens)]
        usage.append(f"{shown[0]}→{shown[1]} tokens")
    if cost is not None:
        usage.append(cost)
    if usage:
        parts.append(" ".join(usage))
    return "  ".join(parts)


def one_line(value: str, width: int) -> str:
    """``value`` on one line (white space runs made one space), cut to ``width`` with ``…``.

    Example:
        >>> one_line("missing  'convert'   x1", 12), one_line("missing  'convert'   x1", 30)
        ("missing 'co…", "missing 'convert' x1")
    """
    flat = " ".join(value.split())
    width = max(width, 1)
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@dataclass
class _Scored:
    """The run evaluator results of one agent span: the lowest score, and whether one failed."""

    evaluator: str | None = None
    score: float | None = None
    passed: bool | None = None
    failed: bool = False
    explanation: str | None = None  # as read: redacted and cut only for the runs shown


@dataclass
class _Sample:
    """What the statistics keep of one run (the run itself is rebuilt for the worst ones)."""

    record: SpanRecord
    name: str
    scored: _Scored
    calls: list[tuple[str, bool]]  # each tool call's name, and whether it failed
    timed: list[tuple[str, float]]  # each executed tool step's name and duration
    llm_calls: int
    tokens: int
    cost_usd: float | None
    truncated: bool
    failed_steps: int

    @classmethod
    def of(cls, record: SpanRecord, name: str, scored: _Scored, run: Run) -> _Sample:
        return cls(
            record,
            name,
            scored,
            [(call.name, call.error is not None) for call in run.tool_calls],
            [(s.name, s.duration_s) for s in run.steps if s.kind == "tool" and s.duration_s is not None],
            run.llm_calls,
            run.tokens,
            run.cost_usd,
            run.truncated,
            sum(step.error is not None for step in run.steps),
        )


def agent_stats(
    agents: Sequence[tuple[SpanRecord, str | None]],
    traces: Mapping[str, list[SpanRecord]],
    judged: Iterable[Judged],
    *,
    text: Texts,
    prices: PriceTable | None = None,
) -> tuple[AgentStats, ...]:
    """Per agent (and group): runs, tool calls, per-tool counts, LLM use and the worst runs.

    ``agents`` holds each agent span with its group (``None`` when not grouping); ``traces``
    the spans of the traces that hold them; ``judged`` every result (those of run evaluators
    on agent spans rank the worst runs). Names are taken through ``text``; LLM steps without a
    cost of their own are priced with ``prices``.
    """
    if not agents:
        return ()
    scored = _run_results(judged, text)
    samples: dict[tuple[str | None, str], list[_Sample]] = defaultdict(list)
    by_trace: dict[str, list[tuple[SpanRecord, str | None]]] = defaultdict(list)
    for record, group in agents:
        by_trace[record.trace_id].append((record, group))
    for trace_id, members in by_trace.items():
        index = RunIndex(traces.get(trace_id, ()))  # this trace's SDK spans, for its agents, then let go
        for record, group in members:
            name = text(agent_name(record))
            found = scored.get((record.trace_id, record.span_id), _Scored())
            samples[(group, name)].append(_Sample.of(record, name, found, index.run(record, prices=prices)))
    return tuple(
        _agent_row(group, name, items, traces, text, prices)
        for (group, name), items in sorted(samples.items(), key=lambda kv: (kv[0][0] or "", kv[0][1]))
    )


def _run_results(judged: Iterable[Judged], text: Texts) -> dict[tuple[str, str], _Scored]:
    """The run evaluator results of each judged span, by (trace id, span id)."""
    found: dict[tuple[str, str], _Scored] = {}
    for item in judged:
        attributes = item.attributes
        if item.target is None or not is_run_result(attributes):
            continue
        key = (item.target.trace_id, item.target.span_id)
        scored = found.setdefault(key, _Scored())
        status = _status(attributes)
        passed = attributes.get(sc.EVALUATION_PASSED)
        score = _finite(attributes.get(sc.EVALUATION_SCORE_VALUE))
        bad = status == "error" or (status == "ok" and passed is False)
        name = text(str(attributes.get(sc.EVALUATION_NAME)))
        # the lowest score; a failure before any pass
        if (bad and not scored.failed) or (
            bad == scored.failed and score is not None and (scored.score is None or score < scored.score)
        ):
            scored.evaluator, scored.score = name, score
            scored.passed = passed if isinstance(passed, bool) else None
            explanation = attributes.get(sc.EVALUATION_EXPLANATION)
            scored.explanation = explanation if isinstance(explanation, str) and explanation else None
        scored.failed = scored.failed or bad
    return found


def _agent_row(
    group: str | None,
    name: str,
    items: list[_Sample],
    traces: Mapping[str, list[SpanRecord]],
    text: Texts,
    prices: PriceTable | None,
) -> AgentStats:
    errors = sum(item.record.status_code == "ERROR" for item in items)
    calls = sorted(len(item.calls) for item in items)
    durations = sorted(item.record.duration_s for item in items)
    costs = [cost for item in items if (cost := item.cost_usd) is not None]
    runs = len(items)
    return AgentStats(
        group=group,
        name=name,
        runs=runs,
        errors=errors,
        error_rate=errors / runs,
        duration_p50_s=percentile(durations, 50),
        duration_p95_s=percentile(durations, 95),
        tool_calls=sum(calls),
        tool_calls_mean=sum(calls) / runs,
        tool_calls_p95=percentile([float(c) for c in calls], 95),
        llm_calls_mean=sum(item.llm_calls for item in items) / runs,
        tokens_mean=sum(item.tokens for item in items) / runs,
        priced_runs=len(costs),
        cost_usd_mean=round(math.fsum(costs) / len(costs), 12) if costs else None,
        truncated=sum(item.truncated for item in items),
        tools=_tools(items, text),
        worst_runs=tuple(
            _case(item, traces, text, prices) for item in sorted(items, key=_badness)[:WORST_RUNS]
        ),
    )


def _tools(items: Sequence[_Sample], text: Texts) -> tuple[ToolStats, ...]:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    durations: dict[str, list[float]] = defaultdict(list)
    for item in items:
        for tool, failed in item.calls:
            count = counts[tool]
            count[0] += 1
            count[1] += failed
        for tool, duration in item.timed:
            durations[tool].append(duration)
    rows = [
        ToolStats(
            name=text(tool),
            calls=calls,
            errors=failed,
            error_rate=failed / calls,
            p95_s=percentile(sorted(durations[tool]), 95) if durations.get(tool) else None,
        )
        for tool, (calls, failed) in counts.items()
    ]
    return tuple(sorted(rows, key=lambda row: (-row.calls, row.name)))


def _badness(item: _Sample) -> tuple[bool, bool, float, float, str, str]:
    """Failed by a run evaluator first (lowest score first), then runs with an error (the agent's
    or a step's), then the lowest scored, then the slowest."""
    scored = item.scored
    score = scored.score if scored.score is not None else math.inf
    error = item.record.status_code == "ERROR" or item.failed_steps > 0
    return (
        not scored.failed,
        not error,
        score,
        -item.record.duration_s,
        item.record.trace_id,
        item.record.span_id,
    )


def _case(
    item: _Sample, traces: Mapping[str, list[SpanRecord]], text: Texts, prices: PriceTable | None
) -> RunCase:
    """One worst run, rebuilt from its trace's spans; what it shows is taken through ``text``."""
    record = item.record
    run = RunIndex(traces.get(record.trace_id, ())).run(record, prices=prices)
    steps, more = run_steps(run, text=text)
    error = record.status_message or ("error" if record.status_code == "ERROR" else None)
    scored = item.scored
    return RunCase(
        agent=item.name,
        trace_id=record.trace_id,
        span_id=record.span_id,
        evaluator=scored.evaluator,
        score=scored.score,
        passed=scored.passed,
        explanation=_cut(text.once(scored.explanation)) if scored.explanation else None,
        error=_cut(text.once(error)) if error else None,
        duration_s=record.duration_s,
        tool_calls=len(run.tool_calls),
        llm_calls=run.llm_calls,
        tokens=run.tokens,
        cost_usd=run.cost_usd,
        truncated=run.truncated,
        steps=steps,
        more_steps=more,
    )
