"""Throughput of the run evaluators trajectory_match and tool_correctness against the packages
whose numbers they give (agentevals 0.0.9, deepeval 4.3.1), on the same recorded cases.

    .venv/bin/python benchmarks/bench_run_evaluators_a.py [--rounds 5] [--peer-python /tmp/peers/bin/python]

The cases are tests/evaluators/data/run_cases_agentevals_deepeval.jsonl (532 trajectory_match
and 928 tool_correctness cases). Each side builds its evaluators and inputs outside the timed
loop (the peer gets ready-made OpenAI-style messages and deepeval test cases; tracesim gets the
plain lists of calls as users write them and parses them while timed), then scores every case
once per round; the best round's microseconds per case are shown, and the ratio peer/tracesim
(the issue's goal: at least 10x). The row ``tool_correctness+inputs`` times deepeval
building its ``LLMTestCase``/``ToolCall`` inputs from the same plain calls as well (tracesim
always parses its inputs inside ``evaluate``). The peer side runs in a subprocess with the Python that has
the packages (``--peer-python``); without it the peer side is skipped, with the reason printed.
The peer's scores are checked against the recorded ones. ``--cap`` times tool_correctness
alone on 1,000 calls against 1,000 (its cap), the shapes where pairing is slowest. Prints
numbers only; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "tests" / "evaluators" / "data" / "run_cases_agentevals_deepeval.jsonl"

PEER = r"""
import json, sys, time
cases = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8")]
rounds = int(sys.argv[2])

def messages(items):
    out = []
    for n, item in enumerate(items):
        group = item if isinstance(item, list) else [item]
        calls = [{"id": f"c{n}_{k}", "type": "function",
                  "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                 for k, c in enumerate(group)]
        out.append({"role": "assistant", "content": "", "tool_calls": calls})
    return out

from agentevals.trajectory.match import create_trajectory_match_evaluator
from deepeval.metrics import ToolCorrectnessMetric
from deepeval.models import DeepEvalBaseLLM
from deepeval.test_case import LLMTestCase, ToolCall, ToolCallParams

class NoModel(DeepEvalBaseLLM):
    def __init__(self): super().__init__("none")
    def load_model(self): return None
    def generate(self, *a, **k): raise RuntimeError("no model")
    async def a_generate(self, *a, **k): raise RuntimeError("no model")
    def get_model_name(self): return "none"

model = NoModel()
names = {"input_parameters": ToolCallParams.INPUT_PARAMETERS, "output": ToolCallParams.OUTPUT}
work = {"trajectory_match": [], "tool_correctness": [], "tool_correctness+inputs": []}
for c in cases:
    o = c["options"]
    if c["evaluator"] == "trajectory_match":
        ev = create_trajectory_match_evaluator(
            trajectory_match_mode=o["mode"],
            tool_args_match_mode=o["args"],
            tool_args_match_overrides=o.get("tool_args"),
        )
        a, e = messages(c["output"]), messages(c["expected"])
        run = lambda ev=ev, a=a, e=e: 1.0 if ev(outputs=a, reference_outputs=e)["score"] else 0.0
        work["trajectory_match"].append((run, c["score"]))
    else:
        m = ToolCorrectnessMetric(
            model=model,
            async_mode=False,
            evaluation_params=[names[p] for p in o["params"]],
            should_consider_ordering=o["consider_ordering"],
            should_exact_match=o["exact_match"],
            strict_mode=o["strict_mode"],
        )
        tc = lambda x: ToolCall(name=x["name"], input_parameters=x["arguments"], output=x.get("output"))
        case = LLMTestCase(input="q", actual_output="a", tools_called=[tc(x) for x in c["output"]],
                           expected_tools=[tc(x) for x in c["expected"]])
        run = lambda m=m, case=case: float(m.measure(case, _show_indicator=False))
        work["tool_correctness"].append((run, c["score"]))
        def built(m=m, c=c, tc=tc):  # the same, building deepeval's inputs from the plain calls
            case = LLMTestCase(input="q", actual_output="a", tools_called=[tc(x) for x in c["output"]],
                               expected_tools=[tc(x) for x in c["expected"]])
            return float(m.measure(case, _show_indicator=False))
        work["tool_correctness+inputs"].append((built, c["score"]))
result = {}
for key, items in work.items():
    wrong = sum(1 for run, want in items if run() != want)
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for run, _want in items:
            run()
        best = min(best, time.perf_counter() - start)
    result[key] = {"us_per_case": best / len(items) * 1e6, "cases": len(items), "wrong": wrong}
print(json.dumps(result))
"""


def tracesim_side(cases: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Per evaluator: its evaluators with the cases' inputs, built outside the timing."""
    from tracesim.evaluators._tool_correctness import ToolCorrectness
    from tracesim.evaluators._trajectory_match import TrajectoryMatch

    kinds: dict[str, Any] = {"trajectory_match": TrajectoryMatch, "tool_correctness": ToolCorrectness}
    return {
        key: [
            (cls(**c["options"]), c["output"], c["expected"], c["score"])
            for c in cases
            if c["evaluator"] == key
        ]
        for key, cls in kinds.items()
    }


def tracesim_round(items: list[Any]) -> float:
    """Seconds to score every case once."""
    start = time.perf_counter()
    for evaluator, output, expected, _want in items:
        evaluator.evaluate(output, expected)
    return time.perf_counter() - start


def peer_side(python: str, rounds: int) -> dict[str, dict[str, float]] | str:
    if not Path(python).exists():
        return (
            f"no peer Python at {python} (make one: python3 -m venv /tmp/peers && "
            "/tmp/peers/bin/pip install agentevals==0.0.9 deepeval==4.3.1)"
        )
    env = {**os.environ, "DEEPEVAL_TELEMETRY_OPT_OUT": "1", "LANGSMITH_TRACING": "false"}
    done = subprocess.run(
        [python, "-c", PEER, str(CASES), str(rounds)], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        return f"the peer side failed: {done.stderr.strip().splitlines()[-1:]}"
    parsed: dict[str, dict[str, float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return parsed


def at_the_cap() -> None:
    """Seconds for tool_correctness to score 1,000 calls against 1,000 (its default cap), in its
    two pairing modes with and without argument credit: calls of 7 names against calls of 5,
    and the worst shape, 1,000 calls of one name against the same reversed."""
    from tracesim.evaluators._tool_correctness import ToolCorrectness

    names = [{"name": f"tool{i % 7}", "arguments": {"q": f"v{i}", "n": i}} for i in range(1000)]
    others = [{"name": f"tool{i % 5}", "arguments": {"q": f"v{i}", "n": i + 1}} for i in range(1000)]
    one_name = [{"name": "t", "arguments": {"q": f"v{i}", "n": i}} for i in range(1000)]
    shapes = (("7 names vs 5", names, others), ("1 name, reversed", one_name, one_name[::-1]))
    print(f"{'tool_correctness at 1,000 calls':<64} {'seconds':>8} {'score':>7}")
    for options in ({}, {"params": ["input_parameters"]}, {"consider_ordering": True},
                    {"consider_ordering": True, "params": ["input_parameters"]}):  # fmt: skip
        evaluator = ToolCorrectness(**options)
        for label, output, expected in shapes:
            start = time.perf_counter()
            score = evaluator.evaluate(output, expected).score
            print(f"{json.dumps(options) + ', ' + label:<64} {time.perf_counter() - start:>8.3f} {score:>7}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--peer-python", default="/tmp/peers/bin/python")
    parser.add_argument("--cap", action="store_true", help="time tool_correctness at its 1,000-call cap")
    args = parser.parse_args()
    if args.cap:
        at_the_cap()
        return
    with CASES.open(encoding="utf-8") as handle:
        cases = [json.loads(line) for line in handle]
    work = tracesim_side(cases)
    ours: dict[str, dict[str, float]] = {}
    for key, items in work.items():
        wrong = sum(1 for ev, out, exp, want in items if ev.evaluate(out, exp).score != want)
        ours[key] = {"us_per_case": float("inf"), "cases": len(items), "wrong": wrong}
    peer: dict[str, dict[str, float]] | str = {}
    # Rounds alternate between the two sides, so that a busy machine slows both alike.
    for _ in range(args.rounds):
        for key, items in work.items():
            ours[key]["us_per_case"] = min(ours[key]["us_per_case"], tracesim_round(items) / len(items) * 1e6)
        if isinstance(peer, str):
            continue
        got = peer_side(args.peer_python, 1)
        if isinstance(got, str):
            peer = got
            continue
        for key, numbers in got.items():
            best = peer.get(key)
            if best is None or numbers["us_per_case"] < best["us_per_case"]:
                peer[key] = numbers
    if isinstance(peer, str):
        print(f"peer side skipped: {peer}")
    print(
        f"{'evaluator':<24} {'cases':>6} {'tracesim us':>12} {'peer us':>10} {'ratio':>8}  wrong (ours/peer)"
    )
    rows = [(key, key) for key in ours]
    if not isinstance(peer, str) and "tool_correctness+inputs" in peer:
        rows.append(("tool_correctness+inputs", "tool_correctness"))
    for key, mine_key in rows:
        mine = ours[mine_key]
        theirs = None if isinstance(peer, str) else peer.get(key)
        peer_us = f"{theirs['us_per_case']:.1f}" if theirs else "-"
        ratio = f"{theirs['us_per_case'] / mine['us_per_case']:.1f}x" if theirs else "-"
        wrong = f"{int(mine['wrong'])}/{int(theirs['wrong']) if theirs else '-'}"
        row = f"{key:<24} {int(mine['cases']):>6} {mine['us_per_case']:>12.1f} {peer_us:>10} {ratio:>8}"
        print(f"{row}  {wrong}")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
