"""How azure-ai-evaluation reads a similarity judge's answer, version by version.

``SimilarityEvaluator`` asks tracesim's own prompt and reads the model's answer by the rules
of the release named by ``result_format``, so every answer, hostile or broken ones included,
gives what that release gives (read in the 1.16.0 and 1.18.0 wheels):

1.18 (``_base_prompty_eval.py``, ``_legacy/prompty/_utils.py``; the prompt asks for a JSON
object): the answer is ``json.loads``-ed, and an answer that is not JSON raises
``json.JSONDecodeError`` (no answer text: ``TypeError``). A JSON object's ``score`` is taken
as ``float(score)`` with no range check (``7`` passes; ``"4"`` is 4.0; ``"high"`` raises
``ValueError``); no ``score``, ``null``, ``{}`` or a JSON value that is not an object (a bare
``4``) gives NaN with result ``"unknown"`` and passed ``False``; ``"status": "skipped"`` gives
the not-applicable dict (``None`` scores, status ``"skipped"``). ``reason`` is passed through
as given (``""`` when absent); ``properties`` holds the answer's ``properties`` plus the call's
token counts, finish reason, model and samples.

1.16 (the prompt asks for one digit, text, ``max_tokens=1``): the first digit of the answer
is the score (``7`` passes, ``10`` is 1.0); an answer with no digit raises (Azure's own
``UnboundLocalError``; here `UnreadableAnswer`). tracesim's prompt asks for a JSON object, so
the text 1.16 would have seen is that object's ``score`` (or the whole answer when it is not
a JSON object).

Example:
    >>> call = Grade('{"reason": "Same city.", "score": 7}', "stop", (10, 5, 15), "m", {})
    >>> out = read_1_18(call, 3)
    >>> out["similarity_score"], out["similarity_result"], out["similarity_passed"]
    (7.0, 'pass', True)
    >>> read_1_18(Grade('{"reason": "No grade."}', "stop", (1, 1, 2), "m", {}), 3)["similarity_result"]
    'unknown'
    >>> read_1_16(Grade('{"reason": "Close.", "score": 4}', "stop", (1, 1, 2), "m", {}), 3)["gpt_similarity"]
    4.0
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from tracesim.evaluators.compat._azure_errors import unreadable_answer

__all__ = ["Grade", "read_1_16", "read_1_18"]

_KEY = "similarity"
_SHOWN = 200  # characters of the answer quoted in an exception


@dataclass(frozen=True)
class Grade:
    """One judge call as Azure would report it: the answer's text and the call's figures.

    Example:
        >>> Grade("4", "stop", (120, 1, 121), "gpt-4o-mini", {"query": "q"}).tokens[2]
        121
    """

    answer: str | None
    finish_reason: str
    tokens: tuple[int, int, int]  # prompt, completion, total
    model: str
    inputs: dict[str, Any]  # query, response, ground_truth, in the order Azure's prompt declares


def _verdict(score: float, threshold: float) -> str:
    """Azure's ``_get_binary_result`` for a higher-is-better metric."""
    if math.isnan(score):
        return "unknown"
    return "pass" if score >= threshold else "fail"


def _samples(grade: Grade) -> tuple[str, str]:
    """``sample_input`` and ``sample_output`` as Azure's ``format_llm_response`` writes them."""
    sample_input = ""
    if grade.inputs:
        sample_input = json.dumps([{"role": "user", "content": json.dumps(grade.inputs)}])
    output = [{"role": "assistant", "content": grade.answer}] if grade.answer else []
    return sample_input, json.dumps(output)


def _raise(version: str, grade: Grade, error: BaseException | None, why: str) -> Exception:
    answer = grade.answer if grade.answer is None else grade.answer[:_SHOWN]
    return unreadable_answer(
        f"SimilarityEvaluator: azure-ai-evaluation {version} cannot read the model's answer "
        f"({why}); the model answered {answer!r}",
        error,
    )


def read_1_18(grade: Grade, threshold: float) -> dict[str, Any]:
    """1.17-1.18's eight keys for ``grade``, or what 1.18 raises (see the module's docstring).

    Example:
        >>> out = read_1_18(Grade("4", "stop", (1, 1, 2), "m", {}), 3)  # JSON, but no object
        >>> out["similarity"], out["similarity_passed"], out["similarity_status"]
        (nan, False, 'completed')
        >>> read_1_18(Grade("Four.", "stop", (1, 1, 2), "m", {}), 3)
        Traceback (most recent call last):
        ...
        tracesim.evaluators.compat._azure_errors._NotJSON: (InternalError) SimilarityEvaluator: ...
    """
    try:
        read = _grade_1_18(grade.answer)
    except (ValueError, TypeError, AttributeError, OverflowError, RecursionError) as error:
        raise _raise("1.18", grade, error, f"{type(error).__name__}: {error}") from error
    if isinstance(read, _Skipped):
        return _not_applicable(read.reason, threshold)
    score, reason, properties = read
    verdict = _verdict(score, threshold)
    sample_input, sample_output = _samples(grade)
    figures = {
        "prompt_tokens": grade.tokens[0],
        "completion_tokens": grade.tokens[1],
        "total_tokens": grade.tokens[2],
        "finish_reason": grade.finish_reason,
        "model": grade.model,
        "sample_input": sample_input,
        "sample_output": sample_output,
    }
    return {
        _KEY: score,
        f"{_KEY}_score": score,
        f"{_KEY}_passed": verdict == "pass",
        f"{_KEY}_result": verdict,
        f"{_KEY}_reason": reason,
        f"{_KEY}_status": "completed",
        f"{_KEY}_threshold": threshold,
        f"{_KEY}_properties": {**properties, **figures},
    }


@dataclass(frozen=True)
class _Skipped:
    reason: Any


def _grade_1_18(answer: str | None) -> tuple[float, Any, dict[str, Any]] | _Skipped:
    """(score, reason, properties) as 1.18 reads them, or the model's skip; raises as 1.18."""
    llm_output = json.loads(answer)  # type: ignore[arg-type]  # None raises TypeError, as in Azure
    parsed: Any = None
    if isinstance(llm_output, dict):
        parsed = llm_output
    elif isinstance(llm_output, str):  # a JSON string: read once more, then its first digit
        try:
            parsed = json.loads(llm_output)
        except (json.JSONDecodeError, TypeError):
            parsed = None
    score: Any = math.nan
    reason: Any = ""
    properties: Any = {}
    if parsed and isinstance(parsed, dict):
        if parsed.get("status", "completed") == "skipped":
            return _Skipped(parsed.get("reason", ""))
        score = parsed.get("score", math.nan)
        reason = parsed.get("reason", "")
        properties = parsed.get("properties", {}) or {}
    elif isinstance(llm_output, str):
        match = re.search(r"\d", llm_output)
        if match:
            score = float(match.group())
    score = float(score) if score is not None else math.nan
    if not isinstance(properties, dict):  # Azure calls properties.update(...)
        raise AttributeError(f"'{type(properties).__name__}' object has no attribute 'update'")
    return score, reason, properties


def _not_applicable(reason: Any, threshold: float) -> dict[str, Any]:
    """1.18's ``_return_not_applicable_result``: the model said it could not grade."""
    return {
        _KEY: None,
        f"{_KEY}_score": None,
        f"{_KEY}_passed": None,
        f"{_KEY}_result": "not_applicable",
        f"{_KEY}_reason": f"Not applicable: {reason}",
        f"{_KEY}_status": "skipped",
        f"{_KEY}_threshold": threshold,
        f"{_KEY}_properties": None,
    }


def read_1_16(grade: Grade, threshold: float) -> dict[str, Any]:
    """1.13-1.16's eleven keys for ``grade``, or an `UnreadableAnswer` where 1.16 raises.

    Example:
        >>> out = read_1_16(Grade("4", "stop", (1, 1, 2), "m", {}), 3)
        >>> out["similarity"], out["similarity_result"], out["similarity_sample_output"]
        (4.0, 'pass', '[{"role": "assistant", "content": "4"}]')
    """
    text = _text_1_16(grade.answer)
    if text is None:
        raise _raise("1.16", grade, TypeError("no answer text"), "no answer text")
    match = re.search(r"\d", text)
    if match is None:
        raise _raise("1.16", grade, None, "no digit in the grade")
    score = float(match.group())
    sample_input, sample_output = _samples(grade)
    return {
        _KEY: score,
        f"gpt_{_KEY}": score,
        f"{_KEY}_result": _verdict(score, threshold),
        f"{_KEY}_threshold": threshold,
        f"{_KEY}_prompt_tokens": grade.tokens[0],
        f"{_KEY}_completion_tokens": grade.tokens[1],
        f"{_KEY}_total_tokens": grade.tokens[2],
        f"{_KEY}_finish_reason": grade.finish_reason,
        f"{_KEY}_model": grade.model,
        f"{_KEY}_sample_input": sample_input,
        f"{_KEY}_sample_output": sample_output,
    }


def _text_1_16(answer: str | None) -> str | None:
    """The text 1.16's one-digit prompt would have had: the JSON object's ``score``, else the answer."""
    if answer is None:
        return None
    try:
        parsed = json.loads(answer)
    except (ValueError, RecursionError):
        return answer
    if not isinstance(parsed, dict):
        return answer
    return "" if parsed.get("score") is None else str(parsed["score"])
