"""scoring_export: workers: the worker process that scores a call writes its span.

Every test runs real worker processes writing the real trace file; spans are compared with
what the host's path writes for the same calls in the same test.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from pool_test_evaluators import Behaves, HostOnlyHook, current_pool, support_agent, worker_ready

import tracesim
from tracesim import _runtime
from tracesim._scoring._processes import ProcessPool
from tracesim.evaluators import Evaluator, ExactMatch, Levenshtein
from tracesim.tracefile import load_spans

_VARYING = {"tracesim.evaluation.duration_s"}  # how long a run took: not the same twice


def _pool() -> ProcessPool:
    pool: ProcessPool = current_pool()
    return pool


_worker_ready = worker_ready


def _scored_calls(path: Path, export: str, **settings: Any) -> list[Any]:
    """The spans of 40 scored calls written under ``scoring_export=export``, by span name and order."""
    tracesim.configure(
        exporters=["jsonl"], jsonl_path=path, scoring_processes=1, scoring_export=export, **settings
    )
    agent = support_agent()
    for order in range(40):
        agent(order)
    assert tracesim.force_flush(120)
    stats = tracesim.scoring_stats()
    tracesim.shutdown(30)
    assert (stats.completed, stats.results, stats.dropped) == (40, 120, 0)
    assert stats.written_by_workers == (40 if export == "workers" else 0)
    return load_spans(path)


def _comparable(span: Any) -> tuple[Any, ...]:
    events = sorted(
        (
            (
                event.name,
                {k: v for k, v in event.attributes.items() if k not in _VARYING},
                event.time_unix_nano - span.end_time_unix_nano,
            )
            for event in span.events
        ),
        key=lambda event: str(event[1].get("gen_ai.evaluation.name")),
    )
    return span.name, span.kind, dict(span.attributes), events, span.status_code, span.scope, span.links


def test_the_worker_writes_the_spans_the_host_would(tmp_path: Path) -> None:
    host = _scored_calls(tmp_path / "host.jsonl", "host")
    workers = _scored_calls(tmp_path / "workers.jsonl", "workers")
    assert len(host) == len(workers) == 40
    by_input = {span.attributes["input.value"]: span for span in host}
    for span in workers:
        twin = by_input[span.attributes["input.value"]]
        assert _comparable(span) == _comparable(twin)
        assert span.start_time_unix_nano < span.end_time_unix_nano
        assert span.resource == twin.resource
    passed = [s.attributes["tracesim.eval.exact.passed"] for s in workers]
    assert passed.count(True) == 14
    assert passed.count(False) == 26
    assert all("tracesim.expected.value" in s.attributes for s in workers)


def test_the_host_hands_calls_over_and_counts_what_workers_wrote(tmp_path: Path) -> None:
    tracesim.configure(exporters=["jsonl"], scoring_processes=1, scoring_export="workers")

    @tracesim.trace(evaluators=[Levenshtein()], expected=lambda q: q)
    def echo(q: str) -> str:
        return q

    for i in range(25):
        echo(f"question {i}")
    assert tracesim.force_flush(120)
    stats = tracesim.scoring_stats()
    assert (stats.written_by_workers, stats.completed, stats.results, stats.errors) == (25, 25, 25, 0)
    assert _pool().deaths == 0
    runtime = _runtime.current
    assert runtime is not None
    assert runtime.metrics is not None
    assert runtime.metrics.counts.by_outcome()["passed"] == 25
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    assert sorted(s.attributes["input.value"] for s in spans) == sorted(f"question {i}" for i in range(25))
    assert all(s.attributes["tracesim.eval.levenshtein.score"] == 1.0 for s in spans)


def test_a_hung_run_times_out_and_its_span_is_written_with_the_other_results(tmp_path: Path) -> None:
    tracesim.configure(exporters=["jsonl"], scoring_processes=1, scoring_export="workers", max_defer_s=120)

    @tracesim.trace(evaluators=[Behaves(timeout_s=0.5), Levenshtein()], expected=lambda text: text)
    def agent(text: str) -> str:
        return text

    agent("warm")
    _worker_ready()
    agent("hang")
    for i in range(5):
        agent(f"fine {i}")
    assert tracesim.force_flush(120)
    spans = {s.attributes["input.value"]: s for s in load_spans(tmp_path / ".tracesim" / "traces.jsonl")}
    assert len(spans) == 7
    hung = spans["hang"]
    assert hung.attributes["tracesim.eval.behaves.status"] == "error"
    assert hung.attributes["tracesim.eval.levenshtein.score"] == 1.0  # run by the next worker
    event = next(e for e in hung.events if e.attributes["gen_ai.evaluation.name"] == "behaves")
    assert event.attributes["error.type"] == "timeout"
    for i in range(5):
        assert spans[f"fine {i}"].attributes["tracesim.eval.behaves.score"] == 1.0
    assert _pool().deaths == 1
    assert tracesim.scoring_stats().timeouts == 1


def test_a_call_a_worker_cannot_finish_is_finished_by_the_host(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Shorter(Evaluator):  # defined in a function: no worker can import it
        type_name = "shorter"

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> bool:
            return len(output) <= len(expected)

    caplog.set_level("WARNING", logger="tracesim")
    tracesim.configure(exporters=["jsonl"], scoring_processes=1, scoring_export="workers")

    @tracesim.trace(evaluators=[Shorter(), Levenshtein()], expected=lambda i: "a longer expected answer")
    def agent(i: int) -> str:
        return f"answer {i}"

    def failing_source(i: int) -> str:
        raise LookupError(f"no expected answer for {i}")

    @tracesim.trace(evaluators=[Levenshtein()], expected=failing_source)
    def unlabelled(i: int) -> str:
        return f"answer {i}"

    for i in range(10):
        agent(i)
        unlabelled(i)
    assert tracesim.force_flush(120)
    stats = tracesim.scoring_stats()
    assert (stats.written_by_workers, stats.completed) == (0, 20)
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    assert len(spans) == 20
    for span in spans:
        if span.name == "agent":
            assert span.attributes["tracesim.eval.shorter.passed"] is True
            assert span.attributes["tracesim.expected.value"] == "a longer expected answer"
            assert 0 < span.attributes["tracesim.eval.levenshtein.score"] < 1
        else:
            assert span.attributes["tracesim.eval.levenshtein.status"] == "error"
    lines = [r.getMessage() for r in caplog.records if "'shorter'" in r.getMessage()]
    assert len(lines) == 1, lines
    assert "inside a function" in lines[0]


def test_past_max_defer_s_the_span_is_written_deferred_and_results_go_on_carriers(tmp_path: Path) -> None:
    def written(path: Path, export: str) -> list[Any]:
        tracesim.configure(
            exporters=["jsonl"], jsonl_path=path, scoring_processes=1, scoring_export=export, max_defer_s=0
        )

        @tracesim.trace(evaluators=[Levenshtein(), ExactMatch()], expected=lambda q: "yes")
        def answer(q: str) -> str:
            return "yes"

        for i in range(5):
            answer(f"q{i}")
        assert tracesim.force_flush(120)
        stats = tracesim.scoring_stats()
        assert stats.late == 10
        assert stats.written_by_workers == (5 if export == "workers" else 0)
        tracesim.shutdown(30)
        return load_spans(path)

    host = written(tmp_path / "host.jsonl", "host")
    workers = written(tmp_path / "workers.jsonl", "workers")
    for spans in (host, workers):
        calls = [s for s in spans if s.name == "answer"]
        carriers = [s for s in spans if s.name.startswith("evaluation ")]
        assert len(calls) == 5
        assert len(carriers) == 10
        for call in calls:
            assert sorted(call.attributes["tracesim.evaluation.deferred"]) == ["exact", "levenshtein"]
            assert "tracesim.eval.levenshtein.score" not in call.attributes
        ends = {c.span_id: c.end_time_unix_nano for c in calls}
        for carrier in carriers:
            assert carrier.parent_span_id in ends
            assert carrier.attributes["openinference.span.kind"] == "EVALUATOR"
            assert carrier.end_time_unix_nano == ends[carrier.parent_span_id]
    strip = {"tracesim.evaluation.deferred"}
    host_carriers = sorted(
        (s.name, {k: v for k, v in s.attributes.items() if k not in strip}) for s in host if s.parent_span_id
    )
    worker_carriers = sorted(
        (s.name, {k: v for k, v in s.attributes.items() if k not in strip})
        for s in workers
        if s.parent_span_id
    )
    assert host_carriers == worker_carriers


def test_shutdown_writes_a_call_still_in_a_hung_worker_within_its_deadline(tmp_path: Path) -> None:
    tracesim.configure(exporters=["jsonl"], scoring_processes=1, scoring_export="workers", max_defer_s=600)

    @tracesim.trace(evaluators=[Behaves()], expected=lambda text: "x")
    def agent(text: str) -> str:
        return text

    agent("warm")
    _worker_ready()
    assert tracesim.force_flush(60)
    agent("hang")
    worker = _pool()._workers[0]
    while worker.running()[0] == 0:
        time.sleep(0.01)
    started = time.monotonic()
    assert tracesim.shutdown(2.0) is False  # not drained: the run never ends
    assert time.monotonic() - started < 6.0
    assert worker.proc.poll() is not None  # the hung worker was stopped
    spans = {s.attributes["input.value"]: s for s in load_spans(tmp_path / ".tracesim" / "traces.jsonl")}
    assert spans["warm"].attributes["tracesim.eval.behaves.score"] == 1.0
    assert spans["hang"].attributes["tracesim.evaluation.deferred"] == ["behaves"]


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        ({"exporters": ["jsonl", "console"]}, "spans also go to console"),
        ({"scoring_processes": 0}, "scoring_processes is 0"),
    ],
)
def test_a_configuration_workers_cannot_finish_is_said_once_and_the_host_finishes_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, settings: dict[str, Any], reason: str
) -> None:
    caplog.set_level(logging.WARNING, logger="tracesim")
    tracesim.configure(
        **{"exporters": ["jsonl"], "scoring_processes": 1, "scoring_export": "workers", **settings}
    )

    @tracesim.trace(evaluators=[Levenshtein()], expected=lambda q: q)
    def echo(q: str) -> str:
        return q

    for i in range(5):
        echo(f"q{i}")
    assert tracesim.force_flush(120)
    stats = tracesim.scoring_stats()
    assert (stats.written_by_workers, stats.results) == (0, 5)
    lines = [r.getMessage() for r in caplog.records if "scoring_export" in r.getMessage()]
    assert len(lines) == 1, lines
    assert reason in lines[0]
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    assert [s.attributes["tracesim.eval.levenshtein.score"] for s in spans] == [1.0] * 5


def test_the_setting_is_validated() -> None:
    from tracesim._errors import ConfigError

    with pytest.raises(ConfigError) as raised:
        tracesim.configure(scoring_export="worker")
    assert raised.value.setting == "scoring_export"
    assert "auto, workers or host" in str(raised.value)


def _metric_points(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The points of the last line of a metrics file, by metric name, with their attributes."""
    request = json.loads(path.read_text().splitlines()[-1])
    found: dict[str, list[dict[str, Any]]] = {}
    for resource in request["resourceMetrics"]:
        for scope in resource["scopeMetrics"]:
            for metric in scope["metrics"]:
                data = metric.get("sum") or metric.get("histogram") or {}
                for point in data.get("dataPoints", []):
                    attrs = {a["key"]: next(iter(a["value"].values())) for a in point.get("attributes", [])}
                    found.setdefault(metric["name"], []).append({**point, "attrs": attrs})
    return found


def test_result_metrics_and_the_cost_of_llm_calls_are_the_hosts(tmp_path: Path) -> None:
    usage = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 1000,
        "gen_ai.usage.output_tokens": 100,
    }

    def measured(export: str) -> tuple[Any, ...]:
        path = tmp_path / export / "traces.jsonl"
        tracesim.configure(exporters=["jsonl"], jsonl_path=path, scoring_processes=1, scoring_export=export)

        @tracesim.trace(kind="llm", evaluators=[Levenshtein(), ExactMatch()], expected=lambda q: "Paris")
        def ask(q: str) -> str:
            span = tracesim.current_span()
            assert span is not None
            for key, value in usage.items():
                span.set_attribute(key, value)
            return "Paris" if q.endswith("0") else "Lyon"

        for i in range(30):
            ask(f"question {i}")
        assert tracesim.force_flush(120)
        assert tracesim.scoring_stats().written_by_workers == (30 if export == "workers" else 0)
        tracesim.shutdown(30)
        points = _metric_points(path.with_suffix(".metrics.jsonl"))
        results = sorted(
            (p["attrs"]["gen_ai.evaluation.name"], p["attrs"]["tracesim.evaluation.outcome"], int(p["asInt"]))
            for p in points["tracesim.evaluation.results"]
        )
        scores = sorted(
            (p["attrs"]["gen_ai.evaluation.name"], int(p["count"]), p["bucketCounts"])
            for p in points["tracesim.evaluation.score"]
        )
        cost = [(p["attrs"]["gen_ai.request.model"], p["asDouble"]) for p in points["tracesim.llm.cost"]]
        return results, scores, cost

    host = measured("host")
    workers = measured("workers")
    assert workers == host
    results, _, cost = workers
    assert ("exact", "passed", 3) in results
    assert ("exact", "failed", 27) in results
    assert cost == [("gpt-4o-mini", pytest.approx(30 * (1000 * 0.15 + 100 * 0.60) / 1e6))]


def test_without_an_exporter_the_workers_write_nothing(tmp_path: Path) -> None:
    tracesim.configure(exporters=[], scoring_processes=1, scoring_export="workers")

    @tracesim.trace(evaluators=[Levenshtein()], expected=lambda q: q)
    def echo(q: str) -> str:
        return q

    for i in range(10):
        echo(f"q{i}")
    assert tracesim.force_flush(120)
    stats = tracesim.scoring_stats()
    assert (stats.written_by_workers, stats.results, stats.errors) == (10, 10, 0)
    tracesim.shutdown(30)
    assert not (tmp_path / ".tracesim").exists()


@pytest.mark.parametrize("then", ["refuse", "crash"])
def test_a_worker_that_cannot_write_spans_leaves_them_to_the_host_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, then: str
) -> None:
    """A redact hook that cannot be rebuilt in a worker (``refuse``), or that kills the worker
    while it writes the span (``crash``): the host writes that call and every later one."""
    caplog.set_level(logging.WARNING, logger="tracesim")
    tracesim.configure(
        exporters=["jsonl"],
        scoring_processes=1,
        scoring_export="workers",
        redact=HostOnlyHook(then),
        max_defer_s=120,
    )

    @tracesim.trace(evaluators=[Levenshtein()], expected=lambda q: q)
    def echo(q: str) -> str:
        return q

    echo("first")
    assert tracesim.force_flush(120)
    for i in range(10):
        echo(f"q{i}")
    assert tracesim.force_flush(120)
    stats = tracesim.scoring_stats()
    assert (stats.written_by_workers, stats.completed, stats.results, stats.errors) == (0, 11, 11, 0)
    assert _pool().deaths == (2 if then == "crash" else 0)
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    assert sorted(s.attributes["input.value"] for s in spans) == sorted(
        ["first"] + [f"q{i}" for i in range(10)]
    )
    assert all(s.attributes["tracesim.eval.levenshtein.score"] == 1.0 for s in spans)
    lines = [r.getMessage() for r in caplog.records if "writes them from now on" in r.getMessage()]
    assert len(lines) == 1, lines


def test_a_redact_hook_in_the_script_keeps_the_host_writing(tmp_path: Path, run_python: Any) -> None:
    code = """
import json, logging
import tracesim
from tracesim.evaluators import Levenshtein

logging.basicConfig(level=logging.WARNING, format="LOG %(message)s")

def scrub(text, attribute):
    return text.replace("secret", "[gone]")

tracesim.configure(exporters=["jsonl"], scoring_processes=1, scoring_export="workers", redact=scrub)

@tracesim.trace(evaluators=[Levenshtein()], expected=lambda q: q)
def echo(q):
    return q

for i in range(5):
    echo(f"secret {i}")
assert tracesim.force_flush(120)
spans = tracesim.tracefile.load_spans(".tracesim/traces.jsonl")
print(json.dumps({"written": tracesim.scoring_stats().written_by_workers,
                  "inputs": sorted(s.attributes["input.value"] for s in spans),
                  "scores": [s.attributes["tracesim.eval.levenshtein.score"] for s in spans]}))
"""
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found == {"written": 0, "inputs": [f"[gone] {i}" for i in range(5)], "scores": [1.0] * 5}
    lines = [line for line in result.stderr.splitlines() if line.startswith("LOG")]
    assert len(lines) == 1, lines
    assert "defined in the script" in lines[0]


def test_with_capture_off_the_worker_writes_no_expected_output(tmp_path: Path) -> None:
    def written(export: str) -> list[Any]:
        path = tmp_path / export / "traces.jsonl"
        tracesim.configure(
            exporters=["jsonl"], jsonl_path=path, scoring_processes=1, scoring_export=export, capture=False
        )

        @tracesim.trace(evaluators=[Levenshtein()], expected=lambda q: f"expected {q}")
        def answer(q: str) -> str:
            return f"answer {q}"

        for i in range(5):
            answer(f"q{i}")
        assert tracesim.force_flush(120)
        assert tracesim.scoring_stats().written_by_workers == (5 if export == "workers" else 0)
        tracesim.shutdown(30)
        return load_spans(path)

    host, workers = written("host"), written("workers")
    assert sorted(_comparable(s) for s in workers) == sorted(_comparable(s) for s in host)
    for span in workers:
        assert not any(key.startswith(("tracesim.expected", "input.", "output.")) for key in span.attributes)
        assert 0 < span.attributes["tracesim.eval.levenshtein.score"] < 1


def test_a_result_past_max_defer_s_goes_on_a_carrier_the_others_on_the_span(tmp_path: Path) -> None:
    def written(export: str) -> list[Any]:
        path = tmp_path / export / "traces.jsonl"
        tracesim.configure(
            exporters=["jsonl"], jsonl_path=path, scoring_processes=1, scoring_export=export, max_defer_s=1.0
        )

        @tracesim.trace(evaluators=[Levenshtein(), Behaves(delay_s=2.0, timeout_s=60)], expected=lambda q: q)
        def echo(q: str) -> str:
            return q

        echo("warm")
        _worker_ready()
        assert tracesim.force_flush(120)
        echo("slow")
        assert tracesim.force_flush(120)
        assert tracesim.scoring_stats().late >= 1  # this one's (the warm-up's, waiting for the worker, maybe)
        tracesim.shutdown(30)
        return load_spans(path)

    def slow_call(spans: list[Any]) -> tuple[Any, dict[str, Any]]:
        call = next(s for s in spans if s.name == "echo" and s.attributes["input.value"] == "slow")
        return call, {s.name: s for s in spans if s.parent_span_id == call.span_id}

    # The host: the worker sent levenshtein's result back with behaves' (one batch of results,
    # 2 s later), so both came late. The worker that writes the span knows when each was done.
    call, carriers = slow_call(written("host"))
    assert "behaves" in call.attributes["tracesim.evaluation.deferred"]
    assert carriers["evaluation behaves"].attributes["tracesim.eval.behaves.score"] == 1.0
    call, carriers = slow_call(written("workers"))
    assert call.attributes["tracesim.eval.levenshtein.score"] == 1.0
    assert call.attributes["tracesim.evaluation.deferred"] == ["behaves"]
    assert "tracesim.eval.behaves.score" not in call.attributes
    assert list(carriers) == ["evaluation behaves"]
    assert carriers["evaluation behaves"].attributes["tracesim.eval.behaves.score"] == 1.0
    assert carriers["evaluation behaves"].end_time_unix_nano == call.end_time_unix_nano


def _dropped(path: Path) -> dict[str, tuple[int, int, list[int]]]:
    """Each span's dropped attribute and event counts, and its events', by its input."""
    found = {}
    for line in path.read_text().splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    attrs = {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}
                    found[attrs["input.value"]] = (
                        span.get("droppedAttributesCount", 0),
                        span.get("droppedEventsCount", 0),
                        [event.get("droppedAttributesCount", 0) for event in span.get("events", [])],
                    )
    return found


def test_the_workers_apply_the_hosts_span_limits_to_what_they_add(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDK's limits, from the environment: 16 attributes a span, texts cut at 24 characters,
    # 2 events a span, 5 attributes an event. Three results overflow each of them; before,
    # the worker wrote every result's attributes and events whole.
    monkeypatch.setenv("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "16")
    monkeypatch.setenv("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "24")
    monkeypatch.setenv("OTEL_SPAN_EVENT_COUNT_LIMIT", "2")
    monkeypatch.setenv("OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", "5")
    host = _scored_calls(tmp_path / "host.jsonl", "host")
    workers = _scored_calls(tmp_path / "workers.jsonl", "workers")
    by_input = {span.attributes["input.value"]: span for span in host}
    for span in workers:
        twin = by_input[span.attributes["input.value"]]
        assert _comparable(span) == _comparable(twin)
        assert len(span.attributes) == 16
        assert len(span.events) == 2
        assert all(len(event.attributes) == 5 for event in span.events)
        assert max(len(v) for v in span.attributes.values() if isinstance(v, str)) == 24
    host_dropped = _dropped(tmp_path / "host.jsonl")
    worker_dropped = _dropped(tmp_path / "workers.jsonl")
    assert worker_dropped == host_dropped
    # The SDK evicts attributes past the count without counting them; it counts the events.
    assert {events for _, events, _ in worker_dropped.values()} == {1}


def _log_records(path: Path) -> list[tuple[Any, ...]]:
    """The results' log records in ``path``: span id, event name, severity, body and attributes."""
    records = []
    for line in map(json.loads, path.read_text().splitlines()):
        for resource_logs in line["resourceLogs"]:
            for scope_logs in resource_logs["scopeLogs"]:
                for record in scope_logs["logRecords"]:
                    attributes = {
                        item["key"]: item["value"]
                        for item in record["attributes"]
                        if item["key"] not in _VARYING
                    }
                    key = (record["spanId"], record.get("eventName"), record.get("severityNumber"))
                    records.append((*key, record["body"], attributes))
    return sorted(records, key=str)


def test_the_worker_writes_the_results_log_records_the_host_would(tmp_path: Path) -> None:
    # evaluation_log_events=true with the trace file: each result also as a record in
    # traces.logs.jsonl, written by the worker that scored the call.
    by_input = {}
    for export in ("host", "workers"):
        path = tmp_path / export / "traces.jsonl"
        spans = _scored_calls(path, export, evaluation_log_events=True)
        records = _log_records(path.with_name("traces.logs.jsonl"))
        assert len(records) == 120
        inputs = {span.span_id.lower(): span.attributes["input.value"] for span in spans}
        by_input[export] = sorted(((inputs[r[0].lower()], *r[1:]) for r in records), key=str)
    assert by_input["workers"] == by_input["host"]
