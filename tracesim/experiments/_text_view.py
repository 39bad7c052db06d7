"""The report as plain text for a CI log: a summary, the evaluators, the cases worst first.

Plain columns (no box drawing, no colour) so the table reads the same in any log viewer; text
from the cases goes through `visible`, so an output cannot steer the terminal. After the cases
come the failed runs: for each run an evaluator that scores runs failed (up to `RUNS_SHOWN`, worst
cases first), how it differs from the expected one and its first `STEPS_SHOWN` steps.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from tracesim._capture import dumps
from tracesim._report import DASH, format_duration, format_rate, format_score
from tracesim._terminal import visible
from tracesim.experiments._run_steps import expected_calls, failures, step_lines

if TYPE_CHECKING:
    from tracesim.experiments._case_results import CaseResult
    from tracesim.experiments._run_view import RunView
    from tracesim.experiments._stats import CaseSummary

__all__ = ["RUNS_SHOWN", "STEPS_SHOWN", "failed_runs", "preview", "render_text", "summary_line", "text_table"]

RUNS_SHOWN = 10
"""Failed runs whose steps the text report prints (the JSON file keeps every one)."""
STEPS_SHOWN = 20
"""Steps printed per failed run (the JSON file and the HTML page hold up to 50)."""


def preview(value: Any, width: int) -> str:
    """A value on one line, at most ``width`` characters, control characters made visible.

    Example:
        >>> preview("Marie Curie was born in Warsaw in 1867.", 20)
        'Marie Curie was bor…'
        >>> preview({"city": "Warsaw"}, 40), preview(None, 10)
        ('{"city":"Warsaw"}', '–')
    """
    if value is None:
        return DASH
    text = visible(value if isinstance(value, str) else dumps(value))
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def text_table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: set[int]) -> list[str]:
    """Rows padded into columns; the columns in ``numeric`` are right-aligned.

    Example:
        >>> print("\\n".join(text_table(["case", "score"], [["q1", "0.5"], ["q10", "1.0"]], {1})))
        case  score
        q1      0.5
        q10     1.0
    """
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    lines = []
    for row in [headers, *rows]:
        cells = [
            cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i]) for i, cell in enumerate(row)
        ]
        lines.append("  ".join(cells).rstrip())
    return lines


def summary_line(report: RunView) -> str:
    """One sentence: what ran, how long, how many passed."""
    runs = (
        f"{len(report.cases)} cases × {report.repeat} runs"
        if report.repeat > 1
        else f"{len(report.cases)} cases"
    )
    errors = f" ({report.errors} with a task error)" if report.errors else ""
    took = format_duration(report.duration_s)
    return visible(
        f"experiment {report.name!r} on dataset {report.dataset!r}: {runs} in {took}; "
        f"{report.passed} passed, {report.failed} failed{errors}; pass rate {format_rate(report.pass_rate)}"
    )


def render_text(report: RunView, *, max_cases: int | None = None, width: int = 40) -> str:
    """The whole text report."""
    return "\n".join(_lines(report, max_cases, width))


def _lines(report: RunView, max_cases: int | None, width: int) -> Iterator[str]:
    yield summary_line(report)
    if report.repeat > 1:
        k = report.repeat
        yield (
            f"over {k} runs per case: pass@1 {format_score(report.pass_at_1)}, "
            f"pass@{k} {format_score(report.pass_at_k)}, pass^{k} {format_score(report.pass_hat_k)}"
        )
    if report.evaluators:
        yield ""
        headers = ["evaluator", "mean", "pass rate", "passed", "failed", "errors", "skipped", "threshold"]
        rows = []
        for info in report.evaluators:
            s = report.summary[info.name]
            counts = [str(n) for n in (s.passed, s.failed, s.errors, s.skipped)]
            threshold = DASH if info.threshold is None else f"{info.threshold:g}"
            rows.append(
                [visible(info.name), format_score(s.mean), format_rate(s.pass_rate), *counts, threshold]
            )
        yield from text_table(headers, rows, set(range(1, 8)))
    cases = report.worst_first()
    shown = cases if max_cases is None else cases[:max_cases]
    yield ""
    yield "cases, worst first:"
    yield from text_table(*_case_table(report, shown, width))
    if len(shown) < len(cases):
        yield f"... and {len(cases) - len(shown)} more cases"
    yield from _failed_run_lines(shown)


def failed_runs(cases: Sequence[CaseSummary]) -> list[CaseResult]:
    """The rows of ``cases`` that keep a failed run (`CaseResult.run`), worst cases first."""
    return [row for case in cases for row in case.runs if row.run is not None]


def _failed_run_lines(cases: Sequence[CaseSummary]) -> Iterator[str]:
    rows = failed_runs(cases)
    if not rows:
        return
    yield ""
    yield "failed runs (evaluators that score runs), worst cases first:"
    for row in rows[:RUNS_SHOWN]:
        repeat = f" (repeat {row.repeat})" if row.repeat else ""
        counts, failed = failures(row)
        yield visible(f"{row.case_id}{repeat}: {counts}")
        wanted = expected_calls(row.expected)
        if wanted is not None:
            yield visible(f"  expected calls: {wanted}")
        for line, found in failed:
            yield visible(f"  {line}")
            for label, text in found:
                yield visible(f"    {label}: {text}")
        yield "  steps:"
        for line in step_lines(row.run or {}, limit=STEPS_SHOWN):
            yield visible(f"    {line}")
    if len(rows) > RUNS_SHOWN:
        yield f"... and {len(rows) - RUNS_SHOWN} more failed runs (the JSON file holds them)"


def _case_table(
    report: RunView, cases: Sequence[CaseSummary], width: int
) -> tuple[list[str], list[list[str]], set[int]]:
    names = [e.name for e in report.evaluators]
    repeated = report.repeat > 1
    k = report.repeat
    headers = ["case", "result", *(visible(n) for n in names)]
    if repeated:
        headers += ["pass@1", f"pass@{k}", f"pass^{k}"]
    headers += ["time", "input", "output / error", "trace"]
    rows = []
    for case in cases:
        run = case.worst_run
        cells = [preview(case.case_id, 24), _result(case, repeated)]
        for name in names:
            stats = case.scores[name]
            if repeated and stats.stdev is not None:
                cells.append(f"{format_score(stats.mean)}±{stats.stdev:.3f}")
            elif repeated or name not in run.scores:
                cells.append(format_score(stats.mean))
            else:
                cells.append(_score_cell(run.scores[name]))
        if repeated:
            cells += [
                format_score(case.pass_rate),
                format_score(case.pass_at_k),
                format_score(case.pass_hat_k),
            ]
        duration = sum(r.duration_s for r in case.runs) / len(case.runs)
        shown = run.error if run.error is not None else run.output
        cells += [
            format_duration(duration),
            preview(run.input, width),
            preview(shown, width),
            run.trace_id or DASH,
        ]
        rows.append(cells)
    numeric = set(range(2, 2 + len(names) + (3 if repeated else 0) + 1))
    return headers, rows, numeric


def _result(case: CaseSummary, repeated: bool) -> str:
    if repeated:
        return f"{case.passed}/{len(case.runs)} passed" + (f", {case.errors} errors" if case.errors else "")
    run = case.runs[0]
    if run.error is not None:
        return "ERROR"
    return {True: "pass", False: "FAIL", None: DASH}[run.passed]


def _score_cell(result: Any) -> str:
    if result.status == "error":
        return "error"
    if result.status == "skipped":
        return "skipped"
    return format_score(result.score)
