"""Any value becomes attribute text; long values are cut visibly; secrets are redacted."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import uuid
from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath
from typing import Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracesim
from tracesim._capture import CaptureOptions, bounded_json, capture_value, dumps, is_small
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
    assert capture_value(BadRepr(), PLAIN).text == '"<unrepresentable BadRepr object>"'


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
    assert capture_value("hello", PLAIN).mime_type == "text/plain"
    assert capture_value(42, PLAIN).text == "42"
    assert capture_value(None, PLAIN).text == "null"
    assert capture_value(None, PLAIN).mime_type == "application/json"


def test_a_5_mb_input_is_cut_with_a_marker_and_its_length_kept() -> None:
    big = "x" * (5 * 1024 * 1024)

    @tracesim.trace
    def summarise(document: str) -> str:
        return document[:10]

    with capture_spans(max_value_chars=1000) as captured:
        assert summarise(big) == "x" * 10
    span = captured.by_name("summarise")
    text = span.attributes["input.value"]
    # One 5 MB token: cut short of the limit, so that no secret's prefix could be left behind.
    assert text.startswith("x" * 500)
    assert text.endswith(f"…[truncated: {len(big)} chars]")
    assert len(text) < 1100
    assert span.attributes["tracesim.input.original_chars"] == len(big)
    assert span.attributes["input.mime_type"] == "text/plain"
    assert "tracesim.output.original_chars" not in span.attributes


def test_a_cut_json_value_is_labelled_as_text() -> None:
    captured = capture_value({"doc": "y" * 500}, CaptureOptions(max_value_chars=100))
    assert captured.mime_type == "text/plain"
    assert captured.text.startswith('{"doc":"')  # the long token at the cut is dropped whole
    assert captured.original_chars == -1  # cut while serialising: its full length was never computed


def test_capture_records_values_unredacted_and_the_export_redacts_them() -> None:
    # Redaction moved to the export path (one pass for every span, off the caller's thread).
    assert capture_value("mail marie@curie.org", PLAIN).text == "mail marie@curie.org"

    @tracesim.trace
    def reply(message: str) -> str:
        return "Mail marie@curie.org"

    with capture_spans() as captured:
        reply("my key is sk-abcdefghijklmnopqrstuv")
    attributes = captured.by_name("reply").attributes
    assert attributes["input.value"] == "my key is [REDACTED:api_key]"
    assert attributes["output.value"] == "Mail [REDACTED:email]"


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
    captured = capture_value(value, CaptureOptions(max_value_chars=limit))
    assert isinstance(captured.text, str)
    if captured.original_chars is None:
        assert len(captured.text) <= limit
        if captured.mime_type == "application/json":
            json.loads(captured.text)
    elif captured.original_chars == -1:  # cut while serialising: the full length was never computed
        assert captured.text.endswith("…[truncated]")
        assert len(captured.text) <= limit + len("…[truncated]")
    else:
        assert len(captured.text) <= limit + len(f"…[truncated: {captured.original_chars} chars]")


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_json_text_is_what_json_dumps_writes_with_non_ascii_characters_kept(value: Any) -> None:
    try:  # the values plain JSON can hold; the others are converted (tested above)
        expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return
    captured = capture_value(value, CaptureOptions(max_value_chars=1 << 20))
    if captured.mime_type == "application/json":  # strings and scalars are recorded as text
        assert captured.text == expected


def _nodes_and_chars(value: Any) -> tuple[int, int]:
    """The reference for `is_small`: every value is a node (dict keys are not), strings count their
    length, bytes twice theirs (the hex or base64 they become)."""
    if isinstance(value, str):
        return 1, len(value)
    if isinstance(value, bytes):
        return 1, 2 * len(value)
    children: Any = ()
    if isinstance(value, dict):
        children = value.values()
    elif isinstance(value, (list, tuple)):
        children = value
    nodes, chars = 1, 0
    for child in children:
        n, c = _nodes_and_chars(child)
        nodes, chars = nodes + n, chars + c
    return nodes, chars


@settings(max_examples=300, deadline=None)
@given(json_values, st.integers(min_value=1, max_value=40), st.integers(min_value=0, max_value=200))
def test_is_small_is_exactly_within_both_budgets(value: Any, nodes: int, chars: int) -> None:
    # The walk reads the items of dicts and of dicts inside containers in its own loops: the
    # answer must still be the plain count's, at every boundary.
    total_nodes, total_chars = _nodes_and_chars(value)
    assert is_small(value, chars, nodes) == (total_nodes <= nodes and total_chars <= chars)
    assert is_small(value, total_chars, total_nodes)
    assert not is_small(value, total_chars, total_nodes - 1)
    if total_chars:
        assert not is_small(value, total_chars - 1, total_nodes)


class _Text(str):
    pass


plain_json = st.recursive(  # the exact JSON types, which the compiled walk reads itself
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children) | st.dictionaries(st.text(max_size=3), children, max_size=4) | st.tuples(children)
    ),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        plain_json, json_values, st.builds(lambda v: [v, {_Text("k"): _Text("v")}, {1, 2}], plain_json)
    ),
    st.integers(min_value=-1, max_value=60),
    st.integers(min_value=-1, max_value=120),
)
def test_the_compiled_size_walk_answers_as_the_python_one_or_defers_to_it(
    value: Any, nodes: int, chars: int
) -> None:
    from tracesim._capture import _size

    if _size._SMALL is None:
        pytest.skip("no compiled module (no C compiler at install time)")
    expected = _size._is_small_python(value, chars, nodes)
    assert _size._SMALL(value, chars, nodes) in (None, expected)
    assert _size.is_small(value, chars, nodes) == expected
    if not isinstance(value, (bytes, set)) and not _has_other_types(value):
        assert _size._SMALL(value, chars, nodes) is not None  # no other type: no deferring
    assert _size._SMALL(value, 2**70, nodes) is None  # beyond a machine word: Python decides


def _has_other_types(value: Any) -> bool:
    if type(value) in (dict, list, tuple):
        return any(_has_other_types(v) for v in (value.values() if type(value) is dict else value))
    return type(value) not in (str, int, float, bool, type(None))


@pytest.mark.parametrize(
    "value",
    [
        {"city": "Kraków", "note": "plain"},  # a non-ASCII value
        {"miasto": "Krakow", "źródło": "x"},  # ASCII values, a non-ASCII key
        ["ascii", datetime.date(2024, 5, 1), Color.RED, "żółw"],
        {"literal": "a \\u00e9 in the text", "ctrl": "\x01"},  # escapes that are not from non-ASCII
    ],
)
def test_non_ascii_text_is_written_as_itself_never_escaped(value: Any) -> None:
    text = capture_value(value, PLAIN).text
    assert json.loads(text) == json.loads(dumps(value))
    for word in ("Kraków", "źródło", "żółw"):
        if word in repr(value):
            assert word in text


class HugeMapping(Mapping[int, int]):
    """A mapping of a billion keys that counts how many of them were looked at."""

    def __init__(self) -> None:
        self.seen = 0

    def __len__(self) -> int:
        return 1_000_000_000

    def __iter__(self) -> Iterator[int]:
        for key in range(len(self)):
            self.seen += 1
            yield key

    def __getitem__(self, key: int) -> int:
        return key


def test_a_huge_value_costs_what_is_kept_not_its_size() -> None:
    huge = HugeMapping()
    captured = capture_value({"history": huge}, CaptureOptions(max_value_chars=1000))
    assert captured.text.startswith('{"history":{"0":0,"1":1,')
    assert captured.text.endswith("…[truncated]")
    assert captured.original_chars == -1
    assert huge.seen < 200  # only what fits in 1,000 characters was read


def test_a_large_array_is_recorded_as_its_shape_dtype_and_first_values() -> None:
    numpy = pytest.importorskip("numpy", reason="numpy (in the test extra) is needed for the array case")
    array = numpy.arange(1_000_000).reshape(1000, 1000)
    captured = capture_value(array, CaptureOptions(max_value_chars=5000))
    summary = json.loads(captured.text)
    assert summary == {
        "ndarray": {"shape": [1000, 1000], "dtype": str(array.dtype)},
        "head": list(range(16)),
        "omitted": 1_000_000 - 16,
    }
    assert captured.mime_type == "application/json"
    # nested: the array's siblings are kept, the array is summarised in place
    nested = json.loads(capture_value({"query": "q", "embedding": numpy.arange(1000.0)}, PLAIN).text)
    assert nested["query"] == "q"
    assert nested["embedding"]["ndarray"] == {"shape": [1000], "dtype": "float64"}
    assert nested["embedding"]["head"][:3] == [0.0, 1.0, 2.0]
    assert nested["embedding"]["omitted"] == 984
    # a strided view: only the first values are copied, in logical order
    view = json.loads(capture_value(array[:, ::2], PLAIN).text)
    assert view["ndarray"]["shape"] == [1000, 500]
    assert view["head"][:3] == [0, 2, 4]
    # NaN cannot be JSON: written as text, the rest stays readable
    assert json.loads(capture_value(numpy.full(600, numpy.nan), PLAIN).text)["head"][:2] == ["nan", "nan"]
    # a summary longer than the limit is cut like any value
    cut_short = capture_value(array, CaptureOptions(max_value_chars=100))
    assert cut_short.text.startswith('{"ndarray":{"shape":[1000,1000]')
    assert cut_short.original_chars is not None
    assert cut_short.original_chars > 100
    assert cut_short.text.endswith(f"…[truncated: {cut_short.original_chars} chars]")


def test_a_summary_names_each_arrays_own_dtype_even_when_dtypes_compare_equal() -> None:
    numpy = pytest.importorskip("numpy", reason="numpy (in the test extra) is needed for the array case")
    aligned = numpy.dtype([("a", "<i4")], align=True)
    packed = numpy.dtype([("a", "<i4")])
    assert aligned == packed  # equal, and printed differently
    for dtype in (aligned, packed, aligned):
        summary = json.loads(capture_value(numpy.zeros(1000, dtype=dtype), PLAIN).text)
        assert summary["ndarray"]["dtype"] == str(dtype)


def test_an_array_within_the_node_budget_is_written_whole() -> None:
    numpy = pytest.importorskip("numpy", reason="numpy (in the test extra) is needed for the array case")
    assert capture_value(numpy.arange(4).reshape(2, 2), PLAIN) == ("[[0,1],[2,3]]", "application/json", None)
    assert json.loads(capture_value(numpy.arange(512), PLAIN).text) == list(range(512))


def test_bounded_json_is_whole_for_small_values_and_cut_for_large_ones() -> None:
    assert bounded_json({"a": [1, 2]}, 100) == ('{"a":[1,2]}', True)
    text, whole = bounded_json({str(i): i for i in range(1_000_000)}, 100)
    assert not whole
    assert len(text) == 100
    assert text.startswith('{"0":0,"1":1')
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    assert bounded_json([cyclic] * 2000, 60)[0].startswith('[["<cycle: list>"]')


def test_a_str_subclass_with_broken_methods_is_captured_as_plain_text() -> None:
    class Hostile(str):
        def __len__(self) -> int:
            raise RuntimeError("no len")

        def __str__(self) -> str:
            raise RuntimeError("no str")

    assert capture_value(Hostile("Warsaw"), PLAIN) == ("Warsaw", "text/plain", None)
    assert json.loads(dumps({"city": Hostile("Warsaw")})) == {"city": "Warsaw"}


@pytest.mark.parametrize("module", ["", "._jsonable", "._size", "._json_text"])
def test_docstring_examples_of_the_capture_modules(module: str) -> None:
    import doctest
    import importlib

    found = importlib.import_module("tracesim._capture" + module)
    outcome = doctest.testmod(found, optionflags=doctest.ELLIPSIS)
    assert outcome.failed == 0
    if module.endswith("_size"):
        assert outcome.attempted > 0  # is_small's example runs


def test_the_compiled_size_walk_takes_any_budget() -> None:
    from tracesim._capture import _size

    if _size._SMALL is None:
        pytest.skip("no compiled module (no C compiler at install time)")
    for value, chars, nodes in [(0, 0, -(2**63)), ("ab", -(2**63), 10), ([1], 5, -(2**63) + 1), ([], 0, 0)]:
        # no wrap-around
        assert _size._SMALL(value, chars, nodes) == _size._is_small_python(value, chars, nodes)
    assert _size._SMALL([1], 5.0, 3) is None  # a budget that is not an int: Python decides
    assert _size.is_small([1], 5.0, 3) is True
