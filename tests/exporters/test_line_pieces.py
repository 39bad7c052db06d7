"""A batch's trace-file line is built and written in pieces, never copied whole: the pieces join
into the official encoder's line wherever they are cut, each is bounded, the encoder offers the
interpreter between spans, and a line of pieces cut short by a real file size limit is cut back
whole and written once later."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from _disk import SPANS_SETUP_HEAD, run_with_file_size_limit
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracesim import _host_first
from tracesim.exporters import _otlp_json_encode
from tracesim.exporters._otlp_json_encode import PIECE_CHARS, encode_json_pieces, official_line
from tracesim.tracefile import load_spans


class _Clock:
    """A clock that moves ``step`` seconds per read."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.fixture
def big_spans() -> Iterator[list[ReadableSpan]]:
    """60 finished spans of ~6 KB each, from two resources and two scopes."""
    memory = InMemorySpanExporter()
    made: list[TracerProvider] = []
    for service in ("a", "b"):
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(memory))
        made.append(provider)
    for i in range(60):
        provider = made[i % 2]
        tracer = provider.get_tracer("lib" if i % 3 else "other", "1.0")
        with tracer.start_as_current_span(f"call-{i}", attributes={"payload": f"{i} " + "x" * 6000}):
            pass
    yield list(memory.get_finished_spans())
    for provider in made:
        provider.shutdown()


def test_a_large_batch_is_encoded_in_bounded_pieces_that_join_into_the_official_line(
    big_spans: list[ReadableSpan],
) -> None:
    pieces = encode_json_pieces(big_spans)
    assert b"".join(pieces) == official_line(big_spans)
    assert len(pieces) >= 5
    longest_span = max(len(_otlp_json_encode._span(span)) for span in big_spans)
    assert all(len(piece) < PIECE_CHARS + longest_span + 200 for piece in pieces)
    assert all(piece for piece in pieces)
    assert pieces[-1].endswith(b"\n")


@pytest.mark.parametrize("piece_chars", [1, 97, 4096])
def test_piece_boundaries_anywhere_give_the_same_line(
    big_spans: list[ReadableSpan], piece_chars: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_otlp_json_encode, "PIECE_CHARS", piece_chars)
    for batch in (big_spans, big_spans[:1], big_spans[7:19]):
        pieces = encode_json_pieces(batch)
        assert b"".join(pieces) == official_line(batch)
        if piece_chars == 1:
            assert len(pieces) > len(batch)  # a piece after every part


def test_the_encoder_offers_the_interpreter_between_spans(
    big_spans: list[ReadableSpan], monkeypatch: pytest.MonkeyPatch
) -> None:
    offers: list[float] = []
    monkeypatch.setattr(_host_first, "_clock", _Clock(_host_first.SLICE_S))  # every read: due
    monkeypatch.setattr(_host_first, "_offer", offers.append)
    encode_json_pieces(big_spans)
    assert len(offers) == len(big_spans)


_PIECES_SETUP = (
    SPANS_SETUP_HEAD
    + """
def batch(name):
    # eight spans of 20 KB: a line of several pieces, named after the batch
    memory.clear()
    for k in range(8):
        with tracer.start_as_current_span(f"{name}/{k}" if k else name, attributes={"payload": "x" * 20000}):
            pass
    return memory.get_finished_spans()

pieces = pieces_or_fallback(batch("full-00"))
assert len(pieces) >= 3, len(pieces)
line_bytes = sum(map(len, pieces))
"""
)


def test_a_line_of_pieces_cut_short_by_the_disk_is_cut_back_whole_and_written_once_later(
    tmp_path: Path,
) -> None:
    # RLIMIT_FSIZE cuts the third line mid-way, in one of its later pieces: the pieces already
    # written must go, the line waits in memory, and it is written whole once space returns.
    result, stderr = run_with_file_size_limit(tmp_path, _PIECES_SETUP)
    assert result["flushed"] is True
    lines = (tmp_path / "traces.jsonl").read_bytes().splitlines()
    for line in lines:
        json.loads(line)  # no torn or glued line
    names = [span.name for span in load_spans(tmp_path / "traces.jsonl")]
    batches = [name for name in names if "/" not in name]
    assert len(batches) == len(set(batches)), "a line was written twice"
    assert set(result["written"]) <= set(batches), "a line reported written is lost"
    assert set(batches) == set(result["written"] + result["failed"])
    assert len(names) == 8 * len(batches)  # every line whole
    assert stderr.count("cannot write spans") == 1
    assert "Traceback" not in stderr
