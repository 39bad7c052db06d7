"""LLM judges online: what they cost the caller, and how many grades per second they sustain.

A scripted OpenAI-compatible server on 127.0.0.1 (the tests' ``tests/llm_server.py``) answers
every chat completion after ``--delay`` seconds (200 ms by default, a fast hosted model). The
real ``openai`` client talks to it over HTTP.

1. Caller latency: the median wall time of one call of a traced agent function scored by
   ``llm_similarity`` against the same function traced without evaluators, calls paced (open
   loop) at half the judge's sustained rate, interleaved rounds. Goal: <= 1.15x (the judge is
   never on the caller's path).
2. Sustained rate: judged calls per second with ``max_concurrency=32``, from the first call
   until the last grade lands, and the drops (goal: none). With a 200 ms answer, 32 in flight
   cap it at 160 grades/s.

    python benchmarks/bench_judge.py [--calls 400] [--rounds 5] [--delay 0.2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from _common import Discard  # benchmarks run as scripts: their folder is on sys.path
from bench_scoring import GOLDEN, QUESTIONS, agent, paced_latencies

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from llm_server import CHAT, LLMServer

import tracesim
from tracesim.evaluators import LLMSimilarity


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=400, help="calls per latency sample and for the rate")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the server takes per answer")
    args = parser.parse_args()

    with LLMServer() as server:
        server.delay_s = args.delay
        server.judge = lambda request: '{"reason": "Same facts.", "score": 5}'
        exporter = Discard()
        tracesim.configure(exporters=[exporter], set_global_tracer_provider=False, scoring_queue_size=100_000)
        judge = LLMSimilarity(base_url=server.base_url, api_key="bench", model="judge", max_concurrency=32)
        plain = tracesim.trace(kind="agent", name="agent")(agent)
        scored = tracesim.trace(kind="agent", name="agent", evaluators=[judge], expected=GOLDEN.get)(agent)
        for fn in (plain, scored):  # warm-up: the client, the loops, the connections
            for q in QUESTIONS * 10:
                fn(q)
        tracesim.force_flush(120)

        before, start = tracesim.scoring_stats(), time.perf_counter()
        sent = server.count(CHAT)
        for i in range(args.calls):
            scored(QUESTIONS[i % len(QUESTIONS)])
        tracesim.force_flush(600)
        elapsed = time.perf_counter() - start
        after = tracesim.scoring_stats()
        rate = args.calls / elapsed
        print(
            f"sustained: {rate:,.1f} judged calls/s with max_concurrency=32 and a {args.delay * 1000:.0f} ms "
            f"server (ceiling {32 / args.delay:,.0f}/s); dropped {after.dropped - before.dropped}, "
            f"errors {after.errors - before.errors}; server max in flight {server.max_in_flight}; "
            f"requests {server.count(CHAT) - sent:,} for {args.calls:,} calls"
        )

        pace = rate / 2
        medians: dict[str, list[float]] = {"traced": [], "traced + llm_similarity": []}
        for round_number in range(args.rounds):
            order = [("traced", plain), ("traced + llm_similarity", scored)]
            if round_number % 2:
                order.reverse()
            for name, fn in order:
                medians[name].append(statistics.median(paced_latencies(fn, args.calls, pace)))
                tracesim.force_flush(600)
        base = statistics.median(medians["traced"])
        judged = statistics.median(medians["traced + llm_similarity"])
        ratios = [s / b for s, b in zip(medians["traced + llm_similarity"], medians["traced"], strict=True)]
        print(f"caller latency, median of {args.rounds} rounds x {args.calls} calls paced at {pace:,.1f}/s:")
        print(f"  traced:                  {base:8.1f} µs")
        print(f"  traced + llm_similarity: {judged:8.1f} µs")
        print(f"  ratio: {judged / base:.2f}x (per round {min(ratios):.2f}-{max(ratios):.2f}); goal <= 1.15x")
        tracesim.shutdown()
        print(f"spans exported: {exporter.spans:,}")


if __name__ == "__main__":
    main()
