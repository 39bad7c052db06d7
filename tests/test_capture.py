"""Any value becomes attribute text; long values are cut visibly; secrets are redacted."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import uuid
from pathlib import PurePosixPath
from typing import Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracesim
from tracesim._capture import CaptureOptions, capture_value, dumps, make_options
from tracesim.testing import capture_spans

PLAIN = CaptureOptions(max_value_chars=32 * 1024)


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    when: datetime.date


class Answer(pydantic.BaseModel):
    text: str
    score: float


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr is broken")


class FakeArray:
    """Looks like numpy: has tolist()."""

    def tolist(self) -> list[list[int]]:
        return [[1, 2], [3, 4]]


def test_common_python_values_serialise_to_json() -> None:
    value = {
        "model": Answer(text="Warsaw", score=0.9),
        "point": Point(1, datetime.date(2024, 5, 1)),
        "when": datetime.datetime(2024, 5, 1, 12, 30, tzinfo=datetime.timezone.utc),
        "delta": datetime.timedelta(seconds=90),
        "color": Color.RED,
        "tags": {"b", "a"},
        "frozen": frozenset({3}),
        "pair": (1, 2),
        "bytes": b"hello",
        "binary": b"\xff\x00",
        "money": decimal.Decimal("1.10"),
        "id": uuid.UUID(int=1),
        "path": PurePosixPath("/tmp/x"),
        "array": FakeArray(),
        "error": ValueError("bad"),
        7: "int key",
    }
    assert json.loads(dumps(value)) == {
        "model": {"text": "Warsaw", "score": 0.9},
        "point": {"x": 1, "when": "2024-05-01"},
        "when": "2024-05-01T12:30:00+00:00",
        "delta": 90.0,
        "color": "red",
        "tags": ["a", "b"],
        "frozen": [3],
        "pair": [1, 2],
        "bytes": "hello",
        "binary": "base64:/wA=",
        "money": "1.10",
        "id": "00000000-0000-0000-0000-000000000001",
        "path": "/tmp/x",
        "array": [[1, 2], [3, 4]],
        "error": "ValueError: bad",
        "7": "int key",
    }


def test_an_object_whose_repr_raises_gets_a_placeholder() -> None:
    assert json.loads(dumps([BadRepr()])) == ["<unrepresentable BadRepr object>"]
    assert capture_value(BadRepr(), "input.value", PLAIN).text == '"<unrepresentable BadRepr object>"'


def test_a_self_referencing_dict_is_cut_at_the_cycle() -> None:
    data: dict[str, Any] = {"name": "loop"}
    data["self"] = data
    data["items"] = [data, {"deep": data}]
    assert json.loads(dumps(data)) == {
        "name": "loop",
        "self": "<cycle: dict>",
        "items": ["<cycle: dict>", {"deep": "<cycle: dict>"}],
    }


def test_a_self_referencing_dataclass_is_cut_at_the_cycle() -> None:
    @dataclasses.dataclass
    class Node:
        name: str
        next: Any = None

    node = Node("a")
    node.next = node
    assert json.loads(dumps(node)) == {"name": "a", "next": "<cycle: Node>"}


def test_nan_infinity_and_odd_keys_do_not_break_json() -> None:
    assert json.loads(dumps({"nan": float("nan"), "inf": float("inf"), (1, 2): "tuple key"})) == {
        "nan": "nan",
        "inf": "inf",
        "(1, 2)": "tuple key",
    }


def test_strings_and_scalars_are_recorded_as_text() -> None:
    assert capture_value("hello", "input.value", PLAIN).mime_type == "text/plain"
    assert capture_value(42, "input.value", PLAIN).text == "42"
    assert capture_value(None, "input.value", PLAIN).text == "null"
    assert capture_value(None, "input.value", PLAIN).mime_type == "application/json"


def test_a_5_mb_input_is_cut_with_a_marker_and_its_length_kept() -> None:
    big = "x" * (5 * 1024 * 1024)

    @tracesim.trace
    def summarise(document: str) -> str:
        return document[:10]

    with capture_spans(max_value_chars=1000) as captured:
        assert summarise(big) == "x" * 10
    span = captured.by_name("summarise")
    text = span.attributes["input.value"]
    assert text.startswith("x" * 1000)
    assert text.endswith(f"…[truncated: {len(big)} chars]")
    assert len(text) < 1100
    assert span.attributes["tracesim.input.original_chars"] == len(big)
    assert span.attributes["input.mime_type"] == "text/plain"
    assert "tracesim.output.original_chars" not in span.attributes


def test_a_cut_json_value_is_labelled_as_text() -> None:
    captured = capture_value({"doc": "y" * 500}, "output.value", CaptureOptions(max_value_chars=100))
    assert captured.mime_type == "text/plain"
    assert captured.original_chars == len(json.dumps({"doc": "y" * 500}, separators=(",", ":")))


REDACTING = make_options(True, 32 * 1024, None, ("email", "api_key", "bearer"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("write to marie.curie@sorbonne.fr today", "write to [REDACTED:email] today"),
        ("key sk-proj-abcdefghijklmnop1234 here", "key [REDACTED:api_key] here"),
        ("aws AKIAABCDEFGHIJKLMNOP", "aws [REDACTED:api_key]"),
        ("token ghp_" + "a" * 36, "token [REDACTED:api_key]"),
        (
            "Authorization: Bearer eyJhbGciOiJI.eyJzdWIiOiIx.SflKxwRJSMeKK",
            "Authorization: Bearer [REDACTED:token]",
        ),
        ('{"api_key": "abcd1234efgh5678"}', '{"api_key": "[REDACTED:api_key]"}'),
        ("password=hunter2hunter2", "password=[REDACTED:api_key]"),
        ("nothing secret here, sk- is short", "nothing secret here, sk- is short"),
    ],
)
def test_built_in_patterns_redact_secrets(text: str, expected: str) -> None:
    assert capture_value(text, "input.value", REDACTING).text == expected


def test_redaction_applies_to_recorded_spans_and_a_hook_sees_the_attribute() -> None:
    seen: list[str] = []

    def hook(value: str, attribute: str) -> str:
        seen.append(attribute)
        return value.replace("Curie", "C.")

    @tracesim.trace
    def reply(message: str) -> str:
        return "Mail marie@curie.org, Marie Curie"

    with capture_spans(redact=hook) as captured:
        reply("my key is sk-abcdefghijklmnopqrstuv")
    attributes = captured.by_name("reply").attributes
    assert attributes["input.value"] == "my key is [REDACTED:api_key]"
    assert attributes["output.value"] == "Mail [REDACTED:email], Marie C."
    assert seen == ["input.value", "output.value"]


def test_redaction_patterns_can_be_turned_off() -> None:
    options = make_options(True, 1000, None, ())
    assert capture_value("a@b.cd", "input.value", options).text == "a@b.cd"


def test_a_failing_redact_hook_withholds_the_value(caplog: pytest.LogCaptureFixture) -> None:
    def hook(value: str, attribute: str) -> str:
        raise RuntimeError("hook bug")

    options = make_options(True, 1000, hook, ())
    assert capture_value("secret", "input.value", options).text == "[REDACTED: redact hook failed]"


def test_a_secret_straddling_the_cut_is_not_leaked() -> None:
    options = make_options(True, 100, None, ("api_key",))
    secret = "sk-" + "s" * 40
    for offset in range(60, 110):
        text = "a" * offset + " " + secret + " " + "b" * 500
        recorded = capture_value(text, "input.value", options).text
        assert "sssss" not in recorded, offset


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(),
    lambda children: (
        st.lists(children) | st.dictionaries(st.text() | st.integers(), children) | st.tuples(children)
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(json_values, st.integers(min_value=64, max_value=500))
def test_capture_never_raises_and_respects_the_limit(value: Any, limit: int) -> None:
    options = make_options(True, limit, None, ("email", "api_key", "bearer"))
    captured = capture_value(value, "input.value", options)
    assert isinstance(captured.text, str)
    if captured.original_chars is None:
        assert len(captured.text) <= limit
        if captured.mime_type == "application/json":
            json.loads(captured.text)
    else:
        assert len(captured.text) <= limit + len(f"…[truncated: {captured.original_chars} chars]")
