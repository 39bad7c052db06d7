"""Per-call cost of @tracesim.trace against the same function untraced and hand-written OpenTelemetry.

The variants do the same observable work per call: one span named ``agent`` with the same
attributes (``openinference.span.kind``, ``gen_ai.operation.name``, ``gen_ai.agent.name``, the
input as JSON and the output, with their MIME types), exported through a ``BatchSpanProcessor``
(the same queue size for all) to an exporter that discards. Shapes: ``sync``, ``async``, ``gen``
(a generator) and ``agen`` (an async generator) take a 200-char question and a small dict and
return 200 chars (the generators in 5 chunks); ``chat`` takes a realistic ~10 KB chat history
(English support conversation, see _workload.py) plus metadata with ``usage.*_tokens``,
``model`` and ``cache_key``, and returns 272 chars.
The hand-written code writes ``json.dumps`` of the arguments and redacts nothing; tracesim runs
its built-in redaction patterns (on by default) in the export path, in the batch processor's
thread: the "no redaction" column is tracesim with ``redact_patterns="none"``.

Two views of the cost, both per call, both median over interleaved rounds:

* CPU: process CPU time of a repeat of calls *and* the flush that ends it, so the export
  thread's work (redaction included) is counted, whichever thread does it;
* caller: what the calling thread pays, for the calls alone (before the flush): its wall time
  (what the promise is about; it includes waiting for the GIL while the export thread runs)
  and its own CPU time (``time.thread_time``, steadier on a shared machine).

Read the ratios, not the absolute numbers: the machine is shared. Goals (redaction on, CPU of
all threads): sync <= 1.15x, gen <= 1.25x and chat <= 1.15x hand-written OTel.

    python benchmarks/bench_overhead.py [--rounds 7] [--calls 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

# benchmarks run as scripts: their folder is on sys.path
from _common import Discard, Sample, timed
from _workload import AGENT_ATTRIBUTES, ANSWER, CHAT, CHAT_ANSWER, CHAT_METADATA, CONTEXT, QUESTION
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracesim
from tracesim.exporters import RedactingExporter

SHAPES = ("sync", "async", "gen", "agen", "chat")
VARIANTS = ("untraced", "OTel", "tracesim", "no redaction")
ARGUMENTS: dict[str, tuple[Any, Any]] = {
    "sync": (QUESTION, CONTEXT),
    "async": (QUESTION, CONTEXT),
    "gen": (QUESTION, CONTEXT),
    "agen": (QUESTION, CONTEXT),
    "chat": (CHAT, CHAT_METADATA),
}
# tracesim's batch queue with default settings (2,048 + the scoring queue): the hand-written
# pipeline gets the same, and a repeat makes fewer calls than that, so no variant drops spans.
QUEUE_SIZE = 2048 + 10_000


def plain(question: str, context: dict[str, Any]) -> str:
    return ANSWER


def plain_gen(question: str, context: dict[str, Any]) -> Iterator[str]:
    for i in range(0, 200, 40):
        yield ANSWER[i : i + 40]


async def plain_agen(question: str, context: dict[str, Any]) -> AsyncIterator[str]:
    for i in range(0, 200, 40):
        yield ANSWER[i : i + 40]


async def plain_async(question: str, context: dict[str, Any]) -> str:
    return ANSWER


def chat(messages: list[dict[str, str]], metadata: dict[str, Any]) -> str:
    return CHAT_ANSWER


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

    async def agent_agen(question: str, context: dict[str, Any]) -> AsyncIterator[str]:
        with tracer.start_as_current_span("agent", attributes=AGENT_ATTRIBUTES) as span:
            span.set_attribute("input.value", json.dumps({"question": question, "context": context}))
            span.set_attribute("input.mime_type", "application/json")
            items = []
            async for item in plain_agen(question, context):
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

    def agent_chat(messages: list[dict[str, str]], metadata: dict[str, Any]) -> str:
        with tracer.start_as_current_span("agent", attributes=AGENT_ATTRIBUTES) as span:
            span.set_attribute("input.value", json.dumps({"messages": messages, "metadata": metadata}))
            span.set_attribute("input.mime_type", "application/json")
            result = chat(messages, metadata)
            span.set_attribute("output.value", result)
            span.set_attribute("output.mime_type", "text/plain")
            return result

    return {"sync": agent, "gen": agent_gen, "agen": agent_agen, "async": agent_async, "chat": agent_chat}


def make_tracesim() -> dict[str, Callable[..., Any]]:
    trace = tracesim.trace(name="agent", kind="agent")
    return {
        "sync": trace(plain),
        "gen": trace(plain_gen),
        "agen": trace(plain_agen),
        "async": trace(plain_async),
        "chat": trace(chat),
    }


def untraced() -> dict[str, Callable[..., Any]]:
    return {"sync": plain, "gen": plain_gen, "agen": plain_agen, "async": plain_async, "chat": chat}


def calls_of(fn: Callable[..., Any], shape: str, calls: int) -> Callable[[], None]:
    """A loop making ``calls`` calls of ``fn`` the way its shape is called."""
    first, second = ARGUMENTS[shape]
    if shape == "gen":

        def run() -> None:
            for _ in range(calls):
                for _item in fn(first, second):
                    pass

    elif shape == "async":

        async def loop() -> None:
            for _ in range(calls):
                await fn(first, second)

        def run() -> None:
            asyncio.run(loop())

    elif shape == "agen":

        async def stream_loop() -> None:
            for _ in range(calls):
                async for _item in fn(first, second):
                    pass

        def run() -> None:
            asyncio.run(stream_loop())

    else:

        def run() -> None:
            for _ in range(calls):
                fn(first, second)

    return run


Variant = tuple[dict[str, Callable[..., Any]], Callable[[], object], Callable[[], None]]


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=5000, help="calls per repeat (chat: a tenth)")
    args = parser.parse_args()

    otel_exporter = Discard()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(otel_exporter, max_queue_size=QUEUE_SIZE))
    ours_exporter = Discard()

    configured: list[dict[str, Any]] = []

    def use(**settings: Any) -> Callable[[], None]:
        def setup() -> None:
            if configured[-1:] != [settings]:  # configure() drains the old runtime: only on a change
                tracesim.configure(exporters=[ours_exporter], set_global_tracer_provider=False, **settings)
                configured.append(settings)

        return setup

    traced = make_tracesim()
    # name -> (functions, flush, set-up run before each measurement, outside the timing)
    variants: dict[str, Variant] = {
        "untraced": (untraced(), lambda: None, lambda: None),
        "OTel": (make_hand_written(provider), provider.force_flush, lambda: None),
        "tracesim": (traced, tracesim.force_flush, use()),
        "no redaction": (traced, tracesim.force_flush, use(redact_patterns="none")),
    }
    made = dict.fromkeys(variants, 0)
    samples: dict[tuple[str, str], list[Sample]] = {(v, s): [] for v in variants for s in SHAPES}
    for name, (fns, flush, setup) in variants.items():  # warm-up
        setup()
        for shape in SHAPES:
            timed(500, calls_of(fns[shape], shape, 500), flush)
            made[name] += 500
    # Each shape's variants run back to back (the order reversed every other round), so the
    # ratio of one round compares repeats a few seconds apart, under about the same load.
    for round_number in range(args.rounds):
        order = list(variants.items())
        if round_number % 2:
            order.reverse()
        for shape in SHAPES:
            calls = args.calls // 10 if shape == "chat" else args.calls
            for name, (fns, flush, setup) in order:
                setup()
                samples[(name, shape)].append(timed(calls, calls_of(fns[shape], shape, calls), flush))
                made[name] += calls
    tracesim.shutdown()
    provider.shutdown()
    report(args, samples)
    print(
        f"spans exported / made: hand-written {otel_exporter.spans:,} / {made['OTel']:,}, "
        f"tracesim {ours_exporter.spans:,} / {made['tracesim'] + made['no redaction']:,}"
    )
    report_redaction(traced)


def report(args: argparse.Namespace, samples: dict[tuple[str, str], list[Sample]]) -> None:
    def med(name: str, shape: str, field: str) -> float:
        return statistics.median(float(getattr(s, field)) for s in samples[(name, shape)])

    def ratios(name: str, shape: str, field: str) -> list[float]:
        pairs = zip(samples[(name, shape)], samples[("OTel", shape)], strict=True)
        return [getattr(ours, field) / getattr(otel, field) for ours, otel in pairs]

    def ratio(name: str, shape: str, field: str) -> str:
        return f"{statistics.median(ratios(name, shape, field)):.2f}x"

    def spread(shape: str, field: str) -> str:
        each = ratios("tracesim", shape, field)
        return f"{min(each):.2f}-{max(each):.2f}"

    rounds, calls = args.rounds, args.calls
    print(f"{rounds} interleaved rounds, {calls} calls per repeat (chat: /10); µs per call, median of rounds")
    print("ratio = tracesim / hand-written OTel in the same round, median over rounds (range: 'per round');")
    print("'no redaction' = tracesim with redact_patterns='none'\n")
    print("CPU per call, all threads, including the flush (export thread and redaction counted):")
    header = ["shape", "untraced", "OTel", "tracesim", "ratio", "per round", "no redaction", "ratio"]
    print("".join(f"{h:>13}" for h in header))
    for shape in SHAPES:
        base, otel, ours, bare = (med(v, shape, "cpu_us") for v in VARIANTS)
        cells = [shape, f"{base:.2f}", f"{otel:.1f}", f"{ours:.1f}", ratio("tracesim", shape, "cpu_us")]
        cells += [spread(shape, "cpu_us"), f"{bare:.1f}", ratio("no redaction", shape, "cpu_us")]
        print("".join(f"{c:>13}" for c in cells))
    print("\nthe caller's own time, calls alone (before the flush): wall time, and the thread's CPU time")
    header = ["shape", "OTel wall", "tracesim wall", "ratio", "per round", "OTel cpu", "tracesim cpu"]
    print("".join(f"{h:>14}" for h in [*header, "ratio", "per round"]))
    for shape in SHAPES:
        otel_wall, ours_wall = med("OTel", shape, "wall_us"), med("tracesim", shape, "wall_us")
        otel_cpu, ours_cpu = med("OTel", shape, "thread_us"), med("tracesim", shape, "thread_us")
        cells = [shape, f"{otel_wall:.1f}", f"{ours_wall:.1f}", ratio("tracesim", shape, "wall_us")]
        cells += [spread(shape, "wall_us"), f"{otel_cpu:.1f}", f"{ours_cpu:.1f}"]
        cells += [ratio("tracesim", shape, "thread_us"), spread(shape, "thread_us")]
        print("".join(f"{c:>14}" for c in cells))
    print("\ngoals (redaction on, CPU of all threads): sync <= 1.15x, gen <= 1.25x, chat <= 1.15x")


def redaction_per_span(traced: dict[str, Callable[..., Any]]) -> dict[str, tuple[float, float]]:
    """µs of the export thread's CPU to redact one span of each shape: patterns on, and off
    (what the pass costs that has nothing to look for). The least of 15 repeats: the machine
    is shared, and a repeat that was slowed down by others tells nothing about the code."""
    memory = InMemorySpanExporter()
    tracesim.configure(exporters=[memory], set_global_tracer_provider=False, redact_patterns="none")
    spans: dict[str, Any] = {}
    for shape in SHAPES:
        calls_of(traced[shape], shape, 1)()
        tracesim.force_flush()
        spans[shape] = memory.get_finished_spans()[-1]
    tracesim.shutdown()
    on, off = RedactingExporter(Discard()).redaction, RedactingExporter(Discard(), patterns=()).redaction

    def least(redact: Callable[[Any], object], span: Any, calls: int = 200) -> float:
        each = []
        for _ in range(15):
            started = time.thread_time()
            for _ in range(calls):
                redact(span)
            each.append((time.thread_time() - started) / calls * 1e6)
        return min(each)

    return {shape: (least(on.span, span), least(off.span, span)) for shape, span in spans.items()}


def report_redaction(traced: dict[str, Callable[..., Any]]) -> None:
    costs = redaction_per_span(traced)
    print("\nredaction of one span in the export path, µs of CPU (least of 15 repeats):")
    print("".join(f"{h:>13}" for h in ("shape", "patterns on", "off")))
    for shape, (on, off) in costs.items():
        print("".join(f"{c:>13}" for c in (shape, f"{on:.1f}", f"{off:.1f}")))


if __name__ == "__main__":
    main()
