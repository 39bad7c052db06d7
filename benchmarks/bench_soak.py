"""Soak: memory and delivery over many calls in a tight loop, with a healthy sink.

Four runs, each in its own process (so one run's heap is not the next one's): ``tracesim``
(``@tracesim.trace``, default settings) and ``OTel`` (hand-written spans with the same
attributes, ``BatchSpanProcessor`` with default settings, no redaction) to the same exporter:

* ``jsonl``: the default local file exporter (`tracesim.exporters.JsonlExporter`) in a
  temporary directory (more rotated copies kept than by default, so every span can be counted);
* ``otlp``: OTLP/HTTP to a healthy local backend in its own process that counts the spans it
  receives (tracesim with what ``exporters=["otlp"]`` builds, the official exporter behind
  its disk spool, made with the public factory so the spool's counters can be read; OTel with
  the official ``OTLPSpanExporter`` alone).

Each run makes ``--calls`` calls back to back (a 200-char question and a small dict in, 200
chars out), samples RSS every ``--every`` calls (after ``gc.collect()``), then flushes with a
deadline (``tracesim.force_flush(deadline)`` / ``provider.force_flush``) and counts the spans
delivered at that moment (in the file, or received by the backend), and again after
``shutdown``. Reported: RSS growth from the first sample (warm-up) to the last sample, over
the second half of the run (a leak keeps growing there; a filling queue levels off) and to
after the flush; the range over the run; the share of the spans made that were delivered by
the flush deadline and in all; for tracesim over OTLP, what its spool wrote to disk. A tight
loop makes spans faster than any exporter writes them, so a ``BatchSpanProcessor`` drops what
its queue cannot hold: the OTel rows show what the same exporter loses without tracesim.
Goals: RSS flat (+-5 MB) over 300k calls; nothing left undelivered. No timing is asserted;
read the OTel rows as the baseline.

    python benchmarks/bench_soak.py [--calls 300000] [--every 20000] [--deadline 30]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracesim.exporters import SpoolStats

RUNS = ("OTel jsonl", "tracesim jsonl", "OTel otlp", "tracesim otlp")
BACKUPS = 50  # rotated files kept: enough for every span of 300k calls (each file up to 64 MB)


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--calls", type=int, default=300_000)
    parser.add_argument("--every", type=int, default=20_000, help="calls between RSS samples")
    parser.add_argument("--deadline", type=float, default=30.0, help="seconds the final flush may take")
    parser.add_argument("--child", choices=RUNS, help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    from _common import Sink  # benchmarks run as scripts: their folder is on sys.path

    results: dict[str, dict[str, Any]] = {}
    for run in RUNS:
        sink = Sink() if run.endswith("otlp") else None
        try:
            results[run] = spawn(run, args, sink.url if sink else None)
            if sink is not None:
                results[run]["received_at_exit"] = sink.received()
        finally:
            if sink is not None:
                sink.stop()
        print(f"  {run}: done in {results[run]['loop_s'] + results[run]['flush_s']:.0f} s", flush=True)
    report(args, results)


def spawn(run: str, args: argparse.Namespace, endpoint: str | None) -> dict[str, Any]:
    """Run one configuration in a fresh process, in a temporary working directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "TRACESIM_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).parent), env.get("PYTHONPATH")]))
    command = [sys.executable, str(Path(__file__).resolve()), "--child", run]
    command += ["--calls", str(args.calls), "--every", str(args.every), "--deadline", str(args.deadline)]
    if endpoint:
        command += ["--endpoint", endpoint]
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as directory:
        done = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{run} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def child(args: argparse.Namespace) -> dict[str, Any]:
    """One run, in the current (temporary) directory: make the calls, sample RSS, flush, count."""
    from _common import rss_mb
    from _workload import CONTEXT, QUESTION

    call, flush, shutdown, delivered, notes = pipeline(args.child, args.endpoint)
    samples: list[tuple[int, float]] = []
    started = time.perf_counter()
    for i in range(1, args.calls + 1):
        call(QUESTION, CONTEXT)
        if i % args.every == 0:
            gc.collect()
            samples.append((i, rss_mb()))
    loop_s = time.perf_counter() - started
    flush_started = time.perf_counter()
    flush(args.deadline)
    flush_s = time.perf_counter() - flush_started
    at_deadline = delivered()
    gc.collect()
    after_flush = rss_mb()
    shutdown()
    return {
        "made": args.calls,
        "samples": samples,
        "after_flush_mb": after_flush,
        "loop_s": loop_s,
        "flush_s": flush_s,
        "delivered_at_deadline": at_deadline,
        "delivered_at_exit": delivered(),
        "notes": notes(),
    }


def pipeline(run: str, endpoint: str | None) -> tuple[Any, Any, Any, Any, Callable[[], str]]:
    """(call, flush(deadline_s), shutdown(), delivered(), notes()) for one configuration."""
    from _workload import AGENT_ATTRIBUTES, ANSWER
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    import tracesim
    from tracesim.exporters import SpoolingExporter, otlp_exporter

    def agent(question: str, context: dict[str, Any]) -> str:
        return ANSWER

    path = Path("traces.jsonl").absolute()
    sink = "otlp" if run.endswith("otlp") else "jsonl"
    delivered = (lambda: received(endpoint)) if sink == "otlp" else (lambda: spans_in_files(path))
    if run.startswith("tracesim"):
        if sink == "otlp":
            # What exporters=["otlp"] builds (the official exporter behind a disk spool), made
            # here to read the spool's counters afterwards.
            spooling = SpoolingExporter(otlp_exporter(endpoint=endpoint), Path(".tracesim/spool").absolute())
            tracesim.configure(exporters=[spooling], set_global_tracer_provider=False)
            notes = lambda: spool_notes(spooling.stats)  # noqa: E731
        else:
            tracesim.configure(jsonl_path=str(path), jsonl_backups=BACKUPS, set_global_tracer_provider=False)
            notes = str
        traced = tracesim.trace(name="agent", kind="agent")(agent)
        return traced, tracesim.force_flush, tracesim.shutdown, delivered, notes

    if sink == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter: Any = OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")
    else:
        from tracesim.exporters import JsonlExporter

        exporter = JsonlExporter(path, backups=BACKUPS)
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("hand-written")

    def hand_written(question: str, context: dict[str, Any]) -> str:
        with tracer.start_as_current_span("agent", attributes=AGENT_ATTRIBUTES) as span:
            span.set_attribute("input.value", json.dumps({"question": question, "context": context}))
            span.set_attribute("input.mime_type", "application/json")
            result = agent(question, context)
            span.set_attribute("output.value", result)
            span.set_attribute("output.mime_type", "text/plain")
            return result

    flush = lambda s: provider.force_flush(int(s * 1000))  # noqa: E731
    return hand_written, flush, provider.shutdown, delivered, str


def spool_notes(stats: SpoolStats) -> str:
    return (
        f"spool: {stats.spooled:,} spans written to disk while the backend was up (more batches"
        f" waiting than memory holds), {stats.resent:,} re-sent from disk, {stats.dropped:,} dropped,"
        f" {stats.pending:,} still waiting at exit"
    )


def received(endpoint: str | None) -> int:
    import urllib.request

    with urllib.request.urlopen(f"{endpoint}/", timeout=30) as response:
        return int(response.read())


def spans_in_files(path: Path) -> int:
    """Spans in the trace file and its rotated copies (one ``"spanId"`` key per span; no links here)."""
    from tracesim.tracefile import rotated_files

    count = 0
    for file in rotated_files(path, BACKUPS):
        if file.exists():
            with file.open("rb") as f:
                count += sum(line.count(b'"spanId"') for line in f)
    return count


def report(args: argparse.Namespace, results: dict[str, dict[str, Any]]) -> None:
    every = f"{args.every:,}"
    print(f"\n{args.calls:,} calls per run; RSS every {every} calls; flush deadline {args.deadline:g} s")
    header = ["run", "RSS first", "growth", "2nd half", "after flush", "range", "calls/s"]
    header += ["flush s", "by deadline", "in all"]
    print(f"{header[0]:<15}" + "".join(f"{h:>12}" for h in header[1:]))
    for run, r in results.items():
        rss = [mb for _, mb in r["samples"]] or [float("nan")]
        first, middle = rss[0], rss[len(rss) // 2]
        at_exit = r.get("received_at_exit", r["delivered_at_exit"])
        cells = [
            f"{first:.1f}",
            f"{rss[-1] - first:+.1f}",
            f"{rss[-1] - middle:+.1f}",
            f"{r['after_flush_mb'] - first:+.1f}",
            f"{max(rss) - min(rss):.1f}",
            f"{r['made'] / r['loop_s']:,.0f}",
            f"{r['flush_s']:.1f}",
            f"{r['delivered_at_deadline'] / r['made']:.1%}",
            f"{at_exit / r['made']:.1%}",
        ]
        print(f"{run:<15}" + "".join(f"{c:>12}" for c in cells))
    print(f"\nRSS in MB: 'first' is the sample after the first {every} calls (warm-up); 'growth' is")
    print("from it to the last sample, '2nd half' from the middle sample to the last, 'after flush' from")
    print("it to after the final flush (the batch queue empty); 'range' is max - min over the samples")
    print("delivered: share of the spans made that were in the file / at the backend by the flush deadline,")
    print("and after shutdown ('in all'); the rest was dropped (a full batch queue) or never sent")
    for run, r in results.items():
        print(f"  {run}: " + " ".join(f"{n // 1000}k:{mb:.1f}" for n, mb in r["samples"]))
        if r["notes"]:
            print(f"    {r['notes']}")
    print("goals: RSS flat (+-5 MB) over the run; nothing left undelivered")


if __name__ == "__main__":
    main()
