"""A file of 100,000 spans is summarised in one pass; numbers stay right at that size."""

from __future__ import annotations

import random
import time
from pathlib import Path

import numpy as np
import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import set_span_in_context

from tracesim import _semconv as sc
from tracesim._report import read_report
from tracesim.exporters import JsonlExporter

from .tracefiles import T0_NS, result

TRACES = 25_000  # four spans each
CHILDREN = (("retrieve", "RETRIEVER"), ("llm", "LLM"), ("search", "TOOL"))


def _write_big_file(path: Path) -> tuple[list[float], int]:
    """Write the file; return the root spans' durations and how many passed."""
    rng = random.Random(7)
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "load"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.report.scale")
    durations, passed = [], 0
    for i in range(TRACES):
        start = T0_NS + i * 10**9
        root = tracer.start_span(
            "answer", start_time=start, attributes={sc.SPAN_KIND: "AGENT", "user.id": f"u{i % 50}"}
        )
        for name, kind in CHILDREN:
            child = tracer.start_span(name, context=set_span_in_context(root), start_time=start,
                                      attributes={sc.SPAN_KIND: kind})  # fmt: skip
            child.end(end_time=start + 1 + int(rng.lognormvariate(-3, 1) * 1e9))
        score = rng.random()
        passed += score >= 0.8
        root.add_event(sc.EVALUATION_EVENT, result("levenshtein", score, passed=score >= 0.8, threshold=0.8))
        end = start + 1 + int(rng.lognormvariate(0, 0.5) * 1e9)
        durations.append((end - start) / 1e9)
        root.end(end_time=end)
    exporter = JsonlExporter(path, max_bytes=1 << 40)
    spans = memory.get_finished_spans()
    for k in range(0, len(spans), 512):
        exporter.export(spans[k : k + 512])
    exporter.shutdown()
    provider.shutdown()
    return durations, passed


@pytest.mark.slow
def test_hundred_thousand_spans(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "big.jsonl"
    durations, passed = _write_big_file(path)

    began = time.perf_counter()
    report = read_report([path], group_by="user.id")
    elapsed = time.perf_counter() - began
    with capsys.disabled():
        print(
            f"\nreport of {report.totals.spans:,} spans ({path.stat().st_size / 1e6:.0f} MB): {elapsed:.2f} s"
        )

    assert report.totals.spans == 4 * TRACES
    assert report.totals.traces == TRACES
    assert len(report.spans) == 50 * 4  # the children take user.id from their answer span
    lev = report.evaluator("levenshtein")
    assert lev is not None
    assert (lev.results, lev.passed, lev.pass_rate) == (TRACES, passed, passed / TRACES)
    # one trace a second for almost seven hours: 15 buckets of 30 min (15 min would be 29)
    timeline = report.timeline
    assert timeline is not None
    assert (timeline.bucket_s, len(timeline.starts), timeline.entry_span) == (1800, 15, "answer")
    assert [sum(s.count) for s in timeline.spans] == [TRACES] * 4
    assert sum(timeline.evaluators[0].passed) == passed
    overall = read_report([path]).spans[0]
    assert overall.name == "answer"
    for q, value in ((50, overall.latency_s.p50), (95, overall.latency_s.p95), (99, overall.latency_s.p99)):
        assert value == pytest.approx(float(np.percentile(durations, q)), rel=1e-9)
