"""Agenta's text evaluators, as its documented (legacy backend) code computes them.

Plain functions ``fn(output, correct_answer, **settings)`` returning what Agenta's result
holds: a bool or an int. Where Agenta's evaluator ends in an error result, these raise
:class:`AgentaEvaluationError` (a ``ValueError``).

Example:
    >>> from tracesim.evaluators.compat import agenta
    >>> agenta.levenshtein_distance("Pari", "Paris")
    1
    >>> agenta.levenshtein_distance("Pari", "Paris", threshold=0)
    False
"""

from __future__ import annotations

import functools
from typing import Any

from tracesim.evaluators._levenshtein import LevenshteinDistance
from tracesim.evaluators._model_connection import ModelConnection
from tracesim.evaluators._semantic import SemanticSimilarity
from tracesim.evaluators._word_overlap import Jaccard

__all__ = ["AgentaEvaluationError", "levenshtein_distance", "semantic_similarity", "similarity_match"]


class AgentaEvaluationError(ValueError):
    """Agenta would return ``Result(type="error")`` here.

    Example:
        >>> try:
        ...     similarity_match("", "")
        ... except AgentaEvaluationError as exc:
        ...     print(exc)
        Error during Auto Similarity Match evaluation: both texts have no words
    """


@functools.cache
def _jaccard() -> Jaccard:
    # No threshold: Agenta compares with any number it is given (a threshold of 1 never
    # passes, a negative one always does), so the façade compares.
    return Jaccard(threshold=None)


@functools.cache
def _distance() -> LevenshteinDistance:
    return LevenshteinDistance(threshold=None)  # built on first use (it imports numpy)


def _text(value: Any, what: str) -> str:
    """Agenta's ``validate_string_output``: str, or a dict with a str ``content``/``data``."""
    if isinstance(value, dict):
        for key in ("content", "data"):
            if isinstance(value.get(key), str):
                return str(value[key])
        data = value.get("data")
        if isinstance(data, dict) and isinstance(data.get("content"), str):
            return str(data["content"])
        raise AgentaEvaluationError(f"{what}: the dictionary structure is invalid")
    if not isinstance(value, str):
        raise AgentaEvaluationError(f"{what}: expected a string, got {type(value).__name__}")
    return value


def similarity_match(output: Any, correct_answer: Any, *, similarity_threshold: float = 0.5) -> bool:
    """Agenta "Similarity Match": is the word-set Jaccard **strictly greater** than the threshold?

    Case-sensitive ``str.split()`` words, punctuation kept; the Jaccard value itself is
    not returned. Two empty texts are an error in Agenta (division by zero), so they
    raise here. Any number is a threshold, as in Agenta (1 never passes, below 0 always
    does). Each text is cut to its first 100,000 characters, as the core ``jaccard``
    evaluator does.

    Example:
        >>> similarity_match("the cat sat", "the cat ran", similarity_threshold=0.5)
        False
    """
    a, b = _text(output, "output"), _text(correct_answer, "correct_answer")
    if (not a or a.isspace()) and (not b or b.isspace()):  # no words, without splitting megabytes
        raise AgentaEvaluationError("Error during Auto Similarity Match evaluation: both texts have no words")
    result = _jaccard().evaluate(a, b)
    if result.score is None:
        raise AgentaEvaluationError(f"Error during Auto Similarity Match evaluation: {result.error}")
    try:
        return bool(result.score > similarity_threshold)
    except TypeError as exc:  # a threshold that is not a number
        raise AgentaEvaluationError(f"Error during Auto Similarity Match evaluation: {exc}") from None


def levenshtein_distance(output: Any, correct_answer: Any, *, threshold: float | None = None) -> int | bool:
    """Agenta "Levenshtein Distance": the int distance, or ``distance <= threshold``.

    Case-sensitive, over Python code points; an empty correct answer gives
    ``len(output)`` (Agenta's 2024-08 behaviour, before a later regression). Each text is
    cut to its first 40,000 characters, as the core ``levenshtein_distance`` evaluator
    does (Agenta has no cap; unrelated megabyte texts would take minutes).

    Example:
        >>> levenshtein_distance("kitten", "sitting"), levenshtein_distance("kitten", "sitting", threshold=3)
        (3, True)
    """
    a, b = _text(output, "output"), _text(correct_answer, "correct_answer")
    result = _distance().evaluate(a, b)
    if result.status != "ok":
        raise AgentaEvaluationError(f"Error during Levenshtein threshold evaluation: {result.error}")
    distance = int(result.details["distance"])
    if threshold is None:
        return distance
    return distance <= threshold


@functools.lru_cache(maxsize=16)
def _semantic(model: str, base_url: str | None, api_key: str | None) -> SemanticSimilarity:
    # one evaluator per model and endpoint: its embedding cache spans calls (a correct
    # answer is embedded once)
    return SemanticSimilarity(connection=ModelConnection(model=model, base_url=base_url, api_key=api_key))


def semantic_similarity(
    output: Any,
    correct_answer: Any,
    *,
    model: str = "text-embedding-3-small",
    base_url: str | None = None,
    api_key: str | None = None,
) -> float:
    """Agenta "Semantic Similarity": the cosine of the OpenAI embeddings of both texts, -1 to 1.

    ``base_url`` and ``api_key`` default to what the ``openai`` client reads
    (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``); any OpenAI-compatible server works. A failed
    call (after tracesim's retries) raises `AgentaEvaluationError`, where Agenta would return
    its error result.

    Example:
        >>> semantic_similarity("Warsaw", "Warsaw")  # identical texts: 1.0 without a request
        1.0
    """
    a, b = _text(output, "output"), _text(correct_answer, "correct_answer")
    result = _semantic(model, base_url, api_key).evaluate(a, b)
    if result.status != "ok" or result.score is None:
        raise AgentaEvaluationError(f"Error during Auto Semantic Similarity evaluation: {result.error}")
    return result.score
