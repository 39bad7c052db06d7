"""SpoolingExporter at its limits: batches larger than the spool, disk errors, flush and shutdown
deadlines, against real OTLP/HTTP exporters, real loopback servers and real directories."""

from __future__ import annotations

import logging
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_sink import refused_url

from tracesim.exporters import SpoolingExporter, otlp_exporter
from tracesim.tracefile import load_spans

if TYPE_CHECKING:
    from otlp_sink import OtlpSink

Spans = Callable[..., list[ReadableSpan]]


class HangingBackend:
    """An HTTP endpoint on loopback that accepts every connection and never answers."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self._connections: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.getsockname()[1]}"

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:
                return
            self._connections.append(connection)  # the request stays unread and unanswered

    def close(self) -> None:
        self._server.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._server.close()
        self._thread.join()
        for connection in self._connections:
            connection.close()


@pytest.fixture
def hanging() -> Iterator[HangingBackend]:
    backend = HangingBackend()
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture
def spool_factory(tmp_path: Path) -> Iterator[Callable[..., SpoolingExporter]]:
    made: list[SpoolingExporter] = []

    def make(url: str, directory: Path | None = None, **kwargs: object) -> SpoolingExporter:
        kwargs.setdefault("initial_backoff_s", 60.0)  # no background retry unless a flush asks
        inner = OTLPSpanExporter(endpoint=url, timeout=1.0)
        exporter = SpoolingExporter(inner, directory or tmp_path / "spool", **kwargs)  # type: ignore[arg-type]
        made.append(exporter)
        return exporter

    yield make
    for exporter in made:
        exporter.shutdown(timeout_millis=5_000)


@pytest.fixture
def spans() -> Iterator[Spans]:
    """Finished root spans named ``<prefix>-<i>``, each carrying ``payload`` bytes of attribute."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "spool-limits"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests")

    def make(prefix: str, count: int, payload: int = 4000) -> list[ReadableSpan]:
        memory.clear()
        for i in range(count):
            with tracer.start_as_current_span(f"{prefix}-{i}", attributes={"input.value": "x" * payload}):
                pass
        return list(memory.get_finished_spans())

    yield make
    provider.shutdown()


def _spooled(directory: Path | str) -> list[Path]:
    return sorted(Path(directory).glob("*.jsonl"))


def _names(batches: list[list[ReadableSpan]]) -> list[str]:
    return [span.name for batch in batches for span in batch]


@pytest.mark.parametrize("max_in_memory", [0, 8], ids=["straight-to-disk", "from-memory"])
def test_the_spool_keeps_the_newest_data_up_to_its_bound(
    max_in_memory: int,
    spool_factory: Callable[..., SpoolingExporter],
    spans: Spans,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Each batch (~420 KB) is larger than the whole spool (200 KB): it must be split, not dropped.
    exporter = spool_factory(refused_url(), max_bytes=200_000, max_in_memory=max_in_memory)
    batches = [spans(prefix, 100) for prefix in ("a", "b", "c")]
    with caplog.at_level(logging.WARNING, logger="tracesim"):
        for batch in batches:
            exporter.export(batch)
        exporter.shutdown(timeout_millis=10_000)  # what still waits in memory goes to disk

    files = _spooled(exporter.directory)
    on_disk = sum(f.stat().st_size for f in files)
    assert 150_000 <= on_disk <= 200_000  # close to the bound, never over it
    kept = [s.name for s in load_spans(files)]
    sent = _names(batches)
    assert kept
    assert kept == sent[-len(kept) :]
    stats = exporter.stats
    assert (stats.pending, stats.dropped) == (len(kept), len(sent) - len(kept))
    assert len([r for r in caplog.records if "is full" in r.getMessage()]) == 1
    assert not [r for r in caplog.records if "larger than" in r.getMessage()]


def test_only_a_span_larger_than_the_whole_spool_is_dropped_and_logged_once(
    spool_factory: Callable[..., SpoolingExporter], spans: Spans, caplog: pytest.LogCaptureFixture
) -> None:
    exporter = spool_factory(refused_url(), max_bytes=60_000, max_in_memory=0)
    batches = [spans(f"s{i}", 2, payload=1000) + spans(f"huge{i}", 1, payload=80_000) for i in range(3)]
    with caplog.at_level(logging.WARNING, logger="tracesim"):
        results = [exporter.export(batch) for batch in batches]
    assert results == [SpanExportResult.FAILURE] * 3  # part of each batch is lost: said so
    assert [s.name for s in load_spans(_spooled(exporter.directory))] == [
        f"s{i}-{j}" for i in range(3) for j in range(2)
    ]
    assert (exporter.stats.dropped, exporter.stats.pending) == (3, 6)
    too_big = [r for r in caplog.records if "larger than the whole spool" in r.getMessage()]
    assert len(too_big) == 1  # once per exporter, not once per batch


def test_a_spool_that_cannot_be_written_logs_once_per_cause_and_again_after_recovery(
    spool_factory: Callable[..., SpoolingExporter], spans: Spans, caplog: pytest.LogCaptureFixture
) -> None:
    exporter = spool_factory(refused_url(), max_in_memory=0)
    directory = Path(exporter.directory)
    with caplog.at_level(logging.INFO, logger="tracesim"):
        shutil.rmtree(directory)  # e.g. a cleanup job removed it
        lost = [exporter.export(spans(f"lost{i}", 2, payload=100)) for i in range(4)]
        directory.mkdir()
        kept = exporter.export(spans("kept", 2, payload=100))
        shutil.rmtree(directory)
        lost_again = exporter.export(spans("again", 2, payload=100))
    assert lost == [SpanExportResult.FAILURE] * 4
    assert lost_again is SpanExportResult.FAILURE
    assert kept is SpanExportResult.SUCCESS
    errors = [r for r in caplog.records if "cannot write to spool" in r.getMessage()]
    assert len(errors) == 2  # once for the first outage, once for the second
    assert all(r.exc_info is None for r in errors)  # a line each, no traceback
    assert len([r for r in caplog.records if "works again" in r.getMessage()]) == 1
    assert exporter.stats.dropped == 10


def test_force_flush_prompts_one_attempt_even_with_the_circuit_open(
    sink: OtlpSink, spool_factory: Callable[..., SpoolingExporter], spans: Spans
) -> None:
    sink.status = 503
    exporter = spool_factory(sink.url)
    batch = spans("a", 3, payload=100)
    exporter.export(batch)
    deadline = time.monotonic() + 30
    while not exporter.stats.circuit_open:  # one failed attempt; the next is 60 s away
        assert time.monotonic() < deadline, "the first attempt never failed"
        time.sleep(0.01)  # polling the exporter's own state with a deadline

    # With the backend still down, a flush with a long deadline returns after its attempt.
    results: list[bool] = []
    done = threading.Event()

    def flush() -> None:
        results.append(exporter.force_flush(600_000))
        done.set()

    threading.Thread(target=flush, daemon=True).start()
    assert done.wait(60), "force_flush waited for its whole deadline with the backend down"
    assert results == [False]

    sink.status = 200  # back: a flush delivers now, not after the 60 s backoff
    assert exporter.force_flush(60_000)
    assert sink.delivered_names == ["a-0", "a-1", "a-2"]
    assert not exporter.stats.circuit_open


@pytest.mark.parametrize("deadline_from", ["owner", "argument"])
def test_shutdown_keeps_its_deadline_with_a_hanging_backend_and_loses_nothing(
    deadline_from: str, hanging: HangingBackend, spans: Spans, tmp_path: Path
) -> None:
    directory = tmp_path / "spool"
    exporter = otlp_exporter(endpoint=hanging.url, spool_dir=directory)  # official exporter, 10 s time-out
    assert isinstance(exporter, SpoolingExporter)
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(exporter, max_export_batch_size=100))
    tracer = provider.get_tracer("tests")
    for i in range(1000):
        with tracer.start_as_current_span(f"s{i}"):
            pass
    provider.force_flush()  # every batch now waits in the spool; the first one is being sent

    started = time.monotonic()
    if deadline_from == "owner":  # as tracesim.shutdown() does; the processor passes its own 30 s
        exporter.set_shutdown_deadline(started + 2.0)
        provider.shutdown()
    else:
        exporter.shutdown(timeout_millis=2_000)
        provider.shutdown()
    elapsed = time.monotonic() - started
    assert elapsed < 6.0  # a 2 s deadline, with a 3x margin for a loaded machine

    # Every span, the batch that was being sent included, is on disk for the next run.
    later = SpoolingExporter(OTLPSpanExporter(endpoint=refused_url(), timeout=1.0), directory)
    try:
        assert later.stats.pending == 1000
        assert sorted(s.name for s in load_spans(_spooled(directory))) == sorted(f"s{i}" for i in range(1000))
    finally:
        later.shutdown(timeout_millis=5_000)


def test_a_flush_that_times_out_leaves_what_it_could_not_deliver_on_disk(
    hanging: HangingBackend, spans: Spans, tmp_path: Path
) -> None:
    exporter = SpoolingExporter(OTLPSpanExporter(endpoint=f"{hanging.url}/v1/traces", timeout=30), tmp_path)
    try:
        exporter.export(spans("a", 2, payload=100))  # being sent: the backend never answers
        exporter.export(spans("b", 2, payload=100))  # waiting in memory behind it
        assert exporter.force_flush(500) is False
        # A script may exit right after the flush: both batches are on disk already.
        assert [s.name for s in load_spans(_spooled(tmp_path))] == ["a-0", "a-1", "b-0", "b-1"]
    finally:
        exporter.shutdown(timeout_millis=1_000)
