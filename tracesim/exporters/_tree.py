"""Render spans as compact trees with their inputs, outputs and scores.

Used by `ConsoleExporter` and by ``tracesim show``; works on `SpanRecord`, so it renders a
live batch and a file read back in exactly the same way. Every string taken from a span (names,
values, status messages, evaluator names and labels) goes through `visible`, so a trace file
cannot move the cursor, retitle the window or recolour the terminal it is shown in.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracesim import _semconv as sc
from tracesim._conventions import span_input, span_output
from tracesim._pricing import PriceTable, Usage, format_usd, price_hint, read_usage
from tracesim.exporters._records import SpanRecord
from tracesim.exporters._safe_text import visible

__all__ = ["MAX_TREE_DEPTH", "build_forest", "render_trees"]

_PREVIEW = 100
MAX_TREE_DEPTH = 100
"""Levels drawn under one root; a deeper parent chain (only in a damaged file) continues as a new tree."""


def build_forest(spans: Iterable[SpanRecord]) -> list[tuple[SpanRecord, list[Any]]]:
    """Group spans into trees: ``[(root, [(child, [...]), ...]), ...]``, roots in start order.

    A span whose parent is not among ``spans`` is treated as a root, so partial files and
    traces that continue in another service still render. Damaged files render too: spans
    whose parents form a cycle, and the part of a parent chain deeper than `MAX_TREE_DEPTH`,
    start trees of their own instead of being lost or recursing without end.

    Example:
        >>> from tracesim.exporters import SpanRecord
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


def render_trees(
    spans: Iterable[SpanRecord],
    *,
    details: bool = True,
    width: int = _PREVIEW,
    prices: PriceTable | None = None,
    price_note: bool = False,
) -> str:
    """Render spans as text trees, one block per trace root.

    An LLM call's line shows its model, input→output tokens and cost: the span's own
    ``llm.cost.total``, else priced with ``prices`` (default: the shipped table), ``$—`` when
    the model has no price. A block with LLM calls ends with their total. ``price_note`` adds a
    last line naming the models without a price and how to add one.

    Example:
        >>> from tracesim.exporters import SpanRecord
        >>> llm = {"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 1200,
        ...        "gen_ai.usage.output_tokens": 80}
        >>> print(render_trees([SpanRecord("t", "a", None, "chat", "CLIENT", 0, 10**6, llm)]))
        chat  1.0 ms  gpt-4o-mini 1,200→80 tokens  $0.00023
        LLM total: 1 call  1,200→80 tokens  $0.00023
        <BLANKLINE>
    """
    render = _Render(details, width, prices if prices is not None else PriceTable())
    for root, kids in build_forest(spans):
        render.calls.clear()
        render.tree(root, kids, "", "")
        if render.calls:
            render.out.append(render.total_line())
        render.out.append("")
    if price_note and render.unpriced:
        render.out.extend([visible(price_hint(sorted(render.unpriced))), ""])
    return "\n".join(render.out)


@dataclass
class _Render:
    details: bool
    width: int
    table: PriceTable
    out: list[str] = field(default_factory=list)
    calls: list[tuple[Usage, float | None]] = field(default_factory=list)  # of the current tree
    unpriced: set[str] = field(default_factory=set)

    def tree(self, span: SpanRecord, kids: Sequence[Any], head: str, body: str) -> None:
        self.out.append(head + self.headline(span))
        if self.details:
            for line in _detail_lines(span, self.width):
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
        """``LLM total: 3 calls  2,400→180 tokens  $0.00046`` for the current tree."""
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


def _detail_lines(span: SpanRecord, width: int) -> list[str]:
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
    scores = [_format_result(e.attributes) for e in span.event(sc.EVALUATION_EVENT)]
    if scores:
        lines.append("scores: " + "  ".join(scores))
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
    text = _text(value)
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def _format_duration(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"
