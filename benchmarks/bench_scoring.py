"""What online scoring costs the caller, how fast it keeps up, and whether memory stays flat.

Three measurements, in one run:

1. Caller latency: the median wall time of one call of a traced agent function with three CPU
   evaluators attached (levenshtein, rouge, bleu) against the same function traced without
   evaluators. Calls are paced (open loop) at half the pipeline's sustained rate, so the
   scoring threads are busy about half the time, as in a service under moderate load.
2. Sustained rate: scored calls per second the pipeline completes on this machine with no
   drops (a burst with a queue large enough to hold it, timed until the last score lands).
3. Memory: RSS every 20,000 scored calls over 200,000 (the caller backs off while more than
   1,000 calls are pending, so nothing is dropped), then after the final flush.

BLEU needs NLTK's punkt_tab: run with NLTK_DATA pointing at the data (the Makefile does).

    python benchmarks/bench_scoring.py [--calls 2000] [--memory-calls 200000]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable

from _common import (  # benchmarks run as scripts: their folder is on sys.path
    Discard,
    paced_latencies,
    sustained_rate,
)

import tracesim
from tracesim.evaluators import Bleu, Levenshtein, Rouge

QUESTIONS = [
    "Where was Marie Curie born?",
    "When did Marie Curie win the Nobel Prize in Chemistry?",
    "Who wrote the first published algorithm?",
    "What did Alan Turing propose in 1950?",
]
ANSWERS = {
    QUESTIONS[0]: "Marie Curie was born in Warsaw, then part of the Russian Empire, in 1867.",
    QUESTIONS[1]: "She won the Nobel Prize in Chemistry in 1911, after the 1903 prize in Physics.",
    QUESTIONS[2]: "Ada Lovelace wrote the first published algorithm, for the Analytical Engine.",
    QUESTIONS[3]: "Alan Turing proposed the imitation game, now called the Turing test, in 1950.",
}
GOLDEN = {
    QUESTIONS[0]: "Marie Curie was born in Warsaw in 1867.",
    QUESTIONS[1]: "She won the Nobel Prize in Chemistry in 1911.",
    QUESTIONS[2]: "Ada Lovelace wrote the first published algorithm.",
    QUESTIONS[3]: "Alan Turing proposed the Turing test in 1950.",
}


def agent(question: str) -> str:
    return ANSWERS[question]


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def memory_run(fn: Callable[[str], str], calls: int) -> list[tuple[int, float]]:
    samples = [(0, rss_mb())]
    for i in range(1, calls + 1):
        fn(QUESTIONS[i % len(QUESTIONS)])
        if i % 256 == 0:
            while tracesim.scoring_stats().pending > 1000:
                time.sleep(0.001)
        if i % 20_000 == 0:
            gc.collect()
            samples.append((i, rss_mb()))
    tracesim.force_flush(600)
    gc.collect()
    samples.append((calls, rss_mb()))
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000, help="calls per latency sample")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--memory-calls", type=int, default=200_000)
    args = parser.parse_args()

    exporter = Discard()
    tracesim.configure(exporters=[exporter], set_global_tracer_provider=False, scoring_queue_size=1_000_000)
    evaluators = [Levenshtein(), Rouge(), Bleu()]
    plain = tracesim.trace(kind="agent", name="agent")(agent)
    scored = tracesim.trace(kind="agent", name="agent", evaluators=evaluators, expected=GOLDEN.get)(agent)

    for fn in (plain, scored):  # warm-up: tokenizers, scorers, threads
        for q in QUESTIONS * 50:
            fn(q)
    tracesim.force_flush()

    rate, dropped = sustained_rate(scored, QUESTIONS, args.calls * 2)
    print(
        f"sustained: {rate:,.0f} scored calls/s (3 evaluators, 2 worker threads, 2 cores); dropped {dropped}"
    )

    pace = rate / 2
    medians: dict[str, list[float]] = {"traced": [], "traced + 3 evaluators": []}
    for round_number in range(args.rounds):
        order = [("traced", plain), ("traced + 3 evaluators", scored)]
        if round_number % 2:
            order.reverse()
        for name, fn in order:
            latencies = paced_latencies(fn, QUESTIONS, args.calls, pace)
            medians[name].append(statistics.median(latencies))
            tracesim.force_flush(600)
    base = statistics.median(medians["traced"])
    with_scoring = statistics.median(medians["traced + 3 evaluators"])
    ratios = [s / b for s, b in zip(medians["traced + 3 evaluators"], medians["traced"], strict=True)]
    print(f"caller latency, median of {args.rounds} rounds x {args.calls} calls paced at {pace:,.0f}/s:")
    print(f"  traced:                {base:8.1f} µs")
    print(f"  traced + 3 evaluators: {with_scoring:8.1f} µs")
    print(
        f"  ratio: {with_scoring / base:.2f}x (per round {min(ratios):.2f}-{max(ratios):.2f}); goal <= 1.15x"
    )

    samples = memory_run(scored, args.memory_calls)
    stats = tracesim.scoring_stats()
    print(f"memory over {args.memory_calls:,} scored calls (RSS MB):")
    print("  " + "  ".join(f"{n // 1000}k:{mb:.1f}" for n, mb in samples))
    growth = samples[-1][1] - samples[1][1] if len(samples) > 2 else float("nan")
    print(f"  growth after the first 20k: {growth:+.1f} MB; dropped {stats.dropped}; errors {stats.errors}")
    tracesim.shutdown()
    print(f"spans exported: {exporter.spans:,}")


if __name__ == "__main__":
    main()
