"""Scoring an AgentTest test output: AgentTest's per-criterion results, pass rule and overall score.

Each criterion is scored by the `tracesim.evaluators.compat.agenttest` evaluator it names
(``StringSimilarity``, ``Contains``, ``Regex``, ``Metrics``, ``Metric``, ``LLMJudge``) built from its
config entry, exactly as AgentTest's runner scores it; a test passes when every enabled
criterion does (no error, ``passed`` true, ``score >= threshold``), and the overall score is
the weighted mean of the criteria's scores (weights from the config entries of the same
name, 1.0 otherwise).

Example:
    >>> from tracesim_pytest._agenttest_config import parse
    >>> outcome = score({"actual": "Python Java Go", "expected": "Python Java Rust"},
    ...                 ("similarity",), parse({"evaluators": [{"name": "similarity",
    ...                 "type": "string_similarity", "config": {"method": "jaccard", "threshold": 0.5}}]}))
    >>> outcome.passed, outcome.score
    (True, 0.5)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from tracesim import plugin_support
from tracesim.evaluators.compat import agenttest as compat
from tracesim.plugin_support import visible
from tracesim_pytest import _agenttest_config as cfg

if TYPE_CHECKING:
    from tracesim.evaluators import EvalResult

__all__ = ["Outcome", "passes", "score"]

_SHOWN_CHARS = 120
_SHOWN_CASES = 3
# What a test returns for each evaluator, shown when its output lacks a key.
_HINTS = {
    "No 'actual'": "return {'actual': ..., 'expected': ...} or {'test_cases': [...]} from the test",
    "No 'contains'": "return {'actual': ..., 'contains': ['word', ...]} from the test",
    "No regex": "return {'actual': ..., 'patterns': [r'...']} or {'actual': ..., 'pattern': r'...'}",
    "Both 'actual' and 'reference'": "return {'actual': ..., 'reference': ...} from the test",
    "Both 'actual' and 'expected'": "return {'actual': 4.1, 'expected': 4} from the test",
    "No metrics": "return {..., 'metrics': {'rouge': {'min_score': 0.4}}}, or give the metrics evaluator "
    "a config: {rouge: {...}} in .agenttest/config.yaml",
}


def passes(result: Mapping[str, Any]) -> bool:
    """AgentTest's rule for one criterion: no error, not ``passed: False``, score not under threshold.

    Example:
        >>> passes({"passed": True, "score": 0.9, "threshold": 0.8}), passes({"error": "boom"})
        (True, False)
    """
    if result.get("error"):
        return False
    if "passed" in result and not result["passed"]:
        return False
    value, threshold = result.get("score"), result.get("threshold", 0.8)
    return value is None or threshold is None or value >= threshold


@dataclass
class Outcome:
    """AgentTest's results for one test output, and what tracesim makes of them."""

    config: cfg.AgentTestConfig
    evaluations: dict[str, dict[str, Any]] = field(default_factory=dict)
    disabled: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when every evaluated criterion passes (disabled ones are left out)."""
        return all(passes(result) for result in self.evaluations.values())

    @property
    def weights(self) -> dict[str, float]:
        """The weight of each criterion that has a score."""
        return {
            name: self.config.weight(name)
            for name, result in self.evaluations.items()
            if result.get("score") is not None and not result.get("error")
        }

    @property
    def score(self) -> float | None:
        """The weighted mean score; None without scores or when the weights sum to 0."""
        weights = self.weights
        total = sum(weights.values())
        if not total:
            return None
        weighted: float = sum(self.evaluations[name]["score"] * weight for name, weight in weights.items())
        return weighted / total

    def results(self, attempts: int = 1) -> list[EvalResult]:
        """One result per criterion (disabled ones ``skipped``), then ``overall``."""
        from tracesim.evaluators import EvalResult

        found = [_result(name, result) for name, result in self.evaluations.items()]
        reason = f"enabled: false in {self.config.origin}"
        found += [EvalResult(name=name, status="skipped", explanation=reason) for name in self.disabled]
        details = {"weights": self.weights, "config": self.config.origin, "attempts": attempts}
        found.append(EvalResult(name="overall", score=self.score, passed=self.passed, details=details))
        return found

    def message(self, test: str, attempts: int = 1) -> str:
        """Why the test failed: each failing criterion with its score, threshold and values.

        Redacted as spans are, with control characters shown visibly: pytest prints it.
        """
        tries = f" (after {attempts} attempts)" if attempts > 1 else ""
        lines = [f"{test} failed its AgentTest evaluation{tries}:"]
        lines += [f"  {_why(name, r)}" for name, r in self.evaluations.items() if not passes(r)]
        weights = ", ".join(f"{name}={weight:g}" for name, weight in self.weights.items()) or "none"
        lines.append(
            f"  overall score {_number(self.score)} (weights: {weights}); config: {self.config.origin}"
        )
        # Redacted whole first: a secret may span lines (a PEM block in an error message).
        return "\n".join(visible(line) for line in plugin_support.redact_text("\n".join(lines)).split("\n"))


class _Evaluator(Protocol):
    def evaluate(self, test_output: Any) -> Any: ...


def _as_dict(result: Any) -> dict[str, Any]:
    """AgentTest's result as a dict: a mapping, or an object with ``to_dict()`` (`EvaluationResult`)."""
    return dict(result) if isinstance(result, Mapping) else dict(result.to_dict())


def _build(kind: str, entry: cfg.EvaluatorEntry | None, config: cfg.AgentTestConfig) -> _Evaluator:
    options = entry.config if entry is not None else {}
    if kind == "similarity":
        return compat.StringSimilarity(options or None)
    if kind == "llm_judge":  # the llm: section over the entry's config, as AgentTest merges them
        return compat.LLMJudge(config.llm.judge_config(options))
    if kind == "contains":
        return compat.Contains(options)
    if kind == "regex":
        return compat.Regex(options)
    if kind == "metric":
        return compat.Metric(options)
    return compat.Metrics(options)


def score(test_output: Any, criteria: Sequence[str], config: cfg.AgentTestConfig) -> Outcome:
    """Score a test's return value with each criterion, as AgentTest's runner does.

    Raises:
        ValueError: a criterion that names no evaluator (and that the config does not disable),
            or an evaluator's config tracesim cannot use.
        TypeError: a test output of the wrong shape (from the evaluator).
    """
    outcome = Outcome(config)
    for criterion in criteria:
        found = config.evaluator_for(criterion)
        named = config.entry(criterion)
        entry = found[1] if found is not None else None
        if (entry is not None and not entry.enabled) or (named is not None and not named.enabled):
            outcome.disabled.append(criterion)
            continue
        if found is None:
            raise ValueError(
                f"agent_test criterion {criterion!r} names no evaluator: use one of "
                f"{', '.join(cfg.CRITERIA)}, or the name of an entry in {config.origin} whose type is one "
                f"of {', '.join(cfg.TYPES)}; or disable it there with enabled: false"
            )
        try:
            evaluator = _build(found[0], entry, config)
        except (TypeError, ValueError) as exc:  # a config: mistake: say which entry of which file
            where = f"the entry {entry.name!r} in {config.origin}" if entry is not None else config.origin
            if hasattr(exc, "add_note"):  # Python 3.11+
                exc.add_note(f"agent_test: building the evaluator of {criterion!r} from {where}")
            raise
        outcome.evaluations[criterion] = _as_dict(evaluator.evaluate(test_output))
    return outcome


_KEPT = ("method", "total_cases", "passed_cases", "found", "missing", "matches_found", "total_patterns")


def _result(name: str, result: Mapping[str, Any]) -> EvalResult:
    from tracesim.evaluators import EvalResult

    ok = passes(result)
    details = result.get("details") or {}
    kept = {key: details[key] for key in (*_KEPT, "criteria", "grade", "model") if key in details}
    error = result.get("error")
    explanation = details.get("reasoning") if ok else None if error else _why(name, result)
    return EvalResult(
        name=name,
        score=result.get("score"),
        passed=ok,
        threshold=result.get("threshold"),
        explanation=explanation,
        details=kept,
        status="error" if error else "ok",
        error=_why(name, result) if error else None,
        error_type="agenttest_error" if error else None,
    )


def _number(value: Any) -> str:
    return "none" if value is None else f"{value:.4g}" if isinstance(value, float) else repr(value)


def _shown(value: Any) -> str:
    # Redacted before it is cut: a secret cut in half would no longer be recognised.
    text = plugin_support.redact_text(repr(plugin_support.redact_data(value)))
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}... ({len(text)} characters)"


def _hint(message: str) -> str:
    return next((f" ({hint})" for start, hint in _HINTS.items() if message.startswith(start)), "")


def _metric(result: Mapping[str, Any]) -> str:
    if result.get("error"):
        return f"error: {result['error']}"
    side = ">=" if result.get("passed") else "<"
    return f"{_number(result.get('score'))} {side} min_score {_number(result.get('threshold'))}"


def _cases(name: str, details: Mapping[str, Any], value: str, threshold: str) -> str:
    cases = details["individual_results"]
    failing = [(i, r) for i, r in enumerate(cases) if not r.get("passed")]
    head = f"{name}: {details.get('passed_cases')} of {details.get('total_cases')} cases passed"
    head += f" (mean score {value}, threshold {threshold})"
    for i, case in failing[:_SHOWN_CASES]:
        head += f"\n    case {i}: {_why('', case).removeprefix(': ')}"
    if len(failing) > _SHOWN_CASES:
        head += f"\n    ... and {len(failing) - _SHOWN_CASES} more failing cases"
    return head


def _why(name: str, result: Mapping[str, Any]) -> str:
    """One line (and a few case lines) saying why a criterion failed, in the terms of its evaluator."""
    details = result.get("details") or {}
    reported = details.get("error")  # contains / regex report a missing key there (metric: a number)
    error = result.get("error") or (reported if isinstance(reported, str) else None)
    if error:
        return f"{name}: {'error: ' if result.get('error') else ''}{error}{_hint(error)}"
    value, threshold = _number(result.get("score")), _number(result.get("threshold"))
    actual = _shown(details.get("actual"))
    if isinstance(details.get("individual_results"), list):
        return _cases(name, details, value, threshold)
    if "missing" in details:
        found, wanted = len(details.get("found", ())), len(details.get("contains", ()))
        missing = _shown(details["missing"])
        return (
            f"{name}: {found} of {wanted} strings found (score {value}); missing {missing}; actual {actual}"
        )
    if "pattern_results" in details:
        missed = [row["pattern"] for row in details["pattern_results"] if not row.get("matched")]
        head = f"{name}: {details.get('matches_found')} of {details.get('total_patterns')} patterns matched"
        return f"{head} (score {value}); not matched {_shown(missed)}; actual {actual}"
    if "metric_results" in details:
        metrics = "; ".join(f"{m} {_metric(r)}" for m, r in details["metric_results"].items())
        return f"{name}: mean score {value} (mean min_score {threshold}): {metrics}"
    if "grade" in details:
        on = ", ".join(details.get("criteria", ()))
        head = f"{name}: score {value} below threshold {threshold} (grade {details['grade']}/10 on {on})"
        return f"{head}: {_shown(details.get('reasoning'))}"
    expected = _shown(details.get("expected"))
    if "metric_type" in details:
        error = f"{details['metric_type']} error {_number(details.get('error'))}"
        return f"{name}: {error} (threshold {threshold}, score {value}); actual {actual}, expected {expected}"
    method = details.get("method")
    return (
        f"{name}: score {value} below threshold {threshold} ({method}); actual {actual}, expected {expected}"
    )
