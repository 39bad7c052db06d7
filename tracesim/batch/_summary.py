"""What a scoring run adds up to: counts per evaluator, bad rows by reason, the summary table.

``tracesim eval`` (local) and `tracesim.batch.score` (any engine) tally results the same way
and print the same table, so a number means the same thing in both. A part's tallies travel
back from its worker as a small `PartSummary`, never its rows.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from tracesim import _outputs

if TYPE_CHECKING:
    from tracesim.evaluators import EvalResult

__all__ = [
    "BatchReport",
    "PartSummary",
    "Tally",
    "call_differences",
    "print_failed_runs",
    "print_table",
    "tokens_of",
]

MAX_EXAMPLES = 20
"""Bad rows reported one by one (per part, and in all); the rest are only counted."""


@dataclass
class Tally:
    """One evaluator's results added up: count and mean of scores, pass rate, skips, errors.

    Example:
        >>> tally = Tally(threshold=0.8)
        >>> tally.add("ok", 0.9, True); tally.add("ok", 0.5, False); tally.add("skipped", None, None)
        >>> tally.mean, tally.pass_rate, tally.skipped
        (0.7, 0.5, 1)
    """

    threshold: float | None
    count: int = 0
    total: float = 0.0
    passed: int = 0
    judged: int = 0
    skipped: int = 0
    errors: int = 0
    tokens: int = 0

    def add(self, status: str, score: float | None, passed: bool | None, tokens: int = 0) -> None:
        self.tokens += tokens
        if status == "skipped":
            self.skipped += 1
        elif status == "error":
            self.errors += 1
            self.judged += 1  # an error is a failure for a pass-rate gate
        else:
            self.count += 1
            self.total += score or 0.0
            if passed is not None:
                self.judged += 1
                self.passed += passed

    def merge(self, other: Tally) -> None:
        """Add another part's tally of the same evaluator."""
        self.count += other.count
        self.total += other.total
        self.passed += other.passed
        self.judged += other.judged
        self.skipped += other.skipped
        self.errors += other.errors
        self.tokens += other.tokens

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.judged if self.judged else None


def tokens_of(result: EvalResult) -> int:
    """Model tokens a result spent (0 when it came from the answer cache or used no model)."""
    usage = result.details.get("usage") if isinstance(result.details, dict) else None
    total = usage.get("total_tokens") if isinstance(usage, dict) else None
    return total if isinstance(total, int) and not result.details.get("cached") else 0


_MAX_DIFFERENCE_CHARS = 300


def call_differences(result: EvalResult) -> str | None:
    """How a failed run differs from the expected one, in a line: the missing, extra, partly
    matched and mismatched tool calls, or the budget exceeded, as a run evaluator's details name
    them (`tracesim.runs.differences`); else its explanation, else its details; None when it has
    none of them.

    Example:
        >>> from tracesim.evaluators import EvalResult
        >>> result = EvalResult(name="tool_correctness", details={
        ...     "missing": [{"name": "convert", "arguments": {}}], "extra": [], "matched": [[0, 0, 1.0]]})
        >>> call_differences(result)
        'missing convert({})'
    """
    from tracesim._capture import dumps
    from tracesim._redact import MARGIN, safe_cut
    from tracesim.runs import differences

    details = result.details if isinstance(result.details, dict) else {}
    parts = [f"{label} {text}" for label, text in differences(details, limit=_MAX_DIFFERENCE_CHARS)]
    if not parts and result.explanation:
        parts.append(result.explanation)
    if not parts and details:
        parts.append(dumps(details))
    if not parts:
        return None
    line = "; ".join(parts)
    if len(line) <= _MAX_DIFFERENCE_CHARS:
        return line
    # never through what could be a secret: the line is redacted when printed, and must be whole then
    return line[: safe_cut(line[: _MAX_DIFFERENCE_CHARS + 2 * MARGIN], _MAX_DIFFERENCE_CHARS - 1)] + "…"


def print_failed_runs(failed: list[tuple[str, int, str, str]], console: Any) -> None:
    """The first failed runs, one line each (where, which evaluator, how it differs), redacted."""
    from rich.text import Text

    from tracesim._terminal import visible

    for where, number, name, differences in failed:
        line = _outputs.text(f"{where}:{number}: {name} failed: {differences}")
        console.print(Text(visible(line)), soft_wrap=True)  # one line each, to grep


@dataclass
class PartSummary:
    """What one part gave: records read, bad rows by reason (a few with their place), tallies,
    and the first runs a run evaluator failed, with how they differ (`call_differences`)."""

    index: int
    records: int = 0
    bad: Counter[str] = field(default_factory=Counter)
    examples: list[tuple[str, int, str]] = field(default_factory=list)
    tallies: dict[str, Tally] = field(default_factory=dict)
    failed_runs: list[tuple[str, int, str, str]] = field(default_factory=list)


@dataclass
class BatchReport:
    """The outcome of `tracesim.batch.score`: totals, tallies per evaluator, where results went.

    ``records`` counts every record read, bad rows included; ``scored`` those scored;
    ``bad_rows`` the others by reason; ``failed_parts`` the parts that could not be read or
    written at all after Dask's retries, with the error (their rows are not in the output).
    """

    output: str
    tallies: dict[str, Tally]
    records: int = 0
    parts: int = 0
    bad_rows: Counter[str] = field(default_factory=Counter)
    examples: list[tuple[str, int, str]] = field(default_factory=list)
    failed_parts: dict[int, str] = field(default_factory=dict)
    failed_runs: list[tuple[str, int, str, str]] = field(default_factory=list)
    """The first runs a run evaluator failed: file, row, evaluator, how the run differs."""

    @property
    def scored(self) -> int:
        return self.records - sum(self.bad_rows.values())

    def add(self, part: PartSummary) -> None:
        """Count one part's summary (once: the engine gives each finished part once)."""
        self.parts += 1
        self.records += part.records
        self.bad_rows.update(part.bad)
        room = MAX_EXAMPLES - len(self.examples)
        self.examples += part.examples[: max(room, 0)]
        self.failed_runs += part.failed_runs[: max(MAX_EXAMPLES - len(self.failed_runs), 0)]
        for name, tally in part.tallies.items():
            self.tallies[name].merge(tally)

    def print_summary(self, console: Any = None, errors: TextIO | None = None) -> None:
        """Print what ``tracesim eval`` prints: the table, bad rows by reason, failed parts.

        The first bad rows, with their file and line, and the failed parts go to ``errors``
        (standard error by default), one unwrapped line each; the rest to the rich ``console``
        (standard output by default). Every line is redacted (`tracesim._outputs`), the table's
        cells before the table is drawn.
        """
        from rich.console import Console
        from rich.text import Text

        from tracesim._terminal import visible

        console = console or Console(file=_outputs.stream(sys.stdout))
        errors = errors or sys.stderr
        # Each line is redacted before `visible` escapes it and rich wraps it: the writers' own
        # pass (echo, the console's stream) would miss a secret escaped or split over two lines.
        for path, number, message in self.examples:
            line = _outputs.text(f"tracesim eval: {path}:{number}: {message}; row skipped")
            _outputs.echo(visible(line), file=errors)
        print_table(self.tallies, self.scored, console)
        print_failed_runs(self.failed_runs, console)
        if self.bad_rows:
            reasons = ", ".join(f"{reason}: {count}" for reason, count in self.bad_rows.most_common())
            line = _outputs.text(f"{sum(self.bad_rows.values())} bad rows skipped ({reasons})")
            console.print(Text(visible(line)))
        for index, error in sorted(self.failed_parts.items()):
            line = _outputs.text(f"tracesim eval: part {index} failed, its rows are missing: {error}")
            _outputs.echo(visible(line), file=errors)
        console.print(Text(f"results: {visible(_outputs.text(self.output))}"))


def print_table(tallies: dict[str, Tally], rows: int, console: Any) -> None:
    """The summary table ``tracesim eval`` prints: one line per evaluator (names redacted)."""
    from rich.table import Table
    from rich.text import Text

    from tracesim._terminal import visible

    table = Table(title=f"tracesim eval: {rows} rows scored", title_justify="left")
    costed = any(tally.tokens for tally in tallies.values())  # a model judged: show its cost
    headings = ["evaluator", "count", "mean", "pass rate", "threshold", "skipped", "errors"]
    for heading in [*headings, "tokens"] if costed else headings:
        table.add_column(heading, justify="left" if heading == "evaluator" else "right")
    written = _outputs.distinct(tallies)  # two names that redact alike stay two, as in the results
    for name, tally in tallies.items():
        mean, rate = tally.mean, tally.pass_rate
        cells = [
            "-" if mean is None else f"{mean:.4f}",
            "-" if rate is None else f"{rate:.1%}",
            "-" if tally.threshold is None else f"{tally.threshold:g}",
            str(tally.skipped),
            str(tally.errors),
        ]
        table.add_row(
            Text(visible(written[name])),
            str(tally.count),
            *cells,
            *([f"{tally.tokens:,}"] if costed else []),
        )
    console.print(table)
