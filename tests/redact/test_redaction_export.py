"""Nothing leaves the process unredacted: every channel of every span, whoever created it.

Each test writes spans to the real local trace file (and the log-events file, and the
console) and then searches the raw bytes for the secret: not the decoded attributes, the
bytes, so an escaped or re-encoded copy is found too.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Link
from secret_kinds import SECRETS

import tracesim
from tracesim._redact import PATTERN_GROUPS, Redactor
from tracesim.evaluators import Evaluator, Measurement
from tracesim.exporters import ConsoleExporter
from tracesim.exporters._redacting import Redaction
from tracesim.tracefile import load_spans


def _configure(tmp_path: Path, **settings: Any) -> Path:
    path = tmp_path / "traces.jsonl"
    tracesim.configure(
        exporters=["jsonl"],
        jsonl_path=str(path),
        batch_export=settings.pop("batch_export", True),
        **settings,
    )
    return path


def _written(tmp_path: Path) -> str:
    assert tracesim.force_flush(timeout_s=30)
    text = "".join(p.read_text(encoding="utf-8") for p in sorted(tmp_path.glob("*.jsonl")))
    assert text, "nothing was written"
    return text


def _assert_clean(text: str, fragment: str) -> None:
    # JSON escapes slashes and quotes; search the raw text and its unescaped form.
    for haystack in (text, text.replace("\\\\", "\\").replace('\\"', '"').replace("\\/", "/")):
        assert fragment not in haystack


Channel = Callable[[str], None]


def _argument(secret: str) -> None:
    @tracesim.trace
    def call(question: str) -> str:
        return "ok"

    call(secret)


def _output(secret: str) -> None:
    @tracesim.trace
    def call() -> str:
        return f"the answer is {secret}"

    call()


def _exception(secret: str) -> None:
    @tracesim.trace
    def call() -> None:
        raise ConnectionError(f"upstream refused {secret}")

    with pytest.raises(ConnectionError):
        call()


def _set_attribute(secret: str) -> None:
    with tracesim.span("work") as s:
        s.set_attribute("note", secret)
        s.set_attribute("notes", [secret, "plain"])


def _static_attributes(secret: str) -> None:
    @tracesim.trace(attributes={"owner": secret})
    def call() -> str:
        return "ok"

    call()


def _span_name(secret: str) -> None:
    with tracesim.span(f"lookup {secret}"):
        pass

    @tracesim.trace(name=f"named {secret}")
    def call() -> str:
        return "ok"

    call()


def _evaluator_label(secret: str) -> None:
    class Leaky(Evaluator):
        type_name = "leaky"

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
            return Measurement(1.0, {"seen": secret}, explanation=f"compared {secret}", label=secret)

    @tracesim.trace(evaluators=[Leaky()], expected="ok")
    def call() -> str:
        return "ok"

    call()


def _score_call(secret: str) -> None:
    with tracesim.span("answer") as s:
        s.set_output("ok")
    tracesim.score(s, name="rating", value=1.0, label=secret, explanation=f"user wrote {secret}")


def _score_name(secret: str) -> None:
    # Names become attribute keys (tracesim.eval.<name>.score): keys leave the process too.
    with tracesim.span("answer") as s:
        s.set_output("ok")
    tracesim.score(s, name=secret, value=1.0, label="fine")


def _evaluator_name(secret: str) -> None:
    class Named(Evaluator):
        type_name = "named"

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
            return Measurement(1.0, label="fine")

    @tracesim.trace(evaluators=[Named(name=secret)], expected="ok")
    def call() -> str:
        return "ok"

    call()


def _foreign_span(secret: str) -> None:
    # Another instrumentation writing straight to OpenTelemetry, nested under tracesim's span.
    tracer = otel_trace.get_tracer("some.instrumentation")
    with tracesim.span("agent"):
        with tracer.start_as_current_span(f"chat {secret}") as other:
            other.set_attribute("gen_ai.prompt", f"user: {secret}")
            other.add_event("gen_ai.content.prompt", {"gen_ai.prompt": secret})
            other.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, f"failed for {secret}"))
        with tracer.start_as_current_span("linked", links=[Link(other.get_span_context(), {"why": secret})]):
            pass


CHANNELS: dict[str, Channel] = {
    "argument": _argument,
    "output": _output,
    "exception": _exception,
    "set_attribute": _set_attribute,
    "static_attributes": _static_attributes,
    "span_name": _span_name,
    "evaluator_label": _evaluator_label,
    "score": _score_call,
    "score_name": _score_name,
    "foreign_span": _foreign_span,
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
@pytest.mark.parametrize("channel", sorted(CHANNELS))
def test_no_secret_of_any_kind_reaches_the_file_through_any_channel(
    tmp_path: Path, kind: str, channel: str
) -> None:
    secret, fragment = SECRETS[kind]
    _configure(tmp_path, scoring_mode="inline")
    CHANNELS[channel](secret)
    text = _written(tmp_path)
    _assert_clean(text, fragment)
    assert "REDACTED" in text


# Evaluator names are refused unless made of letters, digits, '_', '.' and '-': the secrets
# that fit go through as names, into the keys tracesim.eval.<name>.*.
NAME_SECRETS = sorted(kind for kind, (secret, _) in SECRETS.items() if re.fullmatch(r"[\w.-]+", secret))


@pytest.mark.parametrize("kind", NAME_SECRETS)
def test_a_secret_as_an_evaluators_name_never_reaches_the_file(tmp_path: Path, kind: str) -> None:
    secret, fragment = SECRETS[kind]
    _configure(tmp_path, scoring_mode="inline")
    _evaluator_name(secret)
    text = _written(tmp_path)
    _assert_clean(text, fragment)
    assert "tracesim.eval.[REDACTED" in text


def test_exceptions_are_redacted_with_capture_off(tmp_path: Path) -> None:
    _configure(tmp_path, capture=False)
    _exception(SECRETS["openai"][0])
    text = _written(tmp_path)
    _assert_clean(text, SECRETS["openai"][1])
    span = load_spans(tmp_path / "traces.jsonl")[0]
    assert span.status_code == "ERROR"
    assert "[REDACTED" in span.status_message
    exception = span.event("exception")[0].attributes
    assert "[REDACTED" in exception["exception.message"]
    assert "[REDACTED" in exception["exception.stacktrace"]


def test_the_log_events_file_is_redacted_too(tmp_path: Path) -> None:
    _configure(tmp_path, scoring_mode="inline", evaluation_log_events=True)
    _evaluator_label(SECRETS["email"][0])
    text = _written(tmp_path)
    logs = (tmp_path / "traces.logs.jsonl").read_text(encoding="utf-8")
    assert "gen_ai.evaluation.result" in logs
    _assert_clean(text + logs, SECRETS["email"][1])


def test_the_console_exporter_prints_redacted_text(tmp_path: Path) -> None:
    stream = io.StringIO()
    tracesim.configure(exporters=[ConsoleExporter(stream)], batch_export=False)
    _output(SECRETS["github_pat"][0])
    _foreign_span(SECRETS["email"][0])
    tracesim.shutdown()
    printed = stream.getvalue()
    assert "REDACTED" in printed
    assert SECRETS["github_pat"][1] not in printed
    assert SECRETS["email"][1] not in printed


def test_the_resource_is_redacted(tmp_path: Path) -> None:
    _configure(tmp_path, resource_attributes={"deployment.owner": SECRETS["email"][0]})
    _argument("plain")
    _assert_clean(_written(tmp_path), SECRETS["email"][1])


def test_the_redact_hook_sees_every_channel(tmp_path: Path) -> None:
    seen: set[str] = set()

    def hook(text: str, attribute: str) -> str:
        seen.add(attribute)
        return text.replace("Curie", "C.")

    _configure(tmp_path, redact=hook)
    _exception("Marie Curie")
    _foreign_span("Marie Curie")
    text = _written(tmp_path)
    assert "Curie" not in text
    assert {
        "span.name",
        "exception.message",
        "exception.stacktrace",
        "status.message",
        "gen_ai.prompt",
    } <= seen


@pytest.mark.parametrize("limit", [100, 1000])
def test_no_part_of_a_secret_survives_the_cut(tmp_path: Path, limit: int) -> None:
    _configure(tmp_path, max_value_chars=limit, batch_export=False)
    secret = "sk-" + "s" * 40

    @tracesim.trace
    def call(text: str) -> str:
        return "ok"

    for offset in range(limit - 50, limit + 5):
        call("a" * offset + " " + secret + " " + "b" * (2 * limit))
    text = _written(tmp_path)
    values = [s.attributes["input.value"] for s in load_spans(tmp_path / "traces.jsonl")]
    assert len(values) == 55
    assert all("truncated" in v for v in values)
    assert not re.search(r"sk-s", text)
    assert "ssss" not in text


def test_a_foreign_attribute_longer_than_the_limit_is_cut_and_redacted(tmp_path: Path) -> None:
    _configure(tmp_path, max_value_chars=1000)
    tracer = otel_trace.get_tracer("other")
    with tracer.start_as_current_span("big") as other:
        other.set_attribute("blob", "x" * 995 + " " + SECRETS["openai"][0] + " " + "y" * 5000)
    text = _written(tmp_path)
    _assert_clean(text, SECRETS["openai"][1])
    blob = load_spans(tmp_path / "traces.jsonl")[0].attributes["blob"]
    assert len(blob) < 1100
    assert "truncated" in blob


def test_redaction_can_be_turned_off_and_then_values_pass_unchanged(tmp_path: Path) -> None:
    _configure(tmp_path, redact_patterns="none")
    _argument("mail marie@curie.org")
    span = load_spans_after_flush(tmp_path)[0]
    assert span.attributes["input.value"] == "mail marie@curie.org"


def load_spans_after_flush(tmp_path: Path) -> list[Any]:
    assert tracesim.force_flush(timeout_s=30)
    return load_spans(tmp_path / "traces.jsonl")


def test_a_failing_hook_withholds_each_value_not_the_span(tmp_path: Path) -> None:
    def hook(text: str, attribute: str) -> str:
        raise RuntimeError("hook bug")

    _configure(tmp_path, redact=hook)
    _argument(SECRETS["email"][0])
    spans = load_spans_after_flush(tmp_path)
    assert spans, "a failing hook withholds values, not spans"
    lines = [json.dumps(s.attributes) for s in spans]
    assert all(SECRETS["email"][1] not in line for line in lines)
    assert "redact hook failed" in spans[0].attributes["input.value"]


def test_a_span_sent_to_two_exporters_is_redacted_once_and_both_get_the_result(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    calls: dict[str, int] = {}

    def hook(text: str, attribute: str) -> str:
        if attribute == "input.value":
            calls[text] = calls.get(text, 0) + 1
        return text

    first, second = InMemorySpanExporter(), InMemorySpanExporter()
    tracesim.configure(exporters=[first, second], redact=hook, jsonl_path=str(tmp_path / "t.jsonl"))

    @tracesim.trace
    def answer(question: str) -> str:
        return "Warsaw"

    for number in range(40):
        answer(f"question {number} from marie.curie@sorbonne.fr " + "x" * 100)
    tracesim.force_flush()
    assert sorted(calls.values()) == [1] * 40  # each value redacted once, not once per exporter
    for exporter in (first, second):
        inputs = sorted(str(s.attributes["input.value"]) for s in exporter.get_finished_spans())
        assert len(inputs) == 40
        assert all(value.startswith("question ") and "[REDACTED:email]" in value for value in inputs)
    assert [s.attributes for s in first.get_finished_spans()] == [
        s.attributes for s in second.get_finished_spans()
    ]


def test_a_span_one_exporter_never_gets_does_not_keep_the_others_results_forever() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tracesim.exporters import RedactingExporter, Redaction
    from tracesim.exporters._redacting import _SHARED_SPANS

    redaction = Redaction()
    fast = RedactingExporter(InMemorySpanExporter(), redaction=redaction, shared=True)
    RedactingExporter(InMemorySpanExporter(), redaction=redaction, shared=True)  # drops every span
    tracer = TracerProvider().get_tracer("t")
    for number in range(_SHARED_SPANS * 3):
        span = tracer.start_span(f"s{number}", attributes={"input.value": "mail marie@curie.org " + "x" * 80})
        span.end()
        fast.export([span])  # type: ignore[list-item]
    assert len(redaction._shared) == _SHARED_SPANS  # the oldest results were let go


def test_other_exporters_sharing_the_redaction_keep_nothing_for_the_configured_ones(tmp_path: Path) -> None:
    # A backfill (or a user) wraps its own exporter with the configuration's redaction: that
    # exporter does not get the live spans, so nothing may be kept waiting for it.
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tracesim import _runtime
    from tracesim.exporters import RedactingExporter

    live = InMemorySpanExporter()
    tracesim.configure(exporters=[live], jsonl_path=str(tmp_path / "t.jsonl"))
    runtime = _runtime.current
    assert runtime is not None
    redaction = runtime.redaction
    aside = InMemorySpanExporter()
    RedactingExporter(aside, redaction=redaction).export([])

    @tracesim.trace
    def answer(question: str) -> str:
        return "Warsaw"

    for number in range(50):
        answer(f"question {number} from marie.curie@sorbonne.fr")
    tracesim.force_flush()
    assert len(live.get_finished_spans()) == 50
    assert redaction._shared == {}


# The compiled probe's one-call check of a span's attributes (`Probe.unchanged`) only skips the
# Python pass: whatever it lets through must be exactly what that pass leaves unchanged.
SAMPLE_VALUES = [
    "AGENT", "text/plain", "x" * 64, "y" * 65, "marie@curie.org", "sk-proj-Abc123Def456Ghi789Jkl",
    '{"cache_key": "v1", "note": "' + "n" * 80 + '"}', '{"api_key": "hunter2hunter2"}' + " " * 60,
    "Bearer abcDEF123456ghiJKL789 " + "z" * 60, "a" * 300, "b" * 301, "é" * 70, "🔑" * 70,
]  # fmt: skip
ATTRIBUTE_VALUES = st.one_of(
    st.sampled_from(SAMPLE_VALUES),
    st.text(max_size=90),
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.lists(st.text(max_size=5), max_size=2).map(tuple),
)


@settings(max_examples=300, deadline=None)
@given(
    attributes=st.dictionaries(st.sampled_from(["a", "b", "input.value", "c"]), ATTRIBUTE_VALUES),
    patterns=st.sampled_from([PATTERN_GROUPS, ("email",), ()]),
)
def test_the_one_call_check_of_attributes_agrees_with_the_python_pass(
    attributes: dict[str, Any], patterns: tuple[str, ...]
) -> None:
    quick, slow = Redaction(Redactor(patterns), 300), Redaction(Redactor(patterns), 300)
    slow._unchanged = None
    if quick._unchanged is None:
        pytest.skip("no compiled probe (no C compiler at install time)")
    for _ in range(2):  # the second time, short strings come from the cache
        expected = slow.attributes(attributes)
        assert quick.attributes(attributes) == expected
        if quick._unchanged(attributes, quick._clean, 64, 300):
            assert expected is None


def test_the_one_call_check_is_not_used_when_a_hook_runs() -> None:
    redaction = Redaction(Redactor(hook=lambda text, attribute: text.upper()))
    assert redaction._unchanged is None
    assert redaction.attributes({"a": "quiet"}) == {"a": "QUIET"}


@pytest.mark.parametrize("limit", [10**20, 2**63, 2**63 - 1])
def test_a_limit_beyond_a_machine_word_is_taken_as_no_limit(limit: int) -> None:
    redaction = Redaction(Redactor(), limit)
    assert redaction.attributes({"a": "x" * 100, "b": 1}) is None
    assert redaction.attributes({"a": "mail marie@curie.org " + "x" * 80}) == {
        "a": "mail [REDACTED:email] " + "x" * 80
    }


def test_a_str_subclass_in_the_cache_that_changes_the_values_does_no_harm() -> None:
    values: dict[str, Any] = {"a": "quiet", "b": "calm"}

    class Meddling(str):
        __hash__ = str.__hash__

        def __eq__(self, other: object) -> bool:
            values.clear()  # Python code run inside the C lookup
            return str.__eq__(self, other)

    redaction = Redaction()
    redaction._clean[Meddling("quiet")] = "quiet"
    if redaction._unchanged is not None:
        assert redaction._unchanged(values, redaction._clean, 64, 100) in (True, False)


# The whole-span check (`Redaction._quiet`) reads an SDK span's own fields to let most spans
# through untouched: whatever it lets through must be what the full pass leaves unchanged.
SPAN_TEXTS = st.one_of(st.sampled_from(SAMPLE_VALUES), st.text(max_size=20))


@settings(max_examples=300, deadline=None)
@example(name="agent", attributes={}, event=None, link=None, status=None, resource=None)
@example(name="marie@curie.org", attributes={}, event=None, link=None, status=None, resource=None)
@example(name="agent", attributes={"a": "a" * 300}, event=None, link=None, status=None, resource=None)
@example(name="agent", attributes={"a": "b" * 301}, event=None, link=None, status=None, resource=None)
@example(name="agent", attributes={}, event="marie@curie.org", link=None, status=None, resource=None)
@example(name="agent", attributes={}, event=None, link="marie@curie.org", status=None, resource=None)
@example(name="agent", attributes={}, event=None, link=None, status="marie@curie.org", resource=None)
@example(name="agent", attributes={}, event=None, link=None, status=None, resource="marie@curie.org")
@example(
    name="agent",
    attributes={"gen_ai.usage.input_tokens": 3, "gen_ai.request.model": "gpt-4o"},
    event=None,
    link=None,
    status=None,
    resource=None,
)
@given(
    name=SPAN_TEXTS,
    attributes=st.dictionaries(
        st.sampled_from(["a", "input.value", "llm.token_count.prompt", "gen_ai.usage.input_tokens"]),
        ATTRIBUTE_VALUES,
        max_size=3,
    ),
    event=st.one_of(st.none(), SPAN_TEXTS),
    link=st.one_of(st.none(), SPAN_TEXTS),
    status=st.one_of(st.none(), SPAN_TEXTS),
    resource=st.one_of(st.none(), SPAN_TEXTS),
)
def test_the_whole_span_check_agrees_with_the_full_pass(
    name: str,
    attributes: dict[str, Any],
    event: str | None,
    link: str | None,
    status: str | None,
    resource: str | None,
) -> None:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Status, StatusCode

    quick, slow = Redaction(Redactor(), 300), Redaction(Redactor(), 300)
    slow._unchanged = slow._quiet_span = None  # the full pass, in Python
    if quick._unchanged is None:
        pytest.skip("no compiled probe (no C compiler at install time)")
    finished = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({} if resource is None else {"note": resource}))
    provider.add_span_processor(SimpleSpanProcessor(finished))
    tracer = provider.get_tracer("test")
    linked = tracer.start_span("linked").get_span_context()
    links = [] if link is None else [Link(linked, {"note": link})]
    span = tracer.start_span(name, attributes=attributes, links=links)
    if event is not None:
        span.add_event("note", {"text": event})
    if status is not None:
        span.set_status(Status(StatusCode.ERROR, status))
    span.end()
    [readable] = finished.get_finished_spans()
    for _ in range(2):  # the second time, short strings and the resource come from the caches
        expected = slow.span(readable)
        assert quick.span(readable).to_json() == expected.to_json()
        if quick._quiet(readable):
            assert expected is readable


def test_the_whole_span_check_says_no_for_spans_built_another_way() -> None:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan

    redaction = Redaction()
    if redaction._quiet_span is None:
        pytest.skip("no compiled probe (no C compiler at install time)")
    resource = Resource.create({})
    plain = ReadableSpan(name="x", attributes={"a": "quiet"}, resource=resource)  # a dict, not the SDK's
    assert redaction.span(plain).attributes == {"a": "quiet"}
    assert not redaction._quiet(plain)  # not a BoundedAttributes: the full pass decides
    odd = ReadableSpan(name="x", resource=resource)
    odd._status = None  # type: ignore[assignment]  # a field of another type: no error, just "no"
    odd._name = 5  # type: ignore[assignment]
    assert not redaction._quiet(odd)
    redaction.text("x", "span.name")
    odd._name = "x"
    assert not redaction._quiet(odd)
    leaking = ReadableSpan(name="x", attributes={"a": "marie@curie.org"}, resource=resource)
    assert redaction.span(leaking).attributes == {"a": "[REDACTED:email]"}
    redaction.span(ReadableSpan(name="x", resource=resource))  # the resource is cached now

    class Falsy(list):  # type: ignore[type-arg]  # false, though it holds an event
        def __bool__(self) -> bool:
            return False

    from opentelemetry.sdk.trace import Event

    hidden = ReadableSpan(name="x", events=Falsy([Event("marie@curie.org")]), resource=resource)
    assert not redaction._quiet(hidden)  # another kind of list: the full pass takes its length
    assert redaction.span(hidden).events[0].name == "[REDACTED:email]"
    assert not redaction._quiet(ReadableSpan(name="x", links=None, resource=resource))  # type: ignore[arg-type]
    assert redaction._quiet(ReadableSpan(name="x", events=(), links=[], resource=resource))
    for events in ([Event("marie@curie.org")], (Event("marie@curie.org"),)):
        listed = ReadableSpan(name="x", events=events, resource=resource)
        assert not redaction._quiet(listed)
        assert redaction.span(listed).events[0].name == "[REDACTED:email]"


def test_a_redactor_or_limit_set_later_holds_for_the_next_span() -> None:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan

    from tracesim.exporters._redacting import _bounded_attributes

    redaction = Redaction()
    resource = Resource.create({})

    def exported(value: str) -> Any:
        span = ReadableSpan(name="x", attributes=_bounded_attributes({"a": value}, 0), resource=resource)
        return redaction.span(span).attributes["a"]

    assert exported("quiet " * 10) == "quiet " * 10  # now known: the quick checks let it through
    assert exported("quiet " * 10) == "quiet " * 10
    redaction.redactor = Redactor(hook=lambda text, attribute: text.upper())
    assert exported("quiet " * 10) == "QUIET " * 10  # the new hook runs, the old results are gone
    redaction.redactor = Redactor()
    redaction.limit = 40
    assert exported("quiet " * 10) == "quiet quiet quiet …[truncated: 60 chars]"
