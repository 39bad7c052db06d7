"""Evaluation results as span events and as log records, as the conventions move to log-based events.

By default a result is a ``gen_ai.evaluation.result`` span event (what Phoenix and MLflow read)
and, whenever spans go over OTLP/HTTP, a log record of the same name beside it (what log-reading
backends read) unless the backend answers that it takes no logs. A real OTLP/HTTP endpoint on
loopback (tests/scripted_backend.py) receives both.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from scripted_backend import MLFLOW_NOT_FOUND_PAGE, Reply, ScriptedBackend
from secret_kinds import SECRETS, leaked

import tracesim
from tracesim import _runtime
from tracesim._scoring._sinks import LogEventSink
from tracesim.evaluators import EvalResult, ExactMatch, evaluator

EVENT = "gen_ai.evaluation.result"


@pytest.fixture
def backend(scripted_backend: ScriptedBackend) -> ScriptedBackend:
    return scripted_backend


def configure(backend: ScriptedBackend, **more: Any) -> None:
    more.setdefault("exporters", ["otlp"])
    tracesim.configure(
        otlp_endpoint=backend.traces_url, phoenix_annotations=False, mlflow_assessments=False, **more
    )


def attributes(item: Span.Event | LogRecord) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for pair in item.attributes:
        kind = pair.value.WhichOneof("value")
        values[pair.key] = getattr(pair.value, kind) if kind else None
    return values


def evaluation_events(span: Span) -> list[Span.Event]:
    return [event for event in span.events if event.name == EVENT]


@tracesim.trace(evaluators=[ExactMatch()], expected="ok")
def answer(i: int) -> str:
    return "ok"


def test_every_result_arrives_as_a_span_event_and_a_log_record_by_default(backend: ScriptedBackend) -> None:
    configure(backend)
    for i in range(3):
        answer(i)
    with tracesim.span("request") as request:
        pass
    tracesim.score(request, name="user_rating", value=1.0, label="helpful")
    assert tracesim.force_flush(30)

    scored = [span for span in backend.spans if span.name == "answer"]
    assert len(scored) == 3
    for span in scored:
        (event,) = evaluation_events(span)
        assert attributes(event)["gen_ai.evaluation.score.value"] == 1.0
    (carrier,) = [span for span in backend.spans if span.name == "evaluation user_rating"]
    assert len(evaluation_events(carrier)) == 1

    records = {record.span_id: record for record in backend.logs}
    assert len(backend.logs) == 4
    for span in scored:
        record = records[span.span_id]
        assert record.trace_id == span.trace_id
        assert record.event_name == EVENT
        assert record.severity_text in ("", "INFO")
        assert record.severity_number == 9  # INFO
        assert record.body.string_value == "evaluation: exact=1 (pass)"
        assert attributes(record)["gen_ai.evaluation.name"] == "exact"
    feedback = records[request.span_context.span_id.to_bytes(8, "big")]
    assert feedback.body.string_value == "evaluation: user_rating=1 (helpful)"
    assert attributes(feedback)["gen_ai.evaluation.score.label"] == "helpful"


def test_an_error_result_is_a_warn_record_with_its_error_type(backend: ScriptedBackend) -> None:
    @evaluator
    def broken(output: Any, expected: Any) -> EvalResult:
        raise TimeoutError("the judge did not answer")

    @tracesim.trace(evaluators=[broken], expected="x")
    def f() -> str:
        return "y"

    configure(backend)
    f()
    assert tracesim.force_flush(30)
    (record,) = backend.logs
    assert record.severity_number == 13  # WARN
    assert attributes(record)["error.type"] == "TimeoutError"
    assert record.body.string_value == "evaluation: broken failed (TimeoutError)"


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(Reply(404, MLFLOW_NOT_FOUND_PAGE, "text/html; charset=utf-8"), id="mlflow-404"),
        pytest.param(Reply(405, "Method Not Allowed", "text/plain"), id="phoenix-405"),
    ],
)
def test_a_backend_without_logs_is_told_once_and_sent_no_more(
    backend: ScriptedBackend, caplog: pytest.LogCaptureFixture, reply: Reply
) -> None:
    backend.answer("/v1/logs", reply)
    configure(backend)
    with caplog.at_level(logging.INFO):
        for i in range(5):
            answer(i)
            assert tracesim.force_flush(30)  # a backend without logs is no failure to deliver
    assert backend.count("/v1/logs") == 1
    lines = [r for r in caplog.records if "/v1/logs" in r.getMessage()]
    assert len(lines) == 1
    assert lines[0].levelno == logging.INFO  # on by default: nothing is wrong
    assert f"{reply.status}: " in lines[0].getMessage()
    assert "no more logs are sent there" in lines[0].getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    scored = [span for span in backend.spans if span.name == "answer"]
    assert len(scored) == 5
    assert all(len(evaluation_events(span)) == 1 for span in scored)
    runtime = _runtime.current
    assert runtime is not None
    (sink,) = [sink for sink in runtime.sinks if isinstance(sink, LogEventSink)]
    assert sink.refused  # later results are not even rendered for it


def test_asked_for_log_events_refused_is_a_warning(
    backend: ScriptedBackend, caplog: pytest.LogCaptureFixture
) -> None:
    backend.answer("/v1/logs", Reply(405, "Method Not Allowed", "text/plain"))
    configure(backend, evaluation_log_events=True)
    with caplog.at_level(logging.INFO):
        answer(0)
        tracesim.force_flush(30)
    (line,) = [r for r in caplog.records if "/v1/logs" in r.getMessage()]
    assert line.levelno == logging.WARNING


def test_span_events_off_leaves_the_results_to_the_log_records(backend: ScriptedBackend) -> None:
    configure(backend, evaluation_span_events=False)
    answer(0)
    assert tracesim.force_flush(30)
    (span,) = [span for span in backend.spans if span.name == "answer"]
    assert evaluation_events(span) == []
    assert attributes(span)["tracesim.eval.exact.score"] == 1.0  # the flat attributes stay
    (record,) = backend.logs
    assert record.span_id == span.span_id
    assert attributes(record)["gen_ai.evaluation.score.value"] == 1.0


def test_span_events_off_still_leaves_them_in_the_trace_file_for_show_and_report(
    backend: ScriptedBackend, tmp_path: Path
) -> None:
    from tracesim.tracefile import load_spans

    configure(backend, evaluation_span_events=False, exporters=["otlp", "jsonl"], jsonl_path="t.jsonl")
    answer(0)
    assert tracesim.force_flush(30)
    (sent,) = [span for span in backend.spans if span.name == "answer"]
    assert evaluation_events(sent) == []
    (kept,) = [span for span in load_spans(tmp_path / "t.jsonl") if span.name == "answer"]
    (event,) = kept.event(EVENT)
    assert event.attributes["gen_ai.evaluation.score.value"] == 1.0
    assert not (tmp_path / "t.logs.jsonl").exists()  # the file's span events hold the result


def test_log_events_off_sends_no_logs(backend: ScriptedBackend) -> None:
    configure(backend, evaluation_log_events=False)
    answer(0)
    assert tracesim.force_flush(30)
    assert backend.count("/v1/logs") == 0
    (span,) = [span for span in backend.spans if span.name == "answer"]
    assert len(evaluation_events(span)) == 1


_FORKED = """
import json, os
import tracesim

tracesim.configure(jsonl_path="t.jsonl", evaluation_log_events=True, metrics="none")

def scored(who):
    with tracesim.span(who) as span:
        pass
    tracesim.score(span, name="rating", value=1.0)
    assert tracesim.force_flush(30)

pid = os.fork()
if pid == 0:
    scored("child")
    os._exit(0)
os.waitpid(pid, 0)
scored("parent")
tracesim.shutdown()

def ids(path, key):
    found = []
    for line in open(path):
        for group in json.loads(line)[key]:
            attributes = {a["key"]: a["value"].get("stringValue") for a in group["resource"]["attributes"]}
            found.append(attributes["service.instance.id"])
    return found

print(json.dumps({"spans": ids("t.jsonl", "resourceSpans"), "logs": ids("t.logs.jsonl", "resourceLogs")}))
"""


def test_a_forked_childs_records_carry_its_own_resource(tmp_path: Path, run_python: Any) -> None:
    # The SDK gives a forked child's providers a resource of their own (a new service.instance.id):
    # its results' records, made directly, say the same as its spans.
    result = run_python(_FORKED, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert len(set(got["spans"])) == 2  # child, parent
    assert got["logs"] == got["spans"]


RESULTS = [
    EvalResult(name="rouge", score=0.93, passed=True, threshold=0.5, duration_s=0.002),
    EvalResult(name="tone", label="polite", explanation="kind words", details={"words": 3}),
    EvalResult(name="judge", status="error", error="no answer", error_type="TimeoutError"),
    EvalResult(name="user_rating", score=0.0, label="marie@curie.org wrote it"),
]


def _sent_directly_and_through_the_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: ScriptedBackend
) -> list[tuple[list[Any], list[Any]]]:
    """The same results through a sink that makes its records itself and one that goes through the
    SDK's ``Logger.emit`` (a value-length limit no value reaches turns the direct path off): what
    the local file and an OTLP/HTTP backend got from each, the times left out."""
    import dataclasses

    from opentelemetry.sdk.resources import Resource
    from opentelemetry.trace import SpanContext, TraceFlags

    from tracesim._capture import make_options
    from tracesim._config import Settings
    from tracesim._redact import Redactor
    from tracesim.exporters import Redaction

    got = []
    for limit in (None, "100000"):
        if limit is not None:
            monkeypatch.setenv("OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT", limit)
        path = tmp_path / f"{limit}.logs.jsonl"
        settings = Settings(exporters=("otlp",), otlp_endpoint=backend.traces_url, spool_dir=None)
        jsonl = str(tmp_path / f"{limit}.jsonl")
        file = dataclasses.replace(settings, exporters=("jsonl",), jsonl_path=jsonl)
        file = dataclasses.replace(file, evaluation_log_events=True)
        redaction = Redaction(Redactor(settings.redact_patterns), 1000)
        resource = Resource({"service.name": "checkout"})
        sinks = [LogEventSink(s, resource, make_options(True, 1000), redaction) for s in (settings, file)]
        assert [sink._direct is None for sink in sinks] == [limit is not None] * 2  # the path under test
        before = len(backend.logs)
        for flags in (TraceFlags.SAMPLED, TraceFlags.DEFAULT):
            target = SpanContext(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331, False, flags)
            for result in RESULTS:
                for sink in sinks:
                    sink.submit(target, result, "CODE")
        for sink in sinks:
            assert sink.force_flush(10)
            sink.shutdown(10)
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        for line in lines:
            for scope in line["resourceLogs"][0]["scopeLogs"]:
                for record in scope["logRecords"]:
                    assert record.pop("timeUnixNano")
                    assert record.pop("observedTimeUnixNano")
        sent = []
        for record in backend.logs[before:]:
            assert record.time_unix_nano
            assert record.observed_time_unix_nano
            record.time_unix_nano = record.observed_time_unix_nano = 0
            sent.append(record.SerializeToString())
        got.append((lines, sent))
    return got


def test_records_made_directly_are_the_sdks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: ScriptedBackend
) -> None:
    direct, through_the_sdk = _sent_directly_and_through_the_sdk(tmp_path, monkeypatch, backend)
    assert direct == through_the_sdk
    lines, sent = direct
    assert len(sent) == 2 * len(RESULTS)
    records = [record for line in lines for record in line["resourceLogs"][0]["scopeLogs"][0]["logRecords"]]
    assert [record.get("flags", 0) for record in records] == [1] * len(RESULTS) + [0] * len(RESULTS)
    assert [record["severityNumber"] for record in records[:3]] == [9, 9, 13]
    assert "[REDACTED:email]" in json.dumps(records)
    assert "marie@" not in json.dumps(records)
    assert lines[0]["resourceLogs"][0]["scopeLogs"][0]["scope"]["name"] == "tracesim"


@pytest.mark.filterwarnings("ignore::opentelemetry.sdk._logs.LogRecordDroppedAttributesWarning")  # the SDK's
def test_a_record_over_the_attribute_count_limit_goes_through_the_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracesim._scoring import _sinks

    direct: list[int] = []
    put = _sinks._Direct.put
    monkeypatch.setattr(_sinks._Direct, "put", lambda self, *a: direct.append(len(a[-1])) or put(self, *a))
    monkeypatch.setenv("OTEL_LOGRECORD_ATTRIBUTE_COUNT_LIMIT", "3")
    tracesim.configure(jsonl_path="t.jsonl", evaluation_log_events=True)
    with tracesim.span("request") as request:
        pass
    tracesim.score(request, name="user_rating", value=1.0, label="helpful", explanation="why")
    tracesim.score(request, name="n", value=1.0)  # three attributes: within the limit
    assert tracesim.force_flush(30)
    assert direct == [3]  # the first through the SDK's Logger.emit, the second made directly
    records = [
        record
        for line in (tmp_path / "t.logs.jsonl").read_text().splitlines()
        for record in json.loads(line)["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    ]
    assert [(len(record["attributes"]), record.get("droppedAttributesCount", 0)) for record in records] == [
        (3, 2),
        (3, 0),
    ]


def test_the_local_file_gets_log_records_only_when_asked(tmp_path: Path) -> None:
    tracesim.configure(jsonl_path="t.jsonl")
    answer(0)
    assert tracesim.force_flush(30)
    assert not (tmp_path / "t.logs.jsonl").exists()  # the trace file's span events hold it all

    tracesim.configure(jsonl_path="u.jsonl", evaluation_log_events=True)
    answer(1)
    assert tracesim.force_flush(30)
    assert (tmp_path / "u.logs.jsonl").read_text().count(EVENT) == 1


def test_secrets_in_a_result_never_reach_the_log_records(backend: ScriptedBackend) -> None:
    planted = " ".join(secret for secret, _ in SECRETS.values())

    @evaluator
    def chatty(output: Any, expected: Any) -> EvalResult:
        return EvalResult(
            name="chatty",
            score=0.5,
            label=f"label {planted}",
            explanation=f"the user said {planted}",
            details={"seen": planted},
        )

    @tracesim.trace(evaluators=[chatty], expected="x")
    def f(question: str) -> str:
        return f"answer {planted}"

    configure(backend)
    f(planted)
    with tracesim.span("request") as request:
        pass
    tracesim.score(request, name="user_rating", value=0.0, label=planted, explanation=planted)
    assert tracesim.force_flush(30)
    assert len(backend.logs) == 2
    for record in backend.logs:
        assert leaked(str(record)) == []
        assert "[REDACTED:" in str(record)


def test_log_records_never_go_out_on_the_thread_that_makes_the_result(
    backend: ScriptedBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # batch_export=False hands each span to its exporter at once, but a log record is queued:
    # the caller of score() never waits on the backend. The queue goes out on a force_flush
    # (its timer is set far off here, so that nothing else sends it).
    monkeypatch.setenv("OTEL_BLRP_SCHEDULE_DELAY", "3600000")
    configure(backend, batch_export=False, metrics="none")
    with tracesim.span("request") as request:
        pass
    tracesim.score(request, name="user_rating", value=1.0)
    assert backend.count("/v1/logs") == 0  # the record: queued, not sent by this thread
    assert tracesim.force_flush(10)
    assert [attributes(record)["gen_ai.evaluation.name"] for record in backend.logs] == ["user_rating"]
