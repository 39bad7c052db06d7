"""What OpenTelemetry metrics cost the caller of a scored, traced call, counted in instructions.

``bench_metrics.py`` times the same thing, but on a shared 2-core machine its ratios move by
far more than the 2 % being looked for. The number of machine instructions does not: this
benchmark runs the calls under valgrind's callgrind, once with ``K`` calls and once with none,
and divides the difference by ``K`` (warm-up and set-up are in both runs, so they cancel out).

The call is scored on worker threads, which run while the caller calls, so stopping before the
export (as ``bench_instructions.py`` does) would not leave the caller's thread alone in the
count. Callgrind's ``--separate-threads=yes`` counts each thread on its own, so:

* caller: the instructions of the thread that calls the traced function (the main thread),
  in a run that ends with ``os._exit`` right after the calls: no flush, no export;
* all threads: every thread's instructions in a run that ends with ``tracesim.force_flush``:
  the scoring workers (evaluators, results counted, scores recorded in the histogram) and
  the export (one metrics export, which the run without calls makes too).

The function is traced with two evaluators that always pass, one sampled at half rate, so half
the calls also count ``not_sampled`` results on the caller's thread. The random generator that
makes trace ids (and so decides the sampling) is seeded: every configuration samples the same
calls. Spans go to an exporter that discards; the metrics' periodic export is set to an hour, so
it never runs during the calls. Before the counted calls the start-up heap is frozen
(``gc.freeze``) and the interpreter's switch interval raised, so the caller keeps the
interpreter lock until it is done: without that, where valgrind happens to switch threads
(queue hand-offs, a full collection falling in one thread or another) moved the caller's count
by up to 1.7 % between identical runs; with it, by 30 instructions a call. Configurations:

* off: ``metrics="none"``;
* on: ``metrics=["jsonl", "prometheus"]``, the file beside the trace file and a scrape
  endpoint on a free loopback port (not scraped: a scrape runs on the endpoint's thread);
* otlp (``--otlp``): ``metrics=["otlp"]`` against a local OTLP/HTTP sink in its own process.

Needs ``valgrind`` on the PATH (without it, says so and exits 0); each configuration starts
four interpreters under it (about a minute each; ``--jobs`` of them at a time).

    python benchmarks/bench_metrics_instructions.py [--calls 300] [--otlp] [--jobs 2]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _common import Sink  # benchmarks run as scripts: their folder is on sys.path

GOAL = 1.02

# The program valgrind runs: warm-up, then N scored calls, then either the flush or an exit that
# skips every export. argv: configuration, calls, "flush" or "exit", OTLP endpoint or "none".
_PROGRAM = """
import gc, os, random, sys, tempfile
sys.path.insert(0, {folder!r})
from _common import Discard
import tracesim
from tracesim.evaluators import ExactMatch, Levenshtein
config, calls, flush, endpoint = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "flush", sys.argv[4]
QUESTIONS = ["Where was Marie Curie born?", "Who wrote the first published algorithm?"]
ANSWERS = {{QUESTIONS[0]: "Warsaw", QUESTIONS[1]: "Ada Lovelace"}}
settings = dict(
    exporters=[Discard()],
    set_global_tracer_provider=False,
    jsonl_path=os.path.join(tempfile.mkdtemp(), "traces.jsonl"),
    metrics_interval_s=3600,
)
if config == "off":
    settings["metrics"] = "none"
elif config == "on":
    settings.update(metrics=["jsonl", "prometheus"], prometheus_host="127.0.0.1", prometheus_port=0)
else:
    settings.update(metrics=["otlp"], otlp_endpoint=endpoint)
tracesim.configure(**settings)
def agent(question):
    return ANSWERS[question]
scored = tracesim.trace(
    kind="agent", name="agent", evaluators=[ExactMatch(), Levenshtein(sample_rate=0.5)], expected=ANSWERS.get
)(agent)
random.seed(27)  # trace ids, so the calls sampled, are the same in every run
for i in range(20):  # warm-up: lazy imports, the metric series, caches of short strings
    scored(QUESTIONS[i % 2])
tracesim.force_flush(600)
random.seed(1027)  # again: the warm-up's export may have drawn from it (OTLP: retry jitter)
gc.collect()
gc.freeze()  # a full collection of the start-up heap, in whichever thread it falls, is not a call's cost
# The caller keeps the interpreter lock through the calls (the workers score at the flush): how
# valgrind interleaves the threads moves the caller's count by 0.5-1.7 % otherwise.
sys.setswitchinterval(1000.0)
before = tracesim.scoring_stats()
for i in range(calls):
    scored(QUESTIONS[i % 2])
if flush:
    tracesim.force_flush(600)
stats = tracesim.scoring_stats()
print("not_sampled", stats.not_sampled - before.not_sampled, "dropped", stats.dropped, "errors", stats.errors)
sys.stdout.flush()
if not flush:
    os._exit(0)
"""


def instructions(program: Path, config: str, calls: int, flush: bool, endpoint: str) -> tuple[int, int, str]:
    """Instructions of the main thread and of all threads for one run, and what it printed."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out"
        result = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                "--separate-threads=yes",
                f"--callgrind-out-file={out}",
                sys.executable,
                str(program),
                config,
                str(calls),
                "flush" if flush else "exit",
                endpoint,
            ],
            capture_output=True,
            text=True,
            check=False,
            # The same dict layouts in every run; no span export on the batch processor's timer.
            env={**os.environ, "PYTHONHASHSEED": "0", "OTEL_BSP_SCHEDULE_DELAY": "3600000"},
        )
        threads: dict[int, int] = {}
        for path in Path(folder).glob("out-*"):
            text = path.read_text()
            number = re.search(r"^thread: (\d+)$", text, re.MULTILINE)
            total = re.search(r"^totals: (\d+)$", text, re.MULTILINE)
            if number and total:
                threads[int(number.group(1))] = int(total.group(1))
    if result.returncode != 0 or 1 not in threads:
        raise RuntimeError(f"valgrind gave no count for {config} ({calls} calls):\n{result.stderr[-2000:]}")
    return threads[1], sum(threads.values()), result.stdout.strip()


def per_call(
    counted: dict[tuple[str, int, bool], tuple[int, int, str]], config: str, calls: int
) -> tuple[float, float, str]:
    """Instructions per call: the caller's thread (runs without flush) and all threads (with)."""
    caller, _, said = counted[config, calls, False]
    caller_base, _, _ = counted[config, 0, False]
    _, every, said_all = counted[config, calls, True]
    _, every_base, _ = counted[config, 0, True]
    return (caller - caller_base) / calls, (every - every_base) / calls, f"{said}; with flush: {said_all}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=300, help="calls per counted run")
    parser.add_argument(
        "--otlp", action="store_true", help="also metrics over OTLP/HTTP to a local sink (own process)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="valgrind runs at a time")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("bench_metrics_instructions: valgrind is not on the PATH (apt install valgrind); skipped")
        return
    calls = max(1, min(args.calls, 500))  # below the 512 spans that start a batch export
    sink = Sink() if args.otlp else None  # outside valgrind: the backend's work is not counted
    endpoint = sink.url if sink is not None else "none"
    configs = ["off", "on"] + (["otlp"] if args.otlp else [])
    labels = {"off": "metrics off", "on": "jsonl+prometheus", "otlp": "otlp"}
    try:
        with tempfile.TemporaryDirectory() as folder:
            program = Path(folder) / "calls.py"
            program.write_text(_PROGRAM.format(folder=str(Path(__file__).resolve().parent)))
            # Counts do not depend on what else the machine runs: the runs can share it.
            with ThreadPoolExecutor(max(1, args.jobs)) as pool:
                runs = {
                    (config, n, flush): pool.submit(instructions, program, config, n, flush, endpoint)
                    for config in configs
                    for flush in (False, True)
                    for n in (calls, 0)
                }
                counted = {key: run.result() for key, run in runs.items()}
            counts = {config: per_call(counted, config, calls) for config in configs}
    finally:
        if sink is not None:
            sink.stop()
    print(
        f"instructions per scored call (thousands), {calls} counted calls; "
        "two evaluators, one sampled at 0.5; ratio to metrics off"
    )
    print(f"{'metrics':>17} {'caller':>9} {'ratio':>7} {'all threads':>12} {'ratio':>7}")
    caller_off, all_off, _ = counts["off"]
    for config in configs:
        caller, every, _ = counts[config]
        print(
            f"{labels[config]:>17} {caller / 1000:>9.1f} {caller / caller_off:>6.3f}x "
            f"{every / 1000:>12.1f} {every / all_off:>6.3f}x"
        )
    print()
    for config in configs:
        print(f"{labels[config]:>17}: {counts[config][2]}")
    print(f"\ngoal: caller <= {GOAL:.2f}x metrics off")


if __name__ == "__main__":
    main()
