"""The Prometheus harness: the server starts, scrapes, evaluates rules, answers queries and stops.

The target is a plain HTTP server serving fixed exposition text, so these tests need nothing
from tracesim: a failure here is the harness's, not the metrics'.
"""

from __future__ import annotations

import doctest
import http.server
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

COUNTS = {"passed": 9, "failed": 2, "error": 1}
EXPOSITION = b"# TYPE tracesim_evaluation_results_total counter\n" + b"".join(
    b'tracesim_evaluation_results_total{gen_ai_evaluation_name="rouge",tracesim_span_name="answer",'
    + f'tracesim_evaluation_outcome="{outcome}"}} {count}\n'.encode()
    for outcome, count in COUNTS.items()
)


@pytest.fixture
def static_target() -> Iterator[str]:
    """``host:port`` of an HTTP server answering every GET with `EXPOSITION`."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(EXPOSITION)))
            self.end_headers()
            self.wfile.write(EXPOSITION)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # no request lines on stderr

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_the_server_scrapes_a_target_and_evaluates_rules(
    start_prometheus: Callable[..., Any], prometheus_harness: ModuleType, static_target: str, tmp_path: Path
) -> None:
    harness = prometheus_harness
    rules = tmp_path / "rules.yml"
    rules.write_text(
        "groups:\n"
        "  - name: t\n"
        "    rules:\n"
        "      - record: decided\n"
        "        expr: sum(tracesim_evaluation_results_total)\n"
    )
    server = start_prometheus(targets=[static_target], rule_files=[rules])
    assert server.ready_after_s is not None

    up = server.query('up{job="tracesim"} == 1')
    assert [r["metric"]["instance"] for r in up] == [static_target]
    counts = harness.by_labels(
        server.query("tracesim_evaluation_results_total"), "tracesim_evaluation_outcome"
    )
    assert counts == {(outcome,): float(count) for outcome, count in COUNTS.items()}
    assert harness.by_labels(server.query("decided")) == {(): 12.0}
    assert [t["health"] for t in server.target_health()] == ["up"]


def test_a_query_that_never_matches_times_out_with_the_last_answer(
    start_prometheus: Callable[..., Any], prometheus_harness: ModuleType, static_target: str
) -> None:
    server = start_prometheus(targets=[static_target])
    with pytest.raises(
        prometheus_harness.QueryTimeout, match=r"not as awaited after \d+ s; last answer \[\]"
    ):
        server.query('up{job="nothing"}', timeout_s=0.5)


def test_a_bad_expression_is_reported_with_prometheus_message(
    start_prometheus: Callable[..., Any], static_target: str
) -> None:
    server = start_prometheus(targets=[static_target])
    with pytest.raises(AssertionError, match=r"bad_data: .*parse error"):
        server.query_once("sum(")


def test_stop_ends_the_server(start_prometheus: Callable[..., Any], static_target: str) -> None:
    server = start_prometheus(targets=[static_target])
    assert server.running
    server.stop()
    assert not server.running
    with pytest.raises(OSError, match="Connection refused"):  # nothing listens there any more
        server.query_once("up")


def test_the_harness_examples_run(prometheus_harness: ModuleType) -> None:
    outcome = doctest.testmod(prometheus_harness, optionflags=doctest.ELLIPSIS)
    assert outcome.attempted > 0
    assert outcome.failed == 0
