"""Rules that score spans tracesim did not create, holding each one's export until it is scored.

Another instrumentation (OpenAI's, LangChain's...) ends its spans itself, before any
evaluator could run, and an ended span cannot take attributes. So a span a rule selects is
held when it ends: its input and output are read from the conventions it carries
(`_foreign_spans`), a scoring job runs as for tracesim's own spans, and the results are written
on a `HeldSpan` that collects them. When the last result is in (or ``max_defer_s`` passes),
the span goes on to the exporters with them, its times unchanged. The scoring pipeline
does not know the difference: it sees a span that is still open.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import SpanContext

from tracesim import _semconv as sc
from tracesim._capture import CaptureOptions
from tracesim._foreign_spans import answer_text, requested_tool_calls, span_input, span_kinds, span_output
from tracesim._internal_errors import WarnOnce
from tracesim._scoring._expect import NOT_SET, expected_attributes
from tracesim._scoring._jobs import FROM_RUN, NO_OUTPUT, Job, no_output
from tracesim._scoring._results import write
from tracesim._scoring._selection import Plan, Rule, plan, scores_runs
from tracesim.exporters._redacting import copy_span
from tracesim.runs import NOT_GIVEN

__all__ = ["ForeignScoring", "HeldSpan"]

_OWN_SCOPE = "tracesim"
_SEEN_LIMIT = 12


class HeldSpan(otel_trace.Span):
    """An ended span kept back from export while it is scored; quacks like the open span.

    The pipeline writes results with ``add_event`` / ``set_attribute(s)`` and finishes with
    ``end``, which hands one new span, the old one plus what was written, to ``forward``.
    """

    def __init__(self, span: ReadableSpan, forward: Callable[[ReadableSpan], None]) -> None:
        self._span = span
        self._forward = forward
        self._lock = threading.Lock()
        self._attributes: dict[str, Any] = {}
        self._events: list[Event] = []
        self._ended = False
        self._context = span.get_span_context() or otel_trace.INVALID_SPAN_CONTEXT

    def get_span_context(self) -> SpanContext:
        return self._context

    @property
    def name(self) -> str:
        """The held span's name (what the result metrics count it under)."""
        return self._span.name

    def update_name(self, name: str) -> None:
        """Scoring never renames a span."""

    def set_status(self, status: Any, description: str | None = None) -> None:
        """Scoring never changes a span's status."""

    def record_exception(
        self,
        exception: BaseException,
        attributes: Any = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        """Scoring never records an exception on the evaluated span."""

    def is_recording(self) -> bool:
        return not self._ended

    def set_attribute(self, key: str, value: Any) -> None:
        with self._lock:
            if not self._ended:
                self._attributes[key] = value

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        with self._lock:
            if not self._ended:
                self._attributes.update(attributes)

    def add_event(
        self, name: str, attributes: Mapping[str, Any] | None = None, timestamp: int | None = None
    ) -> None:
        with self._lock:
            if not self._ended:
                self._events.append(Event(name, dict(attributes or {}), timestamp))

    def end(self, end_time: int | None = None) -> None:
        """Send the span on, with what was written; its end time stays the original one."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
        self._forward(self._rebuilt())

    def _rebuilt(self) -> ReadableSpan:
        span = self._span
        attributes = dict(span.attributes or {})
        attributes.update(self._attributes)
        if sc.SPAN_KIND not in attributes:  # an operation set after the start: Phoenix reads the kind
            kind = span_kinds(attributes)[0]
            if kind:
                attributes[sc.SPAN_KIND] = kind.upper()
        return copy_span(span, attributes=attributes, events=(*span.events, *self._events))


class _Subject:
    """The `Subject` of a held span's job."""

    def __init__(self, held: HeldSpan, capture: CaptureOptions) -> None:
        self.otel_span = held
        self.span_context = held.get_span_context()
        self._capture = capture

    def set_expected(self, value: Any) -> None:
        if self._capture.enabled:
            self.otel_span.set_attributes(expected_attributes(value, self._capture))


class _Binder:
    """What expected-output sources see of a held span: ``input``, its input text.

    A golden file's ``key: input`` looks the span up by that text.
    """

    def __init__(self, text: str | None) -> None:
        self.text = text

    def input(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return self.text

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        return {"input": self.text}


_TOOL_REQUEST = (
    "the span's output is a request for tool calls, not an answer: a step of the run, scored by run "
    "evaluators (score the agent span, or select this kind with a run evaluator)"
)


def _not_an_answer(attributes: Mapping[str, Any], output: str | None) -> str | None:
    """Why string evaluators skip this span (no output, or a model's tool-call request), or None."""
    if output is None:
        return NO_OUTPUT
    if requested_tool_calls(attributes) and not answer_text(attributes):
        return _TOOL_REQUEST
    return None


def _run_output(attributes: Mapping[str, Any], output: str | None) -> Any:
    """A held span's run output: its output text as rules read it; without one, the run's
    (`build_run` reads it from the span's convention, else the last LLM answer)."""
    return NOT_GIVEN if output is None else output


class ForeignScoring:
    """Selects, holds and scores the spans of other instrumentations for one configuration."""

    def __init__(
        self, rules: Sequence[Rule], pipeline: Any, capture: CaptureOptions, runs: Any = None
    ) -> None:
        self.rules = tuple(rules)
        self.runs = runs  # the runtime's RunRecorder: the runs of held spans come from it
        self.pipeline = pipeline
        self.capture = capture
        self.matched: set[int] = set()
        self.seen: dict[tuple[str, str], None] = {}  # a few spans rules saw, for the shutdown message
        self._warnings = WarnOnce()

    def offer(self, span: ReadableSpan, forward: Callable[[ReadableSpan], None]) -> bool:
        """Hold and score ``span`` when a rule selects it (True), else leave it alone (False)."""
        scope = span.instrumentation_scope
        if scope is not None and scope.name == _OWN_SCOPE:
            return False  # tracesim's own spans were planned when they started
        attributes = span.attributes or {}
        if attributes.get(sc.LLM_COUNTED_IN_PARENT) is True or sc.LLM_TWIN_OF in attributes:
            return False  # the same call as its parent span, or its twin's: the rules see that one
        kinds = span_kinds(attributes)
        chosen = plan((), NOT_SET, self.rules, span.name, kinds, attributes, self.matched)
        self.note(span.name, kinds)
        if chosen is None:
            return False
        self._submit(span, chosen, attributes, forward)
        return True

    def note(self, name: str, kinds: tuple[str | None, ...]) -> None:
        """Remember a few spans rules looked at, to name them if a rule selects nothing."""
        if len(self.seen) < _SEEN_LIMIT:
            self.seen.setdefault((name, "/".join(k for k in kinds if k) or "no kind"), None)

    def _submit(
        self,
        span: ReadableSpan,
        chosen: Plan,
        attributes: Mapping[str, Any],
        forward: Callable[[ReadableSpan], None],
    ) -> None:
        held = HeldSpan(span, forward)
        end_ns = span.end_time or 0
        output = span_output(attributes)
        evaluators = chosen.evaluators
        runs = self.runs
        # an agent span that records no output (OpenAI Agents' in OpenInference): its run's answer
        agent = span_kinds(attributes)[0] == "agent"
        from_run = output is None and agent and runs is not None and runs.record_all
        skip = None if from_run else _not_an_answer(attributes, output)
        if skip is not None:  # string evaluators have nothing to score; run evaluators still do
            if skip == NO_OUTPUT:
                self._no_output(span.name, attributes)
            evaluators = tuple(e for e in evaluators if scores_runs(e))
            for evaluator in chosen.evaluators:
                if evaluator not in evaluators:
                    result = no_output(evaluator, skip)
                    kind = getattr(evaluator, "annotator_kind", "CODE")
                    write(
                        held,
                        result,
                        self.capture,
                        end_ns,
                        redaction=self.pipeline.redaction,
                        annotator_kind=kind,
                    )
                    self.pipeline.note(span.context, span.name, evaluator, result)
            if not evaluators:
                held.end()
                return
        text = span_input(attributes)
        job = Job(
            _Subject(held, self.capture),
            FROM_RUN if from_run else output,
            end_ns,
            evaluators,
            chosen.sources,
            (),
            {},
            _Binder(text),
            text,
        )
        if (chosen.runs or from_run) and runs is not None:
            job.run_source = runs.source(span, _run_output(attributes, output), end_ns)
        self.pipeline.submit(job, chosen.always and len(evaluators) == len(chosen.evaluators))

    def _no_output(self, name: str, attributes: Mapping[str, Any]) -> None:
        content_off = "gen_ai.request.model" in attributes or "llm.model_name" in attributes
        self._warnings.warn(
            f"no-output:{name}",
            "tracesim: a rule scores span %r but it carries no output (%s), so its results are 'skipped'. %s",
            name,
            "gen_ai.output.messages, llm.output_messages or output.value",
            "Turn content capture on (capture=True, and the integration's capture)"
            if content_off
            else "Score spans that record their output",
        )

    def unmatched_rules(self) -> list[Rule]:
        """The rules that selected no span."""
        return [rule for index, rule in enumerate(self.rules) if index not in self.matched]
