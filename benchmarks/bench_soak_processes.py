"""Soak: memory of a host that scores every call in worker processes, over many calls.

One host process makes ``--calls`` calls (default 300,000) of a traced handler with
levenshtein + rouge + bleu on every call (the ~300-character pairs of
``bench_host_latency.py``), scored in ``--processes`` worker processes (default 2;
``--processes 0`` scores on threads, for comparison). The calls are made back to back; the
host pauses while more than 1,000 calls are waiting to be scored, so nothing is dropped and
the run measures memory, not a full queue. Exporter: spans are counted and discarded in
process (`_common.Discard`), so no disk fills; with ``--scoring-export workers`` the workers
write them to a trace file in a temporary directory instead (``scoring_export=workers``, the
host only hands each ended span over), rotated at 16 MB with one backup.

Every ``--every`` calls (after ``gc.collect()`` in the host), RSS is read for the host and for
each of its child processes (the scoring workers, found in /proc), and summed. Reported:
the samples, the growth from the first sample after warm-up (``--warmup`` calls) to the last,
the least-squares slope after warm-up in MB per 100,000 calls, and the range; then the
counters (results, dropped, errors, late) after a final flush. Goal: RSS of host + workers
flat within 5 MB over 300,000 scored calls. No timing is asserted.

    NLTK_DATA=... python benchmarks/bench_soak_processes.py [--calls 300000] [--processes 2]
        [--scoring-export host|workers]
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
from typing import Any

from _common import Discard  # benchmarks run as scripts: their folder is on sys.path
from bench_host_latency import descendants, make_pairs, slope

import tracesim
from tracesim.evaluators import Bleu, Levenshtein, Rouge


def rss_mb(pid: int) -> float:
    """Resident set size of process ``pid`` in MB (0 if it has gone)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            pages = int(f.read().split()[1])
    except OSError:
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--calls", type=int, default=300_000)
    parser.add_argument("--every", type=int, default=10_000, help="calls between RSS samples")
    parser.add_argument("--warmup", type=int, default=30_000, help="calls before the slope is taken")
    parser.add_argument("--processes", type=int, default=2, help="scoring_processes (0: threads)")
    parser.add_argument(
        "--scoring-export",
        choices=("host", "workers"),
        default="host",
        help="who writes the scored spans (workers: to a rotated trace file in a temporary directory)",
    )
    args = parser.parse_args()

    exporter = Discard()
    options: dict[str, Any] = {"exporters": [exporter], "set_global_tracer_provider": False}
    if args.scoring_export == "workers":
        options = {
            "exporters": ["jsonl"],
            "jsonl_path": os.path.join(tempfile.mkdtemp(prefix="tracesim-soak-"), "traces.jsonl"),
            "jsonl_max_bytes": 16 * 2**20,
            "jsonl_backups": 1,
            "scoring_export": "workers",
            "set_global_tracer_provider": False,
        }
    try:
        tracesim.configure(**options, scoring_processes=args.processes)
    except (TypeError, tracesim.ConfigError) as error:
        if args.processes:
            print(f"scoring_processes={args.processes}: not available in this tree ({error})")
            return
        tracesim.configure(**options)  # a tree without the setting scores on threads
    pairs = make_pairs()
    answers = [answer for answer, _ in pairs]
    expected = [e for _, e in pairs]

    @tracesim.trace(
        kind="agent",
        name="handle",
        evaluators=[Levenshtein(), Rouge(), Bleu()],
        expected=lambda request: expected[request["id"]],
    )
    def handle(request: dict[str, int]) -> str:
        return answers[request["id"]]

    requests = [{"id": i} for i in range(len(pairs))]
    samples: list[tuple[int, float, list[float]]] = []
    start = time.perf_counter()
    for i in range(args.calls + 1):
        if i % args.every == 0:
            if i:
                while tracesim.scoring_stats().pending > 0:  # sample a drained pipeline
                    time.sleep(0.005)
            gc.collect()
            host = rss_mb(os.getpid())
            workers = [rss_mb(pid) for pid in descendants(os.getpid())]
            samples.append((i, host, workers))
            print(
                f"  {i:>8,} calls: host {host:6.1f} MB, workers "
                f"{' + '.join(f'{w:.1f}' for w in workers) or '-'} MB, total {host + sum(workers):6.1f} MB "
                f"({time.perf_counter() - start:.0f} s)",
                flush=True,
            )
            if i == args.calls:
                break
        handle(requests[i % len(requests)])
        if i % 128 == 0:
            while tracesim.scoring_stats().pending > 1000:
                time.sleep(0.001)
    elapsed = time.perf_counter() - start
    tracesim.force_flush(600)
    stats = tracesim.scoring_stats()

    totals = [(n, host + sum(workers)) for n, host, workers in samples]
    after = [(n, mb) for n, mb in totals if n >= args.warmup] or totals
    hosts = [(n, host) for n, host, _ in samples if n >= args.warmup] or [(0, samples[0][1])]
    print(
        f"{args.calls:,} scored calls in {elapsed:.0f} s ({args.calls / elapsed:,.0f}/s), "
        f"scoring_processes={args.processes}, scoring_export={args.scoring_export}, "
        f"{len(samples[-1][2])} child process(es) at the end"
    )
    print(
        f"RSS host + workers after {after[0][0]:,} calls (warm-up): {after[0][1]:.1f} MB -> "
        f"{after[-1][1]:.1f} MB ({after[-1][1] - after[0][1]:+.1f} MB); "
        f"range {min(mb for _, mb in after):.1f}-"
        f"{max(mb for _, mb in after):.1f} MB; slope {slope(after) * 1e5:+.2f} MB per 100k calls "
        f"(host alone {slope(hosts) * 1e5:+.2f}); goal: flat within 5 MB"
    )
    print(
        f"results {stats.results:,} (expected {3 * args.calls:,}), completed {stats.completed:,}, "
        f"dropped {stats.dropped}, errors {stats.errors}, late {stats.late}; "
        f"spans exported {exporter.spans:,} in process, written by workers {stats.written_by_workers:,}"
    )
    tracesim.shutdown()


if __name__ == "__main__":
    main()
