"""Inline SVG charts drawn in Python: a score histogram and a latency percentile chart.

The charts are plain SVG elements with their colours as attributes, so they show in any
browser without scripts, stylesheets or network. Every piece of text that comes from the
trace files goes through `html_text` (`visible`, then `html.escape`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

from tracesim._report._format import format_duration, html_text
from tracesim._report._report_data import EvaluatorStats, SpanStats

__all__ = ["DECISION_COLOURS", "LATENCY_COLOURS", "latency_chart", "score_histogram"]

_FONT = 'font-family="system-ui, sans-serif" font-size="11"'
# Okabe & Ito's blue and vermillion: told apart with every common colour-vision deficiency
_PASS, _FAIL, _UNDECIDED = "#0072b2", "#d55e00", "#b8b8b8"
DECISION_COLOURS = (("passed", _PASS), ("failed", _FAIL), ("no pass/fail decision", _UNDECIDED))
"""The colours of a histogram bar's segments, for a legend."""
_THRESHOLD = "#222"  # near black: apart from the vermillion of failed scores
_P50, _P95, _P99 = "#2c5d8f", "#7fa7cf", "#c9daec"
LATENCY_COLOURS = (("p50", _P50), ("p95", _P95), ("p99", _P99))
"""The bar colours of the latency chart, for a legend."""
_AXIS = "#666"
_HALO = ' stroke="#fff" stroke-width="3" paint-order="stroke"'
_GRID = "#ddd"
_LABEL_CHARS = 34
_MIN_SECONDS = 1e-6


def _text(x: float, y: float, content: str, *, anchor: str = "middle", extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {_FONT}{extra}>{html_text(content)}</text>'


def _tick(value: float) -> str:
    return f"{value:.4g}"


def score_histogram(stats: EvaluatorStats, *, width: int = 400, height: int = 220) -> str:
    """An SVG histogram of an evaluator's ``ok`` scores, with its thresholds as dashed lines.

    Each bar is split by the results' own decisions: failed at the bottom, passed above, those
    without a decision on top (`DECISION_COLOURS`); a bin can straddle the threshold.

    Example:
        >>> from tracesim._report import summarize
        >>> report = summarize(spans)  # doctest: +SKIP
        >>> svg = score_histogram(report.evaluator("levenshtein"))  # doctest: +SKIP
    """
    left, right, top, bottom = 44, 16, 28, 42
    plot_w, plot_h = width - left - right, height - top - bottom
    edges, counts = stats.histogram.edges, stats.histogram.counts
    title = _histogram_title(stats)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart histogram" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{html_text(title)}">',
        f"<title>{html_text(title)}</title>",
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="{_AXIS}"/>',
    ]
    peak = max(counts, default=0)
    bin_w = plot_w / max(len(counts), 1)
    labels = []  # drawn last, with a white halo, so a threshold line does not strike them out
    for i, count in enumerate(counts):
        x = left + i * bin_w
        h = plot_h * count / peak if peak else 0
        parts.append(_histogram_bar(stats, i, x, top + plot_h, max(bin_w - 2, 1), h))
        if count:
            labels.append(_text(x + bin_w / 2, top + plot_h - h - 3, str(count), extra=_HALO))
    parts.extend(_histogram_axis(edges, left, top + plot_h, plot_w))
    parts.append(_text(left - 6, top + 4, str(peak), anchor="end"))
    parts.append(_text(left - 6, top + plot_h, "0", anchor="end"))
    if not peak:
        parts.append(_text(left + plot_w / 2, top + plot_h / 2, "no scores", extra=f' fill="{_AXIS}"'))
    parts.extend(_thresholds(stats, left, top, plot_w, plot_h))
    parts.extend(labels)
    parts.append("</svg>")
    return "".join(parts)


def _histogram_title(stats: EvaluatorStats) -> str:
    """The chart's text alternative: what it shows, in numbers."""
    h = stats.histogram
    scored, passed, failed = sum(h.counts), sum(h.passed), sum(h.failed)
    text = f"Scores of {stats.name}: {scored} scored"
    if passed or failed:
        text += f", {passed} passed, {failed} failed"
    if scored - passed - failed and (passed or failed):
        text += f", {scored - passed - failed} without a decision"
    if stats.thresholds:
        text += "; threshold " + ", ".join(_tick(t) for t in stats.thresholds)
    return text


def _histogram_bar(stats: EvaluatorStats, i: int, x: float, base: float, w: float, h: float) -> str:
    """One bin: the whole bar (no decision) with its failed and passed parts drawn over it."""
    hist = stats.histogram
    count = hist.counts[i]
    passed = hist.passed[i] if i < len(hist.passed) else 0
    failed = hist.failed[i] if i < len(hist.failed) else 0
    closing = "]" if i == len(hist.counts) - 1 else ")"
    span = f"[{_tick(hist.edges[i])}, {_tick(hist.edges[i + 1])}{closing}"
    words = f"{span}: {count}"
    if passed or failed:
        words += f" ({passed} passed, {failed} failed"
        words += f", {count - passed - failed} no decision)" if count - passed - failed else ")"
    parts = [
        f'<g class="bin"><title>{html_text(words)}</title>'
        f'<rect class="bar" data-count="{count}" data-passed="{passed}" data-failed="{failed}" '
        f'x="{x + 1:.1f}" y="{base - h:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{_UNDECIDED}"/>'
    ]
    y = base
    for cls, n, colour in (("failed", failed, _FAIL), ("passed", passed, _PASS)):
        if n and count:
            part = h * n / count
            y -= part
            parts.append(
                f'<rect class="{cls}" x="{x + 1:.1f}" y="{y:.1f}" width="{w:.1f}" height="{part:.1f}" '
                f'fill="{colour}"/>'
            )
    parts.append("</g>")
    return "".join(parts)


def _thresholds(stats: EvaluatorStats, left: float, top: float, plot_w: float, plot_h: float) -> list[str]:
    parts = []
    lo, hi = stats.histogram.edges[0], stats.histogram.edges[-1]
    for threshold in stats.thresholds:
        if hi > lo and lo <= threshold <= hi:
            x = left + plot_w * (threshold - lo) / (hi - lo)
            parts.append(
                f'<line class="threshold" x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{top + plot_h}" '
                f'stroke="{_THRESHOLD}" stroke-width="2" stroke-dasharray="5 3"/>'
            )
            # near an edge the label grows inwards, so "threshold 1" is never cut by the frame
            side = (x - left) / plot_w
            anchor = "end" if side > 0.8 else ("start" if side < 0.2 else "middle")
            label = f"threshold {_tick(threshold)}"
            parts.append(_text(x, top - 10, label, anchor=anchor, extra=f' fill="{_THRESHOLD}"'))
    return parts


def _histogram_axis(edges: Sequence[float], left: float, base: float, plot_w: float) -> list[str]:
    bins = len(edges) - 1
    bin_w = plot_w / max(bins, 1)
    integer_bins = all(float(e).is_integer() for e in edges) and all(
        b - a == 1 for a, b in itertools.pairwise(edges)
    )
    if integer_bins:  # a rating scale: label each bin with its value
        return [_text(left + (i + 0.5) * bin_w, base + 16, _tick(edges[i])) for i in range(bins)]
    step = max(1, math.ceil(len(edges) / 11))
    return [_text(left + i * bin_w, base + 16, _tick(edges[i])) for i in range(0, len(edges), step)]


def latency_chart(
    rows: Sequence[SpanStats], *, label: Callable[[SpanStats], str] = lambda row: row.name, width: int = 900
) -> str:
    """An SVG chart with one row per span name: bars to p50, p95 and p99 on a log time axis.

    A short tick marks the slowest span. The numbers are printed beside each row, so the chart
    reads without hovering.

    Example:
        >>> from tracesim._report import summarize
        >>> latency_chart(summarize([]).spans).startswith("<svg")
        True
    """
    label_w, values_w, row_h, top = 230, 270, 26, 34
    plot_w = width - label_w - values_w
    height = top + row_h * len(rows) + 8
    lo, hi = _log_domain(rows)

    def x(seconds: float) -> float:
        clamped = min(max(seconds, lo), hi)
        return label_w + plot_w * (math.log10(clamped) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart latency" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="Latency percentiles per span name">',
        "<title>Latency percentiles per span name</title>",
    ]
    for exponent in range(round(math.log10(lo)), round(math.log10(hi)) + 1):
        gx = x(10.0**exponent)
        parts.append(f'<line x1="{gx:.1f}" y1="{top - 6}" x2="{gx:.1f}" y2="{height - 8}" stroke="{_GRID}"/>')
        parts.append(_text(gx, top - 10, _decade(exponent)))
    for i, row in enumerate(rows):
        parts.append(_latency_row(row, label(row), top + i * row_h, row_h, x))
    parts.append("</svg>")
    return "".join(parts)


def _latency_row(row: SpanStats, name: str, y: float, row_h: float, x: Callable[[float], float]) -> str:
    lat = row.latency_s
    start = x(0.0)  # the left edge of the plot
    shown = name if len(name) <= _LABEL_CHARS else name[: _LABEL_CHARS - 1] + "…"
    mid = y + row_h / 2
    parts = [f'<g class="latency-row" data-span="{html_text(name)}"><title>{html_text(name)}</title>']
    parts.append(_text(start - 8, mid + 4, shown, anchor="end"))
    for cls, colour in reversed(LATENCY_COLOURS):  # widest bar first, so the narrower ones show on top
        value = getattr(lat, cls)
        end = x(value)
        parts.append(
            f'<rect class="{cls}" x="{start:.1f}" y="{y + 5:.1f}" width="{max(end - start, 1):.1f}" '
            f'height="{row_h - 10:.1f}" fill="{colour}"><title>{cls} {format_duration(value)}</title></rect>'
        )
    mx = x(lat.max)
    parts.append(
        f'<line class="max" x1="{mx:.1f}" y1="{y + 3:.1f}" x2="{mx:.1f}" y2="{y + row_h - 3:.1f}" '
        f'stroke="{_AXIS}" stroke-width="2"><title>max {format_duration(lat.max)}</title></line>'
    )
    summary = " · ".join(f"{k} {format_duration(getattr(lat, k))}" for k in ("p50", "p95", "p99"))
    parts.append(_text(x(math.inf) + 10, mid + 4, summary, anchor="start"))
    parts.append("</g>")
    return "".join(parts)


def _decade(exponent: int) -> str:
    """``10**exponent`` seconds as a round label: 1 µs, 10 ms, 1 s, 100 s."""
    for unit, shift in (("s", 0), ("ms", 3)):
        if exponent + shift >= 0:
            return f"{10.0 ** (exponent + shift):g} {unit}"
    return f"{10.0 ** (exponent + 6):g} µs"


def _log_domain(rows: Sequence[SpanStats]) -> tuple[float, float]:
    """Whole decades around every span's min and max, at least one decade wide."""
    lows = [r.latency_s.min for r in rows if r.latency_s.min > 0]
    highs = [r.latency_s.max for r in rows]
    low = max(min(lows, default=_MIN_SECONDS), _MIN_SECONDS)
    high = max(max(highs, default=low), low)
    lo = 10.0 ** math.floor(math.log10(low))
    hi = 10.0 ** math.ceil(math.log10(high))
    return lo, max(hi, lo * 10)
