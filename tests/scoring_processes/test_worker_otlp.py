"""scoring_export over OTLP: the worker process that scores a call sends its span to the backend.

Real worker processes send to a scripted OTLP/HTTP backend on loopback (tests/scripted_backend.py)
with the official exporter; what arrives is compared with what the host's own path sends for
the same calls in the same test. The results' log records stay the host's (a result sink), fed
from what the worker sends back.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from pool_test_evaluators import current_pool, support_agent
from scripted_backend import ScriptedBackend

import tracesim
from tracesim.evaluators import ExactMatch, Levenshtein
from tracesim.tracefile import load_spans

_VARYING = {"tracesim.evaluation.duration_s"}  # how long a run took: not the same twice


@pytest.fixture
def backend(scripted_backend: ScriptedBackend) -> ScriptedBackend:
    return scripted_backend


def _configure(backend: ScriptedBackend, export: str, **more: Any) -> None:
    more.setdefault("spool_dir", "none")
    more.setdefault("exporters", ["otlp"])
    more.setdefault("scoring_processes", 1)
    tracesim.configure(
        otlp_endpoint=backend.traces_url,
        phoenix_annotations=False,
        mlflow_assessments=False,
        scoring_export=export,
        **more,
    )


def _values(item: Span | Span.Event | LogRecord) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for pair in item.attributes:
        kind = pair.value.WhichOneof("value")
        values[pair.key] = getattr(pair.value, kind) if kind else None
    return {key: value for key, value in values.items() if key not in _VARYING}


def _sent(backend: ScriptedBackend, export: str, calls: int = 40) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """What ``calls`` scored calls sent under ``scoring_export=export``: each span (its attributes,
    its events' attributes and times from its end) and each call's log records, by input."""
    _configure(backend, export)
    agent = support_agent()
    for order in range(calls):
        agent(order)
    assert tracesim.force_flush(120)
    stats = tracesim.scoring_stats()
    tracesim.shutdown(30)
    assert (stats.completed, stats.results, stats.dropped) == (calls, 3 * calls, 0)
    assert stats.written_by_workers == (calls if export == "workers" else 0)
    assert len(backend.spans) == calls  # each once
    spans, records = {}, {}
    for span in backend.spans:
        attributes = _values(span)
        events = sorted(
            (
                (event.name, _values(event), event.time_unix_nano - span.end_time_unix_nano)
                for event in span.events
            ),
            key=lambda event: str(event[1].get("gen_ai.evaluation.name")),
        )
        key = attributes["input.value"]
        spans[key] = (span.name, attributes, events, span.status.code, span.kind)
        mine = [record for record in backend.logs if record.span_id == span.span_id]
        records[key] = sorted(
            (record.event_name, record.severity_number, record.body.string_value, _values(record))
            for record in mine
        )
    return spans, records


def test_the_worker_sends_the_spans_and_the_log_records_the_host_would(backend: ScriptedBackend) -> None:
    host_spans, host_records = _sent(backend, "host")
    backend.spans.clear()
    backend.logs.clear()
    worker_spans, worker_records = _sent(backend, "workers")
    assert worker_spans == host_spans
    assert worker_records == host_records
    assert sum(len(records) for records in worker_records.values()) == 120  # a record per result


def test_span_events_off_leaves_the_worker_sending_the_results_as_log_records_only(
    backend: ScriptedBackend,
) -> None:
    _configure(backend, "workers", evaluation_span_events=False)
    agent = support_agent()
    for order in range(6):
        agent(order)
    assert tracesim.force_flush(120)
    assert tracesim.scoring_stats().written_by_workers == 6
    assert len(backend.spans) == 6
    assert all(not span.events for span in backend.spans)
    assert all("tracesim.eval.rouge.score" in _values(span) for span in backend.spans)  # flat attributes stay
    assert len(backend.logs) == 18


def test_a_worker_killed_before_its_spans_are_sent_loses_none(backend: ScriptedBackend) -> None:
    backend.traces_open.clear()  # the backend hangs: the worker's sender waits for it
    _configure(backend, "workers")
    agent = support_agent()
    for order in range(10):
        agent(order)
    pool = current_pool()
    deadline = time.monotonic() + 60
    while sum(len(worker.unwritten) for worker in pool._all) < 10:  # scored, their spans not yet kept
        assert time.monotonic() < deadline, "the worker did not score the calls"
        time.sleep(0.02)
    (first,) = pool._all
    os.kill(first.proc.pid, signal.SIGKILL)
    while pool.deaths < 1:
        assert time.monotonic() < deadline, "the pool did not see its worker die"
        time.sleep(0.02)
    backend.traces_open.set()
    assert tracesim.force_flush(120)
    stats = tracesim.scoring_stats()
    # Counted once, though scored twice: the second worker's results are not counted again.
    assert (stats.completed, stats.results, stats.written_by_workers) == (10, 30, 10)
    inputs = {_values(span)["input.value"] for span in backend.spans if span.name == "support_agent"}
    assert len(inputs) == 10  # every call arrived (a call may arrive twice: never lost)
    assert all(len(span.events) == 3 for span in backend.spans)


def test_with_a_spool_a_backend_that_hangs_has_every_span_kept_on_disk(
    backend: ScriptedBackend, tmp_path: Path
) -> None:
    backend.traces_open.clear()
    spool = tmp_path / "spool"
    _configure(backend, "workers", spool_dir=str(spool))
    agent = support_agent()
    for order in range(8):
        agent(order)
    # The worker keeps each batch on disk once the backend has not taken it in 2 s; then the
    # host hears the calls are kept, and the flush is over while the backend still hangs.
    assert tracesim.force_flush(120)
    assert tracesim.scoring_stats().written_by_workers == 8
    kept = [span for path in sorted(spool.glob("*.jsonl")) for span in load_spans(path)]
    assert len(kept) == len({span.attributes["input.value"] for span in kept}) == 8
    assert all(span.attributes["tracesim.eval.exact.passed"] in (True, False) for span in kept)


def test_at_shutdown_a_call_its_worker_could_not_send_is_sent_by_the_host(
    backend: ScriptedBackend, tmp_path: Path
) -> None:
    backend.traces_open.clear()  # the worker's send hangs past the shutdown's deadline
    path = tmp_path / "traces.jsonl"
    _configure(backend, "workers", exporters=["jsonl", "otlp"], jsonl_path=path)
    agent = support_agent()
    for order in range(5):
        agent(order)
    pool = current_pool()
    deadline = time.monotonic() + 60
    while len(pool._sending) < 5:  # scored (and in the trace file), not yet sent over OTLP
        assert time.monotonic() < deadline, "the worker did not score the calls"
        time.sleep(0.02)
    assert tracesim.scoring_stats().results == 15
    tracesim.shutdown(3)  # the worker is stopped at the deadline: this process sends those spans
    assert pool._sending == {}  # handed over to this process
    while len(spans := load_spans(path)) < 10:  # the host's export finishes in the background
        assert time.monotonic() < deadline, f"{len(spans)} spans in the trace file"
        time.sleep(0.05)
    by_worker = [span for span in spans if "tracesim.evaluation.deferred" not in span.attributes]
    by_host = [span for span in spans if "tracesim.evaluation.deferred" in span.attributes]
    assert len(by_worker) == len(by_host) == 5
    assert {span.attributes["input.value"] for span in by_worker} == {
        span.attributes["input.value"] for span in by_host
    }
    for span in by_host:  # its results were counted; the span says they were not written on it
        assert list(span.attributes["tracesim.evaluation.deferred"]) == ["levenshtein", "rouge", "exact"]
        assert not span.events


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")
def test_a_forked_child_does_not_wait_for_the_spans_its_parents_workers_send(
    backend: ScriptedBackend, tmp_path: Path, run_python: Any
) -> None:
    backend.traces_open.clear()  # the parent's worker is still sending when the process forks
    code = f"""
import json, os, time
import tracesim
from tracesim import _runtime
from tracesim.evaluators import Levenshtein

tracesim.configure(exporters=["otlp"], otlp_endpoint={backend.traces_url!r}, spool_dir="none",
                   phoenix_annotations=False, scoring_processes=1, scoring_export="workers",
                   shutdown_timeout_s=2)

@tracesim.trace(evaluators=[Levenshtein()], expected=lambda i: "x")
def agent(i):
    return f"answer {{i}}"

pool = _runtime.current.scoring._pool
for i in range(3):
    agent(i)
while len(pool._sending) < 3:
    time.sleep(0.02)
pid = os.fork()
if pid == 0:
    try:
        with open("child.json", "w") as f:
            json.dump({{"flushed": tracesim.force_flush(5)}}, f)
    finally:
        os._exit(0)
os.waitpid(pid, 0)
print(json.dumps({{"sending": len(pool._sending)}}))
"""
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "child.json").read_text()) == {"flushed": True}
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"sending": 3}  # still the parent's


def test_what_a_worker_sends_is_redacted(backend: ScriptedBackend) -> None:
    from secret_kinds import KINDS, leaked

    planted = " ".join(secret for secret, _ in KINDS.values())
    _configure(backend, "workers")

    @tracesim.trace(evaluators=[Levenshtein(), ExactMatch()], expected=lambda q: f"expected {planted}")
    def answer(q: str) -> str:
        return f"answer to {q}: {planted}"

    for i in range(4):
        answer(f"question {i} {planted}")
    assert tracesim.force_flush(120)
    assert tracesim.scoring_stats().written_by_workers == 4
    assert len(backend.spans) == 4
    assert len(backend.logs) == 8
    for span in backend.spans:
        assert "[REDACTED" in _values(span)["output.value"]  # the secrets were there to redact
        assert leaked(str(span)) == []
    for record in backend.logs:
        assert leaked(str(record)) == []


def test_what_a_worker_logs_is_logged_by_the_host_once_with_its_process_named(
    backend: ScriptedBackend, caplog: pytest.LogCaptureFixture
) -> None:
    # A backend without logs (MLflow answers 404): only the worker sends log records, so only
    # the worker learns it. The user's handlers are the host's: the line is said there, once.
    from scripted_backend import MLFLOW_NOT_FOUND_PAGE, Reply

    backend.answer("/v1/logs", Reply(404, MLFLOW_NOT_FOUND_PAGE, "text/html"))
    with caplog.at_level(logging.INFO):
        _configure(backend, "workers", scoring_processes=2)
        agent = support_agent()
        for order in range(30):
            agent(order)
            if order % 10 == 9:
                assert tracesim.force_flush(120)
        workers = {worker.proc.pid for worker in current_pool()._all}
        assert tracesim.scoring_stats().written_by_workers == 30
        tracesim.shutdown(30)
    lines = [record for record in caplog.records if "/v1/logs" in record.getMessage()]
    assert len(lines) == 1, [record.getMessage() for record in lines]
    (line,) = lines
    assert line.name == "tracesim"
    assert line.levelno == logging.INFO  # the worker's level: log records were on by default
    assert "no more logs are sent there" in line.getMessage()
    said_by = int(line.getMessage().rsplit("scoring worker process ", 1)[1].rstrip(")"))
    assert said_by in workers
    assert said_by != os.getpid()
    assert len(backend.spans) == 30  # the spans still go
    assert backend.count("/v1/logs") <= 2  # one refusal per worker, then nothing more sent there
