"""AgentTest's ``string_similarity`` evaluator (PyPI ``agenttest`` 0.1.0).

Both of AgentTest's call shapes work: ``StringSimilarity(method=..., threshold=...)`` or
``StringSimilarity(config)`` with the ``config:`` mapping of an ``.agenttest/config.yaml``
evaluator entry (AgentTest's ``StringSimilarityEvaluator(config)``), then
``evaluate(actual, expected)`` or ``evaluate(test_output)`` with a test's return value.

Example:
    >>> from tracesim.evaluators.compat.agenttest import StringSimilarity
    >>> r = StringSimilarity(method="jaccard").evaluate("Python, Java, Go", "Java, Python, Rust")
    >>> r["score"], r["passed"]
    (0.5, False)
    >>> exact = StringSimilarity({"method": "exact", "threshold": 1.0})
    >>> exact.evaluate({"actual": "OK", "expected": "OK"})["score"]
    1.0
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any

from tracesim.evaluators._edit import DISTANCE_MAX_CHARS, edit_distance
from tracesim.evaluators._overlap import WORDS_MAX_CHARS
from tracesim.evaluators._text import cut_texts
from tracesim.evaluators._tfidf import COSINE_MAX_CHARS, tfidf_cosine

__all__ = ["CONFIG_KEYS", "METHODS", "StringSimilarity"]

METHODS = ("cosine", "levenshtein", "jaccard", "exact")
CONFIG_KEYS = ("method", "threshold")
"""The keys AgentTest's ``string_similarity`` reads from its config (tracesim: also ``similarity_config``)."""

# Each method cuts its texts where the core evaluator of the same metric does.
_CAPS: dict[str, int | None] = {"exact": None, "levenshtein": DISTANCE_MAX_CHARS, "jaccard": WORDS_MAX_CHARS}
_SHAPES = "{'actual': ..., 'expected': ...}, {'test_cases': [...]}, a list of such dicts, or a bare value"


class _Unset(enum.Enum):
    UNSET = enum.auto()


_UNSET = _Unset.UNSET


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


def _type_name(value: Any) -> str:
    return type(value).__name__


def _check_method(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{where} must be one of {', '.join(METHODS)}; got {_type_name(value)}")
    return value


def _check_threshold(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{where} must be a number such as 0.8; got {_type_name(value)} {value!r}")
    return value  # kept as given: AgentTest reports the threshold it was configured with


def _read_config(config: Mapping[str, Any], where: str) -> tuple[str, float]:
    """``(method, threshold)`` from an AgentTest ``config:`` mapping, AgentTest's defaults filled in."""
    unknown = sorted(str(key) for key in config if key not in CONFIG_KEYS)
    if unknown:
        hint = " (pass the entry's 'config:' mapping, not the whole entry)" if "type" in config else ""
        raise ValueError(f"{where} accepts the keys {', '.join(CONFIG_KEYS)}; got {', '.join(unknown)}{hint}")
    method = _check_method(config.get("method", "cosine"), f"{where}['method']")
    return method, _check_threshold(config.get("threshold", 0.8), f"{where}['threshold']")


def _override(data: Mapping[str, Any], method: str, threshold: float, where: str) -> tuple[str, float]:
    """Apply a test output's ``similarity_config`` (AgentTest documents it but never reads it)."""
    override = data.get("similarity_config")
    if override is None:
        return method, threshold
    if not isinstance(override, Mapping):
        raise TypeError(f"{where} must be a dict such as {{'method': 'levenshtein', 'threshold': 0.9}}")
    _read_config(override, where)  # checks keys and types
    new_method = override.get("method", method)
    if new_method not in METHODS:  # no AgentTest result to reproduce here: refuse typos
        raise ValueError(f"{where}['method'] must be one of {', '.join(METHODS)}; got {new_method!r}")
    return new_method, _check_threshold(override.get("threshold", threshold), f"{where}['threshold']")


class StringSimilarity:
    """AgentTest's similarity: results are ``{"passed", "score", "threshold", "details", "error"}``.

    ``method`` is ``cosine`` (TF-IDF, the default), ``levenshtein`` (unrounded,
    case-sensitive), ``jaccard`` (lowercased word sets; two empty texts give 0.0) or
    ``exact``; an unknown name falls back to cosine, as in AgentTest. ``passed`` is
    ``score >= threshold`` (0.8). Values are compared as ``str(value)``. No expected
    value passes with score 1.0; metric errors come back in ``error`` and are never raised.
    Long texts are cut where the core evaluator of the method cuts them (``levenshtein``
    40,000 characters, ``cosine`` and ``jaccard`` 100,000, ``exact`` never), and
    ``details.truncated_to`` says so.

    Pass a config mapping instead of ``method`` to build it as AgentTest's
    ``StringSimilarityEvaluator(config)`` does. A config key other than ``method`` and
    ``threshold``, a threshold that is not a number, or a test output of the wrong shape
    raise ``TypeError`` / ``ValueError`` saying what to pass.

    Example:
        >>> r = StringSimilarity(method="levenshtein").evaluate("kitten", "sitting")
        >>> r["score"], r["passed"], r["details"]["method"]
        (0.5714285714285714, False, 'levenshtein')
        >>> StringSimilarity({"method": "levenshtein", "threshold": 0.5}).threshold
        0.5
    """

    def __init__(
        self, method: str | Mapping[str, Any] | None = "cosine", threshold: float | _Unset = _UNSET
    ) -> None:
        if isinstance(method, Mapping):
            if threshold is not _UNSET:
                raise TypeError("pass StringSimilarity a config mapping or method=/threshold=, not both")
            self.method, self.threshold = _read_config(method, "StringSimilarity config")
            return
        # AgentTest's evaluators treat a missing config (None) as the defaults.
        self.method = "cosine" if method is None else _check_method(method, "StringSimilarity method")
        self.threshold = (
            0.8 if threshold is _UNSET else _check_threshold(threshold, "StringSimilarity threshold")
        )

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> StringSimilarity:
        """Build from the ``config:`` mapping of an ``.agenttest/config.yaml`` evaluator entry.

        Example:
            >>> StringSimilarity.from_config({"method": "exact"}).threshold
            0.8
        """
        return cls(config)

    def evaluate(self, actual: Any, expected: Any = _UNSET) -> dict[str, Any]:
        """Compare ``actual`` with ``expected``; with one argument, score a test output.

        ``evaluate(test_output)`` is AgentTest's own call: it scores the ``actual`` of a dict
        against its ``expected`` (see :meth:`evaluate_output`), never the dict itself.

        Example:
            >>> StringSimilarity(method="exact").evaluate({"actual": "a", "expected": "b"})["score"]
            0.0
        """
        if expected is _UNSET:
            return self.evaluate_output(actual)
        try:
            return self._single(actual, expected, self.method, self.threshold)
        except Exception as exc:
            return _failure(f"String similarity evaluation failed: {exc}")

    def evaluate_output(self, test_output: Any) -> dict[str, Any]:
        """Score an AgentTest test output.

        A dict with ``actual``/``expected``; a dict with ``test_cases`` or a list of such
        dicts (mean score over all cases, passed when all pass); or a bare actual value.
        A ``similarity_config`` (``method``, ``threshold``) in the dict, or in one case,
        overrides the evaluator's for it: AgentTest documents that and ignores it, tracesim
        honours it.

        Example:
            >>> out = {"actual": "SUCCESS", "expected": "SUCCES", "similarity_config": {"method": "exact"}}
            >>> StringSimilarity(method="levenshtein").evaluate_output(out)["score"]
            0.0
        """
        run = self._plan(test_output)
        try:
            return run()
        except Exception as exc:  # AgentTest reports metric failures in the result
            return _failure(f"String similarity evaluation failed: {exc}")

    def _plan(self, test_output: Any) -> Callable[[], dict[str, Any]]:
        """Check the shape of a test output (raising for a wrong one) and return its scoring."""
        if isinstance(test_output, list):
            cases = self._cases(test_output, self.method, self.threshold)
            return lambda: self._multiple(cases, self.threshold)
        if not isinstance(test_output, Mapping):
            return lambda: self._single(test_output, None, self.method, self.threshold)
        method, threshold = _override(test_output, self.method, self.threshold, "similarity_config")
        if "test_cases" in test_output:
            cases = self._cases(test_output["test_cases"], method, threshold)
            return lambda: self._multiple(cases, threshold)
        actual, expected = test_output.get("actual"), test_output.get("expected")
        return lambda: self._single(actual, expected, method, threshold)

    @staticmethod
    def _cases(cases: Any, method: str, threshold: float) -> list[tuple[Mapping[str, Any], str, float]]:
        if not isinstance(cases, (list, tuple)):
            raise TypeError(
                f"test_cases must be a list of dicts with 'actual' and 'expected'; got {_type_name(cases)}"
            )
        checked = []
        for i, case in enumerate(cases):
            if not isinstance(case, Mapping):
                raise TypeError(
                    f"test_cases[{i}] must be a dict with 'actual' and 'expected'; got {_type_name(case)}"
                )
            checked.append((case, *_override(case, method, threshold, f"test_cases[{i}].similarity_config")))
        return checked

    @staticmethod
    def _single(actual: Any, expected: Any, method: str, threshold: float) -> dict[str, Any]:
        if actual is None:
            return _failure("No 'actual' value found in test output")
        if expected is None:
            details: dict[str, Any] = {"reason": "No expected value provided"}
            return {"passed": True, "score": 1.0, "threshold": None, "details": details, "error": None}
        cap = _CAPS.get(method, COSINE_MAX_CHARS)
        a, e, cut = cut_texts(str(actual), str(expected), cap)
        score = _similarity(a, e, method)
        details = {"actual": actual, "expected": expected, "similarity": score, "method": method}
        if cut is not None:
            details["truncated_to"] = cut
        return {
            "passed": score >= threshold,
            "score": score,
            "threshold": threshold,
            "details": details,
            "error": None,
        }

    def _multiple(
        self, cases: list[tuple[Mapping[str, Any], str, float]], threshold: float
    ) -> dict[str, Any]:
        # As in AgentTest, a metric that raises on one case fails the whole evaluation.
        results = [self._single(c.get("actual"), c.get("expected"), m, t) for c, m, t in cases]
        total = sum(r["score"] for r in results if r["score"] is not None)
        details = {
            "total_cases": len(results),
            "passed_cases": sum(1 for r in results if r["passed"]),
            "individual_results": results,
        }
        return {
            "passed": all(r["passed"] for r in results),
            "score": total / len(results) if results else 0.0,
            "threshold": threshold,
            "details": details,
            "error": None,
        }
