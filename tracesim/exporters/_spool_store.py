"""The spool: batches waiting to be sent, oldest first, in memory or on disk.

Each entry has a name fixed when the batch arrives, ``<time_ns>-<pid>-<seq>-<spans>.jsonl``,
so sorting by name is sending order, also across restarts. An entry starts in memory (the
normal path: the background sender delivers it within milliseconds) and is written to disk
under its name when the backend is down, when too many batches wait in memory, or at
shutdown. A batch too large for one file becomes several,
``<time_ns>-<pid>-<seq>.<i>-<spans>.jsonl``, which sort in span order where the batch stood.
A file is written under a dot-name and renamed into place, so a reader never sees half a
batch. Each file is an ordinary trace file (one OTLP/JSON ``ExportTraceServiceRequest`` per
line), so ``tracesim replay`` and ``tracesim show`` read it.

Several processes may share a directory: the sender holds an advisory lock on a file while
sending it and checks that it still exists afterwards, so no batch is sent by two processes.
Each process sends the files it wrote and those it found when it started.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from opentelemetry.sdk.trace import ReadableSpan

from tracesim import _inputs
from tracesim.exporters._jsonl import encode_line

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no cross-process exclusion
    fcntl = None  # type: ignore[assignment]

__all__ = ["Encoded", "SpoolEntry", "SpoolStats", "SpoolStore", "claim", "encode_batch"]

_SUFFIX = ".jsonl"
_STALE_TMP_S = 3600.0
_MAX_PIECE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class SpoolStats:
    """Counters of a `SpoolingExporter`, in spans."""

    delivered: int
    """Spans the backend has accepted, sent from memory or from disk."""
    spooled: int
    """Spans written to disk (backend down, or too many batches waiting)."""
    resent: int
    """Spans from disk that the backend has accepted (part of ``delivered``)."""
    dropped: int
    """Spans deleted unsent: spool full (oldest first), a span larger than the whole spool, or a
    batch that could not be written."""
    rejected: int
    """Spans the backend refused repeatedly while healthy, or unreadable spool files."""
    pending: int
    """Spans waiting now, in memory and on disk."""
    pending_bytes: int
    """Bytes the waiting batches take on disk."""
    circuit_open: bool
    """True while the backend is considered down, or refuses the configuration."""
    refused: int = 0
    """Spans of the batches the backend refused in a way retrying cannot fix (400, 401, 403, 404,
    405, 415, 422), each attempt counted: those refused for the configuration stay in the spool,
    those refused for themselves are deleted (and counted in ``rejected`` too)."""


@dataclass(eq=False)
class SpoolEntry:
    """One waiting batch: ``batch`` while in memory, a file named ``name`` once on disk."""

    name: str
    spans: int
    batch: Sequence[ReadableSpan] | None = None
    size: int = 0  # bytes on disk; 0 while in memory
    parts: list[SpoolEntry] | None = None  # the files that replaced it when written in pieces

    @property
    def on_disk(self) -> bool:
        return self.batch is None and self.parts is None


@dataclass
class Encoded:
    """A batch encoded for the spool, and the spans left out of it."""

    pieces: list[tuple[bytes, int]]
    """Lines ``(data, spans)`` in span order."""
    too_big: int = 0
    """Spans larger, each alone, than the whole spool."""
    no_room: int = 0
    """The oldest spans, not encoded: the newer ones fill the room already."""


def encode_batch(spans: Sequence[ReadableSpan], max_bytes: int, room: int | None = None) -> Encoded:
    """Encode a batch as spool lines, within ``room`` bytes (default: the whole spool).

    A batch larger than ``min(max_bytes, 4 MiB)`` is cut into pieces of at most an eighth of
    ``max_bytes`` (and 4 MiB), newest first until the room is full: the spool can then keep
    the newest part of a batch larger than itself, and a re-sent request stays under the
    usual 4 MiB limit of OTLP receivers. Only a single span larger than ``max_bytes`` is
    left out for its size.

    Example:
        >>> encode_batch([], 1024).pieces
        []
    """
    room = max_bytes if room is None else min(room, max_bytes)
    if not spans or room <= 0:
        return Encoded([], no_room=len(spans))
    data = encode_line(spans)
    if len(data) <= min(max_bytes, _MAX_PIECE_BYTES):
        return Encoded([(data, len(spans))])
    piece_bytes = max(1, min(max_bytes // 8, _MAX_PIECE_BYTES))
    count = min(len(spans), max(2, -(-len(data) // piece_bytes)))
    bounds = [i * len(spans) // count for i in range(count + 1)]
    encoded, filled = Encoded([]), 0
    for i in reversed(range(count)):
        chunk = spans[bounds[i] : bounds[i + 1]]
        if filled >= room:  # older spans cannot be kept anyway: do not spend time encoding them
            encoded.no_room += len(chunk)
            continue
        pieces, too_big = _split(chunk, encode_line(chunk), piece_bytes, max_bytes)
        encoded.pieces[:0] = pieces
        encoded.too_big += too_big
        filled += sum(len(line) for line, _ in pieces)
    return encoded


def _split(
    spans: Sequence[ReadableSpan], data: bytes, piece_bytes: int, max_bytes: int
) -> tuple[list[tuple[bytes, int]], int]:
    if len(spans) == 1:
        return ([(data, 1)], 0) if len(data) <= max_bytes else ([], 1)
    if len(data) <= piece_bytes:
        return [(data, len(spans))], 0
    # Cut straight into about as many pieces as needed (one encoding pass per level).
    count = min(len(spans), max(2, -(-len(data) // piece_bytes)))
    pieces: list[tuple[bytes, int]] = []
    too_big = 0
    for i in range(count):
        chunk = spans[i * len(spans) // count : (i + 1) * len(spans) // count]
        more, out = _split(chunk, encode_line(chunk), piece_bytes, max_bytes)
        pieces.extend(more)
        too_big += out
    return pieces, too_big


class SpoolStore:
    """The waiting entries in sending order, with the bytes they take on disk.

    Not thread-safe: `SpoolingExporter` calls it under its lock, except `claim`, which only
    touches the one file being sent.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.entries: deque[SpoolEntry] = deque()
        self.bytes = 0
        self.in_memory = 0
        self._last_ns = 0
        self._seq = 0
        self._scan()

    def _scan(self) -> None:
        now = time.time()
        found: list[SpoolEntry] = []
        for entry in os.scandir(self.directory):
            if entry.name.startswith("."):
                # A writer that died between write and rename leaves a dot-file behind.
                with contextlib.suppress(OSError):
                    if entry.name.endswith(".tmp") and now - entry.stat().st_mtime > _STALE_TMP_S:
                        os.unlink(entry.path)
                continue
            if entry.name.endswith(_SUFFIX) and entry.is_file():
                found.append(SpoolEntry(entry.name, _span_count(entry.name), None, entry.stat().st_size))
        found.sort(key=lambda e: e.name)
        self.entries = deque(found)
        self.bytes = sum(e.size for e in found)

    @property
    def spans(self) -> int:
        """Spans waiting, in memory and on disk."""
        return sum(e.spans for e in self.entries)

    def path(self, entry: SpoolEntry) -> Path:
        return self.directory / entry.name

    def _base(self) -> str:
        now = max(time.time_ns(), self._last_ns + 1)  # strictly increasing names in this process
        self._last_ns = now
        self._seq += 1
        return f"{now:020d}-{os.getpid()}-{self._seq:06d}"

    def add_in_memory(self, batch: Sequence[ReadableSpan]) -> SpoolEntry:
        """Queue a batch in memory, as the newest entry."""
        entry = SpoolEntry(f"{self._base()}-{len(batch)}{_SUFFIX}", len(batch), batch)
        self.entries.append(entry)
        self.in_memory += 1
        return entry

    def add_on_disk(self, pieces: Sequence[tuple[bytes, int]]) -> list[SpoolEntry]:
        """Write the encoded pieces of one batch to disk, as the newest entries (all or none)."""
        parts = _parts(self._base(), pieces)
        self._write_all(parts, pieces)
        self.entries.extend(parts)
        return parts

    def persist(self, entry: SpoolEntry, pieces: Sequence[tuple[bytes, int]]) -> None:
        """Move an in-memory entry to disk as ``pieces`` (none: forget it), keeping its place."""
        if entry.batch is None or entry.parts is not None or entry not in self.entries:
            return
        if not pieces:
            self.remove(entry)
            return
        if len(pieces) == 1:  # the usual case: the entry keeps its name
            self._write_all([entry], pieces)
            entry.batch = None
        else:
            parts = _parts(entry.name[: -len(_SUFFIX)].rsplit("-", 1)[0], pieces)
            self._write_all(parts, pieces)
            # The entry leaves the queue but keeps its batch: a sender sending it right now
            # still can, and removing it then removes its parts.
            index = self.entries.index(entry)
            del self.entries[index]
            for part in reversed(parts):
                self.entries.insert(index, part)
            entry.parts = parts
        self.in_memory -= 1

    def _write_all(self, entries: Sequence[SpoolEntry], pieces: Sequence[tuple[bytes, int]]) -> None:
        written: list[SpoolEntry] = []
        try:
            for entry, (data, _) in zip(entries, pieces, strict=True):
                self._write(entry, data)
                written.append(entry)
        except OSError:
            for entry in written:  # all or none: a half-written batch would be re-sent half
                self.bytes -= entry.size
                entry.size = 0
                with contextlib.suppress(OSError):
                    self.path(entry).unlink()
            raise

    def _write(self, entry: SpoolEntry, data: bytes) -> None:
        tmp = self.directory / f".{entry.name}.tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, self.path(entry))
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink()  # a full disk must not fill up further with our leftovers
            raise
        entry.size = len(data)
        self.bytes += entry.size

    def room_for(self, entry: SpoolEntry | None, max_bytes: int) -> int:
        """Bytes ``entry`` (None: a new batch) may take: the bound less the newer files."""
        entries = list(self.entries)
        index = entries.index(entry) if entry in entries else len(entries)
        return max_bytes - sum(e.size for e in entries[index + 1 :] if e.on_disk)

    def make_room(
        self, pieces: list[tuple[bytes, int]], entry: SpoolEntry | None, max_bytes: int
    ) -> tuple[list[tuple[bytes, int]], int]:
        """Keep the newest data within ``max_bytes`` when ``pieces`` of ``entry`` (None: a new
        batch) are written: delete older files first (one being sent too: its sender has
        read it), then leave out the oldest pieces if newer files leave too little room.

        Returns the pieces to write and the spans dropped for room.
        """
        entries = list(self.entries)
        index = entries.index(entry) if entry in entries else len(entries)
        room = self.room_for(entry, max_bytes)
        first, total = len(pieces), 0
        while first and total + len(pieces[first - 1][0]) <= room:
            first -= 1
            total += len(pieces[first][0])
        dropped = sum(spans for _, spans in pieces[:first])
        for victim in [e for e in entries[:index] if e.on_disk]:
            if self.bytes + total <= max_bytes:
                break
            dropped += self.remove(victim)
        return pieces[first:], dropped

    def remove(self, entry: SpoolEntry, *, unlink: bool = True) -> int:
        """Forget ``entry`` and delete its file (unless another process owns it now).

        Returns the spans forgotten: fewer than ``entry.spans`` when it (or some of the pieces
        it was written in) had been removed already.
        """
        try:
            self.entries.remove(entry)
        except ValueError:  # gone, or written to disk in pieces
            return sum(self.remove(part, unlink=unlink) for part in entry.parts or ())
        if not entry.on_disk:
            self.in_memory -= 1
            return entry.spans
        self.bytes -= entry.size
        if unlink:
            with contextlib.suppress(FileNotFoundError):
                self.path(entry).unlink()
        return entry.spans


def _parts(base: str, pieces: Sequence[tuple[bytes, int]]) -> list[SpoolEntry]:
    # One piece: <base>-<spans>.jsonl; several: <base>.<i>-<spans>.jsonl, sorting in order.
    if len(pieces) == 1:
        return [SpoolEntry(f"{base}-{pieces[0][1]}{_SUFFIX}", pieces[0][1])]
    return [SpoolEntry(f"{base}.{i:06d}-{spans}{_SUFFIX}", spans) for i, (_, spans) in enumerate(pieces)]


@contextlib.contextmanager
def claim(path: Path) -> Iterator[list[Mapping[str, Any]] | None]:
    """Lock the spool file ``path`` against other processes and yield its requests.

    Yields ``None`` when the file is gone or another process is sending it. The caller
    deletes the file inside the ``with`` block after a successful send, so no other process
    can pick it up in between.

    Raises:
        ValueError: a line is not JSON (the file is damaged), or over a limit of a trace
            file's line (an `InputError`: 64 MiB, 256 levels of nesting), refused without
            being read whole.
    """
    try:
        f = open(path, "rb")  # noqa: SIM115 - held open for the lock's lifetime
    except FileNotFoundError:
        yield None
        return
    with f:
        if fcntl is not None:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield None
                return
        try:
            same = os.stat(path).st_ino == os.fstat(f.fileno()).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # sent and deleted by another process while we opened it
            yield None
            return
        yield _requests(f, os.fspath(path))


def _requests(f: BinaryIO, name: str) -> list[Mapping[str, Any]]:
    """The requests of the open spool file ``f``, within the limits of a trace file's line.

    The spool writes one line a file, of at most 4 MiB but for a single larger span: a file
    over 64 MiB was not written by it, or holds a span no receiver takes (nor would a 2 GB
    file be read whole here). A long line is refused without being held whole.
    """
    limit = _inputs.MAX_LINE_BYTES
    size = os.fstat(f.fileno()).st_size
    if size > limit + 1:  # one line and its newline
        raise _inputs.InputError(
            name, f"{size:,} bytes, more than {limit + 1:,} bytes", limit="spool file size"
        )
    requests = []
    for _, request in _inputs.json_records(f, name=name, limit=limit):
        if isinstance(request, _inputs.InputError):
            raise request
        requests.append(request)
    return requests


def _span_count(name: str) -> int:
    try:
        return int(name[: -len(_SUFFIX)].rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return 0
