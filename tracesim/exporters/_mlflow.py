"""Evaluation results as MLflow assessments (feedback and expectations), sent in the background.

MLflow shows scores where its users look (the trace view's *Assessments* panel, the traces
table's columns, its evaluation views) only when they are *assessments* of the trace: its OTLP
endpoint keeps ``gen_ai.evaluation.result`` events and span attributes as they are and maps
none of them. Assessments are posted one by one to MLflow's REST API,
``POST {base}/api/3.0/mlflow/traces/tr-<32 hex trace id>/assessments``, with httpx (no MLflow
client needed):

* each result is a **feedback** on the evaluated span: the score (else the label) as its
  value, the explanation as its rationale, the source ``CODE`` (``tracesim.<evaluator>``),
  ``LLM_JUDGE`` (the judge's model) or ``HUMAN`` (`tracesim.score`), and metadata strings
  (``tracesim.passed``, ``tracesim.threshold``, ``tracesim.label``...); an evaluator that
  failed gives a feedback with an ``error``;
* the expected output is one **expectation** (``expected_response``) per evaluated span.

Every assessment carries ``tracesim.result_id`` in its metadata, derived from what it says
(trace, span, name, value: not its source, which a trace file written before the annotator's
kind was recorded on the result's event cannot tell), so a replay or backfill that finds it on the trace does
not post it again: MLflow itself never deduplicates assessments.

MLflow answers 404 ``RESOURCE_DOES_NOT_EXIST`` (``Trace with ID ... not found``) until a span
of the trace is ingested, and scores are often ready before their span is exported: such
assessments are retried with backoff until ``max_wait_for_span_s`` after they were submitted.
When MLflow has none of the last three traces assessed ``give_up_after_s`` after their results
(its spans are being refused: a wrong experiment, say), the wait is cut to that: said once, and
back to the full wait as soon as an assessment lands. A 404 that is not MLflow's JSON (an HTML
page: no such route, ``mlflow_url`` lacks a proxy's prefix), 401, 403 and 400 will not change
by retrying: they are logged once, naming what to change, and counted as failed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from tracesim import _inputs
from tracesim import _semconv as sc
from tracesim._capture import capture_value, make_options
from tracesim._scoring._expect import NOT_SET
from tracesim.exporters._background import BackgroundSender, QueuedItem
from tracesim.exporters._refusals import Answer, backend_message

if TYPE_CHECKING:
    from opentelemetry.trace import SpanContext

    from tracesim._config import Settings
    from tracesim.evaluators import EvalResult
    from tracesim.exporters import Redaction

__all__ = [
    "EXPECTATION_NAME",
    "AssessmentStats",
    "MlflowAssessmentSender",
    "MlflowSink",
    "mlflow_sinks",
    "mlflow_target",
]

_logger = logging.getLogger("tracesim")
EXPECTATION_NAME = "expected_response"
"""The name of the expectation holding a span's expected output (MLflow's scorers read this name)."""
_RESULT_ID = "tracesim.result_id"
_RETRYABLE = frozenset({408, 429, 500, 502, 503, 504})
_EXPECTED_CAPTURE = make_options(True, 8000)
_DETAILS_CHARS = 4000  # the details as one metadata string: a preview, not a copy
_SEEN_SPANS = 4096  # spans whose expectation was queued, remembered to send it once per span
_HOPELESS_TRACES = 3  # traces MLflow still lacks give_up_after_s after their results: spans refused


@dataclass(frozen=True)
class AssessmentStats:
    """Counters of an `MlflowAssessmentSender`, in assessments."""

    submitted: int
    sent: int
    """Accepted by MLflow."""
    dropped: int
    """Not queued: the queue was full, the values unusable, or the sender shut down."""
    failed: int
    """Given up: the trace never appeared within the wait, MLflow unreachable, or refused."""
    pending: int
    already_there: int = 0
    """Not posted: the trace already held an assessment with the same ``tracesim.result_id``."""


@dataclass
class _Item(QueuedItem):
    trace_id: str = ""
    payload: dict[str, Any] = field(default_factory=dict)
    result_id: str = ""


class MlflowAssessmentSender(BackgroundSender[_Item]):
    """A bounded, batching background sender of assessments to one MLflow tracking server.

    ``submit`` never blocks and never raises; ``force_flush`` and ``shutdown`` wait with a
    deadline. A worker thread takes up to ``max_batch_size`` assessments at a time and posts
    them over one keep-alive connection (MLflow's API takes one assessment per request).

    Args:
        base_url: MLflow's base URL, e.g. ``http://127.0.0.1:5000``.
        headers: Extra headers, e.g. ``{"Authorization": "Bearer ..."}``.
        max_queue_size: Assessments waiting (retries included) before new ones are dropped.
        max_batch_size: Assessments taken by the worker at a time.
        schedule_delay_s: How long the first assessment of a batch may wait for company.
        max_wait_for_span_s: How long an assessment is retried while its trace is not in
            MLflow yet (or MLflow is unreachable).
        detect: Ask first whether ``base_url`` is MLflow (``GET /api/3.0/mlflow/server-info``
            answers JSON with a ``store_type``), for a URL derived from an OTLP endpoint that
            may be any collector. Not MLflow: the sender turns itself off, says so once at
            INFO, and ignores what it is given.
        skip_existing: Read each trace's assessments before posting to it and leave out those
            whose ``tracesim.result_id`` is there already (replay and backfill: re-running
            them adds nothing).
        give_up_after_s: When MLflow still lacks three traces this long after their results
            were submitted, their spans are not reaching it: assessments of traces it does not
            have are given up this long after submission, not ``max_wait_for_span_s``, until
            one lands.

    Example:
        >>> sender = MlflowAssessmentSender("http://127.0.0.1:9")
        >>> sender.submit("tr-" + "ab" * 16, {"assessment_name": "exact", "feedback": {"value": 1.0}}, "r1")
        >>> sender.stats.submitted
        1
        >>> sender.shutdown(timeout_s=0.1)
        False
    """

    def __init__(
        self,
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
        max_queue_size: int = 2048,
        max_batch_size: int = 64,
        schedule_delay_s: float = 0.5,
        max_wait_for_span_s: float = 120.0,
        timeout_s: float = 10.0,
        max_backoff_s: float = 10.0,
        detect: bool = False,
        skip_existing: bool = False,
        give_up_after_s: float = 20.0,
    ) -> None:
        super().__init__(
            name="mlflow",
            max_queue_size=max_queue_size,
            max_batch_size=max_batch_size,
            schedule_delay_s=schedule_delay_s,
            max_backoff_s=max_backoff_s,
        )
        self.base_url = base_url.rstrip("/")
        self.is_mlflow: bool | None = None if detect else True
        """Whether ``base_url`` is MLflow: None until a ``detect`` sender has asked."""
        self._headers = dict(headers or {})
        self._timeout_s = timeout_s
        self._client = httpx.Client(headers=self._headers, timeout=timeout_s)
        self._max_wait_s = max_wait_for_span_s
        self._give_up_after_s = min(give_up_after_s, max_wait_for_span_s)
        self._skip_existing = skip_existing
        self._zero()

    def _zero(self) -> None:
        self._submitted = self._sent = self._dropped = self._already = 0
        self._probe_failed = False
        self._long_missing: set[str] = set()  # traces still absent give_up_after_s after their results

    def _forked_child(self) -> None:
        self._zero()
        # The parent's connections are the parent's: dropped unclosed, a new pool for the child.
        self._client = httpx.Client(headers=self._headers, timeout=self._timeout_s)

    @property
    def stats(self) -> AssessmentStats:
        """A snapshot of the counters."""
        with self._lock:
            return AssessmentStats(
                self._submitted, self._sent, self._dropped, self._failed, self._pending(), self._already
            )

    def submit(self, trace_id: str, assessment: Mapping[str, Any], result_id: str) -> None:
        """Queue one assessment of MLflow trace ``trace_id`` (``tr-<32 hex>``); returns at once.

        ``assessment`` is the body's ``assessment`` object without ``trace_id``; ``result_id``
        joins its metadata as ``tracesim.result_id``.
        """
        if self.is_mlflow is False:
            return
        try:
            payload = dict(assessment)
            payload["trace_id"] = trace_id
            payload["metadata"] = {**(payload.get("metadata") or {}), _RESULT_ID: result_id}
            json.dumps(payload, allow_nan=False)  # a NaN or an object now, not a 400 later
        except (TypeError, ValueError) as exc:
            with self._lock:
                self._submitted += 1
                self._dropped += 1
            self._log_once("invalid", "tracesim: MLflow assessment dropped, not JSON: %s", exc)
            return
        now = time.monotonic()
        item = _Item(now, now + self._max_wait_s, trace_id=trace_id, payload=payload, result_id=result_id)
        self._enqueue(item, "MLflow assessment")

    def _off(self) -> bool:
        return self.is_mlflow is False

    def _nothing_to_wait_for(self) -> bool:
        return self.is_mlflow is None and self._probe_failed

    def _close(self) -> None:
        self._client.close()

    def _expired(self, count: int) -> None:
        self._log_once(
            "expired",
            "tracesim: MLflow assessments given up after %.0f s (trace never ingested, or MLflow down)",
            self._max_wait_s,
        )

    # ------------------------------------------------------------ sending

    def _send(self, batch: list[_Item]) -> None:
        if self.is_mlflow is None and not self._detect(batch):
            return
        if self._off():  # queued just as the answer came: never meant for anyone either
            with self._lock:
                self._submitted -= len(batch)
            self._settle(batch)
            return
        by_trace: dict[str, list[_Item]] = {}
        for item in batch:
            by_trace.setdefault(item.trace_id, []).append(item)
        for trace_id, items in by_trace.items():
            if self._skip_existing:
                existing = self._existing_ids(trace_id)
                if existing is None:  # MLflow is not answering
                    self._retry(items)
                    continue
                if isinstance(existing, str):
                    if existing == "missing":
                        self._missing(trace_id, items)
                    else:
                        self._give_up(items)
                    continue
                items = self._without(items, existing)
            for index, item in enumerate(items):
                if self._stopped():  # shut down while a request hung: the rest is not tried
                    self._retry(items[index:])
                    break
                if self._post(item) == "missing":  # the trace is not ingested yet: neither are its others
                    self._missing(trace_id, items[index:])
                    break

    def _stopped(self) -> bool:
        with self._lock:
            return self._shutdown

    def _give_up(self, items: list[_Item]) -> None:
        with self._lock:
            self._failed += len(items)
        self._settle(items)

    def _missing(self, trace_id: str, items: list[_Item]) -> None:
        """MLflow does not have the trace (yet): retry, unless its spans are clearly not coming."""
        now = time.monotonic()
        overdue = [item for item in items if now - item.submitted_at >= self._give_up_after_s]
        with self._lock:
            if overdue and len(self._long_missing) < _HOPELESS_TRACES:
                self._long_missing.add(trace_id)
            hopeless = len(self._long_missing) >= _HOPELESS_TRACES
        if not hopeless or not overdue:
            self._retry(items)
            return
        self._log_once(
            "hopeless",
            "tracesim: MLflow has none of the last %d traces assessed %.0f s after their results: their "
            "spans are not reaching it (see the span exporter's warnings: a wrong experiment id?); "
            "assessments of traces it does not have are given up after %.0f s until one lands",
            _HOPELESS_TRACES,
            self._give_up_after_s,
            self._give_up_after_s,
        )
        self._give_up(overdue)
        self._retry([item for item in items if not item.settled])

    def _without(self, items: list[_Item], existing: set[str]) -> list[_Item]:
        kept, seen = [], set(existing)
        for item in items:
            if item.result_id in seen:
                with self._lock:
                    self._already += 1
                self._settle([item])
                continue
            seen.add(item.result_id)
            kept.append(item)
        return kept

    def _existing_ids(self, trace_id: str) -> set[str] | str | None:
        """The ``tracesim.result_id`` of the trace's assessments; None: ask again later;
        ``missing``: the trace is not there (yet); ``failed``: a refusal retrying cannot change."""
        try:
            response = self._client.get(f"{self.base_url}/api/3.0/mlflow/traces/{trace_id}")
        except httpx.HTTPError as exc:
            self._log_once("unreachable", "tracesim: MLflow assessments: %s; retrying", exc)
            return None
        if not response.is_success:
            if _trace_not_found(response):
                return "missing"
            if response.status_code in _RETRYABLE:
                return None
            self._refused(response)
            return "failed"
        try:
            info = _json(response)["trace"]["trace_info"]
            return {
                str((a.get("metadata") or {}).get(_RESULT_ID))
                for a in info.get("assessments") or []
                if (a.get("metadata") or {}).get(_RESULT_ID)
            }
        except (ValueError, KeyError, TypeError, AttributeError):
            return set()  # an answer without assessments we can read: nothing to leave out

    def _post(self, item: _Item) -> str:
        """``sent``, ``retry``, ``missing`` (trace not there yet) or ``failed``."""
        url = f"{self.base_url}/api/3.0/mlflow/traces/{item.trace_id}/assessments"
        try:
            response = self._client.post(url, json={"assessment": item.payload})
        except httpx.HTTPError as exc:
            if not self._stopped():  # a shutdown that could not wait for this answer said so itself
                self._log_once("unreachable", "tracesim: MLflow assessments: %s; retrying", exc)
            self._retry([item])
            return "retry"
        if response.is_success:
            with self._lock:
                self._sent += 1
                self._long_missing.clear()
            self._settle([item])
            return "sent"
        status = response.status_code
        if _trace_not_found(response):
            return "missing"
        if status in _RETRYABLE:
            self._retry([item])
            return "retry"
        self._refused(response)
        self._give_up([item])
        return "failed"

    def _refused(self, response: httpx.Response) -> None:
        status = response.status_code
        message = _message(response)
        if status == 404:
            advice = (
                "check mlflow_url: it should be the tracking server's base URL, with the path "
                "prefix of any proxy in front of it (this answer is not MLflow's: no such route)"
            )
            self._log_once(
                "route",
                "tracesim: MLflow assessments: POST %s answered HTTP 404 (%s): %s",
                response.request.url.copy_with(query=None),
                message,
                advice,
            )
            return
        if status in (401, 403):
            advice = (
                "give tracesim credentials that may write to the experiment: MLFLOW_TRACKING_TOKEN, "
                "or MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (or the OTLP headers when "
                "spans go to the same server)"
            )
        else:
            advice = "an assessment MLflow cannot hold; set mlflow_assessments=false to stop sending them"
        self._log_once(
            f"http{status}",
            "tracesim: MLflow refused an assessment (HTTP %d: %s): %s",
            status,
            message,
            advice,
        )

    def _detect(self, batch: list[_Item]) -> bool:
        """Ask once whether the base URL is MLflow; True to go on sending ``batch``."""
        try:
            response = self._client.get(self.base_url + "/api/3.0/mlflow/server-info")
        except httpx.HTTPError as exc:
            # Nobody said this is MLflow: a collector that is down is the exporter's news, not ours.
            _logger.debug("tracesim: asking %s whether it is MLflow: %s", self.base_url, exc)
            self._probe_failed = True
            self._retry(batch)
            return False
        if response.status_code in _RETRYABLE:
            self._probe_failed = True
            self._retry(batch)
            return False
        if response.is_success and _is_server_info(response):
            self.is_mlflow = True
            return True
        with self._lock:
            self.is_mlflow = False
            self._submitted -= len(batch) + len(self._queue)  # never meant for anyone
            self._queue.clear()
        self._settle(batch)
        _logger.info(
            "tracesim: %s is not MLflow (GET /api/3.0/mlflow/server-info: HTTP %d); evaluation results "
            "stay on the spans. Set mlflow_assessments=false to skip this check.",
            self.base_url,
            response.status_code,
        )
        return False


_MAX_ANSWER_BYTES = 16 * 1024 * 1024


def _json(response: httpx.Response) -> Any:
    """An answer's JSON within tracesim's input limits (size, nesting); ValueError past them."""
    content = response.content
    if len(content) > _MAX_ANSWER_BYTES:
        raise ValueError(f"an answer of {len(content)} bytes from {response.url}: more than tracesim reads")
    return _inputs.loads(content, str(response.url))


def _is_server_info(response: httpx.Response) -> bool:
    try:
        body = _json(response)
    except ValueError:
        return False
    return isinstance(body, dict) and "store_type" in body


def _message(response: httpx.Response) -> str:
    """MLflow's own words: ``message`` (its errors), ``detail`` (FastAPI's), an HTML page's text."""
    answer = Answer(
        str(response.url),
        response.status_code,
        response.text[:4000],
        response.headers.get("content-type", ""),
    )
    return backend_message(answer)


def _trace_not_found(response: httpx.Response) -> bool:
    """MLflow's own "no such trace": a 404 whose JSON says ``RESOURCE_DOES_NOT_EXIST``.

    Any other 404 (a proxy's or a web server's HTML page) says the route does not exist: a
    wrong ``mlflow_url``, which no wait will fix.
    """
    if response.status_code != 404:
        return False
    try:
        body = _json(response)
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("error_code") == "RESOURCE_DOES_NOT_EXIST"


# ---------------------------------------------------------------- results -> assessments


class MlflowSink:
    """Each result as an MLflow feedback on its span, its expected output as an expectation.

    A result sink (see `tracesim._scoring._sinks.ResultSink`): everything sent passes
    ``redaction`` as the spans do (names, labels, explanations, errors, metadata, expected).

    Example:
        >>> from opentelemetry.trace import SpanContext
        >>> from tracesim.evaluators import EvalResult
        >>> from tracesim.exporters import Redaction
        >>> sink = MlflowSink("http://127.0.0.1:9", None, Redaction())
        >>> span = SpanContext(0xAB, 0xCD, is_remote=True)
        >>> sink.feedback(span, EvalResult(name="exact", score=1.0, passed=True), "CODE")["source"]
        {'source_type': 'CODE', 'source_id': 'tracesim.exact'}
        >>> sink.shutdown(0.1)
        True
    """

    def __init__(
        self,
        base_url: str,
        headers: Mapping[str, str] | None,
        redaction: Redaction,
        *,
        max_wait_for_span_s: float = 120.0,
        detect: bool = False,
        skip_existing: bool = False,
    ) -> None:
        self._sender = MlflowAssessmentSender(
            base_url,
            headers=headers,
            max_wait_for_span_s=max_wait_for_span_s,
            detect=detect,
            skip_existing=skip_existing,
        )
        self._redaction = redaction
        self._expected_for: OrderedDict[tuple[int, int], None] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def is_mlflow(self) -> bool | None:
        """Whether the URL is MLflow; None until a detecting sink has asked."""
        return self._sender.is_mlflow

    @property
    def stats(self) -> AssessmentStats:
        """The sender's counters."""
        return self._sender.stats

    def submit(
        self, target: SpanContext, result: EvalResult, annotator_kind: str, *, expected: Any = NOT_SET
    ) -> None:
        """Queue ``result`` (and, once per span, ``expected``); never blocks or raises."""
        if self._sender.is_mlflow is False or result.status == "skipped":
            return
        try:
            trace_id = mlflow_trace_id(target.trace_id)
            feedback = self.feedback(target, result, annotator_kind)
            self._sender.submit(trace_id, feedback, _result_id(trace_id, feedback))
            if expected is not NOT_SET and expected is not None and self._first_expected(target):
                expectation = self.expectation(target, expected)
                self._sender.submit(trace_id, expectation, _result_id(trace_id, expectation))
        except Exception:
            _logger.exception("tracesim: could not queue an MLflow assessment")

    def _first_expected(self, target: SpanContext) -> bool:
        key = (target.trace_id, target.span_id)
        with self._lock:
            if key in self._expected_for:
                return False
            self._expected_for[key] = None
            if len(self._expected_for) > _SEEN_SPANS:
                self._expected_for.popitem(last=False)
            return True

    def feedback(self, target: SpanContext, result: EvalResult, annotator_kind: str) -> dict[str, Any]:
        """The ``assessment`` object of ``result`` (redacted), without trace id or result id."""
        clean = self._redaction.json
        name = clean(result.name, sc.EVALUATION_NAME)
        label = clean(result.label, sc.EVALUATION_SCORE_LABEL)
        body: dict[str, Any] = {
            "assessment_name": name,
            "span_id": format(target.span_id, "016x"),
            "source": _source(annotator_kind, name, result.details, clean),
        }
        if result.status == "error":
            body["feedback"] = {
                "error": {
                    "error_code": clean(result.error_type or "ERROR", sc.EVALUATION_NAME),
                    "error_message": clean(result.error or "evaluator failed", sc.EVALUATION_EXPLANATION),
                }
            }
        else:
            value = result.score if result.score is not None else label
            body["feedback"] = {"value": value if value is not None else result.passed}
        if result.explanation is not None and result.status != "error":
            body["rationale"] = clean(result.explanation, sc.EVALUATION_EXPLANATION)
        metadata: dict[str, Any] = {
            "tracesim.status": result.status,
            "tracesim.passed": None if result.passed is None else str(result.passed).lower(),
            "tracesim.threshold": None if result.threshold is None else repr(result.threshold),
            "tracesim.label": label,
            "tracesim.annotator_kind": annotator_kind,
        }
        if result.details:
            details = clean(result.details, sc.EVALUATION_DETAILS)
            metadata["tracesim.details"] = json.dumps(details, default=str, sort_keys=True)[:_DETAILS_CHARS]
        body["metadata"] = {k: str(v) for k, v in metadata.items() if v is not None}
        return body

    def expectation(self, target: SpanContext, expected: Any) -> dict[str, Any]:
        """The ``assessment`` object of the expected output (redacted, bounded)."""
        captured = capture_value(expected, _EXPECTED_CAPTURE)
        value: Any = captured.text
        if captured.mime_type == "application/json" and not isinstance(expected, str):
            with contextlib.suppress(ValueError):  # cut: kept as the text it is
                value = json.loads(captured.text)
        return {
            "assessment_name": EXPECTATION_NAME,
            "span_id": format(target.span_id, "016x"),
            "source": {"source_type": "CODE", "source_id": "tracesim.expected"},
            "expectation": {"value": self._redaction.json(value, sc.EXPECTED_VALUE)},
        }

    def force_flush(self, timeout_s: float) -> bool:
        return self._sender.force_flush(timeout_s)

    def shutdown(self, timeout_s: float) -> bool:
        return self._sender.shutdown(timeout_s)


def _source(annotator_kind: str, name: str, details: Mapping[str, Any], clean: Any) -> dict[str, str]:
    kind = annotator_kind.upper()
    if kind in ("LLM", "LLM_JUDGE"):
        model = details.get("model") if details else None
        source_id = clean(model, sc.EVALUATION_DETAILS) if isinstance(model, str) and model else None
        return {"source_type": "LLM_JUDGE", "source_id": source_id or f"tracesim.{name}"}
    return {"source_type": "HUMAN" if kind == "HUMAN" else "CODE", "source_id": f"tracesim.{name}"}


def _result_id(trace_id: str, assessment: Mapping[str, Any]) -> str:
    """What an assessment says, hashed: the same result on the same span gives the same id.

    An expectation is one per span whatever its value; a feedback is its name and value (or
    error code), so a score that changed is a new assessment. Not its source: a replay of a
    file that does not record who made a result could not say it the way the online sink did.
    """
    if "expectation" in assessment:
        key: list[Any] = [trace_id, assessment["span_id"], "expectation", assessment["assessment_name"]]
    else:
        feedback = assessment["feedback"]
        error = feedback.get("error")
        key = [
            trace_id,
            assessment["span_id"],
            "feedback",
            assessment["assessment_name"],
            error["error_code"] if error else feedback.get("value"),
        ]
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:32]


def mlflow_trace_id(otel_trace_id: int) -> str:
    """MLflow's id of the trace an OpenTelemetry trace id becomes over OTLP.

    Example:
        >>> mlflow_trace_id(0x94C4878C0D7E4C30A1B2C3D4E5F60718)
        'tr-94c4878c0d7e4c30a1b2c3d4e5f60718'
    """
    return "tr-" + format(otel_trace_id, "032x")


# ---------------------------------------------------------------- configuration


def mlflow_target(settings: Settings, environ: Mapping[str, str] | None = None) -> tuple[str, bool] | None:
    """Where MLflow assessments go, and whether to ask first that it is MLflow; None for nowhere.

    ``mlflow_url`` says where. Otherwise spans exported over OTLP/HTTP may be going to MLflow:
    its base URL is the traces endpoint without ``/v1/traces``, asked once
    (``GET /api/3.0/mlflow/server-info``) unless ``mlflow_assessments=true`` says it is MLflow.

    Raises:
        ConfigError: ``mlflow_assessments=true`` with no way to reach MLflow (no ``mlflow_url``,
            and spans not over OTLP/HTTP).

    Example:
        >>> from tracesim._config import resolve
        >>> settings = resolve({"exporters": "otlp", "otlp_endpoint": "http://mlflow:5000"}, environ={})
        >>> mlflow_target(settings, environ={})
        ('http://mlflow:5000', True)
    """
    from tracesim.exporters._phoenix import api_behind_otlp  # the same rule as Phoenix's

    return api_behind_otlp(
        settings,
        environ,
        setting="mlflow_assessments",
        on=settings.mlflow_assessments,
        url=settings.mlflow_url,
        expected="false, or true with mlflow_url set (the MLflow tracking server's base URL) when "
        "spans do not go to MLflow over OTLP/HTTP",
    )


def mlflow_headers(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The credentials MLflow's own client would send, from its variables.

    ``MLFLOW_TRACKING_TOKEN`` (a bearer token), else ``MLFLOW_TRACKING_USERNAME`` and
    ``MLFLOW_TRACKING_PASSWORD`` (basic authentication).

    Example:
        >>> mlflow_headers({"MLFLOW_TRACKING_TOKEN": "t0k"})
        {'Authorization': 'Bearer t0k'}
        >>> mlflow_headers({})
        {}
    """
    import base64

    environ = os.environ if environ is None else environ
    if token := environ.get("MLFLOW_TRACKING_TOKEN"):
        return {"Authorization": f"Bearer {token}"}
    user, password = environ.get("MLFLOW_TRACKING_USERNAME"), environ.get("MLFLOW_TRACKING_PASSWORD")
    if user and password:
        return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}
    return {}


def mlflow_sinks(settings: Settings, redaction: Redaction) -> list[MlflowSink]:
    """The result sinks that send to MLflow for ``settings``: one, or none.

    Found behind the OTLP endpoint, MLflow gets the exporter's headers (its credentials);
    named by ``mlflow_url``, only MLflow's own credential variables (`mlflow_headers`). Spans
    sent over OTLP without an experiment (``mlflow_experiment_id``, or the header
    ``x-mlflow-experiment-id`` in ``otlp_headers`` / ``OTEL_EXPORTER_OTLP_HEADERS``) never reach
    MLflow: no sink then, unless ``mlflow_url`` names where the assessments go.

    Raises:
        ConfigError: ``mlflow_assessments=true`` for spans over OTLP/HTTP without an experiment.
    """
    target = mlflow_target(settings)
    if target is None:
        return []
    url, detect = target
    headers = mlflow_headers()
    if not settings.mlflow_url:
        from tracesim.exporters._otlp import MLFLOW_EXPERIMENT_HEADER, env_headers, settings_headers

        otlp = settings_headers(settings.otlp_headers, settings.mlflow_experiment_id) or env_headers()
        if not any(key.lower() == MLFLOW_EXPERIMENT_HEADER for key in otlp):
            # MLflow refuses every span without it (the exporter says so, naming the header): no
            # trace would ever be there to assess.
            if settings.mlflow_assessments:
                from tracesim._errors import ConfigError

                raise ConfigError(
                    "mlflow_experiment_id",
                    None,
                    "the id of the MLflow experiment the spans go to (e.g. 0 for Default): MLflow "
                    "refuses OTLP spans without the x-mlflow-experiment-id header",
                )
            return []
        headers = {**otlp, **headers}
    return [MlflowSink(url, headers, redaction, detect=detect)]
