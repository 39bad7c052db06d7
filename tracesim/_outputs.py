"""Everything tracesim writes or prints, other than spans, passes here and is redacted here.

Spans are redacted once on their way out (`tracesim.exporters.Redaction`). Every other output
tracesim makes (experiment JSON, HTML and text, ``tracesim eval`` results, batch Parquet and
JSONL, pytest JSON, JUnit properties, step summaries and failure messages, backfill and replay
ledgers and console lines, tracesim's own log lines) is written through the functions of this
module, which run the same redaction over it: the running configuration's (its
``redact_patterns`` and ``redact`` hook) when `tracesim.configure` ran in this process, else the
patterns of ``tracesim.yaml`` and the environment. Values are not cut here: an output keeps
what its writer chose to keep, less the secrets.

A test (``tests/test_outputs.py``) holds the structure: no module of tracesim writes a file or
a stream by other means than these, and every writer is tried with a secret of every kind in
every field.

- `clean` redacts a JSON-like value (mapping keys too), `text` one string;
- `write_text`, `write_json` and `write_bytes_of` write a whole file (to a temporary name,
  then renamed, so a reader never sees half of it); `open_text` and `open_stream` open a file
  whose every ``write`` is redacted (write whole records: a secret split over two is missed);
- `echo` prints; `stream` wraps a text stream (a ``rich`` console's file, ``sys.stderr``);
- the ``tracesim`` logger redacts its records (`install_log_redaction`, done on import).

Example:
    >>> clean({"error": "401: Incorrect API key provided: sk-proj-Abc123Def456Ghi789Jkl0"})
    {'error': '401: Incorrect API key provided: [REDACTED:api_key]'}
    >>> text("write to marie@curie.org")
    'write to [REDACTED:email]'
"""

from __future__ import annotations

import io
import json
import logging
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any, TextIO, TypeVar, cast

from tracesim._redact import PATTERN_GROUPS, Redactor

__all__ = [
    "clean",
    "echo",
    "install_log_redaction",
    "open_stream",
    "open_text",
    "redactor",
    "stream",
    "text",
    "write_bytes_of",
    "write_json",
    "write_text",
]

T = TypeVar("T")

ATTRIBUTE = "tracesim.output"
"""The attribute name a user's ``redact`` hook is called with for output text."""

_MAX_DEPTH = 200  # deeper parts of a document are replaced, never written unredacted
_fallback: Redactor | None = None


def redactor() -> Redactor:
    """The redaction in force: the running configuration's, else the settings' patterns.

    Example:
        >>> redactor().redact("Bearer abcdef0123456789abcdef", "x")
        'Bearer [REDACTED:token]'
    """
    from tracesim import _runtime

    runtime = _runtime.current
    if runtime is not None and runtime.redaction is not None:
        return runtime.redaction.redactor
    global _fallback
    fallback = _fallback
    if fallback is None:  # two threads may both build it: the same patterns, no lock held
        fallback = _fallback = _from_settings()
    return fallback


def _from_settings() -> Redactor:
    """The patterns of ``tracesim.yaml`` and the environment; all of them when unreadable."""
    try:
        from tracesim._config import resolve_setting

        return Redactor(resolve_setting("redact_patterns"))
    except Exception:  # an unreadable setting is reported where it is used; outputs stay redacted
        return Redactor(PATTERN_GROUPS)


def forget_settings() -> None:
    """Read the settings again for the next output (after the environment changed: tests)."""
    global _fallback
    _fallback = None


def text(value: str, what: str = ATTRIBUTE) -> str:
    """``value`` with every secret replaced. Never raises.

    Example:
        >>> text("postgres://app:hunter2@localhost/db")
        'postgres://app:[REDACTED:password]@localhost/db'
    """
    return redactor().redact(value if type(value) is str else str(value), what)


def clean(value: T, what: str = ATTRIBUTE) -> T:
    """A copy of a JSON-like ``value`` with every string redacted, mapping keys included.

    Mappings become dicts, tuples stay tuples, other lists lists; numbers, booleans and None are
    kept; any other object is kept as it is (its writer turns it into text: pass that text
    through `text`). Parts nested deeper than 200 levels are replaced by ``"[REDACTED:depth]"``.

    Example:
        >>> clean({"marie@curie.org": ["ok", ("sk-ant-api03-AbCdEf0123456789xyzXYZ", 3)]})
        {'[REDACTED:email]': ['ok', ('[REDACTED:api_key]', 3)]}
    """
    return _clean(value, redactor(), what, 0)  # type: ignore[no-any-return]


def _clean(value: Any, redactor: Redactor, what: str, depth: int) -> Any:
    if isinstance(value, str):
        return redactor.redact(value if type(value) is str else str.__str__(value), what)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if depth >= _MAX_DEPTH:
        return "[REDACTED:depth]"
    if isinstance(value, Mapping):
        return {
            (_clean(key, redactor, what, depth + 1) if isinstance(key, str) else key): _clean(
                item, redactor, what, depth + 1
            )
            for key, item in value.items()
        }
    if isinstance(value, tuple):
        return tuple(_clean(item, redactor, what, depth + 1) for item in value)
    if isinstance(value, (list, set, frozenset)):
        return [_clean(item, redactor, what, depth + 1) for item in value]
    return value


def write_text(path: str | os.PathLike[str], content: str, *, encoding: str = "utf-8") -> None:
    """Write ``content``, redacted, to ``path`` whole (a temporary file renamed into place).

    Raises:
        OSError: the file cannot be written (callers name the path to the user).
    """
    _replace(Path(path), text(content).encode(encoding))


def write_json(
    path: str | os.PathLike[str],
    document: Any,
    *,
    indent: int | None = 2,
    ensure_ascii: bool = False,
    sort_keys: bool = False,
) -> None:
    """Write ``document`` as strict JSON (no NaN), every string and key in it redacted."""
    data = json.dumps(
        clean(document), indent=indent, ensure_ascii=ensure_ascii, sort_keys=sort_keys, allow_nan=False
    )
    # Keys and values are clean; the text is redacted once more for secrets that only a
    # rendered value shows (a key and its value read together as ``"password": "..."``).
    _replace(Path(path), (text(data) + "\n").encode("utf-8"))


def write_bytes_of(path: str | os.PathLike[str], render: Callable[[IO[bytes]], None]) -> None:
    """Write what ``render`` writes to its binary file (Parquet, ...) to ``path`` whole.

    The caller must have passed every value through `clean` first: binary formats are not
    searched for secrets here.
    """
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or Path("."))
    try:
        with os.fdopen(fd, "wb") as handle:
            render(handle)
        os.replace(tmp, target)
    except BaseException:
        _unlink(tmp)
        raise


def _replace(target: Path, data: bytes) -> None:
    if not target.parent.exists() or target.is_char_device() or str(target) == os.devnull:
        # /dev/stdout, /dev/null, a FIFO: written in place, as the user named it
        with open(target, "wb") as handle:
            handle.write(data)
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, target)
    except BaseException:
        _unlink(tmp)
        raise


def _unlink(path: str) -> None:
    with suppress(OSError):
        os.unlink(path)


class _Redacting(io.TextIOBase):
    """A text stream whose every ``write`` is redacted before it reaches ``inner``."""

    def __init__(self, inner: IO[str], what: str, close_inner: bool) -> None:
        self._inner = inner
        self._what = what
        self._close_inner = close_inner

    def write(self, s: str) -> int:
        self._inner.write(text(s, self._what))
        return len(s)

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        self._inner.flush()

    def isatty(self) -> bool:
        return bool(getattr(self._inner, "isatty", lambda: False)())

    def fileno(self) -> int:
        return self._inner.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._inner, "encoding", None) or "utf-8"

    @property
    def inner(self) -> IO[str]:
        """The stream written to."""
        return self._inner

    def close(self) -> None:
        if self.closed:
            return
        try:
            super().close()  # flushes into the inner stream first
        finally:
            if self._close_inner:
                self._inner.close()


def stream(inner: IO[str] | None = None, what: str = ATTRIBUTE) -> TextIO:
    """``inner`` (standard output when None) behind redaction: give it to a ``rich`` console
    or to ``print(file=...)``. Each ``write`` is redacted whole; the stream is not closed.

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> print("key sk-proj-Abc123Def456Ghi789Jkl0", file=stream(out))
        >>> out.getvalue()
        'key [REDACTED:api_key]\\n'
    """
    target: IO[str] = inner if inner is not None else sys.stdout
    if isinstance(target, _Redacting):
        return cast(TextIO, target)
    return cast(TextIO, _Redacting(target, what, close_inner=False))


def open_stream(path: str | os.PathLike[str], mode: str = "a", *, encoding: str = "utf-8") -> TextIO:
    """Open ``path`` for text whose every ``write`` is redacted (``mode`` "w" or "a"); the
    caller closes it. For a file kept open over a run (a ledger); `open_text` otherwise.

    Write each record whole: a secret split over two writes is missed. ``fileno()`` is the
    file's, for ``os.fsync``.
    """
    if mode not in ("w", "a"):
        raise ValueError(f"tracesim._outputs writes text: mode 'w' or 'a', not {mode!r}")
    handle = open(path, mode, encoding=encoding)  # noqa: SIM115 - closed by the wrapper
    return cast(TextIO, _Redacting(handle, ATTRIBUTE, close_inner=True))


@contextmanager
def open_text(path: str | os.PathLike[str], mode: str = "w", *, encoding: str = "utf-8") -> Iterator[TextIO]:
    """`open_stream` as a context manager: closed when the block ends.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "results.jsonl"
        >>> with open_text(path) as out:
        ...     _ = out.write('{"error": "denied for marie@curie.org"}\\n')
        >>> path.read_text()
        '{"error": "denied for [REDACTED:email]"}\\n'
    """
    wrapped = open_stream(path, mode, encoding=encoding)
    try:
        yield wrapped
    finally:
        wrapped.close()


def echo(
    *parts: object, file: IO[str] | None = None, sep: str = " ", end: str = "\n", flush: bool = False
) -> None:
    """``print`` for tracesim's commands: the line is redacted before it is written."""
    target = file if file is not None else sys.stdout
    target.write(text(sep.join(str(part) for part in parts) + end))
    if flush:
        target.flush()


class _LogRedaction(logging.Filter):
    """Redact a ``tracesim`` log record's message and traceback before any handler sees them."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
            record.msg, record.args = text(message, "tracesim.log"), None
            if record.exc_info and not record.exc_text:
                record.exc_text = logging.Formatter().formatException(record.exc_info)
            if record.exc_text:
                record.exc_text = text(record.exc_text, "tracesim.log")
            if record.stack_info:
                record.stack_info = text(record.stack_info, "tracesim.log")
        except Exception:  # a record that cannot be rendered is withheld, never logged raw
            record.msg, record.args, record.exc_info, record.exc_text = (
                "tracesim: log record withheld",
                None,
                None,
                None,
            )
        return True


_LOG_FILTER = _LogRedaction()


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Redact every record of the ``tracesim`` logger (idempotent; done when tracesim is imported)."""
    target = logger if logger is not None else logging.getLogger("tracesim")
    if _LOG_FILTER not in target.filters:
        target.addFilter(_LOG_FILTER)
