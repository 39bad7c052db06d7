"""The Prometheus scrape endpoint, scraped over real HTTP."""

from __future__ import annotations

import socket
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import tracesim
from tracesim._metrics import scrape_url
from tracesim.evaluators import ExactMatch


def scrape(url: str) -> list[str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        return [line for line in response.read().decode().splitlines() if not line.startswith("#")]


def series(lines: list[str], name: str) -> list[str]:
    return [line for line in lines if line.startswith(name + "{")]


def _scored_calls(n: int) -> None:
    @tracesim.trace(evaluators=[ExactMatch()], expected="ok")
    def answer(i: int) -> str:
        return "ok" if i % 4 else "no"

    for i in range(n):
        answer(i)
    assert tracesim.force_flush(10)


def test_the_endpoint_serves_the_results_and_scores() -> None:
    tracesim.configure(
        exporters=["console"], metrics="prometheus", prometheus_host="127.0.0.1", prometheus_port=0
    )
    url = scrape_url()
    assert url is not None
    assert url.startswith("http://127.0.0.1:")
    assert url.endswith("/metrics")
    _scored_calls(8)
    lines = scrape(url)
    results = series(lines, "tracesim_evaluation_results_total")
    assert len(results) == 2
    passed = next(line for line in results if 'tracesim_evaluation_outcome="passed"' in line)
    assert 'gen_ai_evaluation_name="exact"' in passed
    assert 'tracesim_span_name="answer"' in passed
    assert passed.endswith(" 6.0")
    assert any(line.endswith(" 2.0") and '"failed"' in line for line in results)
    assert any(
        'le="1.0"' in line and line.endswith(" 8.0")
        for line in series(lines, "tracesim_evaluation_score_bucket")
    )
    assert len(series(lines, "tracesim_evaluation_score_count")) == 1
    # a private registry: none of prometheus_client's process and GC metrics
    assert not [line for line in lines if line.startswith(("python_gc", "process_"))]
    # a second scrape reads the same totals, once each (points are not queued twice)
    assert series(scrape(url), "tracesim_evaluation_results_total") == results


def test_configuring_again_keeps_one_endpoint_and_one_copy_of_each_series() -> None:
    settings = {"exporters": ["console"], "metrics": "prometheus", "prometheus_host": "127.0.0.1"}
    tracesim.configure(**settings, prometheus_port=0)
    first = scrape_url()
    assert first is not None
    _scored_calls(4)
    tracesim.configure(**settings, prometheus_port=0)
    tracesim.configure(**settings, prometheus_port=0)
    assert scrape_url() == first  # the same server, now serving the newest configuration
    _scored_calls(2)
    results = series(scrape(first), "tracesim_evaluation_results_total")
    assert len(results) == 2  # counts start again with a configuration (a counter reset)
    assert sorted(line.rsplit(" ", 1)[1] for line in results) == ["1.0", "1.0"]
    tracesim.configure(exporters=["console"], metrics="none")
    assert scrape_url() is None
    with pytest.raises(urllib.error.URLError):
        scrape(first)  # the last configuration using it is gone: the server stopped


def test_shutdown_stops_the_server() -> None:
    tracesim.configure(
        exporters=["console"], metrics="prometheus", prometheus_host="127.0.0.1", prometheus_port=0
    )
    url = scrape_url()
    assert url is not None
    tracesim.shutdown()
    assert scrape_url() is None
    with pytest.raises(urllib.error.URLError):
        scrape(url)


def test_a_port_in_use_is_a_config_error_naming_the_setting() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(tracesim.ConfigError) as caught:
            tracesim.configure(
                exporters=["console"], metrics="prometheus", prometheus_host="127.0.0.1", prometheus_port=port
            )
    assert caught.value.setting == "prometheus_port"
    assert "0 picks a free one" in str(caught.value)


def test_without_the_extra_the_error_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.prometheus", None)  # as if not installed
    with pytest.raises(tracesim.ConfigError, match=r"pip install 'tracesim\[prometheus\]'") as caught:
        tracesim.configure(exporters=["console"], metrics="prometheus", prometheus_port=0)
    assert caught.value.setting == "metrics"
    assert scrape_url() is None


def test_the_scrape_is_redacted() -> None:
    from tracesim._metrics._current import CurrentMeterProvider

    tracesim.configure(
        exporters=["console"], metrics="prometheus", prometheus_host="127.0.0.1", prometheus_port=0
    )
    url = scrape_url()
    assert url is not None
    duration = (
        CurrentMeterProvider().get_meter("some.instrumentation").create_histogram("op.duration", unit="s")
    )
    duration.record(0.25, {"server.address": "marie@curie.org"})
    lines = scrape(url)
    assert any(
        'server_address="[REDACTED:email]"' in line for line in series(lines, "op_duration_seconds_count")
    )
    assert not [line for line in lines if "curie" in line]


def test_a_refused_later_destination_leaves_no_endpoint_running(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the trace directory should be
    with pytest.raises(tracesim.ConfigError) as caught:
        tracesim.configure(
            exporters=["console"],
            metrics=["prometheus", "jsonl"],
            prometheus_host="127.0.0.1",
            prometheus_port=0,
            jsonl_path=str(blocked / "traces.jsonl"),
        )
    assert caught.value.setting == "jsonl_path"
    assert scrape_url() is None
    from tracesim._metrics import _prometheus

    assert _prometheus._endpoints == {}


def test_label_sets_that_redact_to_one_are_one_series_in_the_scrape() -> None:
    from tracesim._metrics._current import CurrentMeterProvider

    def hide_customer(value: str, attribute: str) -> str:
        return value.split(":cust-")[0] + ":[customer]" if ":cust-" in value else value

    tracesim.configure(
        exporters=["console"],
        metrics="prometheus",
        prometheus_host="127.0.0.1",
        prometheus_port=0,
        redact=hide_customer,
    )
    url = scrape_url()
    assert url is not None
    duration = (
        CurrentMeterProvider().get_meter("some.instrumentation").create_histogram("op.duration", unit="s")
    )
    for model in ("ft:m:cust-alice", "ft:m:cust-bob"):
        duration.record(0.5, {"gen_ai.request.model": model})
    (count,) = series(scrape(url), "op_duration_seconds_count")  # Prometheus refuses a series twice
    assert 'gen_ai_request_model="ft:m:[customer]"' in count
    assert count.endswith(" 2.0")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_configuring_again_with_another_host_and_the_same_port_moves_the_endpoint() -> None:
    port = _free_port()
    settings = {"exporters": ["console"], "metrics": "prometheus", "prometheus_port": port}
    tracesim.configure(**settings, prometheus_host="127.0.0.1")
    tracesim.configure(**settings, prometheus_host="0.0.0.0")  # the port is tracesim's own: not "in use"
    assert scrape_url() == f"http://0.0.0.0:{port}/metrics"
    _scored_calls(4)
    assert len(series(scrape(f"http://127.0.0.1:{port}/metrics"), "tracesim_evaluation_results_total")) == 2
    tracesim.configure(**settings, prometheus_host="127.0.0.1")  # and back
    assert scrape_url() == f"http://127.0.0.1:{port}/metrics"
    tracesim.shutdown()
    from tracesim._metrics import _prometheus

    assert _prometheus._endpoints == {}


def test_a_move_refused_later_leaves_the_endpoint_where_the_running_configuration_has_it(
    tmp_path: Path,
) -> None:
    port = _free_port()
    settings = {"exporters": ["console"], "metrics": "prometheus", "prometheus_port": port}
    tracesim.configure(**settings, prometheus_host="127.0.0.1")
    _scored_calls(4)
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(tracesim.ConfigError) as caught:
        tracesim.configure(
            **{**settings, "metrics": ["prometheus", "jsonl"]},
            prometheus_host="0.0.0.0",
            jsonl_path=str(blocked / "traces.jsonl"),
        )
    assert caught.value.setting == "jsonl_path"
    assert scrape_url() == f"http://127.0.0.1:{port}/metrics"
    assert len(series(scrape(f"http://127.0.0.1:{port}/metrics"), "tracesim_evaluation_results_total")) == 2


def test_the_same_port_held_by_another_process_on_another_address_is_still_a_config_error() -> None:
    port = _free_port()
    tracesim.configure(
        exporters=["console"], metrics="prometheus", prometheus_host="127.0.0.1", prometheus_port=port
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.2", port))  # another listener, on another loopback address
        taken.listen()
        with pytest.raises(tracesim.ConfigError) as caught:
            tracesim.configure(
                exporters=["console"], metrics="prometheus", prometheus_host="0.0.0.0", prometheus_port=port
            )
    assert caught.value.setting == "prometheus_port"
    assert "0 picks a free one" in str(caught.value)
    # tracesim's endpoint is listening again where it was, for the configuration still running
    assert scrape_url() == f"http://127.0.0.1:{port}/metrics"
    _scored_calls(4)
    assert len(series(scrape(f"http://127.0.0.1:{port}/metrics"), "tracesim_evaluation_results_total")) == 2


def test_without_prometheus_client_the_error_is_the_same_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracesim._metrics._prometheus import missing_extra

    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # the extra's other half missing
    with pytest.raises(tracesim.ConfigError) as caught:
        tracesim.configure(exporters=["console"], metrics="prometheus", prometheus_port=0)
    assert str(caught.value) == str(missing_extra())
    assert scrape_url() is None


def test_the_score_series_are_redacted_by_a_hook_on_the_metric_label() -> None:
    def hide_span_labels(text: str, attribute: str) -> str:
        return "[hidden]" if attribute == "tracesim.span.name" else text

    tracesim.configure(
        redact=hide_span_labels,
        scoring_mode="inline",
        metrics="prometheus",
        prometheus_host="127.0.0.1",
        prometheus_port=0,
    )
    url = scrape_url()
    assert url is not None
    with tracesim.span("checkout for acme", evaluators=[ExactMatch()], expected="ok") as span:
        span.set_output("ok")
    lines = scrape(url)
    counts = series(lines, "tracesim_evaluation_score_count")
    assert len(counts) == 1
    assert 'tracesim_span_name="[hidden]"' in counts[0]
    assert not [line for line in lines if "acme" in line]
