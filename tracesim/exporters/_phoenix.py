"""Evaluation results as Arize Phoenix span annotations, sent in the background.

Phoenix shows scores best as *span annotations* (its UI columns, filters and evals views
read them), posted to its REST API: ``POST /v1/span_annotations?sync=true`` with
``{"data": [{"span_id", "name", "annotator_kind", "result": {"score", "label",
"explanation"}, "metadata", "identifier"}]}``. Annotations upsert on (name, span,
identifier), so sending one twice is harmless.

The span may not be ingested yet when its scores are ready (scores are computed before the
span ends and is exported). With ``sync=true`` Phoenix answers 404 ``Spans with IDs a, b do
not exist.`` for such a batch, naming them; those annotations are retried with backoff until
``max_wait_for_span_s`` after they were submitted, the rest of the batch is sent at once.
(Without ``sync`` Phoenix would queue unknown ones itself, but in memory and without telling
us whether they ever landed.)
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

__all__ = ["AnnotationStats", "PhoenixAnnotationSink", "phoenix_base_url"]

_logger = logging.getLogger("tracesim")
_KINDS = frozenset({"CODE", "LLM", "HUMAN"})
_SPAN_ID = re.compile(r"\b[0-9a-f]{16}\b")
_RETRYABLE = frozenset({429, 500, 502, 503, 504})
_VERSION = re.compile(r"\d+\.\d+")  # what Phoenix's /arize_phoenix_version answers: "12.3.0"


@dataclass(frozen=True)
class AnnotationStats:
    """Counters of a `PhoenixAnnotationSink`, in annotations."""

    submitted: int
    sent: int
    """Accepted by Phoenix."""
    dropped: int
    """Not queued: queue full, invalid arguments, or after shutdown."""
    failed: int
    """Given up: span never ingested within the wait, Phoenix unreachable, or refused."""
    pending: int
    invalid: int = 0
    """Of ``dropped``, those Phoenix could not hold (a NaN score, a reserved name...): sending
    again would not help."""


@dataclass
class _Item:
    payload: dict[str, Any]
    deadline: float
    attempts: int = 0
    not_before: float = 0.0
    span_id: str = field(init=False)

    def __post_init__(self) -> None:
        self.span_id = self.payload["span_id"]


class PhoenixAnnotationSink:
    """A bounded, batching background sender of span annotations to Phoenix.

    ``submit`` never blocks and never raises: a full queue or invalid arguments count as
    dropped (see `stats`). ``force_flush`` and ``shutdown`` wait with a deadline.

    Args:
        base_url: Phoenix's base URL, e.g. ``http://127.0.0.1:6006``.
        headers: Extra headers, e.g. ``{"Authorization": "Bearer ..."}``.
        max_queue_size: Annotations waiting (including retries) before new ones are dropped.
        max_batch_size: Annotations per request.
        schedule_delay_s: How long the first annotation of a batch may wait for company.
        max_wait_for_span_s: How long to keep retrying an annotation whose span Phoenix does
            not have yet (or while Phoenix is unreachable).
        detect: Ask first whether ``base_url`` is Phoenix at all (``GET /arize_phoenix_version``),
            for a URL derived from an OTLP endpoint that may be any collector. Not Phoenix:
            the sink turns itself off, says so once at INFO, and ignores what it is given.

    Example:
        >>> from tracesim.exporters._phoenix import PhoenixAnnotationSink
        >>> sink = PhoenixAnnotationSink("http://127.0.0.1:6006")
        >>> sink.submit("a1b2c3d4e5f60718", "levenshtein", score=0.91, label="pass", explanation=None)
        >>> sink.shutdown(timeout_s=0.1)  # doctest: +SKIP
        True
    """

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
        max_queue_size: int = 2048,
        max_batch_size: int = 100,
        schedule_delay_s: float = 0.5,
        max_wait_for_span_s: float = 120.0,
        timeout_s: float = 10.0,
        max_backoff_s: float = 10.0,
        detect: bool = False,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/v1/span_annotations"
        self.is_phoenix: bool | None = None if detect else True
        """Whether ``base_url`` is Phoenix: None until a `detect` sink has asked."""
        self._client = httpx.Client(headers=dict(headers or {}), timeout=timeout_s)
        self._max_queue_size = max_queue_size
        self._max_batch_size = max_batch_size
        self._schedule_delay_s = schedule_delay_s
        self._max_wait_s = max_wait_for_span_s
        self._max_backoff_s = max_backoff_s
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._queue: deque[_Item] = deque()
        self._in_flight = 0
        self._flushing = 0
        self._shutdown = False
        self._submitted = self._sent = self._dropped = self._failed = self._invalid = 0
        self._probe_failed = False  # the question "is it Phoenix?" went unanswered (unreachable)
        self._logged: set[str] = set()
        self._worker: threading.Thread | None = None
        self._worker_pid = 0

    @property
    def stats(self) -> AnnotationStats:
        """A snapshot of the counters."""
        with self._lock:
            return AnnotationStats(
                self._submitted,
                self._sent,
                self._dropped,
                self._failed,
                len(self._queue) + self._in_flight,
                self._invalid,
            )

    def submit(
        self,
        span_id_hex: str,
        name: str,
        *,
        score: float | None,
        label: str | None,
        explanation: str | None,
        annotator_kind: str = "CODE",
        metadata: Mapping[str, Any] | None = None,
        identifier: str = "",
    ) -> None:
        """Queue one annotation of span ``span_id_hex`` (16 hex digits); returns at once."""
        if self.is_phoenix is False:
            return  # the endpoint is some other collector: there is nowhere to annotate
        try:
            payload = _payload(
                span_id_hex, name, score, label, explanation, annotator_kind, metadata, identifier
            )
        except (ValueError, TypeError) as exc:
            with self._lock:
                self._submitted += 1
                self._dropped += 1
                self._invalid += 1
            self._log_once("invalid", "tracesim: Phoenix annotation %r dropped: %s", name, exc)
            return
        with self._lock:
            if self._not_phoenix():  # decided while this call was on its way in
                return
            self._submitted += 1
            if self._shutdown or len(self._queue) + self._in_flight >= self._max_queue_size:
                self._dropped += 1
                full = not self._shutdown
            else:
                self._queue.append(_Item(payload, time.monotonic() + self._max_wait_s))
                self._ensure_worker()
                if len(self._queue) >= self._max_batch_size:
                    self._changed.notify_all()
                return
        if full:
            self._log_once(
                "full", "tracesim: Phoenix annotation queue full (%d); dropping", self._max_queue_size
            )

    def _not_phoenix(self) -> bool:
        return self.is_phoenix is False

    def _log_once(self, key: str, message: str, *args: Any) -> None:
        with self._lock:
            if key in self._logged:
                return
            self._logged.add(key)
        _logger.warning(message + " (logged once; see stats)", *args)

    def _ensure_worker(self) -> None:
        if self._worker is None or self._worker_pid != os.getpid() or not self._worker.is_alive():
            self._worker_pid = os.getpid()
            self._worker = threading.Thread(target=self._run, name="tracesim-phoenix", daemon=True)
            self._worker.start()

    # ------------------------------------------------------------ worker

    def _run(self) -> None:
        while True:
            with self._lock:
                batch = self._next_batch()
                while batch is None:
                    if self._shutdown and not self._flushing:
                        return
                    self._changed.wait(self._wait_s())
                    batch = self._next_batch()
                self._in_flight = len(batch)
            try:
                self._post(batch)
            finally:
                with self._lock:
                    self._in_flight = 0
                    self._changed.notify_all()

    def _next_batch(self) -> list[_Item] | None:
        now = time.monotonic()
        ready = [item for item in self._queue if item.not_before <= now]
        if not ready:
            return None
        oldest_wait = now - min(item.deadline - self._max_wait_s for item in ready)
        if len(ready) < self._max_batch_size and oldest_wait < self._schedule_delay_s and not self._flushing:
            return None
        batch = ready[: self._max_batch_size]
        for item in batch:
            self._queue.remove(item)
        return batch

    def _wait_s(self) -> float | None:
        if not self._queue:
            return None
        now = time.monotonic()
        soonest = min(
            max(i.not_before, i.deadline - self._max_wait_s + self._schedule_delay_s) for i in self._queue
        )
        return max(soonest - now, 0.01)

    def _post(self, batch: list[_Item]) -> None:
        if self.is_phoenix is None and not self._detect(batch):
            return None
        if self.is_phoenix is False:
            return None  # a batch taken from the queue just before the answer came
        try:
            response = self._client.post(
                self.url, params={"sync": "true"}, json={"data": [i.payload for i in batch]}
            )
        except httpx.HTTPError as exc:
            self._log_once("unreachable", "tracesim: Phoenix annotations: %s; retrying", exc)
            return self._retry(batch)
        if response.is_success:
            with self._lock:
                self._sent += len(batch)
            return None
        if response.status_code == 404:
            return self._split_unknown(batch, response.text)
        if response.status_code in _RETRYABLE:
            return self._retry(batch)
        self._log_once(
            f"http{response.status_code}",
            "tracesim: Phoenix refused %d annotations: HTTP %d %s",
            len(batch),
            response.status_code,
            response.text[:200],
        )
        with self._lock:
            self._failed += len(batch)
        return None

    def _detect(self, batch: list[_Item]) -> bool:
        """Ask once whether the base URL is Phoenix; True to go on sending ``batch``."""
        try:
            response = self._client.get(self.base_url + "/arize_phoenix_version")
        except httpx.HTTPError as exc:
            # Nobody said this is Phoenix: a collector that is down is the exporter's news, not ours.
            _logger.debug("tracesim: asking %s whether it is Phoenix: %s", self.base_url, exc)
            self._probe_failed = True
            self._retry(batch)  # not known yet: asked again when the batch comes back
            return False
        if response.status_code in _RETRYABLE:  # starting, overloaded, behind a busy proxy: ask again
            self._probe_failed = True
            self._retry(batch)
            return False
        if response.is_success and _VERSION.match(response.text.strip()):
            self.is_phoenix = True
            return True
        with self._lock:
            self.is_phoenix = False
            # Never meant for anyone: not counted as submitted, dropped or failed.
            self._submitted -= len(batch) + len(self._queue)
            self._queue.clear()
        _logger.info(
            "tracesim: %s is not Phoenix (GET /arize_phoenix_version: HTTP %d); evaluation results "
            "stay on the spans. Set phoenix_annotations=false to skip this check.",
            self.base_url,
            response.status_code,
        )
        return False

    def _split_unknown(self, batch: list[_Item], detail: str) -> None:
        # "Spans with IDs a, b do not exist.": wait for those, send the others now.
        missing = set(_SPAN_ID.findall(detail)) & {item.span_id for item in batch}
        if not missing:
            return self._retry(batch)
        self._retry([item for item in batch if item.span_id in missing])
        if rest := [item for item in batch if item.span_id not in missing]:
            self._post(rest)  # a smaller batch each time, so this ends
        return None

    def _retry(self, items: list[_Item]) -> None:
        now = time.monotonic()
        with self._lock:
            for item in items:
                item.attempts += 1
                if now >= item.deadline:
                    self._failed += 1
                    continue
                item.not_before = now + min(0.25 * 2.0 ** (item.attempts - 1), self._max_backoff_s)
                self._queue.append(item)
        if any(now >= item.deadline for item in items):
            self._log_once(
                "expired",
                "tracesim: Phoenix annotations given up after %.0f s (span never ingested, or Phoenix down)",
                self._max_wait_s,
            )

    # ------------------------------------------------------------ flush and shutdown

    def force_flush(self, timeout_s: float = 30.0) -> bool:
        """Send everything queued now; True if nothing is left within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            if self.is_phoenix is None and self._probe_failed:
                return not self._queue and not self._in_flight  # nothing known to wait for
            self._flushing += 1
            try:
                now = time.monotonic()
                for item in self._queue:  # one more try now for those waiting on backoff
                    item.not_before = min(item.not_before, now)
                self._changed.notify_all()
                while self._queue or self._in_flight:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or self._worker is None or not self._worker.is_alive():
                        return not self._queue and not self._in_flight
                    self._changed.wait(remaining)
                return True
            finally:
                self._flushing -= 1

    def shutdown(self, timeout_s: float = 30.0) -> bool:
        """Flush within ``timeout_s``, then stop; True if everything was sent."""
        flushed = self.force_flush(timeout_s)
        with self._lock:
            self._shutdown = True
            self._failed += len(self._queue)
            self._queue.clear()
            self._changed.notify_all()
            worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout=max(timeout_s, 1.0))
        self._client.close()
        return flushed


def _payload(
    span_id: str,
    name: str,
    score: float | None,
    label: str | None,
    explanation: str | None,
    annotator_kind: str,
    metadata: Mapping[str, Any] | None,
    identifier: str,
) -> dict[str, Any]:
    span_id = span_id.lower().removeprefix("0x")
    if not _SPAN_ID.fullmatch(span_id):
        raise ValueError(f"span id must be 16 hex digits, got {span_id!r}")
    if not name or name == "note":
        raise ValueError("name must be non-empty and not 'note' (reserved by Phoenix)")
    if annotator_kind not in _KINDS:
        raise ValueError(f"annotator_kind must be one of {sorted(_KINDS)}, got {annotator_kind!r}")
    result = {
        k: v for k, v in (("score", score), ("label", label), ("explanation", explanation)) if v is not None
    }
    if "score" in result:
        result["score"] = float(result["score"])
    payload: dict[str, Any] = {
        "span_id": span_id,
        "name": name,
        "annotator_kind": annotator_kind,
        "result": result or None,
        "metadata": dict(metadata or {}),
        "identifier": identifier,
    }
    json.dumps(payload, allow_nan=False)  # TypeError/ValueError now rather than a 422 for the batch
    return payload


def phoenix_base_url(endpoint: str) -> str:
    """Phoenix's base URL from its OTLP endpoint: the path without ``/v1/traces``, no query.

    Example:
        >>> phoenix_base_url("https://app.phoenix.arize.com/s/my-space/v1/traces")
        'https://app.phoenix.arize.com/s/my-space'
        >>> phoenix_base_url("http://phoenix:6006/v1/traces/?tenant=a")
        'http://phoenix:6006'
    """
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(endpoint.strip())
    path = parts.path.rstrip("/")
    path = path[: -len("/v1/traces")] if path.endswith("/v1/traces") else path
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))
