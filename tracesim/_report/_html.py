"""The report as one self-contained HTML page: inline CSS, inline SVG charts, no scripts.

The page loads nothing: a Content-Security-Policy forbids every fetch and script, so it reads
the same offline, from an e-mail attachment or a CI artifact. All text from the trace files
(span names, evaluator names, labels, group values, file names) is escaped, with control
characters and bidirectional overrides shown as symbols (`visible`).
"""

from __future__ import annotations

from collections.abc import Sequence

from tracesim._pricing import PRICES_AS_OF, format_usd, price_hint
from tracesim._report._agents_html import agents_section
from tracesim._report._format import (
    DASH,
    format_count,
    format_duration,
    format_rate,
    format_score,
    html_text,
)
from tracesim._report._gate import GateResult
from tracesim._report._report_data import (
    CallScore,
    EvaluatorStats,
    LLMCall,
    LLMUsage,
    Report,
    SpanStats,
    UsageStats,
)
from tracesim._report._svg import DECISION_COLOURS, LATENCY_COLOURS, latency_chart, score_histogram
from tracesim._report._terminal_report import (
    calls_title,
    scoring_columns,
    scoring_notes,
    status_line,
    summary_line,
    top_labels,
    traces_title,
    usage_line,
    usage_rows,
)
from tracesim._report._timeline_html import timeline_section
from tracesim._version import __version__

__all__ = ["render_html"]

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; color: #222; margin: 2rem auto; max-width: 1560px;
       padding: 0 1rem; }
td.text { max-width: 26rem; overflow-wrap: anywhere; } td.id { font: 12px ui-monospace, monospace; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { margin-top: 2.2rem; font-size: 1.25rem; }
h3 { font-size: 1.05rem; margin: 1.2rem 0 .2rem; }
.summary { color: #444; } .files { color: #666; font-size: 12px; word-break: break-all; }
.cards { display: flex; gap: 1rem; flex-wrap: wrap; margin: 1rem 0; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: .6rem 1rem; min-width: 8rem; }
.card b { display: block; font-size: 1.35rem; }
table { border-collapse: collapse; margin: .8rem 0; font-variant-numeric: tabular-nums; font-size: 13px; }
th, td { border-bottom: 1px solid #e4e4e4; padding: .3rem .45rem; text-align: left; }
th { background: #f5f5f5; vertical-align: bottom; font-size: 12px; }
td.n, th.n { text-align: right; } td.n { white-space: nowrap; }
.charts { display: flex; flex-wrap: wrap; gap: 1.2rem; }
figure { margin: 0; border: 1px solid #e4e4e4; border-radius: 6px; padding: .5rem; }
figcaption { font-size: 13px; margin-bottom: .3rem; }
.key { display: inline-block; width: .8em; height: .8em; margin: 0 .25em 0 .4em; vertical-align: -1px; }
.scroll { overflow-x: auto; }
.fail, .missing, .undecided { color: #b03020; font-weight: 600; } .pass { color: #27743a; font-weight: 600; }
.warnings li, .note { color: #8a5a00; } footer { margin-top: 2.5rem; color: #777; font-size: 12px; }
.notice { border-left: 4px solid #d55e00; background: #fdf3ec; padding: .5rem .9rem; margin: .6rem 0; }
.legend { font-size: 13px; margin: .2rem 0 .6rem; }
h4 { font-size: .95rem; margin: 1rem 0 .2rem; } p.run { margin: .7rem 0 0; font-size: 13px; }
"""


def render_html(report: Report, gates: Sequence[GateResult] = ()) -> str:
    """The whole page as a string; write it with ``Path(...).write_text(html, encoding="utf-8")``.

    Example:
        >>> from tracesim._report import summarize
        >>> page = render_html(summarize([]))
        >>> page.startswith("<!DOCTYPE html>") and "http" not in page.split("<body>")[1]
        True
    """
    grouped = report.group_by is not None
    body = [
        "<header><h1>tracesim report</h1>",
        f'<p class="summary">{html_text(summary_line(report))}</p>',
        f'<p class="files">Files: {html_text(", ".join(report.files)) or DASH}</p></header>',
        _cards(report),
        *(f'<p class="notice scoring">{html_text(note)}</p>' for note in scoring_notes(report)),
    ]
    if gates:
        body.append(_gates(gates))
    if report.evaluator_totals:
        body.append(f'<section id="evaluators"><h2>Evaluators</h2><p class="legend">{_DECISION_LEGEND}</p>')
        body.append('<div class="charts">')
        body.extend(_evaluator_figure(e) for e in report.evaluator_totals)
        body.append("</div>")
        body.append(_evaluator_table(report.evaluators, report.group_by if grouped else None))
        body.append("</section>")
    if report.llm_usage is not None:
        body.append(_usage_section(report.llm_usage))
    if report.agents:
        body.append(agents_section(report))
    if report.spans:
        body.append('<section id="spans"><h2>Spans</h2>')
        label = (lambda r: f"{r.group} · {r.name}") if grouped else (lambda r: r.name)
        body.append(f'<figure class="latency-chart"><figcaption>{_LATENCY_LEGEND}</figcaption>')
        body.append(latency_chart(report.spans, label=label) + "</figure>")
        body.append(_span_table(report.spans, report.group_by if grouped else None))
        body.append(f'<p class="files">{html_text(status_line(report))}</p></section>')
    if report.timeline is not None:
        body.append(timeline_section(report.timeline, report.evaluator_totals))
    body.extend(_drill_down(report))
    if report.warnings:
        items = "".join(f"<li>{html_text(w)}</li>" for w in report.warnings)
        body.append(f'<section id="warnings"><h2>Warnings</h2><ul class="warnings">{items}</ul></section>')
    body.append(
        f"<footer>tracesim {html_text(__version__)}. Percentiles interpolate linearly between closest "
        "ranks; mean score covers results with status ok; pass rate = passed / (passed + failed)."
        "</footer>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>tracesim report</title><style>{_CSS}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


_LATENCY_LEGEND = (
    "Latency per span name, log scale: "
    + ", ".join(f'<i class="key" style="background:{colour}"></i>{name}' for name, colour in LATENCY_COLOURS)
    + "; the tick marks the slowest span"
)
_DECISION_LEGEND = (
    "Score histograms: "
    + ", ".join(f'<i class="key" style="background:{colour}"></i>{name}' for name, colour in DECISION_COLOURS)
    + " (each result's own decision, so a bar can hold both); the dashed line is the threshold."
)


def _cards(report: Report) -> str:
    t = report.totals
    error_rate = t.errors / t.spans if t.spans else None
    cards = [
        ("spans", format_count(t.spans)),
        ("traces", format_count(t.traces)),
        ("span errors", f"{format_count(t.errors)} ({format_rate(error_rate)})"),
        ("evaluation results", format_count(t.results)),
    ]
    inner = "".join(f'<div class="card"><b>{html_text(v)}</b>{html_text(k)}</div>' for k, v in cards)
    return f'<div class="cards">{inner}</div>'


def _gates(gates: Sequence[GateResult]) -> str:
    rows = "".join(
        f'<tr><td>{html_text(g.evaluator)}</td><td class="n">{format_rate(g.min_rate)}</td>'
        f'<td class="n">{format_rate(g.pass_rate)}</td><td class="n">{g.passed} / {g.decided}</td>'
        f'<td class="{g.outcome}">{g.outcome}</td></tr>'
        for g in gates
    )
    head = (
        '<tr><th>evaluator</th><th class="n">required</th><th class="n">pass rate</th>'
        '<th class="n">passed / decided</th><th>outcome</th></tr>'
    )
    return (
        f'<section id="gates"><h2>Gates (--fail-under)</h2><table><thead>{head}</thead>'
        f"<tbody>{rows}</tbody></table></section>"
    )


def _usage_section(usage: LLMUsage) -> str:
    cached = usage.totals.cached_input_tokens > 0
    numbers = ["calls", "input tokens", *(["cached"] if cached else []), "output tokens", "cost"]
    numeric = set(range(1, len(numbers) + 1))
    trace_cells = usage_rows(usage.traces, cached)
    traces = [
        [t.root or DASH, t.trace_id, *cells] for t, cells in zip(usage.traces, trace_cells, strict=True)
    ]
    parts = [
        '<section id="llm-usage"><h2>LLM usage</h2>',
        f'<p class="summary">{html_text(usage_line(usage))}</p>',
        "<h3>By model</h3>",
        _table(["model", *numbers], _rows(usage.models, cached), numeric),
        "<h3>By span</h3>",
        _table(["span", *numbers], _rows(usage.spans, cached), numeric),
        f"<h3>{html_text(traces_title(usage).capitalize())}</h3>",
        _table(["root span", "trace", *numbers], traces, {n + 1 for n in numeric}),
        f"<h3>{html_text(calls_title(usage))}</h3>",
        _calls_table(usage.calls, cached),
    ]
    if usage.unpriced_models:
        parts.append(f'<p class="note">{html_text(price_hint(list(usage.unpriced_models)))}</p>')
    parts.append(
        '<p class="files">Cost: the span\'s own llm.cost.total, else its tokens priced with the configured '
        f"prices over OpenAI's list prices as known on {PRICES_AS_OF}.</p></section>"
    )
    return "".join(parts)


def _rows(rows: Sequence[UsageStats], cached: bool) -> list[list[str]]:
    return [[r.name, *cells] for r, cells in zip(rows, usage_rows(rows, cached), strict=True)]


def _calls_table(calls: Sequence[LLMCall], cached: bool) -> str:
    tokens = ["input tokens", *(["cached"] if cached else []), "output tokens"]
    rows = [
        [
            c.name,
            c.model or DASH,
            _tokens(c.input_tokens),
            *([format_count(c.cached_input_tokens)] if cached else []),
            _tokens(c.output_tokens),
            format_usd(c.cost_usd, DASH),
            ", ".join(_score_text(s) for s in c.scores) or DASH,
            c.trace_id,
        ]
        for c in calls
    ]
    numeric = set(range(2, len(tokens) + 3))  # the tokens and the cost
    return _table(["span", "model", *tokens, "cost", "scores", "trace"], rows, numeric)


def _tokens(count: int | None) -> str:
    return DASH if count is None else format_count(count)


def _score_text(score: CallScore) -> str:
    if score.status == "error":
        return f"! {score.evaluator} error"
    if score.status == "skipped":
        return f"· {score.evaluator} skipped"
    mark = "✓" if score.passed is True else "✗" if score.passed is False else "·"
    text = f"{mark} {score.evaluator}"
    if score.score is not None:
        text += f" {format_score(score.score)}"
    return text + (f" {score.label}" if score.label and score.label not in ("pass", "fail") else "")


def _evaluator_figure(stats: EvaluatorStats) -> str:
    caption = (
        f"<b>{html_text(stats.name)}</b>: {format_count(stats.results)} results, "
        f"mean {format_score(stats.mean_score)}, pass rate {format_rate(stats.pass_rate)}"
    )
    chart = score_histogram(stats)
    return f'<figure class="evaluator-chart"><figcaption>{caption}</figcaption>{chart}</figure>'


def _evaluator_table(rows: Sequence[EvaluatorStats], group_by: str | None) -> str:
    counts = ["passed", "failed", "skipped", "errors", "not_sampled"]
    # columns that are zero in most files show only when they are not, as in the terminal; in a
    # page 1,000 px wide there is room for one column of deferred results, not two
    carriers, deferred = any(r.from_carriers for r in rows), any(r.deferred for r in rows)
    headers = "evaluator|span|results|mean score|pass rate|passed|failed|skipped|errors|not sampled"
    headers += "|on carriers" * carriers + "|deferred" * deferred + "|thresholds|top labels"
    body = [
        [
            row.name,
            row.span if row.span is not None else DASH,
            format_count(row.results),
            format_score(row.mean_score),
            format_rate(row.pass_rate),
            *(format_count(getattr(row, name)) for name in counts),
            *([format_count(row.from_carriers)] if carriers else []),
            *([_deferred(row)] if deferred else []),
            ", ".join(f"{t:g}" for t in row.thresholds) or DASH,
            top_labels(row),
        ]
        for row in rows
    ]
    numeric = set(range(2, 10 + carriers + deferred))
    return _grouped_table(headers, body, [r.group for r in rows], group_by, numeric=numeric)


def _deferred(row: EvaluatorStats) -> str:
    """Spans that ended with the evaluator still running, and how many of its results never came."""
    missing = f" ({format_count(row.deferred_missing)} missing)" if row.deferred_missing else ""
    return format_count(row.deferred) + missing


def _span_table(rows: Sequence[SpanStats], group_by: str | None) -> str:
    markers = scoring_columns(rows)
    headers = "|".join(["span|kind|count|errors|error rate|mean|p50|p95|p99|max", *(h for h, _ in markers)])
    body = [
        [
            row.name,
            ", ".join(row.kinds) or DASH,
            format_count(row.count),
            format_count(row.errors),
            format_rate(row.error_rate),
            *(format_duration(getattr(row.latency_s, k)) for k in ("mean", "p50", "p95", "p99", "max")),
            *(format_count(getattr(row.scoring, field)) for _, field in markers),
        ]
        for row in rows
    ]
    numeric = set(range(2, 10 + len(markers)))
    return _grouped_table(headers, body, [r.group for r in rows], group_by, numeric=numeric)


def _drill_down(report: Report) -> list[str]:
    """The errors by type and the worst cases of each evaluator (escaped, cut to 300 characters)."""
    sections: list[str] = []
    if report.error_types:
        rows = [
            f'<tr><td>{html_text(e.type)}</td><td class="n">{e.count}</td>'
            f'<td>{html_text(", ".join(e.spans))}</td><td class="text">{html_text(e.message)}</td>'
            f'<td class="id">{html_text(e.trace_id)}</td></tr>'
            for e in report.error_types
        ]
        sections.append(
            '<section id="errors"><h2>Errors by type</h2><p class="note">Each exception counted once, in the '
            "span that raised it.</p>"
            + _drill_table(["type", "count", "raised in", "example message", "example trace"], rows)
            + "</section>"
        )
    if report.worst_cases:
        rows = []
        for case in report.worst_cases:
            verdict = "" if case.passed is None else ("pass" if case.passed else "fail")
            cells = [
                f"<td>{html_text(case.evaluator)}</td>",
                f'<td class="n">{DASH if case.score is None else f"{case.score:.4g}"}</td>',
                f'<td class="{verdict}">{verdict}</td>',
                f"<td>{html_text(case.span or DASH)}</td>",
                *(
                    f'<td class="text">{html_text(v or DASH)}</td>'
                    for v in (case.input, case.output, case.expected)
                ),
                f'<td class="id">{html_text(case.trace_id)}</td>',
            ]
            rows.append("<tr>" + "".join(cells) + "</tr>")
        headers = ["evaluator", "score", "", "span", "input", "output", "expected", "trace"]
        sections.append(
            '<section id="worst"><h2>Worst cases</h2><p class="note">Per evaluator, failures first, then the '
            "lowest scores (the highest, for a distance).</p>" + _drill_table(headers, rows) + "</section>"
        )
    return sections


def _drill_table(headers: list[str], rows: list[str]) -> str:
    head = "".join(f"<th>{html_text(h)}</th>" for h in headers)
    body = "".join(rows)
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _grouped_table(
    headers: str, rows: list[list[str]], groups: list[str | None], group_by: str | None, numeric: set[int]
) -> str:
    """A table whose ``|``-separated headers get a leading group column when grouping."""
    names = headers.split("|")
    if group_by is None:
        return _table(names, rows, numeric)
    cells = [[g or "", *r] for g, r in zip(groups, rows, strict=True)]
    return _table([group_by, *names], cells, {n + 1 for n in numeric})


def _table(headers: list[str], rows: list[list[str]], numeric: set[int]) -> str:
    def cls(i: int) -> str:
        return ' class="n"' if i in numeric else ""

    head = "".join(f"<th{cls(i)}>{html_text(h)}</th>" for i, h in enumerate(headers))
    cells = ("".join(f"<td{cls(i)}>{html_text(c)}</td>" for i, c in enumerate(row)) for row in rows)
    body = "".join(f"<tr>{row}</tr>" for row in cells)
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
