"""A real Prometheus scrapes a traced, scored process; its numbers are those of ``tracesim report``.

The process (``_scored_app.py``) scores one round of calls, then, once Prometheus has scraped
that round, the same round again. Prometheus sees a counter's first value but not the rise to
it, so only the second round is a rise inside the window of the shipped rules' ``rate()``;
both rounds are alike, so the rise is proportional to the totals and the recorded pass rate is
the pass rate of all the traffic. Every series of the target shares its scrape times, so
``rate()``'s extrapolation scales them alike and cancels out of the ratio.

What must hold, against ``tracesim report --json`` on the same process's trace file:

- the counts of each evaluator, span name and outcome (undecided: no threshold) are the
  report's, exactly;
- a plain ratio of the counters, ``passed / (passed + failed)``, is the report's pass rate;
- the shipped recording rule ``tracesim:evaluation_pass_rate:ratio_rate5m`` (the file loaded
  with ``rule_files``), which the alerts use, is the report's pass rate too, up to
  floating-point rounding: an evaluator that errs (graded) shows that errors are left out of
  both;
- the recorded mean score is the report's mean score;
- the LLM cost counter is the report's cost, by provider and model, and the cost rule has the
  labels its alert sums by.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import IO, Any

import pytest
from llm_server import LLMServer

APP = Path(__file__).with_name("_scored_app.py")
RULES = Path(__file__).resolve().parents[2] / "examples" / "prometheus" / "tracesim-rules.yml"
KEYS = ("gen_ai_evaluation_name", "tracesim_span_name")
OUTCOME_KEYS = (*KEYS, "tracesim_evaluation_outcome")
PASS_RATE_RULE = "tracesim:evaluation_pass_rate:ratio_rate5m"
MEAN_SCORE_RULE = "tracesim:evaluation_score:mean5m"
COST_RULE = "tracesim:llm_cost_usd:increase1h"
COST_KEYS = ("gen_ai_provider_name", "gen_ai_request_model")
COST = f'sum by ({", ".join(COST_KEYS)}) (tracesim_llm_cost_total{{job="tracesim"}})'
MODEL = "gpt-4o-mini"  # the model _scored_app.py calls
BY_EVALUATOR = "sum by (gen_ai_evaluation_name, tracesim_span_name)"
BY_OUTCOME = "sum by (gen_ai_evaluation_name, tracesim_span_name, tracesim_evaluation_outcome)"
RESULTS = "tracesim_evaluation_results_total"
COUNTS = f'{BY_OUTCOME} ({RESULTS}{{job="tracesim"}})'
PLAIN_RATIO = (
    f'{BY_EVALUATOR} ({RESULTS}{{tracesim_evaluation_outcome="passed"}})'
    f' / {BY_EVALUATOR} ({RESULTS}{{tracesim_evaluation_outcome=~"passed|failed"}})'
)
# The report's count of each outcome the metrics count: its "errors" is the outcome "error", and
# the results with status ok and no verdict (undecided) are those of "ok" neither passed nor failed.
OUTCOMES: dict[str, Callable[[dict[str, Any]], int]] = {
    "passed": lambda row: int(row["passed"]),
    "failed": lambda row: int(row["failed"]),
    "undecided": lambda row: int(row["ok"] - row["passed"] - row["failed"]),
    "error": lambda row: int(row["errors"]),
    "skipped": lambda row: int(row["skipped"]),
}


class App:
    """The scored process, driven line by line over its stdin and stdout."""

    def __init__(self, traces: Path, port: int, llm_url: str) -> None:
        self.traces = traces
        self.target = f"127.0.0.1:{port}"  # its scrape endpoint
        self.process = subprocess.Popen(
            [sys.executable, str(APP), str(traces), str(port), llm_url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def expect(self, line: str) -> None:
        stdout: IO[str] | None = self.process.stdout
        assert stdout is not None
        got = stdout.readline().strip()  # the app prints it within seconds, or exits
        if got != line:
            self.process.kill()
            _, err = self.process.communicate(timeout=30)
            raise AssertionError(f"the app said {got!r}, not {line!r}; stderr:\n{err}")

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def close(self) -> str:
        """End the app (stdin closed: it shuts tracesim down); its stderr."""
        try:
            _, err = self.process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, err = self.process.communicate(timeout=30)
        return err


@pytest.fixture
def app(tmp_path: Path, prometheus_harness: ModuleType) -> Iterator[App]:
    # The scripted model server answers as the model asked for, one the shipped prices know.
    with LLMServer(model=MODEL) as llm:
        scored = App(tmp_path / "traces.jsonl", prometheus_harness.free_port(), llm.base_url)
        try:
            yield scored
        finally:
            if scored.process.poll() is None:
                scored.close()
    assert not llm.errors, f"the scripted server failed: {llm.errors!r}"


def _report(traces: Path) -> dict[str, Any]:
    """``tracesim report --json``: the document."""
    result = subprocess.run(
        [sys.executable, "-m", "tracesim", "report", str(traces), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


def _evaluators(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """The report's evaluator rows by (evaluator, span name)."""
    return {(row["name"], row["span"]): row for row in document["evaluators"]}


def _expected_counts(report: dict[tuple[str, str], dict[str, Any]]) -> dict[tuple[str, ...], float]:
    return {
        (name, span, outcome): float(count(row))
        for (name, span), row in report.items()
        for outcome, count in OUTCOMES.items()
        if count(row)
    }


@pytest.mark.slow  # about 10 s: a server start, its first scrape after 5 s, two rounds
def test_prometheus_reads_the_pass_rate_and_counts_tracesim_reports(
    app: App, start_prometheus: Callable[..., Any], prometheus_harness: ModuleType
) -> None:
    by_labels = prometheus_harness.by_labels
    app.expect("round 1 scored")
    first = _evaluators(_report(app.traces))
    # Started after the first round is scored, so its first scrape sees the whole round.
    server = start_prometheus(targets=[app.target], rule_files=[RULES])

    first_counts = _expected_counts(first)
    server.query(COUNTS, until=lambda result: by_labels(result, *OUTCOME_KEYS) == first_counts)

    app.send("again")
    app.expect("round 2 scored")
    document = _report(app.traces)
    report = _evaluators(document)
    for key, row in report.items():  # the second round is the first again
        for outcome, count in OUTCOMES.items():
            assert count(row) == 2 * count(first[key]), (key, outcome)
    counts = _expected_counts(report)
    seen = server.query(COUNTS, until=lambda result: by_labels(result, *OUTCOME_KEYS) == counts)
    assert by_labels(seen, *OUTCOME_KEYS) == counts
    assert {key[:2] for key in counts} == {("graded", "answer"), ("exact", "answer"), ("length", "answer")}
    assert counts[("graded", "answer", "error")] > 0  # errors must stay out of both pass rates
    assert counts[("length", "answer", "undecided")] > 0

    # An evaluator that never decides (length) has no pass rate in either.
    decided = {key: row for key, row in report.items() if row["pass_rate"] is not None}
    assert decided.keys() == {("graded", "answer"), ("exact", "answer")}
    plain = by_labels(server.query_once(PLAIN_RATIO), *KEYS)
    assert plain == {key: row["pass_rate"] for key, row in decided.items()}

    # The rules see the final counts in an evaluation later than the query that saw them.
    seen_at = max(float(r["value"][0]) for r in seen)
    server.query(
        f"timestamp({PASS_RATE_RULE})",
        until=lambda result: (
            len(result) == len(decided) and min(float(r["value"][1]) for r in result) > seen_at
        ),
    )
    recorded = by_labels(server.query_once(PASS_RATE_RULE), *KEYS)
    assert recorded.keys() == decided.keys()
    for key, row in decided.items():
        assert recorded[key] == pytest.approx(row["pass_rate"], rel=1e-12, abs=1e-12), key

    mean = by_labels(server.query_once(MEAN_SCORE_RULE), *KEYS)  # evaluated with the pass rate
    assert mean == {key: pytest.approx(row["mean_score"], rel=1e-9) for key, row in report.items()}

    # The LLM calls' cost: the counter is the report's; the cost rule has the labels the alert sums by.
    usage = document["llm_usage"]
    assert [row["name"] for row in usage["models"]] == [MODEL]
    expected_cost = {("openai", MODEL): pytest.approx(usage["totals"]["cost_usd"], rel=1e-9)}
    assert usage["totals"]["cost_usd"] > 0
    cost = server.query(COST, until=lambda result: by_labels(result, *COST_KEYS) == expected_cost)
    cost_seen_at = max(float(r["value"][0]) for r in cost)
    server.query(
        f"timestamp({COST_RULE})",
        until=lambda result: bool(result) and min(float(r["value"][1]) for r in result) > cost_seen_at,
    )
    recorded_cost = by_labels(server.query_once(COST_RULE), "job", *COST_KEYS)
    assert recorded_cost.keys() == {("tracesim", "openai", MODEL)}
    assert all(value > 0 for value in recorded_cost.values())

    assert [target["health"] for target in server.target_health()] == ["up"]
    err = app.close()
    assert app.process.returncode == 0, err
