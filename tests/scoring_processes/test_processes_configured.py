"""scoring_processes through configure(): spans scored by worker processes, fork, spawn,
shutdown with a hung worker, evaluators that stay on threads, the setting's validation."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from pool_test_evaluators import Behaves, WherePid, current_pool, spawned_host, worker_ready

import tracesim
from tracesim import _runtime
from tracesim._errors import ConfigError
from tracesim._scoring._processes import ProcessPool
from tracesim.evaluators import Evaluator, Levenshtein
from tracesim.tracefile import load_spans

HERE = Path(__file__).resolve().parent


def _pool() -> ProcessPool:
    pool: ProcessPool = current_pool()
    return pool


def _setting() -> int | str:
    """The configured ``scoring_processes`` (read afresh: each configure() replaces it)."""
    runtime = _runtime.current
    assert runtime is not None
    return runtime.settings.scoring_processes


_worker_ready = worker_ready


@pytest.mark.parametrize("export", ["host", "workers"])
def test_spans_get_their_scores_from_a_worker_killed_halfway_and_none_is_lost(
    tmp_path: Path, export: str
) -> None:
    """``export``: who writes the spans (scoring_export); a worker that writes them may have
    written a few just before it was killed, which the next one writes again: never missing."""
    tracesim.configure(exporters=["jsonl"], scoring_processes=1, max_defer_s=120, scoring_export=export)
    slow = Behaves(delay_s=0.003)

    @tracesim.trace(evaluators=[Levenshtein(), slow], expected=lambda i: f"answer {i}")
    def agent(i: int) -> str:
        return f"answer {i}"

    agent(-1)
    _worker_ready()
    for i in range(300):
        agent(i)
    pool = _pool()
    while pool.backlog() == 0 and not any(w.held for w in pool._workers):
        time.sleep(0.005)
    victim = pool._workers[0]
    os.kill(victim.proc.pid, signal.SIGKILL)
    assert tracesim.force_flush(120)
    assert pool.deaths == 1
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    ids = {span.span_id for span in spans}
    assert len(ids) == 301
    assert len(spans) - len(ids) <= (0 if export == "host" else 32)
    for span in spans:
        assert span.attributes["tracesim.eval.levenshtein.score"] == 1.0
        assert span.attributes["tracesim.eval.behaves.score"] == 1.0
        assert "tracesim.evaluation.deferred" not in span.attributes
    stats = tracesim.scoring_stats()
    assert stats.errors == 0
    assert stats.written_by_workers == (0 if export == "host" else 301)


def test_a_local_evaluator_stays_on_threads_and_that_is_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class Shorter(Evaluator):
        type_name = "shorter"

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> bool:
            return len(output) <= len(expected)

    caplog.set_level("WARNING", logger="tracesim")
    tracesim.configure(exporters=["jsonl"], scoring_processes=1)

    @tracesim.trace(evaluators=[Shorter(), WherePid()], expected=lambda i: "a longer expected answer")
    def agent(i: int) -> str:
        return f"answer {i}"

    for i in range(20):
        agent(i)
    assert tracesim.force_flush(120)
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    assert len(spans) == 20
    assert all(span.attributes["tracesim.eval.shorter.passed"] is True for span in spans)
    pids = {span.attributes["tracesim.eval.where_pid.score"] for span in spans}
    assert os.getpid() not in pids  # the other evaluator did go to the worker
    lines = [r.getMessage() for r in caplog.records if "'shorter'" in r.getMessage()]
    assert len(lines) == 1, lines
    assert "runs on the scoring threads" in lines[0]
    assert "inside a function" in lines[0]


def test_shutdown_keeps_its_deadline_with_a_hung_worker(tmp_path: Path) -> None:
    tracesim.configure(exporters=["jsonl"], scoring_processes=1, max_defer_s=600)

    @tracesim.trace(evaluators=[Behaves()], expected=lambda text: "x")
    def agent(text: str) -> str:
        return text

    agent("hang")
    _worker_ready()
    worker = _pool()._workers[0]
    while worker.running()[0] == 0:
        time.sleep(0.01)
    started = time.monotonic()
    assert tracesim.shutdown(2.0) is False  # not drained: the run never ends
    took = time.monotonic() - started
    assert took < 30  # the deadline is 2 s; the run would take an hour
    assert worker.proc.returncode == -signal.SIGKILL
    (span,) = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    assert list(span.attributes["tracesim.evaluation.deferred"]) == ["behaves"]


def test_a_spawned_child_scores_through_its_own_worker(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    child = context.Process(target=spawned_host, args=(str(tmp_path),))
    child.start()
    child.join(180)
    assert child.exitcode == 0
    found = json.loads((tmp_path / "pids.json").read_text())
    assert found["flushed"] is True
    assert found["results"] == 10
    assert found["workers"]
    assert found["pid"] not in found["workers"]
    child.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")
def test_a_forked_child_starts_its_own_workers_and_the_parent_keeps_its_own(
    tmp_path: Path, run_python: Any
) -> None:
    code = """
import json, os
import tracesim
from tracesim import _runtime
from pool_test_evaluators import WherePid

tracesim.configure(exporters=["jsonl"], scoring_processes=1)

@tracesim.trace(evaluators=[WherePid()], expected=lambda i: "x")
def agent(i):
    return f"answer {i}"

agent(0)
assert tracesim.force_flush(120)
parent_workers = [w.proc.pid for w in _runtime.current.scoring._pool._all]
pid = os.fork()
if pid == 0:
    try:
        for i in range(10):
            agent(i)
        ok = tracesim.force_flush(120)
        mine = [w.proc.pid for w in _runtime.current.scoring._pool._all]
        stats = tracesim.scoring_stats()
        tracesim.shutdown(10)
        with open("child.json", "w") as f:
            json.dump({"ok": ok, "workers": mine, "results": stats.results, "errors": stats.errors}, f)
    finally:
        os._exit(0)
_, status = os.waitpid(pid, 0)
for i in range(10):
    agent(100 + i)
assert tracesim.force_flush(120)
print(json.dumps({"status": status, "workers": parent_workers,
                  "now": [w.proc.pid for w in _runtime.current.scoring._pool._all],
                  "results": tracesim.scoring_stats().results}))
"""
    result = run_python(code, cwd=tmp_path, env={"PYTHONPATH": str(HERE)})
    assert result.returncode == 0, result.stderr
    parent = json.loads(result.stdout.strip().splitlines()[-1])
    child = json.loads((tmp_path / "child.json").read_text())
    assert parent["status"] == 0
    assert child["ok"] is True
    assert child["results"] == 10
    assert child["errors"] == 0
    assert child["workers"]
    assert not set(child["workers"]) & set(parent["workers"])
    assert parent["now"] == parent["workers"]  # the parent's worker was not disturbed
    assert parent["results"] == 11
    assert "ResourceWarning" not in result.stderr


def test_auto_leaves_a_light_load_on_threads() -> None:
    tracesim.configure(exporters=[])  # scoring_processes: auto by default

    @tracesim.trace(evaluators=[Levenshtein()], expected=lambda i: "x")
    def agent(i: int) -> str:
        return f"answer {i}"

    for i in range(20):
        agent(i)
    assert tracesim.force_flush(10)
    assert _pool().started is False


def test_auto_starts_a_worker_once_evaluators_take_a_share_of_a_core() -> None:
    tracesim.configure(exporters=[], max_defer_s=4)  # ticks every second
    where = WherePid()
    busy = Behaves(delay_s=0.004)

    @tracesim.trace(evaluators=[busy, where], expected=lambda i: "x")
    def agent(i: int) -> str:
        return f"answer {i}"

    deadline = time.monotonic() + 120
    while not (_pool().started and _pool().ready):
        assert time.monotonic() < deadline, "auto did not start a worker"
        for i in range(20):
            agent(i)
        time.sleep(0.05)
    assert tracesim.force_flush(30)
    for i in range(40):
        agent(i)
    assert tracesim.force_flush(30)
    assert tracesim.scoring_stats().errors == 0


@pytest.mark.parametrize(
    ("given", "shown"),
    [(-1, "got -1 from configure(scoring_processes=...)"), ("many", "got 'many' from configure")],
)
def test_bad_scoring_processes_are_refused_with_what_is_accepted(given: Any, shown: str) -> None:
    with pytest.raises(ConfigError) as caught:
        tracesim.configure(exporters=[], scoring_processes=given)
    message = str(caught.value)
    assert "invalid value for setting 'scoring_processes'" in message
    assert shown in message
    assert "accepted: an integer >= 0 or auto" in message


def test_scoring_processes_from_the_environment_and_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACESIM_SCORING_PROCESSES", "two")
    with pytest.raises(ConfigError) as caught:
        tracesim.configure(exporters=[])
    assert "(environment variable TRACESIM_SCORING_PROCESSES): got 'two'" in str(caught.value)
    monkeypatch.setenv("TRACESIM_SCORING_PROCESSES", "AUTO")
    tracesim.configure(exporters=[])
    assert _runtime.current is not None
    assert _setting() == "auto"
    monkeypatch.delenv("TRACESIM_SCORING_PROCESSES")
    (tmp_path / "tracesim.yaml").write_text("scoring_processes: 0\n")
    tracesim.configure(exporters=[])
    assert _setting() == 0
    assert _runtime.current.scoring is not None
    assert _runtime.current.scoring._pool is None
    (tmp_path / "tracesim.yaml").write_text("scoring_processes: -2\n")
    with pytest.raises(ConfigError) as caught:
        tracesim.configure(exporters=[])
    assert "got -2 from tracesim.yaml; accepted: an integer >= 0 or auto" in str(caught.value)


def test_outputs_only_the_script_can_unpickle_are_scored_on_threads_said_once(
    tmp_path: Path, run_python: Any
) -> None:
    code = """
import json, logging, os
import tracesim
from tracesim import _runtime
from pool_test_evaluators import WherePid

logging.basicConfig(level=logging.WARNING, format="LOG %(message)s")

class Answer:  # pickles by reference to __main__, which a worker's __main__ does not have
    def __init__(self, text):
        self.text = text

tracesim.configure(exporters=["jsonl"], scoring_processes=1)

@tracesim.trace(evaluators=[WherePid()], expected=lambda i: "x")
def agent(i):
    return Answer(f"answer {i}") if i % 2 else f"answer {i}"

for i in range(40):
    agent(i)
assert tracesim.force_flush(120)
pool = _runtime.current.scoring._pool
spans = tracesim.tracefile.load_spans(".tracesim/traces.jsonl")
pids = sorted(s.attributes["tracesim.eval.where_pid.score"] for s in spans)
print(json.dumps({"host": os.getpid(), "pids": pids, "deaths": pool.deaths,
                  "results": tracesim.scoring_stats().results, "errors": tracesim.scoring_stats().errors}))
"""
    result = run_python(code, cwd=tmp_path, env={"PYTHONPATH": str(HERE)})
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["results"] == 40
    assert found["errors"] == 0
    assert found["deaths"] == 0
    on_host = [p for p in found["pids"] if p == found["host"]]
    assert len(on_host) == 20  # the Answer outputs, on the threads
    assert len(set(found["pids"])) == 2  # the others in the worker
    lines = [line for line in result.stderr.splitlines() if line.startswith("LOG")]
    assert len(lines) == 1, lines
    assert "cannot unpickle" in lines[0]


def test_workers_that_cannot_start_leave_the_threads_scoring_said_once(
    tmp_path: Path, run_python: Any
) -> None:
    code = """
import json, logging, os, sys
import tracesim
from tracesim import _runtime
from tracesim.evaluators import Levenshtein

logging.basicConfig(level=logging.WARNING, format="LOG %(message)s")
tracesim.configure(exporters=[], scoring_processes=1)
# A worker imports tracesim from the host's sys.path: put a broken one first.
os.makedirs("shadow/tracesim")
with open("shadow/tracesim/__init__.py", "w") as f:
    f.write("raise ImportError('broken on purpose')")
sys.path.insert(0, os.path.abspath("shadow"))

@tracesim.trace(evaluators=[Levenshtein()], expected=lambda i: f"answer {i}")
def agent(i):
    return f"answer {i}"

for i in range(30):
    agent(i)
flushed = tracesim.force_flush(120)
pool = _runtime.current.scoring._pool
stats = tracesim.scoring_stats()
print(json.dumps({"flushed": flushed, "broken": pool.broken,
                  "results": stats.results, "errors": stats.errors}))
"""
    result = run_python(code, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found == {"flushed": True, "broken": True, "results": 30, "errors": 0}
    lines = [line for line in result.stderr.splitlines() if line.startswith("LOG")]
    assert len(lines) == 1, lines
    assert "could not start" in lines[0]
    assert "scoring_processes=0" in lines[0]


def test_runs_in_process_sends_an_evaluator_to_a_worker_under_auto(tmp_path: Path) -> None:
    tracesim.configure(exporters=["jsonl"])  # auto: a light load alone would stay on threads

    @tracesim.trace(evaluators=[WherePid(runs_in="process"), Levenshtein()], expected=lambda i: "x")
    def agent(i: int) -> str:
        return f"answer {i}"

    for i in range(10):
        agent(i)
    assert tracesim.force_flush(120)
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    assert len(spans) == 10
    assert os.getpid() not in {span.attributes["tracesim.eval.where_pid.score"] for span in spans}
    assert all("tracesim.eval.levenshtein.score" in span.attributes for span in spans)


def test_runs_in_process_without_processes_is_said_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("WARNING", logger="tracesim")
    tracesim.configure(exporters=[], scoring_processes=0)

    @tracesim.trace(evaluators=[WherePid(runs_in="process")], expected=lambda i: "x")
    def agent(i: int) -> str:
        return f"answer {i}"

    for i in range(5):
        agent(i)
    assert tracesim.force_flush(30)
    assert tracesim.scoring_stats().results == 5
    lines = [r.getMessage() for r in caplog.records if "runs_in='process'" in r.getMessage()]
    assert len(lines) == 1, lines
    assert "scoring_processes is 0" in lines[0]


def test_runs_in_is_checked_like_the_other_shared_options() -> None:
    from tracesim.evaluators import from_config, parse_spec

    assert from_config({"type": "rouge", "runs_in": "thread"}).runs_in == "thread"
    assert from_config(parse_spec("bleu:runs_in=process")).runs_in == "process"
    assert Levenshtein().replace(runs_in="process").runs_in == "process"
    with pytest.raises(ConfigError) as caught:
        from_config({"type": "levenshtein", "runs_in": "gpu"})
    assert "levenshtein.runs_in" in str(caught.value)
    assert "auto, thread or process" in str(caught.value)
