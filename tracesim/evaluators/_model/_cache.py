"""An optional on-disk cache of model answers, so scoring the same data again costs nothing."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from tracesim import _outputs
from tracesim._internal_errors import warn_once

__all__ = ["DiskCache", "cache_key"]


def cache_key(*parts: Any) -> str:
    """A stable key for a request: the SHA-256 of its parts as canonical JSON.

    Example:
        >>> cache_key("chat", "gpt-4o", [{"role": "user", "content": "hi"}], 0.0)[:12]
        '4f2246bc81d1'
    """
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class DiskCache:
    """Answers by key in one SQLite file (``<directory>/models.sqlite3``); never raises.

    Keys are hashes of the requests; answers are stored redacted (`tracesim._outputs.clean`).

    A cache that cannot be opened or written is reported once and then acts as empty.

    Example:
        >>> import tempfile
        >>> cache = DiskCache(tempfile.mkdtemp())
        >>> cache.put("k", {"content": "4"})
        >>> cache.get("k")
        {'content': '4'}
    """

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / "models.sqlite3"
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._broken = False

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is None and not self._broken:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=5.0, check_same_thread=False, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                self._db = db
            except (sqlite3.Error, OSError) as exc:
                self._broken = True
                warn_once("model-cache", f"tracesim: model cache {self.path} unusable ({exc}); not caching")
        return self._db

    def get(self, key: str) -> Any:
        with self._lock:
            db = self._connect()
            if db is None:
                return None
            try:
                row = db.execute("SELECT value FROM answers WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error as exc:
                warn_once("model-cache-read", f"tracesim: model cache {self.path} unreadable ({exc})")
                return None
        return None if row is None else json.loads(row[0])

    def put(self, key: str, value: Any) -> None:
        # A file tracesim writes: the answer's text (a judge's reason quoting the output it
        # graded, secrets and all) is redacted as every output is; numbers are kept.
        text = json.dumps(_outputs.clean(value))
        with self._lock:
            db = self._connect()
            if db is None:
                return
            try:
                db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?)", (key, text))
            except sqlite3.Error as exc:
                warn_once("model-cache-write", f"tracesim: model cache {self.path} not writable ({exc})")

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
