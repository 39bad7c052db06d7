"""One model call seen by two instrumentations side by side: counted once.

Two instrumentations of the same framework (OpenInference's LangChain callback handler and the
OpenTelemetry project's, say) each make a span for every model call, in sibling trees: neither
span is inside the other, so the mark for an LLM span inside another (`tracesim._runtime`) does
not apply, and the trace would count each call, its tokens and its cost twice.

`LLMTwins` sees every LLM span (a GenAI model operation, an OpenInference LLM or embedding span,
an OpenLLMetry request) that reports token usage as it ends. Two such spans are the same call
when they are in the same trace, come from different instrumentation scopes, overlap in time,
report the same input and output token counts, name a common model when both name one, and do
not carry different response ids. The one that ends second gets ``tracesim.llm.twin_of`` (the
other's span id): trace totals (`tracesim show`, `tracesim report`) and rules count the call
once, at the other span; a run (`tracesim._runs`) counts it when the other is not in the run,
so an agent's run in either tree keeps its model calls. The memory is bounded: the last
`MAX_TRACES` traces, `MAX_CALLS_PER_TRACE` calls each.

Example:
    >>> twins = LLMTwins()
    >>> call = dict(trace_id=1, start=0, end=5, tokens=(11, 7), models=frozenset({"gpt-4o"}))
    >>> twins.twin_of(span_id=10, scope="openinference", **call)
    >>> twins.twin_of(span_id=20, scope="opentelemetry", **call)
    10
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Final, NamedTuple

from tracesim._foreign_spans import KIND_OF_OPERATION
from tracesim._pricing import INPUT_KEYS, OUTPUT_KEYS, USAGE_KEYS, first_count
from tracesim._semconv import LLM_COUNTED_IN_PARENT, LLM_TWIN_OF

__all__ = ["MAX_CALLS_PER_TRACE", "MAX_TRACES", "MODEL_CALL_OPERATIONS", "LLMTwins", "is_model_call"]

MAX_TRACES: Final = 512
MAX_CALLS_PER_TRACE: Final = 64

_MODEL_KEYS = ("gen_ai.request.model", "gen_ai.response.model", "llm.model_name")
MODEL_CALL_OPERATIONS: Final = frozenset(
    operation for operation, kind in KIND_OF_OPERATION.items() if kind in ("LLM", "EMBEDDING")
)
"""The GenAI operations that are model calls (chat, text completion, embeddings...)."""


class _Call(NamedTuple):
    span_id: int
    scope: str
    start: int
    end: int
    tokens: tuple[Any, Any]
    models: frozenset[str]
    response_id: str | None

    def same_call(self, other: _Call) -> bool:
        if self.scope == other.scope or self.tokens != other.tokens:
            return False  # one instrumentation never sees a call twice; other tokens, another call
        if not (self.start <= other.end and other.start <= self.end):
            return False
        if self.models and other.models and not self.models & other.models:
            return False
        return self.response_id is None or other.response_id is None or self.response_id == other.response_id


def _models(attributes: Any) -> frozenset[str]:
    """The model names a span records, without a router's provider prefix (``openai/gpt-4o``)."""
    found = set()
    for key in _MODEL_KEYS:
        value = attributes.get(key)
        if isinstance(value, str) and value:
            found.add(value.rsplit("/", 1)[-1].lower())
    return frozenset(found)


def is_model_call(attributes: Any) -> bool:
    """A model call's span in one of the conventions (an agent's span with totals is not one).

    Example:
        >>> is_model_call({"gen_ai.operation.name": "chat"})
        True
        >>> is_model_call({"openinference.span.kind": "AGENT", "llm.token_count.prompt": 11})
        False
    """
    return (
        attributes.get("gen_ai.operation.name") in MODEL_CALL_OPERATIONS
        or attributes.get("openinference.span.kind") in ("LLM", "EMBEDDING")
        or isinstance(attributes.get("llm.request.type"), str)
    )


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
        if attributes.get(LLM_COUNTED_IN_PARENT) is True or not is_model_call(attributes):
            return  # inside another LLM span (counted there), or not a model call
        tokens = (first_count(attributes, INPUT_KEYS), first_count(attributes, OUTPUT_KEYS))
        context, scope = span.context, span.instrumentation_scope
        if context is None or tokens == (None, None):
            return
        response_id = attributes.get("gen_ai.response.id")
        twin = self.twin_of(
            trace_id=context.trace_id,
            span_id=context.span_id,
            scope=scope.name if scope is not None else "",
            start=span.start_time or 0,
            end=span.end_time or 0,
            tokens=tokens,
            models=_models(attributes),
            response_id=response_id if isinstance(response_id, str) and response_id else None,
        )
        if twin is not None:
            attributes[LLM_TWIN_OF] = f"{twin:016x}"

    def twin_of(
        self,
        *,
        trace_id: int,
        span_id: int,
        scope: str,
        start: int,
        end: int,
        tokens: tuple[Any, Any],
        models: frozenset[str] = frozenset(),
        response_id: str | None = None,
    ) -> int | None:
        """The span id of the call this one repeats, or None (and this one is remembered)."""
        this = _Call(span_id, scope, start, end, tokens, models, response_id)
        with self._lock:
            calls = self._traces.get(trace_id)
            if calls is None:
                calls = self._traces[trace_id] = []
                if len(self._traces) > MAX_TRACES:
                    self._traces.popitem(last=False)
            else:
                self._traces.move_to_end(trace_id)
                for call in calls:
                    if call.same_call(this):
                        return call.span_id  # kept: a third instrumentation's span is its twin too
            calls.append(this)
            if len(calls) > MAX_CALLS_PER_TRACE:
                del calls[0]
            return None
