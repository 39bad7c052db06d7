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
us whether they ever landed.) The queue, its worker, the retries and the flush are
`tracesim.exporters._background.BackgroundSender`'s, as MLflow's sender's; so is the rule
for finding either API behind the spans' OTLP endpoint (`api_behind_otlp`), kept here.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from tracesim.exporters._background import BackgroundSender, QueuedItem

if TYPE_CHECKING:
    from tracesim._config import Settings

__all__ = ["AnnotationStats", "PhoenixAnnotationSink", "api_behind_otlp", "phoenix_base_url"]

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
class _Item(QueuedItem):
    payload: dict[str, Any] = field(default_factory=dict)
    span_id: str = ""


class PhoenixAnnotationSink(BackgroundSender[_Item]):
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
        super().__init__(
            name="phoenix",
            max_queue_size=max_queue_size,
            max_batch_size=max_batch_size,
            schedule_delay_s=schedule_delay_s,
            max_backoff_s=max_backoff_s,
        )
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/v1/span_annotations"
        self.is_phoenix: bool | None = None if detect else True
        """Whether ``base_url`` is Phoenix: None until a `detect` sink has asked."""
        self._headers = dict(headers or {})
        self._timeout_s = timeout_s
        self._client = httpx.Client(headers=self._headers, timeout=timeout_s)
        self._max_wait_s = max_wait_for_span_s
        self._zero()

    def _zero(self) -> None:
        self._submitted = self._sent = self._dropped = self._invalid = 0
        self._probe_failed = False  # the question "is it Phoenix?" went unanswered (unreachable)

    def _forked_child(self) -> None:
        self._zero()
        # The parent's connections are the parent's: dropped unclosed, a new pool for the child.
        self._client = httpx.Client(headers=self._headers, timeout=self._timeout_s)

    @property
    def stats(self) -> AnnotationStats:
        """A snapshot of the counters."""
        with self._lock:
            return AnnotationStats(
                self._submitted, self._sent, self._dropped, self._failed, self._pending(), self._invalid
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
        now = time.monotonic()
        item = _Item(now, now + self._max_wait_s, payload=payload, span_id=payload["span_id"])
        self._enqueue(item, "Phoenix annotation")

    def _off(self) -> bool:
        return self.is_phoenix is False

    def _nothing_to_wait_for(self) -> bool:
        return self.is_phoenix is None and self._probe_failed

    def _close(self) -> None:
        self._client.close()

    def _expired(self, count: int) -> None:
        self._log_once(
            "expired",
            "tracesim: Phoenix annotations given up after %.0f s (span never ingested, or Phoenix down)",
            self._max_wait_s,
        )

    # ------------------------------------------------------------ worker

    def _send(self, batch: list[_Item]) -> None:
        if self.is_phoenix is None and not self._detect(batch):
            return None
        if self.is_phoenix is False:
            with self._lock:
                self._submitted -= len(batch)  # a batch taken from the queue just before the answer came
            self._settle(batch)
            return None
        try:
            response = self._client.post(
                self.url, params={"sync": "true"}, json={"data": [i.payload for i in batch]}
            )
        except httpx.HTTPError as exc:
            if not self._stopped():
                self._log_once("unreachable", "tracesim: Phoenix annotations: %s; retrying", exc)
            return self._retry(batch)
        if response.is_success:
            with self._lock:
                self._sent += len(batch)
            self._settle(batch)
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
        self._settle(batch)
        return None

    def _stopped(self) -> bool:
        with self._lock:
            return self._shutdown

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
        self._settle(batch)
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
            self._send(rest)  # a smaller batch each time, so this ends
        return None


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


def api_behind_otlp(
    settings: Settings,
    environ: Mapping[str, str] | None,
    *,
    setting: str,
    on: bool | None,
    url: str | None,
    expected: str,
) -> tuple[str, bool] | None:
    """Where a backend's own API is, and whether to ask first that it is that backend; None for nowhere.

    The rule Phoenix annotations and MLflow assessments share: ``on`` (the ``setting``) False
    is nowhere; a ``url`` setting says where; otherwise spans exported over OTLP/HTTP may be
    going to that backend, whose base URL is then the traces endpoint without ``/v1/traces``,
    asked first unless ``on`` is True. Over gRPC only the URL setting can name it, and ``on``
    True without it is a `ConfigError` on ``setting`` that says what is ``expected``.

    Example:
        >>> from tracesim._config import resolve
        >>> settings = resolve({"exporters": "otlp", "otlp_endpoint": "http://o:4318/v1/traces"}, environ={})
        >>> api_behind_otlp(settings, {}, setting="x", on=None, url=None, expected="")
        ('http://o:4318', True)
    """
    if on is False:
        return None
    if url:
        return url, False
    if "otlp" not in settings.exporters or settings.otlp_protocol == "grpc":
        if on:
            from tracesim._errors import ConfigError

            raise ConfigError(setting, True, expected)
        return None
    environ = os.environ if environ is None else environ
    endpoint = settings.otlp_endpoint or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    endpoint = endpoint or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or "http://localhost:4318"
    return phoenix_base_url(endpoint), on is None
