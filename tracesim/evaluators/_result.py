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


# -- "ok" results assembled by the Evaluator base class ---------------------------------------


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
    """The result of a metric that returned a `Measurement`.

    Example:
        >>> measured_result("f1", 0.5, True, "pass", 0.5, 1e-6, None, {"common_tokens": 1}).details
        {'common_tokens': 1}
    """
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
    """The result of a metric that returned a plain score.

    Example:
        >>> scored_result("exact", 1.0, True, "pass", 1.0, 1e-6).label
        'pass'
    """
    return EvalResult(
        name=name, score=score, passed=passed, label=label, threshold=threshold, duration_s=duration_s
    )
