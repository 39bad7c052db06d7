"""The base class's unvalidated EvalResult assembly gives exactly what validation gives."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from tracesim.evaluators import EvalResult, Evaluator, Measurement, _result


class _Str(str):
    pass


class _Float(float):
    pass


names = st.sampled_from(["f1", "exact", _Str("sub"), 3])
scores = st.one_of(
    st.floats(), st.integers(-5, 5), st.booleans(), st.builds(_Float, st.floats(allow_nan=False))
)
maybe_bools = st.sampled_from([None, True, False, 1, "yes"])
maybe_texts = st.sampled_from([None, "pass", "fail", _Str("pass"), 7])
thresholds = st.one_of(
    st.none(), st.floats(allow_nan=False), st.integers(0, 2), st.builds(_Float, st.just(0.5))
)
durations = st.one_of(st.floats(min_value=0, max_value=1), st.integers(0, 1))
details = st.one_of(
    st.dictionaries(st.sampled_from(["a", "b", _Str("c")]), st.one_of(st.integers(), st.text(max_size=3))),
    st.dictionaries(st.integers(0, 3), st.integers(), min_size=1),
    st.none(),
    st.just([("a", 1)]),
)


def _outcome(build: Any, *args: Any) -> Any:
    try:
        return build(*args)
    except ValidationError as exc:
        return ("ValidationError", exc.error_count())


def _same(fast: Any, slow: Any) -> None:
    if isinstance(slow, tuple):
        assert fast == slow
        return
    assert type(fast) is EvalResult
    assert list(fast.__dict__.items()) == list(slow.__dict__.items())
    assert [type(v) for v in fast.__dict__.values()] == [type(v) for v in slow.__dict__.values()]
    assert fast.model_fields_set == slow.model_fields_set
    assert fast == slow
    assert repr(fast) == repr(slow)
    assert fast.model_dump() == slow.model_dump()
    assert fast.model_dump(exclude_unset=True) == slow.model_dump(exclude_unset=True)
    assert fast.model_dump_json() == slow.model_dump_json()
    # Round trips, compared by repr and fields set (a NaN score is not equal to itself).
    for made, expected in [
        (pickle.loads(pickle.dumps(fast)), pickle.loads(pickle.dumps(slow))),
        (copy.deepcopy(fast), copy.deepcopy(slow)),
        (fast.model_copy(update={"label": "x"}), slow.model_copy(update={"label": "x"})),
    ]:
        assert (repr(made), made.model_fields_set) == (repr(expected), expected.model_fields_set)
    with pytest.raises(ValidationError):
        fast.score = 0.0  # type: ignore[misc]  # frozen


def test_this_pydantic_takes_the_unvalidated_path() -> None:
    # False would be safe (everything validated) but slower: say so when pydantic changes.
    assert _result.UNVALIDATED_OK


@given(
    name=names,
    score=scores,
    passed=maybe_bools,
    label=maybe_texts,
    threshold=thresholds,
    duration=durations,
    explanation=maybe_texts,
    details=details,
)
def test_measured_result_equals_validation(
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
    fast = _outcome(_result.measured_result, *args)
    slow = _outcome(
        lambda *a: EvalResult(
            name=a[0],
            score=a[1],
            passed=a[2],
            label=a[3],
            threshold=a[4],
            duration_s=a[5],
            explanation=a[6],
            details=a[7],
        ),
        *args,
    )
    _same(fast, slow)
    if isinstance(details, dict) and not isinstance(slow, tuple):
        assert fast.details is not details  # copied, as validation copies it


@given(
    name=names, score=scores, passed=maybe_bools, label=maybe_texts, threshold=thresholds, duration=durations
)
def test_scored_result_equals_validation(
    name: Any, score: Any, passed: Any, label: Any, threshold: Any, duration: Any
) -> None:
    args = (name, score, passed, label, threshold, duration)
    fast = _outcome(_result.scored_result, *args)
    slow = _outcome(
        lambda *a: EvalResult(
            name=a[0], score=a[1], passed=a[2], label=a[3], threshold=a[4], duration_s=a[5]
        ),
        *args,
    )
    _same(fast, slow)


@given(score=st.floats(), explanation=maybe_texts, details=details)
def test_measured_details_and_explanation_equal_validation(
    score: float, explanation: Any, details: Any
) -> None:
    fast = _outcome(_result.measured_result, "f1", score, True, "pass", 0.5, 1e-6, explanation, details)
    slow = _outcome(
        lambda: EvalResult(
            name="f1",
            score=score,
            passed=True,
            label="pass",
            threshold=0.5,
            duration_s=1e-6,
            explanation=explanation,
            details=details,
        )
    )
    _same(fast, slow)


def test_evaluate_results_are_those_validation_builds() -> None:
    class Returns(Evaluator):
        type_name = "returns"
        default_threshold = 0.5

        def __init__(self, value: Any) -> None:
            super().__init__()
            self.value = value

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> Any:
            return self.value

    for value in (0.7, 1, True, Measurement(0.2, {"k": 1}, "why", "meh"), Measurement(3)):
        result = Returns(value).evaluate("a", "b")
        again = EvalResult.model_validate(result.model_dump(exclude_unset=True))
        assert again.model_fields_set == result.model_fields_set | {"duration_s"}
        assert again.model_dump() == result.model_dump()
    with pytest.raises(ValidationError):  # as before: bad details in a Measurement raise
        Returns(Measurement(0.5, None)).evaluate("a", "b")  # type: ignore[arg-type]
