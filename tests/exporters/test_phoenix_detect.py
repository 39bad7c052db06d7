"""Phoenix annotations by default: found from the OTLP endpoint, and quiet where it is not Phoenix."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from _scored import write_scored_file

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


class FakePhoenixApi:
    """Phoenix's two REST answers tracesim uses, scripted: its version, and taking annotations.

    A fake only at the edge, for the answers a real Phoenix gives rarely (503 while starting,
    401); tests/phoenix runs the real server.
    """

    def __init__(self, version_answers: list[int], annotation_answers: list[int]) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.version_answers, self.annotation_answers = version_answers, annotation_answers
        self.annotations: list[dict[str, object]] = []
        self.headers: list[dict[str, str]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.headers.append(dict(self.headers.items()))
                status = fake.version_answers.pop(0) if fake.version_answers else 200
                self._answer(status, b"12.3.0" if status == 200 else b"starting")

            def do_POST(self) -> None:
                fake.headers.append(dict(self.headers.items()))
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if not self.path.startswith("/v1/span_annotations"):
                    return self._answer(200, b"")  # spans: taken
                status = fake.annotation_answers.pop(0) if fake.annotation_answers else 200
                if status == 200:
                    fake.annotations.extend(json.loads(body)["data"])
                return self._answer(status, b"{}")

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def fake_phoenix() -> Iterator[FakePhoenixApi]:
    api = FakePhoenixApi([], [])
    yield api
    api.close()


def test_a_phoenix_still_starting_is_asked_again_not_written_off(fake_phoenix: FakePhoenixApi) -> None:
    from tracesim.exporters._phoenix import PhoenixAnnotationSink

    fake_phoenix.version_answers[:] = [503, 503]
    sink = PhoenixAnnotationSink(fake_phoenix.url, detect=True, schedule_delay_s=0.0, max_backoff_s=0.2)
    sink.submit("00000000000000aa", "exact", score=1.0, label=None, explanation=None)
    assert sink.force_flush(timeout_s=20)
    assert sink.is_phoenix is True
    assert [a["name"] for a in fake_phoenix.annotations] == ["exact"]
    sink.shutdown(5)


def test_the_exporters_credentials_never_go_to_a_phoenix_url_named_apart(
    fake_phoenix: FakePhoenixApi, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-vendor-key=SECRET-FOR-ANOTHER-BACKEND")

    @tracesim.trace(evaluators=[ExactMatch()], expected="ok")
    def answer() -> str:
        return "ok"

    tracesim.configure(jsonl_path=str(tmp_path / "t.jsonl"), phoenix_annotations_url=fake_phoenix.url)
    answer()
    assert tracesim.shutdown(30)
    assert [a["name"] for a in fake_phoenix.annotations] == ["exact"]
    assert not [h for h in fake_phoenix.headers if "SECRET" in json.dumps(h)]


def test_replayed_annotations_that_failed_are_sent_by_the_next_run(
    fake_phoenix: FakePhoenixApi, tmp_path: Path
) -> None:
    from tracesim.batch import replay

    path = write_scored_file(tmp_path / "scored.jsonl", {"exact": 1.0, "odd": math.nan})

    fake_phoenix.annotation_answers[:] = [401]  # a key that lacks the annotation scope
    first = replay([path], endpoint=fake_phoenix.url, encoding="protobuf")
    assert (first.spans, first.phoenix, first.annotations, first.failed_annotations) == (1, True, 0, 1)
    assert not first.ok
    again = replay([path], endpoint=fake_phoenix.url, encoding="protobuf")
    # the spans are not sent twice; the annotation is; a NaN score Phoenix cannot hold is no failure
    assert (again.ok, again.spans, again.already_sent, again.annotations) == (True, 0, 1, 1)
    assert [a["name"] for a in fake_phoenix.annotations] == ["exact"]
    third = replay([path], endpoint=fake_phoenix.url, encoding="protobuf")
    assert (third.ok, third.annotations) == (True, 0)  # recorded: nothing more to send
