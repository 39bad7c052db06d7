"""Where batch records come from: data files (JSONL, CSV, Parquet) and trace files (spans).

A source is a small frozen description, cheap to send to workers. The driver asks it for its
`Part` list (a scan of the files, never a load), and each task reads one part into a `Chunk`:
the row keys, the ``(output, expected, input)`` to score, and, for a row that cannot be
scored, why. Keys identify a record for good, so a part read twice gives the same rows: data
rows by file and line (the line number ``tracesim eval`` reports; the 1-based row in Parquet),
spans by ``trace_id`` and ``span_id`` (what a later backfill needs to find the span again).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from tracesim import _inputs
from tracesim.batch._files import Block, expand, line_blocks, open_binary, read_block, trace_blocks
from tracesim.batch._parts import Chunk, Part
from tracesim.batch._records import Columns, json_rows, run_cells

if TYPE_CHECKING:
    from tracesim._scoring import Golden, Rule

__all__ = ["Records", "SourceError", "Spans", "id_text"]

Format = Literal["jsonl", "csv", "parquet"]
PathLike = str | os.PathLike[str]
_SUFFIXES: dict[str, Format] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".tsv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_BLOCK_BYTES = 1024 * 1024  # about 8,000 short answers: a task of seconds, retried cheaply
_PARQUET_ROWS = 10_000
_MAX_TRACE_BYTES = 64 * _BLOCK_BYTES
_GOLDEN: dict[tuple[str, str], Golden] = {}
_GOLDEN_LOCK = threading.Lock()


class SourceError(ValueError):
    """A source that cannot be read at all (no file, no output column): raised before scoring."""


def id_text(value: Any) -> str | None:
    """A row id as text (ids are strings in the results, so every part has one schema).

    Example:
        >>> id_text("r1"), id_text(7), id_text(None)
        ('r1', '7', None)
    """
    if value is None or isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (ValueError, TypeError, RecursionError):  # NaN or an infinity, as tracesim eval: no id
        return None


@dataclass(frozen=True)
class Records:
    """Rows of JSONL, CSV or Parquet files: local paths, globs, or fsspec URLs.

    ``output``, ``expected``, ``input`` and ``id`` name the columns (as ``tracesim eval``'s
    ``--output-col`` and friends); ``format`` is taken from each file's suffix unless given.
    ``tool_calls`` and ``expected_tool_calls`` name the columns run evaluators score: the calls
    an agent made and those it should have made (see `tracesim.batch._records.run_cells`).

    Example:
        >>> source = Records("answers/*.jsonl", output="answer")
        >>> source.columns.output
        'answer'
    """

    path: PathLike | Sequence[PathLike]
    format: Format | None = None
    output: str = "output"
    expected: str = "expected"
    input: str = "input"
    id: str = "id"
    block_bytes: int = _BLOCK_BYTES
    parquet_rows: int = _PARQUET_ROWS
    tool_calls: str = "tool_calls"
    expected_tool_calls: str = "expected_tool_calls"

    key_columns = ("source", "row", "id")

    @property
    def columns(self) -> Columns:
        return Columns(
            self.output, self.expected, self.input, self.id, self.tool_calls, self.expected_tool_calls
        )

    def parts(self) -> list[Part]:
        """Every part of every file, in file order; a scan, not a load."""
        try:
            files = expand(self.path)
        except FileNotFoundError as exc:
            raise SourceError(str(exc)) from None
        found: list[Part] = []
        for path in files:
            fmt = self.format or _SUFFIXES.get(os.path.splitext(path)[1].lower(), "jsonl")
            if fmt == "parquet":
                found += _parquet_parts(path, self.columns, self.parquet_rows)
            elif fmt == "csv":
                header = _csv_header(path, self.columns)
                blocks = line_blocks(path, self.block_bytes, quoted=True)
                found += [Part(path, fmt, b, b.lines - (b.start == 0), header) for b in blocks]
            else:
                found += [Part(path, fmt, b, b.lines) for b in line_blocks(path, self.block_bytes)]
        return found

    def read(self, part: Part, *, runs: bool = False) -> Chunk:
        """The records of one part; a row with tool call columns carries its run whatever ``runs``."""
        chunk = Chunk({name: [] for name in self.key_columns})
        cols = self.columns
        if part.format == "parquet":
            _read_parquet(part, cols, chunk)
            return chunk
        rows = _csv_rows(part, cols) if part.format == "csv" else _jsonl_rows(part, cols)
        for row in rows:
            if len(row) == 2:
                chunk.add((part.path, row[0], None), (None, None, None), row[1])
            else:
                number, row_id, output, expected, input_value = row[:5]
                run = row[5] if len(row) == 6 else None
                chunk.add((part.path, number, id_text(row_id)), (output, expected, input_value), run=run)
        return chunk


def _jsonl_rows(part: Part, cols: Columns) -> Any:
    # read as tracesim eval reads the whole file: a line over the limit is read past, never held
    block = part.block
    with open_binary(part.path) as handle:
        handle.seek(block.start)
        lines = _inputs.json_lines(handle, first_line=block.first_line, size=block.stop - block.start)
        yield from json_rows(lines, cols)


def _csv_header(path: str, cols: Columns) -> tuple[str, ...]:
    import csv
    import io

    from tracesim.batch._records import not_utf8

    with open_binary(path) as handle:
        first = handle.readline()  # a header with a quoted line break is not worth a scan
    try:
        header = next(csv.reader(io.StringIO(first.decode("utf-8-sig", "surrogateescape"), newline="")), [])
    except csv.Error as exc:
        raise SourceError(f"{path}: unreadable CSV header ({exc})") from None
    if any(not_utf8(name) for name in header):
        raise SourceError(f"{path}: the CSV header is not valid UTF-8")
    if cols.output not in header and cols.tool_calls not in header:
        raise SourceError(f"{path}: no {cols.output!r} column (columns: {', '.join(header) or 'none'})")
    return tuple(header)


def _csv_rows(part: Part, cols: Columns) -> Any:
    import csv
    import io
    import sys

    from tracesim.batch._records import csv_row

    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    first = part.block.start == 0
    text = read_block(part.path, part.block).decode("utf-8-sig" if first else "utf-8", "surrogateescape")
    # the first block holds the header itself: DictReader numbers its lines as tracesim eval does
    reader = csv.DictReader(io.StringIO(text, newline=""), fieldnames=None if first else list(part.header))
    base = part.block.first_line - 1
    try:
        for row in reader:
            yield csv_row(base + reader.line_num, row, cols)
    except csv.Error as exc:
        yield base + reader.line_num + 1, f"unreadable CSV from here on ({exc})"


def _parquet_parts(path: str, cols: Columns, rows_per_part: int) -> list[Part]:
    import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

    with open_binary(path) as handle:
        meta = pq.ParquetFile(handle).metadata
        names = set(meta.schema.names)
    if cols.output not in names and cols.tool_calls not in names:
        raise SourceError(f"{path}: no {cols.output!r} column (columns: {', '.join(sorted(names))})")
    parts, first = [], 1
    for group in range(meta.num_row_groups):
        size = meta.row_group(group).num_rows
        for start in range(0, size, rows_per_part):
            count = min(rows_per_part, size - start)
            block = Block(start, start + count, first + start, count)
            parts.append(Part(path, "parquet", block, count, group=group))
        first += size
    return parts


def _read_parquet(part: Part, cols: Columns, chunk: Chunk) -> None:
    import pyarrow.parquet as pq  # type: ignore[import-untyped,unused-ignore]

    block = part.block
    wanted = [cols.output, cols.expected, cols.input, cols.id, cols.tool_calls, cols.expected_tool_calls]
    with open_binary(part.path) as handle:
        reader = pq.ParquetFile(handle)
        present = [name for name in dict.fromkeys(wanted) if name in reader.schema_arrow.names]
        # Stream the row group and keep this part's slice: a writer's row group can hold a
        # million rows, and a part must not load more than its own.
        seen = 0
        kept: dict[str, list[Any]] = {name: [] for name in present}
        for batch in reader.iter_batches(block.stop - block.start, row_groups=[part.group], columns=present):
            low, high = max(block.start - seen, 0), min(block.stop - seen, batch.num_rows)
            seen += batch.num_rows
            if low < high:
                for name in present:
                    kept[name] += batch.column(name).slice(low, high - low).to_pylist()
            if seen >= block.stop:
                break
    empty = [None] * (block.stop - block.start)
    outputs, expected, inputs, ids = (kept.get(name, empty) for name in wanted[:4])
    runs = cols.has_runs(kept)
    for i in range(block.stop - block.start):
        keys = (part.path, block.first_line + i, id_text(ids[i]))
        run = run_cells({name: values[i] for name, values in kept.items()}, cols) if runs else None
        if isinstance(run, str):
            chunk.add(keys, (None, None, None), run)
        else:
            chunk.add(keys, (outputs[i], expected[i], inputs[i]), run=run)


@dataclass(frozen=True)
class Spans:
    """The spans of tracesim trace files (OTLP/JSON lines) that a rule selects, as records.

    ``name`` is a glob on span names, ``kind`` a span kind (``agent``, ``llm``...) or a GenAI
    operation (``chat``...), ``attributes`` values the span must have (strings are globs), as
    in the ``evaluators`` rules of ``tracesim.configure``. The output and input are read where
    each convention writes them (``output.value``, GenAI messages...), the expected output from
    ``tracesim.expected.value``. Each record keeps its ``trace_id``, ``span_id`` and
    ``span_end_ns`` (when the span ended, where a backfill places its scores). For run
    evaluators, a span's run is rebuilt from the spans of its trace, and its expected tool calls
    read from ``tracesim.expected.tool_calls``; the parts then keep traces whole (see `parts`).

    Example:
        >>> Spans(".tracesim/traces*.jsonl", name="answer*", kind="agent").kind
        'agent'
    """

    path: PathLike | Sequence[PathLike]
    name: str = "*"
    kind: str | None = None
    attributes: Mapping[str, Any] | None = None
    block_bytes: int = _BLOCK_BYTES
    max_trace_bytes: int = _MAX_TRACE_BYTES
    """With run evaluators, a part grows past ``block_bytes`` to keep its traces whole, up to this."""
    golden: PathLike | None = None
    """A dataset (JSONL or CSV, read as `tracesim.Golden` reads it) of expected outputs and
    ``expected_tool_calls``, for the spans that recorded no expected value: looked up by the
    span's input, its ``golden_key`` argument."""
    golden_key: str = "input"

    key_columns = ("source", "row", "trace_id", "span_id", "span_name", "span_end_ns")

    def __post_init__(self) -> None:
        self.rule()  # a bad kind or attribute fails here, before any file is read
        if self.golden is not None:  # workers may run elsewhere: the driver's folder names it
            object.__setattr__(self, "golden", os.path.abspath(os.fspath(self.golden)))
        self.golden_file()  # and a golden file that cannot be read (a ConfigError naming it)

    def golden_file(self) -> Golden | None:
        """The `tracesim.Golden` of ``golden``, read once per process (and again when it changes)."""
        if self.golden is None:
            return None
        from tracesim._scoring import Golden

        key = (os.fspath(self.golden), self.golden_key)
        with _GOLDEN_LOCK:
            found = _GOLDEN.get(key)
            if found is None:
                found = _GOLDEN[key] = Golden(key[0], key=self.golden_key)
        return found

    def rule(self) -> Rule:
        from tracesim._scoring import compile_rules

        spec: dict[str, Any] = {"match": self.name, "evaluators": []}
        if self.kind is not None:
            spec["kind"] = self.kind
        if self.attributes:
            spec["attributes"] = dict(self.attributes)
        return compile_rules([spec])[0]

    def parts(self, *, whole_traces: bool = False) -> list[Part]:
        """Every block of every trace file; how many spans each holds is known only once read.

        ``whole_traces`` (for run evaluators, which read a span's whole run): each block holds
        all the spans of the traces on its lines, so a run is rebuilt from one part
        (`tracesim.batch._files.trace_blocks`; a trace longer than ``max_trace_bytes`` is split,
        and its runs are marked truncated).
        """
        try:
            files = expand(self.path)
        except FileNotFoundError as exc:
            raise SourceError(str(exc)) from None
        if whole_traces:
            return [
                Part(path, "traces", cut.block, None, split=cut.split)
                for path in files
                for cut in trace_blocks(path, self.block_bytes, self.max_trace_bytes)
            ]
        return [Part(path, "traces", b, None) for path in files for b in line_blocks(path, self.block_bytes)]

    def read(self, part: Part, *, runs: bool = False) -> Chunk:
        """The selected spans of one block of a trace file, and its unreadable lines as bad rows;
        with ``runs``, each span's run rebuilt from the spans of its trace in the block too."""
        from tracesim.batch._spans import read_spans

        chunk = Chunk({name: [] for name in self.key_columns})
        read_spans(part, self.rule(), chunk, runs=runs, golden=self.golden_file())
        return chunk
