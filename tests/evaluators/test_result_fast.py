"""The cheap result path (`measured_result` / `scored_result` building an `EvalResult` without
validation) gives, for any values, exactly what validation gives or raises what it raises; and
the bounded pairing of ``tool_correctness`` gives the package's pairs.

The cheap path is taken only when every value already has its field's exact type, so these
tests feed both builders values of every awkward kind (``int`` and ``bool`` scores, text that is
a ``str`` subclass, details keyed by numbers, NaN) and compare field by field, type by type.
"""

from __future__ import annotations

import copy
import math
import pickle
import random
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from tracesim.evaluators._base import Evaluator, Measurement
from tracesim.evaluators._result import EvalResult, measured_result, scored_result
from tracesim.evaluators._tool_correctness import ToolCorrectness


class Text(str):
    """A str subclass: validation turns it into a plain str, so the cheap path must not take it."""


def _texts() -> st.SearchStrategy[Any]:
    return st.one_of(st.text(max_size=5), st.text(max_size=5).map(Text))


def _numbers() -> st.SearchStrategy[Any]:
    return st.one_of(st.floats(allow_nan=True), st.integers(-3, 3), st.booleans())


def _details() -> st.SearchStrategy[Any]:
    keys = st.one_of(st.text(max_size=3), st.text(max_size=3).map(Text), st.integers(0, 3))
    plain = st.dictionaries(keys, st.one_of(st.integers(), st.text(max_size=3), st.none()), max_size=4)
    return st.one_of(plain, plain.map(MappingProxyType), st.lists(st.integers(), max_size=2))


def _fields(result: EvalResult) -> list[tuple[str, str, type, str]]:
    """Every field's name, repr (NaN equal to NaN), type, and the types of the details' keys."""
    return [(name, repr(value), type(value), repr([type(k) for k in getattr(value, "keys", list)()]))
            for name, value in result.__dict__.items()]  # fmt: skip


def _same(fast: EvalResult, validated: EvalResult) -> None:
    assert type(fast) is EvalResult
    assert _fields(fast) == _fields(validated)
    assert fast.model_fields_set == validated.model_fields_set
    assert fast.__pydantic_extra__ == validated.__pydantic_extra__
    assert fast.__pydantic_private__ == validated.__pydantic_private__
    assert fast.model_dump_json() == validated.model_dump_json()


@settings(max_examples=400, deadline=None)
@given(
    name=_texts(),
    score=_numbers(),
    passed=st.one_of(st.none(), st.booleans(), st.integers(0, 1)),
    label=st.one_of(st.none(), _texts()),
    threshold=st.one_of(st.none(), _numbers()),
    duration=st.one_of(st.floats(0, 1), st.integers(0, 2)),
    explanation=st.one_of(st.none(), _texts()),
    details=_details(),
)
def test_measured_result_is_what_validation_gives(
    name: Any,
    score: Any,
    passed: Any,
    label: Any,
    threshold: Any,
    duration: Any,
    explanation: Any,
    details: Any,
) -> None:
    args = (name, score, passed, label, threshold, duration, explanation, details)
    try:
        validated = EvalResult(
            name=name, score=score, passed=passed, label=label, threshold=threshold,
            explanation=explanation, details=details, duration_s=duration,
        )  # fmt: skip
    except ValidationError:
        with pytest.raises(ValidationError):
            measured_result(*args)
        return
    result = measured_result(*args)
    _same(result, validated)
    assert type(result.score) is float  # a wrong score type cannot come out
    if isinstance(details, dict):
        assert result.details is not details  # copied, as validation copies it


@settings(max_examples=200, deadline=None)
@given(
    name=_texts(),
    score=_numbers(),
    passed=st.one_of(st.none(), st.booleans(), st.integers(0, 1)),
    label=st.one_of(st.none(), _texts()),
    threshold=st.one_of(st.none(), _numbers()),
    duration=st.one_of(st.floats(0, 1), st.integers(0, 2)),
)
def test_scored_result_is_what_validation_gives(
    name: Any, score: Any, passed: Any, label: Any, threshold: Any, duration: Any
) -> None:
    args = (name, score, passed, label, threshold, duration)
    try:
        validated = EvalResult(
            name=name, score=score, passed=passed, label=label, threshold=threshold, duration_s=duration
        )
    except ValidationError:
        with pytest.raises(ValidationError):
            scored_result(*args)
        return
    result = scored_result(*args)
    _same(result, validated)
    assert type(result.score) is float


@pytest.mark.parametrize("score", ["0.5", b"1", [1.0], None, object()])
def test_a_score_that_is_not_a_float_never_takes_the_cheap_path(score: Any) -> None:
    """Validation decides: text that reads as a number is converted, anything else refused."""
    for build in (
        lambda: measured_result("m", score, None, None, None, 0.0, None, {}),
        lambda: scored_result("m", score, None, None, None, 0.0),
    ):
        try:
            result = build()
        except ValidationError:
            continue
        assert type(result.score) is float or result.score is None


def test_cheap_results_behave_as_validated_ones() -> None:
    """Frozen, copied, pickled and compared as any validated result."""
    details = {"missing": [{"name": "a"}], "n": 1}
    result = measured_result("m", 0.5, False, "fail", 1.0, 1e-6, "why", details)
    validated = EvalResult(
        name="m", score=0.5, passed=False, label="fail", threshold=1.0,
        explanation="why", details=details, duration_s=1e-6,
    )  # fmt: skip
    assert result == validated
    assert hash(result.model_dump_json()) == hash(validated.model_dump_json())
    with pytest.raises(ValidationError):
        result.score = 1.0  # type: ignore[misc]
    renamed = result.model_copy(update={"name": "other"})
    assert (renamed.name, result.name) == ("other", "m")
    assert "name" in renamed.model_fields_set
    assert result.model_fields_set == validated.model_fields_set  # the copy's set is its own
    assert pickle.loads(pickle.dumps(result)) == result
    assert copy.deepcopy(result) == result
    assert EvalResult.model_validate(result.model_dump()) == result


class _Returns(Evaluator):
    """An evaluator whose metric returns a given value, to drive the base class's assembly."""

    type_name = "returns"
    default_threshold = 0.5
    score_range = (0.0, 1.0)

    def __init__(self, value: Any) -> None:
        self.value = value
        super().__init__()

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Any:
        return self.value


@pytest.mark.parametrize(
    ("value", "score", "status"),
    [
        (Measurement(1, {"k": 1}), 1.0, "ok"),  # an int score comes out a float
        (Measurement(0.25, {"k": 1}, "text", "mid"), 0.25, "ok"),
        (Measurement(True, {}), None, "error"),  # type: ignore[arg-type]  # a bool is not a score
        (Measurement("0.5", {}), None, "error"),  # type: ignore[arg-type]
        (Measurement(math.nan, {}), None, "error"),
        (1, 1.0, "ok"),
        (0.75, 0.75, "ok"),
        (False, 0.0, "ok"),
    ],
)
def test_the_base_class_reports_only_float_scores(value: Any, score: float | None, status: str) -> None:
    result = _Returns(value).evaluate("out", "exp")
    assert (result.score, result.status) == (score, status)
    assert result.score is None or type(result.score) is float


def test_details_keyed_by_numbers_still_fail_as_before() -> None:
    """The cheap path leaves a details key that is not text to validation, which refuses it."""
    with pytest.raises(ValidationError):
        _Returns(Measurement(1.0, {1: "x"})).evaluate("out", "exp")  # type: ignore[dict-item]


# -- tool_correctness: the bounded pairing is the package's --------------------------------


def _reference_greedy(called: list[tuple[str, Any]], wanted: list[tuple[str, Any]], weighted: bool) -> float:
    """deepeval's greedy pairing as the package writes it: every actual call scanned for each
    expected one, the taken calls kept and compared by value."""
    from tracesim.evaluators._tool_correctness import _share

    total, taken = 0.0, []
    for want in wanted:
        best, best_call = 0.0, None
        for got in called:
            if got[0] != want[0] or got in taken:
                continue
            credit = _share(want[1], got[1]) if weighted else 1.0
            if credit > best:
                best, best_call = credit, got
        if best > 0:
            total += best
            taken.append(best_call)
    if not wanted:
        return 0.0 if called else 1.0
    return total / len(wanted)


def _random_calls(rng: random.Random, count: int) -> list[dict[str, Any]]:
    values: list[Any] = [1, 1.0, True, "1", None, [1], {"k": 1}, {"k": 1.0}]
    return [
        {
            "name": rng.choice("ab"),
            "arguments": {key: rng.choice(values) for key in rng.sample("pqr", rng.randint(0, 3))},
        }
        for _ in range(count)
    ]


@pytest.mark.parametrize("seed", range(12))
def test_long_lists_pair_as_the_package_does(seed: int) -> None:
    """Above the short-list size the taken calls are tracked by their first equal call; the
    score is the package's on lists with many equal calls, in both weightings and orders."""
    rng = random.Random(seed)
    called, wanted = _random_calls(rng, rng.randint(17, 60)), _random_calls(rng, rng.randint(0, 60))
    as_pairs = lambda calls: [(c["name"], c["arguments"], None) for c in calls]  # noqa: E731
    for params, weighted in (((), False), (("input_parameters",), True)):
        got = ToolCorrectness(params=params).evaluate(called, wanted).score
        assert got == _reference_greedy(as_pairs(called), as_pairs(wanted), weighted)


def _reference_ordered(called: list[tuple[str, Any, Any]], wanted: list[tuple[str, Any, Any]]) -> float:
    """The weighted longest common subsequence cell by cell, as the package fills its table."""
    from tracesim.evaluators._tool_correctness import _share

    rows, cols = len(wanted), len(called)
    table = [[0.0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(1, rows + 1):
        for j in range(1, cols + 1):
            want, got = wanted[i - 1], called[j - 1]
            if want[0] != got[0]:
                table[i][j] = max(table[i - 1][j], table[i][j - 1])
                continue
            credit = _share(want[1], got[1])
            diagonal = table[i - 1][j - 1] + credit if credit > 0 else 0
            table[i][j] = max(table[i - 1][j], table[i][j - 1], diagonal)
    i, j, total = rows, cols, 0.0
    while i > 0 and j > 0:
        if table[i][j] == table[i - 1][j]:
            i -= 1
        elif table[i][j] == table[i][j - 1]:
            j -= 1
        else:
            total += table[i][j] - table[i - 1][j - 1]
            i, j = i - 1, j - 1
    return total / rows


@pytest.mark.parametrize("seed", range(12))
def test_the_ordered_table_is_the_package_s(seed: int) -> None:
    rng = random.Random(100 + seed)
    called, wanted = _random_calls(rng, rng.randint(0, 40)), _random_calls(rng, rng.randint(1, 40))
    as_calls = lambda calls: [(c["name"], c["arguments"], None) for c in calls]  # noqa: E731
    evaluator = ToolCorrectness(consider_ordering=True, params=["input_parameters"])
    assert evaluator.evaluate(called, wanted).score == _reference_ordered(as_calls(called), as_calls(wanted))


# -- run evaluators: an Expected's calls read once ------------------------------------------


def test_an_expected_read_again_gives_the_same_calls_and_the_memory_is_bounded() -> None:
    from tracesim.evaluators import _run_checks
    from tracesim.evaluators._run_checks import ToolNames, expected_calls
    from tracesim.runs import Expected

    expected = Expected(tool_calls=[{"name": "a", "arguments": {"x": [1]}}, {"name": "b"}])
    first, again = expected_calls(expected), expected_calls(expected)
    assert first == again == [("a", {"x": [1]}, False), ("b", {}, False)]
    assert first is not again  # each caller gets its own list
    first.clear()
    assert expected_calls(expected) == again
    evaluator = ToolNames()
    scores = [evaluator.evaluate([{"name": "a"}], expected).score for _ in range(3)]
    assert scores == [0.0, 0.0, 0.0]
    for index in range(_run_checks._READ_EXPECTED_MAX + 40):
        expected_calls(Expected(tool_calls=[{"name": f"t{index}"}]))
    assert len(_run_checks._READ_EXPECTED) <= _run_checks._READ_EXPECTED_MAX
    assert expected_calls(expected) == again  # read again after being dropped


# -- tool_call_f1: the one-pass reading is read_calls then _distinct -------------------------


@pytest.mark.parametrize("seed", range(8))
def test_f1_reads_lists_and_runs_in_one_pass_as_read_calls_does(seed: int) -> None:
    from tracesim.evaluators._ragas_tool_calls import _distinct, _distinct_of
    from tracesim.evaluators._run_checks import read_calls
    from tracesim.runs import Run, Step, ToolCall

    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    for call in _random_calls(rng, rng.randint(0, 12)):
        shape = rng.randrange(5)
        if shape == 1:
            del call["arguments"]
        elif shape == 2:
            call["args"] = call.pop("arguments")
        elif shape == 3:
            call["arguments"] = rng.choice([None, '{"p": 1}', "plain text", {"n": (1, 2)}])
        elif shape == 4:
            call["error"] = "boom"
        items.append(call)
    run = Run(
        steps=tuple(
            Step(
                kind="tool",
                name=c["name"],
                tool_call=ToolCall.of({k: v for k, v in c.items() if k != "error"}),
            )
            for c in items
        )
    )
    for value in (items, run):
        assert _distinct_of(value, "output") == _distinct(read_calls(value, "output"))


# -- run evaluators turn a Measurement into its result as the base class does ----------------


@pytest.mark.parametrize(
    "value",
    [
        Measurement(0.5, {"k": 1}),
        Measurement(1.0, {}, "why", "custom label"),
        Measurement(0.0, {"k": [1]}),
        Measurement(1, {}),  # an int: the base class's path
        Measurement(1.5, {}),  # outside the score range: an error result
        Measurement(math.inf, {}),
        Measurement(math.nan, {}),
        0.25,
        True,
    ],
)
@pytest.mark.parametrize("threshold", [None, 0.5])
def test_a_run_evaluator_finishes_a_measurement_as_the_base_class_does(
    value: Any, threshold: float | None
) -> None:
    from tracesim.evaluators._run_checks import RunEvaluator

    class Fixed(RunEvaluator):
        type_name = "fixed"

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> Any:
            return value

    evaluator = Fixed(threshold=threshold)
    calls = [{"name": "a", "arguments": {}}]
    mine = evaluator.evaluate(calls, calls).model_dump(exclude={"duration_s"})
    base = Evaluator.evaluate(evaluator, calls, calls).model_dump(exclude={"duration_s"})
    assert mine == base
    assert mine["status"] == base["status"]
    assert mine["score"] is None or type(mine["score"]) is float


def test_a_slot_pydantic_does_not_have_falls_back_to_object_setattr() -> None:
    from tracesim.evaluators._result import _slot_setter

    class Plain:
        pass

    target = Plain()
    _slot_setter("__not_a_pydantic_slot__")(target, 7)
    assert target.__not_a_pydantic_slot__ == 7  # type: ignore[attr-defined]
