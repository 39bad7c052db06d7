"""``tracesim demo``: run the bundled example agent and write its traces."""

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
    """Run the demo agent over its questions, flush, and print what was recorded."""
    import os

    import tracesim
    from tracesim import _demo, _runtime
    from tracesim.exporters import load_spans, render_trees

    tracesim.configure(service_name="tracesim-demo", exporters=args.exporters, jsonl_path=args.path)
    runtime = _runtime.current
    assert runtime is not None
    pairs = _demo.run_demo()
    tracesim.force_flush()
    width = max(len(q) for q, _ in pairs)
    for question, reply in pairs:
        print(f"{question:<{width}}  ->  {reply}")
    if "jsonl" in runtime.settings.exporters:
        path = os.path.abspath(runtime.settings.jsonl_path)
        spans = load_spans(path)
        roots = sum(1 for s in spans if s.parent_span_id is None)
        print(f"\n{len(pairs)} questions answered; {len(spans)} spans in {roots} traces written to {path}")
        if not args.quiet:
            print("\n" + render_trees([s for s in spans if s.service_name == "tracesim-demo"][-200:]))
        print(f"See them again with: tracesim show {path}")
    tracesim.shutdown()
    return 0
