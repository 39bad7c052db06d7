"""The evaluation results of replayed trace files, as Phoenix span annotations or MLflow assessments.

Phoenix and MLflow show scores where their users look (Phoenix's annotation columns and evals
views, MLflow's assessments panel) only when they arrive through their own APIs; a replayed
span's ``gen_ai.evaluation.result`` events stay attributes there. For each line the endpoint
accepted, every result event becomes an annotation (status ``ok``) or an assessment (``ok``
and ``error``) of the span it evaluates: the span that holds the event, or for a carrier span
(``EVALUATOR`` with one link) the linked span. Phoenix's annotations upsert on (name, span,
identifier ``tracesim``), so a replay run twice annotates once; MLflow keeps every copy, so
its assessments carry a ``tracesim.result_id`` and one already on the trace is not posted again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import SpanContext, TraceFlags

from tracesim import _semconv as sc
from tracesim.batch._ledger import ReplayLedger
from tracesim.tracefile import SpanRecord, spans_from_request

if TYPE_CHECKING:
    from tracesim._scoring._sinks import ResultSink

__all__ = ["ReplayAnnotations", "ReplayAssessments", "results_in"]

_logger = logging.getLogger("tracesim")


def results_in(request: Mapping[str, Any]) -> Iterator[tuple[SpanContext, Any, str, Any]]:
    """Each evaluation result of an OTLP/JSON request: the span it evaluates, the result, who made
    it, and the expected output recorded beside it (None when the span holds none)."""
    from pydantic import ValidationError

    for span in spans_from_request(request):
        target = _target_of(span)
        if target is None:
            continue
        carried = span.attributes.get(sc.EVALUATION_ANNOTATOR_KIND)  # score()'s and backfill's carriers
        expected = span.attributes.get(sc.EXPECTED_VALUE)
        for event in span.events:
            if event.name != sc.EVALUATION_EVENT:
                continue
            try:
                result = _result(event.attributes)
            except (ValidationError, TypeError, ValueError):
                continue  # a hand-edited or foreign event: it stays on the span as it is
            # Who made it, as the online sinks were told: on the event (written since the
            # scoring pipeline records it), else on a carrier span; a file older than both, CODE.
            annotator = event.attributes.get(sc.EVALUATION_ANNOTATOR_KIND, carried)
            yield target, result, annotator if isinstance(annotator, str) else "CODE", expected


def _target_of(span: SpanRecord) -> SpanContext | None:
    span_id = span.span_id
    if span.attributes.get(sc.SPAN_KIND) == "EVALUATOR" and len(span.links) == 1:
        span_id = span.links[0].span_id  # a carrier: the result is about the linked span
    try:
        trace_id, span_id_int = int(span.trace_id, 16), int(span_id, 16)
    except (TypeError, ValueError):
        return None
    return SpanContext(trace_id, span_id_int, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def _result(attributes: Mapping[str, Any]) -> Any:
    from tracesim.evaluators import EvalResult

    details = attributes.get(sc.EVALUATION_DETAILS)
    if isinstance(details, str):
        try:
            details = json.loads(details)
        except ValueError:
            details = {"text": details}
    return EvalResult(
        name=attributes[sc.EVALUATION_NAME],
        score=attributes.get(sc.EVALUATION_SCORE_VALUE),
        label=attributes.get(sc.EVALUATION_SCORE_LABEL),
        passed=attributes.get(sc.EVALUATION_PASSED),
        threshold=attributes.get(sc.EVALUATION_THRESHOLD),
        explanation=attributes.get(sc.EVALUATION_EXPLANATION),
        details=details if isinstance(details, dict) else {},
        status=attributes.get(sc.EVALUATION_STATUS, "ok"),
    )


class _ReplayResults:
    """Sends, through a result sink, the results of the lines a replay delivered.

    A line's results are recorded in the replay's ledger (under the sink's own key) only once
    all of the run's results were taken, so a run whose results failed leaves them to the next
    run, even for lines whose spans were delivered; lines delivered before this existed are
    sent by the next run too.
    """

    key: str
    _sink: ResultSink
    _wait_s: float

    def _setup(self, key: str, wait_s: float) -> None:
        self.key = key
        self._wait_s = wait_s
        self._ledgers: dict[Path, ReplayLedger] = {}
        self._done: dict[Path, list[str]] = {}

    def _found(self) -> bool | None:
        """Whether the endpoint is the backend: None while not known."""
        raise NotImplementedError

    def open_ledger(self, family: Path, *, force: bool) -> None:
        """Read which lines of the file family ``family`` had their results sent before."""
        if family not in self._ledgers:
            self._ledgers[family] = ReplayLedger(family, self.key, force=force)
            self._done[family] = []

    def add(self, family: Path, key: str, raw: bytes, request: Mapping[str, Any]) -> None:
        """Queue the results of one line whose spans the endpoint has (unless done before)."""
        ledger = self._ledgers[family]
        if self._found() is False or ledger.has(key, raw):
            return
        for target, result, annotator, expected in results_in(request):
            self._sink.submit(target, result, annotator, expected=expected)
        self._done[family].append(key)

    def _record(self, found: bool | None, failed: int) -> None:
        for family, ledger in self._ledgers.items():
            if found and not failed:
                ledger.record(self._done[family])
            ledger.close()


class ReplayAnnotations(_ReplayResults):
    """Annotates, in Phoenix, the results of the lines a replay delivered.

    A line's annotations are recorded in the replay's ledger (under their own key,
    ``phoenix-annotations:<base URL>``) only once all of the run's annotations were taken, so
    a run whose annotations failed leaves them to the next run, even for lines whose spans
    were delivered; lines delivered before this existed are annotated by the next run too.

    Args:
        base_url: Phoenix's base URL.
        headers: Request headers (the replay's: an API key reaches both APIs).
        detect: Ask first whether ``base_url`` is Phoenix (the replay's endpoint may be any
            collector); when it is not, nothing is sent, recorded or counted.
        wait_s: How long the end of the run waits for Phoenix to take the annotations
            (spans are ingested a little after they were accepted).
    """

    def __init__(
        self, base_url: str, headers: Mapping[str, str], *, detect: bool, wait_s: float = 30.0
    ) -> None:
        from tracesim._scoring import PhoenixSink
        from tracesim.exporters import Redaction

        self._setup(f"phoenix-annotations:{base_url}", wait_s)
        # The files were redacted when written; the pass again costs little and covers files
        # written with patterns since widened.
        self._phoenix = PhoenixSink(base_url, headers, Redaction(), max_wait_for_span_s=wait_s, detect=detect)
        self._sink = self._phoenix

    def _found(self) -> bool | None:
        return self._phoenix.is_phoenix

    def finish(self) -> tuple[int, int, bool | None]:
        """Wait for delivery; (sent, not delivered, whether the endpoint is Phoenix)."""
        self._phoenix.shutdown(self._wait_s)
        stats, is_phoenix = self._phoenix.stats, self._phoenix.is_phoenix
        # An annotation Phoenix cannot hold (a NaN score) is not worth another try; the rest is.
        failed = stats.failed + stats.pending + stats.dropped - stats.invalid if is_phoenix else 0
        self._record(is_phoenix, failed)
        return stats.sent, failed, is_phoenix


class ReplayAssessments(_ReplayResults):
    """Posts, to MLflow, the results of the lines a replay delivered, as assessments.

    Recorded in the replay's ledger under ``mlflow-assessments:<base URL>`` as Phoenix's
    annotations are under theirs. MLflow never deduplicates assessments: each carries a
    ``tracesim.result_id``, and before posting to a trace the sender reads the ids already
    there, so a forced replay, or one after a run that stopped half-way, adds nothing twice.

    Args:
        base_url: MLflow's base URL.
        headers: Request headers (the replay's: credentials reach both APIs).
        detect: Ask first whether ``base_url`` is MLflow; when it is not, nothing is sent,
            recorded or counted.
        wait_s: How long the end of the run waits for MLflow to take the assessments.
    """

    def __init__(
        self, base_url: str, headers: Mapping[str, str], *, detect: bool, wait_s: float = 30.0
    ) -> None:
        from tracesim.exporters import Redaction
        from tracesim.exporters._mlflow import MlflowSink

        self._setup(f"mlflow-assessments:{base_url}", wait_s)
        # Redacted when written; the pass again covers files written with patterns since widened.
        self._mlflow = MlflowSink(
            base_url, headers, Redaction(), max_wait_for_span_s=wait_s, detect=detect, skip_existing=True
        )
        self._sink = self._mlflow

    def _found(self) -> bool | None:
        return self._mlflow.is_mlflow

    def finish(self) -> tuple[int, int, int, bool | None]:
        """Wait for delivery; (sent, already there, not delivered, whether the endpoint is MLflow)."""
        self._mlflow.shutdown(self._wait_s)
        stats, is_mlflow = self._mlflow.stats, self._mlflow.is_mlflow
        failed = stats.failed + stats.pending + stats.dropped if is_mlflow else 0
        self._record(is_mlflow, failed)
        return stats.sent, stats.already_there, failed, is_mlflow
