"""The units of batch work: a `Part` of a source, and the `Chunk` of records read from it.

Sources (`tracesim.batch._sources`) cut their files into parts; a reader (data rows there,
spans in `tracesim.batch._spans`) fills one chunk per part. Both sides import these two
classes from here, below them both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracesim.batch._files import Block

__all__ = ["Chunk", "Part"]


@dataclass(frozen=True)
class Part:
    """One unit of work: a block of lines of a file, or a slice of a Parquet row group."""

    path: str
    format: str
    block: Block
    rows: int | None
    """Records in the part, when known before reading it (for the progress bar)."""
    header: tuple[str, ...] = ()
    """The header of a CSV file (only its first block holds it)."""
    group: int = 0
    """The row group of a Parquet part, whose rows ``block.start`` to ``block.stop`` it is."""
    split: frozenset[str] = frozenset()
    """Traces (hex ids) this part holds only some spans of: a trace file cut where a trace went on
    past the largest part allowed (see `tracesim.batch._files.trace_blocks`). Their runs are
    marked truncated."""


@dataclass
class Chunk:
    """The records of one part: keys per column, what to score, and why a bad row is bad.

    ``runs`` holds, per record, what run evaluators score instead of the output and expected
    value (`tracesim.batch._score_rows.RunValues`: the run or its tool calls, and the expected
    calls), or None when the record has none: they then get the output and expected value.
    """

    keys: dict[str, list[Any]]
    triples: list[tuple[Any, Any, Any]] = field(default_factory=list)
    bad: list[str | None] = field(default_factory=list)
    runs: list[Any] = field(default_factory=list)

    def add(
        self, keys: Sequence[Any], triple: tuple[Any, Any, Any], bad: str | None = None, run: Any = None
    ) -> None:
        for column, value in zip(self.keys.values(), keys, strict=True):
            column.append(value)
        self.triples.append(triple)
        self.bad.append(bad)
        self.runs.append(run)
