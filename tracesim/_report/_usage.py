"""LLM calls summed: tokens and cost per model, per span name and per trace.

A call's cost is the span's own ``llm.cost.total`` when it has one (tracesim writes it at export
with the configured prices), else its tokens priced with the `~tracesim._pricing.PriceTable`
given to the report; a call whose model has no price has no cost. Sums of cost cover the calls
that have one (``priced_calls``), and are ``None`` when none has. Dollar amounts are rounded to
1e-12, so sums read the same whatever order the calls came in.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence

from tracesim._pricing import PriceTable
from tracesim._report._collect import CallSample, Collected, ResultSample
from tracesim._report._report_data import CallScore, LLMCall, LLMUsage, TraceUsage, UsageStats

__all__ = ["UNKNOWN_MODEL", "llm_usage"]

UNKNOWN_MODEL = "(unknown model)"
"""The model of a call whose span names none."""

_Priced = tuple[CallSample, float | None]


def llm_usage(collected: Collected, prices: PriceTable, top: int) -> LLMUsage | None:
    """The usage section of a report; None when no span reports token usage.

    Example:
        >>> from tracesim._report._collect import collect
        >>> from tracesim.tracefile import SpanRecord
        >>> attrs = {"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 2000,
        ...          "gen_ai.usage.output_tokens": 500}
        >>> spans = [SpanRecord("t", "s", None, "chat", "CLIENT", 0, 1, attrs)]
        >>> usage = llm_usage(collect(spans), PriceTable(), top=10)
        >>> usage.totals.calls, usage.totals.cost_usd
        (1, 0.0006)
    """
    if not collected.calls:
        return None
    top = max(top, 0)
    priced = [(call, call.usage.priced(prices)) for call in collected.calls]
    by_trace = _rows(priced, lambda c: c.trace_id)
    traces = [_trace(row, _root(collected, row.name)) for row in _ranked(by_trace)[:top]]
    unpriced = sorted({_model(c) for c, cost in priced if cost is None})
    return LLMUsage(
        totals=_stats("all", priced),
        models=_ranked(_rows(priced, _model)),
        spans=_ranked(_rows(priced, lambda c: c.name)),
        trace_count=len(by_trace),
        traces=tuple(traces),
        calls=tuple(_calls(priced, collected.call_results, top)),
        unpriced_models=tuple(unpriced),
    )


def _trace(row: UsageStats, root: str | None) -> TraceUsage:
    return TraceUsage(
        trace_id=row.name,
        root=root,
        calls=row.calls,
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        cached_input_tokens=row.cached_input_tokens,
        priced_calls=row.priced_calls,
        cost_usd=row.cost_usd,
    )


def _model(call: CallSample) -> str:
    return call.usage.model or UNKNOWN_MODEL


def _root(collected: Collected, trace_id: str) -> str | None:
    first = collected.roots.get(trace_id)
    return first[1] if first else None


def _rows(priced: Sequence[_Priced], key: Callable[[CallSample], str]) -> list[UsageStats]:
    groups: dict[str, list[_Priced]] = defaultdict(list)
    for item in priced:
        groups[key(item[0])].append(item)
    return [_stats(name, items) for name, items in groups.items()]


def _stats(name: str, items: Sequence[_Priced]) -> UsageStats:
    costs = [cost for _, cost in items if cost is not None]
    return UsageStats(
        name=name,
        calls=len(items),
        input_tokens=sum(c.usage.input_tokens or 0 for c, _ in items),
        output_tokens=sum(c.usage.output_tokens or 0 for c, _ in items),
        cached_input_tokens=sum(c.usage.cached_tokens for c, _ in items),
        priced_calls=len(costs),
        cost_usd=_usd(math.fsum(costs)) if costs else None,
    )


def _ranked(rows: Iterable[UsageStats]) -> tuple[UsageStats, ...]:
    """Most expensive first; calls without a price after those with one, by tokens; then by name."""
    return tuple(
        sorted(
            rows,
            key=lambda r: (
                r.cost_usd is None,
                -(r.cost_usd or 0.0),
                -(r.input_tokens + r.output_tokens),
                r.name,
            ),
        )
    )


def _calls(
    priced: Sequence[_Priced], results: dict[tuple[str, str], list[ResultSample]], top: int
) -> list[LLMCall]:
    def rank(item: _Priced) -> tuple[bool, float, int, str, str]:
        call, cost = item
        tokens = (call.usage.input_tokens or 0) + (call.usage.output_tokens or 0)
        return (cost is None, -(cost or 0.0), -tokens, call.trace_id, call.span_id)

    return [
        LLMCall(
            trace_id=call.trace_id,
            span_id=call.span_id,
            name=call.name,
            model=call.usage.model,
            input_tokens=call.usage.input_tokens,
            output_tokens=call.usage.output_tokens,
            cached_input_tokens=call.usage.cached_tokens,
            cost_usd=None if cost is None else _usd(cost),
            scores=tuple(_score(r) for r in results.get((call.trace_id, call.span_id), ())),
        )
        for call, cost in sorted(priced, key=rank)[:top]
    ]


def _score(result: ResultSample) -> CallScore:
    return CallScore(result.evaluator, result.status, result.score, result.passed, result.label)


def _usd(amount: float) -> float:
    return round(amount, 12)
