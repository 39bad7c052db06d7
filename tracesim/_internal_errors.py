"""The one place where tracesim's own failures are handled.

Telemetry must never break the host program: an internal error inside a traced call is
logged once per place on the ``tracesim`` logger and the call goes on untraced. While
tracesim's own tests run (``internal_errors="raise"``) the error is re-raised instead, so
bugs are not hidden from us.
"""

from __future__ import annotations

import errno
import logging
import threading

__all__ = ["CauseLog", "WarnOnce", "internal_error", "os_cause", "set_raise", "warn_once"]

_logger = logging.getLogger("tracesim")
_lock = threading.Lock()
_logged: set[str] = set()
_raise = False
counts: dict[str, int] = {}


def set_raise(value: bool) -> None:
    """Re-raise internal errors (tracesim's tests) or log them (everyone else)."""
    global _raise
    _raise = value


def internal_error(where: str) -> None:
    """Handle the exception being processed: call from an ``except`` block only.

    Example:
        >>> try:
        ...     1 / 0
        ... except ZeroDivisionError:
        ...     internal_error("doctest")  # logs once, or re-raises under tracesim's tests
    """
    with _lock:
        counts[where] = counts.get(where, 0) + 1
        first = where not in _logged
        _logged.add(where)
    if _raise:
        raise
    if first:
        _logger.exception(
            "tracesim internal error in %s; telemetry for this call is incomplete, your code is unaffected "
            "(logged once)",
            where,
        )


class WarnOnce:
    """Log each kind of run-time problem once (per instance) on the ``tracesim`` logger.

    Example:
        >>> warnings = WarnOnce()
        >>> warnings.warn("full", "tracesim: queue full")  # logged
        >>> warnings.warn("full", "tracesim: queue full")  # not again
    """

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def warn(self, key: str, message: str, *args: object) -> None:
        """Log ``message % args`` as a warning unless ``key`` was logged before."""
        with self._lock:
            if key in self._seen:
                return
            self._seen.add(key)
        _logger.warning(message, *args)


warn_once = WarnOnce().warn
"""Once per process: for problems with no configuration of their own (capture, redaction)."""


class CauseLog:
    """Log the problems of one resource once per cause, and once more when it works again.

    Unlike `WarnOnce`, a resource that recovers and fails again is logged again: a disk that
    fills up every night says so every night, not once per process.

    Example:
        >>> problems = CauseLog()
        >>> problems.failed("ENOSPC", "tracesim: cannot write %s", "t.jsonl")  # logged
        True
        >>> problems.failed("ENOSPC", "tracesim: cannot write %s", "t.jsonl")  # not again
        False
        >>> problems.recovered("tracesim: writing %s works again", "t.jsonl")  # logged; causes forgotten
        True
    """

    def __init__(self) -> None:
        self._causes: set[str] = set()
        self._lock = threading.Lock()

    def failed(self, cause: str, message: str, *args: object, level: int = logging.ERROR) -> bool:
        """Log ``message % args`` unless ``cause`` was logged since the last recovery."""
        with self._lock:
            if cause in self._causes:
                return False
            self._causes.add(cause)
        _logger.log(level, message, *args, stacklevel=2)
        return True

    def recovered(self, message: str, *args: object) -> bool:
        """Log ``message % args`` if any cause was logged, and forget the causes."""
        with self._lock:
            if not self._causes:
                return False
            self._causes.clear()
        _logger.warning(message, *args, stacklevel=2)
        return True


def os_cause(exc: OSError) -> str:
    """A stable name for an OS error's cause, to key a `CauseLog` with.

    Example:
        >>> os_cause(OSError(28, "No space left on device"))
        'ENOSPC'
    """
    return errno.errorcode.get(exc.errno or 0, type(exc).__name__)
