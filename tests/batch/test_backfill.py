"""Backfill: the scores of a batch run over trace files, sent back onto the spans they score."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pandas", reason="the batch tests need the 'dask' extra (pandas)")

from batchdata import traced_file
from otlp_sink import OtlpSink, refused_url

import tracesim
from tracesim import _semconv as sc
from tracesim.batch import Spans, backfill, score
from tracesim.batch._backfill import LEDGER
from tracesim.cli import main
from tracesim.evaluators import Evaluator, Measurement, register, unregister
from tracesim.tracefile import TraceFileWarning, load_spans


def scored(tmp_path: Path, evaluators: tuple[str, ...] = ("exact", "levenshtein:threshold=0.5")) -> Path:
    """A trace file's answer spans scored by a local batch run; the results directory."""
    traces = traced_file(tmp_path)
    results = tmp_path / "scores"
    score(Spans(str(traces), name="answer"), evaluators=list(evaluators), output=results, engine="local")
    return results


def carriers(path: Path) -> list[Any]:
    return [s for s in load_spans(path) if s.attributes.get(sc.SPAN_KIND) == "EVALUATOR"]


def test_carrier_spans_join_the_scored_spans_trace_and_link_to_it(tmp_path: Path) -> None:
    results = scored(tmp_path)
    with pytest.warns(TraceFileWarning):  # the file's two bad lines, skipped
        answers = {s.span_id: s for s in load_spans(tmp_path / "traces.jsonl") if s.name == "answer"}
    out = tmp_path / "carriers.jsonl"

    report = backfill(results, to=out)

    assert report.ok, report.failed_parts
    found = carriers(out)
    # three answers: one scorable with an expected output; one without (skipped: nothing to
    # compare with); one whose output was cut when traced (a bad row)
    assert report.carriers == len(found) == 2
    # bad rows: the cut answer and the file's two bad lines; skipped: both results of the
    # answer with no expected output
    assert report.unscored == 3 + 2
    by_name = {s.name: s for s in found}
    assert set(by_name) == {"evaluation exact", "evaluation levenshtein"}
    for carrier in found:
        target = answers[carrier.links[0].span_id]
        assert target.attributes[sc.OUTPUT_VALUE] == "Warsaw"
        assert carrier.trace_id == target.trace_id
        assert carrier.parent_span_id == target.span_id
        event = next(e for e in carrier.events if e.name == sc.EVALUATION_EVENT)
        assert event.attributes[sc.EVALUATION_SCORE_VALUE] == 1.0
    assert by_name["evaluation levenshtein"].attributes["tracesim.eval.levenshtein.passed"] is True


def test_running_the_same_backfill_again_sends_nothing(tmp_path: Path) -> None:
    results = scored(tmp_path)
    out = tmp_path / "carriers.jsonl"
    first = backfill(results, to=out)
    lines = out.read_bytes()

    again = backfill(results, to=out)

    assert (first.parts, first.already_sent) == (1, 0)
    assert (again.parts, again.already_sent, again.carriers) == (0, 1, 0)
    assert out.read_bytes() == lines
    ledger = [json.loads(line) for line in (results / LEDGER).read_text().splitlines()]
    assert [entry["destination"] for entry in ledger] == [f"file:{out}"]
    # force sends again, with the same carrier span ids: a backend keeps one copy of each
    forced = backfill(results, to=out, force=True)
    ids = [s.span_id for s in carriers(out)]
    assert forced.carriers == 2
    assert len(ids) == 4
    assert len(set(ids)) == 2


def test_scores_made_again_are_sent_again(tmp_path: Path) -> None:
    results = scored(tmp_path)
    out = tmp_path / "carriers.jsonl"
    backfill(results, to=out)
    score(
        Spans(str(tmp_path / "traces.jsonl"), name="answer"),
        evaluators=["exact", "levenshtein:threshold=0.5"],
        output=results,
        engine="local",
        overwrite=True,
        output_format="jsonl",  # other part files: other content
    )
    report = backfill(results, to=out)
    assert report.parts == 1
    assert report.carriers == 2


def test_an_endpoint_that_is_down_fails_the_part_and_the_next_run_sends_it(tmp_path: Path) -> None:
    results = scored(tmp_path)
    down = backfill(results, to=refused_url())
    assert not down.ok
    assert down.carriers == 0
    [(where, why)] = down.failed_parts.items()
    assert where.startswith("part-00000.parquet → otlp:")
    assert "did not accept" in why

    sink = OtlpSink()
    try:
        up = backfill(results, to=sink.url)
        assert up.ok
        assert up.carriers == 2
        assert sorted(sink.delivered_names) == ["evaluation exact", "evaluation levenshtein"]
        assert backfill(results, to=sink.url).carriers == 0  # the ledger has it now
        assert len(sink.requests) == 1
    finally:
        sink.close()


class Echo(Evaluator):
    """Explains itself with the output it saw (which holds a secret here)."""

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        return Measurement(1.0, explanation=f"saw {output}", label=f"for {expected}")


def score_with_echo(traces: Path, results: Path) -> None:
    """Score the answer spans of ``traces`` with `Echo` into ``results``, locally."""
    register("echo_secret", Echo, replace=True)
    try:
        score(
            Spans(str(traces), name="answer"),
            evaluators=["echo_secret:name=echo"],
            output=results,
            engine="local",
        )
    finally:
        unregister("echo_secret")


def test_what_is_sent_is_redacted(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    tracesim.configure(jsonl_path=str(path), scoring_mode="off", redact_patterns="none")
    with tracesim.span("answer", kind="agent", input="q", expected="marie@curie.org") as span:
        span.set_output("key sk-proj-Abc123Def456Ghi789Jkl012")
    tracesim.shutdown()
    score_with_echo(path, tmp_path / "s")
    out = tmp_path / "carriers.jsonl"
    assert backfill(tmp_path / "s", to=out).carriers == 1
    [carrier] = carriers(out)
    text = out.read_text()
    assert "curie.org" not in text
    assert "Abc123Def456" not in text
    assert "saw key [REDACTED:api_key]" in text
    assert carrier.attributes["tracesim.eval.echo.label"] == "for [REDACTED:email]"


def test_a_backfill_sends_through_the_configured_redaction_and_places_carriers_in_the_spans_time(
    tmp_path: Path,
) -> None:
    path = tmp_path / "traces.jsonl"
    tracesim.configure(jsonl_path=str(path), scoring_mode="off")
    with tracesim.span("answer", kind="agent", input="q", expected="ticket PRJ-4411") as span:
        span.set_output("done for PRJ-4411")
    tracesim.shutdown()
    [scored_span] = [s for s in load_spans(path) if s.name == "answer"]
    score_with_echo(path, tmp_path / "s")
    try:
        # the application's own rule: ticket numbers are private; the backfill runs beside it
        tracesim.configure(
            exporters="none",
            scoring_mode="off",
            redact=lambda text, key: text.replace("PRJ-4411", "PRJ-****"),
        )
        out = tmp_path / "carriers.jsonl"
        assert backfill(tmp_path / "s", to=out).carriers == 1
    finally:
        tracesim.shutdown()
    # The secret as written, and its digits in any text the carrier holds. Not "4411" anywhere in
    # the file: a random trace id or a nanosecond time stamp holds it now and then (a flaky test).
    assert "PRJ-4411" not in out.read_text()
    [carrier] = carriers(out)
    texts = [v for v in carrier.attributes.values() if isinstance(v, str)]
    texts += [v for event in carrier.events for v in event.attributes.values() if isinstance(v, str)]
    assert [t for t in texts if "PRJ-" in t], texts
    assert not [t for t in texts if "4411" in t], texts
    assert carrier.attributes["tracesim.eval.echo.label"] == "for ticket PRJ-****"
    # a zero-length span at the scored span's end: the trace's latency stays the call's
    assert carrier.start_time_unix_nano == carrier.end_time_unix_nano == scored_span.end_time_unix_nano


def test_results_without_span_ids_and_missing_destinations_are_refused(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"output": "a", "expected": "a"}) + "\n")
    score(str(rows), evaluators=["exact"], output=tmp_path / "s", engine="local")
    from tracesim.batch import SourceError

    with pytest.raises(SourceError, match="no trace_id/span_id"):
        backfill(tmp_path / "s", to=tmp_path / "c.jsonl")
    with pytest.raises(ValueError, match="needs a destination"):
        backfill(tmp_path / "s")
    with pytest.raises(FileNotFoundError, match="holds no results"):
        backfill(tmp_path / "empty", to=tmp_path / "c.jsonl")


def test_the_command_sends_and_says_what_it_sent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = scored(tmp_path)
    out = tmp_path / "carriers.jsonl"
    assert main(["backfill", str(results), "--to", str(out)]) == 0
    first = capsys.readouterr().out
    assert re.search(r"carrier spans\W+2 ", first), first
    assert main(["backfill", str(results), "--to", str(out)]) == 0
    second = capsys.readouterr().out
    assert re.search(r"parts already sent \(ledger\)\W+1 ", second), second
    assert main(["backfill", str(results), "--to", refused_url()]) == 1
    assert main(["backfill", str(tmp_path / "nowhere")]) == 2


@pytest.mark.parametrize("end", ["0", str(2**64 - 1)], ids=["epoch", "uint64-max"])
def test_a_span_whose_end_no_clock_gives_is_scored_and_its_carrier_stands_at_the_backfill(
    tmp_path: Path, end: str
) -> None:
    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "name": "answer",
        "kind": 1,
        "startTimeUnixNano": "0",
        "endTimeUnixNano": end,
        "attributes": [
            {"key": "output.value", "value": {"stringValue": "Warsaw"}},
            {"key": "tracesim.expected.value", "value": {"stringValue": "Warsaw"}},
        ],
    }
    line = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": [span]}]}]}
    traces = tmp_path / "odd.jsonl"
    traces.write_text(json.dumps(line) + "\n", encoding="utf-8")
    report = score(Spans(str(traces)), evaluators=["exact"], output=tmp_path / "s", engine="local")
    assert (report.records, dict(report.bad_rows)) == (1, {})
    out = tmp_path / "carriers.jsonl"
    assert backfill(tmp_path / "s", to=out).carriers == 1
    [carrier] = carriers(out)
    assert carrier.start_time_unix_nano == carrier.end_time_unix_nano > 0  # now: a time no reader refuses


def test_a_backfill_from_the_command_line_is_not_stopped_by_an_unrelated_bad_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = scored(tmp_path)
    config = "scoring_workers: 0\nredact_patterns: [email]\n"
    (tmp_path / "tracesim.yaml").write_text(config, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "carriers.jsonl"
    # no NotConfiguredWarning either: warnings are errors here
    assert main(["backfill", str(results), "--to", str(out)]) == 0
    assert len(carriers(out)) == 2


class Picky(Evaluator):
    """Exact match that cannot judge the answer ``Warsaw``: its result there is an error."""

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
        if output == "Warsaw":
            raise RuntimeError("cannot judge Warsaw")
        return 1.0 if output == expected else 0.0


def test_error_results_are_sent_and_counted_like_scores(tmp_path: Path) -> None:
    # An evaluator that failed on a span is news for that span: backfill sends the error result
    # (status error, its explanation) as online scoring would, and counts it among those sent.
    traces = traced_file(tmp_path)
    register("picky", Picky, replace=True)
    try:
        score(
            Spans(str(traces), name="answer"),
            evaluators=["picky:name=picky", "exact"],
            output=tmp_path / "s",
            engine="local",
        )
    finally:
        unregister("picky")
    out = tmp_path / "carriers.jsonl"

    report = backfill(tmp_path / "s", to=out)

    assert (report.ok, report.results_sent, report.carriers) == (True, 2, 2)
    by_name = {s.name: s for s in carriers(out)}
    assert set(by_name) == {"evaluation picky", "evaluation exact"}
    errored = by_name["evaluation picky"]
    assert errored.attributes["tracesim.eval.picky.status"] == "error"
    [event] = [e for e in errored.events if e.name == sc.EVALUATION_EVENT]
    assert event.attributes[sc.EVALUATION_STATUS] == "error"
    assert event.attributes[sc.EVALUATION_EXPLANATION] == "RuntimeError: cannot judge Warsaw"
    # the scored span without an expected output: both results skipped, nothing to send
    assert report.unscored == 3 + 2
