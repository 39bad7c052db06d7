"""tracesim beside other SDKs: CPU per traced call against raw OpenTelemetry, each SDK in fresh processes.

Per column, each SDK traces the same function with the same input (``peers/_shapes.py``):

* ``untraced``: the function alone (the floor);
* ``raw OTel``: hand-written OpenTelemetry doing the same observable work as the decorators: one
  span with tracesim's attributes, the input as ``json.dumps``, the output; a
  ``BatchSpanProcessor`` (the baseline of every ratio);
* ``tracesim``: ``@tracesim.trace(name="agent", kind="agent")``, defaults (redaction on);
* ``OpenLLMetry``: traceloop-sdk's ``@workflow(name="agent")`` (content tracing on, its
  default), from the peers virtualenv (``peers/peer_venv.py``, built on first use and cached: the
  main venv's OpenTelemetry, tracesim from this checkout, traceloop-sdk without its
  instrumentations). Without that venv (no registry) the column is left out, said once.
* with ``--with logfire langfuse``, also Logfire's ``@logfire.instrument`` and Langfuse's
  ``@observe`` (``peers/sdk_logfire.py``, ``peers/sdk_langfuse.py`` say how they are set up);

Columns: ``sync``, ``async``, ``generator`` (five yielded pieces) with a 200-char question and a
small dict; ``10 KB`` (a realistic chat history, see ``_workload.py``); ``OTLP``, the sync call
exported over OTLP/HTTP (protobuf) to a loopback collector in its own process (``_common.Sink``,
which counts the spans it receives), raw OTel with the official ``OTLPSpanExporter``, tracesim
with its own OTLP path (spool on), OpenLLMetry with the official exporter; and ``OTLP paced``,
the same at ``--rate`` calls a second, where every SDK delivers all its spans. Without OTLP the
spans go to an exporter that discards.

Each (round, column, SDK) runs in a fresh process (``peers/child.py``, under the same
interpreter and OpenTelemetry for all SDKs): warm-up, then ``--repeats`` repeats of calls, each
ended by the SDK's flush, timed as process CPU (every thread: export, redaction, encoding and
HTTP included), per call; the process reports its median repeat. Rounds interleave the SDKs
(order reversed every other round); a ratio is SDK / raw OTel in the same round, and the table
shows its median over rounds (range). Over OTLP in a tight loop a batch queue can overflow and
drop spans, which then cost no export: the CPU per *delivered* span is shown beside the CPU per
call. Read the ratios, not the absolute numbers: the machine is shared.

    python benchmarks/bench_peers.py [--quick] [--rounds 5] [--no-peers] [--with logfire langfuse]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# benchmarks run as scripts: their folder is on sys.path
from _common import Sink

PEERS = Path(__file__).resolve().parent / "peers"
sys.path.insert(0, str(PEERS))
import peer_venv  # noqa: E402  (peers/peer_venv.py, standard library only)

LABELS = {
    "untraced": "untraced",
    "otel": "raw OTel",
    "tracesim": "tracesim",
    "openllmetry": "OpenLLMetry",
    "logfire": "Logfire",
    "langfuse": "Langfuse",
}


@dataclass(frozen=True)
class Column:
    name: str
    shape: str
    otlp: bool = False
    paced: bool = False


COLUMNS = (
    Column("sync", "sync"),
    Column("async", "async"),
    Column("generator", "gen"),
    Column("10 KB", "chat"),
    Column("OTLP", "sync", otlp=True),
    Column("OTLP paced", "sync", otlp=True, paced=True),
)
Result = dict[str, Any]


def child_command(python: Path, sdk: str, column: Column, args: argparse.Namespace, sink: Sink) -> list[str]:
    command = [str(python), str(PEERS / "child.py"), sdk, column.shape]
    if column.paced:
        calls, repeats = round(args.rate * args.paced_seconds), 1
        command += ["--rate", str(args.rate)]
    elif column.otlp:
        calls, repeats = args.otlp_calls, args.repeats
    else:
        calls, repeats = (args.calls // 10 if column.shape == "chat" else args.calls), args.repeats
    command += ["--calls", str(calls), "--repeats", str(repeats)]
    if column.otlp and sdk != "untraced":
        command += ["--otlp", sink.url]
    return command


def measure(command: list[str]) -> Result | None:
    """Run one child; its result, or None (said on stderr) if it failed."""
    env = {**os.environ, "TRACELOOP_TELEMETRY": "false"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, check=False)
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("RESULT "):
            result: Result = json.loads(line[len("RESULT ") :])
            return result
    print(f"failed ({done.returncode}): {' '.join(command[1:])}\n{done.stderr[-2000:]}", file=sys.stderr)
    return None


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--quick", action="store_true", help="about a minute: 2 rounds, fewer calls")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 5; --quick 2)")
    parser.add_argument(
        "--calls", type=int, help="calls per repeat (default 5000, 10 KB a tenth; --quick 1500)"
    )
    parser.add_argument("--repeats", type=int, help="timed repeats per process (default 3; --quick 2)")
    parser.add_argument("--otlp-calls", type=int, help="calls per OTLP tight-loop repeat (default 5000)")
    parser.add_argument("--rate", type=float, default=2000.0, help="calls a second in the paced OTLP run")
    parser.add_argument(
        "--paced-seconds", type=float, help="length of the paced run (default 1.5; --quick 0.5)"
    )
    parser.add_argument("--no-peers", action="store_true", help="leave OpenLLMetry out (no venv build)")
    parser.add_argument(
        "--with",
        dest="optional",
        nargs="+",
        default=[],
        choices=["logfire", "langfuse"],
        help="also these peers, from the peers venv (each adds about a minute)",
    )
    args = parser.parse_args()
    quick = args.quick
    args.rounds = args.rounds or (2 if quick else 5)
    args.calls = args.calls or (1500 if quick else 5000)
    args.repeats = args.repeats or (2 if quick else 3)
    args.otlp_calls = args.otlp_calls or (1500 if quick else 5000)
    args.paced_seconds = args.paced_seconds or (0.5 if quick else 1.5)

    sdks, python = ["untraced", "otel", "tracesim"], Path(sys.executable)
    if args.no_peers:
        print("OpenLLMetry left out (--no-peers)")
    else:
        peers_python, how = peer_venv.ensure()
        if peers_python is None:
            print(f"OpenLLMetry left out: {how}")
        else:
            print(f"peers venv: {how}")
            sdks += ["openllmetry", *args.optional]
            python = peers_python  # every SDK under the same interpreter and OpenTelemetry
    started = time.perf_counter()
    results: dict[tuple[str, str], list[Result | None]] = {(c.name, s): [] for c in COLUMNS for s in sdks}
    sink = Sink()
    try:
        for round_number in range(args.rounds):
            order = sdks if round_number % 2 == 0 else sdks[::-1]
            for column in COLUMNS:
                for sdk in order:
                    if column.otlp and not column.paced and sdk == "untraced":
                        continue  # the sync column's floor; paced, it is the cost of the pacing itself
                    results[(column.name, sdk)].append(
                        measure(child_command(python, sdk, column, args, sink))
                    )
            print(
                f"round {round_number + 1}/{args.rounds} done, {time.perf_counter() - started:.0f} s",
                flush=True,
            )
    finally:
        sink.stop()
    report(args, sdks, results)


def _per_round(
    results: dict[tuple[str, str], list[Result | None]], column: str, sdk: str, field: str
) -> list[float]:
    """``field`` of ``sdk`` / raw OTel's in each round where both ran."""
    pairs = zip(results[(column, sdk)], results[(column, "otel")], strict=True)
    return [ours[field] / otel[field] for ours, otel in pairs if ours and otel]


def _median(
    results: dict[tuple[str, str], list[Result | None]], column: str, sdk: str, field: str
) -> float | None:
    values = [r[field] for r in results[(column, sdk)] if r]
    return statistics.median(values) if values else None


def _with_delivery(results: dict[tuple[str, str], list[Result | None]]) -> None:
    """Add each OTLP result's CPU per delivered span and delivered share."""
    for (column, _sdk), each in results.items():
        if column.startswith("OTLP"):
            for r in each:
                if r:
                    r["cpu_per_delivered_us"] = r["cpu_total_us"] / max(r["delivered"], 1)
                    r["delivered_pct"] = 100 * r["delivered"] / r["made"]


def report(
    args: argparse.Namespace, sdks: list[str], results: dict[tuple[str, str], list[Result | None]]
) -> None:
    _with_delivery(results)
    traced = [s for s in sdks if s not in ("untraced", "otel")]

    def cell(column: str, sdk: str, field: str = "cpu_us") -> str:
        value = _median(results, column, sdk, field)
        if value is None:
            return "-"
        if sdk in ("untraced", "otel"):
            return f"{value:.2f}" if value < 10 else f"{value:.1f}"
        each = _per_round(results, column, sdk, field)
        if not each:
            return f"{value:.1f}"
        return f"{value:.1f} {statistics.median(each):.2f}x ({min(each):.2f}-{max(each):.2f})"

    print(
        f"\n{args.rounds} interleaved rounds, each SDK and column in a fresh process; "
        f"{args.calls} calls a repeat "
        f"(10 KB: {args.calls // 10}; OTLP: {args.otlp_calls}; paced: {args.rate:.0f}/s for "
        f"{args.paced_seconds} s), {args.repeats} repeats a process"
    )
    print(
        "CPU per call, all threads, flush included, µs; "
        "ratio = SDK / raw OTel in the same round, median (range)\n"
    )
    print(f"{'column':<12}" + "".join(f"{LABELS[s]:>28}" for s in sdks))
    for column in COLUMNS:
        print(f"{column.name:<12}" + "".join(f"{cell(column.name, s):>28}" for s in sdks))
    print("\nover OTLP: CPU per delivered span, µs (ratio), and the share of spans the collector received")
    print(f"{'column':<12}" + "".join(f"{LABELS[s]:>28}{'delivered':>11}" for s in sdks if s != "untraced"))
    for column in (c for c in COLUMNS if c.otlp):
        cells = []
        for sdk in (s for s in sdks if s != "untraced"):
            pct = [r["delivered_pct"] for r in results[(column.name, sdk)] if r]
            share = f"{min(pct):.0f}-{max(pct):.0f} %" if pct else "-"
            cells.append(f"{cell(column.name, sdk, 'cpu_per_delivered_us'):>28}{share:>11}")
        print(f"{column.name:<12}" + "".join(cells))
    print("\nsummary (Markdown), CPU per call vs raw OTel; OTLP rows vs raw OTel's official exporter:\n")
    print("| variant | " + " | ".join(LABELS[s] for s in traced) + " |")
    print("|---|" + "---|" * len(traced))
    rows = [(c.name, c.name, "cpu_us") for c in COLUMNS]
    rows.insert(5, ("OTLP, per delivered span", "OTLP", "cpu_per_delivered_us"))
    for label, column_name, field in rows:
        _markdown_row(label, [_per_round(results, column_name, s, field) for s in traced])
    _markdown_row(
        "OTLP paced, above the pacing floor", [_above_floor(results, "OTLP paced", s) for s in traced]
    )
    floor = _median(results, "OTLP paced", "untraced", "cpu_us")
    if floor is not None:
        print(f"\npacing floor (untraced, paced: the sleeps and wake-ups): {floor:.1f} µs per call")


def _markdown_row(label: str, ratios: list[list[float]]) -> None:
    print(f"| {label} | " + " | ".join(f"{statistics.median(r):.2f}×" if r else "-" for r in ratios) + " |")


def _above_floor(results: dict[tuple[str, str], list[Result | None]], column: str, sdk: str) -> list[float]:
    """(SDK - untraced) / (raw OTel - untraced) in each round: the tracing's own CPU, paced."""
    rounds = zip(
        results[(column, sdk)], results[(column, "otel")], results[(column, "untraced")], strict=True
    )
    return [
        (ours["cpu_us"] - floor["cpu_us"]) / (otel["cpu_us"] - floor["cpu_us"])
        for ours, otel, floor in rounds
        if ours and otel and floor and otel["cpu_us"] > floor["cpu_us"]
    ]


if __name__ == "__main__":
    main()
