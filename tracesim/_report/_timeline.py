"""Scores and latency over time, in round buckets of the spans' start times.

A file whose spans all started within `MIN_WINDOW_S` (ten minutes) of one another gets no
timeline: a dozen buckets of a few seconds would say nothing the tables do not. A longer one
gets at most `MAX_BUCKETS` buckets of the narrowest round width that allows it (30 s, 1, 2, 5,
10, 15 or 30 min, 1, 2, 3, 6 or 12 h, 1 or 2 days, then whole weeks), aligned to multiples of
the width in UTC, so buckets start at 14:10, 14:20, ... whatever the first span's second.

A span counts in the bucket it started in. A result counts in the bucket of the span it
evaluates, so a late result on a carrier span counts when its call was made, not when it
was scored (a carrier whose span is not in the files counts at its own start).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence

from tracesim._report._collect import Collected, ResultSample, SpanSample
from tracesim._report._format import iso_utc
from tracesim._report._math import percentile
from tracesim._report._report_data import Timeline, TimelineEvaluator, TimelineSpan

__all__ = ["MAX_BUCKETS", "MIN_WINDOW_S", "bucket_width", "timeline"]

MIN_WINDOW_S = 600
"""The shortest time between the first and the last span start that gets a timeline."""
MAX_BUCKETS = 24
"""The most buckets a timeline has: a text table that fits a screen, a chart that reads."""

_Bucket = Callable[[int], int]  # a start time in nanoseconds to its bucket's index
_WIDTHS_S = (30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800)
_WEEK_S = 7 * 86400
_NS = 1_000_000_000


def bucket_width(first_ns: int, last_ns: int) -> int:
    """The narrowest round width, in seconds, whose aligned buckets from first to last are few enough.

    Example:
        >>> minute = 60 * 10**9
        >>> bucket_width(0, 10 * minute), bucket_width(0, 2 * 60 * minute), bucket_width(0, 7 * 1440 * minute)
        (30, 600, 43200)
    """
    for width in _WIDTHS_S:
        if _count(first_ns, last_ns, width) <= MAX_BUCKETS:
            return width
    weeks = 1
    while _count(first_ns, last_ns, weeks * _WEEK_S) > MAX_BUCKETS:
        weeks += 1
    return weeks * _WEEK_S


def _count(first_ns: int, last_ns: int, width_s: int) -> int:
    width = width_s * _NS
    return last_ns // width - first_ns // width + 1


def timeline(collected: Collected) -> Timeline | None:
    """The spans' and results' buckets, or ``None`` when the spans started too close together."""
    times = [s.start_ns for s in collected.spans] + [r.start_ns for r in collected.results]
    if not times:
        return None
    first, last = min(times), max(times)
    if last - first < MIN_WINDOW_S * _NS:
        return None
    width_s = bucket_width(first, last)
    origin = first // (width_s * _NS) * width_s * _NS
    count = _count(first, last, width_s)

    def bucket(start_ns: int) -> int:
        return (start_ns - origin) // (width_s * _NS)

    spans = _span_series(collected.spans, bucket, count)
    return Timeline(
        bucket_s=width_s,
        starts=tuple(iso_utc(origin + i * width_s * _NS) or "" for i in range(count)),
        entry_span=_entry_span(collected, spans),
        spans=spans,
        evaluators=_evaluator_series(collected.results, bucket, count),
    )


def _span_series(samples: Iterable[SpanSample], bucket: _Bucket, count: int) -> tuple[TimelineSpan, ...]:
    durations: dict[str, list[list[float]]] = defaultdict(lambda: [[] for _ in range(count)])
    errors: dict[str, list[int]] = defaultdict(lambda: [0] * count)
    for sample in samples:
        i = bucket(sample.start_ns)
        durations[sample.name][i].append(sample.duration_s)
        if sample.error:
            errors[sample.name][i] += 1
    series = []
    for name, buckets in durations.items():
        ordered = [sorted(b) for b in buckets]
        series.append(
            TimelineSpan(
                name=name,
                count=tuple(len(b) for b in ordered),
                errors=tuple(errors[name]) if name in errors else (0,) * count,
                p50=tuple(percentile(b, 50) if b else None for b in ordered),
                p95=tuple(percentile(b, 95) if b else None for b in ordered),
            )
        )
    return tuple(sorted(series, key=lambda s: (-sum(s.count), s.name)))


def _evaluator_series(
    results: Iterable[ResultSample], bucket: _Bucket, count: int
) -> tuple[TimelineEvaluator, ...]:
    by_name: dict[str, list[list[ResultSample]]] = defaultdict(lambda: [[] for _ in range(count)])
    for result in results:
        by_name[result.evaluator][bucket(result.start_ns)].append(result)
    return tuple(_evaluator(name, by_name[name]) for name in sorted(by_name))


def _evaluator(name: str, buckets: Sequence[Sequence[ResultSample]]) -> TimelineEvaluator:
    scores = [[r.score for r in b if r.status == "ok" and r.score is not None] for b in buckets]
    passed = [sum(r.status == "ok" and r.passed is True for r in b) for b in buckets]
    failed = [sum(r.status == "ok" and r.passed is False for r in b) for b in buckets]
    return TimelineEvaluator(
        name=name,
        results=tuple(len(b) for b in buckets),
        scored=tuple(len(s) for s in scores),
        mean_score=tuple(sum(s) / len(s) if s else None for s in scores),
        passed=tuple(passed),
        failed=tuple(failed),
        pass_rate=tuple(p / (p + f) if p + f else None for p, f in zip(passed, failed, strict=True)),
    )


def _entry_span(collected: Collected, spans: Sequence[TimelineSpan]) -> str | None:
    """The name most traces start with; without roots in the files, the most frequent name."""
    roots = Counter(name for _, name in collected.roots.values())
    if roots:
        return min(roots.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    return spans[0].name if spans else None
