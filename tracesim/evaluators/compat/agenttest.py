"""AgentTest's evaluators (PyPI ``agenttest`` 0.1.0): its numbers, pass rules and result dicts.

``StringSimilarity`` (``similarity``), `Contains` (``contains``), `Regex` (``regex``),
`Metrics` (``metrics``: ROUGE, BLEU, METEOR), `Metric` (``metric``: numeric error) and
`LLMJudge` (``llm_judge``). Each is built
as AgentTest builds it, from the ``config:`` mapping of an ``.agenttest/config.yaml``
evaluator entry, and ``evaluate(test_output)`` scores a test's return value into an
`EvaluationResult`, AgentTest's result type: attributes ``passed``, ``score``,
``threshold``, ``details``, ``error``, and ``to_dict()``. ``StringSimilarity`` also takes
``method=``/``threshold=`` and ``evaluate(actual, expected)``.

Example:
    >>> from tracesim.evaluators.compat.agenttest import Contains, StringSimilarity
    >>> r = StringSimilarity(method="jaccard").evaluate("Python, Java, Go", "Java, Python, Rust")
    >>> r.score, r.passed
    (0.5, False)
    >>> exact = StringSimilarity({"method": "exact", "threshold": 1.0})
    >>> exact.evaluate({"actual": "OK", "expected": "OK"}).score
    1.0
    >>> Contains().evaluate({"actual": "Refunds within 30 days", "contains": ["refund", "90 days"]}).score
    0.5
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from typing import Any

from tracesim.evaluators._compared_text import cut_texts
from tracesim.evaluators._levenshtein import DISTANCE_CAPS, edit_distance
from tracesim.evaluators._long_texts import DEFAULT, TextCap
from tracesim.evaluators._tfidf import COSINE_CAPS, tfidf_cosine
from tracesim.evaluators._word_overlap import WORDS_CAPS
from tracesim.evaluators.compat._agenttest_judge import CRITERIA, LLMJudge
from tracesim.evaluators.compat._agenttest_more import (
    CONTAINS_OPTIONS,
    REGEX_OPTIONS,
    Metric,
    Metrics,
    enough,
    merged_options,
    output_data,
    read_options,
)
from tracesim.evaluators.compat._agenttest_more import type_name as _type_name
from tracesim.evaluators.compat._agenttest_result import EvaluationResult, mean_of_cases, outcome
from tracesim.evaluators.compat._agenttest_result import failure as _failure

__all__ = [
    "CONFIG_KEYS",
    "CRITERIA",
    "METHODS",
    "Contains",
    "EvaluationResult",
    "LLMJudge",
    "Metric",
    "Metrics",
    "Regex",
    "StringSimilarity",
]

METHODS = ("cosine", "levenshtein", "jaccard", "exact")
"""The ``method`` values AgentTest's ``string_similarity`` accepts."""
CONFIG_KEYS = ("method", "threshold")
"""The keys AgentTest's ``string_similarity`` reads from its config (tracesim: also ``similarity_config``)."""

# Each method cuts its texts where the core evaluator of the same metric does (its default
# caps, by where the call runs; a thread cap's first cut is said once per method).
_CAPS: dict[str, TextCap] = {
    method: TextCap(f"agenttest.{method}", DEFAULT, caps)
    for method, caps in (("levenshtein", DISTANCE_CAPS), ("jaccard", WORDS_CAPS), ("cosine", COSINE_CAPS))
}
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
    """AgentTest's similarity: an `EvaluationResult` (``passed``, ``score``, ``threshold``, ``details``).

    ``method`` is ``cosine`` (TF-IDF, the default), ``levenshtein`` (unrounded,
    case-sensitive), ``jaccard`` (lowercased word sets; two empty texts give 0.0) or
    ``exact``; an unknown name falls back to cosine, as in AgentTest. ``passed`` is
    ``score >= threshold`` (0.8). Values are compared as ``str(value)``. No expected
    value passes with score 1.0 and no threshold; no ``actual`` (None) fails with no score
    and an ``error`` naming ``actual``; metric errors come back in ``error`` and are never raised.
    Long texts are cut where the core evaluator of the method cuts them by default
    (``levenshtein`` 100,000 characters, ``cosine`` and ``jaccard`` 1,000,000, ``exact``
    never; on tracesim's scoring threads in the host's interpreter 40,000 and 100,000),
    and ``details.truncated_to`` says so.

    Pass a config mapping instead of ``method`` to build it as AgentTest's
    ``StringSimilarityEvaluator(config)`` does. A config key other than ``method`` and
    ``threshold``, a threshold that is not a number, or a test output of the wrong shape
    raise ``TypeError`` / ``ValueError`` saying what to pass.

    Example:
        >>> r = StringSimilarity(method="levenshtein").evaluate("kitten", "sitting")
        >>> r.score, r.passed, r.details["method"]
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

    def evaluate(self, actual: Any, expected: Any = _UNSET) -> EvaluationResult:
        """Compare ``actual`` with ``expected``; with one argument, score a test output.

        ``evaluate(test_output)`` is AgentTest's own call: it scores the ``actual`` of a dict
        against its ``expected`` (see :meth:`evaluate_output`), never the dict itself.

        Example:
            >>> StringSimilarity(method="exact").evaluate({"actual": "a", "expected": "b"}).score
            0.0
        """
        if expected is _UNSET:
            return self.evaluate_output(actual)
        try:
            return self._single(actual, expected, self.method, self.threshold)
        except Exception as exc:
            return _failure(f"String similarity evaluation failed: {exc}")

    def evaluate_output(self, test_output: Any) -> EvaluationResult:
        """Score an AgentTest test output.

        A dict with ``actual``/``expected``; a dict with ``test_cases`` or a list of such
        dicts (mean score over all cases, passed when all pass); or a bare actual value.
        A ``similarity_config`` (``method``, ``threshold``) in the dict, or in one case,
        overrides the evaluator's for it: AgentTest documents that and ignores it, tracesim
        honours it.

        Example:
            >>> out = {"actual": "SUCCESS", "expected": "SUCCES", "similarity_config": {"method": "exact"}}
            >>> StringSimilarity(method="levenshtein").evaluate_output(out).score
            0.0
        """
        run = self._plan(test_output)
        try:
            return run()
        except Exception as exc:  # AgentTest reports metric failures in the result
            return _failure(f"String similarity evaluation failed: {exc}")

    def _plan(self, test_output: Any) -> Callable[[], EvaluationResult]:
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
    def _single(actual: Any, expected: Any, method: str, threshold: float) -> EvaluationResult:
        # AgentTest's order: no actual fails (even without expected), then no expected passes.
        if actual is None:
            return _failure("No 'actual' value found in test output")
        if expected is None:
            return outcome(True, 1.0, None, {"reason": "No expected value provided"})
        cap = _CAPS.get(method)
        if cap is None:  # exact: whole texts
            a, e, cut = cut_texts(str(actual), str(expected), None)
        else:
            a, e, cut = cap.cut(str(actual), str(expected), cap.type_name)
        score = _similarity(a, e, method)
        details = {"actual": actual, "expected": expected, "similarity": score, "method": method}
        if cut is not None:
            details["truncated_to"] = cut
        return outcome(score >= threshold, score, threshold, details)

    def _multiple(
        self, cases: list[tuple[Mapping[str, Any], str, float]], threshold: float
    ) -> EvaluationResult:
        # As in AgentTest, a metric that raises on one case fails the whole evaluation.
        results = [self._single(c.get("actual"), c.get("expected"), m, t) for c, m, t in cases]
        return mean_of_cases(results, threshold)


# -- contains and regex -------------------------------------------------------------------------


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)  # AgentTest's str(): None is 'None'


class Contains:
    """AgentTest's ``contains``: which of the test output's ``contains`` strings occur in ``actual``.

    Matching is case-insensitive, on substrings; the score is the fraction found and the
    result passes when all are found (an empty list scores 0 and fails), with no threshold,
    as in AgentTest. A single value is a list of one; values are compared as ``str(value)``.
    No ``contains`` key fails with score 0 and ``details["error"]``.

    AgentTest's documentation lists options that it ignores and tracesim honours, in the
    ``config:`` mapping or per test in ``contains_config``: ``case_sensitive`` (false),
    ``match_all`` (true; false passes with one), ``min_matches`` (passes with that many;
    it wins over ``match_all``) and ``partial_match`` (true; false matches whole words only).

    Example:
        >>> r = Contains().evaluate({"actual": "We refund in 30 days.", "contains": ["Refund", "30 days"]})
        >>> r.score, r.passed, r.details["missing"]
        (1.0, True, [])
        >>> Contains({"case_sensitive": True}).evaluate({"actual": "refund", "contains": "Refund"}).passed
        False
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        self.options = read_options(config, CONTAINS_OPTIONS, "Contains config")

    def evaluate(self, test_output: Any) -> EvaluationResult:
        """Score a test output: ``{"actual": ..., "contains": [...]}``."""
        data = output_data(test_output)
        options = merged_options(self.options, data, "contains_config", CONTAINS_OPTIONS)
        wanted = data.get("contains")
        if wanted is None:
            return outcome(False, 0.0, None, {"error": "No 'contains' field specified"})
        actual = _as_text(data.get("actual", ""))
        items = list(wanted) if isinstance(wanted, (list, tuple)) else [wanted]
        fold = not options.get("case_sensitive", False)
        text = actual.lower() if fold else actual
        found: list[Any] = []
        missing: list[Any] = []
        for item in items:
            needle = str(item).lower() if fold else str(item)
            if options.get("partial_match", True):
                hit = needle in text
            else:
                hit = re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", text) is not None
            (found if hit else missing).append(item)
        score = len(found) / len(items) if items else 0.0
        details = {"contains": items, "found": found, "missing": missing, "actual": actual}
        return outcome(enough(len(found), len(items), options, True), score, None, details)


def _pattern(value: Any, flags: int, where: str) -> str | re.Pattern[str]:
    if isinstance(value, re.Pattern):
        return re.compile(value.pattern, value.flags | flags) if flags else value
    if not isinstance(value, str):
        raise TypeError(f"{where} must be a regular expression string; got {_type_name(value)} {value!r}")
    return value


class Regex:
    r"""AgentTest's ``regex``: which of the test output's ``patterns`` (or ``pattern``) ``actual`` matches.

    Each pattern is searched (``re.search``, case-sensitive); the score is the fraction
    that match and the result passes when at least one does, with no threshold, as in
    AgentTest. A pattern that does not compile counts as not matching, with its error in
    ``details``. No pattern fails with score 0 and ``details["error"]``.

    Options AgentTest documents but ignores, honoured in the ``config:`` mapping or per test
    in ``regex_config``: ``flags`` (names such as ``IGNORECASE``, ``MULTILINE``),
    ``match_all`` (false; true needs every pattern), ``min_matches`` (passes with that many)
    and ``extract_groups`` (adds each match's groups to ``details``).

    Example:
        >>> out = {"actual": "Order ORD-2024-000123 shipped", "patterns": [r"ORD-\d{4}-\d{6}", r"\$\d+"]}
        >>> r = Regex().evaluate(out)
        >>> r.score, r.passed, r.details["matches_found"]
        (0.5, True, 1)
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        self.options = read_options(config, REGEX_OPTIONS, "Regex config")

    def evaluate(self, test_output: Any) -> EvaluationResult:
        """Score a test output: ``{"actual": ..., "patterns": [...]}`` (or ``"pattern": ...``)."""
        data = output_data(test_output)
        options = merged_options(self.options, data, "regex_config", REGEX_OPTIONS)
        actual = _as_text(data.get("actual", ""))
        given, key = (
            (data.get("patterns"), "patterns")
            if data.get("patterns") is not None
            else (data.get("pattern"), "pattern")
        )
        if given is None:
            return outcome(False, 0.0, None, {"error": "No regex pattern(s) specified"})
        patterns = list(given) if isinstance(given, (list, tuple)) else [given]
        flags = options.get("flags", 0)
        compiled = [_pattern(p, flags, f"{key}[{i}]") for i, p in enumerate(patterns)]
        rows: list[dict[str, Any]] = []
        for shown, pattern in zip(patterns, compiled, strict=True):
            try:
                match = (
                    re.search(pattern, actual, flags) if isinstance(pattern, str) else pattern.search(actual)
                )
            except re.error as exc:
                rows.append({"pattern": shown, "matched": False, "error": str(exc)})
                continue
            row = {"pattern": shown, "matched": match is not None, "match": match.group() if match else None}
            if match and options.get("extract_groups"):
                row["groups"] = list(match.groups())
            rows.append(row)
        matched = sum(1 for row in rows if row["matched"])
        details = {
            "patterns": patterns,
            "pattern_results": rows,
            "matches_found": matched,
            "total_patterns": len(patterns),
            "actual": actual,
        }
        score = matched / len(patterns) if patterns else 0.0
        return outcome(enough(matched, len(patterns), options, False), score, None, details)
