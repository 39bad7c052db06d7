"""Per-call cost of @tracesim.trace against the same function untraced and hand-written OpenTelemetry.

The three variants do the same observable work per call: one span named ``agent`` with
``openinference.span.kind``, the input (a 200-char question and a small dict, as JSON) and the
output (a 200-char string) as attributes, exported through a ``BatchSpanProcessor`` to an
exporter that discards. Variants run interleaved in one process, for several rounds; each
figure is the median over rounds of CPU time per call, counting the export thread's work
(each repeat ends with a flush). Read the ratios, not the absolute numbers: the machine is
shared.

    python benchmarks/bench_overhead.py [--rounds 7] [--calls 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

import tracesim

QUESTION = ("Where was Marie Curie born, and what did she study in Paris? " * 4)[:200]
CONTEXT = {"user": "u-123", "session": "s-456", "top_k": 3, "lang": "en"}
ANSWER = ("Marie Curie was born in Warsaw and studied physics and mathematics at the Sorbonne. " * 3)[:200]
BIG_QUESTION = "x" * 10_000
BIG_CONTEXT = {"messages": [{"role": "user", "content": "y" * 400} for _ in range(20)]}


class Discard(SpanExporter):
    """Counts spans and drops them: measures the SDK, not a transport."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


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
        with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}) as span:
            span.set_attribute("input.value", json.dumps({"question": question, "context": context}))
            span.set_attribute("input.mime_type", "application/json")
            result = plain(question, context)
            span.set_attribute("output.value", result)
            span.set_attribute("output.mime_type", "text/plain")
            return result

    def agent_gen(question: str, context: dict[str, Any]) -> Iterator[str]:
        with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}) as span:
            span.set_attribute("input.value", json.dumps({"question": question, "context": context}))
            span.set_attribute("input.mime_type", "application/json")
            items = []
            for item in plain_gen(question, context):
                items.append(item)
                yield item
            span.set_attribute("output.value", "".join(items))
            span.set_attribute("output.mime_type", "text/plain")

    async def agent_async(question: str, context: dict[str, Any]) -> str:
        with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}) as span:
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args()

    otel_exporter = Discard()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(otel_exporter, max_queue_size=100_000))
    ours_exporter = Discard()
    tracesim.configure(exporters=[ours_exporter], set_global_tracer_provider=False)

    variants = {
        "untraced": (untraced(), lambda: None),
        "hand-written OTel": (make_hand_written(provider), lambda: provider.force_flush()),
        "tracesim": (make_tracesim(), lambda: tracesim.force_flush()),
    }
    shapes = ["sync", "async", "gen", "large"]
    samples: dict[tuple[str, str], list[float]] = {(v, s): [] for v in variants for s in shapes}
    for fns, flush in variants.values():  # warm-up
        for shape in shapes:
            measure(fns[shape], shape, 1000, flush)
    for round_number in range(args.rounds):
        order = list(variants.items())
        if round_number % 2:
            order.reverse()
        for shape in shapes:
            calls = args.calls // 10 if shape == "large" else args.calls
            for name, (fns, flush) in order:
                samples[(name, shape)].append(measure(fns[shape], shape, calls, flush))

    def median(name: str, shape: str) -> float:
        return statistics.median(samples[(name, shape)])

    print(f"CPU µs per call, median of {args.rounds} rounds ({args.calls} calls per repeat; large: /10)")
    print(f"{'shape':<7}{'untraced':>10}{'OTel':>10}{'tracesim':>10}{'tracesim/OTel':>15}{'range/round':>16}")
    for shape in shapes:
        base, otel, ours = (median(v, shape) for v in variants)
        per_round = [
            t / o
            for t, o in zip(samples[("tracesim", shape)], samples[("hand-written OTel", shape)], strict=True)
        ]
        print(
            f"{shape:<7}{base:>10.2f}{otel:>10.1f}{ours:>10.1f}{ours / otel:>14.2f}x"
            f"{min(per_round):>8.2f}-{max(per_round):.2f}"
        )
    tracesim.shutdown()
    provider.shutdown()
    print(f"spans exported: hand-written {otel_exporter.spans}, tracesim {ours_exporter.spans}")
    print("goal: tracesim <= 1.3x hand-written OTel")


if __name__ == "__main__":
    main()
