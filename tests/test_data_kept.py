"""Nothing tracesim said it kept is lost, and what it records is what happened.

Each test here fails on a one-line bug that once went unnoticed: a span ending at the
``max_defer_s`` expiry instead of the call's end, a result event without its timestamp, a
per-process sampling decision, a span lost to a hostile exception, a scored output changed
after the call.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

import tracesim
from tracesim._scoring._selection import sample_unit
from tracesim.evaluators import ExactMatch, evaluator
from tracesim.testing import capture_spans
from tracesim.tracefile import SpanRecord


def _results(span: SpanRecord) -> dict[str, SpanRecord | Any]:
    return {e.attributes["gen_ai.evaluation.name"]: e for e in span.event("gen_ai.evaluation.result")}


def test_a_span_ended_at_the_deferral_deadline_keeps_the_calls_end_time() -> None:
    release = threading.Event()

    @evaluator
    def slow(output: Any, expected: Any) -> float:
        release.wait(30)
        return 1.0

    @tracesim.trace(evaluators=[slow], expected="ok")
    def call() -> str:
        return "ok"

    with capture_spans(scoring_mode="background", max_defer_s=0.3) as captured:
        before = time.time_ns()
        call()
        returned = time.time_ns()
        deadline = time.monotonic() + 20
        while not captured.named("call") and time.monotonic() < deadline:
            time.sleep(0.01)  # the watchdog ends the span at max_defer_s
        (span,) = captured.named("call")
        release.set()
        assert tracesim.force_flush(10)
    assert span.attributes["tracesim.evaluation.deferred"] == ["slow"]
    # Ended by the watchdog >= 0.3 s later, but stamped with the call's own end.
    assert before <= span.end_time_unix_nano <= returned
    assert span.duration_s < 0.3


def test_the_result_event_is_stamped_with_the_calls_end() -> None:
    @tracesim.trace(evaluators=[ExactMatch()], expected="ok")
    def call() -> str:
        return "ok"

    with capture_spans(scoring_mode="background") as captured:
        call()
        assert tracesim.force_flush(10)
    span = captured.by_name("call")
    (event,) = span.event("gen_ai.evaluation.result")
    assert event.time_unix_nano == span.end_time_unix_nano


# Pinned: a change in how the sampling unit is computed changes which traces are scored, in
# every service of a trace at once; it must be deliberate.
PINNED_UNITS = {
    1: 0.566561575172281,
    0x4BF92F3577B34DA6A3CE929D0E0E4736: 0.36630289691810264,
    2**127 - 1: 0.28171924549921085,
}


def test_the_sampling_decision_is_the_same_in_every_process() -> None:
    assert {trace_id: sample_unit(trace_id) for trace_id in PINNED_UNITS} == PINNED_UNITS
    ids = sorted(PINNED_UNITS)
    code = f"from tracesim._scoring._selection import sample_unit; print([sample_unit(t) for t in {ids!r}])"
    for seed in ("0", "1", "random"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert done.stdout.strip() == str([PINNED_UNITS[t] for t in sorted(PINNED_UNITS)])


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ is broken")


def test_a_span_is_kept_when_the_exceptions_str_raises() -> None:
    @tracesim.trace
    def call() -> None:
        raise Unprintable()

    with capture_spans() as captured, pytest.raises(Unprintable):
        call()
    span = captured.by_name("call")
    assert span.status_code == "ERROR"
    assert span.attributes["error.type"].endswith("Unprintable")
    assert span.event("exception")[0].attributes["exception.type"].endswith("Unprintable")


def test_a_generator_yielding_a_hostile_str_subclass_keeps_its_span() -> None:
    class Chunk(str):
        def __len__(self) -> int:
            raise RuntimeError("no len for you")

    @tracesim.trace(evaluators=[ExactMatch()], expected="ab")
    def stream() -> Iterator[str]:
        yield Chunk("a")
        yield Chunk("b")

    with capture_spans() as captured:
        assert [str.__str__(c) for c in stream()] == ["a", "b"]
    span = captured.by_name("stream")
    assert span.attributes["output.value"] == "ab"
    assert span.attributes["tracesim.eval.exact.passed"] is True


def test_background_scoring_sees_the_output_as_returned_not_as_mutated_later() -> None:
    seen: list[Any] = []
    gate = threading.Event()

    @evaluator
    def remember(output: Any, expected: Any) -> float:
        gate.wait(10)
        seen.append(list(output))
        return 1.0 if output == expected else 0.0

    @tracesim.trace(evaluators=[remember], expected=["Warsaw"])
    def answer() -> list[str]:
        return ["Warsaw"]

    with capture_spans(scoring_mode="background") as captured:
        result = answer()
        result.append("Paris")  # the caller keeps using its list
        gate.set()
        assert tracesim.force_flush(10)
    span = captured.by_name("answer")
    assert seen == [["Warsaw"]]
    assert span.attributes["output.value"] == '["Warsaw"]'
    assert span.attributes["tracesim.eval.remember.score"] == 1.0


def test_an_async_generator_abandoned_at_loop_end_is_closed_early_not_an_error() -> None:
    @tracesim.trace
    async def stream() -> AsyncIterator[str]:
        for i in range(5):
            yield f"chunk{i} "
            await asyncio.sleep(0)

    async def main() -> None:
        async for item in stream():
            if item.startswith("chunk1"):
                break  # abandoned: asyncio closes it when the loop shuts down

    with capture_spans() as captured:
        asyncio.run(main())
    span = captured.by_name("stream")
    assert span.status_code == "OK"
    assert span.attributes["tracesim.generator.closed_early"] is True
    assert span.event("exception") == []


def test_a_cancelled_consumer_task_still_records_the_generators_own_errors() -> None:
    @tracesim.trace
    async def stream() -> AsyncIterator[str]:
        yield "a"
        raise ValueError("the generator's own failure")

    async def main() -> None:
        async for _ in stream():
            pass

    with capture_spans() as captured, pytest.raises(ValueError, match="own failure"):
        asyncio.run(main())
    assert captured.by_name("stream").status_code == "ERROR"


def test_a_forked_child_counts_only_its_own_scoring(tmp_path: Path) -> None:
    if not hasattr(os, "fork"):
        pytest.skip("os.fork is not available on this platform")
    code = textwrap.dedent(
        """
        import os, tracesim
        from tracesim.evaluators import ExactMatch
        tracesim.configure(jsonl_path="t.jsonl", scoring_mode="background")

        @tracesim.trace(evaluators=[ExactMatch()], expected="ok")
        def f():
            return "ok"

        for _ in range(5):
            f()
        tracesim.force_flush(10)
        pid = os.fork()
        if pid == 0:
            stats = tracesim.scoring_stats()
            before = (stats.submitted, stats.completed, stats.results)
            f()
            tracesim.force_flush(10)
            stats = tracesim.scoring_stats()
            print("child", before, (stats.submitted, stats.completed, stats.results), flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
        stats = tracesim.scoring_stats()
        print("parent", (stats.submitted, stats.completed, stats.results), flush=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.strip().splitlines())
    assert lines["child"] == "(0, 0, 0) (1, 1, 1)"
    assert lines["parent"] == "(5, 5, 5)"
