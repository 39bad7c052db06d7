"""Configuration rules score spans tracesim did not create: LLM calls of an instrumentation.

The LLM spans come from the real ``openai`` client over real HTTP to the scripted server,
traced by ``instrument_openai`` (OpenTelemetry's own instrumentation); OpenInference- and
OpenLLMetry-shaped spans are started with a plain OpenTelemetry tracer, as those
instrumentations start theirs.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from llm_server import LLMServer

import tracesim
from tracesim import _runtime
from tracesim._errors import ConfigError
from tracesim.evaluators import Evaluator, ExactMatch
from tracesim.testing import capture_spans
from tracesim.tracefile import SpanRecord, load_spans

pytest.importorskip(
    "opentelemetry.instrumentation.genai.openai",
    reason="the 'openai' extra (opentelemetry-instrumentation-genai-openai) is not installed",
)
from tracesim.integrations import uninstrument_openai

SECRET = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _instrumented(server: LLMServer) -> Iterator[None]:
    server.reset()
    tracesim.instrument_openai()
    yield
    uninstrument_openai()


def ask(server: LLMServer, question: str, model: str = "gpt-4o-mini") -> str:
    with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
        reply = client.chat.completions.create(model=model, messages=[{"role": "user", "content": question}])
    return str(reply.choices[0].message.content)


@tracesim.trace(kind="agent")
def agent(server: LLMServer, question: str, model: str = "gpt-4o-mini") -> str:
    return ask(server, question, model)


def spans_in(path: Path) -> list[SpanRecord]:
    return load_spans(path) if path.exists() else []


def results_of(span: Any) -> dict[str, dict[str, Any]]:
    return {
        str(event.attributes["gen_ai.evaluation.name"]): dict(event.attributes)
        for event in span.events
        if event.name == "gen_ai.evaluation.result"
    }


def test_a_kind_llm_rule_scores_the_llm_span_and_the_result_is_on_that_span(server: LLMServer) -> None:
    server.judge = lambda request: "Warsaw"
    rule = {"kind": "llm", "evaluators": ["exact"], "expected": "Warsaw"}  # a plain value, or {"value": ...}
    with capture_spans(evaluators=[rule]) as captured:
        assert agent(server, "Where was Marie Curie born?") == "Warsaw"
        llm, top = captured.spans
    assert llm.name == "chat gpt-4o-mini"
    assert results_of(llm)["exact"]["gen_ai.evaluation.score.value"] == 1.0
    assert llm.attributes["tracesim.eval.exact.passed"] is True
    assert llm.attributes["tracesim.expected.value"] == "Warsaw"
    assert llm.attributes["gen_ai.usage.input_tokens"] > 0  # the instrumentation's own attributes stay
    assert results_of(top) == {}  # the agent span matched no rule


def test_kind_may_be_the_genai_operation_and_attributes_select_by_model(server: LLMServer) -> None:
    server.judge = lambda request: "Paris"
    rule = {
        "match": "chat *",
        "kind": "chat",
        "attributes": {"gen_ai.request.model": "gpt-4o*", "gen_ai.operation.name": "chat"},
        "evaluators": [{"type": "exact", "name": "is_paris"}],
        "expected": {"value": "Paris"},
    }
    with capture_spans(evaluators=[rule]) as captured:
        ask(server, "Capital of France?", model="gpt-4o")
        ask(server, "Capital of France?", model="o3")
        scored, other = captured.spans
    assert scored.attributes["gen_ai.request.model"] == "gpt-4o"
    assert results_of(scored)["is_paris"]["tracesim.evaluation.passed"] is True
    assert other.attributes["gen_ai.request.model"] == "o3"
    assert results_of(other) == {}


def test_the_span_is_held_from_export_until_its_scores_are_in(server: LLMServer, tmp_path: Path) -> None:
    release, started = threading.Event(), threading.Event()

    class Slow(Evaluator):
        requires_expected = False

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
            started.set()
            assert release.wait(30)
            return 1.0 if output == "Warsaw" and input == "Born where?" else 0.0

    server.judge = lambda request: "Warsaw"
    path = tmp_path / "traces.jsonl"
    tracesim.configure(
        jsonl_path=path,
        batch_export=False,
        max_defer_s=60,
        evaluators=[{"kind": "llm", "evaluators": [Slow(name="slow")]}],
    )
    try:
        assert agent(server, "Born where?") == "Warsaw"  # the caller does not wait for the score
        assert started.wait(30)
        assert [s.name for s in spans_in(path)] == ["agent"]  # the LLM span waits for its score
        release.set()
        assert tracesim.force_flush(30)
        spans = {s.name: s for s in spans_in(path)}
    finally:
        release.set()
        tracesim.shutdown()
    llm = spans["chat gpt-4o-mini"]
    assert llm.parent_span_id == spans["agent"].span_id
    assert llm.attributes["tracesim.eval.slow.score"] == 1.0


def test_past_max_defer_s_the_span_goes_on_and_the_late_score_rides_a_carrier(
    server: LLMServer, tmp_path: Path
) -> None:
    release = threading.Event()

    class Late(Evaluator):
        requires_expected = False

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
            assert release.wait(30)
            return 0.5

    path = tmp_path / "traces.jsonl"
    tracesim.configure(
        jsonl_path=path,
        batch_export=False,
        max_defer_s=0.05,
        evaluators=[{"kind": "llm", "evaluators": [Late(name="late")]}],
    )
    try:
        ask(server, "Anything?")
        deadline_passed = _wait_for(lambda: any(s.name.startswith("chat") for s in spans_in(path)))
        assert deadline_passed
        release.set()
        assert tracesim.force_flush(30)
        spans = spans_in(path)
    finally:
        release.set()
        tracesim.shutdown()
    llm = next(s for s in spans if s.name.startswith("chat"))
    assert llm.attributes["tracesim.evaluation.deferred"] == ["late"]
    carrier = next(s for s in spans if s.name == "evaluation late")
    assert carrier.parent_span_id == llm.span_id
    assert carrier.attributes["tracesim.eval.late.score"] == 0.5


def _wait_for(condition: Any, timeout_s: float = 30.0) -> bool:
    done = threading.Event()
    for _ in range(int(timeout_s / 0.02)):
        if condition():
            return True
        done.wait(0.02)
    return False


def test_a_secret_in_a_scored_completion_is_redacted_in_the_file(server: LLMServer, tmp_path: Path) -> None:
    server.judge = lambda request: f"use {SECRET}"
    path = tmp_path / "traces.jsonl"
    tracesim.configure(
        jsonl_path=path,
        evaluators=[{"kind": "llm", "evaluators": ["exact"], "expected": {"value": f"use {SECRET}"}}],
    )
    try:
        agent(server, f"my key is {SECRET}")
        assert tracesim.force_flush(30)
    finally:
        tracesim.shutdown()
    text = path.read_text()
    assert SECRET not in text
    assert "[REDACTED:" in text
    llm = next(s for s in spans_in(path) if s.name.startswith("chat"))
    assert llm.attributes["tracesim.eval.exact.score"] == 1.0  # scored on the real text


def test_golden_answers_are_looked_up_by_the_llm_calls_input(server: LLMServer, tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"input": "Capital of Poland?", "expected": "Warsaw"}) + "\n")
    server.judge = lambda request: "Warsaw"
    rule = {"kind": "llm", "evaluators": ["exact"], "expected": {"golden": str(golden), "key": "input"}}
    with capture_spans(evaluators=[rule]) as captured:
        ask(server, "Capital of Poland?")
        (llm,) = captured.spans
    assert results_of(llm)["exact"]["tracesim.evaluation.passed"] is True


def test_openinference_and_openllmetry_spans_are_read_by_their_conventions() -> None:
    rule = {"kind": "llm", "evaluators": [ExactMatch()], "expected": {"value": "Warsaw"}}
    with capture_spans(evaluators=[rule]) as captured:
        provider = _runtime.current.provider if _runtime.current else None
        assert provider is not None
        tracer = provider.get_tracer("someone.elses.instrumentation")
        with tracer.start_as_current_span("ChatCompletion") as span:
            span.set_attribute("openinference.span.kind", "LLM")
            span.set_attribute("llm.input_messages.0.message.role", "user")
            span.set_attribute("llm.input_messages.0.message.content", "Born where?")
            span.set_attribute("llm.output_messages.0.message.role", "assistant")
            span.set_attribute("llm.output_messages.0.message.content", "Warsaw")
        with tracer.start_as_current_span("openai.chat") as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.prompt.0.role", "user")
            span.set_attribute("gen_ai.prompt.0.content", "Born where?")
            span.set_attribute("gen_ai.completion.0.content", "Krakow")
        openinference, openllmetry = captured.spans
    assert results_of(openinference)["exact"]["tracesim.evaluation.passed"] is True
    assert results_of(openllmetry)["exact"]["tracesim.evaluation.passed"] is False
    assert openllmetry.attributes["openinference.span.kind"] == "LLM"  # from its operation, for Phoenix


def test_an_llm_span_without_content_is_skipped_with_a_reason_once(
    server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    uninstrument_openai()
    tracesim.instrument_openai(capture=False)
    rule = {"kind": "llm", "evaluators": ["exact"], "expected": {"value": "Warsaw"}}
    with caplog.at_level(logging.WARNING, "tracesim"), capture_spans(evaluators=[rule]) as captured:
        ask(server, "one")
        ask(server, "two")
        first, second = captured.spans
    for span in (first, second):
        result = results_of(span)["exact"]
        assert result["tracesim.evaluation.status"] == "skipped"
        assert "content capture" in str(result["gen_ai.evaluation.explanation"])
    said = [r for r in caplog.records if "carries no output" in r.getMessage()]
    assert len(said) == 1
    assert "capture=True" in said[0].getMessage()


def test_a_rule_that_selected_nothing_says_so_once_at_shutdown(
    server: LLMServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tracesim.configure(
        jsonl_path=tmp_path / "t.jsonl",
        evaluators=[
            {"match": "chat*", "kind": "agent", "evaluators": ["exact"]},
            {"kind": "llm", "evaluators": ["exact"]},
        ],
    )
    agent(server, "Hello?")
    with caplog.at_level(logging.WARNING, "tracesim"):
        tracesim.shutdown()
    said = [r.getMessage() for r in caplog.records if "selected no span" in r.getMessage()]
    assert len(said) == 1
    assert "evaluators[0] (match 'chat*', kind 'agent')" in said[0]
    assert "'chat gpt-4o-mini' (llm/chat)" in said[0]  # what it could have meant


def test_a_rule_matches_a_framework_span_by_its_agents_or_workflows_own_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rules = [
        {"match": "weather", "evaluators": ["exact"], "expected": {"value": "12 C"}},
        {"match": "Lang", "evaluators": [{"type": "exact", "name": "never"}]},
    ]
    tracesim.configure(jsonl_path=tmp_path / "t.jsonl", evaluators=rules)
    runtime = _runtime.active()
    assert runtime is not None
    assert runtime.provider is not None
    tracer = runtime.provider.get_tracer("a-framework")
    named = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather", "output.value": "12 C"}
    with tracer.start_as_current_span("invoke_agent weather", attributes=named):
        pass
    with tracer.start_as_current_span(
        "invoke_workflow LangGraph", attributes={"gen_ai.workflow.name": "LangGraph"}
    ):
        pass
    with caplog.at_level(logging.WARNING, "tracesim"):
        tracesim.shutdown()
    spans = {span.name: span for span in load_spans(tmp_path / "t.jsonl")}
    assert spans["invoke_agent weather"].attributes["tracesim.eval.exact.score"] == 1.0
    said = [r.getMessage() for r in caplog.records if "selected no span" in r.getMessage()]
    assert len(said) == 1
    assert "Did you mean match: '*Lang*' (it would select 'invoke_workflow LangGraph')?" in said[0]


def test_tracesims_own_spans_are_selected_by_their_attributes_too() -> None:
    rule = {"attributes": {"tenant": "acme"}, "evaluators": ["exact"], "expected": {"value": "ok"}}
    with capture_spans(evaluators=[rule]) as captured:

        @tracesim.trace(attributes={"tenant": "acme"})
        def for_acme() -> str:
            return "ok"

        @tracesim.trace(attributes={"tenant": "globex"})
        def for_globex() -> str:
            return "ok"

        for_acme()
        for_globex()
        acme, globex = captured.spans
    assert results_of(acme)["exact"]["tracesim.evaluation.passed"] is True
    assert results_of(globex) == {}


@pytest.mark.parametrize(
    ("rule", "named"),
    [
        ({"kind": "completion", "evaluators": ["exact"]}, "evaluators[0].kind"),
        ({"attributes": ["model"], "evaluators": ["exact"]}, "evaluators[0].attributes"),
        ({"attributes": {"model": ["a", "b"]}, "evaluators": ["exact"]}, "evaluators[0].attributes.model"),
    ],
)
def test_a_bad_rule_is_refused_naming_what_to_change(rule: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError) as raised:
        tracesim.configure(exporters=[], evaluators=[rule])
    assert named in str(raised.value)
    if named.endswith("kind"):
        assert "chat" in str(raised.value)
        assert "llm" in str(raised.value)


def test_the_readme_rules_compile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    monkeypatch.chdir(tmp_path)  # the golden file the README names, here
    (tmp_path / "golden.jsonl").write_text(json.dumps({"question": "q", "expected": "a"}) + "\n")
    from tracesim._scoring._selection import compile_rules

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    blocks = [b.split("```", 1)[0] for b in readme.split("```yaml")[1:]]
    rules = [yaml.safe_load(_dedent(b))["evaluators"] for b in blocks if b.lstrip().startswith("evaluators:")]
    assert rules, "the README shows rules"
    for block in rules:
        compiled = compile_rules(block)
        assert len(compiled) == len(block)
    assert any(rule.kind == "llm" and rule.attributes for rule in compile_rules(rules[0]))


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text.strip("\n"))


def test_a_client_span_inside_the_instrumentations_span_is_counted_and_scored_once(
    server: LLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    anthropic = pytest.importorskip("anthropic", reason="the 'anthropic' extra is not installed")
    from tracesim.integrations import uninstrument_anthropic

    server.judge = lambda request: "Warsaw"
    path = tmp_path / "traces.jsonl"
    tracesim.configure(
        jsonl_path=path,
        evaluators=[{"kind": "llm", "evaluators": ["exact"], "expected": {"value": "Warsaw"}}],
    )
    tracesim.instrument_anthropic()
    try:
        with anthropic.Anthropic(base_url=server.root_url, api_key="test", max_retries=0) as client:
            client.messages.create(
                model="claude-x", max_tokens=20, messages=[{"role": "user", "content": "Born where?"}]
            )
        assert tracesim.force_flush(30)
    finally:
        uninstrument_anthropic()
        tracesim.shutdown()
    spans = {s.name: s for s in load_spans(path)}
    outer, inner = spans["chat claude-x"], spans["anthropic.messages.create"]  # the client traces itself
    assert inner.parent_span_id == outer.span_id
    assert inner.attributes["tracesim.llm.counted_in_parent"] is True
    assert outer.attributes["tracesim.eval.exact.passed"] is True
    assert not any(key.startswith("tracesim.eval.") for key in inner.attributes)  # scored once
    assert "llm.token_count.prompt" in outer.attributes
    assert "llm.token_count.prompt" not in inner.attributes  # Phoenix sums these: once per call

    from tracesim.cli import main

    capsys.readouterr()
    assert main(["report", str(path), "--json"]) == 0
    usage = json.loads(capsys.readouterr().out)["llm_usage"]
    assert usage["totals"]["calls"] == 1
    assert [row["name"] for row in usage["spans"]] == ["chat claude-x"]


def test_a_rule_expecting_tool_calls_records_them_on_a_foreign_span_as_on_tracesims() -> None:
    """An Expected on another instrumentation's span: its output in ``tracesim.expected.value``
    and its tool calls in ``tracesim.expected.tool_calls``, not JSON of the whole object."""
    rule = {
        "kind": "llm",
        "evaluators": [ExactMatch()],
        "expected": {"output": "Warsaw", "tool_calls": [{"name": "lookup", "arguments": {"city": "W"}}]},
    }
    with capture_spans(evaluators=[rule]) as captured:
        provider = _runtime.current.provider if _runtime.current else None
        assert provider is not None
        with provider.get_tracer("someone.elses").start_as_current_span("ChatCompletion") as span:
            span.set_attribute("openinference.span.kind", "LLM")
            span.set_attribute("llm.input_messages.0.message.role", "user")
            span.set_attribute("llm.input_messages.0.message.content", "Born where?")
            span.set_attribute("llm.output_messages.0.message.content", "Warsaw")
        (llm,) = captured.spans
    assert llm.attributes["tracesim.expected.value"] == "Warsaw"
    assert json.loads(str(llm.attributes["tracesim.expected.tool_calls"])) == [
        {"name": "lookup", "arguments": {"city": "W"}}
    ]
    assert results_of(llm)["exact"]["tracesim.evaluation.passed"] is True


def test_an_llm_call_inside_another_conventions_llm_span_is_counted_once_and_inside_yours_it_counts(
    server: LLMServer,
) -> None:
    """OpenInference's LLM span (OpenAI Agents', LangChain's) around the OpenAI integration's
    chat span is one call; a ``@trace(kind="llm")`` function around it is your code, not the call."""
    server.judge = lambda request: "Warsaw"
    tracesim.instrument_openai()
    try:
        with capture_spans() as captured:
            runtime = _runtime.active()
            assert runtime is not None
            assert runtime.provider is not None
            tracer = runtime.provider.get_tracer("openinference-like")
            with tracer.start_as_current_span("response", attributes={"openinference.span.kind": "LLM"}):
                ask(server, "Where?")

            @tracesim.trace(kind="llm")
            def my_model_call() -> None:
                ask(server, "Where?")

            @tracesim.trace(kind="embedding")
            def my_embedding() -> None:
                with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
                    client.embeddings.create(model="text-embedding-3-small", input="Warsaw")

            my_model_call()
            my_embedding()
    finally:
        uninstrument_openai()
    under_openinference, under_yours = captured.named("chat gpt-4o-mini")
    assert under_openinference.attributes["tracesim.llm.counted_in_parent"] is True
    assert "tracesim.llm.counted_in_parent" not in under_yours.attributes  # its tokens count
    embedding = captured.by_name("embeddings text-embedding-3-small")
    assert "tracesim.llm.counted_in_parent" not in embedding.attributes
