"""What online scoring costs a host's clients: latency from each call's scheduled arrival.

The host is a request handler, ``handle(request)``, decorated with ``@tracesim.trace`` and
called by ``--host-threads`` threads (default 1) as requests arrive. Arrivals are open loop:
call *i* is due at ``t0 + i / rate`` whether or not the host is ready for it; a host thread
takes the next call, sleeps until it is due (if it is not due yet), runs it, and the call's
latency is **its end minus its due time**. A call that waits for the interpreter (the GIL
held by scoring threads, or an earlier call still running) is late by that much, as a client
of the service would see it. The handler parses its request, picks the answer and does about
``--work-us`` of pure-Python work (the unscored call, the baseline).

Why threads and not an asyncio loop: a sync handler on a thread pool (gunicorn's gthread,
Flask, Django) is where most scored LLM endpoints run, and for the GIL an asyncio loop is
one host thread: ``--host-threads 1`` measures that case, ``--host-threads 2`` a pool.

Variants, each in a fresh process, rounds interleaved (the order rotates each round):

* ``unscored``: the same handler, traced, no evaluators (the baseline of the round);
* ``threads``: levenshtein + rouge + bleu on every call, scored by tracesim's scoring
  threads in the host's interpreter (``scoring_processes=0``);
* ``processes=1``, ``processes=2``: the same evaluators scored in 1 or 2 worker processes
  (``scoring_processes=N``; "not available in this tree" where that setting is not accepted);
* ``processes=1+export`` (and, opt-in, ``processes=2+export``): the same, with
  ``scoring_export=workers``: the worker that scores a call also writes its span to the trace
  file, and the host only hands the ended span over;
* opt-in (``--variants``): ``processes=1+nice``, ``processes=2+nice``, the same with the
  workers' scheduling priority lowered by 10 after warm-up (``os.setpriority``), to show what
  the host gains when the kernel runs its interpreter first (a replaced worker is not lowered);
* opt-in: ``unscored+scorer``, the unscored host beside a process that scores the same pairs
  with the same evaluators at the same rate without tracesim (no pipe, no results, no spans):
  the floor a worker's CPU puts under the host's latency on this machine, whatever the design.
* opt-in: ``unscored+handoff``, the host side of a design where the worker records and exports:
  the unscored host hands each ended call (its span's data and expected answer, one pickle and
  one ``os.write`` on the calling thread) to a process that scores it and renders the span
  with its results to JSON. Calls the full pipe refuses are counted, and those of the 200
  warm-up calls (made back to back) apart.

Inputs are realistic answers of about 300 characters with an expected answer each: sentences
of ``benchmarks/_evaldata.py`` joined to >= 280 characters, edited as agents' answers are
(fillers, synonyms, dropped or reordered words, typos, a wrong answer). Exporter: the
default local jsonl file, in a temporary directory (``--exporter discard`` drops spans in
process instead; ``--exporter otlp`` sends spans and the results' log records to a local
OTLP/HTTP backend in a process of its own, which parses every trace request). Every call is
sampled for scoring; the queue is the default (10,000).

Per run: p50 / p99 / max latency from the due time, the ratio of p50 and p99 to the round's
unscored run, scored results (3 per call expected), calls dropped by scoring, late results
(scores that came after the span's ``max_defer_s`` and went on a carrier span), calls that
began more than one interval after their due time ("queued"), the scoring backlog's growth
(calls/s, regression over the run), the CPU per call of the host and its workers, and the
probe's p50 / p99: a process tracesim is not in (no shared interpreter, no import) waking every
millisecond over the same seconds, timing how late it wakes. What the probe sees is the
machine's part of the host's tail (busy CPUs, the kernel's run queues); what a variant adds
above it is its interpreter's (``--no-probe`` leaves it out).

``--find-max`` finds, per scored variant, the highest rate it keeps up with: no call dropped,
scoring backlog growing by less than 2 % of the rate, host not falling behind (its start lag
growing by less than 1 ms per second). Then latency is measured at ``--rate`` and, when a
variant did not keep up with it, also at 80 % of the best sustained process rate.

    NLTK_DATA=... python benchmarks/bench_host_latency.py [--rate 1250] [--rounds 3]
        [--seconds 8] [--host-threads 1] [--find-max] [--exporter jsonl|discard|otlp] [--gc-freeze]
        [--variants unscored,threads,processes=1,processes=2]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import pickle
import random
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import Any

_SINK_URL = "BENCH_OTLP_SINK_URL"
VARIANTS = ("unscored", "threads", "processes=1", "processes=2", "processes=1+export")
SIDECAR = "unscored+scorer"
"""Opt-in: the unscored host beside a process that is not tracesim's (no pipe, no results to
read, no spans) scoring the same pairs with the same three evaluators at the same rate. Its
ratio to ``unscored`` is the floor a worker process's CPU puts under any design on this
machine: what is left above it in ``processes=1`` is the host's own share."""
PROBE = r"""
import json, sys, time
start, end, interval = map(float, sys.argv[1:4])
clock, sleep = time.monotonic, time.sleep
lags, due = [], start
while due < end:
    now = clock()
    if now < due:
        sleep(due - now)
        lags.append(clock() - due)
    due += interval
    while due < clock():  # a late wake-up is one sample, not a burst of catching up
        due += interval
lags.sort()
pick = lambda q: lags[min(len(lags) - 1, int(q * len(lags)))] * 1e6 if lags else float("nan")
print(json.dumps({"p50": pick(0.5), "p99": pick(0.99), "samples": len(lags)}))
"""
"""The probe: a process that shares nothing with tracesim (no GIL, no import) waking every
millisecond over the measured part and timing how late each wake-up is. What it sees is the
machine's share of the host's tail (CPUs busy, the kernel's run queues); the rest of a
variant's p99 above it is the host's interpreter."""
HANDOFF = "unscored+handoff"
"""Opt-in: the host side of a design where the worker records and exports. The unscored host
also hands each ended call (the span's data and the expected answer, one pickle) to a process
that scores it and renders its results and span to JSON there; the host's only extra work is
that pickle and one ``os.write`` per call, on the calling thread."""
BESIDE = (SIDECAR, HANDOFF)
UNSCORED = ("unscored", *BESIDE)
"""The variants whose host scores nothing (tracesim configured without scoring)."""
NICE = ("processes=1+nice", "processes=2+nice")
"""Opt-in: the workers' priority lowered by 10 after warm-up (what a pool could do itself)."""
EXPORT = ("processes=1+export", "processes=2+export")
"""With ``scoring_export=workers``: the workers write the scored spans (see `tracesim._scoring._handoff`)."""
OPT_IN = (*NICE, *BESIDE, "processes=2+export")
PAIRS = 256


# ---------------------------------------------------------------- the workload


def make_pairs(seed: int = 20261128, count: int = PAIRS) -> list[tuple[str, str]]:
    """(answer, expected) pairs of about 300 characters, from ``_evaldata``'s sentences and edits.

    Example:
        >>> pairs = make_pairs(count=4)
        >>> all(len(expected) >= 280 for _, expected in pairs)
        True
    """
    from _evaldata import ANSWERS, _edit  # benchmarks run as scripts: their folder is on sys.path

    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        expected = ""
        while len(expected) < 280:
            expected = f"{expected} {rng.choice(ANSWERS)}".strip()
        pairs.append((_edit(expected, rng), expected))
    return pairs


def calibrate(work_us: float) -> int:
    """Iterations of `_work` that take about ``work_us`` microseconds on this machine."""
    n = 1000
    best = float("inf")
    for _ in range(20):
        start = time.perf_counter()
        _work(n)
        best = min(best, time.perf_counter() - start)
    return max(1, round(n * work_us / (best * 1e6)))


def _work(n: int) -> int:
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i) & 0xFFFF
    return acc


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def slope(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of y over x."""
    if len(points) < 2:
        return 0.0
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else 0.0


def descendants(pid: int) -> list[int]:
    """Process ids of ``pid``'s children and their children, from /proc (Linux)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                children = [int(c) for c in f.read().split()]
        except OSError:
            continue
        for child in children:
            found += [child, *descendants(child)]
    return found


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (0 if it has gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_s() -> float:
    """CPU seconds of this process and its live descendants (the scoring workers)."""
    me = os.getpid()
    return cpu_s(me) + sum(cpu_s(child) for child in descendants(me))


# ---------------------------------------------------------------- one run (child process)


def configure(variant: str, exporter: str, directory: str) -> str | None:
    """Configure tracesim for ``variant``; the reason when this tree cannot run it."""
    from _common import Discard

    import tracesim

    options: dict[str, Any] = {"set_global_tracer_provider": False}
    if exporter == "discard":
        options["exporters"] = [Discard()]
    elif exporter == "otlp":  # the parent's loopback OTLP/HTTP backend, in a process of its own
        options["exporters"] = ["otlp"]
        options["otlp_endpoint"] = os.environ[_SINK_URL]
        options["spool_dir"] = os.path.join(directory, "spool")
        options["phoenix_annotations"] = False  # not Phoenix: no question asked of it
    else:
        options["exporters"] = ["jsonl"]
        options["jsonl_path"] = os.path.join(directory, "traces.jsonl")
        options["jsonl_backups"] = 1
    if variant not in UNSCORED:
        options["scoring_processes"] = 0 if variant == "threads" else int(variant[10:11])
        # the host writes the scored spans, but in the +export variants (the default is auto)
        options["scoring_export"] = "workers" if variant in EXPORT else "host"
    try:
        tracesim.configure(**options)
    except (TypeError, tracesim.ConfigError) as error:
        if variant not in EXPORT and "scoring_export" in options:  # a tree from before the setting
            del options["scoring_export"]
            return configure_with(options, variant)
        return f"not available in this tree ({type(error).__name__}: {error})"
    return None


def configure_with(options: dict[str, Any], variant: str) -> str | None:
    """Configure an older tree: without ``scoring_export`` (the host writes every span there),
    and for ``threads`` without ``scoring_processes`` too (a tree that scores on threads anyway)."""
    import tracesim

    try:
        tracesim.configure(**options)
    except (TypeError, tracesim.ConfigError) as again:
        if variant != "threads":
            return f"not available in this tree ({type(again).__name__}: {again})"
        del options["scoring_processes"]
        tracesim.configure(**options)
    return None


def run_child(args: argparse.Namespace) -> dict[str, Any]:
    import tracesim
    from tracesim.evaluators import Bleu, Levenshtein, Rouge

    directory = tempfile.mkdtemp(prefix="tracesim-host-latency-")
    sidecar = None
    if args.child in BESIDE:  # started first: its scorers load while the host warms up
        sidecar = subprocess.Popen(
            [
                sys.executable,
                os.path.abspath(__file__),
                "--sidecar",
                str(args.warmup + args.seconds),
                str(args.rate if args.child == SIDECAR else 0),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
    reason = configure(args.child, args.exporter, directory)
    if reason:
        if sidecar is not None:
            sidecar.kill()
        return {"variant": args.child, "unavailable": reason}

    pairs = make_pairs()
    answers = [answer for answer, _ in pairs]
    expected = [e for _, e in pairs]
    iterations = calibrate(args.work_us)

    def handle(request: dict[str, Any]) -> str:
        _work(iterations)
        answer: str = answers[request["id"]]
        return answer

    handed: list[int] = [0, 0]  # calls handed off, calls the full pipe refused
    if args.child in UNSCORED:
        handler = tracesim.trace(kind="agent", name="handle")(handle)
        if args.child == HANDOFF:
            assert sidecar is not None
            assert sidecar.stdin is not None
            handler = handing_off(handler, sidecar.stdin.fileno(), expected, handed)
    else:
        handler = tracesim.trace(
            kind="agent",
            name="handle",
            evaluators=[Levenshtein(), Rouge(), Bleu()],
            expected=lambda request: expected[request["id"]],
        )(handle)
    requests = [{"id": i, "question": f"question {i}"} for i in range(len(pairs))]

    if sidecar is not None:
        assert sidecar.stdout is not None
        sidecar.stdout.readline()  # "ready": its scorers are loaded
    for i in range(200):  # warm-up: tokenizers, scorers, worker threads or processes
        handler(requests[i % len(requests)])
    tracesim.force_flush(120)
    workers_before = descendants(os.getpid())  # the workers found before the clock starts
    if args.child.endswith("+nice"):
        for pid in workers_before:
            os.setpriority(os.PRIO_PROCESS, pid, 10)
    gc.collect()
    if args.gc_freeze:  # what a server does after its imports: the start-up heap out of every collection
        gc.freeze()

    rate = args.rate
    interval = 1.0 / rate
    warm = int(args.warmup * rate)
    total = warm + int(args.seconds * rate)
    latency = [0.0] * total
    lag = [0.0] * total
    counter = itertools.count()
    backlog: list[tuple[float, float]] = []
    done = threading.Event()
    cpu: list[float] = []
    before = tracesim.scoring_stats()
    refused_before = handed[1]  # refused in the back-to-back warm-up calls
    t0 = time.perf_counter() + 0.05
    probe = None
    if args.child == SIDECAR:  # scores from the host's first call to its last, warm-up included
        assert sidecar is not None
        assert sidecar.stdin is not None
        sidecar.stdin.write(f"{time.monotonic() + (t0 - time.perf_counter())}\n".encode())
        sidecar.stdin.flush()
    if args.probe:
        measured_from = time.monotonic() + 0.05 + args.warmup
        probe = subprocess.Popen(
            [sys.executable, "-c", PROBE, str(measured_from), str(measured_from + args.seconds), "0.001"],
            stdout=subprocess.PIPE,
            text=True,
        )

    def host() -> None:
        perf, sleep = time.perf_counter, time.sleep
        while True:
            i = next(counter)
            if i >= total:
                return
            due = t0 + i * interval
            now = perf()
            if now < due:
                sleep(due - now)
                now = perf()
            if i == warm:
                cpu.extend((tree_cpu_s(), cpu_s(os.getpid())))
            handler(requests[i % len(requests)])
            end = perf()
            latency[i] = end - due
            lag[i] = now - due

    def sample() -> None:  # 10 Hz: the scoring backlog over the measured part
        start = t0 + args.warmup
        while not done.wait(0.1):
            now = time.perf_counter()
            if now >= start:
                backlog.append((now - t0, float(tracesim.scoring_stats().pending)))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    hosts = [threading.Thread(target=host) for _ in range(args.host_threads)]
    for thread in hosts:
        thread.start()
    for thread in hosts:
        thread.join()
    finished = time.perf_counter()
    done.set()
    sampler.join()
    end_stats = tracesim.scoring_stats()
    tracesim.force_flush(args.drain_limit)
    drain_s = time.perf_counter() - finished
    after = tracesim.scoring_stats()
    workers_after = descendants(os.getpid())
    all_cpu_s = tree_cpu_s() - cpu[0]
    host_cpu_s = cpu_s(os.getpid()) - cpu[1]
    measured = total - warm
    tracesim.shutdown()
    seen = json.loads(probe.communicate(timeout=60)[0]) if probe is not None else {}
    beside = json.loads(sidecar.communicate(timeout=300)[0]) if sidecar is not None else {}
    if args.child == HANDOFF:
        beside["handed"], beside["refused"] = handed
        beside["refused_in_warmup"] = refused_before
    lat_us = [x * 1e6 for x in latency[warm:]]
    lag_points = [(t0 + i * interval, lag[i]) for i in range(warm, total)]
    return {
        "variant": args.child,
        "rate": rate,
        "calls": total,
        "measured": measured,
        "p50": percentile(lat_us, 0.5),
        "p99": percentile(lat_us, 0.99),
        "max": max(lat_us),
        "queued": sum(1 for x in lag[warm:] if x > interval),
        "lag_slope_ms_s": slope(lag_points) * 1e3,
        "backlog_slope": slope(backlog),
        "backlog_end": end_stats.pending,
        "drain_s": drain_s,
        "results": after.results - before.results,
        "completed": after.completed - before.completed,
        "dropped": after.dropped - before.dropped,
        "late": after.late - before.late,
        "errors": after.errors - before.errors,
        "timeouts": after.timeouts - before.timeouts,
        "workers": [len(workers_before), len(workers_after), len(set(workers_after) - set(workers_before))],
        "cpu_us_per_call": all_cpu_s / measured * 1e6,  # the workers' CPU included
        "host_cpu_us_per_call": host_cpu_s / measured * 1e6,
        "work_iterations": iterations,
        "load": os.getloadavg()[0],
        "probe_p50": seen.get("p50", float("nan")),
        "probe_p99": seen.get("p99", float("nan")),
        "sidecar": beside,
    }


def handing_off(handler: Any, fd: int, expected: list[str], handed: list[int]) -> Any:
    """``handler``, then its call's span data and expected answer handed to the process on ``fd``
    (a length-prefixed pickle, one non-blocking ``os.write``: under ``PIPE_BUF``, so whole or
    not at all; a full pipe refuses it and it is counted)."""
    os.set_blocking(fd, False)
    dumps, pack, write, clock = pickle.dumps, struct.Struct("<I").pack, os.write, time.time_ns
    ids = random.Random(1)

    def handle_and_hand_off(request: dict[str, Any]) -> str:
        start = clock()
        answer: str = handler(request)
        record = (
            ids.getrandbits(128),
            ids.getrandbits(64),
            "handle",
            start,
            clock(),
            {
                "openinference.span.kind": "AGENT",
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "handle",
                "input.value": json.dumps(request),
                "input.mime_type": "application/json",
                "output.value": answer,
                "output.mime_type": "text/plain",
            },
            expected[request["id"]],
        )
        data = dumps(record, 5)
        try:
            write(fd, pack(len(data)) + data)
            handed[0] += 1
        except BlockingIOError:
            handed[1] += 1
        return answer

    return handle_and_hand_off


def run_sidecar(seconds: float, rate: float) -> dict[str, Any]:
    """Score the pairs with levenshtein + rouge + bleu at ``rate`` calls/s for ``seconds``, open
    loop, from the start time (``time.monotonic``) the host writes on stdin once the scorers are
    warm: the CPU a worker process spends, without tracesim's pipeline around it."""
    from tracesim.evaluators import Bleu, Levenshtein, Rouge

    pairs = make_pairs()
    evaluators = [Levenshtein(), Rouge(), Bleu()]
    for answer, expected in pairs[:20]:  # load the scorers' libraries before the clock starts
        for evaluator in evaluators:
            evaluator.evaluate(answer, expected)
    print("ready", flush=True)
    if not rate:
        return take_handed(evaluators)
    start = float(sys.stdin.buffer.readline())
    clock, sleep = time.monotonic, time.sleep
    total = int(seconds * rate)
    cpu0 = time.process_time()
    behind = 0.0
    for i in range(total):
        due = start + i / rate
        now = clock()
        if now < due:
            sleep(due - now)
        else:
            behind = max(behind, now - due)
        answer, expected = pairs[i % len(pairs)]
        for evaluator in evaluators:
            evaluator.evaluate(answer, expected)
    cpu_us = (time.process_time() - cpu0) / total * 1e6
    return {"scored": total, "cpu_us_per_call": cpu_us, "behind_s": behind}


def take_handed(evaluators: Sequence[Any]) -> dict[str, Any]:
    """Read handed-off calls from stdin until it closes; score each and render its span with
    the results to JSON, as a worker that records and exports would."""
    read, unpack = sys.stdin.buffer.read, struct.Struct("<I").unpack
    cpu0 = time.process_time()
    count = 0
    while len(head := read(4)) == 4:
        trace_id, span_id, name, start, end, attributes, expected = pickle.loads(read(unpack(head)[0]))
        results = [e.evaluate(attributes["output.value"], expected) for e in evaluators]
        span = {"traceId": f"{trace_id:032x}", "spanId": f"{span_id:016x}", "name": name}
        span.update(start=start, end=end, attributes=attributes)
        json.dumps({**span, "events": [r.model_dump(mode="json") for r in results]})
        count += 1
    cpu_us = (time.process_time() - cpu0) / max(count, 1) * 1e6
    return {"scored": count, "cpu_us_per_call": cpu_us}


# ---------------------------------------------------------------- the parent


def spawn(
    variant: str, rate: float, args: argparse.Namespace, seconds: float | None = None
) -> dict[str, Any]:
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        variant,
        "--rate",
        str(rate),
        "--seconds",
        str(seconds or args.seconds),
        "--warmup",
        str(args.warmup),
        "--host-threads",
        str(args.host_threads),
        "--work-us",
        str(args.work_us),
        "--exporter",
        args.exporter,
        "--drain-limit",
        str(args.drain_limit),
        *(["--gc-freeze"] if args.gc_freeze else []),
        *([] if args.probe else ["--no-probe"]),
    ]
    for attempt in range(2):  # a second try when the child fails (the tree may be mid-commit)
        done = subprocess.run(command, capture_output=True, text=True, timeout=900)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if not done.returncode and lines:
            break
        if attempt:
            last = " | ".join(done.stderr.strip().splitlines()[-3:])
            return {"variant": variant, "failed": f"exit {done.returncode}: {last}"}
    result: dict[str, Any] = json.loads(lines[-1])
    result["said"] = sorted({line for line in done.stderr.splitlines() if line.startswith("tracesim:")})
    return result


def keeps_up(run: dict[str, Any]) -> bool:
    return bool(
        run["dropped"] == 0 and run["backlog_slope"] < 0.02 * run["rate"] and run["lag_slope_ms_s"] < 1.0
    )


def find_max(variant: str, start: float, args: argparse.Namespace) -> tuple[float, list[str]]:
    """The highest rate ``variant`` keeps up with: a x1.25 ladder from ``start``, then two halvings."""
    trace: list[str] = []

    def trial(rate: float) -> bool | None:
        run = spawn(variant, round(rate), args, seconds=args.search_seconds)
        if run.get("unavailable"):
            return None
        if run.get("failed"):
            trace.append(f"{round(rate)}: failed ({run['failed'][:300]})")
            return False
        ok = keeps_up(run)
        trace.append(
            f"{round(rate)}:{'ok' if ok else 'behind'}(backlog {run['backlog_slope']:+.0f}/s, "
            f"lag {run['lag_slope_ms_s']:+.1f} ms/s, dropped {run['dropped']}, errors {run['errors']}, "
            f"load {run['load']:.0f})"
        )
        for line in run["said"]:
            trace.append(f"said: {line[:200]}")
        return ok

    first = trial(start)
    if first is None:
        return float("nan"), ["not available in this tree"]
    lo, hi = (start, start * 1.25) if first else (start / 1.25, start)
    if first:
        while hi < 20_000 and trial(hi):
            lo, hi = hi, hi * 1.25
    else:
        while lo > 20 and not trial(lo):
            lo, hi = lo / 1.25, lo
    for _ in range(2):
        mid = (lo + hi) / 2
        if trial(mid):
            lo = mid
        else:
            hi = mid
    return lo, trace


def latency_rounds(rate: float, args: argparse.Namespace) -> None:
    variants = tuple(args.variants)
    scored = [v for v in variants if v not in UNSCORED]
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    unavailable: dict[str, str] = {}
    for round_number in range(args.rounds):
        shift = round_number % len(variants)
        order = variants[shift:] + variants[:shift]
        for variant in order:
            if variant in unavailable:
                continue
            run = spawn(variant, rate, args)
            if run.get("failed"):
                print(f"  {variant} round {round_number + 1} failed: {run['failed'][:500]}")
                continue
            if run.get("unavailable"):
                unavailable[variant] = run["unavailable"]
                continue
            run["round"] = round_number
            runs[variant].append(run)
            print(
                f"  round {round_number + 1} {variant:16} p50 {run['p50']:9.0f} µs  "
                f"p99 {run['p99']:9.0f} µs  "
                f"results {run['results']}/{3 * run['calls'] if variant in scored else 0}  "
                f"dropped {run['dropped']}  backlog {run['backlog_slope']:+.0f}/s  load {run['load']:.0f}  "
                f"probe p99 {run['probe_p99']:.0f} µs"
                + (
                    f"  scorer beside {run['sidecar']['cpu_us_per_call']:.0f} µs/call"
                    + (
                        f", refused {run['sidecar']['refused']}"
                        f" ({run['sidecar']['refused_in_warmup']} in warm-up)"
                        if "refused" in run["sidecar"]
                        else ""
                    )
                    if run.get("sidecar")
                    else ""
                ),
                flush=True,
            )
    loads = [r["load"] for rs in runs.values() for r in rs] or [float("nan")]
    print(
        f"\nlatency from the scheduled arrival at {rate:,.0f} calls/s, {args.host_threads} host thread(s), "
        f"{args.rounds} rounds x {args.seconds:g} s (after {args.warmup:g} s warm-up), "
        f"exporter {args.exporter}{', gc.freeze() after warm-up' if args.gc_freeze else ''}; "
        f"machine load average {statistics.median(loads):.1f} "
        f"({min(loads):.1f}-{max(loads):.1f}) on {os.cpu_count()} CPUs"
    )
    print(
        "  variant       p50 µs  p99 µs  max µs   p50 x (spread)     p99 x (spread)     "
        "results/call dropped late errors queued backlog/s  CPU µs/call (host)  probe p50/p99 µs"
    )
    base = {run["round"]: run for run in runs["unscored"]}
    for variant in variants:
        if variant in unavailable:
            print(f"  {variant:12}  {unavailable[variant][:200]}")
            continue
        rs = runs[variant]
        if not rs:
            continue
        r50 = [r["p50"] / base[r["round"]]["p50"] for r in rs if r["round"] in base]
        r99 = [r["p99"] / base[r["round"]]["p99"] for r in rs if r["round"] in base]
        calls = sum(r["calls"] for r in rs)
        print(
            f"  {variant:12} {statistics.median(r['p50'] for r in rs):7.0f} "
            f"{statistics.median(r['p99'] for r in rs):7.0f} "
            f"{statistics.median(r['max'] for r in rs):7.0f}   "
            f"{statistics.median(r50):5.2f} ({min(r50):.2f}-{max(r50):.2f})  "
            f"{statistics.median(r99):6.2f} ({min(r99):.2f}-{max(r99):.2f})  "
            f"{sum(r['results'] for r in rs) / calls:5.2f} {sum(r['dropped'] for r in rs):8d} "
            f"{sum(r['late'] for r in rs):4d} {sum(r['errors'] for r in rs):6d} "
            f"{sum(r['queued'] for r in rs):6d} "
            f"{statistics.median(r['backlog_slope'] for r in rs):+9.0f} "
            f"{statistics.median(r['cpu_us_per_call'] for r in rs):10.0f} "
            f"({statistics.median(r['host_cpu_us_per_call'] for r in rs):.0f})  "
            f"{statistics.median(r['probe_p50'] for r in rs):5.0f}/"
            f"{statistics.median(r['probe_p99'] for r in rs):.0f}"
        )
    said = sorted({line for rs in runs.values() for r in rs for line in r["said"]})
    for line in said:
        print(f"  said by a run: {line[:300]}")
    if args.verbose:
        for variant in variants:
            for r in runs[variant]:
                print("   ", json.dumps(r))


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--rate", type=float, default=1250.0, help="calls per second (open loop)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=8.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=2.0, help="paced seconds before measuring")
    parser.add_argument("--host-threads", type=int, default=1)
    parser.add_argument("--work-us", type=float, default=150.0, help="the handler's own work")
    parser.add_argument(
        "--exporter",
        choices=("jsonl", "discard", "otlp"),
        default="jsonl",
        help="otlp: to a loopback OTLP/HTTP backend in a process of its own (spans and log records)",
    )
    parser.add_argument("--find-max", action="store_true", help="search each variant's sustained rate")
    parser.add_argument(
        "--gc-freeze",
        action="store_true",
        help="gc.freeze() after warm-up in every variant, as servers do after their imports",
    )
    parser.add_argument(
        "--drain-limit", type=float, default=120.0, help="seconds a run's final flush may take (then counted)"
    )
    parser.add_argument(
        "--also-rate", type=float, default=0.0, help="a second latency rate, e.g. 80%% of a sustained rate"
    )
    parser.add_argument("--search-rounds", type=int, default=3)
    parser.add_argument("--search-seconds", type=float, default=5.0)
    parser.add_argument("--verbose", action="store_true", help="print every run")
    parser.add_argument(
        "--no-probe",
        dest="probe",
        action="store_false",
        help="run without the probe process (what the machine does to a process tracesim is not in)",
    )
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help=f"comma-separated, from {', '.join(VARIANTS + OPT_IN)} (unscored is the baseline: keep it)",
    )
    parser.add_argument("--child", choices=VARIANTS + OPT_IN, help=argparse.SUPPRESS)
    parser.add_argument("--sidecar", nargs=2, type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.variants = args.variants.split(",")
    if not set(args.variants) <= set(VARIANTS + OPT_IN) or "unscored" not in args.variants:
        parser.error(f"--variants: a comma-separated list of {', '.join(VARIANTS + OPT_IN)}, with unscored")
    scored = [v for v in args.variants if v not in UNSCORED]
    if args.sidecar:
        print(json.dumps(run_sidecar(*args.sidecar)))
        return
    if args.child:
        print(json.dumps(run_child(args)))
        return

    if args.exporter == "otlp" and _SINK_URL not in os.environ:
        from _common import Sink

        sink = Sink()
        os.environ[_SINK_URL] = sink.url  # the children inherit it
    pairs = make_pairs()
    print(
        f"{len(pairs)} pairs, expected {statistics.fmean(len(e) for _, e in pairs):.0f} chars, "
        f"answer {statistics.fmean(len(a) for a, _ in pairs):.0f} chars (mean); "
        f"handler work {args.work_us:g} µs; {os.cpu_count()} CPUs"
    )
    sustained: dict[str, float] = {}
    if args.find_max:
        found: dict[str, list[float]] = {v: [] for v in scored}
        for round_number in range(args.search_rounds):
            shift = round_number % len(scored)
            for variant in scored[shift:] + scored[:shift]:
                start = 500.0 if variant == "threads" else 1000.0
                rate, steps = find_max(variant, start, args)
                found[variant].append(rate)
                print(f"  search {variant} round {round_number + 1}: {rate:,.0f}/s  [{'; '.join(steps)}]")
        print("\nsustained scored rate (highest kept up with; median of rounds, spread):")
        for variant in scored:
            rates = [r for r in found[variant] if r == r]
            if not rates:
                print(f"  {variant:12} not available in this tree")
                continue
            sustained[variant] = statistics.median(rates)
            print(f"  {variant:12} {sustained[variant]:7,.0f} calls/s ({min(rates):,.0f}-{max(rates):,.0f})")
    latency_rounds(args.rate, args)
    best = max((sustained[v] for v in scored if v.startswith("processes") and v in sustained), default=None)
    if best is not None and best < args.rate:
        latency_rounds(round(best * 0.8), args)
    if args.also_rate:
        latency_rounds(args.also_rate, args)


if __name__ == "__main__":
    main()
