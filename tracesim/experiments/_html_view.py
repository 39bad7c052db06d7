"""The report as one self-contained HTML page: the evaluators, then the cases worst first.

Like ``tracesim report --html``, the page loads nothing (a Content-Security-Policy forbids every
fetch and script) and every piece of text from the cases (inputs, outputs, errors, ids,
evaluator names) is escaped with control characters made visible. Each case row carries its
id and trace ids as ``data-`` attributes, so scripts and tests can read the order back. The
runs an evaluator that scores runs failed follow (up to `RUNS_SHOWN`, worst cases first): the
expected tool calls, how the run differs from them, and its steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tracesim._report import DASH, format_duration, format_rate, format_score, html_text
from tracesim._version import __version__
from tracesim.experiments._case import expected_data
from tracesim.experiments._run_steps import expected_calls, failures
from tracesim.experiments._text_view import failed_runs, preview, summary_line

if TYPE_CHECKING:
    from tracesim.experiments._run_view import RunView
    from tracesim.experiments._stats import CaseSummary

__all__ = ["RUNS_SHOWN", "render_html"]

RUNS_SHOWN = 50
"""Failed runs the page shows with their steps (the JSON file keeps every one)."""

_CSP = "default-src 'none'; style-src 'unsafe-inline'"
_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; color: #222; margin: 2rem auto; max-width: 1280px;
       padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { margin-top: 2rem; font-size: 1.25rem; }
.summary { color: #444; }
.cards { display: flex; gap: 1rem; flex-wrap: wrap; margin: 1rem 0; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: .6rem 1rem; min-width: 8rem; }
.card b { display: block; font-size: 1.35rem; }
table { border-collapse: collapse; margin: .8rem 0; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #e4e4e4; padding: .3rem .7rem; text-align: left; vertical-align: top; }
th { background: #f5f5f5; } td.n, th.n { text-align: right; white-space: nowrap; }
td.text { max-width: 26rem; overflow-wrap: anywhere; white-space: pre-wrap; }
code { font-size: 12px; } .scroll { overflow-x: auto; }
.run { border-left: 3px solid #b03020; padding-left: .8rem; margin: 1rem 0; } .run h3 { margin: 0 0 .3rem; }
.fail, .error { color: #b03020; font-weight: 600; } .pass { color: #27743a; font-weight: 600; }
footer { margin-top: 2.5rem; color: #777; font-size: 12px; }
"""
_TEXT_CHARS = 600  # per input / output cell: the page stays readable; the JSON file has everything


def render_html(report: RunView) -> str:
    """The whole page as a string.

    Example:
        >>> from tracesim.experiments import Case, Dataset
        >>> report = Dataset([Case("<b>2+2</b>", "4")]).evaluate(lambda q: "4", evaluators=["exact"])
        >>> page = render_html(report)
        >>> page.startswith("<!DOCTYPE html>"), "<b>2+2" in page, "&lt;b&gt;2+2" in page
        (True, False, True)
    """
    title = f"experiment {report.name}"
    body = [
        f"<header><h1>{html_text(title)}</h1>",
        f'<p class="summary">{html_text(summary_line(report))}</p></header>',
        _cards(report),
    ]
    if report.evaluators:
        body.append(f'<section id="evaluators"><h2>Evaluators</h2>{_evaluator_table(report)}</section>')
    body.append(
        '<section id="cases"><h2>Cases, worst first</h2>'
        "<p>Most task errors first, then the lowest pass rate, then the lowest mean score. "
        "Open a trace with <code>tracesim show</code> or in your backend by its id.</p>"
        f"{_case_table(report, report.worst_first())}</section>"
    )
    runs = _failed_runs(report)
    if runs:
        body.append(runs)
    body.append(
        f"<footer>tracesim {html_text(__version__)}; run {html_text(report.run_id or DASH)} started "
        f"{html_text(report.started_at or DASH)}. A run passes when every evaluator that decided passed; "
        "evaluator pass rate = passed / (passed + failed + errors).</footer>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html_text(title)}</title><style>{_CSS}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def _cards(report: RunView) -> str:
    cards = [
        ("cases", str(len(report.cases))),
        ("runs", str(len(report.rows))),
        ("pass rate", format_rate(report.pass_rate)),
        ("task errors", str(report.errors)),
    ]
    if report.repeat > 1:
        k = report.repeat
        cards += [
            ("pass@1", format_score(report.pass_at_1)),
            (f"pass@{k}", format_score(report.pass_at_k)),
            (f"pass^{k}", format_score(report.pass_hat_k)),
        ]
    inner = "".join(f'<div class="card"><b>{html_text(v)}</b>{html_text(k)}</div>' for k, v in cards)
    return f'<div class="cards">{inner}</div>'


def _evaluator_table(report: RunView) -> str:
    headers = ["evaluator", "type", "mean", "pass rate", "passed", "failed", "errors", "skipped", "threshold"]
    rows = []
    for info in report.evaluators:
        s = report.summary[info.name]
        threshold = DASH if info.threshold is None else f"{info.threshold:g}"
        counts = [str(n) for n in (s.passed, s.failed, s.errors, s.skipped)]
        cells = [info.name, info.type, format_score(s.mean), format_rate(s.pass_rate), *counts, threshold]
        rows.append("".join(_td(c, numeric=i >= 2) for i, c in enumerate(cells)))
    return _table(headers, rows, numeric_from=2, row_attrs=[""] * len(rows))


def _case_table(report: RunView, cases: Sequence[CaseSummary]) -> str:
    names = [e.name for e in report.evaluators]
    k = report.repeat
    headers = ["case", "result", *names]
    if k > 1:
        headers += ["pass@1", f"pass@{k}", f"pass^{k}"]
    headers += ["time", "input", "expected", "output / error", "trace ids"]
    rows, attrs = [], []
    for case in cases:
        run = case.worst_run
        cells = [_td(case.case_id), _result_cell(case, k)]
        for name in names:
            stats = case.scores[name]
            text = format_score(stats.mean)
            if stats.stdev is not None:
                text += f" ± {stats.stdev:.3f}"
            cells.append(_td(text, numeric=True))
        if k > 1:
            cells += [
                _td(format_score(v), numeric=True) for v in (case.pass_rate, case.pass_at_k, case.pass_hat_k)
            ]
        duration = sum(r.duration_s for r in case.runs) / len(case.runs)
        shown = run.error if run.error is not None else run.output
        trace_ids = [r.trace_id for r in _worst_runs_first(case) if r.trace_id]
        cells += [
            _td(format_duration(duration), numeric=True),
            _td(preview(run.input, _TEXT_CHARS), wrap=True),
            _td(preview(expected_data(run.expected), _TEXT_CHARS), wrap=True),
            f'<td class="text{" error" if run.error else ""}">{html_text(preview(shown, _TEXT_CHARS))}</td>',
            "<td>"
            + "<br>".join(f"<code>{html_text(t)}</code>" for t in trace_ids)
            + (DASH if not trace_ids else "")
            + "</td>",
        ]
        rows.append("".join(cells))
        ids = html_text(" ".join(trace_ids))
        attrs.append(f' class="case" data-case-id="{html_text(case.case_id)}" data-trace-ids="{ids}"')
    return _table(
        headers, rows, numeric_from=2, numeric_to=2 + len(names) + (3 if k > 1 else 0) + 1, row_attrs=attrs
    )


def _failed_runs(report: RunView) -> str:
    rows = failed_runs(report.worst_first())
    if not rows:
        return ""
    parts = [
        '<section id="failed-runs"><h2>Failed runs</h2>'
        "<p>The runs an evaluator that scores runs failed, worst cases first: the tool calls the case "
        "expects, how the run differs from them, and the run's steps in start order.</p>"
    ]
    for row in rows[:RUNS_SHOWN]:
        run = row.run or {}
        title = row.case_id + (f" (repeat {row.repeat})" if row.repeat else "")
        counts, failed = failures(row)
        items = []
        wanted = expected_calls(row.expected)
        if wanted is not None:
            items.append(f"<li>expected calls: <code>{html_text(wanted)}</code></li>")
        for text, differences in failed:
            found = "".join(
                f"<li>{html_text(label)}: <code>{html_text(value)}</code></li>"
                for label, value in differences
            )
            listed = f"<ul>{found}</ul>" if found else ""
            items.append(f'<li class="fail">{html_text(text)}{listed}</li>')
        parts.append(
            f'<div class="run" data-case-id="{html_text(row.case_id)}"><h3>{html_text(title)}</h3>'
            f"<p>{html_text(counts)}</p><ul>{''.join(items)}</ul>{_step_table(run)}</div>"
        )
    if len(rows) > RUNS_SHOWN:
        parts.append(f"<p>... and {len(rows) - RUNS_SHOWN} more failed runs (the JSON file holds them).</p>")
    parts.append("</section>")
    return "".join(parts)


def _step_table(run: Any) -> str:
    steps = run.get("steps") if isinstance(run.get("steps"), list) else []
    rows = []
    for number, step in enumerate(steps, 1):
        if not isinstance(step, dict):
            continue
        requested = step.get("requested")
        arguments = step.get("arguments")
        if arguments is None and isinstance(requested, list) and requested:
            arguments = "asked for " + ", ".join(map(str, requested))
        duration = step.get("duration_s")
        took = format_duration(float(duration)) if isinstance(duration, (int, float)) else DASH
        error = step.get("error")
        cells = [
            _td(str(number), numeric=True),
            _td(str(step.get("kind", ""))),
            _td(str(step.get("name", ""))),
            _td(DASH if arguments is None else str(arguments), wrap=True),
            _td(DASH if step.get("output") is None else str(step["output"]), wrap=True),
            f'<td class="text error">{html_text(str(error))}</td>' if error else _td(DASH),
            _td(took, numeric=True),
        ]
        rows.append("".join(cells))
    total = run.get("steps_total")
    more = total - len(steps) if isinstance(total, int) and total > len(steps) else 0
    note = f"<p>... {more} more steps</p>" if more else ""
    if run.get("truncated"):
        note += f"<p>The run was cut short: {html_text(str(run['truncated']))}</p>"
    headers = ["#", "kind", "name", "arguments", "output", "error", "duration"]
    return _table(headers, rows, numeric_from=6, row_attrs=[' class="step"'] * len(rows)) + note


def _worst_runs_first(case: CaseSummary) -> list[Any]:
    return sorted(case.runs, key=lambda r: (r.error is None, r.passed is not False, r.repeat))


def _result_cell(case: CaseSummary, repeat: int) -> str:
    if repeat > 1:
        css = "pass" if case.passed == len(case.runs) else "fail"
        text = f"{case.passed}/{len(case.runs)} passed" + (f", {case.errors} errors" if case.errors else "")
        return f'<td class="{css}">{html_text(text)}</td>'
    run = case.runs[0]
    if run.error is not None:
        return '<td class="error">error</td>'
    label, css = {True: ("pass", "pass"), False: ("fail", "fail"), None: (DASH, "")}[run.passed]
    return f'<td class="{css}">{label}</td>'


def _td(text: str, *, numeric: bool = False, wrap: bool = False) -> str:
    css = ' class="n"' if numeric else ' class="text"' if wrap else ""
    return f"<td{css}>{html_text(text)}</td>"


def _table(
    headers: list[str],
    rows: list[str],
    *,
    numeric_from: int,
    row_attrs: list[str],
    numeric_to: int | None = None,
) -> str:
    end = len(headers) if numeric_to is None else numeric_to
    numeric = ' class="n"'
    head = "".join(
        f"<th{numeric if numeric_from <= i < end else ''}>{html_text(h)}</th>" for i, h in enumerate(headers)
    )
    body = "".join(f"<tr{a}>{r}</tr>" for a, r in zip(row_attrs, rows, strict=True))
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'
