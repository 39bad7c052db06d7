"""What a large argument costs: a 1000x1000 numpy array against a 32 KiB string, both traced.

tracesim bounds capture at ``max_value_chars`` (default 32 KiB) while it serialises, so an
argument's cost should follow what is kept, not the argument's size: a 1000x1000 float array
(8 MB, about 19 MB as JSON) should cost about what a 32 KiB string (kept whole) costs. Both
run through ``@tracesim.trace`` with default settings (redaction on, in the export path) to an
exporter that discards. For scale, the same 32 KiB string written by hand-written OpenTelemetry
(``span.set_attribute``, no redaction) and the array passed to an untraced function.

Per call, median over interleaved rounds: process CPU including the flush (the export
thread's redaction counted), the caller's wall time and the caller thread's CPU time for the
calls alone. Goal: the array within 2x of the 32 KiB string. Read the ratios, not the
absolute numbers: the machine is shared.

    python benchmarks/bench_capture.py [--rounds 7] [--calls 200]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

# benchmarks run as scripts: their folder is on sys.path
from _common import Discard, Sample, timed
from _workload import AGENT_ATTRIBUTES, CHAT
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import tracesim

LIMIT = 32 * 1024
PROSE = " ".join(m["content"] for m in CHAT)
TEXT = (PROSE * (LIMIT // len(PROSE) + 1))[:LIMIT]  # kept whole: exactly the limit
ARRAY = np.random.default_rng(0).random((1000, 1000))


def model(value: Any) -> str:
    return "ok"


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()

    otel_exporter, ours_exporter = Discard(), Discard()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(otel_exporter))
    tracer = provider.get_tracer("hand-written")
    tracesim.configure(exporters=[ours_exporter], set_global_tracer_provider=False)
    traced = tracesim.trace(name="agent", kind="agent")(model)

    def hand_written(value: str) -> str:
        with tracer.start_as_current_span("agent", attributes=AGENT_ATTRIBUTES) as span:
            span.set_attribute("input.value", value)
            span.set_attribute("input.mime_type", "text/plain")
            result = model(value)
            span.set_attribute("output.value", result)
            span.set_attribute("output.mime_type", "text/plain")
            return result

    # name -> (function, argument, flush)
    cases: dict[str, tuple[Callable[[Any], str], Any, Callable[[], object]]] = {
        "untraced, array": (model, ARRAY, lambda: None),
        "OTel, 32 KiB string": (hand_written, TEXT, provider.force_flush),
        "tracesim, 32 KiB string": (traced, TEXT, tracesim.force_flush),
        "tracesim, 1000x1000 array": (traced, ARRAY, tracesim.force_flush),
    }

    def repeat(fn: Callable[[Any], str], value: Any, calls: int) -> Callable[[], None]:
        def run() -> None:
            for _ in range(calls):
                fn(value)

        return run

    samples: dict[str, list[Sample]] = {name: [] for name in cases}
    for fn, value, flush in cases.values():  # warm-up
        timed(20, repeat(fn, value, 20), flush)
    for round_number in range(args.rounds):
        order = list(cases.items())
        if round_number % 2:
            order.reverse()
        for name, (fn, value, flush) in order:
            samples[name].append(timed(args.calls, repeat(fn, value, args.calls), flush))
    tracesim.shutdown()
    provider.shutdown()
    report(args, samples)
    made = args.calls * args.rounds + 20
    print(f"spans exported / made: hand-written {otel_exporter.spans:,} / {made:,}, ", end="")
    print(f"tracesim {ours_exporter.spans:,} / {2 * made:,}")


def report(args: argparse.Namespace, samples: dict[str, list[Sample]]) -> None:
    fields = {"cpu_us": "CPU incl. flush", "wall_us": "caller wall", "thread_us": "caller CPU"}

    def ratio(name: str, base: str, field: str) -> tuple[float, float, float]:
        each = [
            getattr(a, field) / getattr(b, field) for a, b in zip(samples[name], samples[base], strict=True)
        ]
        return statistics.median(each), min(each), max(each)

    print(f"{args.rounds} interleaved rounds x {args.calls} calls; µs per call, median of rounds")
    print(f"{'':<27}" + "".join(f"{label:>17}" for label in fields.values()))
    for name in samples:
        cells = [statistics.median(getattr(s, field) for s in samples[name]) for field in fields]
        print(f"{name:<27}" + "".join(f"{c:17.1f}" for c in cells))
    print("\nratios, median over rounds (range):")
    for name, base in (
        ("tracesim, 1000x1000 array", "tracesim, 32 KiB string"),
        ("tracesim, 32 KiB string", "OTel, 32 KiB string"),
    ):
        cells = [ratio(name, base, field) for field in fields]
        text = "".join(f"{m:>8.2f}x ({lo:.2f}-{hi:.2f})" for m, lo, hi in cells)
        print(f"  {name} / {base}:\n  {'':<25}{text}")
    print("\ngoal: the array within 2x of the 32 KiB string")


if __name__ == "__main__":
    main()
