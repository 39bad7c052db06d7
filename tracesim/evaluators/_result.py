"""The one result type every evaluator returns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["EvalResult", "Status"]

Status = Literal["ok", "skipped", "error"]


class EvalResult(BaseModel):
    """The outcome of scoring one output against its expected value.

    ``status`` says which fields are meaningful: ``ok`` has a ``score`` (and ``passed`` /
    ``label`` when the evaluator has a threshold); ``skipped`` means there was nothing to
    compare against (the expected value was ``None``); ``error`` means the metric raised,
    and ``error`` / ``error_type`` say what happened. Results are immutable.

    Example:
        >>> from tracesim.evaluators import Levenshtein
        >>> result = Levenshtein().evaluate("Hello World!", "Hello World")
        >>> result.score, result.passed, result.label
        (0.92, True, 'pass')
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    score: float | None = None
    passed: bool | None = None
    label: str | None = None
    threshold: float | None = None
    explanation: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    status: Status = "ok"
    error: str | None = None
    error_type: str | None = None
    duration_s: float | None = None


# -- "ok" results assembled by the Evaluator base class ---------------------------------------
#
# Validating an EvalResult costs about 2.5 us, more than a run evaluator's whole metric on a
# short run. The two builders below skip validation only when every value already has the
# exact type validation would return (a ``float`` score, ``str`` name and label, a ``bool`` or
# None for ``passed``, a ``dict`` of details with ``str`` keys...), so the result is the one
# validation would give, field for field: the same values, the same ``model_fields_set``, the
# details copied as validation copies them. Any other value (an ``int`` score, a ``str``
# subclass, a details key that is not text, a score that is not a number) goes through
# validation as before, which converts it or raises. tests/evaluators/test_result_fast.py holds
# the two paths equal.

_new = object.__new__


def _slot_setter(name: str) -> Callable[[Any, Any], None]:
    """The setter of one of BaseModel's slots (``__dict__``, ``__pydantic_extra__``...): the
    descriptor's own ``__set__``, a little cheaper than ``object.__setattr__`` finding it each
    time (which stays the fallback, should pydantic lay its slots out otherwise)."""
    setter = getattr(BaseModel.__dict__.get(name), "__set__", None)
    if setter is None:
        return lambda instance, value: object.__setattr__(instance, name, value)
    return setter  # type: ignore[no-any-return]


_set_dict = _slot_setter("__dict__")
_set_fields = _slot_setter("__pydantic_fields_set__")
_set_extra = _slot_setter("__pydantic_extra__")
_set_private = _slot_setter("__pydantic_private__")
_MEASURED_FIELDS = frozenset(
    ("name", "score", "passed", "label", "threshold", "explanation", "details", "duration_s")
)
_SCORED_FIELDS = frozenset(("name", "score", "passed", "label", "threshold", "duration_s"))


def _trusted(values: dict[str, Any], fields_set: frozenset[str]) -> EvalResult:
    """An `EvalResult` holding ``values`` (every field, each of the type validation gives)."""
    result = _new(EvalResult)
    _set_dict(result, values)
    _set_fields(result, set(fields_set))
    _set_extra(result, None)
    _set_private(result, None)
    return result


def measured_result(
    name: str,
    score: float,
    passed: bool | None,
    label: str | None,
    threshold: float | None,
    duration_s: float,
    explanation: str | None,
    details: dict[str, Any],
) -> EvalResult:
    """The result of a metric that returned a `Measurement`: built directly when every value
    already has its field's type, else validated (which converts or raises).

    Example:
        >>> measured_result("f1", 0.5, True, "pass", 0.5, 1e-6, None, {"common_tokens": 1}).details
        {'common_tokens': 1}
        >>> measured_result("f1", 1, None, None, None, 1e-6, None, {}).score  # validated: an int
        1.0
    """
    if (
        type(score) is float
        and type(name) is str
        and (passed is None or type(passed) is bool)
        and (label is None or type(label) is str)
        and (threshold is None or type(threshold) is float)
        and type(duration_s) is float
        and (explanation is None or type(explanation) is str)
        and type(details) is dict
    ):
        for key in details:  # text keys only (a loop here: this runs for every result)
            if type(key) is not str:
                break
        else:
            result = _new(EvalResult)  # as _trusted does, inline
            _set_dict(
                result,
                {
                    "name": name,
                    "score": score,
                    "passed": passed,
                    "label": label,
                    "threshold": threshold,
                    "explanation": explanation,
                    "details": dict(details),  # validation copies the mapping too
                    "status": "ok",
                    "error": None,
                    "error_type": None,
                    "duration_s": duration_s,
                },
            )
            _set_fields(result, set(_MEASURED_FIELDS))
            _set_extra(result, None)
            _set_private(result, None)
            return result
    return EvalResult(
        name=name,
        score=score,
        passed=passed,
        label=label,
        threshold=threshold,
        explanation=explanation,
        details=details,
        duration_s=duration_s,
    )


def scored_result(
    name: str,
    score: float,
    passed: bool | None,
    label: str | None,
    threshold: float | None,
    duration_s: float,
) -> EvalResult:
    """The result of a metric that returned a plain score (built directly as `measured_result`
    does when the values have their fields' types).

    Example:
        >>> scored_result("exact", 1.0, True, "pass", 1.0, 1e-6).label
        'pass'
    """
    if (
        type(score) is float
        and type(name) is str
        and (passed is None or type(passed) is bool)
        and (label is None or type(label) is str)
        and (threshold is None or type(threshold) is float)
        and type(duration_s) is float
    ):
        values = {
            "name": name,
            "score": score,
            "passed": passed,
            "label": label,
            "threshold": threshold,
            "explanation": None,
            "details": {},
            "status": "ok",
            "error": None,
            "error_type": None,
            "duration_s": duration_s,
        }
        return _trusted(values, _SCORED_FIELDS)
    return EvalResult(
        name=name, score=score, passed=passed, label=label, threshold=threshold, duration_s=duration_s
    )
