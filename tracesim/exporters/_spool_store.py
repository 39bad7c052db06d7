"""The spool: batches waiting to be sent, oldest first, in memory or on disk.

Each entry has a name fixed when the batch arrives, ``<time_ns>-<pid>-<seq>-<spans>.jsonl``,
so sorting by name is sending order, also across restarts. An entry starts in memory (the
normal path: the background sender delivers it within milliseconds) and is written to disk
under its name when the backend is down, when too many batches wait in memory, or at
shutdown. A file is written under a dot-name and renamed into place, so a reader never sees
half a batch. Each file is an ordinary trace file (one OTLP/JSON ``ExportTraceServiceRequest``
per line), so ``tracesim replay`` and ``tracesim show`` read it.

Several processes may share a directory: the sender holds an advisory lock on a file while
sending it and checks that it still exists afterwards, so no batch is sent by two processes.
Each process sends the files it wrote and those it found when it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no cross-process exclusion
    fcntl = None  # type: ignore[assignment]

__all__ = ["SpoolEntry", "SpoolStore", "claim"]

_SUFFIX = ".jsonl"
_STALE_TMP_S = 3600.0


@dataclass(eq=False)
class SpoolEntry:
    """One waiting batch: ``batch`` while in memory, a file named ``name`` once on disk."""

    name: str
    spans: int
    batch: Sequence[ReadableSpan] | None = None
    size: int = 0  # bytes on disk; 0 while in memory

    @property
    def on_disk(self) -> bool:
        return self.batch is None


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

    def _name(self, spans: int) -> str:
        now = max(time.time_ns(), self._last_ns + 1)  # strictly increasing names in this process
        self._last_ns = now
        self._seq += 1
        return f"{now:020d}-{os.getpid()}-{self._seq:06d}-{spans}{_SUFFIX}"

    def add_in_memory(self, batch: Sequence[ReadableSpan]) -> SpoolEntry:
        """Queue a batch in memory, as the newest entry."""
        entry = SpoolEntry(self._name(len(batch)), len(batch), batch)
        self.entries.append(entry)
        self.in_memory += 1
        return entry

    def add_on_disk(self, data: bytes, spans: int) -> SpoolEntry:
        """Write an encoded batch to disk, as the newest entry."""
        entry = SpoolEntry(self._name(spans), spans)
        self._write(entry, data)
        self.entries.append(entry)
        return entry

    def persist(self, entry: SpoolEntry, data: bytes) -> None:
        """Move an in-memory entry to disk, keeping its place in the order."""
        if entry.on_disk or entry not in self.entries:
            return
        self._write(entry, data)
        entry.batch = None
        self.in_memory -= 1

    def _write(self, entry: SpoolEntry, data: bytes) -> None:
        tmp = self.directory / f".{entry.name}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, self.path(entry))
        entry.size = len(data)
        self.bytes += entry.size

    def remove(self, entry: SpoolEntry, *, unlink: bool = True) -> None:
        """Forget ``entry`` and delete its file (unless another process owns it now)."""
        try:
            self.entries.remove(entry)
        except ValueError:
            return
        if not entry.on_disk:
            self.in_memory -= 1
            return
        self.bytes -= entry.size
        if unlink:
            with contextlib.suppress(FileNotFoundError):
                self.path(entry).unlink()


@contextlib.contextmanager
def claim(path: Path) -> Iterator[list[Mapping[str, Any]] | None]:
    """Lock the spool file ``path`` against other processes and yield its requests.

    Yields ``None`` when the file is gone or another process is sending it. The caller
    deletes the file inside the ``with`` block after a successful send, so no other process
    can pick it up in between.

    Raises:
        ValueError: a line is not JSON (the file is damaged).
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
        yield [json.loads(line) for line in f if line.strip()]


def _span_count(name: str) -> int:
    try:
        return int(name[: -len(_SUFFIX)].rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return 0
