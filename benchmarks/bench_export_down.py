"""What the caller pays, and what is delivered, when the trace backend is up, down or absent.

Configurations, all ``BatchSpanProcessor`` (default settings) over the same workload: one span
per call with a 200-char input and output attribute. Two workloads: ``burst`` (calls back to
back: CPU-bound, so every exporter's encoding competes with the caller for 2 cores and the GIL,
and the processor's 2,048-span queue overflows for any real exporter) and ``paced`` (100 us of
GIL-free work per call, a few thousand spans per second).

* ``baseline``: exporter that discards (no export at all);
* ``otlp up`` / ``otlp down``: the official OTLP/HTTP exporter alone (2 s time-out), sink up /
  port closed;
* ``spool up`` / ``spool down``: ``otlp_exporter(..., spool_dir=...)``, sink up / port closed.

The sink is a small OTLP/HTTP server in its own process (so its CPU is not ours) that counts
the spans it receives. After a "down" run the sink is started on the closed port, and the
spool's ``force_flush`` shows how much of the outage is delivered afterwards.

Reported per config: caller wall time per call (median of rounds), ratio to the baseline, and
spans delivered (sink count) or kept (on disk, delivered after recovery). Numbers only; the
machine is shared, read the ratios.

    python benchmarks/bench_export_down.py [--rounds 3] [--calls 20000]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time

from _common import Discard, Sink, free_port  # benchmarks run as scripts: their folder is on sys.path
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from tracesim.exporters import SpoolingExporter, otlp_exporter

TEXT = ("Where was Marie Curie born, and what did she study in Paris? " * 4)[:200]


def _run(config: str, calls: int, pace_s: float) -> dict[str, float]:
    sink = Sink() if config.endswith("up") else None
    port = sink.port if sink else free_port()  # nothing listens: connection refused
    url = f"http://127.0.0.1:{port}"
    spool_dir = tempfile.mkdtemp(prefix="bench-spool-")
    exporter: SpanExporter
    if config == "baseline":
        exporter = Discard()
    elif config.startswith("spool"):
        exporter = otlp_exporter(endpoint=url, timeout_s=2.0, spool_dir=spool_dir)
    else:
        exporter = otlp_exporter(endpoint=url, timeout_s=2.0)
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")

    def call() -> None:
        with tracer.start_as_current_span("agent") as span:
            span.set_attribute("input.value", TEXT)
            span.set_attribute("output.value", TEXT)
        if pace_s:
            time.sleep(pace_s)  # the rest of a request's work, off the GIL (an LLM call, I/O)

    for _ in range(500):  # warm-up
        call()
    provider.force_flush()
    started, cpu_started = time.perf_counter(), time.process_time()
    for _ in range(calls):
        call()
    wall = (time.perf_counter() - started) / calls
    cpu = (time.process_time() - cpu_started) / calls
    result = {"wall_us": wall * 1e6, "cpu_us": cpu * 1e6, "made": calls + 500.0}
    provider.force_flush()
    if isinstance(exporter, SpoolingExporter):
        exporter.force_flush(10_000 if sink else 0)
        result["kept"] = exporter.stats.delivered + exporter.stats.pending
    if sink is None and isinstance(exporter, SpoolingExporter):
        sink = Sink(port)  # the backend comes back
        recovery = time.perf_counter()
        exporter.force_flush(120_000)
        result["recovery_s"] = time.perf_counter() - recovery
    if sink is not None:
        result["delivered"] = sink.received()
        sink.stop()
    provider.shutdown()
    shutil.rmtree(spool_dir, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args()
    configs = ["baseline", "otlp up", "otlp down", "spool up", "spool down"]
    # burst: calls back to back, CPU-bound (every config competes for 2 cores and the GIL);
    # paced: 100 us of GIL-free work per call, a few thousand spans/s.
    for workload, pace_s in (("burst", 0.0), ("paced", 0.0001)):
        runs: dict[str, list[dict[str, float]]] = {c: [] for c in configs}
        for round_ in range(args.rounds):
            order = configs if round_ % 2 == 0 else configs[::-1]  # interleaved, reversed every other round
            for config in order:
                runs[config].append(_run(config, args.calls, pace_s))
        _print(workload, args, configs, runs)


def _print(
    workload: str, args: argparse.Namespace, configs: list[str], runs: dict[str, list[dict[str, float]]]
) -> None:
    base_wall = statistics.median(r["wall_us"] for r in runs["baseline"])
    base_cpu = statistics.median(r["cpu_us"] for r in runs["baseline"])
    print(f"\n{workload}: {args.calls} calls per run, {args.rounds} rounds; medians")
    print(f"{'config':<11} {'wall us/call':>12} {'x base':>7} {'cpu us/call':>12} {'x base':>7}  delivered")
    for config in configs:
        rows = runs[config]
        wall = statistics.median(r["wall_us"] for r in rows)
        cpu = statistics.median(r["cpu_us"] for r in rows)
        delivered = "-" if config == "baseline" else _delivered(rows, rows[0]["made"])
        wall_x, cpu_x = wall / base_wall, cpu / base_cpu
        print(f"{config:<11} {wall:12.1f} {wall_x:7.2f} {cpu:12.1f} {cpu_x:7.2f}  {delivered}", flush=True)


def _delivered(rows: list[dict[str, float]], made: float) -> str:
    shares = [r.get("delivered", 0) / made for r in rows]
    text = f"{min(shares):.0%}-{max(shares):.0%}" if min(shares) != max(shares) else f"{shares[0]:.0%}"
    if "recovery_s" in rows[0]:
        recovery = statistics.median(r["recovery_s"] for r in rows)
        text += f" (after the backend came back; spool drained in {recovery:.1f} s)"
    return text


if __name__ == "__main__":
    main()
