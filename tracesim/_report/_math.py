"""Percentiles and histogram bins, in plain Python so the report needs no numpy."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence

from tracesim._report._report_data import Histogram

__all__ = ["histogram", "histogram_edges", "percentile"]

_BINS = 10
_MAX_INTEGER_BINS = 20


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of already sorted values, by linear interpolation.

    This is method 7 of Hyndman & Fan, the default of ``numpy.percentile`` and of
    spreadsheets: the value at fractional rank ``h = (n - 1) * q / 100`` (0-based), interpolated
    between the two nearest values. p50 of an even count is the mean of the middle two.

    Example:
        >>> percentile([1.0, 2.0, 3.0, 4.0], 50)
        2.5
        >>> percentile([10.0, 20.0], 95)
        19.5
    """
    if not sorted_values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be within 0..100, got {q}")
    h = (len(sorted_values) - 1) * (q / 100)
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_values) - 1)
    a, b = sorted_values[lo], sorted_values[hi]
    t = h - lo
    # Same two-sided form as numpy's lerp, so the results agree to the last bit or so.
    return a + (b - a) * t if t < 0.5 else b - (b - a) * (1 - t)


def histogram_edges(values: Sequence[float], thresholds: Sequence[float] = ()) -> tuple[float, ...]:
    """Bin edges for a score histogram that a reader can take in at a glance.

    Scores within [0, 1] get ten bins of 0.1; small integer scales (a 1-5 rating) get one bin
    per integer; anything else gets ten equal bins from the lowest to the highest value.
    Thresholds widen the range so their marker lands on the chart.

    Example:
        >>> histogram_edges([0.25, 1.0])[:3]
        (0.0, 0.1, 0.2)
        >>> histogram_edges([1.0, 3.0, 5.0])
        (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
    """
    points = [*values, *thresholds]
    if not points:
        return tuple(i / _BINS for i in range(_BINS + 1))
    lo, hi = min(points), max(points)
    if lo >= 0 and hi <= 1:
        return tuple(i / _BINS for i in range(_BINS + 1))
    if all(float(v).is_integer() for v in values) and hi - lo < _MAX_INTEGER_BINS:
        start = math.floor(lo)
        return tuple(float(start + i) for i in range(math.floor(hi) - start + 2))
    if lo == hi:
        return (lo - 0.5, lo + 0.5)
    step = (hi - lo) / _BINS
    return (*(lo + i * step for i in range(_BINS)), hi)


def histogram(
    values: Sequence[float], edges: Sequence[float], decisions: Sequence[bool | None] | None = None
) -> Histogram:
    """Count ``values`` into the bins between ``edges``; values outside the edges are ignored.

    Bins are half-open ``[a, b)`` except the last, which includes its upper edge, so a score
    of exactly 1.0 counts in the 0.9-1.0 bin. ``decisions[i]`` is the pass/fail decision of
    ``values[i]`` (``None``: none); each bin counts its passes and failures too.

    Example:
        >>> histogram([0.0, 0.5, 1.0], (0.0, 0.5, 1.0)).counts
        (1, 2)
        >>> h = histogram([0.7, 0.75, 0.9], (0.0, 0.5, 1.0), [False, True, None])
        >>> h.counts, h.passed, h.failed
        ((0, 3), (0, 1), (0, 1))
    """
    bins = len(edges) - 1
    counts, passed, failed = [0] * bins, [0] * bins, [0] * bins
    last = bins - 1
    for i, value in enumerate(values):
        if value < edges[0] or value > edges[-1]:
            continue
        b = min(bisect_right(edges, value) - 1, last)
        counts[b] += 1
        decision = decisions[i] if decisions is not None else None
        if decision is True:
            passed[b] += 1
        elif decision is False:
            failed[b] += 1
    return Histogram(edges=tuple(edges), counts=tuple(counts), passed=tuple(passed), failed=tuple(failed))
