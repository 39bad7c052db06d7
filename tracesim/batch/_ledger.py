"""The ledger of the offline senders: which content already reached which destination.

`tracesim replay` and `tracesim backfill` both send files again and again (after a crash, on
a schedule) and must never send the same thing twice. Both keep one `Ledger`: a JSON-lines
file, one line per delivery, naming the destination and the content's key. A delivery is
known by the SHA-256 of its content, so it is recognised wherever the content is:

- replay keys a line of a trace file by its SHA-256 (``{"endpoint": ..., "sha256": ...}``), in
  ``<stem><suffix>.replayed`` beside the file family (`ledger_path`): in ``traces.jsonl``
  today, in ``traces.1.jsonl`` after rotation, one ledger; its name does not end in
  ``.jsonl``, so ``tracesim report DIR`` never reads it as a trace file;
- backfill keys a part of a results directory by its name and SHA-256
  (``{"destination": ..., "part": ..., "sha256": ..., "at": ...}``) in
  ``backfill-ledger.jsonl`` there.

Entries are written through tracesim's redaction (`tracesim._outputs`) and name the
destination redacted (``http://user:[REDACTED:password]@host/v1/traces``): the same URL gives
the same name, so a run resumes; an entry an older tracesim wrote with the URL in the clear is
read redacted and still matches. The ledger is read within `tracesim._inputs`' limits: a line
longer than ``MAX_LEDGER_LINE_BYTES`` is never held whole, one nested deeper than ``MAX_DEPTH``
is never given to ``json``; like a torn line, such a line only costs a re-send, never the run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, TextIO

from tracesim import _inputs, _outputs

__all__ = ["Ledger", "ReplayLedger", "ledger_path"]

_NAMES_CACHED = 1024  # destination names redacted once each; past this, ledgers of many URLs pay per line


def ledger_path(path: str | os.PathLike[str]) -> Path:
    """The replay ledger shared by a trace file and its rotated copies (never a ``*.jsonl`` name).

    Example:
        >>> ledger_path("logs/traces.2.jsonl").as_posix(), ledger_path("traces.jsonl").name
        ('logs/traces.jsonl.replayed', 'traces.jsonl.replayed')
    """
    p = Path(path)
    rotated = re.fullmatch(r"(.+)\.\d+", p.stem)
    stem = rotated.group(1) if rotated else p.stem
    return p.with_name(f"{stem}{p.suffix}.replayed")


class Ledger:
    """Which keys reached which destination: one JSON line per delivery.

    Args:
        path: The ledger file (created on the first delivery).
        field: The entries' field naming the destination (``"endpoint"``, ``"destination"``).
        keys: The entries' fields that make a delivery's key, all of them text.
        only: Keep the entries of this destination only (given redacted or not); None: of all.
        force: Read nothing: every delivery counts as new (entries are still written).
        durable: ``fsync`` after each write (one write per part); otherwise flush only, the
            file kept open for the run (many writes per run: `close` it at the end).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        field: str,
        keys: tuple[str, ...],
        only: str | None = None,
        force: bool = False,
        durable: bool = False,
    ) -> None:
        self.path = Path(path)
        self._field = field
        self._keys = keys
        self._force = force
        self._durable = durable
        self._names: dict[str, str] = {}
        self._only = None if only is None else self.name(only)
        if self._only is not None:
            self._names[self._only] = self._only  # entries written by this ledger name it so
        self._done: set[tuple[str, ...]] = set()
        self._read: set[Path] = set()
        self._file: TextIO | None = None
        self.read_entries(self.path)

    def name(self, destination: Any) -> str:
        """``destination`` as the ledger writes it: redacted ("" for what is not text)."""
        if not isinstance(destination, str):
            return ""
        name = self._names.get(destination)
        if name is None:
            name = _outputs.text(destination)
            if len(self._names) < _NAMES_CACHED:
                self._names[destination] = name
        return name

    def read_entries(self, path: Path) -> None:
        """Take the entries of the ledger file ``path`` (once; none when forced or absent)."""
        if self._force or path in self._read:
            return
        self._read.add(path)
        entries = _inputs.json_records(path, limit=_inputs.MAX_LEDGER_LINE_BYTES, what="ledger lines")
        try:
            for _, entry in entries:
                # A torn line, or one over the limits (an InputError, not a dict): a re-send.
                if isinstance(entry, dict):
                    name = self.name(entry.get(self._field))
                    if name and (self._only is None or name == self._only):
                        self.take(name, entry)
        except FileNotFoundError:
            pass  # no ledger yet: everything is new

    def take(self, name: str, entry: dict[str, Any]) -> None:
        """Remember the delivery ``entry`` records to the destination ``name``."""
        key = [entry.get(field) for field in self._keys]
        if all(isinstance(part, str) for part in key):
            self._done.add((name, *(str(part) for part in key)))

    def holds(self, destination: str, *key: str) -> bool:
        """Whether ``key`` reached ``destination`` (named as the ledger names it: see `name`)
        before, in this run or an earlier one."""
        return (destination, *key) in self._done

    def write(self, destination: str, keys: list[tuple[str, ...]], **extra: Any) -> None:
        """Record each of ``keys`` as delivered to ``destination`` (named as the ledger names it:
        see `name`), in memory and on disk.

        ``extra`` fields go on every entry. Raises OSError when the file cannot be written.
        """
        self._done.update((destination, *key) for key in keys)
        entries = "".join(
            json.dumps({self._field: destination, **dict(zip(self._keys, key, strict=True)), **extra}) + "\n"
            for key in keys
        )
        if self._durable:
            with _outputs.open_text(self.path, "a") as handle:
                handle.write(entries)  # one write: redacted whole
                handle.flush()
                os.fsync(handle.fileno())
            return
        if self._file is None:
            self._file = _outputs.open_stream(self.path, "a")  # kept open for the run
        self._file.write(entries)  # one write: redacted whole
        self._file.flush()  # a crash after this point does not resend these

    def close(self) -> None:
        """Close the ledger file (if this run kept it open)."""
        if self._file is not None:
            self._file.close()
            self._file = None


class ReplayLedger(Ledger):
    """The replay ledger of one trace file family and one endpoint (see `ledger_path`).

    Ledgers written before content keys (``"line": "offset:length:hash16"``, one per file) are
    still read, matched by the hash only, so upgrading does not send those lines again.
    """

    def __init__(self, path: Path, endpoint: str, *, force: bool) -> None:
        self._legacy: set[str] = set()  # 16-hex-digit prefixes of SHA-256 over the line with its "\n"
        super().__init__(path, field="endpoint", keys=("sha256",), only=endpoint, force=force)
        self.endpoint = self.name(endpoint)

    def read_entries(self, path: Path) -> None:
        with contextlib.suppress(OSError):  # an unreadable ledger: lines are sent, at worst again
            super().read_entries(path)

    def load_legacy(self, trace_file: Path) -> None:
        """Also read the per-file ledger an older tracesim kept for ``trace_file``, if any."""
        self.read_entries(trace_file.with_name(trace_file.name + ".replayed"))

    def take(self, name: str, entry: dict[str, Any]) -> None:
        if isinstance(entry.get("sha256"), str):
            super().take(name, entry)
        elif isinstance(old := entry.get("line"), str) and old.count(":") == 2:
            self._legacy.add(old.rsplit(":", 1)[1])

    def has(self, key: str, raw: bytes) -> bool:
        """Whether the line ``raw``, whose content has SHA-256 ``key``, was accepted before."""
        if self.holds(self.endpoint, key):
            return True
        return bool(self._legacy) and hashlib.sha256(raw).hexdigest()[:16] in self._legacy

    def record(self, keys: list[str]) -> None:
        """Remember ``keys`` as accepted; a read-only directory only costs the resume."""
        with contextlib.suppress(OSError):  # read-only directory: replay works, it just cannot resume
            self.write(self.endpoint, [(key,) for key in keys])
