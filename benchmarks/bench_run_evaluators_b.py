"""Throughput of the run evaluators that reproduce ragas and pydantic-evals, next to the packages.

    .venv/bin/python benchmarks/bench_run_evaluators_b.py [--peer-python /tmp/peers/bin/python] [--rounds 5]

The cases are the recorded reference cases (tests/evaluators/data/run_cases_ragas_pydantic.jsonl):
per evaluator type, all its cases scored ``--repeat`` times per round. Each side gets its input
already built, as it would hold it when scoring: tracesim a `tracesim.runs.Run` and the expected
calls as written, parsed on every call (the scoring pipeline hands an `Expected`, whose calls are
read the same way); ragas a
``MultiTurnSample`` and one metric per option set, awaited on one event loop; pydantic-evals an
``EvaluatorContext`` over a span tree of real OpenTelemetry spans and one evaluator per case (its
expectation is an option). The peers run in a subprocess with ``--peer-python`` (a virtualenv
with ragas 0.4.3, pydantic-evals 2.62.0 and opentelemetry-sdk; see the recording script); when
it is missing or lacks a package, that peer is skipped and the reason printed. Rounds of the two
sides alternate; the figures are microseconds per case (each side's best round, as in
bench_run_evaluators_a: a busy machine only ever slows a round) and the ratio peer / tracesim
(goal: >= 10). Scores are compared with the recorded ones on both sides. The last line
is the floor: ``evaluate()`` of a metric that returns a constant, the fixed cost of a result, and
the most any run evaluator could gain on each peer against it. Prints numbers only; nothing
here asserts timings.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "evaluators" / "data"
CASES = DATA / "run_cases_ragas_pydantic.jsonl"
KINDS = ("tool_call_accuracy", "tool_call_f1", "tool_names", "trajectory", "tool_arguments", "run_budget")

# Runs in the peers' virtualenv: reads {"kinds", "repeat", "cases"} on stdin, prints
# {kind: {"us": microseconds per case, "scores": [...]}} (or {"skipped": reason}).
PEER = r"""
import asyncio, json, sys, time, warnings
sys.path.insert(0, sys.argv[1])
job = json.load(sys.stdin)
out = {}
try:
    import record_run_cases_ragas_pydantic as rec
except Exception as exc:
    reason = f"cannot import the recording script's peers: {exc!r}"
    print(json.dumps({kind: {"skipped": reason} for kind in job["kinds"]}))
    raise SystemExit
warnings.simplefilter("ignore")

async def ragas_all(prepared):
    return [await metric.multi_turn_ascore(sample) for metric, sample in prepared]

for kind in job["kinds"]:
    cases = [c for c in job["cases"] if c["evaluator"] == kind]
    try:
        if kind.startswith("tool_call_"):
            metrics = {}
            prepared = []
            for c in cases:
                key = json.dumps(c["options"], sort_keys=True)
                metric = metrics.setdefault(key, rec.ragas_metric(kind, c["options"]))
                prepared.append((metric, rec.ragas_sample(c["actual"], c["expected"])))
            loop = asyncio.new_event_loop()
            scores = loop.run_until_complete(ragas_all(prepared))
            start = time.perf_counter()
            for _ in range(job["repeat"]):
                loop.run_until_complete(ragas_all(prepared))
            elapsed = time.perf_counter() - start
        else:
            prepared = [(c, rec.pydantic_context(c["actual"])) for c in cases]
            def once():
                return [rec.pydantic_evaluator(kind, c["options"], c["expected"])[0].evaluate(ctx).value
                        for c, ctx in prepared]
            scores = once()
            start = time.perf_counter()
            for _ in range(job["repeat"]):
                once()
            elapsed = time.perf_counter() - start
        out[kind] = {"us": elapsed / (job["repeat"] * len(cases)) * 1e6, "scores": [float(s) for s in scores]}
    except Exception as exc:
        out[kind] = {"skipped": f"the peer failed: {exc!r}"}
print(json.dumps(out))
"""


def load_cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines()]


def as_run(calls: list[dict[str, Any]]) -> Any:
    from tracesim.runs import Run, Step, ToolCall

    steps = [Step(kind="llm", name="chat")]
    for item in calls:
        call = ToolCall.of({key: value for key, value in item.items() if key != "error"})
        steps.append(Step(kind="tool", name=call.name, tool_call=call, error=item.get("error")))
    return Run(steps=tuple(steps))


def tracesim_round(
    kind: str, cases: list[dict[str, Any]], repeat: int
) -> tuple[float, float, list[float | None]]:
    """Microseconds per case through ``evaluate()`` and through ``measure()`` alone, and the scores."""
    from tracesim.evaluators._ragas_tool_calls import ToolCallAccuracy, ToolCallF1
    from tracesim.evaluators._run_checks import RunBudget, ToolArguments, ToolNames, Trajectory

    types: dict[str, Any] = {
        "tool_call_accuracy": ToolCallAccuracy,
        "tool_call_f1": ToolCallF1,
        "tool_names": ToolNames,
        "trajectory": Trajectory,
        "tool_arguments": ToolArguments,
        "run_budget": RunBudget,
    }
    per_case = kind == "tool_arguments"  # its expectation is an option: one evaluator per case
    built: dict[str, Any] = {}
    prepared = []
    for case in cases:
        key = json.dumps(case["options"], sort_keys=True)
        evaluator = None if per_case else built.setdefault(key, types[kind](**case["options"]))
        prepared.append((case["options"], evaluator, as_run(case["actual"]), case["expected"]))

    def once() -> list[float | None]:
        scores = []
        for options, evaluator, run, expected in prepared:
            scorer = evaluator if evaluator is not None else types[kind](**options)
            scores.append(scorer.evaluate(run, expected).score)
        return scores

    def bare() -> None:
        for options, evaluator, run, expected in prepared:
            scorer = evaluator if evaluator is not None else types[kind](**options)
            scorer.measure(run, expected)

    scores = once()
    start = time.perf_counter()
    for _ in range(repeat):
        once()
    middle = time.perf_counter()
    for _ in range(repeat):
        bare()
    end = time.perf_counter()
    per_case = 1e6 / (repeat * len(cases))
    return (middle - start) * per_case, (end - middle) * per_case, scores


def floor_round(repeat: int, count: int) -> float:
    """Microseconds per call of ``evaluate()`` whose metric does nothing but return a fixed
    `Measurement` with four details: what every run evaluator pays per result (the timing, the
    threshold and label, the `EvalResult`), whatever it measures."""
    from tracesim.evaluators._base import Measurement
    from tracesim.evaluators._run_checks import RunEvaluator

    class Constant(RunEvaluator):
        type_name = "constant"

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
            return Measurement(1.0, {"a": 1, "b": 2, "c": 3, "d": 4})

    evaluator, calls = Constant(), [{"name": "a", "arguments": {}}]
    start = time.perf_counter()
    for _ in range(repeat * count):
        evaluator.evaluate(calls, calls)
    return (time.perf_counter() - start) / (repeat * count) * 1e6


def peer_round(python: str, cases: list[dict[str, Any]], repeat: int) -> dict[str, Any]:
    if not Path(python).exists():
        return {kind: {"skipped": f"no peer Python at {python}"} for kind in KINDS}
    job = json.dumps({"kinds": list(KINDS), "repeat": repeat, "cases": cases})
    done = subprocess.run(
        [python, "-c", PEER, str(DATA)], input=job, capture_output=True, text=True, check=False, timeout=900
    )
    if done.returncode != 0:
        reason = f"the peer process failed: {done.stderr.strip().splitlines()[-1:]}"
        return {kind: {"skipped": reason} for kind in KINDS}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--peer-python", default="/tmp/peers/bin/python")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    cases = load_cases()
    ours: dict[str, list[float]] = {kind: [] for kind in KINDS}
    bare: dict[str, list[float]] = {kind: [] for kind in KINDS}
    theirs: dict[str, list[float]] = {kind: [] for kind in KINDS}
    skipped: dict[str, str] = {}
    wrong: dict[str, int] = {}
    floor: list[float] = []
    for _ in range(args.rounds):
        peer = peer_round(args.peer_python, cases, args.repeat)
        floor.append(floor_round(args.repeat, 100))
        for kind in KINDS:
            mine = [case for case in cases if case["evaluator"] == kind]
            recorded = [case["score"] for case in mine]
            us, bare_us, scores = tracesim_round(kind, mine, args.repeat)
            ours[kind].append(us)
            bare[kind].append(bare_us)
            wrong[kind] = sum(a != b for a, b in zip(scores, recorded, strict=True))
            if "skipped" in peer[kind]:
                skipped[kind] = peer[kind]["skipped"]
                continue
            theirs[kind].append(peer[kind]["us"])
            wrong[kind] += sum(a != b for a, b in zip(peer[kind]["scores"], recorded, strict=True))
    print("microseconds per case, best round of each side; ratio = peer / tracesim (goal >= 10)")
    print("'measure' is the metric alone, without the timing, threshold and EvalResult of evaluate()")
    columns = ("cases", 5), ("evaluate", 9), ("measure", 8), ("peer", 7), ("ratio", 6), ("vs measure", 10)
    print(f"{'evaluator':<19} " + " ".join(f"{title:>{width}}" for title, width in columns) + "  diff")
    for kind in KINDS:
        count = sum(case["evaluator"] == kind for case in cases)
        mine_us, bare_us = min(ours[kind]), min(bare[kind])
        head = f"{kind:<19} {count:>5} {mine_us:>9.2f} {bare_us:>8.2f}"
        if kind in skipped:
            print(f"{head} {'-':>7} {'-':>6} {'-':>10}  {wrong[kind]} (peer skipped: {skipped[kind]})")
            continue
        peer_us = min(theirs[kind])
        print(f"{head} {peer_us:>7.2f} {peer_us / mine_us:>5.1f}x {peer_us / bare_us:>9.1f}x  {wrong[kind]}")
    floor_us = min(floor)
    print(
        f"floor: evaluate() of a metric that returns a constant costs {floor_us:.2f} us; against it a peer "
        "at P us allows at most P/floor: "
        + ", ".join(f"{kind} {min(theirs[kind]) / floor_us:.1f}x" for kind in KINDS if theirs[kind])
    )


if __name__ == "__main__":
    main()
