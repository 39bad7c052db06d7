"""tracesim's background loops hold the interpreter in slices: each loop offers it to the host's
threads between items (the encoder's pieces: tests/exporters/test_line_pieces.py).

The offers are seen through the clock and the offer `Slices` uses (a clock that says "due"
every time, an offer that records the thread): no timing in the assertions. The loops are the
real ones, on a real worker process, a real trace file and a real provider.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import tracesim
from tracesim import _host_first
from tracesim.evaluators import Levenshtein
from tracesim.tracefile import load_spans


class _Clock:
    """A clock that moves ``step`` seconds per read, from far past the real one (so a loop's
    `Slices` made before the clock was swapped finds its slice over too)."""

    def __init__(self, step: float) -> None:
        self.now = time.perf_counter() + 1e6
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_slices_offer_once_per_slice_of_work(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    offers: list[float] = []
    monkeypatch.setattr(_host_first, "SLICE_S", 1.0)  # whole numbers: no rounding in the test
    monkeypatch.setattr(_host_first, "_clock", lambda: now[0])
    monkeypatch.setattr(_host_first, "_offer", offers.append)
    offer = _host_first.Slices()
    offered_at = []
    for item in range(95):
        now[0] = item * 0.125  # eight items per slice
        before = len(offers)
        offer()
        if len(offers) > before:
            offered_at.append(item)
    assert offered_at == list(range(8, 95, 8))  # one offer per slice, none before
    assert set(offers) == {0}  # time.sleep(0): let go, take back after a waiting thread


def test_slices_do_not_offer_before_a_slice_has_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    offers: list[float] = []
    monkeypatch.setattr(_host_first, "_clock", lambda: 5.0)  # time stands still
    monkeypatch.setattr(_host_first, "_offer", offers.append)
    offer = _host_first.Slices()
    for _ in range(1000):
        offer()
    assert offers == []


def test_every_background_loop_of_a_scored_host_offers_the_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a clock that is always due, each loop's offers show which threads are paced (the
    host's path: with scoring_export=workers the worker writes the scored spans)."""
    tracesim.configure(exporters=["jsonl"], scoring_processes=1, scoring_export="host", max_defer_s=120)

    @tracesim.trace(evaluators=[Levenshtein()], expected=lambda i: f"answer {i}")
    def agent(i: int) -> str:
        return f"answer {i + 1}"

    agent(-1)  # the worker starts before the clock changes
    assert tracesim.force_flush(120)
    offered_by: set[str] = set()
    lock = threading.Lock()

    def offer(seconds: float) -> None:
        with lock:
            offered_by.add(threading.current_thread().name)
        time.sleep(seconds)

    monkeypatch.setattr(_host_first, "_clock", _Clock(_host_first.SLICE_S))
    monkeypatch.setattr(_host_first, "_offer", offer)
    for i in range(1200):  # past the export queue's batch of 512: its own thread exports
        agent(i)
        if i % 100 == 0:
            time.sleep(0.01)
    assert tracesim.force_flush(120)
    monkeypatch.undo()
    tracesim.shutdown()
    assert {"tracesim-scoring", "tracesim-scoring-reader"} <= offered_by  # jobs, and the worker's results
    assert any(name.startswith("OtelBatch") for name in offered_by)  # redaction and encoding of a batch
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    scored = [s for s in spans if s.attributes.get("tracesim.eval.levenshtein.score") is not None]
    assert len(scored) == 1201  # pacing changes when, not what


def test_a_worker_process_holds_the_interpreter_for_a_switch_interval(tmp_path: Path) -> None:
    """In a worker there are no host threads to go first: its sender offers the interpreter to
    its own scoring loop only as often as Python would hand it over anyway."""
    from pool_test_evaluators import WhereSlice

    tracesim.configure(exporters=["jsonl"], scoring_processes=1, max_defer_s=120)

    @tracesim.trace(evaluators=[WhereSlice()])
    def agent() -> str:
        return "answer"

    agent()
    assert tracesim.force_flush(120)
    tracesim.shutdown()
    (span,) = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    assert span.attributes["tracesim.eval.where_slice.score"] == sys.getswitchinterval()
    assert _host_first.SLICE_S == 0.0002  # the host's own loops: unchanged


_HEAP_PROBE = """
import json, sys
import tracesim
from tracesim.evaluators import Bleu, Levenshtein, Rouge
from tracesim.tracefile import load_spans

tracesim.configure(exporters=["jsonl"], scoring_processes=1, max_defer_s=120)

@tracesim.trace(evaluators=[Levenshtein(), Rouge(), Bleu()], expected="the cat sat on the mat")
def agent(i):
    return "the cat sat on a mat"

for i in range(50):
    agent(i)
assert tracesim.force_flush(120)
tracesim.shutdown()
kept_out = ("numpy", "rouge_score", "nltk", "asyncio", "tracesim.evaluators._model_evaluator")
loaded = sorted(name for name in kept_out if name in sys.modules)
here = Rouge().evaluate("the cat sat on a mat", "the cat sat on the mat").score  # imports rouge-score here
spans = load_spans(".tracesim/traces.jsonl")
scored = [s for s in spans if s.attributes.get("tracesim.eval.rouge.score") == here]
print(json.dumps({"loaded": loaded, "scored": len(scored), "rouge_now_loaded": "rouge_score" in sys.modules}))
"""


def test_a_host_scoring_in_workers_does_not_load_the_scorers_libraries(tmp_path: Path) -> None:
    """rouge-score, numpy, NLTK and the model evaluators' asyncio stay out of the host: the
    workers import them (a tenth of the host's heap, walked by every full garbage collection)."""
    done = subprocess.run(
        [sys.executable, "-c", _HEAP_PROBE], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen == {"loaded": [], "scored": 50, "rouge_now_loaded": True}
