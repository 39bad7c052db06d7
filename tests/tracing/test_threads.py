"""Parents stay right across threads; the documented helpers carry context into pools."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import tracesim
from tracesim import _runtime
from tracesim.testing import capture_spans


@tracesim.trace
def inner(tag: str) -> str:
    return tag


@tracesim.trace
def outer(tag: str) -> str:
    return inner(tag)


def test_sixteen_threads_times_500_nested_calls_have_no_cross_talk() -> None:
    threads, calls = 16, 500
    barrier = threading.Barrier(threads)

    def worker(t: int) -> None:
        barrier.wait()
        for i in range(calls):
            assert outer(f"{t}:{i}") == f"{t}:{i}"

    with capture_spans() as captured:
        pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        spans = captured.spans

    outers = {s.span_id: s for s in spans if s.name == "outer"}
    inners = [s for s in spans if s.name == "inner"]
    assert len(outers) == len(inners) == threads * calls
    for child in inners:
        parent = outers[child.parent_span_id]
        assert parent.attributes["input.value"] == child.attributes["input.value"]
        assert parent.trace_id == child.trace_id
        assert parent.parent_span_id is None
    assert len({s.trace_id for s in outers.values()}) == threads * calls


def test_context_thread_pool_executor_keeps_the_submitters_span() -> None:
    with capture_spans() as captured:
        with tracesim.span("batch"), tracesim.ContextThreadPoolExecutor(max_workers=4) as pool:
            assert list(pool.map(inner, ["a", "b", "c", "d"])) == ["a", "b", "c", "d"]
            assert pool.submit(inner, tag="e").result() == "e"
        batch = captured.by_name("batch")
        children = captured.named("inner")
    assert len(children) == 5
    assert {c.parent_span_id for c in children} == {batch.span_id}


def test_propagate_context_carries_the_span_into_a_plain_thread_and_pool() -> None:
    with capture_spans() as captured:
        with tracesim.span("crawl"):
            thread = threading.Thread(target=tracesim.propagate_context(inner), args=("t",))
            thread.start()
            thread.join()
            with ThreadPoolExecutor(max_workers=2) as pool:
                pool.submit(tracesim.propagate_context(inner), "p").result()
                # without it, a plain pool starts a new trace: the reason the helpers exist
                pool.submit(inner, "orphan").result()
        crawl = captured.by_name("crawl")
        by_tag = {s.attributes["input.value"]: s for s in captured.named("inner")}
    assert by_tag["t"].parent_span_id == crawl.span_id
    assert by_tag["p"].parent_span_id == crawl.span_id
    assert by_tag["orphan"].parent_span_id is None
    assert by_tag["orphan"].trace_id != crawl.trace_id


def test_shutdown_ends_the_scoring_threads_and_frees_the_configuration(tmp_path: Path) -> None:
    # A service that reconfigures (tests, notebooks, a reload) must not gain a thread, and keep
    # a whole scoring pipeline alive, per configuration.
    @tracesim.trace(evaluators=["exact"], expected="yes")
    def answer() -> str:
        return "yes"

    pipelines = []
    for round_ in range(5):
        tracesim.configure(jsonl_path=str(tmp_path / f"{round_}.jsonl"), scoring_mode="background")
        answer()
        runtime = _runtime.current
        assert runtime is not None
        assert runtime.scoring is not None
        pipelines.append(weakref.ref(runtime.scoring))
        del runtime
        assert tracesim.shutdown(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _scoring_threads():
        time.sleep(0.01)
    assert _scoring_threads() == []
    gc.collect()
    # Every earlier one is freed; `answer` keeps its last runtime (a cache) until its next call.
    assert [p for p in pipelines[:-1] if p() is not None] == []


def _scoring_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("tracesim-scoring")]
