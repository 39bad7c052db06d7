"""The drill-down in the terminal: errors by exception type, and each evaluator's worst cases."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tracesim._report._report_data import Report
from tracesim._report._tables import print_table
from tracesim._terminal import visible

__all__ = ["print_drill_down"]

_CASES = 3  # per evaluator in the terminal
_CHARS = 100


def print_drill_down(report: Report, console: Console) -> None:
    """Print the errors by type and the worst cases of each evaluator, when there are any.

    Example:
        >>> from tracesim._report import summarize
        >>> print_drill_down(summarize([]), Console())
    """
    if report.error_types:
        table = Table(title="Errors by type (each counted once, where it was raised)", title_justify="left")
        for heading in ("type", "count", "raised in", "example message", "example trace"):
            table.add_column(heading, justify="right" if heading == "count" else "left")
        for error in report.error_types:
            table.add_row(
                _text(error.type),
                str(error.count),
                _text(", ".join(error.spans)),
                _text(_short(error.message, 60)),
                error.trace_id,
            )
        print_table(console, table)
    if not report.worst_cases:
        return
    console.print(
        Text(f"Worst cases (up to {_CASES} per evaluator; --json or --html for {5})"), soft_wrap=True
    )
    shown: dict[str, int] = {}
    for case in report.worst_cases:
        shown[case.evaluator] = shown.get(case.evaluator, 0) + 1
        if shown[case.evaluator] > _CASES:
            continue
        verdict = "" if case.passed is None else (" pass" if case.passed else " fail")
        score = "-" if case.score is None else f"{case.score:.4g}"
        where = case.span or "(span not in the files)"
        head = f"{case.evaluator} {score}{verdict}  {where}  trace {case.trace_id}"
        console.print(Text(visible(head), style="bold"), soft_wrap=True)
        for label, value in (
            ("in", case.input),
            ("out", case.output),
            ("expected", case.expected),
            ("why", case.explanation),
        ):
            if value is not None:
                console.print(Text(visible(f"   {label}: {_short(value, _CHARS)}")), soft_wrap=True)


def _text(value: str) -> Text:
    return Text(visible(value))


def _short(value: str, limit: int) -> str:
    flat = " ".join(value.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
