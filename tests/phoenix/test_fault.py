"""No span lost when Phoenix is down, comes up, goes down mid-run and comes back.

A real ``TracerProvider`` + ``BatchSpanProcessor(otlp_exporter(..., spool_dir=...))`` against a
real Phoenix that the test stops and starts (same ports, same database). Every span id that
was created must be in Phoenix exactly once at the end.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tracesim.exporters import SpoolingExporter, otlp_exporter

pytestmark = pytest.mark.slow


class Workload:
    """Makes two-span traces and remembers every span id it created."""

    def __init__(self, provider: TracerProvider) -> None:
        self._tracer = provider.get_tracer("tracesim.fault")
        self.span_ids: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def traces(self, count: int, tag: str) -> None:
        for i in range(count):
            with (
                self._tracer.start_as_current_span(f"{tag}-root", attributes={"i": i}) as root,
                self._tracer.start_as_current_span(f"{tag}-child") as child,
            ):
                ids = [child.get_span_context().span_id, root.get_span_context().span_id]
            with self._lock:
                self.span_ids.extend(format(x, "016x") for x in ids)

    def start_background(self, tag: str, *, max_traces: int = 10_000) -> None:
        def run() -> None:
            for _ in range(max_traces):
                self.traces(1, tag)
                if self._stop.wait(0.004):  # a steady request rate, not a wait for work
                    return

        self._thread = threading.Thread(target=run, name="workload", daemon=True)
        self._thread.start()

    def stop_background(self) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(30)

    @property
    def created(self) -> int:
        with self._lock:
            return len(self.span_ids)


def _wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)  # polling a server or the exporter's state, with a deadline


def _pipeline(
    phoenix: Any, project: str, protocol: str, spool: Path
) -> tuple[TracerProvider, SpoolingExporter]:
    endpoint = phoenix.grpc_endpoint if protocol == "grpc" else phoenix.http_endpoint
    exporter = otlp_exporter(protocol, endpoint, timeout_s=2.0, spool_dir=spool)
    assert isinstance(exporter, SpoolingExporter)
    provider = TracerProvider(
        resource=Resource.create({"service.name": "fault", "openinference.project.name": project})
    )
    provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=100))
    return provider, exporter


def _check_exactly_once(phoenix: Any, project: str, workload: Workload) -> dict[str, int]:
    spans = phoenix.spans(project, min_count=len(workload.span_ids), timeout_s=120)
    received = [s["context"]["span_id"] for s in spans]
    sent = set(workload.span_ids)
    assert len(sent) == len(workload.span_ids)
    assert len(received) == len(set(received)), "a span id appears twice in Phoenix"
    assert set(received) == sent, (
        f"missing {len(sent - set(received))}, unexpected {len(set(received) - sent)}"
    )
    return {"sent": len(sent), "received": len(received), "duplicates": len(received) - len(set(received))}


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_spans_made_while_phoenix_is_down_arrive_once_it_is_up(
    phoenix: Any, project: str, protocol: str, tmp_path: Path
) -> None:
    phoenix.stop()
    provider, exporter = _pipeline(phoenix, project, protocol, tmp_path / "spool")
    workload = Workload(provider)
    workload.traces(300, "down")
    provider.force_flush()
    _wait_for(lambda: exporter.stats.circuit_open, "the circuit to open")
    assert exporter.stats.dropped == 0

    phoenix.start()
    assert exporter.force_flush(60_000)
    provider.shutdown()
    figures = _check_exactly_once(phoenix, project, workload)
    stats = exporter.stats
    assert (stats.pending, stats.dropped, stats.rejected) == (0, 0, 0)
    assert stats.resent == stats.spooled == 600
    print(f"\n[{protocol}] down→up: {figures}, {stats}")


def test_phoenix_stopping_mid_run_and_coming_back_loses_nothing(
    phoenix: Any, project: str, tmp_path: Path
) -> None:
    provider, exporter = _pipeline(phoenix, project, "http/protobuf", tmp_path / "spool")
    workload = Workload(provider)
    workload.start_background("run")
    try:
        # Mid-run: Phoenix has some of the spans, more are being made all the time.
        _wait_for(lambda: len(phoenix.all_spans(project)) >= 200, "Phoenix to ingest the first spans")
        phoenix.stop()
        spooled_before = exporter.stats.spooled
        _wait_for(
            lambda: exporter.stats.circuit_open and exporter.stats.spooled >= spooled_before + 200,
            "the circuit to open and spans to be spooled while Phoenix is down",
        )
        phoenix.start()
        _wait_for(lambda: not exporter.stats.circuit_open, "the exporter to see Phoenix back")
    finally:
        workload.stop_background()
    provider.force_flush()
    assert exporter.force_flush(60_000)
    provider.shutdown()

    figures = _check_exactly_once(phoenix, project, workload)
    stats = exporter.stats
    assert (stats.pending, stats.dropped, stats.rejected) == (0, 0, 0)
    assert stats.resent == stats.spooled > 0
    # At-least-once on the wire: a batch in flight when Phoenix stopped may be sent again;
    # Phoenix keeps the first copy of a span id, so what it stores is exactly once.
    assert stats.delivered >= figures["sent"]
    print(f"\n[http] up→down→up mid-run: {figures}, {stats}, starts {phoenix.start_durations_s}")
