"""One measurement of bench_peers.py, in a fresh process: one SDK, one shape, tight or paced.

Sets the SDK up (``sdk_<name>.build``), warms it up (2,000 calls and a full collection), then
times ``--repeats`` repeats of ``--calls`` calls, each followed by the SDK's flush: process CPU
(every thread: the export thread's encoding, redaction and HTTP included) per call. With
``--otlp URL`` the spans go to the collector there, which is asked for its span count before
and after the timed repeats; with ``--rate`` the calls are paced (open loop, ``rate`` calls a
second) instead of a tight loop. The last line of stdout is ``RESULT {json}``.

    python benchmarks/peers/child.py tracesim sync --calls 5000 --repeats 3 [--otlp URL] [--rate 2000]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import statistics
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from _shapes import ARGUMENTS, calls_of

WARM_UP = 2000


def received(url: str | None) -> int:
    """Spans the collector at ``url`` has received (0 without one)."""
    if url is None:
        return 0
    with urllib.request.urlopen(url + "/", timeout=30) as response:
        return int(response.read())


def paced(fn: Callable[..., Any], shape: str, calls: int, rate: float) -> Callable[[], None]:
    """``calls`` calls of a sync ``fn`` at ``rate`` a second, as traffic arrives (open loop)."""
    first, second = ARGUMENTS[shape]

    def run() -> None:
        interval, next_at = 1.0 / rate, time.perf_counter()
        for _ in range(calls):
            now = time.perf_counter()
            if now < next_at:
                time.sleep(next_at - now)
            fn(first, second)
            next_at += interval

    return run


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sdk", choices=["untraced", "otel", "tracesim", "openllmetry", "logfire", "langfuse"])
    parser.add_argument("shape", choices=list(ARGUMENTS))
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--otlp", help="the collector's base URL (http://127.0.0.1:PORT)")
    parser.add_argument("--rate", type=float, default=0.0, help="calls per second; 0: a tight loop")
    args = parser.parse_args()
    if args.rate and args.shape != "sync":
        parser.error("--rate paces sync calls only")

    traced = importlib.import_module(f"sdk_{args.sdk}").build(args.otlp)
    fn = traced.functions[args.shape]
    loop = paced(fn, args.shape, args.calls, args.rate) if args.rate else calls_of(fn, args.shape, args.calls)
    # Warm-up: lazy imports, caches, the connection, and the first full garbage collection after
    # the imports (tens of ms, due within the first thousand or so calls: it would land in the
    # first repeat of whichever SDK allocates the most, as a one-off, not a per-call cost).
    calls_of(fn, args.shape, WARM_UP)()
    traced.flush()
    gc.collect()
    before = received(args.otlp)
    each = []
    for _ in range(args.repeats):
        cpu = time.process_time()
        loop()
        traced.flush()
        each.append((time.process_time() - cpu) / args.calls * 1e6)
    delivered = received(args.otlp) - before
    traced.shutdown()
    made = args.calls * args.repeats
    result = {
        "cpu_us": statistics.median(each),
        "each": each,
        "made": made,
        "delivered": delivered if args.otlp else made,
        "cpu_total_us": sum(each) * args.calls,
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
