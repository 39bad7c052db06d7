"""What tracesim costs over OTLP against the official OTLP exporter, with a healthy backend.

Both send OTLP/HTTP (protobuf) to the same local backend: a small HTTP server in its own
process that answers ``POST /v1/traces`` with 200 and an empty protobuf body, and counts the
spans it receives.

* ``OTel``: the official set-up, written by hand: ``OTLPSpanExporter`` in a
  ``BatchSpanProcessor`` (default settings), spans with the same attributes tracesim writes
  (``json.dumps`` of the input, no redaction);
* ``tracesim``: ``tracesim.configure(exporters=["otlp"], otlp_endpoint=...)`` with defaults:
  redaction on (in the export path), disk spool on (in a temporary directory);
* ``no spool`` / ``no redaction``: tracesim with ``spool_dir="none"`` / ``redact_patterns="none"``,
  to show where a difference comes from.

Two inputs, as in bench_overhead.py: ``sync`` (a 200-char question and a small dict) and
``chat`` (a ~10 KB chat history with usage/model metadata). A repeat makes fewer calls than the
official processor's queue holds (2,048), so nothing is dropped and every variant exports the
same spans; the table says how many the backend received. Per call, median over interleaved
rounds: process CPU including the flush (export threads, protobuf encoding and HTTP counted),
and the caller's wall time and thread CPU time for the calls alone. Goal: tracesim <= 1.1x
the official exporter's set-up. Read the ratios: the machine is shared.

    python benchmarks/bench_otlp.py [--rounds 7] [--calls 2000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections.abc import Callable
from typing import Any

# benchmarks run as scripts: their folder is on sys.path
from _common import Sample, Sink, timed
from _workload import AGENT_ATTRIBUTES, ANSWER, CHAT, CHAT_ANSWER, CHAT_METADATA, CONTEXT, QUESTION
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import tracesim

SHAPES = {"sync": (QUESTION, CONTEXT), "chat": (CHAT, CHAT_METADATA)}
FIELDS = {"cpu_us": "CPU incl. flush", "wall_us": "caller wall", "thread_us": "caller CPU"}


def agent(question: str, context: dict[str, Any]) -> str:
    return ANSWER


def chat(messages: list[dict[str, str]], metadata: dict[str, Any]) -> str:
    return CHAT_ANSWER


def hand_written(provider: TracerProvider) -> dict[str, Callable[[Any, Any], str]]:
    tracer = provider.get_tracer("hand-written")

    def make(fn: Callable[[Any, Any], str], first: str, second: str) -> Callable[[Any, Any], str]:
        def traced(a: Any, b: Any) -> str:
            with tracer.start_as_current_span("agent", attributes=AGENT_ATTRIBUTES) as span:
                span.set_attribute("input.value", json.dumps({first: a, second: b}))
                span.set_attribute("input.mime_type", "application/json")
                result = fn(a, b)
                span.set_attribute("output.value", result)
                span.set_attribute("output.mime_type", "text/plain")
                return result

        return traced

    return {"sync": make(agent, "question", "context"), "chat": make(chat, "messages", "metadata")}


def repeat(fn: Callable[[Any, Any], str], shape: str, calls: int) -> Callable[[], None]:
    first, second = SHAPES[shape]

    def run() -> None:
        for _ in range(calls):
            fn(first, second)

    return run


Variant = tuple[dict[str, Callable[[Any, Any], str]], Callable[[], object], Callable[[], None]]


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000, help="calls per repeat (chat: a tenth)")
    args = parser.parse_args()

    sink = Sink()
    spool = tempfile.TemporaryDirectory(prefix="bench-otlp-spool-")
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=sink.traces_url)))
    trace = tracesim.trace(name="agent", kind="agent")
    traced: dict[str, Callable[[Any, Any], str]] = {"sync": trace(agent), "chat": trace(chat)}
    configured: list[dict[str, Any]] = []

    def use(**settings: Any) -> Callable[[], None]:
        def setup() -> None:
            if configured[-1:] != [settings]:  # configure() drains the old runtime: only on a change
                options = {"spool_dir": spool.name, **settings}
                tracesim.configure(
                    exporters=["otlp"], otlp_endpoint=sink.url, set_global_tracer_provider=False, **options
                )
                configured.append(settings)

        return setup

    variants: dict[str, Variant] = {
        "OTel": (hand_written(provider), provider.force_flush, lambda: None),
        "tracesim": (traced, tracesim.force_flush, use()),
        "no spool": (traced, tracesim.force_flush, use(spool_dir="none")),  # None means "not given"
        "no redaction": (traced, tracesim.force_flush, use(redact_patterns="none")),
    }
    samples: dict[tuple[str, str], list[Sample]] = {(v, s): [] for v in variants for s in SHAPES}
    made, received = dict.fromkeys(variants, 0), dict.fromkeys(variants, 0)
    for fns, flush, setup in variants.values():  # warm-up: connections, encoders
        setup()
        for shape in SHAPES:
            timed(200, repeat(fns[shape], shape, 200), flush)
    try:
        for round_number in range(args.rounds):
            order = list(variants.items())
            if round_number % 2:
                order.reverse()
            for shape in SHAPES:
                calls = args.calls // 10 if shape == "chat" else args.calls
                for name, (fns, flush, setup) in order:
                    setup()
                    before = sink.received()
                    samples[(name, shape)].append(timed(calls, repeat(fns[shape], shape, calls), flush))
                    made[name] += calls
                    received[name] += sink.received() - before
        tracesim.shutdown()
        provider.shutdown()
    finally:
        sink.stop()
        spool.cleanup()
    report(args, samples, made, received)


def report(
    args: argparse.Namespace,
    samples: dict[tuple[str, str], list[Sample]],
    made: dict[str, int],
    received: dict[str, int],
) -> None:
    def med(name: str, shape: str, field: str) -> float:
        return statistics.median(float(getattr(s, field)) for s in samples[(name, shape)])

    def ratio(name: str, shape: str, field: str) -> str:
        pairs = zip(samples[(name, shape)], samples[("OTel", shape)], strict=True)
        each = [getattr(ours, field) / getattr(otel, field) for ours, otel in pairs]
        return f"{statistics.median(each):.2f}x ({min(each):.2f}-{max(each):.2f})"

    print(f"{args.rounds} interleaved rounds, {args.calls} per repeat (chat: /10); µs per call, medians")
    print("ratio = variant / OTel in the same round, median over rounds (range)\n")
    for shape in SHAPES:
        print(f"{shape}:")
        print(f"  {'':<13}" + "".join(f"{label:>31}" for label in FIELDS.values()))
        for name in made:
            cells = [f"{med(name, shape, f):.1f}" for f in FIELDS]
            if name != "OTel":
                cells = [f"{c} {ratio(name, shape, f)}" for c, f in zip(cells, FIELDS, strict=True)]
            print(f"  {name:<13}" + "".join(f"{c:>31}" for c in cells))
    print("\nspans received by the backend / made (after each repeat's flush):")
    print("  " + ", ".join(f"{name} {received[name]:,} / {made[name]:,}" for name in made))
    print("goal: tracesim <= 1.1x the official exporter's set-up, backend healthy")


if __name__ == "__main__":
    main()
