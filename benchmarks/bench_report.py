"""What ``tracesim report`` costs on a 100,000-span trace file: wall clock, median of 3 runs.

The file holds 25,000 traces of four spans, as an instrumented agent writes them: an ``answer``
span with its input and output and a scored result with an explanation, a retrieval with the
passages it returned, an LLM call with its messages, model and tokens, a tool call, and one
trace in 25 failing with an exception and its stack trace. Texts are distinct per trace (a
cache of redacted strings would not help), about 1 KB per span.

Each run is a fresh ``python -m tracesim report FILE`` with its output thrown away, so the
figure includes start-up and reading, as a user sees it. ``--tree`` runs another checkout's
code (a ``git worktree`` of an older commit) on the same file.

    python benchmarks/bench_report.py                      # this checkout
    python benchmarks/bench_report.py --tree /tmp/wt-old   # another one, same file
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode, set_span_in_context

TRACES = 25_000  # four spans each
T0_NS = 1_790_000_000 * 10**9
WORDS = [
    "the",
    "of",
    "capital",
    "city",
    "river",
    "mountain",
    "answer",
    "question",
    "model",
    "retrieval",
    "passage",
    "tool",
]


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)) + f" #{rng.getrandbits(48):x}"


def write_file(path: Path) -> int:
    """Write the file described above; return its span count."""
    from tracesim.exporters import JsonlExporter

    rng = random.Random(23)
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("bench.report")
    exporter = JsonlExporter(path, max_bytes=1 << 40)
    for i in range(TRACES):
        start = T0_NS + i * 10**9
        question = _text(rng, 20)
        answer = _text(rng, 30)
        root = tracer.start_span(
            "answer",
            start_time=start,
            attributes={
                "openinference.span.kind": "AGENT",
                "input.value": question,
                "output.value": answer,
                "user.id": f"u{i % 50}",
            },
        )
        parent = set_span_in_context(root)
        retrieve = tracer.start_span(
            "retrieve",
            context=parent,
            start_time=start + 1000,
            attributes={
                "openinference.span.kind": "RETRIEVER",
                "input.value": question,
                "output.value": json.dumps([_text(rng, 25) for _ in range(3)]),
            },
        )
        retrieve.end(end_time=start + 30_000_000)
        messages = [
            {"role": "system", "parts": [{"type": "text", "content": "Answer in one sentence."}]},
            {"role": "user", "parts": [{"type": "text", "content": question}]},
        ]
        llm = tracer.start_span(
            "chat",
            context=parent,
            start_time=start + 31_000_000,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.usage.input_tokens": 200 + i % 100,
                "gen_ai.usage.output_tokens": 40 + i % 30,
                "gen_ai.input.messages": json.dumps(messages),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
                ),
            },
        )
        llm.end(end_time=start + 400_000_000)
        tool = tracer.start_span(
            "calculator",
            context=parent,
            start_time=start + 401_000_000,
            attributes={
                "openinference.span.kind": "TOOL",
                "input.value": f"{i} * 7",
                "output.value": str(i * 7),
            },
        )
        if i % 25 == 0:
            try:
                raise ValueError(f"cannot evaluate {_text(rng, 5)}")
            except ValueError as exc:
                tool.record_exception(exc)
                tool.set_status(Status(StatusCode.ERROR, f"ValueError: {exc}"))
        tool.end(end_time=start + 402_000_000)
        score = rng.random()
        root.add_event(
            "gen_ai.evaluation.result",
            {
                "gen_ai.evaluation.name": "judge",
                "gen_ai.evaluation.score.value": score,
                "gen_ai.evaluation.score.label": "pass" if score >= 0.5 else "fail",
                "gen_ai.evaluation.explanation": _text(rng, 15),
                "tracesim.evaluation.passed": score >= 0.5,
                "tracesim.evaluation.threshold": 0.5,
                "tracesim.evaluation.status": "ok",
            },
        )
        root.end(end_time=start + 500_000_000)
        if (i + 1) % 100 == 0:
            exporter.export(memory.get_finished_spans())
            memory.clear()
    exporter.export(memory.get_finished_spans())
    exporter.shutdown()
    provider.shutdown()
    return TRACES * 4


def time_report(path: Path, tree: Path, runs: int) -> list[tuple[float, float]]:
    """(wall-clock, CPU) seconds of ``runs`` fresh ``tracesim report`` processes on ``path``.

    CPU time (user + system of the process) is the steadier figure on a machine others share.
    """
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "120"}
    seconds = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "tracesim", "report", str(path)],
            cwd=tree,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        wall = time.perf_counter() - began
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        seconds.append((wall, cpu))
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=Path("/tmp/tracesim-bench-report.jsonl"))
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not args.file.exists():
        count = write_file(args.file)
        print(f"wrote {count:,} spans to {args.file} ({args.file.stat().st_size / 1e6:.0f} MB)")
    seconds = time_report(args.file, args.tree, args.runs)
    walls, cpus = [w for w, _ in seconds], [c for _, c in seconds]
    print(
        f"{args.tree}: tracesim report, wall median {statistics.median(walls):.2f} s "
        f"({', '.join(f'{w:.2f}' for w in walls)}); CPU median {statistics.median(cpus):.2f} s "
        f"({', '.join(f'{c:.2f}' for c in cpus)})"
    )


if __name__ == "__main__":
    main()
