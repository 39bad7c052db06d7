"""``tracesim demo``: run the bundled example agent, score it online, and show its traces."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``tracesim demo``."""
    parser.add_argument(
        "--exporter",
        action="append",
        dest="exporters",
        choices=["jsonl", "console", "otlp"],
        help="where spans go (repeatable); default: the configured exporters, else the local file",
    )
    parser.add_argument("--path", help="local trace file (default .tracesim/traces.jsonl)")
    parser.add_argument("--quiet", action="store_true", help="do not print the trace trees")


def run(args: argparse.Namespace) -> int:
    """Run the demo agent over its questions, wait for the scores, and print what was recorded."""
    import os
    import time

    import tracesim
    from tracesim import _demo_agent, _runtime
    from tracesim._outputs import echo
    from tracesim.tracefile import load_spans, render_trees

    tracesim.configure(service_name="tracesim-demo", exporters=args.exporters, jsonl_path=args.path)
    runtime = _runtime.current
    assert runtime is not None
    settings = runtime.settings
    golden = os.path.join(os.path.dirname(os.path.abspath(settings.jsonl_path)), "demo-golden.jsonl")
    os.makedirs(os.path.dirname(golden), exist_ok=True)
    _demo_agent.write_golden(golden)
    agent = _demo_agent.scored_agent(golden)

    started = time.perf_counter()
    pairs = _demo_agent.run_demo(agent)
    answered = time.perf_counter() - started
    tracesim.force_flush()
    scored = time.perf_counter() - started

    width = max(len(q) for q, _ in pairs)
    for question, reply in pairs:
        echo(f"{question:<{width}}  ->  {reply}")
    stats = tracesim.scoring_stats()
    echo(
        f"\n{len(pairs)} questions answered in {answered * 1e3:.1f} ms; {stats.results} scores computed "
        f"in the background, all in {scored * 1e3:.1f} ms (golden answers: {golden})"
    )
    if "jsonl" in settings.exporters:
        path = os.path.abspath(settings.jsonl_path)
        spans = [s for s in load_spans(path) if s.service_name == "tracesim-demo"]
        roots = [s for s in spans if s.parent_span_id is None]
        echo(f"{len(spans)} spans in {len(roots)} traces written to {path}")
        if not args.quiet:
            last = {s.trace_id for s in roots[-len(pairs) :]}
            echo("\n" + render_trees([s for s in spans if s.trace_id in last]))
            _print_scores(path)
        echo(f"See them again with: tracesim show {path}")
        echo(f"Summarise them with: tracesim report {path}")
    tracesim.shutdown()
    return 0


def _print_scores(path: str) -> None:
    from rich.console import Console

    from tracesim._outputs import stream
    from tracesim._report import print_report, read_report

    print_report(read_report([path], group_by=None), Console(file=stream()))
