"""SpoolingExporter against a real OTLP/HTTP exporter and a scripted loopback endpoint."""

from __future__ import annotations

import json
import logging
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult
from otlp_sink import refused_url

from tracesim._errors import ConfigError
from tracesim.exporters import SpoolingExporter, otlp_exporter
from tracesim.tracefile import load_spans

if TYPE_CHECKING:
    from otlp_sink import OtlpSink

Batch = Callable[..., list[ReadableSpan]]


@pytest.fixture
def spool_factory(tmp_path: Path) -> Iterator[Callable[..., SpoolingExporter]]:
    made: list[SpoolingExporter] = []

    def make(url: str, directory: Path | None = None, **kwargs: object) -> SpoolingExporter:
        inner = OTLPSpanExporter(endpoint=url, timeout=1.0)
        kwargs.setdefault("initial_backoff_s", 0.05)
        kwargs.setdefault("max_backoff_s", 0.2)
        exporter = SpoolingExporter(inner, directory or tmp_path / "spool", **kwargs)  # type: ignore[arg-type]
        made.append(exporter)
        return exporter

    yield make
    for exporter in made:
        exporter.shutdown()


def _wait_for(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)  # polling the exporter's own state with a deadline


def _names(batches: list[list[ReadableSpan]]) -> list[str]:
    return [span.name for batch in batches for span in batch]


def _spool_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.jsonl"))


def test_down_then_up_resends_in_order_and_export_never_touches_the_network(
    sink: OtlpSink, make_batch: Batch, spool_factory: Callable[..., SpoolingExporter]
) -> None:
    sink.status = 503
    # A long backoff keeps the background probe out of the way until force_flush asks for it.
    exporter = spool_factory(sink.url, initial_backoff_s=60.0)
    batches = [make_batch(f"b{i}") for i in range(5)]

    assert exporter.export(batches[0]) is SpanExportResult.SUCCESS
    # One attempt (the inner exporter gives up after its 1 s time-out), then the circuit opens
    # and the batch goes to disk.
    _wait_for(lambda: exporter.stats.circuit_open and exporter.stats.spooled == 3)
    attempts = len(sink.content_types)
    for batch in batches[1:]:
        assert exporter.export(batch) is SpanExportResult.SUCCESS
    assert len(sink.content_types) == attempts  # straight to disk
    stats = exporter.stats
    assert (stats.spooled, stats.pending, stats.resent) == (15, 15, 0)
    assert len(_spool_files(Path(exporter.directory))) == 5

    sink.status = 200
    assert exporter.force_flush(10_000)
    assert sink.delivered_names == _names(batches)
    stats = exporter.stats
    assert (stats.delivered, stats.resent, stats.pending, stats.dropped) == (15, 15, 0, 0)
    assert not stats.circuit_open
    assert _spool_files(Path(exporter.directory)) == []
    # Back to sending from memory once the spool is empty.
    exporter.export(make_batch("after"))
    assert exporter.force_flush(5_000)
    assert sink.requests[-1] == ["after-0", "after-1", "after-2"]
    assert (exporter.stats.spooled, exporter.stats.delivered) == (15, 18)


def test_429_and_503_answers_end_in_exactly_one_delivery(
    sink: OtlpSink, make_batch: Batch, spool_factory: Callable[..., SpoolingExporter]
) -> None:
    sink.script = [429, 503, 429, 503]
    exporter = spool_factory(sink.url)
    batches = [make_batch(f"c{i}") for i in range(4)]
    for batch in batches:
        exporter.export(batch)
    # A flush returns False once an attempt it prompted finds the backend down (an attempt
    # takes one or two answers, as the inner exporter may retry once within its time-out, and
    # the empty health probe one more); the caller flushes again.
    flushes = [exporter.force_flush(20_000)]
    while not flushes[-1] and len(flushes) < 4:
        flushes.append(exporter.force_flush(20_000))
    assert flushes[-1] is True
    sent = {format(s.context.span_id, "016x") for batch in batches for s in batch}
    assert sorted(sink.span_ids) == sorted(sent)  # every span once, none twice
    assert sink.delivered_names == _names(batches)


def test_spool_is_bounded_and_drops_oldest_with_a_count(
    sink: OtlpSink,
    make_batch: Batch,
    spool_factory: Callable[..., SpoolingExporter],
    caplog: pytest.LogCaptureFixture,
) -> None:
    batches = [make_batch(f"d{i}") for i in range(7)]
    sizes = [len(json.dumps(encode_spans(b).to_dict(), separators=(",", ":"))) + 1 for b in batches]
    sink.status = 503
    # Room for three batches; nothing waits in memory, so every batch goes to disk at once.
    exporter = spool_factory(
        sink.url, max_bytes=3 * max(sizes) + min(sizes) // 2, max_in_memory=0, initial_backoff_s=60.0
    )

    with caplog.at_level(logging.WARNING, logger="tracesim"):
        exporter.export(batches[0])
        _wait_for(lambda: exporter.stats.circuit_open)  # one failed attempt; the next is 60 s away
        for batch in batches[1:]:
            assert exporter.export(batch) is SpanExportResult.SUCCESS
        stats = exporter.stats
        assert (stats.spooled, stats.dropped, stats.pending) == (21, 12, 9)
        assert len(_spool_files(Path(exporter.directory))) == 3
        sink.status = 200
        assert exporter.force_flush(10_000)

    assert sink.delivered_names == _names(batches[4:])  # the newest three, in order
    full = [r for r in caplog.records if "is full" in r.getMessage()]
    assert len(full) == 1  # once per burst, not once per dropped batch
    assert any("12 spans were deleted" in r.getMessage() for r in caplog.records)


def test_files_left_by_an_earlier_process_are_sent_by_the_next(
    sink: OtlpSink, make_batch: Batch, spool_factory: Callable[..., SpoolingExporter], tmp_path: Path
) -> None:
    directory = tmp_path / "shared-spool"
    first = spool_factory(refused_url(), directory)
    batches = [make_batch(f"e{i}") for i in range(3)]
    for batch in batches:
        first.export(batch)
    first.shutdown()
    files = _spool_files(directory)
    assert len(files) == 3
    # Spool files are ordinary trace files.
    assert [s.name for s in load_spans(files)] == _names(batches)

    second = spool_factory(sink.url, directory)
    assert second.stats.pending == 9
    assert second.force_flush(10_000)
    assert sink.delivered_names == _names(batches)
    assert second.stats.resent == 9
    assert _spool_files(directory) == []


def test_a_batch_the_backend_refuses_while_healthy_is_rejected_not_blocking(
    sink: OtlpSink, make_batch: Batch, spool_factory: Callable[..., SpoolingExporter]
) -> None:
    sink.reject = lambda names: 400 if names[0].startswith("poison") else None
    exporter = spool_factory(sink.url, max_rejections=2)
    exporter.export(make_batch("poison"))
    exporter.export(make_batch("good"))
    assert exporter.force_flush(10_000)
    assert sink.delivered_names == ["good-0", "good-1", "good-2"]
    assert (exporter.stats.rejected, exporter.stats.pending) == (3, 0)


def test_export_returns_at_once_while_the_backend_hangs(
    make_batch: Batch, spool_factory: Callable[..., SpoolingExporter]
) -> None:
    # A listening socket that never accepts: connections succeed, answers never come, so the
    # inner exporter waits for its whole time-out. export() must not.
    with socket.socket() as hanging:
        hanging.bind(("127.0.0.1", 0))
        hanging.listen(64)
        url = f"http://127.0.0.1:{hanging.getsockname()[1]}/v1/traces"
        exporter = spool_factory(url)
        durations = []
        for i in range(20):
            batch = make_batch(f"h{i}")
            started = time.perf_counter()
            assert exporter.export(batch) is SpanExportResult.SUCCESS
            durations.append(time.perf_counter() - started)
        assert max(durations) < 0.5  # the inner time-out is 1 s per attempt
        exporter.shutdown()
    assert (exporter.stats.pending, exporter.stats.dropped) == (60, 0)
    assert len(load_spans(_spool_files(Path(exporter.directory)))) == 60


def test_batch_processor_in_front_loses_nothing_while_the_backend_is_down(
    spool_factory: Callable[..., SpoolingExporter], caplog: pytest.LogCaptureFixture
) -> None:
    exporter = spool_factory(refused_url(), max_bytes=64 * 1024 * 1024)
    provider = TracerProvider(resource=Resource.create({"service.name": "bsp"}))
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_export_batch_size=256, schedule_delay_millis=50)
    )
    tracer = provider.get_tracer("tests")
    with caplog.at_level(logging.WARNING):
        for i in range(1500):
            with tracer.start_as_current_span(f"s{i}"):
                pass
        provider.force_flush(30_000)
    assert not [r for r in caplog.records if "dropping" in r.getMessage().lower()]
    assert (exporter.stats.pending, exporter.stats.dropped) == (1500, 0)
    provider.shutdown()  # writes what still waited in memory to disk
    assert exporter.stats.spooled == 1500
    assert len(load_spans(_spool_files(Path(exporter.directory)))) == 1500


def test_shutdown_keeps_unsent_batches_and_later_exports_fail(
    make_batch: Batch, spool_factory: Callable[..., SpoolingExporter]
) -> None:
    exporter = spool_factory(refused_url())
    exporter.export(make_batch("f"))
    exporter.shutdown()
    assert exporter.export(make_batch("g")) is SpanExportResult.FAILURE
    assert exporter.stats.pending == 3
    files = _spool_files(Path(exporter.directory))
    assert [s.name for s in load_spans(files)] == ["f-0", "f-1", "f-2"]


def test_a_damaged_spool_file_is_deleted_and_the_rest_sent(
    sink: OtlpSink, make_batch: Batch, spool_factory: Callable[..., SpoolingExporter], tmp_path: Path
) -> None:
    directory = tmp_path / "spool"
    first = spool_factory(refused_url(), directory)
    first.export(make_batch("h"))
    first.shutdown()
    damaged = directory / "00000000000000000001-1-000001-2.jsonl"  # sorts first
    damaged.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "no ids"}]}]}]}\n')
    second = spool_factory(sink.url, directory)
    assert second.force_flush(10_000)
    assert sink.delivered_names == ["h-0", "h-1", "h-2"]
    assert (second.stats.rejected, second.stats.resent) == (2, 3)
    assert not damaged.exists()


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_otlp_exporter_wraps_in_a_spool_when_asked(protocol: str, tmp_path: Path) -> None:
    exporter = otlp_exporter(
        protocol, "http://127.0.0.1:4318", spool_dir=tmp_path / "s", spool_max_bytes=1000
    )
    try:
        assert isinstance(exporter, SpoolingExporter)
        assert exporter.max_bytes == 1000
        assert isinstance(exporter.inner, GrpcExporter if protocol == "grpc" else OTLPSpanExporter)
    finally:
        exporter.shutdown()


def test_bad_spool_settings_fail_at_construction(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="spool_dir"):
        otlp_exporter(endpoint="http://127.0.0.1:4318", spool_dir=blocker / "spool")
    with pytest.raises(ConfigError, match="spool_max_bytes"):
        otlp_exporter(endpoint="http://127.0.0.1:4318", spool_dir=tmp_path, spool_max_bytes=0)
