"""The report as terminal tables, drawn with rich.

Every cell is a `rich.text.Text` of `visible` text: rich markup in a span name (``[red]``,
``[link=...]``) prints as written, and control characters cannot reach the terminal.

On a terminal too narrow for a table, long names (spans, evaluators, models, groups, traces) fold
onto more lines instead of being cut with ``…``. Into a pipe or a file (a CI log) a table is drawn
as wide as its cells need, whatever the console's width: no name or number is cut or split.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tracesim._pricing import format_usd, price_hint
from tracesim._report._agents_text import print_agents
from tracesim._report._drill_text import print_drill_down
from tracesim._report._format import (
    DASH,
    format_cost,
    format_count,
    format_duration,
    format_rate,
    format_score,
)
from tracesim._report._report_data import EvaluatorStats, LLMUsage, Report, SpanStats, TraceUsage, UsageStats
from tracesim._report._tables import print_table
from tracesim._report._timeline_text import print_timeline
from tracesim._terminal import visible

__all__ = [
    "PIPE_WIDTH",
    "calls_title",
    "print_report",
    "scoring_notes",
    "status_line",
    "summary_line",
    "traces_title",
    "usage_line",
    "usage_rows",
]

PIPE_WIDTH = 200
"""Console width when stdout is not a terminal and ``COLUMNS`` is not set (tables may be wider)."""

_DECISION_LABELS = frozenset({"pass", "fail"})
_TOP_LABELS = 3


def summary_line(report: Report) -> str:
    """One sentence saying what was read.

    Example:
        >>> from tracesim._report import summarize
        >>> summary_line(summarize([]))
        'No spans found.'
    """
    t = report.totals
    if not t.spans and not t.evaluator_spans:
        return "No spans found."
    text = f"{_n(t.spans, 'span')} in {_n(t.traces, 'trace')} from {_n(t.files, 'file')}"
    if t.start and t.end:
        text += f" ({t.start} to {t.end})"
    text += f"; {_n(t.results, 'evaluation result')}"
    carried = sum(e.from_carriers for e in report.evaluator_totals)
    if carried:
        text += f", {format_count(carried)} of them on {_n(t.evaluator_spans, 'carrier span')}"
    if t.duplicate_spans:
        text += f"; {_n(t.duplicate_spans, 'duplicate span')} counted once"
    if t.unresolved_links:
        text += f"; {_n(t.unresolved_links, 'carrier link')} to spans not in the files"
    return text + "."


def _n(count: int, noun: str) -> str:
    return f"{format_count(count)} {noun}{'s' * (count != 1)}"


def scoring_notes(report: Report) -> list[str]:
    """Sentences on spans lost before the files, or whose online scoring was dropped or cut
    short; empty when none was.

    Example:
        >>> from tracesim._report import summarize
        >>> scoring_notes(summarize([]))
        []
    """
    scoring = report.totals.scoring
    notes = []
    lost = report.totals.export_dropped
    if lost:
        notes.append(
            f"{_n(lost, 'span')} {'was' if lost == 1 else 'were'} dropped before reaching the files "
            "because an export queue was full (tracesim.export.dropped): raise export_queue_size, "
            "or set export_on_full to wait."
        )
    if scoring.dropped:
        notes.append(
            f"{_n(scoring.dropped, 'span')} {'was' if scoring.dropped == 1 else 'were'} never scored "
            "because the scoring queue was full (tracesim.evaluation.dropped): raise scoring_queue_size "
            "or scoring_workers, or lower evaluation_sample_rate."
        )
    if scoring.deferred:
        late = sum(e.deferred for e in report.evaluator_totals)
        missing = sum(e.deferred_missing for e in report.evaluator_totals)
        text = (
            f"{_n(scoring.deferred, 'span')} ended with evaluators still running after max_defer_s "
            f"(tracesim.evaluation.deferred); their {_n(late, 'result')} come on carrier spans"
        )
        if missing:
            text += (
                f", and {format_count(missing)} of them {'is' if missing == 1 else 'are'} not in the files"
            )
        notes.append(text + ".")
    return notes


def status_line(report: Report) -> str:
    """The spans by status code, saying that only ``ERROR`` is an error.

    Example:
        >>> from tracesim._report import summarize
        >>> status_line(summarize([]))
        'Span status: 0 OK, 0 unset, 0 ERROR (OK and unset both mean no error).'
    """
    status = report.totals.status
    return (
        f"Span status: {format_count(status.ok)} OK, {format_count(status.unset)} unset, "
        f"{format_count(status.error)} ERROR (OK and unset both mean no error)."
    )


def print_report(report: Report, console: Console) -> None:
    """Print the summary line, the span and evaluator tables, LLM usage, agents, errors and worst cases.

    Example:
        >>> from rich.console import Console
        >>> from tracesim._report import summarize
        >>> print_report(summarize([]), Console())
        No spans found.
    """
    console.print(Text(summary_line(report)), soft_wrap=True)
    for note in scoring_notes(report):
        console.print(Text(note), soft_wrap=True)
    grouped = report.group_by is not None
    if report.spans:
        print_table(console, span_table(report.spans, report.group_by if grouped else None))
        console.print(Text(status_line(report)), soft_wrap=True)
    if report.evaluators:
        print_table(console, evaluator_table(report.evaluators, report.group_by if grouped else None))
    if report.timeline is not None:
        print_timeline(report.timeline, console)
    if report.llm_usage is not None:
        print_usage(report.llm_usage, console)
    print_agents(report, console)
    print_drill_down(report, console)


def usage_line(usage: LLMUsage) -> str:
    """One sentence of LLM totals, e.g. ``12 LLM calls in 4 traces: 3,400 input tokens ...``.

    Example:
        >>> from tracesim._report import LLMUsage, UsageStats
        >>> totals = UsageStats("all", 2, 1500, 300, 0, priced_calls=2, cost_usd=0.0004)
        >>> usage_line(LLMUsage(totals, (), (), 1, (), (), ()))
        '2 LLM calls in 1 trace: 1,500 input tokens, 300 output tokens; cost $0.00040.'
    """
    t = usage.totals
    cached = f" ({format_count(t.cached_input_tokens)} cached)" if t.cached_input_tokens else ""
    text = (
        f"{_n(t.calls, 'LLM call')} in {_n(usage.trace_count, 'trace')}: {format_count(t.input_tokens)} "
        f"input tokens{cached}, {format_count(t.output_tokens)} output tokens; "
    )
    if t.cost_usd is None:
        return text + "no cost: no price for their models."
    if t.priced_calls < t.calls:
        return (
            text + f"cost {format_usd(t.cost_usd)} for the {format_count(t.priced_calls)} calls with a price."
        )
    return text + f"cost {format_usd(t.cost_usd)}."


def usage_rows(rows: Sequence[UsageStats] | Sequence[TraceUsage], cached: bool) -> list[list[str]]:
    """Cells of a usage table: calls, input tokens, [cached,] output tokens, cost."""
    return [
        [
            format_count(r.calls),
            format_count(r.input_tokens),
            *([format_count(r.cached_input_tokens)] if cached else []),
            format_count(r.output_tokens),
            format_cost(r),
        ]
        for r in rows
    ]


def traces_title(usage: LLMUsage) -> str:
    """``by trace``, or ``by trace: the 10 most expensive of 240`` when they are not all listed."""
    if len(usage.traces) == usage.trace_count:
        return "by trace"
    return f"by trace: the {len(usage.traces)} most expensive of {format_count(usage.trace_count)}"


def calls_title(usage: LLMUsage) -> str:
    """``LLM calls``, or ``The 10 most expensive of 1,200 LLM calls`` when they are not all listed."""
    if len(usage.calls) == usage.totals.calls:
        return "LLM calls"
    return f"The {len(usage.calls)} most expensive of {format_count(usage.totals.calls)} LLM calls"


def print_usage(usage: LLMUsage, console: Console) -> None:
    """The LLM usage section: totals, then per model, per span name and the costliest traces."""
    console.print(Text(visible(usage_line(usage))), soft_wrap=True)
    cached = usage.totals.cached_input_tokens > 0
    numbers = ["calls", "input tokens", *(["cached"] if cached else []), "output tokens", "cost"]
    traces = f"LLM usage {traces_title(usage)}"
    for title, heads, rows, firsts in (
        ("LLM usage by model", ["model"], usage.models, [[r.name] for r in usage.models]),
        ("LLM usage by span", ["span"], usage.spans, [[r.name] for r in usage.spans]),
        (traces, ["trace", "root span"], usage.traces, [[r.trace_id, r.root or DASH] for r in usage.traces]),
    ):
        table = Table(title=title, title_justify="left")
        for head in heads:
            table.add_column(head, overflow="fold")
        for name in numbers:
            table.add_column(name, justify="right")
        for first, cells in zip(firsts, usage_rows(rows, cached), strict=True):
            table.add_row(*(_cell(c) for c in first + cells))
        print_table(console, table)
    if usage.unpriced_models:
        console.print(Text(visible(price_hint(list(usage.unpriced_models)))), soft_wrap=True)


def span_table(rows: Sequence[SpanStats], group_by: str | None) -> Table:
    """Count, errors and latency percentiles per span name."""
    table = Table(title="Spans", title_justify="left")
    if group_by:
        table.add_column(_cell(group_by), overflow="fold")
    table.add_column("span", overflow="fold")
    table.add_column("kind", no_wrap=True)
    markers = scoring_columns(rows)
    for name in ("count", "errors", "error rate", "p50", "p95", "p99", "max", *(h for h, _ in markers)):
        table.add_column(name, justify="right")
    for row in rows:
        lat = row.latency_s
        cells = [
            row.name,
            ", ".join(row.kinds) or DASH,
            format_count(row.count),
            format_count(row.errors),
            format_rate(row.error_rate),
            *(format_duration(v) for v in (lat.p50, lat.p95, lat.p99, lat.max)),
            *(format_count(getattr(row.scoring, field)) for _, field in markers),
        ]
        table.add_row(*(_cell(c) for c in ([row.group or ""] if group_by else []) + cells))
    return table


_SCORING_COLUMNS = (
    ("unscored: queue full", "dropped"),
    ("deferred", "deferred"),
    ("not sampled", "not_sampled"),
)


def scoring_columns(rows: Sequence[SpanStats]) -> list[tuple[str, str]]:
    """(heading, `ScoringCounts` field) of the scoring markers that occur: no column of zeros."""
    return [(h, f) for h, f in _SCORING_COLUMNS if any(getattr(r.scoring, f) for r in rows)]


def evaluator_table(rows: Sequence[EvaluatorStats], group_by: str | None) -> Table:
    """Results, mean score, pass rate and what was skipped, per evaluator and evaluated span."""
    table = Table(title="Evaluators", title_justify="left")
    if group_by:
        table.add_column(_cell(group_by), overflow="fold")
    table.add_column("evaluator", overflow="fold")
    table.add_column("span", overflow="fold")
    numbers = ["results", "mean score", "pass rate", "passed", "failed", "skipped", "errors", "not sampled"]
    carriers = any(r.from_carriers for r in rows)
    if carriers:
        numbers.append("on carriers")
    deferred = any(r.deferred for r in rows)
    if deferred:
        numbers += ["deferred", "late missing"]
    for name in numbers:
        table.add_column(name, justify="right")
    labels = any(set(r.labels) - _DECISION_LABELS for r in rows)
    if labels:
        table.add_column("top labels")
    for row in rows:
        cells = [
            row.name,
            row.span if row.span is not None else DASH,
            format_count(row.results),
            format_score(row.mean_score),
            format_rate(row.pass_rate),
            *(format_count(n) for n in (row.passed, row.failed, row.skipped, row.errors, row.not_sampled)),
        ]
        if carriers:
            cells.append(format_count(row.from_carriers))
        if deferred:
            cells += [format_count(row.deferred), format_count(row.deferred_missing)]
        if labels:
            cells.append(top_labels(row))
        table.add_row(*(_cell(c) for c in ([row.group or ""] if group_by else []) + cells))
    return table


def _cell(text: str) -> Text:
    """A table cell: never parsed as markup, control characters shown."""
    return Text(visible(text))


def top_labels(row: EvaluatorStats, limit: int = _TOP_LABELS) -> str:
    """The most frequent labels with their counts, e.g. ``helpful 12, unhelpful 3``."""
    items = list(row.labels.items())
    text = ", ".join(f"{label} {count}" for label, count in items[:limit])
    return text + (f", +{len(items) - limit} more" if len(items) > limit else "") if items else DASH
