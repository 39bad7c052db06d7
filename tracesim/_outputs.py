"""Everything tracesim writes or prints, other than spans, passes here and is redacted here.

Spans are redacted once on their way out (`tracesim.exporters.Redaction`). Every other output
tracesim makes (experiment JSON, HTML and text, ``tracesim eval`` results, batch Parquet and
JSONL, pytest JSON, JUnit properties, step summaries and failure messages, backfill and replay
ledgers and console lines, tracesim's own log lines) is written through the functions of this
module, which run the same redaction over it: the running configuration's (its
``redact_patterns`` and ``redact`` hook) when `tracesim.configure` ran in this process, else the
patterns of ``tracesim.yaml`` and the environment. Values are not cut here: an output keeps
what its writer chose to keep, less the secrets.

A test (``tests/outputs/test_outputs.py``) holds the structure: no module of tracesim writes a file or
a stream by other means than these, and every writer is tried with a secret of every kind in
every field.

- `clean` redacts a JSON-like value (mapping keys too), `text` one string;
- `write_text`, `write_json` and `write_bytes_of` write a whole file (to a temporary name,
  then renamed, so a reader never sees half of it) and leave it as ``open`` would: a symlink's
  target is written, an existing file keeps its mode, a new one gets the umask's, and
  standard output, a FIFO or a device is written in place; `open_text` and `open_stream` open a file
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

import functools
import io
import json
import logging
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import IO, Any, TextIO, TypeVar, cast

from tracesim import _redaction_in_force
from tracesim._redact import PATTERN_GROUPS, Redactor

__all__ = [
    "clean",
    "distinct",
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


@functools.cache
def _read_umask() -> int:
    """The process's umask, for the mode of a new file (read once, at the first new file).

    Linux shows it in ``/proc/self/status``; elsewhere ``os.umask`` must set it to read it, and
    it is set back at once (a file another thread creates in between gets mode 0666 & ~0o022).
    """
    with suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_MAX_DEPTH = 200  # deeper parts of a document are replaced, never written unredacted
_IN_PLACE = ("/dev/", "/proc/")  # standard output and its kin: never replaced by a renamed file
_fallback: Redactor | None = None


def redactor() -> Redactor:
    """The redaction in force: the running configuration's, else the settings' patterns.

    Example:
        >>> redactor().redact("Bearer abcdef0123456789abcdef", "x")
        'Bearer [REDACTED:token]'
    """
    redaction = _redaction_in_force.current  # set by the runtime, which this module stands below
    if redaction is not None:
        return redaction.redactor
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
    Two keys of a mapping that redact to the same text are both kept, numbered apart as
    `distinct` numbers names (``-2``, ``-3``... in their order; a key redaction leaves alone
    keeps its name).

    Example:
        >>> clean({"marie@curie.org": ["ok", ("sk-ant-api03-AbCdEf0123456789xyzXYZ", 3)]})
        {'[REDACTED:email]': ['ok', ('[REDACTED:api_key]', 3)]}
        >>> clean({"marie@curie.org": 1, "pierre@curie.org": 2})
        {'[REDACTED:email]': 1, '[REDACTED:email]-2': 2}
    """
    return _clean(value, redactor(), what, 0)  # type: ignore[no-any-return]


def distinct(names: Iterable[str], what: str = ATTRIBUTE) -> dict[str, str]:
    """Each of ``names`` redacted, kept apart from the others: a name as written, by name.

    Two names that hold different secrets redact to the same text; a report would then count
    them as one (case, evaluator, column). The later ones are numbered ``-2``, ``-3``... in the
    order they first appear, past any name already written so; a name redaction leaves alone
    keeps its text.

    Example:
        >>> list(distinct(["a@b.io", "c@d.io", "plain", "[REDACTED:email]-2"]).values())
        ['[REDACTED:email]', '[REDACTED:email]-3', 'plain', '[REDACTED:email]-2']
    """
    redaction = redactor()
    unique = list(dict.fromkeys(names))
    return dict(zip(unique, _apart(unique, [redaction.redact(name, what) for name in unique]), strict=True))


def _apart(originals: list[Any], written: list[Any]) -> list[Any]:
    """``written`` (each original redacted) with the ones that collide numbered apart."""
    if len(set(written)) == len(written):
        return written
    taken = {w for original, w in zip(originals, written, strict=True) if w == original}
    out = []
    for original, w in zip(originals, written, strict=True):
        if w != original:
            number, candidate = 1, w
            while candidate in taken:
                number += 1
                candidate = f"{w}-{number}"
            taken.add(candidate)
            w = candidate
        out.append(w)
    return out


def _clean(value: Any, redactor: Redactor, what: str, depth: int) -> Any:
    if isinstance(value, str):
        return redactor.redact(value if type(value) is str else str.__str__(value), what)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if depth >= _MAX_DEPTH:
        return "[REDACTED:depth]"
    if isinstance(value, Mapping):
        keys = list(value)
        written = _apart(
            keys, [_clean(key, redactor, what, depth + 1) if isinstance(key, str) else key for key in keys]
        )
        return {
            key: _clean(item, redactor, what, depth + 1)
            for key, item in zip(written, value.values(), strict=True)
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
    _replace(path, text(content).encode(encoding))


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
    _replace(path, (text(data) + "\n").encode("utf-8"))


def write_bytes_of(path: str | os.PathLike[str], render: Callable[[IO[bytes]], None]) -> None:
    """Write what ``render`` writes to its binary file (Parquet, ...) to ``path`` whole.

    The caller must have passed every value through `clean` first: binary formats are not
    searched for secrets here.
    """
    with _whole(path) as handle:
        render(handle)


def _replace(path: str | os.PathLike[str], data: bytes) -> None:
    with _whole(path) as handle:
        handle.write(data)


@contextmanager
def _whole(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """A binary file that replaces ``path`` whole when the block ends, leaving it as
    ``open(path, "wb")`` would: a symlink stays a link and its target is written, an existing
    file keeps its mode, a new one gets the umask's. A FIFO, a device or standard output
    (``/dev/stdout``, which may be a file a shell opened) is written in place."""
    given = os.fspath(path)
    try:
        found: os.stat_result | None = os.stat(given)  # through symlinks
    except OSError:
        found = None
    target = os.path.realpath(given)
    parent = os.path.dirname(target)
    if (
        (found is not None and not stat.S_ISREG(found.st_mode))
        or _through_devices(given)
        or not os.path.isdir(parent)
    ):  # a missing directory fails here, the error naming the path as the user gave it
        with open(given, "wb") as handle:
            yield handle
        return
    mode = found.st_mode & 0o777 if found is not None else 0o666 & ~_read_umask()  # no set-id bit copied
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", dir=parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
        os.chmod(tmp, mode)  # the rename would keep mkstemp's 0600
        os.replace(tmp, target)
    except BaseException:
        _unlink(tmp)
        raise


def _through_devices(path: str) -> bool:
    """Whether ``path`` is, or links to, a name under /dev or /proc: ``/dev/stdout`` resolves to
    the file a shell opened (``> log``), which a rename would take from under the shell."""
    for _ in range(40):  # the kernel's own limit of links followed
        if os.path.abspath(path).startswith(_IN_PLACE):
            return True
        try:
            link = os.readlink(path)
        except OSError:  # not a link (or not there): the end of the chain
            return False
        path = os.path.join(os.path.dirname(path), link)
    return False


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
        >>> from pathlib import Path
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
            # The exception itself would be rendered again, unredacted, by a formatter that reads
            # it (python-json-logger formats ``exc_info``; Sentry's integration sends it): the
            # standard Formatter prints ``exc_text`` in its place.
            record.exc_info = None
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
