"""``tracesim show``: print the trace trees of JSON-lines trace files.

A line that cannot be read is skipped with a warning naming the file and line, and the rest is
shown (exit 0). Names and values are printed with control characters made visible, so a trace
file cannot steer the terminal. LLM calls show their model, tokens and cost, priced with the
``prices`` of ``tracesim.yaml`` (or ``--config``) over the shipped table. Exit 2 for usage
errors: a file that does not exist or cannot be read, a configuration file with a bad value.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracesim._pricing import PriceTable


def positive_int(raw: str) -> int:
    """An argparse type: a whole number >= 1 (``--last``, ``--width``, ``report --top``)."""
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
    parser.add_argument("--last", type=positive_int, metavar="N", help="only the last N traces")
    parser.add_argument(
        "--no-details", action="store_true", help="one line per span: no inputs, outputs, scores"
    )
    parser.add_argument(
        "--width", type=positive_int, default=100, help="characters shown of each value (default 100)"
    )
    add_config_argument(parser)


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    """``--config FILE``: where ``prices`` come from (shared with ``tracesim report``)."""
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="configuration file whose prices: price LLM calls "
        "(default: $TRACESIM_CONFIG_FILE, else ./tracesim.yaml when it exists)",
    )


def configured_prices(config: str | None) -> tuple[PriceTable | None, str | None]:
    """The price table of the configuration, or the error message saying what to fix."""
    from tracesim._config import resolve_setting
    from tracesim._errors import ConfigError
    from tracesim._pricing import PriceTable

    try:
        return PriceTable(resolve_setting("prices", config)), None
    except ConfigError as exc:
        return None, str(exc)


def run(args: argparse.Namespace) -> int:
    """Print the trees; exit 2 when a file is missing or unreadable."""
    import sys
    import warnings
    from pathlib import Path

    from tracesim.exporters import TraceFileWarning, load_spans, render_trees
    from tracesim.exporters._safe_text import visible

    prices, problem = configured_prices(args.config)
    if problem is not None:
        print(f"tracesim show: {visible(problem)}", file=sys.stderr)
        return 2
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
    sys.stdout.write(
        render_trees(spans, details=not args.no_details, width=args.width, prices=prices, price_note=True)
    )
    return 0
