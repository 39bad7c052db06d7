"""Results the Phoenix annotation sender could not deliver are counted where users read counts:
``tracesim.scoring_stats().results_not_sent``. A loopback server answers as a Phoenix that
refuses the annotations (422, not worth retrying)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from loopback_http import LoopbackHTTP, QuietHandler

import tracesim


class _Refuses(QuietHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.reply(422, "application/json", b'{"detail": "annotation_name is not allowed"}')


@pytest.fixture
def refusing() -> Iterator[str]:
    http = LoopbackHTTP(_Refuses)
    try:
        yield http.base
    finally:
        tracesim.shutdown(10)
        http.close()


def test_annotations_phoenix_refuses_are_counted_in_scoring_stats(
    refusing: str, caplog: pytest.LogCaptureFixture
) -> None:
    tracesim.configure(
        exporters=["jsonl"],
        phoenix_annotations=True,
        phoenix_annotations_url=refusing,
        mlflow_assessments=False,
        metrics="none",
    )
    with caplog.at_level(logging.WARNING, logger="tracesim"):
        for i in range(5):
            with tracesim.span(f"request {i}") as request:
                pass
            tracesim.score(request, name="user_rating", value=1.0)
        tracesim.force_flush(10)
    assert tracesim.scoring_stats().results_not_sent == 5
    assert any("Phoenix refused" in record.getMessage() for record in caplog.records)  # said once, too
