"""Trace files of a real traced agent, its run scored as the scoring pipeline records results.

`write_weather_runs` runs ``weather``, an ``@tracesim.trace(kind="agent")`` function calling two
``@tracesim.trace(kind="tool")`` functions (and, given the scripted model server, the real
``openai`` client traced by the OpenAI integration), configured with a JSON-lines exporter.

Online run scoring is not wired yet at the time of writing (a run evaluator on the decorator
gets the output string and errors), so `score_runs` adds the results afterwards, exactly as
`tracesim._scoring._results.write` records them on the scored span: each agent span's run,
rebuilt from the file (`tracesim._runs.RunIndex`), is scored by a real run evaluator against the
expected tool calls given to the decorator (`EXPECTED`), and the
``gen_ai.evaluation.result`` event and flat ``tracesim.eval.<name>.*`` attributes that
`tracesim._scoring._results.render` makes are written on that span. Once the pipeline scores
runs, pass the evaluator to the decorator and drop `score_runs`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan

import tracesim
from tracesim import _semconv as sc
from tracesim._capture import CaptureOptions
from tracesim._runs import RunIndex
from tracesim._scoring._results import render
from tracesim.evaluators import Evaluator
from tracesim.exporters import JsonlExporter
from tracesim.runs import tool_calls
from tracesim.tracefile import load_spans, read_jsonl
from tracesim.tracefile._sdk_spans import readable_spans

EXPECTED = [
    {"name": "lookup", "arguments": {"city": "Warsaw"}},
    {"name": "convert", "arguments": {"celsius": 12.0}},
]


def write_weather_runs(
    path: Path, questions: list[str], client: Any = None, instrument: list[str] | None = None
) -> None:
    """Trace one ``weather`` run per question into ``path`` (a model call first when ``client``,
    traced by the integrations named in ``instrument``)."""
    tracesim.configure(exporters=["jsonl"], jsonl_path=path, scoring_mode="off", instrument=instrument)

    @tracesim.trace(kind="tool")
    def lookup(city: str) -> float:
        return 12.0

    @tracesim.trace(kind="tool")
    def convert(celsius: float) -> float:
        if celsius > 100:
            raise ValueError(f"{celsius} C is not a weather")
        return celsius * 1.8 + 32

    @tracesim.trace(kind="agent", expected=tracesim.Expected(tool_calls=EXPECTED))
    def weather(question: str) -> str:
        if client is not None:
            client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
            )
        celsius = lookup("Warsaw")
        if "boiling" in question:
            celsius = 150.0
        if "fahrenheit" in question or "boiling" in question:
            try:
                return f"{convert(celsius):.0f} F"
            except ValueError:
                return "no idea"
        return f"{celsius:.0f} C"

    for question in questions:
        weather(question)
    tracesim.shutdown()


def score_runs(source: Path, target: Path, evaluator: Evaluator, expected: Any = EXPECTED) -> None:
    """Write ``source`` again to ``target`` with ``evaluator``'s result on each agent span, scored
    against ``expected`` tool calls, as the scoring pipeline writes a result on a span it scored."""
    records = load_spans(source)
    index = RunIndex(records)
    calls = tool_calls(expected)
    results: dict[tuple[str, str], Any] = {}
    for record in records:
        if record.attributes.get(sc.SPAN_KIND) == "AGENT":
            result = evaluator.evaluate(index.run(record), calls)
            results[(record.trace_id, record.span_id)] = render(result, CaptureOptions())
    exporter = JsonlExporter(target)
    for request in read_jsonl(source):
        spans = []
        for span in readable_spans(request):
            context = span.context
            assert context is not None
            rendered = results.get((f"{context.trace_id:032x}", f"{context.span_id:016x}"))
            spans.append(span if rendered is None else _with_result(span, *rendered))
        exporter.export(spans)
    exporter.shutdown()


def _with_result(span: ReadableSpan, event: dict[str, Any], flat: dict[str, Any]) -> ReadableSpan:
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes={**(span.attributes or {}), **flat},
        events=[*span.events, Event(sc.EVALUATION_EVENT, event, span.end_time)],
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
