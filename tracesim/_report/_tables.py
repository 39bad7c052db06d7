"""A rich table printed whole: fitted to a terminal's width, at its natural width elsewhere.

Every table of ``tracesim report`` in the terminal (the summary's, the timeline's, the
drill-down's) is printed through `print_table`, so they all behave alike in a CI log.
"""

from __future__ import annotations

from rich.console import Console
from rich.measure import Measurement
from rich.segment import Segments
from rich.table import Table

__all__ = ["print_table"]

_UNBOUNDED = 1_000_000  # wider than any table: measures a table's natural width


def print_table(console: Console, table: Table) -> None:
    """Print ``table``: within a terminal's width, or at its natural width into a pipe or file.

    A terminal would wrap a line wider than itself and break the table's frame, so there rich
    fits the table to the width. A pipe has no width: a CI log keeps every cell whole.

    Example:
        >>> import io
        >>> from rich.console import Console
        >>> table = Table("evaluator", "pass rate")
        >>> table.add_row("levenshtein_against_the_golden_answers", "56.3%")
        >>> console = Console(file=io.StringIO(), width=30)
        >>> print_table(console, table)
        >>> "│ levenshtein_against_the_golden_answers │ 56.3%     │" in console.file.getvalue()
        True
    """
    if console.is_terminal:
        console.print(table)
        return
    natural = Measurement.get(console, console.options.update_width(_UNBOUNDED), table).maximum
    if natural <= console.width:
        console.print(table)
        return
    # console.print caps any width at the console's: render at the natural width, print uncropped.
    lines = console.render(table, console.options.update_width(natural))
    console.print(Segments(lines), crop=False)
