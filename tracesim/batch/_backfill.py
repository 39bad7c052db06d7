"""`backfill`: the scores of a batch run shown on the spans they score, in any backend.

A results directory written by `score` from `Spans` (trace files) holds, per row, the
``trace_id`` and ``span_id`` of the span it scored. `backfill` turns each scored row into what
backends show on that span, the way online scoring does for a late result:

* a **carrier span** per result (``openinference.span.kind=EVALUATOR``, in the scored span's
  trace, its child, with one link to it, the ``gen_ai.evaluation.result`` event and the flat
  ``tracesim.eval.<name>.*`` attributes), appended to a trace file or sent over OTLP/HTTP;
* a **Phoenix span annotation** per result (``identifier="tracesim"``, as online scoring
  writes, so a new score of the same name replaces the old one on the span);
* an **MLflow assessment** (feedback) per result, on the scored span of the trace MLflow holds;
  each carries a ``tracesim.result_id`` derived from what it says, and one the trace holds
  already is not posted again (MLflow itself would keep both).

Nothing is sent twice. The directory keeps a ledger (``backfill-ledger.jsonl``): a part whose
content was delivered whole to a destination is skipped when the same backfill runs again;
scoring the directory again (new part files) makes them new. Carrier span ids are derived
from the scored span and the evaluator's name, so a part sent again after a crash mid-part
repeats span ids a backend already holds rather than adding spans. Everything goes through
tracesim's redaction, like any span tracesim exports; so does what is written or said besides
spans: a destination is known (in the ledger, the report and messages) by its name redacted
(``otlp:http://user:[REDACTED:password]@host/v1/traces``), the same name for the same URL, so a
backfill resumes where it stopped. The ledger is read within `tracesim._inputs`' limits: a
line over them, like a line torn by a crash, costs a re-send of its part, never the run.
"""

from __future__ import annotations

import glob
import hashlib
import math
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator

from tracesim import _inputs, _outputs
from tracesim import _semconv as sc
from tracesim.batch._frame import FIELDS
from tracesim.batch._ledger import Ledger

if TYPE_CHECKING:
    from opentelemetry.trace import SpanContext

    from tracesim._scoring import PhoenixSink
    from tracesim.evaluators import EvalResult
    from tracesim.exporters import Redaction
    from tracesim.exporters._mlflow import MlflowSink

    Scored = tuple[SpanContext, EvalResult, int | None]
    """A scored span's context, one result, and when the span ended (if the results say)."""

__all__ = ["LEDGER", "BackfillReport", "backfill"]

LEDGER = "backfill-ledger.jsonl"
_ANNOTATION_CHUNK = 1000  # annotations queued before waiting for them (the sink's queue holds 2,048)
_EXPORT_CHUNK = 512  # carrier spans per export call
_FLUSH_S = 300.0


@dataclass
class BackfillReport:
    """What a `backfill` sent, per destination, and what it could not.

    Example:
        >>> report = BackfillReport("scores/", destinations=["file:/tmp/carriers.jsonl"])
        >>> report.ok, report.carriers
        (True, 0)
    """

    results: str
    destinations: list[str] = field(default_factory=list)
    parts: int = 0
    """Part files read (those already sent to every destination are not read)."""
    already_sent: int = 0
    """Part files skipped: the ledger says every destination has them."""
    results_sent: int = 0
    """Scored results (row x evaluator) in the parts sent."""
    carriers: int = 0
    """Carrier spans the trace file or OTLP endpoint accepted."""
    annotations: int = 0
    """Phoenix annotations Phoenix accepted."""
    assessments: int = 0
    """Results MLflow holds as assessments (posted now, or found there from an earlier run)."""
    unscored: int = 0
    """Rows with no result to send: bad rows, and evaluators that skipped."""
    failed_parts: dict[str, str] = field(default_factory=dict)
    """Part file -> why it was not delivered whole (it is sent again next time)."""

    @property
    def ok(self) -> bool:
        """True when every part reached every destination."""
        return not self.failed_parts


def backfill(
    results: str | os.PathLike[str],
    *,
    to: str | os.PathLike[str] | None = None,
    phoenix: str | None = None,
    headers: Mapping[str, str] | None = None,
    force: bool = False,
    annotation_wait_s: float = 120.0,
    mlflow: str | None = None,
) -> BackfillReport:
    """Send the scores under ``results`` (a `score` run over `Spans`) to where the spans are.

    Args:
        results: The results directory of a `score` run whose source was `Spans`.
        to: A trace file to append carrier spans to (``.jsonl``), or an OTLP/HTTP endpoint
            (``http://host:4318``, ``/v1/traces`` is appended when the URL has no path).
        phoenix: Phoenix's base URL (``http://127.0.0.1:6006``) for span annotations.
        headers: Request headers for ``to`` (a URL), ``phoenix`` and ``mlflow``, e.g. an API key
            (MLflow's credential variables, ``MLFLOW_TRACKING_TOKEN``..., are added for it).
        force: Send parts the ledger says were sent already.
        annotation_wait_s: How long an annotation (or assessment) waits for its span to be in
            Phoenix (or its trace in MLflow).
        mlflow: MLflow's tracking server URL (``http://127.0.0.1:5000``) for assessments.

    Raises:
        ValueError: none of ``to``, ``phoenix`` and ``mlflow``; ``results`` is a URL (the ledger
            is a local file); a part file cannot be read (`tracesim._inputs.InputError`, naming
            the file and the limit). A ledger line over the limits, like a torn one, costs a
            re-send of its part.
        FileNotFoundError: ``results`` holds no part files.
        tracesim.batch.SourceError: the results carry no ``trace_id``/``span_id`` (not from `Spans`).

    Example:
        >>> from tracesim import batch
        >>> batch.score(batch.Spans("traces.jsonl", name="answer"), evaluators=["rouge"],
        ...             output="scores/", engine="local")  # doctest: +SKIP
        >>> batch.backfill("scores/", phoenix="http://127.0.0.1:6006").annotations  # doctest: +SKIP
        1000
    """
    root = os.fspath(results)
    if to is None and phoenix is None and mlflow is None:
        raise ValueError(
            "backfill needs a destination: to= (a trace file or OTLP URL), phoenix= or mlflow= (a URL)"
        )
    if "://" in root:
        raise ValueError(f"backfill reads a local results directory (its ledger is a file there), got {root}")
    parts = sorted(glob.glob(os.path.join(glob.escape(root), "part-*.parquet")))
    parts += sorted(glob.glob(os.path.join(glob.escape(root), "part-*.jsonl")))
    if not parts:
        raise FileNotFoundError(f"{root} holds no results (part-*.parquet or part-*.jsonl files)")
    targets = _targets(to, phoenix, headers, annotation_wait_s)
    if mlflow is not None:
        targets.append(_assessments(mlflow, headers, annotation_wait_s))
    report = BackfillReport(root, destinations=[t.name for t in targets])
    # One entry per part and destination: {"destination", "part", "sha256", "at"}, synced at once.
    ledger = Ledger(os.path.join(root, LEDGER), field="destination", keys=("part", "sha256"), durable=True)
    try:
        for path in parts:
            digest = _digest(path)
            pending = [
                t for t in targets if force or not ledger.holds(t.name, os.path.basename(path), digest)
            ]
            if not pending:
                report.already_sent += 1
                continue
            report.parts += 1
            _send_part(path, digest, pending, ledger, report)
    finally:
        for target in targets:
            target.close()
    return report


# ---------------------------------------------------------------- one part


def _send_part(
    path: str, digest: str, targets: list[_Target], ledger: Ledger, report: BackfillReport
) -> None:
    from tracesim.batch._sources import SourceError

    frame = _read(path)
    if "trace_id" not in frame.columns or "span_id" not in frame.columns:
        raise SourceError(
            f"{path} has no trace_id/span_id columns: backfill sends the results of trace files "
            "(score a batch.Spans source, or tracesim eval --format traces)"
        )
    results = list(_results(frame, report))
    report.results_sent += len(results)
    for target in targets:
        try:
            target.send(results)
        except Exception as exc:  # a destination down or refusing: this part is sent again next time
            why = _outputs.text(f"{type(exc).__name__}: {exc}")  # an error may quote the URL
            report.failed_parts[f"{os.path.basename(path)} → {target.name}"] = why
            continue
        if target.kind == "carriers":
            report.carriers += len(results)
        elif target.kind == "assessments":
            report.assessments += len(results)
        else:
            report.annotations += len(results)
        ledger.write(target.name, [(os.path.basename(path), digest)], at=time.time())


def _results(frame: Any, report: BackfillReport) -> Iterator[Scored]:
    """Each scored (row, evaluator) as the scored span's context and an `EvalResult`."""
    from opentelemetry.trace import SpanContext, TraceFlags

    from tracesim.evaluators import EvalResult

    names = [column[: -len(".status")] for column in frame.columns if column.endswith(".status")]
    names = [name for name in names if all(f"{name}.{f}" in frame.columns for f in FIELDS)]
    for row in frame.to_dict("records"):
        bad = row.get("bad_row")
        trace_id, span_id = row.get("trace_id"), row.get("span_id")
        if not _blank(bad) or not isinstance(trace_id, str) or not isinstance(span_id, str):
            report.unscored += 1
            continue
        context = SpanContext(
            int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)
        )
        ended = row.get("span_end_ns")  # absent from results written before it was kept
        end_ns = None if _blank(ended) else int(ended)
        for name in names:
            status = row[f"{name}.status"]
            if status not in ("ok", "error"):
                report.unscored += 1  # skipped: no expected output to compare with
                continue
            score = row[f"{name}.score"]
            yield (
                context,
                EvalResult(
                    name=name,
                    score=None if _blank(score) else float(score),
                    passed=None if _blank(row[f"{name}.passed"]) else bool(row[f"{name}.passed"]),
                    label=_text(row[f"{name}.label"]),
                    explanation=_text(row[f"{name}.explanation"]),
                    status=status,
                    error=_text(row[f"{name}.error"]),
                    details={"source": "backfill"},
                ),
                end_ns,
            )


def configured_redaction() -> Redaction:
    """The redaction of the configuration in force, so a backfill sends what tracing would.

    The running configuration's (its ``redact`` hook and ``redact_patterns``) when
    `tracesim.configure` ran in this process; else the patterns of ``tracesim.yaml`` and the
    environment, as ``tracesim backfill`` finds them.
    """
    from tracesim import _runtime
    from tracesim._config import resolve_setting
    from tracesim._redact import Redactor
    from tracesim.exporters import Redaction

    runtime = _runtime.current  # not active(): a command line run is not "traced code before configure"
    if runtime is not None and runtime.redaction is not None:
        return runtime.redaction
    # Only what redaction needs: a bad value of another setting is no reason to stop a backfill.
    patterns = resolve_setting("redact_patterns")
    return Redaction(Redactor(patterns, None), resolve_setting("max_value_chars"))


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _text(value: Any) -> str | None:
    return None if _blank(value) else str(value)


def _read(path: str) -> Any:
    import pandas as pd  # type: ignore[import-untyped,unused-ignore]

    _inputs.check_size(path)
    try:
        if path.endswith(".parquet"):
            return pd.read_parquet(path)
        return pd.read_json(path, lines=True, dtype=False)
    except (ValueError, RecursionError) as exc:  # pandas' reader of a damaged or deep part
        raise _inputs.InputError(path, f"not a results part ({type(exc).__name__}: {exc})") from None


def _digest(path: str) -> str:
    hasher = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            hasher.update(block)
    return hasher.hexdigest()


# ---------------------------------------------------------------- destinations


class _Target:
    name: str
    kind: str

    def send(self, results: Sequence[Scored]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class _Carriers(_Target):
    """Carrier spans, made by the OpenTelemetry SDK and exported through tracesim's redaction."""

    kind = "carriers"

    def __init__(self, name: str, exporter: SpanExporter) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from tracesim._capture import make_options
        from tracesim.exporters import RedactingExporter

        self.name = name
        self._exporter = RedactingExporter(exporter, redaction=configured_redaction())
        self._ids = _PlannedIds()
        self._made = InMemorySpanExporter()  # the SDK's processor hands each carrier over as it ends
        self._provider = TracerProvider(
            resource=Resource.create({"service.name": "tracesim-backfill"}), id_generator=self._ids
        )
        self._provider.add_span_processor(SimpleSpanProcessor(self._made))
        self._tracer = self._provider.get_tracer("tracesim.backfill")
        self._capture = make_options(True, 32 * 1024)

    def send(self, results: Sequence[Scored]) -> None:
        from tracesim._scoring import emit_carrier

        for start in range(0, len(results), _EXPORT_CHUNK):
            for target, result, end_ns in results[start : start + _EXPORT_CHUNK]:
                self._ids.next = carrier_span_id(target, result.name)
                emit_carrier(
                    self._tracer,
                    target,
                    result,
                    self._capture,
                    {sc.EVALUATION_ANNOTATOR_KIND: "CODE"},
                    at_ns=end_ns,  # inside the scored span's time: the trace's latency stays its own
                )
            spans = list(self._made.get_finished_spans())
            self._made.clear()
            if self._exporter.export(spans) is not SpanExportResult.SUCCESS:
                raise ConnectionError(f"{self.name} did not accept {len(spans)} carrier spans")
        if not self._exporter.force_flush(int(_FLUSH_S * 1000)):
            raise TimeoutError(f"{self.name} did not flush within {_FLUSH_S:.0f} s")

    def close(self) -> None:
        self._provider.shutdown()
        self._exporter.shutdown()


class _SinkTarget(_Target):
    """A target that hands results to a scoring sink (Phoenix or MLflow) in chunks.

    Each chunk is flushed before the next is submitted, so a failure stops the run at a
    known place: what the backend took, refused or still waits for is in the error.
    """

    backend: str
    _sink: PhoenixSink | MlflowSink
    _wait_s: float

    def send(self, results: Sequence[Scored]) -> None:
        for start in range(0, len(results), _ANNOTATION_CHUNK):
            chunk = results[start : start + _ANNOTATION_CHUNK]
            before = self._sink.stats
            for target, result, _ in chunk:
                self._sink.submit(target, result, "CODE")
            flushed = self._sink.force_flush(self._wait_s + 60.0)
            after = self._sink.stats
            lost = (after.dropped - before.dropped) + (after.failed - before.failed)
            if not flushed or lost:
                raise ConnectionError(
                    f"{self.backend} took {after.sent - before.sent} of {len(chunk)} {self.kind} "
                    f"({lost} refused or given up, {after.pending} still pending)"
                )

    def close(self) -> None:
        self._sink.shutdown(10.0)


class _Annotations(_SinkTarget):
    backend = "Phoenix"
    kind = "annotations"

    def __init__(self, base_url: str, headers: Mapping[str, str] | None, wait_s: float) -> None:
        from tracesim._scoring import PhoenixSink

        self.name = _outputs.text(f"phoenix:{base_url.rstrip('/')}")
        self._sink = PhoenixSink(base_url, headers, configured_redaction(), max_wait_for_span_s=wait_s)
        self._wait_s = wait_s


class _Assessments(_SinkTarget):
    """MLflow assessments; those the trace holds already (same ``tracesim.result_id``) are not posted."""

    backend = "MLflow"
    kind = "assessments"

    def __init__(self, base_url: str, headers: Mapping[str, str] | None, wait_s: float) -> None:
        from tracesim.exporters._mlflow import MlflowSink, mlflow_headers

        self.name = _outputs.text(f"mlflow:{base_url.rstrip('/')}")
        self._sink = MlflowSink(
            base_url,
            {**(headers or {}), **mlflow_headers()},
            configured_redaction(),
            max_wait_for_span_s=wait_s,
            skip_existing=True,
        )
        self._wait_s = wait_s


def _assessments(url: str, headers: Mapping[str, str] | None, wait_s: float) -> _Target:
    if not url.startswith(("http://", "https://")):
        given = _outputs.text(repr(url))
        raise ValueError(
            f"mlflow= takes MLflow's tracking server URL, e.g. http://127.0.0.1:5000; got {given}"
        )
    return _Assessments(url, headers, wait_s)


def _targets(
    to: str | os.PathLike[str] | None, phoenix: str | None, headers: Mapping[str, str] | None, wait_s: float
) -> list[_Target]:
    targets: list[_Target] = []
    if to is not None:
        destination = os.fspath(to)
        if destination.startswith(("http://", "https://")):
            from tracesim.exporters import otlp_exporter

            exporter = otlp_exporter("http/protobuf", destination, headers, timeout_s=30.0)
            targets.append(_Carriers(_outputs.text(f"otlp:{destination}"), exporter))
        else:
            from tracesim.exporters import JsonlExporter

            path = os.path.abspath(destination)
            targets.append(_Carriers(_outputs.text(f"file:{path}"), JsonlExporter(path)))
    if phoenix is not None:
        if not phoenix.startswith(("http://", "https://")):
            given = _outputs.text(repr(phoenix))
            raise ValueError(f"phoenix= takes Phoenix's base URL, e.g. http://127.0.0.1:6006; got {given}")
        targets.append(_Annotations(phoenix, headers, wait_s))
    return targets


def carrier_span_id(target: SpanContext, evaluator: str) -> int:
    """The span id of the carrier of ``evaluator``'s result on ``target``: the same every run.

    Example:
        >>> from opentelemetry.trace import SpanContext
        >>> context = SpanContext(1, 2, is_remote=True)
        >>> carrier_span_id(context, "rouge") == carrier_span_id(context, "rouge")
        True
    """
    key = f"{target.trace_id:032x}/{target.span_id:016x}/{evaluator}".encode()
    value = int.from_bytes(hashlib.sha256(key).digest()[:8], "big")
    return value or 1  # 0 is the invalid span id


class _PlannedIds(IdGenerator):
    """An OpenTelemetry id generator whose next span id is set by the caller."""

    def __init__(self) -> None:
        self.next = 0
        self._random = RandomIdGenerator()

    def generate_span_id(self) -> int:
        planned, self.next = self.next, 0
        return planned or self._random.generate_span_id()

    def generate_trace_id(self) -> int:
        return self._random.generate_trace_id()  # never used: carriers join the scored span's trace
