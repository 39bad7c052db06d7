"""Files for the batch sources: expanding globs, opening local paths and URLs, cutting into blocks.

A line-based file (JSONL, CSV, a trace file) is cut into blocks of whole lines of about
``block_bytes`` each, so a worker reads one block and never the whole file; the scan that finds
the cuts reads the file once, a buffer at a time, and counts lines on the way, so every block
knows the number of its first line (row ids stay the line numbers ``tracesim eval`` reports).
For CSV a cut is only made outside a quoted field, found by the parity of the quotes before it.

Paths with ``://`` are opened with ``fsspec`` (``s3://``, ``gs://``, ``https://``, ... with the
filesystem package each needs); everything else is a local path.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

_READ_BYTES = 1 << 20

__all__ = [
    "Block",
    "TraceBlock",
    "expand",
    "is_url",
    "line_blocks",
    "open_binary",
    "read_block",
    "trace_blocks",
]


@dataclass(frozen=True)
class Block:
    """Bytes ``start`` to ``stop`` of a file: whole lines, the first of them line ``first_line``."""

    start: int
    stop: int
    first_line: int
    lines: int


def is_url(path: str) -> bool:
    """Whether ``path`` names a file for fsspec (``s3://bucket/key``) rather than a local path."""
    return "://" in path and not path.startswith("file://")


def expand(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[str]:
    """The files that ``paths`` (paths, globs, directories or URLs) name, in sorted order per pattern.

    A directory stands for the data files directly in it (``.jsonl``, ``.csv``, ``.parquet``...;
    hidden files left out), e.g. a folder of trace files and their rotations.

    Raises:
        FileNotFoundError: a pattern matches nothing, or a path does not exist.
    """
    patterns = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    found: list[str] = []
    for pattern in (os.fspath(p) for p in patterns):
        pattern = pattern.removeprefix("file://")
        if is_url(pattern):
            found += _remote(pattern)
        elif glob.has_magic(pattern):
            matches = sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))
            if not matches:
                raise FileNotFoundError(f"no file matches {pattern}")
            found += matches
        elif os.path.isfile(pattern):
            found.append(pattern)
        elif os.path.isdir(pattern):  # a folder of data or trace files: the files directly in it
            inside = sorted(
                entry.path
                for entry in os.scandir(pattern)
                if entry.is_file() and not entry.name.startswith(".") and entry.name.endswith(_DATA_SUFFIXES)
            )
            if not inside:
                raise FileNotFoundError(f"{pattern}: a directory with no {', '.join(_DATA_SUFFIXES)} files")
            found += inside
        else:
            raise FileNotFoundError(f"{pattern}: no such file")
    return found


_DATA_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet", ".pq")


def _remote(pattern: str) -> list[str]:
    import fsspec  # type: ignore[import-untyped,unused-ignore]

    fs, _, paths = fsspec.get_fs_token_paths(pattern)
    if not paths:
        raise FileNotFoundError(f"no file matches {pattern}")
    return [fs.unstrip_protocol(p) for p in sorted(paths)]


@contextmanager
def open_binary(path: str) -> Iterator[IO[bytes]]:
    """Open a local path or an fsspec URL for reading bytes."""
    if not is_url(path):
        with open(path, "rb") as handle:
            yield handle
        return
    import fsspec  # type: ignore[import-untyped,unused-ignore]

    with fsspec.open(path, "rb") as handle:
        yield handle


def line_blocks(path: str, block_bytes: int, *, quoted: bool = False) -> list[Block]:
    """Cut a line-based file into blocks of whole lines (whole CSV records when ``quoted``).

    Only counts are kept past a block's first ``block_bytes``: a line of gigabytes is read
    through a megabyte at a time, never held (its reader refuses or skips it).
    """
    blocks: list[Block] = []
    start, line, quotes = 0, 1, 0
    with open_binary(path) as handle:
        while True:
            chunk = handle.read(block_bytes)
            if not chunk:
                break
            size, lines, ended = len(chunk), chunk.count(b"\n"), chunk.endswith(b"\n")
            quotes += chunk.count(b'"')
            # End the block at the end of a line, outside a quoted CSV field. A stray quote in
            # an unquoted field breaks the parity for good: past 8 blocks' worth, cut at a line
            # end anyway, so that one odd row cannot make the rest of the file one block.
            while not ended or (quoted and quotes % 2 and size < 8 * block_bytes):
                rest = handle.readline(_READ_BYTES)
                if not rest:
                    break
                size, lines, ended = size + len(rest), lines + rest.count(b"\n"), rest.endswith(b"\n")
                quotes += rest.count(b'"')
            quotes = 0 if quotes % 2 else quotes
            lines += not ended
            blocks.append(Block(start, start + size, line, lines))
            start += size
            line += lines
    return blocks


def read_block(path: str, block: Block) -> bytes:
    """The bytes of one block."""
    with open_binary(path) as handle:
        handle.seek(block.start)
        return handle.read(block.stop - block.start)


_TRACE_ID = re.compile(rb'"traceId"\s*:\s*"([^"]{1,64})"')


@dataclass(frozen=True)
class TraceBlock:
    """A block of a trace file that holds every span of its traces, but those in ``split``."""

    block: Block
    split: frozenset[str]


def trace_blocks(path: str, block_bytes: int, max_bytes: int) -> list[TraceBlock]:
    """Cut a trace file into blocks of whole lines that keep each trace's spans together.

    A run is rebuilt from its trace's spans, and an exporter writes one trace's spans over
    several lines (each export batch is a line), so a block is cut only between lines where no
    trace goes on past the cut: the first such place after ``block_bytes``. A trace that goes on
    past ``max_bytes`` (a long-lived trace in a file of many) is cut anyway, so no block holds
    more than about ``max_bytes``; its id is in ``split`` of the blocks on both sides. The scan
    reads the file once and keeps, per trace, the first and last line it is on (the trace ids
    are found in each line's text, not parsed).

    Example:
        >>> import os, tempfile
        >>> lines = [b'{"traceId": "a"} {"traceId": "b"}\\n', b'{"traceId": "b"}\\n', b'{"traceId": "c"}\\n']
        >>> with tempfile.NamedTemporaryFile(delete=False) as handle:
        ...     _ = handle.write(b"".join(lines))
        >>> [(t.block.first_line, t.block.lines) for t in trace_blocks(handle.name, 10, 1000)]
        [(1, 2), (3, 1)]
        >>> os.unlink(handle.name)
    """
    from tracesim import _inputs

    ends: list[int] = []
    reach: dict[bytes, list[int]] = {}  # trace id: [first line index, last line index]
    with open_binary(path) as handle:
        for index, (_, end, raw) in enumerate(_inputs.json_lines(handle)):
            ends.append(end)
            for trace in set(_TRACE_ID.findall(raw or b"")):
                seen = reach.get(trace)
                if seen is None:
                    reach[trace] = [index, index]
                else:
                    seen[1] = index
    last_of = [-1] * len(ends)
    for first, last in reach.values():
        last_of[first] = max(last_of[first], last)
    found: list[TraceBlock] = []
    start_index, start_byte, open_until, split_before = 0, 0, -1, frozenset[str]()
    for index, end in enumerate(ends):
        open_until = max(open_until, last_of[index])
        size = end - start_byte
        whole = open_until <= index
        if index + 1 < len(ends) and (size < block_bytes or not whole) and size < max_bytes:
            continue
        crossing = frozenset() if whole else _crossing(reach, index)
        block = Block(start_byte, end, start_index + 1, index + 1 - start_index)
        found.append(TraceBlock(block, split_before | crossing))
        start_index, start_byte, split_before = index + 1, end, crossing
    return found


def _crossing(reach: dict[bytes, list[int]], index: int) -> frozenset[str]:
    """The traces with spans on both sides of the cut after line ``index``."""
    return frozenset(
        trace.decode("ascii", "replace").lower()
        for trace, (first, last) in reach.items()
        if first <= index < last
    )
