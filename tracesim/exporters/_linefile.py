"""Whole lines appended to a local file that several processes share, whatever the disk does.

`LineFile` is the durable part of the local exporters (spans in ``traces.jsonl``, evaluation
log records in ``traces.logs.jsonl``, metrics in ``traces.metrics.jsonl``): they encode, it
appends. A line is either in the file whole or not at all, so readers never meet a half line or
two lines glued together, and a line the disk refuses waits in memory, within a bound, until the
disk takes it. `LineFileExporter` is what those three exporters share around it.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
import threading
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from tracesim._internal_errors import CauseLog, internal_error, os_cause
from tracesim.tracefile import rotated_files
from tracesim.tracefile._reading import DEFAULT_BACKUPS

try:  # POSIX: serialise appends and rotation between processes sharing one file
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["DEFAULT_BACKLOG_BYTES", "DEFAULT_BACKUPS", "DEFAULT_MAX_BYTES", "LineFile", "LineFileExporter"]

_logger = logging.getLogger("tracesim")

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_BACKLOG_BYTES = 16 * 1024 * 1024
# Other processes may rotate the file between our open and our lock; past this many reopens
# for one line something is wrong, and the line waits in memory like any other failed one.
_REOPEN_TRIES = 16

_Result = TypeVar("_Result")


class LineFile:
    """Append newline-terminated lines to ``path``, each whole or not at all.

    - Several processes may append to one file: each line is written under an advisory lock
      (``flock``), with short writes continued until the line is complete.
    - When the file would grow past ``max_bytes`` it is renamed to ``<stem>.1<suffix>`` (older
      copies shift up to ``backups``; the oldest is deleted; see `rotated_files`) and a new file
      is started. A file rotated by another process is noticed and reopened.
    - A torn line left by a writer that died mid-line is terminated before a line follows it.
    - A line the disk refuses (full, file too large, I/O error, directory gone) is cut back off
      the file and kept in a bounded in-memory backlog (``backlog_bytes``; the oldest lines are
      dropped first and their items counted in ``dropped``), written first by the next
      `append` or `flush` once writing works again.
    - Each cause of failure is logged once on the ``tracesim`` logger, and so is recovery.
    - A forked child starts with its own descriptor and lock and an empty backlog: the lines
      waiting in the parent are the parent's to write.

    Args:
        path: The file; missing directories are created when it is first written.
        max_bytes: Rotate before a line would take the file past this size.
        backups: How many rotated copies to keep (0: start afresh, keeping none).
        backlog_bytes: How much refused data to keep in memory.
        what: What one item of a line is, for the log messages ("spans").

    Example:
        >>> import pathlib, tempfile
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "events.jsonl"
        >>> events = LineFile(path, what="events")
        >>> events.append(b'{"n":1}\\n', items=1)
        True
        >>> events.close()
        >>> path.read_bytes()
        b'{"n":1}\\n'
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        backups: int = DEFAULT_BACKUPS,
        backlog_bytes: int = DEFAULT_BACKLOG_BYTES,
        what: str = "lines",
    ) -> None:
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        if backups < 0:
            raise ValueError(f"backups must be >= 0, got {backups}")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self.backlog_bytes = max(0, backlog_bytes)
        self.what = what
        self.dropped = 0
        """Items dropped unwritten because the backlog was full (or left at `close`)."""
        self._closed = False
        self._fd: int | None = None
        # Each waiting line: its pieces, its items, its bytes; oldest first.
        self._backlog: deque[tuple[tuple[bytes, ...], int, int]] = deque()
        self._backlog_size = 0
        self._lock = threading.Lock()
        self._problems = CauseLog()
        _live.add(self)

    @property
    def pending(self) -> int:
        """Items waiting in memory for the file to accept them."""
        with self._lock:
            return sum(items for _, items, _ in self._backlog)

    @property
    def closed(self) -> bool:
        """True after `close`: appends are refused."""
        return self._closed

    def append(self, line: bytes | Sequence[bytes], items: int = 1) -> bool:
        """Write ``line`` after any waiting lines; True when all of them are in the file.

        ``line`` is the line's bytes, or its pieces in order (a large line is written piece
        by piece, never copied whole; it is still whole in the file or not there at all). It
        must end with a newline; ``items`` is how many records it holds, for `pending` and
        `dropped`. A refused line is kept to retry, so False does not mean lost.
        """
        pieces = (line,) if isinstance(line, bytes) else tuple(piece for piece in line if piece)
        if not pieces or not pieces[-1].endswith(b"\n"):
            raise ValueError("a line must end with a newline")
        size = sum(map(len, pieces))
        with self._lock:
            if self._closed:
                return False
            self._backlog.append((pieces, items, size))
            self._backlog_size += size
            if self._write_backlog():
                return True
            self._trim_backlog()
            return False

    def flush(self) -> bool:
        """Retry the lines waiting in memory; True when none is left."""
        with self._lock:
            if self._closed or not self._backlog:
                return not self._backlog
            return self._write_backlog()

    def close(self) -> None:
        """Write what waits in memory if the file takes it now, then close; later appends fail."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._backlog and not self._write_backlog():
                lost = sum(items for _, items, _ in self._backlog)
                self.dropped += lost
                self._backlog.clear()
                self._backlog_size = 0
                _logger.error(
                    "tracesim: %d %s could not be written to %s and are lost", lost, self.what, self.path
                )
            self._close_fd()

    def _write_backlog(self) -> bool:
        """Write waiting lines oldest first; True when none is left. Call under the lock."""
        while self._backlog:
            pieces, _, size = self._backlog[0]
            try:
                self._write(pieces, size)
            except OSError as exc:
                self._problems.failed(
                    os_cause(exc),
                    "tracesim: cannot write %s to %s (%s); keeping up to %d bytes of them in memory "
                    "and retrying on each export (logged once per cause)",
                    self.what,
                    self.path,
                    exc,
                    self.backlog_bytes,
                )
                return False
            self._backlog.popleft()
            self._backlog_size -= size
        self._problems.recovered(
            "tracesim: writing %s to %s works again (%d %s dropped so far)",
            self.what,
            self.path,
            self.dropped,
            self.what,
        )
        return True

    def _trim_backlog(self) -> None:
        while self._backlog and self._backlog_size > self.backlog_bytes:
            _, items, size = self._backlog.popleft()
            self._backlog_size -= size
            self.dropped += items
            self._problems.failed(
                "backlog full",
                "tracesim: %s for %s waiting in memory exceed %d bytes; dropping the oldest "
                "(counted in dropped)",
                self.what,
                self.path,
                self.backlog_bytes,
                level=logging.WARNING,
            )

    def _write(self, pieces: tuple[bytes, ...], size: int) -> None:
        """Append the line (its ``pieces``, ``size`` bytes) whole under the file lock, rotating
        first when it would not fit."""
        for _ in range(_REOPEN_TRIES):
            fd = self._open()
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if self._rotated_elsewhere(fd):
                    self._close_fd()
                    continue
                info = os.fstat(fd)
                if info.st_size and info.st_size + size > self.max_bytes:
                    self._rotate()
                    self._close_fd()
                    continue
                # Checked under the lock, so the tail we look at is no other writer's line in progress.
                self._append(fd, (_torn_line_end(fd, info), *pieces), info.st_size)
                return
            finally:
                if fcntl is not None and self._fd == fd:
                    fcntl.flock(fd, fcntl.LOCK_UN)
        raise OSError(errno.EBUSY, f"replaced by other processes {_REOPEN_TRIES} times during one write")

    def _append(self, fd: int, pieces: tuple[bytes, ...], start: int) -> None:
        """Write all of ``pieces`` at the end (``start``), or none of them.

        One write per piece: the interpreter is free for the host's threads during each.
        """
        done = 0
        try:
            for piece in pieces:
                view = memoryview(piece)
                at = 0
                while at < len(piece):
                    written = os.write(fd, view[at:])
                    if written <= 0:
                        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                    at += written
                    done += written
        except OSError:
            if done:
                self._cut(fd, start)
            raise

    def _cut(self, fd: int, start: int) -> None:
        # We hold the lock, so the file ends with our partial line: cut it back to where the
        # line began, or a later line would be glued to it and both would be unreadable.
        try:
            os.ftruncate(fd, start)
        except OSError:
            self._close_fd()  # the next writer terminates the torn line instead

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            flags = os.O_APPEND | os.O_CREAT
            try:  # readable too, to look at the last byte for a torn line
                self._fd = os.open(self.path, flags | os.O_RDWR, 0o644)
            except PermissionError:  # append-only permission: write without that check
                self._fd = os.open(self.path, flags | os.O_WRONLY, 0o644)
        return self._fd

    def _rotated_elsewhere(self, fd: int) -> bool:
        try:
            return os.stat(self.path).st_ino != os.fstat(fd).st_ino
        except FileNotFoundError:
            return True

    def _rotate(self) -> None:
        files = rotated_files(self.path, self.backups)
        if self.backups == 0:
            self.path.unlink(missing_ok=True)
            return
        files[-1].unlink(missing_ok=True)
        for older, newer in zip(reversed(files[1:]), reversed(files[:-1]), strict=True):
            if newer.exists():
                newer.replace(older)

    def _close_fd(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError as exc:  # e.g. EIO from a network file system: say so, go on
                self._problems.failed(os_cause(exc), "tracesim: closing %s failed (%s)", self.path, exc)

    def _start_afresh(self) -> None:
        # In a forked child. The inherited descriptor shares the parent's open file, and so its
        # flock: the two processes would not exclude each other. The lock may have been held by
        # a parent thread that does not exist here, and the waiting lines are the parent's.
        self._lock = threading.Lock()
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                os.close(fd)  # the parent's lock stays: it holds its own descriptor
        self._backlog.clear()
        self._backlog_size = 0
        self.dropped = 0
        self._problems = CauseLog()


def _torn_line_end(fd: int, info: os.stat_result) -> bytes:
    """A newline when the file ends in a torn line (a writer died mid-line), else nothing."""
    if not info.st_size or not stat.S_ISREG(info.st_mode):
        return b""
    try:
        last = os.pread(fd, 1, info.st_size - 1)
    except OSError:  # opened write-only: the reader skips what it cannot parse
        return b""
    return b"" if last == b"\n" else b"\n"


class LineFileExporter:
    """What the local OTLP/JSON exporters share: one `LineFile`, its counts, flush and shutdown.

    Listed before the OpenTelemetry exporter class in a subclass's bases. The subclass says
    what one item of its lines is (``what``) and its own name (``component``), for the log
    messages, and encodes each batch as one line for `_export`, which writes it.

    Example:
        >>> import pathlib, tempfile
        >>> class Lines(LineFileExporter):
        ...     what, component = "lines", "lines exporter"
        >>> lines = Lines(pathlib.Path(tempfile.mkdtemp()) / "lines.jsonl")
        >>> lines._export(1, lambda: b"{}\\n", "SUCCESS", "FAILURE"), lines.pending
        ('SUCCESS', 0)
        >>> lines.shutdown()
        >>> lines._export(1, lambda: b"{}\\n", "SUCCESS", "FAILURE")
        'FAILURE'
    """

    what: ClassVar[str]
    component: ClassVar[str]

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        backups: int = DEFAULT_BACKUPS,
        backlog_bytes: int = DEFAULT_BACKLOG_BYTES,
    ) -> None:
        super().__init__()
        self.file = LineFile(
            path, max_bytes=max_bytes, backups=backups, backlog_bytes=backlog_bytes, what=self.what
        )
        """Where the lines go: rotation settings, `pending` and `dropped` live here."""
        self.path = self.file.path

    @property
    def pending(self) -> int:
        """Items (spans, records, metric lines) waiting in memory for the file to accept them."""
        return self.file.pending

    @property
    def dropped(self) -> int:
        """Items dropped unwritten because the backlog was full (or left at shutdown)."""
        return self.file.dropped

    def _export(
        self, items: int, encode: Callable[[], bytes | Sequence[bytes]], success: _Result, failure: _Result
    ) -> _Result:
        """Write a batch of ``items`` as the one line ``encode`` makes; ``failure`` when it is
        not in the file (kept to retry), ``success`` for an empty batch."""
        if self.file.closed:
            return failure
        if not items:
            return success
        try:
            written = self.file.append(encode(), items=items)
        except Exception:  # a bug of ours: logged once (raised under our tests)
            internal_error(self.component)
            return failure
        return success if written else failure

    def force_flush(self, timeout_millis: float = 30_000) -> bool:
        """Retry the lines waiting in memory; True when every line is in the file."""
        return self.file.flush()

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Write what waits in memory if the file accepts it now, then close; later exports fail."""
        self.file.close()


_live: weakref.WeakSet[LineFile] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for line_file in list(_live):
        line_file._start_afresh()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)
