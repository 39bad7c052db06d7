"""``tracesim report``: how an agent is doing, summarised from trace files.

Usable from Python as well as from the command line:

    >>> from tracesim._report import read_report, render_html
    >>> report = read_report([".tracesim/traces.jsonl"], group_by="service.name")  # doctest: +SKIP
    >>> report.evaluator("levenshtein").pass_rate  # doctest: +SKIP
    0.82
    >>> Path("report.html").write_text(render_html(report))  # doctest: +SKIP

The pieces: `summarize` (spans to a `Report`), `read_report` (files to a `Report`),
`Report.to_dict` (the ``--json`` document), `parse_gate`/`check_gates` (``--fail-under``),
`render_html` (the offline page) and `print_report` (terminal tables). `Report.agents` holds
each agent's runs (`AgentStats`: tool calls, per-tool counts, worst runs with their steps);
`Report.llm_usage` holds the tokens and cost of LLM calls (`LLMUsage`), priced with a
`~tracesim._pricing.PriceTable` given to `read_report`/`summarize`; `Report.timeline` the scores
and latency over time (`Timeline`, for files spanning ten minutes or more).

This module is the package's face: ``tracesim show``, ``tracesim report`` and the experiment
views also import from here the formatting, redaction and naming helpers they share with it.
"""

from tracesim._report._agents_text import SHOW_STEPS, failed_runs
from tracesim._report._aggregate import TOP, read_report, summarize
from tracesim._report._collect import NONE_GROUP, UNNAMED
from tracesim._report._format import DASH, format_duration, format_rate, format_score, html_text
from tracesim._report._gate import Gate, GateResult, check_gates, decide, gate_line, parse_gate
from tracesim._report._html import render_html
from tracesim._report._math import histogram, histogram_edges, percentile
from tracesim._report._redacted import redacted_spans
from tracesim._report._report_data import (
    SCHEMA,
    AgentStats,
    CallScore,
    EvaluatorStats,
    Histogram,
    LatencyStats,
    LLMCall,
    LLMUsage,
    Report,
    RunCase,
    RunStep,
    ScoringCounts,
    SpanStats,
    StatusCounts,
    Timeline,
    TimelineEvaluator,
    TimelineSpan,
    ToolStats,
    Totals,
    TraceUsage,
    UsageStats,
)
from tracesim._report._terminal_report import PIPE_WIDTH, print_report, summary_line

__all__ = [
    "DASH",
    "NONE_GROUP",
    "PIPE_WIDTH",
    "SCHEMA",
    "SHOW_STEPS",
    "TOP",
    "UNNAMED",
    "AgentStats",
    "CallScore",
    "EvaluatorStats",
    "Gate",
    "GateResult",
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
    "check_gates",
    "decide",
    "failed_runs",
    "format_duration",
    "format_rate",
    "format_score",
    "gate_line",
    "histogram",
    "histogram_edges",
    "html_text",
    "parse_gate",
    "percentile",
    "print_report",
    "read_report",
    "redacted_spans",
    "render_html",
    "summarize",
    "summary_line",
]
