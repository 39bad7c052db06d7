"""The worker-process pool on its own: real worker processes, results compared with the threads'."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pool_test_evaluators import Behaves, WherePid

from tracesim._internal_errors import WarnOnce
from tracesim._scoring._processes import ProcessPool, ProcessRun
from tracesim.evaluators import (
    Bleu,
    EvalResult,
    Evaluator,
    Levenshtein,
    Meteor,
    Rouge,
    RunBudget,
    ToolArguments,
    from_config,
)
from tracesim.evaluators._builtin_types import BUILTIN_TYPES
from tracesim.evaluators._model_evaluator import ModelEvaluator
from tracesim.runs import Expected, Run, Step, ToolCall


class Collector:
    """What the pool hands back: results by job, and runs given back to the threads."""

    def __init__(self) -> None:
        self.results: dict[Any, EvalResult] = {}
        self.on_thread: list[ProcessRun] = []
        self._changed = threading.Condition()

    def complete(self, job: Any, evaluator: Evaluator, result: EvalResult) -> None:
        with self._changed:
            assert job not in self.results, f"two results for {job!r}"
            self.results[job] = result
            self._changed.notify_all()

    def back(self, run: ProcessRun) -> None:
        with self._changed:
            self.on_thread.append(run)
            self._changed.notify_all()

    def wait_for(self, jobs: list[Any], timeout_s: float = 120.0) -> dict[Any, EvalResult]:
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not all(job in self.results for job in jobs):
                left = deadline - time.monotonic()
                assert left > 0, f"{sum(j not in self.results for j in jobs)} of {len(jobs)} results missing"
                self._changed.wait(left)
            return {job: self.results[job] for job in jobs}


def _pool(collector: Collector, size: int, stuck_after_s: float = 60.0) -> ProcessPool:
    return ProcessPool(
        size,
        complete=collector.complete,
        on_thread=collector.back,
        stuck_after_s=stuck_after_s,
        warnings=WarnOnce(),
    )


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[ProcessPool, Collector]]:
    collector = Collector()
    pool = _pool(collector, 2)
    pool.start()
    yield pool, collector
    pool.close(5.0)


_jobs = iter(range(1, 1 << 30))


def _submit(pool: ProcessPool, evaluator: Evaluator, subject: Any, expected: Any = None) -> int:
    key = pool.key_for(evaluator)
    assert key is not None, f"{evaluator!r} is not taken by the pool"
    job = next(_jobs)
    pool.put(ProcessRun(job, evaluator, key, subject, expected, expected, None))  # type: ignore[arg-type]
    return job


def _ready(pool: ProcessPool, workers: int = 1, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while sum(w.ready for w in pool._workers) < workers:
        assert time.monotonic() < deadline, "workers did not start"
        time.sleep(0.05)


PAIRS = [
    ("Marie Curie was born in Warsaw in 1867.", "Marie Curie was born in Warsaw."),
    ("Alan Turing proposed the imitation game in 1950.", "The Turing test."),
    ("The cat sat on the mat.", "The cat sat on the mat."),
    ("", "something expected"),
    ("Zürich liegt am Zürichsee; 東京 is the capital.", "Zurich lies on Lake Zurich; Tokyo is the capital."),
    (
        "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of "
        "foolishness, it was the epoch of belief, it was the epoch of incredulity.",
        "It was the best of times and the worst of times: an age of wisdom and of foolishness, of belief "
        "and of incredulity.",
    ),
    ("42", "forty-two"),
    ("same words different order", "order different words same"),
    ("text without an expected output", None),
]

LOOKUP = ToolCall("lookup", {"city": "Warsaw"})
RUNS = [
    (
        Run(
            steps=(
                Step(kind="llm", name="chat", input_tokens=40, output_tokens=8, requested=(LOOKUP,)),
                Step(kind="tool", name="lookup", tool_call=LOOKUP, duration_s=0.2),
                Step(kind="llm", name="chat", input_tokens=60, output_tokens=12),
            ),
            output="12 C",
        ),
        Expected(output="12 C", tool_calls=[{"name": "lookup", "arguments": {"city": "Warsaw"}}]),
    ),
    (
        Run(
            steps=(Step(kind="tool", name="search", tool_call=ToolCall("search", {"q": "x"})),), output="none"
        ),
        Expected(tool_calls=[{"name": "lookup", "arguments": {"city": "Paris"}}]),
    ),
    (Run(), Expected(output="anything")),
]


def _builtin_cpu_evaluators() -> list[Evaluator]:
    found: list[Evaluator] = []
    for type_name, cls in BUILTIN_TYPES.items():
        if issubclass(cls, ModelEvaluator) or type_name in ("tool_arguments", "run_budget"):
            continue
        found.append(from_config({"type": type_name}))
    found += [
        ToolArguments(tool="lookup", arguments={"city": "Warsaw"}),
        RunBudget(max_tool_calls=1, max_tokens=100),
        Rouge("rouge1"),
        Rouge("rougeLsum", threshold=0.2),
        Bleu().replace(name="bleu_strict", threshold=0.6),
        Levenshtein(case_sensitive=False),
        Meteor(threshold=0.1),
    ]
    return found


def test_every_built_in_cpu_evaluator_gives_the_threads_results_exactly(
    shared: tuple[ProcessPool, Collector],
) -> None:
    pool, collector = shared
    evaluators = _builtin_cpu_evaluators()
    expected_results: dict[int, EvalResult] = {}
    for evaluator in evaluators:
        cases = RUNS if getattr(evaluator, "scores_runs", False) else PAIRS
        for subject, expected in cases:
            job = _submit(pool, evaluator, subject, expected)
            expected_results[job] = evaluator.evaluate(subject, expected)
    got = collector.wait_for(list(expected_results))
    assert not collector.on_thread
    compared = 0
    for job, on_thread in expected_results.items():
        in_process = got[job]
        assert in_process.model_dump(exclude={"duration_s"}) == on_thread.model_dump(exclude={"duration_s"})
        assert in_process.model_fields_set == on_thread.model_fields_set
        assert type(in_process.score) is type(on_thread.score)
        compared += 1
    statuses = {r.status for r in got.values()}
    assert statuses == {"ok", "skipped"}, statuses  # every metric really ran (NLTK data found)
    assert compared == len(expected_results) > 150


def test_a_worker_killed_mid_batch_loses_no_run(shared: tuple[ProcessPool, Collector]) -> None:
    pool, collector = shared
    _ready(pool, 2)
    slow = Behaves(delay_s=0.005)
    jobs = [_submit(pool, slow, f"answer {i}") for i in range(400)]
    while len(collector.results.keys() & set(jobs)) < 20:
        time.sleep(0.01)
    victim = next(w for w in pool._workers if w.held)
    deaths = pool.deaths
    os.kill(victim.proc.pid, signal.SIGKILL)
    got = collector.wait_for(jobs)
    assert all(r.status == "ok" and r.score == 1.0 for r in got.values())
    assert pool.deaths == deaths + 1
    assert victim.proc.returncode == -signal.SIGKILL  # reaped: no zombie


def test_a_run_that_kills_its_worker_twice_gets_an_error_and_the_others_are_scored(
    shared: tuple[ProcessPool, Collector],
) -> None:
    pool, collector = shared
    evaluator = Behaves()
    before = [_submit(pool, evaluator, f"before {i}") for i in range(50)]
    poison = _submit(pool, evaluator, "die")
    after = [_submit(pool, evaluator, f"after {i}") for i in range(50)]
    got = collector.wait_for([*before, poison, *after])
    assert got[poison].status == "error"
    assert got[poison].error_type == "worker_died"
    assert "2 times" in (got[poison].error or "")
    assert all(got[j].status == "ok" for j in before + after)


def test_a_hung_run_gets_a_timeout_result_and_the_pool_recovers(
    shared: tuple[ProcessPool, Collector],
) -> None:
    pool, collector = shared
    evaluator = Behaves(timeout_s=0.5)
    hung = _submit(pool, evaluator, "hang")
    others = [_submit(pool, evaluator, f"fine {i}") for i in range(100)]
    got = collector.wait_for([hung, *others])
    assert got[hung].status == "error"
    assert got[hung].error_type == "timeout"
    assert all(got[j].status == "ok" for j in others)
    later = [_submit(pool, evaluator, f"later {i}") for i in range(20)]
    assert all(r.status == "ok" for r in collector.wait_for(later).values())


def test_runs_are_scored_in_worker_processes_not_in_the_host(shared: tuple[ProcessPool, Collector]) -> None:
    pool, collector = shared
    jobs = [_submit(pool, WherePid(), f"x {i}") for i in range(40)]
    pids = {r.details["pid"] for r in collector.wait_for(jobs).values()}
    assert os.getpid() not in pids
    assert pids <= {w.proc.pid for w in pool._all}


def test_close_stops_a_hung_worker_within_its_deadline() -> None:
    collector = Collector()
    pool = _pool(collector, 1, stuck_after_s=3600)
    pool.start()
    evaluator = Behaves()
    _submit(pool, evaluator, "hang")
    _ready(pool)
    worker = pool._workers[0]
    while worker.running()[0] == 0:
        time.sleep(0.01)
    started = time.monotonic()
    pool.close(1.0)
    took = time.monotonic() - started
    assert worker.proc.returncode == -signal.SIGKILL
    assert took < 30  # not the hour the run would take: killed at the deadline (1 s)


def test_evaluators_that_cannot_cross_stay_on_threads_with_the_reason_once(
    shared: tuple[ProcessPool, Collector], caplog: pytest.LogCaptureFixture
) -> None:
    pool, _ = shared

    class Local(Evaluator):
        def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
            return 1.0

    from tracesim.evaluators import evaluator as as_evaluator

    @as_evaluator
    def decorated(output: Any, expected: Any) -> float:
        return 1.0

    lambda_arg = Behaves(delay_s=0.0)
    lambda_arg.__dict__["_spec"] = lambda_arg.spec._replace(kwargs={"delay_s": lambda: 0})  # type: ignore[union-attr]
    caplog.set_level("WARNING", logger="tracesim")
    for _ in range(3):
        assert pool.key_for(Local()) is None
        assert pool.key_for(decorated) is None
    assert pool.key_for(Behaves(runs_in="thread")) is None
    assert pool.key_for(lambda_arg) is None
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 3, messages  # once per evaluator name; runs_in='thread' is silent
    local, function, unpicklable = messages
    assert "'custom'" in local
    assert "inside a function" in local
    assert "runs_in='thread'" in local
    assert "'decorated'" in function
    assert "do not pickle" in function
    assert "'behaves'" in unpicklable
    assert "do not pickle" in unpicklable


def test_the_backlog_counts_a_handed_calls_evaluators_as_a_worker_holds_them() -> None:
    from types import SimpleNamespace

    from tracesim._scoring._processes import HELD

    collector = Collector()
    pool = ProcessPool(
        1,
        complete=collector.complete,
        on_thread=collector.back,
        stuck_after_s=60.0,
        warnings=WarnOnce(),
        grow_to=2,
    )
    try:
        calls = HELD // 2  # each with three evaluators: 1.5 x HELD runs, half as many items
        for _ in range(calls):
            pool.put(SimpleNamespace(keys=(1, 2, 3), solo=False))  # type: ignore[arg-type]
        assert pool.backlog() == 3 * calls
        pool.grow()
        assert pool.size == 2  # before: HELD / 2 queued items were not "more than HELD" runs
    finally:
        pool.close(5.0)


def test_a_run_is_sent_when_it_comes_not_when_the_feeder_next_looks(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracesim._scoring import _processes

    # The feeder's safety-net look comes after an hour here: each run below is scored only if
    # putting it wakes the feeder (a batch gathered over time holds the host's threads longer).
    monkeypatch.setattr(_processes, "_FEED_WAIT_S", 3600.0)
    collector = Collector()
    pool = _pool(collector, 1)
    pool.start()
    try:
        _ready(pool)
        for i in range(5):
            job = _submit(pool, Levenshtein(), f"answer {i}", f"answer {i}")
            assert collector.wait_for([job], timeout_s=60.0)[job].score == 1.0
    finally:
        pool.close(5.0)
