"""The timeline on the HTML page: a small SVG line chart per evaluator and per busy span name.

Like `~tracesim._report._svg`, the charts are plain SVG drawn here (no scripts), with every
point's value in a ``<title>`` and each chart's summary in ``aria-label``. A bucket without
data leaves a gap in its line instead of a made-up zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tracesim._report._format import format_count, format_duration, format_rate, format_score, html_text
from tracesim._report._report_data import EvaluatorStats, Timeline, TimelineEvaluator, TimelineSpan
from tracesim._report._timeline_text import bucket_labels, timeline_title

__all__ = ["SPAN_CHARTS", "timeline_section"]

SPAN_CHARTS = 6
"""Span names charted over time, the busiest first (the JSON has them all)."""

_W, _H = 400, 210  # three to a row at 1,400 px, two at 1,000 px
_LEFT, _RIGHT, _TOP, _BOTTOM = 62, 44, 14, 30
_STRIP = 38  # height of the calls/errors strip under a span chart
_FONT = 'font-family="system-ui, sans-serif" font-size="11"'
_AXIS, _GRID = "#666", "#e2e2e2"
_RATE, _MEAN = "#0072b2", "#e69f00"  # Okabe & Ito blue and orange
_P50, _P95 = "#2c5d8f", "#56b4e9"
_CALLS, _ERRORS = "#c8c8c8", "#d55e00"
_MAX_X_LABELS = 6


def timeline_section(timeline: Timeline, totals: Sequence[EvaluatorStats]) -> str:
    """The ``#timeline`` section: one chart per evaluator, then one per busy span name.

    ``totals`` (the report's evaluator totals) give each evaluator's score range.

    Example:
        >>> t = Timeline(600, ("2026-09-21T14:10:00Z", "2026-09-21T14:20:00Z"), None, (), ())
        >>> timeline_section(t, ()).startswith('<section id="timeline">')
        True
    """
    labels = bucket_labels(timeline)
    ranges = {e.name: (e.histogram.edges[0], e.histogram.edges[-1]) for e in totals if e.histogram.edges}
    figures = [_evaluator_figure(e, labels, ranges.get(e.name, (0.0, 1.0))) for e in timeline.evaluators]
    figures += [_span_figure(s, labels) for s in timeline.spans[:SPAN_CHARTS]]
    note = f"{timeline_title(timeline)}: a result counts when the span it judged started."
    if len(timeline.spans) > SPAN_CHARTS:
        note += f" The {SPAN_CHARTS} busiest of {len(timeline.spans)} span names; --json has them all."
    return (
        f'<section id="timeline"><h2>Over time</h2><p class="note">{html_text(note)}</p>'
        f'<div class="charts">{"".join(figures)}</div></section>'
    )


def _key(colour: str, text: str) -> str:
    return f'<i class="key" style="background:{colour}"></i>{text}'


def _evaluator_figure(e: TimelineEvaluator, labels: list[str], score_range: tuple[float, float]) -> str:
    decided = any(p + f for p, f in zip(e.passed, e.failed, strict=True))
    lines: list[_Line] = []
    if decided:
        notes = [
            f"pass rate {format_rate(r)} ({p} of {p + f})"
            for r, p, f in zip(e.pass_rate, e.passed, e.failed, strict=True)
        ]
        lines.append(_Line("pass rate", e.pass_rate, 0.0, 1.0, _RATE, "", notes, format_rate))
    notes = [
        f"mean score {format_score(m)} ({n} scores)" for m, n in zip(e.mean_score, e.scored, strict=True)
    ]
    lo, hi = _scale(*score_range)
    lines.append(_Line("mean score", e.mean_score, lo, hi, _MEAN, "5 3" if decided else "", notes, _tick))
    keys = " ".join(
        _key(line.colour, f"{line.name}{', dashed' if line.dash else ''} ({side})")
        for line, side in zip(lines, ("left", "right"), strict=False)
    )
    caption = f"<b>{html_text(e.name)}</b>: {keys}"
    title = f"{e.name} over time: " + ("pass rate and mean score" if decided else "mean score")
    chart = _chart(title, "evaluator-trend", labels, lines)
    return f'<figure class="timeline-chart"><figcaption>{caption}</figcaption>{chart}</figure>'


def _span_figure(s: TimelineSpan, labels: list[str]) -> str:
    hi = _nice(max((v for v in s.p95 if v is not None), default=0.0))
    p50_notes = [f"p50 {_duration(v)} ({n} spans)" for v, n in zip(s.p50, s.count, strict=True)]
    p95_notes = [f"p95 {_duration(v)}" for v in s.p95]
    lines = [
        _Line("p50", s.p50, 0.0, hi, _P50, "", p50_notes, _duration_tick),
        _Line("p95", s.p95, 0.0, hi, _P95, "5 3", p95_notes, _duration_tick),
    ]
    caption = (
        f"<b>{html_text(s.name)}</b>: {_key(_P50, 'p50')} {_key(_P95, 'p95, dashed')}; "
        f"below: {_key(_CALLS, 'spans')} {_key(_ERRORS, 'errors')}"
    )
    title = f"{s.name} over time: p50 and p95 latency, spans and errors per bucket"
    chart = _chart(title, "span-trend", labels, lines, strip=(s.count, s.errors))
    return f'<figure class="timeline-chart"><figcaption>{caption}</figcaption>{chart}</figure>'


@dataclass(frozen=True)
class _Line:
    """One series on its own scale, ``lo`` to ``hi``, with a note per point for its tooltip."""

    name: str
    values: Sequence[float | None]
    lo: float
    hi: float
    colour: str
    dash: str
    notes: Sequence[str]
    tick: Callable[[float], str]


def _scale(lo: float, hi: float) -> tuple[float, float]:
    return (lo, hi) if hi > lo else (lo, lo + 1.0)


def _chart(
    title: str,
    cls: str,
    labels: list[str],
    lines: Sequence[_Line],
    strip: tuple[Sequence[int], Sequence[int]] | None = None,
) -> str:
    """Lines over the buckets; with ``strip`` (spans, errors), bars of them under the lines."""
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    strip_h = _STRIP if strip is not None else 0
    height = _H + strip_h
    n = max(len(labels), 1)

    def x(i: int) -> float:
        return _LEFT + (i + 0.5) * plot_w / n

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart timeline {cls}" width="{_W}" '
        f'height="{height}" viewBox="0 0 {_W} {height}" role="img" aria-label="{html_text(title)}">'
        f"<title>{html_text(title)}</title>"
    ]
    parts += _axes(lines, plot_h)
    for line in lines:
        parts += _series(line, x, plot_h, labels)
    base = _TOP + plot_h
    if strip is not None:
        parts += _strip(strip, x, plot_w / n, base + 10, labels)
    step = math.ceil(n / _MAX_X_LABELS)
    parts += [_text(x(i), base + strip_h + 18, labels[i]) for i in range(0, len(labels), step)]
    parts.append("</svg>")
    return "".join(parts)


def _axes(lines: Sequence[_Line], plot_h: float) -> list[str]:
    base = _TOP + plot_h
    parts = [
        f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_W - _RIGHT}" y2="{y:.1f}" stroke="{_GRID}"/>'
        for y in (_TOP, _TOP + plot_h / 2)
    ]
    parts.append(f'<line x1="{_LEFT}" y1="{base}" x2="{_W - _RIGHT}" y2="{base}" stroke="{_AXIS}"/>')
    # the first line's scale on the left; a second line measured otherwise gets the right axis
    axes = list(lines[:1])
    axes += [
        line for line in lines[1:2] if (line.lo, line.hi, line.tick) != (axes[0].lo, axes[0].hi, axes[0].tick)
    ]
    for line, (x, anchor) in zip(axes, ((_LEFT - 5, "end"), (_W - _RIGHT + 5, "start")), strict=False):
        for value, y in ((line.lo, base), ((line.lo + line.hi) / 2, _TOP + plot_h / 2), (line.hi, _TOP)):
            parts.append(_text(x, y + 4, line.tick(value), anchor=anchor, colour=line.colour))
    return parts


def _series(line: _Line, x: Callable[[int], float], plot_h: float, labels: list[str]) -> list[str]:
    def y(value: float) -> float:
        return _TOP + plot_h * (1 - (min(max(value, line.lo), line.hi) - line.lo) / (line.hi - line.lo))

    parts: list[str] = []
    run: list[str] = []
    dash = f' stroke-dasharray="{line.dash}"' if line.dash else ""
    for i, value in enumerate([*line.values, None]):
        if value is None:  # a gap: close the run drawn so far
            if len(run) > 1:
                parts.append(
                    f'<polyline class="{line.name.replace(" ", "-")}" points="{" ".join(run)}" fill="none" '
                    f'stroke="{line.colour}" stroke-width="2"{dash}/>'
                )
            run = []
            continue
        run.append(f"{x(i):.1f},{y(value):.1f}")
        parts.append(
            f'<circle cx="{x(i):.1f}" cy="{y(value):.1f}" r="2.5" fill="{line.colour}">'
            f"<title>{html_text(labels[i])}: {html_text(line.notes[i])}</title></circle>"
        )
    return parts


def _strip(
    strip: tuple[Sequence[int], Sequence[int]],
    x: Callable[[int], float],
    bin_w: float,
    top: float,
    labels: list[str],
) -> list[str]:
    """Bars of spans per bucket, their errors drawn over them from the bottom."""
    counts, errors = strip
    peak = max(counts, default=0) or 1
    base = top + _STRIP - 6
    parts = [_text(_LEFT - 5, top + 12, format_count(peak), anchor="end")]  # the tallest bar
    for i, (count, failed) in enumerate(zip(counts, errors, strict=True)):
        left, w = x(i) - bin_w / 2 + 1, max(bin_w - 2, 1)
        for cls, n, colour in (("spans", count, _CALLS), ("errors", failed, _ERRORS)):
            words = f"{n} {cls if n != 1 else cls[:-1]}"
            h = (_STRIP - 12) * n / peak
            parts.append(
                f'<rect class="{cls}" data-count="{n}" x="{left:.1f}" y="{base - h:.1f}" width="{w:.1f}" '
                f'height="{h:.1f}" fill="{colour}"><title>{html_text(labels[i])}: {words}</title></rect>'
            )
    return parts


def _text(x: float, y: float, content: str, *, anchor: str = "middle", colour: str = _AXIS) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{colour}" {_FONT}>'
        f"{html_text(content)}</text>"
    )


def _tick(value: float) -> str:
    return f"{value:.3g}"


def _duration_tick(seconds: float) -> str:
    return format_duration(seconds) if seconds else "0"


def _duration(value: float | None) -> str:
    return format_duration(value) if value is not None else "no spans"


def _nice(value: float) -> float:
    """A round axis maximum at or above ``value``: 1, 2 or 5 times a power of ten."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= value)
