"""Scoring an AgentTest test output: AgentTest's per-criterion results, pass rule and overall score.

Each criterion is scored by `tracesim.evaluators.compat.agenttest.StringSimilarity` built from
its config entry, exactly as AgentTest's runner scores it; a test passes when every enabled
criterion does (no error, ``passed`` true, ``score >= threshold``), and the overall score is
the weighted mean of the criteria's scores (weights from the config entries of the same
name, 1.0 otherwise).

Example:
    >>> from tracesim.integrations._agenttest_config import parse
    >>> outcome = score({"actual": "Python Java Go", "expected": "Python Java Rust"},
    ...                 ("similarity",), parse({"evaluators": [{"name": "similarity",
    ...                 "type": "string_similarity", "config": {"method": "jaccard", "threshold": 0.5}}]}))
    >>> outcome.passed, outcome.score
    (True, 0.5)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tracesim.evaluators.compat.agenttest import StringSimilarity
from tracesim.integrations import _agenttest_config as cfg

if TYPE_CHECKING:
    from tracesim.evaluators import EvalResult

__all__ = ["Outcome", "passes", "score"]

_SHOWN_CHARS = 120
_SHOWN_CASES = 3
_SHAPE_HINT = "return {'actual': ..., 'expected': ...} or {'test_cases': [...]} from the test"


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
        """Why the test failed: each failing criterion with its score, threshold and values."""
        tries = f" (after {attempts} attempts)" if attempts > 1 else ""
        lines = [f"{test} failed its AgentTest evaluation{tries}:"]
        lines += [f"  {_why(name, r)}" for name, r in self.evaluations.items() if not passes(r)]
        weights = ", ".join(f"{name}={weight:g}" for name, weight in self.weights.items()) or "none"
        lines.append(
            f"  overall score {_number(self.score)} (weights: {weights}); config: {self.config.origin}"
        )
        return "\n".join(lines)


def score(test_output: Any, criteria: Sequence[str], config: cfg.AgentTestConfig) -> Outcome:
    """Score a test's return value with each criterion, as AgentTest's runner does.

    Raises:
        ValueError: a criterion tracesim does not reproduce (and that the config does not disable).
        TypeError: a test output of the wrong shape (from `StringSimilarity.evaluate`).
    """
    outcome = Outcome(config)
    for criterion in criteria:
        entry = config.similarity_entry(criterion)
        named = config.entry(criterion)
        if (entry is not None and not entry.enabled) or (named is not None and not named.enabled):
            outcome.disabled.append(criterion)
            continue
        if entry is None and criterion not in cfg.SIMILARITY_CRITERIA:
            raise ValueError(
                f"agent_test criterion {criterion!r} is not available: tracesim reproduces AgentTest's "
                f"string similarity only ({', '.join(cfg.SIMILARITY_CRITERIA)}, or an evaluator of type "
                f"{cfg.SIMILARITY_TYPE} in {config.origin}); disable it there with enabled: false, or "
                "score it with tracesim's evaluators (the tracesim_eval fixture)"
            )
        evaluator = StringSimilarity(entry.config if entry is not None else None)
        outcome.evaluations[criterion] = evaluator.evaluate(test_output)
    return outcome


def _result(name: str, result: Mapping[str, Any]) -> EvalResult:
    from tracesim.evaluators import EvalResult

    ok = passes(result)
    details = result.get("details") or {}
    kept = {key: details[key] for key in ("method", "total_cases", "passed_cases") if key in details}
    error = result.get("error")
    return EvalResult(
        name=name,
        score=result.get("score"),
        passed=ok,
        threshold=result.get("threshold"),
        explanation=None if ok or error else _why(name, result),
        details=kept,
        status="error" if error else "ok",
        error=_why(name, result) if error else None,
        error_type="agenttest_error" if error else None,
    )


def _number(value: Any) -> str:
    return "none" if value is None else f"{value:.4g}" if isinstance(value, float) else repr(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}... ({len(text)} characters)"


def _why(name: str, result: Mapping[str, Any]) -> str:
    """One line (and a few case lines) saying why a criterion failed."""
    error = result.get("error")
    if error:
        hint = f" ({_SHAPE_HINT})" if "No 'actual'" in error else ""
        return f"{name}: error: {error}{hint}"
    details = result.get("details") or {}
    value, threshold = _number(result.get("score")), _number(result.get("threshold"))
    cases = details.get("individual_results")
    if isinstance(cases, list):
        failing = [(i, r) for i, r in enumerate(cases) if not r.get("passed")]
        head = f"{name}: {details.get('passed_cases')} of {details.get('total_cases')} cases passed"
        head += f" (mean score {value}, threshold {threshold})"
        for i, case in failing[:_SHOWN_CASES]:
            head += f"\n    case {i}: {_why('', case).removeprefix(': ')}"
        if len(failing) > _SHOWN_CASES:
            head += f"\n    ... and {len(failing) - _SHOWN_CASES} more failing cases"
        return head
    method = details.get("method")
    actual, expected = _shown(details.get("actual")), _shown(details.get("expected"))
    return (
        f"{name}: score {value} below threshold {threshold} ({method}); actual {actual}, expected {expected}"
    )
