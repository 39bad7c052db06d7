"""What scoring an agent's run online costs its caller (issue 25: goal <= 1.10x median).

An agent function calls five ``@trace(kind="tool")`` functions. Measured in one run, in
alternating rounds:

* ``traced``: the agent and its tools traced, nothing scored (the baseline);
* ``traced + 3 run evaluators``: the same agent with trajectory_match, tool_correctness and
  run_budget attached and an expected trajectory: its spans are kept by the run recorder, and
  a worker builds the run and scores it after the call returns.

Calls are paced (open loop) at half the sustained scored rate, as in a service under moderate
load, so the scoring threads are busy about half the time. Printed: the sustained rate, the
median caller latency of each, their ratio, and the recorder's kept traces after the flush
(0: nothing is held once scored).

    python benchmarks/bench_run_scoring.py [--calls 2000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics

from _common import (  # benchmarks run as scripts: their folder is on sys.path
    Discard,
    paced_latencies,
    sustained_rate,
)

import tracesim
from tracesim import _runtime

CITIES = ["Warsaw", "Paris", "Berlin", "Madrid"]


@tracesim.trace(kind="tool")
def geocode(city: str) -> tuple[float, float]:
    return (52.2, 21.0)


@tracesim.trace(kind="tool")
def forecast(lat: float, lon: float) -> float:
    return 12.0


@tracesim.trace(kind="tool")
def convert(celsius: float, unit: str = "F") -> float:
    return celsius * 9 / 5 + 32


@tracesim.trace(kind="tool")
def advice(temperature: float) -> str:
    return "take a jacket"


@tracesim.trace(kind="tool")
def log_answer(text: str) -> None:
    return None


def agent(city: str) -> str:
    lat, lon = geocode(city)
    degrees = convert(forecast(lat, lon))
    text = f"{degrees:.1f} F, {advice(degrees)}"
    log_answer(text)
    return text


def expected(city: str) -> tracesim.Expected:
    return tracesim.Expected(
        tool_calls=[
            {"name": "geocode", "arguments": {"city": city}},
            {"name": "forecast", "arguments": {"lat": 52.2, "lon": 21.0}},
            {"name": "convert", "arguments": {"celsius": 12.0, "unit": "F"}},
            {"name": "advice", "arguments": {"temperature": 53.6}},
            {"name": "log_answer"},
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000, help="calls per latency sample")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    exporter = Discard()
    tracesim.configure(exporters=[exporter], set_global_tracer_provider=False, scoring_queue_size=100_000)
    plain = tracesim.trace(kind="agent", name="agent")(agent)
    evaluators = [
        "trajectory_match",
        {"type": "tool_correctness", "params": ["input_parameters"]},
        {"type": "run_budget", "max_tool_calls": 5},
    ]
    scored = tracesim.trace(kind="agent", name="agent", evaluators=evaluators, expected=expected)(agent)

    for fn in (plain, scored):  # warm-up: evaluators, threads
        for city in CITIES * 50:
            fn(city)
    tracesim.force_flush()
    check = tracesim.scoring_stats()
    assert check.errors == 0, f"{check.errors} evaluator errors in the warm-up"

    rate, dropped = sustained_rate(scored, CITIES, args.calls)
    print(
        f"sustained: {rate:,.0f} scored runs/s (5 tool spans, 3 run evaluators, 2 cores); dropped {dropped}"
    )

    pace = rate / 2
    names = ("traced", "traced + 3 run evaluators")
    medians: dict[str, list[float]] = {name: [] for name in names}
    for round_number in range(args.rounds):
        order = list(zip(names, (plain, scored), strict=True))
        if round_number % 2:
            order.reverse()
        for name, fn in order:
            medians[name].append(statistics.median(paced_latencies(fn, CITIES, args.calls, pace)))
            tracesim.force_flush(600)
    base, with_runs = (statistics.median(medians[name]) for name in names)
    ratios = [s / b for s, b in zip(medians[names[1]], medians[names[0]], strict=True)]
    print(f"caller latency, median of {args.rounds} rounds x {args.calls} calls paced at {pace:,.0f}/s:")
    print(f"  traced:                    {base:8.1f} µs")
    print(f"  traced + 3 run evaluators: {with_runs:8.1f} µs")
    print(f"  ratio: {with_runs / base:.2f}x (per round {min(ratios):.2f}-{max(ratios):.2f}); goal <= 1.10x")
    runtime = _runtime.active()
    kept = len(runtime.runs.traces) if runtime is not None and runtime.runs is not None else -1
    stats = tracesim.scoring_stats()
    print(f"traces kept by the run recorder after the flush: {kept}")
    print(f"evaluator errors {stats.errors}; dropped {stats.dropped}")
    tracesim.shutdown()
    print(f"spans exported: {exporter.spans:,}")


if __name__ == "__main__":
    main()
