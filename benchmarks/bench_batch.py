"""Batch scoring throughput: the local ``tracesim eval`` against ``tracesim.batch`` on Dask.

    NLTK_DATA=../shared/nltk_data .venv/bin/python benchmarks/bench_batch.py [--rows 1000000]

Generates ``--rows`` answers (seeded; 8-24 words each, about two thirds close to their
reference), streamed in chunks to a JSONL file and a Parquet file (row groups of 50,000), so
the benchmark itself never holds the data. Then scores them with levenshtein + rouge + bleu:

1. local, one process: ``tracesim eval DATA.jsonl --workers 1``;
2. local, all cores: ``tracesim eval DATA.jsonl`` (a process per core);
3. Dask: ``tracesim.batch.score`` on a ``LocalCluster`` of a single-threaded process per core,
   from the JSONL file and from the Parquet file, writing Parquet parts.

Each run is a fresh interpreter; it reports rows/s over its whole wall time (start-up, NLTK's
import and the cluster's start included: the time a user waits), the peak RSS of the process
that drives it, and for Dask the peak RSS of each worker. The Dask run from JSONL is repeated
at a quarter of the rows: a driver and workers whose memory does not grow with the rows show
the file is never loaded whole. Prints numbers and ratios; asserts nothing about timings.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED_NLTK_DATA = (REPO / "../shared/nltk_data").resolve()
if "NLTK_DATA" not in os.environ and SHARED_NLTK_DATA.is_dir():
    os.environ["NLTK_DATA"] = str(SHARED_NLTK_DATA)

EVALUATORS = ["levenshtein", "rouge", "bleu"]
WORDS = [
    *("the", "a", "of", "to", "in", "is", "was", "for", "on", "that", "by", "with", "as", "at", "from"),
    *("it", "an", "be", "this", "which", "or", "are", "capital", "city", "river", "born", "year", "war"),
    *("king", "first", "largest", "population", "north", "south", "east", "west", "Paris", "Warsaw"),
    *("Curie", "physics", "chemistry", "prize", "museum", "bridge", "tower", "university", "founded"),
]
_CHUNK = 50_000


def write_data(directory: Path, rows: int, seed: int = 11) -> tuple[Path, Path]:
    """Stream ``rows`` answers to ``rows.jsonl`` and ``rows.parquet``, a chunk at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    jsonl, parquet = directory / "rows.jsonl", directory / "rows.parquet"
    schema = pa.schema(
        [("id", pa.string()), ("input", pa.string()), ("output", pa.string()), ("expected", pa.string())]
    )
    with jsonl.open("w", encoding="utf-8") as text, pq.ParquetWriter(parquet, schema) as table:
        for start in range(0, rows, _CHUNK):
            chunk = [_row(rng, number) for number in range(start, min(start + _CHUNK, rows))]
            text.write("".join(json.dumps(row) + "\n" for row in chunk))
            table.write_table(pa.Table.from_pylist(chunk, schema=schema))
    return jsonl, parquet


def _row(rng: random.Random, number: int) -> dict[str, str]:
    expected = rng.choices(WORDS, k=rng.randint(8, 24))
    output = list(expected)
    if number % 3:  # two thirds of the answers differ from the reference in a few words
        for _ in range(rng.randint(1, 6)):
            output[rng.randrange(len(output))] = rng.choice(WORDS)
    return {
        "id": f"r{number}",
        "input": f"question {number}",
        "output": " ".join(output),
        "expected": " ".join(expected),
    }


def run_cli(data: Path, workers: int) -> dict[str, Any]:
    """``tracesim eval`` in its own process: wall time and the largest RSS among its processes."""
    out = data.with_name(f"local-{workers}.jsonl")
    command = [
        sys.executable,
        "-m",
        "tracesim",
        "eval",
        str(data),
        "--workers",
        str(workers),
        "--no-progress",
    ]
    command += ["-o", str(out), *(arg for name in EVALUATORS for arg in ("-e", name))]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest of the processes so far
    out.unlink()
    return {"wall_s": wall, "peak_rss_mb": max(peak, before) / 1024}


def dask_child(source: str, output: str, workers: int) -> None:
    """The Dask run, in the child process ``run_dask`` starts: one JSON line of results."""
    start = time.perf_counter()
    from distributed import Client, LocalCluster

    from tracesim.batch import Records, score

    options: dict[str, Any] = {"threads_per_worker": 1, "processes": True, "dashboard_address": ":0"}
    with LocalCluster(n_workers=workers, **options) as cluster, Client(cluster) as client:
        report = score(Records(source), evaluators=EVALUATORS, output=output, client=client, progress=False)
        wall = time.perf_counter() - start
        workers_rss = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    result = {
        "wall_s": wall,
        "records": report.records,
        "failed": len(report.failed_parts),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "worker_peak_rss_mb": sorted(workers_rss.values()),
    }
    print(json.dumps(result))


def run_dask(data: Path, workers: int) -> dict[str, Any]:
    """``tracesim.batch.score`` on a fresh LocalCluster, in its own process."""
    output = data.with_name(f"scores-{data.suffix[1:]}")
    done = subprocess.run(
        [sys.executable, __file__, "--dask-child", str(data), str(output), str(workers)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["failed"] == 0, done.stderr
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--skip-single", action="store_true", help="skip the one-process run (the slowest)")
    parser.add_argument(
        "--dask-child", nargs=3, metavar=("SOURCE", "OUTPUT", "WORKERS"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.dask_child:
        source, output, workers = args.dask_child
        dask_child(source, output, int(workers))
        return
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as folder:
        directory = Path(folder)
        start = time.perf_counter()
        jsonl, parquet = write_data(directory, args.rows)
        print(
            f"{args.rows:,} rows: JSONL {jsonl.stat().st_size / 2**20:.0f} MB, Parquet "
            f"{parquet.stat().st_size / 2**20:.0f} MB, written in {time.perf_counter() - start:.1f} s; "
            f"evaluators {' + '.join(EVALUATORS)}; {args.workers} workers"
        )
        results: dict[str, dict[str, Any]] = {}
        if not args.skip_single:
            results["local, 1 process"] = run_cli(jsonl, 1)
        results[f"local, {args.workers} processes"] = run_cli(jsonl, args.workers)
        results["dask LocalCluster, JSONL"] = run_dask(jsonl, args.workers)
        results["dask LocalCluster, Parquet"] = run_dask(parquet, args.workers)
        (directory / "quarter").mkdir()
        quarter, _ = write_data(directory / "quarter", args.rows // 4)
        small = run_dask(quarter, args.workers)
    _report(results, small, args.rows, args.workers)


def _report(results: dict[str, dict[str, Any]], small: dict[str, Any], rows: int, workers: int) -> None:
    headings = ("wall s", "rows/s", "per worker", "driver RSS MB", "worker RSS MB")
    print(f"\n{'run':<30}" + "".join(f"{heading:>15}" for heading in headings))
    for name, result in results.items():
        rate = rows / result["wall_s"]
        per = rate / (1 if "1 process" in name else workers)
        worker_rss = result.get("worker_peak_rss_mb")
        cells = [f"{result['wall_s']:.1f}", f"{rate:,.0f}", f"{per:,.0f}", f"{result['peak_rss_mb']:.0f}"]
        cells.append(f"{max(worker_rss):.0f}" if worker_rss else "-")
        print(f"{name:<30}" + "".join(f"{cell:>15}" for cell in cells))
    base = results.get("local, 1 process")
    if base is not None:
        for name, result in results.items():
            print(f"  {name}: {base['wall_s'] / result['wall_s']:.2f}x the one-process rate")
    dask = results["dask LocalCluster, JSONL"]
    print(
        f"memory: at {rows // 4:,} rows the Dask driver peaked at {small['peak_rss_mb']:.0f} MB, its workers "
        f"at {max(small['worker_peak_rss_mb']):.0f} MB; at {rows:,} rows: {dask['peak_rss_mb']:.0f} MB and "
        f"{max(dask['worker_peak_rss_mb']):.0f} MB"
    )
    per_worker = rows / dask["wall_s"] / workers
    print(
        f"a cluster of N machines of C cores: about N x C x {per_worker:,.0f} rows/s (parts are independent; "
        "the driver only adds up per-part summaries), less start-up and the last parts' tail"
    )


if __name__ == "__main__":
    main()
