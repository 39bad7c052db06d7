"""Send local trace files (OTLP/JSON lines) to an OTLP/HTTP endpoint, safely re-runnable.

Each line of a trace file is one ``ExportTraceServiceRequest`` in OTLP/JSON. Lines are grouped
into requests of up to ``batch_size`` spans (a line is never split) and posted as they are,
with ``Content-Type: application/json``. An endpoint that only takes OTLP/protobuf answers
415 (Arize Phoenix does); from then on each line is converted field by field to the
equivalent protobuf message (hex ids become bytes; nothing else changes) and the messages of
a request are concatenated, which protobuf defines as merging them, and posted as
``application/x-protobuf``. A line that is not OTLP/JSON (torn, nested too deeply, a span
the decoder refuses, a line protobuf cannot hold) is skipped and named in the report; the
others go on. Lines are read within `tracesim._inputs`' limits: a line longer than
``MAX_LINE_BYTES`` (64 MiB) is skipped without being held whole, a line nested deeper than
``MAX_DEPTH`` is skipped before ``json`` recurses into it; the report names the limit.

Sent to Phoenix, the evaluation results in the delivered lines also become span annotations
(where Phoenix shows scores): by default when the endpoint turns out to be Phoenix (asked with
``GET /arize_phoenix_version``), always with ``annotations=True``, never with ``False``. Sent
to MLflow, they become MLflow assessments the same way (asked with
``GET /api/3.0/mlflow/server-info``; ``assessments=True``/``False``); MLflow needs the header
``x-mlflow-experiment-id``, taken from the ``mlflow_experiment_id`` setting when the headers
given do not name one.

Re-running is safe, rotation included. Every accepted line is recorded by the SHA-256 of its
content, per endpoint, in one ledger per file family next to the files: ``traces.jsonl``,
``traces.1.jsonl``, ``traces.2.jsonl`` share ``traces.jsonl.replayed``. A line that moved to
a rotated copy is recognised there and not sent again; a run that stopped half-way resumes
where it stopped. ``force=True`` ignores the ledger. Backends that deduplicate spans by id
(Phoenix keeps the first copy of a span id and ignores later ones) make a forced re-send
harmless too.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import httpx

from tracesim import _inputs
from tracesim.batch._ledger import ReplayLedger, ledger_path
from tracesim.exporters._otlp import env_headers
from tracesim.tracefile import spans_from_request
from tracesim.tracefile._sdk_spans import request_to_protobuf

if TYPE_CHECKING:
    from tracesim.batch._replay_annotations import ReplayAnnotations, ReplayAssessments

__all__ = ["ReplayReport", "default_endpoint", "replay"]

Encoding = Literal["auto", "json", "protobuf"]
Outcome = Literal["sent", "failed", "switch"]
_RETRYABLE = frozenset({429, 500, 502, 503, 504})
_DEFAULT_ENDPOINT = "http://localhost:4318/v1/traces"


@dataclass
class ReplayReport:
    """What a replay did, per run (all files together)."""

    endpoint: str
    files: int = 0
    requests: int = 0
    """Requests the endpoint accepted."""
    spans: int = 0
    """Spans in the accepted requests."""
    lines: int = 0
    """Lines (original requests) accepted."""
    already_sent: int = 0
    """Lines skipped because the ledger says this endpoint accepted them before."""
    already_sent_spans: int = 0
    """The spans in those lines."""
    skipped_lines: int = 0
    """Lines that are not OTLP/JSON (a torn last line, a malformed span), each named in ``problems``."""
    failed_requests: int = 0
    failed_spans: int = 0
    rejected_spans: int = 0
    """Spans the endpoint reported as rejected in an otherwise accepted request."""
    encoding: str = "json"
    """``json`` (lines posted as they are) or ``protobuf`` (converted)."""
    annotations: int = 0
    """Phoenix span annotations made from the evaluation results of the lines sent."""
    failed_annotations: int = 0
    """Annotations Phoenix did not take (its span never arrived, or it refused them)."""
    phoenix: bool | None = None
    """Whether the endpoint is Phoenix: None when not asked (``annotations=False``) or unreachable."""
    assessments: int = 0
    """MLflow assessments made from the evaluation results of the lines sent."""
    assessments_already_there: int = 0
    """Assessments not posted: the trace in MLflow held them already (an earlier run's)."""
    failed_assessments: int = 0
    """Assessments MLflow did not take (its trace never arrived, or it refused them)."""
    mlflow: bool | None = None
    """Whether the endpoint is MLflow: None when not asked (``assessments=False``) or unreachable."""
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing failed and nothing was rejected."""
        return (
            not self.failed_requests
            and not self.rejected_spans
            and not self.failed_annotations
            and not self.failed_assessments
        )


@dataclass
class _Line:
    where: str
    """``path:number``, for messages."""
    end: int
    """Byte offset just past the line, for progress."""
    raw: bytes
    request: dict[str, Any]
    spans: int
    key: str
    """SHA-256 of the content: what the ledger records."""
    protobuf: bytes | None = None
    """The line as OTLP/protobuf, once converted."""


def default_endpoint() -> str:
    """The traces URL from the standard OpenTelemetry variables, or the OTLP default."""
    if url := os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return url
    if base := os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return base.rstrip("/") + "/v1/traces"
    return _DEFAULT_ENDPOINT


def traces_url(endpoint: str) -> str:
    """``http://host:4318`` → ``http://host:4318/v1/traces``; a URL with a path is kept."""
    scheme_split = endpoint.split("://", 1)
    if len(scheme_split) == 2 and "/" not in scheme_split[1].rstrip("/"):
        return endpoint.rstrip("/") + "/v1/traces"
    return endpoint


def replay(
    paths: Iterable[str | os.PathLike[str]],
    *,
    endpoint: str | None = None,
    headers: Mapping[str, str] | None = None,
    batch_size: int = 512,
    force: bool = False,
    encoding: Encoding = "auto",
    timeout_s: float = 10.0,
    max_attempts: int = 5,
    on_progress: Callable[[int], None] | None = None,
    annotations: bool | None = None,
    assessments: bool | None = None,
) -> ReplayReport:
    """Send trace files to an OTLP/HTTP endpoint; never raises for delivery problems.

    Args:
        paths: Trace files (OTLP/JSON lines).
        endpoint: Traces URL or base URL; default from the standard OpenTelemetry variables.
        headers: Extra request headers (added to those of ``OTEL_EXPORTER_OTLP_HEADERS``).
        batch_size: Most spans per request; lines are grouped up to it, never split.
        force: Send lines the ledger says were accepted already.
        encoding: ``auto`` (JSON, protobuf after a 415), ``json`` or ``protobuf``.
        max_attempts: Attempts per request on 429, 5xx and connection errors, with backoff.
        on_progress: Called with the number of bytes of the file read after each request.
        annotations: Phoenix span annotations for the evaluation results sent: None (default)
            when the endpoint is Phoenix, True always (the endpoint is Phoenix), False never.
        assessments: MLflow assessments for the evaluation results sent: None (default) when
            the endpoint is MLflow, True always (the endpoint is MLflow), False never.

    Example:
        >>> from tracesim.batch import replay
        >>> report = replay([".tracesim/traces.jsonl"], endpoint="http://127.0.0.1:6006")  # doctest: +SKIP
        >>> report.ok, report.spans  # doctest: +SKIP
        (True, 42)
    """
    url = traces_url(endpoint) if endpoint else default_endpoint()
    report = ReplayReport(url, encoding="protobuf" if encoding == "protobuf" else "json")
    all_headers = _with_experiment({**env_headers(), **(headers or {})})
    sender = _Sender(url, all_headers, encoding, timeout_s, max_attempts, report)
    if annotations is not False:
        from tracesim.batch._replay_annotations import ReplayAnnotations
        from tracesim.exporters._phoenix import phoenix_base_url

        sender.annotations = ReplayAnnotations(phoenix_base_url(url), all_headers, detect=annotations is None)
    if assessments is not False:
        from tracesim.batch._replay_annotations import ReplayAssessments
        from tracesim.exporters._mlflow import mlflow_headers
        from tracesim.exporters._phoenix import phoenix_base_url

        sender.assessments = ReplayAssessments(
            phoenix_base_url(url), {**all_headers, **mlflow_headers()}, detect=assessments is None
        )
    ledgers: dict[Path, ReplayLedger] = {}
    try:
        for path in map(Path, paths):
            report.files += 1
            family = ledger_path(path)
            if family not in ledgers:
                ledgers[family] = ReplayLedger(family, sender.url, force=force)
                for results in sender.results():
                    results.open_ledger(family, force=force)
            ledgers[family].load_legacy(path)
            _replay_file(path, sender, batch_size, ledgers[family], report, on_progress)
    finally:
        sender.close(report)
        for ledger in ledgers.values():
            ledger.close()
    return report


def _replay_file(
    path: Path,
    sender: _Sender,
    batch_size: int,
    ledger: ReplayLedger,
    report: ReplayReport,
    on_progress: Callable[[int], None] | None,
) -> None:
    batch: list[_Line] = []
    queued: set[str] = set()  # the same line twice in this run goes out once
    for line in _lines(path, report):
        if ledger.has(line.key, line.raw) or line.key in queued:
            report.already_sent += 1
            report.already_sent_spans += line.spans
            for results in sender.results():  # its spans are there; its annotations may not be
                results.add(ledger.path, line.key, line.raw, line.request)
            continue
        if batch and sum(b.spans for b in batch) + line.spans > batch_size:
            _flush(batch, sender, ledger, report, on_progress)
            batch = []
        batch.append(line)
        queued.add(line.key)
    if batch:
        _flush(batch, sender, ledger, report, on_progress)


def _flush(
    batch: list[_Line],
    sender: _Sender,
    ledger: ReplayLedger,
    report: ReplayReport,
    on_progress: Callable[[int], None] | None,
) -> None:
    end = batch[-1].end
    outcome: Outcome = "switch"
    while outcome == "switch" and batch:  # at most twice: JSON, then protobuf after a 415
        if sender.protobuf:
            batch = _convertible(batch, report)
        outcome = sender.post(batch) if batch else "sent"
    spans = sum(line.spans for line in batch)
    if outcome == "sent" and batch:
        report.requests += 1
        report.spans += spans
        report.lines += len(batch)
        ledger.record([line.key for line in batch])
        for results in sender.results():
            for line in batch:
                results.add(ledger.path, line.key, line.raw, line.request)
    elif outcome == "failed":
        report.failed_requests += 1
        report.failed_spans += spans
    if on_progress:
        on_progress(end)


def _convertible(batch: list[_Line], report: ReplayReport) -> list[_Line]:
    """The lines that convert to OTLP/protobuf; the others are skipped and named."""
    kept = []
    for line in batch:
        if line.protobuf is None:
            try:
                line.protobuf = request_to_protobuf(line.request)
            except ValueError as exc:
                report.skipped_lines += 1
                report.problems.append(f"{line.where}: skipped, not convertible to OTLP/protobuf ({exc})")
                continue
        kept.append(line)
    return kept


def _lines(path: Path, report: ReplayReport) -> Iterator[_Line]:
    """The lines of ``path`` that are OTLP/JSON, every span checked by the shared decoder."""
    name = str(path)
    for number, end, raw in _inputs.json_lines(path):
        if raw is not None and not raw.strip():
            continue
        request = _inputs.record(raw, name, number)  # the one reading of a line, as json_records'
        why, spans = _spans(request)
        if why is not None or raw is None:  # raw is None: too long, an InputError
            report.skipped_lines += 1
            report.problems.append(f"{path}:{number}: skipped {why}")
            continue
        # The content alone, line ending excluded: the same line in a rotated copy, or after
        # a torn last line was terminated, is the same line.
        key = hashlib.sha256(raw.rstrip(b"\r\n")).hexdigest()
        yield _Line(f"{path}:{number}", end, raw, request, spans, key)


def _spans(request: Any) -> tuple[str | None, int]:
    """Why the line's value is not OTLP/JSON (None when it is), and how many spans it holds."""
    if isinstance(request, _inputs.InputError):
        return request.problem, 0
    try:
        return None, len(list(spans_from_request(request)))
    except ValueError as exc:
        return str(exc), 0


class _Sender:
    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        encoding: Encoding,
        timeout_s: float,
        max_attempts: int,
        report: ReplayReport,
    ) -> None:
        self.url = url
        self._client = httpx.Client(headers=dict(headers), timeout=timeout_s)
        self.protobuf = encoding == "protobuf"
        self._switchable = encoding == "auto"
        self._max_attempts = max_attempts
        self._report = report
        self.annotations: ReplayAnnotations | None = None
        self.assessments: ReplayAssessments | None = None

    def results(self) -> list[ReplayAnnotations | ReplayAssessments]:
        """Where the evaluation results of delivered lines go besides the spans."""
        return [r for r in (self.annotations, self.assessments) if r is not None]

    def post(self, batch: list[_Line]) -> Outcome:
        """``sent``, ``failed``, or ``switch`` when the endpoint asked for protobuf (send again)."""
        body, content_type = self._body(batch)
        spans = sum(line.spans for line in batch)
        for attempt in range(1, self._max_attempts + 1):
            try:
                response = self._client.post(self.url, content=body, headers={"Content-Type": content_type})
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}"
                retry_after = None
            else:
                if response.status_code == 415 and self._switchable and not self.protobuf:
                    self.protobuf, self._report.encoding = True, "protobuf"
                    return "switch"
                if response.is_success:
                    self._count_rejected(response)
                    return "sent"
                problem = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code not in _RETRYABLE:
                    break
                retry_after = _retry_after(response)
            if attempt < self._max_attempts:
                time.sleep(_backoff_s(attempt, retry_after))
        self._report.problems.append(f"{spans} spans not sent to {self.url}: {problem}")
        return "failed"

    def _body(self, batch: list[_Line]) -> tuple[bytes, str]:
        if self.protobuf:
            # Concatenated messages parse as one message with the repeated fields joined.
            return b"".join(line.protobuf or b"" for line in batch), "application/x-protobuf"
        if len(batch) == 1:  # a single line goes out byte for byte
            return batch[0].raw.rstrip(b"\r\n"), "application/json"
        merged = {"resourceSpans": [rs for line in batch for rs in line.request.get("resourceSpans") or []]}
        return _strict_json(merged), "application/json"

    def _count_rejected(self, response: httpx.Response) -> None:
        # OTLP partial success: the endpoint took the request but refused some spans.
        try:
            if response.headers.get("content-type", "").startswith("application/json"):
                rejected = int(response.json().get("partialSuccess", {}).get("rejectedSpans", 0))
            elif response.content:
                from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
                    ExportTraceServiceResponse,
                )

                message = ExportTraceServiceResponse()
                message.ParseFromString(response.content)
                rejected = message.partial_success.rejected_spans
            else:
                return
        except Exception:  # an unreadable success body is still a success
            return
        if rejected:
            self._report.rejected_spans += rejected
            self._report.problems.append(f"{self.url} rejected {rejected} spans (partial success)")

    def close(self, report: ReplayReport) -> None:
        self._client.close()
        if self.annotations is not None:
            sent, failed, report.phoenix = self.annotations.finish()
            report.annotations += sent
            report.failed_annotations += failed
            if failed:
                report.problems.append(
                    f"{failed} Phoenix annotations not delivered (see the log); their lines are sent "
                    "again by the next run"
                )
        if self.assessments is not None:
            sent, already, failed, report.mlflow = self.assessments.finish()
            report.assessments += sent
            report.assessments_already_there += already
            report.failed_assessments += failed
            if failed:
                report.problems.append(
                    f"{failed} MLflow assessments not delivered (see the log); their lines are sent "
                    "again by the next run"
                )


def _with_experiment(headers: dict[str, str]) -> dict[str, str]:
    """``headers`` and, unless they name one, the MLflow experiment of the ``mlflow_experiment_id``
    setting (``TRACESIM_MLFLOW_EXPERIMENT_ID``, ``MLFLOW_EXPERIMENT_ID`` or ``tracesim.yaml``)."""
    from tracesim._config import resolve_setting
    from tracesim.exporters._otlp import settings_headers

    try:
        experiment = resolve_setting("mlflow_experiment_id")
    except ValueError:  # a bad value of that setting is the endpoint's to refuse, said there
        return headers
    return settings_headers(headers, experiment) or headers


def _strict_json(request: dict[str, Any]) -> bytes:
    """``request`` as standard JSON: a non-finite double (``1e999`` in a file) as OTLP/JSON writes it."""
    try:
        return json.dumps(request, separators=(",", ":"), allow_nan=False).encode()
    except ValueError:
        return json.dumps(_nan_as_text(request), separators=(",", ":"), allow_nan=False).encode()


def _nan_as_text(node: Any) -> Any:
    if isinstance(node, float) and not math.isfinite(node):
        return "NaN" if math.isnan(node) else "Infinity" if node > 0 else "-Infinity"
    if isinstance(node, dict):
        return {key: _nan_as_text(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_nan_as_text(item) for item in node]
    return node


def _backoff_s(attempt: int, retry_after: float | None) -> float:
    if retry_after is not None:
        return retry_after
    return min(0.5 * 2.0 ** (attempt - 1), 8.0) * random.uniform(0.8, 1.2)


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return min(max(float(response.headers["retry-after"]), 0.0), 30.0)
    except (KeyError, ValueError):
        return None
