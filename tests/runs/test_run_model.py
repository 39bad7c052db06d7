"""The run model: tool calls as users write them, checked; a requested call and its execution
counted once; Expected wherever an expected value goes."""

from __future__ import annotations

from typing import Any

import pytest

from tracesim import ConfigError
from tracesim.runs import NOT_GIVEN, Expected, Run, Step, ToolCall, tool_calls


def test_arguments_as_json_text_are_parsed_and_other_text_is_kept_as_text() -> None:
    parsed = ToolCall.of({"name": "lookup", "arguments": '{"city": "Warsaw", "days": 2}'})
    assert parsed.arguments == {"city": "Warsaw", "days": 2}
    assert not parsed.arguments_text
    kept = ToolCall.of({"name": "search", "arguments": "[1, 2"})
    assert kept.arguments == "[1, 2"
    assert kept.arguments_text
    assert ToolCall.of({"name": "ping"}).arguments == {}
    assert ToolCall.of({"name": "ping", "args": {"a": 1}}).arguments == {"a": 1}


@pytest.mark.parametrize(
    ("value", "setting"),
    [
        ({"name": "a"}, "tool_calls"),
        ([{"arguments": {}}], "tool_calls[0].name"),
        ([{"name": "a"}, "b"], "tool_calls[1]"),
        ([{"name": ""}], "tool_calls[0].name"),
        ([{"name": "a", "argumnets": {}}], "tool_calls[0].argumnets"),
        ("not json", "tool_calls"),
        (3, "tool_calls"),
    ],
)
def test_anything_but_a_list_of_tool_calls_names_the_field(value: Any, setting: str) -> None:
    with pytest.raises(ConfigError) as info:
        tool_calls(value)
    assert info.value.setting == setting


def test_expected_takes_output_and_or_tool_calls_and_names_bad_ones() -> None:
    both = Expected.of({"output": "12 C", "tool_calls": [{"name": "lookup", "arguments": {"city": "W"}}]})
    assert both.output == "12 C"
    assert both.tool_calls == (ToolCall("lookup", {"city": "W"}),)
    assert Expected(tool_calls=[{"name": "a"}]).output is NOT_GIVEN
    with pytest.raises(ConfigError) as info:
        Expected.of({"outputs": "x"})
    assert info.value.setting == "expected"
    with pytest.raises(ConfigError) as info:
        Expected(tool_calls=[{"name": "a", "arguments": {}}, {"nam": "b"}])
    assert info.value.setting == "expected.tool_calls[1].name"


def test_a_requested_call_and_the_tool_span_that_ran_it_are_one_call() -> None:
    by_id = ToolCall("lookup", {"city": "W"}, id="call_1")
    unmatched = ToolCall("convert", {"amount": 1}, id="call_2")
    executed = ToolCall("lookup", {"city": "W"}, output="12", id="call_1")
    run = Run(
        steps=(
            Step(kind="llm", name="chat", requested=(by_id, unmatched), input_tokens=10, output_tokens=5),
            Step(
                kind="tool",
                name="lookup",
                tool_call=executed,
            ),
            Step(kind="llm", name="chat", requested=(ToolCall("notify", {"to": "x"}),), cost_usd=0.002),
            Step(kind="tool", name="notify", tool_call=ToolCall("notify", {"to": "x"})),
            Step(kind="llm", name="chat", cost_usd=0.001),
        ),
        output="done",
    )
    assert [(call.name, call.output) for call in run.tool_calls] == [
        ("convert", None),  # requested, never executed: still a call the model made
        ("lookup", "12"),
        ("notify", None),
    ]
    assert run.llm_calls == 3
    assert run.tokens == 15
    assert run.cost_usd == pytest.approx(0.003)
    assert Run().cost_usd is None


def test_steps_and_calls_are_immutable_and_serialise_to_json_data() -> None:
    call = ToolCall.of({"name": "lookup", "arguments": {"city": "W"}, "output": {"t": 12}})
    step = Step(kind="tool", name="lookup", tool_call=call, duration_s=0.5)
    with pytest.raises(AttributeError):
        step.name = "other"  # type: ignore[misc]
    assert step.as_dict() == {
        "kind": "tool",
        "name": "lookup",
        "duration_s": 0.5,
        "tool_call": {"name": "lookup", "arguments": {"city": "W"}, "output": {"t": 12}},
    }


def test_a_request_with_an_id_and_an_execution_without_one_are_one_call() -> None:
    """A tool span that records no call id (tracesim's own, say) still pairs with the request
    by name and arguments; a request whose id no execution has is still a call of its own."""
    run = Run(
        steps=(
            Step(kind="llm", name="chat", requested=(ToolCall("lookup", {"city": "W"}, id="call_9"),)),
            Step(kind="tool", name="lookup", tool_call=ToolCall("lookup", {"city": "W"})),
            Step(kind="llm", name="chat", requested=(ToolCall("lookup", {"city": "K"}, id="call_10"),)),
        )
    )
    assert [call.arguments for call in run.tool_calls] == [{"city": "W"}, {"city": "K"}]
