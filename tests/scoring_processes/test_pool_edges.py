"""Edges of the worker-process pool found in review: each gives the threads' result, or hands the
run to the threads, and the pool goes on. One worker for the module (module-level evaluators)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pool_test_evaluators import Behaves, BreaksWhenBuilt, PicklesOnce, ReturnsDict, WherePid
from test_worker_pool import Collector, _pool, _ready, _submit

import tracesim
from tracesim import _runtime
from tracesim._scoring._jobs import checked
from tracesim._scoring._processes import ProcessPool
from tracesim.evaluators import EvalResult, Levenshtein

Shared = tuple[ProcessPool, Collector]


@pytest.fixture(scope="module")
def shared() -> Iterator[tuple[ProcessPool, Collector]]:
    collector = Collector()
    pool = _pool(collector, 1)
    pool.start()
    _ready(pool)
    yield pool, collector
    pool.close(5.0)


def _same(a: EvalResult, b: EvalResult) -> None:
    assert a.model_dump(exclude={"duration_s"}) == b.model_dump(exclude={"duration_s"})


def test_an_evaluate_that_returns_no_eval_result_gets_the_threads_error(
    shared: tuple[ProcessPool, Collector],
) -> None:
    pool, collector = shared
    evaluator = ReturnsDict()
    job = _submit(pool, evaluator, "x")
    got = collector.wait_for([job])[job]
    _same(got, checked(evaluator, evaluator.evaluate("x")))
    assert got.error_type == "TypeError"
    assert "returned dict, not an EvalResult" in (got.error or "")


def test_a_threshold_changed_after_the_first_run_reaches_the_worker(
    shared: tuple[ProcessPool, Collector],
) -> None:
    pool, collector = shared
    evaluator = Levenshtein(threshold=0.1)
    first = _submit(pool, evaluator, "abcd", "abce")
    assert collector.wait_for([first])[first].passed is True
    evaluator.threshold = 0.99  # the thread path reads it on every run
    again = _submit(pool, evaluator, "abcd", "abce")
    got = collector.wait_for([again])[again]
    _same(got, evaluator.evaluate("abcd", "abce"))
    assert got.passed is False


def test_a_first_run_that_does_not_pickle_leaves_the_evaluator_in_the_worker(
    shared: tuple[ProcessPool, Collector],
) -> None:
    pool, collector = shared
    evaluator = Behaves(name="first_run_unpicklable")  # a spec this worker was never sent
    _submit(pool, evaluator, threading.Lock())
    deadline = time.monotonic() + 60
    while not any(r.evaluator is evaluator for r in collector.on_thread):
        assert time.monotonic() < deadline, "the unpicklable run was not given to the threads"
        time.sleep(0.01)
    later = [_submit(pool, evaluator, f"fine {i}") for i in range(5)]
    got = collector.wait_for(later)
    assert all(r.status == "ok" for r in got.values()), got
    assert [r.evaluator for r in collector.on_thread].count(evaluator) == 1


def test_a_batch_that_fails_to_pickle_goes_to_the_threads_and_the_feeder_goes_on(
    shared: tuple[ProcessPool, Collector],
) -> None:
    pool, collector = shared
    evaluator = Behaves(name="pickles_once")
    PicklesOnce.attempts = 0
    _submit(pool, evaluator, PicklesOnce())  # fails as a batch, pickles alone, fails again
    deadline = time.monotonic() + 60
    while not any(r.evaluator is evaluator for r in collector.on_thread):
        assert time.monotonic() < deadline, "the run was neither scored nor given to the threads"
        time.sleep(0.01)
    later = [_submit(pool, evaluator, f"fine {i}") for i in range(5)]
    assert all(r.status == "ok" for r in collector.wait_for(later).values())


def test_a_worker_imports_the_hosts_modules_not_the_working_directorys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pool_test_evaluators.py").write_text(
        "from tracesim.evaluators import Evaluator\n\n\n"
        "class WherePid(Evaluator):\n"
        "    type_name = 'where_pid'\n"
        "    requires_expected = False\n\n"
        "    def measure(self, output, expected, *, input=None):\n"
        "        return -1.0\n"
    )
    monkeypatch.chdir(tmp_path)  # python -m would put this folder first in the worker's sys.path
    collector = Collector()
    pool = _pool(collector, 1)
    pool.start()
    try:
        job = _submit(pool, WherePid(), "x")
        got = collector.wait_for([job])[job]
        assert "pid" in got.details  # the host's WherePid, not the working directory's
        assert got.score == float(got.details["pid"])
    finally:
        pool.close(5.0)


def test_auto_does_not_start_a_worker_for_evaluators_that_stay_on_threads() -> None:
    tracesim.configure(exporters=[], max_defer_s=4)  # auto; the watchdog ticks every second
    busy = Behaves(delay_s=0.01, runs_in="thread")  # a full share of a core, but not a worker's

    @tracesim.trace(evaluators=[busy], expected=lambda i: "x")
    def agent(i: int) -> str:
        return f"answer {i}"

    runtime = _runtime.current
    assert runtime is not None
    assert runtime.scoring is not None
    pipeline = runtime.scoring
    pool = pipeline._pool
    assert pool is not None
    windows = 0
    window_start = pipeline._window_start
    deadline = time.monotonic() + 120
    while windows < 2:  # two of auto's windows (the first one a worker would have started in)
        assert time.monotonic() < deadline, "auto's windows did not pass"
        for i in range(10):
            agent(i)
        assert tracesim.force_flush(60)
        if pipeline._window_start != window_start:
            windows += 1
            window_start = pipeline._window_start
    assert pool.started is False
    assert tracesim.scoring_stats().errors == 0


HOST_EXITS = """
import os, sys, time
sys.path.insert(0, {here!r})
import tracesim
from tracesim import _runtime
from pool_test_evaluators import Behaves

tracesim.configure(exporters=[], scoring_processes=1)

@tracesim.trace(evaluators=[Behaves(delay_s=0.02)], expected=lambda i: "x")
def agent(i):
    return f"answer {{i}}"

agent(0)
pool = _runtime.current.scoring._pool
deadline = time.monotonic() + 120
while not pool.ready and time.monotonic() < deadline:
    time.sleep(0.05)
for i in range(100):
    agent(i)
while not any(w.held for w in pool._workers) and time.monotonic() < deadline:
    time.sleep(0.01)
print("ready" if pool.ready else "not ready", flush=True)
os._exit(0)  # gone without closing its worker, which is mid-batch
"""


def test_a_worker_whose_host_is_gone_ends_without_a_traceback(tmp_path: Path) -> None:
    script = tmp_path / "host.py"
    script.write_text(HOST_EXITS.format(here=str(Path(__file__).resolve().parent)))
    # the worker shares the host's stderr: run() returns once the worker has ended too
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "ready", done.stderr
    assert "Traceback" not in done.stderr
    assert "BrokenPipeError" not in done.stderr


def test_an_evaluator_whose_build_kills_its_worker_does_not_take_down_workers_forever() -> None:
    collector = Collector()
    pool = _pool(collector, 1)
    pool.start()
    try:
        job = _submit(pool, BreaksWhenBuilt(how="die"), "x")
        got = collector.wait_for([job], timeout_s=180)[job]
        assert got.error_type == "worker_died"
        assert pool.deaths == 2
        fine = [_submit(pool, Behaves(), f"fine {i}") for i in range(3)]
        assert all(r.status == "ok" for r in collector.wait_for(fine, timeout_s=180).values())
    finally:
        pool.close(5.0)


def test_an_evaluator_whose_build_hangs_gets_a_timeout_at_the_stuck_time() -> None:
    collector = Collector()
    pool = _pool(collector, 1, stuck_after_s=2.0)
    pool.start()
    try:
        job = _submit(pool, BreaksWhenBuilt(how="hang", timeout_s=3600), "x")
        got = collector.wait_for([job], timeout_s=180)[job]
        assert got.error_type == "timeout"
        fine = [_submit(pool, Behaves(), f"fine {i}") for i in range(3)]
        assert all(r.status == "ok" for r in collector.wait_for(fine, timeout_s=180).values())
    finally:
        pool.close(5.0)


HOST_INTERRUPTED = """
import sys, time
sys.path.insert(0, {here!r})
import tracesim
from tracesim import _runtime
from pool_test_evaluators import Behaves

tracesim.configure(exporters=[], scoring_processes=1)

@tracesim.trace(evaluators=[Behaves()], expected=lambda i: "x")
def agent(i):
    return f"answer {{i}}"

try:
    agent(0)
    pool = _runtime.current.scoring._pool
    while not pool._all:
        time.sleep(0.001)
    print("starting", flush=True)  # the worker is importing tracesim now
    time.sleep(120)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    tracesim.shutdown(30)
"""


def test_ctrl_c_in_the_terminal_is_the_hosts_not_a_starting_workers(tmp_path: Path) -> None:
    script = tmp_path / "host.py"
    script.write_text(HOST_INTERRUPTED.format(here=str(Path(__file__).resolve().parent)))
    # Its own process group, as a terminal's foreground job: Ctrl+C signals the whole group.
    host = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert host.stdout is not None
    assert host.stdout.readline().strip() == "starting"
    os.killpg(host.pid, signal.SIGINT)
    out, err = host.communicate(timeout=300)
    assert out.strip() == "interrupted", err
    assert "Traceback" not in err
    assert "KeyboardInterrupt" not in err


HOST_KILLED = """
import os, sys, time
sys.path.insert(0, {here!r})
import tracesim
from tracesim import _runtime
from pool_test_evaluators import Behaves

tracesim.configure(exporters=[], scoring_processes=1)

@tracesim.trace(evaluators=[Behaves()], expected=lambda i: "x")
def agent(i):
    return i

agent("hang")
pool = _runtime.current.scoring._pool
deadline = time.monotonic() + 120
while time.monotonic() < deadline and not (pool._workers and pool._workers[0].running()[0] > 0):
    time.sleep(0.01)
print(pool._all[0].proc.pid, flush=True)
os._exit(0)  # as a SIGKILL would: nobody closes the worker, whose run hangs
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as status:
            return "\\nState:\\tZ" not in status.read()  # a zombie has ended
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc to see the worker end")
def test_a_worker_in_a_hung_run_ends_once_its_host_is_gone(tmp_path: Path) -> None:
    script = tmp_path / "host.py"
    script.write_text(HOST_KILLED.format(here=str(Path(__file__).resolve().parent)))
    # stderr not captured: the worker shares it, and would keep run() waiting while it lives
    done = subprocess.run(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        timeout=300,
    )
    worker = int(done.stdout.strip())
    deadline = time.monotonic() + 60
    while _alive(worker):
        if time.monotonic() > deadline:
            os.kill(worker, signal.SIGKILL)
            pytest.fail("the worker outlived its host by a minute")
        time.sleep(0.1)


def test_results_for_the_hosts_sinks_that_do_not_pickle_leave_the_rest_of_the_frame_intact() -> None:
    # A handed call's span is written already: the host still counts its results (and the log
    # records its worker dropped, said apart); only the results for Phoenix or MLflow go without.
    from tracesim._scoring._processes import RECORDS_DROPPED, SCORED, read_frame
    from tracesim._scoring._worker_main import _send

    outcomes = [("exact", "pass", 1.0, None, False)]
    readable, writable = os.pipe()
    try:
        full = [("CODE", {"name": "exact", "details": {"why": threading.Lock()}}, {"name"})]
        _send(
            writable,
            [
                (7, SCORED, (outcomes, None, full)),
                (8, SCORED, (outcomes, None, None)),
                (0, RECORDS_DROPPED, 3),
            ],
        )
        with os.fdopen(readable, "rb", closefd=False) as stream:
            frame = read_frame(stream)
    finally:
        os.close(readable)
        os.close(writable)
    assert frame is not None
    assert frame == [
        (7, SCORED, (outcomes, None, None)),
        (8, SCORED, (outcomes, None, None)),
        (0, RECORDS_DROPPED, 3),
    ]


def test_a_worker_that_logs_too_much_at_once_says_how_many_lines_it_left_out() -> None:
    import logging

    from tracesim._scoring import _worker_main
    from tracesim._scoring._processes import SAID, read_frame

    handler = _worker_main._ToHost()
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.Logger("tracesim-test")
    logger.addHandler(handler)
    for i in range(250):
        logger.warning("line %d", i)
    readable, writable = os.pipe()
    try:
        _worker_main._send(writable, [])
        with os.fdopen(readable, "rb", closefd=False) as stream:
            frame = read_frame(stream)
    finally:
        os.close(readable)
        os.close(writable)
    lines = [payload[2] for _, kind, payload in frame if kind == SAID]
    assert lines[0] == "line 50"  # the oldest went first
    assert lines[-2] == "line 249"
    assert lines[-1] == "tracesim: 50 earlier lines of this worker process were left out (too many at once)"
    assert not _worker_main._SAID


def test_a_line_a_worker_logs_is_cut_to_a_bounded_length() -> None:
    import logging

    from tracesim._scoring import _worker_main

    handler = _worker_main._ToHost()
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.Logger("tracesim-test")
    logger.addHandler(handler)
    try:
        logger.warning("x" * 100_000)
        (line,) = [text for _, _, text in _worker_main._SAID]
    finally:
        _worker_main._SAID.clear()
    assert line == "x" * 8000
