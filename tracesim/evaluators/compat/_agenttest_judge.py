"""AgentTest's ``llm_judge`` on tracesim's `LLMJudge`: named criteria, a 0.0-1.0 score, pass at 0.7.

Imported by `tracesim.evaluators.compat.agenttest`, which is where users import it from. The
prompt is tracesim's (`rubric`): the criteria with their descriptions, then the question,
the response and the reference answer as `LLMJudge` shows them, graded 0 to 10.

Example:
    >>> print(rubric((("tone", "polite and calm"),)))
    Judge the response on these criteria:
    - tone: polite and calm
    Give one overall grade from 0 to 10: 10 when the response fully meets every criterion,
    0 when it meets none. When a reference answer is shown, take it as correct.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from tracesim.evaluators._judge import LLMJudge as _CoreJudge
from tracesim.evaluators._model_connection import ModelConnection
from tracesim.evaluators.compat._agenttest_more import (
    Check,
    check_cases,
    check_number,
    output_data,
    read_options,
    type_name,
)
from tracesim.evaluators.compat._agenttest_result import EvaluationResult, failure, mean_of_cases, outcome

__all__ = ["CRITERIA", "LLMJudge", "rubric"]

CRITERIA: dict[str, str] = {
    "accuracy": "what the response states is correct",
    "relevance": "the response addresses what was asked",
    "completeness": "the response covers everything the question needs",
    "clarity": "the response is easy to follow",
    "conciseness": "the response says what is needed without padding",
    "coherence": "the response hangs together logically",
    "helpfulness": "the response is of practical use to the person who asked",
    "safety": "the response contains nothing harmful or inappropriate",
    "factuality": "the facts in the response are true",
    "consistency": "the response behaves as the expected answer or behaviour says it should",
}
"""The criteria AgentTest's judge knows, with tracesim's wording; any other name is graded as named."""

_DEFAULT_CRITERIA = ("accuracy", "relevance")
_GRADES = (0, 10)  # an integer grade; AgentTest's 0.0-1.0 score is the grade / 10
# provider -> (default model, OpenAI-compatible endpoint, API key variables), AgentTest's defaults
_PROVIDERS: dict[str, tuple[str, str | None, tuple[str, ...]]] = {
    "openai": ("gpt-3.5-turbo", None, ("OPENAI_API_KEY",)),
    "anthropic": ("claude-3-sonnet-20240229", "https://api.anthropic.com/v1/", ("ANTHROPIC_API_KEY",)),
    "gemini": (
        "gemini-pro",
        "https://generativelanguage.googleapis.com/v1beta/openai/",
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    ),
}
_ENV_REFERENCE = re.compile(r"\$\{(\w+)\}")


def _text(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{where} must be a string; got {type_name(value)}")
    return value


def _criteria(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    """``(name, description)`` pairs from a list of names or a ``{name: description}`` dict."""
    if isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        return tuple(value.items()) or _criteria(_DEFAULT_CRITERIA, where)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        names = value or _DEFAULT_CRITERIA
        return tuple((n, CRITERIA.get(n, f"judge the response on its {n.replace('_', ' ')}")) for n in names)
    raise TypeError(f"{where} must be a list of names or a dict of name: description; got {value!r}")


def _tokens(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 16:
        raise TypeError(f"{where} must be an integer >= 16; got {value!r}")
    return value


def _share(value: Any, where: str) -> float:
    if not 0 <= check_number(value, where) <= 1:
        raise ValueError(f"{where} is on AgentTest's 0.0-1.0 scale, such as 0.7; got {value!r}")
    return float(value)


_JUDGE_OPTIONS: dict[str, Check] = {
    "criteria": _criteria,
    "provider": _text,
    "model": _text,
    "api_key": _text,
    "api_base": _text,
    "temperature": check_number,
    "max_tokens": _tokens,
    "threshold": _share,
}


def rubric(criteria: tuple[tuple[str, str], ...]) -> str:
    """The rubric tracesim's judge grades with (tracesim's own wording of AgentTest's request).

    Example:
        >>> print(rubric((("accuracy", CRITERIA["accuracy"]),)).splitlines()[1])
        - accuracy: what the response states is correct
    """
    lines = ["Judge the response on these criteria:"]
    lines += [f"- {name}: {description}" for name, description in criteria]
    low, high = _GRADES
    lines.append(
        f"Give one overall grade from {low} to {high}: {high} when the response fully meets every criterion,"
    )
    lines.append(f"{low} when it meets none. When a reference answer is shown, take it as correct.")
    return "\n".join(lines)


def _api_key(provider: str, given: str | None) -> str:
    # AgentTest's documentation writes api_key: '${OPENAI_API_KEY}', which AgentTest sends as is.
    key = _ENV_REFERENCE.sub(lambda m: os.environ.get(m.group(1), ""), given or "")
    names = _PROVIDERS[provider][2] if provider in _PROVIDERS else (f"{provider.upper()}_API_KEY",)
    key = key or next((os.environ[name] for name in names if os.environ.get(name)), "")
    if not key:
        raise ValueError(
            f"AgentTest's llm_judge needs an API key for provider {provider!r}: set llm.api_key in "
            f".agenttest/config.yaml or the environment variable {' or '.join(names)}"
        )
    return key


class LLMJudge:
    """AgentTest's ``llm_judge``: a model grades the response on named criteria, 0.0 to 1.0.

    ``config`` holds AgentTest's judge settings (under ``@agent_test``, its ``llm:`` section
    merged over the evaluator entry's ``config:``, as AgentTest does): ``provider``
    (``openai``, ``anthropic``, ``gemini``: each through its OpenAI-compatible endpoint),
    ``model``, ``api_key`` (else ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY``
    / ``GOOGLE_API_KEY``; ``${NAME}`` is read from the environment), ``api_base`` (any
    OpenAI-compatible server; AgentTest ignores it), ``temperature`` (0), ``max_tokens``
    (1000), ``criteria`` (``["accuracy", "relevance"]``) and ``threshold`` (0.7, tracesim's).

    The model sees the criteria, the test's ``input``, ``actual`` and ``expected`` (when
    given) and answers a grade from 0 to 10 with its reason; the score is grade / 10 and
    passes at ``>= 0.7``, AgentTest's line. A test's ``evaluation_criteria`` (a list of names,
    or a dict of name: description, whose descriptions AgentTest ignores) replaces the
    configured criteria. An answer without a usable grade, or a failed call, gives a failed
    result with the reason in ``error`` and the answer in ``details["raw"]``: no made-up score.

    Example:
        >>> judge = LLMJudge({"model": "gpt-4o-mini", "api_base": "http://127.0.0.1:9/v1", "api_key": "k"})
        >>> [name for name, _ in judge.criteria], judge.threshold, judge.model
        (['accuracy', 'relevance'], 0.7, 'gpt-4o-mini')
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        options = read_options(config, _JUDGE_OPTIONS, "LLMJudge config")
        self.criteria: tuple[tuple[str, str], ...] = options.get("criteria") or _criteria(
            _DEFAULT_CRITERIA, ""
        )
        self.provider = options.get("provider") or "openai"
        base_url = options.get("api_base")
        if self.provider not in _PROVIDERS and not base_url:
            raise ValueError(
                f"LLMJudge provider must be one of {', '.join(_PROVIDERS)}, or give api_base (an "
                f"OpenAI-compatible server); got {self.provider!r}"
            )
        defaults = _PROVIDERS.get(self.provider, ("", None, ()))
        self.model: str = options.get("model") or defaults[0]
        self.base_url: str | None = base_url or defaults[1]
        self.threshold: float = options.get("threshold", 0.7)
        connection = ModelConnection(
            model=self.model, base_url=self.base_url, api_key=_api_key(self.provider, options.get("api_key"))
        )
        self._settings = {
            "connection": connection,
            "temperature": options.get("temperature", 0.0),
            "max_tokens": options.get("max_tokens", 1000),
        }
        self._judges: dict[tuple[Any, ...], _CoreJudge] = {}
        self._judge(self.criteria, True)  # a bad setting raises now (ConfigError names it)

    def _judge(self, criteria: tuple[tuple[str, str], ...], with_expected: bool) -> _CoreJudge:
        key = (criteria, with_expected)
        judge = self._judges.get(key)
        if judge is None:
            judge = _CoreJudge(
                rubric(criteria),
                scale=_GRADES,
                include_expected=with_expected,
                threshold=None,
                **self._settings,
            )
            self._judges[key] = judge
        return judge

    def evaluate(self, test_output: Any) -> EvaluationResult:
        """Grade a test output: one case, or each of its ``test_cases`` (mean score, all must pass).

        Example:
            >>> judge = LLMJudge({"api_key": "k", "api_base": "http://127.0.0.1:9/v1"})
            >>> judge.evaluate({"input": "What is 2+2?"}).error
            "No 'actual' value found in test output"
        """
        data = output_data(test_output)
        if "test_cases" in data:
            return mean_of_cases(
                [self._grade(case) for case in check_cases(data["test_cases"])], self.threshold
            )
        return self._grade(data)

    def _grade(self, case: Mapping[str, Any]) -> EvaluationResult:
        actual, expected, question = case.get("actual"), case.get("expected"), case.get("input")
        if actual is None:
            return failure("No 'actual' value found in test output")
        criteria = self.criteria
        if "evaluation_criteria" in case:
            criteria = _criteria(case["evaluation_criteria"], "evaluation_criteria")
        result = self._judge(criteria, expected is not None).evaluate(actual, expected, input=question)
        details: dict[str, Any] = {
            "actual": actual,
            "expected": expected,
            "input": question,
            "criteria": [name for name, _ in criteria],
            **result.details,
        }
        if result.status != "ok" or result.score is None:
            return failure(f"LLM judge evaluation failed: {result.error}", details)
        score = result.score / _GRADES[1]
        details.update(reasoning=result.explanation, grade=int(result.score))
        return outcome(score >= self.threshold, score, self.threshold, details)
