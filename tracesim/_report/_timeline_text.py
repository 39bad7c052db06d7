"""The timeline in the terminal: one compact row per bucket, and the labels both pages share.

The table follows the entry span (the span most traces start with: calls, errors, p95) and
gives each evaluator one column: its pass rate, or its mean score when it never decides
pass/fail. The JSON and the HTML page have every span name.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tracesim._report._format import DASH, format_count, format_duration, format_rate, format_score
from tracesim._report._report_data import Timeline, TimelineEvaluator
from tracesim._report._tables import print_table
from tracesim._terminal import visible

__all__ = ["bucket_labels", "print_timeline", "timeline_title", "width_text"]

_UNITS = ((604800, "week"), (86400, "day"), (3600, "h"), (60, "min"), (1, "s"))


def width_text(seconds: int) -> str:
    """A bucket width in words.

    Example:
        >>> width_text(30), width_text(600), width_text(7200), width_text(86400), width_text(1209600)
        ('30 s', '10 min', '2 h', '1 day', '2 weeks')
    """
    for size, unit in _UNITS:
        if seconds % size == 0:
            count = seconds // size
            plural = "s" if count != 1 and unit in ("day", "week") else ""
            return f"{count} {unit}{plural}"
    return f"{seconds} s"  # pragma: no cover - every width is a whole number of seconds


def bucket_labels(timeline: Timeline) -> list[str]:
    """Short bucket starts: ``14:10`` within one day, ``09-21 14:10`` across days, dates for days.

    Example:
        >>> t = Timeline(600, ("2026-09-21T23:50:00Z", "2026-09-22T00:00:00Z"), None, (), ())
        >>> bucket_labels(t)
        ['09-21 23:50', '09-22 00:00']
    """
    starts = timeline.starts
    if timeline.bucket_s >= 86400:
        return [s[:10] for s in starts]
    clock = slice(11, 19) if timeline.bucket_s < 60 else slice(11, 16)
    if len({s[:10] for s in starts}) == 1:
        return [s[clock] for s in starts]
    return [f"{s[5:10]} {s[clock]}" for s in starts]


def timeline_title(timeline: Timeline) -> str:
    """What the buckets are: ``Over time, per 10 min (UTC, by span start)``."""
    return f"Over time, per {width_text(timeline.bucket_s)} (UTC, by span start)"


def print_timeline(timeline: Timeline, console: Console) -> None:
    """One row per bucket: the entry span's calls, errors and p95, and each evaluator's rate.

    Example:
        >>> t = Timeline(600, ("2026-09-21T14:10:00Z",), None, (), ())
        >>> print_timeline(t, Console(width=60))
        Over time, per 10 min (UTC, by span start)
        ┏━━━━━━━┓
        ┃ start ┃
        ┡━━━━━━━┩
        │ 14:10 │
        └───────┘
    """
    entry = next((s for s in timeline.spans if s.name == timeline.entry_span), None)
    title = timeline_title(timeline)
    if entry is not None:
        title += f": {entry.name} calls, errors and p95"
    if timeline.evaluators:
        title += "; pass rate (else mean score) per evaluator"
    # printed as a line of its own: as a table title rich would wrap it to the table's width
    console.print(Text(visible(title)), soft_wrap=True)
    table = Table()
    table.add_column("start", no_wrap=True)
    columns: list[list[str]] = []
    if entry is not None:
        for heading in ("calls", "errors", "p95"):
            table.add_column(heading, justify="right")
        columns += [
            [format_count(n) for n in entry.count],
            [format_count(n) for n in entry.errors],
            [format_duration(v) if v is not None else DASH for v in entry.p95],
        ]
    for evaluator in timeline.evaluators:
        heading, cells = _evaluator_column(evaluator)
        table.add_column(Text(visible(heading)), justify="right", overflow="fold")
        columns.append(cells)
    for i, label in enumerate(bucket_labels(timeline)):
        table.add_row(label, *(column[i] for column in columns))
    print_table(console, table)


def _evaluator_column(evaluator: TimelineEvaluator) -> tuple[str, list[str]]:
    if any(p + f for p, f in zip(evaluator.passed, evaluator.failed, strict=True)):
        return evaluator.name, [format_rate(rate) for rate in evaluator.pass_rate]
    return f"{evaluator.name} mean", [format_score(mean) for mean in evaluator.mean_score]
