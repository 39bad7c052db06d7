"""Scoring across process boundaries: nothing lost at exit, workers restarted after fork."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tracesim.tracefile import load_spans


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACESIM_", "OTEL_"))}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_a_script_that_exits_normally_loses_no_span_and_no_score(tmp_path: Path) -> None:
    code = """
import time
import tracesim
from tracesim.evaluators import evaluator, Levenshtein

@evaluator(threshold=0.5)
def slowish(output, expected):
    time.sleep(0.002)  # scoring lags behind the calls
    return 1.0

tracesim.configure(service_name="exit-test")

@tracesim.trace(kind="agent", evaluators=[Levenshtein(), slowish], expected=lambda i: f"answer {i}")
def agent(i):
    return f"answer {i}"

for i in range(200):
    agent(i)
print("returned")
# no force_flush, no shutdown: the exit hook drains the scoring queue, then exports
"""
    result = _run(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "returned"
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    assert len(spans) == 200
    for span in spans:
        assert span.attributes["tracesim.eval.levenshtein.score"] == 1.0
        assert span.attributes["tracesim.eval.slowish.passed"] is True
        assert "tracesim.evaluation.deferred" not in span.attributes


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")
def test_a_forked_child_scores_with_its_own_workers(tmp_path: Path) -> None:
    code = """
import os
import tracesim
from tracesim.evaluators import ExactMatch

tracesim.configure(jsonl_path="t.jsonl")

@tracesim.trace(evaluators=[ExactMatch()], expected=lambda who: who)
def agent(who):
    return who

agent("parent-before")   # starts the parent's workers
tracesim.force_flush()
pid = os.fork()
if pid == 0:
    agent("child")
    ok = tracesim.force_flush(30)
    os._exit(0 if ok else 3)
agent("parent-after")
_, status = os.waitpid(pid, 0)
tracesim.force_flush()
print(os.waitstatus_to_exitcode(status))
"""
    result = _run(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "0"
    spans = {s.attributes["input.value"]: s for s in load_spans(tmp_path / "t.jsonl")}
    assert set(spans) == {"parent-before", "child", "parent-after"}
    for span in spans.values():
        assert span.attributes["tracesim.eval.exact.passed"] is True
