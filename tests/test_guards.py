"""Guards: precise tests for one-line changes the rest of the suite did not notice (issue 23, item 8).

Each test names the change it catches. Phoenix annotations are read here from a real local HTTP
server that records what tracesim posts (tests/phoenix checks the same against Phoenix itself).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from secret_kinds import KINDS

import tracesim
from tracesim import _runtime
from tracesim.evaluators import Evaluator, Measurement
from tracesim.exporters._redacting import Redaction
from tracesim.testing import capture_spans

SECRETS = KINDS  # one secret of each kind, with the fragment that must never appear


def assert_clean(text: str, fragment: str) -> None:
    # JSON escapes slashes, quotes and newlines: search the raw bytes and their unescaped form.
    unescaped = text.replace("\\n", "\n").replace("\\\\", "\\").replace('\\"', '"').replace("\\/", "/")
    for haystack in (text, unescaped):
        assert fragment not in haystack


class AnnotationRecorder:
    """A local HTTP server taking Phoenix span annotations (``POST /v1/span_annotations``) and
    keeping each request body as it arrived."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path.startswith("/v1/span_annotations"):
                    recorder.bodies.append(body)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def annotations(self) -> list[dict[str, Any]]:
        return [a for body in self.bodies for a in json.loads(body)["data"]]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def recorder() -> Iterator[AnnotationRecorder]:
    running = AnnotationRecorder()
    yield running
    running.close()


class Leaky(Evaluator):
    """Puts the secret in every field of its result Phoenix receives."""

    type_name = "leaky"
    requires_expected = False

    def __init__(self, secret: str) -> None:
        super().__init__()
        self.secret = secret

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        details = {
            "seen": self.secret,
            self.secret: "as a key",
            "nested": [{"deeper": {self.secret: [self.secret]}}],
        }
        return Measurement(0.5, details, explanation=f"compared with {self.secret}", label=self.secret)


def _annotate(recorder: AnnotationRecorder, tmp_path: Path, secret: str) -> str:
    tracesim.configure(
        exporters=["jsonl"],
        jsonl_path=str(tmp_path / "traces.jsonl"),
        scoring_mode="inline",
        phoenix_annotations_url=recorder.url,
    )

    @tracesim.trace(evaluators=[Leaky(secret)], expected=f"expected {secret}")
    def answer() -> str:
        return "ok"

    answer()
    assert tracesim.shutdown(30)
    assert [a["name"] for a in recorder.annotations] == ["leaky"]
    return b"".join(recorder.bodies).decode("utf-8")


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_a_phoenix_annotation_is_redacted_in_explanation_label_and_metadata(
    recorder: AnnotationRecorder, tmp_path: Path, kind: str
) -> None:
    """Guard: ``_scoring/_sinks.py`` PhoenixSink.submit sending its fields unredacted
    (``clean = self._redaction.json`` -> ``clean = lambda value, attribute: value``)."""
    secret, fragment = SECRETS[kind]
    body = _annotate(recorder, tmp_path, secret)
    assert_clean(body, fragment)
    (annotation,) = recorder.annotations
    # every field was sent, redacted: the secret was there and was replaced, not left out
    assert "[REDACTED:" in annotation["result"]["label"]
    assert "[REDACTED:" in annotation["result"]["explanation"]
    metadata = annotation["metadata"]
    assert "[REDACTED:" in metadata["details"]["seen"]
    assert "[REDACTED:" in metadata["expected"]
    assert [k for k in metadata["details"] if "[REDACTED:" in k]  # the key too
    assert annotation["result"]["score"] == 0.5


def test_each_field_of_an_annotation_is_redacted_on_its_own(
    recorder: AnnotationRecorder, tmp_path: Path
) -> None:
    """Guard: any one of PhoenixSink.submit's ``clean(...)`` calls dropped (label, explanation,
    metadata each a one-line change): the secret is checked field by field."""
    secret, fragment = SECRETS["openai"]
    _annotate(recorder, tmp_path, secret)
    (annotation,) = recorder.annotations
    for field in (annotation["result"]["label"], annotation["result"]["explanation"], annotation["metadata"]):
        assert_clean(json.dumps(field), fragment)


def test_an_annotation_is_redacted_with_the_configured_redaction(
    recorder: AnnotationRecorder, tmp_path: Path
) -> None:
    """Guard: PhoenixSink given a default ``Redaction()`` instead of the configured one: a hook
    set in configure() sees the annotation's fields too."""
    seen: list[str] = []

    def hook(text: str, attribute: str) -> str:
        seen.append(attribute)
        return text.replace("internal-codename", "[CODENAME]")

    tracesim.configure(
        exporters=["jsonl"],
        jsonl_path=str(tmp_path / "traces.jsonl"),
        scoring_mode="inline",
        phoenix_annotations_url=recorder.url,
        redact=hook,
    )

    @tracesim.trace(evaluators=[Leaky("internal-codename")])
    def answer() -> str:
        return "ok"

    answer()
    assert tracesim.shutdown(30)
    body = b"".join(recorder.bodies).decode("utf-8")
    assert "leaky" in body
    assert "internal-codename" not in body
    assert "[CODENAME]" in body


# -- Redaction.json: keys are redacted like values ----------------------------------------------


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_redaction_json_redacts_mapping_keys_at_every_level(kind: str) -> None:
    """Guard: ``exporters/_redacting.py`` Redaction.json keeping keys
    (``self.text(str(k), attribute)`` -> ``str(k)``)."""
    secret, fragment = SECRETS[kind]
    value = {secret: 1, "list": [{secret: "v"}], "nested": {"inner": {secret: None}}}
    cleaned = Redaction().json(value, "tracesim.evaluation.details")
    assert_clean(json.dumps(cleaned), fragment)
    assert len(cleaned) == 3  # nothing dropped: the keys are replaced
    assert [k for k in cleaned if "[REDACTED:" in k]
    assert cleaned["nested"]["inner"] != {}


def test_redaction_json_keeps_what_has_no_secret() -> None:
    """Guard: Redaction.json turning numbers, None or booleans into text, or lists into anything else."""
    value = {"a": [1, 2.5, None, True], "b": ("x", 3), 7: "seven"}
    assert Redaction().json(value, "x") == {"a": [1, 2.5, None, True], "b": ["x", 3], "7": "seven"}


# -- The input of a span another instrumentation made: the LAST user message -----------------------


class InputEcho(Evaluator):
    """Scores 1 and gives as its label the input it was handed."""

    type_name = "input_echo"
    requires_expected = False

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        return Measurement(1.0, label=str(input))


def _inputs_read(*spans: dict[str, Any]) -> list[str]:
    rule = {"kind": "llm", "evaluators": [InputEcho()]}
    with capture_spans(evaluators=[rule]) as captured:
        provider = _runtime.current.provider if _runtime.current else None
        assert isinstance(provider, TracerProvider)
        tracer = provider.get_tracer("someone.elses.instrumentation")
        for attributes in spans:
            with tracer.start_as_current_span("llm call") as span:
                span.set_attributes(attributes)
        found = captured.spans
    assert len(found) == len(spans)
    return [str(s.attributes["tracesim.eval.input_echo.label"]) for s in found]


def _openinference(messages: list[tuple[str, str]]) -> dict[str, Any]:
    attributes: dict[str, Any] = {"openinference.span.kind": "LLM"}
    for i, (role, content) in enumerate(messages):
        attributes[f"llm.input_messages.{i}.message.role"] = role
        attributes[f"llm.input_messages.{i}.message.content"] = content
    attributes["llm.output_messages.0.message.content"] = "Warsaw"
    return attributes


def _openllmetry(messages: list[tuple[str, str]]) -> dict[str, Any]:
    attributes: dict[str, Any] = {"gen_ai.operation.name": "chat"}
    for i, (role, content) in enumerate(messages):
        attributes[f"gen_ai.prompt.{i}.role"] = role
        attributes[f"gen_ai.prompt.{i}.content"] = content
    attributes["gen_ai.completion.0.content"] = "Warsaw"
    return attributes


def _genai(messages: list[tuple[str, str]]) -> dict[str, Any]:
    listed = [{"role": role, "parts": [{"type": "text", "content": content}]} for role, content in messages]
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps(listed),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": "Warsaw"}]}]
        ),
    }


CHAT = [
    ("system", "Answer in one word."),
    ("user", "Where was Marie Curie born?"),
    ("assistant", "In Warsaw."),
    ("user", "Capital of Poland?"),
    ("assistant", "Warsaw."),
]


@pytest.mark.parametrize("convention", [_openinference, _openllmetry, _genai])
def test_the_input_of_a_foreign_span_is_its_last_user_message(convention: Any) -> None:
    """Guard: ``_foreign_spans.py`` span_input reading the first user message of a flat convention
    (``users[-1]`` -> ``users[0]``), or of GenAI messages (``users[-1:]`` -> ``users[:1]``)."""
    assert _inputs_read(convention(CHAT)) == ["Capital of Poland?"]


@pytest.mark.parametrize("convention", [_openinference, _openllmetry, _genai])
def test_without_a_user_message_the_input_is_the_last_message(convention: Any) -> None:
    """Guard: span_input's fallback to the first message (``found[-1][1]`` -> ``found[0][1]``,
    ``messages[-1:]`` -> ``messages[:1]``)."""
    chat = [("system", "Answer in one word."), ("tool", "lookup: Warsaw")]
    assert _inputs_read(convention(chat)) == ["lookup: Warsaw"]


@pytest.mark.parametrize("convention", [_openinference, _openllmetry])
def test_flat_messages_are_ordered_by_their_number_not_as_set_or_as_text(convention: Any) -> None:
    """Guard: _flat_messages ordering by the order attributes were set (``sorted(found.items())``
    -> ``found.items()``) or by the index as text (``int(index)`` -> ``index``: "10" < "9")."""
    chat = [("user", f"question {i}") for i in range(12)]
    attributes = convention(chat)
    # set the messages last first, as an instrumentation walking them backwards would
    reordered = dict(reversed(list(attributes.items())))
    assert _inputs_read(reordered) == ["question 11"]


def test_a_flat_convention_output_joins_every_completion_in_order() -> None:
    """Guard: span_output keeping one completion of several (the first, or the last)."""
    attributes = _openllmetry([("user", "Two cities?")])
    attributes["gen_ai.completion.0.content"] = "Warsaw"
    attributes["gen_ai.completion.1.content"] = "Paris"

    class OutputEcho(Evaluator):
        type_name = "output_echo"
        requires_expected = False

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
            return Measurement(1.0, label=str(output))

    with capture_spans(evaluators=[{"kind": "llm", "evaluators": [OutputEcho()]}]) as captured:
        provider = _runtime.current.provider if _runtime.current else None
        assert isinstance(provider, TracerProvider)
        with provider.get_tracer("other").start_as_current_span("llm call") as span:
            span.set_attributes(attributes)
        (found,) = captured.spans
    assert found.attributes["tracesim.eval.output_echo.label"] == "Warsaw\nParis"


def test_redaction_json_redacts_inside_tuples() -> None:
    """Guard: Redaction.json walking lists only (``(list, tuple)`` -> ``list``)."""
    secret, fragment = SECRETS["openai"]
    cleaned = Redaction().json({"pair": (secret, 1)}, "x")
    assert_clean(json.dumps(cleaned), fragment)
    assert cleaned["pair"][1] == 1


def test_a_secret_nested_deep_in_an_annotations_details_is_redacted(
    recorder: AnnotationRecorder, tmp_path: Path
) -> None:
    secret, fragment = SECRETS["email"]
    deep: Any = secret
    for _ in range(40):
        deep = [deep]

    class Deep(Evaluator):
        type_name = "deep"
        requires_expected = False

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
            return Measurement(0.5, {"deep": deep})

    tracesim.configure(
        exporters=["jsonl"],
        jsonl_path=str(tmp_path / "traces.jsonl"),
        scoring_mode="inline",
        phoenix_annotations_url=recorder.url,
    )

    @tracesim.trace(evaluators=[Deep()])
    def answer() -> str:
        return "ok"

    answer()
    assert tracesim.shutdown(30)
    assert [a["name"] for a in recorder.annotations] == ["deep"]
    assert_clean(b"".join(recorder.bodies).decode("utf-8"), fragment)


def test_genai_messages_cut_short_are_read_as_their_text() -> None:
    """Guard: ``_genai_text`` giving up on messages cut to ``max_value_chars`` (no longer JSON):
    ``return raw`` -> ``return None`` would leave the span unscored ("skipped")."""
    cut = '[{"role": "user", "parts": [{"type": "text", "content": "Capital of Pol'
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": cut}
    attributes["gen_ai.output.messages"] = '[{"role": "assistant", "parts": [{"type": "text", "content": "War'
    assert _inputs_read(attributes) == [cut]


def test_every_text_part_of_the_last_user_message_is_its_input() -> None:
    """Guard: ``_genai_text`` keeping one text part of several (``"\\n".join(texts)`` -> ``texts[0]``)."""
    attributes = _genai(CHAT)
    listed = json.loads(attributes["gen_ai.input.messages"])
    listed[3]["parts"].append({"type": "text", "content": "One word."})  # the last user message
    attributes["gen_ai.input.messages"] = json.dumps(listed)
    assert _inputs_read(attributes) == ["Capital of Poland?\nOne word."]


def test_without_messages_the_input_is_input_value() -> None:
    """Guard: span_input's last resort read from another attribute than ``input.value``."""
    attributes = {"openinference.span.kind": "LLM", "input.value": "Capital?", "output.value": "Warsaw"}
    assert _inputs_read(attributes) == ["Capital?"]


def test_an_error_result_is_no_phoenix_annotation(recorder: AnnotationRecorder, tmp_path: Path) -> None:
    """Guard: PhoenixSink sending results that are not scores (``if result.status != "ok"`` ->
    ``if result.status == "skipped"``): an error stays on the span, its message with it."""

    class Broken(Evaluator):
        type_name = "broken"
        requires_expected = False

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
            raise ConnectionError("the judge is down")

    tracesim.configure(
        exporters=["jsonl"],
        jsonl_path=str(tmp_path / "traces.jsonl"),
        scoring_mode="inline",
        phoenix_annotations_url=recorder.url,
    )

    @tracesim.trace(evaluators=[Broken(), Leaky("fine")])
    def answer() -> str:
        return "ok"

    answer()
    assert tracesim.shutdown(30)
    assert [a["name"] for a in recorder.annotations] == ["leaky"]
