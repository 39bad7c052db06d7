"""``tracesim show``: print the trace trees of JSON-lines trace files.

A line that cannot be read is skipped with a warning naming the file and line, and the rest is
shown (exit 0). Names and values are printed with control characters made visible, so a trace
file cannot steer the terminal. Exit 2 for usage errors: a file that does not exist or cannot
be read.
"""

from __future__ import annotations

import argparse


def _positive(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {raw!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``tracesim show``."""
    parser.add_argument(
        "files", nargs="*", metavar="FILE", help="trace files (default .tracesim/traces.jsonl)"
    )
    parser.add_argument("--trace", metavar="TRACE_ID", help="only this trace (a prefix is enough)")
    parser.add_argument("--last", type=_positive, metavar="N", help="only the last N traces")
    parser.add_argument(
        "--no-details", action="store_true", help="one line per span: no inputs, outputs, scores"
    )
    parser.add_argument(
        "--width", type=_positive, default=100, help="characters shown of each value (default 100)"
    )


def run(args: argparse.Namespace) -> int:
    """Print the trees; exit 2 when a file is missing or unreadable."""
    import sys
    import warnings
    from pathlib import Path

    from tracesim.exporters import TraceFileWarning, load_spans, render_trees
    from tracesim.exporters._safe_text import visible

    files = args.files or [".tracesim/traces.jsonl"]
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        print(f"tracesim show: no such file: {visible(', '.join(missing))}", file=sys.stderr)
        return 2
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TraceFileWarning)
            spans = load_spans(files)
    except OSError as exc:
        where = visible(str(exc.filename or ", ".join(files)))  # a failed read() names no file
        print(f"tracesim show: cannot read {where}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    for warning in caught:
        print(f"warning: {visible(str(warning.message))}", file=sys.stderr)
    if args.trace:
        spans = [s for s in spans if s.trace_id.startswith(args.trace.lower())]
    if args.last:
        order: dict[str, int] = {}
        for s in spans:
            order.setdefault(s.trace_id, len(order))
        keep = set(sorted(order, key=order.__getitem__)[-args.last :])
        spans = [s for s in spans if s.trace_id in keep]
    if not spans:
        print("no spans", file=sys.stderr)
        return 0
    sys.stdout.write(render_trees(spans, details=not args.no_details, width=args.width))
    return 0
