"""Record what ragas' and pydantic-evals' tool-call evaluators return, as reference cases.

Run it with the Python of a virtualenv that has the two packages (never tracesim's own), from
the repository root::

    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install ragas==0.4.3 "langchain-community<0.4" \
        pydantic-evals==2.62.0 opentelemetry-sdk
    /tmp/peers/bin/python tests/evaluators/data/record_run_cases_ragas_pydantic.py

It writes ``run_cases_ragas_pydantic.jsonl`` beside this file, one case per line: the tracesim
evaluator type, its options, the actual calls (``name``, ``arguments``, and ``error`` for a call
that failed), the expected calls, the peer (package, version, class and its arguments) and the
score the peer returned (with its reason, for pydantic-evals). Recording twice gives the same
file. ``tests/evaluators/test_run_ragas.py`` and ``test_run_pydantic_evals.py`` replay the cases.

ragas is fed what it reads: a ``MultiTurnSample`` whose ``AIMessage`` carries the actual calls,
and ``reference_tool_calls``. pydantic-evals reads a span tree, so each case's calls become real
OpenTelemetry spans (made with the SDK's tracer and an in-memory exporter), shaped as
pydantic-ai's instrumentation makes them: a root ``agent run`` span, a ``chat`` model-request
span, and one ``execute_tool <name>`` span per call with ``gen_ai.tool.name`` and
``gen_ai.tool.call.arguments`` (the JSON text of the arguments, or the text as written), with an
error status for a call that failed. They become a ``SpanTree`` through
``SpanNode.from_readable_span``, and the evaluators run on an ``EvaluatorContext`` holding it.
"""

from __future__ import annotations

import asyncio
import json
import random
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "run_cases_ragas_pydantic.jsonl"

Call = dict[str, Any]


def call(name: str, arguments: Any = None, *, error: str | None = None) -> Call:
    data: Call = {"name": name, "arguments": {} if arguments is None else arguments}
    if error is not None:
        data["error"] = error
    return data


# -- ragas ---------------------------------------------------------------------------------


def ragas_metric(kind: str, options: dict[str, Any]) -> Any:
    """ragas' metric for a tracesim evaluator type and its options."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ragas' own deprecation notices
        from ragas.metrics import ToolCallAccuracy, ToolCallF1

    return ToolCallAccuracy(**options) if kind == "tool_call_accuracy" else ToolCallF1()


def ragas_sample(actual: list[Call], expected: list[Call]) -> Any:
    """What ragas reads: the actual calls on an ``AIMessage``, and the reference calls."""
    from ragas.dataset_schema import MultiTurnSample
    from ragas.messages import AIMessage, HumanMessage, ToolCall

    return MultiTurnSample(
        user_input=[
            HumanMessage(content="question"),
            AIMessage(content="", tool_calls=[ToolCall(name=c["name"], args=c["arguments"]) for c in actual]),
        ],
        reference_tool_calls=[ToolCall(name=c["name"], args=c["arguments"]) for c in expected],
    )


def ragas_score(kind: str, options: dict[str, Any], actual: list[Call], expected: list[Call]) -> float:
    metric, sample = ragas_metric(kind, options), ragas_sample(actual, expected)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(asyncio.run(metric.multi_turn_ascore(sample)))


# -- pydantic-evals ------------------------------------------------------------------------


def span_tree(actual: list[Call]) -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Status, StatusCode, set_span_in_context
    from pydantic_evals.otel.span_tree import SpanNode, SpanTree

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("record")
    clock = 1_700_000_000_000_000_000
    root = tracer.start_span("agent run", start_time=clock)
    context = set_span_in_context(root)
    chat = tracer.start_span(
        "chat model", context=context, start_time=clock + 1000,
        attributes={"gen_ai.request.model": "m", "gen_ai.operation.name": "chat"},
    )  # fmt: skip
    chat.end(end_time=clock + 2000)
    for index, item in enumerate(actual):
        arguments = item["arguments"]
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        start = clock + 10_000 * (index + 1)
        span = tracer.start_span(
            f"execute_tool {item['name']}", context=context, start_time=start,
            attributes={"gen_ai.tool.name": item["name"], "gen_ai.tool.call.arguments": text},
        )  # fmt: skip
        if item.get("error"):
            span.set_status(Status(StatusCode.ERROR, item["error"]))
        span.end(end_time=start + 5000)
    root.end(end_time=clock + 10_000 * (len(actual) + 2))
    tree = SpanTree()
    tree.add_spans([SpanNode.from_readable_span(span) for span in exporter.get_finished_spans()])
    return tree


def pydantic_evaluator(
    kind: str, options: dict[str, Any], expected: list[Call] | None
) -> tuple[Any, dict[str, Any]]:
    from pydantic_evals.evaluators import ArgumentCorrectness, MaxToolCalls, ToolCorrectness, TrajectoryMatch

    flags = {"include_failed": options["include_failed"]} if "include_failed" in options else {}
    names = [c["name"] for c in expected or []]
    if kind == "tool_names":
        args = {"expected_tools": names, "allow_extra": options.get("allow_extra", False), **flags}
        return ToolCorrectness(**args), args
    if kind == "trajectory":
        args = {"expected_trajectory": names, "order": options.get("order", "exact"), **flags}
        return TrajectoryMatch(**args), args
    if kind == "tool_arguments":
        args = {
            "tool_name": options["tool"],
            "expected_arguments": options["arguments"],
            "match_mode": options.get("match", "subset"),
            "occurrence": options.get("occurrence", 0),
            **flags,
        }
        return ArgumentCorrectness(**args), args
    args = {"max_calls": options["max_tool_calls"], **flags}
    return MaxToolCalls(**args), args


def pydantic_context(actual: list[Call]) -> Any:
    """An ``EvaluatorContext`` whose span tree holds ``actual`` as tool spans."""
    from pydantic_evals.evaluators import EvaluatorContext

    return EvaluatorContext(
        name="case", inputs=None, metadata=None, expected_output=None, output=None, duration=0.0,
        _span_tree=span_tree(actual), attributes={}, metrics={},
    )  # fmt: skip


def pydantic_result(
    kind: str, options: dict[str, Any], actual: list[Call], expected: list[Call] | None
) -> tuple[float, str | None, dict[str, Any]]:
    evaluator, args = pydantic_evaluator(kind, options, expected)
    result = evaluator.evaluate(pydantic_context(actual))
    return float(result.value), result.reason, args


# -- the cases -----------------------------------------------------------------------------

A1 = call("search", {"q": "paris"})
A2 = call("weather", {"city": "Paris", "days": 3})
A3 = call("convert", {"amount": 12, "to": "EUR"})


def ragas_cases() -> list[tuple[str, dict[str, Any], list[Call], list[Call]]]:
    """(evaluator, options, actual, expected) for both ragas metrics, corners first."""
    pairs: list[tuple[list[Call], list[Call]]] = [
        ([], []),
        ([A1], []),
        ([], [A1]),
        ([A1], [A1]),
        ([A1, A2], [A1, A2]),
        ([A2, A1], [A1, A2]),
        ([A1, A2, A3], [A1, A2]),
        ([A1], [A1, A2]),
        ([call("weather", {"city": "Paris", "days": "3"})], [A2]),
        ([call("weather", {"city": "Paris", "days": 3.0})], [A2]),
        ([call("flag", {"on": "True"})], [call("flag", {"on": True})]),
        ([call("flag", {"on": 1})], [call("flag", {"on": True})]),
        ([call("f", {"o": {"a": 1, "b": 2}})], [call("f", {"o": {"b": 2, "a": 1}})]),
        ([call("f", {"o": [1, 2]})], [call("f", {"o": [1, 2]})]),
        ([call("f", {"o": [1, 2]})], [call("f", {"o": "[1, 2]"})]),
        ([call("f", {})], [call("f", {})]),
        ([call("f", {"x": 1})], [call("f", {})]),
        ([call("f", {})], [call("f", {"x": 1})]),
        ([call("weather", {"city": "Paris"})], [A2]),
        ([call("weather", {"city": "Paris", "days": 3, "unit": "C"})], [A2]),
        ([call("weather", {"city": "paris", "days": 3})], [A2]),
        ([call("Search", {"q": "paris"})], [A1]),
        ([call("search ", {"q": "paris"})], [A1]),
        ([A1, A1], [A1]),
        ([A1], [A1, A1]),
        ([A1, A1, A2], [A2, A1]),
        # sorting without strict_order: same names, arguments sorted by str() of the values
        ([call("g", {"n": 9}), call("g", {"n": 10})], [call("g", {"n": 10}), call("g", {"n": 9})]),
        ([call("g", {"n": 9}), call("g", {"m": 10})], [call("g", {"m": 10}), call("g", {"n": 9})]),
        ([call("g", {"n": 9}), call("g", {"n": 1})], [call("g", {"n": 10}), call("g", {"n": 9})]),
        ([call("b", {"x": 1}), call("a", {"x": 2})], [call("a", {"x": 2}), call("b", {"x": 1})]),
        ([call("a", {"x": 1}), call("a", {"x": 1.0})], [call("a", {"x": 1})]),
        ([call("a", {"x": 1, "y": 2}), call("a", {"y": 2, "x": 1})], [call("a", {"x": 1, "y": 2})]),
        ([call("a", {"x": None})], [call("a", {"x": None})]),
        ([call("a", {"x": None})], [call("a", {"x": "None"})]),
        ([call("a", {"x": "é"})], [call("a", {"x": "é"})]),
        ([call("h", {"a": 1, "b": "x", "c": 3})], [call("h", {"a": 1, "b": 2, "c": 3})]),
        (
            [call("h", {"a": 1}), call("h", {"b": 2, "c": 3})],
            [call("h", {"a": 1, "c": 3}), call("h", {"b": 2, "c": 3})],
        ),
        (
            [call("h", {"b": 2, "c": 3}), call("h", {"a": 1})],
            [call("h", {"a": 1, "c": 3}), call("h", {"b": 2, "c": 3})],
        ),
    ]
    rng = random.Random(25)
    names = ["a", "b", "c"]
    values: list[Any] = [1, 1.0, "1", True, "x", [1], {"k": 1}, None]
    for _ in range(30):
        make = lambda: call(  # noqa: E731
            rng.choice(names),
            {key: rng.choice(values) for key in rng.sample(["p", "q", "r"], rng.randint(0, 2))},
        )
        expected = [make() for _ in range(rng.randint(0, 3))]
        actual = [dict(c) for c in expected if rng.random() < 0.8] + [
            make() for _ in range(rng.randint(0, 2))
        ]
        if rng.random() < 0.5:
            rng.shuffle(actual)
        pairs.append((actual, expected))
    cases = []
    for actual, expected in pairs:
        cases.append(("tool_call_accuracy", {}, actual, expected))
        cases.append(("tool_call_accuracy", {"strict_order": False}, actual, expected))
        cases.append(("tool_call_f1", {}, actual, expected))
    return cases


def pydantic_cases() -> list[tuple[str, dict[str, Any], list[Call], list[Call] | None]]:
    """(evaluator, options, actual, expected) for the pydantic-evals evaluators, corners first."""
    s, f, w, x = call("search"), call("fetch"), call("write"), call("search", error="timeout")
    sequences: list[tuple[list[Call], list[Call]]] = [
        ([], []),
        ([s], []),
        ([], [s]),
        ([s, f, w], [s, f, w]),
        ([f, s, w], [s, f, w]),
        ([s, f], [s, f, w]),
        ([s, f, w, s], [s, f, w]),
        ([s, s], [s]),
        ([s], [s, s]),
        ([s, x], [s, s]),
        ([x], [s]),
        ([x, f], [f]),
        ([call("Search")], [s]),
        ([call("search ")], [s]),
        ([w, f, s], [s, f, w]),
        ([s, w, s, f, w], [s, f, w, w]),
        ([f, f, f], [f, s]),
    ]
    rng = random.Random(26)
    for _ in range(16):
        pool = [s, f, w, call("read"), x, call("fetch", error="boom")]
        expected = [rng.choice([s, f, w, call("read")]) for _ in range(rng.randint(0, 4))]
        actual = [rng.choice(pool) for _ in range(rng.randint(0, 5))]
        sequences.append((actual, expected))
    cases: list[tuple[str, dict[str, Any], list[Call], list[Call] | None]] = []
    for actual, expected in sequences:
        cases.append(("tool_names", {}, actual, expected))
        cases.append(("tool_names", {"allow_extra": True}, actual, expected))
        if any("error" in c for c in actual):
            cases.append(("tool_names", {"include_failed": True}, actual, expected))
        for order in ("exact", "in_order", "any_order"):
            cases.append(("trajectory", {"order": order}, actual, expected))
        if any("error" in c for c in actual):
            cases.append(("trajectory", {"order": "in_order", "include_failed": True}, actual, expected))
    lookup = lambda arguments, **kw: call("lookup", arguments, **kw)  # noqa: E731
    argument_cases: list[tuple[dict[str, Any], list[Call]]] = [
        ({"tool": "lookup", "arguments": {"city": "Paris"}}, [lookup({"city": "Paris"})]),
        ({"tool": "lookup", "arguments": {"city": "Paris"}}, [lookup({"city": "Paris", "unit": "C"})]),
        (
            {"tool": "lookup", "arguments": {"city": "Paris"}, "match": "exact"},
            [lookup({"city": "Paris", "unit": "C"})],
        ),
        ({"tool": "lookup", "arguments": {"city": "Paris"}, "match": "exact"}, [lookup({"city": "Paris"})]),
        ({"tool": "lookup", "arguments": {"city": "Paris"}}, [lookup({"city": "paris"})]),
        ({"tool": "lookup", "arguments": {"city": "Paris"}}, [lookup({})]),
        ({"tool": "lookup", "arguments": {}}, [lookup({"a": 1})]),
        ({"tool": "lookup", "arguments": {}, "match": "exact"}, [lookup({"a": 1})]),
        ({"tool": "lookup", "arguments": {"n": 1}}, [lookup({"n": 1.0})]),
        ({"tool": "lookup", "arguments": {"n": 1}}, [lookup({"n": True})]),
        ({"tool": "lookup", "arguments": {"n": 1}}, [lookup({"n": "1"})]),
        ({"tool": "lookup", "arguments": {"o": {"a": 1, "b": 2}}}, [lookup({"o": {"b": 2, "a": 1}})]),
        ({"tool": "lookup", "arguments": {"o": {"a": 1}}}, [lookup({"o": {"a": 1, "b": 2}})]),
        ({"tool": "lookup", "arguments": {"o": [1, 2]}}, [lookup({"o": [2, 1]})]),
        ({"tool": "lookup", "arguments": {"q": "x"}}, [call("search", {"q": "x"})]),
        ({"tool": "lookup", "arguments": {"q": "x"}}, []),
        ({"tool": "lookup", "arguments": {"q": "x"}}, [lookup("q=x")]),
        ({"tool": "lookup", "arguments": {"q": "x"}}, [lookup("[1, 2]")]),
        ({"tool": "lookup", "arguments": {"q": "x"}}, [lookup({"q": "y"}), lookup({"q": "x"})]),
        (
            {"tool": "lookup", "arguments": {"q": "x"}, "occurrence": 1},
            [lookup({"q": "y"}), lookup({"q": "x"})],
        ),
        (
            {"tool": "lookup", "arguments": {"q": "x"}, "occurrence": 2},
            [lookup({"q": "y"}), lookup({"q": "x"})],
        ),
        (
            {"tool": "lookup", "arguments": {"q": "x"}, "occurrence": "last"},
            [lookup({"q": "y"}), lookup({"q": "x"})],
        ),
        (
            {"tool": "lookup", "arguments": {"q": "y"}, "occurrence": "first"},
            [lookup({"q": "y"}), lookup({"q": "x"})],
        ),
        ({"tool": "lookup", "arguments": {"q": "x"}}, [lookup({"q": "x"}, error="boom"), lookup({"q": "y"})]),
        (
            {"tool": "lookup", "arguments": {"q": "x"}, "include_failed": True},
            [lookup({"q": "x"}, error="boom"), lookup({"q": "y"})],
        ),
        ({"tool": "lookup", "arguments": {"q": "x"}}, [lookup({"q": "x"}, error="boom")]),
        (
            {"tool": "lookup", "arguments": {"q": "x"}, "occurrence": 1},
            [lookup({"q": "x"}), s, lookup({"q": "x"})],
        ),
        ({"tool": "lookup", "arguments": {"q": None}}, [lookup({"q": None})]),
        ({"tool": "lookup", "arguments": {"q": None}}, [lookup({})]),
        ({"tool": "Lookup", "arguments": {"q": "x"}}, [lookup({"q": "x"})]),
        (
            {"tool": "lookup", "arguments": {"a": 1, "b": [1, {"c": 2}]}, "match": "exact"},
            [lookup({"b": [1, {"c": 2}], "a": 1.0})],
        ),
    ]
    for options, actual in argument_cases:
        cases.append(("tool_arguments", options, actual, None))
    budget_runs = [[], [s], [s, f], [s, x, f], [x, x], [s, f, w, s, f]]
    for actual in budget_runs:
        for limit in (0, 1, 2, 3):
            cases.append(("run_budget", {"max_tool_calls": limit}, actual, None))
            if any("error" in c for c in actual):
                cases.append(("run_budget", {"max_tool_calls": limit, "include_failed": False}, actual, None))
    return cases


def main() -> None:
    versions = {"ragas": version("ragas"), "pydantic-evals": version("pydantic-evals")}
    lines = []
    for kind, options, actual, expected in ragas_cases():
        peer = {"package": "ragas", "version": versions["ragas"]}
        peer["class"] = "ToolCallAccuracy" if kind == "tool_call_accuracy" else "ToolCallF1"
        peer["arguments"] = options
        score = ragas_score(kind, options, actual, expected)
        row = {"evaluator": kind, "options": options, "actual": actual, "expected": expected}
        lines.append({**row, "peer": peer, "score": score})
    for kind, options, actual, maybe_expected in pydantic_cases():
        score, reason, args = pydantic_result(kind, options, actual, maybe_expected)
        classes = {
            "tool_names": "ToolCorrectness",
            "trajectory": "TrajectoryMatch",
            "tool_arguments": "ArgumentCorrectness",
            "run_budget": "MaxToolCalls",
        }
        peer = {"package": "pydantic-evals", "version": versions["pydantic-evals"], "class": classes[kind]}
        peer["arguments"] = args
        row = {"evaluator": kind, "options": options, "actual": actual, "expected": maybe_expected}
        lines.append({**row, "peer": peer, "score": score, "reason": reason})
    with OUT.open("w", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"wrote {len(lines)} cases to {OUT}")


if __name__ == "__main__":
    main()
