"""One model call seen by two instrumentations side by side: counted once.

Two instrumentations of the same framework (OpenInference's LangChain callback handler and the
OpenTelemetry project's, say) each make a span for every model call, in sibling trees: neither
span is inside the other, so the mark for an LLM span inside another (`tracesim._runtime`) does
not apply, and the trace would count each call, its tokens and its cost twice.

`LLMTwins` sees every span that reports token usage as it ends. Two such spans are the same
call when they are in the same trace, come from different instrumentation scopes, overlap in
time and report the same input and output token counts. The one that ends second is marked
``tracesim.llm.counted_in_parent`` (its tokens are counted in the other), which every reader
(`tracesim show`, `tracesim report`, runs, rules) already honours. The memory is bounded: the
last `MAX_TRACES` traces, `MAX_CALLS_PER_TRACE` calls each.

Example:
    >>> twins = LLMTwins()
    >>> first = twins.twin_of(trace_id=1, span_id=10, scope="oi", start=0, end=5, tokens=(11, 7))
    >>> second = twins.twin_of(trace_id=1, span_id=20, scope="otel", start=1, end=6, tokens=(11, 7))
    >>> first, second
    (None, 10)
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Final, NamedTuple

from tracesim._semconv import LLM_COUNTED_IN_PARENT

__all__ = ["MAX_CALLS_PER_TRACE", "MAX_TRACES", "USAGE_KEYS", "LLMTwins"]

MAX_TRACES: Final = 512
MAX_CALLS_PER_TRACE: Final = 64

# Token counts in each convention (GenAI, OpenInference, OpenLLMetry), as `tracesim._pricing` reads them.
_INPUT_KEYS = ("gen_ai.usage.input_tokens", "llm.token_count.prompt", "gen_ai.usage.prompt_tokens")
_OUTPUT_KEYS = ("gen_ai.usage.output_tokens", "llm.token_count.completion", "gen_ai.usage.completion_tokens")
USAGE_KEYS: Final = frozenset(_INPUT_KEYS + _OUTPUT_KEYS)


class _Call(NamedTuple):
    span_id: int
    scope: str
    start: int
    end: int
    tokens: tuple[Any, Any]


def _count(attributes: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


class LLMTwins:
    """The recent model calls of each trace, to find a call already counted under another scope."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._traces: OrderedDict[int, list[_Call]] = OrderedDict()

    def ending(self, span: Any) -> None:
        """For a span that is ending (the SDK's ``_on_ending``): mark it when its twin was seen.

        The SDK has made the attributes read-only by then, so the mark goes into their dict
        directly; the span handed to ``on_end`` (and exported) reads that same dict.
        """
        attributes = getattr(getattr(span, "_attributes", None), "_dict", None)
        if type(attributes) is not dict or USAGE_KEYS.isdisjoint(attributes):
            return  # most spans: no token counts
        if attributes.get(LLM_COUNTED_IN_PARENT) is True:
            return  # inside another LLM span: already counted there
        tokens = (_count(attributes, _INPUT_KEYS), _count(attributes, _OUTPUT_KEYS))
        context, scope = span.context, span.instrumentation_scope
        if context is None or tokens == (None, None):
            return
        twin = self.twin_of(
            trace_id=context.trace_id,
            span_id=context.span_id,
            scope=scope.name if scope is not None else "",
            start=span.start_time or 0,
            end=span.end_time or 0,
            tokens=tokens,
        )
        if twin is not None:
            attributes[LLM_COUNTED_IN_PARENT] = True

    def twin_of(
        self, *, trace_id: int, span_id: int, scope: str, start: int, end: int, tokens: tuple[Any, Any]
    ) -> int | None:
        """The span id of the call this one repeats, or None (and this one is remembered)."""
        with self._lock:
            calls = self._traces.get(trace_id)
            if calls is None:
                calls = self._traces[trace_id] = []
                if len(self._traces) > MAX_TRACES:
                    self._traces.popitem(last=False)
            else:
                self._traces.move_to_end(trace_id)
                for call in calls:
                    overlap = call.start <= end and start <= call.end
                    if overlap and call.scope != scope and call.tokens == tokens:
                        return call.span_id  # kept: a third instrumentation's span is its twin too
            calls.append(_Call(span_id, scope, start, end, tokens))
            if len(calls) > MAX_CALLS_PER_TRACE:
                del calls[0]
            return None
