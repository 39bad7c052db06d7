"""``tracesim show``: print the trace trees of JSON-lines trace files, filtered.

Each trace starts with a line holding its id (what ``--trace`` takes) and its start time; the
output ends with how many traces were shown of how many read, and by which filters, then how
many spans the export queue dropped when the files record any (``tracesim.export.dropped``
spans are that record, not traces). Filters
keep whole traces: ``--errors``, ``--failed [EVALUATOR]``, ``--name GLOB``, ``--since WHEN``,
``--trace ID``; ``--last N`` then keeps the N that started last. Error spans show their error
type, exception message and the last frames of their stack trace; ``--attributes`` lists the
attributes a user set on each span. A run evaluator's failed result (``tool_names``,
``trajectory_match``...) lists the run's steps at the end of its trace: kind, name, tool
arguments, error, duration, tokens; at most ``--steps N`` (20), then how many more.

A line that cannot be read is skipped with a warning naming the file and line, and the rest is
shown (exit 0). Names and values are printed with control characters made visible, so a trace
file cannot steer the terminal. LLM calls show their model, tokens and cost, priced with the
``prices`` of ``tracesim.yaml`` (or ``--config``) over the shipped table. Exit 2 for usage
errors: a file that does not exist or cannot be read, a configuration file with a bad value, a
``--failed`` evaluator that has no result in the files.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracesim._pricing import PriceTable
    from tracesim.tracefile import SpanRecord

__all__ = [
    "Since",
    "add_arguments",
    "add_config_argument",
    "configured_prices",
    "positive_int",
    "run",
    "since",
    "summary_line",
]

_UNITS_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", re.IGNORECASE)


def positive_int(raw: str) -> int:
    """An argparse type: a whole number >= 1 (``--last``, ``--width``, ``report --top``)."""
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {raw!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {value}")
    return value


@dataclass(frozen=True)
class Since:
    """The ``--since`` value: a duration before the newest span read, or a fixed time.

    Example:
        >>> since("15m").cutoff_ns(newest_ns=3600 * 10**9) == 45 * 60 * 10**9
        True
    """

    text: str
    seconds: float | None = None
    at_ns: int | None = None

    def cutoff_ns(self, newest_ns: int) -> int:
        """The earliest start time kept, in nanoseconds since the epoch."""
        if self.at_ns is not None:
            return self.at_ns
        return newest_ns - round((self.seconds or 0.0) * 1e9)


def since(raw: str) -> Since:
    """An argparse type: ``15m``, ``2h``, ``1d`` (also ``s``, ``w``, decimals) or an ISO 8601 time.

    A time without a zone is UTC; ``Z`` is accepted.

    Example:
        >>> since("1.5h").seconds, since("2026-09-21T14:00:00Z").at_ns
        (5400.0, 1789999200000000000)
    """
    match = _DURATION.fullmatch(raw)
    if match:
        return Since(raw, seconds=float(match[1]) * _UNITS_S[match[2].lower()])
    text = raw.strip()
    try:
        # Python 3.10's fromisoformat does not read "Z"; the same instant written as +00:00.
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "zZ" and text else text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a duration like 15m, 2h or 1d, or a time like 2026-09-21T14:00:00Z, got {raw!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    delta = moment - epoch
    return Since(raw, at_ns=(delta.days * 86400 + delta.seconds) * 10**9 + delta.microseconds * 1000)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``tracesim show``."""
    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="trace files (default: the jsonl_path configured here, .tracesim/traces.jsonl)",
    )
    filters = parser.add_argument_group("filters (each keeps whole traces; together, traces that pass all)")
    filters.add_argument(
        "--trace", metavar="TRACE_ID", help="the trace whose id starts with TRACE_ID (any case)"
    )
    filters.add_argument("--errors", action="store_true", help="traces with a span whose status is ERROR")
    filters.add_argument(
        "--failed",
        nargs="?",
        const="",
        metavar="EVALUATOR",
        help="traces with a failed or errored evaluation result (of EVALUATOR when named)",
    )
    filters.add_argument(
        "--name",
        action="append",
        default=[],
        metavar="GLOB",
        help="traces with a span whose name matches GLOB (e.g. 'calc*'); repeatable: any of them",
    )
    filters.add_argument(
        "--since",
        type=since,
        metavar="WHEN",
        help="traces that started at most this long before the newest span read (15m, 2h, 1d), "
        "or at or after this time (2026-09-21T14:00:00Z)",
    )
    filters.add_argument(
        "--last", type=positive_int, metavar="N", help="of the traces that pass, the N that started last"
    )
    parser.add_argument(
        "--no-details", action="store_true", help="one line per span: no inputs, outputs, scores, errors"
    )
    parser.add_argument(
        "-v",
        "--attributes",
        action="store_true",
        help="also list each span's other attributes (the ones a user or an instrumentation set)",
    )
    parser.add_argument(
        "--width", type=positive_int, default=100, help="characters shown of each value (default 100)"
    )
    parser.add_argument(
        "--steps",
        type=positive_int,
        default=None,
        metavar="N",
        help="steps listed of each run a run evaluator failed (tool_names, trajectory_match...; default 20)",
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
    """Print the trees of the traces that pass the filters; exit 2 for usage errors."""
    import sys

    from tracesim._outputs import echo
    from tracesim._report import SHOW_STEPS, failed_runs, redacted_spans
    from tracesim.tracefile import render_trees
    from tracesim.tracefile._trees import by_trace, export_drops_line, without_export_drops

    prices, problem = configured_prices(args.config)
    if problem is not None:
        return _usage_error(problem)
    loaded = _load(args)
    if isinstance(loaded, str):
        return _usage_error(loaded)
    # The export queue's records of the spans it dropped are not traces: one line at the end.
    spans, dropped = without_export_drops(loaded)
    if not loaded:
        echo("no spans", file=sys.stderr)
        return 0
    evaluations = list(_evaluations(spans)) if args.failed is not None else []
    if args.failed and all(name != args.failed for _, name, _ in evaluations):
        found = ", ".join(sorted({name for _, name, _ in evaluations})) or "none"
        return _usage_error(
            f"--failed {args.failed}: no result of this evaluator in the files (found: {found})"
        )
    traces = by_trace(spans)
    tests = _filters(args, spans, evaluations)
    kept = [members for _, members in traces if all(keep(members) for keep in tests)]
    left_out = max(len(kept) - args.last, 0) if args.last else 0
    kept = kept[left_out:]  # the traces that started last
    text = ""
    if kept:
        # Redacted before they are drawn: a secret cut at --width would not be found in the text.
        shown = redacted_spans([span for members in kept for span in members])
        details = not args.no_details
        text = render_trees(
            shown,
            details=details,
            width=args.width,
            attributes=args.attributes,
            prices=prices,
            price_note=True,
            headers=True,
        )
        if details:
            runs = failed_runs(shown, steps=args.steps or SHOW_STEPS, width=args.width, prices=prices)
            text = _with_runs(text, [members[0].trace_id for members in kept], runs)
        text += "\n"  # a blank line, as between trees: the summary reads as the end of the output
    text += summary_line(len(kept), len(traces), _described(args, spans), left_out) + "\n"
    if dropped:
        text += export_drops_line(dropped) + "\n"
    return _write(text)


def _with_runs(text: str, trace_ids: Sequence[str], runs: Mapping[str, list[str]]) -> str:
    """``text`` (`render_trees` with headers) with each trace's failed runs at the end of its block.

    `render_trees` ends each trace's block with an empty line, in trace order, and writes no
    other empty line before the last trace's (names and values are one visible line each).
    """
    if not runs:
        return text
    lines = text.split("\n")
    out: list[str] = []
    block = 0
    for line in lines:
        if not line and block < len(trace_ids):
            out.extend(runs.get(trace_ids[block], ()))
            block += 1
        out.append(line)
    return "\n".join(out)


def _write(text: str) -> int:
    """Write to stdout; a reader that stopped early (``tracesim show | head``) is not an error to report."""
    import os
    import sys

    from tracesim._outputs import stream

    try:
        out = stream(sys.stdout)
        out.write(text)
        out.flush()
    except BrokenPipeError:
        # As rich does for `tracesim report`: silence the flush at exit, and exit 1.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    return 0


def _load(args: argparse.Namespace) -> list[SpanRecord] | str:
    """The spans of the files named (warnings for lines skipped), or what is wrong with the files."""
    import sys
    import warnings
    from pathlib import Path

    from tracesim._outputs import echo
    from tracesim._terminal import visible
    from tracesim.tracefile import TraceFileWarning, load_spans

    files = list(args.files)
    if args.failed and Path(args.failed).is_file():
        # `show --failed traces.jsonl`: argparse gave the file to --failed; no evaluator is named so.
        files.insert(0, args.failed)
        args.failed = ""
    from tracesim.cli._where import default_trace_file, missing_file_message

    files = files or [default_trace_file()]
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        return missing_file_message(missing)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TraceFileWarning)
            spans = load_spans(files)
    except OSError as exc:
        where = str(exc.filename or ", ".join(files))  # a failed read() names no file
        return f"cannot read {where}: {exc.strerror or exc}"
    for warning in caught:
        echo(f"warning: {visible(str(warning.message))}", file=sys.stderr)
    # A span read twice (a file named twice, a batch replayed into it) is shown once, as report counts it.
    seen: set[tuple[str, str]] = set()
    unique = []
    for span in spans:
        if (span.trace_id, span.span_id) not in seen:
            seen.add((span.trace_id, span.span_id))
            unique.append(span)
    return unique


def summary_line(shown: int, total: int, filters: Sequence[str], left_out: int = 0) -> str:
    """The last line of ``tracesim show``: what was shown of what was read, and why.

    Example:
        >>> summary_line(20, 220, ["--errors", "--last 20"], left_out=15)
        'showing 20 of 220 traces (filters: --errors, --last 20; 15 earlier matching traces left out)'
    """
    text = f"showing {shown:,} of {total:,} trace{'s' * (total != 1)}"
    if filters:
        text += f" (filters: {', '.join(filters)}"
        if left_out:
            text += f"; {left_out:,} earlier matching trace{'s' * (left_out != 1)} left out"
        text += ")"
    return text


def _filters(
    args: argparse.Namespace, spans: Sequence[SpanRecord], evaluations: Sequence[tuple[str, str, bool]]
) -> list[Callable[[list[SpanRecord]], bool]]:
    """One test per filter given, each on a whole trace's spans."""
    from fnmatch import fnmatchcase

    tests: list[Callable[[list[SpanRecord]], bool]] = []
    if args.trace:
        prefix = args.trace.strip().lower()
        tests.append(lambda members: members[0].trace_id.startswith(prefix))
    if args.errors:
        tests.append(lambda members: any(s.status_code == "ERROR" for s in members))
    if args.failed is not None:
        failing = {tid for tid, name, bad in evaluations if bad and args.failed in ("", name)}
        tests.append(lambda members: members[0].trace_id in failing)
    if args.name:
        globs = list(args.name)
        tests.append(lambda members: any(fnmatchcase(s.name, g) for s in members for g in globs))
    if args.since is not None:
        cutoff = args.since.cutoff_ns(max((s.end_time_unix_nano for s in spans), default=0))
        tests.append(lambda members: members[0].start_time_unix_nano >= cutoff)
    return tests


def _described(args: argparse.Namespace, spans: Sequence[SpanRecord]) -> list[str]:
    """The filters given, as the summary line names them."""
    import shlex

    from tracesim._terminal import visible
    from tracesim.tracefile._trees import format_time

    said = []
    if args.trace:
        said.append(f"--trace {visible(args.trace)}")
    if args.errors:
        said.append("--errors")
    if args.failed is not None:
        said.append(f"--failed {visible(shlex.quote(args.failed))}" if args.failed else "--failed")
    said.extend(f"--name {visible(shlex.quote(glob))}" for glob in args.name)
    if args.since is not None and spans:
        cutoff = args.since.cutoff_ns(max(s.end_time_unix_nano for s in spans))
        said.append(f"--since {visible(args.since.text)} (from {format_time(cutoff)})")
    elif args.since is not None:  # no span read: no newest to count back from
        said.append(f"--since {visible(args.since.text)}")
    if args.last:
        said.append(f"--last {args.last}")
    return said


def _evaluations(spans: Sequence[SpanRecord]) -> Iterator[tuple[str, str, bool]]:
    """(trace id, evaluator, failed or errored) of every evaluation result in ``spans``.

    A result on a carrier span (an ``EVALUATOR`` span with one link: a late result, human
    feedback) also counts for the trace of the span it evaluates, wherever the carrier is.
    """
    from tracesim import _semconv as sc
    from tracesim._report import UNNAMED

    carrier_kind = sc.SPAN_KINDS["evaluator"][0]
    for span in spans:
        traces = {span.trace_id}
        if span.attributes.get(sc.SPAN_KIND) == carrier_kind and len(span.links) == 1:
            traces.add(span.links[0].trace_id)
        for event in span.event(sc.EVALUATION_EVENT):
            name = event.attributes.get(sc.EVALUATION_NAME)
            bad = _failed(event.attributes)
            for trace_id in traces:
                yield trace_id, name if isinstance(name, str) and name else UNNAMED, bad


def _failed(attrs: Mapping[str, Any]) -> bool:
    """A result that failed its threshold, or an evaluator that raised or timed out.

    Statuses are read as ``tracesim report`` reads them: without one, ``error.type`` marks an error.
    """
    from tracesim import _semconv as sc

    status = attrs.get(sc.EVALUATION_STATUS)
    if status not in ("ok", "skipped", "error"):
        status = "error" if sc.ERROR_TYPE in attrs else "ok"
    return status == "error" or (status == "ok" and attrs.get(sc.EVALUATION_PASSED) is False)


def _usage_error(message: str) -> int:
    import sys

    from tracesim._outputs import echo
    from tracesim._terminal import visible

    echo(f"tracesim show: {visible(message)}", file=sys.stderr)
    return 2
