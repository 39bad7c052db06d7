"""What `tracesim.instrument_openai()` costs a call of the openai client.

The real ``openai`` client calls a scripted OpenAI-compatible server on 127.0.0.1 (the tests'
``tests/llm_server.py``, answering at once), sync chat completions of a short question. Four
variants in interleaved rounds, each repeat timed as the calling thread's CPU (the work a call
adds; the server's threads are not counted) and wall time:

* ``bare``: the client, no instrumentation, tracesim not configured;
* ``instrumented, capture off``: ``instrument_openai(capture=False)`` under a traced agent;
* ``instrumented, capture on``: the same with message content recorded;
* ``traced agent only``: the agent span without instrumenting the client (the baseline of the
  agent's own cost, to separate it from the instrumentation's);
* ``capture on, unscored session`` and ``capture on, rule-scored``: the instrumented agent inside
  ``tracesim.attributes(session_id=...)``; a configuration rule (``kind: llm`` and
  ``session.id: scored``) scores the LLM span of the second with ``levenshtein`` against an
  expected answer, in the background, its export held until scored. The caller's cost should
  be that of the unscored call: the last line prints that ratio.

Spans go to an exporter that discards. Read ratios, not absolute numbers: the machine is shared.

    python benchmarks/bench_openai.py [--rounds 7] [--calls 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from _common import Discard  # benchmarks run as scripts: their folder is on sys.path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import openai
from llm_server import LLMServer

import tracesim
from tracesim.integrations import uninstrument_openai

MESSAGES = [{"role": "user", "content": "Where was Marie Curie born, and what did she study in Paris?"}]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()

    with LLMServer() as server:
        server.judge = lambda request: "Marie Curie was born in Warsaw and studied physics in Paris."
        client = openai.OpenAI(base_url=server.base_url, api_key="bench", max_retries=0)

        def call() -> None:
            client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)  # type: ignore[arg-type]

        agent = tracesim.trace(kind="agent", name="agent")(call)

        def in_session(session: str) -> Callable[[], None]:
            def run() -> None:
                with tracesim.attributes(session_id=session):
                    agent()

            return run

        def variant(instrument: bool | None, fn: Callable[[], None]) -> Callable[[], tuple[float, float]]:
            def run() -> tuple[float, float]:
                uninstrument_openai()
                if instrument is not None:
                    tracesim.instrument_openai(capture=instrument)
                cpu, wall = time.thread_time(), time.perf_counter()
                for _ in range(args.calls):
                    fn()
                result = (
                    (time.thread_time() - cpu) / args.calls * 1e6,
                    (time.perf_counter() - wall) / args.calls * 1e6,
                )
                tracesim.force_flush()
                return result

            return run

        rule = {
            "kind": "llm",
            "attributes": {"session.id": "scored"},
            "evaluators": ["levenshtein"],
            "expected": {"value": "Marie Curie was born in Warsaw; she studied physics in Paris."},
        }
        tracesim.configure(exporters=[Discard()], set_global_tracer_provider=False, evaluators=[rule])
        variants = {
            "bare": variant(None, call),
            "traced agent only": variant(None, agent),
            "instrumented, capture off": variant(False, agent),
            "instrumented, capture on": variant(True, agent),
            "capture on, unscored session": variant(True, in_session("unscored")),
            "capture on, rule-scored": variant(True, in_session("scored")),
        }
        for run in variants.values():  # warm-up: connections, imports
            run()
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
        for round_number in range(args.rounds):
            order = list(variants.items())
            if round_number % 2:
                order.reverse()
            for name, run in order:
                samples[name].append(run())
        uninstrument_openai()
        stats = tracesim.scoring_stats()
        tracesim.shutdown()
        client.close()

    base = samples["bare"]
    print(f"{args.rounds} interleaved rounds x {args.calls} calls; µs per call (caller thread CPU, wall)")
    print(f"{'variant':28}{'CPU':>10}{'ratio':>9}{'wall':>10}{'ratio':>9}")
    for name, got in samples.items():
        cpu = statistics.median(c for c, _ in got)
        wall = statistics.median(w for _, w in got)
        cpu_ratio = statistics.median(c / b for (c, _), (b, _) in zip(got, base, strict=True))
        wall_ratio = statistics.median(w / b for (_, w), (_, b) in zip(got, base, strict=True))
        print(f"{name:28}{cpu:10.0f}{cpu_ratio:8.2f}x{wall:10.0f}{wall_ratio:8.2f}x")
    print("ratios against the bare client in the same round (median over rounds)")
    scored, unscored = samples["capture on, rule-scored"], samples["capture on, unscored session"]
    cpu_ratio = statistics.median(c / b for (c, _), (b, _) in zip(scored, unscored, strict=True))
    wall_ratio = statistics.median(w / b for (_, w), (_, b) in zip(scored, unscored, strict=True))
    print(
        f"rule-scored LLM span vs the same call unscored: caller CPU {cpu_ratio:.2f}x, "
        f"wall {wall_ratio:.2f}x "
        f"({stats.completed} spans scored, {stats.dropped} dropped)"
    )


if __name__ == "__main__":
    main()
