"""Per-call cost of @tracesim.trace against the same function untraced and hand-written OpenTelemetry.

The variants do the same observable work per call: one span named ``agent`` with the same
attributes (``openinference.span.kind``, ``gen_ai.operation.name``, ``gen_ai.agent.name``, the
input, a 200-char question and a small dict, as JSON, and the output, a 200-char string, with
their MIME types), exported through a ``BatchSpanProcessor`` to an exporter that discards.
tracesim also runs its built-in redaction patterns over the input and output, which the
hand-written code does not: the "no redaction" column is tracesim with them switched off.
Variants run interleaved in one process, for several rounds; each figure is the median over
rounds of CPU time per call, counting the export thread's work (each repeat ends with a
flush). Read the ratios, not the absolute numbers: the machine is shared.

    python benchmarks/bench_overhead.py [--rounds 7] [--calls 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from _common import Discard  # benchmarks run as scripts: their folder is on sys.path
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import tracesim

QUESTION = ("Where was Marie Curie born, and what did she study in Paris? " * 4)[:200]
CONTEXT = {"user": "u-123", "session": "s-456", "top_k": 3, "lang": "en"}
ANSWER = ("Marie Curie was born in Warsaw and studied physics and mathematics at the Sorbonne. " * 3)[:200]
BIG_QUESTION = "x" * 10_000
BIG_CONTEXT = {"messages": [{"role": "user", "content": "y" * 400} for _ in range(20)]}


# What tracesim writes at start for kind="agent": the baseline writes the same.
AGENT_ATTRIBUTES = {
    "openinference.span.kind": "AGENT",
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.agent.name": "agent",
}


def plain(question: str, context: dict[str, Any]) -> str:
    return ANSWER


def plain_gen(question: str, context: dict[str, Any]) -> Iterator[str]:
    for i in range(0, 200, 40):
        yield ANSWER[i : i + 40]


async def plain_async(question: str, context: dict[str, Any]) -> str:
    return ANSWER


def make_hand_written(provider: TracerProvider) -> dict[str, Callable[..., Any]]:
    tracer = provider.get_tracer("hand-written")

    def agent(question: str, context: dict[str, Any]) -> str:
        with tracer.start_as_current_span("agent", attributes=AGENT_ATTRIBUTES) as span:
            span.set_attribute("input.value", json.dumps({"question": question, "context": context}))
            span.set_attribute("input.mime_type", "application/json")
            result = plain(question, context)
            span.set_attribute("output.value", result)
            span.set_attribute("output.mime_type", "text/plain")
            return result

    def agent_gen(question: str, context: dict[str, Any]) -> Iterator[str]:
        with tracer.start_as_current_span("agent", attributes=AGENT_ATTRIBUTES) as span:
            span.set_attribute("input.value", json.dumps({"question": question, "context": context}))
            span.set_attribute("input.mime_type", "application/json")
            items = []
            for item in plain_gen(question, context):
                items.append(item)
                yield item
            span.set_attribute("output.value", "".join(items))
            span.set_attribute("output.mime_type", "text/plain")

    async def agent_async(question: str, context: dict[str, Any]) -> str:
        with tracer.start_as_current_span("agent", attributes=AGENT_ATTRIBUTES) as span:
            span.set_attribute("input.value", json.dumps({"question": question, "context": context}))
            span.set_attribute("input.mime_type", "application/json")
            result = await plain_async(question, context)
            span.set_attribute("output.value", result)
            span.set_attribute("output.mime_type", "text/plain")
            return result

    return {"sync": agent, "gen": agent_gen, "async": agent_async, "large": agent}


def make_tracesim() -> dict[str, Callable[..., Any]]:
    trace = tracesim.trace(name="agent", kind="agent")
    return {"sync": trace(plain), "gen": trace(plain_gen), "async": trace(plain_async), "large": trace(plain)}


def untraced() -> dict[str, Callable[..., Any]]:
    return {"sync": plain, "gen": plain_gen, "async": plain_async, "large": plain}


def measure(fn: Callable[..., Any], shape: str, calls: int, flush: Callable[[], object]) -> float:
    """CPU microseconds per call, including the flush that exports this repeat's spans."""
    question, context = (BIG_QUESTION, BIG_CONTEXT) if shape == "large" else (QUESTION, CONTEXT)
    start = time.process_time()
    if shape == "gen":
        for _ in range(calls):
            for _item in fn(question, context):
                pass
    elif shape == "async":

        async def loop() -> None:
            for _ in range(calls):
                await fn(question, context)

        asyncio.run(loop())
    else:
        for _ in range(calls):
            fn(question, context)
    flush()
    return (time.process_time() - start) / calls * 1e6


Variant = tuple[dict[str, Callable[..., Any]], Callable[[], object], Callable[[], None]]


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args()

    otel_exporter = Discard()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(otel_exporter, max_queue_size=100_000))
    ours_exporter = Discard()

    def use(**settings: Any) -> Callable[[], None]:
        def setup() -> None:
            tracesim.configure(exporters=[ours_exporter], set_global_tracer_provider=False, **settings)

        return setup

    traced = make_tracesim()
    # name -> (functions, flush, set-up run before each measurement, outside the timing)
    variants: dict[str, Variant] = {
        "untraced": (untraced(), lambda: None, lambda: None),
        "OTel": (make_hand_written(provider), provider.force_flush, lambda: None),
        "tracesim": (traced, tracesim.force_flush, use()),
        "no redaction": (traced, tracesim.force_flush, use(redact_patterns="none")),
    }
    shapes = ["sync", "async", "gen", "large"]
    samples: dict[tuple[str, str], list[float]] = {(v, s): [] for v in variants for s in shapes}
    for fns, flush, setup in variants.values():  # warm-up
        setup()
        for shape in shapes:
            measure(fns[shape], shape, 1000, flush)
    for round_number in range(args.rounds):
        order = list(variants.items())
        if round_number % 2:
            order.reverse()
        for name, (fns, flush, setup) in order:
            setup()
            for shape in shapes:
                calls = args.calls // 10 if shape == "large" else args.calls
                samples[(name, shape)].append(measure(fns[shape], shape, calls, flush))

    def median(name: str, shape: str) -> float:
        return statistics.median(samples[(name, shape)])

    print(f"CPU µs per call, median of {args.rounds} rounds ({args.calls} calls per repeat; large: /10)")
    print("ratio = tracesim / hand-written OTel; 'no redaction' = tracesim with redact_patterns='none'")
    header = ["shape", "untraced", "OTel", "tracesim", "ratio", "per round", "no redaction", "ratio"]
    print("".join(f"{h:>13}" for h in header))
    for shape in shapes:
        base, otel, ours, bare = (median(v, shape) for v in variants)
        pairs = zip(samples[("tracesim", shape)], samples[("OTel", shape)], strict=True)
        per_round = [t / o for t, o in pairs]
        cells = [
            shape,
            f"{base:.2f}",
            f"{otel:.1f}",
            f"{ours:.1f}",
            f"{ours / otel:.2f}x",
            f"{min(per_round):.2f}-{max(per_round):.2f}",
            f"{bare:.1f}",
            f"{bare / otel:.2f}x",
        ]
        print("".join(f"{c:>13}" for c in cells))
    tracesim.shutdown()
    provider.shutdown()
    print(f"spans exported: hand-written {otel_exporter.spans}, tracesim {ours_exporter.spans}")
    print("goal: tracesim <= 1.3x hand-written OTel")


if __name__ == "__main__":
    main()
