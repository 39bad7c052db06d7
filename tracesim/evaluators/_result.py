"""The one result type every evaluator returns."""

from __future__ import annotations

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


# -- fast assembly of "ok" results by the Evaluator base class ---------------------------------
#
# pydantic validation costs about 1.5 us per result, most of a cheap evaluator's call (exact
# match scores in ~2 us). When every value already has the exact type validation returns,
# validation changes nothing but copying ``details``; the instance is then filled the way
# ``model_construct`` fills it, without its per-field Python loop (which is slower than
# validating). Anything else (an int score, a str subclass, a non-str details key, details
# that are not a dict) is validated as before, and may raise ValidationError as before.

_SCORED_FIELDS = frozenset(("name", "score", "passed", "label", "threshold", "duration_s"))
_MEASURED_FIELDS = _SCORED_FIELDS | {"explanation", "details"}
_STR_ONLY = frozenset((str,))
_new = EvalResult.__new__
_set = object.__setattr__
UNVALIDATED_OK = True  # until the check at the end of this module says otherwise


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
    """``EvalResult(name=..., ..., explanation=..., details=...)``, validated only if needed.

    Example:
        >>> result = measured_result("f1", 0.5, True, "pass", 0.5, 1e-6, None, {"common_tokens": 1})
        >>> result == EvalResult(name="f1", score=0.5, passed=True, label="pass", threshold=0.5,
        ...                      explanation=None, details={"common_tokens": 1}, duration_s=1e-6)
        True
    """
    if (
        UNVALIDATED_OK
        and type(score) is float
        and type(name) is str
        and type(duration_s) is float
        and (passed is None or type(passed) is bool)
        and (label is None or type(label) is str)
        and (threshold is None or type(threshold) is float)
        and (explanation is None or type(explanation) is str)
        and type(details) is dict
        and set(map(type, details)) <= _STR_ONLY
    ):
        result = _new(EvalResult)
        _set(
            result,
            "__dict__",
            {
                "name": name,
                "score": score,
                "passed": passed,
                "label": label,
                "threshold": threshold,
                "explanation": explanation,
                "details": dict(details),
                "status": "ok",
                "error": None,
                "error_type": None,
                "duration_s": duration_s,
            },
        )
        _set(result, "__pydantic_fields_set__", set(_MEASURED_FIELDS))
        _set(result, "__pydantic_extra__", None)
        _set(result, "__pydantic_private__", None)
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
    """``EvalResult(name=..., score=..., ...)`` for a bare number, validated only if needed.

    Example:
        >>> scored_result("exact", 1.0, True, "pass", 1.0, 1e-6).model_fields_set == {
        ...     "name", "score", "passed", "label", "threshold", "duration_s"}
        True
    """
    if (
        UNVALIDATED_OK
        and type(score) is float
        and type(name) is str
        and type(duration_s) is float
        and (passed is None or type(passed) is bool)
        and (label is None or type(label) is str)
        and (threshold is None or type(threshold) is float)
    ):
        result = _new(EvalResult)
        _set(
            result,
            "__dict__",
            {
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
            },
        )
        _set(result, "__pydantic_fields_set__", set(_SCORED_FIELDS))
        _set(result, "__pydantic_extra__", None)
        _set(result, "__pydantic_private__", None)
        return result
    return EvalResult(
        name=name, score=score, passed=passed, label=label, threshold=threshold, duration_s=duration_s
    )


def _unvalidated_matches_pydantic() -> bool:
    """Whether this pydantic version builds instances as the fast paths above do."""
    if EvalResult.__pydantic_post_init__ or EvalResult.__pydantic_root_model__:
        return False
    scalars: dict[str, Any] = {
        "name": "x",
        "score": 0.5,
        "passed": True,
        "label": "pass",
        "threshold": 0.5,
        "duration_s": 0.1,
    }
    try:
        pairs = [
            (scored_result(**scalars), EvalResult(**scalars)),
            (
                measured_result(**scalars, explanation="why", details={"k": [1]}),
                EvalResult(**scalars, explanation="why", details={"k": [1]}),
            ),
        ]
    except Exception:  # e.g. a pydantic without these instance slots
        return False
    return all(
        list(fast.__dict__.items()) == list(slow.__dict__.items())
        and fast.model_fields_set == slow.model_fields_set
        and fast.__pydantic_extra__ == slow.__pydantic_extra__
        and fast.__pydantic_private__ == slow.__pydantic_private__
        and fast == slow
        for fast, slow in pairs
    )


# Checked once at import: a pydantic that builds instances differently gets validation only.
UNVALIDATED_OK = _unvalidated_matches_pydantic()
