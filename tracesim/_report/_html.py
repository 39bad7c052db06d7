"""The report as one self-contained HTML page: inline CSS, inline SVG charts, no scripts.

The page loads nothing: a Content-Security-Policy forbids every fetch and script, so it reads
the same offline, from an e-mail attachment or a CI artifact. All text from the trace files
(span names, evaluator names, labels, group values, file names) is escaped, with control
characters and bidirectional overrides shown as symbols (`visible`).
"""

from __future__ import annotations

from collections.abc import Sequence

from tracesim._report._format import (
    DASH,
    format_count,
    format_duration,
    format_rate,
    format_score,
    html_text,
)
from tracesim._report._gate import GateResult
from tracesim._report._model import EvaluatorStats, Report, SpanStats
from tracesim._report._svg import LATENCY_COLOURS, latency_chart, score_histogram
from tracesim._report._text import summary_line, top_labels
from tracesim._version import __version__

__all__ = ["render_html"]

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; color: #222; margin: 2rem auto; max-width: 1180px;
       padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { margin-top: 2.2rem; font-size: 1.25rem; }
.summary { color: #444; } .files { color: #666; font-size: 12px; word-break: break-all; }
.cards { display: flex; gap: 1rem; flex-wrap: wrap; margin: 1rem 0; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: .6rem 1rem; min-width: 8rem; }
.card b { display: block; font-size: 1.35rem; }
table { border-collapse: collapse; margin: .8rem 0; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #e4e4e4; padding: .3rem .7rem; text-align: left; }
th { background: #f5f5f5; } td.n, th.n { text-align: right; white-space: nowrap; }
.charts { display: flex; flex-wrap: wrap; gap: 1.2rem; }
figure { margin: 0; border: 1px solid #e4e4e4; border-radius: 6px; padding: .5rem; }
figcaption { font-size: 13px; margin-bottom: .3rem; }
.key { display: inline-block; width: .8em; height: .8em; margin: 0 .25em 0 .4em; vertical-align: -1px; }
.scroll { overflow-x: auto; }
.fail, .missing, .undecided { color: #b03020; font-weight: 600; } .pass { color: #27743a; font-weight: 600; }
.warnings li { color: #8a5a00; } footer { margin-top: 2.5rem; color: #777; font-size: 12px; }
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
    ]
    if gates:
        body.append(_gates(gates))
    if report.evaluator_totals:
        body.append('<section id="evaluators"><h2>Evaluators</h2><div class="charts">')
        body.extend(_evaluator_figure(e) for e in report.evaluator_totals)
        body.append("</div>")
        body.append(_evaluator_table(report.evaluators, report.group_by if grouped else None))
        body.append("</section>")
    if report.spans:
        body.append('<section id="spans"><h2>Spans</h2>')
        label = (lambda r: f"{r.group} · {r.name}") if grouped else (lambda r: r.name)
        body.append(f'<figure class="latency-chart"><figcaption>{_LATENCY_LEGEND}</figcaption>')
        body.append(latency_chart(report.spans, label=label) + "</figure>")
        body.append(_span_table(report.spans, report.group_by if grouped else None))
        body.append("</section>")
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


def _evaluator_figure(stats: EvaluatorStats) -> str:
    caption = (
        f"<b>{html_text(stats.name)}</b>: {format_count(stats.results)} results, "
        f"mean {format_score(stats.mean_score)}, pass rate {format_rate(stats.pass_rate)}"
    )
    chart = score_histogram(stats)
    return f'<figure class="evaluator-chart"><figcaption>{caption}</figcaption>{chart}</figure>'


def _evaluator_table(rows: Sequence[EvaluatorStats], group_by: str | None) -> str:
    headers = (
        "evaluator|span|results|mean score|pass rate|passed|failed|skipped|errors|not sampled|on carriers"
    )
    headers += "|thresholds|top labels"
    body = [
        [
            row.name,
            row.span if row.span is not None else DASH,
            format_count(row.results),
            format_score(row.mean_score),
            format_rate(row.pass_rate),
            *(format_count(n) for n in (row.passed, row.failed, row.skipped, row.errors, row.not_sampled)),
            format_count(row.from_carriers),
            ", ".join(f"{t:g}" for t in row.thresholds) or DASH,
            top_labels(row),
        ]
        for row in rows
    ]
    return _grouped_table(headers, body, [r.group for r in rows], group_by, numeric=set(range(2, 11)))


def _span_table(rows: Sequence[SpanStats], group_by: str | None) -> str:
    headers = "span|kind|count|errors|error rate|mean|p50|p95|p99|max"
    body = [
        [
            row.name,
            ", ".join(row.kinds) or DASH,
            format_count(row.count),
            format_count(row.errors),
            format_rate(row.error_rate),
            *(format_duration(getattr(row.latency_s, k)) for k in ("mean", "p50", "p95", "p99", "max")),
        ]
        for row in rows
    ]
    return _grouped_table(headers, body, [r.group for r in rows], group_by, numeric=set(range(2, 10)))


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
