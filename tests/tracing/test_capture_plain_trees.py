"""Small values of the exact JSON types are written without a circular-reference table: the text
is the same as the careful writer's, whatever the value holds."""

from __future__ import annotations

import math
import sys
from typing import Any

import pytest

from tracesim._capture import CaptureOptions, bounded_json, capture_value, dumps

shared = ["same", "list"]
VALUES: list[Any] = [
    {"question": "Where?", "context": {"k": [1, 2.5, True, None]}},
    [{"role": "user", "content": "hi ünïcode ✓"}, {"role": "assistant", "content": "hello"}],
    {"a": shared, "b": shared},  # the same list twice is not a cycle
    {7: "int key", 2.5: "float key", True: "bool key", None: "none key"},
    {(1, 2): "a tuple key JSON cannot hold"},
    {"x": math.nan, "y": [math.inf, -math.inf]},
    ("a", "tuple", ["of", "lists"]),
    [[[[[["deep"]]]]]],
    {},
    [],
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_a_small_plain_value_is_written_as_the_careful_writer_writes_it(value: Any) -> None:
    assert bounded_json(value, 10_000) == (dumps(value), True)
    assert capture_value(value, CaptureOptions()).text == dumps(value)


def test_a_cycle_is_still_caught() -> None:
    looped: list[Any] = ["a"]
    looped.append(looped)
    text, whole = bounded_json({"loop": looped}, 10_000)
    assert "<cycle: list>" in text
    assert whole


def test_a_tree_deeper_than_the_recursion_limit_allows_is_recorded_not_raised() -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(300):
        node.append([])
        node = node[0]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(120)
    try:
        captured = capture_value(deep, CaptureOptions())
    finally:
        sys.setrecursionlimit(limit)
    assert captured.text  # a placeholder or the text: never an exception into the caller
