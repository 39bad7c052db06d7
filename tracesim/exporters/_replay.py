"""Send local trace files (OTLP/JSON lines) to an OTLP/HTTP endpoint, safely re-runnable.

Each line of a trace file is one ``ExportTraceServiceRequest`` in OTLP/JSON. Lines are grouped
into requests of up to ``batch_size`` spans (a line is never split) and posted as they are,
with ``Content-Type: application/json``. An endpoint that only takes OTLP/protobuf answers
415 (Arize Phoenix does); from then on each request is converted field by field to the
equivalent protobuf message (hex ids become bytes; nothing else changes) and posted as
``application/x-protobuf``.

Re-running is safe. Every accepted line is recorded in a ledger next to the file,
``<file>.replayed`` (byte offset, length and hash of the line, per endpoint), and skipped by
the next run, so a run that stopped half-way resumes where it stopped. ``force=True`` ignores
the ledger. Backends that deduplicate spans by id (Phoenix keeps the first copy of a span id
and ignores later ones) make a forced re-send harmless too.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote

import httpx

from tracesim.exporters._otlp_decode import request_to_protobuf

__all__ = ["ReplayReport", "default_endpoint", "replay"]

Encoding = Literal["auto", "json", "protobuf"]
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
    skipped_lines: int = 0
    """Lines that are not OTLP/JSON (for example a torn last line)."""
    failed_requests: int = 0
    failed_spans: int = 0
    rejected_spans: int = 0
    """Spans the endpoint reported as rejected in an otherwise accepted request."""
    encoding: str = "json"
    """``json`` (lines posted as they are) or ``protobuf`` (converted)."""
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing failed and nothing was rejected."""
        return not self.failed_requests and not self.rejected_spans


@dataclass
class _Line:
    offset: int
    raw: bytes
    request: dict[str, Any]
    spans: int

    @property
    def key(self) -> str:
        return f"{self.offset}:{len(self.raw)}:{hashlib.sha256(self.raw).hexdigest()[:16]}"


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


def env_headers() -> dict[str, str]:
    """Headers from ``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` / ``OTEL_EXPORTER_OTLP_HEADERS``."""
    raw = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or os.environ.get(
        "OTEL_EXPORTER_OTLP_HEADERS", ""
    )
    return parse_headers(raw)


def parse_headers(raw: str) -> dict[str, str]:
    """Parse ``k=v,k2=v2`` (values URL-decoded, as the OTLP variables specify)."""
    headers: dict[str, str] = {}
    for item in raw.split(","):
        if "=" in item:
            key, value = item.split("=", 1)
            headers[key.strip()] = unquote(value.strip())
    return headers


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

    Example:
        >>> from tracesim.exporters import replay
        >>> report = replay([".tracesim/traces.jsonl"], endpoint="http://127.0.0.1:6006")  # doctest: +SKIP
        >>> report.ok, report.spans  # doctest: +SKIP
        (True, 42)
    """
    url = traces_url(endpoint) if endpoint else default_endpoint()
    report = ReplayReport(url, encoding="protobuf" if encoding == "protobuf" else "json")
    sender = _Sender(url, {**env_headers(), **(headers or {})}, encoding, timeout_s, max_attempts, report)
    try:
        for path in paths:
            report.files += 1
            _replay_file(Path(path), sender, batch_size, force, report, on_progress)
    finally:
        sender.close()
    return report


def _replay_file(
    path: Path,
    sender: _Sender,
    batch_size: int,
    force: bool,
    report: ReplayReport,
    on_progress: Callable[[int], None] | None,
) -> None:
    ledger = _Ledger(path, sender.url)
    done = set() if force else ledger.load()
    batch: list[_Line] = []
    for line in _lines(path, report):
        if line.key in done:
            report.already_sent += 1
            continue
        if batch and sum(b.spans for b in batch) + line.spans > batch_size:
            _flush(batch, sender, ledger, report, on_progress)
            batch = []
        batch.append(line)
    if batch:
        _flush(batch, sender, ledger, report, on_progress)
    ledger.close()


def _flush(
    batch: list[_Line],
    sender: _Sender,
    ledger: _Ledger,
    report: ReplayReport,
    on_progress: Callable[[int], None] | None,
) -> None:
    spans = sum(line.spans for line in batch)
    merged = {"resourceSpans": [rs for line in batch for rs in line.request.get("resourceSpans", [])]}
    raw = batch[0].raw if len(batch) == 1 else None  # a single line goes out byte for byte
    if sender.post(merged, raw, spans):
        report.requests += 1
        report.spans += spans
        report.lines += len(batch)
        ledger.record(batch)
    else:
        report.failed_requests += 1
        report.failed_spans += spans
    if on_progress:
        on_progress(batch[-1].offset + len(batch[-1].raw))


def _lines(path: Path, report: ReplayReport) -> Iterator[_Line]:
    offset = 0
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            try:
                request = json.loads(raw)
                spans = sum(
                    len(ss.get("spans", []))
                    for rs in request["resourceSpans"]
                    for ss in rs.get("scopeSpans", [])
                )
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                torn = not raw.endswith(b"\n")
                report.skipped_lines += 1
                report.problems.append(f"{path}:{number}: skipped {'torn last line' if torn else repr(exc)}")
                continue
            yield _Line(start, raw, request, spans)


class _Ledger:
    """``<file>.replayed``: one JSON line per accepted line, so a later run can skip it."""

    def __init__(self, path: Path, endpoint: str) -> None:
        self.path = path.with_name(path.name + ".replayed")
        self.endpoint = endpoint
        self._file: Any = None

    def load(self) -> set[str]:
        done: set[str] = set()
        try:
            with open(self.path, encoding="utf-8") as f:
                for raw in f:
                    try:
                        entry = json.loads(raw)
                    except ValueError:
                        continue  # a torn ledger line only costs a re-send
                    if entry.get("endpoint") == self.endpoint:
                        done.add(entry["line"])
        except FileNotFoundError:
            pass
        return done

    def record(self, batch: list[_Line]) -> None:
        try:
            if self._file is None:
                self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - kept for the run
            self._file.write(
                "".join(json.dumps({"endpoint": self.endpoint, "line": b.key}) + "\n" for b in batch)
            )
            self._file.flush()  # a crash after this point does not resend the batch
        except OSError:
            pass  # read-only directory: replay still works, it just cannot resume

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


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
        self._protobuf = encoding == "protobuf"
        self._switchable = encoding == "auto"
        self._max_attempts = max_attempts
        self._report = report

    def post(self, request: dict[str, Any], raw: bytes | None, spans: int) -> bool:
        try:
            body, content_type = self._body(request, raw)
        except ValueError as exc:
            self._report.problems.append(f"cannot convert a request to protobuf: {exc}")
            return False
        for attempt in range(1, self._max_attempts + 1):
            try:
                response = self._client.post(self.url, content=body, headers={"Content-Type": content_type})
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}"
                retry_after = None
            else:
                if response.status_code == 415 and self._switchable and not self._protobuf:
                    self._protobuf, self._report.encoding = True, "protobuf"
                    return self.post(request, None, spans)
                if response.is_success:
                    self._count_rejected(response)
                    return True
                problem = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code not in _RETRYABLE:
                    break
                retry_after = _retry_after(response)
            if attempt < self._max_attempts:
                time.sleep(_backoff_s(attempt, retry_after))
        self._report.problems.append(f"{spans} spans not sent to {self.url}: {problem}")
        return False

    def _body(self, request: dict[str, Any], raw: bytes | None) -> tuple[bytes, str]:
        if self._protobuf:
            return request_to_protobuf(request), "application/x-protobuf"
        if raw is not None:
            return raw.rstrip(b"\r\n"), "application/json"
        return json.dumps(request, separators=(",", ":")).encode(), "application/json"

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

    def close(self) -> None:
        self._client.close()


def _backoff_s(attempt: int, retry_after: float | None) -> float:
    if retry_after is not None:
        return retry_after
    return min(0.5 * 2.0 ** (attempt - 1), 8.0) * random.uniform(0.8, 1.2)


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return min(max(float(response.headers["retry-after"]), 0.0), 30.0)
    except (KeyError, ValueError):
        return None
