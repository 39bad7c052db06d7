"""Run evaluators scored online: the scored span's subtree, kept in the process, becomes the run.

Agents are tracesim's own ``@trace`` functions calling the real ``openai`` client over HTTP to
the scripted server (traced by tracesim's OpenAI integration), ``span()`` blocks, and a real
pydantic-ai agent under a ``kind: agent`` rule. Both scoring modes: inline (scored before the
call returns) and background (worker threads, the span ending later with the results).
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from llm_server import CHAT, LLMServer, Reply
from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from scripted_agent import weather_agent

import tracesim
from tracesim import _runtime
from tracesim.evaluators import Evaluator
from tracesim.runs import Expected, Run
from tracesim.testing import capture_spans
from tracesim.tracefile import SpanRecord

pytest.importorskip(
    "opentelemetry.instrumentation.genai.openai",
    reason="the 'openai' extra (opentelemetry-instrumentation-genai-openai) is not installed",
)

WARSAW_THEN_PARIS = [
    {"name": "lookup", "arguments": {"city": "Warsaw"}},
    {"name": "lookup", "arguments": {"city": "Paris"}},
]


class Seen(Evaluator):
    """A run evaluator keeping the runs it was handed (scores 1 when it has steps)."""

    type_name = "seen_runs"
    scores_runs = True
    requires_expected = False

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[Any] = []

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
        self.runs.append(output)
        return 1.0 if isinstance(output, Run) and output.steps else 0.0


def result(span: SpanRecord, name: str) -> dict[str, Any]:
    """The evaluation result event named ``name`` on ``span``, its details parsed."""
    events = [e for e in span.events if e.name == "gen_ai.evaluation.result"]
    found = [dict(e.attributes) for e in events if e.attributes.get("gen_ai.evaluation.name") == name]
    assert len(found) == 1, [e.attributes for e in events]
    event = found[0]
    if "tracesim.evaluation.details" in event:
        event["details"] = json.loads(event["tracesim.evaluation.details"])
    return event


def script_two_lookups(server: LLMServer) -> None:
    server.script(
        CHAT,
        Reply.tool_call("lookup", '{"city": "Warsaw"}'),
        Reply.tool_call("lookup", '{"city": "Paris"}'),
        Reply.content("Warsaw 12 C, Paris 15 C"),
    )


@pytest.mark.parametrize("mode", ["inline", "background"])
def test_a_traced_openai_agent_is_scored_by_its_tool_calls(instrumented: LLMServer, mode: str) -> None:
    server = instrumented
    script_two_lookups(server)
    agent = weather_agent(
        server,
        evaluators=["trajectory_match", "tool_correctness", {"type": "run_budget", "max_tool_calls": 1}],
        expected=Expected(output="Warsaw 12 C, Paris 15 C", tool_calls=WARSAW_THEN_PARIS),
    )
    with capture_spans(scoring_mode=mode) as captured:
        assert agent("Weather in Warsaw and Paris?") == "Warsaw 12 C, Paris 15 C"
    span = captured.by_name("agent")
    assert span.attributes["tracesim.eval.trajectory_match.score"] == 1.0
    assert span.attributes["tracesim.eval.tool_correctness.score"] == 1.0
    budget = result(span, "run_budget")
    assert budget["gen_ai.evaluation.score.value"] == 0.0  # two tool calls, one allowed
    assert budget["tracesim.evaluation.passed"] is False
    assert "run_truncated" not in budget.get("details", {})
    assert json.loads(span.attributes["tracesim.expected.tool_calls"]) == WARSAW_THEN_PARIS
    # the requested call and the tool span that ran it are one call, not two
    assert len(captured.named("lookup")) == 2


def test_a_wrong_trajectory_fails_and_the_details_name_the_calls(instrumented: LLMServer) -> None:
    server = instrumented
    server.script(
        CHAT,
        Reply.tool_call("lookup", '{"city": "Paris"}'),
        Reply.tool_call("lookup", '{"city": "Berlin"}'),
        Reply.content("done"),
    )
    agent = weather_agent(
        server,
        evaluators=[{"type": "tool_correctness", "params": ["input_parameters"], "threshold": 0.9}],
        expected=Expected(tool_calls=WARSAW_THEN_PARIS),
    )
    with capture_spans() as captured:
        agent("Weather in Warsaw and Paris?")
    found = result(captured.by_name("agent"), "tool_correctness")
    assert found["tracesim.evaluation.passed"] is False
    assert found["gen_ai.evaluation.score.value"] == pytest.approx(0.5)
    assert found["details"]["missing"] == [{"name": "lookup", "arguments": {"city": "Warsaw"}}]
    berlin = {"name": "lookup", "arguments": {"city": "Berlin"}, "output": "unknown"}
    assert found["details"]["extra"] == [berlin]


def test_span_blocks_and_nested_agents_each_get_their_own_run(instrumented: LLMServer) -> None:
    seen = Seen()

    @tracesim.trace(kind="tool")
    def lookup(city: str) -> str:
        return "12 C"

    @tracesim.trace(kind="agent", evaluators=[seen])
    def inner(question: str) -> str:
        return lookup("Warsaw")

    with capture_spans() as captured, tracesim.span("outer", kind="agent", evaluators=[seen]) as outer:
        lookup("Paris")
        outer.set_output(inner("Warsaw?"))
    assert len(seen.runs) == 2
    inner_run, outer_run = seen.runs  # the inner call ends (and is scored) first
    assert [(s.kind, s.name, s.depth) for s in inner_run.steps] == [("tool", "lookup", 1)]
    assert inner_run.output == "12 C"
    assert [(s.kind, s.name, s.depth) for s in outer_run.steps] == [
        ("tool", "lookup", 1),
        ("agent", "inner", 1),
        ("tool", "lookup", 2),
    ]
    assert captured.by_name("outer").attributes["tracesim.eval.seen_runs.score"] == 1.0


def test_a_child_that_never_ends_is_waited_for_within_the_bound_then_marked(instrumented: LLMServer) -> None:
    seen = Seen()
    left: list[Any] = []

    @tracesim.trace(kind="agent", evaluators=[seen])
    def agent() -> str:
        tracer = _runtime.active().tracer  # type: ignore[union-attr]
        tool = tracer.start_span("background tool", attributes={"gen_ai.operation.name": "execute_tool"})
        left.append(tool)
        return "answered before its tool ended"

    with capture_spans(scoring_mode="background", max_defer_s=0.4) as captured:
        assert agent() == "answered before its tool ended"  # the caller does not wait
        assert tracesim.force_flush(5.0)
        stats = tracesim.scoring_stats()
        left[0].end()
    assert (stats.runs_truncated, stats.runs_spans_left_out, stats.runs_traces_evicted) == (1, 0, 0)
    (run,) = seen.runs
    assert run.truncated
    assert run.truncated_reason == "1 step(s) had not ended: 'background tool'"
    details = result(captured.by_name("agent"), "seen_runs")["details"]
    assert details["run_truncated"] == run.truncated_reason


def test_a_child_ending_soon_after_the_return_is_in_the_run(instrumented: LLMServer) -> None:
    seen = Seen()
    started = threading.Event()

    @tracesim.trace(kind="tool")
    def slow_lookup() -> str:
        started.set()
        threading.Event().wait(0.05)
        return "12 C"

    @tracesim.trace(kind="agent", evaluators=[seen])
    def agent() -> str:
        current = otel_context.get_current()  # the tool runs in a thread, under this span
        worker = threading.Thread(target=lambda: (otel_context.attach(current), slow_lookup()))
        worker.start()
        started.wait(5)
        return "sent"

    with capture_spans(scoring_mode="background", max_defer_s=10.0):
        agent()
        assert tracesim.force_flush(10.0)
    (run,) = seen.runs
    assert [step.name for step in run.steps] == ["slow_lookup"]
    assert not run.truncated


def test_kept_spans_are_released_whatever_becomes_of_the_call(instrumented: LLMServer) -> None:
    seen = Seen()

    @tracesim.trace(kind="tool")
    def lookup(city: str) -> str:
        return "12 C"

    @tracesim.trace(kind="agent", evaluators=[seen])
    def agent(fail: bool) -> str:
        lookup("Warsaw")
        if fail:
            raise ValueError("the user's own error")
        return "ok"

    with capture_spans(scoring_mode="background") as captured:
        recorder = _runtime.active().runs  # type: ignore[union-attr]
        assert recorder is not None
        for index in range(30):
            if index % 3 == 0:
                with pytest.raises(ValueError, match="the user's own error"):
                    agent(True)
            else:
                agent(False)
        assert tracesim.force_flush(10.0)
        assert recorder.traces == {}  # nothing kept once scored, or once the call raised
    assert len(seen.runs) == 20
    assert len(captured.named("agent")) == 30


def test_a_busy_process_keeps_a_bounded_number_of_traces(instrumented: LLMServer) -> None:
    from tracesim._runs._recorder import RunRecorder

    recorder = RunRecorder(record_all=True, max_traces=5, max_spans=3)
    with capture_spans() as captured:
        tracer = _runtime.active().tracer  # type: ignore[union-attr]
        for _ in range(20):
            root = tracer.start_span("never ends")
            recorder.started(root)
        assert len(recorder.traces) == 5
        assert recorder.evicted == 15
        with tracer.start_as_current_span("agent") as agent:
            recorder.started(agent)
            for index in range(10):
                with tracer.start_as_current_span(f"step {index}") as step:
                    recorder.started(step)
                recorder.ended(step)  # type: ignore[arg-type]
            run = recorder.take(agent, "done", None, 0.0)
        del captured
    assert [step.name for step in run.steps] == ["step 0", "step 1", "step 2"]
    assert run.truncated
    assert run.truncated_reason == "7 span(s) of the trace were not kept (the recorder's span limit)"


def test_an_llm_rule_skips_tool_call_requests_and_scores_answers(instrumented: LLMServer) -> None:
    server = instrumented
    script_two_lookups(server)
    agent = weather_agent(server)
    rule = {"kind": "llm", "evaluators": ["exact"], "expected": "Warsaw 12 C, Paris 15 C"}
    with capture_spans(evaluators=[rule]) as captured:
        agent("Weather?")
    chats = captured.named("chat gpt-4o-mini")
    assert len(chats) == 3
    statuses = [result(chat, "exact")["tracesim.evaluation.status"] for chat in chats]
    assert statuses == ["skipped", "skipped", "ok"]
    skipped = result(chats[0], "exact")
    assert "request for tool calls" in skipped["gen_ai.evaluation.explanation"]
    assert chats[2].attributes["tracesim.eval.exact.score"] == 1.0


def test_record_run_gives_a_block_its_run_to_assert_on(instrumented: LLMServer) -> None:
    script_two_lookups(instrumented)
    agent = weather_agent(instrumented)
    with capture_spans(), tracesim.record_run("weather check") as recorded:
        recorded.span.set_output(agent("Weather in Warsaw and Paris?"))
    run = recorded.run
    assert [call.as_dict() for call in run.tool_calls] == [
        {"name": "lookup", "arguments": {"city": "Warsaw"}, "output": "12 C"},
        {"name": "lookup", "arguments": {"city": "Paris"}, "output": "15 C"},
    ]
    assert run.llm_calls == 3
    assert run.output == "Warsaw 12 C, Paris 15 C"
    assert [s.name for s in run.steps if s.depth == 1] == ["agent"]


def test_record_run_keeps_the_run_up_to_an_error_and_lets_the_error_through() -> None:
    @tracesim.trace(kind="tool")
    def lookup(city: str) -> str:
        return "12 C"

    kept: list[tracesim.RecordedRun] = []

    def check() -> None:
        with tracesim.record_run() as recorded:
            kept.append(recorded)
            lookup("Warsaw")
            raise KeyError("the user's")

    with capture_spans():
        with pytest.raises(KeyError, match="the user's"):
            check()
        assert _runtime.active().runs.traces == {}  # type: ignore[union-attr]
    assert [call.name for call in kept[0].run.tool_calls] == ["lookup"]


def test_record_run_without_configure_says_what_to_do() -> None:
    previous = _runtime.install(None)
    try:
        with pytest.raises(tracesim.TracesimError, match=r"call tracesim.configure\(\) first"):  # noqa: SIM117
            with tracesim.record_run():
                pass
    finally:
        _runtime.install(previous)


def test_plain_traced_tools_are_compared_by_their_arguments_by_name() -> None:
    """No model in the loop: an agent calling two ``@trace(kind="tool")`` functions."""

    @tracesim.trace(kind="tool")
    def lookup(city: str) -> float:
        return 12.0

    @tracesim.trace(kind="tool")
    def convert(celsius: float, unit: str = "F") -> float:
        return celsius * 9 / 5 + 32

    expected = Expected(
        tool_calls=[
            {"name": "lookup", "arguments": {"city": "Warsaw"}},
            {"name": "convert", "arguments": {"celsius": 12.0, "unit": "F"}},
        ]
    )

    @tracesim.trace(
        kind="agent",
        evaluators=[
            {"type": "trajectory_match", "mode": "strict"},
            {"type": "run_budget", "max_tool_calls": 2},
        ],
        expected=expected,
    )
    def agent(city: str) -> str:
        return f"{convert(lookup(city)):.1f} F"

    with capture_spans() as captured:
        assert agent("Warsaw") == "53.6 F"
        agent("Paris")
    good, bad = captured.named("agent")
    assert good.attributes["tracesim.eval.trajectory_match.score"] == 1.0
    assert good.attributes["tracesim.eval.run_budget.score"] == 1.0
    assert bad.attributes["tracesim.eval.trajectory_match.score"] == 0.0
    lookups = captured.named("lookup")
    assert [json.loads(s.attributes["gen_ai.tool.call.arguments"]) for s in lookups] == [
        {"city": "Warsaw"},
        {"city": "Paris"},
    ]


def test_tool_arguments_are_redacted_on_the_way_out() -> None:
    secret = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"

    @tracesim.trace(kind="tool")
    def call_api(key: str, city: str) -> str:
        return "12 C"

    with capture_spans() as captured:
        call_api(secret, "Warsaw")
    arguments = captured.by_name("call_api").attributes["gen_ai.tool.call.arguments"]
    assert "Abc123Def456Ghi789" not in arguments
    assert "[REDACTED:" in arguments
    assert json.loads(arguments)["city"] == "Warsaw"


def test_a_rule_scores_an_agent_span_without_output_by_its_last_answer() -> None:
    """OpenInference's OpenAI Agents spans: the agent span records no output, its LLM spans do."""
    rule = {
        "kind": "agent",
        "evaluators": ["exact", "trajectory_match"],
        "expected": {
            "output": "12 C in Warsaw",
            "tool_calls": [{"name": "lookup", "arguments": {"city": "Warsaw"}}],
        },
    }
    asking = {
        "openinference.span.kind": "LLM",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_a",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"city": "Warsaw"}',
    }
    tool = {"openinference.span.kind": "TOOL", "tool.name": "lookup", "input.value": '{"city": "Warsaw"}'}
    answering = {
        "openinference.span.kind": "LLM",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "12 C in Warsaw",
    }
    with capture_spans(evaluators=[rule]) as captured:
        tracer = _runtime.active().provider.get_tracer("openinference-like")  # type: ignore[union-attr]
        with tracer.start_as_current_span("Agent workflow", attributes={"openinference.span.kind": "AGENT"}):
            for name, attributes in (("response", asking), ("lookup", tool), ("response", answering)):
                with tracer.start_as_current_span(name, attributes=attributes):
                    pass
    agent = captured.by_name("Agent workflow")
    assert agent.attributes["tracesim.eval.exact.score"] == 1.0
    assert agent.attributes["tracesim.eval.trajectory_match.score"] == 1.0
    # the LLM span that only asked for the tool is not scored as an answer by the agent rule
    assert not any(key.startswith("tracesim.eval.") for key in captured.named("response")[0].attributes)


def test_spans_kept_in_all_traces_are_bounded_and_counted() -> None:
    from tracesim._runs._recorder import RunRecorder

    recorder = RunRecorder(record_all=True, max_kept=4)
    with capture_spans():
        tracer = _runtime.active().tracer  # type: ignore[union-attr]
        roots = []
        for _ in range(3):  # three agents running at once, two steps each
            root = tracer.start_span("agent")
            recorder.started(root)
            roots.append(root)
        for root in roots:
            for name in ("first", "second"):
                step = tracer.start_span(name, context=otel_trace.set_span_in_context(root))
                recorder.started(step)
                step.end()
                recorder.ended(step)  # type: ignore[arg-type]
        assert recorder.kept == 4
        runs = [recorder.take(root, None, None, 0.0) for root in roots]
        for root in roots:
            root.end()
            recorder.ended(root)  # type: ignore[arg-type]
    assert [len(run.steps) for run in runs] == [2, 2, 0]
    assert runs[2].truncated_reason == "2 span(s) of the trace were not kept (the recorder's span limit)"
    assert recorder.traces == {}
    assert recorder.kept == 0


def test_record_run_works_with_scoring_off() -> None:
    @tracesim.trace(kind="tool")
    def lookup(city: str) -> str:
        return "12 C"

    with capture_spans(scoring_mode="off"), tracesim.record_run() as recorded:
        lookup("Warsaw")
    assert [call.as_dict() for call in recorded.run.tool_calls] == [
        {"name": "lookup", "arguments": {"city": "Warsaw"}, "output": "12 C"}
    ]


# -- what the review found: claims, nesting, long-lived roots, unsampled spans, eviction, release


def test_record_run_under_a_rule_that_scores_the_same_span_keeps_its_run() -> None:
    rule = {
        "kind": "agent",
        "evaluators": ["trajectory_match"],
        "expected": {"tool_calls": WARSAW_THEN_PARIS},
    }

    @tracesim.trace(kind="tool")
    def lookup(city: str) -> str:
        return "12 C"

    with capture_spans(evaluators=[rule]) as captured, tracesim.record_run("check") as recorded:
        lookup("Warsaw")
        lookup("Paris")
    assert [call.arguments for call in recorded.run.tool_calls] == [{"city": "Warsaw"}, {"city": "Paris"}]
    assert not recorded.run.truncated
    assert captured.by_name("check").attributes["tracesim.eval.trajectory_match.score"] == 1.0


def test_a_scored_tool_inside_a_scored_agent_is_a_finished_step_of_its_run() -> None:
    seen = Seen()
    slow = Seen()
    gate = threading.Event()
    original = slow.measure

    def measure(output: Any, expected: Any, *, input: Any = None) -> float:
        gate.wait(5)  # the tool's own scoring is still going when the agent's run is built
        return original(output, expected, input=input)

    slow.measure = measure  # type: ignore[method-assign]

    @tracesim.trace(kind="tool", evaluators=[slow])
    def lookup(city: str) -> str:
        return "12 C"

    @tracesim.trace(kind="agent", evaluators=[seen])
    def agent() -> str:
        return lookup("Warsaw")

    with capture_spans(scoring_mode="background", scoring_workers=2, max_defer_s=10.0):
        agent()
        deadline = threading.Event()
        for _ in range(500):
            if seen.runs:
                break
            deadline.wait(0.01)
        gate.set()
        assert tracesim.force_flush(10.0)
    (run,) = seen.runs
    assert not run.truncated, run.truncated_reason
    assert [(step.name, step.duration_s is not None) for step in run.steps] == [("lookup", True)]


def test_a_long_lived_root_under_an_agent_rule_does_not_starve_later_runs() -> None:
    rule = {
        "kind": "agent",
        "evaluators": ["trajectory_match"],
        "expected": {"tool_calls": [{"name": "lookup"}]},
    }
    rule["evaluators"] = [{"type": "trajectory_match", "args": "ignore"}]

    @tracesim.trace(kind="tool")
    def lookup(city: str) -> str:
        return "12 C"

    @tracesim.trace(kind="agent")
    def agent(city: str) -> str:
        return lookup(city)

    with capture_spans(evaluators=[rule]) as captured, tracesim.span("nightly job"):
        for number in range(600):  # 1,200 spans under one root: more than a trace keeps
            agent(f"city {number}")
    scores = [span.attributes["tracesim.eval.trajectory_match.score"] for span in captured.named("agent")]
    assert scores == [1.0] * 600


def test_a_span_that_is_not_recorded_is_not_watched() -> None:
    from tracesim._runs._recorder import RunRecorder

    recorder = RunRecorder()
    context = otel_trace.SpanContext(1, 2, is_remote=False, trace_flags=otel_trace.TraceFlags(0))
    recorder.watch(otel_trace.NonRecordingSpan(context))
    assert recorder.traces == {}


def test_the_run_of_an_evicted_trace_says_so() -> None:
    from tracesim._runs._recorder import RunRecorder

    recorder = RunRecorder(max_traces=1)
    with capture_spans():
        tracer = _runtime.active().tracer  # type: ignore[union-attr]
        first, second = tracer.start_span("first agent"), tracer.start_span("second agent")
        recorder.watch(first)
        source = recorder.source(first, "done", None)
        recorder.watch(second)  # a second trace while the first is kept: the first goes
        assert source is not None
        run = source.take(0.0)
        first.end()
        second.end()
    assert recorder.evicted == 1
    assert run.truncated
    assert run.truncated_reason == "the recorder let go of part of this trace (more than 1 traces at once)"


@pytest.mark.parametrize("how", ["sampled out", "queue full", "shutdown"])
def test_kept_spans_are_let_go_when_a_run_will_not_be_scored(how: str) -> None:
    seen = Seen()
    gate = threading.Event()
    original = seen.measure

    def measure(output: Any, expected: Any, *, input: Any = None) -> float:
        gate.wait(5)
        return original(output, expected, input=input)

    seen.measure = measure  # type: ignore[method-assign]
    seen.sample_rate = 0.0 if how == "sampled out" else 1.0

    @tracesim.trace(kind="tool")
    def lookup(city: str) -> str:
        return "12 C"

    @tracesim.trace(kind="agent", evaluators=[seen])
    def agent() -> str:
        return lookup("Warsaw")

    settings: dict[str, Any] = {"scoring_mode": "background", "scoring_workers": 1, "max_defer_s": 30.0}
    if how == "queue full":
        settings["scoring_queue_size"] = 1
    tracesim.configure(exporters=[], **settings)
    try:
        recorder = _runtime.active().runs  # type: ignore[union-attr]
        assert recorder is not None
        for _ in range(3):
            agent()
        if how == "shutdown":
            tracesim.shutdown(timeout_s=0.2)
        elif how == "queue full":
            assert tracesim.scoring_stats().dropped == 2
        left = {trace_id: set(kept.roots) for trace_id, kept in recorder.traces.items()}
        if how == "queue full":
            assert len(left) == 1  # the one run still being scored, and only it
        else:
            assert left == {}
    finally:
        gate.set()
        tracesim.shutdown()
