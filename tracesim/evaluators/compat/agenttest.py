"""AgentTest's ``string_similarity`` evaluator (PyPI ``agenttest`` 0.1.0).

Example:
    >>> from tracesim.evaluators.compat.agenttest import StringSimilarity
    >>> r = StringSimilarity(method="jaccard").evaluate("Python, Java, Go", "Java, Python, Rust")
    >>> r["score"], r["passed"]
    (0.5, False)
"""

from __future__ import annotations

from typing import Any

from tracesim.evaluators._edit import DISTANCE_MAX_CHARS, edit_distance
from tracesim.evaluators._overlap import WORDS_MAX_CHARS
from tracesim.evaluators._text import cut_texts
from tracesim.evaluators._tfidf import COSINE_MAX_CHARS, tfidf_cosine

__all__ = ["METHODS", "StringSimilarity"]

METHODS = ("cosine", "levenshtein", "jaccard", "exact")

# Each method cuts its texts where the core evaluator of the same metric does.
_CAPS: dict[str, int | None] = {"exact": None, "levenshtein": DISTANCE_MAX_CHARS, "jaccard": WORDS_MAX_CHARS}


def _similarity(actual: str, expected: str, method: str) -> float:
    if method == "exact":
        return 1.0 if actual == expected else 0.0
    if method == "levenshtein":
        longest = max(len(actual), len(expected))
        return 1.0 if longest == 0 else 1 - edit_distance(actual, expected) / longest
    if method == "jaccard":
        a, e = set(actual.lower().split()), set(expected.lower().split())
        union = a | e
        return len(a & e) / len(union) if union else 0.0
    cosine = tfidf_cosine(actual, expected)  # any other method name falls back to cosine
    if cosine is None:
        raise ValueError("empty vocabulary; perhaps the documents only contain stop words")
    return cosine


def _failure(message: str) -> dict[str, Any]:
    return {"passed": False, "score": None, "threshold": None, "details": {}, "error": message}


class StringSimilarity:
    """``evaluate(actual, expected)`` → ``{"passed", "score", "threshold", "details", "error"}``.

    ``method`` is ``cosine`` (TF-IDF, the default), ``levenshtein`` (unrounded,
    case-sensitive), ``jaccard`` (lowercased word sets; two empty texts give 0.0) or
    ``exact``; an unknown name falls back to cosine, as in AgentTest. ``passed`` is
    ``score >= threshold`` (0.8). Values are compared as ``str(value)``. No expected
    value passes with score 1.0; errors come back in ``error`` and are never raised.
    Long texts are cut where the core evaluator of the method cuts them (``levenshtein``
    40,000 characters, ``cosine`` and ``jaccard`` 100,000, ``exact`` never), and
    ``details.truncated_to`` says so.

    Example:
        >>> r = StringSimilarity(method="levenshtein").evaluate("kitten", "sitting")
        >>> r["score"], r["passed"], r["details"]["method"]
        (0.5714285714285714, False, 'levenshtein')
    """

    def __init__(self, method: str = "cosine", threshold: float = 0.8) -> None:
        self.method = method
        self.threshold = threshold

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> StringSimilarity:
        """Build from the ``config:`` mapping of an ``.agenttest/config.yaml`` evaluator entry."""
        return cls(method=config.get("method", "cosine"), threshold=config.get("threshold", 0.8))

    def evaluate(self, actual: Any, expected: Any = None) -> dict[str, Any]:
        """Compare one actual value with its expected value."""
        try:
            return self._single(actual, expected)
        except Exception as exc:
            return _failure(f"String similarity evaluation failed: {exc}")

    def evaluate_output(self, test_output: Any) -> dict[str, Any]:
        """AgentTest's entry point: a dict with ``actual``/``expected``, a list of such dicts
        (``test_cases``: mean score, passed when all pass) or a bare actual value."""
        try:
            if isinstance(test_output, list):
                return self._multiple(test_output)
            if isinstance(test_output, dict):
                if "test_cases" in test_output:
                    return self._multiple(test_output["test_cases"])
                return self._single(test_output.get("actual"), test_output.get("expected"))
            return self._single(test_output, None)
        except Exception as exc:
            return _failure(f"String similarity evaluation failed: {exc}")

    def _single(self, actual: Any, expected: Any) -> dict[str, Any]:
        if actual is None:
            return _failure("No 'actual' value found in test output")
        if expected is None:
            details: dict[str, Any] = {"reason": "No expected value provided"}
            return {"passed": True, "score": 1.0, "threshold": None, "details": details, "error": None}
        cap = _CAPS.get(self.method, COSINE_MAX_CHARS)
        a, e, cut = cut_texts(str(actual), str(expected), cap)
        score = _similarity(a, e, self.method)
        details = {"actual": actual, "expected": expected, "similarity": score, "method": self.method}
        if cut is not None:
            details["truncated_to"] = cut
        return {
            "passed": score >= self.threshold,
            "score": score,
            "threshold": self.threshold,
            "details": details,
            "error": None,
        }

    def _multiple(self, cases: list[Any]) -> dict[str, Any]:
        results = []
        for case in cases:
            try:
                results.append(self._single(case.get("actual"), case.get("expected")))
            except Exception as exc:
                results.append(_failure(f"String similarity evaluation failed: {exc}"))
        total = sum(r["score"] for r in results if r["score"] is not None)
        details = {
            "total_cases": len(results),
            "passed_cases": sum(1 for r in results if r["passed"]),
            "individual_results": results,
        }
        return {
            "passed": all(r["passed"] for r in results),
            "score": total / len(results) if results else 0.0,
            "threshold": self.threshold,
            "details": details,
            "error": None,
        }
