"""Number and text formats shared by the terminal tables and the HTML page.

Text from trace files (span, evaluator and group names, labels, file names) is shown through
`visible` in both, so control characters and bidirectional overrides appear as symbols instead
of acting on the terminal or reordering the page.
"""

from __future__ import annotations

from datetime import datetime, timezone
from html import escape

from tracesim._pricing import format_usd
from tracesim._report._report_data import TraceUsage, UsageStats
from tracesim._terminal import visible

__all__ = [
    "DASH",
    "format_cost",
    "format_count",
    "format_duration",
    "format_rate",
    "format_score",
    "html_text",
    "iso_utc",
]

DASH = "–"
"""Shown where there is no value (no scores, no decisions)."""


def format_duration(seconds: float | None) -> str:
    """A duration with a unit chosen for its size.

    Example:
        >>> format_duration(0.000042), format_duration(0.0123), format_duration(1.5), format_duration(125)
        ('42 µs', '12.3 ms', '1.50 s', '2m05s')
    """
    if seconds is None:
        return DASH
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    if seconds < 60:
        return f"{seconds:.2f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s"


def format_rate(rate: float | None) -> str:
    """A fraction as a percentage with one decimal.

    Example:
        >>> format_rate(0.8125), format_rate(None)
        ('81.2%', '–')
    """
    return DASH if rate is None else f"{rate * 100:.1f}%"


def format_score(score: float | None) -> str:
    """A score with three decimals.

    Example:
        >>> format_score(0.84375)
        '0.844'
    """
    return DASH if score is None else f"{score:.3f}"


def format_count(count: int) -> str:
    """A count with thousands separators; zero shows as ``0``.

    Example:
        >>> format_count(104857)
        '104,857'
    """
    return f"{count:,}"


def format_cost(row: UsageStats | TraceUsage) -> str:
    """The dollars of a usage row, saying how many calls they cover when some had no price.

    Example:
        >>> from tracesim._report import UsageStats
        >>> format_cost(UsageStats("gpt-4o", 3, 900, 90, 0, priced_calls=2, cost_usd=0.0012))
        '$0.0012 (2 of 3 calls)'
    """
    if row.cost_usd is None:
        return DASH
    cost = format_usd(row.cost_usd)
    return cost if row.priced_calls == row.calls else f"{cost} ({row.priced_calls} of {row.calls} calls)"


def html_text(text: str) -> str:
    """Text from a trace file, made visible and escaped for HTML (element content or attribute).

    Example:
        >>> html_text('<b>"x"</b>\\x1b[2J')
        '&lt;b&gt;&quot;x&quot;&lt;/b&gt;␛[2J'
    """
    return escape(visible(text))


def iso_utc(ns: int | None) -> str | None:
    """A time in nanoseconds since the epoch as ISO 8601 UTC, to the microsecond when not whole.

    Example:
        >>> iso_utc(1_790_000_000_000_000_000), iso_utc(1_790_000_000_250_000_000)
        ('2026-09-21T14:13:20Z', '2026-09-21T14:13:20.250000Z')
    """
    if ns is None:
        return None
    moment = datetime.fromtimestamp(ns // 1_000_000_000, tz=timezone.utc)
    return moment.replace(microsecond=(ns % 1_000_000_000) // 1000).isoformat().replace("+00:00", "Z")
