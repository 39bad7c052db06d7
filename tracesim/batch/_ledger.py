"""The replay ledger: which lines of a trace file family an endpoint has accepted.

Lines are known by the SHA-256 of their content, so a line is recognised wherever it is:
in ``traces.jsonl`` today, in ``traces.1.jsonl`` after rotation. One ledger serves a file and
its rotated copies, ``<stem><suffix>.replayed`` beside them; its name does not end in
``.jsonl``, so ``tracesim report DIR`` never reads it as a trace file.

Entries are written through tracesim's redaction (`tracesim._outputs`) and name the endpoint
redacted (``http://user:[REDACTED:password]@host/v1/traces``): the same URL gives the same
name, so a replay resumes; an entry an older tracesim wrote with the URL in the clear is read
redacted and still matches. The ledger is read within `tracesim._inputs`' limits: a line
longer than ``MAX_LEDGER_LINE_BYTES`` is never held whole, one nested deeper than ``MAX_DEPTH``
is never given to ``json``; like a torn line, such a line only costs a re-send.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, TextIO

from tracesim import _inputs, _outputs

__all__ = ["Ledger", "ledger_path"]


def ledger_path(path: str | os.PathLike[str]) -> Path:
    """The ledger shared by a trace file and its rotated copies (never a ``*.jsonl`` name).

    Example:
        >>> ledger_path("logs/traces.2.jsonl").as_posix(), ledger_path("traces.jsonl").name
        ('logs/traces.jsonl.replayed', 'traces.jsonl.replayed')
    """
    p = Path(path)
    rotated = re.fullmatch(r"(.+)\.\d+", p.stem)
    stem = rotated.group(1) if rotated else p.stem
    return p.with_name(f"{stem}{p.suffix}.replayed")


class Ledger:
    """One JSON line per accepted line: ``{"endpoint": ..., "sha256": ...}``.

    Ledgers written before content keys (``"line": "offset:length:hash16"``, one per file) are
    still read, matched by the hash only, so upgrading does not send those lines again.
    """

    def __init__(self, path: Path, endpoint: str, *, force: bool) -> None:
        self.path = path
        self.endpoint = _outputs.text(endpoint)
        self._force = force
        self._done: set[str] = set()
        self._legacy: set[str] = set()  # 16-hex-digit prefixes of SHA-256 over the line with its "\n"
        self._read: set[Path] = set()
        self._file: TextIO | None = None
        self._names: dict[str, str] = {self.endpoint: self.endpoint}  # an entry's endpoint, redacted
        self._read_entries(path)

    def load_legacy(self, trace_file: Path) -> None:
        """Also read the per-file ledger an older tracesim kept for ``trace_file``, if any."""
        self._read_entries(trace_file.with_name(trace_file.name + ".replayed"))

    def _read_entries(self, path: Path) -> None:
        if self._force or path in self._read:
            return
        self._read.add(path)
        entries = _inputs.json_records(path, limit=_inputs.MAX_LEDGER_LINE_BYTES, what="ledger lines")
        try:
            for _, entry in entries:
                self._add(entry)
        except OSError:
            pass  # no ledger yet (or an unreadable one): lines are sent, at worst again

    def _add(self, entry: Any) -> None:
        # A torn line, or one over the limits (not a line tracesim wrote), only costs a re-send;
        # an InputError is not a dict.
        if not isinstance(entry, dict) or self._name(entry.get("endpoint")) != self.endpoint:
            return
        if isinstance(digest := entry.get("sha256"), str):
            self._done.add(digest)
        elif isinstance(old := entry.get("line"), str) and old.count(":") == 2:
            self._legacy.add(old.rsplit(":", 1)[1])

    def _name(self, endpoint: Any) -> str:
        if not isinstance(endpoint, str):
            return ""
        name = self._names.get(endpoint)
        if name is None:
            name = self._names[endpoint] = _outputs.text(endpoint) if len(self._names) < 1024 else endpoint
        return name

    def has(self, key: str, raw: bytes) -> bool:
        """Whether the line ``raw``, whose content has SHA-256 ``key``, was accepted before."""
        if key in self._done:
            return True
        return bool(self._legacy) and hashlib.sha256(raw).hexdigest()[:16] in self._legacy

    def record(self, keys: list[str]) -> None:
        """Remember ``keys`` as accepted, in memory and on disk."""
        self._done.update(keys)
        try:
            if self._file is None:
                self._file = _outputs.open_stream(self.path, "a")  # kept open for the run
            entries = (json.dumps({"endpoint": self.endpoint, "sha256": key}) + "\n" for key in keys)
            self._file.write("".join(entries))  # one write: redacted whole
            self._file.flush()  # a crash after this point does not resend the batch
        except OSError:
            pass  # read-only directory: replay still works, it just cannot resume

    def close(self) -> None:
        """Close the ledger file (if this run wrote to it)."""
        if self._file is not None:
            self._file.close()
            self._file = None
