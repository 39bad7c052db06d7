"""Render spans as compact trees with their inputs, outputs and scores.

Used by `ConsoleExporter` and by ``tracesim show``; works on `SpanRecord`, so it renders a
live batch and a file read back in exactly the same way. Every string taken from a span (names,
values, status messages, evaluator names and labels, exception messages and stack frames,
attributes) goes through `visible`, so a trace file cannot move the cursor, retitle the window
or recolour the terminal it is shown in. Everything taken from a span is bounded: values are cut
at ``width`` characters, a stack trace shows at most `STACK_FRAMES` frames, a span at most
`MAX_ATTRIBUTES` attributes.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from opentelemetry.semconv.attributes.exception_attributes import (
    EXCEPTION_MESSAGE,
    EXCEPTION_STACKTRACE,
    EXCEPTION_TYPE,
)

from tracesim import _pricing
from tracesim import _semconv as sc
from tracesim._foreign_spans import span_input, span_output
from tracesim._pricing import PriceTable, Usage, format_usd, price_hint, read_usage
from tracesim._terminal import visible
from tracesim.tracefile._span_records import SpanRecord

__all__ = [
    "MAX_ATTRIBUTES",
    "MAX_TREE_DEPTH",
    "STACK_FRAMES",
    "build_forest",
    "by_trace",
    "export_drops",
    "export_drops_line",
    "format_time",
    "render_trees",
    "without_export_drops",
]

_PREVIEW = 100
MAX_TREE_DEPTH = 100
"""Levels drawn under one root; a deeper parent chain (only in a damaged file) continues as a new tree."""
STACK_FRAMES = 3
"""Frames of an error span's stack trace shown: the ones nearest to where the exception was raised."""
MAX_ATTRIBUTES = 20
"""Attributes listed per span with ``attributes=True``; the rest are counted."""

_EXCEPTION_EVENT = "exception"  # the OpenTelemetry event name of Span.record_exception
# Attributes the tree shows in its own way, or that only tracesim reads: not repeated as attributes.
_SHOWN = frozenset(
    {
        sc.SPAN_KIND,
        sc.GEN_AI_OPERATION_NAME,  # the kind, in GenAI words
        sc.INPUT_VALUE,
        sc.INPUT_MIME_TYPE,
        sc.OUTPUT_VALUE,
        sc.OUTPUT_MIME_TYPE,
        sc.PROJECT_NAME,
    }
)
# tracesim's own attributes, and the messages other instrumentations record, previewed as in/out
# (see tracesim._foreign_spans).
_HIDDEN_PREFIXES = (
    "tracesim.",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.prompt.",
    "gen_ai.completion.",
    "llm.input_messages.",
    "llm.output_messages.",
)
_USAGE_SHOWN = frozenset(
    {
        *_pricing.INPUT_KEYS,
        _pricing.GEN_AI_OUTPUT,
        _pricing.LLM_TOKENS_COMPLETION,
        _pricing.OPENLLMETRY_OUTPUT,
        _pricing.GEN_AI_CACHE_READ,
        _pricing.LLM_TOKENS_CACHE_READ,
        _pricing.OPENLLMETRY_CACHE_READ,
        _pricing.LLM_TOKENS_TOTAL,
        _pricing.GEN_AI_RESPONSE_MODEL,
        _pricing.GEN_AI_REQUEST_MODEL,
        _pricing.LLM_MODEL_NAME,
        _pricing.LLM_COST_PROMPT,
        _pricing.LLM_COST_COMPLETION,
        _pricing.LLM_COST_TOTAL,
    }
)
_PYTHON_FRAME = re.compile(r'\s*File "(?P<file>.*)", line (?P<line>\d+)(?:, in (?P<func>.*))?\s*$')
# tracesim's decorator is a frame of every traced call; its private modules are never the user's code.
_OWN_FRAME = re.compile(r"[/\\]tracesim[/\\]_")
_UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def build_forest(spans: Iterable[SpanRecord]) -> list[tuple[SpanRecord, list[Any]]]:
    """Group spans into trees: ``[(root, [(child, [...]), ...]), ...]``, roots in start order.

    A span whose parent is not among ``spans`` is treated as a root, so partial files and
    traces that continue in another service still render. Damaged files render too: spans
    whose parents form a cycle, and the part of a parent chain deeper than `MAX_TREE_DEPTH`,
    start trees of their own instead of being lost or recursing without end.

    Example:
        >>> from tracesim.tracefile import SpanRecord
        >>> a = SpanRecord("t", "a", "b", "a", "INTERNAL", 0, 1, {})
        >>> b = SpanRecord("t", "b", "a", "b", "INTERNAL", 0, 1, {})  # a and b: each other's parent
        >>> [(root.name, [kid.name for kid, _ in kids]) for root, kids in build_forest([a, b])]
        [('a', ['b'])]
    """
    spans = list(spans)
    known = {s.span_id for s in spans}
    children: dict[str, list[SpanRecord]] = defaultdict(list)
    roots: list[SpanRecord] = []
    for span in spans:
        if span.parent_span_id and span.parent_span_id in known:
            children[span.parent_span_id].append(span)
        else:
            roots.append(span)
    placed: set[int] = set()

    def node(span: SpanRecord, depth: int) -> tuple[SpanRecord, list[Any]]:
        placed.add(id(span))
        kids = sorted(children.get(span.span_id, []), key=lambda s: s.start_time_unix_nano)
        if depth >= MAX_TREE_DEPTH:
            return span, []  # the rest of the chain becomes trees of its own, below
        return span, [node(k, depth + 1) for k in kids if id(k) not in placed]

    by_start = sorted(spans, key=lambda s: s.start_time_unix_nano)
    forest = [node(r, 0) for r in sorted(roots, key=lambda s: s.start_time_unix_nano)]
    for span in by_start:  # spans not reached from a root: in a cycle, or too deep
        if id(span) not in placed:
            forest.append(node(span, 0))
    return forest


def export_drops(span: SpanRecord) -> int | None:
    """The spans an export queue dropped, when ``span`` is its record of them; else None.

    `tracesim._export_queue` writes such records (``tracesim.export.dropped``) into the trace
    itself. They are not the application's spans: readers count them apart. A span of that name
    without a whole count is the application's own.

    Example:
        >>> from tracesim.tracefile import SpanRecord
        >>> attributes = {"tracesim.export.dropped_spans": 12}
        >>> export_drops(SpanRecord("t", "s", None, "tracesim.export.dropped", "INTERNAL", 0, 1, attributes))
        12
    """
    if span.name != sc.EXPORT_DROPPED:
        return None
    count = span.attributes.get(sc.EXPORT_DROPPED_SPANS)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        return None
    return count


def without_export_drops(spans: Iterable[SpanRecord]) -> tuple[list[SpanRecord], int]:
    """The application's spans, and the sum of the export queue's records of drops (`export_drops`)."""
    kept = []
    dropped = 0
    for span in spans:
        count = export_drops(span)
        if count is None:
            kept.append(span)
        else:
            dropped += count
    return kept, dropped


def export_drops_line(dropped: int) -> str:
    """The note that stands for the records of drops where traces are shown.

    Example:
        >>> export_drops_line(1)
        '1 span was dropped at the export queue (see export_queue_size)'
    """
    verb = "was" if dropped == 1 else "were"
    return (
        f"{dropped:,} span{'s' * (dropped != 1)} {verb} dropped at the export queue (see export_queue_size)"
    )


def render_trees(
    spans: Iterable[SpanRecord],
    *,
    details: bool = True,
    width: int = _PREVIEW,
    prices: PriceTable | None = None,
    price_note: bool = False,
    headers: bool = False,
    attributes: bool = False,
) -> str:
    """Render spans as text trees, one block per trace root (per trace with ``headers``).

    An LLM call's line shows its model, input→output tokens and cost: the span's own
    ``llm.cost.total``, else priced with ``prices`` (default: the shipped table), ``$—`` when
    the model has no price. A block with LLM calls ends with their total. ``price_note`` adds a
    last line naming the models without a price and how to add one.

    With ``details``, a span's lines show its input, output, expected output and scores, and an
    error span its error type, exception message and the last `STACK_FRAMES` frames of its
    stack trace. ``headers`` starts each trace with a line holding its id and start time (traces
    in start order); ``attributes`` lists each span's other attributes, the ones a user set.

    The export queue's records of spans it dropped (`export_drops`) are not drawn as traces:
    the text ends with one line saying how many spans were dropped (`export_drops_line`).

    Example:
        >>> from tracesim.tracefile import SpanRecord
        >>> llm = {"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 1200,
        ...        "gen_ai.usage.output_tokens": 80, "user.id": "u-7"}
        >>> print(render_trees([SpanRecord("t", "a", None, "chat", "CLIENT", 0, 10**6, llm)]))
        chat  1.0 ms  gpt-4o-mini 1,200→80 tokens  $0.00023
        LLM total: 1 call  1,200→80 tokens  $0.00023
        <BLANKLINE>
        >>> span = SpanRecord("4bf92f3577b34da6a3ce929d0e0e4736", "a", None, "chat", "CLIENT", 0, 10**6, llm)
        >>> print(render_trees([span], headers=True, attributes=True, details=False))
        trace 4bf92f3577b34da6a3ce929d0e0e4736  1970-01-01T00:00:00.000Z
        chat  1.0 ms  gpt-4o-mini 1,200→80 tokens  $0.00023
           user.id = u-7
        LLM total: 1 call  1,200→80 tokens  $0.00023
        <BLANKLINE>
    """
    spans, dropped = without_export_drops(spans)
    render = _Render(details, width, prices if prices is not None else PriceTable(), attributes)
    blocks: list[tuple[str | None, list[tuple[SpanRecord, list[Any]]]]]
    if headers:
        blocks = [
            (f"trace {visible(tid)}  {format_time(members[0].start_time_unix_nano)}", build_forest(members))
            for tid, members in by_trace(spans)
        ]
    else:
        blocks = [(None, [root]) for root in build_forest(spans)]
    for header, forest in blocks:
        render.calls.clear()
        if header is not None:
            render.out.append(header)
        for root, kids in forest:
            render.tree(root, kids, "", "")
        if render.calls:
            render.out.append(render.total_line())
        render.out.append("")
    if price_note and render.unpriced:
        render.out.extend([visible(price_hint(sorted(render.unpriced))), ""])
    if dropped:
        render.out.extend([export_drops_line(dropped), ""])
    return "\n".join(render.out)


def by_trace(spans: Iterable[SpanRecord]) -> list[tuple[str, list[SpanRecord]]]:
    """Spans grouped by trace, each trace's spans in start order, traces by their first start.

    Traces that start at the same time keep the order in which they were first seen.

    Example:
        >>> from tracesim.tracefile import SpanRecord
        >>> spans = [SpanRecord(t, s, None, s, "INTERNAL", start, start + 1, {})
        ...          for t, s, start in [("t1", "a", 5), ("t2", "b", 3), ("t1", "c", 4)]]
        >>> [(tid, [s.name for s in members]) for tid, members in by_trace(spans)]
        [('t2', ['b']), ('t1', ['c', 'a'])]
    """
    traces: dict[str, list[SpanRecord]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    for members in traces.values():
        members.sort(key=lambda s: s.start_time_unix_nano)  # stable: file order among equal starts
    return sorted(traces.items(), key=lambda item: item[1][0].start_time_unix_nano)


def format_time(unix_nano: int) -> str:
    """A time as UTC ISO 8601 with milliseconds, as ``tracesim show`` prints it.

    Example:
        >>> format_time(1_790_000_000_123_456_789)
        '2026-09-21T14:13:20.123Z'
    """
    seconds, nanos = divmod(unix_nano, 10**9)
    # Whole seconds through timedelta: a float timestamp would round the milliseconds of late dates.
    moment = _UNIX_EPOCH + timedelta(seconds=seconds)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{nanos // 10**6:03d}Z"


@dataclass
class _Render:
    details: bool
    width: int
    table: PriceTable
    attributes: bool = False
    out: list[str] = field(default_factory=list)
    calls: list[tuple[Usage, float | None]] = field(default_factory=list)  # of the current block
    unpriced: set[str] = field(default_factory=set)

    def tree(self, span: SpanRecord, kids: Sequence[Any], head: str, body: str) -> None:
        self.out.append(head + self.headline(span))
        lines = _detail_lines(span, self.width, [kid for kid, _ in kids]) if self.details else []
        if self.attributes:
            lines += _attribute_lines(span, self.width, errors_shown=self.details)
        for line in lines:
            self.out.append(body + ("│  " if kids else "   ") + line)
        for i, (child, grandkids) in enumerate(kids):
            last = i == len(kids) - 1
            self.tree(child, grandkids, body + ("└─ " if last else "├─ "), body + ("   " if last else "│  "))

    def headline(self, span: SpanRecord) -> str:
        kind = span.attributes.get(sc.SPAN_KIND)
        parts = [visible(span.name)]
        if isinstance(kind, str):
            parts.append(visible(kind))
        parts.append(_format_duration(span.duration_s))
        usage = read_usage(span.attributes)
        if usage is not None:
            parts.append(self.usage(usage))
        if span.status_code == "ERROR":
            parts.append(f"ERROR {visible(span.status_message)}".rstrip())
        return "  ".join(parts)

    def usage(self, usage: Usage) -> str:
        """``gpt-4o-mini 24→6 tokens  $0.0000072`` for one LLM call."""
        cost = usage.priced(self.table)
        self.calls.append((usage, cost))
        if cost is None:
            self.unpriced.add(usage.model or "(no model)")
        counts = _tokens(usage.input_tokens, usage.output_tokens)
        model = f"{visible(usage.model)} " if usage.model else ""
        return f"{model}{counts}  {format_usd(cost, '$—')}"

    def total_line(self) -> str:
        """``LLM total: 3 calls  2,400→180 tokens  $0.00046`` for the current block."""
        tokens_in = sum(u.input_tokens or 0 for u, _ in self.calls)
        tokens_out = sum(u.output_tokens or 0 for u, _ in self.calls)
        costs = [c for _, c in self.calls if c is not None]
        n = len(self.calls)
        cost = format_usd(math.fsum(costs) if costs else None, "$—")
        if costs and len(costs) < n:
            cost += f" for {len(costs)} of {n} calls (no price for the others)"
        return f"LLM total: {n} call{'s' * (n != 1)}  {_tokens(tokens_in, tokens_out)}  {cost}"


def _tokens(tokens_in: int | None, tokens_out: int | None) -> str:
    shown = [f"{n:,}" if n is not None else "?" for n in (tokens_in, tokens_out)]
    return f"{shown[0]}→{shown[1]} tokens"


def _detail_lines(span: SpanRecord, width: int, kids: Sequence[SpanRecord] = ()) -> list[str]:
    attrs = span.attributes
    lines = []
    # An LLM call another instrumentation traced shows its text, read by its conventions (the last
    # user message, the answer), not the JSON of its messages.
    for label, value in (
        (
            "in",
            attrs[sc.INPUT_VALUE]
            if sc.INPUT_VALUE in attrs and read_usage(attrs) is None
            else span_input(attrs),
        ),
        (
            "out",
            attrs[sc.OUTPUT_VALUE]
            if sc.OUTPUT_VALUE in attrs and read_usage(attrs) is None
            else span_output(attrs),
        ),
        ("expected", attrs.get(sc.EXPECTED_VALUE)),
    ):
        if value is not None:
            lines.append(f"{label}: {_preview(value, width)}")
    # By name: results land in the order their evaluators finish, which varies run to run.
    events = sorted(span.event(sc.EVALUATION_EVENT), key=lambda e: str(e.attributes.get(sc.EVALUATION_NAME)))
    scores = [_format_result(e.attributes) for e in events]
    if scores:
        lines.append("scores: " + "  ".join(scores))
    if span.status_code == "ERROR" or sc.ERROR_TYPE in attrs:
        lines.extend(_error_lines(span, width, kids))
    return lines


def _error_lines(span: SpanRecord, width: int, kids: Sequence[SpanRecord]) -> list[str]:
    """The error type and exception message, unless the status already says them, and the stack.

    An exception that passed up through traced calls is recorded on each of their spans with
    the same innermost frames; only the deepest span shows them, its ancestors point down to it.
    """
    exception = _exception(span)
    said = ": ".join(
        _text(part)
        for part in (
            span.attributes.get(sc.ERROR_TYPE) or exception.get(EXCEPTION_TYPE),
            exception.get(EXCEPTION_MESSAGE),
        )
        if part not in (None, "")
    )
    lines = []
    # tracesim and the OpenTelemetry SDK write the status as "ValueError: message": no need to repeat it.
    if said and said != _text(span.status_message):
        lines.append(f"error: {_cut(said, width)}")
    frames = _stack_lines(exception.get(EXCEPTION_STACKTRACE), width)
    below = next((kid for kid in kids if frames and _raised_below(frames, kid, width)), None)
    if below is not None:
        lines.append(f"{frames[0].split()[0].rstrip(':')}: as in {visible(below.name)} below")
    else:
        lines.extend(frames)
    return lines


def _raised_below(frames: list[str], kid: SpanRecord, width: int) -> bool:
    """Whether ``kid`` shows the same innermost frames: the exception passed up from it."""
    below = _stack_lines(_exception(kid).get(EXCEPTION_STACKTRACE), width)[1:]
    return bool(below) and frames[-len(below) :] == below


def _exception(span: SpanRecord) -> Mapping[str, Any]:
    """The attributes of the span's last exception event (what ended it), or nothing."""
    exceptions = span.event(_EXCEPTION_EVENT)
    return exceptions[-1].attributes if exceptions else {}


def _stack_lines(stack: Any, width: int) -> list[str]:
    """A title and the `STACK_FRAMES` frames of a stack trace nearest to where the exception was raised.

    Python writes the innermost frame last, and a chained exception's own traceback last, so
    those frames are the last ones of the last traceback, leaving out tracesim's own frames.
    Java, JavaScript and .NET write ``at ...`` lines innermost first. Other formats show their
    last lines.
    """
    if not isinstance(stack, str) or not stack.strip():
        return []
    lines = stack.split("\n")  # not splitlines(): a \r or \x1c inside a frame's text is not a new line
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    lines = lines[starts[-1] :] if starts else lines
    python = [
        (i, m)
        for i, line in enumerate(lines)
        if (m := _PYTHON_FRAME.match(line)) and not _OWN_FRAME.search(m["file"])
    ]
    if python:
        shown = []
        for i, match in python[-STACK_FRAMES:]:
            shown.append("  " + _frame(match, width - 2))
            code = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if code and lines[i + 1].startswith("    ") and not _PYTHON_FRAME.match(lines[i + 1]):
                shown.append("    " + _cut(_text(code), width - 4))
        return [_stack_title("traceback", "last", STACK_FRAMES, len(python), "frames"), *shown]
    calls = [line.strip() for line in lines if line.strip().startswith("at ")]
    if calls:
        title = _stack_title("stack", "first", STACK_FRAMES, len(calls), "frames")
        return [title, *("  " + _cut(_text(c), width - 2) for c in calls[:STACK_FRAMES])]
    rest = [line.strip() for line in lines if line.strip()]
    title = _stack_title("stack", "last", STACK_FRAMES, len(rest), "lines")
    return [title, *("  " + _cut(_text(r), width - 2) for r in rest[-STACK_FRAMES:])]


def _stack_title(name: str, which: str, limit: int, count: int, unit: str) -> str:
    return f"{name}:" if count <= limit else f"{name} ({which} {limit} of {count:,} {unit}):"


def _frame(match: re.Match[str], width: int) -> str:
    """``File "…/pkg/mod.py", line 12, in f``: a path too long loses whole directories from its start."""
    tail = f", line {match['line']}" + (f", in {_text(match['func'])}" if match["func"] is not None else "")
    path = _text(match["file"])
    room = width - len(tail) - len('File ""') - 1  # 1: the "…"
    if len(path) > room + 1:
        kept = path[-max(room, 1) :]
        boundary = max(kept.find("/"), kept.find("\\"))
        path = "…" + (kept[boundary:] if boundary > 0 else kept)
    return _cut(f'File "{path}"{tail}', width)


def _attribute_lines(span: SpanRecord, width: int, *, errors_shown: bool) -> list[str]:
    """``key = value`` for the attributes a user or an instrumentation set, at most `MAX_ATTRIBUTES`."""
    attrs = span.attributes
    hidden = set(_SHOWN)
    if read_usage(attrs) is not None:
        hidden |= _USAGE_SHOWN  # on the call's line: model, tokens, cost
    if errors_shown:
        hidden.add(sc.ERROR_TYPE)
    for name_key in (sc.GEN_AI_AGENT_NAME, sc.GEN_AI_TOOL_NAME):
        if attrs.get(name_key) == span.name:  # tracesim's kind="agent" names the agent after the span
            hidden.add(name_key)
    keys = sorted(k for k in attrs if k not in hidden and not k.startswith(_HIDDEN_PREFIXES))
    lines = [f"{_cut(visible(k), width)} = {_preview(attrs[k], width)}" for k in keys[:MAX_ATTRIBUTES]]
    if len(keys) > MAX_ATTRIBUTES:
        lines.append(f"… {len(keys) - MAX_ATTRIBUTES} more attributes")
    return lines


def _format_result(attrs: Mapping[str, Any]) -> str:
    name = _text(attrs.get(sc.EVALUATION_NAME, "?"))
    if sc.ERROR_TYPE in attrs:
        return f"! {name} error ({_text(attrs[sc.ERROR_TYPE])})"
    if attrs.get(sc.EVALUATION_STATUS) == "skipped":
        return f"· {name} skipped"
    score = attrs.get(sc.EVALUATION_SCORE_VALUE)
    label = attrs.get(sc.EVALUATION_SCORE_LABEL)
    passed = attrs.get(sc.EVALUATION_PASSED)
    mark = "✓" if passed is True else "✗" if passed is False else "·"
    text = f"{mark} {name}"
    if isinstance(score, (int, float)):
        text += f" {score:.3g}"
    if label:
        text += f" {_text(label)}"
    return text


def _text(value: Any) -> str:
    """Any attribute value as one visible line of text."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, bytes):
        text = value.hex()
    else:
        # allow_nan: an infinite double is a legal attribute value; shown as Infinity.
        text = json.dumps(value, ensure_ascii=False, default=repr)
    return visible(" ".join(text.split()))


def _preview(value: Any, width: int) -> str:
    return _cut(_text(value), width)


def _cut(text: str, width: int) -> str:
    width = max(width, 1)
    return text if len(text) <= width else text[: width - 1] + "…"


def _format_duration(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"
