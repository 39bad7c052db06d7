"""AgentTest's result type, and the results every AgentTest façade builds with it.

Imported by `tracesim.evaluators.compat.agenttest`, which is where users import it from.

Example:
    >>> from tracesim.evaluators.compat.agenttest import EvaluationResult
    >>> EvaluationResult(passed=True, score=1.0, details={"reason": "No expected value provided"}).score
    1.0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["EvaluationResult"]


@dataclass
class EvaluationResult:
    """What an AgentTest evaluator returns: ``passed``, ``score``, ``threshold``, ``details``, ``error``.

    AgentTest's own result type, field for field: a dataclass read by attribute
    (``result.passed``, ``result.score``, ``result.error``), compared by value, with
    ``to_dict()`` for serialising. Only ``passed`` is required; ``score``, ``threshold`` and
    ``error`` default to None, ``details`` to ``{}`` (also when given as None). As in AgentTest
    it is not a mapping: ``result["score"]`` raises ``TypeError``; use ``result.score`` or
    ``result.to_dict()["score"]``. Results of several cases are kept in
    ``details["individual_results"]`` as ``to_dict()`` dicts, as AgentTest keeps them.

    Example:
        >>> r = EvaluationResult(passed=False, error="No 'actual' value found in test output")
        >>> r.passed, r.score, r.details, "actual" in r.error
        (False, None, {}, True)
        >>> r.to_dict()["error"]
        "No 'actual' value found in test output"
    """

    passed: bool
    score: float | None = None
    threshold: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    def __post_init__(self) -> None:
        if self.details is None:  # AgentTest accepts details=None
            self.details = {}  # type: ignore[unreachable]

    def to_dict(self) -> dict[str, Any]:
        """The five fields as a dict (``details`` is the same object, not a copy), as AgentTest's.

        Example:
            >>> EvaluationResult(passed=True, score=1.0).to_dict()
            {'passed': True, 'score': 1.0, 'threshold': None, 'details': {}, 'error': None}
        """
        return {
            "passed": self.passed,
            "score": self.score,
            "threshold": self.threshold,
            "details": self.details,
            "error": self.error,
        }


def outcome(
    passed: bool,
    score: float | None,
    threshold: float | None,
    details: dict[str, Any],
    error: str | None = None,
) -> EvaluationResult:
    """AgentTest's result."""
    return EvaluationResult(passed, score, threshold, details, error)


def failure(message: str, details: dict[str, Any] | None = None) -> EvaluationResult:
    """AgentTest's result for an evaluation that could not run."""
    return outcome(False, None, None, details or {}, message)


def mean_of_cases(results: list[EvaluationResult], threshold: float | None) -> EvaluationResult:
    """AgentTest's ``test_cases`` result: mean score (a case without one counts 0), all must pass.

    Each case's result is kept in ``details["individual_results"]`` as its ``to_dict()``.
    """
    total = sum(r.score for r in results if r.score is not None)
    details = {
        "total_cases": len(results),
        "passed_cases": sum(1 for r in results if r.passed),
        "individual_results": [r.to_dict() for r in results],
    }
    score = total / len(results) if results else 0.0
    return outcome(all(r.passed for r in results), score, threshold, details)
