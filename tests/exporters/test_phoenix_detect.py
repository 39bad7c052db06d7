"""Phoenix annotations by default: found from the OTLP endpoint, and quiet where it is not Phoenix."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

import tracesim
from tracesim._config import resolve
from tracesim._errors import ConfigError
from tracesim._scoring._sinks import phoenix_target
from tracesim.evaluators import ExactMatch

if TYPE_CHECKING:
    from otlp_sink import OtlpSink


@pytest.mark.parametrize(
    ("arguments", "environ", "target"),
    [
        # spans over OTLP/HTTP may be going to Phoenix: ask its base URL first
        ({"exporters": "otlp", "otlp_endpoint": "http://ph:6006/v1/traces"}, {}, ("http://ph:6006", True)),
        (
            {"exporters": "otlp"},
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://app.phoenix.arize.com/s/me"},
            ("https://app.phoenix.arize.com/s/me", True),
        ),
        (
            {"exporters": "otlp"},
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://ph:6006/v1/traces"},
            ("http://ph:6006", True),
        ),
        # said in configuration: no question asked
        (
            {"exporters": "otlp", "otlp_endpoint": "http://ph:6006", "phoenix_annotations": True},
            {},
            ("http://ph:6006", False),
        ),
        ({"phoenix_annotations_url": "http://ph:6006"}, {}, ("http://ph:6006", False)),
        # turned off, a local file only, or gRPC (Phoenix's REST API is on another port)
        ({"exporters": "otlp", "otlp_endpoint": "http://ph:6006", "phoenix_annotations": False}, {}, None),
        ({"exporters": "jsonl"}, {}, None),
        ({"exporters": "otlp", "otlp_protocol": "grpc", "otlp_endpoint": "http://ph:4317"}, {}, None),
    ],
    ids=["endpoint", "env-base", "env-traces", "said", "url", "off", "file", "grpc"],
)
def test_where_annotations_go(
    arguments: dict[str, object], environ: dict[str, str], target: tuple[str, bool] | None
) -> None:
    assert phoenix_target(resolve(arguments, environ=environ), environ=environ) == target


def test_saying_phoenix_where_it_cannot_be_reached_names_the_setting_to_add() -> None:
    settings = resolve(
        {"exporters": "otlp", "otlp_protocol": "grpc", "phoenix_annotations": True}, environ={}
    )
    with pytest.raises(ConfigError, match="phoenix_annotations_url"):
        phoenix_target(settings, environ={})


def test_a_collector_that_is_not_phoenix_gets_spans_and_no_annotations(
    sink: OtlpSink, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    @tracesim.trace(evaluators=[ExactMatch()], expected="ok")
    def answer(i: int) -> str:
        return "ok"

    tracesim.configure(exporters=["otlp"], otlp_endpoint=sink.url, spool_dir=tmp_path / "spool")
    with caplog.at_level(logging.INFO, logger="tracesim"):
        for i in range(3):
            answer(i)
        assert tracesim.force_flush(30)
        assert tracesim.shutdown(30)
    assert sorted(sink.delivered_names) == ["answer"] * 3
    said = [r.getMessage() for r in caplog.records if "is not Phoenix" in r.getMessage()]
    assert len(said) == 1  # once, at INFO: nothing is wrong, there is just no Phoenix
    assert "phoenix_annotations=false" in said[0]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
