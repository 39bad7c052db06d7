"""What OpenTelemetry metrics cost the caller of a scored, traced function.

One run, two configurations swapped in turn (interleaved rounds, the order flipped every
round): metrics off (``metrics="none"``) and metrics on (``metrics=["jsonl", "prometheus"]``:
the file beside the traces and a scrape endpoint on a free loopback port). The function is
traced with two evaluators, one of them sampled at half rate, so that half the calls also
count ``not_sampled`` results in the caller's thread; results and scores are counted on the
scoring worker. Calls are paced (open loop) at a rate the two scoring threads keep up with.

Reported: the caller's median wall time per call and its median thread CPU time per call,
per configuration, and the ratio on / off (goal <= 1.02x). The endpoint is scraped between
rounds, so the totals are collected while the benchmark runs, as under a real Prometheus.
On a shared machine the timed ratio moves by more than the 2 % goal from run to run;
``bench_metrics_instructions.py`` counts the same calls in machine instructions instead.

    python benchmarks/bench_metrics.py [--calls 3000] [--rounds 6] [--rate 2000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from _common import Discard  # benchmarks run as scripts: their folder is on sys.path

import tracesim
from tracesim._metrics import scrape_url
from tracesim.evaluators import ExactMatch, Levenshtein

QUESTIONS = ["Where was Marie Curie born?", "Who wrote the first published algorithm?"]
ANSWERS = {QUESTIONS[0]: "Warsaw", QUESTIONS[1]: "Ada Lovelace"}


def agent(question: str) -> str:
    return ANSWERS[question]


def run(fn: Any, calls: int, rate: float) -> tuple[float, float]:
    """Median wall time and mean thread CPU time per call, in µs, of ``calls`` paced calls."""
    walls = []
    interval = 1.0 / rate
    next_at = time.perf_counter()
    cpu = time.thread_time()
    for i in range(calls):
        now = time.perf_counter()
        if now < next_at:
            time.sleep(next_at - now)
        start = time.perf_counter_ns()
        fn(QUESTIONS[i % 2])
        walls.append((time.perf_counter_ns() - start) / 1000)
        next_at += interval
    cpu = time.thread_time() - cpu
    return statistics.median(walls), cpu / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=3000, help="calls per round and configuration")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--rate", type=float, default=2000.0, help="calls per second (paced)")
    args = parser.parse_args()

    directory = Path(tempfile.mkdtemp(prefix="tracesim-bench-metrics-"))
    common: dict[str, Any] = {
        "exporters": [Discard()],
        "set_global_tracer_provider": False,
        "jsonl_path": str(directory / "traces.jsonl"),
        "scoring_queue_size": 100_000,
    }
    settings = {
        "off": {**common, "metrics": "none"},
        "on": {
            **common,
            "metrics": ["jsonl", "prometheus"],
            "prometheus_host": "127.0.0.1",
            "prometheus_port": 0,
        },
    }
    evaluators = [ExactMatch(), Levenshtein(sample_rate=0.5)]
    scored = tracesim.trace(kind="agent", name="agent", evaluators=evaluators, expected=ANSWERS.get)(agent)

    walls: dict[str, list[float]] = {"off": [], "on": []}
    cpus: dict[str, list[float]] = {"off": [], "on": []}
    scraped = 0
    for round_number in range(args.rounds + 1):  # round 0 warms up both configurations
        order = ["off", "on"] if round_number % 2 else ["on", "off"]
        for name in order:
            tracesim.configure(**settings[name])
            wall, cpu = run(scored, args.calls, args.rate)
            tracesim.force_flush(60)  # (Discard, which counts spans only, does not say True)
            if name == "on":
                url = scrape_url()
                assert url is not None
                with urllib.request.urlopen(url, timeout=10) as response:
                    scraped += response.read().count(b"tracesim_evaluation_results_total{")
            if round_number:
                walls[name].append(wall)
                cpus[name].append(cpu)
    stats = tracesim.scoring_stats()
    tracesim.shutdown()

    off_wall, on_wall = statistics.median(walls["off"]), statistics.median(walls["on"])
    off_cpu, on_cpu = statistics.median(cpus["off"]), statistics.median(cpus["on"])
    ratios = [on / off for on, off in zip(walls["on"], walls["off"], strict=True)]
    print(
        f"scored traced call, {args.rounds} rounds x {args.calls} calls per configuration, "
        f"paced at {args.rate:,.0f}/s"
    )
    print(f"  metrics off: {off_wall:7.2f} µs wall (median)  {off_cpu:7.2f} µs caller CPU")
    print(f"  metrics on:  {on_wall:7.2f} µs wall (median)  {on_cpu:7.2f} µs caller CPU")
    print(
        f"  ratio on/off: {on_wall / off_wall:.3f}x wall (per round {min(ratios):.3f}-{max(ratios):.3f}), "
        f"{on_cpu / off_cpu:.3f}x caller CPU; goal <= 1.02x"
    )
    print(f"  last round: dropped {stats.dropped}, errors {stats.errors}; result series scraped: {scraped}")


if __name__ == "__main__":
    main()
