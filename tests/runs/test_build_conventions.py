"""Runs and final outputs in the conventions no installed library emits, and odd attributes.

No OpenInference or OpenLLMetry instrumentation is installed, so their spans are started with a
plain OpenTelemetry tracer (tracesim's tracer provider) and given the attributes those
instrumentations write: ``openinference.span.kind``, ``llm.output_messages.<i>.message.tool_calls.
<j>.tool_call.*``, ``tool.name``, ``input.value``/``output.value``, ``llm.token_count.*``;
``traceloop.span.kind``, ``traceloop.entity.*``, ``gen_ai.completion.<i>.tool_calls.<j>.*``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Status, StatusCode, Tracer

from tracesim import _runtime
from tracesim._foreign_spans import requested_tool_calls, span_input, span_output
from tracesim._runs import build_run
from tracesim.runs import Run, ToolCall
from tracesim.testing import capture_spans


@pytest.fixture
def tracer() -> Iterator[Tracer]:
    with capture_spans():
        runtime = _runtime.active()
        assert runtime is not None
        assert runtime.provider is not None
        yield runtime.provider.get_tracer("hand-built")


def run_of(tracer: Tracer, children: list[tuple[str, Mapping[str, Any]]], **options: Any) -> Run:
    """A root span with one child span per (name, attributes), in order; the run built under it."""
    ended: list[ReadableSpan] = []
    with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}) as root:
        for name, attributes in children:
            with tracer.start_as_current_span(name, attributes=dict(attributes)) as child:
                pass
            assert isinstance(child, ReadableSpan)
            ended.append(child)
    assert isinstance(root, ReadableSpan)
    return build_run(root, ended, **options)


OPENINFERENCE_LLM = {
    "openinference.span.kind": "LLM",
    "llm.model_name": "gpt-4o-mini",
    "llm.token_count.prompt": 40,
    "llm.token_count.completion": 8,
    "input.value": '{"messages": [{"role": "user", "content": "Weather in Warsaw?"}]}',
    "output.value": '{"choices": [{"message": {"tool_calls": ["..."]}}]}',
    "llm.input_messages.0.message.role": "user",
    "llm.input_messages.0.message.content": "Weather in Warsaw?",
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_a",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city": "Warsaw"}',
}


def test_openinference_requested_and_executed_calls_count_once(tracer: Tracer) -> None:
    tool = {
        "openinference.span.kind": "TOOL",
        "tool.name": "lookup",
        "tool.parameters": '{"type": "object", "properties": {"city": {"type": "string"}}}',
        "input.value": '{"city": "Warsaw"}',
        "output.value": "12 C",
    }
    answer = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "12 C in Warsaw",
    }
    run = run_of(tracer, [("ChatOpenAI", OPENINFERENCE_LLM), ("lookup", tool), ("ChatOpenAI", answer)])
    assert [(step.kind, step.name) for step in run.steps] == [
        ("llm", "ChatOpenAI"),
        ("tool", "lookup"),
        ("llm", "ChatOpenAI"),
    ]
    assert run.steps[0].requested == (ToolCall("lookup", {"city": "Warsaw"}),)
    assert run.steps[0].requested[0].id == "call_a"
    first = run.steps[0]
    assert (first.input_tokens, first.output_tokens, first.model) == (40, 8, "gpt-4o-mini")
    assert run.steps[0].cost_usd == pytest.approx((40 * 0.15 + 8 * 0.6) / 1e6)  # the shipped price
    assert run.steps[1].tool_call is not None
    assert run.steps[1].tool_call.output == "12 C"
    # no id on the tool span (and the schema in tool.parameters is not its arguments): the same
    # name and arguments pair it with the request, whose id it takes
    assert run.tool_calls == (ToolCall("lookup", {"city": "Warsaw"}),)
    assert run.tool_calls[0].id == "call_a"
    assert run.tool_calls[0].output == "12 C"
    assert run.steps[2].model == "gpt-4o-mini"
    assert run.steps[2].input_tokens is None
    # the agent span records no output (as OpenInference's OpenAI Agents spans): the run's
    # output is its last LLM answer in text, not the tool-call request before it
    assert run.output == "12 C in Warsaw"


def test_an_openinference_llm_span_answering_with_a_tool_call_outputs_the_call_not_the_raw_response() -> None:
    assert json.loads(span_output(OPENINFERENCE_LLM) or "") == [
        {"name": "lookup", "arguments": {"city": "Warsaw"}}
    ]
    assert span_input(OPENINFERENCE_LLM) == "Weather in Warsaw?"
    with_text = {**OPENINFERENCE_LLM, "llm.output_messages.0.message.content": "Let me look."}
    assert span_output(with_text) == "Let me look."  # text written with the call is the output, as before


def test_openllmetry_spans_give_kinds_calls_and_arguments(tracer: Tracer) -> None:
    llm = {
        "llm.request.type": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.prompt_tokens": 12,
        "gen_ai.usage.completion_tokens": 3,
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": "Weather?",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.tool_calls.0.id": "call_z",
        "gen_ai.completion.0.tool_calls.0.name": "lookup",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Paris"}',
    }
    tool = {
        "traceloop.span.kind": "tool",
        "traceloop.entity.name": "lookup",
        "traceloop.entity.input": '{"args": [], "kwargs": {"city": "Paris"}}',
        "traceloop.entity.output": '"15 C"',
    }
    workflow = {"traceloop.span.kind": "workflow", "traceloop.entity.name": "plan"}
    run = run_of(tracer, [("plan.workflow", workflow), ("openai.chat", llm), ("lookup.tool", tool)])
    assert [(step.kind, step.name) for step in run.steps] == [
        ("chain", "plan.workflow"),
        ("llm", "openai.chat"),
        ("tool", "lookup"),
    ]
    assert run.steps[1].requested[0].id == "call_z"
    assert run.steps[1].model == "gpt-4o"
    assert run.steps[1].cost_usd is not None
    assert run.tool_calls == (ToolCall("lookup", {"city": "Paris"}),)
    assert run.llm_calls == 1
    assert span_output(llm) == '[{"name":"lookup","arguments":{"city":"Paris"}}]'
    assert requested_tool_calls(llm) == [("lookup", '{"city": "Paris"}', "call_z")]


def test_nested_steps_have_their_depth_and_an_error_is_read(tracer: Tracer) -> None:
    with tracer.start_as_current_span("agent") as root:
        with (
            tracer.start_as_current_span("planner", attributes={"openinference.span.kind": "CHAIN"}) as chain,
            tracer.start_as_current_span(
                "search", attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}
            ) as tool,
        ):
            tool.set_status(Status(StatusCode.ERROR, "TimeoutError: no answer in 5 s"))
        with tracer.start_as_current_span("other") as other:
            pass
    spans = [span for span in (other, tool, chain) if isinstance(span, ReadableSpan)]
    assert isinstance(root, ReadableSpan)
    run = build_run(root, spans)
    assert [(step.kind, step.name, step.depth) for step in run.steps] == [
        ("chain", "planner", 1),
        ("tool", "search", 2),
        ("span", "other", 1),
    ]
    assert run.steps[1].error == "TimeoutError: no answer in 5 s"
    assert run.steps[1].tool_call is not None
    assert run.steps[1].tool_call.error == "TimeoutError: no answer in 5 s"
    assert run.steps[0].span_id == f"{chain.get_span_context().span_id:016x}"


ODD: list[Mapping[str, Any]] = [
    {
        "gen_ai.operation.name": "chat",
        "gen_ai.output.messages": "[{not json",
        "gen_ai.usage.input_tokens": -3,
    },
    {"gen_ai.operation.name": "chat", "gen_ai.output.messages": '{"role": "assistant"}'},
    {
        "gen_ai.operation.name": "chat",
        "gen_ai.output.messages": '[1, {"parts": 7}, {"parts": [{"type": "tool_call"}]}]',
    },
    {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.call.arguments": "not json {",
        "gen_ai.tool.name": "",
    },
    {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.call.arguments": "[1, 2]",
        "gen_ai.tool.call.id": "x",
    },
    {"openinference.span.kind": "TOOL", "input.value": 42, "tool.name": ("a", "b")},
    {"openinference.span.kind": "RERANKER", "output.value": True},
    {"openinference.span.kind": 7, "llm.output_messages.x.message.tool_calls.0.tool_call.function.name": "f"},
    {
        "llm.output_messages.0.message.tool_calls.y.tool_call.function.name": "f",
        "llm.token_count.prompt": "lots",
    },
    {"gen_ai.completion.0.tool_calls.0.name": 5, "gen_ai.completion.0.tool_calls.1.arguments": "{}"},
    {"traceloop.span.kind": "tool", "traceloop.entity.input": '{"args": [1], "kwargs": {}}'},
    {"traceloop.span.kind": "tool", "traceloop.entity.input": "{bad"},
    {"final_result": ("x",), "pydantic_ai.all_messages": "[{]"},
    {"gen_ai.operation.name": 3, "traceloop.span.kind": 4, "llm.request.type": 5},
]


def test_odd_attributes_never_raise_and_bad_json_stays_text(tracer: Tracer) -> None:
    run = run_of(tracer, [(f"odd {i}", attributes) for i, attributes in enumerate(ODD)])
    assert len(run.steps) == len(ODD)
    kinds = [step.kind for step in run.steps]
    assert kinds[:6] == ["llm", "llm", "llm", "tool", "tool", "tool"]
    assert kinds[6] == "span"  # an OpenInference kind that is no step kind
    assert run.steps[0].output == "[{not json"
    assert run.steps[3].tool_call == ToolCall("odd 3", "not json {")  # no name: the span's name
    assert run.steps[3].tool_call.arguments_text
    assert run.steps[4].tool_call is not None
    assert run.steps[4].tool_call.arguments == "[1, 2]"
    assert run.steps[10].tool_call is not None
    assert run.steps[10].tool_call.arguments == {"args": [1], "kwargs": {}}  # positional: as recorded
    assert run.steps[11].tool_call is not None
    assert run.steps[11].tool_call.arguments == "{bad"
    assert all(not step.requested for step in run.steps)
    assert [call.name for call in run.tool_calls] == ["odd 3", "odd 4", "odd 5", "odd 10", "odd 11"]


def test_a_pydantic_ai_agent_span_reads_its_final_result_and_last_user_text() -> None:
    """pydantic-ai's attributes, as the real agent in test_build_from_spans writes them; here the
    corners: the last user message with text, not the tool results it sends back as user."""
    messages = [
        {"role": "user", "parts": [{"type": "text", "content": "first"}]},
        {"role": "assistant", "parts": [{"type": "text", "content": "ok"}]},
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Warsaw?"}]},
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c", "name": "lookup", "arguments": "{}"}],
        },
        {
            "role": "user",
            "parts": [{"type": "tool_call_response", "id": "c", "name": "lookup", "result": "12 C"}],
        },
        {"role": "assistant", "parts": [{"type": "text", "content": "12 C"}]},
    ]
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "final_result": "12 C",
        "pydantic_ai.all_messages": json.dumps(messages),
    }
    assert span_output(attributes) == "12 C"
    assert span_input(attributes) == "Weather in Warsaw?"
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.call.arguments": "{}",
        "gen_ai.tool.call.result": "x",
    }
    assert (span_input(tool), span_output(tool)) == ("{}", "x")
    # a convention's messages still come before output.value, as before
    assert (
        span_output({"output.value": "mine", "llm.output_messages.0.message.content": "theirs"}) == "theirs"
    )


SEND = "MCP send tools/call"  # the mcp SDK's own span of the request: a plain span step


@pytest.mark.parametrize(
    ("inner_tool", "expected"),
    [
        # an MCP client's span under the framework's span of the same call: one step
        pytest.param("get_weather", [("tool", "get_weather", 1), ("span", SEND, 2)], id="same"),
        # a tool that calls another tool: two steps
        pytest.param(
            "geocode", [("tool", "get_weather", 1), ("tool", "geocode", 2), ("span", SEND, 3)], id="other"
        ),
    ],
)
def test_a_tool_span_inside_a_tool_step_of_the_same_tool_is_that_step(
    tracer: Tracer, inner_tool: str, expected: list[tuple[str, str, int]]
) -> None:
    def tool(name: str) -> dict[str, Any]:
        return {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}

    with (
        tracer.start_as_current_span("agent") as root,
        tracer.start_as_current_span("execute_tool get_weather", attributes=tool("get_weather")) as outer,
        tracer.start_as_current_span("tools/call", attributes=tool(inner_tool)) as inner,
        tracer.start_as_current_span(SEND, attributes={"mcp.method.name": "tools/call"}) as wire,
    ):
        pass
    spans = [span for span in (wire, inner, outer) if isinstance(span, ReadableSpan)]
    assert isinstance(root, ReadableSpan)
    run = build_run(root, spans)
    assert [(step.kind, step.name, step.depth) for step in run.steps] == expected
    assert len(run.tool_calls) == len([kind for kind, _, _ in expected if kind == "tool"])
