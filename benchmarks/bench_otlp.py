"""What tracesim costs over OTLP against the official OTLP exporter, per span the backend receives.

Both send OTLP/HTTP (protobuf) to the same local backend: a small HTTP server in its own
process (its CPU is not ours) that answers ``POST /v1/traces`` with 200 and counts the spans it
receives.

* ``OTel``: the official set-up, written by hand: ``OTLPSpanExporter`` in a
  ``BatchSpanProcessor`` (default settings: a queue of 2,048 spans, batches of 512), spans with
  the attributes tracesim writes (``json.dumps`` of the input, no redaction);
* ``tracesim``: ``tracesim.configure(exporters=["otlp"], otlp_endpoint=...)`` with defaults:
  redaction on (in the export path), disk spool on (in a temporary directory);
* ``tracesim, OTel encoder``: the same, its request bodies written by OpenTelemetry's encoder
  (``encode_spans``) instead of tracesim's (`tracesim.exporters._otlp_encode`): what tracesim's
  OTLP path cost before it had its own encoder.

A processor that cannot keep up drops spans, and a dropped span costs almost nothing: a
comparison per call rewards the set-up that delivers less. So every figure is per span the
backend received: process CPU (every thread: the calls, redaction, encoding, HTTP, up to the
end of the flush) divided by the spans counted at the backend. Two loads:

* ``tight``: calls back to back (more than the official queue holds for ``sync``), then the
  flush; the delivered share is printed;
* ``paced``: calls at a steady rate (``--rate``; a tenth of it for ``chat``) that both set-ups
  keep up with, in bursts every 10 ms, then the flush: 100 % delivered, the steady state of a
  service.

Two inputs, as in bench_overhead.py: ``sync`` (a 200-char question and a small dict) and
``chat`` (a ~10 KB chat history with usage/model metadata). Rounds interleave the variants
(order reversed every other round); ratios are to ``OTel`` in the same round, median over the
rounds (range). The instruction counts of the same comparison: ``bench_instructions.py --otlp``.
Goal: tracesim <= 1.10x the official exporter per delivered span. The machine is shared: read
the ratios.

    python benchmarks/bench_otlp.py [--rounds 7] [--calls 4000] [--paced-calls 1000] [--rate 2000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# benchmarks run as scripts: their folder is on sys.path
from _common import Sink
from _workload import AGENT_ATTRIBUTES, ANSWER, CHAT, CHAT_ANSWER, CHAT_METADATA, CONTEXT, QUESTION
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import tracesim
from tracesim.exporters import _otlp_http

SHAPES = {"sync": (QUESTION, CONTEXT), "chat": (CHAT, CHAT_METADATA)}
OURS = _otlp_http.encode_or_fallback


def official_body(spans: Sequence[ReadableSpan]) -> bytes:
    """The request body as OpenTelemetry's exporter writes it."""
    body: bytes = encode_spans(spans).SerializePartialToString()
    return body


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


def calls(fn: Callable[[Any, Any], str], shape: str, count: int, rate: float | None) -> Callable[[], None]:
    """``count`` calls back to back, or at ``rate`` per second (open loop: late calls are not waited for).

    Paced calls come in bursts of a hundredth of a second's calls, one burst every 10 ms: the
    same rate, with a hundred sleeps a second rather than one per call (the sleeps and the
    clock reads cost every variant the same CPU, which would blur the ratios).
    """
    first, second = SHAPES[shape]

    def tight() -> None:
        for _ in range(count):
            fn(first, second)

    def paced() -> None:
        assert rate is not None
        burst = max(1, round(rate / 100))
        interval, next_at = burst / rate, time.perf_counter()
        for done in range(0, count, burst):
            now = time.perf_counter()
            if now < next_at:
                time.sleep(next_at - now)
            for _ in range(min(burst, count - done)):
                fn(first, second)
            next_at += interval

    return tight if rate is None else paced


@dataclass(frozen=True)
class Sample:
    """One repeat: process CPU (s) to the end of the flush, the caller thread's CPU (s), calls made,
    spans the backend received."""

    cpu_s: float
    caller_s: float
    calls: int
    delivered: int

    @property
    def per_span_us(self) -> float:
        return self.cpu_s / max(self.delivered, 1) * 1e6


def measure(sink: Sink, count: int, run: Callable[[], None], flush: Callable[[], object]) -> Sample:
    before = sink.received()  # outside the timed part: the question to the backend is not our cost
    cpu, caller = time.process_time(), time.thread_time()
    run()
    caller = time.thread_time() - caller
    flush()
    cpu = time.process_time() - cpu
    return Sample(cpu, caller, count, sink.received() - before)


Samples = dict[tuple[str, str, str], list[Sample]]  # (load, shape, variant) -> one per round
Variant = tuple[dict[str, Callable[[Any, Any], str]], Callable[[], object], Callable[[], None]]


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=4000, help="tight-loop calls per repeat (chat: a tenth)")
    parser.add_argument(
        "--paced-calls", type=int, default=1000, help="paced calls per repeat (chat: a tenth)"
    )
    parser.add_argument("--rate", type=float, default=2000.0, help="paced calls per second (chat: a tenth)")
    args = parser.parse_args()

    sink = Sink()
    spool = tempfile.TemporaryDirectory(prefix="bench-otlp-spool-")
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=sink.traces_url)))
    trace = tracesim.trace(name="agent", kind="agent")
    traced: dict[str, Callable[[Any, Any], str]] = {"sync": trace(agent), "chat": trace(chat)}
    tracesim.configure(
        exporters=["otlp"], otlp_endpoint=sink.url, set_global_tracer_provider=False, spool_dir=spool.name
    )

    def encoder(body: Callable[[Sequence[ReadableSpan]], bytes]) -> Callable[[], None]:
        def setup() -> None:
            _otlp_http.encode_or_fallback = body  # type: ignore[assignment]  # the benchmark's switch

        return setup

    variants: dict[str, Variant] = {
        "OTel": (hand_written(provider), provider.force_flush, lambda: None),
        "tracesim": (traced, tracesim.force_flush, encoder(OURS)),
        "tracesim, OTel encoder": (traced, tracesim.force_flush, encoder(official_body)),
    }
    loads = {"tight": None, "paced": args.rate}
    samples: Samples = {(load, shape, name): [] for load in loads for shape in SHAPES for name in variants}
    for fns, flush, setup in variants.values():  # warm-up: connections, encoders, caches
        setup()
        for shape in SHAPES:
            measure(sink, 200, calls(fns[shape], shape, 200, None), flush)
    try:
        for round_number in range(args.rounds):
            order = list(variants.items())
            if round_number % 2:
                order.reverse()
            for load, rate in loads.items():
                for shape in SHAPES:
                    count = args.calls if load == "tight" else args.paced_calls
                    count = count // 10 if shape == "chat" else count
                    shape_rate = None if rate is None else (rate / 10 if shape == "chat" else rate)
                    for name, (fns, flush, setup) in order:
                        setup()
                        run = calls(fns[shape], shape, count, shape_rate)
                        samples[(load, shape, name)].append(measure(sink, count, run, flush))
        tracesim.shutdown()
        provider.shutdown()
    finally:
        _otlp_http.encode_or_fallback = OURS
        sink.stop()
        spool.cleanup()
    report(args, list(variants), samples)


def report(
    args: argparse.Namespace, names: list[str], samples: dict[tuple[str, str, str], list[Sample]]
) -> None:
    print(f"{args.rounds} interleaved rounds; µs of process CPU per span the backend received (median)")
    print("ratio = variant / OTel in the same round, median over rounds (range)")
    print(
        f"tight: {args.calls} calls back to back (chat: /10); paced: {args.paced_calls} calls at "
        f"{args.rate:g}/s (chat: /10)\n"
    )
    header = f"  {'':<24}{'CPU/span':>10}{'ratio to OTel':>24}{'delivered':>11}{'caller CPU/call':>17}"
    for load in ("tight", "paced"):
        for shape in SHAPES:
            print(f"{load}, {shape}:")
            print(header)
            base = samples[(load, shape, "OTel")]
            for name in names:
                mine = samples[(load, shape, name)]
                per_span = statistics.median(s.per_span_us for s in mine)
                share = sum(s.delivered for s in mine) / sum(s.calls for s in mine)
                caller = statistics.median(s.caller_s / s.calls * 1e6 for s in mine)
                ratio = ""
                if name != "OTel":
                    each = [m.per_span_us / b.per_span_us for m, b in zip(mine, base, strict=True)]
                    ratio = f"{statistics.median(each):.2f}x ({min(each):.2f}-{max(each):.2f})"
                print(f"  {name:<24}{per_span:>10.1f}{ratio:>24}{share:>10.1%}{caller:>17.1f}")
            print()
    print("goal: tracesim <= 1.10x the official exporter's set-up per delivered span (redaction on)")


if __name__ == "__main__":
    main()
