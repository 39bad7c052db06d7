"""Online scoring: results on the span, off the caller's path, with limits that hold."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

import tracesim
from tracesim.evaluators import EvalResult, ExactMatch, Levenshtein, evaluator
from tracesim.testing import CapturedSpans, capture_spans
from tracesim.tracefile import SpanRecord


def results(span: SpanRecord) -> dict[str, dict[str, Any]]:
    return {
        e.attributes["gen_ai.evaluation.name"]: dict(e.attributes)
        for e in span.event("gen_ai.evaluation.result")
    }


@pytest.fixture
def background() -> Iterator[CapturedSpans]:
    with capture_spans(scoring_mode="background") as captured:
        yield captured


def test_scores_land_on_the_span_of_a_sync_call(background: CapturedSpans) -> None:
    @tracesim.trace(kind="agent", evaluators=[Levenshtein(threshold=0.8), ExactMatch()], expected="Warsaw")
    def answer(question: str) -> str:
        return "Warsaw."

    assert answer("Where was Marie Curie born?") == "Warsaw."
    assert tracesim.force_flush()
    span = background.by_name("answer")
    found = results(span)
    assert found["levenshtein"]["gen_ai.evaluation.score.value"] == 0.86
    assert found["levenshtein"]["gen_ai.evaluation.score.label"] == "pass"
    assert found["levenshtein"]["tracesim.evaluation.passed"] is True
    assert found["levenshtein"]["tracesim.evaluation.threshold"] == 0.8
    assert json.loads(found["levenshtein"]["tracesim.evaluation.details"])["distance"] == 1
    assert found["exact"]["gen_ai.evaluation.score.value"] == 0.0
    assert found["exact"]["gen_ai.evaluation.score.label"] == "fail"
    assert span.attributes["tracesim.eval.levenshtein.score"] == 0.86
    assert span.attributes["tracesim.eval.levenshtein.label"] == "pass"
    assert span.attributes["tracesim.eval.levenshtein.passed"] is True
    assert span.attributes["tracesim.eval.exact.passed"] is False
    assert span.attributes["tracesim.expected.value"] == "Warsaw"


def test_scores_land_on_async_and_generator_spans(background: CapturedSpans) -> None:
    @tracesim.trace(evaluators=[ExactMatch()], expected="abc")
    async def fetch() -> str:
        await asyncio.sleep(0)
        return "abc"

    @tracesim.trace(evaluators=[ExactMatch()], expected="abc")
    def stream() -> Iterator[str]:
        yield from "abc"

    @tracesim.trace(evaluators=[ExactMatch()], expected="abc")
    async def astream() -> AsyncIterator[str]:
        for ch in "abc":
            yield ch

    async def consume() -> str:
        return "".join([c async for c in astream()])

    assert asyncio.run(fetch()) == "abc"
    assert "".join(stream()) == "abc"
    assert asyncio.run(consume()) == "abc"
    tracesim.force_flush()
    for name in ("fetch", "stream", "astream"):
        span = background.by_name(name)
        assert span.attributes["tracesim.eval.exact.passed"] is True, name


def test_a_stream_closed_early_is_not_scored(background: CapturedSpans) -> None:
    @tracesim.trace(evaluators=[ExactMatch()], expected="abc")
    def stream() -> Iterator[str]:
        yield from "abc"

    gen = stream()
    next(gen)
    gen.close()
    tracesim.force_flush()
    span = background.by_name("stream")
    assert span.event("gen_ai.evaluation.result") == []
    assert span.attributes["tracesim.generator.closed_early"] is True


def test_a_call_that_raises_is_not_scored(background: CapturedSpans) -> None:
    @tracesim.trace(evaluators=[ExactMatch()], expected="x")
    def fails() -> str:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        fails()
    tracesim.force_flush()
    span = background.by_name("fails")
    assert span.status_code == "ERROR"
    assert span.event("gen_ai.evaluation.result") == []


def test_the_span_duration_excludes_a_slow_evaluators_time(background: CapturedSpans) -> None:
    """Ordered by events, not timed: the evaluator cannot finish before the caller has returned."""
    returned = threading.Event()
    scored = threading.Event()

    @evaluator(threshold=0.5)
    def slow(output: Any, expected: Any) -> float:
        assert returned.wait(30)  # the evaluator's own work, which only ends after the call returned
        scored.set()
        return 1.0

    @tracesim.trace(evaluators=[slow], expected="ok")
    def quick() -> str:
        time.sleep(0.001)
        return "ok"

    quick()
    assert not scored.is_set()  # the caller did not wait for the evaluator
    returned_ns = time.time_ns()
    returned.set()
    assert tracesim.force_flush()
    span = background.by_name("quick")
    assert results(span)["slow"]["gen_ai.evaluation.score.value"] == 1.0
    assert span.duration_s >= 0.001
    assert span.end_time_unix_nano <= returned_ns  # the span measures the call, not the scoring


def test_an_evaluator_that_raises_gives_an_error_result(background: CapturedSpans) -> None:
    @evaluator
    def broken(output: Any, expected: Any) -> float:
        raise KeyError("missing field")

    @tracesim.trace(evaluators=[broken, ExactMatch()], expected="ok")
    def f() -> str:
        return "ok"

    assert f() == "ok"
    tracesim.force_flush()
    span = background.by_name("f")
    found = results(span)
    assert found["broken"]["tracesim.evaluation.status"] == "error"
    assert found["broken"]["error.type"] == "KeyError"
    assert "missing field" in found["broken"]["gen_ai.evaluation.explanation"]
    assert span.attributes["tracesim.eval.broken.status"] == "error"
    assert found["exact"]["tracesim.evaluation.passed"] is True  # the others still ran
    assert span.status_code == "OK"  # the call itself succeeded
    assert tracesim.scoring_stats().errors == 1


def test_an_evaluator_returning_garbage_gives_an_error_result(background: CapturedSpans) -> None:
    class Garbage(ExactMatch):
        def evaluate(self, output: Any, expected: Any, *, input: Any = None) -> EvalResult:
            return "not a result"  # type: ignore[return-value]

    @tracesim.trace(evaluators=[Garbage(name="garbage")], expected="ok")
    def f() -> str:
        return "ok"

    f()
    tracesim.force_flush()
    found = results(background.by_name("f"))
    assert found["garbage"]["error.type"] == "TypeError"


def test_a_hanging_evaluator_times_out_and_never_holds_the_span() -> None:
    release = threading.Event()

    @evaluator(timeout_s=0.2)
    def hangs(output: Any, expected: Any) -> float:
        release.wait(30)
        return 1.0

    @evaluator
    def forever(output: Any, expected: Any) -> float:  # no timeout_s: bounded by max_defer_s
        release.wait(30)
        return 1.0

    @tracesim.trace(evaluators=[hangs, ExactMatch()], expected="ok")
    def f() -> str:
        return "ok"

    @tracesim.trace(evaluators=[forever], expected="ok")
    def g() -> str:
        return "ok"

    with capture_spans(scoring_mode="background", max_defer_s=0.5, scoring_workers=1) as captured:
        f()
        assert tracesim.force_flush(5)  # the time-out freed the job
        span = captured.by_name("f")
        assert results(span)["hangs"]["error.type"] == "timeout"
        assert results(span)["exact"]["tracesim.evaluation.passed"] is True
        g()  # the single worker is stuck in `hangs`: a replacement worker serves this job
        deadline = time.monotonic() + 10
        while not captured.named("g") and time.monotonic() < deadline:
            time.sleep(0.01)  # waiting for the watchdog, which ends the span at max_defer_s
        (span_g,) = captured.named("g")
        assert span_g.attributes["tracesim.evaluation.deferred"] == ["forever"]
        release.set()
        assert tracesim.force_flush(10)
        # the late result went on a carrier span linked to g's span
        (carrier,) = captured.named("evaluation forever")
        assert carrier.attributes["openinference.span.kind"] == "EVALUATOR"
        assert carrier.links[0].span_id == span_g.span_id
        assert carrier.parent_span_id == span_g.span_id
        assert carrier.trace_id == span_g.trace_id
        assert carrier.attributes["tracesim.eval.forever.score"] == 1.0
        # placed inside g's time (at its end), so the trace's latency stays the call's
        assert carrier.start_time_unix_nano == carrier.end_time_unix_nano == span_g.end_time_unix_nano
        (event,) = carrier.event("gen_ai.evaluation.result")
        assert event.time_unix_nano > span_g.end_time_unix_nano + 400_000_000  # when it really came
        stats = tracesim.scoring_stats()
    assert stats.timeouts == 1
    assert stats.late == 1


def test_a_full_queue_ends_spans_unscored_counts_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()

    @evaluator
    def blocked(output: Any, expected: Any) -> float:
        release.wait(30)
        return 1.0

    @tracesim.trace(evaluators=[blocked], expected="ok")
    def f(i: int) -> str:
        return "ok"

    with capture_spans(scoring_mode="background", scoring_queue_size=2, scoring_workers=1) as captured:
        with caplog.at_level(logging.WARNING, logger="tracesim"):
            for i in range(6):
                assert f(i) == "ok"
        dropped = [s for s in captured.named("f") if s.attributes.get("tracesim.evaluation.dropped")]
        assert len(dropped) == 4  # ended at once, unscored, marked
        release.set()
        assert tracesim.force_flush(10)
        spans = captured.named("f")
        stats = tracesim.scoring_stats()
    assert len(spans) == 6  # no span lost
    scored = [s for s in spans if "tracesim.eval.blocked.score" in s.attributes]
    assert len(scored) == 2
    assert stats.dropped == 4
    assert len([r for r in caplog.records if "scoring queue is full" in r.getMessage()]) == 1


def test_sampling_is_decided_by_the_trace_id_and_visible() -> None:
    from tracesim._scoring._selection import sample_unit

    # Pinned values and the cross-process check live in test_data_kept.py.
    units = [sample_unit(i * 0x9E3779B97F4A7C15 + 12345) for i in range(20_000)]
    assert 0.47 < sum(u < 0.5 for u in units) / len(units) < 0.53  # a fair coin

    @tracesim.trace(evaluators=[ExactMatch(sample_rate=0.5), Levenshtein(sample_rate=0.2)], expected="ok")
    def inner() -> str:
        return "ok"

    @tracesim.trace(evaluators=[ExactMatch(name="outer_exact", sample_rate=0.5)], expected="ok")
    def outer() -> str:
        return inner()

    with capture_spans() as captured:
        for _ in range(300):
            outer()
    by_trace: dict[str, dict[str, SpanRecord]] = {}
    for span in captured.spans:
        by_trace.setdefault(span.trace_id, {})[span.name] = span
    scored_exact = 0
    for spans in by_trace.values():
        unit = sample_unit(int(next(iter(spans.values())).trace_id, 16))
        inner_span, outer_span = spans["inner"], spans["outer"]
        # the same decision for every span of a trace, and nested across rates
        assert ("tracesim.eval.exact.score" in inner_span.attributes) == (unit < 0.5)
        assert ("tracesim.eval.outer_exact.score" in outer_span.attributes) == (unit < 0.5)
        assert ("tracesim.eval.levenshtein.score" in inner_span.attributes) == (unit < 0.2)
        not_sampled = inner_span.attributes.get("tracesim.evaluation.not_sampled", [])
        assert ("levenshtein" in not_sampled) == (unit >= 0.2)
        scored_exact += unit < 0.5
    assert 100 < scored_exact < 200


def test_the_global_sample_rate_multiplies_each_evaluators() -> None:
    @tracesim.trace(evaluators=[ExactMatch()], expected="ok")
    def f() -> str:
        return "ok"

    with capture_spans(evaluation_sample_rate=0.0) as captured:
        f()
    span = captured.by_name("f")
    assert span.attributes["tracesim.evaluation.not_sampled"] == ["exact"]
    assert span.event("gen_ai.evaluation.result") == []


def test_scoring_can_be_turned_off() -> None:
    @tracesim.trace(evaluators=[ExactMatch()], expected="ok")
    def f() -> str:
        return "ok"

    with capture_spans(scoring_mode="off") as captured:
        f()
    assert captured.by_name("f").event("gen_ai.evaluation.result") == []


def test_async_evaluators_run_on_the_loop_with_a_concurrency_limit(background: CapturedSpans) -> None:
    running = 0
    peak = 0

    @evaluator(max_concurrency=2, timeout_s=5)
    async def judge(output: Any, expected: Any) -> float:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.05)
        running -= 1
        return 1.0

    @tracesim.trace(evaluators=[judge], expected="ok")
    def f(i: int) -> str:
        return "ok"

    assert judge.is_async
    for i in range(8):
        f(i)
    assert tracesim.force_flush(10)
    spans = background.named("f")
    assert len(spans) == 8
    assert all(s.attributes["tracesim.eval.judge.score"] == 1.0 for s in spans)
    assert peak == 2


def test_an_async_evaluator_time_out(background: CapturedSpans) -> None:
    @evaluator(timeout_s=0.1)
    async def slow_judge(output: Any, expected: Any) -> float:
        await asyncio.sleep(10)
        return 1.0

    @tracesim.trace(evaluators=[slow_judge], expected="ok")
    def f() -> str:
        return "ok"

    f()
    assert tracesim.force_flush(5)
    assert results(background.by_name("f"))["slow_judge"]["error.type"] == "timeout"


def test_sixteen_threads_times_500_scored_calls_put_each_result_on_its_own_span() -> None:
    @evaluator(threshold=None)
    def echo(output: Any, expected: Any) -> float:
        return float(output)

    @tracesim.trace(evaluators=[echo, ExactMatch()], expected=lambda n: str(n))
    def work(n: int) -> str:
        return str(n)

    threads, calls = 16, 500
    with capture_spans(scoring_mode="background", scoring_queue_size=threads * calls) as captured:

        def run(t: int) -> None:
            for i in range(calls):
                work(t * calls + i)

        pool = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        assert tracesim.force_flush(120)
        spans = captured.named("work")
        assert tracesim.scoring_stats().dropped == 0
    assert len(spans) == threads * calls
    for span in spans:
        n = int(span.attributes["input.value"])
        assert span.attributes["tracesim.eval.echo.score"] == float(n)
        assert span.attributes["tracesim.eval.exact.passed"] is True
        assert span.attributes["tracesim.expected.value"] == str(n)


def test_explanations_are_redacted(background: CapturedSpans) -> None:
    @evaluator
    def chatty(output: Any, expected: Any) -> EvalResult:
        return EvalResult(name="chatty", score=0.0, explanation="the user marie@curie.org asked")

    @tracesim.trace(evaluators=[chatty], expected="x")
    def f() -> str:
        return "y"

    f()
    tracesim.force_flush()
    assert results(background.by_name("f"))["chatty"]["gen_ai.evaluation.explanation"] == (
        "the user [REDACTED:email] asked"
    )


def test_score_records_feedback_on_a_carrier_span() -> None:
    with capture_spans() as captured:

        @tracesim.trace(kind="agent")
        def answer(question: str) -> str:
            return "Warsaw"

        with tracesim.span("request") as request:
            answer("q")
        target = captured.by_name("answer")
        tracesim.score(request, name="user_rating", value=1.0, label="helpful", explanation="thanks!")
        (carrier,) = captured.named("evaluation user_rating")
    assert carrier.attributes["openinference.span.kind"] == "EVALUATOR"
    assert carrier.attributes["tracesim.evaluation.annotator_kind"] == "HUMAN"
    assert carrier.attributes["tracesim.eval.user_rating.score"] == 1.0
    assert carrier.attributes["tracesim.eval.user_rating.label"] == "helpful"
    request_span = captured.by_name("request")
    assert [link.span_id for link in carrier.links] == [request_span.span_id]
    assert carrier.trace_id == target.trace_id == request_span.trace_id
    (event,) = carrier.event("gen_ai.evaluation.result")
    assert event.attributes["gen_ai.evaluation.explanation"] == "thanks!"
    # at the end of the span it rates: the trace's time range is the request's
    assert carrier.start_time_unix_nano == carrier.end_time_unix_nano == request_span.end_time_unix_nano


def test_feedback_for_a_bare_span_context_stands_at_the_time_it_was_given() -> None:
    with capture_spans() as captured:
        with tracesim.span("request") as request:
            pass
        context = request.span_context  # what a web app keeps for the feedback request
        before = time.time_ns()
        tracesim.score(context, name="thumbs", value=0.0)
        (carrier,) = captured.named("evaluation thumbs")
    assert carrier.start_time_unix_nano == carrier.end_time_unix_nano >= before
    assert carrier.parent_span_id == captured.by_name("request").span_id


def test_score_rejects_unusable_arguments() -> None:
    with capture_spans(), tracesim.span("s") as s:
        with pytest.raises(ValueError, match="at least one"):
            tracesim.score(s, name="x")
        with pytest.raises(TypeError, match="number"):
            tracesim.score(s, name="x", value="high")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="cannot score"):
            tracesim.score("span-id", name="x", value=1.0)


def test_span_blocks_are_scored_from_their_output() -> None:
    with capture_spans() as captured:
        with tracesim.span("step", evaluators=[ExactMatch()], expected="done") as s:
            s.set_output("done")
        with tracesim.span("no-output", evaluators=[ExactMatch()], expected="done"):
            pass
    assert captured.by_name("step").attributes["tracesim.eval.exact.passed"] is True
    assert captured.by_name("no-output").event("gen_ai.evaluation.result") == []


def test_evaluators_from_config_mappings_and_strings() -> None:
    @tracesim.trace(
        evaluators=[{"type": "levenshtein", "threshold": 0.9}, "rouge:rouge_type=rouge1"], expected="a b"
    )
    def f() -> str:
        return "a b"

    with capture_spans() as captured:
        f()
    attributes = captured.by_name("f").attributes
    assert attributes["tracesim.eval.levenshtein.passed"] is True
    assert attributes["tracesim.eval.rouge.score"] == 1.0


def test_bad_evaluators_fail_at_decoration_time() -> None:
    with pytest.raises(tracesim.ConfigError, match="type"):

        @tracesim.trace(evaluators=[{"type": "no-such-metric"}])
        def f() -> None:
            return None

    with pytest.raises(tracesim.ConfigError, match="distinct names"):

        @tracesim.trace(evaluators=[ExactMatch(), ExactMatch()])
        def g() -> None:
            return None


def test_evaluation_results_as_otlp_log_records(tmp_path: Any) -> None:
    from tracesim.tracefile import read_jsonl

    @tracesim.trace(evaluators=[ExactMatch()], expected="ok")
    def f() -> str:
        return "ok"

    tracesim.configure(jsonl_path="t.jsonl", evaluation_log_events=True)
    f()
    assert tracesim.force_flush()
    (span,) = [s for s in __import__("tracesim").tracefile.load_spans(tmp_path / "t.jsonl") if s.name == "f"]
    (request,) = read_jsonl(tmp_path / "t.logs.jsonl")
    (record,) = request["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert record["eventName"] == "gen_ai.evaluation.result"
    assert record["traceId"] == span.trace_id
    assert record["spanId"] == span.span_id
    attributes = {a["key"]: a["value"] for a in record["attributes"]}
    assert attributes["gen_ai.evaluation.name"] == {"stringValue": "exact"}
    assert attributes["gen_ai.evaluation.score.value"] == {"doubleValue": 1.0}


def test_scores_arrive_without_a_flush(background: CapturedSpans) -> None:
    """Idle workers look for work on their own: a lone call is scored without force_flush."""

    @tracesim.trace(evaluators=[ExactMatch()], expected="ok")
    def f() -> str:
        return "ok"

    f()
    deadline = time.monotonic() + 10
    while not background.named("f") and time.monotonic() < deadline:
        time.sleep(0.01)  # polling for the worker's own schedule (50 ms), with a deadline
    (span,) = background.named("f")
    assert span.attributes["tracesim.eval.exact.passed"] is True


def test_each_result_event_says_who_made_it_on_the_span_and_on_a_late_carrier() -> None:
    """The annotator kind the online sinks get is on the event too, so that replay and backfill
    send a judge's result to Phoenix and MLflow as the judge's, with the same result id."""
    from tracesim.evaluators import LLMJudge

    assert LLMJudge.annotator_kind == "LLM"

    class Judged(Levenshtein):
        annotator_kind = "LLM"

    release = threading.Event()

    @evaluator
    def slow(output: Any, expected: Any) -> float:
        release.wait(30)
        return 1.0

    with capture_spans(scoring_mode="background", max_defer_s=0.2) as captured:

        @tracesim.trace(evaluators=[Judged(name="judged"), ExactMatch(), slow], expected="Warsaw")
        def answer() -> str:
            return "Warsaw"

        answer()
        waited_until = time.monotonic() + 30  # the span ends unscored by slow after max_defer_s:
        while not any(s.name == "answer" for s in captured.spans) and time.monotonic() < waited_until:
            time.sleep(0.01)  # slow's result then lands on a carrier
        release.set()
        assert tracesim.force_flush(10)
        span = captured.by_name("answer")
        (carrier,) = captured.named("evaluation slow")
    kinds = {
        e.attributes["gen_ai.evaluation.name"]: e.attributes["tracesim.evaluation.annotator_kind"]
        for e in span.events
        if e.name == "gen_ai.evaluation.result"
    }
    assert kinds == {"judged": "LLM", "exact": "CODE"}
    (late,) = [e for e in carrier.events if e.name == "gen_ai.evaluation.result"]
    assert late.attributes["tracesim.evaluation.annotator_kind"] == "CODE"
