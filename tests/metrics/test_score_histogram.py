"""The score histogram tracesim aggregates gives OpenTelemetry's explicit-bucket points exactly.

tracesim keeps the score histogram itself (`ScoreHistogram`, a microsecond a point instead of
``Histogram.record``'s several) and adds its points to each collection. These tests record the
same scores into the SDK's own histogram and compare every point, collection after collection,
in both temporalities; then over OTLP with the delta preference a real exporter puts on the wire.
"""

from __future__ import annotations

import logging
import math
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loopback_http import LoopbackHTTP, QuietHandler
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.sdk.metrics import Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader

import tracesim
from tracesim._metrics._scores import SCORE_BUCKETS, ScoreHistogram
from tracesim.evaluators import ExactMatch, Levenshtein

from .points import METRICS_FILE, last_points, results_by

LABELS = [("exact", "answer"), ("levenshtein", "answer"), ("exact", "search")]
# the bounds themselves, values between and above them: each bucket's edges are inclusive above
# (negative scores: OpenTelemetry's histograms refuse them, see the test below)
SCORES = st.one_of(
    st.sampled_from(SCORE_BUCKETS),
    st.floats(min_value=0.0, max_value=1.5, allow_nan=False),
)
ROUNDS = st.lists(
    st.lists(st.tuples(st.integers(0, len(LABELS) - 1), SCORES), max_size=30), min_size=1, max_size=5
)


def _sdk_points(reader: InMemoryMetricReader) -> dict[tuple[str, str], tuple[object, ...]]:
    data = reader.get_metrics_data()
    found: dict[tuple[str, str], tuple[object, ...]] = {}
    if data is None:
        return found
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    found[(point.attributes["e"], point.attributes["s"])] = _fields(point)
    return found


def _fields(point: object) -> tuple[object, ...]:
    return tuple(
        getattr(point, name) for name in ("count", "sum", "bucket_counts", "explicit_bounds", "min", "max")
    )


@settings(max_examples=60, deadline=None)
@given(rounds=ROUNDS)
def test_points_equal_the_sdk_histogram_in_both_temporalities(rounds: list[list[tuple[int, float]]]) -> None:
    readers = {
        kind: InMemoryMetricReader(preferred_temporality={Histogram: kind})
        for kind in (AggregationTemporality.CUMULATIVE, AggregationTemporality.DELTA)
    }
    provider = MeterProvider(metric_readers=list(readers.values()))
    sdk = provider.get_meter("t").create_histogram("s", explicit_bucket_boundaries_advisory=SCORE_BUCKETS)
    ours = ScoreHistogram(threading.Lock())
    ids = {
        AggregationTemporality.CUMULATIVE: ours.reader(delta=False),
        AggregationTemporality.DELTA: ours.reader(delta=True),
    }
    try:
        for scores in rounds:
            for index, score in scores:
                evaluator, span = LABELS[index]
                attributes = {"e": evaluator, "s": span}
                sdk.record(score, attributes)
                with ours._lock:
                    ours.add(LABELS[index], attributes, score)
            for kind, reader in readers.items():
                mine = {(p.attributes["e"], p.attributes["s"]): _fields(p) for p in ours.points(ids[kind])}
                assert mine == _sdk_points(reader), kind
    finally:
        provider.shutdown()


def test_a_delta_reader_gets_each_interval_once() -> None:
    ours = ScoreHistogram(threading.Lock())
    delta = ours.reader(delta=True)
    attributes = {"e": "exact"}
    with ours._lock:
        ours.add(("exact", "a"), attributes, 0.2)
        ours.add(("exact", "a"), attributes, 0.9)
    (first,) = ours.points(delta, now=100)
    assert (first.count, first.min, first.max, first.time_unix_nano) == (2, 0.2, 0.9, 100)
    assert ours.points(delta, now=200) == []  # nothing since
    with ours._lock:
        ours.add(("exact", "a"), attributes, 0.5)
    (second,) = ours.points(delta, now=300)
    assert (second.count, second.sum, second.min, second.max) == (1, 0.5, 0.5, 0.5)
    assert (second.start_time_unix_nano, second.time_unix_nano) == (200, 300)
    assert not math.isinf(second.min)


# ---------------------------------------------------------------- over OTLP, delta preferred


class _MetricsBackend:
    """Takes spans and metrics; keeps each metrics request parsed."""

    def __init__(self) -> None:
        self.requests: list[ExportMetricsServiceRequest] = []
        backend = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path == "/v1/metrics":
                    request = ExportMetricsServiceRequest()
                    request.ParseFromString(body)
                    backend.requests.append(request)
                self.reply(200, "application/x-protobuf")

        self._http = LoopbackHTTP(Handler)
        self.url = self._http.base

    def score_points(self) -> list[tuple[int, object]]:
        found = []
        for request in self.requests:
            for rm in request.resource_metrics:
                for sm in rm.scope_metrics:
                    for metric in sm.metrics:
                        if metric.name == "tracesim.evaluation.score":
                            found += [
                                (metric.histogram.aggregation_temporality, p)
                                for p in metric.histogram.data_points
                            ]
        return found

    def close(self) -> None:
        self._http.close()


@pytest.fixture
def metrics_backend() -> Iterator[_MetricsBackend]:
    server = _MetricsBackend()
    yield server
    server.close()


def test_otlp_with_delta_preferred_sends_each_score_once(
    metrics_backend: _MetricsBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
    tracesim.configure(exporters=["otlp"], otlp_endpoint=metrics_backend.url)

    @tracesim.trace(evaluators=[ExactMatch(), Levenshtein()], expected="ok")
    def answer(text: str) -> str:
        return text

    try:
        for text in ("ok", "no", "ok"):
            answer(text)
        assert tracesim.force_flush(10)
        answer("okay")
        assert tracesim.force_flush(10)
    finally:
        tracesim.shutdown()
    points = metrics_backend.score_points()
    assert {kind for kind, _ in points} == {1}  # AGGREGATION_TEMPORALITY_DELTA (CUMULATIVE is 2)
    counts: Counter[str] = Counter()
    for _, point in points:
        name = {a.key: a.value.string_value for a in point.attributes}["gen_ai.evaluation.name"]
        counts[name] += point.count
        assert point.count == sum(point.bucket_counts)
    assert counts == {"exact": 4, "levenshtein": 4}  # each score in one interval only


def test_a_negative_score_is_left_out_as_the_sdk_leaves_it_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    sdk = provider.get_meter("t").create_histogram("s", explicit_bucket_boundaries_advisory=SCORE_BUCKETS)
    ours = ScoreHistogram(threading.Lock())
    cumulative = ours.reader(delta=False)
    with caplog.at_level(logging.WARNING, logger="tracesim"):
        for score in (-0.25, 0.5, -1.0):
            sdk.record(score, {"e": "bert", "s": "a"})
            ours.add(("bert", "a"), {"e": "bert", "s": "a"}, score)
    (point,) = ours.points(cumulative)
    assert {("bert", "a"): _fields(point)} == _sdk_points(reader)
    assert ours.left_out == 2
    said = [r for r in caplog.records if r.name == "tracesim" and "negative score" in r.getMessage()]
    assert len(said) == 1
    assert "'bert'" in said[0].getMessage()
    provider.shutdown()


FORK_WHILE_COUNTING = """
import os, threading, time
from tracesim._metrics._counts import ResultCounts

counts = ResultCounts(scores=True)
reader = counts.scores.reader(delta=False)
counts.record("exact", "a", "passed", 0.25)
held, release = threading.Event(), threading.Event()

def hold():
    with counts._lock:  # a scoring thread counting when the host forks
        held.set()
        release.wait(10)

threading.Thread(target=hold, daemon=True).start()
held.wait(5)
pid = os.fork()
if pid == 0:
    counts.record("exact", "a", "passed", 0.75)
    (point,) = counts.scores.points(reader)
    os._exit(0 if point.count == 2 and counts.by_outcome()["passed"] == 2 else 3)
release.set()
for _ in range(400):  # 20 s
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print("child", os.waitstatus_to_exitcode(status))
        break
    time.sleep(0.05)
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    print("child hung")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")
def test_a_child_forked_while_a_thread_counts_can_count() -> None:
    # Before: the child inherited the counts' lock held by a thread it does not have, and its
    # first result (or a caller folding 4,096 queued counts) waited forever.
    done = subprocess.run(
        [sys.executable, "-c", FORK_WHILE_COUNTING], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["child", "0"]


def _hide_span_labels(text: str, attribute: str) -> str:
    """A hook keyed on the metric label: span names are not for the metrics backend."""
    return "[hidden]" if attribute == "tracesim.span.name" else text


def test_a_redact_hook_on_the_metric_label_hides_it_in_the_score_points_too() -> None:
    # The score points go through the same redaction pass as every other point (before: the
    # results counter's label was hidden and the score histogram's was not).
    tracesim.configure(redact=_hide_span_labels, scoring_mode="inline")
    with tracesim.span("checkout for acme", evaluators=[ExactMatch()], expected="ok") as span:
        span.set_output("ok")
    tracesim.shutdown()
    points = last_points()
    (score,) = points["tracesim.evaluation.score"]
    assert score["attrs"]["tracesim.span.name"] == "[hidden]"
    assert results_by(points, "tracesim.span.name") == {("[hidden]",): 1}
    assert "acme" not in METRICS_FILE.read_text()
